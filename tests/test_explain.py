"""Explain end to end: ``mem.explain`` and ``hlmem explain claim ID``.

The claim with its status and both clocks, evidence quotes with their source coordinates,
admission decisions, merges, the supersession chain in both directions with reasons, the ledger
rows of the model calls that produced it (model extractor against the simulated provider),
activation and last access; secrets redacted; forgotten and unknown claims refused. Chinese and
English, real pipeline, real files.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from helpers import connect_raw, fast_config, rows, scalar, wait_until
from test_cli import hlmem as run_cli
from test_cli import ok_json
from test_model_extraction import model_config

import hlmem
from hlmem.clock import ManualClock
from hlmem.lifecycle import render
from hlmem.memory import Memory
from hlmem.sim import SimProvider

pytestmark = pytest.mark.anyio


def at(day: int) -> datetime:
    return datetime(2026, 3, day, 9, 0, tzinfo=UTC)


async def say(mem: Memory, clock: ManualClock, when: datetime, session: str, line: str) -> str:
    clock.set(when)
    event_id = await mem.add_event(session, line, event_id=f"{session}-{when.day}")
    await mem.end_session(session)
    await mem.drain(timeout_s=30)
    return event_id


_ACCESSES = "SELECT access_count FROM claims WHERE id = ?"

CHAIN = {
    "zh": ("我住在上海", "我住在北京", "我住在深圳", "上海", "北京", "深圳"),
    "en": (
        "I live in Shanghai.",
        "I live in Beijing.",
        "I live in Shenzhen.",
        "Shanghai",
        "Beijing",
        "Shenzhen",
    ),
}


@pytest.mark.parametrize("lang", ["zh", "en"])
async def test_explain_a_superseded_claim_shows_the_chain_both_ways(
    db_path: Path, lang: str
) -> None:
    first, second, third, a_value, b_value, c_value = CHAIN[lang]
    clock = ManualClock(at(1))
    async with hlmem.open(db_path, config=fast_config(), clock=clock) as mem:
        a_event = await say(mem, clock, at(1), "a", first)
        b_event = await say(mem, clock, at(5), "b", second)
        await say(mem, clock, at(6), "d", second)  # B said again: a restatement, not a claim
        await say(mem, clock, at(9), "c", third)
        by_value = {c.value: c for c in await mem.claims(history=True)}
        a, b, c = by_value[a_value], by_value[b_value], by_value[c_value]
        await mem.recall(c_value)  # an access, recorded in the background
        await wait_until(lambda: scalar(db_path, _ACCESSES, (c.id,)) == 1)
        middle = await mem.explain(b.id)
        oldest = await mem.explain(a.id)
        newest = await mem.explain(c.id)
    assert middle.claim.status == "superseded" and middle.claim.value == b_value
    # Both clocks: valid from when it was said until the next value; recorded then retracted.
    assert middle.claim.valid_from == at(5) and middle.claim.valid_to == at(9)
    assert middle.claim.recorded_at == at(5) and middle.claim.retracted_at == at(9)
    assert [(x.claim.id, x.depth) for x in middle.supersedes] == [(a.id, 1)]
    assert [(x.claim.id, x.depth) for x in middle.superseded_by] == [(c.id, 1)]
    assert a_value in middle.supersedes[0].reason and b_value in middle.supersedes[0].reason
    assert c_value in middle.superseded_by[0].reason
    assert [(x.claim.id, x.depth) for x in oldest.superseded_by] == [(b.id, 1), (c.id, 2)]
    assert oldest.supersedes == ()
    assert [(x.claim.id, x.depth) for x in newest.supersedes] == [(b.id, 1), (a.id, 2)]
    assert newest.superseded_by == () and newest.claim.status == "active"
    # Evidence with quotes and source coordinates: the first telling and the restatement.
    assert [e.event_id for e in middle.evidence] == [b_event, "d-6"]
    first_ev = middle.evidence[0]
    assert first_ev.quote in second and first_ev.origin_class == "user_direct"
    assert first_ev.session_kind == "interactive" and first_ev.session_id == "b"
    assert first_ev.occurred_at == at(5) and first_ev.role == "user"
    assert [(m.stage, m.reason.split(":")[0]) for m in middle.merges] == [("dedup", "exact")]
    # Admission: the sources of both events and the candidates (its own, and the restatement).
    levels = {(d.level, d.decision, d.rule) for d in middle.admission}
    assert ("event", "admit", "trusted") in levels and ("claim", "admit", "passed") in levels
    assert {d.claim_key for d in middle.admission if d.level == "claim"} == {
        b.id,
        middle.merges[0].source_key,
    }
    assert newest.access_count == 1 and newest.last_accessed_at is not None
    assert newest.activation > oldest.activation
    assert middle.calls == ()  # rules extractor, local embedder: no model call
    assert a_event in {e.event_id for e in oldest.evidence}
    text = render(middle)
    for part in ("superseded", b_value, a.id, c.id, "supersedes (older)", "superseded by (newer)"):
        assert part in text


@pytest.mark.parametrize("line", ["我在杭州工作", "I work in Hangzhou."], ids=["zh", "en"])
async def test_explain_lists_the_model_calls_that_produced_a_claim(
    tmp_path: Path, line: str
) -> None:
    db = tmp_path / "model.db"
    with SimProvider() as sim:
        async with hlmem.open(db, config=model_config(sim.base_url)) as mem:
            await mem.add_event("s", line)
            await mem.end_session("s")
            await mem.drain(timeout_s=60)
            (claim,) = await mem.claims()
            explained = await mem.explain(claim.id)
    (job_id,) = rows(
        db, "SELECT job_id FROM extractions WHERE window_id = ?", (explained.window_id,)
    )[0]
    calls = [c for c in explained.calls if c.stage == "extractor"]
    assert calls and {c.job_id for c in calls} == {job_id}
    assert all(c.outcome == "ok" and c.prompt_tokens > 0 and c.model == "sim-chat" for c in calls)
    assert explained.extractor == "model:sim-chat"
    assert "model calls:" in render(explained) and "sim-chat" in render(explained)


async def test_explain_redacts_secrets_and_refuses_unknown_and_forgotten_claims(
    db_path: Path,
) -> None:
    key = "sk-" + "Zq8" * 12
    async with hlmem.open(db_path, config=fast_config()) as mem:
        await mem.add_event("s", "我住在上海")
        await mem.end_session("s")
        await mem.drain(timeout_s=30)
        (claim,) = await mem.claims()
    # A quote stored before the secret gate existed (an old file): explain must not show it.
    conn = connect_raw(db_path)
    try:
        conn.execute(
            "UPDATE evidence SET quote = ? WHERE claim_id = ?", (f"我住在上海 key={key}", claim.id)
        )
    finally:
        conn.close()
    async with hlmem.open(db_path, config=fast_config()) as mem:
        explained = await mem.explain(claim.id)
        assert key not in explained.model_dump_json() and key not in render(explained)
        assert "REDACTED" in explained.evidence[0].quote
        with pytest.raises(hlmem.InputError, match="no claim"):
            await mem.explain("no-such-claim")
        await mem.forget(claim_id=claim.id)
        with pytest.raises(hlmem.InputError, match="forgotten"):
            await mem.explain(claim.id)


async def test_cli_explain_text_json_and_exit_codes(tmp_path: Path) -> None:
    db = tmp_path / "cli.db"
    clock = ManualClock(at(1))
    async with hlmem.open(db, config=fast_config(), clock=clock) as mem:
        await say(mem, clock, at(1), "a", "我主要用深色模式")
        await say(mem, clock, at(2), "b", "最近眼睛不舒服，暂时换成浅色模式")
        old = next(c for c in await mem.claims(history=True) if c.status == "superseded")
    data = ok_json(run_cli("--db", db, "explain", "claim", old.id, "--json", cwd=tmp_path))
    assert data["claim"]["id"] == old.id and data["claim"]["status"] == "superseded"
    assert data["superseded_by"][0]["claim"]["value"] == "浅色模式"
    assert data["evidence"][0]["origin_class"] == "user_direct"
    text = run_cli("--db", db, "explain", "claim", old.id, cwd=tmp_path)
    assert text.returncode == 0 and "深色模式" in text.stdout and "暂时" in text.stdout
    missing = run_cli("--db", db, "explain", "claim", "nope", cwd=tmp_path)
    assert missing.returncode == 1 and "no claim 'nope'" in missing.stderr
    assert run_cli("--db", db, "explain", cwd=tmp_path).returncode == 2
    assert run_cli("--db", db, "explain", "event", "x", cwd=tmp_path).returncode == 2
