from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hlmem.config import StoreConfig
from hlmem.errors import ConfigError
from hlmem.lang import (
    MAX_QUERY_TERMS,
    event_body,
    han_grams,
    index_text,
    load_user_dictionary,
    match_expression,
    query_terms,
)
from hlmem.store import Store

_HAN = re.compile(r"[\u4e00-\u9fff]+")

REPO = Path(__file__).resolve().parents[1]
# One FTS5 MATCH string as match_expression builds it: quoted strings joined by OR.
SAFE_MATCH = re.compile(r'"(?:[^"]|"")+"(?: OR "(?:[^"]|"")+")*')


def tokens(text: str) -> list[str]:
    return index_text(text).split(" ")


# --- bodies -----------------------------------------------------------------------------------


def test_two_character_chinese_words_are_tokens_of_longer_words() -> None:
    assert {"界面", "主题", "界面主题"} <= set(tokens("界面主题"))
    assert {"北京", "北京市"} <= set(tokens("我住在北京市"))
    assert {"深色", "模式", "深色模式"} <= set(tokens("最近用深色模式"))


def test_english_is_lowercased_and_numbers_and_versions_stay_whole() -> None:
    assert tokens("Upgraded Python to v1.2 and 3.11") == [
        "upgraded",
        "python",
        "to",
        "v1.2",
        "1.2",
        "and",
        "3.11",
    ]
    assert tokens("python3.11") == ["python3.11", "3.11", "python"]
    assert tokens("paid 1,000,000 yuan") == ["paid", "1000000", "yuan"]
    assert tokens("ｖ１．２ ÉCOLE") == ["v1.2", "1.2", "école"]  # NFKC and casefold


def test_compounds_keep_their_parts_in_order_then_the_joined_word() -> None:
    assert tokens("e-mail") == ["e", "mail", "email"]
    date = ["2024", "05", "01", "20240501"]
    assert tokens("on 2024-05-01 at 10:30") == ["on", *date, "at", "10", "30", "1030"]
    assert tokens("v1.2-beta") == ["v1.2", "beta", "1.2"]  # no glued form with a dot


def test_mixed_language_text() -> None:
    assert tokens("升级到v1.2版本，dark mode很好用") == [
        "升级",
        "到",
        "v1.2",
        "1.2",
        "版本",
        "dark",
        "mode",
        "很",
        "好",
        "用",
    ]


def test_punctuation_and_symbols_are_dropped() -> None:
    assert index_text("") == ""
    assert index_text("？！……——「」 ... *** ()") == ""
    assert index_text('body:foo OR * NEAR(a "b")') == "body foo bodyfoo or near a b"


@given(st.text(max_size=300))
@settings(max_examples=300, deadline=None)
def test_bodies_are_single_spaced_word_tokens(text: str) -> None:
    body = index_text(text)
    assert body == body.strip()
    for token in body.split(" ") if body else []:
        assert token
        assert all(ch == "." or ch.isalnum() for ch in token), token


# --- queries ----------------------------------------------------------------------------------


def test_query_terms_drop_stop_words_and_repeats_but_keep_two_character_words() -> None:
    assert query_terms("我现在偏好什么界面主题？") == ["现在", "偏好", "界面", "主题", "界面主题"]
    assert query_terms("What is the e-mail of the user? the user!") == ["email", "user"]
    assert query_terms("北京") == ["北京"]


def test_a_compound_is_asked_for_as_its_glued_token_unless_it_has_a_dot() -> None:
    # one token: its doclist is the compound's own, where a phrase walks those of its parts
    assert query_terms("k8s-node-9 磁盘") == ["k8snode9", "磁盘"]
    assert query_terms("O'Brien on 2024-05-01 at 10:30") == ["obrien", "20240501", "1030"]
    # a '.' inside: the parts as a phrase (old event bodies have no glued token for it)
    assert query_terms("v1.2-beta node.js") == ["v1.2 beta", "node js"]


def test_nothing_to_search_is_none() -> None:
    for text in ("", "   ", "？！。", "*** ---", "我的", "the of and", "什么"):
        assert query_terms(text) == []
        assert match_expression(text) is None


def test_match_expression_quotes_every_term() -> None:
    assert match_expression("主题 v1.2") == '"主题" OR "v1.2"'
    assert match_expression("e-mail") == '"email"'
    assert match_expression("v1.2-beta") == '"v1.2 beta"'


_TEXT = st.lists(
    st.sampled_from([*"abcXYZ019 -.:_'’,，。界面主题北京深色模式", "v1.2", "3.14", " e-mail"]),
    max_size=40,
).map("".join)


def _contains(body: str, term: str) -> bool:
    tokens, wanted = body.split(" "), term.split(" ")
    return any(tokens[i : i + len(wanted)] == wanted for i in range(len(tokens)))


@given(_TEXT)
@settings(max_examples=400, deadline=None)
def test_every_query_term_of_a_text_finds_its_bodies(text: str) -> None:
    """A query of a stored text's own words finds it, as a claim (index_text) and as an event
    (event_body: Han n-grams, so a Han word of more than three characters is found through
    its shorter words instead)."""
    claim, event = index_text(text), event_body(text)
    for term in query_terms(text):
        assert _contains(claim, term), (term, claim)
        if not (_HAN.fullmatch(term) and len(term) > 3):
            assert _contains(event, term), (term, event)


_NAME = st.lists(
    st.sampled_from([*"北京大学深色模式张三丰界面", "Grace", "db-prod-2", "v1.2"]),
    min_size=1,
    max_size=6,
)


@given(_NAME.map("".join), _TEXT, _TEXT)
@settings(max_examples=400, deadline=None)
def test_an_event_holds_every_term_of_a_name_it_contains(
    name: str, before: str, after: str
) -> None:
    """Recall's entity scan asks for every term of a name (fts.match_ids_sync): an event
    whose text contains the name holds each term, or, for a Han word longer than its n-grams,
    each of the word's n-grams (event_terms.han_grams), wherever the name stands."""
    event = event_body(f"{before} {name} {after}")
    for term in query_terms(name):
        grams = han_grams(term)
        if grams:
            assert all(_contains(event, g) for g in grams), (term, event)
        else:
            assert _contains(event, term), (term, event)


def test_long_queries_are_cut() -> None:
    words = " ".join(f"word{i}" for i in range(500))
    assert len(query_terms(words)) == MAX_QUERY_TERMS


NASTY = [
    '"',
    '""',
    '"unterminated',
    "*",
    "foo*",
    "-foo",
    "+foo",
    "^foo",
    "body:foo OR *",
    "ns:anything",
    "{body ns}: foo",
    "NEAR(foo bar, 2)",
    "foo AND bar",
    "foo NOT bar",
    "(foo",
    "foo)",
    "a OR OR b",
    "'; DROP TABLE recall_docs; --",
    "\x00\x01 control",
]


@pytest.mark.parametrize("query", NASTY)
def test_syntax_characters_stay_inside_quotes(query: str) -> None:
    expression = match_expression(query)
    assert expression is None or SAFE_MATCH.fullmatch(expression), expression


# A real FTS5 table (migrated by the shipped code) for the property test below, one file per
# SQLite module: a file is never opened by two SQLite libraries in one process.
@pytest.fixture(scope="module", params=["sqlean", "stdlib"])
def fts_conn(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    cfg = StoreConfig(sqlite_module=request.param)
    path = tmp_path_factory.mktemp("fts") / "memory.db"

    async def create() -> Any:
        store = await Store.open(path, cfg)
        try:
            async with store.transaction() as tx:
                await tx.execute("fts_insert", ("claim", "c1", "default", index_text("界面主题")))
            return store.module
        finally:
            await store.close()

    module = anyio.run(create)
    conn = module.connect(str(path))
    yield conn
    conn.close()


@given(st.text(max_size=80))
@settings(max_examples=300, deadline=None)
def test_any_query_is_valid_fts5(fts_conn: Any, text: str) -> None:
    expression = match_expression(text)
    if expression is not None:
        assert SAFE_MATCH.fullmatch(expression)
        fts_conn.execute(
            "SELECT rowid FROM recall_fts WHERE recall_fts MATCH ?", (f"body : ({expression})",)
        ).fetchall()


# --- the user dictionary ----------------------------------------------------------------------


def test_the_built_in_dictionary_keeps_domain_words_whole() -> None:
    assert "浅色模式" in tokens("暂时换成浅色模式")
    assert "界面主题" in query_terms("界面主题")
    # config/userdict.txt is the packaged file: loading it again changes nothing
    assert (REPO / "config" / "userdict.txt").resolve() == (
        REPO / "src" / "hlmem" / "data" / "userdict.txt"
    )
    load_user_dictionary([REPO / "config" / "userdict.txt"])


def test_a_user_dictionary_changes_segmentation_once_per_path(tmp_path: Path) -> None:
    # A made-up word that no other test uses: jieba's dictionary is global to the process.
    text = "我养了一只霓虹鲸鱼"
    assert "霓虹鲸鱼" not in tokens(text)
    path = tmp_path / "words.txt"
    path.write_text("# a comment line\n\n霓虹鲸鱼 5 nz\n", encoding="utf-8")
    load_user_dictionary([path])
    assert {"霓虹", "鲸鱼", "霓虹鲸鱼"} <= set(tokens(text))  # search mode keeps the parts
    assert "霓虹鲸鱼" in query_terms("霓虹鲸鱼")

    path.write_text("霓虹鲸鱼 5 nz\n琥珀海象\n", encoding="utf-8")
    load_user_dictionary([str(path)])  # same path: not read again
    assert "琥珀海象" not in tokens("琥珀海象")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("翡翠雪貂 3\n翡翠雪貂 3 n extra\n", "line 2: expected 'word"),
        ("翡翠雪貂 0\n", "must be positive"),
        ("T恤衫 3\n", "must be Han characters only"),
        (b"\xff\xfe\x00", "not UTF-8"),
    ],
)
def test_a_bad_dictionary_is_a_config_error_and_adds_nothing(
    tmp_path: Path, content: str | bytes, message: str
) -> None:
    path = tmp_path / "bad.txt"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(ConfigError, match=message) as info:
        load_user_dictionary([path])
    assert str(path.resolve()) in str(info.value)
    assert "翡翠雪貂" not in tokens("翡翠雪貂")  # the good first line was not added


def test_a_missing_dictionary_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such file"):
        load_user_dictionary([tmp_path / "missing.txt"])


# --- threads ----------------------------------------------------------------------------------


@pytest.fixture
def texts() -> Iterator[list[str]]:
    base = ["我住在北京市", "界面主题用深色模式", "Upgraded to v1.2", "猫叫小白，狗叫大黄"]
    yield [f"{t} {i}" for i in range(50) for t in base]


def test_threads_segment_like_one_thread(texts: list[str]) -> None:
    expected = [index_text(t) for t in texts]
    results: list[list[str]] = []

    def work() -> None:
        results.append([index_text(t) for t in texts])

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert results == [expected] * 4
