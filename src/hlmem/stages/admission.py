"""Admission: the deterministic worth-remembering gate, per proposed claim.

Source admission (provenance) already ran in the extractor, before any model call. Here each
candidate passes :func:`hlmem.claims.admission_rules.gate` (no information content, one-off
operational noise, secrets) and the tombstones of explicit forgets (its key, its slot key, its
evidence events); every decision is recorded for explain, and the admitted candidates go on to dedup
as one job per batch. The gate is pure: a batch of at least ``pipeline.offload_min_candidates``
has it computed by the pipeline's CPU helper child when one runs (:mod:`hlmem.pipeline.offload`).

A candidate with the predicate :data:`~hlmem.rules.forget_request.FORGET_PREDICATE` is an
in-conversation forget request ("忘了我刚才说的", "forget what I just said"), never a claim. It
is honoured when its quote is a request by :func:`~hlmem.rules.forget_request.is_forget_request`
(whatever extractor proposed it) and its event is the user's own, from a trusted source. Its
target is what the user "just said": the latest user event before it in the same session,
among the last :data:`REQUEST_LOOKBACK_EVENTS`, that could hold a memory at all
(:func:`hlmem.claims.admission_rules.worth_extracting`, once its own forget requests are taken out:
acknowledgements, thanks and bare requests are skipped). Whatever claims rest on the target are
forgotten as a retraction (:mod:`hlmem.claims.forgetting`: a value it had replaced is believed
again), its candidates still in this batch are blocked, and the event itself is deleted, even when
it gave no claim (a password said by mistake). A candidate blocked as a secret whose payload still
holds it (a job written before drafts were redacted at extraction) has its payload redacted when its
job completes. While the target's window is not extracted yet, or its
admitted candidates are still on their way, the request's job waits
(:class:`~hlmem.errors.ForgetPending`, retried with backoff), so that no claim of it escapes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from hlmem.claims import ForgetPlan, apply_forget, claim_hash, tombstone_key
from hlmem.claims import admission_rules as admission
from hlmem.clock import Clock, iso
from hlmem.errors import ForgetPending
from hlmem.jobs import JobSpec
from hlmem.messages import Candidate, ClaimsAdmitted, ClaimsProposed, Job, JobKind, OriginClass
from hlmem.rules import FORGET_PREDICATE, forget_requests, is_forget_request
from hlmem.stages.base import CpuHelper, Stage
from hlmem.store import Store, SyncTx

TOMBSTONED = admission.Decision("block", "tombstone")
#: what a retracted candidate's text becomes in the job table
FORGOTTEN_TEXT = "[forgotten]"
#: how many earlier user events of the session a forget request looks back over
REQUEST_LOOKBACK_EVENTS = 10
_REQUEST_ORIGINS = frozenset({OriginClass.USER_DIRECT.value, OriginClass.IMPORTED.value})


@dataclass(frozen=True)
class _Request:
    """A forget request and what it resolved to."""

    job_id: int
    candidate: Candidate
    rule: str  # forget_request (honoured) / forget_request:nothing / forget_request:invalid
    namespace: str = ""
    target: str | None = None  # the target event
    in_batch: tuple[Candidate, ...] = ()  # the target's candidates in this batch


@dataclass
class _Gated:
    items: list[tuple[int, Candidate, admission.Decision]] = field(default_factory=list)
    requests: list[_Request] = field(default_factory=list)
    errors: dict[int, Exception] = field(default_factory=dict)


class Admission(Stage[_Gated]):
    name = JobKind.ADMISSION
    downstream = JobKind.DEDUP

    def __init__(
        self, store: Store, clock: Clock, mode: str, *, offloader: CpuHelper | None = None
    ) -> None:
        self.store = store
        self.clock = clock
        self.mode = mode
        #: computes the gate of a big batch in the pipeline's CPU helper child, when it runs
        self.offloader = offloader

    async def prepare(self, jobs: list[Job]) -> _Gated:
        pairs = [
            (j.id, c)
            for j in jobs
            if isinstance(j.payload, ClaimsProposed)
            for c in j.payload.candidates
        ]
        gated = _Gated()
        exclude = [j.id for j in jobs]
        batch = [c for _, c in pairs if c.draft.predicate != FORGET_PREDICATE]
        for job_id, c in pairs:
            if c.draft.predicate == FORGET_PREDICATE:
                try:
                    gated.requests.append(await self._resolve(job_id, c, batch, exclude))
                except ForgetPending as exc:
                    gated.errors[job_id] = exc
        gone = await self._tombstoned([c for _, c in pairs])
        targeted = {
            c.key for r in gated.requests if r.job_id not in gated.errors for c in r.in_batch
        }
        rules = {r.candidate.key: r.rule for r in gated.requests}
        decided: dict[str, admission.Decision] = {}
        for _, c in pairs:
            if c.key in rules:
                decided[c.key] = admission.Decision("block", rules[c.key])
            elif c.key in targeted:
                decided[c.key] = admission.Decision("block", "forget_request:target")
            elif c.key in gone:
                decided[c.key] = TOMBSTONED
        gates = await self._gates([c for _, c in pairs if c.key not in decided])
        for job_id, c in pairs:
            gated.items.append((job_id, c, decided.get(c.key) or gates[c.key]))
        return gated

    async def _gates(self, candidates: list[Candidate]) -> dict[str, admission.Decision]:
        """:func:`hlmem.claims.admission_rules.gate` of each candidate, by key: in the helper child
        for a big batch when it runs, else here."""
        off = self.offloader
        if off is not None and len(candidates) >= off.min_candidates:
            decisions = await off.gate([c.draft for c in candidates])
            if decisions is not None:
                return {c.key: d for c, d in zip(candidates, decisions, strict=True)}
        return {c.key: admission.gate(c.draft) for c in candidates}

    async def _tombstoned(self, candidates: list[Candidate]) -> set[str]:
        """Keys of the candidates a forget stopped: their key, slot key or an evidence event
        is tombstoned, or an evidence event is gone (events only go by forget)."""
        pairs: list[list[str]] = []
        events: set[str] = set()
        for c in candidates:
            pairs += [["claim", c.key], ["slot", tombstone_key(c.namespace, c.draft)]]
            events |= {e.event_id for e in c.draft.evidence}
        pairs += [["event", e] for e in sorted(events)]
        hits = {
            (r["kind"], r["key"])
            for r in await self.store.fetchall("tombstoned_any", (json.dumps(pairs),))
        }
        present = {
            r["id"]
            for r in await self.store.fetchall("existing_event_ids", (json.dumps(sorted(events)),))
        }
        return {
            c.key
            for c in candidates
            if ("claim", c.key) in hits
            or ("slot", tombstone_key(c.namespace, c.draft)) in hits
            or any(
                ("event", e.event_id) in hits or e.event_id not in present for e in c.draft.evidence
            )
        }

    async def _resolve(
        self, job_id: int, c: Candidate, batch: list[Candidate], exclude: list[int]
    ) -> _Request:
        """What a forget request targets (module docstring).

        :raises ForgetPending: the target, or its claims, are still on their way.
        """
        span = c.draft.evidence[0]
        rows = await self.store.fetchall("forget_request_event", (span.event_id,))
        if not rows or not is_forget_request(span.quote):
            return _Request(job_id, c, "forget_request:invalid")
        r = rows[0]
        seq, ns, session = r["seq"], r["namespace"], r["session_id"]
        role, origin, kind = r["role"], r["origin_class"], r["session_kind"]
        if (
            role != "user"
            or origin not in _REQUEST_ORIGINS
            or kind in admission.DEFAULT_UNTRUSTED_SESSION_KINDS
        ):
            return _Request(job_id, c, "forget_request:invalid")
        before = await self.store.fetchall(
            "forget_user_events_before", (ns, session, seq, REQUEST_LOOKBACK_EVENTS)
        )
        event_id = next((b["id"] for b in before if _could_hold_memory(b["content"])), None)
        if event_id is None:
            return _Request(job_id, c, "forget_request:nothing", ns)
        params = {"events": json.dumps([event_id]), "exclude_jobs": json.dumps(exclude)}
        if await self.store.fetchall("forget_events_in_flight", params):
            raise ForgetPending(f"forget request {span.event_id}: event {event_id} is in flight")
        admitted = [
            a["claim_key"] for a in await self.store.fetchall("forget_admitted_keys", (event_id,))
        ]
        if await self.store.fetchall("forget_unsettled_keys", (json.dumps(admitted),)):
            raise ForgetPending(f"forget request {span.event_id}: claims of {event_id} in flight")
        mine = tuple(b for b in batch if b.draft.evidence[0].event_id == event_id)
        return _Request(job_id, c, "forget_request", ns, event_id, mine)

    def job_errors(self, prepared: _Gated) -> dict[int, Exception]:
        return prepared.errors

    def apply(self, tx: SyncTx, jobs: list[Job], prepared: _Gated) -> list[JobSpec]:
        mine = {j.id for j in jobs}
        now = iso(self.clock.now())
        replaced: dict[str, Candidate] = {}
        for r in prepared.requests:
            if r.job_id in mine and r.target is not None:
                apply_forget(tx, _retraction(r, sorted(mine)), now, dry_run=False)
                replaced |= {c.key: _scrubbed(c) for c in r.in_batch}
        items = [(c, d) for job_id, c, d in prepared.items if job_id in mine]
        replaced |= _unredacted(items, replaced)
        if replaced:
            _scrub_jobs(tx, jobs, replaced)
        tx.executemany(
            "insert_admission_decision",
            [
                (c.draft.evidence[0].event_id, c.key, self.mode, d.decision, d.rule, now)
                for c, d in items
            ],
        )
        admitted = tuple(c for c, d in items if d.decision == "admit")
        if not admitted:
            return []
        return [JobSpec(JobKind.DEDUP, ClaimsAdmitted(candidates=admitted), size=len(admitted))]


def _unredacted(
    items: list[tuple[Candidate, admission.Decision]], replaced: dict[str, Candidate]
) -> dict[str, Candidate]:
    """The candidates blocked as secrets whose payload still holds the secret (a job written
    before drafts were redacted, or by a writer that did not redact), redacted."""
    out: dict[str, Candidate] = {}
    for c, d in items:
        if d.rule.startswith("secret:") and c.key not in replaced:
            draft = admission.redacted_draft(c.draft)
            if draft is not c.draft:
                out[c.key] = c.model_copy(update={"draft": draft})
    return out


def _scrub_jobs(tx: SyncTx, jobs: list[Job], replaced: dict[str, Candidate]) -> None:
    """Rewrite candidates in the payloads of this batch's jobs, which stay in the job table
    once done: a forgotten statement (blanked) or a secret (redacted) must not live on there."""
    for job in jobs:
        payload = job.payload
        if not isinstance(payload, ClaimsProposed):
            continue
        if not any(c.key in replaced for c in payload.candidates):
            continue
        kept = tuple(replaced.get(c.key, c) for c in payload.candidates)
        tx.execute("forget_scrub_job", (ClaimsProposed(candidates=kept).model_dump_json(), job.id))


def _scrubbed(c: Candidate) -> Candidate:
    d = c.draft
    spans = tuple(
        e.model_copy(update={"quote": FORGOTTEN_TEXT, "start_char": 0, "end_char": 0})
        for e in d.evidence
    )
    draft = d.model_copy(
        update={
            "value": FORGOTTEN_TEXT,
            "text": FORGOTTEN_TEXT,
            "qualifiers": (),
            "evidence": spans,
        }
    )
    return c.model_copy(update={"draft": draft})


def _could_hold_memory(text: str) -> bool:
    """Whether a user turn may be what a forget request retracts: something worth remembering
    is left once its own forget requests are cut out."""
    cuts = forget_requests(text)
    starts = [0, *(end for _, end in cuts)]
    ends = [*(start for start, _ in cuts), len(text)]
    return admission.worth_extracting("".join(text[a:b] for a, b in zip(starts, ends, strict=True)))


def _retraction(r: _Request, jobs: list[int]) -> ForgetPlan:
    """The forget of a request's target: its event, the claims resting on it and the claims
    its in-batch candidates restate, the candidates themselves (tombstoned), as a retraction."""
    assert r.target is not None
    return ForgetPlan(
        by="request",
        reason=f"forget request in event {r.candidate.draft.evidence[0].event_id}",
        namespace=r.namespace,
        event_ids=frozenset([r.target]),
        restated=frozenset((c.namespace, claim_hash(c.draft)) for c in r.in_batch),
        candidate_keys=frozenset(c.key for c in r.in_batch),
        slot_keys=frozenset(tombstone_key(c.namespace, c.draft) for c in r.in_batch),
        fact_events=frozenset([r.target]),
        reinstate=True,
        exclude_jobs=tuple(jobs),
    )
