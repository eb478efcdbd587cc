"""Import of an ``hlmem-export`` file into a store: the writing half of :mod:`hlmem.portable.reader`
(whose docstring describes the format and the import's rules).

:class:`Importer` takes a file that :func:`hlmem.portable.reader.validate_file` accepted and writes
it in batches of at most :data:`~hlmem.portable.reader.PAGE_ROWS` records, each in one short writer
transaction (``Store.run_in_transaction``), so the pipeline keeps the writer between batches.
CPU work (segmentation for the full-text rows, the dedup comparisons) runs in a worker thread
before each transaction; the transaction re-checks tombstones, so a forget that commits during
an import still wins. What it keeps in memory is ids only: the claim id map, the ids of the
events and claims it wrote.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import anyio

from hlmem.claims import claim_hash, claim_secret, slot_key, value_key
from hlmem.clock import iso
from hlmem.config import Config
from hlmem.index import claim_search_text, fts_row
from hlmem.jobs import JobQueue, JobSpec
from hlmem.lang import Lexicon, content_hash, derived_id, event_body, find_secrets, normalize
from hlmem.lang.atoms import analysis as atoms
from hlmem.messages import (
    EMBED_BACKFILL_KEY,
    ClaimDraft,
    ClaimsPending,
    EmbedClaims,
    EvidenceSpan,
    JobKind,
    dumps_metadata,
)
from hlmem.portable.reader import (
    PAGE_ROWS,
    RECORD_ORDER,
    AdmissionRecord,
    ClaimRecord,
    EventRecord,
    ImportCounts,
    ImportSummary,
    MergeRecord,
    Record,
    SessionRecord,
    SupersessionRecord,
    TombstoneRecord,
    VectorRecord,
    embedding_model,
    read_batches,
    validate_file,
)
from hlmem.store import Store, SyncTx

log = logging.getLogger(__name__)


@dataclass
class _Decision:
    record: ClaimRecord
    chash: str
    skey: str
    vkey: str
    outcome: Literal["new", "duplicate", "merge", "refused"] = "new"
    target: str | None = None
    similarity: float | None = None
    reason: str = ""
    status: str = ""
    fts: tuple[str, str, str, str] | None = None


@dataclass
class _State:
    snapshot: int
    reuse_vectors: bool
    #: imported claim id -> the claim that holds it here (None: refused)
    claim_map: dict[str, str | None] = field(default_factory=dict)
    #: claims inserted by this import, with the successor the file names
    new_claims: dict[str, str | None] = field(default_factory=dict)
    new_events: set[str] = field(default_factory=set)
    #: imported events holding a secret: their file vectors are not kept (re-embedded redacted)
    secret_events: set[str] = field(default_factory=set)
    pending: list[str] = field(default_factory=list)
    counts: dict[str, dict[str, int]] = field(
        default_factory=lambda: {
            t: dict.fromkeys(ImportCounts.model_fields, 0) for t in RECORD_ORDER
        }
    )

    def add(self, kind: str, what: str, n: int = 1) -> None:
        self.counts[kind][what] += n


class Importer:
    """Writes a validated export file into a store (module docstring)."""

    def __init__(
        self, store: Store, queue: JobQueue, cfg: Config, lexicon: Lexicon, now: datetime
    ) -> None:
        self.store = store
        self.queue = queue
        self.cfg = cfg
        self.lexicon = lexicon
        self.now = iso(now)

    async def run(self, path: Path) -> ImportSummary:
        """Validate ``path``, then import it.

        :raises InputError: the file does not validate (nothing is written).
        :raises StoreError: a write failed (the batches before it stay: importing again
            completes the import and changes nothing twice).
        """
        header = await anyio.to_thread.run_sync(validate_file, path)
        model = embedding_model(self.cfg.embedder)
        state = _State(
            snapshot=int(await self.store.scalar("max_claim_rowid")),
            reuse_vectors=header.embedding == model,
        )
        batches = read_batches(path)
        while True:
            item = await anyio.to_thread.run_sync(next, batches, None)
            if item is None:
                break
            kind, records = item
            if kind == "supersession" and state.new_claims:
                await self._link_successors(state)
            await getattr(self, f"_{kind}")(state, records)
        if not header.counts.get("supersession"):
            await self._link_successors(state)
        await self._enqueue(state)
        summary = ImportSummary(
            path=str(path),
            format_version=header.version,
            namespaces=header.namespaces,
            counts={k: ImportCounts(**v) for k, v in state.counts.items()},
            vectors_reused=state.reuse_vectors and header.counts.get("vector", 0) > 0,
            reembedding=bool(state.new_claims or state.new_events)
            and not (state.reuse_vectors and header.counts.get("vector", 0) > 0),
            placed_by_conflict=len(state.pending),
        )
        log.info("imported", extra={"action": "import", "path": str(path)})
        return summary

    # --- per record type ------------------------------------------------------------------------

    async def _tombstone(self, state: _State, records: list[Record]) -> None:
        rows = [
            (r.kind, r.key, r.namespace, r.reason, iso(r.created_at), r.blocked)
            for r in records
            if isinstance(r, TombstoneRecord)
        ]

        def write(tx: SyncTx) -> int:
            return tx.executemany("import_tombstone", rows)

        n = await self.store.run_in_transaction(write)
        state.add("tombstone", "imported", n)
        state.add("tombstone", "duplicate", len(rows) - n)

    async def _session(self, state: _State, records: list[Record]) -> None:
        rows = [
            (
                r.namespace,
                r.session_id,
                r.session_kind.value,
                iso(r.started_at),
                iso(r.ended_at) if r.ended_at else None,
            )
            for r in records
            if isinstance(r, SessionRecord)
        ]

        def write(tx: SyncTx) -> int:
            keys = json.dumps([[r[0], r[1]] for r in rows])
            known = len(tx.fetchall("import_known_sessions", (keys,)))
            tx.executemany("import_session", rows)
            return known

        known = await self.store.run_in_transaction(write)
        state.add("session", "imported", len(rows) - known)
        state.add("session", "duplicate", known)

    async def _event(self, state: _State, records: list[Record]) -> None:
        events = [r for r in records if isinstance(r, EventRecord)]

        def prepare() -> tuple[list[tuple[Any, ...]], dict[str, tuple[str, str, str, str]]]:
            rows = [
                (
                    e.id,
                    e.namespace,
                    e.session_id,
                    e.role.value,
                    e.content,
                    content_hash(e.content),
                    iso(e.occurred_at),
                    iso(e.recorded_at),
                    e.origin_class.value,
                    e.session_kind.value,
                    dumps_metadata(e.metadata),
                )
                for e in events
            ]
            fts = {e.id: ("event", e.id, e.namespace, event_body(e.content)) for e in events}
            state.secret_events |= {e.id for e in events if find_secrets(e.content)}
            return rows, fts

        # The extractor's own full-text row of an event (its body is already segmented).
        rows, fts = await anyio.to_thread.run_sync(prepare)

        def write(tx: SyncTx) -> tuple[set[str], int, int]:
            ids = json.dumps([r[0] for r in rows])
            known = {r["id"] for r in tx.fetchall("existing_event_ids", (ids,))}
            new = [r for r in rows if r[0] not in known]
            tx.executemany("insert_event", new)
            sessions = {(r[1], r[2]): (r[1], r[2], r[9], r[7]) for r in new}
            tx.executemany("insert_session", list(sessions.values()))
            stored = {
                r["id"]
                for r in tx.fetchall("existing_event_ids", (json.dumps([r[0] for r in new]),))
            }
            tx.executemany("fts_insert", [fts[i] for i in sorted(stored)])
            return stored, len(known), len(new) - len(stored)

        stored, duplicate, refused = await self.store.run_in_transaction(write)
        state.new_events |= stored
        state.add("event", "imported", len(stored))
        state.add("event", "duplicate", duplicate)
        state.add("event", "refused", refused)

    async def _claim(self, state: _State, records: list[Record]) -> None:
        decisions = await self._decide([r for r in records if isinstance(r, ClaimRecord)], state)

        def write(tx: SyncTx) -> None:
            self._write_claims(tx, decisions)

        await self.store.run_in_transaction(write)
        for d in decisions:
            r = d.record
            if d.outcome == "new":
                state.claim_map[r.id] = r.id
                state.new_claims[r.id] = r.superseded_by if d.status != "pending" else None
                if d.status == "pending":
                    state.pending.append(r.id)
                state.add("claim", "imported")
            elif d.outcome == "refused":
                state.claim_map[r.id] = None
                state.add("claim", "refused")
            else:
                state.claim_map[r.id] = d.target
                state.add("claim", "merged" if d.outcome == "merge" else "duplicate")

    async def _supersession(self, state: _State, records: list[Record]) -> None:
        rows = []
        for r in records:
            assert isinstance(r, SupersessionRecord)
            new = state.claim_map.get(r.new)
            if r.old not in state.new_claims:
                state.add("supersession", "duplicate" if r.old in state.claim_map else "refused")
            elif new is None or new == r.old:
                state.add("supersession", "refused")
            else:
                rows.append((r.old, new, r.reason, iso(r.created_at)))

        def write(tx: SyncTx) -> int:
            return tx.executemany("insert_supersession", rows)

        n = await self.store.run_in_transaction(write)
        state.add("supersession", "imported", n)
        state.add("supersession", "duplicate", len(rows) - n)

    async def _merge(self, state: _State, records: list[Record]) -> None:
        rows = []
        for r in records:
            assert isinstance(r, MergeRecord)
            holder = state.claim_map.get(r.claim_id)
            if holder is None:
                state.add("merge", "refused")
                continue
            rows.append(
                (
                    holder,
                    r.source_key,
                    r.stage,
                    r.similarity,
                    r.reason,
                    iso(r.created_at),
                    r.source_hash,
                )
            )

        def write(tx: SyncTx) -> int:
            return tx.executemany("insert_merge_hashed", rows)

        n = await self.store.run_in_transaction(write)
        state.add("merge", "imported", n)
        state.add("merge", "duplicate", len(rows) - n)

    async def _admission(self, state: _State, records: list[Record]) -> None:
        rows = [
            (r.event_id, r.claim_key, r.mode, r.decision, r.rule, iso(r.created_at))
            for r in records
            if isinstance(r, AdmissionRecord) and r.event_id in state.new_events
        ]

        def write(tx: SyncTx) -> int:
            return tx.executemany("insert_admission_decision", rows)

        await self.store.run_in_transaction(write)
        state.add("admission", "imported", len(rows))
        state.add("admission", "duplicate", len(records) - len(rows))

    async def _vector(self, state: _State, records: list[Record]) -> None:
        rows = []
        for r in records:
            assert isinstance(r, VectorRecord)
            owners = state.new_claims if r.owner_kind == "claim" else state.new_events
            kept = r.owner_kind != "event" or r.owner_id not in state.secret_events
            if state.reuse_vectors and r.owner_id in owners and kept:
                rows.append(
                    (
                        r.owner_kind,
                        r.owner_id,
                        None,  # filled from the owner by a trigger
                        r.model_id,
                        r.model_version,
                        r.dim,
                        r.raw(),
                        iso(r.created_at),
                    )
                )
            else:
                # another model (the embedder's backfill embeds anew), or an owner this import
                # did not write (already here, or refused)
                state.add("vector", "duplicate" if state.reuse_vectors else "refused")

        def write(tx: SyncTx) -> int:
            before = len(tx.fetchall("vector_owners_present", (self._owners(rows),)))
            tx.executemany("vector_upsert", rows)
            after = len(tx.fetchall("vector_owners_present", (self._owners(rows),)))
            return after - before

        n = await self.store.run_in_transaction(write) if rows else 0
        state.add("vector", "imported", n)
        state.add("vector", "refused", len(rows) - n)

    def _owners(self, rows: list[tuple[Any, ...]]) -> str:
        return json.dumps([[r[0], r[1], r[3]] for r in rows])

    # --- claims: dedup against what the store held before the import ---------------------------

    async def _decide(self, records: list[ClaimRecord], state: _State) -> list[_Decision]:
        decisions = [self._keys(r) for r in records]
        ids = json.dumps([d.record.id for d in decisions])
        known = {
            r["id"]: r["held_by"]
            for r in await self.store.fetchall("import_known_claims", {"ids": ids})
        }
        same: dict[tuple[str, str], list[Any]] = {}
        keys = json.dumps(sorted({(d.record.namespace, d.chash) for d in decisions}))
        for r in await self.store.fetchall(
            "import_same_hash", {"keys": keys, "snapshot": state.snapshot}
        ):
            same.setdefault((r["namespace"], r["content_hash"]), []).append(r)
        slots: dict[tuple[str, str], list[Any]] = {}
        for d in decisions:
            slot = (d.record.namespace, d.skey)
            if d.record.status == "active" and slot not in slots:
                slots[slot] = await self.store.fetchall(
                    "import_slot_live",
                    {
                        "namespace": slot[0],
                        "slot_key": slot[1],
                        "snapshot": state.snapshot,
                        "limit": self.cfg.dedup.candidates_max,
                    },
                )

        def decide() -> None:
            for d in decisions:
                r = d.record
                if r.id in known:
                    d.outcome, d.target = "duplicate", known[r.id]
                    continue
                texts = (r.text, *r.qualifiers, *(e.quote for e in r.evidence))
                if claim_secret(r.subject, r.predicate, r.value, texts):  # never a claim
                    d.outcome = "refused"
                    continue
                self._dedup(d, same.get((r.namespace, d.chash), []), slots)
                if d.outcome == "new":
                    words = self.lexicon.search_words(r.predicate)
                    text = claim_search_text(r.text, r.value, r.predicate, words)
                    d.fts = fts_row("claim", r.id, r.namespace, text)

        await anyio.to_thread.run_sync(decide)
        return decisions

    def _keys(self, r: ClaimRecord) -> _Decision:
        draft = ClaimDraft(
            subject=r.subject,
            predicate=r.predicate,
            value=r.value,
            text=r.text,
            language=r.language,
            polarity=r.polarity,
            qualifiers=r.qualifiers,
            evidence=(EvidenceSpan(event_id="-", quote="", start_char=0, end_char=0),),
        )
        return _Decision(
            r, claim_hash(draft), slot_key(r.namespace, r.subject, r.predicate), value_key(r.value)
        )

    def _dedup(
        self, d: _Decision, same: list[Any], slots: dict[tuple[str, str], list[Any]]
    ) -> None:
        """Exact hash, then (current claims) the dedup stage's rules; else a new claim, placed
        by the conflict stage when its slot already holds a live claim of this store."""
        r = d.record
        exact = [s for s in same if s["status"] in ("active", "pending") or s["status"] == r.status]
        if exact:
            d.outcome, d.target, d.similarity = "merge", exact[0]["id"], 1.0
            d.reason = "import: exact (same subject, predicate, value, polarity, qualifiers)"
            return
        d.status = r.status
        if r.status != "active":
            return
        live = slots.get((r.namespace, d.skey), [])
        best: tuple[float, str] | None = None
        for k in live:
            same_fact, sim, _ = atoms.same_fact(
                r.text,
                k["text"],
                a_subject=r.subject,
                b_subject=k["subject"],
                a_polarity=r.polarity,
                b_polarity=k["polarity"],
                threshold=self.cfg.dedup.similarity_threshold,
            )
            if same_fact and (best is None or sim > best[0]):
                best = (sim, k["id"])
        if best is not None:
            d.outcome, d.target, d.similarity = "merge", best[1], best[0]
            d.reason = f"import: similar {best[0]:.2f}, every protected atom agrees"
        elif live:
            d.status = "pending"

    def _write_claims(self, tx: SyncTx, decisions: list[_Decision]) -> None:
        """Inside the transaction: re-check tombstones (a forget may have committed since the
        decisions were read), then write claims, evidence, entities and merges."""
        pairs: list[list[str]] = []
        events: set[str] = set()
        for d in decisions:
            r = d.record
            pairs += [["claim", r.id], ["slot", f"{r.namespace}:{d.chash}"]]
            pairs += [["claim", d.target]] if d.target else []
            events |= {e.event_id for e in r.evidence}
        hits = {(h["kind"], h["key"]) for h in tx.fetchall("tombstoned_any", (json.dumps(pairs),))}
        event_ids = json.dumps(sorted(events))
        gone = {h["key"] for h in tx.fetchall("import_event_tombstoned", (event_ids,))}
        present = {h["id"] for h in tx.fetchall("existing_event_ids", (event_ids,))}
        claims, evidence, merges, entities, links, fts = [], [], [], [], [], []
        for d in decisions:
            r = d.record
            if d.outcome in ("duplicate", "refused"):
                continue
            if (
                ("claim", r.id) in hits
                or ("slot", f"{r.namespace}:{d.chash}") in hits
                or (d.target is not None and ("claim", d.target) in hits)
                or any(e.event_id in gone for e in r.evidence)
                or not any(e.event_id in present for e in r.evidence)
            ):
                d.outcome = "refused"
                continue
            holder = d.target if d.outcome == "merge" else r.id
            assert holder is not None
            evidence += [
                (holder, e.event_id, e.quote, e.start_char, e.end_char)
                for e in r.evidence
                if e.event_id in present
            ]
            for ent in r.entities:
                entity_id = derived_id("ent", r.namespace, normalize(ent.name), ent.kind)
                entities.append(
                    (entity_id, r.namespace, ent.name, normalize(ent.name), ent.kind, self.now)
                )
                links.append((holder, entity_id))
            if d.outcome == "merge":
                merges.append((holder, r.id, "import", d.similarity, d.reason, self.now, d.chash))
                continue
            claims.append(self._claim_row(d))
            if d.fts is not None:
                fts.append(d.fts)
        tx.executemany("import_claim", claims)
        tx.executemany("fts_insert", fts)
        tx.executemany("insert_evidence", evidence)
        tx.executemany("insert_merge_hashed", merges)
        tx.executemany("upsert_entity", entities)
        tx.executemany("insert_claim_entity", links)

    @staticmethod
    def _claim_row(d: _Decision) -> dict[str, Any]:
        r = d.record

        def t(value: datetime | None) -> str | None:
            return iso(value) if value else None

        return {
            "id": r.id,
            "namespace": r.namespace,
            "subject": r.subject,
            "predicate": r.predicate,
            "value": r.value,
            "text": r.text,
            "qualifiers": json.dumps(list(r.qualifiers), ensure_ascii=False),
            "polarity": r.polarity,
            "scope": r.scope,
            "importance": r.importance,
            "confidence": r.confidence,
            "language": r.language,
            "content_hash": d.chash,
            "slot_key": d.skey,
            "value_key": d.vkey,
            "status": d.status,
            "valid_from": t(r.valid_from),
            "valid_to": t(r.valid_to),
            "recorded_at": iso(r.recorded_at),
            "retracted_at": t(r.retracted_at) if d.status != "pending" else None,
            "activation": r.activation,
            "access_count": r.access_count,
            "last_accessed_at": t(r.last_accessed_at),
            "utility": r.utility,
            "extractor": r.extractor,
            "window_id": r.window_id,
            "source": r.source,
            "created_at": t(r.created_at),
            "activation_at": t(r.activation_at),
            "archived_at": t(r.archived_at),
            "archive_reason": r.archive_reason,
        }

    async def _link_successors(self, state: _State) -> None:
        """Set superseded_by of the claims this import inserted, renamed onto the claims their
        successors merged into; a successor that was refused leaves none (as after a forget)."""
        rows = [
            (state.claim_map.get(successor), claim_id)
            for claim_id, successor in state.new_claims.items()
            if successor is not None
        ]
        rows = [r for r in rows if r[0] is not None and r[0] != r[1]]
        for start in range(0, len(rows), PAGE_ROWS):
            chunk = rows[start : start + PAGE_ROWS]

            def write(tx: SyncTx, chunk: list[tuple[Any, ...]] = chunk) -> None:
                tx.executemany("import_claim_successor", chunk)

            await self.store.run_in_transaction(write)
        # linked once: a later batch of supersessions must not link again
        state.new_claims = dict.fromkeys(state.new_claims)

    async def _enqueue(self, state: _State) -> None:
        """Pending claims to the conflict stage; the embedder's backfill for claims without a
        vector of the configured model (it finds nothing when the file's vectors were kept)."""
        specs = [
            JobSpec(
                JobKind.CONFLICT,
                ClaimsPending(claim_ids=tuple(state.pending[i : i + PAGE_ROWS])),
                size=len(state.pending[i : i + PAGE_ROWS]),
            )
            for i in range(0, len(state.pending), PAGE_ROWS)
        ]
        if state.new_claims or state.new_events:
            specs.append(JobSpec(JobKind.EMBEDDER, EmbedClaims(), dedup_key=EMBED_BACKFILL_KEY))
        if not specs:
            return

        def write(tx: SyncTx) -> None:
            self.queue.enqueue_sync(tx, specs)

        await self.store.run_in_transaction(write)
        self.queue.ring({s.kind for s in specs})
