"""The read path: understand the query, search both channels, fuse, filter, rank and pack.

Query understanding (``understanding``: time intent, entities, subject), the :class:`Recaller`
(``recaller``), what is shown of the ranked candidates (``items``: visibility, folding, the
packet), the optional reranker (``rerank``) and the activation boosts recall writes
(``touches``).
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
