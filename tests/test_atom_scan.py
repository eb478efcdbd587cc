"""The atom scan is linear in the text, and finds exactly what the quadratic scan found.

Query parsing (recall) and dedup (claim texts) read the same atoms, so the linear scan must
give the same spans, masked text and names as the one it replaced (``atoms_reference``, the
old code verbatim) on the labelled pairs, a table of zh + en texts and thousands of random
texts built from every family's fragments and from tricky character soup. Linearity is
counted, not timed: the Python calls made (``sys.setprofile`` events, deterministic) to parse
a text of 2N characters may be at most 2.5 times those for N. Work inside one C call (a
regular expression reading a long word, a copy) is not counted: ``bench/query_parse.py`` times
those cases.
"""

from __future__ import annotations

import random
import re
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from types import FrameType
from typing import Any

import atoms_reference as ref
import pytest
from atom_pairs import MUST_MERGE, MUST_NOT_MERGE

from hlmem.lang.atoms import Span, SpanIndex
from hlmem.lang.atoms import analysis as atoms
from hlmem.lang.atoms import patterns as atom_rules
from hlmem.lang.atoms import spans as atom_spans
from hlmem.lang.atoms import words as atom_words
from hlmem.recall import understanding as query

NOW = datetime(2026, 5, 20, 9, 0, tzinfo=UTC)

TABLE = [
    "我住在北京，喜欢喝咖啡。I deploy billing-api v1.2 on Monday at 3pm, 2024-05-03.",
    "Alice Chen works at Google. Bob's boss is Carol, and Dave 喜欢喝茶",
    "mail bob@example.com or a.b+c@x.io, then @alice.dev; ping 10.0.0.1:8080",
    "a@b.c+d@e.f and x@@y.z, @@@, foo@bar, foo@bar.",
    "下周三下午三点在三楼开会，预算两千元，每天喝3杯咖啡",
    "see /usr/local/bin/python3.11 and C:\\Users\\me\\a.txt or src/hlmem/recall/understanding.py",
    "“北京”和'quoted text' and `code_name()` and 《三体》",
    "Python 3.11 vs python3.12, numpy 1.26.4, v2.0-beta, 版本 1.2, 1.2版",
    "Meet me at 10:30 tomorrow morning, or on Fri. at noon; every Monday at 9 am",
    "It doesn't work, I can't and won't; they're here. I'm not sure",
    "The Google team met Mr Smith. May I? In May we met. March 3, 2025 and 3rd of March",
    "老王和王老师去了上海市，阿里巴巴集团的张三丰说百分之三十",
    "deadbeefcafe1234 db-prod-2 gpt-4o --dry-run CONSTANT_CASE camelCase PascalCase",
    "   ",
    "",
]


def _fragments() -> list[str]:
    texts = [t for a, b, _ in MUST_NOT_MERGE for t in (a, b)] + [t for p in MUST_MERGE for t in p]
    return texts + TABLE


SOUP = "aA1.-+_@/:'\"“”# \n我三点月号v版周"
SEPARATORS = [" ", "", "，", ". ", "\n", "-", "@", "/", ":", "'", "和", " and "]


def _random_texts(count: int, seed: int) -> list[str]:
    rnd = random.Random(seed)
    frags = _fragments()
    out = []
    for _ in range(count):
        if rnd.random() < 0.3:
            out.append("".join(rnd.choice(SOUP) for _ in range(rnd.randint(1, 60))))
            continue
        parts = rnd.sample(frags, rnd.randint(1, 4))
        cut = [p[rnd.randint(0, len(p) // 3) :] if rnd.random() < 0.3 else p for p in parts]
        out.append("".join(p + rnd.choice(SEPARATORS) for p in cut))
    return out


def _same_as_before(text: str) -> None:
    text = atom_words.expand(text)  # as atoms._analyse reads it
    spans, masked = atom_spans.find_spans(text)
    old_spans, old_masked = ref.find_spans(text)
    assert (spans, masked) == (old_spans, old_masked), text
    assert atom_words._english_entities(masked) == ref._english_entities(masked), text


def test_the_scan_finds_what_it_found_before_on_the_table_and_the_pairs() -> None:
    texts = _fragments()
    assert len(texts) > 150
    for text in texts:
        _same_as_before(text)
    # the table exercises every family, in both languages
    found = {s.family for t in TABLE for s in atom_spans.find_spans(atom_words.expand(t))[0]}
    assert found == {n for n, _ in atoms._SET_FAMILIES}


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_scan_finds_what_it_found_before_on_random_texts(seed: int) -> None:
    for text in _random_texts(1500, seed):
        _same_as_before(text)


def test_the_email_scan_matches_finditer_on_character_soup() -> None:
    rnd = random.Random(7)
    for _ in range(4000):
        text = "".join(rnd.choice("ab1._+-@. c") for _ in range(rnd.randint(0, 40)))
        got = [m.span() for m in atom_spans._emails(text)]
        assert got == [m.span() for m in atom_rules.RE_EMAIL.finditer(text)], text


# The pieces that decide paths, versions and identifiers, and texts where an alternative fails
# at the start of a run and matches further in (the run scan must not skip those).
ALTERNATIVES = [
    (
        atom_rules.RE_PATH,
        atom_rules.PATH_SCAN,
        ["a", "-", ".", "/", "//", "~", ":", "\\", "C", " ", "x.py", "b", "@"],
        ["a//-c/d/e", "a/-/-c/d/e", "~/x-y/z", "-a.b/c.txt", "C:\\x\\y", "../a/b", "a.b-/c"],
    ),
    (
        atom_rules.RE_VERSION,
        atom_rules.VERSION_SCAN,
        ["a", "Py", "+", "#", "1.2", " ", "v", "版本", "版", "1", ".", "rc1"],
        ["ab1+Py 1.2", "Py3+Node 1.2", "c++ 3.11", "x+#Py 1.2", "版本 1.2", "1.2版", "v1.2.3rc1"],
    ),
    (
        atom_rules.RE_IDENT,
        atom_rules.IDENT_SCAN,
        ["a", "db", "-", "--", ":", "80", ".", "2", "_", "A", " ", "()", "f00d"],
        ["a:b:80", "a--b-2", "a-b--c-3", "x.y:8080", "--dry-run", "gpt-4o", "a_b.c()"],
    ),
]


@pytest.mark.parametrize(("whole", "alternatives", "pieces", "tricky"), ALTERNATIVES)
def test_the_run_scan_matches_finditer(
    whole: re.Pattern[str], alternatives: atom_rules.RunScan, pieces: list[str], tricky: list[str]
) -> None:
    """Paths, versions and identifiers: the same matches (spans and groups) as the pattern's
    own finditer, on the tricky texts and on 4,000 texts made of the pieces that decide them."""
    rnd = random.Random(whole.pattern)
    texts = tricky + ["".join(rnd.choices(pieces, k=rnd.randint(0, 16))) for _ in range(4000)]
    for text in texts:
        got = [(m.span(), m.groupdict()) for m in atom_spans.scan(alternatives, text)]
        assert got == [(m.span(), m.groupdict()) for m in whole.finditer(text)], text


def test_the_span_index_answers_as_the_scan_of_every_span() -> None:
    rnd = random.Random(11)
    for _ in range(500):
        spans = []
        for _ in range(rnd.randint(0, 12)):
            start = rnd.randint(0, 50)
            spans.append(Span(start, start + rnd.randint(1, 8), "numbers", "1"))
        index = SpanIndex(spans)
        for _ in range(20):
            start = rnd.randint(-2, 60)
            end = start + rnd.randint(1, 10)
            assert index.overlaps(start, end) == atom_spans.overlaps(spans, start, end)


# --- linearity, counted -------------------------------------------------------------------

ZH = "周五下午3点喝3杯咖啡，5月3日交2000元，住在3楼，老王第2名，百分之三十；"
EN = (
    "Alice met Bob in Paris on 2024-05-03 at 10:30; deploy billing-api v1.2 to "
    "/srv/app/bin, budget $200, 30% off, 5kg, ping 10.0.0.1, mail bob@example.com. "
)


def _calls(fn: Callable[[], object]) -> int:
    """The Python and C function calls ``fn`` makes: a deterministic count of its work."""
    count = 0

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        nonlocal count
        count += 1

    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return count


def _text(base: str, size: int) -> str:
    return (base * (size // len(base) + 1))[:size]


@pytest.mark.parametrize(("name", "base"), [("zh", ZH), ("en", EN), ("mixed", ZH + EN)])
def test_parsing_twice_the_text_costs_about_twice_the_work(name: str, base: str) -> None:
    atoms.load()
    query.parse(_text(base, 200), NOW)  # warm: compiled patterns, tagger
    small = _calls(lambda: query.parse(_text(base, 2000), NOW))
    large = _calls(lambda: query.parse(_text(base, 4000), NOW))
    assert small > 1000  # the count measures the scan, not a cache hit
    assert large <= 2.5 * small, (name, small, large)


@pytest.mark.parametrize(("name", "base"), [("zh", ZH), ("en", EN)])
def test_claim_atoms_twice_the_text_cost_about_twice_the_work(name: str, base: str) -> None:
    """Dedup reads the same atoms of claim texts (and their similarity's tokens)."""
    atoms.load()
    small = _calls(lambda: atoms.similarity(_text(base, 2000), _text(base, 1999)))
    large = _calls(lambda: atoms.similarity(_text(base, 4000), _text(base, 3999)))
    assert large <= 2.5 * small, (name, small, large)
