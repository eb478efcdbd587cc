"""Embedding never holds back ingestion, extraction or claim visibility.

The embedder here is a provider that fails every call (hlmem's simulated provider with every
answer an error), so no vector is ever made and the embedder's jobs pile up. With ingestion's
backpressure mark and the conflict stage's downstream mark far below that pile, every event
is still acknowledged, every claim is placed and recallable by full text (the result saying
that the vector channel is off), and the embedder's jobs wait on disk, claims' vectors ahead
of events'.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from helpers import fast_config, rows, scalar, wait_until
from scripted_provider import PRICE_IN, PRICE_OUT, PROVIDER

import hlmem
from hlmem.messages import CLAIM_VECTORS_PRIORITY
from hlmem.sim import SimProvider

pytestmark = pytest.mark.anyio

#: one remembered fact per session, half in Chinese
FACTS = [
    "记住：第{n}号服务器在机房三楼。" if n % 2 else "Remember that build {n} is green."
    for n in range(40)
]


async def test_claims_are_placed_and_found_while_no_vector_can_be_made(db_path: Path) -> None:
    with SimProvider() as sim:
        sim.update(error_rate=1.0)  # the embedder's provider never answers well
        cfg = fast_config(
            providers={
                PROVIDER: {
                    "preset": "sim",
                    "base_url": sim.base_url,
                    "max_retries": 0,
                    "requests_per_minute": 60_000,
                    "tokens_per_minute": 100_000_000,
                }
            },
            prices={f"{PROVIDER}/*": {"input_per_1k": PRICE_IN, "output_per_1k": PRICE_OUT}},
            embedder={"provider": PROVIDER, "model": "sim-embed"},
            ingest={"backlog_high_water_jobs": 10, "backlog_low_water_jobs": 5},
            pipeline={
                "poll_interval_s": 0.02,
                "drain_poll_s": 0.01,
                "shutdown_grace_s": 5,
                "conflict": {"downstream_high_water_jobs": 1},
            },
            maintenance={"enabled": False},
        )
        async with hlmem.open(db_path, config=cfg) as mem:
            with anyio.fail_after(60):  # blocked ingestion would hang here
                for n, fact in enumerate(FACTS):
                    await mem.add_event(f"s{n}", fact.format(n=n))
                    await mem.end_session(f"s{n}")
            active = "SELECT count(*) FROM claims WHERE status = 'active'"
            await wait_until(lambda: scalar(db_path, active) == len(FACTS), timeout_s=60)
            found = await mem.recall("第7号服务器", k=3)
            english = await mem.recall("build 8", k=3)
    assert found.items and "第7号服务器" in found.items[0].text
    assert english.items and "build 8" in english.items[0].text
    assert found.degraded is not None and PROVIDER in found.degraded
    # no vector was made; the embedder's work waits in the job table, claims' first
    assert scalar(db_path, "SELECT count(*) FROM vectors") == 0
    waiting = rows(
        db_path,
        "SELECT priority, payload FROM jobs WHERE kind = 'embedder' AND status != 'done'",
    )
    claim_jobs = [p for p, payload in waiting if '"claim_ids":["' in payload.replace(" ", "")]
    event_jobs = [p for p, payload in waiting if '"event_ids":["' in payload.replace(" ", "")]
    assert claim_jobs and event_jobs
    assert set(claim_jobs) == {CLAIM_VECTORS_PRIORITY} and set(event_jobs) == {0}
