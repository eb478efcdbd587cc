"""Replayed history keeps its belief history: a claim is recorded when the agent was told it.

A conversation log from 2024, replayed in 2026 as ordinary (interactive) sessions, must answer
"what did the agent believe on 2024-07-01" (``as_of``) through ``claims``, ``recall`` and the
CLI: a claim's recorded time is the telling event's ``occurred_at``, never later than the
event's ingestion (an ``occurred_at`` in the future, clock skew, counts from ingestion), and
the supersede chain (``retracted_at``) follows the same telling times. Valid time keeps its own
rules: an older fact told late never replaces a newer one. Chinese and English.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from helpers import fast_config
from test_cli import hlmem_process, jsonl, ok_json

import hlmem
from hlmem.clock import ManualClock
from hlmem.gateway.ops import ops_report, parse_since
from hlmem.memory import Memory
from hlmem.messages import Claim

pytestmark = pytest.mark.anyio

#: when the log is replayed: long after it was said
REPLAYED = datetime(2026, 11, 29, 10, 0, tzinfo=UTC)


def at(year: int, month: int, day: int, minute: int = 0) -> datetime:
    return datetime(year, month, day, 9, minute, tzinfo=UTC)


@dataclass(frozen=True)
class Log:
    """A 2024 log: a home, a theme, a correction of the home (valid since last month) and a
    switch of the theme; the cities and themes expected at two belief times."""

    lines: tuple[tuple[datetime, str], ...]
    first_home: str
    second_home: str
    dark: str
    light: str
    question: str


LOGS = {
    "zh": Log(
        (
            (at(2024, 3, 10), "我住在杭州"),
            (at(2024, 3, 10, 5), "我主要用深色模式"),
            (at(2024, 5, 20), "其实我上个月就搬去北京了"),
            (at(2024, 6, 1), "最近眼睛不舒服，暂时换成浅色模式"),
        ),
        "杭州",
        "北京",
        "深色模式",
        "浅色模式",
        "我住在杭州还是北京？",
    ),
    "en": Log(
        (
            (at(2024, 3, 10), "I live in Berlin."),
            (at(2024, 3, 10, 5), "I mostly use dark mode."),
            (at(2024, 5, 20), "Actually I moved to Munich in April."),
            (at(2024, 6, 1), "My eyes hurt lately, so I'm switching to light mode temporarily."),
        ),
        "Berlin",
        "Munich",
        "dark mode",
        "light mode",
        "Do I live in Berlin or Munich?",
    ),
}
LANGS = pytest.mark.parametrize("lang", sorted(LOGS))


async def replay(mem: Memory, lines: tuple[tuple[datetime, str], ...]) -> None:
    """Each line in a session of its own, stamped with its own time; the clock does not move."""
    for i, (when, text) in enumerate(lines):
        await mem.add_event(f"log-{i}", text, occurred_at=when)
        await mem.end_session(f"log-{i}")
    await mem.drain(timeout_s=20)


def beliefs(claims: list[Claim]) -> dict[str, str]:
    """Slot -> value of ``claims``, one claim per slot."""
    out = {c.predicate: c.value for c in claims}
    assert len(out) == len(claims), [(c.predicate, c.value) for c in claims]
    return out


@LANGS
async def test_as_of_answers_what_was_believed_when_told(db_path: Path, lang: str) -> None:
    log = LOGS[lang]
    async with hlmem.open(db_path, config=fast_config(), clock=ManualClock(REPLAYED)) as mem:
        await replay(mem, log.lines)
        before = await mem.claims(as_of=at(2024, 1, 1))
        in_april = beliefs(await mem.claims(as_of=at(2024, 4, 15)))
        in_july = beliefs(await mem.claims(as_of=at(2024, 7, 1)))
        now = beliefs(await mem.claims())
        history = await mem.claims(history=True)
    assert before == []
    # In April the agent had not yet been told of the move (it happened in April, said in May).
    assert in_april == {"location": log.first_home, "ui_theme": log.dark}
    assert in_july == {"location": log.second_home, "ui_theme": log.light}
    assert now == in_july
    told = {text: when for when, text in log.lines}
    for c in history:
        assert c.recorded_at == told[c.evidence[0].quote], (c.value, c.recorded_at)
    old_home = next(c for c in history if c.value == log.first_home)
    old_theme = next(c for c in history if c.value == log.dark)
    # retracted when the replacing event was said; the valid time stays the world's
    assert (old_home.status, old_home.retracted_at) == ("superseded", at(2024, 5, 20))
    assert old_home.valid_to == datetime(2024, 4, 1, tzinfo=UTC)
    assert (old_theme.status, old_theme.retracted_at) == ("superseded", at(2024, 6, 1))


@LANGS
async def test_recall_as_of_sees_only_what_was_told_by_then(db_path: Path, lang: str) -> None:
    log = LOGS[lang]
    async with hlmem.open(db_path, config=fast_config(), clock=ManualClock(REPLAYED)) as mem:
        await replay(mem, log.lines)
        april = await mem.recall(log.question, as_of=at(2024, 4, 15))
        july = await mem.recall(log.question, as_of=at(2024, 7, 1))
    for result, home, told_by in (
        (april, log.first_home, at(2024, 4, 15)),
        (july, log.second_home, at(2024, 7, 1)),
    ):
        homes = {i.value for i in result.items if i.kind == "claim" and i.predicate == "location"}
        assert homes == {home}, result.items
        # an event said after the belief time is not shown either
        assert all(
            e.occurred_at <= told_by for i in result.items if i.kind == "event" for e in i.evidence
        )
    # one said before is: the March home, told long before the replay ran
    assert log.lines[0][1] in {i.text for i in july.items if i.kind == "event"}, july.items


@LANGS
async def test_cli_claims_as_of_on_a_replayed_log(tmp_path: Path, lang: str) -> None:
    """The whole story from the command line, on the machine's clock: ingest a 2024 log file
    today, ask what was believed in April and in July 2024."""
    log = LOGS[lang]
    events = jsonl(
        tmp_path / "log.jsonl",
        [
            {"session_id": f"log-{i}", "content": text, "occurred_at": when.isoformat()}
            for i, (when, text) in enumerate(log.lines)
        ],
    )
    db = tmp_path / "memory.db"
    ingested = hlmem_process("--db", db, "ingest", events, "--drain", "--json", cwd=tmp_path)
    assert ingested.returncode == 0, ingested.stderr
    january, april, july = "2024-01-01T00:00:00+00:00", "2024-04-15T00:00:00Z", "2024-07-01"
    believed = {
        day: {
            c["predicate"]: c["value"]
            for c in ok_json(
                hlmem_process("--db", db, "claims", "--as-of", day, "--json", cwd=tmp_path)
            )
        }
        for day in (january, april, july)
    }
    assert believed[january] == {}
    assert believed[april] == {"location": log.first_home, "ui_theme": log.dark}
    assert believed[july] == {"location": log.second_home, "ui_theme": log.light}


@LANGS
async def test_a_future_timestamp_is_recorded_at_ingestion(db_path: Path, lang: str) -> None:
    """Clock skew: an event stamped a month ahead is recorded when it was ingested, not when
    it says it happened, nor when the pipeline got round to it."""
    text = LOGS[lang].lines[0][1]
    clock = ManualClock(REPLAYED)
    async with hlmem.open(db_path, config=fast_config(), clock=clock) as mem:
        await mem.add_event("skewed", text, occurred_at=REPLAYED + timedelta(days=30))
        clock.advance(3600)
        await mem.end_session("skewed")
        await mem.drain(timeout_s=20)
        claim = (await mem.claims())[0]
        believed_then = await mem.claims(as_of=REPLAYED)
    assert claim.recorded_at == REPLAYED
    assert claim.recorded_at <= clock.now()
    assert [c.id for c in believed_then] == [claim.id]


LATE = {
    "zh": ("我住在杭州", "我搬到上海了", "杭州", "上海"),
    "en": ("I live in Berlin.", "I moved to Hamburg.", "Berlin", "Hamburg"),
}


@LANGS
async def test_an_older_event_replayed_late_never_overrides_the_newer_fact(
    db_path: Path, lang: str
) -> None:
    """The August move is replayed before the March home: the move stays current (valid time),
    and the March home was still believed from March until the move was told (recorded time)."""
    older, newer, old_city, new_city = LATE[lang]
    async with hlmem.open(db_path, config=fast_config(), clock=ManualClock(REPLAYED)) as mem:
        await replay(mem, ((at(2024, 8, 1), newer),))
        await replay(mem, ((at(2024, 3, 10), older),))
        now = beliefs(await mem.claims())
        in_may = beliefs(await mem.claims(as_of=at(2024, 5, 1)))
        in_september = beliefs(await mem.claims(as_of=at(2024, 9, 1)))
        valid_in_may = beliefs(await mem.claims(valid_at=at(2024, 5, 1)))
        old = next(c for c in await mem.claims(history=True) if c.value == old_city)
    assert now == {"location": new_city}
    assert in_may == {"location": old_city}
    assert in_september == {"location": new_city}
    assert valid_in_may == {"location": old_city}
    assert (old.status, old.recorded_at, old.retracted_at) == (
        "superseded",
        at(2024, 3, 10),
        at(2024, 8, 1),
    )
    assert old.valid_to == at(2024, 8, 1)


async def test_the_ops_report_counts_what_a_replay_wrote_today(db_path: Path) -> None:
    """Cost per claim divides by the claims written in the window, whenever they were told."""
    cfg = fast_config()
    async with hlmem.open(db_path, config=cfg, clock=ManualClock(REPLAYED)) as mem:
        await replay(mem, LOGS["zh"].lines)
        report = await ops_report(mem.store, cfg, since=parse_since("24h"), clock=mem.clock)
        claims = await mem.claims(history=True)
    assert (report.events, report.claims) == (4, len(claims)) == (4, 4)
