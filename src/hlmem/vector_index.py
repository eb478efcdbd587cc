"""The vector channel of recall: exact cosine top-k over one embedding model's vectors.

A :class:`VectorIndex` answers "which claims (or events) of this namespace are nearest to this
query vector" for one (model id, model version, dimension); vectors of any other model or
version are never compared. Two backends:

- ``"numpy"`` keeps a float32 matrix in memory (rows L2-normalised, so the cosine is a dot
  product) with parallel arrays of owner kind, namespace and change seq. :meth:`refresh` follows
  the ``vectors`` table incrementally: rows whose ``seq`` is above the last one read (inserts,
  and updates, which the schema turns into new rows), then the ``vector_deletions`` log. When
  nothing changed it costs one small query, so :meth:`search` refreshes before every scan.
- ``"sqlite-vec"`` leaves the vectors on disk and scans them with ``vec_distance_cosine``; it
  needs a store whose SQLite module loaded the extension (``store.caps.vec_version``).

Both are exact. For namespaces of hundreds of thousands of rows the numpy backend can take a
:class:`Prefilter` (SimHash bits choose candidates, float32 re-scores them): about five times
faster at 1M rows, with recall@10 of 0.998 against the exact scan in ``bench/recall.py``.

The index owns no connection and writes nothing: it reads through the store's named queries
(``sql/queries_vectors.sql``). Scans of more than a few thousand rows run in a worker thread.
One index serves one store; it is safe for concurrent tasks (a lock serialises refresh and
scan), not for use from several threads or event loops at once.
"""

from __future__ import annotations

import json
import logging
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
Floats = np.ndarray[Any, np.dtype[np.float32]]
Ints = np.ndarray[Any, np.dtype[np.int64]]

#: owner kinds a vector row may have, in the order of their codes in the numpy backend
OWNER_KINDS = ("claim", "event", "observation")
DEFAULT_KINDS = ("claim", "event")
_KIND_CODE = {kind: code for code, kind in enumerate(OWNER_KINDS)}
_DEAD = -1  # kind code of a free slot

#: rows read per query while refreshing (bounds the memory of one read)
REFRESH_BATCH_ROWS = 20_000
#: scans touching more float32 values than this run in a worker thread (10k rows of 384:
#: about 0.5 ms inline on an idle core, less than a thread hop costs under load)
THREAD_MIN_FLOATS = 4_000_000
_INITIAL_ROWS = 1024


@dataclass(frozen=True, slots=True)
class VectorHit:
    """One search result: the owner and its cosine similarity to the query (-1 … 1)."""

    kind: str
    item_id: str
    score: float


@dataclass(frozen=True)
class Prefilter:
    """Approximate scans for large numpy indexes: SimHash bits pick candidates, float32
    re-scores them.

    Each vector also keeps ``bits`` sign bits of random projections (two vectors differ in a
    bit with probability angle / pi). A scan over at least ``min_rows`` rows ranks them by
    Hamming distance to the query's bits, scores the nearest ``candidates`` (and any tied with
    the last) exactly, and returns the top-k of those: not exact, so off by default;
    ``bench/recall.py`` measures its recall@k against the exact scan.
    """

    bits: int = 384
    candidates: int = 1024
    min_rows: int = 200_000
    seed: int = 0

    def __post_init__(self) -> None:
        if self.bits < 64 or self.bits % 64:
            raise ConfigError(f"prefilter bits must be a positive multiple of 64, got {self.bits}")
        if self.candidates < 1:
            raise ConfigError("prefilter candidates must be positive")

    def projection(self, dim: int) -> Floats:
        """The random hyperplanes, one per bit: fixed by ``seed``, the same in every process."""
        rng = np.random.default_rng(self.seed)
        return rng.standard_normal((self.bits, dim)).astype(np.float32)


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
    """Exact cosine top-k over the vectors of one (model id, model version, dimension).

    ``backend`` is ``"numpy"`` (in memory, incrementally refreshed) or ``"sqlite-vec"``
    (scanned in SQLite). ``prefilter`` (numpy only) makes scans of large namespaces
    approximate and several times faster. Build one per store and model, keep it, and call
    :meth:`search`.

    :raises ConfigError: an unknown backend, a dimension below 1, or a prefilter for sqlite-vec.
    """

    def __init__(
        self,
        model_id: str,
        model_version: str,
        dim: int,
        *,
        backend: Backend = "numpy",
        prefilter: Prefilter | None = None,
    ) -> None:
        if backend not in ("numpy", "sqlite-vec"):
            raise ConfigError(f"unknown vector backend {backend!r}; use 'numpy' or 'sqlite-vec'")
        if dim < 1:
            raise ConfigError(f"vector dimension must be positive, got {dim}")
        if prefilter is not None and backend != "numpy":
            raise ConfigError("a vector prefilter needs the 'numpy' backend")
        self.model_id = model_id
        self.model_version = model_version
        self.dim = dim
        self.backend: Backend = backend
        self.prefilter = prefilter
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
        if self.backend == "sqlite-vec":
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
        if self.backend == "sqlite-vec":
            changed = vec_head - self._vec_seq + del_head - self._del_seq
            params = {"model": self.model_id, "version": self.model_version, "dim": self.dim}
            self._sql_rows = int(await store.scalar("vector_count", params))
            self._vec_seq, self._del_seq = vec_head, del_head
            return changed
        full_load = self._vec_seq == 0
        if full_load:
            params = {"model": self.model_id, "version": self.model_version, "dim": self.dim}
            self._rows.reserve(int(await store.scalar("vector_count", params)))
        started = time.perf_counter()
        changed = await self._read_changes(store)
        if full_load:
            # Rows deleted before the head was read are not in the table: skip their log.
            self._del_seq = del_head
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
        return changed

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
                self._rows.compact_if_sparse()
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
    ) -> list[VectorHit]:
        """The ``k`` vectors of ``namespace`` and ``kinds`` nearest to ``query`` by cosine,
        best first (ties by write order). ``allow`` restricts the candidates to those owner ids
        before the top-k is taken. A zero query has no nearest vectors: ``[]``.

        The numpy backend refreshes first, so what was committed before the call is searched.

        :raises InputError: the query is not a finite vector of ``dim`` values, or a kind is
            unknown.
        :raises ConfigError: backend ``"sqlite-vec"`` on a store without the extension.
        """
        unit = as_unit(query, self.dim)
        codes = _kind_codes(kinds)
        if unit is None or k <= 0 or not codes or (allow is not None and not allow):
            return []
        if self.backend == "sqlite-vec":
            return await self._search_sql(store, unit, k, namespace, kinds, allow)
        async with self._lock:
            await self._refresh(store)
            rows = self._rows
            slots = rows.candidates(namespace, codes, allow)
            scanned = len(rows) if slots is None else len(slots)
            if scanned * self.dim >= THREAD_MIN_FLOATS:
                return await anyio.to_thread.run_sync(rows.top_k, unit, k, namespace, codes, slots)
            return rows.top_k(unit, k, namespace, codes, slots)

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


class _Rows:
    """The numpy backend's storage: one slot per vector, arrays grown by doubling.

    Slot ``i`` holds a unit vector in ``matrix[i]``, its owner kind code (``_DEAD`` when free),
    namespace code, seq and owner id, and with a prefilter its SimHash bits in ``codes[:, i]``
    (stored word-major: a Hamming scan then reads each word of all rows in one pass). Freed
    slots are reused; the arrays are compacted when more than half of the slots are free. Only
    the task holding the index's lock (or the thread it waits for) touches it.
    """

    def __init__(self, dim: int, prefilter: Prefilter | None) -> None:
        self.dim = dim
        self.prefilter = prefilter
        self.matrix: Floats = np.zeros((_INITIAL_ROWS, dim), dtype=np.float32)
        self.kinds = np.full(_INITIAL_ROWS, _DEAD, dtype=np.int8)
        self.spaces = np.full(_INITIAL_ROWS, -1, dtype=np.int32)
        self.seqs: Ints = np.zeros(_INITIAL_ROWS, dtype=np.int64)
        words = prefilter.bits // 64 if prefilter else 0
        self.codes = np.zeros((words, _INITIAL_ROWS), dtype=np.uint64)
        self.projection = prefilter.projection(dim) if prefilter else None
        self.ids: list[str] = []  # owner id per handed-out slot ("" when free)
        self.used = 0  # slots [0, used) have been handed out
        self.free: list[int] = []
        self.slots: dict[tuple[int, str], int] = {}  # (kind code, owner id) -> slot
        self.space_codes: dict[str | None, int] = {}
        self._id_bytes = 0

    def __len__(self) -> int:
        return len(self.slots)

    def memory_bytes(self) -> int:
        arrays = sum(a.nbytes for a in (self.matrix, self.kinds, self.spaces, self.seqs))
        arrays += self.codes.nbytes + (0 if self.projection is None else self.projection.nbytes)
        # The slot map holds a 2-tuple per key (the id strings are shared with self.ids).
        tuples = len(self.slots) * sys.getsizeof((0, ""))
        python = sys.getsizeof(self.ids) + sys.getsizeof(self.slots) + tuples + self._id_bytes
        return arrays + python

    # --- writes (refresh) -------------------------------------------------------------------

    def reserve(self, rows: int) -> None:
        """Make room for ``rows`` slots in all (a full load knows its size: one allocation)."""
        if rows > len(self.kinds):
            self._resize(slice(0, self.used), rows)

    def apply(self, rows: Sequence[Any]) -> int:
        """Apply rows of ``vector_changes``: a vector replaces the owner's slot or takes a new
        one; a row without one (another model version) drops the owner's slot. Per-row work
        is a few dict and list operations; the arrays are written in bulk."""
        keys = [(_KIND_CODE[r[1]], r[2]) for r in rows]
        live = [i for i, r in enumerate(rows) if r[4] is not None]
        if len(live) < len(rows):
            for i in set(range(len(rows))) - set(live):
                slot = self.slots.get(keys[i])
                if slot is not None:
                    self._free(keys[i], slot)
        if not live:
            return len(rows)
        slots = [self.slots.get(keys[i]) for i in live]
        new = [j for j, slot in enumerate(slots) if slot is None]
        for j, slot in zip(new, self._take([keys[live[j]] for j in new]), strict=True):
            slots[j] = slot
        target = np.asarray(slots, dtype=np.int64)
        self.kinds[target] = [keys[i][0] for i in live]
        self.spaces[target] = [self._space(rows[i][3]) for i in live]
        self.seqs[target] = [rows[i][0] for i in live]
        block = np.frombuffer(b"".join(rows[i][4] for i in live), dtype=np.float32)
        block = block.reshape(len(live), self.dim)
        norms = np.sqrt(np.einsum("ij,ij->i", block, block))[:, None]
        self.matrix[target] = np.divide(block, norms, out=np.zeros_like(block), where=norms > 0)
        if self.projection is not None:
            self.codes[:, target] = self.simhash(self.matrix[target]).T
        return len(rows)

    def delete(self, kind: str, owner_id: str, vector_seq: int) -> int:
        """Drop the owner's slot if it still holds the row ``vector_seq`` (a later row of the
        same owner, already read, must stay)."""
        key = (_KIND_CODE[kind], owner_id)
        slot = self.slots.get(key)
        if slot is None or int(self.seqs[slot]) != vector_seq:
            return 0
        self._free(key, slot)
        return 1

    def simhash(self, block: Floats) -> np.ndarray[Any, np.dtype[np.uint64]]:
        """Sign bits of random projections, packed into ``bits // 64`` words per row."""
        assert self.projection is not None
        bits = np.packbits(block @ self.projection.T > 0, axis=1)
        return np.ascontiguousarray(bits).view(np.uint64)

    def _space(self, namespace: str | None) -> int:
        code = self.space_codes.get(namespace)
        if code is None:
            code = self.space_codes[namespace] = len(self.space_codes)
        return code

    def _take(self, keys: list[tuple[int, str]]) -> list[int]:
        """Slots for new owners: freed ones first, then fresh ones at the end."""
        reused = [self.free.pop() for _ in range(min(len(keys), len(self.free)))]
        for slot, (_, owner_id) in zip(reused, keys, strict=False):
            self.ids[slot] = owner_id
        rest = keys[len(reused) :]
        if self.used + len(rest) > len(self.kinds):
            self._resize(slice(0, self.used), max(2 * len(self.kinds), self.used + len(rest)))
        fresh = list(range(self.used, self.used + len(rest)))
        self.used += len(rest)
        self.ids.extend(owner_id for _, owner_id in rest)
        slots = reused + fresh
        self.slots.update(zip(keys, slots, strict=True))
        self._id_bytes += sum(sys.getsizeof(owner_id) for _, owner_id in keys)
        return slots

    def _free(self, key: tuple[int, str], slot: int) -> None:
        del self.slots[key]
        self._id_bytes -= sys.getsizeof(self.ids[slot])
        self.ids[slot] = ""
        self.kinds[slot] = _DEAD
        self.spaces[slot] = -1
        self.free.append(slot)

    def _resize(self, keep: Ints | slice, capacity: int) -> None:
        """Move slots ``keep`` to the front of arrays of ``capacity`` slots. Slots past
        ``used`` are never read, so the big arrays start uninitialised."""
        n = len(self.kinds[keep])
        matrix = np.empty((capacity, self.dim), dtype=np.float32)
        matrix[:n] = self.matrix[keep]
        self.matrix = matrix
        for name, fill in (("kinds", _DEAD), ("spaces", -1), ("seqs", 0)):
            old = getattr(self, name)
            new = np.full(capacity, fill, dtype=old.dtype)
            new[:n] = old[keep]
            setattr(self, name, new)
        codes = np.empty((self.codes.shape[0], capacity), dtype=np.uint64)
        codes[:, :n] = self.codes[:, keep]
        self.codes = codes

    def compact_if_sparse(self) -> None:
        """Move live slots to the front when over half the handed-out slots are free."""
        if len(self.free) < max(_INITIAL_ROWS, self.used // 2):
            return
        keep = np.flatnonzero(self.kinds[: self.used] != _DEAD)
        self._resize(keep, max(_INITIAL_ROWS, 2 * len(keep)))
        self.ids = [self.ids[i] for i in keep.tolist()]
        self.slots = {(int(self.kinds[i]), owner): i for i, owner in enumerate(self.ids)}
        self.used, self.free = len(keep), []

    # --- reads (search) ---------------------------------------------------------------------

    def candidates(
        self, namespace: str, codes: list[int], allow: Collection[str] | None
    ) -> Ints | None:
        """The slots an ``allow`` list names (in kinds and namespace), or ``None`` for all."""
        if allow is None:
            return None
        space = self.space_codes.get(namespace, -2)
        found = [
            slot
            for owner_id in set(allow)
            for code in codes
            if (slot := self.slots.get((code, owner_id))) is not None and self.spaces[slot] == space
        ]
        return np.asarray(sorted(found), dtype=np.int64)

    def top_k(
        self, unit: Floats, k: int, namespace: str, codes: list[int], slots: Ints | None
    ) -> list[VectorHit]:
        """Top-k by dot product over ``slots`` (or every slot of the namespace and kinds),
        ties broken by seq: exact, or prefiltered when configured and the scan is large."""
        if slots is None:
            space = self.space_codes.get(namespace)
            if space is None or not self.used:
                return []
            mask = self.spaces[: self.used] == space
            if len(codes) < len(OWNER_KINDS):
                mask &= np.isin(self.kinds[: self.used], codes)
            selected = int(np.count_nonzero(mask))
            pre = self.prefilter
            if pre and selected >= pre.min_rows and selected > pre.candidates:
                slots = self._prefiltered(unit, mask, pre.candidates)
            elif selected * 3 < self.used:
                slots = np.flatnonzero(mask)  # gathering a few rows beats scanning them all
            else:
                scores = self.matrix[: self.used] @ unit
                return self._best(scores, np.flatnonzero(mask), k)
        if not len(slots):
            return []
        return self._best(self.matrix[slots] @ unit, slots, k, gathered=True)

    def _prefiltered(self, unit: Floats, mask: np.ndarray[Any, Any], wanted: int) -> Ints:
        """The masked slots nearest to ``unit`` in Hamming distance of SimHash bits: at least
        ``wanted`` of them (all those tied at the cut-off)."""
        query = self.simhash(unit.reshape(1, -1))[0]
        bits = self.codes.shape[0] * 64
        distance = np.zeros(self.used, dtype=np.int16)
        scratch = np.empty(self.used, dtype=np.uint64)
        for word in range(self.codes.shape[0]):
            np.bitwise_xor(self.codes[word, : self.used], query[word], out=scratch)
            distance += np.bitwise_count(scratch)
        distance[~mask] = bits + 1
        cut = int(np.searchsorted(np.cumsum(np.bincount(distance, minlength=bits + 2)), wanted))
        return np.flatnonzero(distance <= cut)

    def _best(
        self, scores: Floats, slots: Ints, k: int, *, gathered: bool = False
    ) -> list[VectorHit]:
        # `scores` covers `slots` one to one when gathered, else every used slot.
        own = scores if gathered else scores[slots]
        if len(own) > k:
            part = np.argpartition(-own, k - 1)[:k]
            own, slots = own[part], slots[part]
        order = np.lexsort((self.seqs[slots], -own))
        return [
            VectorHit(OWNER_KINDS[self.kinds[s]], self.ids[s], float(own[i]))
            for i, s in ((int(i), int(slots[i])) for i in order)
        ]
