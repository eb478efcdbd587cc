"""``flush()`` then ``drain()`` with the windower's jobs split over several workers.

Two worker processes on one file claim windower jobs independently, so one worker may apply a
flush (or a session end) while another still holds events that were acknowledged before it. The
events of that older job must not open a window the flush never sees: it would wait for the
age sweep (``windower.max_age_s``) while ``drain()`` already reports idle.

Each test reproduces one interleaving deterministically: the producer writes with
``pipeline="external"``, two further memories on the same file play worker A and worker B
(each its own job owner and connections, as two ``hlmem worker`` processes are), and each drives
the real :class:`Windower` the way the runner does (claim, ``apply`` in the job-completing
transaction). A real inline pipeline then drains the file, and the claims must be there.
``bench/drain_external.py`` runs the same race with two real ``hlmem worker`` processes.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import apply, fast_config, rows, step

import hlmem
from hlmem.config import Config
from hlmem.memory import Memory
from hlmem.messages import Job, JobKind
from hlmem.stages.windower import Windower

pytestmark = pytest.mark.anyio

ZH = "记住：我的猫叫小白，每天早上七点要喂它。"
EN = "Remember that the production database lives on db-prod-2 in Frankfurt."


def config() -> Config:
    # The age cap far away: only a flush or a session end may close these windows.
    return fast_config(windower={"max_age_s": 100_000.0})


def open_windows(db: Path) -> list[tuple[str, int]]:
    return [
        (r[0], int(r[1]))
        for r in rows(db, "SELECT session_id, item_count FROM windows WHERE status = 'open'")
    ]


def closed_by(db: Path) -> dict[str, list[str]]:
    """session -> the close reasons of its closed windows, oldest first."""
    out: dict[str, list[str]] = {}
    for session, reason in rows(
        db,
        "SELECT session_id, close_reason FROM windows WHERE status = 'closed'"
        " ORDER BY opened_at, id",
    ):
        out.setdefault(session, []).append(reason)
    return out


async def late_apply(worker: Memory, windower: Windower, jobs: list[Job]) -> None:
    """Worker A applies the jobs it claimed before worker B ran: its batch is late."""
    await windower.prepare(jobs)  # the windower prepares nothing: apply gets None
    await apply(worker, windower, jobs, None, complete=True)


async def drained_claims(db: Path, cfg: Config) -> set[str]:
    """Run a real pipeline on the file until idle; the active claims' values."""
    async with hlmem.open(db, config=cfg) as mem:
        await mem.drain(timeout_s=60)
    return {r[0] for r in rows(db, "SELECT value FROM claims WHERE status = 'active'")}


async def test_a_flush_applied_by_one_worker_closes_the_window_a_late_worker_opens(
    db_path: Path,
) -> None:
    cfg = config()
    async with (
        hlmem.open(db_path, config=cfg, pipeline="external") as producer,
        hlmem.open(db_path, config=cfg, pipeline="external") as worker_a,
        hlmem.open(db_path, config=cfg, pipeline="external") as worker_b,
    ):
        await producer.add_event("zh-1", ZH)  # windower job 1
        await producer.add_event("en-1", EN)  # windower job 2
        await producer.flush()  # windower job 3: covers both events
        a, b = Windower(cfg.windower, producer.clock), Windower(cfg.windower, producer.clock)
        held = await worker_a.queue.claim(JobKind.WINDOWER, 1)  # A holds job 1 ...
        assert await step(worker_b, b) == 2  # ... while B applies job 2 and the flush
        await late_apply(worker_a, a, held)
        assert open_windows(db_path) == [], "the flush left a window open"
        assert closed_by(db_path) == {"zh-1": ["flush"], "en-1": ["flush"]}
        # idle now means done: nothing waits for the age sweep
        assert await producer.queue.backlog(JobKind.WINDOWER) == 0
        assert await producer.queue.backlog(JobKind.EXTRACTOR) == 2
    values = await drained_claims(db_path, cfg)
    assert any("小白" in v for v in values), values
    assert any("db-prod-2" in v for v in values), values


async def test_a_late_batch_closes_only_what_the_flush_covered(db_path: Path) -> None:
    cfg = config()
    async with (
        hlmem.open(db_path, config=cfg, pipeline="external") as producer,
        hlmem.open(db_path, config=cfg, pipeline="external") as worker_a,
        hlmem.open(db_path, config=cfg, pipeline="external") as worker_b,
    ):
        await producer.add_event("s", "我在杭州工作")  # job 1: before the flush
        await producer.flush()  # job 2
        await producer.add_event("s", "I mostly use dark mode.")  # job 3: after it
        a, b = Windower(cfg.windower, producer.clock), Windower(cfg.windower, producer.clock)
        held = await worker_a.queue.claim(JobKind.WINDOWER, 1)  # job 1
        assert await step(worker_b, b, limit=1) == 1  # the flush: nothing open yet
        held += await worker_a.queue.claim(JobKind.WINDOWER, 1)  # job 3, in the same late batch
        await late_apply(worker_a, a, held)
        # the event told before the flush is in a closed window; the later one stays open
        assert closed_by(db_path) == {"s": ["flush"]}
        assert open_windows(db_path) == [("s", 1)]
        (window_of_first,) = rows(
            db_path,
            "SELECT w.status FROM window_items i JOIN windows w ON w.id = i.window_id"
            " JOIN events e ON e.id = i.event_id WHERE e.content = ?",
            ("我在杭州工作",),
        )
        assert window_of_first == ("closed",)


async def test_a_session_end_applied_by_one_worker_closes_a_late_window(db_path: Path) -> None:
    cfg = config()
    async with (
        hlmem.open(db_path, config=cfg, pipeline="external") as producer,
        hlmem.open(db_path, config=cfg, pipeline="external") as worker_a,
        hlmem.open(db_path, config=cfg, pipeline="external") as worker_b,
    ):
        await producer.add_event("zh-1", ZH)  # job 1
        await producer.add_event("other", "今天天气不错")  # job 2
        await producer.end_session("zh-1")  # job 3
        a, b = Windower(cfg.windower, producer.clock), Windower(cfg.windower, producer.clock)
        held = await worker_a.queue.claim(JobKind.WINDOWER, 1)
        assert await step(worker_b, b) == 2
        await late_apply(worker_a, a, held)
        # the ended session's window closed; the other session's stays open (not in scope)
        assert closed_by(db_path) == {"zh-1": ["session_end"]}
        assert open_windows(db_path) == [("other", 1)]


async def test_a_scoped_flush_leaves_other_sessions_late_windows_open(db_path: Path) -> None:
    cfg = config()
    async with (
        hlmem.open(db_path, config=cfg, pipeline="external") as producer,
        hlmem.open(db_path, config=cfg, pipeline="external") as worker_a,
        hlmem.open(db_path, config=cfg, pipeline="external") as worker_b,
    ):
        await producer.add_event("zh-1", ZH)  # job 1
        await producer.add_event("en-1", EN)  # job 2
        await producer.flush(session_id="en-1")  # job 3
        a, b = Windower(cfg.windower, producer.clock), Windower(cfg.windower, producer.clock)
        held = await worker_a.queue.claim(JobKind.WINDOWER, 2)  # jobs 1 and 2
        assert await step(worker_b, b) == 1
        await late_apply(worker_a, a, held)
        assert closed_by(db_path) == {"en-1": ["flush"]}
        assert open_windows(db_path) == [("zh-1", 1)]
