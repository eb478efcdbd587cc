"""The WAL's checkpoints, off the commit path: :class:`Checkpointer`.

Used by the store's writer connection (:class:`hlmem.store.db.Store`) and by the ingest writer
child (:mod:`hlmem.pipeline.writer`); each runs its writer with ``wal_autocheckpoint = 0``.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any

log = logging.getLogger(__name__)

CHECKPOINT_INTERVAL_S = 0.1  # WAL checkpoints run at most this often, off the commit path
CATCH_UP_PASSES = 32  # checkpoints back to back before the writer's catch-up (Checkpointer)
#: frames the WAL may hold past ``restart_frames`` before the writer checkpoints by itself:
#: what this thread lets pass while it keeps up (at the fastest commit rates measured, ~40 MiB
#: of WAL a second, its 0.1 s interval and passes come to a few MiB) never reaches it
LIMIT_SLACK_FRAMES = 4096
WAL_HEADER_BYTES, FRAME_HEADER_BYTES = 32, 24  # SQLite's WAL file format


class Checkpointer(threading.Thread):
    """Checkpoints the WAL on its own connection, so that no commit waits for a checkpoint
    (the store's writer connection and the ingest writer child both use one).

    With SQLite's default automatic checkpoint, the commit that takes the WAL past 1,000 pages
    copies them into the database before it returns: at high rates that is one commit in a few,
    and it sets the tail of ack latency (measured on 150-row commits: p90/p99 13/20 ms with it,
    7/8 ms without; p50 5 ms either way). The writer connection therefore runs with
    ``wal_autocheckpoint = 0`` and nudges this thread after each commit; the thread runs a
    ``PASSIVE`` checkpoint (never blocks the writer or readers) at most every
    ``CHECKPOINT_INTERVAL_S``. The GIL is released while SQLite works.

    A checkpoint alone never shortens the WAL: SQLite starts writing it from its beginning
    again only in a write transaction that began when every frame had been copied, and under a
    steady stream of commits one always lands while the checkpoint runs (measured: 160 MiB of
    WAL after 4 s at ~10,000 events/s, growing without end; every checkpoint then fsyncs the
    database amid the writer's commits). So once the WAL holds ``restart_frames`` frames
    (``store.wal_restart_frames``), the writer calls :meth:`catch_up` before its next
    ``BEGIN``: a checkpoint on the writer's own connection copies the few frames committed
    since this thread's (no commit can land in between), and the transaction that follows
    restarts the WAL, unless a reader still holds an older snapshot (then a later one does).

    That catch-up stalls the writer for as long as it takes, so this thread first makes it
    small. A checkpoint syncs the WAL before it copies, but SQLite syncs the database only
    after a checkpoint that copied every frame, which under a stream of commits a single pass
    rarely does (one always lands meanwhile): the catch-up's syncs then wrote back every page
    the earlier checkpoints had copied. So when the WAL is due a restart, this thread
    checkpoints again, back to back (each pass copies what landed during the last), until a
    pass finds nothing new: the one before it copied every frame, and SQLite synced the
    database after it (at most ``CATCH_UP_PASSES`` passes). Measured at ~10,000 events/s
    into a growing file: the catch-up took 5 ms at first and 13 ms after 10 s, nearly all of
    it in those syncs, every ~0.33 s; with the extra passes, 1-3 ms.

    All that holds while this thread gets CPU. On a busy machine it can be late by seconds
    (the WAL reached 49 MB of a 32 MiB bound in a test), so the bound is the writer's own:
    before each transaction it looks at the WAL file (:meth:`due`, one ``stat``), and once that
    passes ``limit_bytes`` (``limit_frames``: ``restart_frames + LIMIT_SLACK_FRAMES`` unless
    given) it catches up whatever this thread is doing, after this thread's pass in flight if
    one is (two checkpoints cannot run at once). Its catch-up sets ``journal_size_limit`` on the
    writer's connection, so the transaction that starts the WAL over also cuts the file back to
    the limit: the file's size is then the WAL's, and never more than the limit plus one
    transaction's pages (unless a reader's older snapshot keeps the WAL from starting over;
    each transaction tries again).
    """

    def __init__(self, conn: Any, restart_frames: int, *, limit_frames: int | None = None) -> None:
        super().__init__(name="hlmem-checkpointer", daemon=True)
        self._conn = conn
        self.restart_frames = restart_frames
        page = int(conn.execute("PRAGMA page_size").fetchone()[0])
        frames = restart_frames + LIMIT_SLACK_FRAMES if limit_frames is None else limit_frames
        self.limit_bytes = WAL_HEADER_BYTES + frames * (page + FRAME_HEADER_BYTES)
        databases = conn.execute("PRAGMA database_list").fetchall()  # (seq, name, file)
        self._wal = next(str(file) for _, name, file in databases if name == "main") + "-wal"
        self._pass = threading.Lock()  # one checkpoint at a time: this thread's or the writer's
        self._due = threading.Event()
        self._stopping = threading.Event()
        self.restart_due = False  # set here, cleared by the writer's catch_up
        self.caught_up = 0  # catch-ups that copied every frame (the WAL then restarts)
        # frames copied: of the WAL, as of this thread's last pass; by this thread, in all;
        # by the writer's catch-ups this thread asked for, in all (what the extra passes keep
        # small); by the catch-ups the writer ran itself as the WAL passed limit_bytes
        self.copied = self.copied_here = self.catch_up_frames = self.forced_frames = 0
        self.forced = 0  # catch-ups the writer ran itself

    def nudge(self) -> None:
        self._due.set()

    def due(self) -> bool:
        """Whether the writer's next :meth:`catch_up` has work: this thread asked for it, or the
        WAL file has passed ``limit_bytes``."""
        return self.restart_due or self._wal_bytes() > self.limit_bytes

    def _wal_bytes(self) -> int:
        try:
            return os.stat(self._wal).st_size
        except FileNotFoundError:
            return 0

    def catch_up(self, conn: Any) -> None:
        """On the writer's connection (its thread), outside a transaction, before ``BEGIN``:
        when the WAL is due a restart (:meth:`due`), checkpoint what this thread has not copied
        yet, so that the next transaction starts the WAL over."""
        asked = self.restart_due
        if not asked and self._wal_bytes() <= self.limit_bytes:
            return
        self.restart_due = False
        self.forced += 0 if asked else 1
        try:
            conn.execute(f"PRAGMA journal_size_limit = {self.limit_bytes}")
            with self._pass:
                busy, frames, copied = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        except Exception as exc:  # asked again before the next transaction, or by this thread
            log.warning("checkpoint failed: %s", exc, extra={"action": "checkpoint_failed"})
            return
        if not busy and frames == copied:
            self.caught_up += 1
        mine = max(0, frames - self.copied)  # 0 if the WAL started over
        if asked:
            self.catch_up_frames += mine
        else:
            self.forced_frames += mine

    def stop(self) -> None:
        """End the thread and close its connection (also of a checkpointer never started)."""
        self._stopping.set()
        self._due.set()
        if self.ident is None:
            self._conn.close()
            return
        self.join()

    def run(self) -> None:
        try:
            while True:
                self._due.wait()
                if self._stopping.is_set():
                    return
                self._due.clear()
                try:
                    self.restart_due = self._checkpoint()
                except Exception as exc:  # the next nudge tries again
                    log.warning("checkpoint failed: %s", exc, extra={"action": "checkpoint_failed"})
                if self._stopping.wait(CHECKPOINT_INTERVAL_S):
                    return
        finally:
            self._conn.close()

    def _checkpoint(self) -> bool:
        """A passive checkpoint; when the WAL is due a restart, more of them, until a pass
        finds nothing new to copy. Whether the writer should catch up (the WAL still holds
        ``restart_frames``)."""
        frames, copied = self._passive()
        for _ in range(CATCH_UP_PASSES - 1):
            if frames < self.restart_frames:
                return False  # not due, or the WAL started over meanwhile
            before = copied
            frames, copied = self._passive()
            if frames == copied == before:
                break  # the last pass copied every frame, so SQLite synced the database
        return frames >= self.restart_frames

    def _passive(self) -> tuple[int, int]:
        with self._pass:
            _, frames, copied = self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        self.copied_here += copied - self.copied if copied >= self.copied else copied  # restarted
        self.copied = copied
        return int(frames), int(copied)
