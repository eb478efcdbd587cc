"""The provider gateway over real loopback HTTP: retries, limits, breaker, ledger, keys, plugins.

Exact reply sequences come from the scripted server (``scripted_provider.py``); load-like runs
(429 storms, injected 5xx and garbage, rate limits, slow answers) from the simulated provider
(``hlmem.sim.server``). Assertions are on outcomes: answers, raised errors, ledger rows and
what the server saw.
"""

from __future__ import annotations

import logging
import sys
import time
import traceback
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path
from typing import Any

import anyio
import httpx
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

from hlmem.clock import ManualClock, SystemClock
from hlmem.errors import (
    BadProviderOutput,
    CircuitOpen,
    ClosedError,
    ConfigError,
    Deferred,
    Permanent,
    ProviderRejected,
    ProviderTimeout,
    ProviderUnavailable,
    RateLimited,
    Retryable,
)
from hlmem.gateway import (
    EmbedRequest,
    Gateway,
    RerankRequest,
    estimate_chat_tokens,
    estimate_tokens,
    load_plugin_presets,
    ops_report,
    redact,
    render,
    retry_after_s,
)
from hlmem.sim import SimProvider, SimSettings
from hlmem.store import Store

pytestmark = pytest.mark.anyio

LEDGER = (
    "SELECT outcome, error_class, prompt_tokens, completion_tokens, cost, retries, rate_limited,"
    " reserved FROM provider_calls ORDER BY id"
)


def cost(prompt: int, completion: int) -> float:
    return (prompt * PRICE_IN + completion * PRICE_OUT) / 1000


async def call(gw: Gateway, text: str, stage: str = "s") -> None:
    await gw.chat(stage=stage, provider=PROVIDER, request=chat_request(text))


def reservations(db: Path) -> list[tuple[Any, ...]]:
    return rows(db, "SELECT status, amount FROM budget_reservations ORDER BY id")


def usage_total(db: Path) -> float:
    return float(
        rows(
            db,
            "SELECT coalesce(sum(amount), 0) FROM budget_usage WHERE namespace = ''"
            " AND period LIKE 'D%'",
        )[0][0]
    )


# --- one call, settled ------------------------------------------------------------------------


async def test_a_call_settles_to_the_reported_usage(
    server: ScriptedProvider, store: Store, db_path: Path
) -> None:
    server.script(json_body=chat_reply("好的", prompt_tokens=12, completion_tokens=3))
    async with Gateway.open(gateway_config(server.base_url), store, clock=SystemClock()) as gw:
        answer = await gw.chat(
            stage="extractor", provider=PROVIDER, request=chat_request(), namespace="ns", job_id=7
        )
    assert answer.text == "好的"
    assert (answer.prompt_tokens, answer.completion_tokens) == (12, 3)
    [row] = rows(db_path, LEDGER)
    assert row[:7] == ("ok", None, 12, 3, pytest.approx(cost(12, 3)), 0, 0)
    assert row[7] > row[4]  # the worst case reserved exceeded what was spent
    dims = "SELECT stage, provider, model, call_kind, namespace, job_id FROM provider_calls"
    assert rows(db_path, dims) == [("extractor", PROVIDER, "m", "chat", "ns", 7)]
    assert reservations(db_path) == [("settled", pytest.approx(cost(12, 3)))]
    assert usage_total(db_path) == pytest.approx(cost(12, 3))
    [seen] = server.seen
    assert seen.path == "/v1/chat/completions"
    assert seen.body["model"] == "m"
    assert seen.authorization is None  # no api_key_env: no key sent


async def test_usage_missing_from_the_answer_is_estimated(
    server: ScriptedProvider, store: Store, db_path: Path
) -> None:
    server.script(json_body=chat_reply("four", prompt_tokens=None, completion_tokens=None))
    async with Gateway.open(gateway_config(server.base_url), store, clock=SystemClock()) as gw:
        await gw.chat(stage="s", provider=PROVIDER, request=chat_request("x" * 40))
    [row] = rows(db_path, LEDGER)
    assert row[0] == "ok"
    assert row[2] > 10  # the prompt estimate (40 characters + message overhead)
    assert row[3] == 1  # "four" is about one token
    assert rows(db_path, "SELECT usage_estimated FROM provider_calls") == [(1,)]


async def test_embed_and_rerank_go_through_the_ledger(store: Store, db_path: Path) -> None:
    with SimProvider() as sim:
        async with Gateway.open(gateway_config(sim.base_url), store, clock=SystemClock()) as gw:
            emb = await gw.embed(
                stage="embedder",
                provider=PROVIDER,
                request=EmbedRequest(model="e", inputs=("猫", "dog")),
            )
            ranked = await gw.rerank(
                stage="rerank",
                provider=PROVIDER,
                request=RerankRequest(model="r", query="cat food", documents=("dog", "cat food")),
            )
        stats = sim.stats()
    assert len(emb.vectors) == 2
    assert ranked.results[0].index == 1
    kinds = rows(
        db_path, "SELECT call_kind, outcome, prompt_tokens FROM provider_calls ORDER BY id"
    )
    assert [(k, o) for k, o, _ in kinds] == [("embed", "ok"), ("rerank", "ok")]
    assert sum(t for _, _, t in kinds) == stats.prompt_tokens


# --- retries ----------------------------------------------------------------------------------


async def test_429_with_retry_after_is_honoured_then_succeeds(
    server: ScriptedProvider, store: Store, db_path: Path
) -> None:
    server.script(status=429, headers={"Retry-After": "1"}).then(json_body=chat_reply("ok"))
    async with Gateway.open(gateway_config(server.base_url), store, clock=SystemClock()) as gw:
        started = time.monotonic()
        answer = await gw.chat(stage="s", provider=PROVIDER, request=chat_request())
    assert answer.text == "ok"
    assert len(server.seen) == 2
    assert server.seen[1].at - server.seen[0].at >= 0.99
    assert time.monotonic() - started >= 0.99
    [row] = rows(db_path, LEDGER)
    assert (row[0], row[5], row[6]) == ("ok", 1, 1)


async def test_5xx_are_retried_with_backoff(
    server: ScriptedProvider, store: Store, db_path: Path
) -> None:
    server.script(status=500).then(status=503).then(status=502).then(json_body=chat_reply("ok"))
    async with Gateway.open(gateway_config(server.base_url), store, clock=SystemClock()) as gw:
        assert (await gw.chat(stage="s", provider=PROVIDER, request=chat_request())).text == "ok"
    assert len(server.seen) == 4
    assert rows(db_path, LEDGER)[0][:2] == ("ok", None)
    assert rows(db_path, LEDGER)[0][5] == 3


async def test_retries_exhausted_raise_and_release_the_reservation(
    server: ScriptedProvider, store: Store, db_path: Path
) -> None:
    server.script(status=500, times=10)
    cfg = gateway_config(server.base_url, provider={"max_retries": 2, "breaker_failures": 50})
    async with Gateway.open(cfg, store, clock=SystemClock()) as gw:
        with pytest.raises(ProviderUnavailable, match="HTTP 500") as info:
            await gw.chat(stage="s", provider=PROVIDER, request=chat_request())
    assert isinstance(info.value, Retryable)
    assert len(server.seen) == 3
    [row] = rows(db_path, LEDGER)
    assert row[:6] == ("error", "ProviderUnavailable", 0, 0, 0.0, 2)
    assert reservations(db_path) == [("released", 0.0)]
    assert usage_total(db_path) == 0.0


async def test_a_long_retry_after_ends_the_call_at_once(
    server: ScriptedProvider, store: Store, db_path: Path
) -> None:
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=120), usegmt=True)
    server.script(status=429, headers={"Retry-After": when})
    async with Gateway.open(gateway_config(server.base_url), store, clock=SystemClock()) as gw:
        with anyio.fail_after(2):
            with pytest.raises(RateLimited) as info:
                await gw.chat(stage="s", provider=PROVIDER, request=chat_request())
    assert info.value.retry_after_s == pytest.approx(120, abs=3)
    assert len(server.seen) == 1  # the job runner retries later; we do not sleep 2 minutes


async def test_a_slow_answer_times_out_and_is_retried(
    server: ScriptedProvider, store: Store, db_path: Path
) -> None:
    server.script(delay_s=1.5, json_body=chat_reply("late"), times=2)
    cfg = gateway_config(server.base_url, provider={"timeout_s": 0.3, "max_retries": 1})
    async with Gateway.open(cfg, store, clock=SystemClock()) as gw:
        with anyio.fail_after(3):
            with pytest.raises(ProviderTimeout) as info:
                await gw.chat(stage="s", provider=PROVIDER, request=chat_request())
    assert info.value.__cause__ is not None  # translated `from` the httpx error
    assert len(server.seen) == 2
    [row] = rows(db_path, LEDGER)
    assert row[:2] == ("error", "ProviderTimeout")
    assert row[5] == 1
    assert reservations(db_path) == [("released", 0.0)]


async def test_malformed_json_is_not_retried_and_is_charged_an_estimate_marked_as_such(
    server: ScriptedProvider, store: Store, db_path: Path
) -> None:
    body = '{"choices": [{"message": {"content": "trunc'
    server.script(text=body)
    request = chat_request()
    async with Gateway.open(gateway_config(server.base_url), store, clock=SystemClock()) as gw:
        with pytest.raises(BadProviderOutput) as info:
            await gw.chat(stage="s", provider=PROVIDER, request=request)
    assert "trunc" in info.value.raw  # the raw answer is kept for the dead letter
    assert isinstance(info.value, Retryable)  # the job runner may try the job again
    assert len(server.seen) == 1
    [row] = rows(db_path, LEDGER)
    assert row[:2] == ("error", "BadProviderOutput")
    # The provider answered 200 and probably billed, but reported no usage: the prompt as
    # estimated before sending and the completion from what arrived, not the worst case.
    prompt, completion = estimate_chat_tokens(request.messages), estimate_tokens(body)
    assert row[2:5] == (prompt, completion, pytest.approx(cost(prompt, completion)))
    assert row[4] < row[7]
    assert rows(db_path, "SELECT usage_estimated FROM provider_calls") == [(1,)]
    assert reservations(db_path) == [("settled", pytest.approx(row[4]))]
    assert usage_total(db_path) == pytest.approx(row[4])


async def test_an_answer_of_the_wrong_shape_is_charged_the_usage_it_reports(
    server: ScriptedProvider, store: Store, db_path: Path
) -> None:
    server.script(json_body={"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 7}})
    async with Gateway.open(gateway_config(server.base_url), store, clock=SystemClock()) as gw:
        with pytest.raises(BadProviderOutput):
            await gw.chat(stage="s", provider=PROVIDER, request=chat_request())
    [row] = rows(db_path, LEDGER)
    assert row[:5] == ("error", "BadProviderOutput", 12, 7, pytest.approx(cost(12, 7)))
    assert rows(db_path, "SELECT usage_estimated FROM provider_calls") == [(0,)]


async def test_an_error_answer_that_reports_usage_is_charged_it(
    server: ScriptedProvider, store: Store, db_path: Path
) -> None:
    error = {"error": {"message": "overloaded"}, "usage": {"prompt_tokens": 9}}
    server.script(status=500, json_body=error).then(json_body=chat_reply("ok"))
    async with Gateway.open(gateway_config(server.base_url), store, clock=SystemClock()) as gw:
        assert (await gw.chat(stage="s", provider=PROVIDER, request=chat_request())).text == "ok"
    # the failed request's prompt was billed, and so was the answer (10 prompt, 5 completion)
    [row] = rows(db_path, LEDGER)
    assert row[:6] == ("ok", None, 19, 5, pytest.approx(cost(19, 5)), 1)
    assert rows(db_path, "SELECT usage_estimated FROM provider_calls") == [(0,)]
    assert usage_total(db_path) == pytest.approx(cost(19, 5))


async def test_a_4xx_is_permanent_and_not_retried(
    server: ScriptedProvider, store: Store, db_path: Path
) -> None:
    server.script(status=400, json_body={"error": {"message": "bad model name"}})
    async with Gateway.open(gateway_config(server.base_url), store, clock=SystemClock()) as gw:
        with pytest.raises(ProviderRejected, match="bad model name") as info:
            await gw.chat(stage="s", provider=PROVIDER, request=chat_request())
    assert isinstance(info.value, Permanent)
    assert info.value.status == 400
    assert len(server.seen) == 1
    assert rows(db_path, LEDGER)[0][:2] == ("error", "ProviderRejected")


async def test_an_injected_transport_reaches_the_same_error_translation(
    store: Store, db_path: Path
) -> None:
    # A connection reset halfway through an answer: a case a scripted socket cannot time exactly.
    def reset(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadError("connection reset by peer", request=request)

    cfg = gateway_config("http://provider.invalid/v1", provider={"max_retries": 1})
    async with Gateway.open(
        cfg, store, clock=SystemClock(), transport=httpx.MockTransport(reset)
    ) as gw:
        with pytest.raises(ProviderUnavailable, match="ReadError") as info:
            await gw.chat(stage="s", provider=PROVIDER, request=chat_request())
    assert isinstance(info.value.__cause__, httpx.ReadError)
    assert rows(db_path, LEDGER)[0][:2] == ("error", "ProviderUnavailable")
    assert rows(db_path, LEDGER)[0][5] == 1


async def test_connection_refused_is_unavailable(store: Store, db_path: Path) -> None:
    with ScriptedProvider() as gone:
        url = gone.base_url
    cfg = gateway_config(url, provider={"max_retries": 1})
    async with Gateway.open(cfg, store, clock=SystemClock()) as gw:
        with pytest.raises(ProviderUnavailable, match="ConnectError"):
            await gw.chat(stage="s", provider=PROVIDER, request=chat_request())
    assert rows(db_path, LEDGER)[0][:2] == ("error", "ProviderUnavailable")


# --- circuit breaker --------------------------------------------------------------------------


async def test_the_breaker_opens_fails_fast_and_closes_after_a_good_trial(
    server: ScriptedProvider, store: Store, db_path: Path
) -> None:
    server.script(status=503, times=2)
    cfg = gateway_config(
        server.base_url,
        provider={"max_retries": 0, "breaker_failures": 2, "breaker_cooldown_s": 30},
    )
    clock = ManualClock()
    async with Gateway.open(cfg, store, clock=clock) as gw:
        for _ in range(2):
            with pytest.raises(ProviderUnavailable):
                await gw.chat(stage="s", provider=PROVIDER, request=chat_request())
        clock.advance(29)
        with pytest.raises(CircuitOpen) as info:
            await gw.chat(stage="s", provider=PROVIDER, request=chat_request())
        assert isinstance(info.value, Deferred)  # not an attempt of the job: it waits
        assert info.value.retry_after_s == pytest.approx(1)
        assert len(server.seen) == 2  # nothing sent while open
        clock.advance(1)  # the cooldown is over: one trial may pass, and it succeeds
        assert (await gw.chat(stage="s", provider=PROVIDER, request=chat_request())).text == "ok"
        assert (await gw.chat(stage="s", provider=PROVIDER, request=chat_request())).text == "ok"
    outcomes = [(r[0], r[1]) for r in rows(db_path, LEDGER)]
    assert outcomes == [
        ("error", "ProviderUnavailable"),
        ("error", "ProviderUnavailable"),
        ("refused", "CircuitOpen"),
        ("ok", None),
        ("ok", None),
    ]


async def test_a_step_of_the_wall_clock_neither_ends_nor_stretches_a_cooldown(
    server: ScriptedProvider, store: Store, db_path: Path
) -> None:
    """The breaker times its cooldown on monotonic seconds: the wall clock stepped a day ahead
    (or back) changes nothing; the cooldown's own 30 s end it."""
    server.script(status=503, times=2)
    cfg = gateway_config(
        server.base_url,
        provider={"max_retries": 0, "breaker_failures": 2, "breaker_cooldown_s": 30},
    )
    clock = ManualClock()
    async with Gateway.open(cfg, store, clock=clock) as gw:
        for _ in range(2):
            with pytest.raises(ProviderUnavailable):
                await gw.chat(stage="s", provider=PROVIDER, request=chat_request("你好"))
        for step in (timedelta(days=1), timedelta(days=-2)):
            clock.set(clock.now() + step)
            with pytest.raises(CircuitOpen) as info:
                await gw.chat(stage="s", provider=PROVIDER, request=chat_request("你好"))
            assert info.value.retry_after_s == pytest.approx(30)
        clock.advance(30)
        assert (await gw.chat(stage="s", provider=PROVIDER, request=chat_request())).text == "ok"
    assert len(server.seen) == 3  # nothing was sent while the breaker was open
    assert [r[1] for r in rows(db_path, LEDGER)] == [
        "ProviderUnavailable",
        "ProviderUnavailable",
        "CircuitOpen",
        "CircuitOpen",
        None,
    ]


# --- limits -----------------------------------------------------------------------------------


#: how late a request's arrival may be stamped: both servers are threads of the test's own
#: process, so under CPU contention an arrival waits for the GIL and a core before it is stamped.
#: The gateway paces at RATE_MARGIN of the limit (10 ms of slack in this test's 0.5 s interval),
#: which absorbs real network jitter against a provider's one-minute window but not a stamp
#: delayed by a busy machine; the windows below are shortened by this much.
ARRIVAL_JITTER_S = 0.15


async def test_requests_per_minute_seen_by_the_server_never_exceed_the_limit(
    store: Store, db_path: Path
) -> None:
    # 120 requests/min = 2 per 1 s window: the sim enforces 2 per (window - stamp jitter) over a
    # sliding window and would answer 429 to one request too many.
    settings = SimSettings(rpm=2, window_s=1.0 - ARRIVAL_JITTER_S)

    async def seven_calls(base_url: str) -> None:
        cfg = gateway_config(base_url, provider={"requests_per_minute": 120})
        async with (
            Gateway.open(cfg, store, clock=SystemClock()) as gw,
            anyio.create_task_group() as tg,
        ):
            for i in range(7):
                # three stages share the one gateway, and so its limits
                tg.start_soon(call, gw, f"q{i}", ("extractor", "embedder", "dedup")[i % 3])

    with SimProvider(settings=settings) as sim, ScriptedProvider() as scripted:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(seven_calls, sim.base_url)
                tg.start_soon(seven_calls, scripted.base_url)
        stats = sim.stats()
        arrivals = [s.at for s in scripted.seen]
    assert stats.ok == 7
    assert stats.rate_limited == 0
    assert stats.peak_requests_per_window <= 2
    assert len(arrivals) == 7
    for window_s in (1.0, 2.0, 3.0):
        allowed = 120 * window_s / 60
        for i, start in enumerate(arrivals):
            inside = sum(1 for t in arrivals[i:] if t < start + window_s - ARRIVAL_JITTER_S)
            assert inside <= allowed, (window_s, arrivals)
    span = arrivals[-1] - arrivals[0]
    # paced at the limit, not far below it: six intervals of 0.5 s / RATE_MARGIN, give or take
    # one late stamp at either end
    assert 6 * 0.5 - ARRIVAL_JITTER_S <= span <= 6 * 0.5 / 0.8


async def test_max_concurrency_caps_requests_in_flight(store: Store) -> None:
    with SimProvider(settings=SimSettings(latency_ms=150)) as sim:
        cfg = gateway_config(sim.base_url, provider={"max_concurrency": 2})
        async with (
            Gateway.open(cfg, store, clock=SystemClock()) as gw,
            anyio.create_task_group() as tg,
        ):
            for i in range(6):
                tg.start_soon(call, gw, f"{i}")
        stats = sim.stats()
    assert stats.ok == 6
    assert stats.peak_concurrency == 2


async def test_a_429_storm_ends_with_every_call_answered_and_the_ledger_equal_to_the_server(
    store: Store, db_path: Path
) -> None:
    # The server allows 5 requests per 0.5 s window (600/min) but we are configured for 6,000/min,
    # and it injects 429s on a quarter of the rest: most calls meet 429s with Retry-After.
    settings = SimSettings(
        rpm=5, window_s=0.5, error_rate=0.25, error_status=429, retry_after_s=0.05, seed=3
    )
    with SimProvider(settings=settings) as sim:
        cfg = gateway_config(
            sim.base_url,
            provider={"requests_per_minute": 6000, "max_retries": 30, "retry_max_s": 1.0},
        )
        answers: list[str] = []

        async def one(i: int) -> None:
            answer = await gw.chat(stage="s", provider=PROVIDER, request=chat_request(f"第{i}个"))
            answers.append(answer.text)

        async with Gateway.open(cfg, store, clock=SystemClock()) as gw:
            with anyio.fail_after(20):
                async with anyio.create_task_group() as tg:
                    for i in range(30):
                        tg.start_soon(one, i)
        stats = sim.stats()
    assert len(answers) == 30
    assert stats.rate_limited > 0 and stats.errors_injected > 0
    ledger = rows(db_path, LEDGER)
    assert [r[0] for r in ledger] == ["ok"] * 30
    assert sum(1 + r[5] for r in ledger) == stats.requests
    assert sum(r[6] for r in ledger) == stats.rate_limited + stats.errors_injected
    assert sum(r[2] for r in ledger) == stats.prompt_tokens
    assert sum(r[3] for r in ledger) == stats.completion_tokens


async def test_the_ledger_totals_equal_the_servers_stats_under_errors_and_garbage(
    store: Store, db_path: Path
) -> None:
    settings = SimSettings(
        latency_ms=5, jitter_ms=5, error_rate=0.2, error_status=500, garbage_rate=0.1, seed=11
    )
    with SimProvider(settings=settings) as sim:
        cfg = gateway_config(sim.base_url, provider={"max_retries": 2, "breaker_failures": 1000})
        outcomes: list[str] = []

        async def one(i: int) -> None:
            try:
                await gw.chat(
                    stage="extractor", provider=PROVIDER, request=chat_request(f"记住：{i}号")
                )
                outcomes.append("ok")
            except (ProviderUnavailable, BadProviderOutput) as exc:
                outcomes.append(type(exc).__name__)

        async with Gateway.open(cfg, store, clock=SystemClock()) as gw:
            with anyio.fail_after(20):
                async with anyio.create_task_group() as tg:
                    for i in range(60):
                        tg.start_soon(one, i)
        stats = sim.stats()
    ledger = rows(db_path, LEDGER)
    assert len(ledger) == 60
    assert stats.garbage_injected > 0 and stats.errors_injected > 0
    ok = [r for r in ledger if r[0] == "ok"]
    assert len(ok) == outcomes.count("ok") == stats.ok
    assert sum(1 + r[5] for r in ledger) == stats.requests
    assert sum(r[2] for r in ok) == stats.prompt_tokens
    assert sum(r[3] for r in ok) == stats.completion_tokens
    garbage = [r for r in ledger if r[1] == "BadProviderOutput"]
    assert len(garbage) == stats.garbage_injected  # a garbage answer ends its call
    spent = rows(db_path, "SELECT sum(cost) FROM provider_calls")[0][0]
    assert usage_total(db_path) == pytest.approx(spent)
    # What the provider counted is what the ledger holds as reported; the garbage answers
    # (no usage to read) are estimates, marked as such.
    reported = rows(
        db_path,
        "SELECT sum(prompt_tokens), sum(completion_tokens) FROM provider_calls"
        " WHERE usage_estimated = 0",
    )[0]
    assert reported == (stats.prompt_tokens, stats.completion_tokens)
    estimated = rows(db_path, "SELECT count(*) FROM provider_calls WHERE usage_estimated = 1")
    assert estimated == [(stats.garbage_injected,)]
    held = rows(db_path, "SELECT count(*) FROM budget_reservations WHERE status = 'held'")
    assert held == [(0,)]


# --- price, keys, lifecycle -------------------------------------------------------------------


async def test_an_unknown_price_fails_closed(
    server: ScriptedProvider, store: Store, db_path: Path
) -> None:
    from hlmem.errors import UnknownPrice

    cfg = gateway_config(server.base_url, prices={"p/other-model": {"free": True}})
    async with Gateway.open(cfg, store, clock=SystemClock()) as gw:
        with pytest.raises(UnknownPrice, match="p/m"):
            await gw.chat(stage="s", provider=PROVIDER, request=chat_request(model="m"))
        await gw.chat(stage="s", provider=PROVIDER, request=chat_request(model="other-model"))
    assert len(server.seen) == 1  # only the free model's call went out
    assert [(r[0], r[1], r[4]) for r in rows(db_path, LEDGER)] == [
        ("refused", "UnknownPrice", 0.0),
        ("ok", None, 0.0),
    ]


SECRET = "sk-hlmem-TEST-7f3a9c2e5b1d8046-zz"


async def test_the_api_key_never_leaks(
    server: ScriptedProvider,
    store: Store,
    db_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    echo = {
        "error": {"message": f"Incorrect API key provided: {SECRET}", "auth": f"Bearer {SECRET}"}
    }
    server.script(status=401, json_body=echo)
    server.script(status=500, json_body=echo, times=2)
    server.script(json_body=chat_reply("fine"))
    cfg = gateway_config(
        server.base_url,
        provider={"api_key_env": "HLMEM_TEST_KEY", "max_retries": 1},
        env={"HLMEM_TEST_KEY": SECRET},
    )
    assert SECRET not in repr(cfg) and SECRET not in str(cfg.model_dump())
    errors: list[ProviderRejected | ProviderUnavailable] = []
    async with Gateway.open(cfg, store, clock=SystemClock()) as gw:
        for _ in range(2):
            try:
                await gw.chat(stage="s", provider=PROVIDER, request=chat_request())
            except (ProviderRejected, ProviderUnavailable) as exc:
                errors.append(exc)
        await gw.chat(stage="s", provider=PROVIDER, request=chat_request())
        report = await ops_report(store, cfg, since=timedelta(days=1), clock=SystemClock())
    assert [type(e).__name__ for e in errors] == ["ProviderRejected", "ProviderUnavailable"]
    assert all(s.authorization == f"Bearer {SECRET}" for s in server.seen)  # it was sent
    for error in errors:
        text = "".join(traceback.format_exception(error)) + repr(error) + str(error.__cause__)
        assert SECRET not in text
        assert "[redacted]" in str(error)
    logged = caplog.text + "".join(str(r.__dict__) for r in caplog.records)
    assert caplog.records  # logging did happen (httpx, gateway)
    assert SECRET not in logged
    dump = "\n".join(
        str(rows(db_path, f"SELECT * FROM {table}"))
        for (table,) in rows(db_path, "SELECT name FROM sqlite_master WHERE type = 'table'")
    )
    assert SECRET not in dump
    assert SECRET not in render(report) and SECRET not in report.model_dump_json()
    assert SECRET[-8:] not in logged + dump


def test_redact_masks_the_key_and_key_shaped_tokens() -> None:
    assert redact(f"key {SECRET}!", SECRET) == "key [redacted]!"
    assert SECRET[:12] not in redact(f"Bearer {SECRET[:20]}", None)
    assert redact("sk-abcd1234 and sk-***wxyz", None) == "[redacted] and [redacted]"


async def test_a_missing_key_variable_is_a_config_error_naming_the_variable(
    server: ScriptedProvider, store: Store
) -> None:
    cfg = gateway_config(server.base_url, provider={"api_key_env": "HLMEM_TEST_NO_SUCH_KEY"})
    with pytest.raises(ConfigError, match="HLMEM_TEST_NO_SUCH_KEY"):
        async with Gateway.open(cfg, store, clock=SystemClock()):
            pass


async def test_use_after_close_is_refused_and_errors_in_the_body_are_not_wrapped(
    server: ScriptedProvider, store: Store
) -> None:
    with pytest.raises(KeyError):
        async with Gateway.open(gateway_config(server.base_url), store, clock=SystemClock()) as gw:
            raise KeyError("mine")
    with pytest.raises(ClosedError):
        await gw.chat(stage="s", provider=PROVIDER, request=chat_request())
    async with Gateway.open(gateway_config(server.base_url), store, clock=SystemClock()) as gw:
        with pytest.raises(ConfigError, match="no provider 'nope'"):
            await gw.chat(stage="s", provider="nope", request=chat_request())
    assert server.seen == []


async def test_cancelling_a_call_releases_its_reservation(
    server: ScriptedProvider, store: Store, db_path: Path
) -> None:
    server.script(delay_s=5, json_body=chat_reply("never"))
    async with Gateway.open(gateway_config(server.base_url), store, clock=SystemClock()) as gw:
        with anyio.move_on_after(0.3):
            await gw.chat(stage="s", provider=PROVIDER, request=chat_request())
    assert reservations(db_path) == [("released", 0.0)]
    assert rows(db_path, LEDGER)[0][:2] == ("error", "CancelledError")


def test_retry_after_reads_seconds_milliseconds_and_dates() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    assert retry_after_s({"retry-after": "3"}) == 3.0
    assert retry_after_s({"retry-after": "1.5", "retry-after-ms": "250"}) == 0.25
    date = format_datetime(now + timedelta(seconds=30), usegmt=True)
    assert retry_after_s({"retry-after": date}, now) == 30.0
    assert retry_after_s({"retry-after": "soon"}) is None
    assert retry_after_s({}) is None


# --- plugins ----------------------------------------------------------------------------------


@pytest.fixture
def plugin_dist(tmp_path: Path) -> Iterator[Path]:
    """Two provider plugins installed as a dist-info on sys.path: ``good`` and ``evil``.

    Importing ``evil_plugin`` writes a marker file (and fails), so a test can tell whether it
    was ever imported."""
    site = tmp_path / "site"
    dist = site / "hlmem_test_plugins-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: hlmem-test-plugins\nVersion: 1.0\n"
    )
    (dist / "entry_points.txt").write_text(
        "[hlmem.providers]\ngood = good_plugin:PRESET\nevil = evil_plugin:PRESET\n"
    )
    (site / "good_plugin.py").write_text(
        "from hlmem.gateway.providers import ProviderPreset\n"
        "PRESET = ProviderPreset(name='good', base_url='http://127.0.0.1:9/v1')\n"
    )
    marker = tmp_path / "evil-imported"
    (site / "evil_plugin.py").write_text(
        f"open({str(marker)!r}, 'w').close()\nraise RuntimeError('evil plugin imported')\n"
    )
    sys.path.insert(0, str(site))
    try:
        yield marker
    finally:
        sys.path.remove(str(site))
        for name in ("good_plugin", "evil_plugin"):
            sys.modules.pop(name, None)


async def test_only_allowlisted_plugins_are_ever_imported(
    plugin_dist: Path, server: ScriptedProvider, store: Store
) -> None:
    marker = plugin_dist
    assert set(load_plugin_presets(["good"])) == {"good"}
    assert "good_plugin" in sys.modules
    assert "evil_plugin" not in sys.modules and not marker.exists()

    # a provider may use an allowlisted plugin's wire format
    cfg = gateway_config(
        server.base_url, provider={"preset": "good"}, plugins={"allowlist": ["good"]}
    )
    async with Gateway.open(cfg, store, clock=SystemClock()) as gw:
        assert (await gw.chat(stage="s", provider=PROVIDER, request=chat_request())).text == "ok"
    assert "evil_plugin" not in sys.modules and not marker.exists()

    # a preset outside the allowlist is a configuration error, and still nothing is imported
    with pytest.raises(ConfigError, match=r"plugins\.allowlist"):
        gateway_config(server.base_url, provider={"preset": "evil"})
    assert not marker.exists()

    # an allowlisted plugin that fails to import is a configuration error
    with pytest.raises(ConfigError, match="'evil' failed to load"):
        load_plugin_presets(["evil"])
    assert marker.exists()
