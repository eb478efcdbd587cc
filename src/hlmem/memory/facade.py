"""The public async facade: ``async with hlmem.open(path) as mem``.

A :class:`Memory` owns the store, the job queue, the event writer (group commit) and, unless
``pipeline="external"``, the pipeline running as background tasks in the caller's event loop.
With ``pipeline="external"`` a separate ``hlmem worker`` process on the same file does the
processing, with identical results. Every method is non-blocking; ``add_event`` returns once
the event and its job are committed.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from contextlib import AsyncExitStack
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

import anyio
from anyio.abc import TaskGroup

from hlmem.claims import Blocked, ForgetResult
from hlmem.claims import blocked as forget_blocked
from hlmem.clock import Clock, SystemClock, wall
from hlmem.config import Config, load_config
from hlmem.errors import ClosedError, InputError
from hlmem.gateway import Gateway
from hlmem.index import index_after_migration
from hlmem.jobs import JobQueue, JobSpec
from hlmem.lang import Lexicon, load_lexicon
from hlmem.lifecycle import (
    ClaimExplanation,
    Correction,
    correction_draft,
    event_fields,
    explain_claim,
    load_target,
    submit,
)
from hlmem.memory import arguments
from hlmem.memory import reads as memory_reads
from hlmem.memory import writes as memory_writes
from hlmem.memory.reads import JobRow, Stats, Supersession
from hlmem.messages import (
    Claim,
    ClaimScope,
    Event,
    EventIn,
    FlushRequested,
    JobKind,
    MaintenanceReport,
    OriginClass,
    RecallMode,
    RecallResult,
    Role,
    SessionEnded,
    SessionKind,
)
from hlmem.pipeline import EventWriter, Pipeline, coerce_event
from hlmem.portable import BackupResult, ExportSummary, Importer, ImportSummary, export_sync
from hlmem.portable import backup as backup_file
from hlmem.recall import Recaller, Touches
from hlmem.stages.maintenance import Maintenance
from hlmem.store import Store

log = logging.getLogger(__name__)

PipelineMode = Literal["inline", "external"]

__all__ = ["JobRow", "Memory", "PipelineMode", "Stats", "Supersession", "open"]


def open(
    path: str | Path,
    *,
    config: Config | Mapping[str, Any] | None = None,
    clock: Clock | None = None,
    pipeline: PipelineMode = "inline",
    create: bool = True,
) -> Memory:
    """A memory on the SQLite file at ``path``; use it as ``async with``.

    ``config`` defaults to :func:`hlmem.config.load_config` with no file (defaults plus the
    ``HLMEM_*`` environment); a mapping shaped like the TOML file
    (``{"recall": {"budget_tokens": 800}}``) sets its values over those, validated as a file's.
    A new file is created unless ``create=False``: then only an existing hlmem database opens
    (:class:`~hlmem.errors.StoreError` otherwise, and no file is made).

    :raises ConfigError: a bad path, config, clock or pipeline (named); nothing is opened.
    """
    return Memory(
        path, config=config or load_config(), clock=clock, pipeline=pipeline, create=create
    )


async def open_store(path: str | Path, config: Config, *, create: bool = True) -> Store:
    """The store at ``path`` as :class:`Memory` opens it: migrated, and with the full-text rows
    of the items it held before the index existed (:func:`~hlmem.index.index_after_migration`).

    :raises StoreError: as :meth:`Store.open`; the file is closed again on any failure.
    """
    store = await Store.open(path, config.store, create=create)
    try:
        await index_after_migration(store, lexicon=load_lexicon(config.extractor.lexicon_paths))
    except BaseException:
        await store.close()
        raise
    return store


class Memory:
    def __init__(
        self,
        path: str | Path,
        *,
        config: Config | Mapping[str, Any],
        clock: Clock | None = None,
        pipeline: PipelineMode = "inline",
        create: bool = True,
    ) -> None:
        config = arguments.memory_options(path, config, clock, pipeline, create) or load_config()
        self.path = Path(path)
        self.create = create
        self.config = config
        self.clock = clock or SystemClock()
        self.mode = pipeline
        self._stack: AsyncExitStack | None = None
        self._store: Store | None = None
        self._queue: JobQueue | None = None
        self._writer: EventWriter | None = None
        self._pipeline: Pipeline | None = None
        self._lex: Lexicon | None = None
        self._recaller: Recaller | None = None
        self._gateway: Gateway | None = None
        self._tg: TaskGroup | None = None
        self._touches: Touches | None = None

    async def __aenter__(self) -> Memory:
        stack = AsyncExitStack()
        await stack.__aenter__()
        try:
            self._store = await open_store(self.path, self.config, create=self.create)
            stack.push_async_callback(self._store.close)
            # The machine's clock, whatever the domain clock: other processes share the table.
            self._queue = JobQueue(
                self._store, lease_s=self.config.pipeline.lease_s, clock=SystemClock()
            )
            stack.callback(self._queue.retire)
            gateway = None
            # The pipeline's stages call models only here (inline); recall's reranker, query
            # expansion and a provider's query embeddings do in every mode.
            rc = self.config.recall
            recall_calls = (
                bool(rc.rerank_provider or rc.expand_provider)
                or not self.config.embedder.in_process
            )
            if (self.mode == "inline" or recall_calls) and self.config.calls_models():
                # Entered before the task group, so it closes after the stages have stopped.
                gateway = await stack.enter_async_context(
                    Gateway.open(self.config, self._store, clock=self.clock)
                )
            self._gateway = gateway
            if self.mode == "inline":  # built first: a configuration error is raised as is
                self._pipeline = Pipeline(self._queue, self.config, self.clock, gateway)
            tg = await stack.enter_async_context(anyio.create_task_group())
            self._tg = tg
            self._touches = Touches(self._store, self.config.maintenance, self.clock)
            await tg.start(self._touches.run)
            self._writer = EventWriter(self._queue, self.config.ingest, self.clock)
            await tg.start(self._writer.run)
            if self._pipeline is not None:
                await tg.start(self._pipeline.run)
        except BaseException as exc:
            await stack.__aexit__(type(exc), exc, exc.__traceback__)
            raise
        self._stack = stack
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self) -> None:
        """Commit what is pending, stop the pipeline gracefully and close the store."""
        stack, self._stack = self._stack, None
        if stack is None:
            return
        try:
            if self._writer is not None:
                await self._writer.stop()
            if self._pipeline is not None:
                self._pipeline.stop()
            if self._touches is not None:
                await self._touches.stop()
        finally:
            # Cancelled meanwhile (a worker's forced stop), the rest still closes: the stages
            # hand back their jobs under shield, and the store closes.
            await stack.aclose()

    # --- internals ----------------------------------------------------------------------------

    @property
    def store(self) -> Store:
        if self._store is None or self._stack is None:
            raise ClosedError("memory is not open: use `async with hlmem.open(path) as mem`")
        return self._store

    @property
    def queue(self) -> JobQueue:
        self.store  # noqa: B018 - raises when closed
        assert self._queue is not None
        return self._queue

    @property
    def writer(self) -> EventWriter:
        self.store  # noqa: B018 - raises when closed
        assert self._writer is not None
        return self._writer

    # --- writes -------------------------------------------------------------------------------

    async def add_event(
        self,
        session_id: str,
        content: str,
        *,
        role: Role | str = Role.USER,
        namespace: str | None = None,
        event_id: str | None = None,
        occurred_at: datetime | None = None,
        origin_class: OriginClass | str | None = None,
        session_kind: SessionKind | str = SessionKind.INTERACTIVE,
        metadata: dict[str, Any] | None = None,
    ) -> str:
        """Store one event durably; return its id (the stored id if ``event_id`` existed).

        An event a forget stops is not stored and its id is returned all the same (a sender
        replaying after a crash never fails): :meth:`blocked` says which, when and why.

        :raises InputError: invalid fields (nothing is written).
        :raises ContentTooLarge: content over ``ingest.max_content_chars``.
        """
        # The validated event is not kept while the commit is awaited: what an in-flight
        # call holds survives young garbage collections into the oldest generation, and at
        # high rates that brings on full collections, which pause the event loop.
        row = self.writer.prepare(
            coerce_event(
                {
                    "session_id": session_id,
                    "content": content,
                    "role": role,
                    "namespace": namespace,
                    "event_id": event_id,
                    "occurred_at": occurred_at,
                    "origin_class": origin_class,
                    "session_kind": session_kind,
                    "metadata": metadata or {},
                }
            ),
            stamp=False,
        )
        return (await self.writer.submit([row]))[0][0]

    async def add_events(self, events: Iterable[EventIn | dict[str, Any]]) -> list[str]:
        """Store many events in as few transactions as possible; ids in input order.

        All events are validated before anything is written: one invalid event rejects the
        call with :class:`InputError` naming its index, and nothing is stored.
        """
        arguments.check("add_events", locals())
        rows = []
        for index, item in enumerate(events):
            try:
                rows.append(self.writer.prepare(coerce_event(item), stamp=False))
            except InputError as exc:
                raise InputError(f"event {index}: {exc}") from exc
        out: list[str] = []
        size = self.config.ingest.group_commit_max_rows
        for start in range(0, len(rows), size):
            out.extend(i for i, _, _ in await self.writer.submit(rows[start : start + size]))
        return out

    async def blocked(self, event_ids: Iterable[str]) -> dict[str, Blocked]:
        """Which of ``event_ids`` a forget stops (nothing is stored under them), by id."""
        return await forget_blocked(self.store, event_ids)

    async def remember(
        self,
        subject: str,
        predicate: str,
        value: str,
        *,
        text: str | None = None,
        namespace: str | None = None,
        session_id: str = "remember",
        event_id: str | None = None,
        polarity: Literal[1, -1] = 1,
        qualifiers: Iterable[str] = (),
        scope: ClaimScope = "long_term",
        valid_from: datetime | None = None,
        valid_to: datetime | None = None,
        importance: float = 0.7,
        confidence: float = 1.0,
        override_forget: bool = False,
    ) -> str:
        """Record an explicit memory: one event and its claim, with no extraction.

        The claim still goes through admission (the worth-remembering gate), dedup and
        conflict, so a structured write merges with, or supersedes, what is known. The event
        (whose content is ``text``, or "subject predicate value") is the claim's evidence.
        ``predicate`` is mapped onto the lexicon's slots like an extractor's. Returns the event
        id; like ``add_event``, a known ``event_id`` is a no-op. A forgotten fact is refused
        unless ``override_forget``: its content and slot tombstones are lifted, and ``explain``
        shows it (:mod:`hlmem.memory.writes`).

        :raises ForgottenFact: a forget stopped this fact (nothing written).
        :raises InputError: a blank field, or an invalid time, score or scope; with
            ``override_forget``, a forgotten ``event_id`` or session (pass new ones).
        """
        arguments.check("remember", locals())
        qualifiers = arguments.strings("remember", "qualifiers", qualifiers)
        remembered = memory_writes.remember_input(
            self.config,
            self.clock,
            self._lexicon,
            subject,
            predicate,
            value,
            text=text,
            namespace=namespace,
            session_id=session_id,
            event_id=event_id,
            polarity=polarity,
            qualifiers=qualifiers,
            scope=scope,
            valid_from=valid_from,
            valid_to=valid_to,
            importance=importance,
            confidence=confidence,
        )
        return await memory_writes.remember_commit(
            self.store,
            self.queue,
            self.writer,
            remembered,
            override_forget=override_forget,
            mode=self.config.admission.mode,
        )

    def _lexicon(self) -> Lexicon:
        if self._lex is None:
            self._lex = load_lexicon(self.config.extractor.lexicon_paths)
        return self._lex

    async def end_session(self, session_id: str, *, namespace: str | None = None) -> None:
        """Close the session's open window (after every event already acknowledged)."""
        arguments.check("end_session", locals())
        ns = namespace or self.config.ingest.default_namespace
        await self._control(
            JobSpec(JobKind.WINDOWER, SessionEnded(namespace=ns, session_id=session_id))
        )

    async def flush(self, *, namespace: str | None = None, session_id: str | None = None) -> None:
        """Close open windows now: all, one namespace's, or one session's.

        The flush covers every event acknowledged before it, whichever worker (this process or
        an ``hlmem worker``) windows them and in whatever order: an event placed after the
        flush was applied closes its window at once (:mod:`hlmem.stages.windower`)."""
        arguments.check("flush", locals())
        if session_id is not None and namespace is None:
            namespace = self.config.ingest.default_namespace
        await self._control(
            JobSpec(JobKind.WINDOWER, FlushRequested(namespace=namespace, session_id=session_id))
        )

    async def _control(self, spec: JobSpec) -> None:
        # A control job keeps size 1: the windower finds the flushes and session ends done
        # after a late events job by that (sql/queries_windower.sql).
        async with self.store.transaction() as tx:
            await self.queue.enqueue(tx, [spec])

    async def drain(self, *, timeout_s: float | None = None, settle_s: float = 0.0) -> None:
        """Wait until no job is waiting or running in any process (failed and parked jobs do
        not count), and has not been for ``settle_s`` (``hlmem worker --drain`` waits a little,
        in case a producer is between two events). Then writes the activation boosts of recalls
        that still wait (``maintenance.access_flush_s``).

        After :meth:`flush`, idle also means that no window the flush covers is open: the
        windower closes a late event's window in the transaction that completes its job.

        A job that waits for a failing provider (its call refused by the breaker or a 429) is
        waiting, so a drain rides out a short outage; once the provider has failed for
        ``gateway.outage_park_s`` its jobs are parked, and the drain returns without them
        (``hlmem.gateway.ops.unfinished_work`` counts what was parked or failed).

        :raises TimeoutError: not idle within ``timeout_s``.
        """
        arguments.check("drain", locals())
        with anyio.fail_after(timeout_s):
            idle_since: float | None = None
            # Polled: the jobs may be done by another process (``hlmem worker``).
            while True:
                if await self.queue.backlog() == 0:
                    idle_since = idle_since or wall()
                    if wall() - idle_since >= settle_s:
                        if self._touches is not None:
                            await self._touches.flush()
                        return
                else:
                    idle_since = None
                await anyio.sleep(self.config.pipeline.drain_poll_s)

    # --- reads --------------------------------------------------------------------------------

    async def stats(self) -> Stats:
        return await memory_reads.stats(self.store)

    async def claims(
        self,
        *,
        namespace: str | None = None,
        subject: str | None = None,
        predicate: str | None = None,
        history: bool = False,
        as_of: datetime | None = None,
        valid_at: datetime | None = None,
        limit: int = 1000,
    ) -> list[Claim]:
        """Claims of a namespace with their evidence, newest learned first.

        By default the current beliefs (active claims). ``history=True`` adds the superseded
        and the archived ones (expired plans, long-silent claims). ``as_of=t`` answers "what
        did the system believe at t" (recorded time: learned by t and not yet retracted then);
        ``valid_at=t`` answers "what was true at t" (valid time). Both may be combined; either
        implies the history.
        """
        arguments.check("claims", locals())
        return await memory_reads.claims(
            self.store,
            self.config,
            namespace=namespace,
            subject=subject,
            predicate=predicate,
            history=history,
            as_of=as_of,
            valid_at=valid_at,
            limit=limit,
        )

    async def events(
        self,
        *,
        namespace: str | None = None,
        session_id: str | None = None,
        include_untrusted: bool = False,
        limit: int = 100,
    ) -> list[Event]:
        """A namespace's raw events (one session's, or all), oldest first, the newest ``limit``.

        Events from untrusted sources (``admission.untrusted_origins`` and
        ``untrusted_session_kinds``) are left out unless ``include_untrusted``, and are then
        marked ``trusted=False``. Secrets in the content are redacted.
        """
        arguments.check("events", locals())
        return await memory_reads.events(
            self.store,
            self.config,
            namespace=namespace,
            session_id=session_id,
            include_untrusted=include_untrusted,
            limit=limit,
        )

    async def supersessions(self, claim_ids: Iterable[str]) -> list[Supersession]:
        """Why claims replaced one another: every supersession touching ``claim_ids``."""
        arguments.check("supersessions", locals())
        claim_ids = arguments.strings("supersessions", "claim_ids", claim_ids)
        return await memory_reads.supersessions(self.store, claim_ids)

    async def recall(
        self,
        query: str,
        *,
        namespace: str | None = None,
        k: int = 10,
        mode: RecallMode | None = None,
        as_of: datetime | None = None,
        valid_at: datetime | None = None,
        budget_tokens: int | None = None,
        include_untrusted: bool = False,
        session_id: str | None = None,
    ) -> RecallResult:
        """Memories for ``query``: claims and raw events, fused from full text and vectors,
        filtered by time and status, ranked, and packed into a context block.

        ``mode`` "current" (active claims valid now) or "history" (superseded ones too,
        marked); by default the query decides (之前 / previously → history). ``as_of=T``: what
        the system believed at recorded time T; ``valid_at=T``: what was true at T as known
        now. Events from untrusted sources only with ``include_untrusted`` (marked). The
        result carries how the query was understood, the items, and the packet within
        ``budget_tokens`` (default ``recall.budget_tokens``). What is returned becomes easier to
        recall next time (activation), without slowing this call: the boosts of many recalls are
        written together, within ``maintenance.access_flush_s`` (:mod:`hlmem.recall.touches`);
        ``recall.record_activation = false`` turns that off.

        The result says whether it answers the question (``answerability``: "supported",
        "low_confidence", "no_evidence"), carries a ``query_id``, whether the packet left items
        out (``truncated``) and each item's ``feedback_id`` for :meth:`feedback`; a question
        naming a slot of the speaker ("我住在哪？", "what's my name?") recalls that slot's
        claims. ``session_id``, the asking session: what it said within
        ``recall.echo_window_s`` is not handed back as a memory.

        :raises InputError: an argument of the wrong type or out of range (named): ``k``
            below 1, a naive ``as_of``, a query longer than ``recall.max_query_chars``.
        """
        arguments.check("recall", locals())
        arguments.query_length(query, self.config.recall.max_query_chars)
        if self._recaller is None:
            self._recaller = Recaller(self.store, self.config, self._gateway)
        result = await self._recaller.recall(
            query,
            namespace=namespace or self.config.ingest.default_namespace,
            now=self.clock.now(),
            k=k,
            mode=mode,
            as_of=as_of,
            valid_at=valid_at,
            budget_tokens=budget_tokens,
            include_untrusted=include_untrusted,
            session_id=session_id,
        )
        touched = [i.id for i in result.items if i.kind == "claim"]
        touched += [f for i in result.items for f in i.folded]
        if self._touches is not None and self.config.recall.record_activation:
            self._touches.add(touched)  # written in a batch, off this call (hlmem.recall.touches)
        return result

    async def feedback(self, item_id: str, *, useful: bool) -> None:
        """Say whether a recalled item helped: ``item_id`` is the item's ``feedback_id`` (or a
        claim's id). Its feedback utility moves up or down, and ranking
        (``recall.weight_utility``) follows. For a claim, positive feedback also raises its
        activation (``maintenance.feedback_boost``) and counts as an access, so a claim that
        helps is not archived for silence; negative feedback leaves activation to decay. An
        event's utility is kept beside it (events are immutable).

        :raises InputError: ``item_id`` names no claim and no event.
        """
        arguments.check("feedback", locals())
        await memory_writes.feedback(self.store, self.config, self.clock, item_id, useful=useful)

    # --- lifecycle: forget, correct, explain (hlmem.claims.forgetting, hlmem.lifecycle.correct,
    # hlmem.lifecycle.explain) ------

    async def forget(
        self,
        *,
        claim_id: str | None = None,
        event_id: str | None = None,
        session_id: str | None = None,
        query: str | None = None,
        namespace: str | None = None,
        dry_run: bool = False,
        confirmed: ForgetResult | None = None,
    ) -> ForgetResult:
        """Forget by exactly one of claim id, event id, session id or query: tombstones first,
        then the claims, their vectors, full-text rows, evidence and links, and the events no
        remaining claim rests on, in one transaction (:mod:`hlmem.claims.forgetting` has the rules).
        A query forgets only what really matches it (nothing when nothing does: ``matched``
        is empty). ``dry_run`` reports what would go (the plan) and changes nothing;
        ``confirmed=plan`` forgets exactly what that dry run listed, or nothing.

        :raises InputError: not exactly one selector, or one that names nothing known; a
            ``confirmed`` plan that is not this forget's, or no longer what it would forget.
        """
        arguments.check("forget", locals())
        if self._recaller is None:
            self._recaller = Recaller(self.store, self.config, self._gateway)
        return await memory_writes.forget(
            self.store,
            self.config,
            self._recaller,
            self.clock.now(),
            claim_id=claim_id,
            event_id=event_id,
            session_id=session_id,
            query=query,
            namespace=namespace,
            dry_run=dry_run,
            confirmed=confirmed,
        )

    async def correct(self, claim_id: str, text: str, *, event_id: str | None = None) -> Correction:
        """Correct an active claim with the user's value or words ("北京", "其实我住在北京"): an
        event holding them, and a claim on the same slot that the pipeline places over the old
        one, which stays in history, superseded with the reason "user correction"
        (:mod:`hlmem.lifecycle.correct`). Visible once placed (``drain()``).

        :raises InputError: no such active claim, blank or refused words, or the same value.
        """
        arguments.check("correct", locals())
        target = await load_target(self.store, claim_id)
        now = self.clock.now()
        draft = await correction_draft(target, text, lexicon=self._lexicon(), now=now)
        row = self.writer.prepare(coerce_event(event_fields(target, text, event_id, now)))
        done = await submit(self.store, target, draft, row, recorded_at=now)
        self.queue.ring({JobKind.ADMISSION})
        return done

    async def explain(self, claim_id: str) -> ClaimExplanation:
        """Where a claim came from and what happened to it (:mod:`hlmem.lifecycle.explain`).

        :raises InputError: no such claim (or it was forgotten).
        """
        arguments.check("explain", locals())
        return await explain_claim(self.store, claim_id)

    # --- export, import, backup (hlmem.portable.reader, hlmem.portable.importer,
    # hlmem.portable.backups) ------------------

    async def export(
        self, path: str | Path, *, namespace: str | None = None, vectors: bool = True
    ) -> ExportSummary:
        """Write everything the store believes and why to a neutral JSONL file
        (:mod:`hlmem.portable.reader` documents the format), from one consistent snapshot, while the
        pipeline runs. ``namespace`` limits it to one; ``vectors=False`` leaves vectors out.
        Event text is exported as stored, secrets included.

        :raises InputError: ``path`` cannot be written.
        """
        arguments.check("export", locals())
        return await anyio.to_thread.run_sync(
            lambda: export_sync(
                self.store.path,
                self.config,
                Path(path),
                namespace=namespace,
                vectors=vectors,
                now=self.clock.now(),
            )
        )

    async def import_file(self, path: str | Path) -> ImportSummary:
        """Import an export file: validated whole first, then tombstones, events, claims
        (through dedup; the conflict stage places current claims whose slot is taken here),
        links and vectors (kept when the embedding model is the configured one, else
        re-embedded by the pipeline). Nothing forgotten here or in the file comes back;
        importing the same file again changes nothing. Call ``drain()`` to wait for the
        pipeline's part.

        :raises InputError: the file does not validate (names the line; nothing written).
        """
        arguments.check("import_file", locals())
        importer = Importer(self.store, self.queue, self.config, self._lexicon(), self.clock.now())
        return await importer.run(Path(path))

    async def backup(self, path: str | Path) -> BackupResult:
        """A consistent online copy of the store file at ``path`` (a new file), taken with
        the SQLite backup API while ingestion and the pipeline go on
        (:mod:`hlmem.portable.backups`).

        :raises InputError: ``path`` exists already.
        """
        arguments.check("backup", locals())
        return await backup_file(self.store.path, Path(path), cfg=self.config.store)

    # --- operator commands --------------------------------------------------------------------

    async def list_jobs(
        self, *, status: str | None = None, kind: str | None = None, limit: int = 50
    ) -> list[JobRow]:
        arguments.check("list_jobs", locals())
        return await memory_reads.list_jobs(self.store, status=status, kind=kind, limit=limit)

    async def retry_jobs(self, *, kind: str | None = None, job_id: int | None = None) -> int:
        """Put failed and parked jobs back to todo; the number moved."""
        arguments.check("retry_jobs", locals())
        return await self.queue.retry_ended(kind=kind, job_id=job_id)

    async def purge_jobs(self, *, older_than_s: float = 7 * 86400) -> int:
        """Delete done jobs last updated more than ``older_than_s`` ago; the number deleted."""
        arguments.check("purge_jobs", locals())
        return await self.queue.purge_done(older_than_s=older_than_s)

    async def maintain(self) -> MaintenanceReport:
        """Run one full maintenance pass now and report what each task did: TTL expiry,
        activation decay, archiving, dedup convergence, re-indexing, job hygiene (see
        :mod:`hlmem.stages.maintenance`). Works in both pipeline modes and beside the
        pipeline's own periodic passes; each tick is one short writer transaction, so
        ingestion and recall go on meanwhile.

        :raises StoreError: a read or write failed (the ticks before it stay committed).
        """
        stage = Maintenance(self.store, self.clock, self.config, lexicon=self._lexicon())
        return await stage.run_pass()
