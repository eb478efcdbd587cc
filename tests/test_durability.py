"""Durability: an acknowledged ``add_event`` survives SIGKILL of the process.

A real subprocess (``tests/ingest_driver.py --mode stream``) sends events from 8 concurrent
producers and prints every id ``add_event`` (or ``add_events``) returned. The test SIGKILLs it
mid-stream, then checks the file: every acknowledged id is stored exactly once, each producer's
stored events are a prefix of what it sent (a batch is all or nothing), and the pipeline job of
every stored event was committed with it: reopening the memory windows every one of them.
"""

from __future__ import annotations

import sqlite3
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest
from helpers import fast_config
from ingest_driver import Child, child_env

import hlmem

PRODUCERS = 8


@contextmanager
def raw(db: Path) -> Iterator[sqlite3.Connection]:
    """A short-lived stdlib connection. Never held while hlmem is open in this process (two
    SQLite libraries in one process would break each other's POSIX locks)."""
    conn = sqlite3.connect(db, timeout=10, isolation_level=None)
    try:
        yield conn
    finally:
        conn.close()


def ingest_and_kill(
    db: Path, logs: Path, *, pipeline: str, batch: int, kill_after: int
) -> list[str]:
    """Run the stream driver, SIGKILL it after ``kill_after`` acks; every id it acknowledged."""
    env = child_env(windower__max_age_s=100000, pipeline__poll_interval_s=0.02)
    child = Child.driver(
        db,
        "--mode",
        "stream",
        "--pipeline",
        pipeline,
        "--batch",
        str(batch),
        "--producers",
        str(PRODUCERS),
        env=env,
        log=logs / "driver.log",
    )
    try:
        child.wait_for_acks(kill_after, timeout=60)
    finally:
        child.kill()
    # Lines the child wrote before it died are still in the pipe: they are acknowledgements too.
    assert child.proc.returncode == -9, child.stderr()
    assert "done" not in child.lines
    return child.acks


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("pipeline", "batch", "kill_after"),
    [
        ("inline", 1, 1),
        ("inline", 1, 1500),
        ("external", 1, 800),
        ("inline", 25, 2000),
    ],
    ids=["inline-first-ack", "inline", "external", "inline-add_events"],
)
async def test_acknowledged_events_survive_sigkill(
    tmp_path: Path, pipeline: str, batch: int, kill_after: int
) -> None:
    db = tmp_path / "memory.db"
    acks = await anyio.to_thread.run_sync(
        lambda: ingest_and_kill(db, tmp_path, pipeline=pipeline, batch=batch, kill_after=kill_after)
    )
    assert len(acks) >= kill_after
    assert len(set(acks)) == len(acks), "the driver never sends an id twice"

    with raw(db) as conn:
        stored = Counter(r[0] for r in conn.execute("SELECT id FROM events"))
    missing = [a for a in acks if a not in stored]
    assert not missing, f"{len(missing)} acknowledged events lost, e.g. {missing[:5]}"
    assert all(n == 1 for n in stored.values())

    # Per producer: stored = a prefix of what it sent; beyond the acknowledged ones at most the
    # batch whose acknowledgement the kill cut off, and then whole.
    acked: dict[str, set[int]] = defaultdict(set)
    for a in acks:
        _, p, n = a.split("-")
        acked[p].add(int(n))
    kept: dict[str, set[int]] = defaultdict(set)
    for s in stored:
        _, p, n = s.split("-")
        kept[p].add(int(n))
    for p, numbers in kept.items():
        assert numbers == set(range(len(numbers))), f"producer {p}: not a prefix"
        extra = len(numbers) - len(acked[p])
        assert extra in (0, batch), f"producer {p}: {extra} unacknowledged events stored"

    # The job of every stored event was committed with it: after recovery (the dead child's
    # leases are handed back at once: lease_s is far longer than the drain timeout) every stored
    # event lands in exactly one window.
    cfg = fast_config(windower={"max_age_s": 100000}, pipeline={"lease_s": 3600})
    async with hlmem.open(db, config=cfg, pipeline="inline") as mem:
        await mem.flush()
        await mem.drain(timeout_s=30)
        stats = await mem.stats()
    assert stats.events == len(stored)
    assert set(stats.jobs.get("windower", {})) == {"done"}
    assert set(stats.jobs.get("extractor", {})) <= {"done"}

    with raw(db) as conn:
        windowed = Counter(r[0] for r in conn.execute("SELECT event_id FROM window_items"))
        open_windows = conn.execute("SELECT count(*) FROM windows WHERE status = 'open'").fetchone()
        closed = conn.execute("SELECT count(*) FROM windows WHERE status = 'closed'").fetchone()
        extracted = conn.execute("SELECT count(*) FROM extractions").fetchone()
    assert windowed == Counter(stored)
    assert open_windows == (0,)
    assert extracted == closed
