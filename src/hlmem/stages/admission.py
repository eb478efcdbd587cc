"""Admission: the deterministic worth-remembering gate, per proposed claim.

Source admission (provenance) already ran in the extractor, before any model call. Here each
candidate passes :func:`hlmem.admission.gate` (no information content, one-off operational
noise, secrets) and the tombstones of explicit forgets; every decision is recorded for explain,
and the admitted candidates go on to dedup as one job per batch.
"""

from __future__ import annotations

import json

from hlmem import admission
from hlmem.clock import Clock, iso
from hlmem.messages import Candidate, ClaimsAdmitted, ClaimsProposed, Job
from hlmem.queue import JobSpec
from hlmem.slots import tombstone_key
from hlmem.stages.base import Stage
from hlmem.store import Store, SyncTx

Gated = list[tuple[Candidate, admission.Decision]]

TOMBSTONED = admission.Decision("block", "tombstone")


class Admission(Stage[Gated]):
    name = "admission"
    downstream = "dedup"

    def __init__(self, store: Store, clock: Clock, mode: str) -> None:
        self.store = store
        self.clock = clock
        self.mode = mode

    async def prepare(self, jobs: list[Job]) -> Gated:
        candidates = [
            c for j in jobs if isinstance(j.payload, ClaimsProposed) for c in j.payload.candidates
        ]
        slots = [tombstone_key(c.namespace, c.draft) for c in candidates]
        keys = [k for c, slot in zip(candidates, slots, strict=True) for k in (c.key, slot)]
        gone = {r[0] for r in await self.store.fetchall("tombstoned_keys", (json.dumps(keys),))}
        return [
            (c, TOMBSTONED if c.key in gone or slot in gone else admission.gate(c.draft))
            for c, slot in zip(candidates, slots, strict=True)
        ]

    def apply(self, tx: SyncTx, jobs: list[Job], prepared: Gated) -> list[JobSpec]:
        now = iso(self.clock.now())
        tx.executemany(
            "insert_admission_decision",
            [
                (c.draft.evidence[0].event_id, c.key, self.mode, d.decision, d.rule, now)
                for c, d in prepared
            ],
        )
        admitted = tuple(c for c, d in prepared if d.decision == "admit")
        if not admitted:
            return []
        return [JobSpec("dedup", ClaimsAdmitted(candidates=admitted), size=len(admitted))]
