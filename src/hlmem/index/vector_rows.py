"""The numpy backend's rows: a dense float32 matrix per (namespace, owner kind), its scans and
the selection of a scan's top k.

:class:`Rows` holds, for one :class:`hlmem.index.vectors.VectorIndex`, a :class:`Partition` per
(namespace, owner kind): unit vectors stored dimension-major (one contiguous row of values per
dimension), their write order (``seq``), owner ids and, with a :class:`Prefilter`, SimHash
bits; and per kind a map from owner id to its place. A :class:`ScanPlan` says what one search
reads; :meth:`Rows.shard` scans a share of it (several shards run on as many threads, numpy
releasing the GIL while it computes) and :meth:`Rows.best` merges their candidates. The top k
is cut at the k-th score, ties going to the earliest written vectors (:func:`earliest_ties`),
whatever the row order or thread split; :func:`top_rows` selects among the scores above a
sampled cut-off instead of partitioning them all. :mod:`hlmem.index.vectors` says why the scan
is shaped this way and what was measured.

Only the task holding the index's lock (or the thread it waits for) touches a :class:`Rows`.
"""

from __future__ import annotations

import math
import sys
import threading
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import numpy as np

from hlmem.errors import ConfigError

Floats = np.ndarray[Any, np.dtype[np.float32]]
Ints = np.ndarray[Any, np.dtype[np.int64]]
Words = np.ndarray[Any, np.dtype[np.uint64]]

#: owner kinds a vector row may have, in the order of their codes in the numpy backend
OWNER_KINDS = ("claim", "event", "observation")
DEFAULT_KINDS = ("claim", "event")
KIND_CODE = {kind: code for code, kind in enumerate(OWNER_KINDS)}

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


class Graph(Protocol):
    """An approximate nearest-neighbour graph over one partition's vectors, keyed by their
    ``seq`` (:class:`hlmem.index.ann.AnnGraph`): it holds every vector of the partition
    written up to ``covered`` (seq), and maybe some deleted since."""

    def candidates(self, unit: Floats, k: int) -> tuple[Ints, int]:
        """Seqs of vectors near ``unit`` (enough for an exact top ``k`` of them), and the
        ``covered`` seq they were searched under."""
        ...


class Partition:
    """The live vectors of one (namespace, owner kind), dense in rows ``[0, n)``: row ``i``
    holds a unit vector, its seq, its owner id and (with a prefilter) its SimHash bits in
    ``codes[:, i]`` (word-major: a Hamming scan reads each word of all rows in one pass).

    ``cols`` is dimension-major (one contiguous row of values per dimension), what a sparse
    scan reads. A partition of dense vectors (``dense``) keeps them row-major in ``mat`` and
    ``cols`` is its transposed view: the same dot products, and a gathered row (an ANN
    candidate re-scored) is one contiguous read instead of ``dim`` scattered ones. Dense
    partitions also number their vectors in write order: vector ``s`` (its *slot*) has
    ``slot_seq[s]``, ascending, and lives in row ``slot_row[s]`` (-1: deleted since);
    ``row_slot`` is the inverse. A :class:`Graph` finds seqs, the slots say where they are."""

    __slots__ = (
        "codes",
        "cols",
        "deaths",
        "dense",
        "graph",
        "ids",
        "kind",
        "mat",
        "n",
        "row_slot",
        "seqs",
        "slot_row",
        "slot_seq",
        "slots",
        "space",
    )

    def __init__(
        self, space: str | None, kind: int, dim: int, words: int, *, dense: bool = False
    ) -> None:
        self.space = space
        self.kind = kind
        self.dense = dense
        self.n = 0
        self.mat: Floats = np.empty((_INITIAL_ROWS if dense else 0, dim), dtype=np.float32)
        self.cols: Floats = (
            self.mat.T if dense else np.empty((dim, _INITIAL_ROWS), dtype=np.float32)
        )
        self.seqs: Ints = np.empty(_INITIAL_ROWS, dtype=np.int64)
        self.codes: Words = np.empty((words, _INITIAL_ROWS), dtype=np.uint64)
        self.ids: list[str] = []
        self.row_slot: Ints = np.empty(_INITIAL_ROWS if dense else 0, dtype=np.int64)
        self.slot_row: Ints = np.empty(_INITIAL_ROWS if dense else 0, dtype=np.int64)
        self.slot_seq: Ints = np.empty(_INITIAL_ROWS if dense else 0, dtype=np.int64)
        self.slots = 0  # slots given so far
        self.deaths = 0  # slots deleted so far
        self.graph: Graph | None = None

    def capacity(self, rows: int) -> None:
        """Room for ``rows`` rows (at least ``n``): the arrays are copied to that size."""
        rows = max(rows, self.n, 1)
        n = self.n
        if self.dense:
            mat = np.empty((rows, self.mat.shape[1]), dtype=np.float32)
            mat[:n] = self.mat[:n]
            row_slot = np.empty(rows, dtype=np.int64)
            row_slot[:n] = self.row_slot[:n]
            self.mat, self.cols, self.row_slot = mat, mat.T, row_slot
        else:
            cols = np.empty((self.cols.shape[0], rows), dtype=np.float32)
            cols[:, :n] = self.cols[:, :n]
            self.cols = cols
        seqs = np.empty(rows, dtype=np.int64)
        seqs[:n] = self.seqs[:n]
        codes = np.empty((self.codes.shape[0], rows), dtype=np.uint64)
        codes[:, :n] = self.codes[:, :n]
        self.seqs, self.codes = seqs, codes

    def grow(self, extra: int) -> None:
        if self.n + extra > len(self.seqs):
            self.capacity(max(2 * len(self.seqs), self.n + extra))

    def nbytes(self) -> int:
        slots = self.row_slot.nbytes + self.slot_row.nbytes + self.slot_seq.nbytes
        return self.cols.nbytes + self.seqs.nbytes + self.codes.nbytes + slots

    def new_slots(self, rows: Ints) -> None:
        """Slots for the vectors just written to ``rows`` (their seqs already in ``seqs``)."""
        count = len(rows)
        if self.slots + count > len(self.slot_row):
            size = max(2 * len(self.slot_row), self.slots + count)
            for name in ("slot_row", "slot_seq"):
                old: Ints = getattr(self, name)
                grown = np.empty(size, dtype=np.int64)
                grown[: self.slots] = old[: self.slots]
                setattr(self, name, grown)
        first = self.slots
        self.slot_row[first : first + count] = rows
        self.slot_seq[first : first + count] = self.seqs[rows]
        self.row_slot[rows] = np.arange(first, first + count, dtype=np.int64)
        self.slots += count

    def slots_of(self, seqs: Ints) -> Ints:
        """The slots of vectors ``seqs`` (-1 for a seq this partition never held)."""
        known = self.slot_seq[: self.slots]
        at = np.searchsorted(known, seqs)
        inside = at < len(known)
        found = np.full(len(seqs), -1, dtype=np.int64)
        hit = inside.copy()
        hit[inside] = known[at[inside]] == seqs[inside]
        found[hit] = at[hit]
        return found

    def live_rows(self, slots: Ints) -> Ints:
        """The rows of those of ``slots`` (-1: none) still live."""
        slots = slots[slots >= 0]
        rows = self.slot_row[slots]
        out: Ints = rows[rows >= 0]
        return out


Found = tuple[Floats, Ints, Partition, Ints]  # scores, seqs, partition, rows: a shard's best
#: how a search reads a partition: every row (or the allowed ones), the prefilter's
#: candidates, or its graph's candidates and the vectors written since the graph was built
Mode = Literal["scan", "prefilter", "ann"]


@dataclass(frozen=True, slots=True)
class ScanPlan:
    """What one search scans: per partition, the rows (``None``: all ``n``) and how
    (``Mode``); ``floats`` is the work, which decides the thread."""

    unit: Floats
    k: int
    parts: list[tuple[Partition, Ints | None, Mode]]
    floats: int


class Rows:
    """The numpy backend's storage: a :class:`Partition` per (namespace, owner kind) and, per kind,
    a map from owner id to its location (part number and row). Only the task holding the
    index's lock (or the thread it waits for) changes it, holding ``mutex`` too: an ANN
    build's thread reads the vectors under ``mutex`` alone (:func:`hlmem.index.ann.slot_chunks`).

    A partition's layout (:class:`Partition`) follows its first vector: dense when most of its
    values are not zero (a model's vectors; the local embedder's hashed features leave 75-97 %
    of them zero)."""

    def __init__(self, dim: int, prefilter: Prefilter | None) -> None:
        self.dim = dim
        self.prefilter = prefilter
        self.words = prefilter.bits // 64 if prefilter else 0
        self.projection = prefilter.projection(dim) if prefilter else None
        self.parts: list[Partition] = []
        self.part_of: dict[tuple[str | None, int], int] = {}
        self.where: list[dict[str, int]] = [{} for _ in OWNER_KINDS]
        self.mutex = threading.Lock()
        self._reserved: dict[tuple[str | None, int], int] = {}
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
        rows), so that loading copies nothing (doubling would hold up to twice the vectors).
        Each is made by the first vector of its own (once the layout is known)."""
        for size in sizes:
            rows = int(size["n"])
            key = (size["namespace"], KIND_CODE[size["owner_kind"]])
            self._reserved[key] = rows + rows // 16 + _INITIAL_ROWS

    def fit(self) -> None:
        """After a full load: trim partitions that kept much more room than they use."""
        self._reserved.clear()
        with self.mutex:
            for part in self.parts:
                if len(part.seqs) > 2 * (part.n + _INITIAL_ROWS):
                    part.capacity(part.n + part.n // 16 + _INITIAL_ROWS)

    def _part(self, namespace: str | None, kind: int, first: bytes) -> int:
        """The number of the partition of (``namespace``, ``kind``), made for the vector
        ``first`` when there is none."""
        number = self.part_of.get((namespace, kind))
        if number is None:
            number = self.part_of[(namespace, kind)] = len(self.parts)
            values = np.frombuffer(first, dtype=np.float32)
            dense = bool(np.count_nonzero(values) * 2 > len(values))
            part = Partition(namespace, kind, self.dim, self.words, dense=dense)
            reserved = self._reserved.pop((namespace, kind), None)
            if reserved is not None:
                part.capacity(reserved)
            self.parts.append(part)
        return number

    def apply(self, rows: Sequence[Any]) -> int:
        """Apply rows of ``vector_changes`` (seq, kind, owner, namespace, vector or ``None``):
        a vector replaces the owner's row or is appended to its partition; a row without one
        (another model version) drops the owner. Each owner appears once (the table is unique
        on owner and model). Vectors are written in bulk per partition.

        In a dense partition a changed vector leaves its row and is appended like a new one:
        it gets a new slot, so that slots stay in seq order and a slot's vector never changes
        (a graph built from it stays true)."""
        with self.mutex:
            return self._apply(rows)

    def _apply(self, rows: Sequence[Any]) -> int:
        appends: dict[int, list[Any]] = {}
        for r in rows:
            code, owner = KIND_CODE[r["owner_kind"]], r["owner_id"]
            where = self.where[code].get(owner)
            if r["vector"] is None:
                if where is not None:
                    self._remove(code, owner, where)
                continue
            number = self._part(r["namespace"], code, r["vector"])
            if where is not None:
                if where >> _ROW_BITS == number and not self.parts[number].dense:
                    self._write(self.parts[number], [where & _ROW_MASK], [r])
                    continue
                self._remove(code, owner, where)
            appends.setdefault(number, []).append(r)
        for number, new in appends.items():
            part = self.parts[number]
            start = part.n
            part.grow(len(new))
            part.n += len(new)
            owners = [r["owner_id"] for r in new]
            part.ids.extend(owners)
            self._write(part, range(start, start + len(new)), new)
            if part.dense:
                part.new_slots(np.arange(start, start + len(new), dtype=np.int64))
            where_map = self.where[part.kind]
            base = number << _ROW_BITS
            for row, owner in enumerate(owners, start):
                where_map[owner] = base | row
            self._id_bytes += sum(sys.getsizeof(owner) for owner in owners)
        return len(rows)

    def _write(self, part: Partition, at: Sequence[int], rows: Sequence[Any]) -> None:
        block = np.frombuffer(b"".join(r["vector"] for r in rows), dtype=np.float32)
        block = block.reshape(len(rows), self.dim)
        norms = np.sqrt(np.einsum("ij,ij->i", block, block))[:, None]
        target = slice(at[0], at[0] + len(at)) if isinstance(at, range) else list(at)
        block = np.divide(block, norms, out=np.zeros_like(block), where=norms > 0)
        if part.dense:
            part.mat[target] = block
        else:
            part.cols[:, target] = block.T
        part.seqs[target] = [r["seq"] for r in rows]
        if self.projection is not None:
            part.codes[:, target] = self.simhash(block).T

    def delete(self, kind: str, owner_id: str, vector_seq: int) -> int:
        """Drop the owner if its row is still the row ``vector_seq`` (a later row of the same
        owner, already read, must stay)."""
        code = KIND_CODE[kind]
        where = self.where[code].get(owner_id)
        if where is None:
            return 0
        part = self.parts[where >> _ROW_BITS]
        if int(part.seqs[where & _ROW_MASK]) != vector_seq:
            return 0
        with self.mutex:
            self._remove(code, owner_id, where)
        return 1

    def _remove(self, code: int, owner_id: str, where: int) -> None:
        """Move the partition's last vector into the owner's row (the partition stays dense)."""
        part = self.parts[where >> _ROW_BITS]
        row, last = where & _ROW_MASK, part.n - 1
        del self.where[code][owner_id]
        self._id_bytes -= sys.getsizeof(owner_id)
        if part.dense:
            part.slot_row[part.row_slot[row]] = -1
            part.deaths += 1
        if row != last:
            moved = part.ids[last]
            if part.dense:
                part.mat[row] = part.mat[last]
                part.row_slot[row] = slot = part.row_slot[last]
                part.slot_row[slot] = row
            else:
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
    ) -> ScanPlan:
        """The partitions (and, with ``allow``, the rows) a search reads: a partition with a
        graph is read through it (its candidates, and what was written since it was built),
        except with ``allow``, whose rows are few and read exactly."""
        parts: list[tuple[Partition, Ints | None, Mode]] = []
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
                    parts.append((part, np.asarray(found, dtype=np.int64), "scan"))
                    floats += len(found) * self.dim
                continue
            if part.graph is not None:
                parts.append((part, None, "ann"))
                floats += 8 * k * self.dim  # a few candidates per hit, gathered
                continue
            prefiltered = pre is not None and part.n >= pre.min_rows and part.n > pre.wanted(k)
            parts.append((part, None, "prefilter" if prefiltered else "scan"))
            if prefiltered:
                assert pre is not None
                floats += part.n * self.words * 2 + pre.wanted(k) * self.dim
            else:
                dims = int(np.count_nonzero(unit))
                sparse = part.n >= SPARSE_MIN_ROWS and dims * SPARSE_MAX_SHARE <= self.dim
                # a pass per dimension reads the row, then reads and writes two temporaries
                floats += part.n * (3 * dims if sparse else self.dim)
        return ScanPlan(unit, k, parts, floats)

    def top_k(self, plan: ScanPlan) -> list[VectorHit]:
        """Top-k by dot product over the plan's rows, ties broken by seq: exact per
        partition, or among the prefilter's candidates."""
        return self.best(plan, [self.shard(plan, 0, 1)])

    def shard(self, plan: ScanPlan, shard: int, shards: int) -> list[Found]:
        """The best ``k`` of each partition's ``shard``-th of ``shards`` row ranges (gathered
        rows, allowed, prefiltered or a graph's, all go to shard 0): shards can be scanned at
        once, on as many threads (numpy releases the GIL while it computes)."""
        k, unit = plan.k, plan.unit
        found: list[Found] = []
        for part, rows, mode in plan.parts:
            if rows is None and mode == "scan":  # a row range: no gather, no index array
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
                if mode == "prefilter":
                    assert self.prefilter is not None
                    rows = self._nearest_codes(part, unit, self.prefilter.wanted(k))
                if mode == "ann":
                    rows, scores = self._graph_scores(part, unit, k)
                else:
                    assert rows is not None
                    scores = self._gather(part, unit, rows)
                if len(scores) > k:
                    best = earliest_ties(scores, top_rows(scores, k), part.seqs[rows])
                    scores, rows = scores[best], rows[best]
            found.append((scores, part.seqs[rows], part, rows))
        return found

    @staticmethod
    def best(plan: ScanPlan, shards: list[list[Found]]) -> list[VectorHit]:
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
    def _gather(part: Partition, unit: Floats, rows: Ints) -> Floats:
        """``unit`` dotted with the vectors of ``rows`` (row-major: one read per row; else
        over the query's non-zero dimensions)."""
        if part.dense:
            dense: Floats = part.mat[rows] @ unit
            return dense
        nz = np.flatnonzero(unit)
        out: Floats = unit[nz] @ part.cols[np.ix_(nz, rows)]
        return out

    def _graph_scores(self, part: Partition, unit: Floats, k: int) -> tuple[Ints, Floats]:
        """Exact float32 scores of the graph's live candidates and of every live vector
        written since the graph was built (a contiguous run at the partition's end, mostly:
        scanned as a range when that reads less than twice its rows). Deleted vectors the
        graph still holds are no candidates: their slots have no row."""
        assert part.graph is not None
        seqs, covered = part.graph.candidates(unit, k)
        rows = part.live_rows(part.slots_of(seqs))
        scores = self._gather(part, unit, rows)
        first_new = int(np.searchsorted(part.slot_seq[: part.slots], covered, side="right"))
        new = part.slot_row[first_new : part.slots]
        new = np.sort(new[new >= 0])
        if not len(new):
            return rows, scores
        low, high = int(new[0]), int(new[-1]) + 1
        if len(new) >= 256 and high - low <= 2 * len(new):
            new_scores = (part.mat[low:high] @ unit)[new - low]
        else:
            new_scores = self._gather(part, unit, new)
        return np.concatenate([rows, new]), np.concatenate([scores, new_scores])

    @staticmethod
    def _scan(part: Partition, unit: Floats, start: int, stop: int) -> Floats:
        """``unit`` dotted with the vectors ``start:stop`` of ``part``: over the query's
        non-zero dimensions only (exact: the others add zero), one contiguous row of the
        partition each, a block of rows at a time so that the sums stay in the CPU's cache; or
        one matrix-vector product when the query is dense or the range small."""
        if part.dense:
            rowwise: Floats = part.mat[start:stop] @ unit
            return rowwise
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

    def _nearest_codes(self, part: Partition, unit: Floats, wanted: int) -> Ints:
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
    with the k-th resolved the way :meth:`Rows.best` orders hits: the earliest written (lowest
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
