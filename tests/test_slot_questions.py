"""Questions that name a slot reach its claims, though they share no word with its value.

"我现在住在哪？" with "用户在佛山" stored: the question names the speaker's ``location`` slot,
query understanding maps it there (:func:`hlmem.recall.slots.asked_slots`, read from the
lexicon at runtime plus a small table of question words), and recall fetches the slot's claims
as candidates (channel "slot"): the current one for a question about now, the superseded ones
too for "之前呢？" / "before". A predicate the lexicon does not have is never asked for: "where
do I work" is ``work_location`` where the lexicon defines it, ``employer`` and ``location``
otherwise.

Real SQLite files, the real pipeline (``mem.remember`` writes slot claims through admission,
dedup and conflict), Chinese and English.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from helpers import fast_config

import hlmem
from hlmem.clock import ManualClock
from hlmem.lang import default_lexicon, load_lexicon
from hlmem.memory import Memory
from hlmem.messages import RecallResult
from hlmem.recall.slots import asked_slots

pytestmark = pytest.mark.anyio

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)

EXTRA_LEXICON = """
format = 1

[predicates.work_location]
cardinality = "single"
label = { zh = "工作地点", en = "work location" }
attributes = { zh = ["工作地点", "上班地点"], en = ["work location", "office"] }

[predicates.editor]
cardinality = "single"
label = { zh = "编辑器", en = "editor" }
attributes = { zh = ["编辑器"], en = ["editor", "text editor"] }
"""


def config(**sections: Any) -> Any:
    recall = {"record_activation": False, **sections.pop("recall", {})}
    return fast_config(maintenance={"enabled": False}, recall=recall, **sections)


def claims(result: RecallResult) -> list[tuple[str | None, str | None, str]]:
    """(predicate, value, status) of the claim items, best first."""
    return [(i.predicate, i.value, i.status) for i in result.items if i.kind == "claim"]


# --- understanding: question -> slots --------------------------------------------------------

ASKED = [
    ("我住在哪？", ("location",)),
    ("我现在住在哪？", ("location",)),
    ("我之前住在哪里？", ("location",)),
    ("where do I live now?", ("location",)),
    ("where did I live before?", ("location",)),
    ("what city am I based in?", ("location",)),
    ("where do I work now?", ("employer", "location")),
    ("我在哪上班？", ("employer", "location")),
    ("who do I work for?", ("employer",)),
    ("我在哪家公司？", ("employer",)),
    ("what's my name?", ("name",)),
    ("我叫什么名字？", ("name",)),
    ("我多大了？", ("age",)),
    ("how old am I?", ("age",)),
    ("我的生日是哪天？", ("birthday",)),
    ("when is my birthday?", ("birthday",)),
    ("我现在偏好什么界面主题？", ("ui_theme",)),
    ("what theme do I use?", ("ui_theme",)),
    ("what's my diet?", ("diet",)),
    ("我的饮食习惯是什么？", ("diet",)),
    ("我养了什么宠物？", ("pets",)),
    ("what pets do I have?", ("pets",)),
    ("我老家是哪里的？", ("hometown",)),
    ("where am I from?", ("hometown",)),
    ("我是做什么工作的？", ("occupation",)),
    ("what do I do for a living?", ("occupation",)),
    ("what's my job?", ("occupation",)),
]

NOT_ASKED = [
    "我的猫叫什么？",  # the cat's name, not the user's
    "what's my son's name?",  # the son's
    "Where is the prod DB?",
    "where does Alice live?",
    "我喜欢吃什么水果？",
    "what did we talk about last week?",
]


@pytest.mark.parametrize(("question", "slots"), ASKED)
def test_a_question_maps_to_the_slots_it_names(question: str, slots: tuple[str, ...]) -> None:
    assert asked_slots(question, default_lexicon()) == slots


@pytest.mark.parametrize("question", NOT_ASKED)
def test_a_question_about_something_else_names_no_slot_of_the_user(question: str) -> None:
    assert asked_slots(question, default_lexicon()) == ()


def test_where_the_user_works_is_work_location_where_the_lexicon_has_it(tmp_path: Path) -> None:
    extra = tmp_path / "extra.toml"
    extra.write_text(EXTRA_LEXICON, encoding="utf-8")
    lexicon = load_lexicon([extra])
    assert asked_slots("where do I work now?", lexicon) == ("work_location",)
    assert asked_slots("我在哪上班？", lexicon) == ("work_location",)
    assert asked_slots("我用什么编辑器？", lexicon) == ("editor",)
    assert asked_slots("which editor do I use?", lexicon) == ("editor",)
    # where the user lives stays location
    assert asked_slots("我住在哪？", lexicon) == ("location",)
    # without it, an editor question names no slot
    assert asked_slots("我用什么编辑器？", default_lexicon()) == ()


# --- recall: the slot's claims as candidates ----------------------------------------------------

HOME = {
    "zh": ("佛山", "用户在佛山", "我现在住在哪？"),
    "en": ("Lisbon", "User is based in Lisbon", "where do I live now?"),
}


async def noise(mem: Memory) -> None:
    await mem.remember("user", "employer", "Acme", text="User works at Acme")
    await mem.remember("user", "likes", "咖啡", text="用户喜欢咖啡")
    await mem.remember("Alice", "location", "Berlin", text="Alice is based in Berlin")
    await mem.add_event("chat", "今天天气不错，我们去公园散步吧。", occurred_at=T0)
    await mem.add_event("chat", "Where is the prod DB? It moved last week.", occurred_at=T0)
    await mem.end_session("chat")


@pytest.mark.parametrize("lang", ["zh", "en"])
async def test_a_question_naming_a_slot_returns_its_current_claim(db_path: Path, lang: str) -> None:
    value, text, question = HOME[lang]
    async with hlmem.open(db_path, config=config(), clock=ManualClock(T0)) as mem:
        await noise(mem)
        await mem.remember("user", "location", value, text=text)
        await mem.drain(timeout_s=30)
        result = await mem.recall(question, k=5)
    assert result.query.slots == ("location",)
    first = result.items[0]
    assert (first.predicate, first.value, first.status) == ("location", value, "active")
    assert "slot" in first.channels
    # another person's location is not the user's slot (full text may still find it)
    assert all("slot" not in i.channels for i in result.items if i.subject != "user")


@pytest.mark.parametrize(
    ("question", "predicate", "value", "text"),
    [
        ("what's my name?", "name", "Wren", "Call me Wren"),
        ("我叫什么名字？", "name", "林小雨", "用户叫林小雨"),
        ("how old am I?", "age", "34", "User turned 34 in May"),
        ("我的生日是哪天？", "birthday", "3月14日", "用户生于3月14日"),
        ("我是做什么工作的？", "occupation", "护士", "用户是护士"),
        ("what pets do I have?", "pets", "a tabby cat", "There is a tabby cat at home"),
        ("我老家是哪里的？", "hometown", "潮汕", "用户来自潮汕"),
    ],
)
async def test_each_slot_question_finds_its_claim(
    db_path: Path, question: str, predicate: str, value: str, text: str
) -> None:
    async with hlmem.open(db_path, config=config(), clock=ManualClock(T0)) as mem:
        await noise(mem)
        await mem.remember("user", predicate, value, text=text)
        await mem.drain(timeout_s=30)
        result = await mem.recall(question, k=5)
    assert claims(result)[0] == (predicate, value, "active")


@pytest.mark.parametrize(
    ("before", "now", "history_question"),
    [
        (("广州", "用户在广州"), ("佛山", "用户在佛山"), "之前呢？我以前住在哪？"),
        (
            ("Porto", "User is based in Porto"),
            ("Lisbon", "User is based in Lisbon"),
            "where did I live before?",
        ),
    ],
)
async def test_history_of_a_slot_for_a_question_about_before(
    db_path: Path,
    before: tuple[str, str],
    now: tuple[str, str],
    history_question: str,
) -> None:
    clock = ManualClock(T0)
    async with hlmem.open(db_path, config=config(), clock=clock) as mem:
        await noise(mem)
        await mem.remember("user", "location", before[0], text=before[1])
        await mem.drain(timeout_s=30)
        clock.advance(timedelta(days=30).total_seconds())
        await mem.remember("user", "location", now[0], text=now[1])
        await mem.drain(timeout_s=30)
        current = await mem.recall("where do I live now?", k=5)
        history = await mem.recall(history_question, k=5)
    assert claims(current)[0] == ("location", now[0], "active")
    assert ("location", before[0], "superseded") not in claims(current)
    assert history.query.mode == "history"
    found = claims(history)
    assert ("location", before[0], "superseded") in found
    assert ("location", now[0], "active") in found


async def test_an_editor_question_finds_the_editor_slot_of_an_extra_lexicon(
    db_path: Path, tmp_path: Path
) -> None:
    extra = tmp_path / "extra.toml"
    extra.write_text(EXTRA_LEXICON, encoding="utf-8")
    cfg = config(extractor={"lexicon_paths": [str(extra)]})
    async with hlmem.open(db_path, config=cfg, clock=ManualClock(T0)) as mem:
        await noise(mem)
        await mem.remember("user", "editor", "Helix", text="Helix every day since spring")
        await mem.remember("user", "work_location", "深圳", text="用户在深圳上班")
        await mem.remember("user", "location", "东莞", text="用户在东莞")
        await mem.drain(timeout_s=30)
        editor = await mem.recall("我用什么编辑器？", k=5)
        work = await mem.recall("where do I work now?", k=5)
        home = await mem.recall("我住在哪？", k=5)
    assert claims(editor)[0] == ("editor", "Helix", "active")
    assert claims(work)[0] == ("work_location", "深圳", "active")
    assert claims(home)[0] == ("location", "东莞", "active")


async def test_without_a_slot_weight_the_question_finds_nothing(db_path: Path) -> None:
    """The channel is what finds it: with ``recall.slot_weight = 0`` it is off."""
    async with hlmem.open(db_path, config=config(), clock=ManualClock(T0)) as mem:
        await mem.remember("user", "location", "佛山", text="用户在佛山")
        await mem.drain(timeout_s=30)
    async with hlmem.open(
        db_path, config=config(recall={"slot_weight": 0.0}), clock=ManualClock(T0)
    ) as mem:
        off = await mem.recall("我现在住在哪？", k=5)
    assert ("location", "佛山", "active") not in claims(off)


@pytest.mark.parametrize(
    ("question", "follow_up", "before", "now"),
    [
        ("我现在住在哪？", "之前呢？", ("广州", "用户在广州"), ("佛山", "用户在佛山")),
        (
            "where do I live now?",
            "and before?",
            ("Porto", "User is based in Porto"),
            ("Lisbon", "User is based in Lisbon"),
        ),
    ],
)
async def test_a_bare_follow_up_in_a_session_asks_the_same_slot_about_before(
    db_path: Path,
    question: str,
    follow_up: str,
    before: tuple[str, str],
    now: tuple[str, str],
) -> None:
    clock = ManualClock(T0)
    async with hlmem.open(db_path, config=config(), clock=clock) as mem:
        await mem.remember("user", "location", before[0], text=before[1])
        await mem.drain(timeout_s=30)
        clock.advance(timedelta(days=30).total_seconds())
        await mem.remember("user", "location", now[0], text=now[1])
        await mem.drain(timeout_s=30)
        clock.advance(timedelta(days=30).total_seconds())
        alone = await mem.recall(follow_up, session_id="chat-9")
        first = await mem.recall(question, session_id="chat-9")
        then = await mem.recall(follow_up, session_id="chat-9")
        elsewhere = await mem.recall(follow_up, session_id="chat-10")
    assert alone.query.slots == () and elsewhere.query.slots == ()
    assert claims(first)[0] == ("location", now[0], "active")
    assert then.query.slots == ("location",) and then.query.mode == "history"
    assert ("location", before[0], "superseded") in claims(then)


async def test_a_forget_by_query_never_plans_a_slots_claims(db_path: Path) -> None:
    """A forget by query looks up only what its words name: "忘了我住在哪" shares no word
    with "用户在佛山", and the slot channel does not bring it in."""
    async with hlmem.open(db_path, config=config(), clock=ManualClock(T0)) as mem:
        await mem.remember("user", "location", "佛山", text="用户在佛山")
        await mem.drain(timeout_s=30)
        plan = await mem.forget(query="我住在哪", dry_run=True)
        recalled = await mem.recall("我住在哪")
    assert claims(recalled)[0] == ("location", "佛山", "active")
    assert plan.claim_ids == ()
