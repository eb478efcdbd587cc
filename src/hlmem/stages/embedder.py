"""Embedder: float32 vectors for placed claims and raw events, tagged with the model id and a
version hash.

Claims arrive from conflict once placed; raw events from the extractor once their window is
indexed for full-text recall, so recall's vector channel covers what no extractor turned into a
claim. Which events: ``embedder.events`` — ``"all"``; ``"uncovered"``, those no live claim rests
on (the extractor leaves out the events its proposed claims cite, and the queries here skip an
event a pending, active or superseded claim rests on by the time it is read; a claim archived
since leaves its events uncovered, and the backfill embeds them); or ``"none"``.
An event is embedded by the first ``embedder.event_max_chars`` characters of its text
with its secrets left out (:func:`hlmem.lang.redaction.scrub`, on the whole text, so that no secret
cut at the limit slips through), claims by their text likewise: a vector never encodes a
secret, and a provider embedder never receives one. Texts are
embedded in batches of ``embedder.batch_size``: by the local embedder (in a worker thread, or
for a big batch in the pipeline's CPU helper child, :mod:`hlmem.pipeline.offload`; no model, no
network), by multilingual-e5-small in a worker thread (``"e5"``, :mod:`hlmem.lang.e5`), or
through the gateway's embeddings call. A vector row is keyed by (owner, model id) and
carries the model's version hash; vectors of different models are never compared, because
recall asks for one model's rows. An owner already holding a vector of the configured model
and version is skipped, so a replay embeds nothing twice; one deleted since it was read (a
forget) gets none.

When the configured model changes, claims and events without a vector of the new one are found
by a backfill job (``EmbedClaims`` with no ids) that the stage's tick enqueues, at most one at a
time; each backfill embeds one batch and enqueues the next while any remain.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

import anyio
import numpy as np

from hlmem.clock import Clock, iso
from hlmem.config import EmbedderConfig
from hlmem.errors import ConfigError
from hlmem.gateway import EmbedRequest, Gateway
from hlmem.index import in_process_embedder, model_identity
from hlmem.jobs import JobSpec
from hlmem.lang import LocalEmbedder, Vectors, scrub
from hlmem.messages import EMBED_BACKFILL_KEY, EmbedClaims, Job, JobKind
from hlmem.stages.base import CpuHelper, Stage
from hlmem.store import Store, SyncTx

#: events are read up to this many times ``event_max_chars``; a longer one is read whole, so
#: that its secrets are found before it is cut
_READ_FACTOR = 2


@dataclass
class _Embedded:
    owners: list[tuple[str, str, str | None]]  # (owner kind, id, namespace) per vector row
    vectors: Vectors
    backfill: bool


class Embedder(Stage[_Embedded]):
    name = JobKind.EMBEDDER

    def __init__(
        self,
        store: Store,
        clock: Clock,
        cfg: EmbedderConfig,
        *,
        gateway: Gateway | None,
        offloader: CpuHelper | None = None,
    ) -> None:
        """``gateway`` is None when nothing calls a model; ``offloader``, when given, embeds
        big batches locally in the CPU helper child.

        :raises ConfigError: a remote ``embedder.provider`` and no gateway.
        """
        if not cfg.in_process and gateway is None:
            raise ConfigError(
                f"embedder.provider {cfg.provider!r} needs a model gateway (none was given)"
            )
        self.store = store
        self.clock = clock
        self.cfg = cfg
        self.gateway = gateway
        self.tick_interval_s = cfg.backfill_interval_s
        self.local = in_process_embedder(cfg)
        # the CPU helper child computes the hashed features only
        self.offloader = offloader if isinstance(self.local, LocalEmbedder) else None
        self.model_id, self.model_version = model_identity(cfg)

    @property
    def _model(self) -> dict[str, str]:
        return {"model": self.model_id, "version": self.model_version}

    @property
    def _events(self) -> dict[str, str | int]:
        """The parameters of the queries that pick events to embed."""
        return {**self._model, "uncovered": int(self.cfg.events == "uncovered")}

    async def prepare(self, jobs: list[Job]) -> _Embedded:
        asks = [j.payload for j in jobs if isinstance(j.payload, EmbedClaims)]
        claim_ids = [i for a in asks for i in a.claim_ids]
        event_ids = [i for a in asks for i in a.event_ids]
        backfill = any(a.backfill for a in asks)
        model = self._model
        events = {**self._events, "max_chars": self.cfg.event_max_chars * _READ_FACTOR}
        # (kind, id) -> (text, namespace); a claim's namespace is filled by a trigger
        texts: dict[tuple[str, str], tuple[str, str | None]] = {}
        if claim_ids:
            rows = await self.store.fetchall(
                "claims_to_embed", {"ids": json.dumps(claim_ids), **model}
            )
            texts.update((("claim", r["id"]), (r["text"], None)) for r in rows)
        if event_ids:
            rows = await self.store.fetchall(
                "events_to_embed", {"ids": json.dumps(event_ids), **events}
            )
            texts.update((("event", r["id"]), (r["text"], r["namespace"])) for r in rows)
        if backfill:
            limit = {"limit": self.cfg.batch_size}
            rows = await self.store.fetchall("claims_lacking_vectors", {**model, **limit})
            texts.update((("claim", r["id"]), (r["text"], None)) for r in rows)
            if self.cfg.events != "none":
                rows = await self.store.fetchall("events_lacking_vectors", {**events, **limit})
                texts.update((("event", r["id"]), (r["text"], r["namespace"])) for r in rows)
        owners = [(kind, i, ns) for (kind, i), (_, ns) in texts.items()]
        shown = await self._scrubbed([(kind, t) for (kind, _), (t, _) in texts.items()], owners)
        vectors = await self._embed(shown, jobs)
        return _Embedded(owners, vectors, backfill)

    async def _scrubbed(
        self, texts: list[tuple[str, str]], owners: list[tuple[str, str, str | None]]
    ) -> list[str]:
        """What is embedded: each text with its secrets left out, an event's cut to
        ``event_max_chars`` after that (one read more for an event longer than was read)."""
        limit = self.cfg.event_max_chars
        pairs = list(zip(owners, texts, strict=True))
        cut = [
            owner_id
            for (_, owner_id, _), (kind, t) in pairs
            if kind == "event" and len(t) >= limit * _READ_FACTOR
        ]
        whole = (
            {
                r["id"]: r["content"]
                for r in await self.store.fetchall("event_contents", (json.dumps(cut),))
            }
            if cut
            else {}
        )

        def run() -> list[str]:
            return [
                scrub(whole.get(owner_id, t))[:limit] if kind == "event" else scrub(t)
                for (_, owner_id, _), (kind, t) in pairs
            ]

        return await anyio.to_thread.run_sync(run)

    async def _embed(self, texts: list[str], jobs: list[Job]) -> Vectors:
        if not texts:
            return np.zeros((0, self.cfg.dim), dtype=np.float32)
        size = self.cfg.batch_size
        if isinstance(self.local, LocalEmbedder):
            if self.offloader is not None and len(texts) >= self.offloader.min_texts:
                vectors = await self.offloader.embed(texts, dim=self.cfg.dim)
                if vectors is not None:
                    return vectors
            return await anyio.to_thread.run_sync(self.local.embed, texts)
        if self.local is not None:
            # A model (e5) takes ~20 ms to seconds a text: one thread call per batch_size texts,
            # so that a stop or a cancel waits for one call, never for the whole batch.
            return np.vstack(
                [
                    await anyio.to_thread.run_sync(self.local.embed, texts[start : start + size])
                    for start in range(0, len(texts), size)
                ]
            )
        assert self.gateway is not None
        parts = []
        for start in range(0, len(texts), size):
            answer = await self.gateway.embed(
                stage=self.name,
                provider=self.cfg.provider,
                request=EmbedRequest(
                    model=self.cfg.model,
                    inputs=tuple(self.cfg.passage_prefix + t for t in texts[start : start + size]),
                ),
                job_id=jobs[0].id if len(jobs) == 1 else None,
            )
            parts.append(answer.array())
        return np.vstack(parts)

    def apply(self, tx: SyncTx, jobs: list[Job], prepared: _Embedded) -> list[JobSpec]:
        now = iso(self.clock.now())
        claims = [i for kind, i, _ in prepared.owners if kind == "claim"]
        events = [i for kind, i, _ in prepared.owners if kind == "event"]
        # Since prepare read them, maintenance may have archived or merged a claim, and a
        # forget may have deleted an event: neither gets a vector.
        allowed = (
            {("claim", r["id"]) for r in tx.fetchall("claims_embeddable", (json.dumps(claims),))}
            if claims
            else set()
        )
        if events:
            allowed |= {
                ("event", r["id"]) for r in tx.fetchall("events_present", (json.dumps(events),))
            }
        keep = [
            i
            for i, (kind, owner_id, _) in enumerate(prepared.owners)
            if (kind, owner_id) in allowed
        ]
        if keep:
            vectors = np.ascontiguousarray(prepared.vectors[keep], dtype=np.float32)
            dim = int(vectors.shape[1])
            meta = [
                (*prepared.owners[i], self.model_id, self.model_version, dim, now, n * dim * 4)
                for n, i in enumerate(keep)
            ]
            tx.execute(
                "vector_upsert_packed",
                {"rows": json.dumps(meta, ensure_ascii=False), "vectors": vectors.tobytes()},
            )
        if prepared.backfill and prepared.owners:
            return [self._backfill_job()]
        return []

    def tick(self, tx: SyncTx, now: datetime) -> list[JobSpec]:
        limit = {"limit": 1}
        lacking = tx.fetchall("claims_lacking_vectors", {**self._model, **limit}) or (
            self.cfg.events != "none"
            and tx.fetchall("events_lacking_vectors", {**self._events, **limit, "max_chars": 1})
        )
        return [self._backfill_job()] if lacking else []

    def _backfill_job(self) -> JobSpec:
        return JobSpec(JobKind.EMBEDDER, EmbedClaims(), dedup_key=EMBED_BACKFILL_KEY)
