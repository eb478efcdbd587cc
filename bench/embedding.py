#!/usr/bin/env python
"""Local embedder benchmark: µs per text and texts/s, and dense-only evidence retrieval.

Plain script over real texts, outside the test run::

    .venv/bin/python bench/embedding.py --quick            # fewer conversations in the eval
    .venv/bin/python bench/embedding.py                    # speed + retrieval on every dataset
    git show HEAD:src/hlmem/lang/embedding.py > /tmp/old_embedding.py
    .venv/bin/python bench/embedding.py --module /tmp/old_embedding.py   # the same, another version

1. **Speed.** Three corpora of realistic texts: ``ContentPool`` of ``bench/ingest.py`` (the
   ingest bench's zh + en mix, tool output included), LoCoMo turns (English chat) and MemDaily
   messages (Chinese). ``embed`` in batches of ``--batch`` texts, best of ``--rounds`` passes:
   µs per text (wall and thread CPU) and texts/s; ``embed_one`` on the first 500 texts: CPU µs
   per text.
2. **Retrieval, vectors only.** Per conversation of LoCoMo (en), MemDaily (zh) and LongMemEval
   oracle (en), every turn is embedded, every question is embedded, and the turns are ranked by
   cosine: hit@1/5/10 and MRR@10 against the gold evidence turns (``bench/eval_data.py``
   loads the data). No recall pipeline, no keywords, no claims: the embedder alone.

With ``--embedder e5`` it measures multilingual-e5-small instead (``bench/embedding_e5.py``
says how): texts/s by batch size for short and long, Chinese and English texts, query latency,
memory and OpenMP threads, with the local embedder on the same texts as the same-run
baseline::

    .venv/bin/python bench/embedding.py --embedder e5 --quick   # threads 1 and 2, < 60 s
    .venv/bin/python bench/embedding.py --embedder e5           # + 2 passive, 2 rounds

Stdout: a table, then one JSON object on the last line. Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import eval_data
import numpy as np
from eval_data import Dataset
from ingest import ContentPool

import hlmem.lang.embedding

KS = (1, 5, 10)
ONE_TEXTS = 500
LONGMEMEVAL_ORACLE = eval_data.DATA / "longmemeval" / "longmemeval_oracle.dev.json.gz"
QUICK_CONVERSATIONS = {"locomo": 2, "memdaily": 300, "longmemeval": 60}


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def load_module(path: str | None) -> ModuleType:
    """hlmem.lang.embedding, or the embedder module at ``path`` (e.g. an older version of it)."""
    if path is None:
        return hlmem.lang.embedding
    spec = importlib.util.spec_from_file_location("embedding_under_test", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --- speed ------------------------------------------------------------------------------------


def corpora(locomo: Dataset, memdaily: Dataset) -> dict[str, list[str]]:
    return {
        "ingest-pool": [c for c, _ in ContentPool(seed=7, size=2000).items],
        "locomo": [t.text for conv in locomo.conversations for t in conv.turns][:4000],
        "memdaily": [t.text for conv in memdaily.conversations for t in conv.turns][:4000],
    }


def speed(embedder: Any, texts: list[str], *, batch: int, rounds: int) -> dict[str, float]:
    """Best of ``rounds`` passes, in wall time and in this thread's CPU time (which other
    processes on a busy machine disturb less)."""
    embedder.embed(texts[:batch])  # imports, caches, allocator
    wall = cpu = float("inf")
    for _ in range(rounds):
        w0, c0 = time.perf_counter(), time.thread_time()
        for start in range(0, len(texts), batch):
            embedder.embed(texts[start : start + batch])
        wall = min(wall, time.perf_counter() - w0)
        cpu = min(cpu, time.thread_time() - c0)
    ones = texts[:ONE_TEXTS]
    one = float("inf")
    for _ in range(rounds):
        c0 = time.thread_time()
        for text in ones:
            embedder.embed_one(text)
        one = min(one, time.thread_time() - c0)
    return {
        "texts": len(texts),
        "mean_chars": round(statistics.fmean(len(t) for t in texts), 1),
        "batch_us_per_text": round(wall / len(texts) * 1e6, 2),
        "batch_cpu_us_per_text": round(cpu / len(texts) * 1e6, 2),
        "batch_texts_per_s": round(len(texts) / wall),
        "one_cpu_us_per_text": round(one / len(ones) * 1e6, 2),
    }


# --- retrieval --------------------------------------------------------------------------------


def retrieval(embed: Callable[[list[str]], np.ndarray[Any, Any]], data: Dataset) -> dict[str, Any]:
    sums = dict.fromkeys([*(f"hit@{k}" for k in KS), "mrr@10"], 0.0)
    n = 0
    for conv in data.conversations:
        if not conv.questions:
            continue
        ids = [t.id for t in conv.turns]
        turns = embed([t.text for t in conv.turns])
        questions = embed([q.text for q in conv.questions])
        order = np.argsort(-(questions @ turns.T), axis=1, kind="stable")[:, : max(KS)]
        for q, row in zip(conv.questions, order, strict=True):
            ranked = [ids[i] for i in row]
            gold = set(q.gold)
            first = next((r for r, tid in enumerate(ranked, 1) if tid in gold), None)
            for k in KS:
                sums[f"hit@{k}"] += 1.0 if first is not None and first <= k else 0.0
            sums["mrr@10"] += 1 / first if first is not None else 0.0
            n += 1
    return {"questions": n} | {m: round(v / max(n, 1), 4) for m, v in sums.items()}


def limited(data: Dataset, limit: int | None) -> Dataset:
    if limit is None:
        return data
    return Dataset(data.name, data.source, data.conversations[:limit], data.skipped)


# --- main -------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0] if __doc__ else None,
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--quick", action="store_true", help="fewer conversations in the eval")
    parser.add_argument("--module", help="path of another embedding.py to measure instead")
    parser.add_argument("--dim", type=int, default=hlmem.lang.embedding.DEFAULT_DIM)
    parser.add_argument("--batch", type=int, default=256, help="texts per embed() call")
    parser.add_argument("--rounds", type=int, default=3, help="speed passes; the best counts")
    parser.add_argument("--no-eval", action="store_true", help="speed only")
    parser.add_argument(
        "--embedder",
        choices=["local", "e5"],
        default="local",
        help="e5: multilingual-e5-small's speed, memory and threads (bench/embedding_e5.py)",
    )
    parser.add_argument(
        "--threads",
        default=None,
        help="e5: thread settings, each in its own process: N, 0 (the engine's default) or Np "
        "(N with OMP_WAIT_POLICY=passive); default 1,2 (--quick) or 1,2,2p",
    )
    parser.add_argument(
        "--e5-rounds", type=int, default=None, help="e5: rounds over the settings; 1 quick, 2 full"
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--child-threads", type=int, default=0, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main_e5(args: argparse.Namespace) -> None:
    import embedding_e5

    if args.child is not None:  # one thread setting, spawned by the parent below
        result = embedding_e5.run_variant(Path(args.child), args.child_threads, args.quick)
        print(json.dumps(result, ensure_ascii=False))
        return
    settings = (args.threads or ("1,2" if args.quick else "1,2,2p")).split(",")
    rounds = args.e5_rounds or (1 if args.quick else 2)
    report = embedding_e5.main_e5(args.quick, settings, rounds)
    for line in embedding_e5.report(report):
        print(line)
    print(json.dumps(report, ensure_ascii=False))


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    if args.embedder == "e5":
        main_e5(args)
        return
    module = load_module(args.module)
    embedder = module.LocalEmbedder(args.dim)
    log(f"loading data; embedder {embedder.model_id} {embedder.model_version}")
    datasets = {
        "locomo": eval_data.load_locomo(),
        "memdaily": eval_data.load_memdaily(),
        "longmemeval": eval_data.load_longmemeval(LONGMEMEVAL_ORACLE),
    }
    report: dict[str, Any] = {
        "meta": {
            "model_id": embedder.model_id,
            "model_version": embedder.model_version,
            "module": args.module or "hlmem.lang.embedding",
            "dim": args.dim,
            "batch": args.batch,
            "python": platform.python_version(),
            "numpy": np.__version__,
        },
        "speed": {},
        "retrieval": {},
    }
    for name, texts in corpora(datasets["locomo"], datasets["memdaily"]).items():
        log(f"speed: {name}")
        report["speed"][name] = speed(embedder, texts, batch=args.batch, rounds=args.rounds)
    if not args.no_eval:
        for name, data in datasets.items():
            log(f"retrieval: {name}")
            sub = limited(data, QUICK_CONVERSATIONS[name] if args.quick else None)
            report["retrieval"][name] = retrieval(embedder.embed, sub)

    print(f"embedder {embedder.model_id} {embedder.model_version} dim={args.dim}")
    print(
        f"{'corpus':<12} {'texts':>6} {'chars':>6} {'µs/text':>9} {'cpu µs':>8} {'texts/s':>9} "
        f"{'one µs':>8}"
    )
    for name, s in report["speed"].items():
        print(
            f"{name:<12} {s['texts']:>6} {s['mean_chars']:>6} {s['batch_us_per_text']:>9} "
            f"{s['batch_cpu_us_per_text']:>8} {s['batch_texts_per_s']:>9} "
            f"{s['one_cpu_us_per_text']:>8}"
        )
    if report["retrieval"]:
        print(f"{'dataset':<12} {'n':>5} " + " ".join(f"{m:>7}" for m in sums_order()))
        for name, r in report["retrieval"].items():
            print(f"{name:<12} {r['questions']:>5} " + " ".join(f"{r[m]:>7}" for m in sums_order()))
    print(json.dumps(report, ensure_ascii=False))


def sums_order() -> list[str]:
    return [*(f"hit@{k}" for k in KS), "mrr@10"]


if __name__ == "__main__":
    main()
