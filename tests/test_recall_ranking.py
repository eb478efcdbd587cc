"""How recall ranks what its channels find: score fusion, context, feedback, roles.

- **Score fusion** (``recall.fusion = "scores"``): a strong full-text match stays first even
  when a weak one is newer; with reciprocal rank fusion the ranking signals (recency) reorder
  them.
- **Context**: the turn said right after (or before) one that matches the question joins the
  result (channel "context"), though it shares no word with the question; only the user's
  turns gain, the assistant's too when the question asks what the assistant said.
- **Feedback**: "the person who is a head chef: where are they from" finds "my aunt is a head
  chef", then, through "aunt", "my aunt's home town is Jinan" (channel "feedback").
- **Roles**: the user's words rank above an assistant's reply holding the same words.
- **Trust**: context and feedback never bring in an event holding a secret, and a forget by
  query plans only what its own words name, never their neighbours.

Real SQLite files, the real pipeline with the rules extractor, Chinese and English.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from helpers import fast_config

import hlmem
from hlmem.clock import ManualClock
from hlmem.memory import Memory
from hlmem.messages import RecallResult
from hlmem.recall.understanding import parse

pytestmark = pytest.mark.anyio

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def config(**recall: Any) -> Any:
    return fast_config(
        maintenance={"enabled": False}, recall={"record_activation": False, **recall}
    )


async def say(mem: Memory, session: str, turns: list[tuple[str, str, str]]) -> None:
    """``(event id, role, text)`` turns of one session, a minute apart, then the session ends."""
    for n, (event_id, role, text) in enumerate(turns):
        await mem.add_event(
            session, text, role=role, event_id=event_id, occurred_at=T0 + timedelta(minutes=n)
        )
    await mem.end_session(session)


def found(result: RecallResult) -> dict[str, tuple[str, ...]]:
    """Event id -> the channels that found it."""
    return {i.id: i.channels for i in result.items if i.kind == "event"}


def order(result: RecallResult) -> list[str]:
    return [i.id for i in result.items if i.kind == "event"]


# --- context ----------------------------------------------------------------------------------

CONTEXT = {
    "en": (
        [
            ("q", "user", "Melanie asked what I did over the long weekend."),
            ("a", "user", "I took the kids to a pottery class in Lisbon."),
            ("x", "user", "The printer on the third floor jams again."),
        ],
        "what did I do over the long weekend",
    ),
    "zh": (
        [
            ("q", "user", "小美问我五一假期干了什么。"),
            ("a", "user", "带孩子去杭州上了陶艺课。"),
            ("x", "user", "三楼的打印机又卡纸了。"),
        ],
        "我五一假期干了什么",
    ),
}


@pytest.mark.parametrize("lang", ["en", "zh"])
async def test_the_turn_after_a_match_joins_as_context(db_path: Path, lang: str) -> None:
    turns, question = CONTEXT[lang]
    async with hlmem.open(db_path, config=config(), clock=ManualClock(T0)) as mem:
        await say(mem, "s", turns)
        await mem.drain(timeout_s=30)
        with_context = await mem.recall(question, k=10)
    async with hlmem.open(db_path, config=config(context_weight=0.0)) as mem:
        without = await mem.recall(question, k=10)
    assert order(with_context)[0] == "q"
    # the answer shares no word with the question: only context finds it, right after it
    assert found(with_context)["a"] == ("context",)
    assert order(with_context)[1] == "a"
    assert "a" not in found(without) and "x" not in found(with_context)
    # a context item scores below the turn it follows (a fraction of its score)
    scores = {i.id: i.score for i in with_context.items}
    assert 0 < scores["a"] < scores["q"]


ASSISTANT = {
    "en": (
        [
            ("u", "user", "Can you recommend a hiking trail near Moncayo?"),
            ("r", "assistant", "Try the GR-90 from Agramonte, about four hours."),
        ],
        "a hiking trail near Moncayo",
        "which hiking trail near Moncayo did you recommend",
    ),
    "zh": (
        [
            ("u", "user", "你能推荐一条莫纳约山附近的徒步路线吗？"),
            ("r", "assistant", "可以试试从阿格拉蒙特出发的GR-90，大约四个小时。"),
        ],
        "莫纳约山附近的徒步路线",
        "你之前推荐的莫纳约山附近的徒步路线是哪条",
    ),
}


@pytest.mark.parametrize("lang", ["en", "zh"])
async def test_an_assistant_reply_joins_only_when_asked_what_the_assistant_said(
    db_path: Path, lang: str
) -> None:
    turns, about_user, about_assistant = ASSISTANT[lang]
    assert not parse(about_user, T0).asks_assistant
    assert parse(about_assistant, T0).asks_assistant
    async with hlmem.open(db_path, config=config(), clock=ManualClock(T0)) as mem:
        await say(mem, "s", turns)
        await mem.drain(timeout_s=30)
        plain = await mem.recall(about_user, k=10)
        asked = await mem.recall(about_assistant, k=10)
    assert order(plain) == ["u"]  # the user's question; the reply is the assistant's
    assert asked.query.asks_assistant
    assert order(asked)[:2] == ["u", "r"] and found(asked)["r"] == ("context",)


# --- feedback ---------------------------------------------------------------------------------

FEEDBACK = {
    "en": (
        [
            ("chef", "My aunt is a head chef."),
            ("home", "My aunt's home town is Jinan."),
            ("boss", "My boss lives in Hangzhou."),
            ("cat", "The cat sleeps on the sofa all day."),
        ],
        "the person who is a head chef, where is their home town",
        "where does the head chef come from",
    ),
    "zh": (
        [
            ("chef", "我婶婶是厨师长。"),
            ("home", "我婶婶的老家是在山东济南。"),
            ("boss", "我上司住在杭州。"),
            ("cat", "猫整天在沙发上睡觉。"),
        ],
        "那个当厨师长的人，是哪里人",
        "那个当厨师长的人，是哪里人",
    ),
}


@pytest.mark.parametrize("lang", ["en", "zh"])
async def test_feedback_finds_what_else_is_said_of_who_the_question_describes(
    db_path: Path, lang: str
) -> None:
    lines, _, question = FEEDBACK[lang]
    async with hlmem.open(db_path, config=config(), clock=ManualClock(T0)) as mem:
        for n, (event_id, text) in enumerate(lines):  # each in a session of its own
            await say(mem, f"s{n}", [(event_id, "user", text)])
        await mem.drain(timeout_s=30)
        result = await mem.recall(question, k=10)
    async with hlmem.open(db_path, config=config(feedback_weight=0.0)) as mem:
        without = await mem.recall(question, k=10)
    assert order(result)[0] == "chef"
    assert "feedback" in found(result)["home"] and "fts" not in found(result)["home"]
    assert "home" not in found(without)
    assert "cat" not in found(result) and "boss" not in found(result)


# --- fusion and roles ----------------------------------------------------------------------------


@pytest.mark.parametrize("lang", ["en", "zh"])
async def test_the_best_match_stays_first_whatever_its_age(db_path: Path, lang: str) -> None:
    texts = {
        "en": ("Grandma's pear tart recipe needs cardamom and brown butter.", "Pears are cheap."),
        "zh": ("外婆的梨挞配方要放豆蔻和焦化黄油。", "今天梨很便宜。"),
    }[lang]
    question = {"en": "grandma's pear tart recipe", "zh": "外婆的梨挞配方"}[lang]
    clock = ManualClock(T0)
    async with hlmem.open(db_path, config=config(), clock=clock) as mem:
        await say(mem, "old", [("strong", "user", texts[0])])
        clock.set(T0 + timedelta(days=300))
        await mem.add_event("new", texts[1], event_id="weak")
        await mem.end_session("new")
        await mem.drain(timeout_s=30)
        scores = await mem.recall(question, k=10)
    rrf = config(fusion="rrf", context_weight=0.0, feedback_weight=0.0, weight_recency=3.0)
    async with hlmem.open(db_path, config=rrf, clock=clock) as mem:
        ranks = await mem.recall(question, k=10)
    assert order(scores)[:2] == ["strong", "weak"]
    # reciprocal rank fusion keeps only the order: a recent weak match overtakes
    assert order(ranks)[:2] == ["weak", "strong"]


@pytest.mark.parametrize("lang", ["en", "zh"])
async def test_the_users_words_rank_above_an_assistant_reply_with_the_same_words(
    db_path: Path, lang: str
) -> None:
    user, reply, question = {
        "en": (
            "I keep my passport in the blue folder.",
            "Keeping your passport in the blue folder is sensible.",
            "where is my passport",
        ),
        "zh": ("我的护照放在蓝色文件夹里。", "护照放在蓝色文件夹里很稳妥。", "我的护照在哪"),
    }[lang]
    async with hlmem.open(db_path, config=config(), clock=ManualClock(T0)) as mem:
        await say(mem, "s", [("u", "user", user), ("r", "assistant", reply)])
        await mem.drain(timeout_s=30)
        result = await mem.recall(question, k=10)
    async with hlmem.open(db_path, config=config(assistant_weight=1.0)) as mem:
        even = await mem.recall(question, k=10)
    scores = {i.id: i.score for i in result.items}
    even_scores = {i.id: i.score for i in even.items}
    assert order(result)[0] == "u"
    assert scores["r"] / scores["u"] < even_scores["r"] / even_scores["u"]


@pytest.mark.parametrize(
    ("text", "asks"),
    [
        ("I remember you told me about a deli near the Vatican", True),
        ("In our previous chat, what did you suggest?", True),
        ("what did you recommend for dinner", True),
        ("Can you recommend a good book?", False),
        ("what is my sister's name", False),
        ("你之前推荐的那家餐厅叫什么", True),
        ("我们上次聊过的那本书", True),
        ("你能推荐一本书吗", False),
        ("我妹妹叫什么名字", False),
    ],
)
def test_a_question_about_what_the_assistant_said_is_recognised(text: str, asks: bool) -> None:
    assert parse(text, T0).asks_assistant is asks


# --- trust ------------------------------------------------------------------------------------

SECRET = {
    "en": (
        [
            ("intro", "user", "Let me tell you about the home network setup."),
            ("pw", "user", "the wifi password is Wifi#Home77"),
        ],
        "home network setup",
        "wifi password",
    ),
    "zh": (
        [
            ("intro", "user", "跟你说说家里网络的设置。"),
            ("pw", "user", "无线网密码是 Wifi#Home77"),
        ],
        "家里网络的设置",
        "无线网密码",
    ),
}


@pytest.mark.parametrize("lang", ["en", "zh"])
async def test_context_never_brings_in_an_event_holding_a_secret(db_path: Path, lang: str) -> None:
    turns, around, direct = SECRET[lang]
    async with hlmem.open(db_path, config=config(), clock=ManualClock(T0)) as mem:
        await say(mem, "s", turns)
        await mem.drain(timeout_s=30)
        near = await mem.recall(around, k=10)
        named = await mem.recall(direct, k=10)
    assert order(near) == ["intro"]  # its neighbour holds a secret: not added
    assert "pw" in found(named) and "fts" in found(named)["pw"]  # its own words find it
    assert all("Wifi#Home77" not in i.text for i in named.items)


@pytest.mark.parametrize("lang", ["en", "zh"])
async def test_a_forget_by_query_plans_only_what_its_words_name(db_path: Path, lang: str) -> None:
    turns, question = CONTEXT[lang]
    async with hlmem.open(db_path, config=config(), clock=ManualClock(T0)) as mem:
        await say(mem, "s", turns)
        await mem.drain(timeout_s=30)
        assert "a" in found(await mem.recall(question, k=10))  # recall adds the context
        plan = await mem.forget(query=question, dry_run=True)
    assert set(plan.event_ids) == {"q"}
    assert {m.id for m in plan.matched} == {"q"}
