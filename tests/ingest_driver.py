"""Ingest driver for the crash tests: a plain script the tests run as a subprocess and SIGKILL.

It opens the database with ``hlmem.open`` (configuration from the ``HLMEM_*`` environment the
test sets) and sends events through the public API, writing one ``ack <event_id>`` line to
stdout (flushed) for every ``add_event`` that returned, so the parent knows exactly which
events were acknowledged before it killed the process. ``ready`` is printed once the memory is
open and ``done`` once it closed cleanly.

Modes:

``corpus``
    The deterministic crash-recovery corpus (:func:`corpus`): ``--sessions`` sessions,
    ``--events`` events in all, one async producer per session sending that session's events in
    order, each with its explicit deterministic ``event_id``. Running it again re-sends
    everything; stored ids are no-ops.
``stream``
    ``--producers`` concurrent producers sending ``--count`` events in all (ids
    ``dur-PP-NNNNNN``), one ``add_event`` per event, or batches of ``--batch`` through
    ``add_events`` (an ``ack`` line per id once the batch returned). For the durability test,
    which kills it mid-stream.

The tests also import this module for :func:`corpus` and the subprocess helpers at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent

# --- the corpus ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class CorpusEvent:
    event_id: str
    namespace: str
    session_id: str
    role: str
    content: str


_TOPICS_ZH = ("猫", "数据库", "会议", "咖啡", "航班", "预算", "周报", "服务器")
_TOPICS_EN = ("cat", "database", "meeting", "coffee", "flight", "budget", "report", "server")


def _content(s: int, n: int, role: str) -> str:
    """Deterministic content: Chinese and English, explicit memory requests, some long text."""
    zh = (s + n) % 2 == 0
    topic = (_TOPICS_ZH if zh else _TOPICS_EN)[(s * 7 + n) % 8]
    if role == "user" and n % 7 == 3:
        if zh:
            return f"记住：会话{s}第{n}条的{topic}编号是{s * 1000 + n}。"
        return f"Remember that the {topic} for session {s} item {n} is number {s * 1000 + n}."
    if role == "user" and n % 11 == 5:
        # two requests in one event, one per language
        return (
            f"请记住{topic}在{s}号房间。Also, remember that item {n} of session {s} "
            f"ships on day {n % 28 + 1}."
        )
    if role == "assistant" and n % 9 == 4:
        # the assistant saying "remember" is not the user asking: no claim
        return f"Remember that I can only help with {topic}; 记住：这是助手说的，不是事实{n}。"
    if s % 10 == 7 and n % 17 == 8:
        # long content (over windower.chunk_chars = 2000): split into several pieces
        sentence = (
            f"第{n}段：关于{topic}的长篇说明，包含许多细节与背景。"
            if zh
            else f"Paragraph {n}: a long note about the {topic} with details and background. "
        )
        body = sentence * (2600 // len(sentence) + 1)
        return body + (f"记住：长文{s}-{n}的结论是可行。" if role == "user" else "")
    if zh:
        return f"会话{s}第{n}条：今天聊了{topic}，没有需要记住的事情。"
    return f"Session {s} turn {n}: we talked about the {topic}, nothing to keep."


def session_sizes(n_sessions: int, n_events: int) -> list[int]:
    """Events per session: about the average, uneven (so that some windows stay open)."""
    base, extra = divmod(n_events, n_sessions)
    sizes = [base + (1 if s < extra else 0) for s in range(n_sessions)]
    # move events between neighbours: +2, +1, 0, -1, -2 keeps the total
    if base >= 3:
        for s in range(0, n_sessions - n_sessions % 5, 5):
            sizes[s] += 2
            sizes[s + 1] += 1
            sizes[s + 3] -= 1
            sizes[s + 4] -= 2
    return sizes


def corpus(n_sessions: int = 100, n_events: int = 5000) -> list[list[CorpusEvent]]:
    """The crash-recovery input: per session, its events in sending order."""
    out = []
    for s, size in enumerate(session_sizes(n_sessions, n_events)):
        namespace = "default" if s % 4 else "ops"
        session_id = f"sess-{s:03d}"
        events = []
        for n in range(size):
            role = "user" if n % 2 == 0 else "assistant"
            events.append(
                CorpusEvent(
                    event_id=f"ev-{s:03d}-{n:04d}",
                    namespace=namespace,
                    session_id=session_id,
                    role=role,
                    content=_content(s, n, role),
                )
            )
        out.append(events)
    return out


# --- the script ---------------------------------------------------------------------------------


def _emit(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


async def _run_corpus(args: argparse.Namespace) -> None:
    import hlmem

    sessions = corpus(args.sessions, args.events)
    async with hlmem.open(args.db, config=hlmem.load_config(), pipeline=args.pipeline) as mem:
        _emit("ready")

        async def producer(events: list[CorpusEvent]) -> None:
            for ev in events:
                got = await mem.add_event(
                    ev.session_id,
                    ev.content,
                    role=ev.role,
                    event_id=ev.event_id,
                    namespace=ev.namespace,
                )
                if got != ev.event_id:
                    raise RuntimeError(f"add_event returned {got!r} for {ev.event_id!r}")
                _emit(f"ack {got}")

        async with asyncio.TaskGroup() as tg:
            for events in sessions:
                tg.create_task(producer(events))
        if args.drain:
            await mem.flush()
            await mem.drain(timeout_s=120)


async def _run_stream(args: argparse.Namespace) -> None:
    import hlmem

    async with hlmem.open(args.db, config=hlmem.load_config(), pipeline=args.pipeline) as mem:
        _emit("ready")
        per_producer = args.count // args.producers

        def event(p: int, n: int) -> dict[str, str]:
            content = f"记住：流{p}的第{n}条是{n * 7}。" if n % 5 == 0 else f"stream {p} event {n}"
            return {
                "session_id": f"dur-session-{p % 4}",
                "content": content,
                "event_id": f"dur-{p:02d}-{n:06d}",
            }

        async def producer(p: int) -> None:
            for start in range(0, per_producer, args.batch):
                batch = [event(p, n) for n in range(start, min(start + args.batch, per_producer))]
                if args.batch == 1:
                    one = batch[0]
                    ids = [
                        await mem.add_event(
                            one["session_id"], one["content"], event_id=one["event_id"]
                        )
                    ]
                else:
                    ids = await mem.add_events(batch)
                if ids != [e["event_id"] for e in batch]:
                    raise RuntimeError(f"unexpected ids {ids!r}")
                for event_id in ids:
                    _emit(f"ack {event_id}")

        async with asyncio.TaskGroup() as tg:
            for p in range(args.producers):
                tg.create_task(producer(p))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--mode", choices=["corpus", "stream"], required=True)
    parser.add_argument("--pipeline", choices=["inline", "external"], default="inline")
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--events", type=int, default=5000)
    parser.add_argument("--drain", action="store_true", help="corpus: flush and drain at the end")
    parser.add_argument("--producers", type=int, default=8)
    parser.add_argument("--count", type=int, default=1_000_000)
    parser.add_argument("--batch", type=int, default=1)
    args = parser.parse_args(argv)
    run = _run_corpus if args.mode == "corpus" else _run_stream
    asyncio.run(run(args))
    _emit("done")
    return 0


# --- helpers for the tests that drive this script -----------------------------------------------


def child_env(**settings: object) -> dict[str, str]:
    """The environment for a child: ours without any ``HLMEM_*``, plus ``settings``.

    ``settings`` maps ``SECTION__KEY`` to a value, e.g. ``WINDOWER__MAX_AGE_S=100000``.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("HLMEM_")}
    env["PYTHONUNBUFFERED"] = "1"
    for key, value in settings.items():
        env[f"HLMEM_{key.upper()}"] = str(value).lower() if isinstance(value, bool) else str(value)
    return env


class Child:
    """A subprocess whose stdout lines are collected by a thread (so it never blocks on a full
    pipe) and whose stderr goes to a file. Only this object's own pid is ever signalled."""

    def __init__(self, argv: list[str], *, env: dict[str, str], log: Path) -> None:
        self.argv = argv
        self.log = log
        self._stderr = log.open("ab")
        self.proc = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=self._stderr, env=env, cwd=HERE.parent
        )
        self.lines: list[str] = []
        self._n_acks = 0
        self._cond = threading.Condition()
        self._eof = False
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    @classmethod
    def driver(cls, db: Path, *args: str, env: dict[str, str], log: Path) -> Child:
        return cls(
            [sys.executable, str(HERE / "ingest_driver.py"), "--db", str(db), *args],
            env=env,
            log=log,
        )

    @classmethod
    def hlmem(cls, db: Path, *args: str, env: dict[str, str], log: Path) -> Child:
        return cls([sys.executable, "-m", "hlmem", "--db", str(db), *args], env=env, log=log)

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            if not raw.endswith(b"\n"):
                break  # a torn last line of a killed child is no acknowledgement
            line = raw.decode("utf-8").rstrip("\n")
            with self._cond:
                self.lines.append(line)
                self._n_acks += line.startswith("ack ")
                self._cond.notify_all()
        with self._cond:
            self._eof = True
            self._cond.notify_all()

    @property
    def acks(self) -> list[str]:
        with self._cond:
            return [ln[4:] for ln in self.lines if ln.startswith("ack ")]

    def wait_for_acks(self, count: int, timeout: float) -> int:
        """Block until ``count`` ack lines arrived; the number seen. Fails on timeout or EOF."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                n = self._n_acks
                if n >= count:
                    return n
                left = deadline - time.monotonic()
                if self._eof or left <= 0:
                    raise AssertionError(
                        f"{self.argv[1:3]}: {n} acks, wanted {count} "
                        f"({'exited' if self._eof else 'timed out'}); stderr:\n{self.stderr()}"
                    )
                self._cond.wait(min(left, 0.5))

    def kill(self, timeout: float = 10) -> None:
        """SIGKILL this child (if it still runs) and reap it; the rest of stdout is read."""
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=timeout)
        self._finish(timeout)

    def wait(self, timeout: float) -> int:
        """Wait for a normal exit; on timeout the child is killed and the test fails."""
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(
                f"{self.argv} did not finish in {timeout} s; stderr:\n{self.stderr()}"
            ) from None
        self._finish(timeout)
        return rc

    def _finish(self, timeout: float) -> None:
        self._reader.join(timeout)
        self._stderr.close()
        if self.proc.stdout is not None:
            self.proc.stdout.close()

    def stderr(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")[-4000:]


if __name__ == "__main__":
    raise SystemExit(main())
