"""The full-text channel of recall: FTS rows of claims and events, and searching them.

The pipeline writes a row when it stores an item (``fts_row`` -> the ``fts_insert`` query, in
its own transaction) and forget deletes it (``fts_delete``); recall reads with
:func:`fts_search`, whose ranked hits it fuses with the vector channel. Segmentation and
query safety live in :mod:`hlmem.lang.segment`, the tables in migration ``0004_recall_fts.sql``.
This module decides nothing about claim status or time: recall filters hits by joining the
claims and events they name. No row holds a secret: every body is built from the text with its
secrets left out (:func:`hlmem.lang.redaction.scrub`), claims' as events'.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal, NamedTuple, get_args

import anyio

from hlmem.errors import InputError
from hlmem.lang import (
    Lexicon,
    event_body,
    han_grams,
    index_text,
    query_terms,
    quote,
    scrub,
    spelled_apart,
)
from hlmem.store import Store, SyncReader

FtsKind = Literal["claim", "event"]
KINDS: tuple[FtsKind, ...] = get_args(FtsKind)

#: query names: ``fts_insert`` takes :func:`fts_row`, ``fts_delete`` takes :func:`fts_key`
FTS_INSERT = "fts_insert"
FTS_DELETE = "fts_delete"

#: per kind, the query of the items without a row, and the column its pages are keyed by
_BACKFILL_QUERIES: dict[FtsKind, tuple[str, str]] = {
    "claim": ("fts_unindexed_claims", "rowid"),
    "event": ("fts_unindexed_events", "seq"),
}
FtsItem = tuple[FtsKind, str, str, str]  # kind, item_id, namespace, text


class TermCount(NamedTuple):
    """A row of ``fts_count_terms``: a phrase's position, its rows counted up to the cap, and
    whether the count was taken in the namespace's rows only (``scoped``)."""

    pos: int
    n: int
    scoped: int


@dataclass(frozen=True, slots=True)
class FtsHit:
    """One item found by full-text search."""

    kind: FtsKind
    item_id: str
    rank: int  # position in the result list, 1 = best (what rank fusion uses)
    score: float  # bm25 relevance, higher is better (bm25() negated); 0: not ranked (common terms)


def fts_row(kind: FtsKind, item_id: str, namespace: str, text: str) -> tuple[str, str, str, str]:
    """The parameters of ``fts_insert`` for one item: its text, secrets left out, segmented by
    :func:`hlmem.lang.segment.index_text` (CPU-bound: batch it in a worker thread)."""
    return (kind, item_id, namespace, index_text(scrub(text)))


def claim_search_text(text: str, value: str, predicate: str, slot_words: list[str]) -> str:
    """What full-text search finds a claim by: its text, its value, and its slot's names
    (``slot_words``: the lexicon's search words for the predicate, in both languages), so a
    question about the slot finds the claim whatever words the claim itself used."""
    names = slot_words or [predicate.replace("_", " ")]
    return " ".join([text, value, *names])


def fts_key(kind: FtsKind, item_id: str) -> tuple[str, str]:
    """The parameters of ``fts_delete``."""
    return (kind, item_id)


def namespace_token(namespace: str) -> str:
    """The token that stands for ``namespace`` in the ``ns`` column (see migration 0004)."""
    return "ns" + namespace.encode("utf-8").hex() + "0"


def _namespace_match(namespace: str) -> str:
    """The MATCH clause for ``namespace``'s token in the ``ns`` column (the :token of the
    full-text queries)."""
    return f"ns : {quote(namespace_token(namespace))}"


def _kind_filter(kinds: Collection[str]) -> tuple[bool, str | None]:
    """(anything to search, the one kind to keep or None for all)."""
    unknown = set(kinds) - set(KINDS)
    if unknown:
        raise InputError(f"unknown full-text kinds {sorted(unknown)}; expected {list(KINDS)}")
    wanted = set(kinds)
    return bool(wanted), (wanted.pop() if len(wanted) == 1 else None)


#: the most rows one full-text search ranks with bm25 (see :func:`fts_search_terms`)
RANK_ROWS = 500


async def fts_search(
    store: Store,
    namespace: str,
    query_text: str,
    *,
    kinds: Collection[FtsKind] = KINDS,
    limit: int = 50,
    rank_rows: int = RANK_ROWS,
) -> list[FtsHit]:
    """The items of ``namespace`` that match ``query_text``, best first (bm25).

    Any term may match (OR); items matching more and rarer terms rank higher. The query is
    segmented in a worker thread (jieba's first use loads its dictionary), then read on the
    store's reader connection (:func:`fts_search_terms` says how much is ranked). A query
    without search terms returns ``[]`` without SQL.

    :raises InputError: ``kinds`` names something other than ``claim`` and ``event``.
    :raises StoreError: the read failed.
    """
    anything, _ = _kind_filter(kinds)
    if not anything or limit < 1:
        return []
    terms = await anyio.to_thread.run_sync(query_terms, query_text)
    return await fts_search_terms(
        store,
        namespace,
        terms,
        kinds=kinds,
        limit=limit,
        rank_rows=rank_rows,
        apart=spelled_apart(query_text),  # cached by query_terms' call
    )


async def fts_search_terms(
    store: Store,
    namespace: str,
    terms: Sequence[str],
    *,
    kinds: Collection[FtsKind] = KINDS,
    limit: int = 50,
    rank_rows: int = RANK_ROWS,
    allow: Collection[str] | None = None,
    every: bool = False,
    apart: Mapping[str, str] | None = None,
) -> list[FtsHit]:
    """:func:`fts_search` for a query already segmented (:func:`hlmem.lang.segment.query_terms`,
    with :func:`hlmem.lang.segment.spelled_apart` as ``apart``), in one trip to the store's reader
    thread (:func:`fts_search_sync` says how).

    :raises InputError: ``kinds`` names something other than ``claim`` and ``event``.
    :raises StoreError: the read failed.
    """
    anything, _ = _kind_filter(kinds)
    if not anything or limit < 1 or not terms:
        return []  # without a trip to the store
    return await store.read(
        partial(
            fts_search_sync,
            namespace=namespace,
            terms=terms,
            kinds=kinds,
            limit=limit,
            rank_rows=rank_rows,
            allow=allow,
            every=every,
            apart=apart,
        )
    )


class TermCounts:
    """Each search term's rows, counted up to the cap (``fts_count_terms``), remembered while
    the full-text index stays as it was: common terms ("我", "deploy") come back in query
    after query, and counting one walks up to ``rank_rows`` of its rows each time.

    The index's version is FTS5's structure record (``recall_fts_data`` row 10), which every
    committed change to the index rewrites (each flush adds a segment and counts a write);
    ``tests/test_fts.py`` checks that an insert, a new body, a namespace move and a delete each
    change it. Reading it costs one row. A different version empties the memory. Used on the
    reader thread only (one search at a time).
    """

    def __init__(self, max_entries: int = 8192) -> None:
        self.max_entries = max_entries
        self._version: bytes | None = None
        self._counts: dict[tuple[str, str, int], tuple[int, int]] = {}
        self.hits = self.misses = 0

    def counts(
        self, reader: SyncReader, params: dict[str, Any], phrases: Sequence[str]
    ) -> list[TermCount]:
        """``fts_count_terms``' rows for ``phrases``, counting only the phrases not remembered
        for this version of the index."""
        version = reader.fetchall("fts_version")[0]["block"]
        if version != self._version or len(self._counts) >= self.max_entries:
            self._counts.clear()
            self._version = version
        namespace, cap = str(params["namespace"]), int(params["cap"])
        distinct = list(dict.fromkeys(phrases))
        missing = [p for p in distinct if (namespace, p, cap) not in self._counts]
        self.misses += len(missing)
        self.hits += len(distinct) - len(missing)
        if missing:
            rows = _count_terms(reader, params, missing)
            for c in rows:
                self._counts[(namespace, missing[c.pos], cap)] = (c.n, c.scoped)
        return [TermCount(i, *self._counts[(namespace, p, cap)]) for i, p in enumerate(phrases)]


def _count_terms(
    reader: SyncReader, params: dict[str, Any], phrases: Sequence[str]
) -> list[TermCount]:
    rows = reader.fetchall(
        "fts_count_terms", {**params, "terms": json.dumps(phrases, ensure_ascii=False)}
    )
    return [TermCount(int(r["key"]), int(r["n"]), int(r["scoped"])) for r in rows]


def fts_search_sync(
    reader: SyncReader,
    *,
    namespace: str,
    terms: Sequence[str],
    kinds: Collection[FtsKind] = KINDS,
    limit: int = 50,
    rank_rows: int = RANK_ROWS,
    allow: Collection[str] | None = None,
    every: bool = False,
    term_counts: TermCounts | None = None,
    apart: Mapping[str, str] | None = None,
) -> list[FtsHit]:
    """:func:`fts_search_terms` on the reader thread (inside :meth:`Store.read`, so that a
    caller can read more in the same trip); ``allow`` keeps only those item ids; ``every``
    asks for items matching every term (a name: "grace nelson" is not everyone called Grace or
    Nelson). The work is bounded by ``rank_rows``, whatever the store's size.

    FTS5's bm25 first counts every row of every term (its idf) and then reads the length of
    each row it ranks: 2-4 µs a matching row, and a common term ("月", "deploy") matches tens
    of thousands of rows in a large store. So each term's rows are first counted up to
    ``rank_rows`` (``fts_count_terms``: a doclist walk that stops there), and:

    - the terms whose rows together number at most ``rank_rows``, rarest first, are ranked
      with bm25 (``fts_ranked``, or its best rows first: :func:`_ranked_rows`); when that is
      every term (always, in a store of at most ``rank_rows`` rows) this is the plain
      full-text search;
    - the other, common, terms only fill the list when it is short: with the newest items
      matching any term, unranked (score 0), after the ranked ones (``fts_newest``). A query
      whose terms are all common gets only these. Not with ``allow``: the walk back would
      mostly meet items that are not allowed (recall's vector channel searches the allowed
      items anyway).

    The plan is made here, between statements on the same thread, rather than in one
    statement's CTEs: it costs less than their materialisation (about a third of a search of
    rare terms), and a tier that is not needed is not prepared at all. ``term_counts``
    remembers the counts while the index is unchanged (:class:`TermCounts`). ``apart`` maps
    glued compounds to their parts (:func:`hlmem.lang.segment.spelled_apart`): a glued term that no
    row of the namespace holds is searched as that phrase instead (with ``every``, each of them
    when nothing there matches all the terms). A count taken over every namespace (the
    namespace is large: not scoped) is checked against the namespace's own rows
    (``fts_held_here``), so another namespace's text never decides how this one is searched.

    :raises InputError: ``kinds`` names something other than ``claim`` and ``event``.
    :raises StoreError: a read failed (as the module's error: :meth:`Store.read` maps it).
    """
    anything, kind = _kind_filter(kinds)
    if not anything or limit < 1 or not terms:
        return []
    token = _namespace_match(namespace)
    params = {"token": token, "namespace": namespace, "cap": rank_rows + 1}

    def count(phrases: list[str]) -> list[TermCount]:
        if term_counts is None:
            return _count_terms(reader, params, phrases)
        return term_counts.counts(reader, params, phrases)

    phrases = _phrases(terms, every)
    counts = count(phrases)
    spaced = _absent(reader, namespace, terms, phrases, counts, apart, every) if apart else {}
    if spaced:
        phrases = _phrases(terms, every, spaced)
        counts = count(phrases)
    head = f"{token} AND body : (" if counts[0].scoped else "body : ("
    # Rarest first (ties in query order), while the running total stays under the cap.
    ranked, total, running = [], 0, 0
    for c in sorted(counts, key=lambda c: (c.n, c.pos)):
        running += c.n
        if running < rank_rows + 1:
            ranked.append(c.pos)
            total = running
    scope = {"namespace": namespace, "kind": kind, "limit": limit}
    rows: list[Any] = []
    if ranked:
        match = head + " OR ".join(phrases[pos] for pos in sorted(ranked)) + ")"
        allowed = None if allow is None else json.dumps(sorted(allow), ensure_ascii=False)
        rows = _ranked_rows(reader, {**scope, "match": match, "allow": allowed}, limit, total)
    if len(ranked) < len(phrases) and allow is None and len(rows) < limit:
        match = head + " OR ".join(phrases) + ")"
        newest = _newest(reader.fetch_packed("fts_newest", {**scope, "match": match}))
        rows += [(kind, item_id, 0.0) for kind, item_id in newest]
    return fts_hits(rows, limit=limit)


def _newest(packed: list[Any]) -> list[tuple[FtsKind, str]]:
    """``(kind, item id)`` of packed ``[kind, item_id, rid]`` rows (``fts_newest``,
    ``fts_match_ids``), the newest (highest rowid) first."""
    by_rid = [(rid, kind, item_id) for kind, item_id, rid in packed]
    by_rid.sort(reverse=True)  # rowids are unique: the order of the rows they name
    return [(kind, item_id) for _, kind, item_id in by_rid]


#: a ranked search of at least this many rows per item kept joins only its best rows first
JOIN_LATER_PER_ITEM = 4


def _ranked_rows(reader: SyncReader, params: dict[str, Any], limit: int, rows: int) -> list[Any]:
    """Tier 1's rows (kind, item_id, rank), best first: those of ``fts_ranked`` for
    ``params``, in its order. ``rows`` is how many rows the ranked terms match (at most).

    ``fts_ranked`` joins every matching row to ``recall_docs`` (its namespace, kind and id,
    ~3 µs a row) before it keeps the best ``limit``. When the terms match many rows, the
    index's best ``2 * limit`` are taken alone (``fts_ranked_top``) and only they are joined
    (``fts_docs``); if fewer than ``limit`` of them are the namespace's (or allowed, or of the
    kind asked for) while more rows matched, the joined search runs after all."""
    if rows < JOIN_LATER_PER_ITEM * limit:
        return reader.fetchall("fts_ranked", params)
    top = reader.fetchall("fts_ranked_top", {"match": params["match"], "n": 2 * limit})
    ids = json.dumps([t["rowid"] for t in top])
    docs = {d["id"]: d for d in reader.fetchall("fts_docs", {**params, "ids": ids})}
    found = [
        (d["kind"], d["item_id"], t["rank"]) for t in top if (d := docs.get(t["rowid"])) is not None
    ]
    if len(found) >= limit or len(top) < 2 * limit:
        return found[:limit]
    return reader.fetchall("fts_ranked", params)  # the best rows are mostly elsewhere


def _absent(
    reader: SyncReader,
    namespace: str,
    terms: Sequence[str],
    phrases: Sequence[str],
    counts: Sequence[TermCount],
    apart: Mapping[str, str],
    every: bool,
) -> dict[str, str]:
    """The glued compounds of ``apart`` among ``terms`` that no item of ``namespace`` holds
    (with ``every``: all of them, when nothing there matches every term), with their parts.
    ``counts`` are ``fts_count_terms``' rows for ``phrases``; a count taken over every
    namespace (not scoped) is checked against the namespace's own rows."""

    def absent(pos: int, n: int, scoped: int) -> bool:
        here = {"match": f"body : ({phrases[pos]})", "namespace": namespace, "cap": n}
        return not n or not (scoped or reader.fetchall("fts_held_here", here)[0]["held"])

    if every:
        empty = list(terms) if absent(*counts[0]) else []
    else:
        empty = [terms[c.pos] for c in counts if terms[c.pos] in apart and absent(*c)]
    return {term: apart[term] for term in empty if term in apart}


def _phrases(
    terms: Sequence[str], every: bool, spaced: Mapping[str, str] | None = None
) -> list[str]:
    """The MATCH phrases of ``terms`` (one, all of them ANDed, with ``every``); ``spaced``
    replaces some terms by their parts (:func:`hlmem.lang.segment.spelled_apart`).

    With ``every``, a Han word longer than an event body's n-grams ("北京大学") is asked for
    whole or as all its n-grams (:func:`hlmem.lang.event_terms.han_grams`): a claim's body holds
    the word, an event's only its n-grams. (Without ``every``, any term may match, and the
    query's shorter words, "北京" and "大学", find the events.)"""
    quoted = [quote(spaced.get(term, term) if spaced else term) for term in terms]
    if not every:
        return quoted
    for pos, term in enumerate(terms):
        grams = han_grams(term)
        if grams:
            quoted[pos] = f"({quoted[pos]} OR ({' AND '.join(quote(g) for g in grams)}))"
    return [" AND ".join(quoted)]


def fts_hits(rows: Sequence[Any], *, limit: int) -> list[FtsHit]:
    """The hits of the rows ``(kind, item_id, rank)`` of tier 1 (ranked) then tier 2 (newest):
    each item once, in that order, at most ``limit``."""
    hits: list[FtsHit] = []
    seen: set[tuple[str, str]] = set()
    for kind, item_id, rank in rows:
        if (kind, item_id) not in seen and len(hits) < limit:
            seen.add((kind, item_id))
            hits.append(FtsHit(kind, item_id, len(hits) + 1, -float(rank)))
    return hits


def rare_terms_sync(
    reader: SyncReader,
    namespace: str,
    terms: Sequence[str],
    *,
    limit: int,
    rank_rows: int = RANK_ROWS,
    term_counts: TermCounts | None = None,
) -> list[str]:
    """Of ``terms``, the ``limit`` that the fewest rows of ``namespace`` hold, but at least two
    (a term only one row holds finds nothing else) and at most ``rank_rows`` (a common term
    finds everything): what best tells the rows that hold them from the rest. On the reader
    thread (:meth:`Store.read`)."""
    distinct = list(dict.fromkeys(t for t in terms if t))
    if not distinct or limit < 1:
        return []
    params = {
        "token": _namespace_match(namespace),
        "namespace": namespace,
        "cap": rank_rows + 1,
    }
    phrases = _phrases(distinct, False)
    if term_counts is None:
        counts = _count_terms(reader, params, phrases)
    else:
        counts = term_counts.counts(reader, params, phrases)
    usable = sorted((c.n, c.pos) for c in counts if 2 <= c.n <= rank_rows)
    return [distinct[pos] for _, pos in usable[:limit]]


def match_ids_sync(
    reader: SyncReader,
    namespace: str,
    terms: Sequence[str],
    *,
    limit: int,
    apart: Mapping[str, str] | None = None,
) -> list[tuple[FtsKind, str]]:
    """The newest ``limit`` items of ``namespace`` matching every one of ``terms``, unranked,
    newest first, as ``(kind, item_id)``; none without terms. For "what mentions this name":
    a fraction of a ranked search's cost, and the same items whenever ``limit`` covers every
    match. When none match, the glued compounds of ``apart``
    (:func:`hlmem.lang.segment.spelled_apart`) are tried as their parts. On the reader thread
    (:meth:`Store.read`); :func:`match_ids` from the event loop."""
    if not terms or limit < 1:
        return []
    params = {"token": _namespace_match(namespace), "namespace": namespace, "limit": limit}
    rows = reader.fetch_packed("fts_match_ids", {**params, "match": _phrases(terms, True)[0]})
    spaced = {term: apart[term] for term in terms if term in apart} if apart else {}
    if not rows and spaced:  # a glued compound no item holds: its parts as a phrase
        match = _phrases(terms, True, spaced)[0]
        rows = reader.fetch_packed("fts_match_ids", {**params, "match": match})
    return _newest(rows)


async def match_ids(
    store: Store,
    namespace: str,
    terms: Sequence[str],
    *,
    limit: int,
    apart: Mapping[str, str] | None = None,
) -> list[tuple[FtsKind, str]]:
    """:func:`match_ids_sync` in one trip to the store's reader thread."""
    return await store.read(
        partial(match_ids_sync, namespace=namespace, terms=terms, limit=limit, apart=apart)
    )


#: the migration that creates the full-text index (empty: SQL cannot segment Chinese)
FTS_MIGRATION = 4


async def index_after_migration(store: Store, *, lexicon: Lexicon) -> int:
    """When this open of ``store`` applied :data:`FTS_MIGRATION`, index the claims and events
    the file already held (:func:`fts_backfill`); return how many rows were written."""
    if FTS_MIGRATION not in store.migrated_now:
        return 0
    return await fts_backfill(store, lexicon=lexicon)


async def fts_backfill(store: Store, *, lexicon: Lexicon, batch_size: int = 500) -> int:
    """Index every claim (not forgotten) and event that has no full-text row yet; return how
    many rows were written. Rows are the ones the pipeline writes: a claim's search text with
    its value and its slot's names from ``lexicon``, an event's
    :func:`~hlmem.lang.event_terms.event_body`.

    For a database that had items before migration 0004 (SQL cannot segment Chinese, so the
    migration leaves the index empty). Safe to run beside the pipeline and to interrupt:
    each batch commits on its own, and ``fts_insert`` ignores a row written twice.

    :raises StoreError: a read or write failed.
    """
    written = 0
    for kind, (query, key) in _BACKFILL_QUERIES.items():
        after = 0
        while True:
            found = await store.fetchall(query, {"after": after, "limit": batch_size})
            if not found:
                break
            after = int(found[-1][key])
            params = await anyio.to_thread.run_sync(_rows, kind, found, lexicon)
            async with store.transaction() as tx:
                await tx.executemany(FTS_INSERT, params)
            written += len(params)
    return written


def _rows(kind: FtsKind, found: list[Any], lexicon: Lexicon) -> list[tuple[str, str, str, str]]:
    if kind == "event":  # the body the extractor writes, so both index an event alike
        return [(kind, r["id"], r["namespace"], event_body(r["content"])) for r in found]
    return [  # the search text dedup writes for a new claim
        fts_row(
            kind,
            r["id"],
            r["namespace"],
            claim_search_text(
                r["text"], r["value"], r["predicate"], lexicon.search_words(r["predicate"])
            ),
        )
        for r in found
    ]
