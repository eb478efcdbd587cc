"""The read path: understand the query, search both channels, fuse, filter, rank and pack.

Query understanding (``understanding``: time intent, entities, subject), the :class:`Recaller`
(``recaller``), what is shown of the ranked candidates (``items``: visibility, folding, the
packet), the questions that name a slot of the speaker (``slots``), what a result says of
itself and the echo and freshness rules (``answer``), the optional reranker (``rerank``) and
the activation boosts recall writes (``touches``).

The result's JSON shape (``RecallResult.model_dump(mode="json")``, ``hlmem recall --json``),
version ``schema_version`` = :data:`hlmem.messages.RECALL_SCHEMA_VERSION` (2)::

    {"schema_version": 2, "query_id": "q_…",
     "query": {"text", "mode": "current"|"history", "as_of", "valid_at", "period_end",
               "time_words", "entities", "loose_entities", "subject", "slots",
               "asks_assistant"},
     "items": [{"id", "kind": "claim"|"event", "text", "score", "status", "subject",
                "predicate", "value", "qualifiers", "polarity", "valid_from", "valid_to",
                "recorded_at", "evidence": [{"event_id", "session_id", "quote",
                "occurred_at"}], "evidence_total", "folded", "trusted", "channels",
                "feedback_id", "as_of"}],
     "packet": "…", "tokens", "budget_tokens", "reranked", "degraded",
     "answerability": "supported"|"low_confidence"|"no_evidence", "truncated"}

Times are ISO 8601 with an offset. A version adds fields without removing any; one that
removes or changes a field's meaning raises ``schema_version``.
"""

from __future__ import annotations

from hlmem.recall.items import (
    CandidateClaim,
    CandidateEvent,
    EvidenceLink,
    Scored,
    first_claims,
    fold_keys,
    fold_order,
)
from hlmem.recall.recaller import Recaller
from hlmem.recall.touches import Touches
from hlmem.recall.understanding import name_candidates

__all__ = [
    "CandidateClaim",
    "CandidateEvent",
    "EvidenceLink",
    "Recaller",
    "Scored",
    "Touches",
    "first_claims",
    "fold_keys",
    "fold_order",
    "name_candidates",
]
