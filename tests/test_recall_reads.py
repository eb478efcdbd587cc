"""Recall's reads: ``Store.read`` (dependent reads in one trip to the reader thread), the
full-text search planned between statements (``fts_search_sync``), and the vector index's
head read with recall's first read (``VectorIndex.current``).

Real SQLite files in ``tmp_path``, both SQLite modules where the store is used directly,
Chinese and English inputs.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Literal

import pytest
from helpers import fast_config

import hlmem
from hlmem.clock import ManualClock
from hlmem.config import StoreConfig
from hlmem.errors import ClosedError, StoreError
from hlmem.index import (
    FTS_INSERT,
    FtsItem,
    fts_row,
    fts_search,
    fts_search_sync,
    match_ids,
    match_ids_sync,
)
from hlmem.lang import query_terms
from hlmem.store import Store, SyncReader

pytestmark = pytest.mark.anyio

ITEMS: list[FtsItem] = [
    ("claim", "c-coffee", "default", "张三每天早上喝美式咖啡"),
    ("event", "e-coffee", "default", "张三和我买了咖啡和绿茶"),
    ("claim", "c-tea", "default", "李四只喝绿茶，不喝咖啡"),
    ("event", "e-deploy", "default", "deployed billing-api v1.2 to db-prod-26 yesterday"),
    ("claim", "c-deploy", "default", "billing-api runs on db-prod-26"),
    ("event", "e-disk", "default", "db-prod-26 disk is almost full, coffee break first"),
    ("claim", "c-team", "team", "张三 in the team namespace drinks coffee too"),
]


@pytest.fixture(params=["sqlean", "stdlib"])
async def store(db_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[Store]:
    s = await Store.open(db_path, StoreConfig(sqlite_module=request.param))
    try:
        async with s.transaction() as tx:
            await tx.executemany(FTS_INSERT, [fts_row(*item) for item in ITEMS])
        yield s
    finally:
        await s.close()


# --- Store.read -----------------------------------------------------------------------------------


async def test_read_runs_reads_that_depend_on_each_other_in_one_call(store: Store) -> None:
    """The second read is chosen from the first one's rows, on the reader thread."""

    def mentions_then_rows(reader: SyncReader) -> list[tuple[Literal["claim", "event"], str]]:
        found = sorted(match_ids_sync(reader, "default", query_terms("张三"), limit=10))
        # the next read depends on the rows of the first: only when there were some
        if not found:
            return []
        both = match_ids_sync(reader, "default", query_terms("张三 绿茶"), limit=10)
        assert [item_id for _, item_id in both] == ["e-coffee"]
        return found

    assert await store.read(mentions_then_rows) == [("claim", "c-coffee"), ("event", "e-coffee")]
    # each namespace's own mentions
    first = await match_ids(store, "default", query_terms("db-prod-26"), limit=10)
    second = await match_ids(store, "team", query_terms("coffee"), limit=10)
    assert sorted(item_id for _, item_id in first) == ["c-deploy", "e-deploy", "e-disk"]
    assert second == [("claim", "c-team")]


@pytest.mark.parametrize("module", ["sqlean", "stdlib"])
async def test_packed_rows_are_the_rows(tmp_path: Path, module: str) -> None:
    """``SyncReader.fetch_packed``: the event rows recall reads packed in one JSON value are
    the rows a plain SELECT returns, value for value (Chinese, quotes, backslashes, newlines,
    emoji, nulls), and an empty read is no rows."""
    contents = [
        '我说："记住"这个\\路径 C:\\tmp\n第二行\t制表',
        'he said "remember" \\ and left 🙂',
        "普通的一句话",
    ]
    cfg = fast_config(store={"sqlite_module": module})
    async with hlmem.open(tmp_path / "m.db", config=cfg, pipeline="external") as mem:
        ids = [await mem.add_event("s1", text) for text in contents]
        columns = (
            "id, session_id, role, content, occurred_at, recorded_at, origin_class, session_kind,"
            " content_hash, coalesce((SELECT utility FROM event_feedback f"
            " WHERE f.event_id = events.id), 0.0)"
        )
        plain = await mem.store.read(
            lambda r: r._conn.execute(f"SELECT {columns} FROM events ORDER BY seq").fetchall()
        )
        packed = await mem.store.read(
            lambda r: r.fetch_packed("recall_events", (json.dumps(ids), "default"))
        )
        nothing = await mem.store.read(
            lambda r: r.fetch_packed("recall_events", (json.dumps(["nope"]), "default"))
        )
    assert sorted(tuple(row) for row in packed) == sorted(tuple(row) for row in plain)
    assert [row[3] for row in plain] == contents and nothing == []


async def test_read_maps_sqlite_errors_and_refuses_a_closed_store(store: Store) -> None:
    def broken(reader: SyncReader) -> list[object]:
        return reader.fetchall("fts_match_ids", {"match": "x"})  # parameters missing

    with pytest.raises(StoreError):
        await store.read(broken)
    await store.close()
    with pytest.raises(ClosedError):
        await store.read(lambda reader: reader.fetchall("vector_head"))


# --- the full-text search, planned between statements --------------------------------------------


@pytest.mark.parametrize(
    "query", ["咖啡 绿茶", "张三 咖啡", "db-prod-26 disk", "coffee billing-api"]
)
async def test_allow_keeps_the_allowed_hits_in_their_ranked_order(store: Store, query: str) -> None:
    """Every term ranks here (a small store): with ``allow`` the hits are the allowed ones of
    the same ranking, in the same order, numbered again from 1."""
    everything = await fts_search(store, "default", query, limit=50)
    assert len(everything) >= 2, everything
    allow = {hit.item_id for hit in everything[1::2]}
    terms = query_terms(query)

    def search(reader: SyncReader) -> list[tuple[str, int, float]]:
        hits = fts_search_sync(reader, namespace="default", terms=terms, allow=allow)
        return [(h.item_id, h.rank, h.score) for h in hits]

    kept = await store.read(search)
    expected = [h for h in everything if h.item_id in allow]
    assert [(i, s) for i, _, s in kept] == [(h.item_id, h.score) for h in expected]
    assert [rank for _, rank, _ in kept] == list(range(1, len(expected) + 1))


async def test_common_terms_fill_after_the_ranked_ones_and_never_with_allow(store: Store) -> None:
    """``rank_rows=2``: "咖啡" (4 rows here) is too common to rank, "绿茶" (2) is not: the
    tea items come ranked, then the newest coffee items unranked; with ``allow`` only the
    ranked tier is searched."""
    hits = await fts_search(store, "default", "绿茶 咖啡", rank_rows=2, limit=10)
    ranked = [h.item_id for h in hits if h.score != 0]
    newest = [h.item_id for h in hits if h.score == 0]
    assert sorted(ranked) == ["c-tea", "e-coffee"]
    assert newest == ["c-coffee"]  # the only coffee item not ranked already
    terms = query_terms("绿茶 咖啡")

    def search(reader: SyncReader) -> list[str]:
        allow = {"c-tea", "c-coffee"}
        found = fts_search_sync(
            reader, namespace="default", terms=terms, rank_rows=2, limit=10, allow=allow
        )
        return [h.item_id for h in found]

    assert await store.read(search) == ["c-tea"]


# --- recall: the index head read with the first read ----------------------------------------------


@pytest.mark.parametrize(
    ("first", "later", "query"),
    [
        ("我每天早上喝美式咖啡", "我最近开始学弹吉他", "我最近开始学弹什么？"),
        (
            "I drink black coffee every morning.",
            "I started learning the guitar.",
            "What did I start learning?",
        ),
    ],
    ids=["zh", "en"],
)
async def test_recall_sees_what_was_written_after_its_index_loaded(
    db_path: Path, first: str, later: str, query: str
) -> None:
    async with hlmem.open(db_path, config=fast_config()) as mem:
        await mem.remember("user", "note", first)
        await mem.drain(timeout_s=30)
        await mem.recall("coffee 咖啡")  # loads the vector index
        recaller = mem._recaller
        assert recaller is not None and recaller.index is not None
        head = (await mem.store.fetchall("vector_head"))[0]
        assert recaller.index.current(mem.store, head)
        await mem.remember("user", "note", later)
        await mem.drain(timeout_s=30)
        head = (await mem.store.fetchall("vector_head"))[0]
        assert not recaller.index.current(mem.store, head)  # a vector was written since
        result = await mem.recall(query)
        assert recaller.index.current(mem.store, head)  # ... and read by that recall
    found = [i for i in result.items if "吉他" in i.text or "guitar" in i.text]
    assert found, [(i.kind, i.text, i.channels) for i in result.items]
    assert any("vector" in i.channels for i in found)


# --- the evidence a recalled claim shows ------------------------------------------------------


@pytest.mark.parametrize(
    ("telling", "question"),
    [("我住在上海", "我住在哪个城市？"), ("I live in Shanghai.", "Where do I live?")],
)
async def test_a_claim_told_many_times_shows_its_first_and_latest_evidence(
    tmp_path: Path, telling: str, question: str
) -> None:
    """Each telling is one more evidence link of the same claim; a recalled claim shows the
    first and the latest (``recall.evidence_per_item`` in all) and counts them all, while
    explain lists every one and recall still folds away every telling it rests on."""
    clock = ManualClock(datetime(2026, 3, 1, 9, 0, tzinfo=UTC))
    cfg = fast_config(recall={"evidence_per_item": 3})
    tellings = []
    async with hlmem.open(tmp_path / "m.db", config=cfg, clock=clock) as mem:
        for day in range(9):
            session = f"day-{day}"
            tellings.append(await mem.add_event(session, telling))
            await mem.end_session(session)
            await mem.drain(timeout_s=30)
            clock.advance(timedelta(days=1).total_seconds())
        result = await mem.recall(question, k=10)
        claims = [i for i in result.items if i.kind == "claim"]
        assert claims, [(i.kind, i.text) for i in result.items]
        claim = claims[0]
        explained = await mem.explain(claim.id)
    assert claim.evidence_total == 9
    assert [e.event_id for e in claim.evidence] == [tellings[0], tellings[-2], tellings[-1]]
    assert [e.occurred_at for e in claim.evidence] == sorted(e.occurred_at for e in claim.evidence)
    assert {e.event_id for e in explained.evidence} == set(tellings)
    after = result.items[result.items.index(claim) + 1 :]
    assert not {i.id for i in after if i.kind == "event"} & set(tellings)
    assert f'"{claim.evidence[0].quote}"' in result.packet  # the first telling is quoted


@pytest.mark.parametrize(
    ("said", "question"),
    [("我们明天去哪里吃饭？", "明天吃饭"), ("Where should we eat tomorrow?", "eat tomorrow")],
)
async def test_the_same_words_said_again_are_one_item(
    tmp_path: Path, said: str, question: str
) -> None:
    """Events saying the same text (normalised) fold into the best ranked one, whose
    ``folded`` lists the others, instead of filling the result with copies."""
    async with hlmem.open(tmp_path / "m.db", config=fast_config()) as mem:
        ids = [
            await mem.add_event(f"s{i}", said if i % 2 else f"  {said.upper()} ") for i in range(4)
        ]
        await mem.add_event("s9", "今天天气不错 the weather is fine")
        await mem.flush()
        await mem.drain(timeout_s=30)
        result = await mem.recall(question, k=10)
    events = [i for i in result.items if i.kind == "event"]
    assert len(events) == 1, [(i.kind, i.text) for i in result.items]
    assert {events[0].id, *events[0].folded} == set(ids)
