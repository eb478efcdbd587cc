"""Recall: full text + vectors over claims and raw events, fused, filtered, ranked, packed.

1. The query is understood (:mod:`hlmem.query`): mode (current / history), ``as_of``,
   ``valid_at``, entities, subject.
2. Candidates: jieba-segmented FTS5 (:mod:`hlmem.fts`) and an exact vector scan
   (:mod:`hlmem.vector_index`) over claims **and** events of the namespace. With the entity
   constraint (``enforce``) a query naming a known entity only considers memories about it, and
   the restriction is applied before each channel's candidate limit.
3. Reciprocal rank fusion: ``sum(1 / (rrf_k + rank))`` over the channels that found an item.
4. Time and status. Current: active claims not expired; history: superseded ones too, marked;
   ``as_of=T``: claims learned by T and not retracted then; ``valid_at=T``: claims true at T.
   Events follow their claims: in current recall an event whose claims are all superseded is
   history and left out; events with no claim are episodic memory. Untrusted events only when
   asked for.
5. Ranking: fused score × (1 + importance, recency, activation and feedback utility, weighted
   by ``recall.weight_*``); equivalent claims (same slot, value and polarity) fold into one.
6. The context packet: claims with their times and short evidence quotes first, then events,
   within the token budget.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import anyio

from hlmem import query as query_mod
from hlmem.admission import SourcePolicy, redact, untrusted_rule
from hlmem.clock import iso, parse_iso
from hlmem.config import Config
from hlmem.embedding import LocalEmbedder
from hlmem.fts import fts_search
from hlmem.messages import (
    QueryParse,
    RecallEvidence,
    RecallItem,
    RecallMode,
    RecallResult,
)
from hlmem.providers import estimate_tokens
from hlmem.store import Store
from hlmem.text import normalize
from hlmem.vector_index import VectorIndex

#: how far the entity-constrained candidate search looks (before the candidate limits)
ENTITY_SCAN = 5000
#: what one recall adds to the activation of what it returned, and the ceiling
ACTIVATION_BOOST = 0.1
ACTIVATION_CAP = 5.0
_EVENT_IMPORTANCE = 0.3


@dataclass
class _Candidate:
    kind: str
    id: str
    ranks: dict[str, int] = field(default_factory=dict)

    def fused(self, k: float) -> float:
        return sum(1.0 / (k + r) for r in self.ranks.values())


class Recaller:
    """Recall over one store; holds the vector index (kept in sync on every search)."""

    def __init__(self, store: Store, cfg: Config) -> None:
        self.store = store
        self.cfg = cfg
        self.rc = cfg.recall
        self.policy = SourcePolicy.from_config(cfg.admission)
        emb = cfg.embedder
        # The query is embedded by the same model as the stored vectors; with a remote
        # embedder the vector channel needs the gateway, which a reader may not have: then
        # recall runs on full text alone (see ``vector_channel``).
        self.embedder = LocalEmbedder(emb.dim) if emb.provider == "local" else None
        self.index = (
            VectorIndex(
                self.embedder.model_id,
                self.embedder.model_version,
                emb.dim,
                backend=self.rc.vector_backend,
            )
            if self.embedder is not None
            else None
        )

    async def recall(
        self,
        text: str,
        *,
        namespace: str,
        now: datetime,
        k: int,
        mode: RecallMode | None,
        as_of: datetime | None,
        valid_at: datetime | None,
        budget_tokens: int | None,
        include_untrusted: bool,
    ) -> RecallResult:
        known = [
            (r[0], r[1]) for r in await self.store.fetchall("recall_known_entities", (namespace,))
        ]
        parsed = query_mod.parse(
            text, now, known_entities=known, mode=mode, as_of=as_of, valid_at=valid_at
        )
        allow = await self._entity_allow(namespace, parsed)
        candidates = await self._candidates(text, namespace, allow)
        items = await self._items(candidates, namespace, parsed, now, include_untrusted)
        items = _fold(items)[:k]
        budget = budget_tokens or self.rc.budget_tokens
        packet, tokens = self.packet(items, budget)
        return RecallResult(
            query=parsed, items=tuple(items), packet=packet, tokens=tokens, budget_tokens=budget
        )

    # --- candidates ---------------------------------------------------------------------------

    async def _entity_allow(self, namespace: str, parsed: QueryParse) -> set[str] | None:
        """Ids of the memories about the query's high-confidence entities (None: no limit)."""
        if self.rc.entity_constraint == "off" or not parsed.entities:
            return None
        names = json.dumps(list(parsed.entities))
        allow = {
            r[0] for r in await self.store.fetchall("recall_entity_claims", (namespace, names))
        }
        for entity in parsed.entities:
            hits = await fts_search(self.store, namespace, entity, limit=ENTITY_SCAN)
            allow.update(h.item_id for h in hits)
        return allow

    async def _candidates(
        self, text: str, namespace: str, allow: set[str] | None
    ) -> dict[tuple[str, str], _Candidate]:
        out: dict[tuple[str, str], _Candidate] = {}
        strict = allow is not None and self.rc.entity_constraint == "enforce"
        wide = ENTITY_SCAN if strict else self.rc.fts_candidates
        fts = [
            h
            for h in await fts_search(self.store, namespace, text, limit=wide)
            if not strict or (allow is not None and h.item_id in allow)
        ][: self.rc.fts_candidates]
        for rank, hit in enumerate(fts, 1):
            out.setdefault((hit.kind, hit.item_id), _Candidate(hit.kind, hit.item_id)).ranks[
                "fts"
            ] = rank
        if self.index is not None and self.embedder is not None:
            vec = await anyio.to_thread.run_sync(self.embedder.embed_one, text)
            hits = await self.index.search(
                self.store,
                vec,
                self.rc.vector_candidates,
                namespace=namespace,
                allow=allow if strict else None,
            )
            hits = [h for h in hits if h.score >= self.rc.min_vector_score]
            for rank, vh in enumerate(hits, 1):
                out.setdefault((vh.kind, vh.item_id), _Candidate(vh.kind, vh.item_id)).ranks[
                    "vector"
                ] = rank
        if allow is not None and self.rc.entity_constraint == "prefer":
            for cand in out.values():
                if cand.id in allow:
                    cand.ranks["entity"] = 1
        return out

    # --- rows, filters and ranking -------------------------------------------------------------

    async def _items(
        self,
        candidates: dict[tuple[str, str], _Candidate],
        namespace: str,
        parsed: QueryParse,
        now: datetime,
        include_untrusted: bool,
    ) -> list[RecallItem]:
        claim_ids = [c.id for c in candidates.values() if c.kind == "claim"]
        event_ids = [c.id for c in candidates.values() if c.kind == "event"]
        claims = await self.store.fetchall("recall_claims", (json.dumps(claim_ids), namespace))
        evidence: dict[str, list[RecallEvidence]] = {}
        for r in await self.store.fetchall("recall_claim_evidence", (json.dumps(claim_ids),)):
            evidence.setdefault(r[0], []).append(
                RecallEvidence(
                    event_id=r[1],
                    session_id=r[2],
                    quote=redact(r[3])[: self.rc.quote_chars],
                    occurred_at=parse_iso(r[4]),
                )
            )
        events = await self.store.fetchall("recall_events", (json.dumps(event_ids), namespace))
        items: list[RecallItem] = []
        for r in claims:
            if not _claim_visible(r, parsed, now):
                continue
            cand = candidates[("claim", r[0])]
            signals = self._signals(r[9], r[13], r[15], r[16], now)
            items.append(
                RecallItem(
                    id=r[0],
                    kind="claim",
                    text=redact(r[5]),
                    score=cand.fused(self.rc.rrf_k) * signals,
                    status=r[6],
                    subject=r[2],
                    predicate=r[3],
                    value=redact(r[4]),
                    qualifiers=tuple(json.loads(r[7])),
                    polarity=r[8],
                    valid_from=parse_iso(r[11]) if r[11] else None,
                    valid_to=parse_iso(r[12]) if r[12] else None,
                    recorded_at=parse_iso(r[13]),
                    evidence=tuple(evidence.get(r[0], ())),
                    channels=tuple(sorted(cand.ranks)),
                )
            )
        for r in events:
            trusted = untrusted_rule(self.policy, r[6], r[7]) is None
            if not (trusted or include_untrusted) or not _event_visible(r, parsed):
                continue
            cand = candidates[("event", r[0])]
            signals = self._signals(_EVENT_IMPORTANCE, r[5], 0.0, 0.0, now)
            occurred = parse_iso(r[4])
            items.append(
                RecallItem(
                    id=r[0],
                    kind="event",
                    text=redact(r[3]),
                    score=cand.fused(self.rc.rrf_k) * signals,
                    status="event",
                    recorded_at=parse_iso(r[5]),
                    evidence=(
                        RecallEvidence(
                            event_id=r[0],
                            session_id=r[1],
                            quote=redact(r[3])[: self.rc.quote_chars],
                            occurred_at=occurred,
                        ),
                    ),
                    trusted=trusted,
                    channels=tuple(sorted(cand.ranks)),
                )
            )
        items.sort(key=lambda i: (-i.score, i.kind != "claim", i.id))
        return items

    def _signals(
        self, importance: float, recorded_at: str, activation: float, utility: float, now: datetime
    ) -> float:
        rc = self.rc
        age_days = max(0.0, (now - parse_iso(recorded_at)).total_seconds() / 86400)
        recency = math.pow(0.5, age_days / rc.recency_half_life_days)
        act = 1 - math.exp(-max(activation, 0.0) / 2)  # 0..1
        util = (utility + 1) / 2  # -1..1 -> 0..1
        return 1 + (
            rc.weight_importance * importance
            + rc.weight_recency * recency
            + rc.weight_activation * act
            + rc.weight_utility * util
        )

    # --- the packet ----------------------------------------------------------------------------

    def packet(self, items: Sequence[RecallItem], budget: int) -> tuple[str, int]:
        """Claims (with their times and a short quote) first, then events, within ``budget``
        tokens; returns the text and its token count."""
        header = "Relevant memories (claims first, then conversation excerpts):"
        lines = [header]
        used = estimate_tokens(header)
        ordered = [i for i in items if i.kind == "claim"] + [i for i in items if i.kind == "event"]
        for item in ordered:
            line = _line(item, self.rc.quote_chars)
            cost = estimate_tokens(line) + 1
            if used + cost > budget:
                continue
            lines.append(line)
            used += cost
        if len(lines) == 1:
            return "", 0
        text = "\n".join(lines)
        return text, estimate_tokens(text)


def _claim_visible(r: Any, parsed: QueryParse, now: datetime) -> bool:
    status, valid_from, valid_to, recorded, retracted = r[6], r[11], r[12], r[13], r[14]
    if status not in ("active", "superseded"):
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


def _event_visible(r: Any, parsed: QueryParse) -> bool:
    active_claims, claims = r[8], r[9]
    if parsed.as_of is not None and r[5] > iso(parsed.as_of):
        return False  # not yet told then
    if parsed.valid_at is not None and r[4] > iso(parsed.valid_at):
        return False  # not yet said then
    if parsed.mode == "current" and parsed.as_of is None and parsed.valid_at is None:
        # Its claims speak for it; when they have all been superseded, it is history.
        return not (claims and not active_claims)
    return True


def _fold(items: list[RecallItem]) -> list[RecallItem]:
    """Fold claims saying the same (subject, predicate, value, polarity, status) into the best
    ranked one, and drop events whose only role is to be a claim's evidence already shown."""
    out: list[RecallItem] = []
    seen: dict[tuple[Any, ...], int] = {}
    shown_events: set[str] = set()
    for item in items:
        if item.kind == "claim":
            key = (
                normalize(item.subject or ""),
                item.predicate,
                normalize(item.value or ""),
                item.polarity,
                item.status,
            )
            if key in seen:
                first = out[seen[key]]
                out[seen[key]] = first.model_copy(update={"folded": (*first.folded, item.id)})
                continue
            seen[key] = len(out)
            shown_events.update(e.event_id for e in item.evidence)
        elif item.id in shown_events:
            continue
        out.append(item)
    return out


def _line(item: RecallItem, quote_chars: int) -> str:
    if item.kind == "event":
        ev = item.evidence[0]
        when = ev.occurred_at.date().isoformat()
        return f"- [{when}, conversation] {_clip(item.text, quote_chars * 2)}"
    quals = f" ({', '.join(item.qualifiers)})" if item.qualifiers else ""
    since = item.valid_from.date().isoformat() if item.valid_from else "?"
    until = f" until {item.valid_to.date().isoformat()}" if item.valid_to else ""
    status = "" if item.status == "active" else f" [{item.status}]"
    quote = f' — "{_clip(item.evidence[0].quote, quote_chars)}"' if item.evidence else ""
    return f"- {item.text}{quals}{status} (valid from {since}{until}){quote}"


def _clip(text: str, n: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= n else flat[: n - 1] + "…"
