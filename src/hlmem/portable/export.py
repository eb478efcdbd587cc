"""The export writer: a store's claims and why, written as an ``hlmem-export`` file.

:func:`export_sync` reads on a connection of its own inside one read transaction, in pages of
:data:`~hlmem.portable.records.PAGE_ROWS` rows, builds the records of
:mod:`hlmem.portable.records` and writes them line by line to a temporary file renamed into
place. What goes into the file, and why, is described in :mod:`hlmem.portable.reader`, which
re-exports :func:`export_sync`.
"""

from __future__ import annotations

import base64
import json
import logging
import os
from collections.abc import Iterator
from datetime import datetime
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import Any

from hlmem.clock import parse_iso, parse_iso_opt
from hlmem.config import Config
from hlmem.errors import InputError
from hlmem.messages import EvidenceSpan
from hlmem.portable.records import (
    FORMAT,
    FORMAT_VERSION,
    PAGE_ROWS,
    RECORD_ORDER,
    AdmissionRecord,
    ClaimRecord,
    EntityRef,
    EventRecord,
    ExportSummary,
    Header,
    MergeRecord,
    Record,
    SessionRecord,
    SupersessionRecord,
    TombstoneRecord,
    VectorRecord,
    embedding_model,
)
from hlmem.store import QUERIES, ErrorMap, connect_sync, migrations, sqlite_module

log = logging.getLogger(__name__)


def _hlmem_version() -> str:
    try:
        return importlib_metadata.version("hlmem")
    except importlib_metadata.PackageNotFoundError:
        return "unknown"


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


def _records(conn: Any, params: dict[str, Any], vectors: bool) -> Iterator[Record]:
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
    :raises StoreError: ``db`` is not an hlmem database or cannot be read (corrupt); ``out`` is
        not written.
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
    # A corrupt file raises the module's own errors: one line, never a traceback.
    with ErrorMap(module).mapped(f"export: {db}: "):
        return _export(db, cfg, out, module, params, vectors=vectors, now=now)


def _export(
    db: Path,
    cfg: Config,
    out: Path,
    module: Any,
    params: dict[str, Any],
    *,
    vectors: bool,
    now: datetime,
) -> ExportSummary:
    model = embedding_model(cfg.embedder)
    store_cfg = cfg.store.model_copy(update={"load_vec": False})
    conn, _ = connect_sync(db, store_cfg, module, create=False)
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
