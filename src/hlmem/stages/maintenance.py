"""Maintenance, the pipeline's "sleep": TTL, decay, archive, dedup convergence, re-derivation
and job hygiene, in bounded ticks that never hold the writer for long.

**Schedule.** :meth:`Maintenance.tick` runs in every process that runs the pipeline (every
``min(interval_s, 60)`` seconds) and reads the durable ``schedule`` row: once a pass is due
(``interval_s`` after the last one ended, by the injectable clock) it enqueues a
:class:`~hlmem.messages.MaintenanceTick` job under one dedup key, so one pass runs at a time
however many processes share the file. On a file never maintained, the first tick only starts
the clock. Maintenance jobs have size 0: ``drain()`` waits for the write path, not for
housekeeping.

**A tick** is one job: :meth:`prepare` reads and computes outside any transaction (similarity
of stored claims, jieba segmentation), :meth:`apply` writes in the one short transaction that
also completes the job. Every task handles at most ``max_items_per_task`` rows per tick; when
any task has more left, ``apply`` enqueues the pass's next tick (same dedup key) for
``pause_between_ticks_s`` later, carrying the pass's cursors, its finished tasks and its counts
in the payload, so a crash resumes the pass where it was. When every task is through, the pass
stamps the schedule and logs its report. :meth:`run_pass` (``mem.maintain()``) runs the same
ticks back to back without the job table and returns the report.

**Tasks**, in the order a tick runs them:

1. ``ttl`` — active claims of a scope with a TTL (``plan``, ``short_term``) whose ``valid_to``
   plus grace (longer for important claims) has passed become ``archived`` with reason
   ``expired``: out of current recall, in history with their evidence; their vectors go.
2. ``lifecycle`` — decay and archive over a window of active claims: the activation decayed to
   now is written down when it moved (:mod:`hlmem.claims.activation`; confidence is never touched);
   a claim silent for ``archive_silent_days`` whose activation fell to ``archive_max_activation``
   (and not important enough to keep) becomes ``archived`` with reason ``silent`` and loses its
   vectors. Its full-text row stays, so history recall still finds it, marked archived; current
   recall filters it out by status, and an event whose claims are all archived or superseded is
   history too.
3. ``dedup`` — convergence: each active claim of the window is compared with the older active
   claims of its slot by the dedup stage's own rules (same content hash, or
   :func:`hlmem.lang.atoms.analysis.same_fact` at ``dedup.similarity_threshold``: every protected
   atom must agree). A pair that would merge today (stored before a lexicon or threshold change, or
   by two processes at once) merges: the newer claim's evidence, entities and merges join the older
   one, the newer is ``superseded`` by it with the reason (``supersessions`` and
   ``claim_merges`` rows) and drops its vectors and full-text row, so it does not surface as a
   past belief of its own.
4. ``reindex`` — re-derivation: claims recall can show whose full-text row is missing or no
   longer what the dedup stage would write today (a lexicon or user-dictionary change) are
   re-indexed. Vectors missing or of another model version are re-derived by the embedder's own
   backfill tick, not here.
5. ``secrets`` — what was derived with a secret in it before the redaction rules knew it
   (full-text rows of events, vectors of events and claims, job payloads and dead letters) is
   found and taken out, once per version of the rules (:mod:`hlmem.claims.secret_scan`).
6. ``observations`` — observations marked ``needs_recompute`` none of whose source claims is
   active any more are archived (nothing is left to derive them from). No stage derives
   observations yet, so the others stay marked and are counted as waiting.
7. ``jobs`` — done jobs older than ``done_jobs_keep_days`` are deleted (by the wall clock job
   times use); failed and parked jobs are kept. Admission decisions are kept: explain needs
   them.
8. ``vector_log`` — logged vector deletions are pruned ``vector_log_keep_days`` after
   maintenance first saw them. A live in-memory index reads the log on every search; one that
   has not searched since finds deletions missing and reloads in full (always correct).

Every write re-checks its rows inside the transaction (a claim merged, archived or forgotten
meanwhile is skipped), so a tick replayed after a crash, or a pass running beside another
process's, changes nothing twice.
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import partial
from typing import Any

import anyio

from hlmem.claims import activation as lifecycle
from hlmem.claims import secret_scan
from hlmem.clock import Clock, iso, parse_iso, wall
from hlmem.config import Config, ScopeDays
from hlmem.index import claim_search_text, fts_row
from hlmem.jobs import JobSpec
from hlmem.lang import Lexicon
from hlmem.lang.atoms import analysis as atoms
from hlmem.messages import (
    ArchiveReport,
    ConvergeReport,
    DecayReport,
    HygieneReport,
    Job,
    JobKind,
    MaintenanceReport,
    MaintenanceTask,
    MaintenanceTick,
    ReindexReport,
    TtlReport,
)
from hlmem.stages.base import Stage
from hlmem.store import Store, SyncTx

log = logging.getLogger(__name__)

#: the dedup key every tick of a pass shares: one pass at a time
PASS_KEY = "maintenance:pass"
#: ``maintenance_state`` rows
SCHEDULE = "schedule"
VECTOR_LOG = "vector_log"
#: the scheduler looks at the clock at least this often, in seconds
SCHEDULE_CHECK_MAX_S = 60.0
#: a decayed activation is written down once it moved by more than this
ACTIVATION_EPSILON = 1e-3
TASKS: tuple[MaintenanceTask, ...] = (
    "ttl",
    "lifecycle",
    "dedup",
    "reindex",
    "secrets",
    "observations",
    "jobs",
    "vector_log",
)
_SCOPES = tuple(ScopeDays.model_fields)
_SECONDS_PER_DAY = 86400.0
_EXACT = "exact: same subject, predicate, value, polarity, qualifiers"


@dataclass(frozen=True)
class _Use:
    """How a claim has been used (a ``maintenance_merge_rows`` row): what a merge's survivor
    keeps of both claims."""

    id: str
    activation: float
    since: str  # when ``activation`` was evaluated
    scope: str
    importance: float
    access_count: int
    last_accessed_at: str | None
    utility: float

    @classmethod
    def from_row(cls, r: Any) -> _Use:
        return cls(
            r["id"],
            r["activation"],
            r["since"],
            r["scope"],
            r["importance"],
            r["access_count"],
            r["last_accessed_at"],
            r["utility"],
        )


@dataclass(frozen=True)
class _Merge:
    loser: str  # the newer claim
    survivor: str  # the older claim it repeats
    similarity: float
    reason: str


@dataclass
class _Prepared:
    tick: MaintenanceTick
    merges: list[_Merge] = field(default_factory=list)
    dedup_scanned: int = 0
    #: where the dedup window ended when it was full (None: the task is through)
    dedup_next: int | None = None
    #: full-text rows to write: (kind, claim id, namespace, body)
    reindex_rows: list[tuple[str, str, str, str]] = field(default_factory=list)
    reindex_scanned: int = 0
    reindex_next: int | None = None
    secrets: secret_scan.SecretScan | None = None


class Maintenance(Stage[_Prepared]):
    name = JobKind.MAINTENANCE

    def __init__(self, store: Store, clock: Clock, cfg: Config, *, lexicon: Lexicon) -> None:
        self.store = store
        self.clock = clock
        self.cfg = cfg.maintenance
        self.dedup_cfg = cfg.dedup
        self.lexicon = lexicon
        self.limit = self.cfg.max_items_per_task
        self.tick_interval_s = (
            min(self.cfg.interval_s, SCHEDULE_CHECK_MAX_S) if self.cfg.enabled else None
        )

    # --- schedule ---------------------------------------------------------------------------

    def tick(self, tx: SyncTx, now: datetime) -> list[JobSpec]:
        """Enqueue a pass when one is due (a live pass's job keeps this one out)."""
        found = tx.fetchall("maintenance_state_get", (SCHEDULE,))
        if not found:
            tx.execute("maintenance_state_set", (SCHEDULE, 0, iso(now)))
            return []
        if (now - parse_iso(found[0]["marked_at"])).total_seconds() < self.cfg.interval_s:
            return []
        return [JobSpec(self.name, MaintenanceTick(), dedup_key=PASS_KEY, size=0)]

    # --- the stage: one job, one tick -------------------------------------------------------

    async def prepare(self, jobs: list[Job]) -> _Prepared:
        # One pass is live at a time (one dedup key), so a batch holds at most one tick that
        # matters; any other is completed with it.
        ticks = [j.payload for j in jobs if isinstance(j.payload, MaintenanceTick)]
        return await self._prepare(ticks[0] if ticks else MaintenanceTick())

    def apply(self, tx: SyncTx, jobs: list[Job], prepared: _Prepared) -> list[JobSpec]:
        following, _ = self._apply(tx, prepared)
        if following is None:
            return []
        return [
            JobSpec(
                self.name,
                following,
                dedup_key=PASS_KEY,
                size=0,
                run_after=wall() + self.cfg.pause_between_ticks_s,
            )
        ]

    async def run_pass(self) -> MaintenanceReport:
        """Run one full pass now, tick after tick (each its own short transaction), and return
        what every task did. Safe beside a running pipeline and its periodic passes.

        :raises StoreError: a read or write failed (the ticks before it stay committed).
        """
        tick = MaintenanceTick()
        while True:
            prepared = await self._prepare(tick)
            following, report = await self.store.run_in_transaction(
                partial(self._apply, prepared=prepared)
            )
            if following is None:
                return report
            tick = following

    # --- prepare: reads and CPU work outside the transaction --------------------------------

    async def _prepare(self, tick: MaintenanceTick) -> _Prepared:
        prepared = _Prepared(tick)
        if "dedup" not in tick.done:
            await self._prepare_dedup(prepared)
        if "reindex" not in tick.done:
            await self._prepare_reindex(prepared)
        if "secrets" not in tick.done:
            prepared.secrets = await secret_scan.prepare(self.store, self.limit)
        return prepared

    async def _prepare_dedup(self, prepared: _Prepared) -> None:
        window = await self.store.fetchall(
            "maintenance_dedup_window",
            {"after": prepared.tick.dedup_after, "limit": self.limit},
        )
        slots: dict[tuple[str, str], list[Any]] = {}
        for r in window:
            slots.setdefault((r["namespace"], r["slot_key"]), []).append(r)
        elders: dict[tuple[str, str], list[Any]] = {}
        for (namespace, slot_key), members in slots.items():
            elders[(namespace, slot_key)] = await self.store.fetchall(
                "maintenance_slot_elders",
                {
                    "namespace": namespace,
                    "slot_key": slot_key,
                    "before": members[-1]["rowid"],
                    "limit": self.dedup_cfg.candidates_max + len(members),
                },
            )
        prepared.merges = await anyio.to_thread.run_sync(self._converge, window, elders)
        prepared.dedup_scanned = len(window)
        prepared.dedup_next = int(window[-1]["rowid"]) if len(window) >= self.limit else None

    def _converge(
        self, window: list[Any], elders: dict[tuple[str, str], list[Any]]
    ) -> list[_Merge]:
        """Which window claims repeat an older active claim of their slot, by the dedup
        stage's rules; the most similar older claim survives (CPU-bound: a worker thread)."""
        threshold = self.dedup_cfg.similarity_threshold
        losers: set[str] = set()
        merges: list[_Merge] = []
        for r in window:
            claim_id, rowid, chash = r["id"], r["rowid"], r["content_hash"]
            if claim_id in losers:
                continue
            best: tuple[float, str, str] | None = None
            compared = 0
            for e in elders[(r["namespace"], r["slot_key"])]:
                e_id = e["id"]
                if e["rowid"] >= rowid or e_id in losers:
                    continue
                if compared >= self.dedup_cfg.candidates_max:
                    break
                compared += 1
                if e["content_hash"] == chash:
                    best = (1.0, e_id, _EXACT)
                    break
                same, sim, _ = atoms.same_fact(
                    r["text"],
                    e["text"],
                    a_subject=r["subject"],
                    b_subject=e["subject"],
                    a_polarity=r["polarity"],
                    b_polarity=e["polarity"],
                    threshold=threshold,
                )
                if same and (best is None or sim > best[0]):
                    best = (sim, e_id, f"similar: {sim:.2f}, every protected atom agrees")
            if best is not None:
                losers.add(claim_id)
                merges.append(_Merge(claim_id, best[1], best[0], best[2]))
        return merges

    async def _prepare_reindex(self, prepared: _Prepared) -> None:
        window = await self.store.fetchall(
            "maintenance_reindex_window",
            {"after": prepared.tick.reindex_after, "limit": self.limit},
        )

        def rows() -> list[tuple[str, str, str, str]]:
            out = []
            for r in window:
                predicate = r["predicate"]
                words = self.lexicon.search_words(predicate)
                text = claim_search_text(r["text"], r["value"], predicate, words)
                row = fts_row("claim", r["id"], r["namespace"], text)
                if row[3] != r["body"]:  # the full-text row's body
                    out.append(row)
            return out

        prepared.reindex_rows = await anyio.to_thread.run_sync(rows)
        prepared.reindex_scanned = len(window)
        prepared.reindex_next = int(window[-1]["rowid"]) if len(window) >= self.limit else None

    # --- apply: one short transaction on the writer thread ----------------------------------

    def _apply(
        self, tx: SyncTx, prepared: _Prepared
    ) -> tuple[MaintenanceTick | None, MaintenanceReport]:
        """Run every unfinished task once, bounded; return the pass's next tick (None: the
        pass is over) and its report so far."""
        now = self.clock.now()
        tick = prepared.tick
        done = set(tick.done)
        cursors = {
            "lifecycle_after": tick.lifecycle_after,
            "dedup_after": tick.dedup_after,
            "reindex_after": tick.reindex_after,
            "observations_after": tick.observations_after,
        }
        parts: dict[str, Any] = {}

        def finish(task: MaintenanceTask, cursor: str | None, following: int | None) -> None:
            if following is None:
                done.add(task)
            elif cursor is not None:
                cursors[cursor] = following

        if "ttl" not in done:
            parts["ttl"], more = self._ttl(tx, now)
            finish("ttl", None, 1 if more else None)
        if "lifecycle" not in done:
            parts["decay"], parts["archive"], following = self._lifecycle(
                tx, now, tick.lifecycle_after
            )
            finish("lifecycle", "lifecycle_after", following)
        if "dedup" not in done:
            merged, dropped = self._merge(tx, now, prepared.merges)
            parts["dedup"] = ConvergeReport(
                scanned=prepared.dedup_scanned, merged=merged, vectors_dropped=dropped
            )
            finish("dedup", "dedup_after", prepared.dedup_next)
        if "reindex" not in done:
            rewritten = self._reindex(tx, prepared.reindex_rows)
            parts["reindex"] = ReindexReport(scanned=prepared.reindex_scanned, rewritten=rewritten)
            finish("reindex", "reindex_after", prepared.reindex_next)
        if "secrets" not in done and prepared.secrets is not None:
            found = secret_scan.apply(tx, prepared.secrets, iso(now))
            parts["reindex"] = parts.get("reindex", ReindexReport()).model_copy(
                update={"secrets_scanned": prepared.secrets.scanned, "secrets_rewritten": found}
            )
            finish("secrets", None, None if prepared.secrets.done else 1)
        if "observations" not in done:
            archived, waiting, following = self._observations(tx, now, tick.observations_after)
            reindex = parts.get("reindex", ReindexReport())
            parts["reindex"] = reindex.model_copy(
                update={"observations_archived": archived, "observations_waiting": waiting}
            )
            finish("observations", "observations_after", following)
        purged = pruned = 0
        if "jobs" not in done:
            purged = tx.execute(
                "maintenance_purge_done_jobs",
                {
                    "before": wall() - self.cfg.done_jobs_keep_days * _SECONDS_PER_DAY,
                    "limit": self.limit,
                },
            )
            finish("jobs", None, 1 if purged >= self.limit else None)
        if "vector_log" not in done:
            pruned, more = self._vector_log(tx, now)
            finish("vector_log", None, 1 if more else None)
        parts["hygiene"] = HygieneReport(jobs_purged=purged, vector_log_pruned=pruned)
        report = MaintenanceReport(started_at=now, finished_at=now, ticks=1, **parts)
        total = tick.report.plus(report) if tick.report is not None else report
        log.debug(
            "maintenance tick",
            extra={"action": "maintenance_tick", **report.model_dump(mode="json")},
        )
        if done >= set(TASKS):
            tx.execute("maintenance_state_set", (SCHEDULE, 0, iso(now)))
            log.info(
                "maintenance pass finished",
                extra={"action": "maintenance_pass", **total.model_dump(mode="json")},
            )
            return None, total
        following_tick = MaintenanceTick(
            **cursors, done=tuple(t for t in TASKS if t in done), report=total
        )
        return following_tick, total

    def _ttl(self, tx: SyncTx, now: datetime) -> tuple[TtlReport, bool]:
        at = iso(now)
        left = self.limit
        expired: list[str] = []
        for scope in _SCOPES:
            grace = self.cfg.ttl_grace_days.of(scope)
            if math.isinf(grace) or left <= 0:
                continue
            found = tx.fetchall(
                "maintenance_expire_claims",
                {
                    "now": at,
                    "scope": scope,
                    "latest": iso(now - timedelta(days=grace)),
                    "grace_days": grace,
                    "factor": self.cfg.ttl_importance_factor,
                    "limit": left,
                },
            )
            expired += [r["id"] for r in found]
            left -= len(found)
        dropped = self._leave_recall(tx, now, expired)
        return TtlReport(expired=len(expired), vectors_dropped=dropped), left <= 0

    def _lifecycle(
        self, tx: SyncTx, now: datetime, after: int
    ) -> tuple[DecayReport, ArchiveReport, int | None]:
        cfg = self.cfg
        at = iso(now)
        window = tx.fetchall("maintenance_lifecycle_window", {"after": after, "limit": self.limit})
        archive: list[tuple[Any, ...]] = []
        writes: list[tuple[Any, ...]] = []
        for r in window:
            claim_id, importance, stored = r["id"], r["importance"], r["activation"]
            activation = lifecycle.current(
                cfg,
                activation=stored,
                since=r["since"],
                scope=r["scope"],
                importance=importance,
                now=now,
            )
            if (
                lifecycle.days_between(r["last_access"], now) >= cfg.archive_silent_days
                and activation <= cfg.archive_max_activation
                and importance < cfg.archive_keep_importance
            ):
                archive.append((at, activation, at, claim_id))
            elif abs(activation - stored) > ACTIVATION_EPSILON:
                writes.append((activation, at, claim_id))
        tx.executemany("maintenance_archive_claim", archive)
        dropped = self._leave_recall(tx, now, [a[3] for a in archive])
        tx.executemany("maintenance_write_activation", writes)
        following = int(window[-1]["rowid"]) if len(window) >= self.limit else None
        return (
            DecayReport(scanned=len(window), decayed=len(writes)),
            ArchiveReport(archived=len(archive), vectors_dropped=dropped),
            following,
        )

    def _leave_recall(self, tx: SyncTx, now: datetime, claim_ids: list[str]) -> int:
        """Claims that left current belief: their vectors go (logged for the in-memory
        indexes), and what was derived from them must be recomputed. Vectors dropped."""
        if not claim_ids:
            return 0
        ids = json.dumps(claim_ids)
        dropped = tx.execute("maintenance_drop_claim_vectors", (ids,))
        tx.execute("maintenance_invalidate_observations", {"now": iso(now), "ids": ids})
        return dropped

    def _merge(self, tx: SyncTx, now: datetime, merges: list[_Merge]) -> tuple[int, int]:
        """Carry out the planned merges whose two claims are still active; (merged, vectors
        dropped)."""
        if not merges:
            return 0, 0
        at = iso(now)
        ids = sorted({m.loser for m in merges} | {m.survivor for m in merges})
        live = {
            r["id"]: _Use.from_row(r)
            for r in tx.fetchall("maintenance_merge_rows", (json.dumps(ids),))
        }
        merged: list[str] = []
        for m in merges:
            if m.loser not in live or m.survivor not in live:
                continue  # merged, archived or forgotten since prepare read them
            keep = {"target": m.survivor, "source": m.loser}
            tx.execute("move_evidence", keep)
            tx.execute("maintenance_copy_entities", keep)
            tx.execute("maintenance_copy_merges", keep)
            merge = (m.survivor, m.loser, m.similarity, m.reason, at)
            tx.execute("maintenance_record_merge", merge)
            tx.execute("maintenance_merge_claim", {**keep, "now": at})
            tx.execute("insert_supersession", (m.loser, m.survivor, f"merged: {m.reason}", at))
            tx.execute("fts_delete", ("claim", m.loser))
            live[m.survivor] = self._absorb(tx, now, live[m.survivor], live.pop(m.loser))
            merged.append(m.loser)
        return len(merged), self._leave_recall(tx, now, merged)

    def _absorb(self, tx: SyncTx, now: datetime, survivor: _Use, loser: _Use) -> _Use:
        """The survivor keeps the use of both: the higher activation (decayed to now), the
        accesses of both, the latest access, the better feedback. Its new row."""

        def activation(r: _Use) -> float:
            return lifecycle.current(
                self.cfg,
                activation=r.activation,
                since=r.since,
                scope=r.scope,
                importance=r.importance,
                now=now,
            )

        at = iso(now)
        accessed = [t for t in (survivor.last_accessed_at, loser.last_accessed_at) if t is not None]
        row = _Use(
            survivor.id,
            max(activation(survivor), activation(loser)),
            at,
            survivor.scope,
            survivor.importance,
            survivor.access_count + loser.access_count,
            max(accessed) if accessed else None,
            max(survivor.utility, loser.utility),
        )
        tx.execute(
            "maintenance_absorb",
            (row.activation, at, row.access_count, row.last_accessed_at, row.utility, row.id),
        )
        return row

    @staticmethod
    def _reindex(tx: SyncTx, rows: list[tuple[str, str, str, str]]) -> int:
        if not rows:
            return 0
        ok = {
            r["id"]
            for r in tx.fetchall("maintenance_reindexable", (json.dumps([r[1] for r in rows]),))
        }
        writes = [r for r in rows if r[1] in ok]
        tx.executemany("fts_insert", writes)
        return len(writes)

    def _observations(self, tx: SyncTx, now: datetime, after: int) -> tuple[int, int, int | None]:
        found = tx.fetchall("maintenance_stale_observations", {"after": after, "limit": self.limit})
        orphans = [r["id"] for r in found if r["live"] == 0]
        if orphans:
            tx.execute(
                "maintenance_archive_observations", {"now": iso(now), "ids": json.dumps(orphans)}
            )
        following = int(found[-1]["rowid"]) if len(found) >= self.limit else None
        return len(orphans), len(found) - len(orphans), following

    def _vector_log(self, tx: SyncTx, now: datetime) -> tuple[int, bool]:
        """Prune deletions logged before the mark set ``vector_log_keep_days`` ago, then mark
        the log's head; (pruned, more left)."""
        head = int(tx.fetchall("maintenance_vector_log_head")[0]["head"])
        found = tx.fetchall("maintenance_state_get", (VECTOR_LOG,))
        keep_days = self.cfg.vector_log_keep_days
        if found and lifecycle.days_between(found[0]["marked_at"], now) < keep_days:
            return 0, False
        pruned = 0
        if found:
            pruned = tx.execute(
                "maintenance_prune_vector_log",
                {"upto": int(found[0]["cursor"]), "limit": self.limit},
            )
            if pruned >= self.limit:
                return pruned, True
        tx.execute("maintenance_state_set", (VECTOR_LOG, head, iso(now)))
        return pruned, False
