"""What recall shows of its ranked candidates: rows, visibility, folding, items, the packet.

:class:`hlmem.recall.recaller.Recaller` finds and scores candidates; this module holds the rules
that decide what of them is shown and how, all of them plain functions of rows read on the
reader thread:

- :func:`read_rows`: the candidates' claim and event rows, by id, in the namespace;
- :func:`claim_visible` and :func:`event_visible`: time and status (current, history,
  ``as_of``, ``valid_at``); in current recall an event whose claims were all superseded or
  archived is history (:func:`claims_speak`, :func:`without_history_events`);
- :func:`fold_keys`, :func:`first_claims` and :func:`fold_order`: equivalent claims fold into
  the best ranked one, and an event shown as a claim's evidence is not shown again;
- :func:`claim_item` and :func:`event_item`: the :class:`~hlmem.messages.RecallItem` of a
  row, its texts and quotes redacted once per distinct text (:class:`Redactions`);
- :func:`packet`: the context packet within a token budget (and whether it left items out).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any, NamedTuple, TypeVar

from hlmem.clock import iso, parse_iso, parse_iso_opt
from hlmem.gateway import estimate_tokens
from hlmem.lang import normalize, redact
from hlmem.messages import QueryParse, RecallEvidence, RecallItem
from hlmem.store import SyncReader, records

# The rows recall reads come back as these records (fields read by name, at a tuple's cost:
# recall reads a dozen fields of every candidate, and a name lookup on a ``Row`` costs several
# times an index). A statement's columns are its record's fields in order: ``records`` checks
# them; a packed row (SyncReader.fetch_packed) has no column names, and its SQL lists its
# fields in the record's order.


class CandidateClaim(NamedTuple):
    """A ``recall_claims`` row: a candidate claim (any status)."""

    id: str
    namespace: str
    subject: str
    predicate: str
    value: str
    text: str
    status: str
    qualifiers: str  # a JSON array
    polarity: int
    importance: float
    confidence: float
    valid_from: str | None
    valid_to: str | None
    recorded_at: str
    retracted_at: str | None
    activation: float
    utility: float
    slot_key: str
    value_key: str
    content_hash: str
    scope: str
    #: when ``activation`` was evaluated (never: when the claim was stored)
    since: str


class CandidateEvent(NamedTuple):
    """A packed ``recall_events`` row: a candidate event."""

    id: str
    session_id: str
    role: str
    content: str
    occurred_at: str
    recorded_at: str
    origin_class: str
    session_kind: str
    content_hash: str  # of the normalised text
    utility: float = 0.0  # feedback (event_feedback), -1..1, as a claim's


class EvidenceLink(NamedTuple):
    """A packed ``recall_claim_evidence`` row: an evidence link of a claim shown; session,
    quote and time only when ``shown`` (the first and the latest links of the claim)."""

    claim_id: str
    event_id: str
    session_id: Any  # these three: str when shown, else None
    quote: Any
    occurred_at: Any
    seq: int
    shown: int


class EventClaims(NamedTuple):
    """A packed ``recall_event_claims`` row: how many claims resting on an event are active,
    and how many there are (active, superseded or archived)."""

    event_id: str
    active_claims: int
    claims: int


Candidate = CandidateClaim | CandidateEvent
R = TypeVar("R", bound=tuple[Any, ...])


def read_rows(
    reader: SyncReader, keys: Sequence[tuple[str, str]], namespace: str
) -> dict[tuple[str, str], Candidate]:
    """The rows of the candidates ``keys`` ((kind, id): claims and events) that are in
    ``namespace``, by key; a statement per kind that has some."""
    out: dict[tuple[str, str], Candidate] = {}
    claims = [item_id for kind, item_id in keys if kind == "claim"]
    if claims:
        found = reader.fetchall("recall_claims", (json.dumps(claims), namespace))
        for c in records(CandidateClaim, found):
            out[("claim", c.id)] = c
    events = [item_id for kind, item_id in keys if kind == "event"]
    if events:  # text only: packed (SyncReader.fetch_packed)
        packed = reader.fetch_packed("recall_events", (json.dumps(events), namespace))
        for e in _unpacked(CandidateEvent, packed):
            out[("event", e.id)] = e
    return out


def _unpacked(cls: type[R], packed: list[Any]) -> list[R]:
    """Packed rows (lists of the SQL's values, in the record's order) as records of ``cls``."""
    new = tuple.__new__
    return [new(cls, r) for r in packed]


def evidence_links(
    reader: SyncReader, claims: list[str], per_item: int
) -> dict[str, list[EvidenceLink]]:
    """The evidence links of ``claims``, by claim, oldest first; the first and the latest
    ``per_item`` - 1 of each with their session, quote and time."""
    links = reader.fetch_packed(
        "recall_claim_evidence", {"claims": json.dumps(claims), "shown": per_item}
    )
    out: dict[str, list[EvidenceLink]] = {}
    for e in sorted(_unpacked(EvidenceLink, links), key=lambda e: (e.claim_id, e.seq)):
        out.setdefault(e.claim_id, []).append(e)
    return out


def claim_visible(r: CandidateClaim, parsed: QueryParse, now: datetime) -> bool:
    status, valid_from, valid_to = r.status, r.valid_from, r.valid_to
    recorded, retracted = r.recorded_at, r.retracted_at
    # Archived claims (expired or long silent) are history: shown, marked, outside current.
    if status not in ("active", "superseded", "archived"):
        return False
    if parsed.as_of is not None:
        t = iso(parsed.as_of)
        if not (recorded <= t and (retracted is None or retracted > t)):
            return False
    if parsed.valid_at is not None:
        t = iso(parsed.valid_at)
        if not ((valid_from is None or valid_from <= t) and (valid_to is None or valid_to > t)):
            return False
    if parsed.as_of is None and parsed.valid_at is None:
        if parsed.mode == "current":
            return status == "active" and (valid_to is None or valid_to > iso(now))
    return True


def event_visible(r: CandidateEvent, parsed: QueryParse) -> bool:
    """Whether an event was told by the time the query asks about (its ``occurred_at``, never
    later than its ingestion: a replayed log keeps its times, as its claims do); in current
    recall its claims also speak for it (:func:`claims_say_history`, asked apart)."""
    if parsed.as_of is not None and min(r.occurred_at, r.recorded_at) > iso(parsed.as_of):
        return False  # not yet told then
    if parsed.period_end is not None:
        return True  # said after the period the query names: ranked lower (said_after_period)
    if parsed.valid_at is not None and r.occurred_at > iso(parsed.valid_at):
        return False  # not yet said then
    return True


def said_after_period(r: CandidateEvent, parsed: QueryParse) -> bool:
    """Whether an event was said after the period the query's words name ("last year"): often
    a later retelling of what happened then ("last year I visited Italy"), so it is kept, but
    ranked after what was said during the period (``recall.after_period_weight``)."""
    return parsed.period_end is not None and r.occurred_at >= iso(parsed.period_end)


def claims_speak(parsed: QueryParse) -> bool:
    """Whether an event's claims decide if it is shown: in current recall (no ``as_of``, no
    ``valid_at``), an event whose claims have all been superseded or archived is history."""
    return parsed.mode == "current" and parsed.as_of is None and parsed.valid_at is None


def claims_say_history(counts: EventClaims | None) -> bool:
    """A ``recall_event_claims`` row (``None``: no claim rests on the event) says history."""
    return counts is not None and counts.claims > 0 and counts.active_claims == 0


class Redactions(dict[str, str]):
    """:func:`hlmem.claims.admission_rules.redact` once per distinct text of one recall (a claim
    told many times has as many evidence quotes, often the same words)."""

    def __call__(self, text: str) -> str:
        return self[text]

    def __missing__(self, text: str) -> str:
        out = self[text] = redact(text)
        return out


class Scored(NamedTuple):
    """A visible candidate with its score."""

    score: float
    is_event: bool
    id: str
    row: Any  # CandidateEvent when is_event, else CandidateClaim


class Shown(NamedTuple):
    """An item :func:`fold_order` shows: the candidate and the ids folded into it."""

    score: float
    is_event: bool
    id: str
    row: Any  # as Scored.row
    folded: tuple[str, ...]


def fold_keys(scored: list[Scored]) -> dict[str, tuple[Any, ...]]:
    """Each claim's fold key: normalised subject, predicate, normalised value, polarity and
    status. The stored value, not the redacted one shown: two claims that differ only in a
    secret are two facts (and redacting every candidate's value cost milliseconds)."""
    return {
        s.id: (
            normalize(r.subject or ""),
            r.predicate,
            normalize(r.value or ""),
            r.polarity,
            r.status,
        )
        for s in scored
        if not s.is_event
        for r in (s.row,)
    }


def without_history_events(
    reader: SyncReader,
    scored: list[Scored],
    keys: dict[str, tuple[Any, ...]],
    evidence: dict[str, list[EvidenceLink]],
    k: int,
) -> list[Scored]:
    """``scored`` without the events its first ``k`` items would show whose claims have all
    been superseded or archived (history, in current recall).

    What the claims of an event say is read only for the events that would be shown, not for
    every candidate (with those of the next ``k`` items, in case some are hidden): a hidden
    event lets the next candidate in, whose events are then read, until every event shown has
    been (usually one read). Events past the first ``k`` items never change which items are
    shown (:func:`fold_order`), so the items are those of filtering every candidate first."""
    hidden: set[str] = set()
    read: set[str] = set()
    while True:
        kept = [s for s in scored if not (s.is_event and s.id in hidden)]
        # twice as many items as are shown (their first k are the items shown): the events of
        # the next k are read with them, so a hidden one rarely needs another read
        ahead = fold_order(kept, keys, evidence, 2 * k)
        if all(e.id in read for e in ahead[:k] if e.is_event):
            return kept
        todo = [e.id for e in ahead if e.is_event and e.id not in read]
        packed = reader.fetch_packed("recall_event_claims", (json.dumps(todo),))
        counts = {c.event_id: c for c in _unpacked(EventClaims, packed)}
        read.update(todo)
        hidden.update(e for e in todo if claims_say_history(counts.get(e)))


def first_claims(scored: list[Scored], keys: dict[str, tuple[Any, ...]], k: int) -> list[str]:
    """The best claim of each of the first ``k`` fold keys: every claim :func:`fold_order`
    returns is one of them (events only push claims out of the first ``k``)."""
    out: dict[tuple[Any, ...], str] = {}
    for s in scored:
        if not s.is_event and keys[s.id] not in out:
            out[keys[s.id]] = s.id
            if len(out) >= k:
                break
    return list(out.values())


def fold_order(
    scored: list[Scored],
    keys: dict[str, tuple[Any, ...]],
    evidence: dict[str, list[EvidenceLink]],
    k: int,
) -> list[Shown]:
    """The first ``k`` of ``scored`` (best first) after folding, each with the ids folded into
    it: a claim with the fold key (:func:`fold_keys`: subject, predicate, value, polarity,
    status) of a better ranked one folds into it, an event that is the evidence of a claim
    shown before it is dropped, and an event saying what a better ranked event said (the same
    text, normalised: a user who said it nine times) folds into that one. After ``k`` items only
    claims and events that fold into one of them are looked at.
    """
    out: list[Scored] = []
    folded: list[list[str]] = []
    seen: dict[tuple[Any, ...], int] = {}
    said: dict[str, int] = {}  # an event's content hash (of its normalised text) -> its item
    shown_events: set[str] = set()
    for entry in scored:
        item_id = entry.id
        if entry.is_event:
            if item_id in shown_events:
                continue
            digest = entry.row.content_hash
            if digest in said:
                if said[digest] < k:
                    folded[said[digest]].append(item_id)
            elif len(out) < k:
                said[digest] = len(out)
                out.append(entry)
                folded.append([])
            continue
        key = keys[item_id]
        if key in seen:
            if seen[key] < k:
                folded[seen[key]].append(item_id)
            continue
        if len(out) >= k:
            seen[key] = k  # a new item past the k-th: what folds into it is not shown either
            continue
        seen[key] = len(out)
        out.append(entry)
        folded.append([])
        shown_events.update(e.event_id for e in evidence.get(item_id, ()))
    return [Shown(*entry, tuple(f)) for entry, f in zip(out, folded, strict=True)]


# --- items and the packet ---------------------------------------------------------------


def claim_item(
    r: CandidateClaim,
    score: float,
    channels: tuple[str, ...],
    evidence: list[EvidenceLink],
    folded: tuple[str, ...],
    redacted: Redactions,
    quote_chars: int,
) -> RecallItem:
    return RecallItem(
        id=r.id,
        kind="claim",
        text=redacted(r.text),
        score=score,
        status=r.status,
        subject=r.subject,
        predicate=r.predicate,
        value=redacted(r.value),
        qualifiers=tuple(json.loads(r.qualifiers)),
        polarity=r.polarity,
        valid_from=parse_iso_opt(r.valid_from),
        valid_to=parse_iso_opt(r.valid_to),
        recorded_at=parse_iso(r.recorded_at),
        evidence=tuple(
            RecallEvidence(
                event_id=e.event_id,
                session_id=e.session_id,
                quote=redacted(e.quote)[:quote_chars],
                occurred_at=parse_iso(e.occurred_at),
            )
            for e in evidence
            if e.shown  # the first and the latest (recall.evidence_per_item in all)
        ),
        evidence_total=len(evidence),
        channels=channels,
        folded=folded,
    )


def event_item(
    r: CandidateEvent,
    score: float,
    channels: tuple[str, ...],
    trusted: bool,
    folded: tuple[str, ...],
    redacted: Redactions,
    quote_chars: int,
) -> RecallItem:
    text = redacted(r.content)
    return RecallItem(
        id=r.id,
        kind="event",
        text=text,
        score=score,
        status="event",
        recorded_at=parse_iso(r.recorded_at),
        evidence=(
            RecallEvidence(
                event_id=r.id,
                session_id=r.session_id,
                quote=text[:quote_chars],
                occurred_at=parse_iso(r.occurred_at),
            ),
        ),
        evidence_total=1,
        folded=folded,
        trusted=trusted,
        channels=channels,
    )


def packet(items: Sequence[RecallItem], budget: int, quote_chars: int) -> tuple[str, int, bool]:
    """Claims (with their times and a short quote) first, then events, within ``budget``
    tokens; returns the text, its token count and whether items were left out to fit."""
    header = "Relevant memories (claims first, then conversation excerpts):"
    lines = [header]
    used = estimate_tokens(header)
    truncated = False
    ordered = [i for i in items if i.kind == "claim"] + [i for i in items if i.kind == "event"]
    for item in ordered:
        line = packet_line(item, quote_chars)
        cost = estimate_tokens(line) + 1
        if used + cost > budget:
            truncated = True
            continue
        lines.append(line)
        used += cost
    if len(lines) == 1:
        return "", 0, truncated
    text = "\n".join(lines)
    return text, estimate_tokens(text), truncated


def packet_line(item: RecallItem, quote_chars: int) -> str:
    if item.kind == "event":
        ev = item.evidence[0]
        when = ev.occurred_at.date().isoformat()
        return f"- [{when}, conversation] {clip(item.text, quote_chars * 2)}"
    quals = f" ({', '.join(item.qualifiers)})" if item.qualifiers else ""
    since = item.valid_from.date().isoformat() if item.valid_from else "?"
    until = f" until {item.valid_to.date().isoformat()}" if item.valid_to else ""
    status = "" if item.status == "active" else f" [{item.status}]"
    # a volatile slot's old evidence (Recaller._stale_since): the value may have moved on
    fresh = f", as of {item.as_of.date().isoformat()}" if item.as_of else ""
    quote = f' — "{clip(item.evidence[0].quote, quote_chars)}"' if item.evidence else ""
    return f"- {item.text}{quals}{status} (valid from {since}{until}{fresh}){quote}"


def clip(text: str, n: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= n else flat[: n - 1] + "…"
