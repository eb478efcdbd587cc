"""The stage runner on a real SQLite file and a real queue, with only the clock manual.

A tiny stage holds each job until the test lets it go, so the runner's states (a full buffer, a
lease that runs out mid-job, a retry waiting for its time) are reached by events, and time moves
only when the test moves a :class:`~hlmem.clock.ManualClock`: no test waits through a lease, a
backoff or a re-read interval.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from helpers import rows, wait_until

from hlmem.clock import ManualClock
from hlmem.config import PipelineConfig, StageConfig
from hlmem.errors import StoreBusy
from hlmem.jobs import JobQueue, JobSpec
from hlmem.messages import FlushRequested, Job, JobKind
from hlmem.stages.base import DOWNSTREAM_CHECK_S, DownstreamGate, Stage, StageRunner
from hlmem.store import Store, SyncTx

pytestmark = pytest.mark.anyio

KIND = JobKind.EXTRACTOR
NEXT = JobKind.ADMISSION
#: the feeders here wake for their doorbell (or a batch taken), never for a poll
POLL = PipelineConfig(poll_interval_s=3600)


class Held(Stage[None]):
    """Each job waits in ``prepare`` until the test releases it; ``apply`` hands one job of
    ``NEXT`` per job on (what a lost lease must not let through twice)."""

    name = KIND
    downstream = NEXT

    def __init__(self, *, fail_first: int = 0) -> None:
        self.gates: defaultdict[int, anyio.Event] = defaultdict(anyio.Event)
        self.started: list[int] = []
        self.fail_first = fail_first

    async def prepare(self, jobs: list[Job]) -> None:
        for job in jobs:
            self.started.append(job.id)
            await self.gates[job.id].wait()
            if self.fail_first:
                self.fail_first -= 1
                raise StoreBusy("the database was busy (a transient failure)")

    def apply(self, tx: SyncTx, jobs: list[Job], prepared: None) -> list[JobSpec]:
        return [JobSpec(NEXT, FlushRequested(namespace=f"下一步-{j.id}")) for j in jobs]


class Pinned(random.Random):
    """A ``random.Random`` whose ``random()`` is always ``value``."""

    def __init__(self, value: float) -> None:
        super().__init__()
        self.value = value

    def random(self) -> float:
        return self.value


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def queue(store: Store, clock: ManualClock) -> JobQueue:
    return JobQueue(store, lease_s=30, clock=clock)


async def enqueue(queue: JobQueue, n: int, kind: JobKind = KIND) -> None:
    async with queue.store.transaction() as tx:
        await queue.enqueue(tx, [JobSpec(kind, FlushRequested(namespace="ns")) for _ in range(n)])


def states(db: Path, kind: JobKind = KIND) -> dict[str, int]:
    return dict(rows(db, "SELECT status, count(*) FROM jobs WHERE kind = ? GROUP BY 1", (kind,)))


async def running(runner: StageRunner, body: Callable[[], Any]) -> None:
    """Run ``runner`` around ``await body()``, then stop it and wait until it has stopped."""
    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            await tg.start(runner.run)
            await body()
            runner.stop()
            await runner.finished.wait()


def stage_cfg(**values: Any) -> StageConfig:
    return StageConfig(**{"workers": 1, "batch_size": 1, "buffer_batches": 1, **values})


async def test_a_full_buffer_waits_for_a_worker_to_take_a_batch_not_for_a_poll(
    queue: JobQueue, db_path: Path
) -> None:
    """One worker, room for one batch: the feeder claims the next job only when the worker
    takes the buffered one, and is woken for that (at most once per batch taken), never by a
    timer, however long the jobs take."""
    jobs = 5
    await enqueue(queue, jobs)
    stage = Held()
    runner = StageRunner(stage, queue, stage_cfg(), POLL, ManualClock())

    async def one_at_a_time() -> None:
        for job_id in range(1, jobs + 1):
            held = min(2, jobs - job_id + 1)
            await wait_until(lambda: job_id in stage.started)  # noqa: B023 - awaited here
            # the worker holds one job, the buffer the next: nothing more is claimed
            await wait_until(lambda: states(db_path).get("doing") == held)  # noqa: B023
            counts = {"done": job_id - 1, "doing": held, "todo": jobs - job_id + 1 - held}
            assert states(db_path) == {status: n for status, n in counts.items() if n}
            stage.gates[job_id].set()
        await wait_until(lambda: states(db_path) == {"done": jobs})

    await running(runner, one_at_a_time)
    assert runner.processed == jobs
    assert 1 <= runner.buffer.room_wakeups <= jobs


async def test_the_downstream_backlog_is_reread_on_monotonic_time(
    queue: JobQueue, clock: ManualClock, db_path: Path
) -> None:
    await enqueue(queue, 3, NEXT)
    gate = DownstreamGate(queue, NEXT, high_water=3)
    assert await gate.full()
    held = await queue.claim(NEXT, 3)
    await queue.store.run_in_transaction(lambda tx: queue.complete_sync(tx, held))
    assert await gate.full()  # the count is not re-read at once ...
    clock.set(clock.now().replace(year=2031))  # ... nor when the wall clock is stepped ...
    assert await gate.full()
    clock.advance(DOWNSTREAM_CHECK_S)  # ... but once its interval has passed
    assert not await gate.full()
    assert not await DownstreamGate(queue, None, high_water=1).full()  # a sink never waits


async def test_a_lost_lease_rolls_back_the_batch_through_the_runner(
    store: Store, queue: JobQueue, clock: ManualClock, db_path: Path
) -> None:
    """The lease runs out while the stage works and another worker takes the job: the runner's
    one transaction (the stage's writes, the completion, the next jobs) rolls back, and the
    job stays the other worker's, with nothing of this attempt written."""
    await enqueue(queue, 1)
    stage = Held()
    runner = StageRunner(stage, queue, stage_cfg(), POLL, ManualClock())
    other = JobQueue(store, lease_s=30, clock=clock)

    async def lose_the_lease() -> None:
        await wait_until(lambda: stage.started == [1])
        clock.advance(30.01)
        assert await other.recover() == 1
        assert [j.id for j in await other.claim(KIND, 1)] == [1]
        stage.gates[1].set()  # the runner's stop lets the worker finish this batch first

    await running(runner, lose_the_lease)
    assert runner.processed == 0
    assert rows(db_path, "SELECT status, owner, attempts FROM jobs WHERE kind = ?", (KIND,)) == [
        ("doing", other.owner, 2)
    ]
    assert states(db_path, NEXT) == {}  # the next job was not enqueued


async def test_a_retry_waits_its_backoff_on_the_queue_clock(
    queue: JobQueue, clock: ManualClock, db_path: Path
) -> None:
    """A transient failure: the job waits half its base backoff (the jitter pinned at its
    least), runs when the clock has moved that far, and is done."""
    await enqueue(queue, 1)
    stage = Held(fail_first=1)
    stage.gates[1].set()
    cfg = stage_cfg(retry_base_s=4.0, retry_max_s=60.0)
    runner = StageRunner(stage, queue, cfg, POLL, ManualClock(), rng=Pinned(0.0))
    failed_at = clock.wall()

    async def retried() -> None:
        retried = "SELECT run_after, last_error FROM jobs WHERE status = 'todo' AND attempts = 1"
        await wait_until(lambda: rows(db_path, retried))
        [(run_after, error)] = rows(db_path, retried)
        assert run_after == pytest.approx(failed_at + 2.0)
        assert error.startswith("StoreBusy")
        assert await queue.claim(KIND, 1) == []  # not before its time
        clock.advance(2.0)
        queue.ring({KIND})
        await wait_until(lambda: states(db_path) == {"done": 1})

    await running(runner, retried)
    assert stage.started == [1, 1]
    assert rows(db_path, "SELECT attempts FROM jobs WHERE kind = ?", (KIND,)) == [(2,)]
