"""A refusal caused by a forget is said, and a forgotten fact can be taught again on purpose
(issue 20, point 4).

After a forget, ingesting the same fact again reports it blocked with the forget's time (the
API, ``hlmem ingest`` and its JSON, in both ingest writer modes and on the stdlib SQLite
module), ``add_event`` still returns the id and :meth:`Memory.blocked` says why; ``remember``
of a forgotten fact is refused in its own transaction (nothing written) by the API and the CLI;
``override_forget`` / ``--override-forget`` lifts exactly that fact's content and slot
tombstones, records it where ``explain`` shows it, and an old replay of the forgotten events or
a re-drive of their jobs still brings nothing back. Real files, the real pipeline, real CLI
processes.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from helpers import count, fast_config, rows
from test_cli import hlmem as run_cli
from test_cli import jsonl

import hlmem
from hlmem.clock import ManualClock, iso
from hlmem.jobs import JobSpec
from hlmem.memory import Memory, ingest_jsonl
from hlmem.messages import JOB_PAYLOAD

pytestmark = pytest.mark.anyio

#: (what was said, the remembered fact: subject, predicate, value, text)
FACT = {
    "zh": ("记住：我的猫叫小白", ("user", "note", "我的猫叫小白", "记住：我的猫叫小白")),
    "en": (
        "Remember that my cat is called Snowball.",
        ("user", "note", "my cat is called Snowball", "Remember that my cat is called Snowball."),
    ),
}
OTHER = {"zh": "我住在上海", "en": "I live in Shanghai."}


def at(day: int) -> datetime:
    return datetime(2026, 3, day, 9, 0, tzinfo=UTC)


async def told_then_forgotten(mem: Memory, clock: ManualClock, lang: str) -> str:
    """The fact said on day 1 (event "cat-1") beside another, forgotten by query on day 3;
    the forgotten claim's id."""
    clock.set(at(1))
    await mem.add_event("s", FACT[lang][0], event_id="cat-1")
    await mem.add_event("t", OTHER[lang], event_id="other-1")
    await mem.end_session("s")
    await mem.end_session("t")
    await mem.drain(timeout_s=30)
    (cat,) = [c for c in await mem.claims() if c.predicate == "note"]
    clock.set(at(3))
    done = await mem.forget(claim_id=cat.id)
    assert done.event_ids == ("cat-1",)
    clock.set(at(5))
    return cat.id


def counts(db: Path) -> dict[str, int]:
    return {t: count(db, t) for t in ("events", "claims", "jobs", "tombstones", "sessions")}


SETUPS: dict[str, dict[str, dict[str, object]]] = {
    "thread": {"ingest": {"writer": "thread"}},
    "process": {"ingest": {"writer": "process"}},
    "stdlib-sqlite3": {"store": {"sqlite_module": "stdlib"}},
}


@pytest.mark.parametrize("setup", sorted(SETUPS))
@pytest.mark.parametrize("lang", ["zh", "en"])
async def test_ingest_of_a_forgotten_fact_reports_it_blocked(
    tmp_path: Path, lang: str, setup: str
) -> None:
    db = tmp_path / "m.db"
    clock = ManualClock(at(1))
    cfg = fast_config(**SETUPS[setup])
    async with hlmem.open(db, config=cfg, clock=clock) as mem:
        await told_then_forgotten(mem, clock, lang)
        # Read through the memory: another SQLite library must not open a file this process
        # has open with the stdlib one (helpers.connect_raw).
        before = await mem.stats()
        # The same id again (a replay), the same content under a new id, and something new.
        again = await mem.add_event("s", FACT[lang][0], event_id="cat-1")
        fresh = await mem.add_event("u", FACT[lang][0], event_id="cat-2")
        outcomes = await mem.writer.submit(
            [
                mem.writer.prepare(hlmem.EventIn(session_id="v", content=FACT[lang][0])),
                mem.writer.prepare(hlmem.EventIn(session_id="v", content="今天天气不错")),
            ]
        )
        why = await mem.blocked(["cat-1", "cat-2", outcomes[0][0], outcomes[1][0], "other-1"])
        after = await mem.stats()
    assert (again, fresh) == ("cat-1", "cat-2")
    forgot = iso(at(3))
    assert outcomes[0][1:] == (False, ("content", forgot)) and outcomes[1][1:] == (False, None)
    assert set(why) == {"cat-1", "cat-2", outcomes[0][0]}
    assert all(b.forgotten_at == at(3) for b in why.values())
    assert why["cat-1"].reason == "forget by claim"
    assert "its content was forgotten" in why["cat-2"].reason
    # Only the new event went in; no job or session names the blocked ones.
    assert after.events == before.events + 1 and after.claims == before.claims
    assert after.sessions == before.sessions + 1  # "v" only: "u" held nothing
    assert rows(db, "SELECT id FROM events WHERE id IN ('cat-1', 'cat-2')") == []
    assert rows(db, "SELECT session_id FROM sessions WHERE session_id = 'u'") == []
    payloads = [r[0] for r in rows(db, "SELECT payload FROM jobs WHERE kind = 'windower'")]
    assert not any("cat-2" in p or outcomes[0][0] in p for p in payloads)


@pytest.mark.parametrize("lang", ["zh", "en"])
async def test_ingest_jsonl_counts_blocked_lines_with_the_forget_time(
    tmp_path: Path, lang: str
) -> None:
    db = tmp_path / "m.db"
    clock = ManualClock(at(1))
    path = jsonl(
        tmp_path / "again.jsonl",
        [
            {"session_id": "s", "role": "user", "content": FACT[lang][0], "event_id": "cat-1"},
            {"session_id": "w", "role": "user", "content": FACT[lang][0]},
            {"session_id": "w", "role": "user", "content": "明天下午三点开会"},
            {"session_id": "w", "role": "user", "content": FACT[lang][0]},
        ],
    )
    async with hlmem.open(db, config=fast_config(), clock=clock) as mem:
        await told_then_forgotten(mem, clock, lang)
        summary = await ingest_jsonl(mem, path)
    assert (summary.accepted, summary.duplicate, summary.blocked, summary.rejected) == (1, 0, 3, 0)
    assert [line.split(":")[0] for line in summary.blocked_lines] == ["line 1", "line 2", "line 4"]
    assert "this event was forgotten at " + iso(at(3)) in summary.blocked_lines[0]
    assert "its content was forgotten at " + iso(at(3)) in summary.blocked_lines[1]


@pytest.mark.parametrize("lang", ["zh", "en"])
async def test_cli_ingest_says_blocked(tmp_path: Path, lang: str) -> None:
    db = tmp_path / "m.db"
    said = jsonl(
        tmp_path / "said.jsonl", [{"session_id": "s", "role": "user", "content": FACT[lang][0]}]
    )
    assert run_cli("--db", db, "ingest", said, "--drain", cwd=tmp_path).returncode == 0
    forgot = run_cli("--db", db, "forget", "--query", FACT[lang][1][2], "--yes", cwd=tmp_path)
    assert forgot.returncode == 0 and "forgot 1 claim(s) and 1 event(s)" in forgot.stdout
    again = run_cli("--db", db, "ingest", said, cwd=tmp_path)
    assert again.returncode == 0
    assert "accepted 0, duplicate 0, blocked 1 (forgotten), rejected 0" in again.stdout
    assert "line 1: event jlc_" in again.stderr and "this event was forgotten at 20" in again.stderr
    as_json = json.loads(run_cli("--db", db, "ingest", said, "--json", cwd=tmp_path).stdout)
    assert as_json["blocked"] == 1 and as_json["accepted"] == 0
    assert as_json["blocked_lines"][0].startswith("line 1: event jlc_")
    assert count(db, "events") == 0


@pytest.mark.parametrize("lang", ["zh", "en"])
async def test_remember_of_a_forgotten_fact_is_refused_with_the_forget_time(
    db_path: Path, lang: str
) -> None:
    subject, predicate, value, text = FACT[lang][1]
    clock = ManualClock(at(1))
    async with hlmem.open(db_path, config=fast_config(), clock=clock) as mem:
        await told_then_forgotten(mem, clock, lang)
        before = counts(db_path)
        for kwargs in ({}, {"text": text}, {"text": "something else entirely"}):
            with pytest.raises(hlmem.ForgottenFact) as caught:
                await mem.remember(subject, predicate, value, **kwargs)  # type: ignore[arg-type]
            assert caught.value.forgotten_at == iso(at(3))
            assert "blocked" in str(caught.value) and iso(at(3)) in str(caught.value)
        assert caught.value.kinds == ("slot",)
        await mem.drain(timeout_s=30)
        after = counts(db_path)
        fine = await mem.remember("user", "note", "something else entirely")
    assert after == before and isinstance(fine, str)


@pytest.mark.parametrize("lang", ["zh", "en"])
async def test_override_forget_teaches_the_fact_again_and_nothing_else(
    db_path: Path, lang: str
) -> None:
    subject, predicate, value, text = FACT[lang][1]
    clock = ManualClock(at(1))
    async with hlmem.open(db_path, config=fast_config(), clock=clock) as mem:
        old_claim = await told_then_forgotten(mem, clock, lang)
        done_jobs = rows(db_path, "SELECT kind, payload FROM jobs WHERE status = 'done'")
        kept = set(
            rows(db_path, "SELECT kind, key FROM tombstones WHERE kind NOT IN ('content', 'slot')")
        )
        with pytest.raises(hlmem.InputError, match="new event id"):
            await mem.remember(subject, predicate, value, event_id="cat-1", override_forget=True)
        event = await mem.remember(subject, predicate, value, text=text, override_forget=True)
        await mem.drain(timeout_s=30)
        (cat,) = [c for c in await mem.claims() if c.predicate == "note"]
        why = await mem.explain(cat.id)
        # The old event replayed, the old jobs re-driven: the old claim stays forgotten.
        await mem.add_event("s", FACT[lang][0], event_id="cat-1")
        async with mem.store.transaction() as tx:
            await mem.queue.enqueue(
                tx, [JobSpec(k, JOB_PAYLOAD.validate_json(p)) for k, p in done_jobs]
            )
        await mem.drain(timeout_s=30)
        notes = [c for c in await mem.claims(history=True) if c.predicate == "note"]
        blocked = await mem.blocked(["cat-1"])
    assert cat.id != old_claim and cat.value == value and cat.evidence[0].event_id == event
    lifts = [d for d in why.admission if d.rule.startswith("override_forget")]
    assert {d.rule for d in lifts} == {
        f"override_forget: content tombstone of {iso(at(3))} lifted",
        f"override_forget: slot tombstone of {iso(at(3))} lifted",
    }
    assert [c.id for c in notes] == [cat.id]
    assert rows(db_path, "SELECT id FROM events WHERE id = 'cat-1'") == []
    assert "cat-1" in blocked
    left = set(
        rows(db_path, "SELECT kind, key FROM tombstones WHERE kind NOT IN ('content', 'slot')")
    )
    assert left >= kept  # event and claim tombstones are never lifted
    assert rows(db_path, "SELECT count(*) FROM tombstones WHERE kind IN ('content', 'slot')") == [
        (0,)
    ]


@pytest.mark.parametrize("lang", ["zh", "en"])
async def test_cli_remember_says_blocked_and_overrides_on_request(
    tmp_path: Path, lang: str
) -> None:
    subject, predicate, value, text = FACT[lang][1]
    db = tmp_path / "m.db"
    clock = ManualClock(at(1))
    async with hlmem.open(db, config=fast_config(), clock=clock) as mem:
        await told_then_forgotten(mem, clock, lang)
    before = counts(db)
    refused = run_cli(
        "--db", db, "remember", subject, predicate, value, "--text", text, cwd=tmp_path
    )
    assert refused.returncode == 1 and "remembered" not in refused.stdout
    assert "blocked" in refused.stderr and iso(at(3)) in refused.stderr
    assert "--override-forget" in refused.stderr and counts(db) == before
    taught = run_cli(
        "--db",
        db,
        "remember",
        subject,
        predicate,
        value,
        "--text",
        text,
        "--override-forget",
        "--drain",
        "--json",
        cwd=tmp_path,
    )
    assert taught.returncode == 0, taught.stderr
    done = json.loads(taught.stdout)
    assert sorted(done["lifted"]) == ["content", "slot"]
    (claim_id,) = [r[0] for r in rows(db, "SELECT id FROM claims WHERE predicate = 'note'")]
    explained = run_cli("--db", db, "explain", "claim", claim_id, cwd=tmp_path)
    assert explained.returncode == 0 and "override_forget: slot tombstone of" in explained.stdout
