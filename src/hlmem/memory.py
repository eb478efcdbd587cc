"""The public async facade: ``async with hlmem.open(path) as mem``.

A :class:`Memory` owns the store, the job queue, the event writer (group commit) and, unless
``pipeline="external"``, the pipeline running as background tasks in the caller's event loop.
With ``pipeline="external"`` a separate ``hlmem worker`` process on the same file does the
processing, with identical results. Every method is non-blocking; ``add_event`` returns once
the event and its job are committed.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from contextlib import AsyncExitStack
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

import anyio
from anyio.abc import TaskGroup
from pydantic import BaseModel, ConfigDict, ValidationError

from hlmem.admission import SourcePolicy, redact, untrusted_rule
from hlmem.backup import BackupResult
from hlmem.backup import backup as backup_file
from hlmem.clock import Clock, SystemClock, iso, parse_iso, wall
from hlmem.config import Config, load_config
from hlmem.correct import Correction, correction_draft, event_fields, load_target, submit
from hlmem.errors import ClosedError, InputError
from hlmem.explain import ClaimExplanation, explain_claim
from hlmem.forget import ForgetResult
from hlmem.forget import forget as forget_items
from hlmem.gateway import Gateway
from hlmem.importer import Importer
from hlmem.ingest import EventWriter, coerce_event
from hlmem.lexicon import Lexicon, load_lexicon
from hlmem.lifecycle import boost_sync
from hlmem.messages import (
    Candidate,
    Claim,
    ClaimDraft,
    ClaimScope,
    ClaimsProposed,
    Event,
    EventIn,
    EvidenceSpan,
    FlushRequested,
    MaintenanceReport,
    OriginClass,
    RecallMode,
    RecallResult,
    Role,
    SessionEnded,
    SessionKind,
)
from hlmem.pipeline import Pipeline, needs_gateway
from hlmem.portable import ExportSummary, ImportSummary, export_sync
from hlmem.queue import JobQueue, JobSpec
from hlmem.recall import Recaller
from hlmem.slots import SPEAKER, subject_key
from hlmem.stages.maintenance import Maintenance
from hlmem.store import Store, SyncTx
from hlmem.text import content_hash, derived_id, language_of
from hlmem.touches import Touches

log = logging.getLogger(__name__)

PipelineMode = Literal["inline", "external"]


class Stats(BaseModel):
    model_config = ConfigDict(frozen=True)

    events: int
    sessions: int
    claims: dict[str, int]
    windows: dict[str, int]
    extractions: int
    evidence: int
    jobs: dict[str, dict[str, int]]
    #: admission decisions: {"event": {"admit": n, "block": n, ...}, "claim": {...}}; blocked
    #: events cost no model call
    admission: dict[str, dict[str, int]] = {}
    #: tombstones left by forgets, by kind: {"event": {"count": n, "blocked": m}, ...}; blocked
    #: counts what they stopped at ingest (re-sent forgotten events, dropped silently)
    tombstones: dict[str, dict[str, int]] = {}


class Supersession(BaseModel):
    model_config = ConfigDict(frozen=True)

    old: str
    new: str
    reason: str
    created_at: datetime


class JobRow(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: int
    kind: str
    status: str
    attempts: int
    last_error: str | None
    #: what explains a failure beyond its message, e.g. a model's raw answer
    detail: str | None = None
    created_at: float
    updated_at: float
    payload: dict[str, Any]


def open(
    path: str | Path,
    *,
    config: Config | None = None,
    clock: Clock | None = None,
    pipeline: PipelineMode = "inline",
) -> Memory:
    """A memory on the SQLite file at ``path``; use it as ``async with``.

    ``config`` defaults to :func:`hlmem.config.load_config` with no file (defaults plus the
    ``HLMEM_*`` environment).
    """
    return Memory(path, config=config or load_config(), clock=clock, pipeline=pipeline)


class Memory:
    def __init__(
        self,
        path: str | Path,
        *,
        config: Config,
        clock: Clock | None = None,
        pipeline: PipelineMode = "inline",
    ) -> None:
        self.path = Path(path)
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
            self._store = await Store.open(self.path, self.config.store)
            stack.push_async_callback(self._store.close)
            self._queue = JobQueue(self._store, lease_s=self.config.pipeline.lease_s)
            stack.callback(self._queue.retire)
            gateway = None
            # The pipeline's stages call models only here (inline); recall's reranker does in
            # every mode.
            reranks = bool(self.config.recall.rerank_provider)
            if (self.mode == "inline" or reranks) and needs_gateway(self.config):
                # Entered before the task group, so it closes after the stages have stopped.
                gateway = await stack.enter_async_context(
                    Gateway.open(self.config, self._store, clock=self.clock)
                )
            self._gateway = gateway
            tg = await stack.enter_async_context(anyio.create_task_group())
            self._tg = tg
            self._touches = Touches(self._store, self.config.maintenance, self.clock)
            await tg.start(self._touches.run)
            self._writer = EventWriter(self._queue, self.config.ingest, self.clock)
            await tg.start(self._writer.run)
            if self.mode == "inline":
                self._pipeline = Pipeline(self._queue, self.config, self.clock, gateway)
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
        if self._writer is not None:
            await self._writer.stop()
        if self._pipeline is not None:
            self._pipeline.stop()
        if self._touches is not None:
            await self._touches.stop()
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
        rows = []
        for index, item in enumerate(events):
            try:
                rows.append(self.writer.prepare(coerce_event(item), stamp=False))
            except InputError as exc:
                raise InputError(f"event {index}: {exc}") from exc
        out: list[str] = []
        size = self.config.ingest.group_commit_max_rows
        for start in range(0, len(rows), size):
            out.extend(i for i, _ in await self.writer.submit(rows[start : start + size]))
        return out

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
    ) -> str:
        """Record an explicit memory: one event and its claim, with no extraction.

        The claim still goes through admission (the worth-remembering gate and tombstones),
        dedup and conflict, so a structured write merges with, or supersedes, what is known.
        The event (whose content is ``text``, or "subject predicate value") is the claim's
        evidence. ``predicate`` is mapped onto the lexicon's slots like an extractor's.
        Returns the event id; like ``add_event``, a known ``event_id`` is a no-op.

        :raises InputError: a blank field, or an invalid time, score or scope.
        """
        ns = namespace or self.config.ingest.default_namespace
        content = text if text is not None else f"{subject} {predicate} {value}"
        occurred = self.clock.now()
        try:
            draft = ClaimDraft(
                subject=_field("subject", subject),
                predicate=self._lexicon().canonical_predicate(_field("predicate", predicate)),
                value=_field("value", value),
                text=_field("text", content),
                language=language_of(content),
                polarity=polarity,
                qualifiers=tuple(qualifiers),
                scope=scope,
                importance=importance,
                confidence=confidence,
                valid_from=valid_from or occurred,
                valid_to=valid_to,
                evidence=(
                    EvidenceSpan(event_id="-", quote=content, start_char=0, end_char=len(content)),
                ),
            )
            event = coerce_event(
                {
                    "session_id": session_id,
                    "content": content,
                    "namespace": ns,
                    "event_id": event_id,
                    "occurred_at": occurred,
                    "metadata": {"remember": {"subject": subject, "predicate": predicate}},
                }
            )
        except ValidationError as exc:
            raise InputError(f"remember: {exc.errors()[0]['msg']}") from None
        row = self.writer.prepare(event)
        evidence = draft.evidence[0].model_copy(update={"event_id": row[0]})
        candidate = Candidate(
            key=derived_id("clm", "remember", row[0]),
            namespace=ns,
            draft=draft.model_copy(update={"evidence": (evidence,)}),
            recorded_at=occurred,
            source="remember",
            extractor="remember",
        )
        spec = JobSpec("admission", ClaimsProposed(candidates=(candidate,)), namespace=ns)
        now = wall()

        def write(tx: SyncTx) -> str:
            if tx.fetchall("existing_event_ids", (json.dumps([row[0]]),)):
                return row[0]
            tx.execute("insert_event", (*row[:5], content_hash(content), *row[6:]))
            tx.execute("insert_session", (row[1], row[2], row[9], row[7]))
            tx.execute("insert_job", spec.row(now))
            return row[0]

        stored = await self.store.run_in_transaction(write)
        self.queue.ring({"admission"})
        return stored

    def _lexicon(self) -> Lexicon:
        if self._lex is None:
            self._lex = load_lexicon(self.config.extractor.lexicon_paths)
        return self._lex

    async def end_session(self, session_id: str, *, namespace: str | None = None) -> None:
        """Close the session's open window (after every event already acknowledged)."""
        ns = namespace or self.config.ingest.default_namespace
        await self._control(JobSpec("windower", SessionEnded(namespace=ns, session_id=session_id)))

    async def flush(self, *, namespace: str | None = None, session_id: str | None = None) -> None:
        """Close open windows now: all, one namespace's, or one session's."""
        if session_id is not None and namespace is None:
            namespace = self.config.ingest.default_namespace
        await self._control(
            JobSpec("windower", FlushRequested(namespace=namespace, session_id=session_id))
        )

    async def _control(self, spec: JobSpec) -> None:
        async with self.store.transaction() as tx:
            await self.queue.enqueue(tx, [spec])

    async def drain(self, *, timeout_s: float | None = None, settle_s: float = 0.0) -> None:
        """Wait until no job is waiting or running (failed and parked jobs do not count),
        and has not been for ``settle_s`` (``hlmem worker --drain`` waits a little, in case a
        producer is between two events). Then writes the activation boosts of recalls that
        still wait (``maintenance.access_flush_s``).

        :raises TimeoutError: not idle within ``timeout_s``.
        """
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
        s = self.store
        jobs: dict[str, dict[str, int]] = {}
        for row in await s.fetchall("job_counts"):
            jobs.setdefault(row[0], {})[row[1]] = row[2]
        admission: dict[str, dict[str, int]] = {}
        for row in await s.fetchall("admission_counts"):
            admission.setdefault(row[0], {})[row[1]] = row[2]
        return Stats(
            events=await s.scalar("count_events"),
            sessions=await s.scalar("count_sessions"),
            claims={r[0]: r[1] for r in await s.fetchall("claim_counts")},
            windows={r[0]: r[1] for r in await s.fetchall("window_counts")},
            extractions=await s.scalar("count_extractions"),
            evidence=await s.scalar("count_evidence"),
            jobs=jobs,
            admission=admission,
            tombstones={
                r[0]: {"count": r[1], "blocked": r[2]}
                for r in await s.fetchall("forget_tombstone_counts")
            },
        )

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
        ns = namespace or self.config.ingest.default_namespace
        view = "history" if history or as_of or valid_at else "current"
        if subject is not None:
            subject = subject_key(subject) if subject_key(subject) == SPEAKER else subject
        rows = await self.store.fetchall(
            "select_claims",
            {
                "namespace": ns,
                "view": view,
                "subject": subject,
                "predicate": predicate,
                "as_of": iso(as_of) if as_of else None,
                "valid_at": iso(valid_at) if valid_at else None,
                "limit": limit,
            },
        )
        ev: dict[str, list[EvidenceSpan]] = {}
        ids = json.dumps([r[0] for r in rows])
        for e in await self.store.fetchall("evidence_for_claims", (ids,)):
            ev.setdefault(e[0], []).append(
                EvidenceSpan(event_id=e[1], quote=redact(e[2]), start_char=e[3], end_char=e[4])
            )
        return [Claim.from_row(r, ev.get(r[0], ())) for r in rows]

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
        ns = namespace or self.config.ingest.default_namespace
        policy = SourcePolicy.from_config(self.config.admission)
        rows = await self.store.fetchall(
            "select_events", {"namespace": ns, "session_id": session_id, "limit": limit}
        )
        out = []
        for r in reversed(rows):
            trusted = untrusted_rule(policy, r[8], r[9]) is None
            if trusted or include_untrusted:
                out.append(
                    Event(
                        id=r[0],
                        namespace=r[1],
                        session_id=r[2],
                        role=Role(r[3]),
                        content=redact(r[4]),
                        content_hash=r[5],
                        occurred_at=parse_iso(r[6]),
                        recorded_at=parse_iso(r[7]),
                        origin_class=OriginClass(r[8]),
                        session_kind=SessionKind(r[9]),
                        metadata=json.loads(r[10]),
                        trusted=trusted,
                    )
                )
        return out

    async def supersessions(self, claim_ids: Iterable[str]) -> list[Supersession]:
        """Why claims replaced one another: every supersession touching ``claim_ids``."""
        ids = json.dumps(list(claim_ids))
        return [
            Supersession(old=r[0], new=r[1], reason=r[2], created_at=parse_iso(r[3]))
            for r in await self.store.fetchall("supersessions_of", (ids, ids))
        ]

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
        written together, within ``maintenance.access_flush_s`` (:mod:`hlmem.touches`).

        :raises InputError: ``k`` below 1.
        """
        if k < 1:
            raise InputError("recall: k must be at least 1")
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
        )
        touched = [i.id for i in result.items if i.kind == "claim"]
        touched += [f for i in result.items for f in i.folded]
        if self._touches is not None:
            self._touches.add(touched)  # written in a batch, off this call (hlmem.touches)
        return result

    async def feedback(self, item_id: str, *, useful: bool) -> None:
        """Say whether a recalled claim helped: its feedback utility moves up or down, and
        ranking (``recall.weight_utility``) follows. Positive feedback also raises its
        activation (``maintenance.feedback_boost``) and counts as an access, so a claim that
        helps is not archived for silence; negative feedback leaves activation to decay.

        :raises InputError: ``item_id`` names no claim (events carry no feedback).
        """
        cfg = self.config.maintenance

        def write(tx: SyncTx) -> int:
            changed = tx.execute(
                "recall_feedback", {"id": item_id, "delta": 0.25 if useful else -0.25}
            )
            if changed and useful:
                boost_sync(
                    tx,
                    cfg,
                    [item_id],
                    now=self.clock.now(),
                    boost=cfg.feedback_boost,
                    count_access=False,
                )
            return changed

        changed = await self.store.run_in_transaction(write)
        if not changed:
            raise InputError(f"feedback: no claim {item_id!r} (feedback applies to claims)")

    # --- lifecycle: forget, correct, explain (hlmem.forget, hlmem.correct, hlmem.explain) ------

    async def forget(
        self,
        *,
        claim_id: str | None = None,
        event_id: str | None = None,
        session_id: str | None = None,
        query: str | None = None,
        namespace: str | None = None,
        dry_run: bool = False,
    ) -> ForgetResult:
        """Forget by exactly one of claim id, event id, session id or query: tombstones first,
        then the claims, their vectors, full-text rows, evidence and links, and the events no
        remaining claim rests on, in one transaction (:mod:`hlmem.forget` has the rules).
        ``dry_run`` reports what would go and changes nothing.

        :raises InputError: not exactly one selector, or one that names nothing known.
        """
        if self._recaller is None:
            self._recaller = Recaller(self.store, self.config, self._gateway)
        recaller, now = self._recaller, self.clock.now()

        async def recall(text: str, ns: str, k: int) -> RecallResult:
            # Not self.recall: what a forget looks up must not gain activation.
            return await recaller.recall(
                text,
                namespace=ns,
                now=now,
                k=k,
                mode=None,
                as_of=None,
                valid_at=None,
                budget_tokens=None,
                include_untrusted=False,
            )

        return await forget_items(
            self.store,
            self.config,
            now,
            recall=recall,
            claim_id=claim_id,
            event_id=event_id,
            session_id=session_id,
            query=query,
            namespace=namespace,
            dry_run=dry_run,
        )

    async def correct(self, claim_id: str, text: str, *, event_id: str | None = None) -> Correction:
        """Correct an active claim with the user's value or words ("北京", "其实我住在北京"): an
        event holding them, and a claim on the same slot that the pipeline places over the old
        one, which stays in history, superseded with the reason "user correction"
        (:mod:`hlmem.correct`). Visible once placed (``drain()``).

        :raises InputError: no such active claim, blank or refused words, or the same value.
        """
        target = await load_target(self.store, claim_id)
        now = self.clock.now()
        draft = await correction_draft(target, text, lexicon=self._lexicon(), now=now)
        row = self.writer.prepare(coerce_event(event_fields(target, text, event_id, now)))
        done = await submit(self.store, target, draft, row, recorded_at=now)
        self.queue.ring({"admission"})
        return done

    async def explain(self, claim_id: str) -> ClaimExplanation:
        """Where a claim came from and what happened to it (:mod:`hlmem.explain`).

        :raises InputError: no such claim (or it was forgotten).
        """
        return await explain_claim(self.store, claim_id)

    # --- export, import, backup (hlmem.portable, hlmem.importer, hlmem.backup) ------------------

    async def export(
        self, path: str | Path, *, namespace: str | None = None, vectors: bool = True
    ) -> ExportSummary:
        """Write everything the store believes and why to a neutral JSONL file
        (:mod:`hlmem.portable` documents the format), from one consistent snapshot, while the
        pipeline runs. ``namespace`` limits it to one; ``vectors=False`` leaves vectors out.
        Event text is exported as stored, secrets included.

        :raises InputError: ``path`` cannot be written.
        """
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
        importer = Importer(self.store, self.queue, self.config, self._lexicon(), self.clock.now())
        return await importer.run(Path(path))

    async def backup(self, path: str | Path) -> BackupResult:
        """A consistent online copy of the store file at ``path`` (a new file), taken with
        the SQLite backup API while ingestion and the pipeline go on (:mod:`hlmem.backup`).

        :raises InputError: ``path`` exists already.
        """
        return await backup_file(self.store.path, Path(path), cfg=self.config.store)

    # --- operator commands --------------------------------------------------------------------

    async def list_jobs(
        self, *, status: str | None = None, kind: str | None = None, limit: int = 50
    ) -> list[JobRow]:
        rows = await self.store.fetchall(
            "list_jobs", {"status": status, "kind": kind, "limit": limit}
        )
        return [
            JobRow(
                id=r[0],
                kind=r[1],
                status=r[2],
                attempts=r[3],
                last_error=r[5],
                detail=r[9],
                created_at=r[6],
                updated_at=r[7],
                payload=_payload_dict(r[8]),
            )
            for r in rows
        ]

    async def retry_jobs(self, *, kind: str | None = None, job_id: int | None = None) -> int:
        """Put failed and parked jobs back to todo; the number moved."""
        return await self.queue.retry_ended(kind=kind, job_id=job_id)

    async def purge_jobs(self, *, older_than_s: float = 7 * 86400) -> int:
        """Delete done jobs last updated more than ``older_than_s`` ago; the number deleted."""
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


def _payload_dict(text: str) -> dict[str, Any]:
    """A job's payload for listing; a payload that is not a JSON object (the reason such a job
    failed) is shown as ``{"invalid": text}`` instead of breaking the listing."""
    try:
        value = json.loads(text)
    except ValueError:
        return {"invalid": text}
    return value if isinstance(value, dict) else {"invalid": text}


def _field(name: str, value: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"remember: {name} is blank")
    return value.strip()
