"""Embedder: which raw events get a vector besides the claims (``embedder.events``).

``"all"`` embeds every event a window indexed; ``"none"`` only the claims; ``"uncovered"`` the
events no claim rests on: the extractor leaves out of the embedder's job the events its
proposed claims cite, and the backfill (after a model change, or for a proposal that admission
or dedup dropped) looks only for uncovered events, so it never loops over covered ones. The
conversation runs through the real pipeline on real files; the backfill is driven step by step
on a file with no pipeline running.

A slow model's work comes in small pieces: events reach the embedder in jobs of at most
``embedder.batch_size``, a model embedder (e5, a provider) takes one job a batch, and e5
embeds a batch in calls of ``batch_size`` texts, with the vectors it would give one by one.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from helpers import connect_raw, fast_config, rows, step

import hlmem
from hlmem.clock import ManualClock
from hlmem.config import Config, EmbedderConfig
from hlmem.errors import ConfigError
from hlmem.lang import E5Embedder
from hlmem.messages import EMBED_BACKFILL_KEY, JOB_PAYLOAD, EmbedClaims, JobKind
from hlmem.pipeline.assembly import build_stages
from hlmem.stages.embedder import Embedder

pytestmark = pytest.mark.anyio

#: two lines the rules extractor turns into claims, two it does not
LINES = (
    "我主要用深色模式",
    "今天天气不错，我们去散步吧。",
    "I live in Berlin.",
    "Thanks, that's all.",
)


async def converse(db_path: Path, cfg: Config) -> tuple[set[str], set[str], set[str]]:
    """The lines in one session through the pipeline: (event ids, claim ids, cited events)."""
    clock = ManualClock()
    clock.set(datetime(2026, 3, 1, 9, 0, tzinfo=UTC))
    async with hlmem.open(db_path, config=cfg, clock=clock) as mem:
        events = {await mem.add_event("s1", line) for line in LINES}
        await mem.end_session("s1")
        await mem.drain(timeout_s=20)
    claims = {r[0] for r in rows(db_path, "SELECT id FROM claims WHERE status = 'active'")}
    cited = {r[0] for r in rows(db_path, "SELECT event_id FROM evidence")}
    return events, claims, cited


def vectors(db_path: Path, kind: str) -> set[str]:
    return {
        r[0] for r in rows(db_path, "SELECT owner_id FROM vectors WHERE owner_kind = ?", (kind,))
    }


@pytest.mark.parametrize("mode", ["all", "uncovered", "none"])
async def test_each_setting_embeds_its_events_and_every_claim(db_path: Path, mode: str) -> None:
    events, claims, cited = await converse(db_path, fast_config(embedder={"events": mode}))
    assert len(claims) == 2 and cited and cited < events  # two claims; two lines of none
    assert vectors(db_path, "claim") == claims
    expected = {"all": events, "uncovered": events - cited, "none": set()}[mode]
    assert vectors(db_path, "event") == expected


async def test_the_backfill_embeds_only_uncovered_events_and_then_stops(db_path: Path) -> None:
    events, claims, cited = await converse(db_path, fast_config(embedder={"events": "none"}))
    assert vectors(db_path, "event") == set()
    # Archived, a claim has no vector any more: its events count as uncovered again.
    archived = sorted(claims)[0]
    archived_events = {
        r[0] for r in rows(db_path, "SELECT event_id FROM evidence WHERE claim_id = ?", (archived,))
    }
    conn = connect_raw(db_path)
    conn.execute("UPDATE claims SET status = 'archived' WHERE id = ?", (archived,))
    conn.close()
    cfg = fast_config(embedder={"events": "uncovered"})
    async with hlmem.open(db_path, config=cfg, pipeline="external") as mem:
        stage = Embedder(mem.store, mem.clock, cfg.embedder, gateway=None)
        backfill = await mem.store.run_in_transaction(lambda tx: stage.tick(tx, mem.clock.now()))
        assert [s.dedup_key for s in backfill] == [EMBED_BACKFILL_KEY]
        async with mem.store.transaction() as tx:
            await mem.queue.enqueue(tx, backfill)
        while await step(mem, stage):  # each backfill job enqueues the next while any remain
            pass
        # nothing uncovered lacks a vector now: no backfill loops over the covered events
        assert await mem.store.run_in_transaction(lambda tx: stage.tick(tx, mem.clock.now())) == []
    assert vectors(db_path, "event") == (events - cited) | archived_events


def test_embed_events_from_before_reads_as_all_or_none() -> None:
    assert EmbedderConfig.model_validate({"embed_events": True}).events == "all"
    assert EmbedderConfig.model_validate({"embed_events": False}).events == "none"
    env = {"HLMEM_EMBEDDER__EMBED_EVENTS": "false"}
    assert hlmem.load_config(env=env).embedder.events == "none"
    with pytest.raises(ConfigError, match="give one"):
        hlmem.load_config(env={}, overrides={"embedder": {"embed_events": True, "events": "all"}})
    with pytest.raises(ConfigError, match="true or false"):
        hlmem.load_config(env={}, overrides={"embedder": {"embed_events": "sometimes"}})


async def test_events_go_to_the_embedder_in_jobs_of_batch_size(db_path: Path) -> None:
    events, _, _ = await converse(db_path, fast_config(embedder={"batch_size": 3}))
    asked = [
        JOB_PAYLOAD.validate_json(payload)
        for (payload,) in rows(db_path, "SELECT payload FROM jobs WHERE kind = 'embedder'")
    ]
    parts = [p.event_ids for p in asked if isinstance(p, EmbedClaims) and p.event_ids]
    assert sorted(len(p) for p in parts) == [1, 3]  # 4 events, at most 3 a job
    assert {e for p in parts for e in p} == events == vectors(db_path, "event")


async def test_a_model_embeds_a_batch_in_calls_of_batch_size_with_the_same_vectors(
    db_path: Path,
) -> None:
    cfg = fast_config(embedder={"provider": "e5", "batch_size": 3}, maintenance={"enabled": False})
    events, _, _ = await converse(db_path, cfg)
    stored = rows(db_path, "SELECT owner_id, vector FROM vectors WHERE owner_kind = 'event'")
    content = dict(rows(db_path, "SELECT id, content FROM events"))
    assert {owner for owner, _ in stored} == events
    alone = E5Embedder().embed([content[owner] for owner, _ in stored])
    together = np.stack([np.frombuffer(vector, dtype=np.float32) for _, vector in stored])
    np.testing.assert_allclose(together, alone, atol=1e-5)


@pytest.mark.parametrize(("provider", "jobs"), [("local", 16), ("e5", 1)])
async def test_a_model_embedder_takes_one_job_a_batch(
    db_path: Path, provider: str, jobs: int
) -> None:
    cfg = fast_config(embedder={"provider": provider}, pipeline={"embedder": {"batch_size": 16}})
    async with hlmem.open(db_path, config=cfg, pipeline="external") as mem:
        runners = build_stages(mem.queue, cfg, mem.clock, None, offloader=None)
    (embedder,) = [r for r in runners if r.stage.name == JobKind.EMBEDDER]
    assert embedder.cfg.batch_size == jobs
