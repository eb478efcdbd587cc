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


def _pages(conn: Any, name: str, params: dict[str, Any], key: str) -> Iterator[Any]:
    """Every row of a paged export query (``key``: the column of the page key, a rowid)."""
    after: Any = 0
    while True:
        page = {**params, "after": after, "limit": PAGE_ROWS}
        rows = conn.execute(QUERIES[name], page).fetchall()
        if not rows:
            return
        yield from rows
        after = rows[-1][key]


def _key_pages(
    conn: Any, name: str, params: dict[str, Any], keys: tuple[str, str]
) -> Iterator[Any]:
    """Every row of a paged export query over a table without rowid, keyed by its two-column
    primary key (the columns ``keys``)."""
    a, b = "", ""
    while True:
        rows = conn.execute(
            QUERIES[name], {**params, "a": a, "b": b, "limit": PAGE_ROWS}
        ).fetchall()
        if not rows:
            return
        yield from rows
        a, b = rows[-1][keys[0]], rows[-1][keys[1]]


def _claim_records(conn: Any, params: dict[str, Any]) -> Iterator[ClaimRecord]:
    page: list[Any] = []
    for row in _pages(conn, "export_claims", params, "rowid"):
        page.append(row)
        if len(page) == PAGE_ROWS:
            yield from _claim_page(conn, page)
            page = []
    yield from _claim_page(conn, page)


def _claim_page(conn: Any, page: list[Any]) -> Iterator[ClaimRecord]:
    if not page:
        return
    ids = json.dumps([r["id"] for r in page])
    spans: dict[str, list[EvidenceSpan]] = {}
    for e in conn.execute(QUERIES["export_claim_evidence"], (ids,)).fetchall():
        spans.setdefault(e["claim_id"], []).append(
            EvidenceSpan(
                event_id=e["event_id"],
                quote=e["quote"],
                start_char=e["start_char"],
                end_char=e["end_char"],
            )
        )
    ents: dict[str, list[EntityRef]] = {}
    for e in conn.execute(QUERIES["export_claim_entities"], (ids,)).fetchall():
        ents.setdefault(e["claim_id"], []).append(EntityRef(name=e["name"], kind=e["kind"]))
    for r in page:
        yield ClaimRecord(
            id=r["id"],
            namespace=r["namespace"],
            subject=r["subject"],
            predicate=r["predicate"],
            value=r["value"],
            text=r["text"],
            qualifiers=tuple(json.loads(r["qualifiers"])),
            polarity=r["polarity"],
            scope=r["scope"],
            importance=r["importance"],
            confidence=r["confidence"],
            language=r["language"],
            content_hash=r["content_hash"],
            slot_key=r["slot_key"],
            value_key=r["value_key"],
            status=r["status"],
            valid_from=parse_iso_opt(r["valid_from"]),
            valid_to=parse_iso_opt(r["valid_to"]),
            recorded_at=parse_iso(r["recorded_at"]),
            retracted_at=parse_iso_opt(r["retracted_at"]),
            superseded_by=r["superseded_by"],
            activation=r["activation"],
            access_count=r["access_count"],
            last_accessed_at=parse_iso_opt(r["last_accessed_at"]),
            utility=r["utility"],
            extractor=r["extractor"],
            window_id=r["window_id"],
            source=r["source"],
            created_at=parse_iso_opt(r["created_at"]),
            activation_at=parse_iso_opt(r["activation_at"]),
            archived_at=parse_iso_opt(r["archived_at"]),
            archive_reason=r["archive_reason"],
            evidence=tuple(spans.get(r["id"], ())),
            entities=tuple(ents.get(r["id"], ())),
        )


def _records(conn: Any, params: dict[str, Any], vectors: bool) -> Iterator[Record]:
    """Every record of the export, in :data:`RECORD_ORDER`."""
    for r in _pages(conn, "export_tombstones", params, "id"):
        yield TombstoneRecord(
            kind=r["kind"],
            key=r["key"],
            namespace=r["namespace"],
            reason=r["reason"],
            created_at=r["created_at"],
            blocked=r["blocked"],
        )
    for r in _key_pages(conn, "export_sessions", params, ("namespace", "session_id")):
        yield SessionRecord(
            namespace=r["namespace"],
            session_id=r["session_id"],
            session_kind=r["session_kind"],
            started_at=r["started_at"],
            ended_at=r["ended_at"],
        )
    for r in _pages(conn, "export_events", params, "seq"):
        yield EventRecord(
            id=r["id"],
            namespace=r["namespace"],
            session_id=r["session_id"],
            role=r["role"],
            content=r["content"],
            content_hash=r["content_hash"],
            occurred_at=r["occurred_at"],
            recorded_at=r["recorded_at"],
            origin_class=r["origin_class"],
            session_kind=r["session_kind"],
            metadata=json.loads(r["metadata"]),
        )
    yield from _claim_records(conn, params)
    for r in _key_pages(conn, "export_supersessions", params, ("old_claim_id", "new_claim_id")):
        yield SupersessionRecord(
            old=r["old_claim_id"],
            new=r["new_claim_id"],
            reason=r["reason"],
            created_at=r["created_at"],
        )
    for r in _key_pages(conn, "export_merges", params, ("claim_id", "source_key")):
        yield MergeRecord(
            claim_id=r["claim_id"],
            source_key=r["source_key"],
            stage=r["stage"],
            similarity=r["similarity"],
            reason=r["reason"],
            created_at=r["created_at"],
            source_hash=r["source_hash"],
        )
    for r in _pages(conn, "export_admission", params, "id"):
        yield AdmissionRecord(
            event_id=r["event_id"],
            claim_key=r["claim_key"],
            mode=r["mode"],
            decision=r["decision"],
            rule=r["rule"],
            created_at=r["created_at"],
        )
    if vectors:
        for r in _pages(conn, "export_vectors", params, "seq"):
            yield VectorRecord(
                owner_kind=r["owner_kind"],
                owner_id=r["owner_id"],
                namespace=r["namespace"],
                model_id=r["model_id"],
                model_version=r["model_version"],
                dim=r["dim"],
                vector=base64.b64encode(r["vector"]).decode("ascii"),
                created_at=r["created_at"],
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
        counts = {kind: int(counted[kind]) for kind in RECORD_ORDER}
        if not vectors:
            counts["vector"] = 0
        names = tuple(r["namespace"] for r in conn.execute(QUERIES["export_namespaces"], params))
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
