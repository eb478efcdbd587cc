"""Recall's activation boosts are written in batches (hlmem.recall.touches): many recalls, one
write; nothing waiting is lost on drain or close; a claim returned n times gets n boosts."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path

import anyio
import pytest
from helpers import fast_config, rows

import hlmem
from hlmem.clock import ManualClock

pytestmark = pytest.mark.anyio

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
FACTS = {
    "zh": ("我的猫叫年糕", "我的猫叫什么"),
    "en": ("my cat is called Mochi", "what is my cat called"),
}


async def remember(mem: hlmem.Memory, db: Path, fact: str) -> str:
    """The id of the one claim ``fact`` became (through the pipeline)."""
    await mem.remember("user", "cat_name", fact.split()[-1], text=fact)
    await mem.drain(timeout_s=30)
    ((claim_id,),) = rows(db, "SELECT id FROM claims")
    return str(claim_id)


def access(db: Path, claim_id: str) -> tuple[float, int]:
    (row,) = rows(db, "SELECT activation, access_count FROM claims WHERE id = ?", (claim_id,))
    return float(row[0]), int(row[1])


@asynccontextmanager
async def remembered(
    db: Path, lang: str, **maintenance: float
) -> AsyncIterator[tuple[hlmem.Memory, str, tuple[float, int], str]]:
    """An open memory (these ``maintenance`` settings) that remembers one fact: the memory,
    the claim's id, its (activation, accesses) before any recall, and the question for it."""
    fact, question = FACTS[lang]
    cfg = fast_config(maintenance=maintenance)
    async with hlmem.open(db, config=cfg, clock=ManualClock(NOW)) as mem:
        claim = await remember(mem, db, fact)
        yield mem, claim, access(db, claim), question


async def accesses_become(db: Path, claim_id: str, n: int) -> bool:
    """Whether the claim's access count reaches ``n`` within 10 s (written by the background
    task, with no drain)."""
    for _ in range(500):
        if access(db, claim_id)[1] == n:
            return True
        await anyio.sleep(0.02)
    return False


@pytest.mark.parametrize("lang", ["zh", "en"])
async def test_recalls_are_written_together_on_drain(db_path: Path, lang: str) -> None:
    cfg = fast_config().maintenance
    async with remembered(db_path, lang, access_flush_s=600) as (mem, claim, before, question):
        for _ in range(3):
            result = await mem.recall(question)
            assert result.items[0].id == claim
        assert mem._touches is not None and mem._touches.pending == 1
        assert access(db_path, claim) == before  # waiting, not written per recall
        await mem.drain(timeout_s=30)
        assert mem._touches.pending == 0
        activation, accesses = access(db_path, claim)
    assert accesses == before[1] + 3
    assert activation == pytest.approx(min(before[0] + 3 * cfg.access_boost, cfg.activation_cap))


@pytest.mark.parametrize("lang", ["zh", "en"])
async def test_closing_writes_what_waits(db_path: Path, lang: str) -> None:
    async with remembered(db_path, lang, access_flush_s=600) as (mem, claim, before, question):
        await mem.recall(question)
        await mem.recall(question)
    assert access(db_path, claim)[1] == before[1] + 2


@pytest.mark.parametrize(
    ("lang", "settings"),
    [
        ("zh", {"access_flush_s": 0.05}),  # written after the delay
        # access_flush_claims = 1: the first recall's claim is written without the 600 s delay
        ("en", {"access_flush_s": 600, "access_flush_claims": 1}),
    ],
)
async def test_written_without_drain(db_path: Path, lang: str, settings: dict[str, float]) -> None:
    async with remembered(db_path, lang, **settings) as (mem, claim, before, question):
        await mem.recall(question)
        assert await accesses_become(db_path, claim, before[1] + 1)


async def test_many_boosts_stop_at_the_cap(db_path: Path) -> None:
    async with remembered(db_path, "zh", access_flush_s=600, activation_cap=1.5) as opened:
        mem, claim, _, question = opened
        for _ in range(40):  # 40 boosts of 0.1 from about 1: far past the cap
            await mem.recall(question)
    activation, accesses = access(db_path, claim)
    assert activation == pytest.approx(1.5)
    assert accesses == 40


@pytest.mark.parametrize("lang", ["zh", "en"])
async def test_record_activation_off_writes_nothing(db_path: Path, lang: str) -> None:
    # access_flush_s = 0 would write each recall's boost at once: nothing waits, nothing lands.
    fact, question = FACTS[lang]
    cfg = fast_config(maintenance={"access_flush_s": 0}, recall={"record_activation": False})
    async with hlmem.open(db_path, config=cfg, clock=ManualClock(NOW)) as mem:
        claim = await remember(mem, db_path, fact)
        before = access(db_path, claim)
        for _ in range(3):
            result = await mem.recall(question)
            assert result.items[0].id == claim
        assert mem._touches is not None and mem._touches.pending == 0
        await mem.drain(timeout_s=30)
    assert access(db_path, claim) == before
