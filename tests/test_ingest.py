"""Event ingestion through the async API: idempotency, validation, atomicity, immutability.

Every test runs on a real SQLite file and checks the outcome in that file with a separate,
plain ``sqlite3`` connection: what the database holds is the truth, not what the API says.
"""

from __future__ import annotations

import asyncio
import sqlite3
from contextlib import closing
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from helpers import PIPELINE_STAGES, assert_consistent, claim_items, count, rows, windower_event_ids

import hlmem
from hlmem.config import Config

pytestmark = pytest.mark.anyio

TEN_MB = 10 * 1024 * 1024


# --- helpers ----------------------------------------------------------------------------------


def assert_empty(db: Path) -> None:
    if not db.exists():
        return
    assert count(db, "events") == 0
    assert count(db, "sessions") == 0
    assert count(db, "jobs") == 0


# --- idempotency ------------------------------------------------------------------------------


async def test_add_event_returns_a_new_id_and_stores_the_event(
    db_path: Path, config: Config
) -> None:
    async with hlmem.open(db_path, config=config, pipeline="external") as mem:
        zh = await mem.add_event("s-1", "记住：我的猫叫小白")
        en = await mem.add_event("s-1", "Remember that the prod DB is db-prod-2.", role="user")
    assert zh != en
    stored = rows(
        db_path, "SELECT id, session_id, role, content, origin_class FROM events ORDER BY seq"
    )
    assert stored == [
        (zh, "s-1", "user", "记住：我的猫叫小白", "user_direct"),
        (en, "s-1", "user", "Remember that the prod DB is db-prod-2.", "user_direct"),
    ]
    assert rows(db_path, "SELECT namespace, session_id FROM sessions") == [("default", "s-1")]
    assert_consistent(db_path)


async def test_explicit_event_id_twice_returns_it_and_stores_one_event(
    db_path: Path, config: Config
) -> None:
    async with hlmem.open(db_path, config=config, pipeline="external") as mem:
        first = await mem.add_event("s-1", "记住：我的猫叫小白", event_id="x")
        second = await mem.add_event("s-1", "Remember that my cat is called Snowy.", event_id="x")
        third = await mem.add_event("other-session", "完全不同的内容", event_id="x")
    assert first == second == third == "x"
    assert rows(db_path, "SELECT id, session_id, content FROM events") == [
        ("x", "s-1", "记住：我的猫叫小白")
    ]
    # the duplicates enqueued no work and created no session
    assert windower_event_ids(db_path) == ["x"]
    assert count(db_path, "jobs") == 1
    assert count(db_path, "sessions") == 1


async def test_duplicate_ids_inside_one_batch_and_across_batches(
    db_path: Path, config: Config
) -> None:
    async with hlmem.open(db_path, config=config, pipeline="external") as mem:
        ids = await mem.add_events(
            [
                {"session_id": "s", "content": "第一条", "event_id": "a"},
                {"session_id": "s", "content": "second", "event_id": "b"},
                {"session_id": "s", "content": "第一条的重复", "event_id": "a"},
                hlmem.EventIn(session_id="s", content="no id given"),
            ]
        )
        again = await mem.add_events([{"session_id": "s", "content": "anything", "event_id": "b"}])
    assert ids[:3] == ["a", "b", "a"]
    assert ids[3] not in ("a", "b")
    assert again == ["b"]
    assert rows(db_path, "SELECT id, content FROM events ORDER BY seq") == [
        ("a", "第一条"),
        ("b", "second"),
        (ids[3], "no id given"),
    ]
    assert_consistent(db_path)


async def test_concurrent_add_event_with_the_same_id_stores_it_once(
    db_path: Path, config: Config
) -> None:
    async with hlmem.open(db_path, config=config, pipeline="external") as mem:
        results = await asyncio.gather(
            *(
                mem.add_event(f"s-{i % 3}", f"版本 {i} / version {i}", event_id="same")
                for i in range(40)
            )
        )
    assert set(results) == {"same"}
    assert count(db_path, "events") == 1
    assert windower_event_ids(db_path) == ["same"]


async def test_concurrent_add_event_group_commits_every_event_with_its_job(
    db_path: Path, config: Config
) -> None:
    async with hlmem.open(db_path, config=config, pipeline="external") as mem:
        ids = await asyncio.gather(
            *(
                mem.add_event(f"session-{i % 7}", f"第{i}条消息 message number {i}")
                for i in range(300)
            )
        )
    assert len(set(ids)) == 300
    assert count(db_path, "events") == 300
    assert count(db_path, "sessions") == 7
    assert_consistent(db_path)
    # group commit: fewer windower jobs than events
    assert count(db_path, "jobs") < 300


# --- validation: nothing is written ---------------------------------------------------------


@pytest.mark.parametrize("content", ["", "   ", "\n\t 　"])
async def test_blank_content_raises_input_error_and_writes_nothing(
    db_path: Path, config: Config, content: str
) -> None:
    async with hlmem.open(db_path, config=config, pipeline="external") as mem:
        with pytest.raises(hlmem.InputError, match="content"):
            await mem.add_event("s-1", content)
        assert (await mem.stats()).events == 0
    assert_empty(db_path)


async def test_ten_megabyte_content_raises_content_too_large_and_writes_nothing(
    db_path: Path, config: Config
) -> None:
    assert config.ingest.max_content_chars == 1_000_000
    async with hlmem.open(db_path, config=config, pipeline="external") as mem:
        with pytest.raises(hlmem.ContentTooLarge) as info:
            await mem.add_event("s-1", "大" * TEN_MB)
        with pytest.raises(hlmem.ContentTooLarge):
            await mem.add_event("s-1", "x" * TEN_MB, event_id="big")
    assert isinstance(info.value, hlmem.InputError)
    assert info.value.length == TEN_MB
    assert info.value.limit == 1_000_000
    assert "1000000" in str(info.value)
    assert_empty(db_path)


async def test_content_at_the_limit_is_accepted_one_over_is_not(db_path: Path) -> None:
    cfg = hlmem.load_config(env={}, overrides={"ingest": {"max_content_chars": 100}})
    async with hlmem.open(db_path, config=cfg, pipeline="external") as mem:
        ok = await mem.add_event("s", "字" * 100)
        with pytest.raises(hlmem.ContentTooLarge):
            await mem.add_event("s", "字" * 101)
    assert rows(db_path, "SELECT id, length(content) FROM events") == [(ok, 100)]


@pytest.mark.parametrize(
    ("kwargs", "reason"),
    [
        ({"session_id": "", "content": "hello"}, "session_id"),
        ({"session_id": "s", "content": "hello", "role": "robot"}, "role"),
        (
            {"session_id": "s", "content": "你好", "occurred_at": datetime(2026, 3, 2, 9, 0)},
            "timezone",
        ),
        ({"session_id": "s", "content": "nul \x00 byte"}, "NUL"),
        ({"session_id": "s", "content": "hello", "event_id": "bad\nid"}, "event_id"),
        ({"session_id": "s", "content": "hello", "origin_class": "rumour"}, "origin_class"),
        ({"session_id": "s", "content": "hello", "metadata": {"k": {1, 2}}}, "metadata"),
        ({"session_id": "s", "content": "hello", "metadata": {"k": "x" * 70_000}}, "metadata"),
        ({"session_id": "s", "content": "hello", "metadata": {"k": "lone \udc00"}}, "metadata"),
        ({"session_id": "s", "content": "hello", "metadata": {"k": float("nan")}}, "metadata"),
    ],
)
async def test_invalid_fields_raise_input_error_and_write_nothing(
    db_path: Path, config: Config, kwargs: dict[str, Any], reason: str
) -> None:
    session_id = kwargs.pop("session_id")
    content = kwargs.pop("content")
    async with hlmem.open(db_path, config=config, pipeline="external") as mem:
        with pytest.raises(hlmem.InputError, match=reason):
            await mem.add_event(session_id, content, **kwargs)
    assert_empty(db_path)


async def test_aware_occurred_at_is_stored_in_utc(db_path: Path, config: Config) -> None:
    from datetime import timedelta

    beijing = timezone(timedelta(hours=8))
    async with hlmem.open(db_path, config=config, pipeline="external") as mem:
        await mem.add_event("s", "早上好", occurred_at=datetime(2026, 3, 2, 9, 0, tzinfo=beijing))
    (occurred,) = rows(db_path, "SELECT occurred_at FROM events")[0]
    assert occurred.startswith("2026-03-02T01:00:00")


@pytest.mark.parametrize(
    ("bad", "index"),
    [
        ({"session_id": "s", "content": "   "}, 1),
        ({"session_id": "s"}, 1),
        ({"content": "缺少会话"}, 2),
        ({"session_id": "s", "content": "x", "colour": "red"}, 0),
        ({"session_id": "s", "content": "x" * TEN_MB}, 2),
    ],
)
async def test_add_events_with_one_invalid_item_names_it_and_writes_nothing(
    db_path: Path, config: Config, bad: dict[str, Any], index: int
) -> None:
    good = [
        {"session_id": "s", "content": "记住：我的猫叫小白", "event_id": "g1"},
        {"session_id": "s", "content": "Remember that the prod DB is db-prod-2.", "event_id": "g2"},
    ]
    batch = [*good]
    batch.insert(index, bad)
    async with hlmem.open(db_path, config=config, pipeline="external") as mem:
        with pytest.raises(hlmem.InputError, match=rf"^event {index}: "):
            await mem.add_events(batch)
        # the store still works, and the good events go in once the bad one is gone
        assert await mem.add_events(good) == ["g1", "g2"]
    assert rows(db_path, "SELECT id FROM events ORDER BY seq") == [("g1",), ("g2",)]
    assert_consistent(db_path)


async def test_invalid_event_among_concurrent_writers_does_not_affect_them(
    db_path: Path, config: Config
) -> None:
    async with hlmem.open(db_path, config=config, pipeline="external") as mem:
        results = await asyncio.gather(
            *(mem.add_event("s", f"good {i} 好的") for i in range(20)),
            mem.add_event("s", " "),
            mem.add_event("s", "y" * TEN_MB),
            *(mem.add_event("t", f"more {i} 更多") for i in range(20)),
            return_exceptions=True,
        )
    errors = [r for r in results if isinstance(r, BaseException)]
    assert len(errors) == 2
    assert all(isinstance(e, hlmem.InputError) for e in errors)
    assert count(db_path, "events") == 40
    assert_consistent(db_path)


async def test_add_event_after_close_raises_closed_error(db_path: Path, config: Config) -> None:
    mem = hlmem.open(db_path, config=config, pipeline="external")
    async with mem:
        await mem.add_event("s", "before close")
    with pytest.raises(hlmem.ClosedError):
        await mem.add_event("s", "after close")
    assert count(db_path, "events") == 1


# --- immutability -----------------------------------------------------------------------------


async def _two_events(db_path: Path, config: Config) -> None:
    async with hlmem.open(db_path, config=config, pipeline="external") as mem:
        await mem.add_event("s", "记住：我的猫叫小白", event_id="zh")
        await mem.add_event("s", "Remember that the prod DB is db-prod-2.", event_id="en")


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE events SET content = 'tampered' WHERE id = 'zh'",
        "UPDATE events SET session_id = 'other'",
        "UPDATE events SET metadata = '{}' WHERE id = 'en'",
    ],
)
async def test_update_on_events_is_refused_by_the_database(
    db_path: Path, config: Config, sql: str
) -> None:
    await _two_events(db_path, config)
    with closing(sqlite3.connect(db_path)) as conn:
        with pytest.raises(sqlite3.DatabaseError, match="immutable"):
            conn.execute(sql)
        conn.rollback()
    assert rows(db_path, "SELECT id, content, session_id FROM events ORDER BY seq") == [
        ("zh", "记住：我的猫叫小白", "s"),
        ("en", "Remember that the prod DB is db-prod-2.", "s"),
    ]


async def test_delete_on_events_needs_a_tombstone(db_path: Path, config: Config) -> None:
    await _two_events(db_path, config)
    with closing(sqlite3.connect(db_path)) as conn:
        with pytest.raises(sqlite3.DatabaseError, match="immutable"):
            conn.execute("DELETE FROM events WHERE id = 'zh'")
        with pytest.raises(sqlite3.DatabaseError, match="immutable"):
            conn.execute("DELETE FROM events")
        conn.rollback()
        # a tombstone for a different event, or of another kind, does not unlock it
        conn.execute(
            "INSERT INTO tombstones (kind, key, namespace, created_at)"
            " VALUES ('claim', 'zh', 'default', '2026-01-01T00:00:00Z')"
        )
        with pytest.raises(sqlite3.DatabaseError, match="immutable"):
            conn.execute("DELETE FROM events WHERE id = 'zh'")
        conn.rollback()
    assert count(db_path, "events") == 2
    # the forget path: tombstone first, then the delete passes for that event only
    with closing(sqlite3.connect(db_path)) as conn:
        conn.execute(
            "INSERT INTO tombstones (kind, key, namespace, created_at)"
            " VALUES ('event', 'zh', 'default', '2026-01-01T00:00:00Z')"
        )
        conn.execute("DELETE FROM events WHERE id = 'zh'")
        conn.commit()
        with pytest.raises(sqlite3.DatabaseError, match="immutable"):
            conn.execute("DELETE FROM events WHERE id = 'en'")
        conn.rollback()
    assert rows(db_path, "SELECT id FROM events") == [("en",)]


# --- through the pipeline ---------------------------------------------------------------------


async def test_remember_requests_become_claims_with_evidence(db_path: Path, config: Config) -> None:
    async with hlmem.open(db_path, config=config) as mem:
        await mem.add_event("zh", "你好", event_id="zh-0")
        await mem.add_event("zh", "记住：我的猫叫小白", event_id="zh-1")
        await mem.add_event("zh", "记住了：好的。", role="assistant", event_id="zh-2")
        await mem.add_event("en", "Remember that the prod DB is db-prod-2.", event_id="en-1")
        await mem.add_event("en", "thanks", event_id="en-2")
        await mem.end_session("zh")
        await mem.end_session("en")
        await mem.drain(timeout_s=30)
        claims = {c.text: c for c in await mem.claims()}
        zh_hits = await mem.recall("我的猫叫什么？")
        en_hits = await mem.recall("Where is the prod DB?")
        stats = await mem.stats()
    assert set(claims) == {"我的猫叫小白", "the prod DB is db-prod-2"}
    assert claims["我的猫叫小白"].evidence[0].event_id == "zh-1"
    assert claims["我的猫叫小白"].evidence[0].quote == "记住：我的猫叫小白"
    assert claims["the prod DB is db-prod-2"].evidence[0].event_id == "en-1"
    assert claim_items(zh_hits)[0].text == "我的猫叫小白"
    assert claim_items(en_hits)[0].text == "the prod DB is db-prod-2"
    assert stats.claims == {"active": 2}
    assert stats.windows == {"closed": 2}
    assert set(stats.jobs) == PIPELINE_STAGES
    assert all(set(by_status) == {"done"} for by_status in stats.jobs.values())
