"""Helpers shared by the tests: configs, raw reads of a database file, polling, stage steps."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import anyio

from hlmem.config import Config, load_config
from hlmem.jobs import JobSpec
from hlmem.memory import Memory
from hlmem.messages import Job, RecallItem, RecallResult
from hlmem.stages.base import Stage
from hlmem.store import Store, SyncTx, sqlite_module

#: every job kind of the write pipeline, in order
PIPELINE_STAGES = frozenset({"windower", "extractor", "admission", "dedup", "conflict", "embedder"})


def fast_config(**sections: Mapping[str, object]) -> Config:
    """Defaults tuned for tests: short polls and sweeps, environment ignored."""
    overrides: dict[str, object] = {
        "pipeline": {"poll_interval_s": 0.02, "drain_poll_s": 0.01, "shutdown_grace_s": 5},
        "windower": {"sweep_interval_s": 0.02},
    }
    for name, values in sections.items():
        base = overrides.setdefault(name, {})
        assert isinstance(base, dict)
        base.update(dict(values))
    return load_config(env={}, overrides=overrides)


def connect_raw(path: Path) -> Any:
    """A plain DB-API connection to an hlmem file, for assertions.

    It uses the same SQLite module as hlmem (sqlean when installed). Never open the file with a
    *different* SQLite library in the same process: POSIX locks are per process, so when the
    other library closes its file descriptor it drops hlmem's locks too, may checkpoint and
    delete the WAL under hlmem, and writes get lost. Other processes may use any library.
    """
    return sqlite_module("auto").connect(str(path), isolation_level=None)


def rows(db: Path, sql: str, params: Any = ()) -> list[tuple[Any, ...]]:
    conn = connect_raw(db)
    try:
        return [tuple(r) for r in conn.execute(sql, params).fetchall()]
    finally:
        conn.close()


def scalar(db: Path, sql: str, params: Any = ()) -> Any:
    return rows(db, sql, params)[0][0]


def count(db: Path, table: str) -> int:
    return int(scalar(db, f"SELECT count(*) FROM {table}"))


def windower_event_ids(db: Path) -> list[str]:
    """Every event id named by a windower job, in job order."""
    ids: list[str] = []
    for (payload,) in rows(db, "SELECT payload FROM jobs WHERE kind = 'windower' ORDER BY id"):
        data = json.loads(payload)
        if data["kind"] == "events_added":
            ids.extend(data["event_ids"])
    return ids


def assert_consistent(db: Path) -> None:
    """Whole events only: every event has exactly one windower job naming it, and no windower
    job names an event that is not stored, unless a forget removed it (an event tombstone: it
    was deleted, or dropped on arrival as forgotten; a re-sent forgotten id is named again)."""
    stored = {r[0] for r in rows(db, "SELECT id FROM events")}
    forgotten = {r[0] for r in rows(db, "SELECT key FROM tombstones WHERE kind = 'event'")}
    referenced = windower_event_ids(db)
    live = [e for e in referenced if e not in forgotten]
    assert len(live) == len(set(live)), "an event is in two windower jobs"
    assert stored <= set(referenced)
    assert set(referenced) - stored <= forgotten
    assert not stored & forgotten, "a forgotten event is stored"


async def wait_until(
    predicate: Callable[[], Any], *, timeout_s: float = 20.0, poll_s: float = 0.01
) -> None:
    """Poll ``predicate`` (state in the database file, or set by other tasks) until it holds."""
    with anyio.fail_after(timeout_s):
        while not predicate():  # noqa: ASYNC110 - state lives in another connection/process
            await anyio.sleep(poll_s)


async def step(mem: Memory, stage: Stage[Any], limit: int = 1000) -> int:
    """Claim up to ``limit`` jobs and run them through ``stage`` the way StageRunner does."""
    jobs = await mem.queue.claim(stage.name, limit)
    if not jobs:
        return 0
    prepared = await stage.prepare(jobs)
    await apply(mem, stage, jobs, prepared, complete=True)
    return len(jobs)


async def apply(
    mem: Memory, stage: Stage[Any], jobs: list[Job], prepared: Any, *, complete: bool = False
) -> list[JobSpec]:
    """``stage.apply`` in one transaction on the writer thread, as StageRunner runs it; the
    outputs are enqueued, and with ``complete`` the jobs completed."""

    def write(tx: SyncTx) -> list[JobSpec]:
        outputs = stage.apply(tx, jobs, prepared)
        if complete:
            mem.queue.complete_sync(tx, jobs)
        mem.queue.enqueue_sync(tx, outputs)
        return outputs

    outputs = await mem.store.run_in_transaction(write)
    mem.queue.ring({o.kind for o in outputs})
    return outputs


def claim_items(result: RecallResult) -> list[RecallItem]:
    """The claims of a recall result, best first."""
    return [i for i in result.items if i.kind == "claim"]


def python_lines(code: str) -> list[str]:
    """The lines ``code`` prints, run by this Python in a fresh process (what a new process
    imports or loads, untouched by this test session's imports)."""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    return done.stdout.splitlines()


#: the time vector rows written by :func:`put_vectors` carry
VECTOR_ROW_TIME = "2026-01-01T00:00:00.000000+00:00"


async def put_vectors(
    store: Store, rows: Iterable[tuple[str, str, str | None, Any]], *, model: str, version: str
) -> None:
    """Write vector rows (owner kind, owner id, namespace, vector) of one model, one
    transaction, as the embedder stage's upsert does."""
    params = [
        (
            kind,
            owner,
            ns,
            model,
            version,
            int(vec.shape[0]),
            vec.astype("<f4").tobytes(),
            VECTOR_ROW_TIME,
        )
        for kind, owner, ns, vec in rows
    ]
    async with store.transaction() as tx:
        await tx.executemany("vector_upsert", params)
