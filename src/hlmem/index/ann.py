"""Approximate nearest neighbours for the large dense partitions of a :class:`VectorIndex`:
an HNSW graph (usearch) over int8-quantised copies of the vectors, keyed by their ``seq``.

A graph only proposes candidates. :mod:`hlmem.index.vector_rows` re-scores them exactly, in
float32, from the partition's own rows, together with every vector written since the graph
was built, and cuts the top k with the usual tie rule; a candidate whose vector was deleted
since (forget, archive, a re-embedding) has no row any more and is dropped. So a hit's score
is always its exact cosine and a deleted vector is never returned, whatever the graph holds.

**Why usearch, int8** (``bench/ann_libraries.py``, 200k e5-like vectors of 384 dimensions, on
this 2-vCPU machine, 2026-12-02; ``bench/results/2026-12-02-ann.md``): usearch's HNSW over
int8 found the exact top 10 of every query (recall@10 1.0, recall@50 0.998 with 100
candidates re-scored) in 0.3-0.6 ms, built in 143 s and held 178 MiB; faiss's HNSW over SQ8
reached recall@10 0.97 (efSearch 64) or 0.99 (128) with a p95 of 26-34 ms, built in 205 s and
took 2.3 s to load; f16 doubled usearch's memory for no recall gained after re-scoring.
At 1M claims (graphs of 0.2-1.2M vectors) 100 candidates at expansion 64 kept recall@10 at
0.938; 200 at expansion 128 (the defaults) 0.986, for a vector channel of ~3 ms.

**Lifecycle**, driven by the index (:class:`AnnBuilder` runs one job at a time, on a daemon
thread of its own; the event loop only installs finished graphs):

- a dense partition of at least ``min_vectors`` vectors gets a job: load the graph saved
  beside the database (:func:`graph_file`), when its metadata names the same model, version,
  dimension, partition and parameters and every live vector it should hold is in it (and a
  sample of them equal to the rows), else build one. Until it is installed the partition is
  scanned exactly;
- a build reads the partition in chunks of slots under :attr:`Rows.mutex` (a few ms each)
  and adds them to the graph without it, until it has caught up with the writes;
- once the vectors written since the graph was built exceed ``stale_share`` of it, a job
  adds them to the installed graph, in small batches under the graph's lock (a search waits
  for at most one batch); once deleted vectors exceed ``stale_share`` of it, a job builds a
  new graph to replace it;
- a graph is saved (atomically) only while it holds no deleted vector: usearch keeps a
  removed vector's bytes in its file, and a forgotten vector must not stay on disk. The first
  deletion in a partition whose graph was saved removes the file; the next rebuild saves it.
  A deletion made while no index runs on the file (``hlmem forget`` from the CLI, a worker
  process) is seen when the next index loads the file: the vector is not live, so the file is
  removed then, before the graph serves a search (until then it holds the vector's int8 copy).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import logging
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from hlmem.config import RecallConfig
from hlmem.errors import ConfigError
from hlmem.index.vector_rows import Floats, Ints, Partition, Rows
from hlmem.lang import content_hash

log = logging.getLogger(__name__)

#: the library, imported only when a graph is built or loaded (hlmem runs without it)
LIBRARY = "usearch"
#: slots read per chunk while building (under Rows.mutex: ~3 ms for 384 dimensions)
BUILD_CHUNK_SLOTS = 8_192
#: vectors added per batch under the graph's lock when a graph takes new vectors
EXTEND_BATCH = 4
#: vectors compared between a loaded graph and the rows, to tell a file of another store
CHECK_SAMPLE = 256
#: the format of a saved graph's metadata
FILE_FORMAT = 1
#: about what a graph holds per vector at the default parameters (int8 vector, links of two
#: levels, key map): measured 890 bytes at 200k vectors (usearch memory_usage)
GRAPH_BYTES_PER_VECTOR = 900


def library() -> Any | None:
    """usearch's ``Index`` class, or ``None`` when the library is not installed."""
    try:
        module = importlib.import_module("usearch.index")
    except ImportError:
        return None
    return module.Index


def available() -> bool:
    """Whether the ANN library can be imported."""
    return library() is not None


@dataclass(frozen=True)
class AnnParams:
    """How graphs are built and searched (``recall.ann_*`` in config).

    ``min_vectors``: a partition smaller than this is scanned exactly. ``candidates``: the
    fewest candidates a search re-scores (at least ``per_hit`` per hit asked for).
    ``stale_share``: the share of new or deleted vectors beyond which a graph is extended or
    rebuilt. ``save``: keep graphs in files beside the database.
    """

    min_vectors: int = 20_000
    candidates: int = 200
    per_hit: int = 2
    dtype: Literal["i8", "f16", "f32"] = "i8"
    connectivity: int = 16
    expansion_add: int = 128
    expansion_search: int = 128
    build_threads: int = 1
    stale_share: float = 0.1
    save: bool = True

    def __post_init__(self) -> None:
        if self.min_vectors < 1 or self.candidates < 1 or self.per_hit < 1:
            raise ConfigError("ann min_vectors, candidates and per_hit must be positive")
        if self.connectivity < 2 or self.expansion_add < 1 or self.expansion_search < 1:
            raise ConfigError("ann connectivity must be >= 2 and expansions positive")
        if not 0 < self.stale_share < 1:
            raise ConfigError(f"ann stale_share must be in (0, 1), got {self.stale_share}")
        if self.build_threads < 1:
            raise ConfigError("ann build_threads must be positive")

    @classmethod
    def from_config(cls, rc: RecallConfig) -> AnnParams:
        """The ``recall.ann_*`` settings."""
        return cls(
            min_vectors=rc.ann_min_vectors,
            candidates=rc.ann_candidates,
            save=rc.ann_save,
            build_threads=rc.ann_build_threads,
        )

    def wanted(self, k: int, dead_share: float) -> int:
        """Candidates to ask a graph for, for an exact top ``k`` of the live ones."""
        want = max(self.candidates, self.per_hit * k)
        return int(want / max(0.25, 1.0 - dead_share))

    def fingerprint(self) -> dict[str, Any]:
        """What a saved graph must have been built with to be loaded."""
        return {
            "dtype": self.dtype,
            "connectivity": self.connectivity,
            "expansion_add": self.expansion_add,
        }


class AnnGraph:
    """One partition's graph: the library's index, the last seq it holds (``covered``), how
    many vectors it holds, and the lock a search and an extension share."""

    def __init__(self, index: Any, covered: int, params: AnnParams) -> None:
        self.index = index
        self.covered = covered
        self.params = params
        self.lock = threading.Lock()
        self.dead_share = 0.0  # set by the index at refresh: deleted / held
        self.saved: Path | None = None  # its file, while that holds no deleted vector
        self.saved_deaths = 0  # the partition's deaths when it was saved or installed

    def __len__(self) -> int:
        return int(self.index.size)

    def candidates(self, unit: Floats, k: int) -> tuple[Ints, int]:
        """Seqs near ``unit`` for an exact top ``k``, and the seq the graph covers (both read
        under the lock: an extension moves them together)."""
        count = self.params.wanted(k, self.dead_share)
        with self.lock:
            found = self.index.search(unit, count, threads=1)
            covered = self.covered
        seqs: Ints = np.asarray(found.keys, dtype=np.int64)
        return seqs, covered

    def memory_bytes(self) -> int:
        return int(self.index.memory_usage)

    def add(self, seqs: Ints, vectors: Floats, covered: int) -> None:
        """Add vectors (under the lock) and move ``covered`` to the last seq read."""
        with self.lock:
            if len(seqs):
                self.index.add(seqs.astype(np.uint64), vectors, threads=1)
            self.covered = covered


def new_index(dim: int, params: AnnParams) -> Any:
    index_class = library()
    if index_class is None:
        raise ConfigError(f"the ANN backend needs {LIBRARY} (pip install 'hlmem[ann]')")
    return index_class(
        ndim=dim,
        metric="ip",  # unit vectors: inner product is the cosine
        dtype=params.dtype,
        connectivity=params.connectivity,
        expansion_add=params.expansion_add,
        expansion_search=params.expansion_search,
    )


# --- reading a partition from another thread ---------------------------------------------------


def slot_chunks(
    rows: Rows, part: Partition, first: int, cancel: threading.Event
) -> Iterator[tuple[Ints, Floats, int]]:
    """From slot ``first`` on: (seqs, vectors, last seq read) per chunk of live slots, each read
    under ``rows.mutex`` (copies: the rows may move as soon as it is released), until the
    reader has caught up with the partition's slots (or ``cancel`` is set)."""
    while not cancel.is_set():
        with rows.mutex:
            stop = min(part.slots, first + BUILD_CHUNK_SLOTS)
            if first >= stop:
                return
            where = part.slot_row[first:stop]
            live = where >= 0
            seqs = part.slot_seq[first:stop][live]
            vectors = part.mat[where[live]]
            last = int(part.slot_seq[stop - 1])
        yield seqs, vectors, last
        first = stop


def live_seqs(rows: Rows, part: Partition, upto: int) -> Ints:
    """The seqs of the live vectors of ``part`` written up to seq ``upto``."""
    with rows.mutex:
        end = int(np.searchsorted(part.slot_seq[: part.slots], upto, side="right"))
        where = part.slot_row[:end]
        seqs: Ints = part.slot_seq[:end][where >= 0].copy()
    return seqs


def dead_in(rows: Rows, part: Partition, graph: AnnGraph) -> int:
    """How many vectors the graph holds that were deleted since."""
    return max(0, len(graph) - len(live_seqs(rows, part, graph.covered)))


# --- files ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GraphKey:
    """What a graph stands for: a model's vectors of one partition, built with some params."""

    model_id: str
    model_version: str
    dim: int
    namespace: str | None
    kind: str
    params: dict[str, Any] = field(default_factory=dict)

    def name(self) -> str:
        return content_hash(json.dumps(asdict(self), sort_keys=True))[:20]


def graph_file(db: Path, key: GraphKey) -> Path:
    """Where the graph for ``key`` of the store file ``db`` is saved: ``<db>.ann/<hash>``."""
    return db.with_name(db.name + ".ann") / f"{key.name()}.usearch"


def _meta_path(path: Path) -> Path:
    return path.with_suffix(".json")


def save_graph(graph: AnnGraph, path: Path, key: GraphKey) -> None:
    """Write the graph and its metadata beside the database, atomically (a reader never sees
    half a file: each is written under a temporary name and renamed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with graph.lock:
        graph.index.save(str(tmp))
        meta = {
            "format": FILE_FORMAT,
            "library": f"{LIBRARY} {_library_version()}",
            "key": asdict(key),
            "covered": graph.covered,
            "size": len(graph),
        }
    os.replace(tmp, path)
    meta_tmp = tmp.with_suffix(".json.tmp")
    meta_tmp.write_text(json.dumps(meta, sort_keys=True))
    os.replace(meta_tmp, _meta_path(path))


def drop_file(path: Path) -> None:
    """Remove a saved graph (it holds a vector deleted since)."""
    for p in (path, _meta_path(path)):
        with contextlib.suppress(FileNotFoundError):
            p.unlink()


def _library_version() -> str:
    try:
        return str(importlib.import_module("usearch").__version__)
    except (ImportError, AttributeError):
        return "?"


def load_graph(
    path: Path, key: GraphKey, rows: Rows, part: Partition, params: AnnParams
) -> AnnGraph | None:
    """The graph saved at ``path`` if it is one for ``key`` and this partition: every live
    vector up to its ``covered`` seq in it, and a sample of them equal to the rows (a file
    from another store, or a restored one, fails one or the other); else ``None``."""
    meta_path = _meta_path(path)
    try:
        meta = json.loads(meta_path.read_text())
    except (OSError, ValueError):
        return None
    if meta.get("format") != FILE_FORMAT or meta.get("key") != asdict(key) or not path.exists():
        return None
    index_class = library()
    if index_class is None:
        return None
    try:
        index = index_class.restore(str(path))
    except (OSError, RuntimeError, ValueError):
        return None
    if index is None or int(index.ndim) != key.dim:
        return None
    index.expansion_search = params.expansion_search
    graph = AnnGraph(index, int(meta["covered"]), params)
    seqs = live_seqs(rows, part, graph.covered)
    if not len(seqs) or not bool(np.all(index.contains(seqs.astype(np.uint64)))):
        return None
    rng = np.random.default_rng(len(seqs))
    sample = seqs[rng.choice(len(seqs), min(CHECK_SAMPLE, len(seqs)), replace=False)]
    stored = np.asarray(index.get(sample.astype(np.uint64), dtype="f32"), dtype=np.float32)
    with rows.mutex:
        found = part.slot_row[part.slots_of(sample)]
        if np.any(found < 0):
            return None
        mine = part.mat[found]
    norms = np.linalg.norm(stored, axis=1) * np.linalg.norm(mine, axis=1)
    cosines = np.einsum("ij,ij->i", stored, mine) / np.maximum(norms, 1e-12)
    if float(cosines.min()) < 0.98:  # int8 rounding keeps ~0.999
        return None
    graph.saved = path
    return graph


# --- the background builder ---------------------------------------------------------------------


@dataclass
class Job:
    """A graph to make for ``part`` of ``rows``: loaded or built (``graph`` None), or taking
    the new vectors (``graph`` the installed one)."""

    rows: Rows
    part: Partition
    key: GraphKey
    file: Path | None
    graph: AnnGraph | None = None
    result: AnnGraph | None = None
    seconds: float = 0.0
    how: str = ""
    cancel: threading.Event = field(default_factory=threading.Event)


class AnnBuilder:
    """Runs :class:`Job`\\ s one at a time on a daemon thread, started when there is work and
    ending when there is none; finished jobs wait in :meth:`finished` for the event loop to
    install their graphs. :meth:`hold` keeps new jobs from starting (tests, or a bulk load
    that wants both cores)."""

    def __init__(self, dim: int, params: AnnParams) -> None:
        self.dim = dim
        self.params = params
        self._lock = threading.Lock()
        self._queue: list[Job] = []
        self._done: list[Job] = []
        self._pending: set[int] = set()  # id() of partitions with a job queued or running
        self._failed: set[int] = set()  # id() of partitions whose job raised: not retried
        self._thread: threading.Thread | None = None
        self._running: Job | None = None
        self._go = threading.Event()
        self._go.set()

    def busy(self, part: Partition) -> bool:
        """Whether ``part`` has a job queued or running, or had one fail (logged; it is not
        retried until the index reloads its rows)."""
        with self._lock:
            return id(part) in self._pending or id(part) in self._failed

    def idle(self) -> bool:
        with self._lock:
            return not self._pending

    def submit(self, job: Job) -> None:
        with self._lock:
            if id(job.part) in self._pending:
                return
            self._pending.add(id(job.part))
            self._queue.append(job)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._run, name="hlmem-ann-build", daemon=True
                )
                self._thread.start()

    def finished(self) -> list[Job]:
        """Jobs done since the last call (their partitions are free for new jobs)."""
        with self._lock:
            done, self._done = self._done, []
            for job in done:
                self._pending.discard(id(job.part))
        return done

    def join(self) -> None:
        """Wait until every queued job is done (blocking: call it on a worker thread; never
        inside :meth:`hold`)."""
        while True:
            with self._lock:
                thread = self._thread
            if thread is None:
                return
            thread.join()

    def cancel(self) -> None:
        """Drop the queued jobs and stop the running one at its next chunk (their rows were
        replaced: a reload)."""
        with self._lock:
            for job in self._queue:
                self._pending.discard(id(job.part))
            self._queue.clear()
            self._failed.clear()
            if self._running is not None:
                self._running.cancel.set()

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        """No job starts inside this block (one already running finishes)."""
        self._go.clear()
        try:
            yield
        finally:
            self._go.set()

    def _run(self) -> None:
        while True:
            self._go.wait()
            with self._lock:
                if not self._queue:
                    self._thread = None
                    return
                job = self._running = self._queue.pop(0)
            started = time.perf_counter()
            try:
                self._work(job)
            except Exception:
                log.exception(
                    "ann graph job failed",
                    extra={"action": "ann_job_failed", "namespace": job.key.namespace},
                )
                with self._lock:
                    self._failed.add(id(job.part))
            job.seconds = time.perf_counter() - started
            with self._lock:
                self._running = None
                self._done.append(job)

    def _work(self, job: Job) -> None:
        if job.graph is not None:
            self._extend(job, job.graph)
            return
        if job.file is not None and self.params.save:
            loaded = load_graph(job.file, job.key, job.rows, job.part, self.params)
            if loaded is not None:
                job.result, job.how = loaded, "loaded"
                self._extend(job, loaded)  # what was written since it was saved
                return
        graph = AnnGraph(new_index(self.dim, self.params), 0, self.params)
        for seqs, vectors, last in slot_chunks(job.rows, job.part, 0, job.cancel):
            if len(seqs):
                graph.index.add(seqs.astype(np.uint64), vectors, threads=self.params.build_threads)
            graph.covered = last
        if job.cancel.is_set():
            return
        job.result, job.how = graph, "built"
        if job.file is not None and self.params.save and not dead_in(job.rows, job.part, graph):
            save_graph(graph, job.file, job.key)
            graph.saved = job.file

    @staticmethod
    def _extend(job: Job, graph: AnnGraph) -> None:
        """Add what was written since ``graph.covered``, a few vectors per lock."""
        part = job.part
        with job.rows.mutex:
            first = int(np.searchsorted(part.slot_seq[: part.slots], graph.covered, side="right"))
        for seqs, vectors, last in slot_chunks(job.rows, part, first, job.cancel):
            for start in range(0, max(1, len(seqs)), EXTEND_BATCH):
                stop = start + EXTEND_BATCH
                at = last if stop >= len(seqs) else int(seqs[stop - 1])
                graph.add(seqs[start:stop], vectors[start:stop], at)
        if not job.how:
            job.how = "extended"
