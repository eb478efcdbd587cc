#!/usr/bin/env python
"""Embedder lag: the e5 embedder's sustained rate, and how long an event waits for its vector.

Plain script over real SQLite files in a temporary directory, through the public async API
(``hlmem.open(path, config=..., pipeline="inline")``, ``await mem.add_event(...)``)::

    .venv/bin/python bench/embed_lag.py --quick      # < 60 s on 2 cores
    .venv/bin/python bench/embed_lag.py              # longer phases (~4 min)

The load: ``ContentPool`` of ``bench/ingest.py`` (zh and en chat turns, tool output, ~15 % asking
to be remembered), several sessions, open loop (each session sends at its scheduled times,
whatever the acks do). Three phases, each into a fresh file:

1. **Overload, e5** (``embedder.provider = "e5"``): ``--over-rate`` events/s offered for
   ``--over-s`` seconds, far above what e5 embeds. Measured: acknowledged events/s against
   offered; claims visible (active, so recallable by full text) per second and the lag from the
   telling event's ack to its claim being visible; the embedder's backlog in the job table
   (items waiting), the process's RSS (anonymous and file-backed: the model's pages) and the
   vectors made, sampled every 0.25 s by a separate process (so that polling takes no GIL from
   the pipeline); the lag from ack to vector of the events and claims that got one, and of the
   event vectors made in each third of the run; what still waits at close and for how long.
   Then ingestion stops, claims catch up, and the embedder works alone for ``--tail-s``
   seconds: **its sustained vectors/s**.
2. **Overload, local embedder**: the same load with the hashed local embedder (the default),
   the same-run baseline: its ack and claim figures are the ceiling the e5 run is judged
   against (ratios in ``vs_local``), and its vectors keep up.
3. **Sustainable, e5**: ``--fraction`` (0.5) of the events/s the embedder sustained alone in
   phase 1 (vectors/s over vectors per event), for ``--steady-s`` seconds, then a drain: lag from
   ack to vector p50/p95 for events and claims, and from the event's extraction (its window
   closed and indexed for full text, when the embedder's job is made) to its vector, which
   takes the windowing out (a window closes at 5 events of a session, or 120 s).

A vector's time is its row's ``created_at`` (hlmem's clock, the wall clock; it commits in the
same transaction); a claim's visibility is when the poller first sees it active, every 0.1 s.
Lags are wall-clock seconds from ``add_event`` returning.

Stdout: a table, then one JSON object on the last line. Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import shutil
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from ingest import ContentPool, claims_caught_up, loadavg

import hlmem
from hlmem.store import sqlite_module

SAMPLE_S = 0.25
CLAIM_POLL_S = 0.1


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    s = sorted(values)
    return round(s[min(len(s) - 1, max(0, int(q * len(s) + 0.5) - 1))], 3)


def lag_summary(values: list[float]) -> dict[str, Any]:
    return {"n": len(values), "p50_s": pct(values, 0.5), "p95_s": pct(values, 0.95)}


def wall_of(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


# --- the poller (its own process) -------------------------------------------------------------


def proc_figures(pid: int) -> tuple[float, float, float, float]:
    """RSS, its anonymous and file-backed parts (MiB), and CPU seconds of process ``pid``."""
    mib = {"VmRSS": float("nan"), "RssAnon": float("nan"), "RssFile": float("nan")}
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in mib:
                mib[key] = int(value.split()[0]) / 1024
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return mib["VmRSS"], mib["RssAnon"], mib["RssFile"], cpu


def poll(db: str, pid: int, out: str, stop: Any) -> None:
    """Until ``stop`` is set: claims first seen visible, and every SAMPLE_S the embedder's
    backlog, the backlog on the way to claims, vectors, visible claims, RSS and CPU of ``pid``.
    Written to ``out`` as JSON."""
    module = sqlite_module("auto")
    conn = module.connect(db, timeout=10, isolation_level=None)
    seen: dict[str, float] = {}
    samples: list[list[float]] = []
    next_sample = 0.0
    while not stop.is_set():
        now = time.time()
        try:
            for (cid,) in conn.execute(
                "SELECT id FROM claims WHERE status IN ('active', 'superseded')"
            ):
                seen.setdefault(cid, now)
            if now >= next_sample:
                embed, to_claims, vectors = conn.execute(
                    "SELECT coalesce(sum(CASE WHEN kind = 'embedder' THEN size END), 0),"
                    " coalesce(sum(CASE WHEN kind NOT IN ('embedder', 'maintenance')"
                    " THEN size END), 0), (SELECT count(*) FROM vectors)"
                    " FROM jobs WHERE status IN ('todo', 'doing')"
                ).fetchone()
                rss, anon, file, cpu = proc_figures(pid)
                samples.append([now, embed, to_claims, vectors, len(seen), rss, cpu, anon, file])
                next_sample = now + SAMPLE_S
        except module.OperationalError:
            pass  # busy for a moment: the next poll reads it
        time.sleep(CLAIM_POLL_S)
    conn.close()
    with open(out, "w", encoding="utf-8") as f:
        json.dump({"claims_seen": seen, "samples": samples}, f)


class Poller:
    def __init__(self, db: Path, workdir: Path) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.out = workdir / f"{db.stem}.poll.json"
        self.stop = ctx.Event()
        self.proc = ctx.Process(target=poll, args=(str(db), os.getpid(), str(self.out), self.stop))

    def __enter__(self) -> Poller:
        self.proc.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.proc.join(timeout=30)

    def result(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.out.read_text(encoding="utf-8"))
        return data


# --- load -------------------------------------------------------------------------------------


async def offer(
    mem: hlmem.Memory, pool: ContentPool, *, rate: float, seconds: float, sessions: int, tag: str
) -> dict[str, Any]:
    """Open loop: ``sessions`` sessions sharing ``rate`` events/s for ``seconds``; each event's
    ack time (wall) by id, and how many were acknowledged."""
    per_session = rate / sessions
    count = max(1, int(per_session * seconds))
    acks: dict[str, float] = {}
    slips: list[float] = []
    start = time.perf_counter() + 0.05
    wall0 = time.time() + 0.05

    async def session(i: int) -> None:
        phase = i / sessions
        for k in range(count):
            due = start + (k + phase) / per_session
            delay = due - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            slips.append(time.perf_counter() - due)
            role, content, _ = pool.event(i, k)
            eid = await mem.add_event(f"{tag}-{i}", content, role=role)
            acks[eid] = time.time()

    await asyncio.gather(*(session(i) for i in range(sessions)))
    ended = time.time()
    return {
        "offered_rate": rate,
        "sessions": sessions,
        "events": len(acks),
        "offer_seconds": round(ended - wall0, 3),
        "ack_rate": round(len(acks) / (ended - wall0), 1),
        "send_slip_p95_ms": round((pct(slips, 0.95) or 0.0) * 1000, 1),
        "started": wall0,
        "ended": ended,
        "acks": acks,
    }


# --- reading the file afterwards --------------------------------------------------------------


def read_file(db: Path) -> dict[str, Any]:
    conn = sqlite_module("auto").connect(str(db), timeout=10)
    try:
        vectors = conn.execute("SELECT owner_kind, owner_id, created_at FROM vectors").fetchall()
        evidence = conn.execute("SELECT claim_id, event_id FROM evidence").fetchall()
        extracted = conn.execute(
            "SELECT wi.event_id, min(x.created_at) FROM window_items wi"
            " JOIN extractions x ON x.window_id = wi.window_id GROUP BY wi.event_id"
        ).fetchall()
        waiting = conn.execute(
            "SELECT coalesce(sum(size), 0) FROM jobs"
            " WHERE kind = 'embedder' AND status IN ('todo', 'doing')"
        ).fetchone()[0]
    finally:
        conn.close()
    return {
        "vectors": [(k, i, wall_of(t)) for k, i, t in vectors],
        "evidence": evidence,
        "extracted": {e: wall_of(t) for e, t in extracted},
        "embedder_backlog_at_close": waiting,
    }


def lags(
    acks: dict[str, float], data: dict[str, Any], claims_seen: dict[str, float]
) -> dict[str, Any]:
    """Ack -> vector (events, claims), extraction -> vector (events), ack -> claim visible;
    a claim's time starts at the ack of the first of its evidence events."""
    told: dict[str, float] = {}
    for claim_id, event_id in data["evidence"]:
        if event_id in acks:
            told[claim_id] = min(told.get(claim_id, float("inf")), acks[event_id])
    ev_lag, ev_from_x, cl_lag = [], [], []
    by_time: list[tuple[float, float]] = []  # (made, lag) of events
    for kind, owner, made in data["vectors"]:
        if kind == "event" and owner in acks:
            ev_lag.append(made - acks[owner])
            by_time.append((made, made - acks[owner]))
            if owner in data["extracted"]:
                ev_from_x.append(made - data["extracted"][owner])
        elif kind == "claim" and owner in told:
            cl_lag.append(made - told[owner])
    visible = [t - told[c] for c, t in claims_seen.items() if c in told]
    return {
        "event_vector": lag_summary(ev_lag),
        "event_vector_from_extraction": lag_summary(ev_from_x),
        "claim_vector": lag_summary(cl_lag),
        "claim_visible": lag_summary(visible),
        "events_by_made": sorted(by_time),
    }


def thirds(made: list[tuple[float, float]], t0: float, t1: float) -> list[dict[str, Any]]:
    """Ack -> vector lag of the event vectors made in each third of [t0, t1] (``made``: pairs of
    (made, lag)): under overload each third's lag is longer."""
    out = []
    for n in range(3):
        lo, hi = t0 + (t1 - t0) * n / 3, t0 + (t1 - t0) * (n + 1) / 3
        out.append(lag_summary([lag for at, lag in made if lo <= at < hi]))
    return out


def waiting(acks: dict[str, float], data: dict[str, Any], at: float) -> dict[str, Any]:
    """Events acknowledged and still without a vector at ``at``: how many, the oldest's age."""
    embedded = {i for k, i, _ in data["vectors"] if k == "event"}
    left = [t for e, t in acks.items() if e not in embedded]
    return {"events": len(left), "oldest_age_s": round(at - min(left), 1) if left else None}


def rate_between(vectors: list[tuple[str, str, float]], t0: float, t1: float) -> float:
    made = sum(1 for _, _, t in vectors if t0 <= t < t1)
    return round(made / (t1 - t0), 2) if t1 > t0 else float("nan")


def sample_summary(samples: list[list[float]], t0: float, t1: float) -> dict[str, Any]:
    """Backlog, claims visible and RSS over [t0, t1] from the poller's samples."""
    inside = [s for s in samples if t0 <= s[0] <= t1]
    if len(inside) < 2:
        return {}
    first, last = inside[0], inside[-1]
    span = last[0] - first[0]
    rss = [s[5] for s in inside]
    half = len(rss) // 2
    return {
        "samples": len(inside),
        "embedder_backlog_start": first[1],
        "embedder_backlog_end": last[1],
        "embedder_backlog_growth_per_s": round((last[1] - first[1]) / span, 1),
        "to_claims_backlog_max": max(s[2] for s in inside),
        "vectors_per_s": round((last[3] - first[3]) / span, 2),
        "claims_visible_per_s": round((last[4] - first[4]) / span, 2),
        "rss_mib_first": round(first[5], 1),
        "rss_mib_last": round(last[5], 1),
        "rss_mib_max": round(max(rss), 1),
        "rss_anon_mib_first_last": [round(first[7], 1), round(last[7], 1)],
        "rss_file_mib_first_last": [round(first[8], 1), round(last[8], 1)],
        # the second half against the first: growth while the backlog keeps growing
        "rss_mib_second_half_minus_first": round(
            statistics.fmean(rss[half:]) - statistics.fmean(rss[:half]), 1
        ),
        "process_cpu_per_wall_s": round((last[6] - first[6]) / span, 3),
        # every ~5 s: seconds in, embedder backlog, RSS, its anonymous and file-backed parts
        "timeline": [
            [round(x[0] - first[0], 1), x[1], round(x[5], 1), round(x[7], 1), round(x[8], 1)]
            for x in inside[:: max(1, round(5 / SAMPLE_S))]
        ],
    }


# --- phases -----------------------------------------------------------------------------------


def config(embedder: dict[str, Any]) -> hlmem.Config:
    return hlmem.load_config(env={}, overrides={"embedder": embedder})


async def overload(
    args: argparse.Namespace, workdir: Path, pool: ContentPool, name: str, embedder: dict[str, Any]
) -> dict[str, Any]:
    db = workdir / f"{name}.db"
    log(f"{name}: {args.over_rate:.0f} events/s offered for {args.over_s:.0f} s")
    with Poller(db, workdir) as poller:
        async with hlmem.open(db, config=config(embedder), pipeline="inline") as mem:
            load = await offer(
                mem,
                pool,
                rate=args.over_rate,
                seconds=args.over_s,
                sessions=args.over_sessions,
                tag=name,
            )
            await mem.flush()
            t0 = time.perf_counter()
            await claims_caught_up(mem, timeout_s=300)
            catch_up = time.perf_counter() - t0
            tail_t0 = time.time()
            log(
                f"{name}: claims caught up in {catch_up:.1f} s; the embedder alone for "
                f"{args.tail_s:.0f} s"
            )
            await asyncio.sleep(args.tail_s)
            tail_t1 = time.time()
    closed = time.time()
    polled = poller.result()
    data = read_file(db)
    acks = load.pop("acks")
    found = lags(acks, data, polled["claims_seen"])
    by_time = found.pop("events_by_made")
    return {
        "embedder": embedder,
        "load": load,
        "claims_caught_up_s": round(catch_up, 2),
        "during_load": sample_summary(polled["samples"], load["started"], load["ended"]),
        "vectors_per_s_alone": rate_between(data["vectors"], tail_t0, tail_t1),
        "embedder_backlog_at_close": data["embedder_backlog_at_close"],
        "lags": found,
        "event_vector_lag_by_third": thirds(by_time, load["started"], tail_t1),
        "waiting_at_close": waiting(acks, data, closed),
    }


async def sustainable(
    args: argparse.Namespace, workdir: Path, pool: ContentPool, rate: float
) -> dict[str, Any]:
    name = "steady-e5"
    db = workdir / f"{name}.db"
    # a window closes at 5 events of a session: about 2 events/s each keeps windowing short
    sessions = max(1, round(rate / 2))
    log(f"{name}: {rate:.1f} events/s offered for {args.steady_s:.0f} s ({sessions} sessions)")
    with Poller(db, workdir) as poller:
        async with hlmem.open(db, config=config({"provider": "e5"}), pipeline="inline") as mem:
            load = await offer(
                mem, pool, rate=rate, seconds=args.steady_s, sessions=sessions, tag=name
            )
            await mem.flush()
            t0 = time.perf_counter()
            await mem.drain(timeout_s=args.drain_timeout_s)
            drain_s = time.perf_counter() - t0
    polled = poller.result()
    data = read_file(db)
    acks = load.pop("acks")
    found = lags(acks, data, polled["claims_seen"])
    found.pop("events_by_made")
    return {
        "load": load,
        "drain_after_s": round(drain_s, 2),
        "during_load": sample_summary(polled["samples"], load["started"], load["ended"]),
        "lags": found,
    }


def vectors_per_event(run: dict[str, Any]) -> float:
    lagged = run["lags"]
    made = lagged["event_vector"]["n"] + lagged["claim_vector"]["n"]
    return made / max(1, lagged["event_vector"]["n"])


async def main_async(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    pool = ContentPool(args.seed)
    e5 = {"provider": "e5", **({"events": args.events} if args.events else {})}
    if args.event_max_chars:
        e5["event_max_chars"] = args.event_max_chars
    res: dict[str, Any] = {
        "meta": {
            "mode": "quick" if args.quick else "full",
            "loadavg_start": loadavg(),
            "cpus": os.cpu_count(),
            "content_mean_chars": round(pool.mean_chars, 1),
            "e5_config": e5,
            "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
    }
    res["overload_e5"] = await overload(args, workdir, pool, "over-e5", e5)
    local = {k: v for k, v in e5.items() if k != "provider"} | {"provider": "local"}
    res["overload_local"] = await overload(args, workdir, pool, "over-local", local)
    over, base = res["overload_e5"], res["overload_local"]
    res["vs_local"] = {
        "ack_rate": round(over["load"]["ack_rate"] / base["load"]["ack_rate"], 3),
        "claims_visible_per_s": round(
            over["during_load"]["claims_visible_per_s"]
            / max(1e-9, base["during_load"]["claims_visible_per_s"]),
            3,
        ),
        "claim_visible_p95": round(
            (over["lags"]["claim_visible"]["p95_s"] or 0)
            / max(1e-9, base["lags"]["claim_visible"]["p95_s"] or 0),
            3,
        ),
    }
    alone = over["vectors_per_s_alone"]
    per_event = vectors_per_event(base)  # the local run embedded everything: its mix
    rate = max(0.5, args.fraction * alone / per_event)
    res["sustained"] = {
        "vectors_per_s_alone": alone,
        "vectors_per_s_under_overload": over["during_load"].get("vectors_per_s"),
        "vectors_per_event": round(per_event, 3),
        "events_per_s_alone": round(alone / per_event, 2),
        "steady_rate_offered": round(rate, 2),
    }
    res["steady_e5"] = await sustainable(args, workdir, pool, rate)
    res["meta"]["loadavg_end"] = loadavg()
    return res


def report(res: dict[str, Any]) -> list[str]:
    lines = []
    s = res["sustained"]
    lines.append(
        f"e5 embedder alone: {s['vectors_per_s_alone']} vectors/s = "
        f"{s['events_per_s_alone']} events/s at {s['vectors_per_event']} vectors per event; "
        f"under overload {s['vectors_per_s_under_overload']} vectors/s"
    )
    head = (
        f"{'phase':<12} {'offered':>8} {'acked/s':>8} {'claims/s':>9} "
        f"{'claim vis p50/p95 s':>20} {'ev vec p50/p95 s':>18} {'cl vec p50/p95 s':>18} "
        f"{'backlog +/s':>11} {'RSS first/last/max':>20}"
    )
    lines.append(head)
    for key in ("overload_local", "overload_e5", "steady_e5"):
        r = res[key]
        d, lg = r["during_load"], r["lags"]
        lines.append(
            f"{key:<12} {r['load']['offered_rate']:>8.1f} {r['load']['ack_rate']:>8.1f} "
            f"{d.get('claims_visible_per_s', 0):>9} "
            f"{lg['claim_visible']['p50_s']!s:>9} / {lg['claim_visible']['p95_s']!s:<8} "
            f"{lg['event_vector']['p50_s']!s:>8} / {lg['event_vector']['p95_s']!s:<7} "
            f"{lg['claim_vector']['p50_s']!s:>8} / {lg['claim_vector']['p95_s']!s:<7} "
            f"{d.get('embedder_backlog_growth_per_s', 0):>11} "
            f"{d.get('rss_mib_first', 0):>6} / {d.get('rss_mib_last', 0)} / "
            f"{d.get('rss_mib_max', 0)}"
        )
    over = res["overload_e5"]
    lines.append(
        "overload_e5 event -> vector lag p50 of the vectors made in each third of the run "
        "(load + tail): "
        + ", ".join(f"{t['p50_s']} s (n={t['n']})" for t in over["event_vector_lag_by_third"])
        + f"; at close {over['waiting_at_close']['events']} events waiting, the oldest for "
        f"{over['waiting_at_close']['oldest_age_s']} s"
    )
    st = res["steady_e5"]["lags"]["event_vector_from_extraction"]
    lines.append(f"steady_e5 event extraction -> vector p50/p95 {st['p50_s']} / {st['p95_s']} s")
    lines.append(f"vs local (e5 / local): {res['vs_local']}")
    return lines


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0] if __doc__ else None,
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--quick", action="store_true", help="short phases: whole run under 60 s")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--over-rate", type=float, default=200.0, help="events/s offered, overload")
    p.add_argument("--over-sessions", type=int, default=100)
    p.add_argument("--fraction", type=float, default=0.5, help="of the sustained rate, steady")
    p.add_argument("--events", choices=["all", "uncovered", "none"], default=None)
    p.add_argument("--event-max-chars", type=int, default=None)
    p.add_argument("--keep", action="store_true", help="keep the database files")
    p.add_argument("--over-s", type=float, default=None, help="overload seconds (10 / 40)")
    args = p.parse_args(argv)
    over_s = args.over_s
    if args.quick:
        args.over_s, args.tail_s, args.steady_s = 10.0, 5.0, 12.0
    else:
        args.over_s, args.tail_s, args.steady_s = 40.0, 20.0, 60.0
    args.over_s = over_s or args.over_s
    args.drain_timeout_s = 300.0
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="hlmem-embed-lag-"))
    started = time.perf_counter()
    try:
        res = asyncio.run(main_async(args, workdir))
    finally:
        if args.keep:
            log(f"database files kept in {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    res["meta"]["total_seconds"] = round(time.perf_counter() - started, 1)
    for line in report(res):
        print(line)
    print(json.dumps(res, ensure_ascii=False, separators=(",", ":")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
