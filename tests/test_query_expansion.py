"""Optional query expansion: a model's other queries for a question join the fusion.

The expansion model is a scripted OpenAI-compatible server on 127.0.0.1 (exact answers, a
failure, a late answer) and hlmem's simulated provider; memories go through the real pipeline
with the local embedder, in Chinese and English. A failed or late expansion leaves the plain
recall; the question reaches the provider with its secrets redacted; every call is in the
ledger under stage ``recall``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import fast_config, scalar
from scripted_provider import PRICE_IN, PRICE_OUT, PROVIDER, ScriptedProvider, chat_reply

import hlmem
from hlmem.config import Config
from hlmem.gateway import EXPANSION_PROMPT_ID
from hlmem.memory import Memory
from hlmem.sim import SimProvider

pytestmark = pytest.mark.anyio

MEMORIES = ["周末常去水库钓鱼", "The wifi router is in the hallway closet", "今天下雨了"]
CHAT_CALLS = "SELECT count(*) FROM provider_calls WHERE stage = 'recall' AND call_kind = 'chat'"


def expand_config(base_url: str, **recall: Any) -> Config:
    return fast_config(
        providers={
            PROVIDER: {
                "preset": "sim",
                "base_url": base_url,
                "max_retries": 0,
                "requests_per_minute": 60_000,
                "tokens_per_minute": 100_000_000,
            }
        },
        prices={f"{PROVIDER}/*": {"input_per_1k": PRICE_IN, "output_per_1k": PRICE_OUT}},
        recall={"expand_provider": PROVIDER, "expand_model": "m", **recall},
        maintenance={"enabled": False},
    )


async def remember(mem: Memory) -> None:
    for n, text in enumerate(MEMORIES):
        await mem.add_event(f"s{n}", text)
        await mem.end_session(f"s{n}")
    await mem.drain(timeout_s=60)


def expansion(*queries: str) -> Any:
    return chat_reply(json.dumps({"queries": list(queries)}, ensure_ascii=False))


@pytest.mark.parametrize(
    ("question", "queries", "found"),
    [
        ("what do I do for fun", ("钓鱼", "hobby fishing"), "钓鱼"),  # en question, zh memory
        ("网络设备放在哪儿", ("wifi router location", "router"), "router"),  # zh -> en
    ],
)
async def test_the_models_queries_find_what_the_question_alone_does_not(
    db_path: Path, question: str, queries: tuple[str, ...], found: str
) -> None:
    with ScriptedProvider() as server:
        server.script(json_body=expansion(*queries)).then(json_body=expansion(*queries))
        async with hlmem.open(db_path, config=expand_config(server.base_url)) as mem:
            await remember(mem)
            plain = await mem.recall(question, k=3)
            assert server.requests == 1
            assert plain.items and found in plain.items[0].text
            assert "expansion" in plain.items[0].channels
    system, user = server.seen[0].body["messages"]
    assert system["content"].startswith(EXPANSION_PROMPT_ID) and "up to 2" in system["content"]
    assert user["content"] == question
    assert scalar(db_path, CHAT_CALLS) == 1


async def test_without_expansion_the_same_question_finds_nothing(db_path: Path) -> None:
    """The control for the test above: the question alone shares nothing with its memory."""
    async with hlmem.open(db_path, config=fast_config(maintenance={"enabled": False})) as mem:
        await remember(mem)
        fun = await mem.recall("what do I do for fun", k=3)
        where = await mem.recall("网络设备放在哪儿", k=3)
    assert not any("钓鱼" in i.text for i in fun.items)
    assert not any("router" in i.text for i in where.items)


@pytest.mark.parametrize("failure", ["500", "not json", "late"])
async def test_a_failed_or_late_expansion_leaves_the_plain_recall(
    db_path: Path, failure: str
) -> None:
    with ScriptedProvider() as server:
        if failure == "500":
            server.script(status=500)
        elif failure == "not json":
            server.script(json_body=chat_reply("the cat, I think"))
        else:
            server.script(json_body=expansion("钓鱼"), delay_s=3.0)
        cfg = expand_config(server.base_url, expand_timeout_s=0.2)
        async with hlmem.open(db_path, config=cfg) as mem:
            await remember(mem)
            result = await mem.recall("router closet", k=3)
    assert result.items and "router" in result.items[0].text
    assert all("expansion" not in i.channels for i in result.items)
    assert server.requests == 1


async def test_the_question_reaches_the_provider_without_its_secret(db_path: Path) -> None:
    with ScriptedProvider() as server:
        server.script(json_body=expansion("router"))
        async with hlmem.open(db_path, config=expand_config(server.base_url)) as mem:
            await remember(mem)
            await mem.recall("my wifi password is Hunter2!xq, where is the router", k=3)
    sent = json.dumps(server.seen[0].body, ensure_ascii=False)
    assert "Hunter2!xq" not in sent and "[REDACTED" in sent


async def test_the_simulated_provider_answers_expansions(db_path: Path) -> None:
    with SimProvider() as sim:
        async with hlmem.open(db_path, config=expand_config(sim.base_url)) as mem:
            await remember(mem)
            result = await mem.recall("where is the wifi router?", k=3)
        assert sim.stats().requests_by_path["/v1/chat/completions"] == 1
    assert result.items and "router" in result.items[0].text
    assert "expansion" in result.items[0].channels
    assert scalar(db_path, CHAT_CALLS) == 1
