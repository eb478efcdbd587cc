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
naming the line; a truncated file fails the header's counts). Then :mod:`hlmem.portable.importer`
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

**Modules.** This module validates and reads a file (:func:`validate_file`,
:func:`read_batches`) and is the entry point for everything else: the record models and the
format's constants live in :mod:`hlmem.portable.records`, the export writer in
:mod:`hlmem.portable.export`, and both are re-exported here.
"""

from __future__ import annotations

import binascii
import json
from collections.abc import Iterator
from pathlib import Path

from pydantic import ValidationError

from hlmem.errors import InputError
from hlmem.portable.export import export_sync
from hlmem.portable.records import (
    FORMAT,
    FORMAT_VERSION,
    PAGE_ROWS,
    RECORD,
    RECORD_ORDER,
    AdmissionRecord,
    ClaimRecord,
    EmbeddingModel,
    EntityRef,
    EventRecord,
    ExportSummary,
    Header,
    ImportCounts,
    ImportSummary,
    MergeRecord,
    Record,
    RecordType,
    SessionRecord,
    SupersessionRecord,
    TombstoneRecord,
    VectorRecord,
    embedding_model,
)

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "PAGE_ROWS",
    "RECORD",
    "RECORD_ORDER",
    "AdmissionRecord",
    "ClaimRecord",
    "EmbeddingModel",
    "EntityRef",
    "EventRecord",
    "ExportSummary",
    "Header",
    "ImportCounts",
    "ImportSummary",
    "MergeRecord",
    "Record",
    "RecordType",
    "SessionRecord",
    "SupersessionRecord",
    "TombstoneRecord",
    "VectorRecord",
    "embedding_model",
    "export_sync",
    "read_batches",
    "validate_file",
]


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
