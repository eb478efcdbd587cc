"""The durable job queue on a real SQLite file: claims, leases, completion, retries, kinds.

Every queue runs on a :class:`~hlmem.clock.ManualClock`: a lease expires because the test moves
the clock past it, never because the test waits.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from helpers import connect_raw

from hlmem.clock import ManualClock
from hlmem.config import StageConfig, StoreConfig
from hlmem.errors import LeaseLost, StoreError
from hlmem.jobs import Backoff, JobQueue, JobSpec, RetryDecision, RetryPolicy, owner_is_dead
from hlmem.messages import JOB_PAYLOAD, FlushRequested, Job, JobKind, JobStatus, SessionEnded
from hlmem.store import QUERIES, Store, migrations

pytestmark = pytest.mark.anyio


W = JobKind.WINDOWER


def spec(i: int, *, dedup: str | None = None) -> JobSpec:
    return JobSpec(
        kind=W,
        payload=SessionEnded(namespace="default", session_id=f"会话-{i}"),
        dedup_key=dedup,
    )


def rows(db_path: Path) -> list[tuple[int, str, int, str | None]]:
    conn = connect_raw(db_path)
    try:
        found = conn.execute("SELECT id, status, attempts, last_error FROM jobs ORDER BY id")
        return [(int(r[0]), str(r[1]), int(r[2]), r[3]) for r in found]
    finally:
        conn.close()


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


def queue_on(store: Store, clock: ManualClock, lease_s: float = 30) -> JobQueue:
    return JobQueue(store, lease_s=lease_s, clock=clock)


async def enqueue(store: Store, queue: JobQueue, specs: list[JobSpec]) -> None:
    async with store.transaction() as tx:
        await queue.enqueue(tx, specs)


async def complete(queue: JobQueue, jobs: list[Job]) -> None:
    """Complete ``jobs`` the way the stage runner does: on the writer thread, in one
    transaction (with the stage's writes and next jobs)."""
    await queue.store.run_in_transaction(lambda tx: queue.complete_sync(tx, jobs))


async def test_claim_leases_oldest_first_and_counts_attempts(
    store: Store, db_path: Path, clock: ManualClock
) -> None:
    queue = queue_on(store, clock)
    await enqueue(store, queue, [spec(i) for i in range(5)])
    jobs = await queue.claim(W, 3)
    assert [j.id for j in jobs] == [1, 2, 3]
    assert all(j.attempts == 1 for j in jobs)
    assert jobs[0].payload == SessionEnded(namespace="default", session_id="会话-0")
    assert [r[1] for r in rows(db_path)] == ["doing"] * 3 + ["todo"] * 2
    assert await queue.claim(JobKind.EXTRACTOR, 10) == []  # other kinds are not touched
    await complete(queue, jobs)
    assert [r[1] for r in rows(db_path)] == ["done"] * 3 + ["todo"] * 2
    assert await queue.backlog() == 2


async def test_an_expired_lease_is_recovered_and_its_old_owner_cannot_complete(
    store: Store, db_path: Path, clock: ManualClock
) -> None:
    first = queue_on(store, clock, lease_s=10)
    await enqueue(store, first, [spec(1)])
    jobs = await first.claim(W, 1)
    second = queue_on(store, clock)
    clock.advance(10)
    assert await second.recover() == 0  # the lease still runs: the job stays the first's
    clock.advance(0.01)  # and now it has run out
    assert await second.recover() == 1
    assert [j.id for j in await second.claim(W, 1)] == [jobs[0].id]
    with pytest.raises(LeaseLost):
        await complete(first, jobs)
    assert rows(db_path)[0][1] == "doing"  # still the second worker's


async def test_a_renewed_lease_outlives_its_first_term(
    store: Store, db_path: Path, clock: ManualClock
) -> None:
    queue = queue_on(store, clock, lease_s=10)
    other = queue_on(store, clock)
    await enqueue(store, queue, [spec(1)])
    jobs = await queue.claim(W, 1)
    clock.advance(8)
    await queue.renew()
    clock.advance(8)  # 16 s after the claim, 8 s after the renewal
    assert await other.recover() == 0
    await complete(queue, jobs)
    assert rows(db_path)[0][1] == "done"


async def test_retry_then_fail_keeps_the_reason(
    store: Store, db_path: Path, clock: ManualClock
) -> None:
    queue = queue_on(store, clock)
    await enqueue(store, queue, [spec(1)])
    [job] = await queue.claim(W, 1)
    await queue.retry(job, "Boom: 上游超时", clock.wall() + 60)
    assert rows(db_path)[0][1:] == ("todo", 1, "Boom: 上游超时")
    assert await queue.claim(W, 1) == []  # run_after is in the future
    clock.advance(60)
    assert [j.attempts for j in await queue.claim(W, 1)] == [2]
    await queue.release([job])
    [job] = [j for j in [job]]
    async with store.transaction() as tx:
        await tx.execute("retry_job", (0, "x", None, 0, job.id, "nobody"))  # not ours: no change
    assert rows(db_path)[0][1] == "todo"


async def test_failed_and_parked_jobs_are_redriven(
    store: Store, db_path: Path, clock: ManualClock
) -> None:
    queue = queue_on(store, clock)
    await enqueue(store, queue, [spec(1), spec(2)])
    a, b = await queue.claim(W, 2)
    await queue.end(a, JobStatus.FAILED, "Permanent: bad")
    await queue.end(b, JobStatus.PARKED, "Parkable: budget")
    assert [r[1] for r in rows(db_path)] == ["failed", "parked"]
    assert await queue.backlog() == 0
    assert await queue.retry_ended() == 2
    assert [(r[1], r[2]) for r in rows(db_path)] == [("todo", 0), ("todo", 0)]
    assert [j.id for j in await queue.claim(W, 5)] == [1, 2]


async def test_release_does_not_count_an_attempt(
    store: Store, db_path: Path, clock: ManualClock
) -> None:
    queue = queue_on(store, clock)
    await enqueue(store, queue, [spec(1)])
    jobs = await queue.claim(W, 1)
    await queue.release(jobs)
    assert rows(db_path)[0][1:3] == ("todo", 0)


@pytest.mark.parametrize("name", ["complete_jobs", "release_jobs"])
async def test_finishing_a_batch_reads_its_own_jobs_only(
    store: Store, db_path: Path, name: str, clock: ManualClock
) -> None:
    """A process holds hundreds of leased jobs at a burst (every stage's batches); completing
    or releasing a few of them looks them up by id, not by walking everything it holds."""
    queue = queue_on(store, clock)
    await enqueue(store, queue, [spec(i) for i in range(300)])
    held = await queue.claim(W, 300)
    conn = connect_raw(db_path)
    try:
        plan = conn.execute(f"EXPLAIN QUERY PLAN {QUERIES[name]}", (0.0, "[1]", queue.owner))
        details = " | ".join(str(r[3]) for r in plan)
    finally:
        conn.close()
    assert "INTEGER PRIMARY KEY" in details and "jobs_doing" not in details, details
    # and the statements still do their work on just those jobs
    await complete(queue, held[:2])
    await queue.release(held[2:4])
    statuses = [r[1] for r in rows(db_path)]
    assert statuses[:4] == ["done", "done", "todo", "todo"]
    assert statuses[4:] == ["doing"] * 296


async def test_recover_returns_dead_owners_jobs_at_once(
    store: Store, db_path: Path, clock: ManualClock
) -> None:
    dead = queue_on(store, clock, 3600)
    await enqueue(store, dead, [spec(1), spec(2)])
    await dead.claim(W, 2)
    live = queue_on(store, clock, 3600)
    assert await live.recover() == 0  # the owner is alive: its long lease stands
    dead.retire()
    assert owner_is_dead(dead.owner)
    assert not owner_is_dead(live.owner)
    assert await live.recover() == 2
    assert [r[1] for r in rows(db_path)] == ["todo", "todo"]


async def test_owner_on_another_host_waits_for_its_lease() -> None:
    assert not owner_is_dead("some-other-host:1:abcd")
    assert owner_is_dead.__doc__


async def test_dedup_key_allows_one_live_job(
    store: Store, db_path: Path, clock: ManualClock
) -> None:
    queue = queue_on(store, clock)
    await enqueue(store, queue, [spec(1, dedup="extract:w1"), spec(2, dedup="extract:w1")])
    assert len(rows(db_path)) == 1
    jobs = await queue.claim(W, 1)
    await enqueue(store, queue, [spec(3, dedup="extract:w1")])  # still live (doing)
    assert len(rows(db_path)) == 1
    await complete(queue, jobs)
    await enqueue(store, queue, [spec(4, dedup="extract:w1")])  # done: a new one may exist
    assert len(rows(db_path)) == 2


async def test_undecodable_payload_fails_its_job(
    store: Store, db_path: Path, clock: ManualClock
) -> None:
    queue = queue_on(store, clock)
    async with store.transaction() as tx:
        await tx.execute(
            "insert_job", ("windower", '{"kind": "nonsense"}', 1, 0, 0, None, None, 0, 0)
        )
        await queue.enqueue(tx, [spec(1)])
    jobs = await queue.claim(W, 10)
    assert [j.id for j in jobs] == [2]
    status, error = rows(db_path)[0][1], rows(db_path)[0][3]
    assert status == "failed"
    assert error is not None and "invalid payload" in error


class Pinned(random.Random):
    """A ``random.Random`` whose ``random()`` is always ``value``: the jitter's extremes."""

    def __init__(self, value: float) -> None:
        super().__init__()
        self.value = value

    def random(self) -> float:
        return self.value


def test_retry_backoff_grows_and_stops() -> None:
    cfg = StageConfig(max_attempts=4, retry_base_s=1.0, retry_max_s=3.0)
    now = 1000.0
    for jitter, waits in ((0.0, [0.5, 1.0, 1.5]), (1.0, [1.0, 2.0, 3.0])):
        policy = RetryPolicy.of(cfg, Pinned(jitter))
        decisions = [policy.decide(attempts, now) for attempts in (1, 2, 3, 4)]
        # half the ceiling at the least, all of it at the most; capped at retry_max_s
        assert decisions == [RetryDecision(now + w) for w in waits] + [None]


def test_a_seeded_rng_gives_the_same_waits_to_jobs_and_to_model_calls() -> None:
    """One formula for both: the n-th retry of a model call waits what a job waits after its
    (n+1)-th attempt, given the same random draws."""
    jobs = RetryPolicy(max_attempts=9, backoff=Backoff(0.2, 5.0, random.Random(21)))
    calls = Backoff(0.2, 5.0, random.Random(21))
    job_waits = [jobs.decide(attempts, 0.0) for attempts in range(1, 9)]
    call_waits = [calls.delay_s(n) for n in range(8)]
    assert [d.run_after if d else None for d in job_waits] == call_waits
    for n, wait in enumerate(call_waits):  # each within its jittered band
        assert min(5.0, 0.2 * 2**n) / 2 <= wait <= min(5.0, 0.2 * 2**n)
    assert len(set(call_waits)) == len(call_waits)  # and jittered: no two alike


# --- job kinds: one of the stages, in the code and in the table ------------------------------


@pytest.mark.parametrize("kind", ["admision", "Admission", "probe", ""])
def test_a_job_of_no_stage_is_refused_when_it_is_made(kind: str) -> None:
    """A misspelt kind would be a job no stage claims, and drain would wait out its timeout."""
    with pytest.raises(ValueError, match=f"unknown job kind {kind!r}: no stage claims it"):
        JobSpec(kind, FlushRequested(namespace="用户"))  # type: ignore[arg-type]


def test_a_job_kind_given_as_text_becomes_the_stage() -> None:
    made = JobSpec("admission", FlushRequested())  # type: ignore[arg-type]
    assert made.kind is JobKind.ADMISSION
    assert made.row(now=1.0)[0] == "admission"


async def test_the_job_table_refuses_a_kind_no_stage_claims(store: Store, db_path: Path) -> None:
    payload = FlushRequested(namespace="default").model_dump_json()
    for kind in JobKind:  # every stage's kind is allowed ...
        async with store.transaction() as tx:
            await tx.execute("insert_job", (kind, payload, 1, 0, 0, None, None, 0, 0))
    with pytest.raises(StoreError, match="CHECK constraint failed: kind IN"):
        async with store.transaction() as tx:  # ... and nothing else: the write is refused
            await tx.execute("insert_job", ("admision", payload, 1, 0, 0, None, None, 0, 0))
    conn = connect_raw(db_path)
    try:
        kinds = [r[0] for r in conn.execute("SELECT kind FROM jobs ORDER BY id")]
    finally:
        conn.close()
    assert kinds == [k.value for k in JobKind]


async def test_a_file_made_before_job_kinds_keeps_its_jobs(
    db_path: Path, clock: ManualClock
) -> None:
    """A file at migration 0009: 0010 rebuilds the job table with every row, id and column, and
    from then on refuses an unknown kind; the queue claims the kept jobs as before."""
    conn = connect_raw(db_path)
    conn.execute(
        "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL,"
        " applied_at TEXT NOT NULL)"
    )
    for version, name, script in migrations():
        if version < 10:
            conn.executescript(script)
            conn.execute("INSERT INTO schema_migrations VALUES (?, ?, 'then')", (version, name))
    payload = SessionEnded(namespace="default", session_id="会话-旧").model_dump_json()
    conn.executemany(
        "INSERT INTO jobs (id, kind, status, payload, size, attempts, dedup_key, last_error,"
        " detail, created_at, updated_at) VALUES (?, ?, ?, ?, 2, ?, ?, ?, ?, 5, 6)",
        [
            (7, "windower", "todo", payload, 0, "w:1", None, None),
            (9, "extractor", "failed", payload, 3, None, "Boom: 上游超时", "raw answer"),
            (12, "maintenance", "done", payload, 1, None, None, None),
        ],
    )
    before = [tuple(r) for r in conn.execute("SELECT * FROM jobs ORDER BY id")]
    conn.close()

    store = await Store.open(db_path, StoreConfig())
    try:
        assert await store.applied_migrations() == [v for v, _, _ in migrations()]
        conn = connect_raw(db_path)
        try:
            assert [tuple(r) for r in conn.execute("SELECT * FROM jobs ORDER BY id")] == before
        finally:
            conn.close()
        with pytest.raises(StoreError, match="CHECK constraint failed: kind"):
            async with store.transaction() as tx:
                await tx.execute("insert_job", ("dedupe", payload, 1, 0, 0, None, None, 0, 0))
        queue = queue_on(store, clock)
        [job] = await queue.claim(JobKind.WINDOWER, 5)
        assert (job.id, job.kind, job.payload) == (
            7,
            JobKind.WINDOWER,
            JOB_PAYLOAD.validate_json(payload),
        )
    finally:
        await store.close()
