from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from hlmem.config import StoreConfig
from hlmem.errors import ClosedError, InputError
from hlmem.index import (
    FTS_DELETE,
    FTS_INSERT,
    FtsHit,
    FtsItem,
    TermCounts,
    fts_backfill,
    fts_key,
    fts_row,
    fts_search,
    fts_search_sync,
)
from hlmem.lang import default_lexicon, index_text, load_user_dictionary, query_terms
from hlmem.store import Store, SyncReader

pytestmark = pytest.mark.anyio

ITEMS: list[FtsItem] = [
    ("claim", "c-theme", "default", "用户偏好深色模式的界面主题"),
    ("event", "e-city", "default", "我住在北京市"),
    ("claim", "c-version", "default", "Upgraded hlmem to v1.2; running the tests again"),
    ("event", "e-mixed", "default", "部署 v2.0 之后 dark mode 不见了"),
    ("claim", "c-cat", "default", "猫叫小白"),
    ("event", "e-syntax", "default", "the body:foo field and NEAR(a b) stay literal"),
    ("claim", "c-foo", "default", "foo alone"),
]


@pytest.fixture(params=["sqlean", "stdlib"])
def store_cfg(request: pytest.FixtureRequest) -> StoreConfig:
    return StoreConfig(sqlite_module=request.param)


@pytest.fixture
async def store(db_path: Path, store_cfg: StoreConfig) -> AsyncIterator[Store]:
    s = await Store.open(db_path, store_cfg)
    try:
        yield s
    finally:
        await s.close()


@pytest.fixture
def raw(store: Store, db_path: Path) -> Iterator[Any]:
    """A second connection to the file, with the store's own SQLite module."""
    conn = store.module.connect(str(db_path), isolation_level=None)
    yield conn
    conn.close()


async def index(store: Store, items: list[FtsItem]) -> None:
    async with store.transaction() as tx:
        await tx.executemany(FTS_INSERT, [fts_row(*item) for item in items])


def _ranked(reader: SyncReader, params: dict[str, Any]) -> list[Any]:
    return reader.fetchall("fts_ranked", params)


def filler(namespace: str) -> list[FtsItem]:
    """60 events of ``namespace``: put in the namespace searched, they make it large (more
    than 1/8 of the rows: searched without its token); elsewhere, they make it small."""
    return [("event", f"fill{i}", namespace, f"填充 {i}") for i in range(60)]


async def ids(store: Store, query: str, namespace: str = "default", **kw: Any) -> list[str]:
    return [hit.item_id for hit in await fts_search(store, namespace, query, **kw)]


# --- what matches -----------------------------------------------------------------------------


async def test_two_character_chinese_queries_find_longer_words(store: Store) -> None:
    await index(store, ITEMS)
    assert await ids(store, "主题") == ["c-theme"]
    assert await ids(store, "北京") == ["e-city"]
    assert await ids(store, "模式") == ["c-theme"]
    assert await ids(store, "小白") == ["c-cat"]


async def test_english_words_stems_numbers_and_versions(store: Store) -> None:
    await index(store, ITEMS)
    assert await ids(store, "v1.2") == ["c-version"]
    assert await ids(store, "1.2") == ["c-version"]
    assert await ids(store, "V2.0") == ["e-mixed"]
    assert await ids(store, "run") == ["c-version"]  # porter: running -> run
    assert await ids(store, "TESTS") == ["c-version"]
    assert await ids(store, "v1.3") == []


async def test_mixed_language_queries(store: Store) -> None:
    await index(store, ITEMS)
    assert await ids(store, "dark mode部署") == ["e-mixed"]
    assert set(await ids(store, "深色 dark")) == {"c-theme", "e-mixed"}


async def test_the_story_query_finds_the_theme_claim(store: Store) -> None:
    await index(store, ITEMS)
    hits = await fts_search(store, "default", "我现在偏好什么界面主题？")
    assert [h.item_id for h in hits] == ["c-theme"]


async def test_more_matching_terms_rank_higher(store: Store) -> None:
    items: list[FtsItem] = [
        ("claim", "one", "default", "喜欢咖啡"),
        ("claim", "two", "default", "喜欢咖啡和绿茶"),
        ("claim", "none", "default", "讨厌下雨"),
    ]
    items += [("event", f"pad{i}", "default", f"填充文本 {i}") for i in range(20)]
    await index(store, items)
    hits = await fts_search(store, "default", "咖啡 绿茶")
    assert [h.item_id for h in hits] == ["two", "one"]
    assert [h.rank for h in hits] == [1, 2]
    assert hits[0].score > hits[1].score > 0
    assert all(isinstance(h, FtsHit) for h in hits)


async def test_limit_and_kinds(store: Store) -> None:
    await index(store, [("claim", f"c{i}", "default", f"同一个主题 {i}") for i in range(30)])
    await index(store, [("event", f"e{i}", "default", f"同一个主题 {i}") for i in range(30)])
    assert len(await ids(store, "主题", limit=7)) == 7
    assert len(await ids(store, "主题", limit=100)) == 60
    assert await ids(store, "主题", limit=0) == []
    claims = await ids(store, "主题", kinds=["claim"], limit=100)
    assert len(claims) == 30 and all(i.startswith("c") for i in claims)
    events = await ids(store, "主题", kinds=("event",), limit=100)
    assert len(events) == 30 and all(i.startswith("e") for i in events)
    assert await ids(store, "主题", kinds=()) == []
    with pytest.raises(InputError, match="observation"):
        await fts_search(store, "default", "主题", kinds=["observation"])  # type: ignore[list-item]


# --- what must never happen -------------------------------------------------------------------

NASTY = [
    '"',
    '""',
    '"body"',
    "*",
    "foo*",
    "-foo",
    "+foo",
    "^foo",
    "foo:",
    ":foo",
    "ns:foo",
    "{body ns}: foo",
    "NEAR(foo alone)",
    "NEAR",
    "foo AND bar",
    "NOT foo",
    "(",
    ")",
    "foo) OR (bar",
    "'; DELETE FROM recall_docs; --",
]


async def test_fts_syntax_in_queries_never_raises_nor_injects(store: Store) -> None:
    await index(store, ITEMS)
    for query in NASTY:
        await fts_search(store, "default", query)
    # "body:foo OR *" is the word "bodyfoo": no column filter, no wildcard, OR is a word
    assert await ids(store, "body:foo OR *") == ["e-syntax"]
    assert await ids(store, "NEAR(a b)") == ["e-syntax"]
    assert set(await ids(store, "foo*")) == {"e-syntax", "c-foo"}
    assert await ids(store, "-foo -alone") == ["c-foo", "e-syntax"]  # not a NOT
    assert len(await ids(store, "主题")) == 1  # nothing was deleted


async def test_queries_without_terms_return_nothing_without_sql(store: Store) -> None:
    await index(store, ITEMS)
    await store.close()
    for query in ("", "  ", "？！。", "***", "the of and", "我的"):
        assert await fts_search(store, "default", query) == []
    with pytest.raises(ClosedError):  # a real query does reach the (closed) store
        await fts_search(store, "default", "主题")


async def test_an_empty_store_finds_nothing(store: Store) -> None:
    assert await fts_search(store, "default", "主题 v1.2 dark") == []


@pytest.mark.parametrize("big", [True, False], ids=["big-namespace", "small-namespace"])
async def test_namespaces_never_leak(store: Store, big: bool) -> None:
    """Both search paths: a namespace holding most rows (matched wide, filtered by the join)
    and one holding few (matched with its namespace token)."""
    names = ["a", "a b", "A", 'x"y', "租户一", ""]
    items: list[FtsItem] = []
    for n, name in enumerate(names):
        items += [("claim", f"{n}-{i}", name, f"共同的主题 {name} {i}") for i in range(3)]
    items += filler("a" if big else "filler")
    await index(store, items)
    for n, name in enumerate(names):
        found = await ids(store, "主题", name, limit=100)
        assert sorted(found) == [f"{n}-{i}" for i in range(3)], name
    assert await ids(store, "主题", "nobody") == []


# --- writes -----------------------------------------------------------------------------------


async def test_insert_then_delete(store: Store, raw: Any) -> None:
    await index(store, ITEMS)
    async with store.transaction() as tx:
        assert await tx.execute(FTS_DELETE, fts_key("claim", "c-theme")) == 1
        assert await tx.execute(FTS_DELETE, fts_key("event", "c-theme")) == 0  # kind matters
    assert await ids(store, "主题") == []
    assert await ids(store, "北京") == ["e-city"]
    raw.execute("INSERT INTO recall_fts (recall_fts) VALUES ('integrity-check')")
    assert raw.execute("SELECT docs FROM recall_namespaces").fetchall() == [(len(ITEMS) - 1,)]


async def test_inserting_again_replaces_and_never_duplicates(store: Store, raw: Any) -> None:
    await index(store, ITEMS)
    await index(store, ITEMS)  # a replayed job
    assert await ids(store, "主题") == ["c-theme"]
    await index(store, [("claim", "c-theme", "default", "改成了浅色模式")])
    assert await ids(store, "主题") == []
    assert await ids(store, "浅色") == ["c-theme"]
    await index(store, [("claim", "c-theme", "other", "改成了浅色模式")])  # moved
    assert await ids(store, "浅色") == []
    assert await ids(store, "浅色", "other") == ["c-theme"]
    raw.execute("INSERT INTO recall_fts (recall_fts) VALUES ('integrity-check')")
    counts = dict(raw.execute("SELECT namespace, docs FROM recall_namespaces").fetchall())
    assert counts == {"default": len(ITEMS) - 1, "other": 1}


async def test_rebuilding_the_index_from_recall_docs_gives_the_same_answers(
    store: Store, raw: Any
) -> None:
    await index(store, ITEMS)
    before = await fts_search(store, "default", "主题 北京 v1.2 dark")
    raw.execute("INSERT INTO recall_fts (recall_fts) VALUES ('rebuild')")
    raw.execute("INSERT INTO recall_fts (recall_fts) VALUES ('integrity-check')")
    assert await fts_search(store, "default", "主题 北京 v1.2 dark") == before


async def test_cjk_tokens_stay_whole_under_unicode61(store: Store, raw: Any) -> None:
    # A body written by hand, not by index_text: only the tokenizer is tested here.
    async with store.transaction() as tx:
        await tx.execute(FTS_INSERT, ("claim", "whole", "default", "界面主题 深色模式"))
    rows = raw.execute(
        "SELECT d.item_id, fts.body FROM recall_fts AS fts JOIN recall_docs AS d"
        " ON d.id = fts.rowid WHERE recall_fts MATCH ?",
        ('body : "界面主题"',),
    ).fetchall()
    assert [tuple(r) for r in rows] == [("whole", "界面主题 深色模式")]
    for part in ("界面", "主题", "界", "模式"):
        assert raw.execute("SELECT 1 FROM recall_fts(?)", (f'"{part}"',)).fetchall() == []


async def test_backfill_indexes_items_stored_before_the_index(store: Store) -> None:
    now = "2026-01-01T00:00:00.000000+00:00"
    event = ("ev1", "default", "s1", "user", "记住：我住在北京市", "h1", now, now, "user_direct")
    claim = ["c1", "default", "user", "home", "北京", "用户住在北京市", "[]", 1, "long_term"]
    claim += [0.5, 0.8, "zh", "h2", "user|home", "北京", None, None, now, "rules", None]
    claim += ["extraction", now]
    async with store.transaction() as tx:
        await tx.execute("insert_event", (*event, "interactive", "{}"))
        await tx.execute("insert_pending_claim", claim)
    assert await ids(store, "北京") == []
    assert await fts_backfill(store, lexicon=default_lexicon(), batch_size=1) == 2
    assert sorted(await ids(store, "北京")) == ["c1", "ev1"]
    assert await fts_backfill(store, lexicon=default_lexicon()) == 0


async def test_a_user_word_is_found_whole_and_by_its_parts(store: Store, tmp_path: Path) -> None:
    # Made-up word, used by no other test (jieba's dictionary lives for the whole process).
    path = tmp_path / "words.txt"
    path.write_text("珊瑚飞艇 5\n", encoding="utf-8")
    load_user_dictionary([path])
    assert "珊瑚飞艇" in index_text("我坐过珊瑚飞艇")
    await index(store, [("event", "ride", "default", "我坐过珊瑚飞艇")])
    assert await ids(store, "珊瑚飞艇") == ["ride"]
    assert await ids(store, "飞艇") == ["ride"]


# --- bounded ranking (fts_search_terms) ----------------------------------------------------------


async def test_a_store_smaller_than_rank_rows_is_ranked_exactly(store: Store) -> None:
    """When a query's terms match at most ``rank_rows`` rows in all (86 here), nothing
    changes: plain bm25, ties in the same order."""
    items: list[FtsItem] = [
        ("claim", f"c{i}", "default", f"咖啡 {'绿茶 ' * (i % 3)}{i}") for i in range(40)
    ]
    items += [("event", f"e{i}", "default", f"绿茶 和 咖啡 {i}") for i in range(10)]
    await index(store, items)
    for query in ("咖啡", "咖啡 绿茶", "绿茶 35"):
        exact = await fts_search(store, "default", query, limit=100, rank_rows=10_000)
        bounded = await fts_search(store, "default", query, limit=100, rank_rows=86)
        assert [(h.kind, h.item_id, h.rank) for h in bounded] == [
            (h.kind, h.item_id, h.rank) for h in exact
        ]


async def test_common_terms_only_fill_after_the_rare_ones(store: Store) -> None:
    """A term with more rows than ``rank_rows`` is not ranked: the rarer terms' items come
    first (ranked), then the newest items with the common term, unranked (score 0)."""
    common: list[FtsItem] = [("event", f"e{i}", "default", f"部署 日志 第{i}条") for i in range(30)]
    rare: list[FtsItem] = [("claim", "c-rare", "default", "部署 billing-api 到 db-prod-2")]
    await index(store, [*common[:15], *rare, *common[15:]])
    hits = await fts_search(store, "default", "部署 billing-api", limit=5, rank_rows=10)
    assert hits[0].item_id == "c-rare" and hits[0].score > 0
    # then the newest rows with the common term, newest first
    assert [h.item_id for h in hits[1:]] == ["e29", "e28", "e27", "e26"]
    assert [h.score for h in hits[1:]] == [0.0] * 4 and [h.rank for h in hits] == [1, 2, 3, 4, 5]
    # every term common: the newest items only
    only = await fts_search(store, "default", "部署", limit=3, rank_rows=10)
    assert [h.item_id for h in only] == ["e29", "e28", "e27"]


async def test_term_counts_follow_every_change_of_the_index(store: Store) -> None:
    """TermCounts remembers the counts while FTS5's structure record stays the same. An
    insert, a new body, a namespace move and a delete each change it, and a search that
    remembers gives what a search that counts afresh gives, before and after each change,
    also when a term turns common (more rows than ``rank_rows``) or rare again (zh and en)."""
    counts = TermCounts()
    versions: list[bytes] = []

    async def same_hits() -> None:
        versions.append((await store.fetchall("fts_version"))[0][0])
        for query in ("部署 账单服务", "deploy billing", "部署", "deploy"):
            search = partial(
                fts_search_sync, namespace="default", terms=query_terms(query), rank_rows=10
            )
            fresh = await store.read(search)
            kept = await store.read(partial(search, term_counts=counts))
            assert kept == fresh and fresh, query

    await index(store, [("event", f"e{i}", "default", f"部署 deploy 第{i}条") for i in range(6)])
    await index(store, [("claim", "c-bill", "default", "部署 账单服务 deploy billing")])
    await same_hits()
    ranked = await store.read(partial(fts_search_sync, namespace="default", terms=["deploy"]))
    assert all(h.score > 0 for h in ranked)  # 7 rows: rare enough to rank
    await same_hits()  # nothing changed: every count remembered
    assert counts.hits >= counts.misses > 0
    await index(store, [("event", f"f{i}", "default", f"部署 deploy 又{i}次") for i in range(8)])
    await same_hits()  # 15 rows: now common, only the newest (score 0) after the rare terms
    await index(store, [("claim", "c-bill", "default", "账单服务 billing 下线")])  # a new body
    await same_hits()
    await index(store, [("event", "f0", "other", "部署 deploy 又0次")])  # a namespace move
    await same_hits()
    for i in range(8):
        async with store.transaction() as tx:
            await tx.execute(FTS_DELETE, fts_key("event", f"f{i}"))
    await same_hits()  # rare again
    assert len(set(versions)) == len(versions) - 1  # the one search with no change between


async def test_every_and_allow(store: Store) -> None:
    items: list[FtsItem] = [
        ("claim", "grace-nelson", "default", "Grace Nelson owns billing-api"),
        ("claim", "grace-lee", "default", "Grace Lee is a designer"),
        ("claim", "tom-nelson", "default", "Tom Nelson likes tea"),
    ]
    await index(store, items)
    from hlmem.index import fts_search_terms

    def names(hits: list[FtsHit]) -> set[str]:
        return {h.item_id for h in hits}

    terms = ["grace", "nelson"]
    assert names(await fts_search_terms(store, "default", terms)) == {
        "grace-nelson",
        "grace-lee",
        "tom-nelson",
    }
    assert names(await fts_search_terms(store, "default", terms, every=True)) == {"grace-nelson"}
    allowed = await fts_search_terms(store, "default", terms, allow={"tom-nelson", "nobody"})
    assert names(allowed) == {"tom-nelson"}
    assert await fts_search_terms(store, "default", terms, allow=set()) == []


@pytest.mark.parametrize("big", [False, True])
async def test_match_ids_finds_what_mentions_every_term_newest_first(
    store: Store, big: bool
) -> None:
    """Recall's entity scan: unranked, newest first, every term, one namespace (both the wide
    and the namespace-token path), and the same items as the ranked search asked for all."""
    from hlmem.index import fts_search_terms, match_ids
    from hlmem.lang import query_terms

    items: list[FtsItem] = [
        ("claim", "zh-1", "team", "长城项目的截止日期是周五"),
        ("event", "zh-2", "team", "长城 项目又延期了"),
        ("claim", "en-1", "team", "Grace Nelson owns the Great Wall project"),
        ("event", "en-2", "team", "grace nelson said the Great Wall slipped"),
        ("claim", "other", "team", "Grace Lee likes the wall"),
        ("claim", "elsewhere", "home", "长城 Grace Nelson"),
    ]
    items += filler("team" if big else "filler")
    await index(store, items)
    for name, want in [("长城", ["zh-2", "zh-1"]), ("Grace Nelson", ["en-2", "en-1"])]:
        terms = query_terms(name)
        found = await match_ids(store, "team", terms, limit=10)
        assert [item_id for _, item_id in found] == want  # newest first
        ranked = await fts_search_terms(store, "team", terms, limit=10, every=True)
        assert {h.item_id for h in ranked} == set(want)
        one = await match_ids(store, "team", terms, limit=1)
        assert [item_id for _, item_id in one] == want[:1]
    assert await match_ids(store, "team", [], limit=10) == []


async def test_a_glued_compound_no_item_holds_is_searched_as_its_parts(store: Store) -> None:
    """ "billing-api" is asked for as the token "billingapi" (cheap to rank), which every body
    of a hyphenated, underscored or glued spelling holds; text that spells it with spaces only
    is found through the phrase of its parts, in English and in Chinese text alike."""
    from hlmem.index import fts_search_terms, match_ids
    from hlmem.lang import query_terms, spelled_apart

    spaced: list[FtsItem] = [
        ("claim", "en-spaced", "ops", "the billing api is down again"),
        ("event", "zh-spaced", "ops", "计费的 billing api 昨晚宕机了"),
        ("claim", "apart", "ops", "api keys for billing live in the vault"),  # not adjacent
    ]
    await index(store, spaced)
    assert query_terms("billing-api 宕机") == ["billingapi", "宕机"]
    assert spelled_apart("billing-api 宕机") == {"billingapi": "billing api"}
    assert set(await ids(store, "billing-api", "ops")) == {"en-spaced", "zh-spaced"}
    assert set(await ids(store, "billing-api 宕机", "ops")) == {"en-spaced", "zh-spaced"}
    terms, apart = query_terms("billing-api owner"), spelled_apart("billing-api")
    every = await fts_search_terms(store, "ops", terms, every=True, apart=apart)
    assert every == []  # no "owner" anywhere: still nothing
    every = await fts_search_terms(
        store, "ops", query_terms("billing-api"), every=True, apart=apart
    )
    assert {h.item_id for h in every} == {"en-spaced", "zh-spaced"}
    found = await match_ids(store, "ops", ["billingapi"], limit=10, apart=apart)
    assert {item_id for _, item_id in found} == {"en-spaced", "zh-spaced"}
    assert await match_ids(store, "ops", ["billingapi"], limit=10) == []  # without the parts

    # Once an item holds the glued token, the query asks for it alone (no phrase to rank).
    await index(store, [("event", "hyphen", "ops", "billing-api 又超时了")])
    assert await ids(store, "billing-api", "ops") == ["hyphen"]
    found = await match_ids(store, "ops", ["billingapi"], limit=10, apart=apart)
    assert [item_id for _, item_id in found] == ["hyphen"]


async def test_every_term_finds_an_event_by_the_ngrams_of_a_long_han_word(store: Store) -> None:
    """An event body holds Han words of at most three characters whole ("北京大学" only as
    北京大 and 京大学): asked for every term of "北京大学" (recall's entity scan), a claim is
    found by the word and an event by its n-grams; an English name alike in both."""
    from hlmem.index import fts_search_terms, match_ids
    from hlmem.lang import event_body, query_terms

    rows = [
        fts_row("claim", "zh-claim", "uni", "我在北京大学读研究生"),
        ("event", "zh-event", "uni", event_body("昨天下午去北京大学听了一场讲座")),
        ("event", "zh-apart", "uni", event_body("北京的大学很多")),  # 北京 and 大学, apart
        fts_row("claim", "en-claim", "uni", "I study at Stanford University"),
        ("event", "en-event", "uni", event_body("a talk at Stanford University yesterday")),
    ]
    async with store.transaction() as tx:
        await tx.executemany(FTS_INSERT, rows)
    for name, want in [
        ("北京大学", {"zh-claim", "zh-event"}),
        ("Stanford University", {"en-claim", "en-event"}),
    ]:
        terms = query_terms(name)
        found = await match_ids(store, "uni", terms, limit=10)
        assert {item_id for _, item_id in found} == want, name
        ranked = await fts_search_terms(store, "uni", terms, limit=10, every=True)
        assert {h.item_id for h in ranked} == want, name


@pytest.mark.parametrize("big", [True, False], ids=["big-namespace", "small-namespace"])
async def test_another_namespace_never_decides_how_a_compound_is_searched(
    store: Store, big: bool
) -> None:
    """ "billing-api" falls back to the phrase of its parts when no item of *this* namespace
    holds the glued token, whatever other namespaces hold (their rows are counted with this
    one's when it is large: the search then checks its own rows)."""
    from hlmem.index import match_ids
    from hlmem.lang import spelled_apart

    items: list[FtsItem] = [
        ("claim", "here-en", "here", "the billing api is down again"),
        ("event", "here-zh", "here", "计费 billing api 昨晚宕机"),
        ("claim", "there", "there", "billing-api owner is Tom 负责"),
    ]
    items += filler("here" if big else "elsewhere")
    await index(store, items)
    assert set(await ids(store, "billing-api", "here")) == {"here-en", "here-zh"}
    assert await ids(store, "billing-api", "there") == ["there"]
    apart = spelled_apart("billing-api")
    found = await match_ids(store, "here", ["billingapi"], limit=10, apart=apart)
    assert {item_id for _, item_id in found} == {"here-en", "here-zh"}


@pytest.mark.parametrize("limit", [1, 2, 3, 5])
async def test_joining_only_the_best_rows_finds_what_joining_every_row_finds(
    store: Store, limit: int
) -> None:
    """A ranked search of many rows (here 24-36 for a limit of at most 5) joins only the
    index's best 2 * limit to recall_docs, and runs the full join (``fts_ranked``) when too
    few of those are the namespace's: here the best rows are another namespace's, told more
    often. Either way, the items and their order are those of the full join."""
    from hlmem.lang import query_terms

    items: list[FtsItem] = []
    for i in range(12):
        items.append(("claim", f"loud-{i}", "there", f"磁盘 磁盘 磁盘 disk disk full {i}"))
        items.append(("event", f"quiet-{i}", "here", f"磁盘满了 disk {i} 号机器"))
        items.append(("claim", f"mid-{i}", "here", f"磁盘 disk disk 告警 {i}"))
    await index(store, items)
    for namespace in ("here", "there"):  # both hold over 1/8 of the rows: matched unscoped
        for query in ("磁盘", "磁盘 disk"):
            match = "body : (" + " OR ".join(f'"{t}"' for t in query_terms(query)) + ")"
            params = {"match": match, "namespace": namespace, "kind": None, "allow": None}
            full = await store.read(partial(_ranked, params={**params, "limit": limit}))
            assert len(full) == limit
            assert await ids(store, query, namespace, limit=limit) == [r[1] for r in full]
