"""Every pydantic model that crosses a queue, the store or the public API.

Messages are frozen and forbid unknown fields. Job payloads carry a ``kind`` literal and load
through one discriminated-union ``TypeAdapter`` (:data:`JOB_PAYLOAD`), so a job row always
round-trips to the same message. All timestamps are timezone-aware UTC. hlmem creates every id.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, Literal, Protocol

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, TypeAdapter, field_validator

from hlmem.clock import iso, parse_iso, parse_iso_opt

ID_MAX_CHARS = 200


class NamedRow(Protocol):
    """A result row of the store, read by column name: every connection's ``row_factory`` is
    its SQLite module's ``Row`` (the stdlib's or sqlean's, both index by name)."""

    def __getitem__(self, column: str, /) -> Any: ...


class Role(StrEnum):
    USER = "user"
    ASSISTANT = "assistant"
    SYSTEM = "system"
    TOOL = "tool"


class OriginClass(StrEnum):
    USER_DIRECT = "user_direct"
    ASSISTANT = "assistant"
    TOOL = "tool"
    EXTERNAL_WEB = "external_web"
    SYSTEM = "system"
    IMPORTED = "imported"


class SessionKind(StrEnum):
    INTERACTIVE = "interactive"
    CRON = "cron"
    HEARTBEAT = "heartbeat"
    SUBAGENT = "subagent"
    BATCH = "batch"


class JobStatus(StrEnum):
    """Mirrors the CHECK constraint on ``jobs.status``."""

    TODO = "todo"
    DOING = "doing"
    DONE = "done"
    FAILED = "failed"
    PARKED = "parked"


class JobKind(StrEnum):
    """The stage a job is for, in pipeline order; mirrors the CHECK constraint on ``jobs.kind``
    (a misspelt kind is refused when the job is made, not queued for a stage that never
    comes)."""

    WINDOWER = "windower"
    EXTRACTOR = "extractor"
    ADMISSION = "admission"
    DEDUP = "dedup"
    CONFLICT = "conflict"
    EMBEDDER = "embedder"
    MAINTENANCE = "maintenance"


class ClaimStatus(StrEnum):
    PENDING = "pending"  # between dedup and conflict: never shown
    ACTIVE = "active"
    SUPERSEDED = "superseded"
    ARCHIVED = "archived"
    FORGOTTEN = "forgotten"  # never stored: forget deletes the claim (hlmem.claims.forgetting)


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


_Id = Annotated[str, Field(min_length=1, max_length=ID_MAX_CHARS, pattern=r"^[^\x00-\x1f]+$")]

DEFAULT_ORIGIN = {
    Role.USER: OriginClass.USER_DIRECT,
    Role.ASSISTANT: OriginClass.ASSISTANT,
    Role.TOOL: OriginClass.TOOL,
    Role.SYSTEM: OriginClass.SYSTEM,
}


class EventIn(_Frozen):
    """An event as a caller hands it in. ``event_id`` is the caller's idempotency key."""

    session_id: _Id
    content: str = Field(min_length=1)
    role: Role = Role.USER
    event_id: _Id | None = None
    namespace: _Id | None = None
    occurred_at: AwareDatetime | None = None
    origin_class: OriginClass | None = None
    session_kind: SessionKind = SessionKind.INTERACTIVE
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("content")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("content is blank")
        if "\x00" in value:
            raise ValueError("content contains a NUL character")
        return value


class Event(_Frozen):
    """An immutable stored event."""

    id: str
    namespace: str
    session_id: str
    role: Role
    content: str
    content_hash: str
    occurred_at: datetime
    recorded_at: datetime
    origin_class: OriginClass
    session_kind: SessionKind
    metadata: dict[str, Any] = Field(default_factory=dict)
    #: False when its source is untrusted under the admission policy (external web pages,
    #: tool output, cron / heartbeat / subagent sessions, ...): never extracted under enforce
    trusted: bool = True


# --- window and claim records ---------------------------------------------------------------


class WindowPiece(_Frozen):
    """One item of a window: an event, or one chunk of a long event, with its text."""

    event_id: str
    chunk_no: int
    chunk_count: int
    start_char: int
    end_char: int
    role: Role
    text: str
    occurred_at: datetime


class WindowText(_Frozen):
    """A closed window with the text of its pieces, as the extractor sees it."""

    window_id: str
    namespace: str
    session_id: str
    pieces: tuple[WindowPiece, ...]


def window_tuple(window: WindowText) -> tuple[Any, ...]:
    """A window as plain tuples, occurred_at as ISO text and role as its value: what crosses
    to the pipeline's CPU helper child (:mod:`hlmem.pipeline.offload`). The extractor builds the
    same tuples from its rows without a :class:`WindowText` in between, and its windows from them
    (:func:`window_from`)."""
    pieces = tuple(
        (
            p.event_id,
            p.chunk_no,
            p.chunk_count,
            p.start_char,
            p.end_char,
            p.role.value,
            p.text,
            iso(p.occurred_at),
        )
        for p in window.pieces
    )
    return (window.window_id, window.namespace, window.session_id, pieces)


def window_from(values: tuple[Any, ...]) -> WindowText:
    """The window of :func:`window_tuple`, built without validation (as the extractor does)."""
    window_id, namespace, session_id, pieces = values
    return WindowText.model_construct(
        window_id=window_id,
        namespace=namespace,
        session_id=session_id,
        pieces=tuple(
            WindowPiece.model_construct(
                event_id=event_id,
                chunk_no=chunk_no,
                chunk_count=chunk_count,
                start_char=start_char,
                end_char=end_char,
                role=Role(role),
                text=text,
                occurred_at=parse_iso(occurred_at),
            )
            for event_id, chunk_no, chunk_count, start_char, end_char, role, text, occurred_at in (
                pieces
            )
        ),
    )


ClaimScope = Literal["long_term", "short_term", "plan"]


class EvidenceSpan(_Frozen):
    event_id: str
    quote: str
    start_char: int
    end_char: int


class ClaimDraft(_Frozen):
    """A claim proposed by an extractor, before it is stored."""

    subject: str
    predicate: str
    value: str
    text: str
    language: str
    polarity: Literal[1, -1] = 1
    qualifiers: tuple[str, ...] = ()
    #: how long the claim is meant to hold: long_term (facts, preferences), short_term
    #: (temporary states, "暂时"), plan (something scheduled or due)
    scope: ClaimScope = "long_term"
    importance: float = Field(0.5, ge=0, le=1)
    confidence: float = Field(0.8, ge=0, le=1)
    #: valid time: when it is (or was, or will be) true in the world, resolved against the
    #: telling event's own timestamp; None when the text does not say
    valid_from: AwareDatetime | None = None
    valid_to: AwareDatetime | None = None
    evidence: tuple[EvidenceSpan, ...] = Field(min_length=1)


# --- job payloads ---------------------------------------------------------------------------


class EventsAdded(_Frozen):
    """Windower input: the events of one group commit, in commit order."""

    kind: Literal["events_added"] = "events_added"
    event_ids: tuple[str, ...] = Field(min_length=1)


class SessionEnded(_Frozen):
    """Windower input: close the session's open window."""

    kind: Literal["session_ended"] = "session_ended"
    namespace: str
    session_id: str


class FlushRequested(_Frozen):
    """Windower input: close open windows now (one session, one namespace or all)."""

    kind: Literal["flush_requested"] = "flush_requested"
    namespace: str | None = None
    session_id: str | None = None


class WindowClosed(_Frozen):
    """Extractor input: closed windows of one namespace, each ready for one extraction.

    ``window_id`` (of session ``session_id``) and the ``more`` windows closed in the same
    windower batch (``windower.windows_per_job``): one job for several windows, since the job
    table's cost is per job. With a model extractor each window is a job of its own, so that a
    failed call is retried alone."""

    kind: Literal["window_closed"] = "window_closed"
    window_id: str
    namespace: str
    session_id: str
    more: tuple[str, ...] = ()

    @property
    def window_ids(self) -> tuple[str, ...]:
        return (self.window_id, *self.more)


#: what the built-in rules make of a batch of windows: the full-text body of each text, and each
#: window's drafts (None: the window is not worth extracting)
Extraction = tuple[list[str], list[list[ClaimDraft] | None]]

#: the extractor name of a user correction's candidate and claim: :mod:`hlmem.lifecycle.correct`
#: writes it, dedup and conflict treat such a candidate as the user's own correction
CORRECTION_EXTRACTOR = "correct"


class Candidate(_Frozen):
    """A proposed claim on its way through admission and dedup. ``key`` is derived from where
    it came from (window and place, or the remember event), so a replay proposes the same key;
    it becomes the claim's id when the claim is new."""

    key: str
    namespace: str
    draft: ClaimDraft
    #: recorded time: when the agent was told it (the telling event's ``occurred_at``, never
    #: later than its ingestion, so replayed history keeps its times)
    recorded_at: AwareDatetime
    source: Literal["extraction", "remember", "import"] = "extraction"
    extractor: str = ""
    window_id: str | None = None


class ClaimsProposed(_Frozen):
    """Admission input: the claims one extraction (or one structured write) proposes."""

    kind: Literal["claims_proposed"] = "claims_proposed"
    candidates: tuple[Candidate, ...] = Field(min_length=1)


class ClaimsAdmitted(_Frozen):
    """Dedup input: candidates that passed the worth-remembering gate."""

    kind: Literal["claims_admitted"] = "claims_admitted"
    candidates: tuple[Candidate, ...] = Field(min_length=1)


class ClaimsPending(_Frozen):
    """Conflict input: new claims written as pending by dedup, to be placed on their slots."""

    kind: Literal["claims_pending"] = "claims_pending"
    claim_ids: tuple[str, ...] = Field(min_length=1)


#: the dedup key of the one live embedder backfill job (an :class:`EmbedClaims` with no ids)
EMBED_BACKFILL_KEY = "embedder:backfill"
#: the job priority of claims' vectors: the embedder takes them before events' and backfills
CLAIM_VECTORS_PRIORITY = 1


class EmbedClaims(_Frozen):
    """Embedder input: claims and raw events to embed (both empty: a backfill of the claims
    and events that lack a vector of the configured model)."""

    kind: Literal["embed_claims"] = "embed_claims"
    claim_ids: tuple[str, ...] = ()
    event_ids: tuple[str, ...] = ()

    @property
    def backfill(self) -> bool:
        return not self.claim_ids and not self.event_ids


# --- maintenance ------------------------------------------------------------------------------

MaintenanceTask = Literal[
    "ttl", "lifecycle", "dedup", "reindex", "secrets", "observations", "jobs", "vector_log"
]


class TtlReport(_Frozen):
    """TTL: plans and short-term claims archived (reason "expired") after date + grace."""

    expired: int = 0
    vectors_dropped: int = 0


class DecayReport(_Frozen):
    """Activation decay: active claims looked at, and those whose decayed activation was
    written down (confidence is never touched)."""

    scanned: int = 0
    decayed: int = 0


class ArchiveReport(_Frozen):
    """Long-silent, low-activation claims archived (reason "silent"), and their vectors."""

    archived: int = 0
    vectors_dropped: int = 0


class ConvergeReport(_Frozen):
    """Dedup convergence over stored active claims: looked at, and merged into an older one."""

    scanned: int = 0
    merged: int = 0
    vectors_dropped: int = 0


class ReindexReport(_Frozen):
    """Re-derivation: claims whose full-text row was missing or stale, rewritten; rows looked
    at by the secrets scan, and what it took a secret out of (full-text rows, jobs, vector
    owners); flagged observations archived (no active source left) or still waiting."""

    scanned: int = 0
    rewritten: int = 0
    secrets_scanned: int = 0
    secrets_rewritten: int = 0
    observations_archived: int = 0
    observations_waiting: int = 0


class HygieneReport(_Frozen):
    """Job-table hygiene: old done jobs deleted; logged vector deletions pruned."""

    jobs_purged: int = 0
    vector_log_pruned: int = 0


class MaintenanceReport(_Frozen):
    """What a maintenance pass (or the ticks of it so far) did, task by task."""

    started_at: AwareDatetime
    finished_at: AwareDatetime
    ticks: int = 0
    ttl: TtlReport = TtlReport()
    decay: DecayReport = DecayReport()
    archive: ArchiveReport = ArchiveReport()
    dedup: ConvergeReport = ConvergeReport()
    reindex: ReindexReport = ReindexReport()
    hygiene: HygieneReport = HygieneReport()

    def plus(self, other: MaintenanceReport) -> MaintenanceReport:
        """Both reports' counts summed, from this one's start to the other's finish."""
        parts: dict[str, Any] = {}
        for name in ("ttl", "decay", "archive", "dedup", "reindex", "hygiene"):
            mine, theirs = getattr(self, name), getattr(other, name)
            parts[name] = type(mine)(
                **{f: getattr(mine, f) + getattr(theirs, f) for f in type(mine).model_fields}
            )
        return MaintenanceReport(
            started_at=self.started_at,
            finished_at=other.finished_at,
            ticks=self.ticks + other.ticks,
            **parts,
        )


class MaintenanceTick(_Frozen):
    """Maintenance input: one bounded tick of a pass. The pass's cursors (claim and
    observation rowids already covered), the tasks it has finished and its counts so far
    travel from tick to tick in this payload, so a crash resumes the pass where it was."""

    kind: Literal["maintenance_tick"] = "maintenance_tick"
    lifecycle_after: int = 0
    dedup_after: int = 0
    reindex_after: int = 0
    observations_after: int = 0
    done: tuple[MaintenanceTask, ...] = ()
    report: MaintenanceReport | None = None


JobPayload = Annotated[
    EventsAdded
    | SessionEnded
    | FlushRequested
    | WindowClosed
    | ClaimsProposed
    | ClaimsAdmitted
    | ClaimsPending
    | EmbedClaims
    | MaintenanceTick,
    Field(discriminator="kind"),
]
JOB_PAYLOAD: TypeAdapter[JobPayload] = TypeAdapter(JobPayload)


class Job(_Frozen):
    """A claimed job row with its decoded payload."""

    id: int
    kind: JobKind
    payload: JobPayload
    attempts: int


class Claim(_Frozen):
    """A stored claim with both clocks: valid time (``valid_from`` / ``valid_to``: true in the
    world) and recorded time (``recorded_at``: learnt; ``retracted_at``: stopped believing)."""

    id: str
    namespace: str
    subject: str
    predicate: str
    value: str
    text: str
    status: ClaimStatus
    language: str
    importance: float
    confidence: float
    valid_from: datetime | None
    valid_to: datetime | None
    recorded_at: datetime
    polarity: Literal[1, -1] = 1
    qualifiers: tuple[str, ...] = ()
    scope: str = "long_term"
    retracted_at: datetime | None = None
    superseded_by: str | None = None
    evidence: tuple[EvidenceSpan, ...] = ()

    @classmethod
    def from_row(
        cls,
        r: NamedRow,
        evidence: Iterable[EvidenceSpan] = (),
        shown: Callable[[str], str] = str,
    ) -> Claim:
        """A claim from a row of a claim query, read by column name (id, namespace, subject,
        predicate, value, text, status, language, importance, confidence, valid_from,
        valid_to, recorded_at, polarity, qualifiers, scope, retracted_at, superseded_by);
        ``shown`` is applied to the value and the text (redaction)."""
        return cls(
            id=r["id"],
            namespace=r["namespace"],
            subject=r["subject"],
            predicate=r["predicate"],
            value=shown(r["value"]),
            text=shown(r["text"]),
            status=ClaimStatus(r["status"]),
            language=r["language"],
            importance=r["importance"],
            confidence=r["confidence"],
            valid_from=parse_iso_opt(r["valid_from"]),
            valid_to=parse_iso_opt(r["valid_to"]),
            recorded_at=parse_iso(r["recorded_at"]),
            polarity=r["polarity"],
            qualifiers=tuple(json.loads(r["qualifiers"])),
            scope=r["scope"],
            retracted_at=parse_iso_opt(r["retracted_at"]),
            superseded_by=r["superseded_by"],
            evidence=tuple(evidence),
        )


# --- recall ---------------------------------------------------------------------------------


RecallMode = Literal["current", "history"]
#: what a recall result says of the question (:class:`RecallResult`)
Answerability = Literal["supported", "low_confidence", "no_evidence"]
#: the version of :class:`RecallResult`'s JSON shape (``model_dump``, ``hlmem recall --json``);
#: 2 added ``schema_version``, ``query_id``, ``answerability``, ``truncated``, the query's
#: ``slots`` and each item's ``feedback_id`` and ``as_of``
RECALL_SCHEMA_VERSION = 2


class QueryParse(_Frozen):
    """How recall understood a query (returned with every result)."""

    text: str
    mode: RecallMode
    #: "what did the system believe at T" (recorded time)
    as_of: AwareDatetime | None = None
    #: "what was true at T, as we know it now" (valid time)
    valid_at: AwareDatetime | None = None
    #: with ``valid_at``: the end (exclusive, at most now) of the period the query names
    #: ("in October 2023"); what was said before it was said then. None: ``valid_at`` itself
    period_end: AwareDatetime | None = None
    #: the words that set the time intent (现在, 之前, 5月, previously, ...)
    time_words: tuple[str, ...] = ()
    #: entities named in the query that the store knows (high confidence: they constrain)
    entities: tuple[str, ...] = ()
    #: named in the query but ambiguous or unknown: recall stays wide
    loose_entities: tuple[str, ...] = ()
    #: "user" when the query is about the speaker (我 / my / I), else None
    subject: str | None = None
    #: the predicates of the speaker's slots the question names ("我住在哪？" → location):
    #: their claims are candidates (channel "slot", :mod:`hlmem.recall.slots`)
    slots: tuple[str, ...] = ()
    #: the query asks what the assistant said ("you recommended", "你推荐过"): the assistant's
    #: turns rank as the user's do (``recall.assistant_weight`` is not applied)
    asks_assistant: bool = False


class RecallEvidence(_Frozen):
    event_id: str
    session_id: str
    quote: str
    occurred_at: AwareDatetime


class RecallItem(_Frozen):
    """One recalled memory: a claim, or a raw event (episodic memory)."""

    id: str
    kind: Literal["claim", "event"]
    text: str
    score: float
    status: str  # a claim's status; "event" for an event
    subject: str | None = None
    predicate: str | None = None
    value: str | None = None
    qualifiers: tuple[str, ...] = ()
    polarity: Literal[1, -1] = 1
    valid_from: AwareDatetime | None = None
    valid_to: AwareDatetime | None = None
    recorded_at: AwareDatetime | None = None
    #: a claim's first evidence and its latest, in time order: ``recall.evidence_per_item``
    #: at most (:meth:`hlmem.Memory.explain` lists every one); an event's own text
    evidence: tuple[RecallEvidence, ...] = ()
    #: how many evidence links the claim has (``evidence`` may show fewer); 1 for an event
    evidence_total: int = 0
    #: ids of equivalent items folded into this one: claims with the same subject, predicate,
    #: value, polarity and status; events with the same text
    folded: tuple[str, ...] = ()
    #: False for an event from an untrusted source (only when asked for)
    trusted: bool = True
    #: which channels found it: "fts", "vector", "expansion" (a query the expansion model
    #: wrote), "slot" (a claim of the slot the question names), "context", "feedback";
    #: "rerank" when the reranker placed it
    channels: tuple[str, ...] = ()
    #: what :meth:`hlmem.Memory.feedback` takes to say whether this item helped
    #: ("<query_id>:<item id>"; a claim's own id works too)
    feedback_id: str = ""
    #: a claim of a volatile slot (a plan, a status: the lexicon's ``volatile``) whose latest
    #: evidence is older than ``recall.freshness_days``: when that evidence was said (the
    #: packet says "as of <date>"); None otherwise
    as_of: AwareDatetime | None = None


class RecallResult(_Frozen):
    """What a recall returns; its JSON shape is versioned (:data:`RECALL_SCHEMA_VERSION`) and
    documented in :mod:`hlmem.recall`."""

    schema_version: int = RECALL_SCHEMA_VERSION
    #: this recall's id: each item's ``feedback_id`` names it
    query_id: str = ""
    query: QueryParse
    items: tuple[RecallItem, ...]
    #: the items as a context block for a system prompt, within the token budget
    packet: str
    tokens: int
    budget_tokens: int
    #: the reranker (recall.rerank_provider) ordered the first items; False without one, or
    #: when its call failed and the fused order stands
    reranked: bool = False
    #: why this recall ran on full text alone (the query could not be embedded: a provider
    #: down or too slow, a model not installed); None when both channels ran
    degraded: str | None = None
    #: "supported": a current claim of the slot the question names (any claim of it, for a
    #: question about the past), or one of the first three items holding at least
    #: ``recall.supported_coverage`` of the question's search terms;
    #: "low_confidence": items, none of them that; "no_evidence": no item
    answerability: Answerability = "no_evidence"
    #: the packet left out items to keep within the token budget
    truncated: bool = False


class RecallHit(_Frozen):
    claim: Claim
    score: float


class IngestSummary(_Frozen):
    accepted: int
    duplicate: int
    rejected: int
    errors: tuple[str, ...] = ()
    #: valid lines a forget's tombstone stopped (nothing stored), and why, by line
    blocked: int = 0
    blocked_lines: tuple[str, ...] = ()


def dumps_metadata(metadata: dict[str, Any]) -> str:
    """Compact, canonical JSON; NaN and infinities are refused (they are not JSON)."""
    if type(metadata) is dict and not metadata:
        return "{}"  # most events: json.dumps with these options builds an encoder per call
    return json.dumps(
        metadata, ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False
    )
