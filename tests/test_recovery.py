"""Crash recovery with real processes killed by SIGKILL.

1. ``test_ingest_survives_repeated_sigkill``: ``tests/ingest_driver.py`` ingests the 2,500-event,
   50-session corpus (Chinese and English, explicit "记住：…" / "remember that …" requests) with
   the pipeline inline and is SIGKILLed at four points; each restart re-sends everything (stored
   ids are no-ops); a last run completes, then ``hlmem worker --drain --flush``. The result must
   equal a clean run of the same input: same events once each, same windows with the same items,
   every closed window extracted exactly once, same claims and evidence, no job left behind.
2. ``test_killed_worker_backlog_finishes_exactly_once``: a ``hlmem worker`` is SIGKILLed while it
   processes a backlog ingested with ``pipeline="external"``; a second ``worker --drain`` must
   take the dead worker's leased jobs back at once (leases last an hour here, far past the
   timeout) and finish the work exactly once, equal to an uninterrupted worker on a copy.

The database files are read with the stdlib ``sqlite3`` module only; hlmem runs only in the
children. Config goes to the children as ``HLMEM_*`` variables: a huge ``windower.max_age_s``
so time never closes a window (runs of different speed must produce the same windows), and
huge leases and recovery intervals so that only the recovery of a dead owner's jobs at start
can explain a finished run.
"""

from __future__ import annotations

import shutil
import sqlite3
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from ingest_driver import Child, child_env, corpus

from hlmem.messages import WindowClosed

# Sessions of ~50 events as in the driver's default corpus, half as many of them: each kill
# still lands while the pipeline runs (asserted: leased jobs, open windows), at the same points
# of the run, and the comparison with a clean run is the same; the children run half as long.
N_SESSIONS = 50
N_EVENTS = 2500
CORPUS = ("--mode", "corpus", "--sessions", str(N_SESSIONS), "--events", str(N_EVENTS))
#: acknowledgements seen in a run before it is killed (each run re-sends from the start)
KILL_AFTER_ACKS = (500, 1100, 1700, 2300)
RUN_TIMEOUT_S = 60

ENV = child_env(
    windower__max_age_s=100000,
    pipeline__lease_s=3600,
    pipeline__recovery_interval_s=3600,
    pipeline__poll_interval_s=0.02,
)

pytestmark = pytest.mark.slow


@contextmanager
def raw(db: Path) -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(db, timeout=10, isolation_level=None)
    try:
        yield conn
    finally:
        conn.close()


def expected_events() -> dict[str, tuple[str, str, str, str]]:
    return {
        ev.event_id: (ev.namespace, ev.session_id, ev.role, ev.content)
        for events in corpus(N_SESSIONS, N_EVENTS)
        for ev in events
    }


# --- running the children -----------------------------------------------------------------------


def run_driver_to_end(db: Path, logs: Path, *args: str) -> None:
    child = Child.driver(db, *CORPUS, *args, env=ENV, log=logs / "driver.log")
    rc = child.wait(RUN_TIMEOUT_S)
    assert rc == 0, child.stderr()
    assert child.lines[-1] == "done"


def run_worker(db: Path, logs: Path, *args: str) -> None:
    child = Child.hlmem(db, "worker", "--drain", *args, env=ENV, log=logs / "worker.log")
    rc = child.wait(RUN_TIMEOUT_S)
    assert rc == 0, child.stderr()


@dataclass(frozen=True)
class KillPoint:
    acks: int
    events: int
    doing_jobs: int
    open_windows: int


def kill_driver_after(db: Path, logs: Path, acks: int) -> KillPoint:
    child = Child.driver(db, *CORPUS, env=ENV, log=logs / "driver.log")
    try:
        child.wait_for_acks(acks, timeout=RUN_TIMEOUT_S)
    finally:
        child.kill()
    assert child.proc.returncode == -9, child.stderr()
    assert "done" not in child.lines, "the run finished before it was killed"
    with raw(db) as conn:
        events = conn.execute("SELECT id FROM events").fetchall()
        doing = conn.execute("SELECT count(*) FROM jobs WHERE status = 'doing'").fetchone()[0]
        open_windows = conn.execute(
            "SELECT count(*) FROM windows WHERE status = 'open'"
        ).fetchone()[0]
    # Every session's producer sends in order and waits for each acknowledgement, so what a
    # session has stored is always a prefix of its events.
    per_session: dict[str, set[int]] = defaultdict(set)
    for (event_id,) in events:
        _, s, n = event_id.split("-")
        per_session[s].add(int(n))
    for s, numbers in per_session.items():
        assert numbers == set(range(len(numbers))), f"session {s}: stored events not a prefix"
    assert set(child.acks) <= {e[0] for e in events}, "an acknowledged event was lost"
    return KillPoint(acks, len(events), doing, open_windows)


# --- reading the result -------------------------------------------------------------------------


@dataclass(frozen=True)
class Snapshot:
    events: dict[str, tuple[Any, ...]]
    windows: dict[str, tuple[Any, ...]]
    items: dict[str, tuple[tuple[Any, ...], ...]]
    extractions: dict[str, tuple[Any, ...]]
    claims: dict[str, tuple[Any, ...]]
    evidence: list[tuple[Any, ...]]
    jobs: Counter[tuple[str, str]]
    extracted_by_jobs: Counter[str]  # window id -> extractor jobs naming it
    extraction_count: int
    event_count: int


def snapshot(db: Path) -> Snapshot:
    with raw(db) as c:
        events = c.execute("SELECT id, namespace, session_id, role, content FROM events").fetchall()
        windows = c.execute(
            "SELECT id, namespace, session_id, status, close_reason, item_count FROM windows"
        ).fetchall()
        items: dict[str, list[tuple[Any, ...]]] = defaultdict(list)
        for row in c.execute(
            "SELECT window_id, pos, event_id, chunk_no, chunk_count, start_char, end_char"
            " FROM window_items ORDER BY window_id, pos"
        ):
            items[row[0]].append(tuple(row[1:]))
        extractions = c.execute(
            "SELECT window_id, extractor, claim_count FROM extractions"
        ).fetchall()
        claims = c.execute(
            "SELECT id, namespace, subject, predicate, value, text, language, status, window_id"
            " FROM claims"
        ).fetchall()
        evidence = c.execute(
            "SELECT claim_id, event_id, quote, start_char, end_char FROM evidence"
            " ORDER BY claim_id, event_id"
        ).fetchall()
        jobs = Counter(
            {
                (k, s): n
                for k, s, n in c.execute(
                    "SELECT kind, status, count(*) FROM jobs GROUP BY kind, status"
                )
            }
        )
        # a job names its first window and the windows closed with it (windows_per_job)
        extracted_by_jobs = Counter(
            window_id
            for (payload,) in c.execute("SELECT payload FROM jobs WHERE kind = 'extractor'")
            for window_id in WindowClosed.model_validate_json(payload).window_ids
        )
    return Snapshot(
        events={r[0]: tuple(r[1:]) for r in events},
        windows={r[0]: tuple(r[1:]) for r in windows},
        items={k: tuple(v) for k, v in items.items()},
        extractions={r[0]: tuple(r[1:]) for r in extractions},
        claims={r[0]: tuple(r[1:]) for r in claims},
        evidence=evidence,
        jobs=jobs,
        extracted_by_jobs=extracted_by_jobs,
        extraction_count=len(extractions),
        event_count=len(events),
    )


def check_complete(snap: Snapshot, expected: dict[str, tuple[str, str, str, str]]) -> None:
    """Invariants of a fully processed file, whatever happened on the way."""
    # events: exactly the input, each once
    assert snap.event_count == len(snap.events) == len(expected)
    missing = expected.keys() - snap.events.keys()
    assert not missing, f"{len(missing)} events missing, e.g. {sorted(missing)[:5]}"
    wrong = [e for e in expected if snap.events[e] != expected[e]]
    assert not wrong, f"{len(wrong)} events stored differently, e.g. {wrong[:5]}"
    # jobs: nothing waiting, running, failed or parked
    assert {status for _, status in snap.jobs} == {"done"}, dict(snap.jobs)
    # windows: all closed, items numbered 0..n-1, every piece of every event in exactly one
    not_closed = [w for w, v in snap.windows.items() if v[2] != "closed"]
    assert snap.windows and not not_closed, f"{len(not_closed)} windows not closed"
    assert set(snap.items) == set(snap.windows)
    pieces: Counter[tuple[str, int]] = Counter()
    for wid, items in snap.items.items():
        assert [i[0] for i in items] == list(range(len(items))), wid
        assert snap.windows[wid][4] == len(items), wid
        for _, event_id, chunk_no, chunk_count, _, _ in items:
            assert 0 <= chunk_no < chunk_count
            pieces[(event_id, chunk_no)] += 1
    twice = [p for p, n in pieces.items() if n > 1]
    assert not twice, f"pieces in more than one window: {twice[:5]}"
    unwindowed = set(expected) - {e for e, _ in pieces}
    assert not unwindowed, f"{len(unwindowed)} events in no window, e.g. {sorted(unwindowed)[:5]}"
    assert any(chunk_no > 0 for _, chunk_no in pieces), "long events are split into chunks"
    # Each session's pieces went into its windows in sending order: every window is a contiguous
    # run; all but the session's last closed by size (time never closes one here), the last by
    # size or by the final flush.
    by_session: dict[str, list[tuple[list[tuple[int, int]], tuple[str, int]]]] = defaultdict(list)
    for wid, items in snap.items.items():
        _, session, _, reason, count = snap.windows[wid]
        runs = [(int(i[1].rsplit("-", 1)[1]), i[2]) for i in items]  # (event number, chunk)
        by_session[session].append((runs, (reason, count)))
    for session, windows in by_session.items():
        windows.sort()
        flat = [piece for runs, _ in windows for piece in runs]
        assert flat == sorted(flat), f"{session}: pieces windowed out of sending order"
        reasons = [r for _, r in windows]
        assert all(r == ("size", 5) for r in reasons[:-1]), f"{session}: {reasons}"
        assert reasons[-1] == ("size", 5) or (reasons[-1][0] == "flush" and reasons[-1][1] < 5)
    # extraction: every closed window exactly once, by exactly one extractor job
    assert snap.extraction_count == len(snap.extractions) == len(snap.windows)
    assert set(snap.extractions) == set(snap.windows)
    assert snap.extracted_by_jobs == Counter(list(snap.windows)), "a window in no job or in two"
    # claims and evidence: no duplicates, every claim backed by an event of its window
    assert len(snap.evidence) == len({(e[0], e[1]) for e in snap.evidence})
    assert sum(x[1] for x in snap.extractions.values()) == len(snap.claims)
    window_events = {wid: {i[1] for i in items} for wid, items in snap.items.items()}
    backed = set()
    for claim_id, event_id, quote, start, end in snap.evidence:
        assert claim_id in snap.claims
        assert event_id in window_events[snap.claims[claim_id][7]]
        assert quote.strip() and 0 <= start < end
        backed.add(claim_id)
    assert backed == set(snap.claims)
    languages = Counter(c[5] for c in snap.claims.values())
    assert languages["zh"] > 100 and languages["en"] > 100, languages


def _same(name: str, got: dict[str, Any], want: dict[str, Any]) -> None:
    only_got, only_want = got.keys() - want.keys(), want.keys() - got.keys()
    assert not only_got and not only_want, (
        f"{name}: {len(only_got)} extra, e.g. {sorted(only_got)[:3]}; "
        f"{len(only_want)} missing, e.g. {sorted(only_want)[:3]}"
    )
    diff = sorted(k for k in want if got[k] != want[k])
    if diff:
        k = diff[0]
        raise AssertionError(f"{name}: {len(diff)} differ, e.g. {k}: {got[k]} != {want[k]}")


def assert_same_result(got: Snapshot, want: Snapshot) -> None:
    _same("events", got.events, want.events)
    _same("windows", got.windows, want.windows)
    _same("window items", got.items, want.items)
    _same("extractions", got.extractions, want.extractions)
    _same("claims", got.claims, want.claims)
    _same("extractor jobs", dict(got.extracted_by_jobs), dict(want.extracted_by_jobs))
    assert got.evidence == want.evidence


# --- the tests ----------------------------------------------------------------------------------


def test_ingest_survives_repeated_sigkill(tmp_path: Path) -> None:
    expected = expected_events()
    assert len(expected) == N_EVENTS
    assert len({v[1] for v in expected.values()}) == N_SESSIONS

    clean_db, crash_db = tmp_path / "clean.db", tmp_path / "crash.db"
    run_driver_to_end(clean_db, tmp_path)
    run_worker(clean_db, tmp_path, "--flush")
    clean = snapshot(clean_db)
    check_complete(clean, expected)

    points = [kill_driver_after(crash_db, tmp_path, k) for k in KILL_AFTER_ACKS]
    counts = [p.events for p in points]
    assert counts == sorted(set(counts)) and counts[-1] < N_EVENTS, points
    # A kill in the middle of pipeline work leaves jobs leased to the dead process (and open
    # windows); the next run must take them back at once.
    assert sum(p.doing_jobs for p in points) > 0, points
    assert any(p.open_windows > 0 for p in points), points
    run_driver_to_end(crash_db, tmp_path)
    run_worker(crash_db, tmp_path, "--flush")

    crashed = snapshot(crash_db)
    check_complete(crashed, expected)
    assert_same_result(crashed, clean)


def _copy_db(src: Path, dst: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        if Path(f"{src}{suffix}").exists():
            shutil.copyfile(f"{src}{suffix}", f"{dst}{suffix}")


def test_killed_worker_backlog_finishes_exactly_once(tmp_path: Path) -> None:
    expected = expected_events()
    db, ref_db = tmp_path / "memory.db", tmp_path / "reference.db"
    run_driver_to_end(db, tmp_path, "--pipeline", "external")
    with raw(db) as conn:
        assert conn.execute("SELECT count(*) FROM windows").fetchone() == (0,)
        backlog = conn.execute("SELECT count(*) FROM jobs WHERE status = 'todo'").fetchone()[0]
    assert backlog > 0
    _copy_db(db, ref_db)

    # The reference: one uninterrupted worker on a copy of the same backlog.
    run_worker(ref_db, tmp_path, "--flush")
    reference = snapshot(ref_db)
    check_complete(reference, expected)
    n_windows = len(reference.windows)

    # Kill the worker while it holds leases, part way through the extractions. Smaller extractor
    # batches than the reference's stretch the extraction phase (and must not change results).
    env = {**ENV, "HLMEM_PIPELINE__EXTRACTOR__BATCH_SIZE": "8"}
    worker = Child.hlmem(db, "worker", "--drain", "--flush", env=env, log=tmp_path / "worker.log")
    owner = f"%:{worker.proc.pid}:%"
    try:
        with raw(db) as conn:
            deadline = time.monotonic() + RUN_TIMEOUT_S
            while time.monotonic() < deadline:
                assert worker.proc.poll() is None, f"worker exited early:\n{worker.stderr()}"
                extracted, doing = conn.execute(
                    "SELECT (SELECT count(*) FROM extractions),"
                    " (SELECT count(*) FROM jobs WHERE status = 'doing' AND owner LIKE ?)",
                    (owner,),
                ).fetchone()
                if extracted >= n_windows // 4 and doing > 0:
                    break
                time.sleep(0.005)
            else:
                raise AssertionError("the worker never got a quarter through")
    finally:
        worker.kill()
    assert worker.proc.returncode == -9

    with raw(db) as conn:
        orphaned = conn.execute(
            "SELECT count(*) FROM jobs WHERE status = 'doing' AND owner LIKE ?", (owner,)
        ).fetchone()[0]
        extracted = conn.execute("SELECT count(*) FROM extractions").fetchone()[0]
    assert orphaned > 0, "the kill left no leased job behind"
    assert 0 < extracted < n_windows

    run_worker(db, tmp_path)
    got = snapshot(db)
    check_complete(got, expected)
    assert_same_result(got, reference)
