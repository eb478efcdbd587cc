"""Windower: groups each session's events into windows for one extraction call each.

Per (namespace, session) at most one window is open. It closes when it holds
``windower.max_events`` pieces, when an event arrives ``max_age_s`` or more after the window's
first event (recorded time), when the periodic sweep finds it that old by the injected clock,
on ``end_session`` or on an explicit flush. Content longer than ``chunk_chars`` is split into
chunks, and each chunk is a piece. All window state lives in the database and changes inside
the job-completing transaction, so open windows survive a crash as they were, and a replayed job
finds its pieces already placed (``window_items`` is unique on event and chunk) and does nothing.
Jobs are applied in job-id order, which is each session's commit order.

Several workers (``hlmem worker`` processes on one file) claim windower jobs independently, so a
flush or a session end may be applied by one worker while another still holds events acknowledged
before it. Such a batch is *late*: after placing the events of a job, it closes their windows
itself when a flush or session end with a higher job id, in scope, is already done. A flush
therefore closes every window holding events acknowledged before it, whichever worker places
them, in the same transaction that completes their job; ``drain()`` sees no job waiting and no
window the flush left open at the same moment.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from hlmem.clock import Clock, iso, parse_iso
from hlmem.config import WindowerConfig
from hlmem.jobs import JobSpec
from hlmem.lang import chunk_spans, derived_id
from hlmem.messages import (
    JOB_PAYLOAD,
    EventsAdded,
    FlushRequested,
    Job,
    JobKind,
    SessionEnded,
    WindowClosed,
)
from hlmem.stages.base import CpuHelper, Stage
from hlmem.store import SyncTx

SEP = "\x1f"


def session_key(namespace: str, session_id: str) -> str:
    return f"{namespace}{SEP}{session_id}"


@dataclass
class _Window:
    id: str
    namespace: str
    session_id: str
    key: str
    opened_at: str
    item_count: int
    stored: bool  # the row exists in the database already
    closed_at: str | None = None
    close_reason: str | None = None
    dirty: bool = False


class _Batch:
    """The windows touched by one batch of jobs, and the rows to write for them."""

    def __init__(self, cfg: WindowerConfig) -> None:
        self.cfg = cfg
        self.open: dict[str, _Window] = {}
        # insertion-ordered set of the windows touched (by identity: a window object per id)
        self._touched: dict[int, _Window] = {}
        self.items: list[tuple[str, int, str, int, int, int, int]] = []

    def load(self, rows: list[Any]) -> None:
        """Windows from ``open_windows_*`` rows."""
        # A window this batch already changed (e.g. closed by size before a flush in the same
        # batch) is still open in the database: never reload that stale copy over it.
        changed = {t.id for t in self.touched}
        for r in rows:
            w = _Window(
                r["id"],
                r["namespace"],
                r["session_id"],
                r["session_key"],
                r["opened_at"],
                r["item_count"],
                stored=True,
            )
            if w.key not in self.open and w.id not in changed:
                self.open[w.key] = w

    def close(self, key: str, reason: str, at: str) -> None:
        w = self.open.pop(key, None)
        if w is None:
            return
        w.closed_at, w.close_reason, w.dirty = at, reason, True
        self._touch(w)

    def add(
        self,
        *,
        namespace: str,
        session_id: str,
        event_id: str,
        chunk: tuple[int, int, int, int],
        recorded_at: str,
    ) -> None:
        chunk_no, chunk_count, start, end = chunk
        key = session_key(namespace, session_id)
        w = self.open.get(key)
        if w is not None and parse_iso(recorded_at) - parse_iso(w.opened_at) >= timedelta(
            seconds=self.cfg.max_age_s
        ):
            self.close(key, "age", recorded_at)
            w = None
        if w is None:
            wid = derived_id("win", key, event_id, chunk_no)
            w = self.open[key] = _Window(wid, namespace, session_id, key, recorded_at, 0, False)
        self.items.append((w.id, w.item_count, event_id, chunk_no, chunk_count, start, end))
        w.item_count += 1
        w.dirty = True
        self._touch(w)
        if w.item_count >= self.cfg.max_events:
            self.close(key, "size", recorded_at)

    def _touch(self, w: _Window) -> None:
        self._touched.setdefault(id(w), w)

    @property
    def touched(self) -> list[_Window]:
        return list(self._touched.values())

    def write(self, tx: SyncTx) -> list[JobSpec]:
        # Existing rows first (this is where a session's old window closes), then new rows with
        # their final state, so the one-open-window-per-session index never sees two.
        updates = [
            (w.item_count, "closed" if w.closed_at else "open", w.closed_at, w.close_reason, w.id)
            for w in self.touched
            if w.stored and w.dirty
        ]
        if updates:
            tx.execute("update_windows", (json.dumps(updates, ensure_ascii=False),))
        tx.executemany(
            "insert_window",
            [
                (
                    w.id,
                    w.namespace,
                    w.session_id,
                    w.key,
                    "closed" if w.closed_at else "open",
                    w.opened_at,
                    w.closed_at,
                    w.close_reason,
                    w.item_count,
                )
                for w in self.touched
                if not w.stored
            ],
        )
        tx.executemany("insert_window_item", self.items)
        return self._extraction_jobs()

    def _extraction_jobs(self) -> list[JobSpec]:
        """One extractor job per ``windows_per_job`` closed windows of a namespace, in the
        order this batch touched them. A window closes once, in the transaction that writes
        its job, so its first window's id keys the job (a replayed batch enqueues nothing
        twice)."""
        closed: dict[str, list[_Window]] = {}
        for w in self.touched:
            if w.closed_at and w.item_count:
                closed.setdefault(w.namespace, []).append(w)
        per = self.cfg.windows_per_job
        jobs = []
        for namespace, windows in closed.items():
            for start in range(0, len(windows), per):
                first, *more = windows[start : start + per]
                jobs.append(
                    JobSpec(
                        kind=JobKind.EXTRACTOR,
                        payload=WindowClosed(
                            window_id=first.id,
                            namespace=namespace,
                            session_id=first.session_id,
                            more=tuple(w.id for w in more),
                        ),
                        dedup_key=f"extract:{first.id}",
                        namespace=namespace,
                        size=1 + len(more),
                    )
                )
        return jobs


class Windower(Stage[None]):
    name = JobKind.WINDOWER
    downstream = JobKind.EXTRACTOR

    def __init__(
        self, cfg: WindowerConfig, clock: Clock, *, offloader: CpuHelper | None = None
    ) -> None:
        self.cfg = cfg
        self.clock = clock
        self.tick_interval_s = cfg.sweep_interval_s
        #: told how many events each batch brings, so that a burst starts the helper child
        #: before its windows reach the extractor
        self.offloader = offloader

    async def prepare(self, jobs: list[Job]) -> None:
        if self.offloader is not None:
            self.offloader.expect(
                sum(len(j.payload.event_ids) for j in jobs if isinstance(j.payload, EventsAdded))
            )
        return None

    def apply(self, tx: SyncTx, jobs: list[Job], prepared: None) -> list[JobSpec]:
        ids = json.dumps(
            [e for j in jobs if isinstance(j.payload, EventsAdded) for e in j.payload.event_ids]
        )
        info = {r["id"]: r for r in tx.fetchall("events_for_windowing", (ids,))}
        long_ids = [eid for eid, r in info.items() if r["n_chars"] > self.cfg.chunk_chars]
        contents = (
            {r["id"]: r["content"] for r in tx.fetchall("event_contents", (json.dumps(long_ids),))}
            if long_ids
            else {}
        )
        placed = {(r["event_id"], r["chunk_no"]) for r in tx.fetchall("windowed_pieces", (ids,))}
        keys = {session_key(r["namespace"], r["session_id"]) for r in info.values()} | {
            session_key(j.payload.namespace, j.payload.session_id)
            for j in jobs
            if isinstance(j.payload, SessionEnded)
        }
        batch = _Batch(self.cfg)
        batch.load(tx.fetchall("open_windows_for_keys", (json.dumps(sorted(keys)),)))
        now = iso(self.clock.now())
        late = _controls_done_after(tx, jobs)
        for job in jobs:
            payload = job.payload
            if isinstance(payload, EventsAdded):
                sessions = self._place(batch, payload, info, contents, placed)
                _close_late(batch, job.id, sessions, late, now)
            elif isinstance(payload, SessionEnded):
                batch.close(session_key(payload.namespace, payload.session_id), "session_end", now)
                tx.execute("end_session", (now, payload.namespace, payload.session_id))
            elif isinstance(payload, FlushRequested):
                scope = {"namespace": payload.namespace, "session_id": payload.session_id}
                batch.load(tx.fetchall("open_windows_in_scope", scope))
                for key in [k for k, w in batch.open.items() if _in_scope(w, payload)]:
                    batch.close(key, "flush", now)
        return batch.write(tx)

    def _place(
        self,
        batch: _Batch,
        payload: EventsAdded,
        info: dict[str, Any],
        contents: dict[str, str],
        placed: set[tuple[str, int]],
    ) -> dict[str, tuple[str, str]]:
        """Add the pieces of ``payload``'s events not placed yet; the sessions they went to,
        by session key."""
        sessions: dict[str, tuple[str, str]] = {}
        for event_id in payload.event_ids:
            row = info.get(event_id)
            if row is None:  # forgotten before it was windowed
                continue
            text = contents.get(event_id)
            spans = (
                [(0, row["n_chars"])] if text is None else chunk_spans(text, self.cfg.chunk_chars)
            )
            namespace, session_id = row["namespace"], row["session_id"]
            for no, (start, end) in enumerate(spans):
                if (event_id, no) not in placed:
                    batch.add(
                        namespace=namespace,
                        session_id=session_id,
                        event_id=event_id,
                        chunk=(no, len(spans), start, end),
                        recorded_at=row["recorded_at"],
                    )
                    sessions[session_key(namespace, session_id)] = (namespace, session_id)
        return sessions

    def tick(self, tx: SyncTx, now: datetime) -> list[JobSpec]:
        """Close windows whose first event is ``max_age_s`` old by the injected clock."""
        cutoff = iso(now - timedelta(seconds=self.cfg.max_age_s))
        rows = tx.fetchall("open_windows_due", (cutoff,))
        if not rows:
            return []
        batch = _Batch(self.cfg)
        batch.load(rows)
        for key in list(batch.open):
            batch.close(key, "age", iso(now))
        return batch.write(tx)


def _in_scope(w: _Window, flush: FlushRequested) -> bool:
    return _covers(flush, w.namespace, w.session_id)


def _covers(control: FlushRequested | SessionEnded, namespace: str, session_id: str) -> bool:
    if isinstance(control, SessionEnded):
        return control.namespace == namespace and control.session_id == session_id
    return (control.namespace is None or namespace == control.namespace) and (
        control.session_id is None or session_id == control.session_id
    )


_Control = tuple[int, FlushRequested | SessionEnded]


def _controls_done_after(tx: SyncTx, jobs: list[Job]) -> list[_Control]:
    """The flushes and session ends other workers applied after this batch's oldest events job
    was enqueued (by job id), oldest first: none unless the batch is late."""
    first = min((j.id for j in jobs if isinstance(j.payload, EventsAdded)), default=None)
    if first is None:
        return []
    out: list[_Control] = []
    for r in tx.fetchall("windower_controls_done_after", (first,)):
        payload = JOB_PAYLOAD.validate_json(r["payload"])
        if isinstance(payload, FlushRequested | SessionEnded):
            out.append((int(r["id"]), payload))
    return out


def _close_late(
    batch: _Batch, job_id: int, sessions: dict[str, tuple[str, str]], late: list[_Control], at: str
) -> None:
    """Close the windows of ``sessions`` (the events job ``job_id`` just placed) that a flush or
    session end enqueued after that job, and already applied elsewhere, was asked to close."""
    for control_id, control in late:
        if control_id < job_id:
            continue
        reason = "session_end" if isinstance(control, SessionEnded) else "flush"
        for key, (namespace, session_id) in sessions.items():
            if _covers(control, namespace, session_id):
                batch.close(key, reason, at)
