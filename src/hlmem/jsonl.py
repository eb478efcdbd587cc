"""JSONL ingestion: one event per line, validated line by line, written in group commits.

A line is rejected, with its line number and reason, when it is not UTF-8, not a JSON object,
misses a required field, has an unknown field or breaks a limit (content size). Valid lines are
committed in batches; each event is committed whole with its job, so an interruption leaves
whole events only. A line without ``event_id`` gets one derived from the line's bytes and its
line number, so ingesting the same file again (or again after fixing its bad lines) is a no-op
for every line already stored. The file is read in blocks on a worker thread; memory stays
bounded by one block and one group commit, whatever the file's size.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import anyio

from hlmem.errors import InputError
from hlmem.forget import blocked_reason
from hlmem.ingest import EventRow, coerce_event
from hlmem.memory import Memory
from hlmem.messages import IngestSummary

MAX_ERRORS_KEPT = 100


READ_BLOCK_LINES = 1000


def parse_line(raw: bytes, number: int) -> dict[str, Any]:
    """Decode one line into an event mapping (with a derived event_id when absent).

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
    if obj.get("event_id") is None:
        digest = hashlib.blake2b(raw, digest_size=12).hexdigest()
        obj["event_id"] = f"jl_{digest}_{number}"
    return obj


async def ingest_jsonl(
    mem: Memory,
    path: str | Path,
    *,
    progress: Callable[[int], None] | None = None,
) -> IngestSummary:
    """Ingest a JSONL file of events; return counts of accepted, duplicate, blocked (stopped
    by a forget's tombstone, with the reason by line) and rejected lines.

    ``progress`` is called with the number of lines handled since its last call.
    """
    accepted = duplicate = rejected = blocked = 0
    errors: list[str] = []
    notes: list[str] = []
    batch: list[EventRow] = []
    numbers: list[int] = []
    batch_lines = 0

    async def commit() -> None:
        nonlocal accepted, duplicate, blocked, batch, numbers, batch_lines
        if batch:
            outcomes = await mem.writer.submit(batch)
            for line, (event_id, was_duplicate, why) in zip(numbers, outcomes, strict=True):
                if why is not None:
                    blocked += 1
                    if len(notes) < MAX_ERRORS_KEPT:
                        notes.append(
                            f"line {line}: event {event_id} blocked: {blocked_reason(*why)}"
                        )
                elif was_duplicate:
                    duplicate += 1
                else:
                    accepted += 1
        if progress and batch_lines:
            progress(batch_lines)
        batch, numbers, batch_lines = [], [], 0

    number = 0
    with Path(path).open("rb") as stream:  # noqa: ASYNC230 - blocks are read on a thread
        while block := await anyio.to_thread.run_sync(_read_block, stream):
            for raw in block:
                number += 1
                batch_lines += 1
                if not raw.strip():
                    continue
                try:
                    batch.append(
                        mem.writer.prepare(coerce_event(parse_line(raw, number)), stamp=False)
                    )
                    numbers.append(number)
                except InputError as exc:
                    rejected += 1
                    if len(errors) < MAX_ERRORS_KEPT:
                        errors.append(f"line {number}: {exc}")
                if len(batch) >= mem.config.ingest.group_commit_max_rows:
                    await commit()
        await commit()
    return IngestSummary(
        accepted=accepted,
        duplicate=duplicate,
        rejected=rejected,
        errors=tuple(errors),
        blocked=blocked,
        blocked_lines=tuple(notes),
    )


def _read_block(stream: IO[bytes]) -> list[bytes]:
    return [line.rstrip(b"\r\n") for line in itertools.islice(stream, READ_BLOCK_LINES)]
