"""Export and import: a neutral, versioned JSONL file of everything a store believes and why.

**Format** ``hlmem-export`` version 1 (:data:`FORMAT`, :data:`FORMAT_VERSION`), UTF-8, one JSON
object per line, each with a ``type``. The first line is the :class:`Header` (format, version,
hlmem version, export time, schema version, namespaces, the embedding model of the vectors,
and how many records of each type follow); then, in this order, ``tombstone``, ``session``,
``event``, ``claim`` (with its evidence spans and entities), ``supersession``, ``merge``,
``admission`` and ``vector`` records (:data:`RECORD_ORDER`). Times are ISO 8601 UTC. Ids,
both clocks, statuses and every claim field are kept as stored; keys derived from content
(claim hash, slot key, value key) are informational: import derives them again with the
rules it runs. A vector is the float32 little-endian bytes, base64, of the embedder's
configured model only (vectors of an older model are stale and left out).

**Export** reads on a connection of its own inside one read transaction (one consistent
snapshot, however the pipeline writes meanwhile), in pages, writing line by line to a
temporary file renamed into place: memory stays bounded and a half-written file never has the
final name. Claims still ``pending`` (on their way through the pipeline) are not beliefs yet
and are left out, as are jobs, windows, the provider ledger and observations (derived).
Events are exported **as stored, secrets included** (the admission gate keeps secrets out of
claims, and only reads redact event text): the file is as sensitive as the database.

**Import** validates every line before it writes anything (:class:`~hlmem.errors.InputError`
naming the line; a truncated file fails the header's counts). Then :mod:`hlmem.importer`
writes, in batches of short writer transactions:

- tombstones first, with their original times; from then on the store's tombstones (its own
  and the file's) refuse every forgotten event (the events trigger), claim (its id, its slot
  key, or an evidence event forgotten or missing), full-text row and vector;
- events go in like ``add_event``'s (the same rows, the event id as idempotency key) but are
  not re-extracted: the file's claims are what was extracted from them (re-extraction would
  add a second copy of every superseded claim to history). They get their full-text rows;
- claims run through dedup against the claims the store held before the import: a claim with
  the same id (or merged by an earlier import) is a duplicate; the same content hash in the
  same namespace, or for a current claim the dedup stage's rules (every protected atom agrees
  and ``dedup.similarity_threshold``), merges it into the existing claim as evidence (a
  ``claim_merges`` row, stage ``import``). Otherwise it is inserted with every field, both
  clocks and its status as exported; a current claim whose slot already holds a live claim of
  this store is inserted ``pending`` and placed by the conflict stage instead (both clocks
  decide who supersedes whom);
- superseded-by links, supersessions and merges follow, renamed onto the claims they merged
  into; a link to a claim this store refused is dropped (the old claim stays superseded, as
  after a forget);
- admission decisions of the imported events (for explain), and the vectors when the file's
  model id, version and dimension equal the configured embedder's; otherwise none, and the
  embedder's backfill embeds the imported claims with the configured model.

Importing the same file twice changes nothing the second time. Into an empty store, an import
reproduces the exported claims exactly (ids, statuses, clocks, evidence, chains).
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import os
from collections.abc import Iterator
from datetime import datetime
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from hlmem.clock import parse_iso, parse_iso_opt
from hlmem.config import Config, EmbedderConfig
from hlmem.errors import InputError
from hlmem.messages import (
    EvidenceSpan,
    OriginClass,
    Role,
    SessionKind,
)
from hlmem.stages.embedder import model_identity
from hlmem.store import QUERIES, connect_sync, migrations, sqlite_module

log = logging.getLogger(__name__)

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
    (:func:`hlmem.stages.embedder.model_identity`)."""
    model_id, version = model_identity(cfg)
    return EmbeddingModel(model_id=model_id, model_version=version, dim=cfg.dim)


def _hlmem_version() -> str:
    try:
        return importlib_metadata.version("hlmem")
    except importlib_metadata.PackageNotFoundError:
        return "unknown"


# --- export -------------------------------------------------------------------------------------


def _pages(conn: Any, name: str, params: dict[str, Any]) -> Iterator[Any]:
    """Every row of a paged export query (first column: the page key, a rowid)."""
    after: Any = 0
    while True:
        page = {**params, "after": after, "limit": PAGE_ROWS}
        rows = conn.execute(QUERIES[name], page).fetchall()
        if not rows:
            return
        yield from rows
        after = rows[-1][0]


def _key_pages(conn: Any, name: str, params: dict[str, Any]) -> Iterator[Any]:
    """Every row of a paged export query over a table without rowid, keyed by its two-column
    primary key (the first two columns)."""
    a, b = "", ""
    while True:
        rows = conn.execute(
            QUERIES[name], {**params, "a": a, "b": b, "limit": PAGE_ROWS}
        ).fetchall()
        if not rows:
            return
        yield from rows
        a, b = rows[-1][0], rows[-1][1]


def _claim_records(conn: Any, params: dict[str, Any]) -> Iterator[ClaimRecord]:
    page: list[Any] = []
    for row in _pages(conn, "export_claims", params):
        page.append(row)
        if len(page) == PAGE_ROWS:
            yield from _claim_page(conn, page)
            page = []
    yield from _claim_page(conn, page)


def _claim_page(conn: Any, page: list[Any]) -> Iterator[ClaimRecord]:
    if not page:
        return
    ids = json.dumps([r[1] for r in page])
    spans: dict[str, list[EvidenceSpan]] = {}
    for e in conn.execute(QUERIES["export_claim_evidence"], (ids,)).fetchall():
        spans.setdefault(e[0], []).append(
            EvidenceSpan(event_id=e[1], quote=e[2], start_char=e[3], end_char=e[4])
        )
    ents: dict[str, list[EntityRef]] = {}
    for e in conn.execute(QUERIES["export_claim_entities"], (ids,)).fetchall():
        ents.setdefault(e[0], []).append(EntityRef(name=e[1], kind=e[2]))
    for r in page:
        yield ClaimRecord(
            id=r[1],
            namespace=r[2],
            subject=r[3],
            predicate=r[4],
            value=r[5],
            text=r[6],
            qualifiers=tuple(json.loads(r[7])),
            polarity=r[8],
            scope=r[9],
            importance=r[10],
            confidence=r[11],
            language=r[12],
            content_hash=r[13],
            slot_key=r[14],
            value_key=r[15],
            status=r[16],
            valid_from=parse_iso_opt(r[17]),
            valid_to=parse_iso_opt(r[18]),
            recorded_at=parse_iso(r[19]),
            retracted_at=parse_iso_opt(r[20]),
            superseded_by=r[21],
            activation=r[22],
            access_count=r[23],
            last_accessed_at=parse_iso_opt(r[24]),
            utility=r[25],
            extractor=r[26],
            window_id=r[27],
            source=r[28],
            created_at=parse_iso_opt(r[29]),
            activation_at=parse_iso_opt(r[30]),
            archived_at=parse_iso_opt(r[31]),
            archive_reason=r[32],
            evidence=tuple(spans.get(r[1], ())),
            entities=tuple(ents.get(r[1], ())),
        )


def _records(conn: Any, params: dict[str, Any], vectors: bool) -> Iterator[_Record]:
    """Every record of the export, in :data:`RECORD_ORDER`."""
    for r in _pages(conn, "export_tombstones", params):
        yield TombstoneRecord(
            kind=r[1], key=r[2], namespace=r[3], reason=r[4], created_at=r[5], blocked=r[6]
        )
    for r in _key_pages(conn, "export_sessions", params):
        yield SessionRecord(
            namespace=r[0], session_id=r[1], session_kind=r[2], started_at=r[3], ended_at=r[4]
        )
    for r in _pages(conn, "export_events", params):
        yield EventRecord(
            id=r[1],
            namespace=r[2],
            session_id=r[3],
            role=r[4],
            content=r[5],
            content_hash=r[6],
            occurred_at=r[7],
            recorded_at=r[8],
            origin_class=r[9],
            session_kind=r[10],
            metadata=json.loads(r[11]),
        )
    yield from _claim_records(conn, params)
    for r in _key_pages(conn, "export_supersessions", params):
        yield SupersessionRecord(old=r[0], new=r[1], reason=r[2], created_at=r[3])
    for r in _key_pages(conn, "export_merges", params):
        yield MergeRecord(
            claim_id=r[0],
            source_key=r[1],
            stage=r[2],
            similarity=r[3],
            reason=r[4],
            created_at=r[5],
            source_hash=r[6],
        )
    for r in _pages(conn, "export_admission", params):
        yield AdmissionRecord(
            event_id=r[1], claim_key=r[2], mode=r[3], decision=r[4], rule=r[5], created_at=r[6]
        )
    if vectors:
        for r in _pages(conn, "export_vectors", params):
            yield VectorRecord(
                owner_kind=r[1],
                owner_id=r[2],
                namespace=r[3],
                model_id=r[4],
                model_version=r[5],
                dim=r[6],
                vector=base64.b64encode(r[7]).decode("ascii"),
                created_at=r[8],
            )


def export_sync(
    db: Path,
    cfg: Config,
    out: Path,
    *,
    namespace: str | None,
    vectors: bool,
    now: datetime,
) -> ExportSummary:
    """Write the export of ``db`` to ``out``; blocking (run it in a worker thread).

    :raises InputError: ``out`` exists as a directory, or its folder does not.
    """
    if out.is_dir() or not out.parent.is_dir():
        raise InputError(f"export: cannot write {out}")
    model = embedding_model(cfg.embedder)
    params = {
        "ns": namespace,
        "model": model.model_id,
        "version": model.model_version,
        "dim": model.dim,
    }
    module = sqlite_module(cfg.store.sqlite_module)
    conn, _ = connect_sync(db, cfg.store.model_copy(update={"load_vec": False}), module)
    tmp = out.with_name(out.name + ".partial")
    try:
        conn.execute("BEGIN")  # one read transaction: every page comes from one snapshot
        counted = conn.execute(QUERIES["export_counts"], params).fetchone()
        counts = dict(zip(RECORD_ORDER, (int(c) for c in counted), strict=True))
        if not vectors:
            counts["vector"] = 0
        names = tuple(r[0] for r in conn.execute(QUERIES["export_namespaces"], params))
        header = Header(
            format=FORMAT,
            version=FORMAT_VERSION,
            hlmem_version=_hlmem_version(),
            exported_at=now,
            schema_version=max(v for v, _, _ in migrations()),
            namespaces=names,
            embedding=model if vectors else None,
            counts=counts,
        )
        with tmp.open("w", encoding="utf-8", newline="\n") as f:
            f.write(header.model_dump_json() + "\n")
            for record in _records(conn, params, vectors):
                f.write(record.model_dump_json() + "\n")
            f.flush()
            os.fsync(f.fileno())
        conn.execute("COMMIT")
        os.replace(tmp, out)
    finally:
        conn.close()
        tmp.unlink(missing_ok=True)
    log.info("exported", extra={"action": "export", "path": str(out), "counts": counts})
    return ExportSummary(path=str(out), namespaces=names, embedding=header.embedding, counts=counts)


# --- import: validation -------------------------------------------------------------------------


def _error(path: Path, line: int, message: str) -> InputError:
    return InputError(f"import: {path}: line {line}: {message}")


def _short(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:3]:
        where = ".".join(str(p) for p in err["loc"]) or "record"
        parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    with path.open("r", encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            if line.strip():
                yield number, line


def _parse(path: Path, number: int, line: str) -> Record:
    try:
        data = json.loads(line)
    except ValueError as exc:
        raise _error(path, number, f"not JSON ({exc})") from None
    try:
        return RECORD.validate_python(data)
    except ValidationError as exc:
        raise _error(path, number, _short(exc)) from None


def validate_file(path: Path) -> Header:
    """Check every line of an export file; blocking. Return its header.

    :raises InputError: no such file, not UTF-8, bad JSON, an unknown format or version, a
        record that does not validate or is out of order, or counts that do not match the
        header (a truncated file), naming the line.
    """
    if not path.is_file():
        raise InputError(f"import: no such file: {path}")
    try:
        lines = _lines(path)
        first = next(lines, None)
        if first is None:
            raise InputError(f"import: {path} is empty")
        header = _header(path, *first)
        seen: dict[str, int] = dict.fromkeys(RECORD_ORDER, 0)
        rank, claims = 0, set[str]()
        for number, line in lines:
            record = _parse(path, number, line)
            kind = record.type
            if RECORD_ORDER.index(kind) < rank:
                raise _error(path, number, f"a {kind} record after {RECORD_ORDER[rank]} records")
            rank = RECORD_ORDER.index(kind)
            seen[kind] += 1
            _check(path, number, record, header, claims)
    except UnicodeDecodeError as exc:
        raise InputError(f"import: {path} is not UTF-8 ({exc.reason})") from None
    announced: dict[str, int] = {str(k): v for k, v in header.counts.items()}
    for name, n in seen.items():
        if n != announced.get(name, 0):
            raise InputError(
                f"import: {path}: the header announces {announced.get(name, 0)} {name} "
                f"record(s), the file holds {n} (truncated or edited?)"
            )
    return header


def _header(path: Path, number: int, line: str) -> Header:
    try:
        data = json.loads(line)
    except ValueError as exc:
        raise _error(path, number, f"not JSON ({exc})") from None
    if not isinstance(data, dict) or data.get("type") != "header":
        raise _error(path, number, "the first line must be the header (type 'header')")
    if data.get("format") != FORMAT:
        raise _error(path, number, f"not an {FORMAT} file (format {data.get('format')!r})")
    if data.get("version") != FORMAT_VERSION:
        raise _error(
            path,
            number,
            f"format version {data.get('version')!r} is not supported (this hlmem reads "
            f"version {FORMAT_VERSION})",
        )
    try:
        return Header.model_validate(data)
    except ValidationError as exc:
        raise _error(path, number, _short(exc)) from None


def _check(path: Path, number: int, record: Record, header: Header, claims: set[str]) -> None:
    if isinstance(record, ClaimRecord):
        if record.id in claims:
            raise _error(path, number, f"claim {record.id!r} appears twice")
        claims.add(record.id)
    elif isinstance(record, VectorRecord):
        model = header.embedding
        if model is None or (record.model_id, record.model_version, record.dim) != (
            model.model_id,
            model.model_version,
            model.dim,
        ):
            raise _error(path, number, "a vector of another model than the header's")
        try:
            size = len(record.raw())
        except (binascii.Error, ValueError):
            raise _error(path, number, "vector is not base64") from None
        if size != 4 * record.dim:
            raise _error(path, number, f"vector has {size} bytes, not 4 x dim ({record.dim})")


def read_batches(path: Path) -> Iterator[tuple[str, list[Record]]]:
    """The records of a validated file after its header, in runs of one type of at most
    :data:`PAGE_ROWS`."""
    lines = _lines(path)
    next(lines, None)
    batch: list[Record] = []
    for number, line in lines:
        record = _parse(path, number, line)
        if batch and (batch[0].type != record.type or len(batch) == PAGE_ROWS):
            yield batch[0].type, batch
            batch = []
        batch.append(record)
    if batch:
        yield batch[0].type, batch
