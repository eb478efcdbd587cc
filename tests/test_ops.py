"""``hlmem ops report``: ledger summaries, queue health, cost per event and claim, the CLI."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from helpers import rows
from scripted_provider import (
    PRICE_IN,
    PRICE_OUT,
    PROVIDER,
    ScriptedProvider,
    chat_reply,
    chat_request,
    gateway_config,
)
from test_cli import hlmem as hlmem_cli

import hlmem
from hlmem.clock import ManualClock
from hlmem.config import Config
from hlmem.errors import InputError, ProviderUnavailable
from hlmem.gateway import Gateway, ops_report, parse_since, percentile, render
from hlmem.sim import SimProvider, SimSettings
from hlmem.store import Store

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("30m", 1800),
        ("24h", 86400),
        ("7d", 7 * 86400),
        ("90s", 90),
        ("1.5h", 5400),
        ("2w", 1209600),
    ],
)
def test_parse_since(text: str, seconds: float) -> None:
    assert parse_since(text) == timedelta(seconds=seconds)


@pytest.mark.parametrize("text", ["", "24", "h", "-1h", "0d", "1y", "yesterday"])
def test_parse_since_rejects_other_text(text: str) -> None:
    with pytest.raises(InputError, match="--since"):
        parse_since(text)


def test_percentile_is_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 0.5) == 50
    assert percentile(values, 0.95) == 95
    assert percentile([7.0], 0.95) == 7
    assert percentile([], 0.5) is None


async def fill(server: ScriptedProvider, store: Store, cfg: Config, clock: ManualClock) -> None:
    """4 extractor calls (one with a 429 then ok, one failing after a retry), 2 embedder calls."""
    server.script(json_body=chat_reply("a", prompt_tokens=100, completion_tokens=10))
    server.script(status=429, headers={"retry-after-ms": "10"})
    server.script(json_body=chat_reply("b", prompt_tokens=200, completion_tokens=20))
    server.script(status=500, times=2)
    server.script(json_body=chat_reply("c", prompt_tokens=300, completion_tokens=30))
    async with Gateway.open(cfg, store, clock=clock) as gw:
        for _ in range(2):
            await gw.chat(stage="extractor", provider=PROVIDER, request=chat_request(model="big"))
        with pytest.raises(ProviderUnavailable):
            await gw.chat(stage="extractor", provider=PROVIDER, request=chat_request(model="big"))
        await gw.chat(stage="extractor", provider=PROVIDER, request=chat_request(model="big"))
        for _ in range(2):
            await gw.chat(stage="embedder", provider=PROVIDER, request=chat_request(model="small"))


async def test_the_report_summarises_calls_queue_and_cost_per_event_and_claim(
    server: ScriptedProvider, db_path: Path, tmp_path: Path
) -> None:
    now = datetime.now(UTC)
    cfg = gateway_config(
        server.base_url, provider={"max_retries": 1}, budget={"daily_limit": 100.0}
    )
    async with hlmem.open(db_path, config=cfg, pipeline="inline") as mem:
        await mem.add_event("s1", "记住：我的猫叫小白")
        await mem.add_event("s1", "Remember that the prod DB is db-prod-2.")
        await mem.add_event("s2", "随便聊聊")
        await mem.flush()
        await mem.drain()
        # the ledger is the gateway's; an old call (10 days ago) falls outside a 24 h window
        await fill(server, mem.store, cfg, ManualClock(now - timedelta(days=10)))
        await fill(server, mem.store, cfg, ManualClock(now))
        report = await ops_report(mem.store, cfg, since=parse_since("24h"), clock=mem.clock)
        month = await ops_report(mem.store, cfg, since=parse_since("30d"), clock=mem.clock)

    total = report.total
    assert (total.calls, total.ok, total.errors, total.refused) == (6, 5, 1, 0)
    assert total.retries == 2  # one after the 429, one after the first 500
    assert total.rate_limited == 1
    assert total.failure_rate == pytest.approx(1 / 6)
    assert total.error_classes == {"ProviderUnavailable": 1}
    assert month.total.calls == 12

    by = {(s.stage, s.model): s for s in report.by_call}
    assert set(by) == {("extractor", "big"), ("embedder", "small")}
    extractor = by[("extractor", "big")]
    assert (extractor.calls, extractor.ok, extractor.errors) == (4, 3, 1)
    assert (extractor.prompt_tokens, extractor.completion_tokens) == (600, 60)
    assert extractor.cost == pytest.approx((600 * 0.5 + 60 * 1.0) / 1000)
    assert extractor.latency_p50_ms is not None and extractor.latency_p95_ms is not None
    assert extractor.latency_p50_ms <= extractor.latency_p95_ms
    embedder = by[("embedder", "small")]
    assert (embedder.prompt_tokens, embedder.completion_tokens) == (20, 10)  # default reply
    assert total.cost == pytest.approx(extractor.cost + embedder.cost)

    assert (report.events, report.claims) == (3, 2)
    assert report.cost_per_event == pytest.approx(total.cost / 3)
    assert report.cost_per_claim == pytest.approx(total.cost / 2)
    stages = {q.stage: q for q in report.queue}
    assert stages["windower"].done >= 1 and stages["extractor"].done >= 1
    assert all(q.todo == q.doing == q.parked == q.failed == 0 for q in report.queue)

    daily = next(b for b in report.budget if b.scope == "daily")
    assert daily.limit == 100.0
    assert daily.used == pytest.approx(total.cost)

    text = render(report)
    assert "extractor" in text and "embedder" in text
    assert "ProviderUnavailable 1" in text
    assert "cost per event" in text


async def test_queue_health_counts_statuses_and_the_oldest_unfinished_job(
    server: ScriptedProvider, db_path: Path
) -> None:
    async with hlmem.open(db_path, config=Config(), pipeline="external") as mem:
        await mem.add_event("s1", "hello")
        report = await ops_report(mem.store, Config(), since=timedelta(hours=1), clock=mem.clock)
    [windower] = report.queue
    assert (windower.stage, windower.todo) == ("windower", 1)
    assert windower.oldest_unfinished_age_s is not None and windower.oldest_unfinished_age_s >= 0
    assert report.total.calls == 0 and report.total.latency_p50_ms is None
    assert "(no jobs)" not in render(report)


async def test_the_cli_prints_text_and_json(
    server: ScriptedProvider, store: Store, db_path: Path, tmp_path: Path
) -> None:
    cfg = gateway_config(server.base_url, provider={"max_retries": 1})
    await fill(server, store, cfg, ManualClock(datetime.now(UTC)))
    await store.close()
    proc = hlmem_cli("--db", db_path, "ops", "report", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["total"]["calls"] == 6
    assert {c["stage"] for c in data["by_call"]} == {"extractor", "embedder"}
    text = hlmem_cli("--db", db_path, "ops", "report", "--since", "30m", cwd=tmp_path)
    assert text.returncode == 0, text.stderr
    assert "extractor" in text.stdout and "Traceback" not in text.stderr
    bad = hlmem_cli("--db", db_path, "ops", "report", "--since", "forever", cwd=tmp_path)
    assert bad.returncode == 1
    assert "hlmem: error: --since 'forever'" in bad.stderr


# --- what was paid: the provider's count, and estimates apart ---------------------------------

FAST: dict[str, Any] = {
    "pipeline": {
        "poll_interval_s": 0.02,
        "drain_poll_s": 0.01,
        "extractor": {"retry_base_s": 0.01, "retry_max_s": 0.05},
    },
    "windower": {"sweep_interval_s": 0.02},
}


@pytest.mark.parametrize("garbage_rate", [0.0, 0.15])
async def test_the_ledger_holds_what_the_provider_counted_and_marks_estimates(
    tmp_path: Path, garbage_rate: float
) -> None:
    """Bad JSON answers (usage reported) are charged what the provider counted; garbage
    answers (no usage to read) are estimates, shown apart in the report."""
    db = tmp_path / "m.db"
    settings = SimSettings(
        bad_json_rate=0.3, garbage_rate=garbage_rate, seed=4, price_in=PRICE_IN, price_out=PRICE_OUT
    )
    with SimProvider(settings=settings) as sim:
        extractor = {"kind": "model", "provider": PROVIDER, "model": "sim-chat"}
        cfg = gateway_config(sim.base_url, extractor=extractor, **FAST)
        async with hlmem.open(db, config=cfg) as mem:
            for i in range(30):
                text = f"记住：第{i}号会议室在三楼" if i % 2 else f"Remember that desk {i} is mine."
                await mem.add_event(f"s{i}", text)
            await mem.flush()
            await mem.drain(timeout_s=120)
            report = await ops_report(mem.store, cfg, since=timedelta(days=1), clock=mem.clock)
        stats = sim.stats()
    t = report.total
    assert stats.bad_json_injected > 0
    assert stats.garbage_injected == t.estimated_calls
    assert (garbage_rate > 0) == (t.estimated_calls > 0)
    reported = (
        t.prompt_tokens - t.estimated_prompt_tokens,
        t.completion_tokens - t.estimated_completion_tokens,
    )
    assert reported == (stats.prompt_tokens, stats.completion_tokens)
    assert t.cost - t.estimated_cost == pytest.approx(stats.cost)
    if not garbage_rate:  # every answer reported its usage: the ledger is the provider's count
        assert t.cost == pytest.approx(stats.cost)
    # an estimate is below the worst case each unparseable answer reserved
    guessed = rows(db, "SELECT cost, reserved FROM provider_calls WHERE usage_estimated = 1")
    assert all(c < r for c, r in guessed)
    text = render(report)
    assert (
        f"usage reported by the provider: {stats.prompt_tokens}/{stats.completion_tokens} tokens"
        in text
    )
    assert f"estimated (no usage reported, {t.estimated_calls} calls)" in text
