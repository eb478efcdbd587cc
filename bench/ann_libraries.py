#!/usr/bin/env python
"""Which ANN library and index for hlmem's dense vectors: usearch (HNSW) against faiss (HNSW
and IVF over a scalar quantiser), on the same synthetic e5-like vectors (``dense_data``).

    .venv/bin/python bench/ann_libraries.py --n 200000              # every candidate, ~6 min
    .venv/bin/python bench/ann_libraries.py --n 1000000 --only usearch-i8,faiss-hnsw-sq8
    .venv/bin/python bench/ann_libraries.py --threshold 5000,10000,20000,50000

``--hashed FILE`` asks whether the local embedder's sparse vectors want a graph: usearch-i8
over the ``default`` namespace's vectors of a ``bench/recall.py`` file, recall@10 of 100-400
candidates re-scored (ties counted) against the exact scan, beside the exact sparse scan's
time (``recall.floor_sparse``), for the bench's own 200 queries.

``--threshold`` decides ``recall.ann_min_vectors`` instead: at each size, the exact scan as
the index does it (row-major float32 matrix-vector product, top 50) against usearch-i8 (its
candidates re-scored), p50/p95 over the queries, and the graph's build time and memory.

For each candidate: build time (``--threads`` threads, as the background build would use),
memory (the library's own count, or the serialised size), save and load time of the index
file, and per query, one query at a time on one thread as recall asks: the ANN search for
``--candidates`` candidates, then their exact float32 re-score from a row-major copy and the
top k. Reported: p50/p95 of the search alone and with the re-score, and recall@10 / recall@50
of the re-scored result against the exact scan (numpy, float32) of the same vectors.

Stdout: a table, then ONE JSON object on the last line. Progress: stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from dense_data import DIM, DenseWorld

Matrix = np.ndarray[Any, np.dtype[np.float32]]
Search = Callable[[Matrix, int], np.ndarray[Any, Any]]  # one query, candidates -> row numbers


def say(text: str) -> None:
    print(f"[ann-libs {time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def pct(values: list[float], q: float) -> float:
    return round(float(np.percentile(values, q)), 3)


def exact_top(data: Matrix, queries: Matrix, k: int) -> list[np.ndarray[Any, Any]]:
    out = []
    for q in queries:
        scores = data @ q
        best = np.argpartition(scores, len(scores) - k)[-k:]
        out.append(best[np.argsort(-scores[best], kind="stable")])
    return out


def build_usearch(data: Matrix, dtype: str, threads: int, conn: int, ef_add: int) -> Any:
    from usearch.index import Index

    index = Index(
        ndim=data.shape[1],
        metric="ip",
        dtype=dtype,
        connectivity=conn,
        expansion_add=ef_add,
        enable_key_lookups=False,
    )
    index.reserve(len(data)) if hasattr(index, "reserve") else None
    step = 50_000
    for start in range(0, len(data), step):
        keys = np.arange(start, min(len(data), start + step), dtype=np.uint64)
        index.add(keys, data[start : start + step], threads=threads)
    return index


def usearch_search(index: Any, ef: int) -> Search:
    index.expansion_search = ef

    def search(q: Matrix, c: int) -> np.ndarray[Any, Any]:
        found = index.search(q, c, threads=1)
        return np.asarray(found.keys, dtype=np.int64)

    return search


def build_faiss(data: Matrix, spec: str, threads: int) -> Any:
    import faiss

    faiss.omp_set_num_threads(threads)
    index = faiss.index_factory(data.shape[1], spec, faiss.METRIC_INNER_PRODUCT)
    if not index.is_trained:
        rng = np.random.default_rng(0)
        sample = data[rng.choice(len(data), min(len(data), 100_000), replace=False)]
        index.train(sample)
    step = 50_000
    for start in range(0, len(data), step):
        index.add(data[start : start + step])
    return index


def faiss_search(index: Any, knob: str, value: int) -> Search:
    import faiss

    faiss.omp_set_num_threads(1)
    ps = faiss.ParameterSpace()
    ps.set_index_parameter(index, knob, value)

    def search(q: Matrix, c: int) -> np.ndarray[Any, Any]:
        _, found = index.search(q.reshape(1, -1), c)
        rows: np.ndarray[Any, Any] = found[0]
        return rows[rows >= 0]

    return search


def save_load(kind: str, index: Any, workdir: Path) -> tuple[float, float, int]:
    path = workdir / f"probe-{kind}.index"
    started = time.perf_counter()
    if kind == "usearch":
        index.save(str(path))
    else:
        import faiss

        faiss.write_index(index, str(path))
    saved = time.perf_counter() - started
    started = time.perf_counter()
    if kind == "usearch":
        from usearch.index import Index

        Index.restore(str(path))
    else:
        import faiss

        faiss.read_index(str(path))
    loaded = time.perf_counter() - started
    size = path.stat().st_size
    path.unlink()
    return saved, loaded, size


CANDIDATES: dict[str, dict[str, Any]] = {
    "usearch-i8": {"lib": "usearch", "dtype": "i8", "conn": 16, "ef_add": 128, "ef": [64, 128]},
    "usearch-f16": {"lib": "usearch", "dtype": "f16", "conn": 16, "ef_add": 128, "ef": [64, 128]},
    "faiss-hnsw-sq8": {"lib": "faiss", "spec": "HNSW32,SQ8", "knob": "efSearch", "v": [64, 128]},
    "faiss-ivf-sq8": {"lib": "faiss", "spec": "IVF{nlist},SQ8", "knob": "nprobe", "v": [16, 48]},
    "faiss-ivf-pq": {"lib": "faiss", "spec": "IVF{nlist},PQ48", "knob": "nprobe", "v": [16, 48]},
}


def measure(
    name: str, spec: dict[str, Any], data: Matrix, queries: Matrix, args: argparse.Namespace
) -> list[dict[str, Any]]:
    truth10 = args.truth10
    truth50 = args.truth50
    say(f"{name}: building over {len(data):,} vectors ...")
    rss0 = rss_mib()
    started = time.perf_counter()
    if spec["lib"] == "usearch":
        index = build_usearch(data, spec["dtype"], args.threads, spec["conn"], spec["ef_add"])
        memory = int(index.memory_usage)
    else:
        nlist = int(4 * np.sqrt(len(data)))
        index = build_faiss(data, spec["spec"].format(nlist=nlist), args.threads)
        memory = -1
    build_s = time.perf_counter() - started
    rss_growth = rss_mib() - rss0
    saved, loaded, size = save_load(spec["lib"], index, Path(args.workdir))
    say(f"{name}: built in {build_s:.1f} s, saved {saved:.1f} s, loaded {loaded:.1f} s")
    rows = []
    knobs = spec["ef"] if spec["lib"] == "usearch" else spec["v"]
    for knob in knobs:
        if spec["lib"] == "usearch":
            search = usearch_search(index, knob)
        else:
            search = faiss_search(index, spec["knob"], knob)
        for cands in args.candidates:
            ann_ms, total_ms, r10, r50 = [], [], [], []
            for i, q in enumerate(queries):
                started = time.perf_counter()
                found = search(q, cands)
                mid = time.perf_counter()
                scores = data[found] @ q
                best = np.argpartition(scores, len(scores) - 50)[-50:]
                best = found[best[np.argsort(-scores[best], kind="stable")]]
                end = time.perf_counter()
                ann_ms.append((mid - started) * 1000)
                total_ms.append((end - started) * 1000)
                r10.append(len(set(best[:10].tolist()) & set(truth10[i].tolist())) / 10)
                r50.append(len(set(best.tolist()) & set(truth50[i].tolist())) / 50)
            row = {
                "name": name,
                "knob": knob,
                "candidates": cands,
                "build_s": round(build_s, 1),
                "save_s": round(saved, 2),
                "load_s": round(loaded, 2),
                "file_mib": round(size / 2**20, 1),
                "memory_mib": round(memory / 2**20, 1) if memory >= 0 else None,
                "rss_growth_mib": round(rss_growth, 1),
                "ann_p50_ms": pct(ann_ms, 50),
                "ann_p95_ms": pct(ann_ms, 95),
                "p50_ms": pct(total_ms, 50),
                "p95_ms": pct(total_ms, 95),
                "recall10": round(float(np.mean(r10)), 4),
                "recall10_min": round(float(np.min(r10)), 2),
                "recall50": round(float(np.mean(r50)), 4),
            }
            say(json.dumps(row))
            rows.append(row)
    del index
    return rows


def rss_mib() -> float:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def threshold(sizes: list[int], args: argparse.Namespace) -> None:
    rows = []
    for n in sizes:
        world = DenseWorld(args.seed, n)
        data = world.vectors(n)
        queries = world.queries(args.queries)
        exact_ms = []
        for q in queries:
            started = time.perf_counter()
            scores = data @ q
            best = np.argpartition(scores, n - 50)[-50:]
            best[np.argsort(-scores[best], kind="stable")].tolist()
            exact_ms.append((time.perf_counter() - started) * 1000)
        spec = CANDIDATES["usearch-i8"]
        started = time.perf_counter()
        index = build_usearch(data, "i8", 1, spec["conn"], spec["ef_add"])
        build_s = time.perf_counter() - started
        search = usearch_search(index, 64)
        ann_ms = []
        for q in queries:
            started = time.perf_counter()
            found = search(q, 100)
            scores = data[found] @ q
            found[np.argsort(-scores, kind="stable")[:50]].tolist()
            ann_ms.append((time.perf_counter() - started) * 1000)
        row = {
            "n": n,
            "exact_p50_ms": pct(exact_ms, 50),
            "exact_p95_ms": pct(exact_ms, 95),
            "ann_p50_ms": pct(ann_ms, 50),
            "ann_p95_ms": pct(ann_ms, 95),
            "build_s_1_thread": round(build_s, 1),
            "graph_mib": round(int(index.memory_usage) / 2**20, 1),
        }
        say(json.dumps(row))
        rows.append(row)
    head = f"{'vectors':>8} {'exact p50':>10} {'p95':>7} {'ann p50':>8} {'p95':>7}"
    print(f"{head} {'build s':>8} {'MiB':>6}")
    for r in rows:
        print(
            f"{r['n']:>8} {r['exact_p50_ms']:>10} {r['exact_p95_ms']:>7} {r['ann_p50_ms']:>8} "
            f"{r['ann_p95_ms']:>7} {r['build_s_1_thread']:>8} {r['graph_mib']:>6}"
        )
    print(json.dumps({"threshold": rows, "loadavg_1m": os.getloadavg()[0]}))


def hashed(path: Path, args: argparse.Namespace) -> None:
    import anyio
    import recall
    from recall_data import Generator

    from hlmem.lang import DEFAULT_DIM, LocalEmbedder

    cols = anyio.run(recall.namespace_matrix, path)
    data = np.ascontiguousarray(cols.T)
    n = len(data)
    queries = Generator(args.seed).queries(args.queries, seed=args.seed + 1000)
    qvecs = LocalEmbedder(DEFAULT_DIM).embed([q.text for q in queries])
    say(f"{n:,} hashed vectors, {float((data != 0).mean()):.3f} of their values not zero")
    spec = CANDIDATES["usearch-i8"]
    started = time.perf_counter()
    index = build_usearch(data, "i8", args.threads, spec["conn"], spec["ef_add"])
    build_s = time.perf_counter() - started
    search = usearch_search(index, 64)
    out: dict[str, Any] = {"vectors": n, "build_s": round(build_s, 1)}
    out["graph_mib"] = round(int(index.memory_usage) / 2**20, 1)
    for cands in (100, 200, 400):
        right, ann_ms, sparse_ms = [], [], []
        for q in qvecs:
            started = time.perf_counter()
            found = search(q, cands)
            scores = np.sort(data[found] @ q)[::-1][:10]
            ann_ms.append((time.perf_counter() - started) * 1000)
            sparse_ms.append(recall.floor_sparse(cols, q, 50))
            kth = np.partition(q @ cols, n - 10)[n - 10]
            right.append(float(np.mean(scores >= kth - 1e-6)))  # ties count as found
        row = {
            "recall10": round(float(np.mean(right)), 3),
            "ann_p50_ms": pct(ann_ms, 50),
            "ann_p95_ms": pct(ann_ms, 95),
            "sparse_scan_p50_ms": pct(sparse_ms, 50),
            "sparse_scan_p95_ms": pct(sparse_ms, 95),
        }
        say(f"{cands} candidates: {json.dumps(row)}")
        out[str(cands)] = row
    print(json.dumps({"hashed": out, "loadavg_1m": os.getloadavg()[0]}))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--n", type=int, default=200_000, help="vectors")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--threads", type=int, default=2, help="build threads")
    parser.add_argument("--candidates", default="100,200", help="candidates re-scored")
    parser.add_argument("--only", help="comma-separated candidate names")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workdir", default=tempfile.gettempdir())
    parser.add_argument("--threshold", help="comma-separated sizes: exact against ANN")
    parser.add_argument("--hashed", help="a bench/recall.py file: ANN on its hashed vectors")
    args = parser.parse_args()
    if args.hashed:
        hashed(Path(args.hashed), args)
        return
    if args.threshold:
        threshold([int(n) for n in args.threshold.split(",")], args)
        return
    args.candidates = [int(c) for c in args.candidates.split(",")]
    names = args.only.split(",") if args.only else list(CANDIDATES)
    world = DenseWorld(args.seed, args.n)
    say(f"{args.n:,} vectors of {DIM} ...")
    data = world.vectors(args.n)
    queries = world.queries(args.queries)
    say("exact top 10 / 50 ...")
    args.truth10 = exact_top(data, queries, 10)
    args.truth50 = exact_top(data, queries, 50)
    started = time.perf_counter()
    for q in queries[:50]:
        scores = data @ q
        np.argpartition(scores, len(scores) - 50)[-50:]
    exact_ms = (time.perf_counter() - started) * 1000 / 50
    rows = []
    for name in names:
        rows.extend(measure(name, CANDIDATES[name], data, queries, args))
    head = f"{'index':<15} {'knob':>5} {'cand':>5} {'build s':>8} {'load s':>7} {'MiB':>7} "
    head += f"{'ann p50':>8} {'p50':>7} {'p95':>7} {'r@10':>6} {'r@50':>6}"
    print(f"exact numpy scan of {args.n:,} x {DIM}: {exact_ms:.1f} ms a query (mean of 50)")
    print(head)
    for r in rows:
        mib = r["memory_mib"] if r["memory_mib"] is not None else r["file_mib"]
        print(
            f"{r['name']:<15} {r['knob']:>5} {r['candidates']:>5} {r['build_s']:>8} "
            f"{r['load_s']:>7} {mib:>7} {r['ann_p50_ms']:>8} {r['p50_ms']:>7} "
            f"{r['p95_ms']:>7} {r['recall10']:>6} {r['recall50']:>6}"
        )
    meta = {
        "n": args.n,
        "dim": DIM,
        "queries": args.queries,
        "threads": args.threads,
        "exact_ms_mean": round(exact_ms, 2),
        "loadavg_1m": os.getloadavg()[0],
        "cpus": os.cpu_count(),
    }
    print(json.dumps({"meta": meta, "rows": rows}))


if __name__ == "__main__":
    main()
