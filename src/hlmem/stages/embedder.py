"""Embedder: float32 vectors for placed claims, tagged with the model id and a version hash.

Claims are embedded in batches of ``embedder.batch_size``: by the local embedder (in a worker
thread; no model, no network) or through the gateway's embeddings call. A vector row is keyed
by (claim, model id) and carries the model's version hash; vectors of different models are
never compared, because recall asks for one model's rows. A claim already holding a vector of
the configured model and version is skipped, so a replay embeds nothing twice.

When the configured model changes, claims without a vector of the new one are found by a
backfill job (``EmbedClaims`` with no ids) that the stage's tick enqueues, at most one at a
time; each backfill embeds one batch and enqueues the next while any remain.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import anyio
import numpy as np

from hlmem.clock import Clock, iso
from hlmem.config import EmbedderConfig
from hlmem.embedding import LocalEmbedder
from hlmem.gateway import Gateway
from hlmem.messages import EmbedClaims, Job
from hlmem.providers import EmbedRequest
from hlmem.queue import JobSpec
from hlmem.stages.base import Stage
from hlmem.store import Store, SyncTx
from hlmem.text import content_hash

BACKFILL_KEY = "embedder:backfill"

Vectors = np.ndarray[Any, np.dtype[np.float32]]


@dataclass
class _Embedded:
    ids: list[str]
    vectors: Vectors
    backfill: bool


class Embedder(Stage[_Embedded]):
    name = "embedder"

    def __init__(
        self,
        store: Store,
        clock: Clock,
        cfg: EmbedderConfig,
        gateway: Gateway | None = None,
    ) -> None:
        if cfg.provider != "local" and gateway is None:
            raise ValueError(f"embedder.provider {cfg.provider!r} needs a gateway")
        self.store = store
        self.clock = clock
        self.cfg = cfg
        self.gateway = gateway
        self.tick_interval_s = cfg.backfill_interval_s
        if cfg.provider == "local":
            self.local: LocalEmbedder | None = LocalEmbedder(cfg.dim)
            self.model_id = self.local.model_id
            self.model_version = self.local.model_version
        else:
            self.local = None
            self.model_id = f"{cfg.provider}/{cfg.model}"
            self.model_version = content_hash(f"{cfg.provider}\x1f{cfg.model}")[:12]

    @property
    def _model(self) -> dict[str, str]:
        return {"model": self.model_id, "version": self.model_version}

    async def prepare(self, jobs: list[Job]) -> _Embedded:
        ids = [i for j in jobs if isinstance(j.payload, EmbedClaims) for i in j.payload.claim_ids]
        backfill = any(isinstance(j.payload, EmbedClaims) and not j.payload.claim_ids for j in jobs)
        rows = list(
            await self.store.fetchall("claims_to_embed", {"ids": json.dumps(ids), **self._model})
        )
        if backfill:
            rows += await self.store.fetchall(
                "claims_lacking_vectors", {**self._model, "limit": self.cfg.batch_size}
            )
        unique = list({r[0]: r[1] for r in rows}.items())
        texts = [text for _, text in unique]
        return _Embedded([i for i, _ in unique], await self._embed(texts, jobs), backfill)

    async def _embed(self, texts: list[str], jobs: list[Job]) -> Vectors:
        if not texts:
            return np.zeros((0, self.cfg.dim), dtype=np.float32)
        if self.local is not None:
            return await anyio.to_thread.run_sync(self.local.embed, texts)
        assert self.gateway is not None
        parts = []
        size = self.cfg.batch_size
        for start in range(0, len(texts), size):
            answer = await self.gateway.embed(
                stage=self.name,
                provider=self.cfg.provider,
                request=EmbedRequest(
                    model=self.cfg.model, inputs=tuple(texts[start : start + size])
                ),
                job_id=jobs[0].id if len(jobs) == 1 else None,
            )
            parts.append(answer.array())
        return np.vstack(parts)

    def apply(self, tx: SyncTx, jobs: list[Job], prepared: _Embedded) -> list[JobSpec]:
        now = iso(self.clock.now())
        # Maintenance may have archived or merged a claim since prepare read it.
        keep = (
            {r[0] for r in tx.fetchall("claims_embeddable", (json.dumps(prepared.ids),))}
            if prepared.ids
            else set()
        )
        tx.executemany(
            "vector_upsert",
            [
                (
                    "claim",
                    claim_id,
                    None,  # the namespace: filled from the claim by a trigger
                    self.model_id,
                    self.model_version,
                    int(vec.shape[0]),
                    vec.tobytes(),
                    now,
                )
                for claim_id, vec in zip(prepared.ids, prepared.vectors, strict=True)
                if claim_id in keep
            ],
        )
        if prepared.backfill and prepared.ids:
            return [self._backfill_job()]
        return []

    def tick(self, tx: SyncTx, now: datetime) -> list[JobSpec]:
        lacking = tx.fetchall("claims_lacking_vectors", {**self._model, "limit": 1})
        return [self._backfill_job()] if lacking else []

    def _backfill_job(self) -> JobSpec:
        return JobSpec("embedder", EmbedClaims(), dedup_key=BACKFILL_KEY)
