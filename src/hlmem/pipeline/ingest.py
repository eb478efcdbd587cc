"""Event ingestion with group commit and backpressure.

``EventWriter.submit`` validates events, then hands them to one committer task through a
bounded queue. The committer takes everything waiting (up to ``group_commit_max_rows``) and
writes it in one transaction: the events, their sessions and one windower job per new event.
Only after that commit does each submitter's future resolve, so an acknowledged event is
durable (invariant 1). Events whose id is already stored are no-ops that return the stored id.
An event a forget's tombstone drops (trigger ``events_drop_forgotten``) is acknowledged too, so
that a sender replaying after a crash never fails, and reported as blocked, with the forget
that stopped it and when: the insert's row count shows that the trigger dropped rows, at no
cost when it dropped none; then one read in the same transaction says which and why.

Backpressure: when the durable backlog (todo + doing jobs) reaches
``backlog_high_water_jobs``, submitters wait until it falls to ``backlog_low_water_jobs``; the
pending queue is bounded too, so memory stays flat however far producers run ahead.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio
from anyio.abc import TaskStatus
from pydantic import ValidationError

from hlmem.clock import Clock, iso, wall
from hlmem.config import IngestConfig
from hlmem.errors import ClosedError, ContentTooLarge, InputError
from hlmem.jobs import JobQueue
from hlmem.lang import new_id
from hlmem.messages import DEFAULT_ORIGIN, EventIn, dumps_metadata
from hlmem.pipeline.group_commit import WINDOWER, EventRow, Outcome, write_group

if TYPE_CHECKING:
    from hlmem.pipeline.writer import WriterProcess

log = logging.getLogger(__name__)


@dataclass
class _Submission:
    rows: list[EventRow]
    future: asyncio.Future[list[Outcome]]


@dataclass
class _Backlog:
    high: int
    low: int
    count: int = 0
    blocked: bool = False
    checked: float = 0.0
    lock: anyio.Lock = field(default_factory=anyio.Lock)


class EventWriter:
    """The one path by which events enter the store."""

    def __init__(self, queue: JobQueue, cfg: IngestConfig, clock: Clock) -> None:
        self.queue = queue
        self.store = queue.store
        self.cfg = cfg
        self.clock = clock
        self._pending: asyncio.Queue[_Submission | None] = asyncio.Queue(
            maxsize=cfg.pending_max_submissions
        )
        self._backlog = _Backlog(cfg.backlog_high_water_jobs, cfg.backlog_low_water_jobs)
        self._closed = False
        self.committed_batches = 0
        # --- ingest.writer = "process": group commits run in a writer child process --------
        self.writer_process: WriterProcess | None = None
        if cfg.writer == "process":
            # imported here: ``python -m hlmem.pipeline.writer`` must not find itself imported
            # by the package before it runs
            from hlmem.pipeline.writer import WriterProcess

            self.writer_process = WriterProcess(
                self.store.path, self.store.cfg, self.store.caps.driver
            )
        # --- end ingest.writer

    # --- producer side ------------------------------------------------------------------------

    def prepare(self, event: EventIn, *, stamp: bool = True) -> EventRow:
        """Validate limits and build the row; derive the defaults the caller left out.

        ``stamp=False`` (the ingest paths, per event) leaves a missing event id and the
        timestamps empty: the group commit fills them in for the whole group at once (one
        clock read per group; ids made in the writer, off the event loop). With ``stamp=True``
        the row is complete, for a caller that needs its event id before the commit.

        :raises ContentTooLarge: content over ``max_content_chars``.
        :raises InputError: metadata too large or not JSON-serialisable.
        """
        if len(event.content) > self.cfg.max_content_chars:
            raise ContentTooLarge(len(event.content), self.cfg.max_content_chars)
        try:
            metadata = dumps_metadata(event.metadata)
            metadata_bytes = len(metadata.encode("utf-8"))  # lone surrogates fail here
        except (TypeError, ValueError) as exc:
            raise InputError(f"metadata is not JSON-serialisable: {exc}") from exc
        if metadata_bytes > self.cfg.max_metadata_bytes:
            raise InputError(f"metadata is over {self.cfg.max_metadata_bytes} bytes")
        recorded = iso(self.clock.now()) if stamp else ""
        return (
            event.event_id or (new_id("ev") if stamp else ""),
            event.namespace or self.cfg.default_namespace,
            event.session_id,
            event.role.value,
            event.content,
            "",  # content_hash: computed by the writer, off the event loop, for new rows only
            recorded if event.occurred_at is None else iso(event.occurred_at),
            recorded,
            (event.origin_class or DEFAULT_ORIGIN[event.role]).value,
            event.session_kind.value,
            metadata,
        )

    async def submit(self, rows: list[EventRow]) -> list[Outcome]:
        """Commit rows (group commit); return (event id, was_duplicate, blocked) per row, in
        order: ``blocked`` is ``None``, or (tombstone kind, its time) of the forget that
        dropped the event (nothing stored).

        :raises ClosedError: the writer is stopping.
        """
        if self._closed:
            raise ClosedError("memory is closed")
        if not rows:
            return []
        await self._wait_for_room()
        if self._closed:  # stopped while we waited: the committer would never take it
            raise ClosedError("memory is closed")
        future: asyncio.Future[list[Outcome]] = asyncio.get_running_loop().create_future()
        await self._pending.put(_Submission(rows, future))
        return await future

    async def _wait_for_room(self) -> None:
        b = self._backlog
        if not b.blocked and (b.count < b.high or wall() - b.checked < self.cfg.backlog_refresh_s):
            return
        async with b.lock:  # one waiter polls the count; the others queue on the lock
            await self._refresh_backlog()
            while b.blocked:
                await anyio.sleep(self.cfg.backlog_refresh_s)
                await self._refresh_backlog()

    async def _refresh_backlog(self) -> None:
        self._set_backlog(await self.queue.backlog_to_claims())

    def _set_backlog(self, count: int) -> None:
        b = self._backlog
        b.count = count
        b.checked = wall()
        if b.count >= b.high and not b.blocked:
            log.info("ingest paused", extra={"action": "backpressure_on", "backlog": b.count})
            b.blocked = True
        elif b.blocked and b.count <= b.low:
            log.info("ingest resumed", extra={"action": "backpressure_off", "backlog": b.count})
            b.blocked = False

    @property
    def backlog_blocked(self) -> bool:
        return self._backlog.blocked

    # --- committer side -----------------------------------------------------------------------

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Commit pending submissions in groups until ``stop`` and the queue is empty.

        With ``ingest.writer = "process"`` the writer child is started first (a start-up
        failure is raised here, before ``started``) and stopped once the last group is in.
        """
        if self.writer_process is None:
            await self._run(task_status)
            return
        await self.writer_process.start()
        try:
            await self._run(task_status)
        finally:
            await self.writer_process.aclose()

    async def _run(self, task_status: TaskStatus[None]) -> None:
        task_status.started()
        stopping = False
        while not stopping:
            first = await self._pending.get()
            if first is None:
                break
            group, n = [first], len(first.rows)
            while n < self.cfg.group_commit_max_rows and not self._pending.empty():
                nxt = self._pending.get_nowait()
                if nxt is None:
                    stopping = True
                    break
                group.append(nxt)
                n += len(nxt.rows)
            await self._commit_group(group)

    async def stop(self) -> None:
        """Refuse new submissions; the committer finishes what is pending, then returns."""
        self._closed = True
        await self._pending.put(None)

    def _backlog_due(self, rows: int) -> bool:
        """Whether this group commit must count the backlog: the count is older than
        ``backlog_refresh_s``, producers are held, or ``rows`` more could reach the high-water
        mark. Otherwise the group's new events are added to the last count instead, which can
        only overstate the backlog (consumers only shrink it), never let it pass unseen."""
        b = self._backlog
        stale = wall() - b.checked >= self.cfg.backlog_refresh_s
        return stale or b.blocked or b.count + rows >= b.high

    async def _commit_group(self, group: list[_Submission]) -> None:
        groups, now, recorded = [s.rows for s in group], wall(), iso(self.clock.now())
        count = self._backlog_due(sum(len(rows) for rows in groups))
        try:
            if self.writer_process is not None:  # ingest.writer = "process"
                results, backlog = await self.writer_process.commit(groups, now, recorded, count)
            else:
                results, backlog = await self.store.run_in_transaction(
                    partial(write_group, groups, now, recorded, count)
                )
        except Exception as exc:
            for sub in group:
                if not sub.future.done():
                    sub.future.set_exception(exc)
            log.exception("group commit failed", extra={"action": "group_commit_failed"})
            return
        self.queue.ring({WINDOWER})
        if backlog is None:
            self._backlog.count += sum(
                not (dup or why) for result in results for _, dup, why in result
            )
        else:
            self._set_backlog(backlog)
        for sub, result in zip(group, results, strict=True):
            if not sub.future.done():
                sub.future.set_result(result)
        self.committed_batches += 1


def coerce_event(item: EventIn | dict[str, Any]) -> EventIn:
    """Accept an :class:`EventIn` or a plain mapping (validated).

    :raises InputError: the mapping does not validate.
    """
    if isinstance(item, EventIn):
        return item
    try:
        return EventIn.model_validate(item)
    except ValidationError as exc:
        raise InputError(_short_validation(exc)) from exc


def _short_validation(exc: Any) -> str:
    parts = []
    for err in exc.errors()[:5]:
        where = ".".join(str(p) for p in err["loc"]) or "event"
        parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)
