"""Helper child processes: the frame protocol over their pipes, starting, env and reaping.

hlmem runs some work in child processes of its own (``python -m hlmem.pipeline.writer``,
``python -m hlmem.pipeline.offload``) rather than through :mod:`multiprocessing`, whose spawn and
forkserver methods re-run the user's ``__main__`` and whose fork is unsafe with threads. Both
children speak the same protocol over their stdin and stdout: frames of an 8-byte big-endian
length and a pickle of plain data (pickle, because both ends are hlmem and it is the cheapest
codec for tuples of strings; nothing else ever writes to these pipes). This module owns that
protocol and the parts of a child's lifecycle both share; what each child does, and what its
parent does when one fails, stay in their own modules.

A child exits at the end of its input, which is also what happens when its parent dies (even
by SIGKILL), and ignores SIGINT and SIGTERM (:func:`become_child`): a Ctrl-C or a process-group
SIGTERM cannot take it away while its parent still needs it.
"""

from __future__ import annotations

import contextlib
import gc
import os
import pickle
import signal
import site
import struct
import sys
from pathlib import Path
from subprocess import PIPE
from typing import Any, BinaryIO

import anyio
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

HEADER = struct.Struct("!Q")
PICKLE_PROTOCOL = pickle.HIGHEST_PROTOCOL
EXIT_GRACE_S = 5.0  # a child whose pipes broke is exiting: let it, before killing it

#: what reading from or writing to a child's pipes raises once it has gone
STREAM_ERRORS = (
    anyio.EndOfStream,
    anyio.IncompleteRead,
    anyio.BrokenResourceError,
    anyio.ClosedResourceError,
    OSError,
)


class ChildExited(Exception):
    """A child exited, or said nothing in time, before its first frame (it has been reaped)."""

    def __init__(self, exit_code: int | None) -> None:
        super().__init__(f"exit code {exit_code}")
        self.exit_code = exit_code


def frame(obj: Any) -> bytes:
    """``obj`` as one frame: its length, then its pickle."""
    payload = pickle.dumps(obj, PICKLE_PROTOCOL)
    return HEADER.pack(len(payload)) + payload


async def receive(rx: BufferedByteReceiveStream) -> Any:
    """The next frame's object, read by the parent.

    :raises anyio.EndOfStream: (or another of :data:`STREAM_ERRORS`) the child has gone.
    """
    (size,) = HEADER.unpack(await rx.receive_exactly(HEADER.size))
    return pickle.loads(await rx.receive_exactly(size))


async def spawn(
    command: list[str], *, timeout_s: float
) -> tuple[Process, BufferedByteReceiveStream, Any]:
    """Start a child with piped stdin and stdout and wait for its first frame (its hello).

    :raises OSError: it could not be started.
    :raises ChildExited: it exited, or sent nothing within ``timeout_s`` (then it is killed).
    """
    proc = await anyio.open_process(command, stdin=PIPE, stdout=PIPE, stderr=None, env=child_env())
    assert proc.stdout is not None
    rx = BufferedByteReceiveStream(proc.stdout)
    try:
        with anyio.fail_after(timeout_s):
            hello = await receive(rx)
    except (TimeoutError, *STREAM_ERRORS) as exc:
        code = await reap(proc, 0.0 if isinstance(exc, TimeoutError) else EXIT_GRACE_S)
        raise ChildExited(code) from exc
    except BaseException:
        await reap(proc)
        raise
    return proc, rx, hello


async def reap(proc: Process, grace_s: float = 0.0) -> int | None:
    """Kill ``proc`` unless it exits within ``grace_s``, close its pipes and wait for it (no
    zombie); its exit code."""
    with anyio.CancelScope(shield=True):
        if proc.returncode is None and grace_s > 0:
            with anyio.move_on_after(grace_s):
                await proc.wait()
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
        await proc.aclose()
    return proc.returncode


async def finish(proc: Process, timeout_s: float) -> int | None:
    """Close the child's input, so that it finishes and exits, then :func:`reap` it (killed
    after ``timeout_s``); its exit code."""
    with anyio.CancelScope(shield=True):
        if proc.stdin is not None:
            with contextlib.suppress(*STREAM_ERRORS):
                await proc.stdin.aclose()
        code = await reap(proc, timeout_s)
    return code


def child_env() -> dict[str, str]:
    """The parent's environment; plus the directory hlmem was imported from when that is not a
    site directory (a source checkout put on ``sys.path`` at run time)."""
    env = dict(os.environ)
    root = Path(__file__).resolve().parents[2]  # src/, above hlmem/pipeline/childio.py
    sites = {Path(p).resolve() for p in [*site.getsitepackages(), site.getusersitepackages()]}
    if root not in sites:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), env.get("PYTHONPATH")) if p)
    return env


# --- the child's side -------------------------------------------------------------------------


def become_child() -> BinaryIO:
    """Set up this process as a helper child; the stream its frames go to.

    Only end of input stops it: SIGINT and SIGTERM are ignored. Frames go to a private copy of
    stdout, and fd 1 becomes stderr, so that nothing printed by accident (by us, a library or a
    C extension) can corrupt the protocol.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return out


def settle() -> None:
    """Call once the child has loaded what it keeps: all of it lives as long as the child, so
    it leaves the collector's view (``gc.freeze``). A full collection otherwise walks the
    ~35,000-50,000 objects of the imports and tables, 20 ms here, while a commit or a batch waits
    for it (the writer child made one per 10-second open loop at 10,000 events/s)."""
    gc.collect()
    gc.freeze()


def read(inp: BinaryIO) -> Any:
    """The next request, or ``None`` at end of input (the parent closed it, or died)."""
    head = inp.read(HEADER.size)
    if len(head) < HEADER.size:
        return None
    (size,) = HEADER.unpack(head)
    payload = inp.read(size)
    if len(payload) < size:
        return None
    return pickle.loads(payload)


def send(out: BinaryIO, obj: Any) -> None:
    """Write ``obj`` as one frame and flush it."""
    out.write(frame(obj))
    out.flush()
