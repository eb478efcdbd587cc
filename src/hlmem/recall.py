"""Recall: full text + vectors over claims and raw events, fused, filtered, ranked, packed.

1. The query is understood (:mod:`hlmem.query`): mode (current / history), ``as_of``,
   ``valid_at``, entities, subject.
2. Candidates: jieba-segmented FTS5 (:mod:`hlmem.fts`) and an exact vector scan
   (:mod:`hlmem.vector_index`) over claims **and** events of the namespace. With the entity
   constraint (``enforce``) a query naming a known entity only considers memories about it, and
   the restriction is applied before each channel's candidate limit.
3. Reciprocal rank fusion: ``sum(1 / (rrf_k + rank))`` over the channels that found an item.
4. Time and status. Current: active claims not expired; history: superseded and archived
   ones too, marked; ``as_of=T``: claims learned by T and not retracted then; ``valid_at=T``:
   claims true at T; events said by T (by the end of the period a query names: "in October
   2023" keeps what was said in October). Events follow their claims: in current recall an
   event whose claims are all superseded or archived is history and left out; events with no
   claim are episodic memory. Untrusted events only when asked for.
5. Ranking: fused score × (1 + importance, recency, activation decayed to now and feedback
   utility, weighted by ``recall.weight_*``); equivalent claims (same slot, value and polarity)
   fold into one.
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

from hlmem import lifecycle, segment
from hlmem import query as query_mod
from hlmem.admission import SourcePolicy, redact, untrusted_rule
from hlmem.clock import iso, parse_iso, parse_iso_opt
from hlmem.config import Config
from hlmem.embedding import LocalEmbedder
from hlmem.fts import fts_search_terms, match_ids_read
from hlmem.gateway import Gateway
from hlmem.messages import (
    QueryParse,
    RecallEvidence,
    RecallItem,
    RecallMode,
    RecallResult,
)
from hlmem.providers import estimate_tokens
from hlmem.rerank import rerank
from hlmem.segment import query_terms
from hlmem.store import Store
from hlmem.text import normalize
from hlmem.vector_index import VectorIndex

#: how many items mentioning one entity's name (full text, newest first) join the items
#: linked to it in the entity constraint
ENTITY_SCAN = 1000
_EVENT_IMPORTANCE = 0.3
#: queries up to this long are segmented on the event loop (see ``Recaller._prepare``)
_INLINE_CHARS = 512


class _Later:
    """A value one task sets and another awaits."""

    def __init__(self) -> None:
        self._set = anyio.Event()
        self._value: Any = None

    def set(self, value: Any) -> None:
        self._value = value
        self._set.set()

    async def get(self) -> Any:
        await self._set.wait()
        return self._value


@dataclass(frozen=True, slots=True)
class _Query:
    terms: tuple[str, ...]  # the FTS search terms (hlmem.segment.query_terms)
    vector: _Later  # the query's embedding, computed meanwhile (only with a local embedder)
    fresh: _Later  # set once the vector index has read what changed


@dataclass
class _Candidate:
    kind: str
    id: str
    ranks: dict[str, int] = field(default_factory=dict)

    def fused(self, k: float) -> float:
        return sum(1.0 / (k + r) for r in self.ranks.values())


class Recaller:
    """Recall over one store; holds the vector index (kept in sync on every search)."""

    def __init__(self, store: Store, cfg: Config, gateway: Gateway | None = None) -> None:
        self.store = store
        self.cfg = cfg
        self.rc = cfg.recall
        # the reranker's way out (recall.rerank_provider); None: no reranking
        self.gateway = gateway if self.rc.rerank_provider else None
        self.policy = SourcePolicy.from_config(cfg.admission)
        self._segmenter_ready = False  # jieba's dictionary is loaded (by a first query)
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
                numpy_max_mib=self.rc.numpy_max_mib,
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
        query = await self._prepare(text)
        async with anyio.create_task_group() as tg:
            # Meanwhile: the query's vector on a worker thread (~0.4 ms of numpy), and the
            # vector index's check for changes, first in the reader's queue.
            if self.index is not None and self.embedder is not None:
                tg.start_soon(self._embed, text, query.vector)
                tg.start_soon(self._refresh_index, query.fresh)
            names = query_mod.name_candidates(text)
            known = [
                (r[0], r[1])
                for r in await self.store.fetchall(
                    "recall_known_entities", (namespace, json.dumps(names, ensure_ascii=False))
                )
            ]
            parsed = query_mod.parse(
                text, now, known_entities=known, mode=mode, as_of=as_of, valid_at=valid_at
            )
            allow = await self._entity_allow(namespace, parsed)
            candidates = await self._candidates(query, namespace, allow)
        reranked = False
        if self.gateway is None:
            items = await self._items(candidates, namespace, parsed, now, include_untrusted, k)
        else:  # the reranker reorders the best rerank_candidates, then the first k are kept
            wide = max(k, self.rc.rerank_candidates)
            items = await self._items(candidates, namespace, parsed, now, include_untrusted, wide)
            items, reranked = await rerank(self.gateway, self.rc, text, items, namespace=namespace)
            items = items[:k]
        budget = budget_tokens or self.rc.budget_tokens
        packet, tokens = self.packet(items, budget)
        return RecallResult(
            query=parsed,
            items=tuple(items),
            packet=packet,
            tokens=tokens,
            budget_tokens=budget,
            reranked=reranked,
        )

    async def _prepare(self, text: str) -> _Query:
        """The query's FTS terms: jieba, ~50 µs for a question (cached), less than a hop to a
        worker thread costs; the first call loads jieba's dictionary (~1 s), on a worker
        thread, as does a long text."""
        if not self._segmenter_ready:
            await anyio.to_thread.run_sync(segment.load)
            self._segmenter_ready = True
        if len(text) <= _INLINE_CHARS:
            terms = query_terms(text)
        else:
            terms = await anyio.to_thread.run_sync(query_terms, text)
        return _Query(terms=tuple(terms), vector=_Later(), fresh=_Later())

    async def _embed(self, text: str, into: _Later) -> None:
        assert self.embedder is not None
        into.set(await anyio.to_thread.run_sync(self.embedder.embed_one, text))

    async def _refresh_index(self, done: _Later) -> None:
        assert self.index is not None
        done.set(await self.index.refresh(self.store))

    # --- candidates ---------------------------------------------------------------------------

    async def _entity_allow(self, namespace: str, parsed: QueryParse) -> set[str] | None:
        """Ids of the memories about the query's high-confidence entities (None: no limit)."""
        if self.rc.entity_constraint == "off" or not parsed.entities:
            return None
        # One reader trip: the claims linked to the entities, and what mentions each name (a
        # name the query contains: jieba is loaded and the name is short, so inline).
        reads: list[tuple[str, Any]] = [
            ("recall_entity_claims", (namespace, json.dumps(list(parsed.entities))))
        ]
        for entity in parsed.entities:
            read = match_ids_read(namespace, query_terms(entity), limit=ENTITY_SCAN)
            if read is not None:
                reads.append(read)
        found = await self.store.fetch_many(reads)
        allow = {r[0] for r in found[0]}
        for rows in found[1:]:
            allow.update(r[1] for r in rows)
        return allow

    async def _candidates(
        self, query: _Query, namespace: str, allow: set[str] | None
    ) -> dict[tuple[str, str], _Candidate]:
        """Both channels' hits, fused; the two searches run at once (SQLite's FTS on the
        reader thread, the vector scan on a worker thread or inline when small)."""
        out: dict[tuple[str, str], _Candidate] = {}
        strict = allow is not None and self.rc.entity_constraint == "enforce"
        found: dict[str, list[Any]] = {"fts": [], "vector": []}

        async def full_text() -> None:
            found["fts"] = await fts_search_terms(
                self.store,
                namespace,
                query.terms,
                limit=self.rc.fts_candidates,
                rank_rows=self.rc.fts_rank_rows,
                allow=allow if strict else None,
            )

        async def vectors() -> None:
            if self.index is None:
                return
            vector = await query.vector.get()
            await query.fresh.get()
            hits = await self.index.search(
                self.store,
                vector,
                self.rc.vector_candidates,
                namespace=namespace,
                allow=allow if strict else None,
                refresh=False,  # done at the start of this recall
            )
            rc = self.rc
            found["vector"] = [
                h
                for h in hits
                if h.score
                >= (rc.min_event_vector_score if h.kind == "event" else rc.min_vector_score)
            ]

        async with anyio.create_task_group() as tg:
            tg.start_soon(full_text)
            tg.start_soon(vectors)
        for channel in ("fts", "vector"):
            for rank, hit in enumerate(found[channel], 1):
                key = (hit.kind, hit.item_id)
                out.setdefault(key, _Candidate(hit.kind, hit.item_id)).ranks[channel] = rank
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
        k: int,
    ) -> list[RecallItem]:
        """The ``k`` best visible candidates, folded (:func:`_fold_order`), as items.

        Every candidate is scored from its row; only the ``k`` that are returned are built as
        items, with their texts and quotes redacted (redaction costs ~50 µs a text: doing it
        for every candidate cost more than the rest of recall), and only the claims that can
        be returned have their evidence read (a claim told hundreds of times has hundreds of
        evidence rows)."""
        claim_ids = [c.id for c in candidates.values() if c.kind == "claim"]
        event_ids = [c.id for c in candidates.values() if c.kind == "event"]
        claims, events = await self.store.fetch_many(
            [
                ("recall_claims", (json.dumps(claim_ids), namespace)),
                ("recall_events", (json.dumps(event_ids), namespace)),
            ]
        )
        scored: list[tuple[float, bool, str, Any]] = []
        for r in claims:
            if not _claim_visible(r, parsed, now):
                continue
            # Activation as decayed to now (hlmem.lifecycle), not as last written down.
            activation = lifecycle.current(
                self.cfg.maintenance,
                activation=r[15],
                since=r[21],
                scope=r[20],
                importance=r[9],
                now=now,
            )
            signals = self._signals(r[9], r[13], activation, r[16], now)
            score = candidates[("claim", r[0])].fused(self.rc.rrf_k) * signals
            scored.append((score, False, r[0], r))
        trust: dict[str, bool] = {}
        for r in events:
            trusted = untrusted_rule(self.policy, r[6], r[7]) is None
            if not (trusted or include_untrusted) or not _event_visible(r, parsed):
                continue
            trust[r[0]] = trusted
            signals = self._signals(_EVENT_IMPORTANCE, r[5], 0.0, 0.0, now)
            score = candidates[("event", r[0])].fused(self.rc.rrf_k) * signals
            scored.append((score, True, r[0], r))
        scored.sort(key=lambda s: (-s[0], s[1], s[2]))
        keys = _fold_keys(scored)
        shown = _first_claims(scored, keys, k)  # every claim item is one of these
        evidence: dict[str, list[Any]] = {}
        if shown:
            for r in await self.store.fetchall("recall_claim_evidence", (json.dumps(shown),)):
                evidence.setdefault(r[0], []).append(r)
        redacted = _Redactions()
        items = []
        for score, is_event, item_id, r, folded in _fold_order(scored, keys, evidence, k):
            cand = candidates[("event" if is_event else "claim", item_id)]
            channels = tuple(sorted(cand.ranks))
            if is_event:
                items.append(self._event_item(r, score, channels, trust[item_id], redacted))
            else:
                items.append(
                    self._claim_item(
                        r, score, channels, evidence.get(item_id, []), folded, redacted
                    )
                )
        return items

    def _claim_item(
        self,
        r: Any,
        score: float,
        channels: tuple[str, ...],
        evidence: list[Any],
        folded: tuple[str, ...],
        redacted: _Redactions,
    ) -> RecallItem:
        return RecallItem(
            id=r[0],
            kind="claim",
            text=redacted(r[5]),
            score=score,
            status=r[6],
            subject=r[2],
            predicate=r[3],
            value=redacted(r[4]),
            qualifiers=tuple(json.loads(r[7])),
            polarity=r[8],
            valid_from=parse_iso_opt(r[11]),
            valid_to=parse_iso_opt(r[12]),
            recorded_at=parse_iso(r[13]),
            evidence=tuple(
                RecallEvidence(
                    event_id=e[1],
                    session_id=e[2],
                    quote=redacted(e[3])[: self.rc.quote_chars],
                    occurred_at=parse_iso(e[4]),
                )
                for e in evidence
            ),
            channels=channels,
            folded=folded,
        )

    def _event_item(
        self, r: Any, score: float, channels: tuple[str, ...], trusted: bool, redacted: _Redactions
    ) -> RecallItem:
        text = redacted(r[3])
        return RecallItem(
            id=r[0],
            kind="event",
            text=text,
            score=score,
            status="event",
            recorded_at=parse_iso(r[5]),
            evidence=(
                RecallEvidence(
                    event_id=r[0],
                    session_id=r[1],
                    quote=text[: self.rc.quote_chars],
                    occurred_at=parse_iso(r[4]),
                ),
            ),
            trusted=trusted,
            channels=channels,
        )

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


def _event_visible(r: Any, parsed: QueryParse) -> bool:
    active_claims, claims = r[8], r[9]
    if parsed.as_of is not None and r[5] > iso(parsed.as_of):
        return False  # not yet told then
    if parsed.period_end is not None:
        if r[4] >= iso(parsed.period_end):
            return False  # said after the period the query names
    elif parsed.valid_at is not None and r[4] > iso(parsed.valid_at):
        return False  # not yet said then
    if parsed.mode == "current" and parsed.as_of is None and parsed.valid_at is None:
        # Its claims speak for it; when they have all been superseded, it is history.
        return not (claims and not active_claims)
    return True


class _Redactions(dict[str, str]):
    """:func:`hlmem.admission.redact` once per distinct text of one recall (a claim told many
    times has as many evidence quotes, often the same words)."""

    def __call__(self, text: str) -> str:
        return self[text]

    def __missing__(self, text: str) -> str:
        out = self[text] = redact(text)
        return out


_Scored = tuple[float, bool, str, Any]  # score, is an event, id, row


def _fold_keys(scored: list[_Scored]) -> dict[str, tuple[Any, ...]]:
    """Each claim's fold key: normalised subject, predicate, normalised value, polarity and
    status. The stored value, not the redacted one shown: two claims that differ only in a
    secret are two facts (and redacting every candidate's value cost milliseconds)."""
    return {
        item_id: (normalize(r[2] or ""), r[3], normalize(r[4] or ""), r[8], r[6])
        for _, is_event, item_id, r in scored
        if not is_event
    }


def _first_claims(scored: list[_Scored], keys: dict[str, tuple[Any, ...]], k: int) -> list[str]:
    """The best claim of each of the first ``k`` fold keys: every claim :func:`_fold_order`
    returns is one of them (events only push claims out of the first ``k``)."""
    out: dict[tuple[Any, ...], str] = {}
    for _, is_event, item_id, _r in scored:
        if not is_event and keys[item_id] not in out:
            out[keys[item_id]] = item_id
            if len(out) >= k:
                break
    return list(out.values())


def _fold_order(
    scored: list[_Scored],
    keys: dict[str, tuple[Any, ...]],
    evidence: dict[str, list[Any]],
    k: int,
) -> list[tuple[float, bool, str, Any, tuple[str, ...]]]:
    """The first ``k`` of ``scored`` (best first) after folding, each with the ids folded into
    it: a claim with the fold key (:func:`_fold_keys`: subject, predicate, value, polarity,
    status) of a better ranked one folds into it, and an event that is the evidence
    of a claim shown before it is dropped. After ``k`` items only claims that fold into one of
    them are looked at.
    """
    out: list[tuple[float, bool, str, Any, tuple[str, ...]]] = []
    folded: list[list[str]] = []
    seen: dict[tuple[Any, ...], int] = {}
    shown_events: set[str] = set()
    for score, is_event, item_id, r in scored:
        if is_event:
            if len(out) < k and item_id not in shown_events:
                out.append((score, True, item_id, r, ()))
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
        out.append((score, False, item_id, r, ()))
        folded.append([])
        shown_events.update(e[1] for e in evidence.get(item_id, ()))
    return [(*entry[:4], tuple(f)) for entry, f in zip(out, folded, strict=True)]


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
