"""Optional query expansion: a model writes other queries for a loosely worded question.

With ``recall.expand_provider`` set, recall asks the provider's chat model (one call, stage
``recall``: rate limits, budget, ledger and circuit breaker as for every call) for up to
``recall.expand_queries`` other queries (:func:`hlmem.gateway.prompts.expansion_request`:
other words for the need, the answer's likely wording, the other language). Each is searched
in both channels beside the question, and their hits join the fusion as channels of their own
(``expansion``): an item found by the question and an expansion ranks above one found once.

Recall never fails or waits long because of it: a call that fails (provider down, over budget,
an answer that does not parse) or has not answered within ``recall.expand_timeout_s`` leaves
the plain recall, and is logged. The question is redacted before it is sent.
"""

from __future__ import annotations

import logging

import anyio

from hlmem.config import RecallConfig
from hlmem.errors import BudgetExceeded, ConfigError, ProviderError
from hlmem.gateway import Gateway, expansion_request, parse_expansion
from hlmem.lang import redact

log = logging.getLogger(__name__)

STAGE = "recall"


async def expand(gateway: Gateway, rc: RecallConfig, question: str, *, namespace: str) -> list[str]:
    """Up to ``rc.expand_queries`` other queries for ``question`` (none equal to it); ``[]``
    when the call fails or is late."""
    request = expansion_request(rc.expand_model, redact(question), rc.expand_queries)
    with anyio.move_on_after(rc.expand_timeout_s):
        try:
            answer = await gateway.chat(
                stage=STAGE, provider=rc.expand_provider, request=request, namespace=namespace
            )
            queries = parse_expansion(answer.text, rc.expand_queries)
        except (ProviderError, BudgetExceeded, ConfigError) as exc:
            log.warning(
                "query expansion failed; plain recall: %s",
                exc,
                extra={"action": "expansion_failed", "provider": rc.expand_provider},
            )
            return []
        plain = " ".join(question.split())
        return [q for q in queries if q != plain]
    log.warning(
        "query expansion took over %g s; plain recall",
        rc.expand_timeout_s,
        extra={"action": "expansion_late", "provider": rc.expand_provider},
    )
    return []
