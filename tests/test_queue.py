from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from helpers import connect_raw

from hlmem.config import StageConfig, StoreConfig
from hlmem.errors import LeaseLost, StoreError
from hlmem.jobs import JobQueue, JobSpec, owner_is_dead, retry_decision
from hlmem.messages import JOB_PAYLOAD, FlushRequested, JobKind, JobStatus, SessionEnded
from hlmem.store import QUERIES, Store, migrations

pytestmark = pytest.mark.anyio


def spec(i: int, *, dedup: str | None = None) -> JobSpec:
    return JobSpec(
        kind="windower",
        payload=SessionEnded(namespace="default", session_id=f"会话-{i}"),
        dedup_key=dedup,
    )


@pytest.fixture
async def store(db_path: Path) -> AsyncIterator[Store]:
    s = await Store.open(db_path, StoreConfig())
    try:
        yield s
    finally:
        await s.close()


def rows(db_path: Path) -> list[tuple[int, str, int, str | None]]:
    conn = connect_raw(db_path)
    try:
        return conn.execute(
            "SELECT id, status, attempts, last_error FROM jobs ORDER BY id"
        ).fetchall()
    finally:
        conn.close()


async def enqueue(store: Store, queue: JobQueue, specs: list[JobSpec]) -> None:
    async with store.transaction() as tx:
        await queue.enqueue(tx, specs)


async def test_claim_leases_oldest_first_and_counts_attempts(store: Store, db_path: Path) -> None:
    queue = JobQueue(store, lease_s=30)
    await enqueue(store, queue, [spec(i) for i in range(5)])
    jobs = await queue.claim("windower", 3)
    assert [j.id for j in jobs] == [1, 2, 3]
    assert all(j.attempts == 1 for j in jobs)
    assert jobs[0].payload == SessionEnded(namespace="default", session_id="会话-0")
    assert [r[1] for r in rows(db_path)] == ["doing"] * 3 + ["todo"] * 2
    assert await queue.claim("extractor", 10) == []  # other kinds are not touched
    async with store.transaction() as tx:
        await queue.complete(tx, jobs)
    assert [r[1] for r in rows(db_path)] == ["done"] * 3 + ["todo"] * 2
    assert await queue.backlog() == 2


async def test_complete_refuses_jobs_owned_by_another_worker(store: Store, db_path: Path) -> None:
    first = JobQueue(store, lease_s=0.01)
    await enqueue(store, first, [spec(1)])
    jobs = await first.claim("windower", 1)
    await anyio.sleep(0.02)  # the lease expires
    second = JobQueue(store, lease_s=30)
    assert await second.recover() == 1
    assert [j.id for j in await second.claim("windower", 1)] == [jobs[0].id]
    with pytest.raises(LeaseLost):
        async with store.transaction() as tx:
            await first.complete(tx, jobs)
    assert rows(db_path)[0][1] == "doing"  # still the second worker's


async def test_retry_then_fail_keeps_the_reason(store: Store, db_path: Path) -> None:
    queue = JobQueue(store, lease_s=30)
    await enqueue(store, queue, [spec(1)])
    [job] = await queue.claim("windower", 1)
    await queue.retry(job, "Boom: 上游超时", time.time() + 60)
    assert rows(db_path)[0][1:] == ("todo", 1, "Boom: 上游超时")
    assert await queue.claim("windower", 1) == []  # run_after is in the future
    [job] = [j for j in [job]]
    async with store.transaction() as tx:
        await tx.execute("retry_job", (0, "x", None, 0, job.id, "nobody"))  # not ours: no change
    assert rows(db_path)[0][1] == "todo"


async def test_failed_and_parked_jobs_are_redriven(store: Store, db_path: Path) -> None:
    queue = JobQueue(store, lease_s=30)
    await enqueue(store, queue, [spec(1), spec(2)])
    a, b = await queue.claim("windower", 2)
    await queue.end(a, JobStatus.FAILED, "Permanent: bad")
    await queue.end(b, JobStatus.PARKED, "Parkable: budget")
    assert [r[1] for r in rows(db_path)] == ["failed", "parked"]
    assert await queue.backlog() == 0
    assert await queue.retry_ended() == 2
    assert [(r[1], r[2]) for r in rows(db_path)] == [("todo", 0), ("todo", 0)]
    assert [j.id for j in await queue.claim("windower", 5)] == [1, 2]


async def test_release_does_not_count_an_attempt(store: Store, db_path: Path) -> None:
    queue = JobQueue(store, lease_s=30)
    await enqueue(store, queue, [spec(1)])
    jobs = await queue.claim("windower", 1)
    await queue.release(jobs)
    assert rows(db_path)[0][1:3] == ("todo", 0)


@pytest.mark.parametrize("name", ["complete_jobs", "release_jobs"])
async def test_finishing_a_batch_reads_its_own_jobs_only(
    store: Store, db_path: Path, name: str
) -> None:
    """A process holds hundreds of leased jobs at a burst (every stage's batches); completing
    or releasing a few of them looks them up by id, not by walking everything it holds."""
    queue = JobQueue(store, lease_s=30)
    await enqueue(store, queue, [spec(i) for i in range(300)])
    held = await queue.claim("windower", 300)
    conn = connect_raw(db_path)
    try:
        plan = conn.execute(f"EXPLAIN QUERY PLAN {QUERIES[name]}", (0.0, "[1]", queue.owner))
        details = " | ".join(str(r[3]) for r in plan)
    finally:
        conn.close()
    assert "INTEGER PRIMARY KEY" in details and "jobs_doing" not in details, details
    # and the statements still do their work on just those jobs
    async with store.transaction() as tx:
        await queue.complete(tx, held[:2])
    await queue.release(held[2:4])
    statuses = [r[1] for r in rows(db_path)]
    assert statuses[:4] == ["done", "done", "todo", "todo"]
    assert statuses[4:] == ["doing"] * 296


async def test_recover_returns_dead_owners_jobs_at_once(store: Store, db_path: Path) -> None:
    dead = JobQueue(store, lease_s=3600)
    await enqueue(store, dead, [spec(1), spec(2)])
    await dead.claim("windower", 2)
    live = JobQueue(store, lease_s=3600)
    assert await live.recover() == 0  # the owner is alive: its long lease stands
    dead.retire()
    assert owner_is_dead(dead.owner)
    assert not owner_is_dead(live.owner)
    assert await live.recover() == 2
    assert [r[1] for r in rows(db_path)] == ["todo", "todo"]


async def test_owner_on_another_host_waits_for_its_lease() -> None:
    assert not owner_is_dead("some-other-host:1:abcd")
    assert owner_is_dead.__doc__


async def test_dedup_key_allows_one_live_job(store: Store, db_path: Path) -> None:
    queue = JobQueue(store, lease_s=30)
    await enqueue(store, queue, [spec(1, dedup="extract:w1"), spec(2, dedup="extract:w1")])
    assert len(rows(db_path)) == 1
    jobs = await queue.claim("windower", 1)
    await enqueue(store, queue, [spec(3, dedup="extract:w1")])  # still live (doing)
    assert len(rows(db_path)) == 1
    async with store.transaction() as tx:
        await queue.complete(tx, jobs)
    await enqueue(store, queue, [spec(4, dedup="extract:w1")])  # done: a new one may exist
    assert len(rows(db_path)) == 2


async def test_undecodable_payload_fails_its_job(store: Store, db_path: Path) -> None:
    queue = JobQueue(store, lease_s=30)
    async with store.transaction() as tx:
        await tx.execute(
            "insert_job", ("windower", '{"kind": "nonsense"}', 1, 0, 0, None, None, 0, 0)
        )
        await queue.enqueue(tx, [spec(1)])
    jobs = await queue.claim("windower", 10)
    assert [j.id for j in jobs] == [2]
    status, error = rows(db_path)[0][1], rows(db_path)[0][3]
    assert status == "failed"
    assert error is not None and "invalid payload" in error


def test_retry_backoff_grows_and_stops() -> None:
    cfg = StageConfig(max_attempts=4, retry_base_s=1.0, retry_max_s=3.0)
    now = 1000.0
    delays = []
    for attempts in (1, 2, 3):
        decision = retry_decision(cfg, attempts, now)
        assert decision is not None
        delays.append(decision.run_after - now)
    assert 0.5 <= delays[0] <= 1.0
    assert 1.0 <= delays[1] <= 2.0
    assert 1.5 <= delays[2] <= 3.0  # capped at retry_max_s
    assert retry_decision(cfg, 4, now) is None


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


async def test_a_file_made_before_job_kinds_keeps_its_jobs(db_path: Path) -> None:
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
        queue = JobQueue(store, lease_s=30)
        [job] = await queue.claim(JobKind.WINDOWER, 5)
        assert (job.id, job.kind, job.payload) == (
            7,
            JobKind.WINDOWER,
            JOB_PAYLOAD.validate_json(payload),
        )
    finally:
        await store.close()
