"""The durable job queue on top of the store.

The job table is the truth; the in-memory queues in ``stages/base.py`` only carry claimed work.
A job moves todo -> doing (claimed with a lease and an owner) -> done | todo (retry, or deferred:
a refused call gives its attempt back) | failed | parked. Completing a job happens inside the
caller's transaction together with the job's outputs and the next jobs, so a crash leaves all
of it or none of it.

Owners are ``host:pid:token``. At start (and periodically) ``recover`` hands back the jobs of
owners that cannot be running any more: an expired lease, or an owner on this host whose process
is gone. Running owners renew their leases, so a long job is not stolen from a live worker.

Every time the queue writes (leases, ``run_after``, ``updated_at``) is its clock's ``wall()``:
other processes compare them. A test gives the queue a ``ManualClock`` and advances it past a
lease instead of waiting for one.
"""

from __future__ import annotations

import json
import logging
import os
import socket
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import anyio
from pydantic import ValidationError

from hlmem.clock import Clock
from hlmem.errors import BadJobPayload, LeaseLost
from hlmem.messages import JOB_PAYLOAD, Job, JobKind, JobPayload, JobStatus
from hlmem.store import Store, SyncTx, Tx

log = logging.getLogger(__name__)

_HOST = socket.gethostname()
_LIVE_TOKENS: set[str] = set()
_KINDS = tuple(k.value for k in JobKind)


@dataclass(frozen=True)
class JobSpec:
    """A job to enqueue: which stage consumes it, the message, and its idempotency key.

    :raises ValueError: ``kind`` names no stage (a job no stage would ever claim).
    """

    kind: JobKind
    payload: JobPayload
    dedup_key: str | None = None
    namespace: str | None = None
    size: int = 1
    priority: int = 0
    run_after: float = 0.0

    def __post_init__(self) -> None:
        if not isinstance(self.kind, JobKind):
            if self.kind not in _KINDS:
                raise ValueError(
                    f"unknown job kind {self.kind!r}: no stage claims it"
                    f" (kinds: {', '.join(_KINDS)})"
                )
            object.__setattr__(self, "kind", JobKind(self.kind))

    @cached_property
    def payload_json(self) -> str:
        """The payload as the job table stores it; a stage may read it before its transaction
        so that the writer thread does not serialise it."""
        return self.payload.model_dump_json()

    def row(self, now: float) -> tuple[Any, ...]:
        return (
            self.kind,
            self.payload_json,
            self.size,
            self.priority,
            self.run_after,
            self.dedup_key,
            self.namespace,
            now,
            now,
        )


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _ids(jobs: list[Job]) -> str:
    return json.dumps([j.id for j in jobs])


def new_owner() -> str:
    """A new owner ``host:pid:token`` (of jobs, of budget holds) that :func:`owner_is_dead`
    reports alive until :func:`retire_owner`."""
    token = os.urandom(4).hex()
    _LIVE_TOKENS.add(token)
    return f"{_HOST}:{os.getpid()}:{token}"


def retire_owner(owner: str) -> None:
    """Mark ``owner`` gone: what it still holds becomes recoverable at once."""
    _LIVE_TOKENS.discard(owner.rsplit(":", 1)[-1])


def owner_is_dead(owner: str) -> bool:
    """True when ``owner`` ran on this host and its process (or, in this process, its owning
    object) is gone; an owner on another host is never judged here (leases and TTLs cover it)."""
    host, _, rest = owner.partition(":")
    pid_text, _, token = rest.partition(":")
    if host != _HOST or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return token not in _LIVE_TOKENS
    return not _pid_alive(pid)


class JobQueue:
    """Enqueue, claim, complete, retry, park and recover jobs for one owner."""

    def __init__(self, store: Store, *, lease_s: float, clock: Clock) -> None:
        self.store = store
        self.lease_s = lease_s
        #: the time of the job table (``wall()``), and of in-process intervals around it
        self.clock = clock
        self.owner = new_owner()
        self._bells: dict[JobKind, anyio.Event] = {}

    def retire(self) -> None:
        """Mark this owner gone; its leftover jobs become recoverable at once."""
        retire_owner(self.owner)

    # --- doorbells: in-process wake-ups; other processes poll ---------------------------------

    def bell(self, kind: JobKind) -> anyio.Event:
        event = self._bells.get(kind)
        if event is None:
            event = self._bells[kind] = anyio.Event()
        return event

    def ring(self, kinds: set[JobKind]) -> None:
        for kind in kinds:
            event = self._bells.pop(kind, None)
            if event is not None:
                event.set()

    # --- writes -------------------------------------------------------------------------------

    async def enqueue(self, tx: Tx, specs: list[JobSpec]) -> None:
        """Insert jobs inside the caller's transaction; a live duplicate dedup_key is skipped."""
        if not specs:
            return
        now = self.clock.wall()
        await tx.executemany("insert_job", [s.row(now) for s in specs])
        self.ring({s.kind for s in specs})

    def enqueue_sync(self, tx: SyncTx, specs: list[JobSpec]) -> None:
        """:meth:`enqueue` on the writer thread (``Store.run_in_transaction``); the caller
        rings the doorbells once the transaction has committed."""
        if specs:
            now = self.clock.wall()
            tx.executemany("insert_job", [s.row(now) for s in specs])

    async def claim(self, kind: JobKind, limit: int) -> list[Job]:
        """Lease up to ``limit`` ready jobs of ``kind``, oldest first (one statement).

        :raises BadJobPayload: never; an undecodable payload fails its job instead.
        """
        now = self.clock.wall()
        params = {
            "owner": self.owner,
            "lease_until": now + self.lease_s,
            "now": now,
            "kind": kind,
            "limit": limit,
        }
        # One hop to the writer thread (not BEGIN, UPDATE, COMMIT as three).
        rows = await self.store.run_in_transaction(lambda tx: tx.fetchall("claim_jobs", params))
        jobs, bad = [], []
        for row in sorted(rows, key=lambda r: int(r["id"])):
            try:
                payload = JOB_PAYLOAD.validate_json(row["payload"])
            except ValidationError as exc:
                bad.append(BadJobPayload(row["id"], str(exc).splitlines()[0]))
                continue
            jobs.append(
                Job(id=row["id"], kind=row["kind"], payload=payload, attempts=row["attempts"])
            )
        if bad:
            async with self.store.transaction() as tx:
                for err in bad:
                    await tx.execute(
                        "end_job", (JobStatus.FAILED, str(err), None, now, err.job_id, self.owner)
                    )
        return jobs

    def complete_sync(self, tx: SyncTx, jobs: list[Job]) -> None:
        """Mark jobs done inside the caller's transaction, on the writer thread
        (``Store.run_in_transaction``, as the stage runner completes a batch with its outputs).

        :raises LeaseLost: a job is no longer ours (its lease expired and another worker has
            it); the caller's transaction must roll back so its outputs are not written twice.
        """
        now = self.clock.wall()
        changed = tx.execute("complete_jobs", (now, _ids(jobs), self.owner))
        if changed != len(jobs):
            raise LeaseLost([j.id for j in jobs])

    async def retry(
        self, job: Job, error: str, run_after: float, detail: str | None = None
    ) -> None:
        async with self.store.transaction() as tx:
            await tx.execute(
                "retry_job",
                (run_after, error[:4000], detail, self.clock.wall(), job.id, self.owner),
            )
        log.info(
            "job retry",
            extra={"action": "job_retry", "job_id": job.id, "kind": job.kind, "error": error[:200]},
        )

    async def defer(
        self, job: Job, error: str, run_after: float, detail: str | None = None
    ) -> None:
        """Back to todo until ``run_after`` without using an attempt: the provider (or its
        breaker) refused the call, which says nothing about the job."""
        async with self.store.transaction() as tx:
            await tx.execute(
                "defer_job",
                (run_after, error[:4000], detail, self.clock.wall(), job.id, self.owner),
            )
        log.info(
            "job deferred",
            extra={
                "action": "job_deferred",
                "job_id": job.id,
                "kind": job.kind,
                "error": error[:200],
            },
        )

    async def park_unattempted(self, job: Job, error: str, detail: str | None = None) -> None:
        """Park a job whose call was refused before it could try (a provider down for long):
        the refused attempt does not count."""
        async with self.store.transaction() as tx:
            await tx.execute(
                "park_job_unattempted",
                (error[:4000], detail, self.clock.wall(), job.id, self.owner),
            )
        log.warning(
            "job parked", extra={"action": "job_parked", "job_id": job.id, "kind": job.kind}
        )

    async def end(self, job: Job, status: JobStatus, error: str, detail: str | None = None) -> None:
        """Fail or park a job, keeping its reason (and ``detail``, e.g. a model's raw answer)."""
        async with self.store.transaction() as tx:
            await tx.execute(
                "end_job", (status, error[:4000], detail, self.clock.wall(), job.id, self.owner)
            )
        log.warning(
            "job %s",
            status,
            extra={"action": f"job_{status}", "job_id": job.id, "kind": job.kind},
        )

    async def release(self, jobs: list[Job]) -> None:
        """Hand unfinished jobs back (shutdown); the attempt does not count."""
        if not jobs:
            return
        with anyio.CancelScope(shield=True):
            async with self.store.transaction() as tx:
                await tx.execute("release_jobs", (self.clock.wall(), _ids(jobs), self.owner))

    async def renew(self) -> None:
        async with self.store.transaction() as tx:
            await tx.execute("renew_leases", (self.clock.wall() + self.lease_s, self.owner))

    async def recover(self) -> int:
        """Return expired leases and dead owners' jobs to todo; the number recovered."""
        now = self.clock.wall()
        async with self.store.transaction() as tx:
            count = await tx.execute("recover_expired_leases", (now, now))
            for row in await tx.fetchall("doing_owners"):
                owner = row["owner"]
                if owner != self.owner and owner_is_dead(owner):
                    count += await tx.execute("recover_owner", (now, owner))
        if count:
            log.info("jobs recovered", extra={"action": "jobs_recovered", "count": count})
        return count

    # --- reads and operator commands ----------------------------------------------------------

    async def backlog(self, kind: JobKind | None = None) -> int:
        """Items (events, windows) waiting or running, over all stages or one."""
        if kind is None:
            return int(await self.store.scalar("count_backlog"))
        return int(await self.store.scalar("count_backlog_kind", (kind,)))

    async def backlog_to_claims(self) -> int:
        """Items waiting or running on the way from events to claims: every stage but the
        embedder and maintenance (what ingestion's backpressure counts)."""
        return int(await self.store.scalar("count_backlog_to_claims"))

    async def retry_ended(self, *, kind: str | None = None, job_id: int | None = None) -> int:
        """Put failed and parked jobs back to todo with fresh attempts (``hlmem jobs retry``)."""
        async with self.store.transaction() as tx:
            count = await tx.execute(
                "retry_ended_jobs", {"now": self.clock.wall(), "kind": kind, "id": job_id}
            )
        if count:  # then ``kind`` is a stage's: the table holds no other
            self.ring({JobKind(kind)} if kind else set(self._bells))
        return count

    async def purge_done(self, *, older_than_s: float) -> int:
        async with self.store.transaction() as tx:
            return await tx.execute("purge_done_jobs", (self.clock.wall() - older_than_s,))
