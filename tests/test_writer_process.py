"""``ingest.writer = "process"``: group commits in a writer child process.

Real files, real child processes, nothing mocked: the same calls go through a memory in thread
mode and one in process mode, and the two database files must hold the same thing; the child
is killed with SIGKILL, its parent too, and the database is read with a plain connection of the
same SQLite module (``helpers.rows``).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream
from helpers import (
    assert_consistent,
    claim_items,
    count,
    fast_config,
    rows,
    wait_until,
    windower_event_ids,
)

import hlmem
from hlmem.clock import iso
from hlmem.config import Config, StoreConfig
from hlmem.errors import ClosedError, StoreError
from hlmem.memory import Memory
from hlmem.pipeline import WriterProcess
from hlmem.store import sqlite_module

pytestmark = pytest.mark.anyio


def process_config(**ingest: object) -> Config:
    return fast_config(ingest={"writer": "process", **ingest})


def child(mem: Memory) -> WriterProcess:
    wp = mem.writer.writer_process
    assert wp is not None
    return wp


def gone(pid: int) -> bool:
    """The process has exited and been reaped (no zombie left behind)."""
    return not Path(f"/proc/{pid}").exists()


def exited(pid: int) -> bool:
    """The process has exited: gone, or a zombie waiting for a parent that is not us."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


# --- same results as thread mode --------------------------------------------------------------

BATCH = [
    {"session_id": "会话-1", "content": "记住：我的猫叫小白", "event_id": "a"},
    {"session_id": "s-en", "content": "Remember that the prod DB is db-prod-2.", "event_id": "b"},
    {"session_id": "会话-1", "content": "第一条的重复 (duplicate of a)", "event_id": "a"},
    {"session_id": "s-en", "content": "Just chatting, nothing to keep.", "event_id": "c"},
]


async def script(mem: Memory) -> dict[str, Any]:
    """The same calls in the same order; what the API returned."""
    out: dict[str, Any] = {}
    out["first"] = await mem.add_event("会话-1", "请记住我下周二要去上海出差", event_id="e1")
    out["again"] = await mem.add_event("other", "完全不同的内容 / different content", event_id="e1")
    out["english"] = await mem.add_event(
        "s-en", "Remember that my daughter's birthday is on May 3.", role="user", event_id="e2"
    )
    out["assistant"] = await mem.add_event(
        "s-en", "Noted: May 3.", role="assistant", event_id="e3", metadata={"model": "x"}
    )
    out["batch"] = await mem.add_events(BATCH)
    # duplicate reporting goes through the writer's own results
    rows_ = [mem.writer.prepare(hlmem.EventIn.model_validate(e)) for e in BATCH]
    rows_.append(
        mem.writer.prepare(hlmem.EventIn(session_id="s-new", content="新的", event_id="d"))
    )
    out["submit"] = await mem.writer.submit(rows_)
    # concurrent writers of one id: stored once
    out["concurrent"] = sorted(
        set(
            await asyncio.gather(
                *(
                    mem.add_event(f"s-{i % 3}", f"版本 {i} / version {i}", event_id="same")
                    for i in range(40)
                )
            )
        )
    )
    return out


def snapshot(db: Path) -> dict[str, Any]:
    """What the file holds, minus wall-clock job timestamps."""
    return {
        "events": rows(
            db,
            "SELECT id, namespace, session_id, role, content, content_hash, occurred_at,"
            " recorded_at, origin_class, session_kind, metadata FROM events ORDER BY seq",
        ),
        "sessions": rows(
            db,
            "SELECT namespace, session_id, session_kind, started_at FROM sessions"
            " ORDER BY namespace, session_id",
        ),
        "jobs": rows(
            db, "SELECT kind, payload, size, status FROM jobs WHERE kind = 'windower' ORDER BY id"
        ),
    }


async def test_process_mode_stores_exactly_what_thread_mode_stores(tmp_path: Path) -> None:
    results, files = {}, {}
    for mode in ("thread", "process"):
        db = files[mode] = tmp_path / f"{mode}.db"
        cfg = fast_config(ingest={"writer": mode})
        async with hlmem.open(
            db, config=cfg, clock=hlmem.ManualClock(), pipeline="external"
        ) as mem:
            assert (mem.writer.writer_process is not None) == (mode == "process")
            results[mode] = await script(mem)

    assert results["process"] == results["thread"]
    got = results["process"]
    assert got["first"] == got["again"] == "e1"
    assert got["batch"] == ["a", "b", "a", "c"]
    assert got["submit"] == [
        ("a", True, None),
        ("b", True, None),
        ("a", True, None),
        ("c", True, None),
        ("d", False, None),
    ]
    assert got["concurrent"] == ["same"]

    thread, process = snapshot(files["thread"]), snapshot(files["process"])
    assert process == thread
    assert [r[0] for r in process["events"]] == ["e1", "e2", "e3", "a", "b", "c", "d", "same"]
    assert process["events"][0][4] == "请记住我下周二要去上海出差"
    # duplicates create no session ("other", "s-1", "s-2")
    assert sorted(r[1] for r in process["sessions"]) == sorted({"会话-1", "s-en", "s-new", "s-0"})
    # one windower job per group commit, naming exactly the new events
    assert windower_event_ids(files["process"]) == ["e1", "e2", "e3", "a", "b", "c", "d", "same"]
    assert_consistent(files["process"])


@pytest.mark.parametrize("mode", ["thread", "process"])
async def test_the_group_commit_stamps_ids_and_times_the_caller_left_out(
    tmp_path: Path, mode: str
) -> None:
    """An event without an id gets a fresh one from the commit, returned to its caller; one
    without an occurred time gets the commit's recorded time, read from the memory's clock
    once per group (the injectable clock, not the wall clock)."""
    db = tmp_path / f"{mode}.db"
    first = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
    clock = hlmem.ManualClock(first)
    async with hlmem.open(
        db, config=fast_config(ingest={"writer": mode}), clock=clock, pipeline="external"
    ) as mem:
        one = await mem.add_event("会话-1", "记住：我的猫叫小白")
        clock.advance(3600)
        said = datetime(2026, 3, 1, 8, 30, tzinfo=UTC)
        batch = await mem.add_events(
            [
                {"session_id": "s-en", "content": "Remember that the prod DB is db-prod-2."},
                {"session_id": "会话-1", "content": "我下周二去上海", "occurred_at": said},
                {"session_id": "s-en", "content": "Mine", "event_id": "client-id"},
                {"session_id": "s-en", "content": "Another one."},
            ]
        )
    stored = rows(db, "SELECT id, occurred_at, recorded_at FROM events ORDER BY seq")
    assert [r[0] for r in stored] == [one, *batch]
    assert len(set(batch)) == 4 and batch[2] == "client-id"
    assert all(i.startswith("ev_") for i in (one, batch[0], batch[1], batch[3]))
    t1, t2 = iso(first), iso(first + timedelta(hours=1))
    assert stored[0][1:] == (t1, t1)
    assert [r[1:] for r in stored[1:]] == [(t2, t2), (iso(said), t2), (t2, t2), (t2, t2)]
    assert_consistent(db)


async def test_group_commits_from_many_concurrent_sessions(db_path: Path) -> None:
    async with hlmem.open(db_path, config=process_config(), pipeline="external") as mem:
        ids = await asyncio.gather(
            *(
                mem.add_event(f"s-{i % 50}", f"第{i}条消息 / message {i}", event_id=f"m{i:04d}")
                for i in range(600)
            )
        )
        batches = mem.writer.committed_batches
    assert ids == [f"m{i:04d}" for i in range(600)]
    assert count(db_path, "events") == 600
    assert count(db_path, "sessions") == 50
    assert batches < 600  # grouped
    jobs = rows(db_path, "SELECT size FROM jobs WHERE kind = 'windower'")
    assert sum(size for (size,) in jobs) == 600 and len(jobs) == batches
    assert_consistent(db_path)


# --- the pipeline -------------------------------------------------------------------------------


async def test_the_inline_pipeline_still_produces_windows_and_claims(db_path: Path) -> None:
    async with hlmem.open(db_path, config=process_config()) as mem:
        await mem.add_event("会话-1", "记住：我的猫叫小白")
        await mem.add_event("会话-1", "今天天气不错。")
        await mem.add_event("s-en", "Remember that the prod DB is db-prod-2.")
        await mem.add_event("s-en", "Thanks!", role="assistant")
        await mem.end_session("会话-1")
        await mem.flush()
        await mem.drain(timeout_s=20)
        claims = {c.text for c in await mem.claims()}
        hits = await mem.recall("我的猫叫什么？")
        stats = await mem.stats()
    assert any("小白" in t for t in claims)
    assert any("db-prod-2" in t for t in claims)
    assert "小白" in claim_items(hits)[0].text
    assert claim_items(hits)[0].evidence[0].quote
    assert stats.events == 4
    assert set(stats.windows) == {"closed"}
    assert all(set(by_status) == {"done"} for by_status in stats.jobs.values())


# --- shutdown -----------------------------------------------------------------------------------


async def test_close_with_pending_work_commits_it_and_stops_the_child(db_path: Path) -> None:
    acked: list[str] = []
    refused: list[int] = []
    total = 300

    async def produce(mem: Memory, p: int) -> None:
        events = [
            {"session_id": f"s{p}", "content": f"第{p}批第{k}条 item {k}", "event_id": f"p{p}-{k}"}
            for k in range(10)
        ]
        try:
            acked.extend(await mem.add_events(events))
        except ClosedError:
            refused.append(p)

    mem = hlmem.open(db_path, config=process_config(), pipeline="external")
    await mem.__aenter__()
    wp = child(mem)
    pid = wp.pid
    assert pid is not None and not gone(pid)
    # plain tasks, not a task group: close() must run where the memory was entered
    tasks = [asyncio.create_task(produce(mem, p)) for p in range(total // 10)]
    await anyio.lowlevel.checkpoint()  # every producer has submitted; few commits are done
    assert len(acked) < total
    await mem.close()
    with anyio.fail_after(10):
        await asyncio.gather(*tasks)
    assert refused == []  # all were submitted before close, so all were committed
    assert sorted(acked) == sorted(f"p{p}-{k}" for p in range(total // 10) for k in range(10))
    assert count(db_path, "events") == total
    assert_consistent(db_path)
    # the child saw end of input and exited by itself, and was reaped
    assert wp.exit_code == 0
    assert wp.pid is None and gone(pid)
    with pytest.raises(ClosedError):
        await mem.add_event("s", "too late")


async def test_a_child_that_cannot_open_the_database_fails_clearly(tmp_path: Path) -> None:
    driver = sqlite_module("auto").__name__
    wp = WriterProcess(tmp_path / "missing-dir" / "x.db", StoreConfig(), driver)
    with anyio.fail_after(60), pytest.raises(StoreError, match="cannot open"):
        await wp.start()
    assert wp.exit_code == 1
    assert wp.pid is None
    await wp.aclose()  # nothing to close: a no-op


# --- a dying child --------------------------------------------------------------------------------


async def test_killing_the_child_mid_commit_fails_that_commit_then_a_new_child_takes_over(
    db_path: Path,
) -> None:
    from helpers import connect_raw

    async with hlmem.open(db_path, config=process_config(), pipeline="external") as mem:
        await mem.add_event("s", "first", event_id="k0")
        wp = child(mem)
        old_pid = wp.pid
        assert old_pid is not None

        # another connection holds the write lock: the child's commit waits in BEGIN IMMEDIATE
        blocker = connect_raw(db_path)
        blocker.execute("BEGIN IMMEDIATE")
        outcome: list[BaseException | str] = []

        async def add() -> None:
            try:
                outcome.append(await mem.add_event("s", "记住：这条在提交时丢了", event_id="k1"))
            except Exception as exc:
                outcome.append(exc)

        try:
            with anyio.fail_after(20):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(add)
                    await wait_until(lambda: wp.in_flight)
                    os.kill(old_pid, signal.SIGKILL)
        finally:
            blocker.rollback()
            blocker.close()

        assert len(outcome) == 1 and isinstance(outcome[0], StoreError)
        assert "writer process died" in str(outcome[0])
        assert "send them again" in str(outcome[0])
        assert wp.exit_code == -signal.SIGKILL
        assert gone(old_pid)  # reaped
        assert count(db_path, "events") == 1  # the lock was held: nothing was committed

        # sending it again works: the next commit starts a fresh child
        with anyio.fail_after(60):
            assert await mem.add_event("s", "记住：这条在提交时丢了", event_id="k1") == "k1"
            assert await mem.add_event("s", "Remember that k2 is fine.", event_id="k2") == "k2"
        assert wp.starts == 2 and wp.pid not in (None, old_pid)
    assert [r[0] for r in rows(db_path, "SELECT id FROM events ORDER BY seq")] == ["k0", "k1", "k2"]
    assert_consistent(db_path)


async def test_a_child_killed_while_idle_is_replaced_on_the_next_commit(db_path: Path) -> None:
    async with hlmem.open(db_path, config=process_config(), pipeline="external") as mem:
        await mem.add_event("s", "before", event_id="i0")
        wp = child(mem)
        old_pid = wp.pid
        assert old_pid is not None
        os.kill(old_pid, signal.SIGKILL)
        await wait_until(lambda: wp.returncode is not None)
        with anyio.fail_after(60):
            assert await mem.add_event("s", "after / 之后", event_id="i1") == "i1"
        assert wp.starts == 2 and wp.pid != old_pid and gone(old_pid)
    assert [r[0] for r in rows(db_path, "SELECT id FROM events ORDER BY seq")] == ["i0", "i1"]


async def test_a_killed_child_never_hangs_concurrent_producers(db_path: Path) -> None:
    """Kill the child while many sessions are sending: every call returns or raises a
    StoreError, and whatever was acknowledged is stored."""
    acked: list[str] = []
    failed: list[BaseException] = []

    async def produce(mem: Memory, p: int) -> None:
        for k in range(30):
            try:
                acked.append(await mem.add_event(f"s{p}", f"消息 {p}-{k}", event_id=f"c{p}-{k}"))
            except StoreError as exc:
                failed.append(exc)

    async with hlmem.open(db_path, config=process_config(), pipeline="external") as mem:
        wp = child(mem)
        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                for p in range(20):
                    tg.start_soon(produce, mem, p)
                await wait_until(lambda: len(acked) >= 50)
                pid = wp.pid
                assert pid is not None
                os.kill(pid, signal.SIGKILL)
    stored = {r[0] for r in rows(db_path, "SELECT id FROM events")}
    assert set(acked) <= stored
    assert len(acked) + len(failed) == 20 * 30
    assert all("writer process" in str(e) for e in failed)
    assert_consistent(db_path)


async def test_the_child_exits_when_its_parent_is_killed(tmp_path: Path) -> None:
    db = tmp_path / "orphan.db"
    code = textwrap.dedent(
        f"""
        import anyio, sys, time
        import hlmem

        async def main():
            cfg = hlmem.load_config(env={{}}, overrides={{"ingest": {{"writer": "process"}}}})
            async with hlmem.open({str(db)!r}, config=cfg, pipeline="external") as mem:
                await mem.add_event("s", "记住：父进程会被杀掉", event_id="o1")
                print(mem.writer.writer_process.pid, flush=True)
                await anyio.sleep(600)

        anyio.run(main)
        """
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("HLMEM_")}
    async with await anyio.open_process(
        [sys.executable, "-c", code], stdin=subprocess.DEVNULL, stderr=None, env=env
    ) as parent:
        assert parent.stdout is not None
        out = BufferedByteReceiveStream(parent.stdout)
        with anyio.fail_after(60):
            line = await out.receive_until(b"\n", 100)
        child_pid = int(line)
        assert not exited(child_pid)
        parent.kill()
        with anyio.fail_after(30):
            assert await parent.wait() == -signal.SIGKILL
        await wait_until(lambda: exited(child_pid), timeout_s=20)
    assert rows(db, "SELECT id FROM events") == [("o1",)]


# --- backpressure -------------------------------------------------------------------------------


async def test_backpressure_holds_producers_until_a_consumer_catches_up(db_path: Path) -> None:
    high, low, producers, per_producer = 20, 5, 4, 30
    cfg = process_config(
        backlog_high_water_jobs=high, backlog_low_water_jobs=low, backlog_refresh_s=0.01
    )
    clock = hlmem.ManualClock()
    acked: list[str] = []
    total = producers * per_producer

    async def produce(mem: Memory, p: int) -> None:
        for i in range(per_producer):
            n = p * per_producer + i
            text = f"记住：第{n}号服务器在三楼。" if n % 2 else f"Remember that build {n} is green."
            acked.append(await mem.add_event(f"会话-{p}", text, event_id=f"bp-{n:04d}"))

    async with hlmem.open(db_path, config=cfg, clock=clock, pipeline="external") as mem:
        async with anyio.create_task_group() as tg:
            for p in range(producers):
                tg.start_soon(produce, mem, p)
            await wait_until(lambda: mem.writer.backlog_blocked)
            await anyio.sleep(0.3)
            stalled = len(acked)
            await anyio.sleep(0.3)
            assert len(acked) == stalled < total  # nothing more is acknowledged
            assert high <= count(db_path, "events") <= high + producers
            # a consumer on the same file (thread mode) drains the backlog; producers finish
            consumer_cfg = fast_config(
                ingest={"backlog_high_water_jobs": high, "backlog_low_water_jobs": low}
            )
            async with hlmem.open(db_path, config=consumer_cfg, clock=clock) as worker:
                await wait_until(lambda: len(acked) == total, timeout_s=30)
                await worker.flush()
                await worker.drain(timeout_s=30)
                stats = await worker.stats()
    assert sorted(acked) == [f"bp-{n:04d}" for n in range(total)]
    assert count(db_path, "events") == total
    assert all(set(by_status) == {"done"} for by_status in stats.jobs.values())
    assert stats.claims == {"active": total}


# --- configuration ------------------------------------------------------------------------------


def test_writer_mode_is_configurable_and_checked() -> None:
    assert hlmem.load_config(env={}).ingest.writer == "thread"
    env = {"HLMEM_INGEST__WRITER": "process"}
    assert hlmem.load_config(env=env).ingest.writer == "process"
    with pytest.raises(hlmem.ConfigError):
        hlmem.load_config(env={}, overrides={"ingest": {"writer": "fork"}})


def test_frames_round_trip_plain_tuples() -> None:
    from hlmem.pipeline import HEADER, frame

    obj = (
        [[("ev_1", "default", "会话", "user", "内容 content", "h", "t", "t", "o", "k", "{}")]],
        1.5,
    )
    data = frame(obj)
    (size,) = HEADER.unpack(data[: HEADER.size])
    assert size == len(data) - HEADER.size
    import pickle

    assert pickle.loads(data[HEADER.size :]) == obj
    assert json.dumps(obj, ensure_ascii=False)  # plain data only


async def test_the_child_keeps_the_wal_bounded_under_a_steady_stream(db_path: Path) -> None:
    """The child's commits restart the WAL as the store's do (Checkpointer.catch_up): without
    that, these 6,000 events left a WAL of 52 MiB (3 MiB with it)."""
    cfg = fast_config(ingest={"writer": "process"}, store={"wal_restart_frames": 64})
    text = ("今天和产品团队讨论了第二季度的路线图，" * 60) + ("The deploy went fine. " * 100)
    wal = db_path.with_name(db_path.name + "-wal")
    largest = 0

    async def producer(p: int) -> None:
        nonlocal largest
        for i in range(120):
            await mem.add_event(f"会话-{p}", f"{p}/{i} {text}")
            largest = max(largest, wal.stat().st_size if wal.exists() else 0)

    async with hlmem.open(db_path, config=cfg, pipeline="external") as mem:
        await asyncio.gather(*(producer(p) for p in range(50)))
    assert count(db_path, "events") == 6000
    assert largest < 24 * 2**20
