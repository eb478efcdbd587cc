"""The record models of an ``hlmem-export`` file, and the summaries export and import return.

These are the frozen pydantic models of every JSONL line (:class:`Header` and one class per
record type, validated through :data:`RECORD`, the union discriminated on ``type``), the
format's constants (:data:`FORMAT`, :data:`FORMAT_VERSION`, :data:`RECORD_ORDER`,
:data:`PAGE_ROWS`) and :func:`embedding_model`. They read and write nothing: the format and its
rules are described in :mod:`hlmem.portable.reader`, which re-exports every name here;
:mod:`hlmem.portable.export` builds these records from a store and :mod:`hlmem.portable.reader`
validates and reads them back.
"""

from __future__ import annotations

import base64
from typing import Annotated, Any, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, TypeAdapter

from hlmem.config import EmbedderConfig
from hlmem.index import model_identity
from hlmem.messages import (
    EvidenceSpan,
    OriginClass,
    Role,
    SessionKind,
)

FORMAT = "hlmem-export"
FORMAT_VERSION = 1
#: the record types after the header, in the order a file holds them
RECORD_ORDER = (
    "tombstone",
    "session",
    "event",
    "claim",
    "supersession",
    "merge",
    "admission",
    "vector",
)
#: rows read per page on export, and records written per transaction on import
PAGE_ROWS = 500
RecordType = Literal[
    "tombstone", "session", "event", "claim", "supersession", "merge", "admission", "vector"
]


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class EmbeddingModel(_Record):
    """The embedding model a store's vectors belong to."""

    model_id: str
    model_version: str
    dim: int = Field(ge=1)


class Header(_Record):
    type: Literal["header"] = "header"
    format: str
    version: int
    hlmem_version: str
    exported_at: AwareDatetime
    #: the highest migration of the exporting store
    schema_version: int
    namespaces: tuple[str, ...]
    #: the model of the vector records (None: exported without vectors)
    embedding: EmbeddingModel | None
    #: how many records of each type follow
    counts: dict[RecordType, int]


class TombstoneRecord(_Record):
    type: Literal["tombstone"] = "tombstone"
    kind: Literal["event", "content", "claim", "slot", "session"]
    key: str
    namespace: str
    reason: str
    created_at: AwareDatetime
    blocked: int = 0


class SessionRecord(_Record):
    type: Literal["session"] = "session"
    namespace: str
    session_id: str
    session_kind: SessionKind
    started_at: AwareDatetime
    ended_at: AwareDatetime | None = None


class EventRecord(_Record):
    type: Literal["event"] = "event"
    id: str = Field(min_length=1)
    namespace: str
    session_id: str
    role: Role
    content: str = Field(min_length=1)
    content_hash: str
    occurred_at: AwareDatetime
    recorded_at: AwareDatetime
    origin_class: OriginClass
    session_kind: SessionKind
    metadata: dict[str, Any] = Field(default_factory=dict)


class EntityRef(_Record):
    name: str
    kind: str


class ClaimRecord(_Record):
    type: Literal["claim"] = "claim"
    id: str = Field(min_length=1)
    namespace: str
    subject: str
    predicate: str
    value: str
    text: str
    qualifiers: tuple[str, ...] = ()
    polarity: Literal[1, -1] = 1
    scope: str = "long_term"
    importance: float = Field(ge=0, le=1)
    confidence: float = Field(ge=0, le=1)
    language: str
    #: informational: import derives hash, slot and value keys again
    content_hash: str
    slot_key: str
    value_key: str
    status: Literal["active", "superseded", "archived"]
    valid_from: AwareDatetime | None = None
    valid_to: AwareDatetime | None = None
    recorded_at: AwareDatetime
    retracted_at: AwareDatetime | None = None
    superseded_by: str | None = None
    activation: float = 1.0
    access_count: int = 0
    last_accessed_at: AwareDatetime | None = None
    utility: float = 0.0
    extractor: str = ""
    window_id: str | None = None
    source: Literal["extraction", "remember", "import"] = "extraction"
    created_at: AwareDatetime | None = None
    activation_at: AwareDatetime | None = None
    archived_at: AwareDatetime | None = None
    archive_reason: Literal["expired", "silent"] | None = None
    evidence: tuple[EvidenceSpan, ...] = ()
    entities: tuple[EntityRef, ...] = ()


class SupersessionRecord(_Record):
    type: Literal["supersession"] = "supersession"
    old: str
    new: str
    reason: str
    created_at: AwareDatetime


class MergeRecord(_Record):
    type: Literal["merge"] = "merge"
    claim_id: str
    source_key: str
    stage: str
    similarity: float | None = None
    reason: str
    created_at: AwareDatetime
    source_hash: str | None = None


class AdmissionRecord(_Record):
    type: Literal["admission"] = "admission"
    event_id: str
    claim_key: str | None = None
    mode: Literal["enforce", "observe", "off"]
    decision: Literal["admit", "block", "would_block"]
    rule: str
    created_at: AwareDatetime


class VectorRecord(_Record):
    type: Literal["vector"] = "vector"
    owner_kind: Literal["claim", "event"]
    owner_id: str
    namespace: str | None = None
    model_id: str
    model_version: str
    dim: int = Field(ge=1)
    #: float32 little-endian, base64
    vector: str
    created_at: AwareDatetime

    def raw(self) -> bytes:
        return base64.b64decode(self.vector, validate=True)


Record = Annotated[
    TombstoneRecord
    | SessionRecord
    | EventRecord
    | ClaimRecord
    | SupersessionRecord
    | MergeRecord
    | AdmissionRecord
    | VectorRecord,
    Field(discriminator="type"),
]
RECORD: TypeAdapter[Record] = TypeAdapter(Record)


class ExportSummary(BaseModel):
    model_config = ConfigDict(frozen=True)

    path: str
    namespaces: tuple[str, ...]
    embedding: EmbeddingModel | None
    counts: dict[str, int]


class ImportCounts(BaseModel):
    """Per record type: written, already there, merged into an existing claim (claims), and
    refused (tombstoned, or resting on what was refused)."""

    model_config = ConfigDict(frozen=True)

    imported: int = 0
    duplicate: int = 0
    merged: int = 0
    refused: int = 0


class ImportSummary(BaseModel):
    model_config = ConfigDict(frozen=True)

    path: str
    format_version: int
    namespaces: tuple[str, ...]
    counts: dict[str, ImportCounts]
    #: the file's vectors were kept (same model, version and dimension as configured)
    vectors_reused: bool
    #: imported claims left for the embedder's backfill (the configured model differs, or the
    #: file holds no vectors)
    reembedding: bool
    #: current claims handed to the conflict stage (their slot already held a live claim)
    placed_by_conflict: int


def embedding_model(cfg: EmbedderConfig) -> EmbeddingModel:
    """The model id, version hash and dimension the embedder stage tags its vectors with
    (:func:`hlmem.index.vectors.model_identity`)."""
    model_id, version = model_identity(cfg)
    return EmbeddingModel(model_id=model_id, model_version=version, dim=cfg.dim)
