"""Group commits in a writer child process (``ingest.writer = "process"``).

In the default mode (``"thread"``) the group commit runs on aiosqlite's writer thread. That
thread shares the GIL with the event loop, and it must take the GIL back after every SQLite
statement of a commit; at high rates the loop is busy with producers and each hand-back can
wait a whole switch interval, so a commit that needs ~5 ms of work takes 30-45 ms. Here the
same transaction runs in a child process (``python -m hlmem.pipeline.writer DB_PATH``) with its
own interpreter, GIL and connection, so SQLite work never waits on the event loop.

The child does what the thread does: :func:`hlmem.pipeline.group_commit.write_group` through
:class:`hlmem.store.db.SyncTx` inside ``BEGIN IMMEDIATE … COMMIT``
(:func:`hlmem.store.db.transact_sync`), on a connection opened by
:func:`hlmem.store.db.connect_sync` with the same SQLite module and pragmas as the parent's store.
Two things differ, both for speed and neither visible in the file: the rows are bound row by row
(``transact_sync(json_rows=False)``; the JSON-array insert exists only to spare the thread GIL
hand-backs, and costs SQLite ~3x more), and WAL checkpoints run on a second connection in a thread
of the child instead of inside whichever commit crosses 1,000 pages
(:class:`hlmem.store.wal.Checkpointer`, as in the parent's store). The parent resolves its
submitters' futures only after the child's reply, so an acknowledged event is still durable. The
child is the only *ingest* writer; the pipeline's transactions keep using the store's writer
connection in the parent, and SQLite's ``BEGIN IMMEDIATE`` plus ``busy_timeout`` serialise the two
processes.

Protocol, over the child's stdin and stdout: the frames of :mod:`hlmem.pipeline.childio` (a length
and a pickle of plain tuples).

- child -> parent, once: ``("ready", pid, driver, sqlite_version)``, or
  ``("error", class_name, message)`` when the database cannot be opened (then it exits 1).
- parent -> child, per group commit: ``(groups, now, recorded, count)`` — the prepared
  ``EventRow`` tuples of each submission, the job timestamp, the group's recorded time (ISO),
  and whether to count the backlog.
- child -> parent, per group commit: ``("ok", (results, backlog))`` — ``(event id,
  was_duplicate, blocked)`` per row in submission order (``blocked``: ``None``, or the
  ``(tombstone kind, time)`` of the forget that dropped it), and the backlog count read in the
  same transaction (``None`` when not asked) — or ``("error", class_name, message)`` after a
  rollback.

Lifecycle. The parent starts the child before the committer accepts work and closes its stdin
on shutdown: the child exits on end of input, which is also what happens when the parent dies
(even by SIGKILL). The child ignores SIGINT and SIGTERM, so a Ctrl-C or a process-group SIGTERM
cannot take it away while its parent is still committing what is pending. When the child dies,
the group whose reply is missing fails with :class:`~hlmem.errors.StoreError` (its events may
or may not be stored: send them again, their event ids make that safe); the next group starts
a fresh child. A group that could not even be sent whole is sent once more to a fresh child.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
from functools import partial
from pathlib import Path
from typing import Any, BinaryIO

import anyio
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

from hlmem.config import StoreConfig
from hlmem.errors import ImmutableEvent, SchemaError, StoreBusy, StoreError
from hlmem.pipeline.childio import (
    EXIT_GRACE_S,
    STREAM_ERRORS,
    ChildExited,
    become_child,
    finish,
    frame,
    read,
    reap,
    receive,
    send,
    settle,
    spawn,
)
from hlmem.pipeline.group_commit import Outcome, write_group
from hlmem.store import Checkpointer, ErrorMap, connect_sync, sqlite_module, transact_sync

log = logging.getLogger(__name__)

START_TIMEOUT_S = 60.0  # interpreter start-up and imports, on a busy machine
CLOSE_TIMEOUT_S = 30.0  # an idle child exits at once on end of input; kill it after this

Results = list[list[Outcome]]
_REMOTE_ERRORS: dict[str, type[Exception]] = {
    cls.__name__: cls for cls in (StoreError, SchemaError, ImmutableEvent, StoreBusy)
}


def _remote_error(reply: tuple[Any, ...]) -> Exception:
    """The hlmem error for a child's ``("error", class_name, message)`` reply."""
    name, message = str(reply[1]), str(reply[2])
    cls = _REMOTE_ERRORS.get(name)
    if cls is None:
        return StoreError(f"ingest writer process: {name}: {message}")
    return cls(message)


class WriterProcess:
    """The parent's handle on the writer child: start it, commit groups through it, close it.

    One caller, one commit at a time: the :class:`~hlmem.pipeline.ingest.EventWriter` committer task
    calls ``commit`` and, once it has stopped, ``aclose`` (there is no lock: an ``anyio.Lock``
    yields to the event loop on every acquire, and at high rates that puts each commit behind
    hundreds of ready producers). A commit is shielded from cancellation like
    ``Store.run_in_transaction``: once a group is sent, its outcome is awaited.
    """

    def __init__(self, path: str | Path, cfg: StoreConfig, driver: str) -> None:
        self.path = Path(path).resolve()
        # The parent's actual module, not "auto": both processes use the same SQLite library.
        module = "sqlean" if driver == "sqlean" else "stdlib"
        self.cfg = cfg.model_copy(update={"sqlite_module": module})
        self.starts = 0
        self.exit_code: int | None = None  # of the last child that exited (and was reaped)
        self._proc: Process | None = None
        self._rx: BufferedByteReceiveStream | None = None
        self._busy = False
        self._awaiting_reply = False

    @property
    def pid(self) -> int | None:
        """The current child's pid (``None`` before start, after close, or while none runs)."""
        return None if self._proc is None else self._proc.pid

    @property
    def returncode(self) -> int | None:
        """The current child's exit code once it has exited (and been reaped), else ``None``."""
        return None if self._proc is None else self._proc.returncode

    @property
    def in_flight(self) -> bool:
        """A group has been sent to the child whole, and its reply is awaited."""
        return self._awaiting_reply

    def command(self) -> list[str]:
        return [
            sys.executable,
            "-m",
            "hlmem.pipeline.writer",
            str(self.path),
            "--store-config",
            self.cfg.model_dump_json(),
        ]

    async def start(self) -> None:
        """Start a child and wait until it has opened the database.

        :raises StoreError: it could not be started or could not open the database.
        """
        try:
            proc, rx, hello = await spawn(self.command(), timeout_s=START_TIMEOUT_S)
        except OSError as exc:
            raise StoreError(f"cannot start the ingest writer process: {exc}") from exc
        except ChildExited as exc:
            code = self.exit_code = exc.exit_code
            raise StoreError(
                f"the ingest writer process did not start (exit code {code}; see its stderr)"
            ) from exc
        if hello[0] != "ready":  # it says why, then exits
            self.exit_code = await reap(proc, EXIT_GRACE_S)
            raise _remote_error(hello)
        self._proc, self._rx = proc, rx
        self.starts += 1
        log.info(
            "ingest writer process started",
            extra={"action": "writer_process_started", "pid": proc.pid, "driver": hello[2]},
        )

    async def commit(
        self, groups: list[list[Any]], now: float, recorded: str, count: bool = True
    ) -> tuple[Results, int | None]:
        """Commit one group in the child: ``(results per submission, backlog)``; the backlog
        is ``None`` unless ``count``.

        :raises StoreError: the child died before replying (the outcome is unknown), could not
            be restarted, or the transaction failed (``StoreBusy`` and ``ImmutableEvent`` as in
            thread mode).
        """
        request = frame((groups, now, recorded, count))
        if self._busy:
            raise RuntimeError("WriterProcess.commit is not reentrant: one committer at a time")
        self._busy = True
        try:
            with anyio.CancelScope(shield=True):
                reply = await self._exchange(request)
        finally:
            self._busy = False
        if reply[0] != "ok":
            raise _remote_error(reply)
        results, backlog = reply[1]
        return results, None if backlog is None else int(backlog)

    async def _exchange(self, request: bytes) -> tuple[Any, ...]:
        for attempt in range(2):
            if self._proc is None or self._proc.returncode is not None:
                code = await self._discard()
                if code is not None:
                    log.warning(
                        "ingest writer process had exited; starting a new one",
                        extra={"action": "writer_process_restart", "exit_code": code},
                    )
                await self.start()
            proc, rx = self._proc, self._rx
            assert proc is not None and proc.stdin is not None and rx is not None
            try:
                await proc.stdin.send(request)
            except STREAM_ERRORS as exc:
                # Not delivered whole, so the child never acted on it: a fresh child gets it.
                code = await self._discard()
                log.warning(
                    "ingest writer process gone before a commit was sent",
                    extra={"action": "writer_process_lost", "exit_code": code},
                )
                if attempt:
                    raise StoreError(
                        f"the ingest writer process exited (code {code}) before taking a commit"
                    ) from exc
                continue
            self._awaiting_reply = True
            try:
                reply: tuple[Any, ...] = await receive(rx)
            except STREAM_ERRORS as exc:
                code = await self._discard()
                log.error(
                    "ingest writer process died during a commit",
                    extra={"action": "writer_process_died", "exit_code": code},
                )
                raise StoreError(
                    f"the ingest writer process died (exit code {code}) before confirming a "
                    "commit: these events may or may not be stored; send them again (their "
                    "event ids make that safe)"
                ) from exc
            finally:
                self._awaiting_reply = False
            return reply
        raise AssertionError("unreachable")  # pragma: no cover

    async def _discard(self) -> int | None:
        """Reap the current child (if any), killing it unless it is exiting anyway (its pipes
        broke); its exit code."""
        proc, self._proc, self._rx = self._proc, None, None
        if proc is None:
            return None
        self.exit_code = await reap(proc, EXIT_GRACE_S)
        return self.exit_code

    async def aclose(self) -> None:
        """Let the child finish (end of input) and reap it; kill it if it does not exit."""
        if self._busy:
            raise RuntimeError("WriterProcess.aclose during a commit: close after the committer")
        proc, self._proc, self._rx = self._proc, None, None
        if proc is None:
            return
        code = self.exit_code = await finish(proc, CLOSE_TIMEOUT_S)
        if code != 0:
            log.warning(
                "ingest writer process exited with code %s",
                code,
                extra={"action": "writer_process_exit", "exit_code": code},
            )


# --- the child --------------------------------------------------------------------------------


def serve(path: Path, cfg: StoreConfig, inp: BinaryIO, out: BinaryIO) -> int:
    """Open the database, say ready, then commit every group read from ``inp`` until its end."""
    try:
        module = sqlite_module(cfg.sqlite_module)
        errors = ErrorMap(module)
        with errors.mapped():
            conn, _ = connect_sync(path, cfg, module)
            conn.execute("PRAGMA wal_autocheckpoint = 0")  # Checkpointer does it
            checkpointer = Checkpointer(
                connect_sync(path, cfg.model_copy(update={"load_vec": False}), module)[0],
                cfg.wal_restart_frames,
            )
    except Exception as exc:
        send(out, ("error", type(exc).__name__, f"cannot open {path}: {exc}"))
        return 1
    checkpointer.start()
    settle()
    try:
        send(out, ("ready", os.getpid(), module.__name__, module.sqlite_version))
        while (request := read(inp)) is not None:
            checkpointer.catch_up(conn)
            try:
                with errors.mapped():
                    result = transact_sync(conn, partial(write_group, *request), json_rows=False)
                reply: tuple[Any, ...] = ("ok", result)
            except Exception as exc:
                log.exception("group commit failed", extra={"action": "group_commit_failed"})
                reply = ("error", type(exc).__name__, str(exc))
            send(out, reply)
            checkpointer.nudge()
    except BrokenPipeError:  # the parent is gone; what was committed stays committed
        pass
    finally:
        checkpointer.stop()
        conn.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m hlmem.pipeline.writer",
        description="hlmem's ingest writer child: commits event groups sent on stdin "
        "(started by hlmem with ingest.writer = 'process'; not a command for people).",
    )
    parser.add_argument("db", type=Path, help="the database file (already migrated)")
    parser.add_argument("--store-config", default="{}", help="the [store] settings as JSON")
    args = parser.parse_args(argv)
    # Only end of input stops the child: its parent may still be committing what is pending.
    out = become_child()
    cfg = StoreConfig.model_validate_json(args.store_config)
    try:
        return serve(args.db, cfg, sys.stdin.buffer, out)
    finally:
        with contextlib.suppress(BrokenPipeError):
            out.close()


if __name__ == "__main__":
    sys.exit(main())
