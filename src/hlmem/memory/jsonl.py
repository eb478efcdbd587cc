"""JSONL ingestion: one event per line, validated line by line, written in group commits.

A line is rejected, with its line number and reason, when it is not UTF-8, not a JSON object,
misses a required field, has an unknown field or breaks a limit (content size). Valid lines are
committed in batches; each event is committed whole with its job, so an interruption leaves
whole events only. The file is read in blocks on a worker thread; memory stays bounded by one
block and one group commit, whatever the file's size.

A line without ``event_id`` gets one derived from what identifies the event, never from where
the line stands (:func:`content_id`): its namespace, session, role, time and content. So
ingesting the same file again, after fixing, deleting or reordering lines, stores nothing twice.
Two lines that agree on all five are one event (a line repeated by mistake is stored once; a
turn said twice needs its ``occurred_at`` or an ``event_id`` to be kept twice).

Stores written before ids came from content named such events by their line's bytes and
number (``jl_<hash>_<line>``). While a store holds any of those, a line is also looked up by
its bytes (one read per group commit): a line stored that way is a duplicate, wherever it now
stands in the file.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import anyio

from hlmem.claims import blocked_reason
from hlmem.clock import iso
from hlmem.errors import InputError
from hlmem.lang import derived_id
from hlmem.memory.facade import Memory
from hlmem.messages import EventIn, IngestSummary
from hlmem.pipeline import EventRow, coerce_event

MAX_ERRORS_KEPT = 100


READ_BLOCK_LINES = 1000


def parse_line(raw: bytes) -> dict[str, Any]:
    """Decode one line into an event mapping.

    :raises InputError: invalid UTF-8, invalid JSON or not an object.
    """
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"invalid UTF-8 at byte {exc.start}") from exc
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON: {exc.msg} (column {exc.colno})") from exc
    if not isinstance(obj, dict):
        raise InputError("a line must be a JSON object")
    return obj


def content_id(event: EventIn, default_namespace: str) -> str:
    """The id of an event that came without one: a hash of its namespace (``default_namespace``
    when it names none), session, role, time (UTC; none when it has none) and content."""
    occurred = "" if event.occurred_at is None else iso(event.occurred_at)
    namespace = event.namespace or default_namespace
    return derived_id("jlc", namespace, event.session_id, event.role.value, occurred, event.content)


def _line_prefix(raw: bytes) -> str:
    """The id prefix a store written before content ids gave this line: ``jl_<hash>_``."""
    return f"jl_{hashlib.blake2b(raw, digest_size=12).hexdigest()}_"


@dataclass
class _Batch:
    """The rows of one group commit and what it counted."""

    mem: Memory
    line_ids: bool  # the store holds events named by line (see the module docstring)
    rows: list[EventRow] = field(default_factory=list)
    prefixes: list[str | None] = field(default_factory=list)
    numbers: list[int] = field(default_factory=list)
    lines: int = 0
    accepted: int = 0
    duplicate: int = 0
    blocked: int = 0
    #: what each blocked line was stopped by (the first MAX_ERRORS_KEPT)
    notes: list[str] = field(default_factory=list)

    def add(self, raw: bytes, number: int) -> None:
        """Validate one line and queue its row.

        :raises InputError: the line is not a valid event.
        """
        event = coerce_event(parse_line(raw))
        prefix = None
        if event.event_id is None:
            event_id = content_id(event, self.mem.config.ingest.default_namespace)
            event = event.model_copy(update={"event_id": event_id})
            prefix = _line_prefix(raw) if self.line_ids else None
        self.rows.append(self.mem.writer.prepare(event, stamp=False))
        self.prefixes.append(prefix)
        self.numbers.append(number)

    async def commit(self) -> None:
        if any(self.prefixes):
            await self._reuse_line_ids()
        if self.rows:
            outcomes = await self.mem.writer.submit(self.rows)
            for line, (event_id, was_duplicate, why) in zip(self.numbers, outcomes, strict=True):
                if why is not None:
                    self.blocked += 1
                    if len(self.notes) < MAX_ERRORS_KEPT:
                        self.notes.append(
                            f"line {line}: event {event_id} blocked: {blocked_reason(*why)}"
                        )
                elif was_duplicate:
                    self.duplicate += 1
                else:
                    self.accepted += 1
        self.rows, self.prefixes, self.numbers, self.lines = [], [], [], 0

    async def _reuse_line_ids(self) -> None:
        """Give each row whose line is stored under a line-number id that id: a duplicate."""
        wanted = sorted({p for p in self.prefixes if p})
        found = {
            r["prefix"]: r["event_id"]
            for r in await self.mem.store.fetchall("line_event_ids", (json.dumps(wanted),))
        }
        for i, prefix in enumerate(self.prefixes):
            stored = found.get(prefix) if prefix else None
            if stored is not None:
                self.rows[i] = (stored, *self.rows[i][1:])


async def ingest_jsonl(
    mem: Memory,
    path: str | Path,
    *,
    progress: Callable[[int], None] | None = None,
) -> IngestSummary:
    """Ingest a JSONL file of events; return counts of accepted, duplicate, blocked (stopped by
    a forget, each with the forget's time) and rejected lines.

    ``progress`` is called with the number of lines handled since its last call.
    """
    batch = _Batch(mem, line_ids=bool(await mem.store.fetchall("any_line_event_id")))
    rejected = 0
    errors: list[str] = []
    number = 0
    with Path(path).open("rb") as stream:  # noqa: ASYNC230 - blocks are read on a thread
        while block := await anyio.to_thread.run_sync(_read_block, stream):
            for raw in block:
                number += 1
                batch.lines += 1
                if not raw.strip():
                    continue
                try:
                    batch.add(raw, number)
                except InputError as exc:
                    rejected += 1
                    if len(errors) < MAX_ERRORS_KEPT:
                        errors.append(f"line {number}: {exc}")
                if len(batch.rows) >= mem.config.ingest.group_commit_max_rows:
                    await _commit(batch, progress)
        await _commit(batch, progress)
    return IngestSummary(
        accepted=batch.accepted,
        duplicate=batch.duplicate,
        rejected=rejected,
        errors=tuple(errors),
        blocked=batch.blocked,
        blocked_lines=tuple(batch.notes),
    )


async def _commit(batch: _Batch, progress: Callable[[int], None] | None) -> None:
    lines = batch.lines
    await batch.commit()
    if progress and lines:
        progress(lines)


def _read_block(stream: IO[bytes]) -> list[bytes]:
    return [line.rstrip(b"\r\n") for line in itertools.islice(stream, READ_BLOCK_LINES)]
