#!/usr/bin/env python
"""Vector-channel benchmark: top-k latency of hlmem.vector_index at 10k, 100k and 1M rows.

Plain script over real SQLite files, each created by hlmem's own migrations::

    .venv/bin/python bench/recall.py --quick     # 10k and 100k rows; under 60 s
    .venv/bin/python bench/recall.py             # 10k, 100k, 1M rows; 4-8 minutes, 2 GB file
    .venv/bin/python bench/recall.py --sizes 300000 --queries 50
    OPENBLAS_NUM_THREADS=1 .venv/bin/python bench/recall.py --quick   # see "BLAS threads" below

Stdout: a table, then ONE JSON object with every figure on the last line.

Data. Claim-like texts, Chinese, English and mixed (preferences, people, hosts, deployments,
deadlines), generated from templates and embedded with ``LocalEmbedder`` (384 dimensions).
Embedding a million texts would take about a quarter of an hour here (~1,000 texts/s), so
only ``--distinct`` texts are embedded
and each row takes one of them plus Gaussian noise (``--noise`` per component, then
L2-normalised again: cosine ~0.98 to its text), so rows are distinct vectors in clusters of
near-duplicates, as a memory with many restatements has. Rows: 80 % claims, 15 % events, 5 %
observations; 70 % in namespace "default", 20 % in "team", 10 % over 50 small namespaces.
They are written with the ``vector_upsert`` query in transactions of 20,000 rows. Queries are
other texts from the same templates, embedded the same way; every search asks for the top 10
claims and events of "default".

Per size, measured one after another in one process (p50/p95 over the queries, warm-up excluded):

1. numpy: ``VectorIndex(backend="numpy")``. The first ``refresh`` loads every row (time,
   ``memory_bytes``); then ``await index.search(...)``, which also checks for changes (one
   small query) and runs scans of over ~10k rows in a worker thread.
2. floor: the same rows as one float32 matrix (the bench's own copy, every row), scanned with
   plain ``matrix @ q``, ``argpartition`` and a sort of the k best, synchronously: what any
   exact numpy scan costs. ``numpy_over_floor`` is the ratio of the p50s.
3. sqlite-vec: ``VectorIndex(backend="sqlite-vec")``: ``vec_distance_cosine`` over the table,
   no copy in memory. Its top-k is compared with numpy's (``agreement``: share of queries with
   the same set of ids; differences can only come from float rounding between near-ties).
4. allow: the same search restricted to 1,000 allowed ids (the entity constraint), both backends.
5. refresh: with nothing changed (p50), and after 100 vectors are replaced and 10 deleted (the
   rows read, and a check that the replaced vectors are found).
6. prefilter: ``Prefilter(bits=384, candidates=1024)`` forced on at every size: p50/p95,
   memory, and recall@10 against the exact numpy results.

BLAS threads: numpy's OpenBLAS uses every core for a matrix-vector product. On a small box
that other processes keep busy, its threads wait for time slices: a 10k-row scan measured
16 ms with two threads on two busy vCPUs and 1 ms with ``OPENBLAS_NUM_THREADS=1``. The JSON
records the variable and the load average; compare runs made the same way.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import numpy as np

from hlmem.clock import SystemClock, iso
from hlmem.config import StoreConfig
from hlmem.embedding import LocalEmbedder
from hlmem.ops import percentile
from hlmem.store import Store, SyncTx
from hlmem.vector_index import Prefilter, VectorHit, VectorIndex

K = 10
NAMESPACE = "default"
BATCH_ROWS = 20_000
Matrix = np.ndarray[Any, np.dtype[np.float32]]

_ZH = {
    "drink": ["美式咖啡", "拿铁", "绿茶", "乌龙茶", "豆浆", "热可可", "气泡水", "燕麦奶"],
    "food": ["川菜", "火锅", "寿司", "牛肉面", "小笼包", "麻辣烫", "披萨", "沙拉"],
    "city": ["杭州", "上海", "北京", "深圳", "成都", "南京", "武汉", "西安", "苏州", "广州"],
    "company": ["阿里", "字节", "腾讯", "一家创业公司", "银行", "医院", "设计工作室"],
    "relation": ["同事", "经理", "女儿", "姐姐", "室友", "导师", "客户"],
    "person": ["小王", "李雷", "韩梅梅", "张伟", "老陈", "刘洋", "周敏", "赵磊"],
    "pet": ["猫", "狗", "兔子", "仓鼠", "鹦鹉"],
    "pname": ["小白", "豆豆", "可乐", "年糕", "团子", "饺子"],
    "weekday": ["一", "二", "三", "四", "五", "六"],
    "allergen": ["花生", "海鲜", "芒果", "青霉素", "猫毛", "尘螨"],
    "habit": ["早上跑步", "晚上看书", "周末爬山", "午休半小时", "每天写日记"],
    "mode": ["深色模式", "浅色模式", "大字号", "双屏"],
}
_EN = {
    "drink": ["black coffee", "green tea", "oat latte", "sparkling water", "espresso"],
    "city": ["Hangzhou", "Berlin", "Seattle", "Tokyo", "London", "Austin", "Singapore"],
    "company": ["Acme", "Globex", "Initech", "a fintech startup", "the city hospital"],
    "person": ["Alice", "Bob", "Carol", "Dave", "Erin", "Frank", "Grace", "Heidi"],
    "relation": ["manager", "sister", "daughter", "roommate", "mentor", "client"],
    "weekday": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"],
    "allergen": ["peanuts", "shellfish", "penicillin", "cat hair", "pollen"],
    "pet": ["cat", "dog", "rabbit", "parrot"],
    "pname": ["Snowball", "Biscuit", "Pepper", "Mochi", "Luna"],
    "tool": ["vim", "VS Code", "PyCharm", "Emacs", "Jupyter"],
    "task": ["data cleaning", "code review", "load tests", "release notes", "on-call"],
    "month": ["March", "April", "May", "June", "September", "October"],
}
_SHARED = {
    "host": [f"db-prod-{i}" for i in range(1, 6)] + [f"k8s-node-{i}" for i in range(1, 6)],
    "service": ["billing-api", "auth-service", "search-indexer", "gateway", "etl-job"],
    "project": ["Phoenix", "Atlas", "Orion", "Hermes", "Nova", "北极星", "青云"],
    "version": [f"v{a}.{b}" for a in range(1, 4) for b in range(10)],
    "n": [str(i) for i in range(2, 31)],
}
_TEMPLATES = [
    "我平时喜欢喝{zh.drink}，不加糖",
    "用户最爱吃{zh.food}",
    "我在{zh.city}的{zh.company}工作",
    "{zh.person}是我的{zh.relation}",
    "我们的{service}部署在{host}上",
    "下周{zh.weekday}要去{zh.city}出差",
    "我对{zh.allergen}过敏",
    "{zh.person}负责{project}项目",
    "我的{zh.pet}叫{zh.pname}",
    "{project}的截止日期是{n}号",
    "我习惯{zh.habit}",
    "界面我偏好{zh.mode}",
    "生产数据库是{host}",
    "把{service} {version} 部署到测试环境",
    "{zh.person}下周{zh.weekday}休假",
    "The user prefers {en.drink} in the morning",
    "{en.person} works at {en.company} in {en.city}",
    "Deploy {service} {version} to {host} on {en.weekday}",
    "I'm allergic to {en.allergen}",
    "My {en.pet} is called {en.pname}",
    "{project} is due on {en.month} {n}",
    "The team uses {en.tool} for {en.task}",
    "{en.person} is my {en.relation}",
    "Our standup moved to {en.weekday} at {n}:00",
    "{host} runs out of disk every {n} days",
    "{en.person} 负责 {project} 的 {service} 上线",
    "我用 {en.tool} 做 {en.task}",
    "{service} 的 owner 是 {en.person}",
    "{project} 在 {zh.city} 有 {n} 个用户反馈",
]


def claim_texts(count: int, seed: int) -> list[str]:
    """``count`` distinct claim-like texts (zh, en, mixed) from the templates."""
    rng = random.Random(seed)
    pools = {"zh": _ZH, "en": _EN}
    seen: dict[str, None] = {}
    while len(seen) < count:
        out, rest = [], rng.choice(_TEMPLATES)
        while "{" in rest:
            head, _, tail = rest.partition("{")
            key, _, rest = tail.partition("}")
            table, _, name = key.rpartition(".")
            out.append(head + rng.choice(pools.get(table, _SHARED)[name]))
        seen["".join(out) + rest] = None
    return list(seen)


def pcts(values: list[float]) -> dict[str, float | None]:
    p50, p95 = percentile(values, 0.5), percentile(values, 0.95)
    return {
        "p50": None if p50 is None else round(p50, 3),
        "p95": None if p95 is None else round(p95, 3),
    }


def rows_for(n: int, texts: Matrix, noise: float, seed: int) -> tuple[Matrix, list[Any]]:
    """The vectors (one float32 matrix) and the kind / id / namespace of ``n`` rows."""
    rng = np.random.default_rng(seed)
    matrix = np.empty((n, texts.shape[1]), dtype=np.float32)
    for start in range(0, n, BATCH_ROWS):
        stop = min(n, start + BATCH_ROWS)
        block = texts[rng.integers(0, len(texts), stop - start)]
        block += rng.standard_normal(block.shape, dtype=np.float32) * np.float32(noise)
        matrix[start:stop] = block / np.linalg.norm(block, axis=1, keepdims=True)
    roll = rng.random(n)
    space = rng.random(n)
    small = rng.integers(0, 50, n)
    meta = []
    for i in range(n):
        kind = "claim" if roll[i] < 0.8 else "event" if roll[i] < 0.95 else "observation"
        ns = NAMESPACE if space[i] < 0.7 else "team" if space[i] < 0.9 else f"u{small[i]}"
        meta.append((kind, f"{kind[0]}{i:07d}", ns))
    return matrix, meta


async def build(db: Path, matrix: Matrix, meta: list[Any], model: tuple[str, str]) -> float:
    """Write every row with ``vector_upsert``; return the seconds it took."""
    store = await Store.open(db, StoreConfig())
    started = time.perf_counter()
    now = iso(SystemClock().now())
    dim = matrix.shape[1]
    try:
        for start in range(0, len(meta), BATCH_ROWS):
            batch = [
                (*meta[i], *model, dim, matrix[i].tobytes(), now)
                for i in range(start, min(len(meta), start + BATCH_ROWS))
            ]

            def write(tx: SyncTx, batch: list[Any] = batch) -> int:
                return tx.executemany("vector_upsert", batch)

            await store.run_in_transaction(write)
    finally:
        await store.close()
    return time.perf_counter() - started


async def timed(
    fn: Callable[[np.ndarray[Any, Any]], Awaitable[list[VectorHit]]],
    queries: Matrix,
    warmup: int = 3,
) -> tuple[list[float], list[list[VectorHit]]]:
    """Milliseconds per query (after ``warmup`` untimed ones) and each query's hits."""
    for q in queries[:warmup]:
        await fn(q)
    times, hits = [], []
    for q in queries:
        started = time.perf_counter()
        found = await fn(q)
        times.append((time.perf_counter() - started) * 1000)
        hits.append(found)
    return times, hits


def floor(matrix: Matrix, queries: Matrix) -> list[float]:
    """A bare exact scan of the same matrix: matvec, argpartition, sort of the k best."""
    times = []
    for q in [*queries[:3], *queries]:
        started = time.perf_counter()
        scores = matrix @ q
        best = np.argpartition(-scores, K - 1)[:K]
        best[np.argsort(-scores[best])].tolist()
        times.append((time.perf_counter() - started) * 1000)
    return times[3:]


def same_sets(a: list[list[VectorHit]], b: list[list[VectorHit]]) -> float:
    return sum(
        {h.item_id for h in x} == {h.item_id for h in y} for x, y in zip(a, b, strict=True)
    ) / len(a)


def recall_at_k(approx: list[list[VectorHit]], exact: list[list[VectorHit]]) -> float:
    """Mean share of the exact top-k ids that the approximate top-k holds."""
    shares = [
        len({h.item_id for h in x} & {h.item_id for h in y}) / max(1, len(y))
        for x, y in zip(approx, exact, strict=True)
    ]
    return round(sum(shares) / len(shares), 4)


async def measure_size(
    db: Path, n: int, texts: Matrix, queries: Matrix, args: argparse.Namespace
) -> dict[str, Any]:
    model = ("hlmem-local-hash", LocalEmbedder().model_version)
    dim = texts.shape[1]
    matrix, meta = rows_for(n, texts, args.noise, seed=n)
    say(f"{n:,} rows: writing ...")
    write_s = await build(db, matrix, meta, model)
    out: dict[str, Any] = {"rows": n, "write_s": round(write_s, 2)}
    out["db_mib"] = file_mib(db)
    store = await Store.open(db, StoreConfig())
    try:
        say(f"{n:,} rows: numpy ...")
        index = VectorIndex(*model, dim)
        started = time.perf_counter()
        out["numpy_load_rows"] = await index.refresh(store)
        out["numpy_load_s"] = round(time.perf_counter() - started, 2)
        out["numpy_memory_mib"] = round(index.memory_bytes() / 2**20, 1)
        out["matrix_mib"] = round(matrix.nbytes / 2**20, 1)

        def numpy_search(q: np.ndarray[Any, Any]) -> Awaitable[list[VectorHit]]:
            return index.search(store, q, K, namespace=NAMESPACE)

        times, exact = await timed(numpy_search, queries)
        out["numpy_ms"] = pcts(times)
        out["floor_ms"] = pcts(floor(matrix, queries))
        out["numpy_over_floor"] = round(out["numpy_ms"]["p50"] / out["floor_ms"]["p50"], 2)

        say(f"{n:,} rows: sqlite-vec ...")
        vec_queries = queries[: max(5, min(len(queries), args.vec_query_budget * 100_000 // n))]
        if store.caps.vec_version is None:
            out["sqlite_vec"] = "not loaded"
        else:
            vec = VectorIndex(*model, dim, backend="sqlite-vec")

            def vec_search(q: np.ndarray[Any, Any]) -> Awaitable[list[VectorHit]]:
                return vec.search(store, q, K, namespace=NAMESPACE)

            vec_times, vec_hits = await timed(vec_search, vec_queries, warmup=1)
            out["sqlite_vec_ms"] = pcts(vec_times)
            out["sqlite_vec_queries"] = len(vec_queries)
            out["sqlite_vec_agreement"] = same_sets(vec_hits, exact[: len(vec_hits)])
            out["sqlite_vec_over_numpy"] = round(
                out["sqlite_vec_ms"]["p50"] / out["numpy_ms"]["p50"], 1
            )

        say(f"{n:,} rows: allow, refresh, prefilter ...")
        out.update(await allow_section(store, index, meta, queries, model, dim))
        out.update(await refresh_section(store, index, matrix, meta, model))
        out.update(await prefilter_section(store, model, dim, queries, index))
    finally:
        await store.close()
    return out


async def allow_section(
    store: Store,
    index: VectorIndex,
    meta: list[Any],
    queries: Matrix,
    model: tuple[str, str],
    dim: int,
) -> dict[str, Any]:
    """Search among 1,000 allowed ids (claims and events of the namespace, and others)."""
    rng = random.Random(1)
    allow = [owner for _, owner, _ in rng.sample(meta, min(1000, len(meta)))]
    out: dict[str, Any] = {}

    def numpy_allowed(q: np.ndarray[Any, Any]) -> Awaitable[list[VectorHit]]:
        return index.search(store, q, K, namespace=NAMESPACE, allow=allow)

    times, hits = await timed(numpy_allowed, queries[:50])
    out["allow_numpy_ms"] = pcts(times)
    if store.caps.vec_version is not None:
        vec = VectorIndex(*model, dim, backend="sqlite-vec")

        def vec_allowed(q: np.ndarray[Any, Any]) -> Awaitable[list[VectorHit]]:
            return vec.search(store, q, K, namespace=NAMESPACE, allow=allow)

        vec_times, vec_hits = await timed(vec_allowed, queries[:20])
        out["allow_sqlite_vec_ms"] = pcts(vec_times)
        out["allow_agreement"] = same_sets(vec_hits, hits[: len(vec_hits)])
    return out


async def refresh_section(
    store: Store, index: VectorIndex, matrix: Matrix, meta: list[Any], model: tuple[str, str]
) -> dict[str, Any]:
    """Refresh cost with nothing changed, and after 100 replaced and 10 deleted vectors; each
    replaced owner must then score 1.0 against its new vector."""
    idle = []
    for _ in range(50):
        started = time.perf_counter()
        await index.refresh(store)
        idle.append((time.perf_counter() - started) * 1000)
    rng = np.random.default_rng(2)
    picks = [int(i) for i in rng.choice(len(meta), 110, replace=False)]
    fresh = rng.standard_normal((100, matrix.shape[1])).astype(np.float32)
    fresh /= np.linalg.norm(fresh, axis=1, keepdims=True)
    now = iso(SystemClock().now())
    replaced = [
        (*meta[i], *model, matrix.shape[1], fresh[j].tobytes(), now)
        for j, i in enumerate(picks[:100])
    ]

    def write(tx: SyncTx) -> None:
        tx.executemany("vector_upsert", replaced)
        tx.executemany("vector_delete_owner", [meta[i][:2] for i in picks[100:]])

    await store.run_in_transaction(write)
    started = time.perf_counter()
    changed = await index.refresh(store)
    ms = (time.perf_counter() - started) * 1000
    found = 0
    for j, i in enumerate(picks[:100]):
        kind, owner, ns = meta[i]
        hits = await index.search(store, fresh[j], 1, namespace=ns, kinds=[kind], allow=[owner])
        found += bool(hits) and hits[0].score > 0.9999
    return {
        "refresh_idle_ms": pcts(idle),
        "refresh_110_changes_ms": round(ms, 2),
        "refresh_110_changes_rows": changed,
        "replaced_found": found,
    }


async def prefilter_section(
    store: Store,
    model: tuple[str, str],
    dim: int,
    queries: Matrix,
    exact_index: VectorIndex,
) -> dict[str, Any]:
    """The SimHash prefilter forced on (``min_rows=0``); recall@10 against the exact index,
    searched again (the refresh section changed 110 rows since the first exact results)."""
    approx = VectorIndex(*model, dim, prefilter=Prefilter(bits=384, candidates=1024, min_rows=0))
    await approx.refresh(store)

    def approx_search(q: np.ndarray[Any, Any]) -> Awaitable[list[VectorHit]]:
        return approx.search(store, q, K, namespace=NAMESPACE)

    def exact_search(q: np.ndarray[Any, Any]) -> Awaitable[list[VectorHit]]:
        return exact_index.search(store, q, K, namespace=NAMESPACE)

    times, hits = await timed(approx_search, queries)
    _, truth = await timed(exact_search, queries, warmup=0)
    return {
        "prefilter_ms": pcts(times),
        "prefilter_recall_at_10": recall_at_k(hits, truth),
        "prefilter_memory_mib": round(approx.memory_bytes() / 2**20, 1),
    }


def file_mib(db: Path) -> float:
    return round(db.stat().st_size / 2**20, 1)


def remove_db(db: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


async def main(args: argparse.Namespace) -> dict[str, Any]:
    embedder = LocalEmbedder()
    started = time.perf_counter()
    texts = await anyio.to_thread.run_sync(embedder.embed, claim_texts(args.distinct, seed=1))
    queries = await anyio.to_thread.run_sync(embedder.embed, claim_texts(args.queries, seed=99))
    embed_s = time.perf_counter() - started
    result: dict[str, Any] = {
        "data": {
            "distinct_texts": args.distinct,
            "queries": args.queries,
            "noise_per_component": args.noise,
            "dim": embedder.dim,
            "embed_s": round(embed_s, 2),
            "texts_per_s": round((args.distinct + args.queries) / embed_s),
        },
        "sizes": {},
    }
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        for n in args.sizes:
            db = Path(tmp) / f"recall_{n}.db"
            result["sizes"][str(n)] = await measure_size(db, n, texts, queries, args)
            remove_db(db)  # one file at a time on disk: 1M rows take 1.6 GB
    return result


def _pair(p: dict[str, float | None]) -> str:
    return f"{p['p50']} / {p['p95']}"


def report(result: dict[str, Any], args: argparse.Namespace, wall_s: float) -> None:
    data = result["data"]
    print(
        f"data: {data['distinct_texts']} distinct zh/en texts embedded ({data['texts_per_s']}/s),"
        f" rows = text + N(0, {data['noise_per_component']}) noise; {data['queries']} queries;"
        f" top {K} of claims+events in '{NAMESPACE}' (70 % of rows)"
    )
    lines: list[tuple[str, Callable[[dict[str, Any]], str]]] = [
        ("rows written / s", lambda s: f"{s['rows']:,} / {s['write_s']}"),
        ("numpy load s / memory MiB", lambda s: f"{s['numpy_load_s']} / {s['numpy_memory_mib']}"),
        ("numpy search p50/p95 ms", lambda s: _pair(s["numpy_ms"])),
        ("floor (bare matvec) p50/p95 ms", lambda s: _pair(s["floor_ms"])),
        ("numpy / floor (p50)", lambda s: str(s["numpy_over_floor"])),
        ("sqlite-vec p50/p95 ms", lambda s: _pair(s.get("sqlite_vec_ms", _NONE))),
        ("sqlite-vec agreement", lambda s: str(s.get("sqlite_vec_agreement", "-"))),
        ("allow 1k numpy / sqlite-vec p50 ms", _allow),
        ("refresh idle p50 ms / 110 changes ms", _refresh),
        ("prefilter p50/p95 ms", lambda s: _pair(s["prefilter_ms"])),
        ("prefilter recall@10", lambda s: str(s["prefilter_recall_at_10"])),
    ]
    sizes = list(result["sizes"].values())
    width = max(len(name) for name, _ in lines)
    print(f"{'':<{width}}  " + "  ".join(f"{s['rows']:>18,}" for s in sizes))
    for name, cell in lines:
        print(f"{name:<{width}}  " + "  ".join(f"{cell(s):>18}" for s in sizes))
    result["meta"] = {
        "quick": args.quick,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "cpus": os.cpu_count(),
        # BLAS threads matter on a busy small box: two OpenBLAS threads on two shared vCPUs
        # made a 10k-row matvec 16 ms instead of 1 ms here (threads wait for a time slice).
        "openblas_num_threads": os.environ.get("OPENBLAS_NUM_THREADS"),
        "loadavg_1m": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
        "wall_s": round(wall_s, 1),
    }
    print(json.dumps(result, ensure_ascii=False))


_NONE = {"p50": None, "p95": None}


def _allow(s: dict[str, Any]) -> str:
    vec = s.get("allow_sqlite_vec_ms", _NONE)
    return f"{s['allow_numpy_ms']['p50']} / {vec['p50']}"


def _refresh(s: dict[str, Any]) -> str:
    return f"{s['refresh_idle_ms']['p50']} / {s['refresh_110_changes_ms']}"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        allow_abbrev=False,
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--quick", action="store_true", help="10k and 100k rows; < 60 s")
    parser.add_argument("--sizes", help="comma-separated row counts (overrides the defaults)")
    parser.add_argument("--queries", type=int, help="queries per size (default 100, quick 50)")
    parser.add_argument("--distinct", type=int, help="distinct texts embedded (4000; quick 1500)")
    parser.add_argument("--noise", type=float, default=0.01, help="noise sd per component")
    parser.add_argument(
        "--vec-query-budget",
        type=int,
        help="sqlite-vec queries per 100k rows, at least 5 (it scans the table every time;"
        " default 40, quick 10)",
    )
    parser.add_argument("--workdir", help="directory for the temporary SQLite files")
    args = parser.parse_args()
    default_sizes = "10000,100000" if args.quick else "10000,100000,1000000"
    args.vec_query_budget = args.vec_query_budget or (10 if args.quick else 40)
    args.sizes = [int(s) for s in (args.sizes or default_sizes).split(",")]
    args.queries = args.queries or (50 if args.quick else 100)
    args.distinct = args.distinct or (1500 if args.quick else 4000)
    if min(args.sizes) < K or args.queries < 5 or args.distinct < 1:
        parser.error("sizes must be >= 10, queries >= 5, distinct >= 1")
    return args


if __name__ == "__main__":
    arguments = parse_args()
    begun = time.perf_counter()
    outcome = anyio.run(main, arguments)
    report(outcome, arguments, time.perf_counter() - begun)
