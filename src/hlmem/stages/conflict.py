"""Conflict: place each new claim on its slot's timeline, with two clocks.

A slot is (namespace, subject, predicate). For a **single-valued** predicate (the lexicon says
which: ``location``, ``employer``, ``ui_theme``, …) the slot holds one current value; for a
**multi-valued** one (``likes``, ``skill``, ``note``, …) each value has its own timeline, so
"likes tea" and "likes coffee" never conflict, while "喝咖啡" → "不喝咖啡了" (same value,
polarity flipped) does.

For a pending claim N and the current (active) claim C of its timeline:

- N repeats C (same value, polarity and qualifiers): N's evidence joins C and N is dropped
  (it was never visible).
- N's valid time starts at or after C's: **N supersedes C.** C stays, with its evidence, as
  history: ``superseded``, ``retracted_at`` = when N was learned (recorded time), ``valid_to``
  = when N became true (valid time), and a ``supersessions`` row with the reason.
- N's valid time starts before C's (a late-arriving event, or an old fact told late): N does
  **not** replace the newer fact. It goes into history, superseded by C from the moment it was
  learned (or, in a replayed log, from when the first newer fact was told, if that came after
  it), valid until C (or the next claim on the timeline) began; a claim whose validity it
  interrupts ends where N begins.

Recorded times are telling times (the extractor's ``learned_at``: the event's ``occurred_at``,
never later than its ingestion), so a replayed log's supersede chain follows when the agent
was told, not when the replay ran; a claim is never retracted before it was recorded.

A user correction (:mod:`hlmem.lifecycle.correct`) always becomes current: it supersedes the claim
it corrects (named by its event) with the reason ``user correction: ...``, never takes the
late-arrival path, and on a multi-valued slot replaces the corrected value too; when the slot
already holds its value, it folds into that claim, which then supersedes the corrected one.

Derived observations of a superseded claim are marked ``needs_recompute``. Placed claims go on
to the embedder.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from hlmem.clock import Clock, iso
from hlmem.jobs import JobSpec
from hlmem.lang import Lexicon
from hlmem.messages import (
    CLAIM_VECTORS_PRIORITY,
    CORRECTION_EXTRACTOR,
    ClaimsPending,
    EmbedClaims,
    Job,
    JobKind,
)
from hlmem.stages.base import Stage
from hlmem.store import SyncTx


@dataclass
class _Row:
    id: str
    value: str
    qualifiers: tuple[str, ...]
    polarity: int
    status: str
    valid_from: str | None
    valid_to: str | None
    recorded_at: str

    @classmethod
    def from_row(cls, r: Any) -> _Row:
        """From a ``claim_for_conflict`` or ``slot_timeline`` row."""
        return cls(
            r["id"],
            r["value"],
            tuple(json.loads(r["qualifiers"])),
            r["polarity"],
            r["status"],
            r["valid_from"],
            r["valid_to"],
            r["recorded_at"],
        )

    @property
    def starts(self) -> str:
        """Where the claim starts on the valid-time axis (said-without-time: when said)."""
        return self.valid_from or self.recorded_at

    def says_same(self, other: _Row) -> bool:
        return (self.value, self.polarity, sorted(self.qualifiers)) == (
            other.value,
            other.polarity,
            sorted(other.qualifiers),
        )


class Conflict(Stage[None]):
    name = JobKind.CONFLICT
    # None: a backlog of vectors to compute never holds back placing claims (the embedder's
    # jobs wait on disk; claims are recallable by full text meanwhile)
    downstream = None

    def __init__(self, clock: Clock, lexicon: Lexicon) -> None:
        self.clock = clock
        self.lexicon = lexicon

    async def prepare(self, jobs: list[Job]) -> None:
        return None

    def apply(self, tx: SyncTx, jobs: list[Job], prepared: None) -> list[JobSpec]:
        ids = [i for j in jobs if isinstance(j.payload, ClaimsPending) for i in j.payload.claim_ids]
        pending = []
        for claim_id in ids:
            rows = tx.fetchall("claim_for_conflict", (claim_id,))
            if rows and rows[0]["status"] == "pending":  # a replayed job finds its claims placed
                pending.append(rows[0])
        # Oldest valid time first, so a batch holding a whole history lands in order.
        pending.sort(key=lambda r: (r["valid_from"] or r["recorded_at"], r["recorded_at"]))
        placed: list[str] = []
        now = iso(self.clock.now())
        for row in pending:
            if self._place(tx, row, now):
                placed.append(row["id"])
        if not placed:
            return []
        return [
            JobSpec(
                JobKind.EMBEDDER,
                EmbedClaims(claim_ids=tuple(placed)),
                size=len(placed),
                priority=CLAIM_VECTORS_PRIORITY,  # before the events' vectors
            )
        ]

    def _place(self, tx: SyncTx, r: Any, now: str) -> bool:
        """Place pending claim ``r``; False when it was folded into the claim it repeats."""
        new = _Row.from_row(r)
        namespace, predicate = r["namespace"], r["predicate"]
        slot_key, value_key = r["slot_key"], r["value_key"]
        corrects = self._corrected(tx, new.id) if r["extractor"] == CORRECTION_EXTRACTOR else None
        multi = self.lexicon.is_multi_valued(predicate)
        timeline = [
            _Row.from_row(t)
            for t in tx.fetchall(
                "slot_timeline",
                {
                    "namespace": namespace,
                    "slot_key": slot_key,
                    "id": new.id,
                    "value_key": value_key if multi else None,
                },
            )
        ]
        current = next((t for t in reversed(timeline) if t.status == "active"), None)
        if current is not None and current.says_same(new):
            tx.execute("move_evidence", {"target": current.id, "source": new.id})
            tx.execute(
                "insert_merge",
                (current.id, new.id, self.name, None, "restated: same value on the slot", now),
            )
            tx.execute("delete_pending_claim", (new.id,))
            tx.execute("fts_delete", ("claim", new.id))
            if corrects is not None and corrects.id != current.id:
                reason = _correction(corrects, new, predicate)
                self._supersede(tx, corrects, new, reason, now, by=current.id)
            return False
        if current is None or new.starts >= current.starts or corrects is not None:
            tx.execute("activate_claim", (new.id,))
            if current is not None:
                reason = (
                    _correction(current, new, predicate)
                    if corrects is not None
                    else _reason(current, new, predicate)
                )
                self._supersede(tx, current, new, reason, now)
            if corrects is not None and (current is None or corrects.id != current.id):
                self._supersede(tx, corrects, new, _correction(corrects, new, predicate), now)
            # A claim it interrupts on the timeline (history) ends where it begins.
            self._cut_previous(tx, timeline, new)
            return True
        # Late arrival: the newer fact stays current; this one is history from the start.
        later = [t for t in timeline if t.starts > new.starts]
        valid_end = min(t.starts for t in later) if later else current.starts
        reason = (
            f"late: valid from {new.starts[:10]}, before the current claim "
            f"(valid from {current.starts[:10]}); the newer fact stays"
        )
        # Believed from when it was told until the agent was first told of a newer fact: in a
        # replayed log the newer fact may have been told after it, though ingested before.
        retracted = max(new.recorded_at, min(t.recorded_at for t in later))
        tx.execute(
            "supersede_claim",
            {"old": new.id, "new": current.id, "at": retracted, "valid_end": valid_end},
        )
        tx.execute("insert_supersession", (new.id, current.id, reason, now))
        self._cut_previous(tx, timeline, new)
        return True

    def _supersede(
        self, tx: SyncTx, old: _Row, new: _Row, reason: str, now: str, *, by: str | None = None
    ) -> None:
        """``old`` superseded at ``new``'s clocks, by ``by`` (default: ``new`` itself)."""
        successor = by or new.id
        # never retracted before it was recorded (a replay may place a claim told earlier)
        retracted = max(new.recorded_at, old.recorded_at)
        tx.execute(
            "supersede_claim",
            {"old": old.id, "new": successor, "at": retracted, "valid_end": new.starts},
        )
        tx.execute("insert_supersession", (old.id, successor, reason, now))
        tx.execute("invalidate_observations", {"now": now, "claim_id": old.id})

    @staticmethod
    def _corrected(tx: SyncTx, claim_id: str) -> _Row | None:
        """The still active claim a user correction names (its event's metadata), if any."""
        target = tx.fetchall("correction_target", (claim_id,))
        rows = tx.fetchall("claim_for_conflict", (target[0]["claim_id"],)) if target else []
        if not rows or rows[0]["status"] != "active":
            return None
        return _Row.from_row(rows[0])

    def _cut_previous(self, tx: SyncTx, timeline: list[_Row], new: _Row) -> None:
        before = [t for t in timeline if t.starts < new.starts and t.status == "superseded"]
        if before:
            tx.execute("end_valid_time", {"id": before[-1].id, "valid_end": new.starts})


def _correction(old: _Row, new: _Row, predicate: str) -> str:
    quals = f" ({', '.join(new.qualifiers)})" if new.qualifiers else ""
    sign = "" if new.polarity > 0 else "not "
    return f"user correction: {predicate} {old.value!r} -> {sign}{new.value!r}{quals}"


def _reason(old: _Row, new: _Row, predicate: str) -> str:
    if old.value == new.value and old.polarity != new.polarity:
        what = "no longer" if new.polarity < 0 else "again"
        return f"polarity flip on {predicate}: {what} {new.value!r}"
    if old.value == new.value:
        return f"{predicate} {new.value!r} restated with qualifiers {list(new.qualifiers)}"
    quals = f" ({', '.join(new.qualifiers)})" if new.qualifiers else ""
    return f"{predicate} changed: {old.value!r} -> {new.value!r}{quals}"
