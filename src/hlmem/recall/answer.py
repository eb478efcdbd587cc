"""What a recall result says of itself, and the rules on what it hands back.

- :func:`answerability`: "supported" (a claim of the slot the question names, visible at the
  time asked; or :func:`term_coverage` at least ``recall.supported_coverage``),
  "low_confidence" (items, none such) or "no_evidence" (none). The threshold is calibrated on
  the dev data (``bench/eval_answerability.py``, ``bench/results/2026-12-02-answerability.md``):
  the fused score could not be, because each channel's relevance is relative to its best hit.
- :func:`without_echoes`: echo suppression. What the asking session said a moment ago
  (``recall.echo_window_s``) is not a memory of it: the claims resting only on those words
  are left out (the recaller leaves out the events).
- :func:`stale_since`: freshness. A claim of a volatile slot (the lexicon's ``volatile``: a
  plan, a status) whose latest evidence is older than ``recall.freshness_days`` carries that
  date, and the packet says "as of" it.

Plain functions of items and rows read on the reader thread; no I/O of their own but the
evidence :func:`without_echoes` reads through the reader it is given.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from hlmem.lang import Lexicon, query_terms
from hlmem.messages import Answerability, QueryParse, RecallItem
from hlmem.recall.items import EvidenceLink, Scored, evidence_links, first_claims
from hlmem.store import SyncReader

#: the channel of the claims of the slots a question names (:mod:`hlmem.recall.slots`)
SLOT = "slot"
#: the first items whose terms answerability compares with the question's (term_coverage)
COVERAGE_ITEMS = 3


def answerability(
    items: Sequence[RecallItem], parsed: QueryParse, coverage: float, supported: float
) -> Answerability:
    """What the items say of the question: "supported" when one is a claim of a slot the
    question names, visible at the time asked (a current claim, for a question about now), or
    when ``coverage`` (:func:`term_coverage`) is at least ``supported``
    (``recall.supported_coverage``); "low_confidence" when there are items, none such;
    "no_evidence" when there are none."""
    if not items:
        return "no_evidence"
    if parsed.slots and any(i.kind == "claim" and SLOT in i.channels for i in items):
        return "supported"
    if coverage >= supported:
        return "supported"
    return "low_confidence"


def term_coverage(terms: Sequence[str], items: Sequence[RecallItem]) -> float:
    """The largest share of the question's search terms that one of the first
    :data:`COVERAGE_ITEMS` items holds. Unlike the fused score (each channel's relevance is
    relative to its best hit, so some item always scores high), it says how much of the
    question an item speaks to: on the dev data it told a question asked of its own
    conversation from one asked of another far better (bench/eval_answerability.py)."""
    asked = set(terms)
    if not asked:
        return 0.0
    best = 0.0
    for item in items[:COVERAGE_ITEMS]:
        held = asked.intersection(query_terms(item.text))
        best = max(best, len(held) / len(asked))
    return best


def without_echoes(
    reader: SyncReader,
    scored: list[Scored],
    keys: dict[str, tuple[Any, ...]],
    evidence: dict[str, list[EvidenceLink]],
    echoes: Callable[[str | None, str | None], bool],
    k: int,
    per_item: int,
) -> tuple[list[Scored], dict[str, list[EvidenceLink]]]:
    """``scored`` without the claims that would be shown all of whose evidence the asking
    session said within the echo window (``echoes(session_id, occurred_at)``; its events
    are left out by the recaller), and the evidence of the claims shown in their place. Only
    the links shown carry a session (the first and the latest ``evidence_per_item`` - 1):
    a claim told again elsewhere in between, and never since, is taken as an echo."""
    dropped: set[str] = set()
    while True:
        shown = first_claims(scored, keys, k)
        missing = [c for c in shown if c not in evidence]
        if missing:
            evidence |= evidence_links(reader, missing, per_item)
        echoed = {
            c
            for c in shown
            if evidence.get(c)
            and all(echoes(e.session_id, e.occurred_at) for e in evidence[c] if e.shown)
        }
        if not echoed:
            return scored, evidence
        dropped |= echoed
        scored = [s for s in scored if s.is_event or s.id not in dropped]


def stale_since(
    item: RecallItem, now: datetime, lexicon: Lexicon, freshness_days: float
) -> datetime | None:
    """When the latest evidence of a claim of a volatile slot was said, if that is older
    than ``recall.freshness_days`` (the packet says "as of" it); else None."""
    if item.predicate is None or not item.evidence:
        return None
    if not lexicon.is_volatile(item.predicate):
        return None
    latest = max(e.occurred_at for e in item.evidence)
    if (now - latest).total_seconds() <= freshness_days * 86400:
        return None
    return latest
