"""Dedup: exact hash → protected-atom gate → similarity (→ optional model audit).

For each admitted candidate, in order:

1. **Exact:** a live claim (pending or active) with the same :func:`~hlmem.claims.slots.claim_hash`
   (subject, predicate, value, polarity, qualifiers, folded) is the same statement.
2. **Protected atoms, then similarity:** the newest live claims of the same slot are compared
   with :func:`hlmem.lang.atoms.analysis.same_fact`: every protected atom (subject, numbers,
   versions, dates, paths, negation, quotes, names) must agree *and* the texts must be at least
   ``dedup.similarity_threshold`` alike. Otherwise both are kept: a duplicate wastes a little
   space, a wrong merge rewrites a fact.
3. **Audit (optional, off by default):** a pair whose atoms agree and whose similarity falls in
   ``[audit_low, similarity_threshold)`` is asked of a model through the gateway.

A merge adds the candidate's evidence to the existing claim (and a ``claim_merges`` row saying
why, with the candidate's content hash, so that a forget of the claim tombstones every wording
it merged); a new claim is written as ``pending`` with its evidence and entities and goes on to
the conflict stage. Comparisons run in ``prepare`` on a snapshot; ``apply`` re-checks, inside
the transaction, the claims other processes wrote since, so two workers cannot both add the
same fact, and drops candidates that a forget committed since admission let them through.
A user correction (:mod:`hlmem.lifecycle.correct`) is never merged: the conflict stage places it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import anyio

from hlmem.claims import claim_hash, slot_key, tombstone_key, value_key
from hlmem.clock import Clock, iso
from hlmem.config import DedupConfig
from hlmem.errors import ConfigError
from hlmem.gateway import Gateway, audit_request, parse_audit
from hlmem.index import claim_search_text, fts_row
from hlmem.jobs import JobSpec
from hlmem.lang import Lexicon, derived_id, normalize
from hlmem.lang.atoms import analysis as atoms
from hlmem.messages import (
    CORRECTION_EXTRACTOR,
    Candidate,
    ClaimsAdmitted,
    ClaimsPending,
    Job,
    JobKind,
)
from hlmem.stages.base import Stage
from hlmem.store import Store, SyncTx


@dataclass
class _Known:
    """A live claim a candidate may merge into."""

    id: str
    subject: str
    text: str
    polarity: int

    @classmethod
    def from_row(cls, r: Any) -> _Known:
        """From a ``slot_candidates`` or ``slot_claims_since`` row."""
        return cls(r["id"], r["subject"], r["text"], r["polarity"])


@dataclass
class _Decision:
    candidate: Candidate
    chash: str
    skey: str
    target: str | None = None
    similarity: float | None = None
    reason: str = ""
    #: grey-zone pairs for the audit: (known claim, similarity)
    grey: list[tuple[_Known, float]] = field(default_factory=list)
    #: the candidate's own claim exists already (a replayed job): nothing is written
    replay: bool = False
    #: a forget stopped it (tombstoned key or slot, or its events are gone): nothing is written
    forgotten: bool = False
    #: the full-text row of a new claim (segmented outside the transaction)
    fts: tuple[str, str, str, str] | None = None

    def merge(self, target: str, similarity: float, reason: str) -> None:
        self.target, self.similarity, self.reason = target, similarity, reason


@dataclass
class _Prepared:
    snapshot: int
    decisions: list[_Decision]


class Dedup(Stage[_Prepared]):
    name = JobKind.DEDUP
    downstream = JobKind.CONFLICT

    def __init__(
        self,
        store: Store,
        clock: Clock,
        cfg: DedupConfig,
        *,
        gateway: Gateway | None,
        lexicon: Lexicon,
    ) -> None:
        """``gateway`` is None when nothing calls a model.

        :raises ConfigError: ``dedup.audit`` is on and no gateway.
        """
        if cfg.audit and gateway is None:
            raise ConfigError("dedup.audit needs a model gateway (none was given)")
        self.lexicon = lexicon
        self.store = store
        self.clock = clock
        self.cfg = cfg
        self.gateway = gateway

    async def prepare(self, jobs: list[Job]) -> _Prepared:
        snapshot = int(await self.store.scalar("max_claim_rowid"))
        decisions = [
            _Decision(
                c, claim_hash(c.draft), slot_key(c.namespace, c.draft.subject, c.draft.predicate)
            )
            for j in jobs
            if isinstance(j.payload, ClaimsAdmitted)
            for c in j.payload.candidates
        ]
        by_hash = {
            (r["namespace"], r["content_hash"]): r["id"]
            for r in await self.store.fetchall(
                "claims_by_hash",
                (json.dumps([[d.candidate.namespace, d.chash] for d in decisions]),),
            )
        }
        slots: dict[tuple[str, str], list[_Known]] = {}
        for d in decisions:
            key = (d.candidate.namespace, d.skey)
            if key not in slots and (key[0], d.chash) not in by_hash:
                rows = await self.store.fetchall(
                    "slot_candidates", (key[0], key[1], self.cfg.candidates_max)
                )
                slots[key] = [_Known.from_row(r) for r in rows]

        def decide() -> None:
            for d in decisions:
                self._decide(d, by_hash, slots)
                if d.target is None and not d.replay:
                    c = d.candidate
                    d.fts = fts_row("claim", c.key, c.namespace, self._search_text(c))

        await anyio.to_thread.run_sync(decide)
        if self.cfg.audit:
            await self._audit(decisions)
        return _Prepared(snapshot, decisions)

    def _search_text(self, c: Candidate) -> str:
        """What full-text search finds a claim by (with its slot's names in both languages:
        "界面主题" / "UI theme" for ui_theme); maintenance re-indexes with the same text."""
        d = c.draft
        return claim_search_text(
            d.text, d.value, d.predicate, self.lexicon.search_words(d.predicate)
        )

    def _decide(
        self,
        d: _Decision,
        by_hash: dict[tuple[str, str], str],
        slots: dict[tuple[str, str], list[_Known]],
    ) -> None:
        c = d.candidate
        exact = by_hash.get((c.namespace, d.chash))
        if exact == c.key:  # a replayed job finds its own claim: nothing to do
            d.replay = True
            return
        if c.extractor == CORRECTION_EXTRACTOR:
            # A user correction is its own claim, which conflict places over the claim it
            # corrects (or folds into the claim that already holds its value).
            known = slots.get((c.namespace, d.skey), [])
            d.replay = any(k.id == c.key for k in known)
            return
        if exact is not None:
            d.merge(exact, 1.0, "exact: same subject, predicate, value, polarity, qualifiers")
            return
        known = slots.setdefault((c.namespace, d.skey), [])
        self._compare(d, known)
        if d.target is None and not d.replay:
            # Later candidates of this batch compare with this one too.
            by_hash[(c.namespace, d.chash)] = c.key
            known.insert(0, _Known(c.key, c.draft.subject, c.draft.text, c.draft.polarity))

    def _compare(self, d: _Decision, known: list[_Known]) -> None:
        draft = d.candidate.draft
        best: tuple[float, _Known] | None = None
        mine = atoms.atoms_of(draft.text, subject=draft.subject, polarity=draft.polarity)
        for k in known:
            if k.id == d.candidate.key:
                d.replay = True  # its own claim, from an earlier run of this job
                return
            if not self.cfg.audit:
                # ``same_fact``'s verdict without its reasons (only the audit reads them):
                # atoms first, and the texts' similarity only when every atom agrees.
                theirs = atoms.atoms_of(k.text, subject=k.subject, polarity=k.polarity)
                if not atoms.agree(mine, theirs):
                    continue
                sim = atoms.similarity(draft.text, k.text)
                if sim >= self.cfg.similarity_threshold and (best is None or sim > best[0]):
                    best = (sim, k)
                continue
            same, sim, reasons = atoms.same_fact(
                draft.text,
                k.text,
                a_subject=draft.subject,
                b_subject=k.subject,
                a_polarity=draft.polarity,
                b_polarity=k.polarity,
                threshold=self.cfg.similarity_threshold,
            )
            if same and (best is None or sim > best[0]):
                best = (sim, k)
            elif self.cfg.audit and sim >= self.cfg.audit_low and _atoms_agree(reasons):
                d.grey.append((k, sim))
        if best is not None:
            d.merge(best[1].id, best[0], f"similar: {best[0]:.2f}, every protected atom agrees")

    async def _audit(self, decisions: list[_Decision]) -> None:
        """Ask the model about grey-zone pairs, most similar first; a yes merges."""
        assert self.gateway is not None
        for d in decisions:
            if d.target is not None or d.replay or not d.grey:
                continue
            for known, sim in sorted(d.grey, key=lambda g: -g[1]):
                answer = await self.gateway.chat(
                    stage=self.name,
                    provider=self.cfg.audit_provider,
                    request=audit_request(self.cfg.audit_model, d.candidate.draft.text, known.text),
                    namespace=d.candidate.namespace,
                )
                if parse_audit(answer.text):
                    d.merge(known.id, sim, f"audit: the model judged {sim:.2f} the same fact")
                    break

    def apply(self, tx: SyncTx, jobs: list[Job], prepared: _Prepared) -> list[JobSpec]:
        decisions = prepared.decisions
        now = iso(self.clock.now())
        self._drop_forgotten(tx, decisions, now)
        self._recheck(tx, prepared)
        merges: list[tuple[object, ...]] = []
        claims: list[tuple[object, ...]] = []
        evidence: list[tuple[object, ...]] = []
        entities: list[tuple[object, ...]] = []
        links: list[tuple[object, ...]] = []
        new_ids: list[str] = []
        for d in decisions:
            if d.replay or d.forgotten:
                continue
            c, draft = d.candidate, d.candidate.draft
            claim_id = d.target or c.key
            evidence.extend(
                (claim_id, e.event_id, e.quote, e.start_char, e.end_char) for e in draft.evidence
            )
            if d.target is not None:
                merges.append((d.target, c.key, self.name, d.similarity, d.reason, now, d.chash))
                continue
            new_ids.append(c.key)
            claims.append(_claim_row(c, d.chash, d.skey, now))
            for name, kind in atoms.entities_of(draft.text):
                entity_id = derived_id("ent", c.namespace, normalize(name), kind)
                entities.append((entity_id, c.namespace, name, normalize(name), kind, now))
                links.append((c.key, entity_id))
        tx.executemany("insert_pending_claim", claims)
        tx.executemany(
            "fts_insert",
            [d.fts for d in decisions if d.fts and d.target is None and not d.forgotten],
        )
        tx.executemany("insert_evidence", evidence)
        tx.executemany("insert_merge_hashed", merges)
        tx.executemany("upsert_entity", entities)
        tx.executemany("insert_claim_entity", links)
        if not new_ids:
            return []
        return [
            JobSpec(JobKind.CONFLICT, ClaimsPending(claim_ids=tuple(new_ids)), size=len(new_ids))
        ]

    def _recheck(self, tx: SyncTx, prepared: _Prepared) -> None:
        """Compare new candidates with live claims written after the snapshot (by another
        process); this process's own earlier batches finished before ``prepare`` read."""
        fresh = [
            d
            for d in prepared.decisions
            if d.target is None
            and not d.replay
            and not d.forgotten
            and d.candidate.extractor != CORRECTION_EXTRACTOR
        ]
        if not fresh:
            return
        mine = {d.candidate.key for d in fresh}
        rows: list[Any] = tx.fetchall(
            "slot_claims_since",
            (prepared.snapshot, json.dumps(sorted({d.skey for d in fresh}))),
        )
        rows = [r for r in rows if r["id"] not in mine]
        for d in fresh:
            c = d.candidate
            for r in rows:
                if (r["namespace"], r["slot_key"]) != (c.namespace, d.skey):
                    continue
                if r["content_hash"] == d.chash:
                    d.merge(r["id"], 1.0, "exact: same subject, predicate, value, polarity")
                    break
                self._compare(d, [_Known.from_row(r)])
                if d.target is not None:
                    break

    def _drop_forgotten(self, tx: SyncTx, decisions: list[_Decision], now: str) -> None:
        """Drop candidates a forget committed after admission let them through: their key or
        slot key is tombstoned, or an evidence event is gone (events only go by forget). A
        candidate merged into a dropped or forgotten claim goes too; each dropped key is
        tombstoned, so nothing waits for it (an in-conversation forget request does)."""
        live = [d for d in decisions if not d.replay]
        if not live:
            return
        pairs: list[list[str]] = []
        events: set[str] = set()
        for d in live:
            c = d.candidate
            pairs += [["claim", c.key], ["slot", tombstone_key(c.namespace, c.draft)]]
            pairs += [["claim", d.target]] if d.target is not None else []
            events |= {e.event_id for e in c.draft.evidence}
        hits = {(r["kind"], r["key"]) for r in tx.fetchall("tombstoned_any", (json.dumps(pairs),))}
        event_ids = json.dumps(sorted(events))
        present = {r["id"] for r in tx.fetchall("existing_event_ids", (event_ids,))}
        dropped: set[str] = set()
        for d in live:
            c = d.candidate
            d.forgotten = (
                ("claim", c.key) in hits
                or ("slot", tombstone_key(c.namespace, c.draft)) in hits
                or any(e.event_id not in present for e in c.draft.evidence)
                or (d.target is not None and (d.target in dropped or ("claim", d.target) in hits))
            )
            if d.forgotten:
                dropped.add(c.key)
        tx.executemany(
            "insert_tombstone",
            [
                ("claim", d.candidate.key, d.candidate.namespace, "forgotten before placed", now)
                for d in live
                if d.forgotten
            ],
        )


def _atoms_agree(reasons: list[str]) -> bool:
    """Whether ``same_fact`` refused only for similarity (every protected atom agreed)."""
    return all(r.startswith("similarity") for r in reasons)


def _claim_row(c: Candidate, chash: str, skey: str, now: str) -> tuple[object, ...]:
    d = c.draft
    return (
        c.key,
        c.namespace,
        d.subject,
        d.predicate,
        d.value,
        d.text,
        json.dumps(list(d.qualifiers), ensure_ascii=False),
        d.polarity,
        d.scope,
        d.importance,
        d.confidence,
        d.language,
        chash,
        skey,
        value_key(d.value),
        iso(d.valid_from) if d.valid_from else None,
        iso(d.valid_to) if d.valid_to else None,
        iso(c.recorded_at),
        c.extractor,
        c.window_id,
        c.source,
        now,
    )
