"""Recall: full text + vectors over claims and raw events, fused, filtered, ranked, packed.

1. The query is understood (:mod:`hlmem.recall.understanding`): mode (current / history), ``as_of``,
   ``valid_at``, entities, subject.
2. Candidates: jieba-segmented FTS5 (:mod:`hlmem.index.fts`) and an exact vector scan
   (:mod:`hlmem.index.vectors`) over claims **and** events of the namespace, and the claims of
   the speaker's slots the question names (channel "slot": "我住在哪？" → ``location``,
   :mod:`hlmem.recall.slots`), which share no word with it. With the entity
   constraint (``enforce``) a query naming a known entity only considers memories about it, and
   the restriction is applied before each channel's candidate limit.
3. Fusion (:mod:`hlmem.recall.fusion`): each channel's relevance made comparable, weighted and
   summed ("scores"), or reciprocal rank fusion ("rrf"); then the turns around the best events
   (context) and what the best hits' other words find (feedback) join.
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
   within the token budget (``truncated`` when it left some out); a claim of a volatile slot
   with old evidence says "as of <date>".
7. Answerability (:mod:`hlmem.recall.answer`): ``supported``, ``low_confidence`` or
   ``no_evidence``.

With the asking ``session_id``, what that session said within ``recall.echo_window_s`` is
left out (echo suppression): an event said there, and a claim all of whose evidence was.

This module finds and scores the candidates (the :class:`Recaller`); what of them is shown and
how (rows, visibility by mode and time, folding, the items and the packet) is in
:mod:`hlmem.recall.items`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import partial
from typing import Any, cast

import anyio

from hlmem.claims import SPEAKER, SourcePolicy, slot_key, untrusted_rule
from hlmem.claims import activation as lifecycle
from hlmem.clock import iso, parse_iso
from hlmem.config import Config
from hlmem.gateway import Gateway
from hlmem.index import (
    AnnParams,
    FtsHit,
    TermCounts,
    VectorHit,
    VectorIndex,
    fts_search_sync,
    match_ids_sync,
    model_identity,
    rare_terms_sync,
)
from hlmem.lang import (
    load_lexicon,
    new_id,
    normalize,
    query_terms,
    scrub,
    secret_kind,
    segment,
    spelled_apart,
)
from hlmem.messages import (
    Answerability,
    QueryParse,
    RecallItem,
    RecallMode,
    RecallResult,
)
from hlmem.recall import understanding as query_mod
from hlmem.recall.answer import (
    COVERAGE_ITEMS,
    answerability,
    stale_since,
    term_coverage,
    without_echoes,
)
from hlmem.recall.expansion import expand
from hlmem.recall.fusion import CONTEXT, FEEDBACK, Fused, fuse
from hlmem.recall.items import (
    Candidate,
    CandidateClaim,
    CandidateEvent,
    Redactions,
    Scored,
    claim_item,
    claim_visible,
    claims_speak,
    event_item,
    event_visible,
    evidence_links,
    first_claims,
    fold_keys,
    fold_order,
    packet,
    read_rows,
    said_after_period,
    without_history_events,
)
from hlmem.recall.query_vector import QueryVectors
from hlmem.recall.rerank import rerank
from hlmem.store import Store, SyncReader

#: how many items mentioning one entity's name (full text, newest first) join the items
#: linked to it in the entity constraint
ENTITY_SCAN = 1000
_EVENT_IMPORTANCE = 0.3
#: queries up to this long are segmented and embedded on the event loop (``Recaller._prepare``,
#: ``Recaller._vectors``); longer ones on a worker thread
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
    text: str
    terms: tuple[str, ...]  # the FTS search terms (hlmem.lang.segment.query_terms)
    apart: dict[str, str]  # glued compounds' parts (hlmem.lang.segment.spelled_apart)
    plan: _Later  # the _Plan, once the first read has understood the query
    #: context and feedback may add what the query's own words do not find (not for a forget)
    related: bool = True


@dataclass(frozen=True, slots=True)
class _Plan:
    """What the query's first read found: how the query is understood, the ids the entity
    constraint allows (None: no limit), which both channels keep to when ``strict``, and the
    vector index's ``vector_head`` row."""

    parsed: QueryParse
    allow: set[str] | None
    strict: bool
    vector_head: Any
    #: the claims of the slots the question names (channel "slot"), active first
    slot_claims: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class _Scope:
    """What decides which candidates are visible, and how they score."""

    namespace: str
    parsed: QueryParse
    now: datetime
    include_untrusted: bool
    related: bool = True  # context may join (Recaller.recall)
    query_id: str = ""
    #: echo suppression: the asking session, and the earliest time (ISO) of what it said
    #: that is left out (None: nothing is)
    session_id: str | None = None
    echo_after: str | None = None

    def echoes(self, session_id: str | None, occurred_at: str | None) -> bool:
        """Whether what ``session_id`` said at ``occurred_at`` is the asking session's own
        recent words (``recall.echo_window_s``)."""
        return (
            self.echo_after is not None
            and session_id == self.session_id
            and occurred_at is not None
            and occurred_at >= self.echo_after
        )


@dataclass
class _Found:
    """What the two channels found, and the candidates' rows read so far by (kind, id): the
    full-text channel reads its hits' rows while the vector scan still runs."""

    fts: list[FtsHit] = field(default_factory=list)
    vector: list[VectorHit] = field(default_factory=list)
    rows: dict[tuple[str, str], Candidate] = field(default_factory=dict)
    read: set[tuple[str, str]] = field(default_factory=set)  # absent from rows: not there
    #: why the vector channel found nothing (no query vector: QueryVectors), if so
    degraded: str | None = None
    #: the expansions' hits (hlmem.recall.expansion), by fusion channel ("expansion:1:fts" …)
    expanded: dict[str, list[FtsHit | VectorHit]] = field(default_factory=dict)


#: entity kinds that say where, not whom: the entity constraint ranks their memories first
#: but does not keep to them
_WHERE_KINDS = frozenset({"place", "org"})
#: sessions whose last slot question is remembered for a follow-up (cleared when full)
_SESSION_SLOTS = 10_000
#: the characters of a feedback seed's text its words are taken from
_FEEDBACK_CHARS = 600
#: the channels that find what the query's own words do not (Recaller._related_secret)
_RELATED = frozenset({CONTEXT, FEEDBACK})
#: events whose "holds a secret" is remembered (cleared when full)
_SECRET_MEMO = 65_536


class Recaller:
    """Recall over one store; holds the vector index (kept in sync on every search)."""

    def __init__(self, store: Store, cfg: Config, gateway: Gateway | None = None) -> None:
        self.store = store
        self.cfg = cfg
        self.rc = cfg.recall
        # the reranker's way out (recall.rerank_provider); None: no reranking
        self.gateway = gateway if self.rc.rerank_provider else None
        # query expansion's (recall.expand_provider); None: off
        self.expander = gateway if self.rc.expand_provider else None
        self.policy = SourcePolicy.from_config(cfg.admission)
        # the predicates a question may name (hlmem.recall.slots): the extractor's lexicon
        self.lexicon = load_lexicon(cfg.extractor.lexicon_paths)
        # (namespace, session) -> the slots its last slot question named (_follow_up)
        self._session_slots: dict[tuple[str, str], tuple[str, ...]] = {}
        self._segmenter_ready = False  # jieba's dictionary is loaded (by a first query)
        self._holds_secret: dict[str, bool] = {}  # event id -> holds a secret (_related_secret)
        self.term_counts = TermCounts()  # used on the reader thread only
        emb = cfg.embedder
        # The query is embedded by the same model as the stored vectors (in process, or
        # through the gateway for a provider's); when it cannot be, recall runs on full text
        # and says so (``RecallResult.degraded``).
        self.query_vectors = QueryVectors(emb, self.rc, gateway)
        model_id, version = model_identity(emb)
        self.vector_floors = self.rc.vector_floors.get(
            model_id, (self.rc.min_vector_score, self.rc.min_event_vector_score)
        )
        self.index = VectorIndex(
            model_id,
            version,
            emb.dim,
            backend=self.rc.vector_backend,
            numpy_max_mib=self.rc.numpy_max_mib,
            ann_params=AnnParams.from_config(self.rc),
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
        related: bool = True,
        session_id: str | None = None,
    ) -> RecallResult:
        """``related``: whether context (the turns around the best events) and feedback (what
        the best hits' other words find) join the candidates; a forget by query looks up only
        what its words name. ``session_id``: the asking session, whose words of the last
        ``recall.echo_window_s`` are left out."""
        query = await self._prepare(text, related=related)
        found = _Found()
        # Every read of the reader connection is a hop to its thread (and back), which costs
        # more than most of recall's statements, and more still on a busy machine; so the
        # reads that depend on each other run together there (Store.read). The first one
        # understands the query (the entities it names, hence the entity constraint) and reads
        # the vector index's head; the full-text search is queued right behind it and reads
        # its plan on the same thread, without waiting for the event loop, then its hits'
        # rows; meanwhile the query is embedded, and the vector scan starts once the plan is
        # in. (A second reader connection, running the search beside the first read for any
        # constraint to come, measured no faster on two busy cores.)
        plan: list[_Plan] = []  # written and read on the reader thread only
        understand = partial(
            self._understand,
            text,
            namespace,
            now,
            mode,
            as_of,
            valid_at,
            into=plan,
            # a forget by query plans only what its words name, never a slot's claims
            slots=related and self.rc.slot_weight > 0,
            session=(namespace, session_id) if session_id else None,
        )
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._full_text, query, namespace, plan, found)
            tg.start_soon(self._vectors, query, namespace, found)
            if self.expander is not None:
                tg.start_soon(self._expanded, self.expander, query, namespace, found)
            # Queued now, before any task above runs: aiosqlite runs functions in the order
            # they were queued, so the full-text search (queued by its task) comes after it.
            decided = await self.store.read(understand)
            query.plan.set(decided)
        parsed = decided.parsed
        candidates = self._fuse(found, decided)
        reranked = False
        echo = self.rc.echo_window_s
        scope = _Scope(
            namespace,
            parsed,
            now,
            include_untrusted,
            related,
            query_id=new_id("q"),
            session_id=session_id,
            echo_after=iso(now - timedelta(seconds=echo)) if session_id and echo > 0 else None,
        )
        if self.gateway is None:
            items = await self._items(candidates, found, scope, k)
        else:  # the reranker reorders the best rerank_candidates, then the first k are kept
            wide = max(k, self.rc.rerank_candidates)
            items = await self._items(candidates, found, scope, wide)
            items, reranked = await rerank(self.gateway, self.rc, text, items, namespace=namespace)
            items = items[:k]
        budget = budget_tokens or self.rc.budget_tokens
        packet_text, tokens, truncated = packet(items, budget, self.rc.quote_chars)
        return RecallResult(
            query_id=scope.query_id,
            answerability=await self._answerability(items, parsed, query.terms),
            truncated=truncated,
            query=parsed,
            items=tuple(items),
            packet=packet_text,
            tokens=tokens,
            budget_tokens=budget,
            reranked=reranked,
            degraded=found.degraded,
        )

    async def _prepare(self, text: str, *, related: bool = True) -> _Query:
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
        # spelled_apart reads what query_terms cached
        return _Query(
            text=text,
            terms=tuple(terms),
            apart=spelled_apart(text),
            plan=_Later(),
            related=related,
        )

    # --- candidates ---------------------------------------------------------------------------

    def _understand(
        self,
        text: str,
        namespace: str,
        now: datetime,
        mode: RecallMode | None,
        as_of: datetime | None,
        valid_at: datetime | None,
        reader: SyncReader,
        *,
        into: list[_Plan],
        slots: bool = True,
        session: tuple[str, str] | None = None,
    ) -> _Plan:
        """On the reader thread: the namespace's entities the query names, the query parsed
        with them, the ids the entity constraint allows and the vector index's head; also
        appended to ``into``, where the full-text search queued behind finds it.

        ``slots``: whether the speaker's slots the question names are looked up. In a
        ``session`` (namespace, session id), a bare follow-up ("之前呢？", "and before?")
        asks about the slots of the session's previous slot question."""
        head = reader.fetchall("vector_head")[0]
        known = [
            (r["name"], r["kind"])
            for names in query_mod.name_batches(text)
            for r in reader.fetchall(
                "recall_known_entities", (namespace, json.dumps(names, ensure_ascii=False))
            )
        ]
        parsed = query_mod.parse(
            text,
            now,
            known_entities=known,
            mode=mode,
            as_of=as_of,
            valid_at=valid_at,
            lexicon=self.lexicon if slots else None,
        )
        if slots and session is not None:
            parsed = self._follow_up(parsed, session)
        # "enforce" keeps to the memories of whom (or what) a query names; a place or an
        # organisation it names is a search term, not a subject (its memories rank first, as
        # with "prefer"): "the one who works in Shenzhen: how old are they" is about a person
        # found through Shenzhen, and its answer never mentions Shenzhen.
        people = {normalize(name) for name, kind in known if kind not in _WHERE_KINDS} & set(
            parsed.entities
        )
        strict = bool(people) and self.rc.entity_constraint == "enforce"
        allow = self._entity_allow(reader, namespace, parsed.entities)
        strict = strict and allow is not None
        slot_claims: tuple[str, ...] = ()
        if parsed.slots:
            keys = [slot_key(namespace, SPEAKER, p) for p in parsed.slots]
            slot_claims = tuple(
                r["id"]
                for r in reader.fetchall(
                    "recall_slot_claims",
                    {
                        "namespace": namespace,
                        "slots": json.dumps(keys),
                        "limit": self.rc.slot_candidates,
                    },
                )
            )
        decided = _Plan(parsed, allow, strict, head, slot_claims)
        into.append(decided)
        return decided

    def _follow_up(self, parsed: QueryParse, session: tuple[str, str]) -> QueryParse:
        """``parsed`` with the slots of the session's previous slot question when it is a
        bare follow-up about another time (:func:`hlmem.recall.understanding.is_follow_up`);
        remembers the slots of a question that names some. Bounded: cleared when full."""
        if parsed.slots:
            if len(self._session_slots) >= _SESSION_SLOTS:
                self._session_slots.clear()
            self._session_slots[session] = parsed.slots
            return parsed
        before = self._session_slots.get(session)
        if before and query_mod.is_follow_up(parsed.text):
            return parsed.model_copy(update={"slots": before})
        return parsed

    def _entity_allow(
        self, reader: SyncReader, namespace: str, entities: tuple[str, ...]
    ) -> set[str] | None:
        """Ids of the memories about ``entities``, high-confidence entities the query names
        (None: no limit): the claims linked to them, and what mentions each name (a name the
        query contains: jieba is loaded and the name is short)."""
        if self.rc.entity_constraint == "off" or not entities:
            return None
        allow = {
            r["claim_id"]
            for r in reader.fetchall(
                "recall_entity_claims", (namespace, json.dumps(list(entities)))
            )
        }
        for entity in entities:
            found = match_ids_sync(
                reader,
                namespace,
                query_terms(entity),
                limit=ENTITY_SCAN,
                apart=spelled_apart(entity),
            )
            allow.update(item_id for _, item_id in found)
        return allow

    async def _full_text(
        self, query: _Query, namespace: str, plan: list[_Plan], found: _Found
    ) -> None:
        """The full-text channel (:func:`hlmem.index.fts.fts_search_sync`), on the reader thread
        right after :meth:`_understand`, whose plan it reads there; then its hits' rows, which
        ranking needs, read while the vector scan (usually the longer) still runs."""
        rc = self.rc

        def search(
            reader: SyncReader,
        ) -> tuple[list[FtsHit], list[FtsHit], dict[tuple[str, str], Candidate]]:
            if not plan:  # understanding the query failed: recall raises that
                return [], [], {}
            allow = plan[0].allow if plan[0].strict else None
            hits = fts_search_sync(
                reader,
                namespace=namespace,
                terms=query.terms,
                limit=rc.fts_candidates,
                rank_rows=rc.fts_rank_rows,
                allow=allow,
                term_counts=self.term_counts,
                apart=query.apart,
            )
            rows = read_rows(reader, [(h.kind, h.item_id) for h in hits], namespace)
            more = self._feedback(reader, query, namespace, hits, rows, allow)
            if more:
                rows |= read_rows(
                    reader,
                    [(h.kind, h.item_id) for h in more if (h.kind, h.item_id) not in rows],
                    namespace,
                )
            return hits, more, rows

        found.fts, feedback, rows = await self.store.read(search)
        if feedback:
            found.expanded[FEEDBACK] = list(feedback)
        found.rows.update(rows)
        found.read.update((h.kind, h.item_id) for h in [*found.fts, *feedback])

    def _feedback(
        self,
        reader: SyncReader,
        query: _Query,
        namespace: str,
        hits: list[FtsHit],
        rows: dict[tuple[str, str], Candidate],
        allow: set[str] | None,
    ) -> list[FtsHit]:
        """Pseudo-relevance feedback, on the reader thread: the ``feedback_terms`` rarest
        words (:func:`~hlmem.index.rare_terms_sync`) of the best ``feedback_seeds`` ranked
        full-text hits that the query does not have, searched; their hits."""
        rc = self.rc
        if not query.related or min(rc.feedback_weight, rc.feedback_seeds, rc.feedback_terms) <= 0:
            return []
        asked = set(query.terms)
        words: list[str] = []
        for h in hits[: rc.feedback_seeds]:
            row = rows.get((h.kind, h.item_id))
            if h.score <= 0 or row is None:
                continue
            text = row.content if h.kind == "event" else row.text  # type: ignore[union-attr]
            words += [t for t in query_terms(scrub(text[:_FEEDBACK_CHARS])) if t not in asked]
        terms = rare_terms_sync(
            reader,
            namespace,
            words,
            limit=rc.feedback_terms,
            rank_rows=rc.fts_rank_rows,
            term_counts=self.term_counts,
        )
        if not terms:
            return []
        return fts_search_sync(
            reader,
            namespace=namespace,
            terms=terms,
            limit=rc.fts_candidates,
            rank_rows=rc.fts_rank_rows,
            allow=allow,
            term_counts=self.term_counts,
        )

    async def _vectors(self, query: _Query, namespace: str, found: _Found) -> None:
        """The vector channel: the query embedded while the reader understands it, then an
        exact scan (on worker threads when large) once the plan is in; the index first reads
        what changed, when its head moved.

        Without the query's vector (:class:`QueryVectors` says why) the channel finds nothing
        and ``found.degraded`` holds the reason."""
        vector, found.degraded = await self.query_vectors.vector(query.text, namespace=namespace)
        decided: _Plan = await query.plan.get()
        if vector is None:
            return
        if not self.index.current(self.store, decided.vector_head):
            await self.index.refresh(self.store)
        hits = await self.index.search(
            self.store,
            vector,
            self.rc.vector_candidates,
            namespace=namespace,
            allow=decided.allow if decided.strict else None,
            refresh=False,  # checked above, with the head read by _understand
        )
        found.vector = self._above_floors(hits)

    async def _expanded(
        self, gateway: Gateway, query: _Query, namespace: str, found: _Found
    ) -> None:
        """Query expansion: the model's other queries (asked while the question is understood),
        each searched in both channels under the question's plan, one fusion channel each."""
        queries = await expand(gateway, self.rc, query.text, namespace=namespace)
        decided: _Plan = await query.plan.get()
        allow = decided.allow if decided.strict else None
        for n, text in enumerate(queries, 1):
            search = partial(
                fts_search_sync,
                namespace=namespace,
                terms=tuple(query_terms(text)),
                limit=self.rc.fts_candidates,
                rank_rows=self.rc.fts_rank_rows,
                allow=allow,
                term_counts=self.term_counts,
                apart=spelled_apart(text),
            )
            found.expanded[f"expansion:{n}:fts"] = list(await self.store.read(search))
            vector, _ = await self.query_vectors.vector(text, namespace=namespace)
            if vector is not None:
                hits = await self.index.search(
                    self.store, vector, self.rc.vector_candidates, namespace=namespace, allow=allow
                )
                found.expanded[f"expansion:{n}:vector"] = list(self._above_floors(hits))

    def _above_floors(self, hits: Sequence[VectorHit]) -> list[VectorHit]:
        claim_floor, event_floor = self.vector_floors
        return [h for h in hits if h.score >= (event_floor if h.kind == "event" else claim_floor)]

    def _fuse(self, found: _Found, decided: _Plan) -> dict[tuple[str, str], Fused]:
        """The channels' hits, by item (:func:`hlmem.recall.fusion.fuse`)."""
        hits: dict[str, Sequence[FtsHit | VectorHit]] = {
            "fts": found.fts,
            "vector": found.vector,
            **found.expanded,
        }
        prefer = decided.allow if not decided.strict else None  # "prefer", or not a person
        return fuse(hits, decided.slot_claims, prefer, self.rc, self.vector_floors)

    # --- rows, filters and ranking -------------------------------------------------------------

    async def _items(
        self,
        candidates: dict[tuple[str, str], Fused],
        found: _Found,
        scope: _Scope,
        k: int,
    ) -> list[RecallItem]:
        """The ``k`` best visible candidates, folded (:func:`~hlmem.recall.items.fold_order`),
        as items: one trip to the reader thread (:meth:`_ranked`) for the rows not read yet,
        the ranking and the evidence of the claims shown, which depends on the ranking."""
        return await self.store.read(partial(self._ranked, candidates, found, scope, k))

    def _ranked(
        self,
        candidates: dict[tuple[str, str], Fused],
        found: _Found,
        scope: _Scope,
        k: int,
        reader: SyncReader,
    ) -> list[RecallItem]:
        """:meth:`_items`, on the reader thread.

        Every candidate is scored from its row; only the ``k`` that are returned are built as
        items, with their texts and quotes redacted (redaction costs ~50 µs a text: doing it
        for every candidate cost more than the rest of recall), and only the claims that can
        be returned have their evidence read (a claim told hundreds of times has hundreds of
        evidence rows)."""
        parsed, now = scope.parsed, scope.now
        rows = found.rows | read_rows(
            reader, [key for key in candidates if key not in found.read], scope.namespace
        )
        claims = cast(list[CandidateClaim], [r for key, r in rows.items() if key[0] == "claim"])
        events = cast(list[CandidateEvent], [r for key, r in rows.items() if key[0] == "event"])
        scored: list[Scored] = []
        for r in claims:
            if not claim_visible(r, parsed, now):
                continue
            # Activation as decayed to now (hlmem.claims.activation), not as last written down.
            activation = lifecycle.current(
                self.cfg.maintenance,
                activation=r.activation,
                since=r.since,
                scope=r.scope,
                importance=r.importance,
                now=now,
            )
            signals = self._signals(r.importance, r.recorded_at, activation, r.utility, now)
            score = candidates[("claim", r.id)].fused(self.rc) * signals
            scored.append(Scored(score, False, r.id, r))
        trust: dict[str, bool] = {}
        for e in events:
            if self._related_secret(candidates[("event", e.id)].ranks, e):
                continue
            factor = self._event_signals(e, scope, trust)
            if factor is not None:
                score = candidates[("event", e.id)].fused(self.rc) * factor
                scored.append(Scored(score, True, e.id, e))
        if scope.related and self.rc.context_weight > 0 and self.rc.context_seeds > 0:
            scored = self._with_context(reader, scored, candidates, scope, trust)
        scored.sort(key=lambda s: (-s.score, s.is_event, s.id))
        keys = fold_keys(scored)
        shown = first_claims(scored, keys, k)  # every claim item is one of these
        evidence = evidence_links(reader, shown, self.rc.evidence_per_item) if shown else {}
        if scope.echo_after is not None:
            scored, evidence = without_echoes(
                reader, scored, keys, evidence, scope.echoes, k, self.rc.evidence_per_item
            )
        if claims_speak(parsed):
            scored = without_history_events(reader, scored, keys, evidence, k)
        redacted, quote_chars = Redactions(), self.rc.quote_chars
        items = []
        for score, is_event, item_id, r, folded in fold_order(scored, keys, evidence, k):
            cand = candidates[("event" if is_event else "claim", item_id)]
            channels = tuple(sorted({c.partition(":")[0] for c in cand.ranks}))
            if is_event:
                item = event_item(r, score, channels, trust[item_id], folded, redacted, quote_chars)
            else:
                links = evidence.get(item_id, [])
                item = claim_item(r, score, channels, links, folded, redacted, quote_chars)
                stale = stale_since(item, now, self.lexicon, self.rc.freshness_days)
                item = item.model_copy(update={"as_of": stale})
            items.append(item.model_copy(update={"feedback_id": f"{scope.query_id}:{item_id}"}))
        return items

    async def _answerability(
        self, items: Sequence[RecallItem], parsed: QueryParse, terms: Sequence[str]
    ) -> Answerability:
        """:func:`answerability`, the items' terms read on a worker thread when they are long
        (jieba, as :meth:`_prepare`)."""
        shown = items[:COVERAGE_ITEMS]
        if sum(len(i.text) for i in shown) <= _INLINE_CHARS:
            coverage = term_coverage(terms, shown)
        else:
            coverage = await anyio.to_thread.run_sync(term_coverage, terms, shown)
        return answerability(items, parsed, coverage, self.rc.supported_coverage)

    def _related_secret(self, ranks: dict[str, int], e: CandidateEvent) -> bool:
        """Whether ``e`` holds a secret and only context or feedback found it: an event with a
        secret in it is recalled only when the query's own words or vector find it, so that
        what a query finds never depends on a secret's words (a guess at a password that
        shares a word with other memories must find what a wrong guess finds). Remembered
        by event id (events never change)."""
        if any(c not in _RELATED for c in ranks):
            return False
        known = self._holds_secret.get(e.id)
        if known is None:
            known = secret_kind(e.content) is not None
            if len(self._holds_secret) >= _SECRET_MEMO:
                self._holds_secret.clear()
            self._holds_secret[e.id] = known
        return known

    def _event_signals(
        self, e: CandidateEvent, scope: _Scope, trust: dict[str, bool]
    ) -> float | None:
        """The ranking factor of a candidate event, or None when it is not to be shown (an
        untrusted source not asked for, said after the time asked about); ``trust`` gets
        whether its source is trusted."""
        trusted = untrusted_rule(self.policy, e.origin_class, e.session_kind) is None
        if not (trusted or scope.include_untrusted) or not event_visible(e, scope.parsed):
            return None
        if scope.echoes(e.session_id, e.occurred_at):
            return None  # the asking session's own words, a moment ago
        trust[e.id] = trusted
        signals = self._signals(_EVENT_IMPORTANCE, e.recorded_at, 0.0, e.utility, scope.now)
        if said_after_period(e, scope.parsed):
            signals *= self.rc.after_period_weight
        if e.role == "assistant" and not scope.parsed.asks_assistant:
            signals *= self.rc.assistant_weight
        return signals

    def _with_context(
        self,
        reader: SyncReader,
        scored: list[Scored],
        candidates: dict[tuple[str, str], Fused],
        scope: _Scope,
        trust: dict[str, bool],
    ) -> list[Scored]:
        """The turns said just before and after each of the best ``context_seeds`` events in
        its session gain ``context_weight`` times the best such event's score: added to a
        candidate's, or as a new candidate (channel "context") when visible. Only turns of
        ``context_roles`` gain (and the assistant's when the query asks what it said). An
        answer is often the turn after the one that matches the question, and the user's
        own words the turn before the assistant's reply that matches."""
        seeds = sorted((s for s in scored if s.is_event), key=lambda s: -s.score)
        seeds = seeds[: self.rc.context_seeds]
        if not seeds:
            return scored
        pairs = reader.fetch_packed(
            "recall_event_neighbours",
            {"seeds": json.dumps([s.id for s in seeds]), "namespace": scope.namespace},
        )
        seed_score = {s.id: s.score for s in seeds}
        gain: dict[str, float] = {}
        for seed, neighbour in pairs:
            gain[neighbour] = max(
                gain.get(neighbour, 0.0), self.rc.context_weight * seed_score[seed]
            )
        roles = set(self.rc.context_roles)
        if scope.parsed.asks_assistant:
            roles.add("assistant")
        out = []
        for s in scored:
            more = gain.pop(s.id, 0.0) if s.is_event else 0.0
            out.append(s._replace(score=s.score + more) if more and s.row.role in roles else s)
        fresh = read_rows(reader, [("event", i) for i in gain], scope.namespace)
        for (_, event_id), e in fresh.items():
            e = cast(CandidateEvent, e)
            if e.role not in roles or self._related_secret({CONTEXT: 0}, e):
                continue
            if self._event_signals(e, scope, trust) is None:
                continue
            candidates[("event", event_id)] = Fused("event", event_id, ranks={CONTEXT: 0})
            out.append(Scored(gain[event_id], True, event_id, e))
        return out

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
