"""The group commit's transaction: the events of many submitters written in one hop.

:func:`write_group` runs on the store's writer thread (:class:`hlmem.pipeline.ingest.EventWriter`)
or in the writer child process (:mod:`hlmem.pipeline.writer`): the events, their sessions and
one windower job per group, duplicates found by id, and the events a forget's tombstone dropped
found by the insert's row count (:func:`blocked_rows` reads which, only then). Both callers
share these row shapes.
"""

from __future__ import annotations

import json

from hlmem.jobs import JobSpec
from hlmem.lang import content_hash, new_ids
from hlmem.messages import EventsAdded, JobKind
from hlmem.store import SyncTx

WINDOWER = JobKind.WINDOWER
EventRow = tuple[str, str, str, str, str, str, str, str, str, str, str]
#: why a forget dropped an event: (the tombstone's kind: event, content or session; its time)
Blocked = tuple[str, str]
#: per submitted row: (event id, was a duplicate, why a forget dropped it or None)
Outcome = tuple[str, bool, Blocked | None]
#: the reason the arrival trigger gives the event tombstone of an event it dropped
ARRIVAL_REASON = "dropped on arrival: its {kind} was forgotten ({reason})"


def write_group(
    groups: list[list[EventRow]], now: float, recorded: str, count: bool, tx: SyncTx
) -> tuple[list[list[Outcome]], int | None]:
    """The group commit, on the writer thread (or in the writer child process): events,
    sessions, one windower job, and with ``count`` the backlog count (read in the same
    hop, so the committer never stalls on it; else ``None``). What
    ``prepare(stamp=False)`` left empty is filled in here: a new event id, and
    ``recorded`` (the clock's time of this group, ISO) as the recorded time and the
    default occurred time. ``tx.executemany`` puts the rows in as one JSON array per
    statement on the writer thread (one GIL release per batch), row by row in the child.
    """
    ids = [row[0] for rows in groups for row in rows if row[0]]  # the clients' ids
    seen: set[str] = set()
    if ids:
        seen = {r["id"] for r in tx.fetchall("existing_event_ids", (json.dumps(ids),))}
    fresh = iter(new_ids("ev", sum(len(rows) for rows in groups) - len(ids)))
    new_rows: list[EventRow] = []
    results: list[list[Outcome]] = []
    for rows in groups:
        out: list[Outcome] = []
        for row in rows:
            event_id = row[0] or next(fresh)
            duplicate = event_id in seen
            if not duplicate:
                seen.add(event_id)
                new_rows.append(
                    (
                        event_id,
                        *row[1:5],
                        content_hash(row[4]),
                        row[6] or recorded,
                        row[7] or recorded,
                        *row[8:],
                    )
                )
            out.append((event_id, duplicate, None))
        results.append(out)
    blocked: dict[str, Blocked] = {}
    if new_rows:
        # The tombstone trigger drops forgotten events silently: fewer rows than sent.
        if tx.executemany("insert_event", new_rows) < len(new_rows):
            blocked = blocked_rows(tx, new_rows)
            new_rows = [r for r in new_rows if r[0] not in blocked]
    if new_rows:
        sessions = {(r[1], r[2]): (r[1], r[2], r[9], r[7]) for r in new_rows}
        tx.executemany("insert_session", list(sessions.values()))
        # One windower job per group commit: one hop per batch, never per event.
        # Event ids made above or checked by prepare: construct, not validate.
        payload = EventsAdded.model_construct(event_ids=tuple(r[0] for r in new_rows))
        spec = JobSpec(kind=WINDOWER, payload=payload, size=len(new_rows))
        tx.execute("insert_job", spec.row(now))
    if blocked:
        results = [[(e, dup, blocked.get(e)) for e, dup, _ in out] for out in results]
    return results, int(tx.fetchall("count_backlog")[0]["backlog"]) if count else None


def blocked_rows(tx: SyncTx, rows: list[EventRow]) -> dict[str, Blocked]:
    """Which of ``rows`` (just inserted) a tombstone dropped, and the forget that did: the
    oldest tombstone the trigger tested. The event tombstone the trigger gave a dropped event
    is rewritten to say so, with that forget's time (``Memory.blocked`` reads it)."""
    keys = [[r[0], r[1], r[2], r[5], r[6]] for r in rows]
    found = tx.fetchall("forget_blocking_events", (json.dumps(keys, ensure_ascii=False),))
    tx.executemany(
        "forget_explain_arrival",
        [
            (
                ARRIVAL_REASON.format(kind=f["kind"], reason=f["reason"]),
                f["created_at"],
                f["event_id"],
            )
            for f in found
            if f["kind"] != "event"
        ],
    )
    return {str(f["event_id"]): (str(f["kind"]), str(f["created_at"])) for f in found}
