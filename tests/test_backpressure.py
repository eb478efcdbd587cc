"""Backpressure: producers wait while the durable backlog is high; a stalled stage stops claiming.

Nothing here is mocked: producers write through ``add_event`` into a real file while no pipeline
consumes (``pipeline="external"``), then a real consumer (a second memory on the same file, or
real stage runners) catches up.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import pytest
from helpers import PIPELINE_STAGES, fast_config, rows, wait_until
from helpers import scalar as _scalar

import hlmem
from hlmem.lang import default_lexicon
from hlmem.memory import Memory
from hlmem.stages.base import StageRunner
from hlmem.stages.extractor import Extractor
from hlmem.stages.windower import Windower

pytestmark = pytest.mark.anyio

TEXTS = [
    "记住：第{n}号服务器在机房三楼。",
    "Remember that build {n} is green.",
    "今天第{n}次讨论，没有结论。",
    "Message {n}: nothing to note here, just chatting.",
]


def job_counts(db: Path, kind: str) -> Counter[str]:
    return Counter(
        {
            r[0]: r[1]
            for r in rows(
                db, "SELECT status, count(*) FROM jobs WHERE kind = ? GROUP BY status", (kind,)
            )
        }
    )


async def settled_events(db: Path, *, interval_s: float = 0.1) -> int:
    """The number of stored events once it stops changing (what was already submitted when
    backpressure switched on still commits)."""
    with anyio.fail_after(10):
        last = count(db, "SELECT count(*) FROM events")
        while True:
            await anyio.sleep(interval_s)
            now = count(db, "SELECT count(*) FROM events")
            if now == last:
                return now
            last = now


# With a 1 s refresh the count is never stale while the producers run up to the mark: they
# are stopped because a group that could reach it counts the backlog first.
@pytest.mark.parametrize("refresh_s", [0.01, 1.0])
async def test_producers_block_above_high_water_until_a_consumer_catches_up(
    db_path: Path, refresh_s: float
) -> None:
    high, low, per_producer, producers = 20, 5, 40, 4
    cfg = fast_config(
        ingest={
            "backlog_high_water_jobs": high,
            "backlog_low_water_jobs": low,
            "backlog_refresh_s": refresh_s,
        }
    )
    clock = hlmem.ManualClock()
    acked: list[str] = []
    total = per_producer * producers

    async def produce(mem: Memory, p: int) -> None:
        for i in range(per_producer):
            n = p * per_producer + i
            eid = await mem.add_event(
                f"会话-{p}", TEXTS[n % len(TEXTS)].format(n=n), event_id=f"ev-{n:04d}"
            )
            acked.append(eid)

    async with hlmem.open(db_path, config=cfg, clock=clock, pipeline="external") as mem:
        async with anyio.create_task_group() as tg:
            for p in range(producers):
                tg.start_soon(produce, mem, p)

            # the producers run into the high-water mark and stop there
            await wait_until(lambda: mem.writer.backlog_blocked)
            stored = await settled_events(db_path)
            await anyio.sleep(0.3)
            assert count(db_path, "SELECT count(*) FROM events") == stored  # no longer growing
            assert len(acked) == stored < total
            assert high <= stored <= high + 10 * producers  # bounded, near the mark
            # one more producer is stuck too: its add_event does not complete
            with anyio.move_on_after(0.3) as scope:
                await mem.add_event(
                    "stuck", "这条消息要等。 This one has to wait.", event_id="late"
                )
            assert scope.cancelled_caught
            assert count(db_path, "SELECT count(*) FROM events WHERE id = 'late'") == 0

            # a consumer on the same file drains the backlog; the producers finish
            async with hlmem.open(db_path, config=cfg, clock=clock) as worker:
                await wait_until(lambda: len(acked) == total, timeout_s=30)
                await mem.add_event(
                    "stuck", "这条消息要等。 This one has to wait.", event_id="late"
                )
                await worker.flush()
                await worker.drain(timeout_s=30)
                stats = await worker.stats()

    # every event is stored exactly once, and all of it was processed
    ids = [r[0] for r in rows(db_path, "SELECT id FROM events")]
    assert len(ids) == len(set(ids)) == total + 1
    assert set(ids) == set(acked) | {"late"}
    placed = rows(db_path, "SELECT event_id, count(*) FROM window_items GROUP BY event_id")
    assert len(placed) == total + 1 and {n for _, n in placed} == {1}
    assert set(stats.jobs) == PIPELINE_STAGES
    assert all(set(by_status) == {"done"} for by_status in stats.jobs.values())
    remembered = [n for n in range(total) if n % len(TEXTS) in (0, 1)]
    assert stats.claims == {"active": len(remembered)}


async def test_add_events_batches_wait_as_well(db_path: Path) -> None:
    """A batch producer is held back the same way, and nothing is written twice on resume."""
    cfg = fast_config(
        ingest={
            "backlog_high_water_jobs": 30,
            "backlog_low_water_jobs": 0,
            "backlog_refresh_s": 0.01,
        }
    )
    clock = hlmem.ManualClock()
    done = anyio.Event()

    async def produce(mem: Memory) -> None:
        for b in range(20):
            await mem.add_events(
                [
                    {
                        "session_id": f"s{k}",
                        "content": f"第{b}批 batch {b} item {k}",
                        "event_id": f"b{b}-{k}",
                    }
                    for k in range(10)
                ]
            )
        done.set()

    async with hlmem.open(db_path, config=cfg, clock=clock, pipeline="external") as mem:
        async with anyio.create_task_group() as tg:
            tg.start_soon(produce, mem)
            await wait_until(lambda: mem.writer.backlog_blocked)
            stored = await settled_events(db_path)
            await anyio.sleep(0.2)
            assert count(db_path, "SELECT count(*) FROM events") == stored < 200
            assert not done.is_set()
            async with hlmem.open(db_path, config=cfg, clock=clock) as worker:
                with anyio.fail_after(30):
                    await done.wait()
                await worker.flush()
                await worker.drain(timeout_s=30)

    assert count(db_path, "SELECT count(DISTINCT id) FROM events") == 200
    assert count(db_path, "SELECT count(*) FROM window_items") == 200
    assert count(db_path, "SELECT count(*) FROM jobs WHERE status != 'done'") == 0


async def test_stalled_downstream_stops_the_windower_from_claiming(db_path: Path) -> None:
    high = 3
    cfg = fast_config(pipeline={"windower": {"downstream_high_water_jobs": high, "batch_size": 2}})
    clock = hlmem.ManualClock()

    async def add_sessions(mem: Memory, first: int, n: int) -> None:
        # five events per session, one group commit (one windower job) each: a window closes
        # (an extractor job appears) with every fifth job
        for s in range(first, first + n):
            for i in range(5):
                text = f"记住：会话{s}的第{i}件事" if i == 0 else f"session {s} message {i}"
                await mem.add_event(f"s{s}", text, event_id=f"s{s}-{i}")

    async with hlmem.open(db_path, config=cfg, clock=clock, pipeline="external") as mem:

        def windower_runner() -> StageRunner:
            stage = Windower(cfg.windower, clock)
            return StageRunner(stage, mem.queue, cfg.pipeline.windower, cfg.pipeline, clock)

        # the downstream fills up to its high-water mark; nothing extracts it
        await add_sessions(mem, 0, high)
        first = windower_runner()
        async with anyio.create_task_group() as tg:
            await tg.start(first.run)
            await wait_until(lambda: job_counts(db_path, "windower")["done"] == 5 * high)
            first.stop()
            with anyio.fail_after(10):
                await first.finished.wait()
        assert job_counts(db_path, "extractor") == {"todo": high}

        # more work arrives; a windower starting now sees the full downstream and claims nothing
        await add_sessions(mem, high, 10)
        second = windower_runner()
        stage = Extractor(mem.store, clock, cfg, lexicon=default_lexicon(), gateway=None)
        extractor = StageRunner(stage, mem.queue, cfg.pipeline.extractor, cfg.pipeline, clock)
        async with anyio.create_task_group() as tg:
            await tg.start(second.run)
            windows_before = count(db_path, "SELECT count(*) FROM windows")
            for _ in range(5):
                await anyio.sleep(0.1)
                assert job_counts(db_path, "windower") == {"done": 5 * high, "todo": 50}
                assert job_counts(db_path, "extractor") == {"todo": high}
                assert count(db_path, "SELECT count(*) FROM windows") == windows_before
                assert second.processed == 0

            # the extractor starts: the downstream drains and the windower resumes
            await tg.start(extractor.run)
            await wait_until(
                lambda: (
                    job_counts(db_path, "windower") == {"done": 5 * high + 50}
                    and job_counts(db_path, "extractor") == {"done": high + 10}
                )
            )
            second.stop()
            extractor.stop()
            with anyio.fail_after(10):
                await second.finished.wait()
                await extractor.finished.wait()

    assert second.processed == 50
    assert count(db_path, "SELECT count(*) FROM windows WHERE status = 'closed'") == high + 10
    assert count(db_path, "SELECT count(*) FROM extractions") == high + 10
    # one proposed claim per window, handed on to admission (nothing runs it here)
    assert count(db_path, "SELECT sum(size) FROM jobs WHERE kind = 'admission'") == high + 10


async def test_downstream_backlog_stays_bounded_while_the_windower_runs(db_path: Path) -> None:
    """From an empty downstream, the windower stops at the mark instead of running on: it
    counts what it hands on, so it re-reads the backlog as soon as that could reach the mark
    and claims past it only the batches it has in flight, however fast or slow it runs (with
    a count re-read every 0.1 s only, it overshot by what it claimed in that time)."""
    high = 4
    windower_cfg = {"downstream_high_water_jobs": high, "batch_size": 1}
    cfg = fast_config(pipeline={"windower": windower_cfg})
    clock = hlmem.ManualClock()
    async with hlmem.open(db_path, config=cfg, clock=clock, pipeline="external") as mem:
        # 200 sessions of 5 events, one group commit each: 200 windower jobs, 200 windows
        for s in range(200):
            await mem.add_events(
                [{"session_id": f"s{s}", "content": f"第{s}组 message {i}"} for i in range(5)]
            )
        runner = StageRunner(
            Windower(cfg.windower, clock), mem.queue, cfg.pipeline.windower, cfg.pipeline, clock
        )

        def stopped() -> bool:
            # Every batch it finished is counted (processed), none is claimed (doing): what it
            # handed on is at the mark, so its next claim re-reads the backlog and finds it full.
            processed, windower = runner.processed, job_counts(db_path, "windower")
            return (
                windower["doing"] == 0
                and windower["done"] == processed
                and job_counts(db_path, "extractor")["todo"] >= high
            )

        async with anyio.create_task_group() as tg:
            await tg.start(runner.run)
            await wait_until(stopped)
            settled = job_counts(db_path, "extractor")["todo"]
            runner.stop()
            with anyio.fail_after(10):
                await runner.finished.wait()
        assert job_counts(db_path, "extractor")["todo"] == settled  # it claimed nothing more

    windower_jobs = job_counts(db_path, "windower")
    assert windower_jobs["todo"] > 0 and windower_jobs["doing"] == 0
    # one window per windower job: past the mark by the jobs it had in flight at most (its
    # buffer's batches and the one each worker runs)
    in_flight = (cfg.pipeline.windower.buffer_batches + cfg.pipeline.windower.workers) * 1
    assert high <= settled <= high + in_flight, settled


async def test_producers_waiting_for_room_are_refused_when_the_writer_stops(db_path: Path) -> None:
    """A producer held back by backpressure when the writer stops must be told (ClosedError),
    even if the backlog drains before the store closes: it must never be left waiting on a
    submission the stopped committer will not take."""
    cfg = fast_config(
        ingest={
            "backlog_high_water_jobs": 5,
            "backlog_low_water_jobs": 0,
            "backlog_refresh_s": 0.01,
        }
    )
    clock = hlmem.ManualClock()
    outcomes: list[str] = []

    async def produce(mem: Memory, p: int) -> None:
        try:
            for i in range(50):
                await mem.add_event(f"s{p}", f"第{i}条 message {i}", event_id=f"p{p}-{i}")
        except hlmem.ClosedError:
            outcomes.append("refused")
        else:
            outcomes.append("finished")

    async with hlmem.open(db_path, config=cfg, clock=clock, pipeline="external") as mem:
        async with anyio.create_task_group() as tg:
            for p in range(3):
                tg.start_soon(produce, mem, p)
            await wait_until(lambda: mem.writer.backlog_blocked)
            await settled_events(db_path)
            await mem.writer.stop()  # what close() does first
            async with hlmem.open(db_path, config=cfg, clock=clock) as worker:
                await worker.drain(timeout_s=20)  # the backlog falls: the producers wake up
                await wait_until(lambda: len(outcomes) == 3, timeout_s=10)

    assert outcomes == ["refused"] * 3
    stored = count(db_path, "SELECT count(*) FROM events")
    assert count(db_path, "SELECT count(*) FROM window_items") == stored


def count(db: Path, sql: str, params: Any = ()) -> int:
    return int(_scalar(db, sql, params))
