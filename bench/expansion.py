#!/usr/bin/env python
"""Query expansion's cost and latency, against hlmem's simulated provider, on LoCoMo dev data.

    .venv/bin/python bench/expansion.py --quick                 # one conversation, 40 questions
    .venv/bin/python bench/expansion.py --latency-ms 300        # a chat model's usual latency

A LoCoMo dev conversation is replayed into a fresh store (the embedded default: rules
extractor, local embedder), then every question is recalled twice, interleaved in one run:
plainly (the baseline) and with ``recall.expand_provider`` set to the simulated provider
(``--latency-ms`` per answer, ``--jitter-ms``). Reported: recall latency p50 / p95 of each and
their ratio, expansion calls per recall, prompt and completion tokens per call and the cost
per 1,000 recalls at ``--price-in`` / ``--price-out`` per 1k tokens, all read from hlmem's own
ledger (``provider_calls``). The simulated provider's expansion is the question's content
words, not a model's paraphrase: what this measures is the price of asking, not what a real
model's queries add to recall (``bench/eval_retrieval.py`` measures quality).

Stdout: a short table, then one JSON object on the last line. Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import eval_data

import hlmem
from hlmem.config import Config, load_config
from hlmem.gateway import percentile
from hlmem.sim import SimProvider

PROVIDER = "sim"


def configs(base_url: str, args: argparse.Namespace) -> tuple[Config, Config]:
    """(plain, expanded): the same store settings, the second with expansion on."""
    base: dict[str, Any] = {
        "providers": {
            PROVIDER: {
                "preset": "sim",
                "base_url": base_url,
                "requests_per_minute": 60_000,
                "tokens_per_minute": 100_000_000,
            }
        },
        "prices": {
            f"{PROVIDER}/*": {"input_per_1k": args.price_in, "output_per_1k": args.price_out}
        },
        "maintenance": {"enabled": False},
    }
    expanded = {**base, "recall": {"expand_provider": PROVIDER, "expand_model": "sim-chat"}}
    return load_config(env={}, overrides=base), load_config(env={}, overrides=expanded)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    data = eval_data.load_locomo()
    conv = data.conversations[0]
    questions = conv.questions[: args.questions]
    with tempfile.TemporaryDirectory() as tmp, SimProvider() as sim:
        sim.update(latency_ms=args.latency_ms, jitter_ms=args.jitter_ms)
        db = Path(tmp) / "expansion.db"
        plain_cfg, expand_cfg = configs(sim.base_url, args)
        started = time.perf_counter()
        async with hlmem.open(db, config=plain_cfg) as mem:
            await mem.add_events(eval_data.as_events(conv))
            await mem.flush()
            await mem.drain(timeout_s=600)
        print(
            f"replayed {len(conv.turns)} turns in {time.perf_counter() - started:.1f} s",
            file=sys.stderr,
        )
        latency: dict[str, list[float]] = {"plain": [], "expanded": []}
        async with (
            hlmem.open(db, config=plain_cfg, pipeline="external") as plain,
            hlmem.open(db, config=expand_cfg, pipeline="external") as expanded,
        ):
            for q in questions:
                for name, mem in (("plain", plain), ("expanded", expanded)):
                    t0 = time.perf_counter()
                    await mem.recall(q.text, namespace=conv.id, k=10)
                    latency[name].append((time.perf_counter() - t0) * 1000)
        with sqlite3.connect(db) as conn:
            calls, ok, prompt, completion, cost = conn.execute(
                "SELECT count(*), sum(outcome = 'ok'), sum(prompt_tokens),"
                " sum(completion_tokens), sum(cost) FROM provider_calls"
                " WHERE stage = 'recall' AND call_kind = 'chat'"
            ).fetchone()
    n = len(questions)
    out: dict[str, Any] = {
        "bench": "expansion",
        "dataset": "locomo-dev",
        "conversation": conv.id,
        "questions": n,
        "sim_latency_ms": args.latency_ms,
        "calls_per_recall": calls / n,
        "calls_ok": ok,
        "prompt_tokens_per_call": prompt / max(calls, 1),
        "completion_tokens_per_call": completion / max(calls, 1),
        "cost_per_1k_recalls": cost / n * 1000,
        "currency": "USD",
        "price_in_per_1k": args.price_in,
        "price_out_per_1k": args.price_out,
    }
    for name, values in latency.items():
        out[f"{name}_p50_ms"] = percentile(values, 0.50)
        out[f"{name}_p95_ms"] = percentile(values, 0.95)
    out["p95_ratio_expanded_to_plain"] = out["expanded_p95_ms"] / out["plain_p95_ms"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="40 questions")
    parser.add_argument("--questions", type=int, default=200)
    parser.add_argument("--latency-ms", type=float, default=300.0)
    parser.add_argument("--jitter-ms", type=float, default=50.0)
    parser.add_argument("--price-in", type=float, default=0.00015)
    parser.add_argument("--price-out", type=float, default=0.0006)
    args = parser.parse_args()
    if args.quick:
        args.questions = min(args.questions, 40)
    result = anyio.run(run, args)
    for key in ("plain_p50_ms", "plain_p95_ms", "expanded_p50_ms", "expanded_p95_ms"):
        print(f"{key:32} {result[key]:10.1f}")
    print(f"{'cost per 1k recalls (USD)':32} {result['cost_per_1k_recalls']:10.4f}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
