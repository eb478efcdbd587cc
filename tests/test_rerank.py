"""The optional reranker: recall's best items reordered by a model through the gateway.

Against the real simulated provider on 127.0.0.1 (its rerank scores are embedding cosines):
the call goes through the gateway's ledger, the reranked items are the fused ones in the
reranker's order, and a failing reranker leaves the fused order instead of failing recall.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers import fast_config, rows
from scripted_provider import PROVIDER, ScriptedProvider, gateway_config

import hlmem
from hlmem.config import Config
from hlmem.errors import ConfigError
from hlmem.lang import DEFAULT_DIM, LocalEmbedder
from hlmem.messages import RecallResult
from hlmem.sim import SimProvider, SimSettings

pytestmark = pytest.mark.anyio

LINES = {
    "zh": [
        "我每天早上喝一杯绿茶",
        "我周末喜欢去西湖边跑步",
        "我在杭州的一家银行工作",
        "我养了一只叫小白的猫",
        "下周三要交季度报告",
        "我不喜欢喝咖啡，太苦了",
    ],
    "en": [
        "I drink a cup of green tea every morning.",
        "On weekends I like running along the river.",
        "I work at a bank in Hangzhou.",
        "I have a cat called Snowy.",
        "The quarterly report is due next Wednesday.",
        "I don't like coffee, it's too bitter.",
    ],
}
QUERIES = {"zh": "我喜欢喝什么茶", "en": "tea, coffee, my cat or the report?"}


def rerank_config(base_url: str, **recall: Any) -> Config:
    settings = {"rerank_provider": PROVIDER, "rerank_model": "sim-rerank", **recall}
    return gateway_config(base_url, recall=settings)


async def fill(db: Path, lang: str) -> None:
    async with hlmem.open(db, config=fast_config()) as mem:
        for line in LINES[lang]:
            await mem.add_event("s", line)
        await mem.end_session("s")
        await mem.drain(timeout_s=30)


async def recall_with(db: Path, cfg: Config, query: str, k: int = 10) -> RecallResult:
    """One recall that leaves activation as it was (no access boost), so that two recalls of
    the same store, each in its own open, compare."""
    still = cfg.maintenance.model_copy(update={"access_boost": 0.0})
    cfg = cfg.model_copy(update={"maintenance": still})
    async with hlmem.open(db, config=cfg, pipeline="external") as mem:
        return await mem.recall(query, k=k)


@pytest.mark.parametrize("lang", ["zh", "en"])
async def test_the_reranker_reorders_the_best_items_through_the_gateway(
    tmp_path: Path, lang: str
) -> None:
    db = tmp_path / "m.db"
    await fill(db, lang)
    # the reranker reorders the best rerank_candidates (20) fused items, then keeps 10
    fused = await recall_with(db, fast_config(), QUERIES[lang], k=20)
    assert not fused.reranked and len(fused.items) >= 3
    with SimProvider() as sim:
        reranked = await recall_with(db, rerank_config(sim.base_url), QUERIES[lang])
        stats = sim.stats()
    assert reranked.reranked
    # the best of the same items, now in the reranker's order, its relevance as their score
    assert {i.id for i in reranked.items} <= {i.id for i in fused.items}
    assert len(reranked.items) == min(10, len(fused.items))
    assert all("rerank" in i.channels for i in reranked.items)
    scores = [i.score for i in reranked.items]
    assert scores == sorted(scores, reverse=True)
    # the order is the provider's: the sim scores by the local embedder's cosine
    vectors = LocalEmbedder(DEFAULT_DIM).embed([QUERIES[lang], *(i.text for i in fused.items)])
    cosine = dict(zip((i.id for i in fused.items), vectors[1:] @ vectors[0], strict=True))
    expected = sorted(fused.items, key=lambda i: -float(cosine[i.id]))[:10]
    assert [i.id for i in reranked.items] == [i.id for i in expected]
    assert reranked.packet and reranked.tokens > 0
    # one call, in the ledger as the recall stage's, and what the provider counted
    calls = rows(db, "SELECT stage, call_kind, outcome, prompt_tokens FROM provider_calls")
    assert [(c[0], c[1], c[2]) for c in calls] == [("recall", "rerank", "ok")]
    assert calls[0][3] > 0
    assert sum(n for p, n in stats.ok_by_path.items() if "rerank" in p) == 1


async def test_only_the_first_candidates_are_reranked(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    await fill(db, "en")
    fused = await recall_with(db, fast_config(), QUERIES["en"])
    with SimProvider() as sim:
        reranked = await recall_with(
            db, rerank_config(sim.base_url, rerank_candidates=2), QUERIES["en"]
        )
    assert reranked.reranked
    head, tail = reranked.items[:2], reranked.items[2:]
    assert {i.id for i in head} == {i.id for i in fused.items[:2]}
    assert all("rerank" in i.channels for i in head)
    # the rest keeps its fused order and scores (recency moves with the clock: approx)
    assert [i.id for i in tail] == [i.id for i in fused.items[2:]]
    assert [i.score for i in tail] == pytest.approx([i.score for i in fused.items[2:]], rel=1e-6)


async def test_a_failing_reranker_leaves_the_fused_order(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    await fill(db, "zh")
    fused = await recall_with(db, fast_config(), QUERIES["zh"])
    with SimProvider(settings=SimSettings(error_rate=1.0, error_status=500)) as sim:
        cfg = rerank_config(sim.base_url)
        cfg = cfg.model_copy(
            update={
                "providers": {
                    PROVIDER: cfg.providers[PROVIDER].model_copy(update={"max_retries": 1})
                }
            }
        )
        result = await recall_with(db, cfg, QUERIES["zh"])
    assert not result.reranked
    assert [i.id for i in result.items] == [i.id for i in fused.items]
    assert [i.score for i in result.items] == pytest.approx(
        [i.score for i in fused.items], rel=1e-6
    )
    assert all("rerank" not in i.channels for i in result.items)
    outcomes = {r[0] for r in rows(db, "SELECT outcome FROM provider_calls")}
    assert outcomes == {"error"}


@pytest.mark.parametrize(
    ("lang", "query", "secret"),
    [
        ("zh", "我的密码是 Hunter2!xyz，我喜欢喝什么茶", "Hunter2!xyz"),
        ("en", "my pw is Tr0ub4dor&10 -- tea, coffee, my cat?", "Tr0ub4dor&10"),
    ],
)
async def test_a_secret_in_the_query_is_never_sent_to_the_reranker(
    tmp_path: Path, lang: str, query: str, secret: str
) -> None:
    db = tmp_path / "m.db"
    await fill(db, lang)
    answer = {"results": [{"index": 0, "relevance_score": 0.9}], "usage": {"total_tokens": 7}}
    with ScriptedProvider() as server:
        server.script(json_body=answer, times=5)
        result = await recall_with(db, rerank_config(server.base_url), query)
        bodies = [s.body for s in server.seen]
    assert result.reranked and len(bodies) == 1
    sent = bodies[0]["query"]
    assert secret not in sent and "[REDACTED:password]" in sent
    assert secret not in repr(bodies)


def test_a_reranker_needs_a_model_and_a_configured_provider() -> None:
    with pytest.raises(ConfigError, match="rerank_model"):
        hlmem.load_config(env={}, overrides={"recall": {"rerank_provider": "p"}})
    with pytest.raises(ConfigError, match="rerank_provider"):
        hlmem.load_config(
            env={}, overrides={"recall": {"rerank_provider": "nowhere", "rerank_model": "m"}}
        )
