#!/usr/bin/env python
"""flush() + drain() against two real ``hlmem worker`` processes on one file.

Plain script over a real SQLite file: two ``python -m hlmem --db FILE worker`` processes run the
pipeline while this process writes with ``pipeline="external"``. Each round writes events into a
fresh namespace (several sessions, Chinese and English, fewer events per session than a window
holds), then calls ``flush()`` and ``drain()``, and counts the windows of that namespace still
open: any is an *early return* (drain said idle while a window the flush covered waited for the
age sweep, ``windower.max_age_s`` = 120 s). The two workers claim the windower's jobs in
parallel, so a round may see a flush applied by one worker while the other still holds older
events: the race ``tests/test_drain_external.py`` reproduces deterministically. This bench shows
how often it happened on real processes::

    .venv/bin/python bench/drain_external.py --quick    # 40 rounds, well under 60 s
    .venv/bin/python bench/drain_external.py            # 200 rounds

Stdout: a line per round with an early return, a summary, then ONE JSON object on the last line
(rounds, early returns, windows and events left open, drain latency p50/p95). The workers are
stopped with SIGTERM at the end; their exit codes are reported too.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

import hlmem
from hlmem.config import load_config
from hlmem.gateway import percentile
from hlmem.store import sqlite_module

SESSIONS = 8
EVENTS_PER_SESSION = 6  # one full window of 5 and one open window of 1 per session
FAST = {"HLMEM_PIPELINE__POLL_INTERVAL_S": "0.02", "HLMEM_PIPELINE__DRAIN_POLL_S": "0.01"}


def start_worker(db: Path, log: Path) -> tuple[subprocess.Popen[bytes], Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HLMEM_")}
    env.update(FAST)
    err = log.open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "hlmem", "--db", str(db), "worker"],
        stdout=subprocess.DEVNULL,
        stderr=err,
        env=env,
    )
    return proc, err


def wait_running(log: Path, proc: subprocess.Popen[bytes]) -> None:
    """Until the worker says it runs (its readiness line on stderr)."""
    deadline = time.monotonic() + 120
    while b"worker running on" not in log.read_bytes():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"worker not running: {log.read_text(encoding='utf-8')}")
        time.sleep(0.05)


async def one_round(mem: Any, round_no: int) -> tuple[int, int, float]:
    """Windows and events of this round's namespace left open after flush + drain, and the
    drain's wall time."""
    ns = f"r{round_no}"
    for turn in range(EVENTS_PER_SESSION):
        for session in range(SESSIONS):
            text = (
                f"第{round_no}轮第{turn}句：我喜欢喝乌龙茶"
                if session % 2
                else f"round {round_no} turn {turn}: I like green tea"
            )
            await mem.add_event(f"s{session}", text, namespace=ns)
    await mem.flush()
    started = time.perf_counter()
    await mem.drain(timeout_s=300)
    drained = time.perf_counter() - started
    windows, events = open_windows(mem.path, ns)
    return windows, events, drained


def open_windows(db: Path, ns: str) -> tuple[int, int]:
    """Open windows of ``ns`` and the pieces they hold, read on a connection of hlmem's own
    SQLite module (a second library in this process would drop hlmem's file locks)."""
    conn = sqlite_module("auto").connect(str(db))
    try:
        row = conn.execute(
            "SELECT count(*), coalesce(sum(item_count), 0) FROM windows"
            " WHERE status = 'open' AND namespace = ?",
            (ns,),
        ).fetchone()
    finally:
        conn.close()
    return int(row[0]), int(row[1])


async def rounds(db: Path, count: int) -> tuple[list[dict[str, int]], list[float]]:
    """Every round on the running workers: the early returns and the drain times."""
    cfg = load_config(env={}, overrides={"pipeline": {"drain_poll_s": 0.01}})
    early: list[dict[str, int]] = []
    drains: list[float] = []
    async with hlmem.open(db, config=cfg, pipeline="external", create=False) as mem:
        for round_no in range(count):
            windows, events, drained = await one_round(mem, round_no)
            drains.append(drained)
            if windows:
                early.append({"round": round_no, "windows": windows, "events": events})
                print(f"round {round_no}: drain returned with {windows} window(s) open")
    return early, drains


def run(args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    db = folder / "bench.db"
    init = [sys.executable, "-m", "hlmem", "--db", str(db), "init"]
    subprocess.run(init, check=True, stdout=subprocess.DEVNULL)
    logs = [folder / f"worker{i}.log" for i in range(2)]
    workers = [start_worker(db, log) for log in logs]
    try:
        for (proc, _), log in zip(workers, logs, strict=True):
            wait_running(log, proc)
        early, drains = anyio.run(rounds, db, args.rounds)
    finally:
        codes = []
        for proc, _ in workers:
            proc.send_signal(signal.SIGTERM)
        for proc, err in workers:
            codes.append(proc.wait(120))
            err.close()
    p50, p95 = percentile(drains, 0.5) or 0.0, percentile(drains, 0.95) or 0.0
    return {
        "rounds": args.rounds,
        "sessions_per_round": SESSIONS,
        "events_per_round": SESSIONS * EVENTS_PER_SESSION,
        "early_returns": len(early),
        "windows_left_open": sum(e["windows"] for e in early),
        "events_left_open": sum(e["events"] for e in early),
        "drain_p50_s": round(p50, 4),
        "drain_p95_s": round(p95, 4),
        "worker_exit_codes": codes,
        "early": early,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="40 rounds (well under 60 s)")
    parser.add_argument("--rounds", type=int, default=None, help="rounds (default 200)")
    parser.add_argument("--keep", action="store_true", help="keep the database and worker logs")
    args = parser.parse_args()
    args.rounds = args.rounds or (40 if args.quick else 200)
    folder = Path(tempfile.mkdtemp(prefix="hlmem-drain-"))
    result = run(args, folder)
    if not args.keep:
        for path in folder.iterdir():
            path.unlink()
        folder.rmdir()
    print(
        f"{result['early_returns']} early return(s) in {result['rounds']} rounds "
        f"({result['windows_left_open']} window(s), {result['events_left_open']} event(s) left "
        f"open); drain p50 {result['drain_p50_s']} s, p95 {result['drain_p95_s']} s"
    )
    print(json.dumps(result, ensure_ascii=False))


if __name__ == "__main__":
    main()
