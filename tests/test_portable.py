"""Export and import end to end (DESIGN.md §6, §8 stories 1, 2 and 5).

A Chinese + English conversation that changes its mind is exported and imported into an empty
store, which then recalls the same items with the same statuses, clocks, evidence and chains;
importing twice changes nothing; importing into a store that knows some of the claims merges
them; an old export imported after a forget brings nothing forgotten back, and tombstones in
the file are honoured by a fresh store; a different embedding model re-embeds; a malformed
file is refused whole, naming the line; and the CLI. Real SQLite files, the real pipeline.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from helpers import count, fast_config, rows
from test_cli import hlmem as run_cli
from test_cli import ok_json

import hlmem
from hlmem.clock import ManualClock
from hlmem.config import Config
from hlmem.errors import InputError
from hlmem.lang import model_version
from hlmem.memory import Memory
from hlmem.messages import Claim

pytestmark = pytest.mark.anyio

TABLES = (
    "events claims evidence vectors recall_docs tombstones claim_entities entities "
    "claim_merges supersessions admission_decisions sessions"
).split()
QUERIES = (
    "我现在偏好什么界面主题？",
    "之前我用什么界面主题？",
    "Where do I live?",
    "我在哪里工作？",
    "What did I say about tea?",
)


def at(month: int, day: int, hour: int = 9) -> datetime:
    return datetime(2026, month, day, hour, 0, tzinfo=UTC)


async def say(mem: Memory, clock: ManualClock, when: datetime, session: str, *lines: str) -> None:
    clock.set(when)
    for i, line in enumerate(lines):
        await mem.add_event(session, line, event_id=f"{session}-{i}")
    await mem.end_session(session)
    await mem.drain(timeout_s=30)


async def conversation(mem: Memory, clock: ManualClock) -> None:
    """Stories 1 and 2 in both languages: a preference changed temporarily, a move."""
    await say(
        mem, clock, at(3, 1), "march", "我主要用深色模式", "我在杭州工作", "I live in Shanghai."
    )
    await say(mem, clock, at(3, 20), "tea", "I like green tea.")
    await say(
        mem,
        clock,
        at(8, 1),
        "august",
        "最近眼睛不舒服，暂时换成浅色模式",
        "其实5月就搬去北京了",
        "I live in Beijing.",
    )


async def build(db: Path, config: Config) -> ManualClock:
    clock = ManualClock(at(3, 1))
    async with hlmem.open(db, config=config, clock=clock) as mem:
        await conversation(mem, clock)
    return clock


def table_counts(db: Path) -> dict[str, int]:
    return {t: count(db, t) for t in TABLES}


def recall_view(result: Any) -> list[tuple[Any, ...]]:
    """Items in rank order with what they say (scores left out: rank fusion breaks exact
    full-text ties by row order, which differs between two stores)."""
    return [
        (
            i.id,
            i.kind,
            i.status,
            i.valid_from,
            i.valid_to,
            i.recorded_at,
            tuple((e.event_id, e.quote) for e in i.evidence),
        )
        for i in result.items
    ]


async def beliefs(db: Path, config: Config, clock: ManualClock) -> dict[str, Any]:
    """Claims with history, chains, and recall answers of a store (no activation written:
    recalls are read before anything touches the claims)."""
    async with hlmem.open(db, config=config, clock=clock, pipeline="external") as mem:
        history = await mem.claims(history=True)
        chains = await mem.supersessions([c.id for c in history])
        then = await mem.claims(as_of=at(4, 15))
        true_then = await mem.claims(valid_at=at(6, 15))
        answers = {q: recall_view(await mem.recall(q, k=5)) for q in QUERIES}
    return {
        "history": history,
        "chains": sorted((s.old, s.new, s.reason, s.created_at) for s in chains),
        "as_of": then,
        "valid_at": true_then,
        "recall": answers,
    }


def by_value(claims: list[Claim], value: str) -> list[Claim]:
    return [c for c in claims if c.value == value]


@pytest.fixture
def config() -> Config:
    return fast_config()


async def test_export_then_import_into_empty_store_recalls_the_same(
    tmp_path: Path, config: Config
) -> None:
    a, b, out = tmp_path / "a.db", tmp_path / "b.db", tmp_path / "a.jsonl"
    clock = await build(a, config)
    async with hlmem.open(a, config=config, clock=clock, pipeline="external") as mem:
        done = await mem.export(out)
    assert done.counts["claim"] >= 6 and done.counts["supersession"] >= 2
    header = json.loads(out.read_text(encoding="utf-8").splitlines()[0])
    assert header["format"] == "hlmem-export" and header["version"] == 1
    assert header["embedding"]["model_id"] == "hlmem-local-hash"

    async with hlmem.open(b, config=config, clock=clock) as mem:
        summary = await mem.import_file(out)
        await mem.drain(timeout_s=30)
    assert summary.counts["claim"].imported == done.counts["claim"]
    assert summary.vectors_reused and not summary.placed_by_conflict

    source, copy = await beliefs(a, config, clock), await beliefs(b, config, clock)
    assert copy == source
    history = source["history"]
    light = by_value(history, "浅色模式")[0]
    dark = by_value(history, "深色模式")[0]
    assert light.status == "active" and "暂时" in light.qualifiers
    assert dark.status == "superseded" and dark.superseded_by == light.id
    assert dark.retracted_at == light.recorded_at
    # story 2 survives: in April the system did not yet know of the move in May (told in
    # August), but as known now, Beijing was true in June
    assert "北京" not in {c.value for c in copy["as_of"]}
    assert "北京" in {c.value for c in copy["valid_at"]}
    for table in ("events", "evidence", "supersessions", "claim_entities", "vectors"):
        assert count(b, table) == count(a, table), table
    assert rows(b, "SELECT kind, item_id, body FROM recall_docs ORDER BY 1, 2") == rows(
        a, "SELECT kind, item_id, body FROM recall_docs ORDER BY 1, 2"
    )
    assert rows(b, "SELECT owner_id, vector FROM vectors ORDER BY 1") == rows(
        a, "SELECT owner_id, vector FROM vectors ORDER BY 1"
    )


async def test_import_twice_changes_nothing(tmp_path: Path, config: Config) -> None:
    a, b, out = tmp_path / "a.db", tmp_path / "b.db", tmp_path / "a.jsonl"
    clock = await build(a, config)
    async with hlmem.open(a, config=config, clock=clock, pipeline="external") as mem:
        await mem.export(out)
    async with hlmem.open(b, config=config, clock=clock) as mem:
        await mem.import_file(out)
        await mem.drain(timeout_s=30)
        first = table_counts(b)
        jobs = count(b, "jobs")
        again = await mem.import_file(out)
        await mem.drain(timeout_s=30)
    assert table_counts(b) == first and count(b, "jobs") == jobs
    assert all(c.imported == 0 and c.merged == 0 for c in again.counts.values())
    assert again.counts["claim"].duplicate == first["claims"]
    assert again.counts["event"].duplicate == first["events"]


async def test_import_merges_claims_the_store_already_has(tmp_path: Path, config: Config) -> None:
    a, b, out = tmp_path / "a.db", tmp_path / "b.db", tmp_path / "a.jsonl"
    clock = await build(a, config)
    async with hlmem.open(a, config=config, clock=clock, pipeline="external") as mem:
        await mem.export(out)
    # b heard the dark-mode preference and the tea in its own sessions, earlier
    clock_b = ManualClock(at(2, 1))
    async with hlmem.open(b, config=config, clock=clock_b) as mem:
        await say(mem, clock_b, at(2, 1), "b-own", "我主要用深色模式", "I like green tea.")
        before = await mem.claims(history=True)
        summary = await mem.import_file(out)
        await mem.drain(timeout_s=30)
        history = await mem.claims(history=True)
    assert summary.counts["claim"].merged >= 2
    assert summary.placed_by_conflict >= 1
    dark = by_value(history, "深色模式")
    assert len(dark) == 1 and dark[0].id == by_value(before, "深色模式")[0].id
    assert {e.event_id for e in dark[0].evidence} == {"b-own-0", "march-0"}
    light = by_value(history, "浅色模式")
    assert len(light) == 1 and light[0].status == "active"
    assert dark[0].status == "superseded" and dark[0].superseded_by == light[0].id
    tea = [c for c in history if "tea" in c.value.lower()]
    assert len(tea) == 1 and {e.event_id for e in tea[0].evidence} == {"b-own-1", "tea-0"}
    assert rows(b, "SELECT count(*) FROM claim_merges WHERE stage = 'import'")[0][0] >= 2


async def test_old_export_after_forget_brings_nothing_back(tmp_path: Path, config: Config) -> None:
    a, old = tmp_path / "a.db", tmp_path / "old.jsonl"
    clock = await build(a, config)
    async with hlmem.open(a, config=config, clock=clock) as mem:
        await mem.export(old)
        light = by_value(await mem.claims(), "浅色模式")[0]
        shanghai = by_value(await mem.claims(history=True), "Shanghai")[0]
        await mem.forget(claim_id=light.id)
        await mem.forget(event_id="march-2")  # "I live in Shanghai."
        gone = table_counts(a)
        summary = await mem.import_file(old)
        await mem.drain(timeout_s=30)
        ids = {c.id for c in await mem.claims(history=True)}
        recalled = await mem.recall("我现在偏好什么界面主题？")
    assert light.id not in ids and shanghai.id not in ids
    assert summary.counts["claim"].refused >= 2 and summary.counts["event"].refused >= 1
    assert table_counts(a) == gone
    assert rows(a, "SELECT count(*) FROM events WHERE id = 'march-2'") == [(0,)]
    for owner in (light.id, shanghai.id, "march-2"):
        assert rows(a, "SELECT count(*) FROM vectors WHERE owner_id = ?", (owner,)) == [(0,)]
        assert rows(a, "SELECT count(*) FROM recall_docs WHERE item_id = ?", (owner,)) == [(0,)]
    assert light.id not in {i.id for i in recalled.items}


async def test_tombstones_in_the_file_are_honoured_by_a_fresh_store(
    tmp_path: Path, config: Config
) -> None:
    a, c = tmp_path / "a.db", tmp_path / "c.db"
    old, new = tmp_path / "old.jsonl", tmp_path / "new.jsonl"
    clock = await build(a, config)
    async with hlmem.open(a, config=config, clock=clock) as mem:
        await mem.export(old)
        tea = next(x for x in await mem.claims() if "tea" in x.value.lower())
        await mem.forget(claim_id=tea.id)
        await mem.export(new)
    assert '"type":"tombstone"' in new.read_text(encoding="utf-8")
    async with hlmem.open(c, config=config, clock=clock) as mem:
        first = await mem.import_file(new)
        assert first.counts["tombstone"].imported >= 2
        stale = await mem.import_file(old)  # the file before the forget: refused here too
        await mem.add_event("tea", "I like green tea.", event_id="tea-0")  # a replay
        await mem.end_session("tea")
        await mem.drain(timeout_s=30)
        ids = {x.id for x in await mem.claims(history=True)}
    assert tea.id not in ids and stale.counts["claim"].refused >= 1
    assert not [v for (v,) in rows(c, "SELECT value FROM claims") if "tea" in v.lower()]
    assert rows(c, "SELECT count(*) FROM events WHERE id = 'tea-0'") == [(0,)]


async def test_import_with_another_embedding_model_reembeds(tmp_path: Path, config: Config) -> None:
    a, b, out = tmp_path / "a.db", tmp_path / "b.db", tmp_path / "a.jsonl"
    clock = await build(a, config)
    async with hlmem.open(a, config=config, clock=clock, pipeline="external") as mem:
        await mem.export(out)
    other = fast_config(embedder={"dim": 128, "backfill_interval_s": 0.05})
    async with hlmem.open(b, config=other, clock=clock) as mem:
        summary = await mem.import_file(out)
        await mem.drain(timeout_s=30)
    assert summary.reembedding and not summary.vectors_reused
    assert summary.counts["vector"].imported == 0
    version = model_version(128)
    claims = rows(b, "SELECT id FROM claims WHERE status IN ('active', 'superseded')")
    vectors = rows(b, "SELECT owner_kind, owner_id, model_version, dim FROM vectors")
    assert {r[2] for r in vectors} == {version} and {r[3] for r in vectors} == {128}
    assert {(k, i) for k, i, _, _ in vectors if k == "claim"} == {("claim", i) for (i,) in claims}
    events = {i for k, i, _, _ in vectors if k == "event"}
    assert {"march-0", "august-0"} <= events


async def test_export_of_one_namespace(tmp_path: Path, config: Config) -> None:
    a, b, out = tmp_path / "a.db", tmp_path / "b.db", tmp_path / "work.jsonl"
    clock = await build(a, config)
    async with hlmem.open(a, config=config, clock=clock) as mem:
        await mem.add_event("w", "I like black coffee.", namespace="work", event_id="w-0")
        await mem.end_session("w", namespace="work")
        await mem.drain(timeout_s=30)
        done = await mem.export(out, namespace="work", vectors=False)
    assert done.namespaces == ("work",) and done.embedding is None
    assert done.counts["event"] == 1 and done.counts["vector"] == 0
    async with hlmem.open(b, config=config, clock=clock) as mem:
        summary = await mem.import_file(out)
        await mem.drain(timeout_s=30)
        work = await mem.claims(namespace="work")
    assert summary.reembedding and [c.value for c in work] == ["black coffee"]
    assert rows(b, "SELECT DISTINCT namespace FROM events") == [("work",)]
    assert count(b, "vectors") == 2  # the claim and the event, embedded here


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        ("bad_json", "line 4: not JSON"),
        ("version", "line 1: format version 99 is not supported"),
        ("missing_field", "line 4: "),
        ("truncated", "truncated or edited"),
        ("order", "a session record after event records"),
    ],
)
async def test_malformed_file_is_refused_whole(
    tmp_path: Path, config: Config, damage: str, message: str
) -> None:
    a, b, out = tmp_path / "a.db", tmp_path / "b.db", tmp_path / "a.jsonl"
    clock = await build(a, config)
    async with hlmem.open(a, config=config, clock=clock, pipeline="external") as mem:
        await mem.export(out)
    lines = _lines(out)
    assert json.loads(lines[3])["type"] == "session"
    if damage == "bad_json":
        lines[3] = lines[3][:-5]
    elif damage == "version":
        head = json.loads(lines[0])
        head["version"] = 99
        lines[0] = json.dumps(head)
    elif damage == "missing_field":
        record = json.loads(lines[3])
        del record["session_id"]
        lines[3] = json.dumps(record)
    elif damage == "truncated":
        lines = lines[:-1]
    else:
        first_event = next(i for i, ln in enumerate(lines) if '"type":"event"' in ln)
        lines.insert(first_event + 1, lines[3])
        lines.pop(3)
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    async with hlmem.open(b, config=config, clock=clock, pipeline="external") as mem:
        with pytest.raises(InputError, match=message.replace("(", r"\(")) as err:
            await mem.import_file(out)
    assert str(out) in str(err.value)
    assert all(n == 0 for n in table_counts(b).values())
    assert count(b, "jobs") == 0


def test_cli_export_import_round_trip(tmp_path: Path) -> None:
    a, b, out = tmp_path / "a.db", tmp_path / "b.db", tmp_path / "a.jsonl"
    events = tmp_path / "events.jsonl"
    events.write_text(
        "\n".join(
            json.dumps(e, ensure_ascii=False)
            for e in (
                {"session_id": "s", "content": "我主要用深色模式", "event_id": "s-0"},
                {"session_id": "s", "content": "I live in Shanghai.", "event_id": "s-1"},
            )
        )
        + "\n",
        encoding="utf-8",
    )
    ok_json(run_cli("--db", a, "ingest", events, "--drain", "--json", cwd=tmp_path))
    exported = ok_json(run_cli("--db", a, "export", out, "--json", cwd=tmp_path))
    assert exported["counts"]["event"] == 2 and exported["counts"]["claim"] == 2
    imported = ok_json(run_cli("--db", b, "import", out, "--drain", "--json", cwd=tmp_path))
    assert imported["counts"]["claim"]["imported"] == 2
    claims = ok_json(run_cli("--db", b, "claims", "--json", cwd=tmp_path))
    assert {c["value"] for c in claims} == {"深色模式", "Shanghai"}
    text = run_cli("--db", b, "import", out, cwd=tmp_path)
    assert text.returncode == 0 and "duplicate 2" in text.stdout
    out.write_text('{"type": "header", "format": "other"}\n', encoding="utf-8")
    bad = run_cli("--db", b, "import", out, "--json", cwd=tmp_path)
    assert bad.returncode == 1 and "line 1" in bad.stderr
    assert run_cli("--db", b, "import", cwd=tmp_path).returncode == 2
    assert run_cli("--db", b, "export", cwd=tmp_path).returncode == 2
