#!/usr/bin/env python
"""Gateway benchmark: throughput against a provider's RPM limit, 429s, and the gateway's overhead.

Plain script against the simulated provider (``hlmem.sim_provider.SimProvider``, a real HTTP
server on loopback) with 200 ms latency, over a real SQLite file (the gateway reserves and
settles every call in it)::

    .venv/bin/python bench/gateway.py --quick     # about 40 s
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

from hlmem.config import load_config
from hlmem.gateway import Gateway
from hlmem.ops import percentile
from hlmem.providers import ChatMessage, ChatRequest, build_chat
from hlmem.sim_provider import SimProvider
from hlmem.sim_state import SimSettings
from hlmem.store import Store

LATENCY_MS = 200.0
TARGET_FRACTION = 0.9


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
                Gateway.open(cfg, store) as gw,
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
            async with Gateway.open(cfg, store) as gw:
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


async def main(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        print("overhead ...", file=sys.stderr)
        over = await overhead(Path(tmp) / "overhead.db", args.overhead_calls, args.overhead_callers)
        print("saturation ...", file=sys.stderr)
        sat = await saturation(
            Path(tmp) / "saturation.db", args.rpm, args.window_s, args.duration_s, args.callers
        )
    return {"overhead": over, "saturation": sat}


def _pair(p: dict[str, float | None]) -> str:
    return f"{p['p50']} / {p['p95']}"


def report(result: dict[str, Any], args: argparse.Namespace) -> None:
    over, sat = result["overhead"], result["saturation"]
    ok_fraction = sat["fraction_of_limit"] >= TARGET_FRACTION
    ok_429 = sat["server_429s_sent"] == 0
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
    ]
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key:<{width}}  {value}")
    result["targets"] = {"fraction_of_limit": ok_fraction, "zero_429s": ok_429}
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
    args = parser.parse_args()
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
