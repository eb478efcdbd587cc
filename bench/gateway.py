#!/usr/bin/env python
"""Gateway benchmark: throughput against a provider's RPM limit, 429s, and the gateway's overhead.

Plain script against the simulated provider (``hlmem.sim.server.SimProvider``, a real HTTP
server on loopback) with 200 ms latency, over a real SQLite file (the gateway reserves and
settles every call in it)::

    .venv/bin/python bench/gateway.py --quick     # under a minute
    .venv/bin/python bench/gateway.py             # a full 60 s RPM window, longer runs

Stdout: a table, then ONE JSON object with every figure on the last line. What is measured:

1. overhead: a few concurrent callers well under every limit. Each call's wall time minus the
   server's configured latency, through the gateway and, for comparison, through a bare
   ``httpx.AsyncClient`` sending the same request (p50/p95). Gateway minus bare is what the
   gateway itself adds: budget reserve and settle (two SQLite transactions), limiters, parsing.
2. saturation: many concurrent callers against a server that enforces ``rpm`` requests per
   sliding window (429 with Retry-After beyond that), with the gateway configured for the same
   limit. Achieved calls/min as a fraction of the limit (target >= 0.9), 429s received (target 0),
   and the wire latency of the calls minus the server's latency (p50/p95).
3. outage: the whole pipeline (``hlmem.open``, the model extractor) against a provider that
   answers 60 % of requests with 503 for 20 s (``--quick``: 4 s, with the breaker's cooldown
   shortened in the same proportion, 30 -> 6 s), then is healthy; one session per event,
   offered evenly over the outage, every gateway and pipeline setting at its default otherwise.
   After the drain: failed jobs (target 0), parked jobs (target 0), and the claims present
   against those the rules extractor finds in the same lines (the simulated model answers with
   them; target: all present), with the breaker's refusals and the time the drain took.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import httpx

import hlmem
from hlmem.clock import SystemClock
from hlmem.config import load_config
from hlmem.gateway import ChatMessage, ChatRequest, Gateway, build_chat, percentile
from hlmem.sim import SimProvider, SimSettings
from hlmem.store import Store, sqlite_module

LATENCY_MS = 200.0
TARGET_FRACTION = 0.9
OUTAGE_ERROR_RATE = 0.6
OUTAGE_LATENCY_MS = 50.0
#: the default breaker cooldown (providers.*.breaker_cooldown_s) against the full outage of 20 s
DEFAULT_COOLDOWN_S = 30.0
FULL_OUTAGE_S = 20.0


def request(i: int) -> ChatRequest:
    text = f"记住：第{i}号部署用 v1.{i % 10}，remember that build {i} passed."
    return ChatRequest(
        model="sim-chat", messages=(ChatMessage(role="user", content=text),), max_tokens=64
    )


def config(base_url: str, rpm: float) -> Any:
    return load_config(
        env={},
        overrides={
            "providers": {
                "sim": {
                    "preset": "sim",
                    "base_url": base_url,
                    "requests_per_minute": rpm,
                    "tokens_per_minute": 1e9,
                    "max_concurrency": 64,
                    "max_retries": 5,
                    "timeout_s": 30,
                }
            },
            "prices": {"sim/*": {"input_per_1k": 0.0004, "output_per_1k": 0.0012}},
        },
    )


def pcts(values: list[float]) -> dict[str, float | None]:
    p50, p95 = percentile(values, 0.5), percentile(values, 0.95)
    return {
        "p50": None if p50 is None else round(p50, 2),
        "p95": None if p95 is None else round(p95, 2),
    }


async def overhead(db: Path, calls: int, callers: int) -> dict[str, Any]:
    """Wall time minus server latency per call, through the gateway and through bare httpx.

    Each caller alternates a gateway call and a bare call with the same body, so both see the
    same machine load; the gateway's own cost is the difference within each pair."""
    with SimProvider(settings=SimSettings(latency_ms=LATENCY_MS)) as sim:
        cfg = config(sim.base_url, rpm=1e6)
        store = await Store.open(db, cfg.store)
        gateway_ms: list[float] = []
        bare_ms: list[float] = []
        added_ms: list[float] = []
        try:
            async with (
                Gateway.open(cfg, store, clock=SystemClock()) as gw,
                httpx.AsyncClient(base_url=sim.base_url, trust_env=False) as client,
            ):

                async def pairs(worker: int) -> None:
                    for k in range(calls // callers):
                        started = time.perf_counter()
                        await gw.chat(stage="bench", provider="sim", request=request(worker + k))
                        via_gateway = (time.perf_counter() - started) * 1000 - LATENCY_MS
                        path, body = build_chat("sim", request(worker + k))
                        started = time.perf_counter()
                        response = await client.post(path, json=body)
                        response.raise_for_status()
                        json.loads(response.content)
                        bare = (time.perf_counter() - started) * 1000 - LATENCY_MS
                        gateway_ms.append(via_gateway)
                        bare_ms.append(bare)
                        added_ms.append(via_gateway - bare)

                async with anyio.create_task_group() as tg:
                    for w in range(callers):
                        tg.start_soon(pairs, w)
        finally:
            await store.close()
    return {
        "calls": len(gateway_ms),
        "callers": callers,
        "gateway_over_server_ms": pcts(gateway_ms),
        "bare_httpx_over_server_ms": pcts(bare_ms),
        "gateway_added_ms": pcts(added_ms),
    }


async def saturation(
    db: Path, rpm: float, window_s: float, duration_s: float, callers: int
) -> dict[str, Any]:
    """Many callers for ``duration_s`` against a server enforcing ``rpm`` (per sliding window)."""
    per_window = max(1, round(rpm * window_s / 60))
    settings = SimSettings(latency_ms=LATENCY_MS, rpm=per_window, window_s=window_s)
    with SimProvider(settings=settings) as sim:
        cfg = config(sim.base_url, rpm=rpm)
        store = await Store.open(db, cfg.store)
        done: list[float] = []
        try:
            async with Gateway.open(cfg, store, clock=SystemClock()) as gw:
                started = time.monotonic()

                async def caller(worker: int) -> None:
                    k = 0
                    while True:
                        await gw.chat(stage="bench", provider="sim", request=request(worker + k))
                        done.append(time.monotonic() - started)
                        k += callers

                with anyio.move_on_after(duration_s):
                    async with anyio.create_task_group() as tg:
                        for w in range(callers):
                            tg.start_soon(caller, w)
            ledger = await store.fetchall("ledger_since", ("",))
            wire = [
                r["latency_ms"] - LATENCY_MS
                for r in ledger
                if r["outcome"] == "ok" and r["latency_ms"] is not None
            ]
        finally:
            await store.close()
        stats = sim.stats()
    # Steady state: from the first completion on (the first call includes connection set-up).
    span = done[-1] - done[0] if len(done) > 1 else 0.0
    achieved = (len(done) - 1) / span * 60 if span > 0 else 0.0
    return {
        "rpm_limit": rpm,
        "server_window_s": window_s,
        "server_requests_per_window": per_window,
        "callers": callers,
        "duration_s": duration_s,
        "calls_ok": len(done),
        "achieved_calls_per_min": round(achieved, 1),
        "fraction_of_limit": round(achieved / rpm, 4),
        "server_requests": stats.requests,
        "server_429s_sent": stats.rate_limited,
        "server_peak_requests_per_window": stats.peak_requests_per_window,
        "server_peak_concurrency": stats.peak_concurrency,
        "wire_over_server_ms": pcts(wire),
    }


def outage_line(i: int) -> str:
    if i % 2:
        return f"Remember that ticket {i} belongs to Alice and is due on Friday."
    return f"记住：项目{i}的截止日期是周五，负责人是小王。"


def claim_set(db: Path) -> set[tuple[Any, ...]]:
    conn = sqlite_module("auto").connect(str(db))
    try:
        rows = conn.execute(
            "SELECT subject, predicate, value FROM claims WHERE status = 'active'"
        ).fetchall()
    finally:
        conn.close()
    return {tuple(r) for r in rows}


def outage_config(base_url: str | None, cooldown_s: float) -> Any:
    """Defaults everywhere, but the model extractor on the simulated provider (unlimited rate,
    the breaker's cooldown as given); ``None``: the rules extractor, for the expected claims."""
    if base_url is None:
        return load_config(env={})
    return load_config(
        env={},
        overrides={
            "providers": {
                "sim": {
                    "preset": "sim",
                    "base_url": base_url,
                    "requests_per_minute": 1e6,
                    "tokens_per_minute": 1e9,
                    "breaker_cooldown_s": cooldown_s,
                }
            },
            "prices": {"sim/*": {"input_per_1k": 0.0004, "output_per_1k": 0.0012}},
            "extractor": {"kind": "model", "provider": "sim", "model": "sim-chat"},
        },
    )


async def offer(db: Path, cfg: Any, sessions: int, over_s: float) -> float:
    """One session per event, offered evenly over ``over_s``; flush and drain; the drain's time."""
    async with hlmem.open(db, config=cfg) as mem:
        started = time.monotonic()
        for i in range(sessions):
            await anyio.sleep(max(started + over_s * i / sessions - time.monotonic(), 0.0))
            await mem.add_event(f"s{i}", outage_line(i))
            await mem.end_session(f"s{i}")
        await mem.flush()
        drain_started = time.monotonic()
        await mem.drain(timeout_s=600)
        return time.monotonic() - drain_started


def job_counts(db: Path) -> dict[str, int]:
    conn = sqlite_module("auto").connect(str(db))
    try:
        found = conn.execute(
            "SELECT status, count(*) FROM jobs WHERE kind = 'extractor' GROUP BY 1"
        ).fetchall()
        refused = conn.execute(
            "SELECT count(*), count(DISTINCT job_id) FROM provider_calls"
            " WHERE error_class = 'CircuitOpen'"
        ).fetchone()
        max_attempts = conn.execute("SELECT max(attempts) FROM jobs WHERE kind = 'extractor'")
        top = max_attempts.fetchone()[0]
    finally:
        conn.close()
    counts = {str(k): int(v) for k, v in found}
    counts.update(refusals=refused[0], jobs_refused=refused[1], max_attempts=top or 0)
    return counts


async def outage(tmp: Path, sessions: int, outage_s: float, cooldown_s: float) -> dict[str, Any]:
    """60 % 503 for ``outage_s``, then healthy, under the whole pipeline."""
    await offer(tmp / "rules.db", outage_config(None, cooldown_s), sessions, 0.0)
    expected = claim_set(tmp / "rules.db")
    settings = SimSettings(latency_ms=OUTAGE_LATENCY_MS, error_status=503, seed=20)
    with SimProvider(settings=settings) as sim:
        sim.update(error_rate=OUTAGE_ERROR_RATE, errors_for_s=outage_s)  # from now on
        started = time.monotonic()
        drain_s = await offer(
            tmp / "model.db", outage_config(sim.base_url, cooldown_s), sessions, outage_s
        )
        total_s = time.monotonic() - started
        stats = sim.stats()
    present = claim_set(tmp / "model.db")
    jobs = job_counts(tmp / "model.db")
    return {
        "sessions": sessions,
        "outage_s": outage_s,
        "error_rate": OUTAGE_ERROR_RATE,
        "breaker_cooldown_s": cooldown_s,
        "server_requests": stats.requests,
        "server_503s_sent": stats.errors_injected,
        "breaker_refusals": jobs["refusals"],
        "jobs_refused_by_breaker": jobs["jobs_refused"],
        "max_job_attempts": jobs["max_attempts"],
        "jobs_done": jobs.get("done", 0),
        "jobs_failed": jobs.get("failed", 0),
        "jobs_parked": jobs.get("parked", 0),
        "claims_expected": len(expected),
        "claims_present": len(present & expected),
        "claims_missing": len(expected - present),
        "drain_s": round(drain_s, 2),
        "total_s": round(total_s, 2),
    }


async def main(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        print("overhead ...", file=sys.stderr)
        over = await overhead(Path(tmp) / "overhead.db", args.overhead_calls, args.overhead_callers)
        print("saturation ...", file=sys.stderr)
        sat = await saturation(
            Path(tmp) / "saturation.db", args.rpm, args.window_s, args.duration_s, args.callers
        )
        print("outage ...", file=sys.stderr)
        out = await outage(Path(tmp), args.sessions, args.outage_s, args.cooldown_s)
    return {"overhead": over, "saturation": sat, "outage": out}


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def _outage_rows(out: dict[str, Any]) -> list[tuple[str, str]]:
    refusals = f"{out['breaker_refusals']} ({out['jobs_refused_by_breaker']} jobs)"
    claims = f"{out['claims_present']} / {out['claims_expected']}"
    return [
        (
            "outage: 503 rate / for s / breaker cooldown s",
            f"{out['error_rate']:.0%} / {out['outage_s']} / {out['breaker_cooldown_s']}",
        ),
        (
            "sessions (one event each) / server requests",
            f"{out['sessions']} / {out['server_requests']}",
        ),
        ("503s sent / breaker refusals", f"{out['server_503s_sent']} / {refusals}"),
        ("most attempts of a job", f"{out['max_job_attempts']}"),
        ("failed jobs (target 0)", f"{out['jobs_failed']}  {_verdict(out['jobs_failed'] == 0)}"),
        (
            "parked jobs at the end (target 0)",
            f"{out['jobs_parked']}  {_verdict(out['jobs_parked'] == 0)}",
        ),
        (
            "claims present / expected (target all)",
            f"{claims}  {_verdict(out['claims_missing'] == 0)}",
        ),
        ("drain s / whole run s", f"{out['drain_s']} / {out['total_s']}"),
    ]


def _pair(p: dict[str, float | None]) -> str:
    return f"{p['p50']} / {p['p95']}"


def report(result: dict[str, Any], args: argparse.Namespace) -> None:
    over, sat, out = result["overhead"], result["saturation"], result["outage"]
    ok_fraction = sat["fraction_of_limit"] >= TARGET_FRACTION
    ok_429 = sat["server_429s_sent"] == 0
    ok_failed = out["jobs_failed"] == 0
    ok_parked = out["jobs_parked"] == 0
    ok_claims = out["claims_missing"] == 0
    window = f"{sat['server_requests_per_window']} per {sat['server_window_s']} s window"
    rows = [
        ("overhead: calls / callers", f"{over['calls']} / {over['callers']}"),
        ("gateway over server latency p50/p95 ms", _pair(over["gateway_over_server_ms"])),
        ("bare httpx over server latency p50/p95 ms", _pair(over["bare_httpx_over_server_ms"])),
        ("gateway added p50/p95 ms", _pair(over["gateway_added_ms"])),
        ("saturation: rpm limit (ours = server's)", f"{sat['rpm_limit']:.0f} ({window})"),
        ("callers / duration s", f"{sat['callers']} / {sat['duration_s']}"),
        ("achieved calls/min", f"{sat['achieved_calls_per_min']}"),
        (
            "fraction of limit (target >= 0.9)",
            f"{sat['fraction_of_limit']}  {'PASS' if ok_fraction else 'FAIL'}",
        ),
        ("429s received (target 0)", f"{sat['server_429s_sent']}  {'PASS' if ok_429 else 'FAIL'}"),
        ("server peak requests per window", f"{sat['server_peak_requests_per_window']}"),
        ("wire over server latency p50/p95 ms", _pair(sat["wire_over_server_ms"])),
        *_outage_rows(out),
    ]
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key:<{width}}  {value}")
    result["targets"] = {
        "fraction_of_limit": ok_fraction,
        "zero_429s": ok_429,
        "outage_zero_failed": ok_failed,
        "outage_zero_parked": ok_parked,
        "outage_every_claim": ok_claims,
    }
    result["meta"] = {
        "quick": args.quick,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "loadavg_1m": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
        "server_latency_ms": LATENCY_MS,
    }
    print(json.dumps(result, ensure_ascii=False))


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short runs (about 40 s in all)")
    parser.add_argument("--rpm", type=float, default=1200.0, help="the provider's limit and ours")
    parser.add_argument("--callers", type=int, default=200, help="concurrent callers")
    parser.add_argument(
        "--sessions", type=int, default=100, help="outage: sessions, one event each"
    )
    args = parser.parse_args()
    # --quick shortens the outage, and the breaker's cooldown in the same proportion
    args.outage_s = 4.0 if args.quick else FULL_OUTAGE_S
    args.cooldown_s = DEFAULT_COOLDOWN_S * args.outage_s / FULL_OUTAGE_S
    args.window_s = 10.0 if args.quick else 60.0
    args.duration_s = 20.0 if args.quick else 90.0
    args.overhead_calls = 120 if args.quick else 1000
    args.overhead_callers = 4
    if not math.isfinite(args.rpm) or args.rpm <= 0:
        parser.error("--rpm must be positive")
    return args


if __name__ == "__main__":
    arguments = parse_args()
    report(anyio.run(main, arguments), arguments)
