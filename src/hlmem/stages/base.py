"""The Stage protocol and the StageRunner that drives every stage the same way.

A stage turns a batch of claimed jobs into idempotent writes and next jobs. It works in two
steps: ``prepare`` runs outside any transaction (reads, CPU work, model calls), ``apply`` runs
inside the one transaction that also completes the input jobs and enqueues the outputs. A stage
never claims jobs, opens transactions, retries, sleeps or logs lifecycle events: the runner does.

Runner shape: a feeder claims batches from the job table into a bounded ``asyncio.Queue`` (only
while it has room, and only while the downstream backlog is under its high-water mark), and N
workers take batches from it. A feeder whose buffer is full waits until a worker takes a batch
(an event, not a poll); the downstream backlog is re-read every ``DOWNSTREAM_CHECK_S`` of the
queue clock's monotonic time (:class:`DownstreamGate`). A failing batch is split so that one
poisoned job cannot hold back the others; a failing job is retried with backoff
(``hlmem.jobs.RetryPolicy``), then failed (or parked) with its reason.
A call the provider refused (``Deferred``: an open breaker, a 429) is not one of the job's
attempts: the job waits the time asked for and runs again (see :meth:`StageRunner._failed`).
Stopping: the feeder stops claiming and posts one sentinel per worker; workers finish what is
queued. If the pipeline cancels us after its grace period, every job we still hold is handed
back under a shielded scope, so a stop never loses work.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from abc import ABC, abstractmethod
from collections.abc import Sequence
from datetime import datetime
from typing import Any, ClassVar, Generic, Protocol, TypeVar

import anyio
from anyio.abc import TaskStatus

from hlmem.claims import Decision
from hlmem.clock import Clock
from hlmem.config import PipelineConfig, StageConfig
from hlmem.errors import (
    Deferred,
    LeaseLost,
    Parkable,
    Permanent,
    ProviderOutage,
    ProviderTimeout,
    ProviderUnavailable,
    Retryable,
    StoreError,
)
from hlmem.jobs import JobQueue, JobSpec, RetryPolicy
from hlmem.lang import Vectors
from hlmem.messages import ClaimDraft, Extraction, Job, JobKind, JobStatus
from hlmem.store import Store, SyncTx

log = logging.getLogger(__name__)

P = TypeVar("P")

#: how often a feeder re-reads its downstream backlog, in seconds
DOWNSTREAM_CHECK_S = 0.1


class CpuHelper(Protocol):
    """What the stages ask of the pipeline's CPU helper child (``hlmem.pipeline.Offloader``,
    which the pipeline passes in): pure CPU work on big batches, done in another process.

    Each method returns ``None`` when the helper cannot take the batch (none is ready, it
    failed): the stage then does the work itself. The ``min_*`` sizes say from which batch size
    on it is worth asking."""

    min_windows: int
    min_texts: int
    min_candidates: int

    async def extract(
        self, windows: Sequence[tuple[Any, ...]], texts: Sequence[str]
    ) -> Extraction | None:
        """The full-text body of each of ``texts`` and the built-in rules' drafts of each
        window (:func:`hlmem.messages.window_tuple`)."""

    async def embed(self, texts: Sequence[str], *, dim: int) -> Vectors | None:
        """The local embedder's ``(len(texts), dim)`` vectors of ``texts``."""

    async def gate(self, drafts: Sequence[ClaimDraft]) -> list[Decision] | None:
        """The admission gate's decision on each of ``drafts``."""

    def expect(self, texts: int) -> None:
        """``texts`` new texts are on their way: a burst may start the helper early."""


class Stage(ABC, Generic[P]):
    """One pipeline stage: consumes jobs of kind ``name``."""

    name: ClassVar[JobKind]
    #: the job kind this stage feeds, for downstream backpressure (None: a sink)
    downstream: ClassVar[JobKind | None] = None
    #: how often ``tick`` runs, in seconds (None: never)
    tick_interval_s: float | None = None

    @abstractmethod
    async def prepare(self, jobs: list[Job]) -> P:
        """Work done outside the transaction: reads, CPU work, model calls."""

    @abstractmethod
    def apply(self, tx: SyncTx, jobs: list[Job], prepared: P) -> list[JobSpec]:
        """Idempotent writes inside the job-completing transaction; return the next jobs.

        Runs on the writer thread, inside the transaction, in one hop with the jobs'
        completion and the next jobs' insert (blocking and short: reads and writes of this
        batch, no awaits, no model calls)."""

    def job_errors(self, prepared: P) -> dict[int, Exception]:
        """Jobs whose own work failed in ``prepare``, by job id: the runner retries, fails or
        parks each of them alone while the rest of the batch completes (so one bad model
        answer does not re-run its neighbours' calls). ``apply`` must skip them."""
        return {}

    def tick(self, tx: SyncTx, now: datetime) -> list[JobSpec]:
        """Periodic work inside a transaction on the writer thread (e.g. closing windows that
        aged out)."""
        return []


class DownstreamGate:
    """Whether the next stage's backlog (``kind``) is at its high-water mark.

    The count is a query, so it is re-read every ``DOWNSTREAM_CHECK_S`` of the queue clock's
    monotonic time, not for every batch claimed; and before that as soon as what this
    runner's batches handed on since the last count could have brought it to the mark. So
    the runner claims past the mark by at most the batches it has in flight, however fast it
    runs and however slowly the clock moves."""

    def __init__(self, queue: JobQueue, kind: JobKind | None, high_water: int) -> None:
        self.queue = queue
        self.kind = kind
        self.high_water = high_water
        self._checked: float | None = None
        self._full = False
        #: the backlog as last counted, and the jobs of ``kind`` handed on since
        self._counted = 0
        self._handed_on = 0

    def handed_on(self, jobs: int) -> None:
        """A batch of this runner wrote ``jobs`` jobs (their sizes) of the next stage."""
        self._handed_on += jobs

    async def full(self) -> bool:
        if self.kind is None:
            return False
        clock = self.queue.clock
        reached = not self._full and self._counted + self._handed_on >= self.high_water
        if (
            reached
            or self._checked is None
            or (clock.monotonic() - self._checked >= DOWNSTREAM_CHECK_S)
        ):
            self._handed_on = 0
            self._counted = await self.queue.backlog(self.kind)
            self._full = self._counted >= self.high_water
            self._checked = clock.monotonic()
        return self._full


class Buffer:
    """A runner's bounded queue of claimed batches (``None``: a worker's stop sentinel).

    The feeder claims only when a batch fits (a claimed job waiting for room would hold its
    lease for nothing), so it waits for room here: woken when a worker takes a batch."""

    def __init__(self, batches: int) -> None:
        self._queue: asyncio.Queue[list[Job] | None] = asyncio.Queue(maxsize=batches)
        self._room = anyio.Event()
        #: times the feeder was woken while it waited for room: one per batch taken at most
        self.room_wakeups = 0

    async def room(self) -> None:
        """Return once a batch fits."""
        while self._queue.full():
            if self._room.is_set():
                self._room = anyio.Event()
            await self._room.wait()
            self.room_wakeups += 1

    def put_nowait(self, batch: list[Job]) -> None:
        self._queue.put_nowait(batch)

    async def put(self, item: list[Job] | None) -> None:
        await self._queue.put(item)

    async def get(self) -> list[Job] | None:
        item = await self._queue.get()
        self._room.set()
        return item

    def take_all(self) -> list[Job]:
        """Every job still queued (the runner hands them back when it stops)."""
        jobs: list[Job] = []
        while not self._queue.empty():
            jobs.extend(self._queue.get_nowait() or [])
        return jobs


class StageRunner:
    """Feeds one stage from the job table and runs its workers.

    Retries wait as ``RetryPolicy.of(cfg, rng)`` says; ``rng`` is the jitter's randomness (a
    fresh ``random.Random`` when not given), and the queue's clock is the runner's time."""

    def __init__(
        self,
        stage: Stage[Any],
        queue: JobQueue,
        cfg: StageConfig,
        pipeline_cfg: PipelineConfig,
        clock: Clock,
        *,
        rng: random.Random | None = None,
    ) -> None:
        self.stage = stage
        self.queue = queue
        self.store: Store = queue.store
        self.cfg = cfg
        self.pipeline_cfg = pipeline_cfg
        #: the domain clock, for the stage's tick
        self.clock = clock
        self.retry = RetryPolicy.of(cfg, rng or random.Random())
        self.buffer = Buffer(cfg.buffer_batches)
        self.downstream = DownstreamGate(queue, stage.downstream, cfg.downstream_high_water_jobs)
        self._stopping = False
        self.finished = anyio.Event()
        self._stopped = anyio.Event()
        self.processed = 0

    def stop(self) -> None:
        """Stop claiming; queued batches are still processed."""
        self._stopping = True
        self._stopped.set()
        self.queue.ring({self.stage.name})

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        buffer = self.buffer
        extra = {"action": "stage_started", "stage": self.stage.name}
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._feed, buffer)
                for _ in range(self.cfg.workers):
                    tg.start_soon(self._work, buffer)
                if self.stage.tick_interval_s:
                    tg.start_soon(self._tick_loop)
                log.info("stage started", extra=extra)
                task_status.started()
        finally:
            await self.queue.release(buffer.take_all())
            self.finished.set()
            log.info("stage stopped", extra={"action": "stage_stopped", "stage": self.stage.name})

    async def _feed(self, buffer: Buffer) -> None:
        while not self._stopping:
            await buffer.room()
            if self._stopping:
                break
            bell = self.queue.bell(self.stage.name)
            try:
                jobs = (
                    []
                    if await self.downstream.full()
                    else await self.queue.claim(self.stage.name, self.cfg.batch_size)
                )
            except (Retryable, StoreError) as exc:
                # A busy or failing database must not stop the pipeline: wait and try again.
                log.warning(
                    "claim failed: %s",
                    exc,
                    extra={"action": "claim_failed", "stage": self.stage.name},
                )
                jobs = []
            if jobs:
                buffer.put_nowait(jobs)
                continue
            with anyio.move_on_after(self.pipeline_cfg.poll_interval_s):
                await bell.wait()
        for _ in range(self.cfg.workers):
            await buffer.put(None)

    async def _work(self, buffer: Buffer) -> None:
        while True:
            batch = await buffer.get()
            if batch is None:
                return
            try:
                await self._process(batch)
            except (Retryable, StoreError):
                # Even recording the failure failed (database busy or broken). Hand the jobs
                # back if we can; if not, their leases expire and recovery returns them.
                log.exception(
                    "job bookkeeping failed",
                    extra={"action": "batch_lost", "stage": self.stage.name},
                )
                with contextlib.suppress(Retryable, StoreError):
                    await self.queue.release(batch)
            except BaseException:
                await self.queue.release(batch)
                raise

    async def _process(self, jobs: list[Job]) -> None:
        try:
            await self._attempt(jobs)
        except Exception as exc:
            if len(jobs) == 1:
                await self._failed(jobs[0], exc)
                return
            # Isolate the poisoned job: the rest of the batch goes through one by one.
            log.debug(
                "batch failed, splitting",
                extra={"action": "batch_split", "stage": self.stage.name, "error": repr(exc)},
            )
            for job in jobs:
                try:
                    await self._attempt([job])
                except Exception as one_exc:
                    await self._failed(job, one_exc)

    async def _attempt(self, jobs: list[Job]) -> None:
        prepared = await self.stage.prepare(jobs)
        errors = self.stage.job_errors(prepared)
        ok = [j for j in jobs if j.id not in errors] if errors else jobs
        if ok:

            def write(tx: SyncTx) -> list[JobSpec]:
                outputs = self.stage.apply(tx, ok, prepared)
                # Completed first: a job may enqueue its own successor under its dedup key.
                self.queue.complete_sync(tx, ok)
                self.queue.enqueue_sync(tx, outputs)
                return outputs

            # One hop to the writer thread for the whole transaction: the writer lock is held
            # for the SQLite work only, never across event-loop scheduling.
            outputs = await self.store.run_in_transaction(write)
            self.queue.ring({spec.kind for spec in outputs})
            self.downstream.handed_on(
                sum(s.size for s in outputs if s.kind == self.stage.downstream)
            )
            self.processed += len(ok)
        for job in jobs:
            if job.id in errors:
                await self._failed(job, errors[job.id])

    async def _failed(self, job: Job, exc: Exception) -> None:
        """Park, defer, retry or fail ``job`` for ``exc``.

        Provider trouble never fails a job: a refusal (``Deferred``: an open breaker, a 429)
        waits without using an attempt, a provider down for ``gateway.outage_park_s`` parks
        it (``ProviderOutage``), and 5xx or timeouts that use up its attempts park it too. Only
        ``Permanent`` errors and failures of the job's own (an answer that stays unparseable
        through every attempt) end it as failed."""
        if isinstance(exc, LeaseLost):
            # Another worker holds the job now (our lease expired): its outcome is theirs to
            # write; our transaction rolled back, so nothing of this attempt was kept.
            log.warning(
                "lease lost",
                extra={"action": "lease_lost", "job_id": job.id, "stage": self.stage.name},
            )
            return
        error = f"{type(exc).__name__}: {exc}"
        # What explains the failure beyond its message (a model's raw answer) is kept apart.
        detail = getattr(exc, "raw", None) or None
        if isinstance(exc, ProviderOutage):
            await self.queue.park_unattempted(job, error, detail)
            return
        if isinstance(exc, Parkable):
            await self.queue.end(job, JobStatus.PARKED, error, detail)
            return
        now = self.queue.clock.wall()
        if isinstance(exc, Deferred):
            # At least the stage's base backoff: a 429 with "Retry-After: 0" must not spin.
            wait = max(exc.wait_s() or 0.0, self.cfg.retry_base_s)
            await self.queue.defer(job, error, now + wait, detail)
            return
        decision = None if isinstance(exc, Permanent) else self.retry.decide(job.attempts, now)
        if decision is not None:
            await self.queue.retry(job, error, decision.run_after, detail)
        elif isinstance(exc, ProviderUnavailable | ProviderTimeout):
            why = f"{job.attempts} attempts ended by provider errors: {error}"
            await self.queue.end(job, JobStatus.PARKED, f"{ProviderOutage.__name__}: {why}", detail)
        else:
            await self.queue.end(job, JobStatus.FAILED, error, detail)

    async def _tick_loop(self) -> None:
        interval = self.stage.tick_interval_s or 1.0
        while not self._stopping:
            try:
                self.queue.ring({s.kind for s in await self.store.run_in_transaction(self._tick)})
            except Exception:
                log.exception(
                    "tick failed", extra={"action": "tick_failed", "stage": self.stage.name}
                )
            with anyio.move_on_after(interval):
                await self._stopped.wait()

    def _tick(self, tx: SyncTx) -> list[JobSpec]:
        outputs = self.stage.tick(tx, self.clock.now())
        self.queue.enqueue_sync(tx, outputs)
        return outputs
