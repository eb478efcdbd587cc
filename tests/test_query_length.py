"""A long query: its known names are looked up in batches, and it is understood as a short one.

Recall asks the store which of the query's substrings are known entity names; a query of
10,000 characters has up to 310,000 of them, and SQLite's IN list over one JSON array of them
costs more than linearly (its temporary index outgrows the page cache). They go in
batches of ``query.NAME_BATCH``; a name found in the last batch constrains recall as it does
in a short query (zh and en). The limit itself (``recall.max_query_chars``) is tested with the
other bad arguments in ``test_api_inputs.py``; the cost of long queries is in
``bench/query_parse.py``.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from helpers import fast_config

import hlmem
from hlmem.recall import understanding as query

pytestmark = pytest.mark.anyio

WORDS = "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工"


def filler(size: int, seed: int) -> str:
    """Text whose substrings are nearly all distinct (many batches of names)."""
    rnd = random.Random(seed)
    return " ".join(
        f"{''.join(rnd.choices(WORDS, k=6))} item{i} costs {rnd.randint(1, 999)} yuan"
        for i in range(size // 30)
    )[:size]


def test_name_batches_are_the_candidates_in_bounded_batches() -> None:
    text = filler(6000, 1) + " Alice Chen 和张三丰"
    batches = query.name_batches(text)
    assert len(batches) > 3
    assert all(0 < len(b) <= query.NAME_BATCH for b in batches)
    flat = [name for batch in batches for name in batch]
    assert flat == query.name_candidates(text) and len(set(flat)) == len(flat)
    assert {"alice chen", "张三丰"} <= set(flat)
    assert query.name_batches("") == []


QUESTIONS = [("张三丰在哪里工作？", "张三丰"), ("Where does Alice Chen work?", "alice chen")]


async def test_a_name_in_a_later_batch_constrains_a_long_query(tmp_path: Path) -> None:
    async with hlmem.open(tmp_path / "m.db", config=fast_config()) as mem:
        await mem.remember("张三丰", "works_at", "武当山", text="张三丰在武当山工作")
        await mem.remember("Alice Chen", "works_at", "Google", text="Alice Chen works at Google")
        await mem.remember("Bob", "likes", "tea", text="Bob likes green tea")
        await mem.drain(timeout_s=60)
        for question, name in QUESTIONS:
            long_text = filler(8000, 2) + " " + question
            assert len(long_text) <= mem.config.recall.max_query_chars
            batches = query.name_batches(long_text)
            assert len(batches) > 4
            assert next(i for i, b in enumerate(batches) if name in b) > 0
            short = await mem.recall(question)
            found = await mem.recall(long_text)
            assert found.query.entities == short.query.entities == (name,)
