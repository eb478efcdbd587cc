"""How recall's channels' hits become one score per item (``recall.fusion``).

"scores" (the default): each channel's own relevance made comparable (:func:`relevance`),
weighted by channel (:func:`channel_weight`) and summed; "rrf": reciprocal rank fusion,
``sum(1 / (rrf_k + rank))``, which keeps only each channel's order. :func:`fuse` gathers every
channel's hits by item; the recaller multiplies the fused score by its ranking signals.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from hlmem.config import RecallConfig
from hlmem.index import FtsHit, VectorHit
from hlmem.recall.answer import SLOT

#: the relevance "scores" fusion gives a full-text hit of only common terms (not ranked by
#: bm25: :func:`hlmem.index.fts.fts_search_sync`), divided by its place among them
UNRANKED = 0.05
#: the channel an item found only as the context of a better one has
#: (:meth:`hlmem.recall.Recaller._with_context`)
CONTEXT = "context"
#: the channel of what the words of the best full-text hits found (pseudo-relevance feedback)
FEEDBACK = "feedback"
#: the channel of the memories of an entity the query names ("prefer")
ENTITY = "entity"


@dataclass
class Fused:
    """One candidate item and what each channel said of it."""

    kind: str
    id: str
    #: by channel: the hit's rank (1 = best) and its relevance made comparable (0..1)
    ranks: dict[str, int] = field(default_factory=dict)
    scores: dict[str, float] = field(default_factory=dict)

    def fused(self, rc: RecallConfig) -> float:
        if rc.fusion == "rrf":
            return sum(1.0 / (rc.rrf_k + r) for r in self.ranks.values())
        return sum(channel_weight(rc, c) * s for c, s in self.scores.items())


def channel_weight(rc: RecallConfig, channel: str) -> float:
    """The "scores" fusion's weight of a channel ("fts", "vector", "expansion:<n>:fts" …)."""
    if channel == "fts":
        return rc.fts_weight
    if channel == "vector":
        return rc.vector_weight
    if channel == ENTITY:
        return rc.entity_weight
    if channel == FEEDBACK:
        return rc.feedback_weight
    if channel == SLOT:
        return rc.slot_weight
    return rc.expansion_weight  # expansion:<n>:<fts|vector>


def relevance(
    channel: str, hits: Sequence[FtsHit | VectorHit], floors: tuple[float, float]
) -> list[float]:
    """Each hit's relevance in 0..1, comparable across channels: full text, bm25 over the
    best hit's (for an event, the best event's; for a claim, the best claim's or event's), a
    hit of common terms only (unranked) :data:`UNRANKED` over its place among them; vectors,
    how far the cosine is above the model's floor for the kind (``floors``: claim, event),
    over the room above that floor."""
    if channel.endswith("vector"):
        claim_floor, event_floor = floors
        out = []
        for h in hits:
            floor = event_floor if h.kind == "event" else claim_floor
            out.append(min(1.0, max(0.0, (h.score - floor) / max(1e-6, 1.0 - floor))))
        return out
    best: dict[str, float] = {}
    for h in hits:
        best[h.kind] = max(best.get(h.kind, 0.0), h.score)
    # Claims against the best claim or event, whichever scored higher; events against the
    # best event. A claim's words are jieba words that events (indexed as Han n-grams) do
    # not hold, so its matches carry a rarer word's weight: normalised with the events, the
    # best claim would outrank the event that says more of the question. But the only
    # claim matching a word or two ("用户的同事37岁" for the colleague's education) must not
    # count as the best match either.
    best["claim"] = max(best.get("claim", 0.0), best.get("event", 0.0))
    out, unranked = [], 0
    for h in hits:
        if h.score > 0:
            out.append(h.score / best[h.kind])
        else:
            unranked += 1
            out.append(UNRANKED / unranked)
    return out


def fuse(
    hits: Mapping[str, Sequence[FtsHit | VectorHit]],
    slot_claims: Sequence[str],
    prefer: set[str] | None,
    rc: RecallConfig,
    floors: tuple[float, float],
) -> dict[tuple[str, str], Fused]:
    """Every channel's hits by item (kind, id), with their rank and relevance in each; the
    claims of the slots the question names (channel "slot"), and a bonus (channel "entity")
    for the ids in ``prefer``."""
    out: dict[tuple[str, str], Fused] = {}
    for channel, found in hits.items():
        rel = relevance(channel, found, floors)
        for rank, (hit, r) in enumerate(zip(found, rel, strict=True), 1):
            cand = out.setdefault((hit.kind, hit.item_id), Fused(hit.kind, hit.item_id))
            cand.ranks[channel] = rank
            cand.scores[channel] = r
    for rank, claim_id in enumerate(slot_claims, 1):
        cand = out.setdefault(("claim", claim_id), Fused("claim", claim_id))
        cand.ranks[SLOT] = rank
        cand.scores[SLOT] = 1.0
    if prefer is not None:
        for cand in out.values():
            if cand.id in prefer:
                cand.ranks[ENTITY] = 1
                cand.scores[ENTITY] = 1.0
    return out
