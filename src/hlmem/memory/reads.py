"""The read side of the facade: the models it returns and the queries behind its read methods.

It holds :class:`Stats`, :class:`Supersession` and :class:`JobRow`, and the bodies of
``Memory.stats``, ``claims``, ``events``, ``supersessions`` and ``list_jobs`` as plain
functions over the store (and the config, where a default namespace or the source policy is
needed). :class:`hlmem.memory.facade.Memory` is the API: its methods call these, and
:mod:`hlmem.memory.facade` re-exports the models, so import them from there. This module only reads,
and must not import :mod:`hlmem.memory.facade` (no cycle).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

from hlmem.claims import SPEAKER, SourcePolicy, subject_key, untrusted_rule
from hlmem.clock import iso, parse_iso
from hlmem.config import Config
from hlmem.lang import redact
from hlmem.messages import Claim, Event, EvidenceSpan, OriginClass, Role, SessionKind
from hlmem.store import Store


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
    #: counts what they stopped at ingest (re-sent forgotten events; ``Memory.blocked`` names them)
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


async def stats(store: Store) -> Stats:
    """Counts of what the store holds (``Memory.stats``)."""
    s = store
    jobs: dict[str, dict[str, int]] = {}
    for row in await s.fetchall("job_counts"):
        jobs.setdefault(row["kind"], {})[row["status"]] = row["n"]
    admission: dict[str, dict[str, int]] = {}
    for row in await s.fetchall("admission_counts"):
        admission.setdefault(row["level"], {})[row["decision"]] = row["n"]
    return Stats(
        events=await s.scalar("count_events"),
        sessions=await s.scalar("count_sessions"),
        claims={r["status"]: r["n"] for r in await s.fetchall("claim_counts")},
        windows={r["status"]: r["n"] for r in await s.fetchall("window_counts")},
        extractions=await s.scalar("count_extractions"),
        evidence=await s.scalar("count_evidence"),
        jobs=jobs,
        admission=admission,
        tombstones={
            r["kind"]: {"count": r["n"], "blocked": r["blocked"]}
            for r in await s.fetchall("forget_tombstone_counts")
        },
    )


async def claims(
    store: Store,
    config: Config,
    *,
    namespace: str | None,
    subject: str | None,
    predicate: str | None,
    history: bool,
    as_of: datetime | None,
    valid_at: datetime | None,
    limit: int,
) -> list[Claim]:
    """Claims of a namespace with their evidence, newest learned first (``Memory.claims``)."""
    ns = namespace or config.ingest.default_namespace
    view = "history" if history or as_of or valid_at else "current"
    if subject is not None:
        subject = subject_key(subject) if subject_key(subject) == SPEAKER else subject
    rows = await store.fetchall(
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
    ids = json.dumps([r["id"] for r in rows])
    for e in await store.fetchall("evidence_for_claims", (ids,)):
        ev.setdefault(e["claim_id"], []).append(
            EvidenceSpan(
                event_id=e["event_id"],
                quote=redact(e["quote"]),
                start_char=e["start_char"],
                end_char=e["end_char"],
            )
        )
    return [Claim.from_row(r, ev.get(r["id"], ())) for r in rows]


async def events(
    store: Store,
    config: Config,
    *,
    namespace: str | None,
    session_id: str | None,
    include_untrusted: bool,
    limit: int,
) -> list[Event]:
    """A namespace's raw events, oldest first, the newest ``limit`` (``Memory.events``)."""
    ns = namespace or config.ingest.default_namespace
    policy = SourcePolicy.from_config(config.admission)
    rows = await store.fetchall(
        "select_events", {"namespace": ns, "session_id": session_id, "limit": limit}
    )
    out = []
    for r in reversed(rows):
        trusted = untrusted_rule(policy, r["origin_class"], r["session_kind"]) is None
        if trusted or include_untrusted:
            out.append(
                Event(
                    id=r["id"],
                    namespace=r["namespace"],
                    session_id=r["session_id"],
                    role=Role(r["role"]),
                    content=redact(r["content"]),
                    content_hash=r["content_hash"],
                    occurred_at=parse_iso(r["occurred_at"]),
                    recorded_at=parse_iso(r["recorded_at"]),
                    origin_class=OriginClass(r["origin_class"]),
                    session_kind=SessionKind(r["session_kind"]),
                    metadata=json.loads(r["metadata"]),
                    trusted=trusted,
                )
            )
    return out


async def supersessions(store: Store, claim_ids: Iterable[str]) -> list[Supersession]:
    """Every supersession touching ``claim_ids`` (``Memory.supersessions``)."""
    ids = json.dumps(list(claim_ids))
    return [
        Supersession(
            old=r["old_claim_id"],
            new=r["new_claim_id"],
            reason=r["reason"],
            created_at=parse_iso(r["created_at"]),
        )
        for r in await store.fetchall("supersessions_of", (ids, ids))
    ]


async def list_jobs(
    store: Store, *, status: str | None, kind: str | None, limit: int
) -> list[JobRow]:
    """Jobs for the operator's listing, newest first (``Memory.list_jobs``)."""
    rows = await store.fetchall("list_jobs", {"status": status, "kind": kind, "limit": limit})
    return [
        JobRow(
            id=r["id"],
            kind=r["kind"],
            status=r["status"],
            attempts=r["attempts"],
            last_error=r["last_error"],
            detail=r["detail"],
            created_at=r["created_at"],
            updated_at=r["updated_at"],
            payload=_payload_dict(r["payload"]),
        )
        for r in rows
    ]


def _payload_dict(text: str) -> dict[str, Any]:
    """A job's payload for listing; a payload that is not a JSON object (the reason such a job
    failed) is shown as ``{"invalid": text}`` instead of breaking the listing."""
    try:
        value = json.loads(text)
    except ValueError:
        return {"invalid": text}
    return value if isinstance(value, dict) else {"invalid": text}
