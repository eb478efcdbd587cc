"""The dense half of ``bench/recall.py`` (``--dense``): recall over a model's dense vectors,
exact (``numpy``) against the ANN backend (``ann``), beside a bare exact floor.

**Data.** A copy of the size's cached text store (``-dense.db`` beside it, built once: the
SQLite backup API, then every claim's and event's vector replaced) where each vector is a
384-dimension unit vector of :mod:`dense_data` (synthetic, e5-like: anisotropic, topics within
subjects; not e5 output, which would take hours to compute for 1.9M texts on two cores), under
the model :data:`MODEL`. So the file is what a store embedded by multilingual-e5-small looks
like to the index: only dense vectors, one per claim and event, same namespaces, same texts.

**Queries.** The text queries of the sparse rounds (full text runs on them as usual), each
paired with a dense query vector of :meth:`dense_data.DenseWorld.queries` (a topic's centre
with noise of its own, never a stored vector): recall runs *without embedding the query*,
since e5's own cost (milliseconds per question on these cores) is not the index's. The
recaller is given the dense vector through its query embedder (a bench-only stand-in, below).

**Per size**, in one process: the ``ann`` variant opens first (its first recall loads the rows
and is exact), then its graphs are loaded from ``<file>.ann/`` (saved by an earlier run) or
built, and ``graphs_wait_s`` says how long that took. Then rounds of ``await mem.recall(...)``
for ``ann`` and (not in ``--quick``: it loads the rows a second time) exact ``numpy``, the
vector channel alone for each (``index.search`` for ``recall.vector_candidates``), the
**floor** (the bare dense scan of the namespace's vectors, ``recall.floor_scan``, one round in
``--quick``), and recall@10 and recall@50 of the ANN's hits against the floor's exact top k
(ties counted as found: an ANN hit scoring at least the exact k-th score is a right answer).
"""

from __future__ import annotations

import argparse
import gc
import json
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import numpy as np
from dense_data import BLOCK_ROWS, DIM, DenseWorld

from hlmem.index import AnnParams, VectorIndex
from hlmem.lang import DEFAULT_DIM, LocalEmbedder
from hlmem.memory import Memory
from hlmem.recall import Recaller
from hlmem.recall.query_vector import CACHE_SIZE
from hlmem.store import sqlite_module

MODEL = "bench/e5-like-synthetic"
#: rows written per transaction while converting (a block of dense_data: generated once)
CONVERT_BATCH = BLOCK_ROWS

Matrix = np.ndarray[Any, np.dtype[np.float32]]


def version(seed: int) -> str:
    return f"dense-data-s{seed}-v1"


def dense_path(path: Path) -> Path:
    return path.with_name(path.stem + "-dense.db")


def convert(source: Path, target: Path, seed: int, say: Any) -> dict[str, Any]:
    """Copy ``source`` to ``target`` and give every claim and event a dense vector of
    :data:`MODEL` in place of the local embedder's (the owners in seq order: claims from one
    stream of :class:`DenseWorld`, events from another)."""
    module = sqlite_module("auto")
    started = time.perf_counter()
    tmp = target.with_suffix(".building")
    tmp.unlink(missing_ok=True)
    src = module.connect(str(source))
    dst = module.connect(str(tmp), isolation_level=None)
    try:
        src.backup(dst)
    finally:
        src.close()
    say(f"copied in {time.perf_counter() - started:.0f} s; writing dense vectors ...")
    local = LocalEmbedder(DEFAULT_DIM)
    try:
        dst.execute("PRAGMA journal_mode = WAL")
        owners = dst.execute(
            "SELECT owner_kind, owner_id, namespace, created_at FROM vectors"
            " WHERE model_id = ? ORDER BY seq",
            (local.model_id,),
        ).fetchall()
        claims = [o for o in owners if o[0] == "claim"]
        events = [o for o in owners if o[0] != "claim"]
        world = DenseWorld(seed, len(owners))
        insert = (
            "INSERT INTO vectors (owner_kind, owner_id, namespace, model_id, model_version, dim,"
            " vector, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
        )
        for stream, group in enumerate((claims, events)):
            for start in range(0, len(group), CONVERT_BATCH):
                chunk = group[start : start + CONVERT_BATCH]
                vecs = world.vectors_at(start, len(chunk), stream=stream)
                dst.execute("BEGIN")
                dst.executemany(
                    insert,
                    [
                        (o[0], o[1], o[2], MODEL, version(seed), DIM, v.tobytes(), o[3])
                        for o, v in zip(chunk, vecs, strict=True)
                    ],
                )
                dst.execute("COMMIT")
        dst.execute("BEGIN")
        dst.execute("DELETE FROM vectors WHERE model_id = ?", (local.model_id,))
        dst.execute("DELETE FROM vector_deletions")  # no index ever read this file
        dst.execute("COMMIT")
        dst.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        dst.close()
    tmp.rename(target)
    meta = {
        "claims": len(claims),
        "events": len(events),
        "convert_s": round(time.perf_counter() - started, 1),
        "file_mib": round(target.stat().st_size / 2**20, 1),
    }
    target.with_suffix(".json").write_text(json.dumps(meta))
    return meta


def ensure_dense(path: Path, args: argparse.Namespace, say: Any) -> tuple[Path, dict[str, Any]]:
    target = dense_path(path)
    meta_path = target.with_suffix(".json")
    if target.exists() and meta_path.exists() and not args.rebuild:
        meta: dict[str, Any] = json.loads(meta_path.read_text())
        return target, {**meta, "cached": True}
    say(f"dense copy of {path.name} ...")
    return target, {**convert(path, target, args.seed, say), "cached": False}


class QueryVectors:
    """Bench-only: the recaller's query embedder replaced by a table of dense vectors (text ->
    vector). Serves both shapes a recaller has had: ``embed_one(text)`` (the local embedder's)
    and ``await vector(text, namespace=...)`` (a ``QueryVectors`` with a ``degraded`` reason)."""

    def __init__(self, table: dict[str, Matrix]) -> None:
        self.table = table
        self.model_id = MODEL
        self.dim = DIM

    def embed_one(self, text: str) -> Matrix:
        return self.table[text]

    async def vector(self, text: str, *, namespace: str) -> tuple[Matrix, None]:
        return self.table[text], None


class E5QueryVectors(QueryVectors):
    """Bench-only: what a question costs with e5, the table's vector for the search. Each
    question is embedded by multilingual-e5-small as recall embeds it (``QueryVectors``: on a
    worker thread, the last :data:`hlmem.recall.query_vector.CACHE_SIZE` kept), then the search
    gets the table's dense vector, since the stored vectors are synthetic. ``forget()``
    empties the cache: a round after it embeds every question once."""

    def __init__(self, table: dict[str, Matrix], embedder: Any) -> None:
        super().__init__(table)
        self.e5 = embedder
        self._seen: OrderedDict[str, None] = OrderedDict()

    def forget(self) -> None:
        self._seen.clear()

    async def vector(self, text: str, *, namespace: str) -> tuple[Matrix, None]:
        if text in self._seen:
            self._seen.move_to_end(text)
        else:
            await anyio.to_thread.run_sync(self.e5.embed_query, text)
            self._seen[text] = None
            if len(self._seen) > CACHE_SIZE:
                self._seen.popitem(last=False)
        return self.table[text], None


def install(
    mem: Memory, index: VectorIndex, table: dict[str, Matrix], stand_in: QueryVectors | None = None
) -> None:
    """Point ``mem``'s recaller at the dense model: its index and its query vectors (the
    table's, or ``stand_in``)."""
    if mem._recaller is None:  # bench: peek (the memory makes its recaller at the first recall)
        mem._recaller = Recaller(mem.store, mem.config, mem._gateway)
    recaller = mem._recaller
    recaller.index = index
    stand_in = stand_in or QueryVectors(table)
    if hasattr(recaller, "query_vectors"):
        recaller.query_vectors = stand_in
    else:
        recaller.embedder = stand_in  # type: ignore[assignment]


def index_for(backend: str, mem: Memory, seed: int) -> VectorIndex:
    rc = mem.config.recall
    return VectorIndex(
        MODEL,
        version(seed),
        DIM,
        backend=backend,  # type: ignore[arg-type]
        numpy_max_mib=rc.numpy_max_mib,
        ann_params=AnnParams.from_config(rc),
    )


@dataclass
class DenseVariant:
    name: str
    mem: Memory | None = None
    index: VectorIndex | None = None
    times: list[list[float]] = field(default_factory=list)
    load: dict[str, Any] = field(default_factory=dict)


def recall_at(got: list[Any], want: list[Any], k: int) -> float:
    """The share of the exact top ``k`` the ANN found, ties counted: an ANN hit scoring at
    least the exact k-th score is a right answer."""
    if not want:
        return 1.0
    kth = want[min(k, len(want)) - 1].score
    right = sum(1 for h in got[:k] if h.score >= kth - 1e-6)
    return right / min(k, len(want))


def exact_top(rows: Matrix, query: Matrix, k: int) -> list[Any]:
    """The exact top ``k`` of the bare scan, as hits with a ``score`` (for :func:`recall_at`)."""
    scores = rows @ query
    best = np.argpartition(scores, len(scores) - k)[-k:]
    return [_Hit(float(s)) for s in np.sort(scores[best])[::-1]]


@dataclass(frozen=True)
class _Hit:
    score: float


def namespace_vectors(index: VectorIndex, namespace: str) -> Matrix:
    """The floor's own contiguous row-major copy of the namespace's claim and event vectors,
    taken from the exact index's rows."""
    rows = index._rows  # bench: peek
    blocks = [
        p.mat[: p.n] if p.dense else p.cols[:, : p.n].T
        for p in rows.parts
        if p.space == namespace and p.kind in (0, 1)
    ]
    out: Matrix = np.ascontiguousarray(np.concatenate(blocks)) if blocks else np.empty((0, DIM))
    gc.collect()
    return out
