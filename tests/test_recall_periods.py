"""Recall of a named period ("in October 2026", "2026年10月"): what was said during it.

The query's period sets ``valid_at`` to its start (claims true then) and ``period_end`` to its
end: a raw event said on October 13 answers a question about October; one said in November
(perhaps a later retelling of October) is still recalled, ranked after it. An explicit
``valid_at`` stays a point in time. Chinese and English, through the real pipeline.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from helpers import fast_config

import hlmem
from hlmem.clock import ManualClock
from hlmem.messages import RecallResult
from hlmem.recall import understanding as query_mod

pytestmark = pytest.mark.anyio

NOW = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
SAID = {
    "september": datetime(2026, 9, 20, 18, 0, tzinfo=UTC),
    "october": datetime(2026, 10, 13, 18, 0, tzinfo=UTC),
    "november": datetime(2026, 11, 20, 18, 0, tzinfo=UTC),
}
CASES = {
    "en": (
        {
            "september": "Melanie: a setback with the car, the garage kept it for a week.",
            "october": "Melanie: my setback this month, I hurt my ankle while running.",
            "november": "Melanie: another setback, the roof leaked after the storm.",
        },
        "What setback did Melanie face in October 2026?",
    ),
    "zh": (
        {
            "september": "梅兰妮：车坏了，是个挫折，修车厂修了一周。",
            "october": "梅兰妮：这个月的挫折是跑步时扭伤了脚踝。",
            "november": "梅兰妮：又一个挫折，暴风雨后屋顶漏水了。",
        },
        "梅兰妮2026年10月遇到了什么挫折？",
    ),
}


def said(result: RecallResult, texts: dict[str, str]) -> set[str]:
    """The months whose event the result holds."""
    found = {i.text for i in result.items if i.kind == "event"}
    return {month for month, text in texts.items() if text in found}


def said_in_order(result: RecallResult, texts: dict[str, str]) -> list[str]:
    """The months whose event the result holds, in rank order."""
    months = {text: month for month, text in texts.items()}
    return [months[i.text] for i in result.items if i.kind == "event" and i.text in months]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_named_period_has_an_end(lang: str) -> None:
    _, question = CASES[lang]
    parsed = query_mod.parse(question, NOW)
    assert parsed.valid_at == datetime(2026, 10, 1, tzinfo=UTC)
    assert parsed.period_end == datetime(2026, 11, 1, tzinfo=UTC)
    this_month = "这个月发生了什么？" if lang == "zh" else "what happened this month?"
    ongoing = query_mod.parse(this_month, NOW)  # a period still going ends now
    assert ongoing.valid_at == datetime(2026, 12, 1, tzinfo=UTC) and ongoing.period_end == NOW
    assert query_mod.parse(question, NOW, valid_at=SAID["october"]).period_end is None


@pytest.mark.parametrize("lang", ["en", "zh"])
async def test_events_said_during_the_named_period_are_recalled(db_path: Path, lang: str) -> None:
    texts, question = CASES[lang]
    clock = ManualClock(NOW)
    async with hlmem.open(db_path, config=fast_config(), clock=clock) as mem:
        for month, text in texts.items():
            await mem.add_event("s", text, occurred_at=SAID[month], session_kind="batch")
        await mem.flush()
        await mem.drain(timeout_s=30)
        period = await mem.recall(question)
        point = await mem.recall(question, valid_at=datetime(2026, 10, 1, tzinfo=UTC))
    assert period.query.period_end == datetime(2026, 11, 1, tzinfo=UTC)
    # Said in October: it answers a question about October (it was said after October 1).
    assert "october" in said(period, texts)
    # Said after October: perhaps a later retelling ("last year I ..."), so still recalled,
    # but ranked after what was said during the period.
    order = said_in_order(period, texts)
    assert "november" in order and order.index("october") < order.index("november")
    # An explicit valid_at is a point: only what was said by then.
    assert said(point, texts) == {"september"}
