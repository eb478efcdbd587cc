"""What a recall result says about itself, and two rules on what it hands back.

- **Answerability**: ``supported`` (a current claim of the slot the question names, or an item
  holding ``recall.supported_coverage`` of the question's search terms), ``low_confidence``
  (something, weakly), or ``no_evidence`` (nothing).
- **A versioned packet**: a ``schema_version``, a ``query_id`` per recall, ``truncated`` when
  the token budget dropped items, and a ``feedback_id`` per item that ``mem.feedback``
  accepts (a claim's id still works).
- **Echo suppression**: what the asking session said within ``recall.echo_window_s`` is not
  handed back as a memory of it (``session_id=``).
- **Freshness**: an item whose slot the lexicon marks ``volatile`` (a plan, a status) and whose
  evidence is older than ``recall.freshness_days`` says "as of <date>" in the packet.

Real SQLite files, the real pipeline, Chinese and English.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from helpers import fast_config, scalar

import hlmem
from hlmem.cli.app import main
from hlmem.clock import ManualClock
from hlmem.errors import InputError
from hlmem.messages import RECALL_SCHEMA_VERSION, RecallResult

pytestmark = pytest.mark.anyio

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
DAY_S = 86_400.0


def config(**sections: Any) -> Any:
    recall = {"record_activation": False, **sections.pop("recall", {})}
    return fast_config(maintenance={"enabled": False}, recall=recall, **sections)


def claims(result: RecallResult) -> list[tuple[str | None, str | None]]:
    return [(i.predicate, i.value) for i in result.items if i.kind == "claim"]


# --- answerability ----------------------------------------------------------------------------

SLOT = {
    "zh": ("佛山", "用户在佛山", "我现在住在哪？", "我的护照号码是多少？"),
    "en": (
        "Lisbon",
        "User is based in Lisbon",
        "where do I live now?",
        "what's my passport number?",
    ),
}


@pytest.mark.parametrize("lang", ["zh", "en"])
async def test_a_current_claim_of_the_asked_slot_is_supported(db_path: Path, lang: str) -> None:
    value, text, question, unknown = SLOT[lang]
    async with hlmem.open(db_path, config=config(), clock=ManualClock(T0)) as mem:
        empty = await mem.recall(question)
        await mem.remember("user", "location", value, text=text)
        await mem.drain(timeout_s=30)
        result = await mem.recall(question)
        nothing = await mem.recall(unknown)
    assert (empty.answerability, empty.items) == ("no_evidence", ())
    assert result.answerability == "supported"
    assert claims(result)[0] == ("location", value)
    assert nothing.answerability == "no_evidence" and nothing.items == ()


@pytest.mark.parametrize(
    ("said", "question"),
    [
        ("最近工作太忙了，现在每天都加班。", "我现在住在哪个城市？"),
        ("Work is busy now, I stay late most days.", "which city do I live in now?"),
    ],
)
async def test_a_slot_question_with_only_weak_matches_is_low_confidence(
    db_path: Path, said: str, question: str
) -> None:
    """Something is found (a word of an event), but no claim of the slot, and no item holds
    ``recall.supported_coverage`` of the question's terms."""
    async with hlmem.open(db_path, config=config(), clock=ManualClock(T0)) as mem:
        await mem.add_event("chat", said, occurred_at=T0)
        await mem.end_session("chat")
        await mem.drain(timeout_s=30)
        result = await mem.recall(question)
    assert result.items
    assert result.answerability == "low_confidence"


@pytest.mark.parametrize(
    ("said", "question"),
    [
        ("记住：生产数据库在 db-prod-2 上，位于法兰克福。", "生产数据库在哪台机器上？"),
        (
            "Remember: the production database lives on db-prod-2 in Frankfurt.",
            "Where does the production database live?",
        ),
    ],
)
async def test_strong_evidence_is_supported_without_a_slot(
    db_path: Path, said: str, question: str
) -> None:
    async with hlmem.open(db_path, config=config(), clock=ManualClock(T0)) as mem:
        await mem.add_event("chat", said, occurred_at=T0)
        await mem.end_session("chat")
        await mem.drain(timeout_s=30)
        result = await mem.recall(question)
    assert result.query.slots == ()
    assert result.answerability == "supported"


# --- the versioned packet ---------------------------------------------------------------------


async def test_query_id_truncated_and_schema_version(db_path: Path) -> None:
    async with hlmem.open(db_path, config=config(), clock=ManualClock(T0)) as mem:
        for n in range(12):
            await mem.remember(
                "user",
                "likes",
                f"咖啡豆{n}号",
                text=f"用户喜欢第{n}号咖啡豆，产自云南的第{n}个庄园",
            )
        await mem.drain(timeout_s=30)
        wide = await mem.recall("我喜欢什么咖啡豆", k=12)
        narrow = await mem.recall("我喜欢什么咖啡豆", k=12, budget_tokens=60)
    assert wide.query_id != narrow.query_id and wide.query_id.startswith("q_")
    assert len(wide.items) == len(narrow.items) == 12
    assert not wide.truncated
    assert narrow.truncated and narrow.tokens <= 60
    assert narrow.packet.count("\n- ") < 12
    dumped = json.loads(narrow.model_dump_json())
    assert dumped["schema_version"] == RECALL_SCHEMA_VERSION
    assert {"answerability", "query_id", "truncated"} <= set(dumped)
    assert all(item["feedback_id"] for item in dumped["items"])
    assert RecallResult.model_validate_json(narrow.model_dump_json()) == narrow


async def test_feedback_ids_move_utility_and_claim_ids_still_work(db_path: Path) -> None:
    async with hlmem.open(db_path, config=config(), clock=ManualClock(T0)) as mem:
        await mem.remember("user", "location", "佛山", text="用户在佛山")
        await mem.add_event("chat", "我周末常去顺德吃双皮奶。", occurred_at=T0)
        await mem.end_session("chat")
        await mem.drain(timeout_s=30)
        result = await mem.recall("我住在哪？顺德双皮奶")
        claim = next(i for i in result.items if i.kind == "claim" and i.value == "佛山")
        event = next((i for i in result.items if i.kind == "event"), None)
        assert claim.feedback_id != claim.id
        await mem.feedback(claim.feedback_id, useful=True)
        after_one = scalar(db_path, "SELECT utility FROM claims WHERE id = ?", (claim.id,))
        await mem.feedback(claim.id, useful=True)  # a claim id, as before
        after_two = scalar(db_path, "SELECT utility FROM claims WHERE id = ?", (claim.id,))
        await mem.feedback(claim.feedback_id, useful=False)
        after_three = scalar(db_path, "SELECT utility FROM claims WHERE id = ?", (claim.id,))
        if event is not None:
            await mem.feedback(event.feedback_id, useful=True)  # accepted, recorded
        with pytest.raises(InputError):
            await mem.feedback(f"{result.query_id}:cl_nope", useful=True)
        with pytest.raises(InputError):
            await mem.feedback("cl_nope", useful=True)
    assert (after_one, after_two, after_three) == (0.25, 0.5, 0.25)
    if event is not None:
        assert (
            scalar(db_path, "SELECT utility FROM event_feedback WHERE event_id = ?", (event.id,))
            == 0.25
        )


@pytest.mark.parametrize(
    ("said", "question"),
    [
        ("今天天气不错，我们去公园散步吧。", "公园散步"),
        ("The weather is lovely, let's walk in the park.", "walk in the park"),
    ],
)
async def test_feedback_on_an_event_item_is_kept_beside_it_and_forgotten_with_it(
    db_path: Path, said: str, question: str
) -> None:
    async with hlmem.open(db_path, config=config(), clock=ManualClock(T0)) as mem:
        event_id = await mem.add_event("chat", said, occurred_at=T0)
        await mem.end_session("chat")
        await mem.drain(timeout_s=30)
        before = await mem.recall(question)
        item = next(i for i in before.items if i.kind == "event" and i.id == event_id)
        await mem.feedback(item.feedback_id, useful=True)
        after = await mem.recall(question)
        utility = scalar(
            db_path, "SELECT utility FROM event_feedback WHERE event_id = ?", (event_id,)
        )
        score = next(i.score for i in after.items if i.id == event_id)
        await mem.forget(event_id=event_id)
    assert utility == 0.25
    assert score > item.score  # feedback ranks it higher, as a claim's does
    assert scalar(db_path, "SELECT count(*) FROM event_feedback") == 0


def test_cli_json_is_the_versioned_result(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "m.db")
    assert (
        main(
            [
                "--db",
                db,
                "remember",
                "user",
                "location",
                "Lisbon",
                "--text",
                "User is based in Lisbon",
                "--drain",
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert main(["--db", db, "recall", "where do I live now?", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["schema_version"] == RECALL_SCHEMA_VERSION
    assert out["answerability"] == "supported"
    assert out["items"][0]["value"] == "Lisbon" and out["items"][0]["feedback_id"]
    assert out["query"]["slots"] == ["location"]
    # asked from the session that said it a moment ago ("remember"'s): not handed back
    assert (
        main(["--db", db, "recall", "where do I live now?", "--session-id", "remember", "--json"])
        == 0
    )
    echoed = json.loads(capsys.readouterr().out)
    assert "Lisbon" not in [i["value"] for i in echoed["items"]]


# --- echo suppression -------------------------------------------------------------------------

ECHO = {
    "zh": ("我刚把车停在了B2层的K区。", "我的车停在哪里了？"),
    "en": ("I just parked the car on level B2, zone K.", "where did I park the car?"),
}


@pytest.mark.parametrize("lang", ["zh", "en"])
async def test_what_this_session_just_said_is_not_echoed(db_path: Path, lang: str) -> None:
    said, question = ECHO[lang]
    clock = ManualClock(T0)
    window = config().recall.echo_window_s
    async with hlmem.open(db_path, config=config(), clock=clock) as mem:
        await mem.add_event("s1", said, occurred_at=T0)
        await mem.remember("user", "location", "佛山", text="用户在佛山", session_id="s1")
        await mem.flush()
        await mem.drain(timeout_s=30)
        clock.advance(30)
        same = await mem.recall(question, session_id="s1")
        same_slot = await mem.recall("我现在住在哪？", session_id="s1")
        other = await mem.recall(question, session_id="s2")
        anywhere = await mem.recall(question)
        clock.advance(window)
        later = await mem.recall(question, session_id="s1")
        later_slot = await mem.recall("我现在住在哪？", session_id="s1")
    assert said not in [i.text for i in same.items]
    assert same.answerability != "supported" or not same.items
    assert ("location", "佛山") not in claims(same_slot)
    for result in (other, anywhere, later):
        assert said in [i.text for i in result.items]
    assert claims(later_slot)[0] == ("location", "佛山")
    assert later_slot.answerability == "supported"


# --- freshness --------------------------------------------------------------------------------

STATUS_LEXICON = """
format = 1

[predicates.status]
cardinality = "single"
volatile = true
label = { zh = "状态", en = "status" }
attributes = { zh = ["状态", "近况"], en = ["status"] }
"""


async def test_an_old_volatile_item_says_as_of_when(db_path: Path, tmp_path: Path) -> None:
    extra = tmp_path / "status.toml"
    extra.write_text(STATUS_LEXICON, encoding="utf-8")
    cfg = config(extractor={"lexicon_paths": [str(extra)]})
    clock = ManualClock(T0)
    days = cfg.recall.freshness_days
    async with hlmem.open(db_path, config=cfg, clock=clock) as mem:
        await mem.remember("user", "status", "on parental leave", text="User is on parental leave")
        await mem.remember("user", "plan", "去成都出差", text="用户计划下个月去成都出差")
        await mem.remember("user", "location", "佛山", text="用户在佛山")
        await mem.drain(timeout_s=30)
        fresh_status = await mem.recall("what's my status?")
        fresh_plan = await mem.recall("成都出差")
        clock.advance((days + 1) * DAY_S)
        old_status = await mem.recall("what's my status?")
        old_plan = await mem.recall("成都出差")
        old_home = await mem.recall("我住在哪？")
    note = f"as of {T0.date().isoformat()}"
    for fresh in (fresh_status, fresh_plan):
        assert note not in fresh.packet
        assert all(i.as_of is None for i in fresh.items)
    for old, value in ((old_status, "on parental leave"), (old_plan, "去成都出差")):
        item = next(i for i in old.items if i.kind == "claim" and i.value == value)
        assert item.as_of is not None and item.as_of.date() == T0.date()
        line = next(x for x in old.packet.splitlines() if value in x or item.text in x)
        assert note in line
    # a slot that does not change by itself (where the user lives) is not annotated
    assert note not in old_home.packet
    assert claims(old_home)[0] == ("location", "佛山")
