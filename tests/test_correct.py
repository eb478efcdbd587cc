"""User corrections end to end: ``mem.correct`` and ``hlmem correct``.

A correction supersedes the claim with the user's value on the same slot, through admission,
dedup and conflict; the correction is an event and the new claim's evidence; the old value stays
in history with the reason "user correction", and recall returns the new one. Chinese and
English, bare values and sentences, multi-valued slots, refusals, and the CLI.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from helpers import claim_items, count, fast_config, rows
from test_cli import hlmem as run_cli
from test_cli import ok_json

import hlmem
from hlmem.clock import ManualClock
from hlmem.memory import Memory
from hlmem.messages import Claim

pytestmark = pytest.mark.anyio


def at(day: int) -> datetime:
    return datetime(2026, 3, day, 9, 0, tzinfo=UTC)


async def say(mem: Memory, clock: ManualClock, when: datetime, *lines: str) -> None:
    clock.set(when)
    session = f"s-{when.day}"
    for line in lines:
        await mem.add_event(session, line)
    await mem.end_session(session)
    await mem.drain(timeout_s=30)


def only(claims: list[Claim], predicate: str) -> Claim:
    found = [c for c in claims if c.predicate == predicate]
    assert len(found) == 1, [(c.predicate, c.value, c.status) for c in claims]
    return found[0]


@pytest.mark.parametrize(
    ("said", "words", "old", "new", "question"),
    [
        ("我住在上海", "北京", "上海", "北京", "我在哪个城市？"),
        ("我住在上海", "其实我住在北京", "上海", "北京", "我在哪个城市？"),
        ("I live in Shanghai.", "Beijing", "Shanghai", "Beijing", "Which city am I in?"),
        (
            "I live in Shanghai.",
            "Actually I live in Beijing.",
            "Shanghai",
            "Beijing",
            "Which city am I in?",
        ),
    ],
    ids=["zh-value", "zh-sentence", "en-value", "en-sentence"],
)
async def test_a_correction_supersedes_keeps_history_and_recall_returns_the_new_value(
    db_path: Path, said: str, words: str, old: str, new: str, question: str
) -> None:
    clock = ManualClock(at(1))
    async with hlmem.open(db_path, config=fast_config(), clock=clock) as mem:
        await say(mem, clock, at(1), said)
        wrong = only(await mem.claims(), "location")
        clock.set(at(9))
        fix = await mem.correct(wrong.id, words)
        await mem.drain(timeout_s=30)
        now = only(await mem.claims(), "location")
        history = await mem.claims(predicate="location", history=True)
        believed_before = only(await mem.claims(predicate="location", as_of=at(5)), "location")
        true_before = await mem.claims(predicate="location", valid_at=at(5))
        why = await mem.supersessions([wrong.id])
        hits = await mem.recall(question)
        explained = await mem.explain(wrong.id)
    assert fix.corrects == wrong.id and fix.value == new and now.id == fix.claim_id
    assert now.value == new and now.status == "active"
    old_row = only([c for c in history if c.id == wrong.id], "location")
    assert old_row.value == old and old_row.status == "superseded"
    assert old_row.superseded_by == now.id and old_row.retracted_at == at(9)
    # It was wrong, not changed: its valid time closes where it opened, and the corrected value
    # is what was true all along; what the system believed then is kept.
    assert old_row.valid_to == old_row.valid_from == now.valid_from
    assert believed_before.id == wrong.id
    assert [c.id for c in true_before] == [now.id]
    assert [(s.old, s.new) for s in why] == [(wrong.id, now.id)]
    assert why[0].reason.startswith("user correction:") and old in why[0].reason
    # The correction is an event, and the new claim's evidence.
    (event,) = rows(db_path, "SELECT content, metadata FROM events WHERE id = ?", (fix.event_id,))
    assert event[0] == words and json.loads(event[1]) == {"correct": {"claim_id": wrong.id}}
    assert [e.event_id for e in now.evidence] == [fix.event_id]
    recalled = [i.value for i in claim_items(hits)]
    assert new in recalled and old not in recalled
    assert [link.claim.id for link in explained.superseded_by] == [now.id]
    assert explained.superseded_by[0].reason.startswith("user correction")


@pytest.mark.parametrize(
    ("lines", "wrong_value", "words", "kept_value", "new_value"),
    [
        (("我喜欢喝茶", "我也喜欢咖啡"), "喝茶", "我喜欢喝绿茶", "咖啡", "喝绿茶"),
        (("I like tea.", "I also like coffee."), "tea", "I like green tea.", "coffee", "green tea"),
    ],
    ids=["zh", "en"],
)
async def test_a_correction_on_a_multi_valued_slot_replaces_only_that_value(
    db_path: Path,
    lines: tuple[str, ...],
    wrong_value: str,
    words: str,
    kept_value: str,
    new_value: str,
) -> None:
    clock = ManualClock(at(1))
    async with hlmem.open(db_path, config=fast_config(), clock=clock) as mem:
        await say(mem, clock, at(1), *lines)
        likes = {c.value: c for c in await mem.claims(predicate="likes")}
        clock.set(at(3))
        await mem.correct(likes[wrong_value].id, words)
        await mem.drain(timeout_s=30)
        now = {c.value: c.status for c in await mem.claims(predicate="likes", history=True)}
        # Correcting a value to one the slot already holds folds into that claim.
        clock.set(at(4))
        fix = await mem.correct(
            next(c.id for c in await mem.claims(predicate="likes") if c.value == new_value),
            kept_value,
        )
        await mem.drain(timeout_s=30)
        after = await mem.claims(predicate="likes", history=True)
        why = await mem.supersessions([c.id for c in after])
    assert now == {wrong_value: "superseded", kept_value: "active", new_value: "active"}
    assert sorted((c.value, c.status) for c in after) == sorted(
        [(wrong_value, "superseded"), (new_value, "superseded"), (kept_value, "active")]
    )
    holder = next(c for c in after if c.value == kept_value)
    assert fix.event_id in {e.event_id for e in holder.evidence}
    assert all(s.reason.startswith("user correction") for s in why)
    assert {s.new for s in why} == {holder.id, next(c.id for c in after if c.value == new_value)}


async def test_bad_corrections_are_refused_and_write_nothing(db_path: Path) -> None:
    clock = ManualClock(at(1))
    async with hlmem.open(db_path, config=fast_config(), clock=clock) as mem:
        await say(mem, clock, at(1), "我住在上海", "我喜欢喝茶")
        await say(mem, clock, at(2), "我住在北京")
        history = {c.value: c for c in await mem.claims(history=True)}
        current, old = history["北京"], history["上海"]
        await mem.forget(claim_id=old.id)
        before = {t: count(db_path, t) for t in ("events", "jobs", "claims")}
        for claim_id, words in (
            ("no-such-claim", "北京"),
            (current.id, "   "),
            (current.id, "北京"),  # the same value
            (current.id, "我喜欢喝咖啡"),  # says nothing about location
            (current.id, "上海"),  # a forgotten value never comes back
            (current.id, "sk-" + "Zq8" * 12),  # a secret: the gate refuses it
            (old.id, "深圳"),  # forgotten
        ):
            with pytest.raises(hlmem.InputError):
                await mem.correct(claim_id, words)
        clock.set(at(3))
        await mem.correct(current.id, "深圳")
        await mem.drain(timeout_s=30)
        with pytest.raises(hlmem.InputError, match="superseded"):
            await mem.correct(current.id, "广州")  # no longer current
        after = {t: count(db_path, t) for t in ("events", "claims")}
    assert after == {"events": before["events"] + 1, "claims": before["claims"] + 1}


async def test_cli_correct_exit_codes_and_json(tmp_path: Path) -> None:
    db = tmp_path / "cli.db"
    clock = ManualClock(at(1))
    async with hlmem.open(db, config=fast_config(), clock=clock) as mem:
        await say(mem, clock, at(1), "I live in Shanghai.")
        (wrong,) = await mem.claims()
    done = ok_json(
        run_cli("--db", db, "correct", wrong.id, "Beijing", "--drain", "--json", cwd=tmp_path)
    )
    assert done["corrects"] == wrong.id and done["value"] == "Beijing"
    assert rows(db, "SELECT value, status FROM claims ORDER BY value") == [
        ("Beijing", "active"),
        ("Shanghai", "superseded"),
    ]
    text = run_cli("--db", db, "correct", done["claim_id"], "我住在广州", cwd=tmp_path)
    assert text.returncode == 0 and "will replace" in text.stdout
    unknown = run_cli("--db", db, "correct", "nope", "x", cwd=tmp_path)
    assert unknown.returncode == 1 and "no claim 'nope'" in unknown.stderr
    assert run_cli("--db", db, "correct", wrong.id, cwd=tmp_path).returncode == 2
