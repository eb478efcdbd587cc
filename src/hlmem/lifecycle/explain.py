"""Explain a claim: where it came from, why it was kept, what replaced what, what it cost.

:func:`explain_claim` reads, for one claim: the claim with both clocks (valid from / to,
recorded and retracted), its status, activation and last access; its evidence events with
their quotes and source coordinates (origin class, session kind, session, when said and when
recorded); the admission decisions about its candidates and its events' sources; the merges
that folded other statements into it; the supersession chain in both directions with the
reasons; the entities it names; and the ledger rows of the model calls that produced it (the
extraction calls of its evidence events' windows, the embedding calls of its embedder jobs).
Secrets in any shown text are redacted. :func:`render` turns it into the text
``hlmem explain claim ID`` prints. Reads only.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from hlmem.clock import parse_iso, parse_iso_opt
from hlmem.errors import InputError
from hlmem.lang import redact
from hlmem.messages import Claim, EvidenceSpan
from hlmem.store import Store


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True)


class ExplainEvidence(_Model):
    """One evidence event of a claim, with its quote and where it came from."""

    event_id: str
    quote: str
    start_char: int
    end_char: int
    role: str
    origin_class: str
    session_kind: str
    session_id: str
    occurred_at: datetime
    recorded_at: datetime


class ExplainDecision(_Model):
    """An admission decision: about an event's source (level ``event``) or a candidate."""

    level: Literal["event", "claim"]
    event_id: str | None
    claim_key: str | None
    mode: str
    decision: str
    rule: str
    created_at: datetime


class ExplainMerge(_Model):
    """Another statement folded into the claim (dedup, or a restatement at conflict)."""

    source_key: str
    stage: str
    similarity: float | None
    reason: str
    created_at: datetime


class ClaimBrief(_Model):
    id: str
    predicate: str
    value: str
    text: str
    status: str
    polarity: int
    qualifiers: tuple[str, ...]
    valid_from: datetime | None
    valid_to: datetime | None
    recorded_at: datetime
    retracted_at: datetime | None


class ChainLink(_Model):
    """One supersession next to the claim: ``claim`` replaced it (``supersedes``) or was
    replaced by it (``superseded_by``); ``depth`` 1 is a direct neighbour."""

    claim: ClaimBrief
    reason: str
    at: datetime
    depth: int


class LedgerCall(_Model):
    """A row of the provider-call ledger."""

    id: int
    stage: str
    provider: str
    model: str
    call_kind: str
    job_id: int | None
    prompt_tokens: int
    completion_tokens: int
    cost: float
    currency: str
    latency_ms: float | None
    outcome: str
    error_class: str | None
    retries: int
    created_at: datetime


class ClaimExplanation(_Model):
    claim: Claim
    extractor: str
    source: str
    window_id: str | None
    activation: float
    access_count: int
    last_accessed_at: datetime | None
    utility: float
    evidence: tuple[ExplainEvidence, ...]
    admission: tuple[ExplainDecision, ...]
    merges: tuple[ExplainMerge, ...]
    #: older claims it replaced, nearest first (and what those replaced, and so on)
    supersedes: tuple[ChainLink, ...]
    #: newer claims that replaced it, nearest first
    superseded_by: tuple[ChainLink, ...]
    entities: tuple[str, ...]
    calls: tuple[LedgerCall, ...]


async def explain_claim(store: Store, claim_id: str) -> ClaimExplanation:
    """Everything known about one claim (module docstring).

    :raises InputError: no such claim (a forgotten one is said to be forgotten, and when).
    """
    rows = await store.fetchall("explain_claim", (claim_id,))
    if not rows:
        gone = await store.fetchall("forget_tombstone_of", ("claim", claim_id))
        if gone:
            raise InputError(
                f"explain: claim {claim_id!r} was forgotten at {gone[0]['created_at']}"
            )
        raise InputError(f"explain: no claim {claim_id!r}")
    r = rows[0]
    ev_rows = await store.fetchall("explain_evidence", (claim_id,))
    events = [e["event_id"] for e in ev_rows]
    merges = await store.fetchall("explain_merges", (claim_id,))
    keys = [claim_id, *(m["source_key"] for m in merges)]
    decisions = await store.fetchall(
        "explain_decisions", {"keys": json.dumps(keys), "events": json.dumps(events)}
    )
    back = await store.fetchall("explain_chain_back", {"id": claim_id})
    fwd = await store.fetchall("explain_chain_forward", {"id": claim_id})
    briefs = await _briefs(
        store, [b["old_claim_id"] for b in back] + [f["new_claim_id"] for f in fwd]
    )
    calls = await store.fetchall(
        "explain_calls",
        {"window": r["window_id"], "events": json.dumps(events), "needle": json.dumps(claim_id)},
    )
    entities = await store.fetchall("explain_entities", (claim_id,))
    spans = (
        EvidenceSpan(
            event_id=e["event_id"],
            quote=redact(e["quote"]),
            start_char=e["start_char"],
            end_char=e["end_char"],
        )
        for e in ev_rows
    )
    claim = Claim.from_row(r, spans, redact)
    return ClaimExplanation(
        claim=claim,
        extractor=r["extractor"],
        source=r["source"],
        window_id=r["window_id"],
        activation=r["activation"],
        access_count=r["access_count"],
        last_accessed_at=parse_iso_opt(r["last_accessed_at"]),
        utility=r["utility"],
        evidence=tuple(
            ExplainEvidence(
                event_id=e["event_id"],
                quote=redact(e["quote"]),
                start_char=e["start_char"],
                end_char=e["end_char"],
                role=e["role"],
                origin_class=e["origin_class"],
                session_kind=e["session_kind"],
                session_id=e["session_id"],
                occurred_at=parse_iso(e["occurred_at"]),
                recorded_at=parse_iso(e["recorded_at"]),
            )
            for e in ev_rows
        ),
        admission=tuple(
            ExplainDecision(
                level="event" if d["claim_key"] is None else "claim",
                event_id=d["event_id"],
                claim_key=d["claim_key"],
                mode=d["mode"],
                decision=d["decision"],
                rule=d["rule"],
                created_at=parse_iso(d["created_at"]),
            )
            for d in decisions
        ),
        merges=tuple(
            ExplainMerge(
                source_key=m["source_key"],
                stage=m["stage"],
                similarity=m["similarity"],
                reason=m["reason"],
                created_at=parse_iso(m["created_at"]),
            )
            for m in merges
        ),
        supersedes=tuple(_links(back, briefs, older=True)),
        superseded_by=tuple(_links(fwd, briefs, older=False)),
        entities=tuple(f"{e['name']} ({e['kind']})" for e in entities),
        calls=tuple(_call(c) for c in calls),
    )


async def _briefs(store: Store, ids: list[str]) -> dict[str, ClaimBrief]:
    rows = await store.fetchall("explain_briefs", (json.dumps(sorted(set(ids))),))
    return {
        b["id"]: ClaimBrief(
            id=b["id"],
            predicate=b["predicate"],
            value=redact(b["value"]),
            text=redact(b["text"]),
            status=b["status"],
            polarity=b["polarity"],
            qualifiers=tuple(json.loads(b["qualifiers"])),
            valid_from=parse_iso_opt(b["valid_from"]),
            valid_to=parse_iso_opt(b["valid_to"]),
            recorded_at=parse_iso(b["recorded_at"]),
            retracted_at=parse_iso_opt(b["retracted_at"]),
        )
        for b in rows
    }


def _links(rows: list[Any], briefs: dict[str, ClaimBrief], *, older: bool) -> list[ChainLink]:
    out: list[ChainLink] = []
    for r in rows:
        other = briefs.get(r["old_claim_id"] if older else r["new_claim_id"])
        if other is not None:
            at, depth = parse_iso(r["created_at"]), r["depth"] + 1
            out.append(ChainLink(claim=other, reason=redact(r["reason"]), at=at, depth=depth))
    return out


def _call(c: Any) -> LedgerCall:
    return LedgerCall(
        id=c["id"],
        stage=c["stage"],
        provider=c["provider"],
        model=c["model"],
        call_kind=c["call_kind"],
        job_id=c["job_id"],
        prompt_tokens=c["prompt_tokens"],
        completion_tokens=c["completion_tokens"],
        cost=c["cost"],
        currency=c["currency"],
        latency_ms=c["latency_ms"],
        outcome=c["outcome"],
        error_class=c["error_class"],
        retries=c["retries"],
        created_at=parse_iso(c["created_at"]),
    )


# --- text ---------------------------------------------------------------------------------------


def _day(t: datetime | None) -> str:
    return t.isoformat(timespec="seconds") if t else "-"


def _value(polarity: int, value: str, qualifiers: tuple[str, ...]) -> str:
    quals = f" ({', '.join(qualifiers)})" if qualifiers else ""
    return f"{'' if polarity > 0 else 'NOT '}{value}{quals}"


def _link_line(link: ChainLink) -> str:
    b = link.claim
    return (
        f"  {'  ' * (link.depth - 1)}- {b.id} [{b.status}] {b.predicate}: "
        f"{_value(b.polarity, b.value, b.qualifiers)} — {link.reason} ({_day(link.at)})"
    )


def render(x: ClaimExplanation) -> str:
    """The explanation as text, section by section."""
    c = x.claim
    lines = [
        f"claim {c.id}  [{c.status}]  namespace {c.namespace}",
        f"  {c.subject} {c.predicate}: {_value(c.polarity, c.value, c.qualifiers)}",
        f"  text: {c.text}",
        f"  valid time: {_day(c.valid_from)} .. {_day(c.valid_to)}",
        f"  recorded: {_day(c.recorded_at)}; retracted: {_day(c.retracted_at)}",
        f"  scope {c.scope}, importance {c.importance:.2f}, confidence {c.confidence:.2f}",
        f"  activation {x.activation:.2f}, accessed {x.access_count} time(s), last "
        f"{_day(x.last_accessed_at)}, feedback utility {x.utility:+.2f}",
        f"  from {x.source} by {x.extractor or '-'}"
        + (f", window {x.window_id}" if x.window_id else ""),
        "evidence:",
    ]
    lines += [
        f"  - {e.event_id} [{e.role}, {e.origin_class}, {e.session_kind}, session {e.session_id},"
        f" said {_day(e.occurred_at)}, recorded {_day(e.recorded_at)}]: “{e.quote}”"
        for e in x.evidence
    ] or ["  (none)"]
    lines.append("admission:")
    lines += [
        f"  - {d.level} {d.event_id if d.level == 'event' else d.claim_key}: {d.decision}"
        f" ({d.rule}) [{d.mode}]"
        for d in x.admission
    ] or ["  (none recorded)"]
    lines.append("merged into it:")
    lines += [
        f"  - {m.source_key} by {m.stage}: {m.reason}"
        + (f" (similarity {m.similarity:.2f})" if m.similarity is not None else "")
        for m in x.merges
    ] or ["  (nothing)"]
    for title, links in (
        ("supersedes (older)", x.supersedes),
        ("superseded by (newer)", x.superseded_by),
    ):
        lines.append(f"{title}:")
        lines += [_link_line(link) for link in links] or ["  (none)"]
    if c.status == "superseded" and not x.superseded_by:
        lines.append("  (its successor was forgotten)")
    lines.append("entities: " + (", ".join(x.entities) or "(none)"))
    lines.append("model calls:")
    lines += [
        f"  - #{k.id} {k.stage} {k.provider}/{k.model} {k.call_kind} {k.outcome}: "
        f"{k.prompt_tokens}+{k.completion_tokens} tokens, {k.cost:.6f} {k.currency}"
        + (f", {k.latency_ms:.0f} ms" if k.latency_ms is not None else "")
        + (f", job {k.job_id}" if k.job_id is not None else "")
        for k in x.calls
    ] or ["  (none: the rules extractor and the local embedder need no model)"]
    return "\n".join(lines)
