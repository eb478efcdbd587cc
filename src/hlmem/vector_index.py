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
  delete moves the partition's last vector into the hole.
  :meth:`refresh` follows the ``vectors`` table incrementally: rows whose ``seq`` is above the
  last one read (inserts, and updates, which the schema turns into new rows), then the
  ``vector_deletions`` log. When nothing changed it costs one small query, so :meth:`search`
  refreshes before every scan.
- ``"sqlite-vec"`` leaves the vectors on disk and scans them with ``vec_distance_cosine``; it
  needs a store whose SQLite module loaded the extension (``store.caps.vec_version``).
- ``"auto"`` is numpy while the vectors fit in ``numpy_max_mib`` (:func:`choose_backend`,
  decided when the index loads and again if it outgrows the budget), else sqlite-vec (when
  loaded). Measured by ``bench/recall.py``: numpy scans are an order of magnitude faster at
  every size, so only memory decides.

Both are exact. A numpy index may also take a :class:`Prefilter` (off unless asked for):
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
(``sql/queries_vectors.sql``). Scans of more than a few million floats run in a worker thread.
One index serves one store; it is safe for concurrent tasks (a lock serialises refresh and
scan), not for use from several threads or event loops at once.
"""

from __future__ import annotations

import json
import logging
import math
import sys
import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import anyio
import numpy as np

from hlmem.errors import ConfigError, InputError
from hlmem.store import Store

log = logging.getLogger(__name__)

Backend = Literal["numpy", "sqlite-vec"]
BackendChoice = Literal["auto", "numpy", "sqlite-vec"]
Floats = np.ndarray[Any, np.dtype[np.float32]]
Ints = np.ndarray[Any, np.dtype[np.int64]]
Words = np.ndarray[Any, np.dtype[np.uint64]]

#: owner kinds a vector row may have, in the order of their codes in the numpy backend
OWNER_KINDS = ("claim", "event", "observation")
DEFAULT_KINDS = ("claim", "event")
_KIND_CODE = {kind: code for code, kind in enumerate(OWNER_KINDS)}

#: rows read per query while refreshing (bounds the memory of one read)
REFRESH_BATCH_ROWS = 20_000
#: scans touching more float32 values than this run in a worker thread (10k rows of 384:
#: about 0.5 ms inline on an idle core, less than a thread hop costs under load)
THREAD_MIN_FLOATS = 4_000_000
#: memory the numpy backend holds per vector besides its floats (and prefilter bits): seq,
#: owner id, slot map entry, a sixteenth of room to grow; :meth:`VectorIndex.memory_bytes`
#: measured 1,830 bytes a 384-dimension vector at 251k vectors (bench/recall.py)
ROW_OVERHEAD_BYTES = 300
_INITIAL_ROWS = 16
#: a query with non-zero values in more than 1/this of the dimensions is scanned with one
#: matrix-vector product (reading them all) instead of one pass per non-zero dimension
SPARSE_MAX_SHARE = 3
#: ... and a partition of fewer vectors than this always is (a pass per dimension has a cost)
SPARSE_MIN_ROWS = 4096
#: scans of more float32 values than this are split in two, on two threads
SPLIT_MIN_FLOATS = 30_000_000
_BLOCK_ROWS = 65_536  # rows summed at a time: two blocks of float32 sums (512 KiB) stay in L2
_ROW_BITS = 32  # a location is part << _ROW_BITS | row


@dataclass(frozen=True, slots=True)
class VectorHit:
    """One search result: the owner and its cosine similarity to the query (-1 … 1)."""

    kind: str
    item_id: str
    score: float


@dataclass(frozen=True)
class Prefilter:
    """Approximate scans of large numpy partitions: SimHash bits pick candidates, float32
    re-scores them.

    Each vector also keeps ``bits`` sign bits of random projections (two vectors differ in a
    bit with probability angle / pi). A scan of a partition of at least ``min_rows`` rows ranks
    them by Hamming distance to the query's bits, scores the nearest ``max(candidates,
    per_hit * k)`` (and any tied with the last) exactly, and returns the top-k of those: not
    exact; ``bench/recall.py`` measures its recall against the exact scan.
    """

    bits: int = 384
    candidates: int = 1024
    per_hit: int = 0
    min_rows: int = 200_000
    seed: int = 0

    def __post_init__(self) -> None:
        if self.bits < 64 or self.bits % 64:
            raise ConfigError(f"prefilter bits must be a positive multiple of 64, got {self.bits}")
        if self.candidates < 1 or self.per_hit < 0:
            raise ConfigError("prefilter candidates must be positive")

    def wanted(self, k: int) -> int:
        """Candidates to re-score for a top-``k`` search."""
        return max(self.candidates, self.per_hit * k)

    def projection(self, dim: int) -> Floats:
        """The random hyperplanes, one per bit: fixed by ``seed``, the same in every process."""
        rng = np.random.default_rng(self.seed)
        return rng.standard_normal((self.bits, dim)).astype(np.float32)


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
) -> Backend:
    """What ``"auto"`` uses for ``rows`` vectors: numpy while they fit in ``numpy_max_mib``
    (or when sqlite-vec is not loaded), else sqlite-vec."""
    fits = numpy_bytes(rows, dim, prefilter) <= numpy_max_mib * 2**20
    return "numpy" if fits or not vec_loaded else "sqlite-vec"


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
    return sorted(_KIND_CODE[k] for k in set(kinds))


class VectorIndex:
    """Cosine top-k over the vectors of one (model id, model version, dimension).

    ``backend`` is ``"numpy"`` (in memory, incrementally refreshed), ``"sqlite-vec"`` (scanned
    in SQLite) or ``"auto"`` (numpy while the vectors fit in ``numpy_max_mib``, else
    sqlite-vec). ``prefilter`` (numpy only) makes scans of large partitions approximate and
    several times faster. Build one per store and model, keep it, and call :meth:`search`.

    :raises ConfigError: an unknown backend, a dimension below 1, or a prefilter for sqlite-vec.
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
    ) -> None:
        if backend not in ("auto", "numpy", "sqlite-vec"):
            raise ConfigError(
                f"unknown vector backend {backend!r}; use 'auto', 'numpy' or 'sqlite-vec'"
            )
        if dim < 1:
            raise ConfigError(f"vector dimension must be positive, got {dim}")
        if prefilter is not None and backend == "sqlite-vec":
            raise ConfigError("a vector prefilter needs the 'numpy' backend")
        self.model_id = model_id
        self.model_version = model_version
        self.dim = dim
        self.choice: BackendChoice = backend
        #: the backend in use ("auto" decides when the index loads)
        self.backend: Backend = "sqlite-vec" if backend == "sqlite-vec" else "numpy"
        self.prefilter = prefilter
        self.numpy_max_mib = numpy_max_mib
        self._lock = anyio.Lock()
        self._store_path: Path | None = None
        self._vec_seq = 0  # every vectors row with seq <= this has been read
        self._del_seq = 0  # every vector_deletions row with seq <= this has been read
        self._sql_rows = 0  # sqlite-vec backend: rows counted at the last refresh
        self._rows = _Rows(dim, prefilter)

    def __len__(self) -> int:
        """Vectors held (numpy) or counted at the last refresh (sqlite-vec)."""
        return self._sql_rows if self.backend == "sqlite-vec" else len(self._rows)

    def memory_bytes(self) -> int:
        """Memory held by the in-memory index (0 for sqlite-vec): arrays at their capacity,
        plus the owner ids and the slot maps."""
        return 0 if self.backend == "sqlite-vec" else self._rows.memory_bytes()

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
        vec_head, del_head, oldest = int(head[0] or 0), int(head[1] or 0), head[2]
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
            if self.backend == "numpy":
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
        if self.choice == "auto" and not full_load:
            self._decide(store, len(self._rows))
        return changed

    def _decide(self, store: Store, rows: int) -> None:
        """Pick the backend for ``rows`` vectors (``"auto"``); leaving numpy frees the rows."""
        chosen = choose_backend(
            rows=rows,
            dim=self.dim,
            numpy_max_mib=self.numpy_max_mib,
            vec_loaded=store.caps.vec_version is not None,
            prefilter=self.prefilter,
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
        if chosen == "sqlite-vec" and self.backend == "numpy":
            self._rows = _Rows(self.dim, self.prefilter)
            self._sql_rows = rows
        self.backend = chosen

    @property
    def _log_extra(self) -> dict[str, str]:
        return {"model_id": self.model_id, "model_version": self.model_version}

    def _reset(self, path: Path) -> None:
        self._store_path = path
        self._vec_seq = self._del_seq = self._sql_rows = 0
        self._rows = _Rows(self.dim, self.prefilter)

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
            self._vec_seq = int(rows[-1][0])
            if len(rows) < REFRESH_BATCH_ROWS:
                return changed

    async def _read_deletions(self, store: Store) -> int:
        changed = 0
        while True:
            rows = await store.fetchall(
                "vector_deletions_since",
                {"model": self.model_id, "after": self._del_seq, "limit": REFRESH_BATCH_ROWS},
            )
            for _, vector_seq, kind, owner_id in rows:
                changed += self._rows.delete(kind, owner_id, int(vector_seq))
            if rows:
                self._del_seq = int(rows[-1][0])
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
            if self.backend == "numpy":
                rows = self._rows
                plan = rows.plan(unit, k, namespace, codes, allow)
                if plan.floats >= SPLIT_MIN_FLOATS:
                    return await self._split(rows, plan)
                if plan.floats >= THREAD_MIN_FLOATS:
                    return await anyio.to_thread.run_sync(rows.top_k, plan)
                return rows.top_k(plan)
        return await self._search_sql(store, unit, k, namespace, kinds, allow)

    @staticmethod
    async def _split(rows: _Rows, plan: _Plan) -> list[VectorHit]:
        """A large scan in two halves on two worker threads at once."""
        shards: list[list[_Found]] = [[], []]

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
        return [VectorHit(kind, owner_id, 1.0 - float(dist)) for kind, owner_id, dist in found]

    @staticmethod
    def _require_vec(store: Store) -> None:
        if store.caps.vec_version is None:
            raise ConfigError(
                "vector backend 'sqlite-vec' needs the sqlite-vec extension, which this store's "
                f"SQLite module ({store.caps.driver} {store.caps.sqlite_version}) did not load; "
                "install sqlean-py and sqlite-vec (store.sqlite_module = 'auto' or 'sqlean', "
                "store.load_vec = true) or use the 'numpy' backend"
            )

    def current(self, store: Store, head: Sequence[Any]) -> bool:
        """Whether the index has read every change up to ``head``, a ``vector_head`` row the
        caller read itself (recall reads it together with its own first reads, saving a trip to
        the reader thread): then :meth:`refresh` would change nothing and may be skipped."""
        return self._store_path == store.path and (int(head[0] or 0), int(head[1] or 0)) == (
            self._vec_seq,
            self._del_seq,
        )


class _Part:
    """The live vectors of one (namespace, owner kind), dense in rows ``[0, n)``: row ``i``
    holds a unit vector, its seq, its owner id and (with a prefilter) its SimHash bits in
    ``codes[:, i]`` (word-major: a Hamming scan reads each word of all rows in one pass)."""

    __slots__ = ("codes", "cols", "ids", "kind", "n", "seqs", "space")

    def __init__(self, space: str | None, kind: int, dim: int, words: int) -> None:
        self.space = space
        self.kind = kind
        self.n = 0
        self.cols: Floats = np.empty((dim, _INITIAL_ROWS), dtype=np.float32)  # dim-major
        self.seqs: Ints = np.empty(_INITIAL_ROWS, dtype=np.int64)
        self.codes: Words = np.empty((words, _INITIAL_ROWS), dtype=np.uint64)
        self.ids: list[str] = []

    def capacity(self, rows: int) -> None:
        """Room for ``rows`` rows (at least ``n``): the arrays are copied to that size."""
        rows = max(rows, self.n, 1)
        cols = np.empty((self.cols.shape[0], rows), dtype=np.float32)
        cols[:, : self.n] = self.cols[:, : self.n]
        seqs = np.empty(rows, dtype=np.int64)
        seqs[: self.n] = self.seqs[: self.n]
        codes = np.empty((self.codes.shape[0], rows), dtype=np.uint64)
        codes[:, : self.n] = self.codes[:, : self.n]
        self.cols, self.seqs, self.codes = cols, seqs, codes

    def grow(self, extra: int) -> None:
        if self.n + extra > len(self.seqs):
            self.capacity(max(2 * len(self.seqs), self.n + extra))

    def nbytes(self) -> int:
        return self.cols.nbytes + self.seqs.nbytes + self.codes.nbytes


_Found = tuple[Floats, Ints, _Part, Ints]  # scores, seqs, partition, rows: a shard's best


@dataclass(frozen=True, slots=True)
class _Plan:
    """What one search scans: per partition, the rows (``None``: all ``n``) and whether the
    prefilter applies; ``floats`` is the work, which decides the thread."""

    unit: Floats
    k: int
    parts: list[tuple[_Part, Ints | None, bool]]
    floats: int


class _Rows:
    """The numpy backend's storage: a :class:`_Part` per (namespace, owner kind) and, per kind,
    a map from owner id to its location (part number and row). Only the task holding the
    index's lock (or the thread it waits for) touches it."""

    def __init__(self, dim: int, prefilter: Prefilter | None) -> None:
        self.dim = dim
        self.prefilter = prefilter
        self.words = prefilter.bits // 64 if prefilter else 0
        self.projection = prefilter.projection(dim) if prefilter else None
        self.parts: list[_Part] = []
        self.part_of: dict[tuple[str | None, int], int] = {}
        self.where: list[dict[str, int]] = [{} for _ in OWNER_KINDS]
        self._id_bytes = 0

    def __len__(self) -> int:
        return sum(len(w) for w in self.where)

    def memory_bytes(self) -> int:
        arrays = sum(p.nbytes() for p in self.parts)
        arrays += 0 if self.projection is None else self.projection.nbytes
        rows = len(self)
        # Per row: the owner id (shared by the id list and the map), its list pointer, its map
        # entry and the location int.
        python = sum(sys.getsizeof(w) for w in self.where) + sum(
            sys.getsizeof(p.ids) for p in self.parts
        )
        return arrays + python + self._id_bytes + rows * sys.getsizeof(1 << _ROW_BITS)

    # --- writes (refresh) -------------------------------------------------------------------

    def reserve(self, sizes: Sequence[Any]) -> None:
        """Before a full load: partitions sized for ``vector_counts`` rows (namespace, kind,
        rows), so that loading copies nothing (doubling would hold up to twice the vectors)."""
        for namespace, kind, rows in sizes:
            part = self.parts[self._part(namespace, _KIND_CODE[kind])]
            part.capacity(int(rows) + int(rows) // 16 + _INITIAL_ROWS)

    def fit(self) -> None:
        """After a full load: trim partitions that kept much more room than they use."""
        for part in self.parts:
            if len(part.seqs) > 2 * (part.n + _INITIAL_ROWS):
                part.capacity(part.n + part.n // 16 + _INITIAL_ROWS)

    def _part(self, namespace: str | None, kind: int) -> int:
        number = self.part_of.get((namespace, kind))
        if number is None:
            number = self.part_of[(namespace, kind)] = len(self.parts)
            self.parts.append(_Part(namespace, kind, self.dim, self.words))
        return number

    def apply(self, rows: Sequence[Any]) -> int:
        """Apply rows of ``vector_changes`` (seq, kind, owner, namespace, vector or ``None``):
        a vector replaces the owner's row or is appended to its partition; a row without one
        (another model version) drops the owner. Each owner appears once (the table is unique
        on owner and model). Vectors are written in bulk per partition."""
        appends: dict[int, list[Any]] = {}
        for r in rows:
            code = _KIND_CODE[r[1]]
            where = self.where[code].get(r[2])
            if r[4] is None:
                if where is not None:
                    self._remove(code, r[2], where)
                continue
            number = self._part(r[3], code)
            if where is not None:
                if where >> _ROW_BITS == number:
                    self._write(self.parts[number], [where & _ROW_MASK], [r])
                    continue
                self._remove(code, r[2], where)
            appends.setdefault(number, []).append(r)
        for number, new in appends.items():
            part = self.parts[number]
            start = part.n
            part.grow(len(new))
            part.n += len(new)
            part.ids.extend(r[2] for r in new)
            self._write(part, range(start, start + len(new)), new)
            where_map = self.where[part.kind]
            base = number << _ROW_BITS
            for row, r in enumerate(new, start):
                where_map[r[2]] = base | row
            self._id_bytes += sum(sys.getsizeof(r[2]) for r in new)
        return len(rows)

    def _write(self, part: _Part, at: Sequence[int], rows: Sequence[Any]) -> None:
        block = np.frombuffer(b"".join(r[4] for r in rows), dtype=np.float32)
        block = block.reshape(len(rows), self.dim)
        norms = np.sqrt(np.einsum("ij,ij->i", block, block))[:, None]
        target = slice(at[0], at[0] + len(at)) if isinstance(at, range) else list(at)
        block = np.divide(block, norms, out=np.zeros_like(block), where=norms > 0)
        part.cols[:, target] = block.T
        part.seqs[target] = [r[0] for r in rows]
        if self.projection is not None:
            part.codes[:, target] = self.simhash(block).T

    def delete(self, kind: str, owner_id: str, vector_seq: int) -> int:
        """Drop the owner if its row is still the row ``vector_seq`` (a later row of the same
        owner, already read, must stay)."""
        code = _KIND_CODE[kind]
        where = self.where[code].get(owner_id)
        if where is None:
            return 0
        part = self.parts[where >> _ROW_BITS]
        if int(part.seqs[where & _ROW_MASK]) != vector_seq:
            return 0
        self._remove(code, owner_id, where)
        return 1

    def _remove(self, code: int, owner_id: str, where: int) -> None:
        """Move the partition's last vector into the owner's row (the partition stays dense)."""
        part = self.parts[where >> _ROW_BITS]
        row, last = where & _ROW_MASK, part.n - 1
        del self.where[code][owner_id]
        self._id_bytes -= sys.getsizeof(owner_id)
        if row != last:
            moved = part.ids[last]
            part.cols[:, row] = part.cols[:, last]
            part.seqs[row] = part.seqs[last]
            part.codes[:, row] = part.codes[:, last]
            part.ids[row] = moved
            self.where[code][moved] = where
        part.ids.pop()
        part.n = last
        if part.n < len(part.seqs) // 4 and len(part.seqs) > 4 * _INITIAL_ROWS:
            part.capacity(2 * part.n)

    def simhash(self, block: Floats) -> Words:
        """Sign bits of random projections, packed into ``bits // 64`` words per row."""
        assert self.projection is not None
        bits = np.packbits(block @ self.projection.T > 0, axis=1)
        return np.ascontiguousarray(bits).view(np.uint64)

    # --- reads (search) ---------------------------------------------------------------------

    def plan(
        self,
        unit: Floats,
        k: int,
        namespace: str,
        codes: list[int],
        allow: Collection[str] | None,
    ) -> _Plan:
        """The partitions (and, with ``allow``, the rows) a search reads."""
        parts: list[tuple[_Part, Ints | None, bool]] = []
        floats = 0
        pre = self.prefilter
        for code in codes:
            number = self.part_of.get((namespace, code))
            if number is None or not self.parts[number].n:
                continue
            part = self.parts[number]
            if allow is not None:
                where = self.where[code]
                found = sorted(
                    loc & _ROW_MASK
                    for owner in set(allow)
                    if (loc := where.get(owner)) is not None and loc >> _ROW_BITS == number
                )
                if found:
                    parts.append((part, np.asarray(found, dtype=np.int64), False))
                    floats += len(found) * self.dim
                continue
            prefiltered = pre is not None and part.n >= pre.min_rows and part.n > pre.wanted(k)
            parts.append((part, None, prefiltered))
            if prefiltered:
                assert pre is not None
                floats += part.n * self.words * 2 + pre.wanted(k) * self.dim
            else:
                dims = int(np.count_nonzero(unit))
                sparse = part.n >= SPARSE_MIN_ROWS and dims * SPARSE_MAX_SHARE <= self.dim
                # a pass per dimension reads the row, then reads and writes two temporaries
                floats += part.n * (3 * dims if sparse else self.dim)
        return _Plan(unit, k, parts, floats)

    def top_k(self, plan: _Plan) -> list[VectorHit]:
        """Top-k by dot product over the plan's rows, ties broken by seq: exact per
        partition, or among the prefilter's candidates."""
        return self.best(plan, [self.shard(plan, 0, 1)])

    def shard(self, plan: _Plan, shard: int, shards: int) -> list[_Found]:
        """The best ``k`` of each partition's ``shard``-th of ``shards`` row ranges (gathered
        rows, allowed or prefiltered, all go to shard 0): shards can be scanned at once, on
        as many threads (numpy releases the GIL while it computes)."""
        k, unit = plan.k, plan.unit
        found: list[_Found] = []
        for part, rows, prefiltered in plan.parts:
            if rows is None and not prefiltered:  # a row range: no gather, no index array
                start, stop = part.n * shard // shards, part.n * (shard + 1) // shards
                scores = self._scan(part, unit, start, stop)
                if len(scores) > k:
                    rows = earliest_ties(scores, top_rows(scores, k), part.seqs[start:stop])
                    scores = scores[rows]
                else:
                    rows = np.arange(len(scores), dtype=np.int64)
                rows = rows + start
            elif shard:
                continue
            else:
                if prefiltered:
                    assert self.prefilter is not None
                    rows = self._nearest_codes(part, unit, self.prefilter.wanted(k))
                assert rows is not None
                nz = np.flatnonzero(unit)
                scores = unit[nz] @ part.cols[np.ix_(nz, rows)]
                if len(scores) > k:
                    best = earliest_ties(scores, top_rows(scores, k), part.seqs[rows])
                    scores, rows = scores[best], rows[best]
            found.append((scores, part.seqs[rows], part, rows))
        return found

    @staticmethod
    def best(plan: _Plan, shards: list[list[_Found]]) -> list[VectorHit]:
        """The plan's top k of the shards' candidates, ties broken by seq."""
        found = [f for shard in shards for f in shard]
        if not found:
            return []
        k = plan.k
        scores = np.concatenate([f[0] for f in found])
        seqs = np.concatenate([f[1] for f in found])
        which = np.concatenate([np.full(len(f[0]), i) for i, f in enumerate(found)])
        rows = np.concatenate([f[3] for f in found])
        if len(scores) > k:
            best = earliest_ties(scores, np.argpartition(scores, len(scores) - k)[-k:], seqs)
            scores, seqs, which, rows = scores[best], seqs[best], which[best], rows[best]
        order = np.lexsort((seqs, -scores))
        return [
            VectorHit(OWNER_KINDS[part.kind], part.ids[int(rows[i])], float(scores[i]))
            for i in order.tolist()
            for part in (found[int(which[i])][2],)
        ]

    @staticmethod
    def _scan(part: _Part, unit: Floats, start: int, stop: int) -> Floats:
        """``unit`` dotted with the vectors ``start:stop`` of ``part``: over the query's
        non-zero dimensions only (exact: the others add zero), one contiguous row of the
        partition each, a block of rows at a time so that the sums stay in the CPU's cache; or
        one matrix-vector product when the query is dense or the range small."""
        nz = np.flatnonzero(unit)
        if stop - start < SPARSE_MIN_ROWS or len(nz) * SPARSE_MAX_SHARE > len(unit) or not len(nz):
            out: Floats = unit @ part.cols[:, start:stop]
            return out
        cols = part.cols
        dims, weights = nz.tolist(), unit[nz].tolist()
        scores = np.empty(stop - start, dtype=np.float32)
        step = np.empty(min(_BLOCK_ROWS, stop - start), dtype=np.float32)
        for a in range(start, stop, _BLOCK_ROWS):
            b = min(stop, a + _BLOCK_ROWS)
            acc, tmp = scores[a - start : b - start], step[: b - a]
            np.multiply(cols[dims[0], a:b], weights[0], out=acc)
            for d, w in zip(dims[1:], weights[1:], strict=True):
                np.multiply(cols[d, a:b], w, out=tmp)
                acc += tmp
        return scores

    def _nearest_codes(self, part: _Part, unit: Floats, wanted: int) -> Ints:
        """The rows of ``part`` nearest to ``unit`` in Hamming distance of SimHash bits: at
        least ``wanted`` of them (all those tied at the cut-off)."""
        query = self.simhash(unit.reshape(1, -1))[0]
        n = part.n
        distance = np.zeros(n, dtype=np.uint16)
        scratch = np.empty(n, dtype=np.uint64)
        for word in range(self.words):
            np.bitwise_xor(part.codes[word, :n], query[word], out=scratch)
            distance += np.bitwise_count(scratch)
        counts = np.bincount(distance, minlength=self.words * 64 + 1)
        cut = int(np.searchsorted(np.cumsum(counts), wanted))
        return np.flatnonzero(distance <= cut)


_ROW_MASK = (1 << _ROW_BITS) - 1
_SAMPLE_MIN_STEP = 8  # top_rows samples only where that saves work


def earliest_ties(scores: Floats, best: Ints, seqs: Ints) -> Ints:
    """``best`` (positions of k largest ``scores``, from :func:`top_rows`) with the scores tied
    with the k-th resolved the way :meth:`_Rows.best` orders hits: the earliest written (lowest
    ``seqs``) first. Without this a search's top k would hold whichever of the tied rows the
    selection met first, not the same ones from one scan (or thread split) to the next."""
    cut = scores[best].min()
    inside = best[scores[best] == cut]
    tied = np.flatnonzero(scores == cut)
    if len(tied) == len(inside):
        return best
    need = len(inside)
    earliest = tied[np.argpartition(seqs[tied], need - 1)[:need]]
    out: Ints = np.concatenate([best[scores[best] > cut], earliest])
    return out


def top_rows(scores: Floats, k: int) -> Ints:
    """The positions of ``k`` largest ``scores`` (any order; ``len(scores) > k``).

    numpy's introselect takes 70-90 ms over a million scores when most are equal, and they
    are: a query of a few non-zero dimensions (a two-character Chinese word) shares none with
    most vectors, which score exactly 0. When at least half are 0, the top ``k`` are among the
    positive ones, selected from those alone (~1 ms), or, fewer than ``k`` positive, they are
    all of those and enough zeros (introselect took 400 ms over 950k zeros and 30 positives).

    Otherwise it still takes ~13 ms over 1.9M distinct scores. A sample of every ``step``-th
    score (``step`` ~ sqrt(n / k): about sqrt(n k) of them) gives a cut-off, its k-th largest,
    that at least ``k`` scores reach: the top ``k`` are among those (~k * step of them), selected
    from those alone (~3 ms)."""
    n = len(scores)
    if np.count_nonzero(scores) * 2 <= n:
        positive = np.flatnonzero(scores > 0)
        if len(positive) >= k:
            chosen = np.argpartition(scores[positive], len(positive) - k)[-k:]
            out: Ints = positive[chosen]
            return out
        # Fewer than k positive: all of them, then any zeros (which beat every negative).
        zeros = np.flatnonzero(scores == 0)
        if len(zeros) >= k - len(positive):
            some: Ints = np.concatenate([positive, zeros[: k - len(positive)]])
            return some
    step = math.isqrt(n // k)
    if step >= _SAMPLE_MIN_STEP:
        sample = scores[::step]
        cut = np.partition(sample, len(sample) - k)[len(sample) - k]
        above = np.flatnonzero(scores >= cut)
        if len(above) * 4 <= n:  # else the cut-off is a value most scores share: no gain
            chosen = np.argpartition(scores[above], len(above) - k)[-k:]
            picked: Ints = above[chosen]
            return picked
    rows: Ints = np.argpartition(scores, n - k)[-k:]
    return rows
