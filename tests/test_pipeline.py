"""The pipeline end to end: inline and external give the same memory; stops lose nothing;
a job that keeps failing ends failed with its reason and can be re-driven."""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import pytest
from helpers import claim_items, connect_raw, fast_config, rows, wait_until
from helpers import scalar as _scalar
from scripted_provider import gateway_config

import hlmem
from hlmem.clock import Clock, ManualClock, SystemClock, wall
from hlmem.config import Config
from hlmem.errors import ClosedError, ConfigError
from hlmem.jobs import JobQueue
from hlmem.memory import Memory
from hlmem.pipeline import Pipeline
from hlmem.store import Store

pytestmark = pytest.mark.anyio


# --- a conversation in Chinese and English ---------------------------------------------------


async def converse(mem: Memory) -> None:
    """Several sessions and two namespaces; every event id fixed, so two runs can be compared."""
    zh = [
        ("user", "你好，我们开始吧。"),
        ("user", "记住：我的猫叫小白"),
        ("assistant", "好的，我会记住：你的猫叫小白。"),
        ("user", "请记住我对花生过敏。"),
        ("user", "今天有点累。"),
        ("user", "帮我记住一下，周三下午三点和老王开会"),
        ("assistant", "已经记下了。"),
    ]
    en = [
        ("user", "Hi there, quick notes for later."),
        ("user", "Remember that the prod DB is db-prod-2."),
        ("assistant", "Remember that I cannot read your email."),
        ("user", "please remember: my manager is Alice Chen"),
        ("user", "That's all for now!"),
        ("user", "Oh, remember that deploys freeze on Fridays."),
    ]
    for i in range(max(len(zh), len(en))):  # two sessions interleaved
        if i < len(zh):
            role, text = zh[i]
            await mem.add_event("会话-中文", text, role=role, event_id=f"zh-{i}")
        if i < len(en):
            role, text = en[i]
            await mem.add_event("chat-en", text, role=role, event_id=f"en-{i}")
    await mem.end_session("chat-en")
    # the same session id in another namespace, as one batch
    await mem.add_events(
        [
            {
                "session_id": "会话-中文",
                "namespace": "work",
                "content": text,
                "role": role,
                "event_id": f"work-{i}",
            }
            for i, (role, text) in enumerate(
                [
                    ("user", "记住：项目代号是青龙"),
                    ("user", "Remember that the repo is hlmem."),
                    ("assistant", "Noted."),
                    ("user", "先这样。"),
                ]
            )
        ]
    )
    await mem.flush(namespace="work")
    await mem.end_session("会话-中文")
    await mem.flush()


REMEMBERED = {
    "default": {
        "我的猫叫小白",
        "我对花生过敏",
        "周三下午三点和老王开会",
        "the prod DB is db-prod-2",
        "my manager is Alice Chen",
        "deploys freeze on Fridays",
    },
    "work": {"项目代号是青龙", "the repo is hlmem"},
}


def dump(db: Path, *, times: bool = True) -> dict[str, list[tuple[Any, ...]]]:
    """The derived state of a file; with ``times=False`` without processing-time columns."""
    windows = "id, namespace, session_id, session_key, status, opened_at, close_reason, item_count"
    claims = (
        "id, namespace, subject, predicate, value, text, qualifiers, polarity, scope, importance,"
        " confidence, language, content_hash, slot_key, status, valid_from, valid_to, extractor,"
        " window_id"
    )
    if times:
        windows += ", closed_at"
        claims += ", recorded_at"
    return {
        "windows": rows(db, f"SELECT {windows} FROM windows ORDER BY id"),
        "window_items": rows(db, "SELECT * FROM window_items ORDER BY window_id, pos"),
        "extractions": rows(
            db,
            "SELECT window_id, extractor, model, claim_count"
            + (", created_at" if times else "")
            + " FROM extractions ORDER BY window_id",
        ),
        "claims": rows(db, f"SELECT {claims} FROM claims ORDER BY id"),
        "evidence": rows(db, "SELECT * FROM evidence ORDER BY claim_id, event_id"),
        "sessions_ended": rows(
            db,
            "SELECT namespace, session_id FROM sessions WHERE ended_at IS NOT NULL ORDER BY 1, 2",
        ),
    }


async def run_inline(db: Path, cfg: Config, clock: Clock) -> None:
    async with hlmem.open(db, config=cfg, clock=clock) as mem:
        await converse(mem)
        await mem.drain(timeout_s=20)


def assert_remembered(db: Path) -> None:
    contents = dict(rows(db, "SELECT id, content FROM events"))
    for namespace, values in REMEMBERED.items():
        got = rows(db, "SELECT value FROM claims WHERE namespace = ?", (namespace,))
        assert sorted(v for (v,) in got) == sorted(values)
    for _claim, event_id, quote, start, end in rows(db, "SELECT * FROM evidence"):
        assert contents[event_id][start:end] == quote
    assert count(db, "SELECT count(*) FROM jobs WHERE status != 'done'") == 0
    assert count(db, "SELECT count(*) FROM windows WHERE status = 'open'") == 0


# --- tests ----------------------------------------------------------------------------------


async def test_inline_end_to_end_gives_claims_with_evidence_and_recall(db_path: Path) -> None:
    clock = hlmem.ManualClock()
    async with hlmem.open(db_path, config=fast_config(), clock=clock) as mem:
        await converse(mem)
        await mem.drain(timeout_s=20)
        claims = await mem.claims()
        work = await mem.claims(namespace="work")
        cat = await mem.recall("我的猫叫什么？")
        db_hits = await mem.recall("which host is the prod DB?")
        manager = await mem.recall("Who is my manager?")
        repo = await mem.recall("repo", namespace="work")
        stats = await mem.stats()

    assert {c.value for c in claims} == REMEMBERED["default"]
    assert {c.value for c in work} == REMEMBERED["work"]
    for claim in claims + work:
        assert claim.evidence and claim.evidence[0].quote
        assert claim.evidence[0].event_id.startswith(("zh-", "en-", "work-"))
        assert claim.language == (
            "zh" if any("\u4e00" <= ch <= "\u9fff" for ch in claim.value) else "en"
        )
    assert not any(c.evidence[0].event_id in {"zh-2", "en-2", "work-2"} for c in claims + work)
    assert claim_items(cat)[0].value == "我的猫叫小白"
    assert "记住" in claim_items(cat)[0].evidence[0].quote
    assert claim_items(db_hits)[0].value == "the prod DB is db-prod-2"
    assert claim_items(manager)[0].value == "my manager is Alice Chen"
    assert [h.value for h in claim_items(repo)][:1] == ["the repo is hlmem"]
    assert stats.events == 17 and stats.sessions == 3
    assert stats.claims == {"active": 8} and stats.evidence == 8
    assert stats.windows == {"closed": stats.extractions}
    assert_remembered(db_path)


async def test_external_worker_memory_gives_the_same_result_as_inline(tmp_path: Path) -> None:
    cfg = fast_config()
    inline_db, external_db = tmp_path / "inline.db", tmp_path / "external.db"
    await run_inline(inline_db, cfg, hlmem.ManualClock())

    clock = hlmem.ManualClock()
    async with hlmem.open(external_db, config=cfg, clock=clock, pipeline="external") as mem:
        await converse(mem)
        await anyio.sleep(0.1)
        # nothing consumes: everything waits in the job table
        assert count(external_db, "SELECT count(*) FROM windows") == 0
        assert count(external_db, "SELECT count(*) FROM jobs WHERE status = 'todo'") > 0
        async with hlmem.open(external_db, config=cfg, clock=clock) as worker:
            await worker.drain(timeout_s=20)

    assert_remembered(external_db)
    assert dump(external_db) == dump(inline_db)


@pytest.mark.slow
async def test_external_hlmem_worker_process_gives_the_same_result(tmp_path: Path) -> None:
    cfg = fast_config()
    inline_db, external_db = tmp_path / "inline.db", tmp_path / "external.db"
    # The worker process runs on the system clock, so the events are recorded at about now
    # (an event recorded long ago would be due for the worker's age sweep at once).
    start = datetime.now(UTC)
    await run_inline(inline_db, cfg, hlmem.ManualClock(start))
    async with hlmem.open(
        external_db, config=cfg, clock=hlmem.ManualClock(start), pipeline="external"
    ) as mem:
        await converse(mem)

    env = {k: v for k, v in os.environ.items() if not k.startswith("HLMEM_")}
    env.update(
        HLMEM_PIPELINE__POLL_INTERVAL_S="0.02",
        HLMEM_PIPELINE__DRAIN_POLL_S="0.01",
        HLMEM_WINDOWER__SWEEP_INTERVAL_S="0.05",
    )
    with anyio.fail_after(60):
        done = await anyio.run_process(
            [
                sys.executable,
                "-m",
                "hlmem",
                "--db",
                str(external_db),
                "worker",
                "--drain",
                "--settle-s",
                "0.2",
                "--json",
            ],
            env=env,
            check=False,
        )
    assert done.returncode == 0, done.stderr.decode()
    stats = json.loads(done.stdout)
    assert stats["claims"] == {"active": 8}
    assert_remembered(external_db)
    # the worker runs on the system clock: compare everything but processing times
    assert dump(external_db, times=False) == dump(inline_db, times=False)


@pytest.mark.parametrize("grace_s", [0.0, 5.0])
async def test_close_with_work_in_flight_loses_nothing(db_path: Path, grace_s: float) -> None:
    cfg = fast_config(pipeline={"shutdown_grace_s": grace_s})
    clock = hlmem.ManualClock()
    acked: list[str] = []
    refused = 0

    async def produce(mem: Memory, p: int) -> None:
        nonlocal refused
        for i in range(1000):
            text = f"记住：第{p}组的第{i}件事" if i % 3 == 0 else f"producer {p} says {i}."
            try:
                acked.append(await mem.add_event(f"s{p % 4}", text, event_id=f"p{p}-{i}"))
            except ClosedError:
                refused += 1
                return

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            async with hlmem.open(db_path, config=cfg, clock=clock) as mem:
                for p in range(6):
                    tg.start_soon(produce, mem, p)
                await wait_until(lambda: len(acked) >= 150)
                assert count(db_path, "SELECT count(*) FROM jobs WHERE status != 'done'") > 0
            # leaving the block closed it: producers, windower and extractor were all mid-flight
    assert refused == 6  # every producer was told, none hangs

    stored = {r[0] for r in rows(db_path, "SELECT id FROM events")}
    assert set(acked) <= stored
    assert count(db_path, "SELECT count(*) FROM jobs WHERE status = 'doing'") == 0

    async with hlmem.open(db_path, config=cfg, clock=clock) as again:
        await again.drain(timeout_s=30)
        await again.flush()
        await again.drain(timeout_s=30)
        stats = await again.stats()

    # exactly once: every event in one window, every window extracted once, one claim per request
    assert stats.events == len(stored)
    placed = Counter(r[0] for r in rows(db_path, "SELECT event_id FROM window_items"))
    assert set(placed) == stored and set(placed.values()) == {1}
    windows = rows(db_path, "SELECT id, status FROM windows")
    assert {s for _, s in windows} == {"closed"}
    assert sorted(r[0] for r in rows(db_path, "SELECT window_id FROM extractions")) == sorted(
        w for w, _ in windows
    )
    requests = sorted(e for e in stored if int(e.split("-")[1]) % 3 == 0)
    claimed = sorted(r[0] for r in rows(db_path, "SELECT event_id FROM evidence"))
    assert claimed == requests
    assert stats.claims == {"active": len(requests)} and stats.evidence == len(requests)
    assert count(db_path, "SELECT count(*) FROM jobs WHERE status != 'done'") == 0


async def test_a_job_that_always_fails_ends_failed_and_can_be_retried(db_path: Path) -> None:
    clock = hlmem.ManualClock()
    bad_payloads = [
        '{"kind": "events_added", "event_ids": []}',  # no events: does not validate
        "this is not json",
    ]
    async with hlmem.open(db_path, config=fast_config(), clock=clock) as mem:
        async with mem.store.transaction() as tx:
            for payload in bad_payloads:
                now = wall()
                await tx.execute(
                    "insert_job", ("windower", payload, 1, 0, 0.0, None, None, now, now)
                )
        # ordinary work goes on around the poisoned jobs
        await mem.add_event("s", "记住：备份每天凌晨两点跑", event_id="ok-1")
        await mem.add_event("s", "Remember that backups keep 30 days.", event_id="ok-2")
        await mem.end_session("s")
        await mem.drain(timeout_s=10)

        failed = await mem.list_jobs(status="failed")
        assert len(failed) == 2
        for job in failed:
            assert job.kind == "windower" and job.attempts == 1
            assert job.last_error and "invalid payload" in job.last_error
        assert {c.value for c in await mem.claims()} == {
            "备份每天凌晨两点跑",
            "backups keep 30 days",
        }
        assert count(db_path, "SELECT count(*) FROM events") == 2  # events untouched

        # re-drive: both go back to todo, are tried again, and fail again for the same reason
        first_failed_at = {j.id: j.updated_at for j in failed}
        assert await mem.retry_jobs() == 2
        await wait_until(
            lambda: (
                rows(
                    db_path,
                    "SELECT count(*) FROM jobs WHERE status = 'failed' AND updated_at > ?",
                    (max(first_failed_at.values()),),
                )[0][0]
                == 2
            )
        )
        again = {j.id: j for j in await mem.list_jobs(status="failed")}
        assert again.keys() == first_failed_at.keys()
        assert all(
            j.attempts == 1 and "invalid payload" in (j.last_error or "") for j in again.values()
        )

        # once the cause is fixed, re-driving one job (by id, then by kind) completes it
        fixed_id = min(again)

        def repair() -> None:  # an operator's fix from outside; waits for the write lock
            conn = connect_raw(db_path)
            try:
                conn.execute(
                    "UPDATE jobs SET payload = ? WHERE id = ?",
                    ('{"kind": "flush_requested"}', fixed_id),
                )
            finally:
                conn.close()

        # in a thread: a blocking wait for the lock must not stall the pipeline holding it
        await anyio.to_thread.run_sync(repair)
        assert await mem.retry_jobs(job_id=fixed_id) == 1
        await wait_until(
            lambda: (
                rows(db_path, "SELECT status FROM jobs WHERE id = ?", (fixed_id,)) == [("done",)]
            )
        )
        await mem.drain(timeout_s=10)
        assert await mem.retry_jobs(kind="extractor") == 0
        assert await mem.retry_jobs(kind="windower") == 1
        await wait_until(
            lambda: (
                rows(
                    db_path,
                    "SELECT status FROM jobs WHERE id != ? AND status != 'done'",
                    (fixed_id,),
                )
                == [("failed",)]
            )
        )
        stats = await mem.stats()

    assert stats.jobs["windower"]["failed"] == 1
    assert stats.claims == {"active": 2}


async def test_a_write_cancelled_while_waiting_for_the_lock_leaves_the_store_usable(
    db_path: Path,
) -> None:
    """Stopping cancels writers that wait for SQLite's lock; their BEGIN must not linger."""
    async with hlmem.open(
        db_path, config=fast_config(), clock=hlmem.ManualClock(), pipeline="external"
    ) as mem:
        await mem.add_event("s", "记住：锁之前的一条", event_id="before")
        blocker = connect_raw(db_path)  # another connection holds the write lock
        try:
            blocker.execute("BEGIN IMMEDIATE")  # nothing else writes here: no wait

            async def release_later() -> None:
                await anyio.sleep(0.3)
                blocker.execute("ROLLBACK")

            async with anyio.create_task_group() as tg:
                tg.start_soon(release_later)
                with anyio.move_on_after(0.1) as scope:
                    async with mem.store.transaction() as tx:
                        await tx.execute("end_session", ("x", "default", "s"))
                assert scope.cancelled_caught
        finally:
            blocker.close()
        with anyio.fail_after(10):
            await mem.add_event("s", "Remember that writes still work after it.", event_id="after")
            await mem.end_session("s")

    assert [r[0] for r in rows(db_path, "SELECT id FROM events ORDER BY seq")] == [
        "before",
        "after",
    ]
    assert rows(db_path, "SELECT ended_at FROM sessions") == [(None,)]  # the cancelled write
    assert count(db_path, "SELECT count(*) FROM jobs WHERE kind = 'windower'") == 3


def count(db: Path, sql: str, params: Any = ()) -> int:
    return int(_scalar(db, sql, params))


# --- assembly: every dependency given, a missing one named -----------------------------------


@pytest.mark.parametrize(
    ("sections", "named"),
    [
        (
            {"extractor": {"kind": "model", "provider": "p", "model": "m"}},
            'extractor.kind = "model"',
        ),
        (
            {"dedup": {"audit": True, "audit_provider": "p", "audit_model": "m"}},
            "dedup.audit",
        ),
        ({"embedder": {"provider": "p", "model": "m"}}, "embedder.provider 'p'"),
    ],
)
async def test_a_stage_that_calls_a_model_without_a_gateway_is_a_config_error(
    store: Store, sections: dict[str, Any], named: str
) -> None:
    cfg = gateway_config("http://127.0.0.1:9", **sections)  # never contacted
    queue = JobQueue(store, lease_s=30, clock=SystemClock())
    with pytest.raises(ConfigError, match=named) as caught:
        Pipeline(queue, cfg, ManualClock(), None)
    assert "needs a model gateway" in str(caught.value)
