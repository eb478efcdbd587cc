#!/usr/bin/env python
"""Recall configurations compared on the same stores: each dataset is replayed once (kept in
``--cache``), then every variant's recall settings answer all its questions.

For tuning recall on the dev data without replaying for each setting (LongMemEval S takes
minutes to replay): a variant changes only what recall reads (``[recall]`` and the like), never
what ingestion made, so its answers are those ``bench/eval_retrieval.py`` would give with the
same configuration. The report, per dataset and variant: hit@1, recall@10 and MRR@10 overall
and per category, beside the stronger BM25 baseline (``bm25-fts``), the same way scored::

    .venv/bin/python bench/eval_variants.py --quick \\
        --variant 'base={}' --variant 'k10={"recall": {"rrf_k": 10}}'

A variant is ``NAME=JSON`` (config overrides, merged over ``--config``, the embedder's and the
evaluation's own, :data:`eval_retrieval.EVAL_OVERRIDES`). A store in ``--cache`` is reused
while its name matches (dataset, subset, embedder, the ingestion's config file); delete it
after changing how hlmem ingests. Stdout: a table, then one JSON object on the last line.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import eval_data
import eval_retrieval as ev
from eval_retrieval import DATASETS, QUICK_LIMITS, SystemRun

import hlmem
from hlmem.config import load_config
from hlmem.errors import ConfigError, HlmemError

HEAD = ("hit@1", "recall@10", "mrr@10")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", action="append", choices=DATASETS, default=None)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--limit", type=int, default=None)
    p.add_argument(
        "--config", type=Path, default=None, help="the replay's and every variant's base"
    )
    p.add_argument("--embedder", choices=list(ev.EMBEDDERS), default="local")
    p.add_argument("--variant", action="append", default=[], help="NAME=JSON overrides")
    p.add_argument("--cache", type=Path, default=Path("/tmp/hlmem-eval-cache"))
    p.add_argument("--categories", action="store_true", help="per-category rows too")
    args = p.parse_args(argv)
    args.variants = {}
    for spec in args.variant or ["base={}"]:
        name, sep, body = spec.partition("=")
        if not sep:
            p.error(f"--variant {spec!r}: NAME=JSON")
        try:
            args.variants[name] = json.loads(body)
        except json.JSONDecodeError as exc:
            p.error(f"--variant {name}: {exc}")
    return eval_data.default_loading(args)


def merged(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merged(out[key], value)
        else:
            out[key] = value
    return out


def config(args: argparse.Namespace, overrides: dict[str, Any]) -> Any:
    base = merged(ev.EMBEDDERS[args.embedder], overrides)
    return load_config(args.config, env={}, overrides=merged(base, ev.EVAL_OVERRIDES))


async def replayed(args: argparse.Namespace, name: str, convs: list[Any]) -> Path:
    """The dataset's store in the cache, replayed now if it is not there."""
    conf = args.config.read_bytes() if args.config else b""
    tag = hashlib.sha256(conf).hexdigest()[:8]
    db = args.cache / f"{name}-{len(convs)}-{args.embedder}-{tag}.db"
    if db.exists():
        return db
    args.cache.mkdir(parents=True, exist_ok=True)
    partial = db.with_suffix(".partial.db")
    for stale in args.cache.glob(partial.name + "*"):
        stale.unlink()
    started = time.perf_counter()
    clock = hlmem.ManualClock(convs[0].turns[0].at)
    async with hlmem.open(partial, config=config(args, {}), clock=clock) as mem:
        for conv in convs:
            await ev.replay(mem, clock, conv)
    partial.rename(db)
    print(f"{name}: replayed in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return db


def means(convs: list[Any], run: SystemRun, by_category: bool) -> dict[str, dict[str, float]]:
    per_q = ev.per_question(convs, run, ev.KS)
    out = {}
    for cat, ids in ev.groups(convs).items():
        if cat != ev.ALL and not by_category:
            continue
        out[cat] = {m: round(sum(per_q[i][m] for i in ids) / len(ids), 4) for m in HEAD}
        out[cat]["n"] = len(ids)
    return out


async def run(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in args.dataset or DATASETS:
        limit = (
            args.limit if args.limit is not None else (QUICK_LIMITS[name] if args.quick else None)
        )
        ds = await anyio.to_thread.run_sync(ev.load, name, args)
        convs = ev.subset(ds.conversations, limit)
        db = await replayed(args, name, convs)
        base = await anyio.to_thread.run_sync(ev.run_bm25_fts, convs, 10)
        rows = {"bm25-fts": means(convs, base, args.categories)}
        for vname, overrides in args.variants.items():
            run_ = SystemRun()
            clock = hlmem.ManualClock(convs[0].turns[0].at)
            async with hlmem.open(db, config=config(args, overrides), clock=clock) as mem:
                started = time.perf_counter()
                await ev.ask(mem, clock, convs, 10, run_)
                elapsed = time.perf_counter() - started
            rows[vname] = means(convs, run_, args.categories)
            rows[vname]["_s"] = round(elapsed, 1)  # type: ignore[assignment]
            print(f"{name} {vname}: {rows[vname][ev.ALL]}", file=sys.stderr)
        out[name] = rows
    return out


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        result = anyio.run(run, args, backend="asyncio")
    except (ConfigError, HlmemError, ev.EvalError) as exc:
        print(f"eval_variants: error: {exc}", file=sys.stderr)
        return 1
    for name, rows in result.items():
        base = rows["bm25-fts"][ev.ALL]
        print(f"\n{name}   (bm25-fts {' '.join(f'{m} {base[m]:.3f}' for m in HEAD)})")
        for vname, cats in rows.items():
            for cat, m in cats.items():
                if cat.startswith("_"):
                    continue
                diff = " ".join(f"{m[h] - rows['bm25-fts'][cat][h]:+.3f}" for h in HEAD)
                vals = " ".join(f"{m[h]:.3f}" for h in HEAD)
                print(f"  {vname:24} {cat:18} n={m['n']:<5} {vals}   vs bm25-fts {diff}")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
