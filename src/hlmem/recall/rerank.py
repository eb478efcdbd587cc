"""The optional reranker: recall's best items reordered by a model, through the gateway.

With ``recall.rerank_provider`` set, recall fuses and ranks as always, then sends the query and
the texts of its first ``recall.rerank_candidates`` items to the provider's rerank endpoint
(one call, under the gateway's rate limits, budget and ledger like every model call; its stage
is ``recall``). Those items come back in the reranker's order with its relevance as their
``score`` and ``"rerank"`` among their channels; the items after them keep their fused order
and scores. Recall never fails because of the reranker: when the call fails (provider down,
rate limited past its retries, budget exhausted, a malformed answer) the fused order stands,
the result says ``reranked=False`` and the failure is logged.

A provider never receives a secret: the items' texts are redacted already, and the query is
redacted before it is sent (a user may type a password into a recall).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from hlmem.config import RecallConfig
from hlmem.errors import BudgetExceeded, ConfigError, ProviderError
from hlmem.gateway import Gateway, RerankRequest
from hlmem.lang import redact
from hlmem.messages import RecallItem

log = logging.getLogger(__name__)

STAGE = "recall"


async def rerank(
    gateway: Gateway,
    rc: RecallConfig,
    query: str,
    items: Sequence[RecallItem],
    *,
    namespace: str,
) -> tuple[list[RecallItem], bool]:
    """``items`` with the first ``rc.rerank_candidates`` reordered by the reranker; and whether
    that happened (``False``: no items, or the call failed and the fused order stands)."""
    head = list(items[: rc.rerank_candidates])
    if not head:
        return list(items), False
    request = RerankRequest(
        model=rc.rerank_model, query=redact(query), documents=tuple(i.text for i in head)
    )
    try:
        answer = await gateway.rerank(
            stage=STAGE, provider=rc.rerank_provider, request=request, namespace=namespace
        )
    except (ProviderError, BudgetExceeded, ConfigError) as exc:
        log.warning(
            "rerank failed; the fused order stands: %s",
            exc,
            extra={"action": "rerank_failed", "provider": rc.rerank_provider},
        )
        return list(items), False
    ranked: list[RecallItem] = []
    seen: set[int] = set()
    for result in sorted(answer.results, key=lambda r: (-r.score, r.index)):
        if result.index in seen:
            continue
        seen.add(result.index)
        item = head[result.index]
        ranked.append(
            item.model_copy(update={"score": result.score, "channels": (*item.channels, "rerank")})
        )
    # Items the reranker left out (a top_n cut) follow in their fused order.
    ranked.extend(item for i, item in enumerate(head) if i not in seen)
    return ranked + list(items[len(head) :]), True
