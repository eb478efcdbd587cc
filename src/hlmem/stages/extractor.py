"""Extractor: one extraction per closed window, claims written with their evidence.

``prepare`` loads each window's pieces (one read for the batch) and runs the extractor outside
the transaction; ``apply`` writes, for each window not yet extracted, one ``extractions`` row,
its claims and their evidence links. Claim ids derive from the window id and the claim's place
and content, so a replayed job writes nothing new, and the ``extractions`` row (keyed by window)
is the proof that each window was extracted exactly once.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from itertools import groupby

import anyio

from hlmem import rules
from hlmem.clock import Clock, iso, parse_iso
from hlmem.messages import ClaimDraft, Job, Role, WindowClosed, WindowPiece, WindowText
from hlmem.queue import JobSpec
from hlmem.stages.base import Stage
from hlmem.store import Store, Tx
from hlmem.text import content_hash, derived_id

Extracted = list[tuple[int, WindowText, list[ClaimDraft]]]


class Extractor(Stage[Extracted]):
    name = "extractor"

    def __init__(
        self,
        store: Store,
        clock: Clock,
        *,
        extract: Callable[[WindowText], list[ClaimDraft]] = rules.extract,
        extractor_name: str = rules.NAME,
    ) -> None:
        self.store = store
        self.clock = clock
        self.extract = extract
        self.extractor_name = extractor_name

    async def prepare(self, jobs: list[Job]) -> Extracted:
        by_window = {j.payload.window_id: j for j in jobs if isinstance(j.payload, WindowClosed)}
        rows = await self.store.fetchall("window_pieces", (json.dumps(list(by_window)),))
        windows = []
        for window_id, group in groupby(rows, key=lambda r: r[0]):
            pieces = list(group)
            windows.append(
                WindowText(
                    window_id=window_id,
                    namespace=pieces[0][1],
                    session_id=pieces[0][2],
                    pieces=tuple(
                        WindowPiece(
                            event_id=r[3],
                            chunk_no=r[4],
                            chunk_count=r[5],
                            start_char=r[6],
                            end_char=r[7],
                            role=Role(r[8]),
                            occurred_at=parse_iso(r[9]),
                            text=r[10],
                        )
                        for r in pieces
                    ),
                )
            )

        def run() -> Extracted:
            return [(by_window[w.window_id].id, w, self.extract(w)) for w in windows]

        return await anyio.to_thread.run_sync(run)

    async def apply(self, tx: Tx, jobs: list[Job], prepared: Extracted) -> list[JobSpec]:
        ids = json.dumps([w.window_id for _, w, _ in prepared])
        done = {r[0] for r in await tx.fetchall("existing_extractions", (ids,))}
        now = iso(self.clock.now())
        extractions: list[tuple[object, ...]] = []
        claims: list[tuple[object, ...]] = []
        evidence: list[tuple[object, ...]] = []
        for job_id, window, drafts in prepared:
            if window.window_id in done:
                continue
            occurred = {p.event_id: p.occurred_at for p in window.pieces}
            extractions.append(
                (window.window_id, self.extractor_name, "", len(drafts), job_id, now)
            )
            for index, draft in enumerate(drafts):
                chash = content_hash(f"{draft.subject}\x1f{draft.predicate}\x1f{draft.value}")
                claim_id = derived_id("clm", window.window_id, index, chash)
                first = draft.evidence[0].event_id
                claims.append(
                    (
                        claim_id,
                        window.namespace,
                        draft.subject,
                        draft.predicate,
                        draft.value,
                        draft.text,
                        json.dumps(list(draft.qualifiers), ensure_ascii=False),
                        draft.polarity,
                        draft.importance,
                        draft.confidence,
                        draft.language,
                        chash,
                        derived_id("slot", window.namespace, draft.subject, draft.predicate),
                        iso(occurred[first]) if first in occurred else None,
                        now,
                        self.extractor_name,
                        window.window_id,
                    )
                )
                evidence.extend(
                    (claim_id, span.event_id, span.quote, span.start_char, span.end_char)
                    for span in draft.evidence
                )
        await tx.executemany("insert_extraction", extractions)
        await tx.executemany("insert_claim", claims)
        await tx.executemany("insert_evidence", evidence)
        return []
