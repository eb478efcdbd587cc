#!/usr/bin/env python
"""Evidence retrieval without an LLM: hlmem's recall against BM25 on LoCoMo, LongMemEval, MemDaily.

Each conversation (a LoCoMo sample, a LongMemEval question's haystack, a MemDaily trajectory)
is replayed in time order, with the dataset's timestamps, into a fresh hlmem store on the
embedded default configuration (no model): one namespace per conversation, ``session_kind
"batch"``, and as event id the dataset's own turn id made unique per conversation
(``<conversation>#<turn>``), so the gold evidence names event ids. Then ``flush()`` and
``drain()``, and every question goes through exactly ``mem.recall(question, namespace=ns,
k=10)``; :func:`retrieved_event_ids` turns the answer into a ranked list of event ids::

    .venv/bin/python bench/eval_retrieval.py --quick       # a subset of each dataset, < 60 s
    .venv/bin/python bench/eval_retrieval.py --dataset locomo
    .venv/bin/python bench/eval_retrieval.py --dataset longmemeval \\
        --data ../shared/data/longmemeval/longmemeval_oracle.dev.json.gz

In the same run the baseline, Okapi BM25 (k1 1.2, b 0.75; ``bench/bm25.py``) over the raw turns
of the same conversation with the same tokens (``hlmem.lang.text.tokens``: jieba for Chinese,
lower-cased words for English), answers the same questions. Both are scored against the gold
evidence turns, per dataset category and overall: hit@k (some evidence turn in the first k),
recall@k (the share of evidence turns in the first k) and MRR@k (1 / rank of the first evidence
turn, 0 beyond k), for k in ``--k`` (1, 3, 5, 10). Ranks count retrieved *events*: a recalled
claim stands for its evidence events, in order, and an event already retrieved is not counted
again. The data are read from ``../shared/data`` at run time and never copied
(``bench/eval_data.py`` says what each loader does with its dataset's quirks).

Stdout: a table (dataset x category x system x metric), then one JSON object on the last line.
Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Collection, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import eval_data
from bm25 import BM25
from eval_data import Conversation, Dataset

import hlmem
from hlmem.config import Config, load_config
from hlmem.gateway import percentile
from hlmem.lang import tokens

DATASETS = ("locomo", "longmemeval", "memdaily")
KS = (1, 3, 5, 10)
#: conversations per dataset in --quick: LoCoMo samples are long (~400 turns, ~200 questions),
#: a LongMemEval haystack ~500 turns for one question, a MemDaily trajectory ~9 for one
QUICK_LIMITS = {"locomo": 1, "longmemeval": 6, "memdaily": 240}
#: distinct turn texts from which the baseline tokenises in several processes
PARALLEL_MIN_TEXTS = 20_000
METRICS = ("hit", "recall", "mrr")
ALL = "all"


# --- what a recall returned -------------------------------------------------------------------


def retrieved_event_ids(result: Any) -> list[str]:
    """The event ids a recall retrieved, in rank order, each once.

    Two shapes: a list of ``RecallHit`` (today: claims, each standing for the events of its
    ``claim.evidence``), or an object with ``.items`` whose items have ``.kind`` ("claim" or
    "event"), ``.id`` and ``.evidence`` (objects with ``.event_id``): an event item retrieves
    its own id and those of the events folded into it (``.folded``: the same words said
    again, shown once), a claim item the events of the evidence it shows.
    """
    items = getattr(result, "items", None)
    ranked: dict[str, None] = {}
    if items is not None and not callable(items):
        for item in items:
            if item.kind == "event":
                for event_id in (item.id, *getattr(item, "folded", ())):
                    ranked.setdefault(str(event_id))
            else:
                for span in item.evidence:
                    ranked.setdefault(str(span.event_id))
    else:
        for hit in result:
            for span in hit.claim.evidence:
                ranked.setdefault(str(span.event_id))
    return list(ranked)


# --- metrics ----------------------------------------------------------------------------------


def question_metrics(
    ranked: Sequence[str], gold: Collection[str], ks: Sequence[int] = KS
) -> dict[str, float]:
    """hit@k, recall@k and MRR@k of one ranked list against a non-empty gold set."""
    wanted = set(gold)
    if not wanted:
        raise ValueError("a question needs gold evidence to be scored")
    first = next((rank for rank, eid in enumerate(ranked, 1) if eid in wanted), None)
    out: dict[str, float] = {}
    for k in ks:
        found = len(wanted.intersection(ranked[:k]))
        out[f"hit@{k}"] = 1.0 if found else 0.0
        out[f"recall@{k}"] = found / len(wanted)
        out[f"mrr@{k}"] = 1 / first if first is not None and first <= k else 0.0
    return out


@dataclass
class Tally:
    """Per-category sums of question metrics; ``means()`` adds the overall row, ``all``."""

    sums: dict[str, dict[str, float]] = field(default_factory=lambda: defaultdict(dict))
    counts: dict[str, int] = field(default_factory=lambda: defaultdict(int))

    def add(self, category: str, metrics: dict[str, float]) -> None:
        for cat in (category, ALL):
            self.counts[cat] += 1
            row = self.sums[cat]
            for name, value in metrics.items():
                row[name] = row.get(name, 0.0) + value

    def means(self) -> dict[str, dict[str, float]]:
        order = [*sorted(c for c in self.counts if c != ALL), ALL]
        return {
            c: {"n": self.counts[c]}
            | {m: round(v / self.counts[c], 4) for m, v in self.sums[c].items()}
            for c in order
            if self.counts[c]
        }


# --- the two systems --------------------------------------------------------------------------


def event_id(conv: Conversation, turn_id: str) -> str:
    return f"{conv.id}#{turn_id}"


def pcts(values: list[float]) -> dict[str, float | None]:
    p50, p95 = percentile(values, 0.5), percentile(values, 0.95)
    return {
        "p50": None if p50 is None else round(p50, 2),
        "p95": None if p95 is None else round(p95, 2),
    }


@dataclass
class SystemRun:
    ranked: dict[str, list[str]] = field(default_factory=dict)  # question id -> event ids
    latency_ms: list[float] = field(default_factory=list)
    figures: dict[str, Any] = field(default_factory=dict)


async def replay(mem: hlmem.Memory, conv: Conversation) -> None:
    """The conversation's turns, in time order, as one namespace of batch history."""
    await mem.add_events(
        {
            "session_id": t.session,
            "role": t.role,
            "content": t.text,
            "occurred_at": t.at,
            "event_id": event_id(conv, t.id),
            "namespace": conv.id,
            "session_kind": "batch",
            "metadata": {"speaker": t.speaker},
        }
        for t in conv.turns
    )


async def run_hlmem(convs: Sequence[Conversation], db: Path, cfg: Config, k: int) -> SystemRun:
    run = SystemRun()
    async with hlmem.open(db, config=cfg) as mem:
        started = time.perf_counter()
        for conv in convs:
            await replay(mem, conv)
        await mem.flush()
        await mem.drain()
        run.figures["ingest_s"] = round(time.perf_counter() - started, 2)
        stats = await mem.stats()
        run.figures |= {"events": stats.events, "claims": sum(stats.claims.values())}
        for conv in convs:
            for q in conv.questions:
                started = time.perf_counter()
                result = await mem.recall(q.text, namespace=conv.id, k=k)
                run.latency_ms.append((time.perf_counter() - started) * 1000)
                run.ranked[q.id] = retrieved_event_ids(result)
    return run


def tokenise_all(texts: Iterable[str], *, jobs: int) -> dict[str, list[str]]:
    """``hlmem.lang.text.tokens`` of each distinct text; in ``jobs`` processes for a large corpus.

    jieba is slow on long English text (about 0.25 MB/s here), and LongMemEval's haystacks
    hold ~100 MB of distinct text, so the baseline's tokenising is spread over the CPUs.
    "spawn": forking a process that has run threads (aiosqlite, anyio) is not safe.
    """
    distinct = list(dict.fromkeys(texts))
    if jobs <= 1 or len(distinct) < PARALLEL_MIN_TEXTS:
        return {text: tokens(text) for text in distinct}
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
        return dict(zip(distinct, pool.map(tokens, distinct, chunksize=64), strict=True))


def run_bm25(convs: Sequence[Conversation], k: int, *, jobs: int = 1) -> SystemRun:
    """BM25 over each conversation's raw turns; a question's time includes tokenising it."""
    run = SystemRun()
    started = time.perf_counter()
    vocab = tokenise_all((t.text for c in convs for t in c.turns), jobs=jobs)
    run.figures["tokenise_s"] = round(time.perf_counter() - started, 2)
    index_s = 0.0
    for conv in convs:
        started = time.perf_counter()
        index = BM25([vocab[t.text] for t in conv.turns])
        index_s += time.perf_counter() - started
        for q in conv.questions:
            started = time.perf_counter()
            top = index.top(tokens(q.text), k)
            run.latency_ms.append((time.perf_counter() - started) * 1000)
            run.ranked[q.id] = [event_id(conv, conv.turns[i].id) for i in top]
    run.figures["index_s"] = round(index_s, 2)
    return run


def score(convs: Iterable[Conversation], run: SystemRun, ks: Sequence[int]) -> dict[str, Any]:
    tally = Tally()
    for conv in convs:
        for q in conv.questions:
            gold = [event_id(conv, g) for g in q.gold]
            tally.add(q.category, question_metrics(run.ranked[q.id], gold, ks))
    empty = sum(1 for ranked in run.ranked.values() if not ranked)
    return {
        "metrics": tally.means(),
        "empty_results": empty,
        "latency_ms": pcts(run.latency_ms),
    } | run.figures


# --- one dataset ------------------------------------------------------------------------------


def subset(convs: Sequence[Conversation], limit: int | None) -> list[Conversation]:
    """The first ``limit`` conversations, or, when each holds one question (LongMemEval,
    MemDaily), an evenly spread sample of each category's conversations."""
    if limit is None or limit >= len(convs):
        return list(convs)
    if any(len(c.questions) != 1 for c in convs):
        return list(convs[:limit])
    by_cat: dict[str, list[Conversation]] = defaultdict(list)
    for c in convs:
        by_cat[c.questions[0].category].append(c)
    cats = sorted(by_cat)
    picked: list[Conversation] = []
    for n, cat in enumerate(cats):
        want = limit // len(cats) + (1 if n < limit % len(cats) else 0)
        group = by_cat[cat]
        picked.extend(group[(j * len(group)) // want] for j in range(min(want, len(group))))
    return picked


async def evaluate(
    ds: Dataset, *, limit: int | None, cfg: Config, ks: Sequence[int], workdir: Path, jobs: int
) -> dict[str, Any]:
    convs = subset([c for c in ds.conversations if c.questions], limit)
    k = max(ks)
    n_q = sum(len(c.questions) for c in convs)
    n_t = sum(len(c.turns) for c in convs)
    print(f"{ds.name}: {len(convs)} conversations, {n_t} turns, {n_q} questions", file=sys.stderr)
    started = time.perf_counter()
    hl = await run_hlmem(convs, workdir / f"{ds.name}.db", cfg, k)
    hl_s = time.perf_counter() - started
    print(f"{ds.name}: hlmem done in {hl_s:.1f} s", file=sys.stderr)
    started = time.perf_counter()
    bm = run_bm25(convs, k, jobs=jobs)
    bm_s = time.perf_counter() - started
    print(f"{ds.name}: bm25 done in {bm_s:.1f} s", file=sys.stderr)
    systems = {"hlmem": score(convs, hl, ks), "bm25": score(convs, bm, ks)}
    systems["hlmem"]["total_s"] = round(hl_s, 2)
    systems["bm25"]["total_s"] = round(bm_s, 2)
    key = f"recall@{k}"
    return {
        "source": str(ds.source),
        "conversations": len(convs),
        "turns": n_t,
        "questions": n_q,
        "skipped": ds.skipped,
        "systems": systems,
        "hlmem_above_bm25": systems["hlmem"]["metrics"][ALL][key]
        > systems["bm25"]["metrics"][ALL][key],
    }


# --- report and command line ------------------------------------------------------------------


def table(result: dict[str, Any]) -> list[str]:
    ks = result["k"]
    names = [f"{m}@{k}" for m in METRICS for k in ks]
    head = f"{'dataset':<12} {'category':<26} {'system':<6} {'n':>5} " + " ".join(
        f"{n:>9}" for n in names
    )
    lines = [head, "-" * len(head)]
    for ds_name, ds in result["datasets"].items():
        cats = list(ds["systems"]["hlmem"]["metrics"])
        for cat in cats:
            for system, figures in ds["systems"].items():
                row = figures["metrics"][cat]
                values = " ".join(f"{row[n]:>9.3f}" for n in names)
                lines.append(f"{ds_name:<12} {cat:<26} {system:<6} {row['n']:>5} {values}")
        hl, bm = ds["systems"]["hlmem"], ds["systems"]["bm25"]
        lines.append(
            f"{ds_name}: {ds['conversations']} conversations, {ds['turns']} turns, "
            f"{ds['questions']} questions; hlmem ingest {hl['ingest_s']} s, {hl['claims']} claims, "
            f"recall p50/p95 {hl['latency_ms']['p50']}/{hl['latency_ms']['p95']} ms, "
            f"{hl['empty_results']} empty; bm25 {bm['total_s']} s; skipped {ds['skipped']}"
        )
    for ds_name, ds in result["datasets"].items():
        verdict = "PASS" if ds["hlmem_above_bm25"] else "FAIL"
        lines.append(f"{verdict}  {ds_name}: hlmem recall@{max(ks)} above bm25")
    return lines


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[1],
        allow_abbrev=False,
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--dataset", choices=DATASETS, default=None, help="omitted: all three")
    parser.add_argument("--data", type=Path, default=None, help="a file of that dataset's schema")
    parser.add_argument("--quick", action="store_true", help="a subset of each dataset (< 60 s)")
    parser.add_argument("--limit", type=int, default=None, help="conversations per dataset")
    parser.add_argument("--k", default="1,3,5,10", help="cut-offs; recall asks for the largest")
    parser.add_argument("--config", type=Path, default=None, help="hlmem TOML; omitted: built-ins")
    parser.add_argument("--adversarial", action="store_true", help="score LoCoMo category 5")
    parser.add_argument("--abstention", action="store_true", help="score LongMemEval _abs")
    parser.add_argument(
        "--locomo-roles",
        choices=["both-user", "a-user"],
        default="both-user",
        help="both speakers as user, or speaker B as assistant",
    )
    parser.add_argument(
        "--jobs", type=int, default=os.cpu_count() or 1, help="processes tokenising for BM25"
    )
    parser.add_argument("--workdir", type=Path, default=None, help="for the temporary stores")
    args = parser.parse_args(argv)
    if args.data is not None and args.dataset is None:
        parser.error("--data needs --dataset")
    try:
        args.ks = sorted({int(k) for k in args.k.split(",")})
    except ValueError:
        parser.error("--k takes comma-separated integers")
    if not args.ks or args.ks[0] < 1:
        parser.error("--k values must be positive")
    return args


def load(name: str, args: argparse.Namespace) -> Dataset:
    path = args.data or eval_data.DEFAULT_PATHS[name]
    if name == "locomo":
        return eval_data.load_locomo(path, adversarial=args.adversarial, roles=args.locomo_roles)
    if name == "longmemeval":
        return eval_data.load_longmemeval(path, abstention=args.abstention)
    return eval_data.load_memdaily(path)


async def run(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    cfg = load_config(args.config, env={})
    out: dict[str, Any] = {}
    for name in [args.dataset] if args.dataset else DATASETS:
        limit = (
            args.limit if args.limit is not None else (QUICK_LIMITS[name] if args.quick else None)
        )
        ds = await anyio.to_thread.run_sync(load, name, args)
        out[name] = await evaluate(
            ds, limit=limit, cfg=cfg, ks=args.ks, workdir=workdir, jobs=args.jobs
        )
    return out


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        datasets = anyio.run(run, args, Path(tmp), backend="asyncio")
    result: dict[str, Any] = {
        "k": args.ks,
        "recall_k": max(args.ks),
        "datasets": datasets,
        "targets": {f"{n}_hlmem_above_bm25": d["hlmem_above_bm25"] for n, d in datasets.items()},
        "meta": {
            "quick": args.quick,
            "limit": args.limit,
            "config": str(args.config) if args.config else "built-in defaults",
            "elapsed_s": round(time.perf_counter() - started, 1),
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "loadavg_1m": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
        },
    }
    for line in table(result):
        print(line)
    print(json.dumps(result, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
