"""JSONL events without ``event_id`` are named by what they are, not by where their line stands.

The issue: deleting a rejected line from a 21-line file and ingesting it again stored every
later event a second time (their ids held the line number). Here the file is ingested with
``hlmem ingest`` (a real subprocess), edited as a user would (the bad line deleted, fixed in
place, lines reordered) and ingested again: every event is stored once. The identity of an
event (namespace, session, role, time, content) is checked line pair by line pair, and a store
written with the old line-number ids recognises its lines after they move.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from helpers import assert_consistent, count, fast_config, rows
from test_cli import hlmem as run_hlmem

import hlmem
from hlmem.memory import ingest_jsonl


def summary(proc: subprocess.CompletedProcess[str]) -> tuple[int, int, int]:
    data = json.loads(proc.stdout)
    return data["accepted"], data["duplicate"], data["rejected"]


def line(item: dict[str, Any]) -> bytes:
    return json.dumps(item, ensure_ascii=False).encode("utf-8")


def twenty_events() -> list[dict[str, Any]]:
    """20 ordinary turns in Chinese and English, some with a time, some without."""
    turns = [
        ("zh-1", "user", "你好，我最近在准备一个新项目。"),
        ("zh-1", "assistant", "好的，需要我帮你记录什么吗？"),
        ("zh-1", "user", "记住：我的猫叫小白，每天早上七点要喂它。"),
        ("zh-1", "assistant", "记住了：你的猫叫小白。"),
        ("zh-1", "user", "好的"),
        ("en-1", "user", "Remember that the production database lives on db-prod-2."),
        ("en-1", "assistant", "Noted: production is db-prod-2."),
        ("en-1", "tool", "$ ./deploy.sh --dry-run\nok"),
        ("en-1", "user", "ok"),
        ("en-1", "user", "thanks, that's all"),
    ]
    out = []
    for i, (session, role, content) in enumerate(turns * 2):
        item: dict[str, Any] = {"session_id": f"{session}-{i // 10}", "role": role}
        item["content"] = content
        if i % 3 == 0:
            item["occurred_at"] = f"2026-03-0{1 + i // 10}T09:{i:02d}:00+08:00"
        out.append(item)
    return out


BAD = b'{"session_id": "zh-1", "role": "user", "content": "\xe5\x9d\x8f\xe7\x9a\x84 broken'


def test_deleting_a_rejected_line_stores_every_event_once(tmp_path: Path) -> None:
    db, path = tmp_path / "m.db", tmp_path / "events.jsonl"
    lines = [line(e) for e in twenty_events()]
    lines.insert(10, BAD)  # line 11 of 21
    path.write_bytes(b"\n".join(lines) + b"\n")
    first = run_hlmem("--db", db, "ingest", path, "--json", cwd=tmp_path)
    assert first.returncode == 1
    assert summary(first) == (20, 0, 1)
    assert "line 11: invalid JSON" in first.stderr

    del lines[10]
    path.write_bytes(b"\n".join(lines) + b"\n")
    again = run_hlmem("--db", db, "ingest", path, "--json", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert summary(again) == (0, 20, 0)
    assert count(db, "events") == 20
    twice = "SELECT session_id, role, content FROM events GROUP BY 1, 2, 3 HAVING count(*) > 1"
    assert rows(db, twice) == []
    assert_consistent(db)

    # reordered, with a new line in front and the bad line fixed at the end: only those two
    fixed = line({"session_id": "zh-1", "role": "user", "content": "坏的那行，修好了"})
    new = line({"session_id": "en-2", "content": "Remember that my desk is in room 42."})
    path.write_bytes(b"\n".join([new, *reversed(lines), fixed]) + b"\n")
    third = run_hlmem("--db", db, "ingest", path, "--json", cwd=tmp_path)
    assert summary(third) == (2, 20, 0)
    assert count(db, "events") == 22
    assert_consistent(db)


# (first line, second line, how many events the two are)
IDENTITY = [
    ({"content": "好的"}, {"content": "好的"}, 1),
    ({"content": "ok", "occurred_at": "2026-03-01T09:00:00+08:00"}, None, 1),
    (
        {"content": "ok", "occurred_at": "2026-03-01T09:00:00+08:00"},
        {"content": "ok", "occurred_at": "2026-03-01T01:00:00Z"},
        1,
    ),
    (
        {"content": "ok", "occurred_at": "2026-03-01T09:00:00+08:00"},
        {"content": "ok", "occurred_at": "2026-03-01T09:00:01+08:00"},
        2,
    ),
    ({"content": "ok"}, {"content": "ok", "occurred_at": "2026-03-01T09:00:00+08:00"}, 2),
    ({"content": "我住在北京"}, {"content": "我住在北京", "session_id": "s2"}, 2),
    ({"content": "我住在北京"}, {"content": "我住在北京", "role": "assistant"}, 2),
    ({"content": "我住在北京"}, {"content": "我住在北京", "role": "user"}, 1),
    ({"content": "我住在北京"}, {"content": "我住在北京", "namespace": "team"}, 2),
    ({"content": "我住在北京"}, {"content": "我住在北京", "namespace": "default"}, 1),
    ({"content": "I live in Berlin"}, {"content": "I live in Berlin."}, 2),
    ({"content": "I live in Berlin"}, {"content": "I live in Berlin", "metadata": {"a": 1}}, 1),
    ({"content": "I live in Berlin"}, {"content": "I live in Berlin", "event_id": "e-1"}, 2),
]


@pytest.mark.anyio
@pytest.mark.parametrize(("a", "b", "events"), IDENTITY)
async def test_what_makes_two_lines_one_event(
    tmp_path: Path, a: dict[str, Any], b: dict[str, Any] | None, events: int
) -> None:
    db, path = tmp_path / "m.db", tmp_path / "pair.jsonl"
    first, second = {"session_id": "s1", **a}, {"session_id": "s1", **(b or a)}
    path.write_bytes(line(first) + b"\n" + line(second) + b"\n")
    async with hlmem.open(db, config=fast_config(), pipeline="external") as mem:
        done = await ingest_jsonl(mem, path)
        assert (done.accepted, done.duplicate, done.rejected) == (events, 2 - events, 0)
        path.write_bytes(line(second) + b"\n" + line(first) + b"\n")  # the other order
        again = await ingest_jsonl(mem, path)
        assert (again.accepted, again.duplicate) == (0, 2)
    assert count(db, "events") == events


def line_number_id(raw: bytes, number: int) -> str:
    """The id a line without event_id got before ids came from content."""
    return f"jl_{hashlib.blake2b(raw, digest_size=12).hexdigest()}_{number}"


@pytest.mark.anyio
async def test_a_store_with_line_number_ids_recognises_its_lines_after_they_move(
    tmp_path: Path,
) -> None:
    db, path = tmp_path / "m.db", tmp_path / "events.jsonl"
    lines = [line(e) for e in twenty_events()]
    lines.insert(10, BAD)
    async with hlmem.open(db, config=fast_config(), pipeline="external") as mem:
        # what the earlier ingest stored: each valid line under its line-number id
        old = [
            {**json.loads(raw), "event_id": line_number_id(raw, n)}
            for n, raw in enumerate(lines, 1)
            if raw is not BAD
        ]
        await mem.add_events(old)
    del lines[10]  # every later line moves up by one
    path.write_bytes(b"\n".join(lines) + b"\n")
    proc = run_hlmem("--db", db, "ingest", path, "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert summary(proc) == (0, 20, 0)
    assert count(db, "events") == 20
    assert {r[0] for r in rows(db, "SELECT id FROM events")} == {e["event_id"] for e in old}
    assert_consistent(db)
