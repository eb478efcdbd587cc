from __future__ import annotations

import itertools
import re
import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from hlmem.lang import (
    chunk_spans,
    content_hash,
    derived_id,
    language_of,
    new_id,
    new_ids,
    nfkc,
    tokens,
)


@given(st.text(min_size=0, max_size=3000), st.integers(min_value=50, max_value=400))
@settings(max_examples=200, deadline=None)
def test_chunks_cover_text_exactly_in_order(text: str, size: int) -> None:
    spans = chunk_spans(text, size)
    assert spans[0][0] == 0
    assert spans[-1][1] == len(text)
    for (a_start, a_end), (b_start, _) in itertools.pairwise(spans):
        assert a_end == b_start
        assert a_start < a_end
    assert all(end - start <= size for start, end in spans)
    assert "".join(text[s:e] for s, e in spans) == text


def test_chunks_prefer_sentence_breaks_in_chinese_and_english() -> None:
    zh = "今天天气很好。" * 40
    spans = chunk_spans(zh, 100)
    assert all(zh[e - 1] == "。" for _, e in spans[:-1])
    en = "The deploy finished without errors. " * 30
    spans = chunk_spans(en, 120)
    assert all(en[s:e].rstrip().endswith(".") for s, e in spans[:-1])


def test_content_hash_folds_width_case_and_space_only() -> None:
    assert content_hash("Hello  World") == content_hash("hello world")
    assert content_hash("ＡＢＣ１２３") == content_hash("abc123")  # full-width folds
    assert content_hash("部署 v1.2") != content_hash("部署 v1.3")
    assert content_hash("允许删除") != content_hash("不允许删除")


# Full-width forms, the ideographic space, combining marks that compose with what a full-width
# form becomes (Ａ + U+0301 -> Á), other compatibility characters (ｶ, ①, ㎏, ﬁ), CJK and ASCII.
_NFKC_ALPHABET = (
    "\uff01\uff0c\uff1a\uff1f\uff08\uff09\uff21\uff41\uff10\uff5e\u3000"
    "\u0301\u0308\u0327\u3099\uff76\u2460\u338f\ufb01\u00bd\u2126"
    "深色模式部署ｶﾞ가각aA1 .,:!?'"
)


@given(st.text(alphabet=_NFKC_ALPHABET, max_size=40) | st.text(max_size=40))
@settings(max_examples=500, deadline=None)
def test_nfkc_equals_unicodedata(text: str) -> None:
    assert nfkc(text) == unicodedata.normalize("NFKC", text)


def test_nfkc_on_chinese_and_english() -> None:
    assert nfkc("今天下午三点开会，讨论路线图：Ｑ２！") == "今天下午三点开会,讨论路线图:Q2!"
    assert nfkc("Ａ\u0301　b") == "Á b"  # composes after the full-width form is mapped
    assert nfkc("I prefer dark mode.") == "I prefer dark mode."


def test_derived_ids_are_stable_and_unambiguous() -> None:
    assert derived_id("win", "a", 1) == derived_id("win", "a", 1)
    assert derived_id("win", "ab", "c") != derived_id("win", "a", "bc")  # length-prefixed


def test_new_ids_are_unique_and_time_ordered() -> None:
    ids = [new_id("ev") for _ in range(20000)]
    assert len(set(ids)) == len(ids)
    assert ids == sorted(ids)


def test_new_ids_in_bulk_continue_the_sequence_of_single_ids() -> None:
    ids = []
    for n in (3, 0, 1, 500, 2, 5000):
        ids.append(new_id("ev"))
        ids.extend(new_ids("ev", n))
    assert len(ids) == 3 + 1 + 500 + 2 + 5000 + 6
    assert len(set(ids)) == len(ids)
    assert ids == sorted(ids)
    shape = re.compile(r"ev_[0-9a-f]{28}")
    assert all(shape.fullmatch(i) for i in ids)


def test_language_and_tokens() -> None:
    assert language_of("我主要用深色模式") == "zh"
    assert language_of("I prefer dark mode") == "en"
    assert "深色" in tokens("我主要用深色模式") or "深色模式" in tokens("我主要用深色模式")
    assert "dark" in tokens("I prefer Dark mode")
    assert "the" not in tokens("the mode")
