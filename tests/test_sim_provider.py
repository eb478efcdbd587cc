"""The simulated provider over real loopback sockets: answers, limits, injected failures, stats."""

from __future__ import annotations

import json
import logging
import os
import selectors
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import anyio
import httpx
import numpy as np
import pytest
from pydantic import ValidationError

from hlmem import rules
from hlmem.errors import BadProviderOutput
from hlmem.gateway import (
    ChatMessage,
    ChatRequest,
    EmbedRequest,
    RerankRequest,
    build_chat,
    build_embed,
    build_rerank,
    estimate_chat_tokens,
    estimate_tokens,
    parse_chat,
    parse_embed,
    parse_extraction,
    parse_rerank,
    render_extraction,
)
from hlmem.lang import LocalEmbedder
from hlmem.messages import Role, WindowPiece, WindowText
from hlmem.sim import SimProvider, SimSettings

T0 = datetime(2024, 5, 3, 9, 30, tzinfo=UTC)
EMBED_BODY = build_embed("sim", EmbedRequest(model="sim-embed", inputs=("hello",)))[1]


@contextmanager
def serve(**settings: Any) -> Iterator[tuple[SimProvider, httpx.Client]]:
    with (
        SimProvider(settings=SimSettings(**settings)) as sim,
        httpx.Client(base_url=sim.base_url, timeout=10) as client,
    ):
        yield sim, client


def stats(client: httpx.Client) -> dict[str, Any]:
    """``GET /stats`` (it lives beside ``/v1``, not under it)."""
    data: dict[str, Any] = client.get(client.base_url.copy_with(path="/stats")).json()
    return data


def chat_body(text: str, *, max_tokens: int = 256, json_mode: bool = False) -> dict[str, Any]:
    req = ChatRequest(
        model="sim-chat",
        messages=(ChatMessage(role="user", content=text),),
        max_tokens=max_tokens,
        json_mode=json_mode,
    )
    return build_chat("sim", req)[1]


def window(*turns: tuple[Role, str]) -> WindowText:
    return WindowText(
        window_id="w",
        namespace="ns",
        session_id="s",
        pieces=tuple(
            WindowPiece(
                event_id=f"evt_{i}",
                chunk_no=0,
                chunk_count=1,
                start_char=0,
                end_char=len(text),
                role=role,
                text=text,
                occurred_at=T0,
            )
            for i, (role, text) in enumerate(turns)
        ),
    )


WINDOWS = {
    "zh": window(
        (Role.USER, "我主要用深色模式。"),
        (Role.USER, "记住：我的猫叫小白\n它三岁了"),
        (Role.ASSISTANT, "好的，记住：你的猫叫小白"),
        (Role.USER, "另外，请记住周报每周一发给 Alice。"),
    ),
    "en": window(
        (Role.USER, "Please remember that the prod DB is db-prod-2."),
        (Role.ASSISTANT, "Remember: I am an assistant."),
        (Role.USER, "ok, also remember: standup moved to 10am"),
    ),
}


# --- answers ----------------------------------------------------------------------------------


@pytest.mark.parametrize("lang", sorted(WINDOWS))
def test_extraction_answers_are_what_the_rules_find(lang: str) -> None:
    win = WINDOWS[lang]
    messages = tuple(render_extraction(win))
    req = ChatRequest(model="sim-chat", messages=messages, max_tokens=2000, json_mode=True)
    path, body = build_chat("sim", req)
    with serve() as (_, client):
        answer = parse_chat(client.post(path, json=body).content)
        seen = stats(client)
    expected = rules.extract(win)
    assert len(expected) >= 2
    assert parse_extraction(answer.text, win) == expected
    assert answer.prompt_tokens == estimate_chat_tokens(messages)
    assert answer.completion_tokens == estimate_tokens(answer.text)
    assert answer.finish_reason == "stop"
    assert seen["prompt_tokens"] == answer.prompt_tokens
    assert seen["completion_tokens"] == answer.completion_tokens


def test_plain_chat_is_short_deterministic_and_bounded_by_max_tokens() -> None:
    with serve() as (_, client):
        first, second = (
            parse_chat(client.post("/chat/completions", json=chat_body("你好 world")).content)
            for _ in range(2)
        )
        as_json = parse_chat(
            client.post("/chat/completions", json=chat_body("x", json_mode=True)).content
        )
        cut = parse_chat(
            client.post("/chat/completions", json=chat_body("y" * 400, max_tokens=3)).content
        )
        # the /v1-less path serves the same thing
        assert (
            client.post(
                client.base_url.copy_with(path="/chat/completions"), json=chat_body("x")
            ).status_code
            == 200
        )
    assert first.text == second.text and "你好 world" in first.text
    assert first.prompt_tokens == estimate_chat_tokens(
        [ChatMessage(role="user", content="你好 world")]
    )
    assert json.loads(as_json.text)["reply"]
    assert cut.finish_reason == "length" and (cut.completion_tokens or 0) <= 3


def test_embeddings_are_the_local_embedders() -> None:
    texts = ("我的猫叫小白", "the prod DB is db-prod-2", "混合 text")
    with serve() as (_, client):
        path, body = build_embed("sim", EmbedRequest(model="m", inputs=texts))
        answer = parse_embed(client.post(path, json=body).content, expected=3)
        path, body = build_embed("sim", EmbedRequest(model="m", inputs=texts, dimensions=64))
        small = parse_embed(client.post(path, json=body).content, expected=3)
        b64 = parse_embed(
            client.post(path, json={**body, "encoding_format": "base64"}).content, expected=3
        )
    assert np.array_equal(answer.array(), LocalEmbedder().embed(texts))
    assert small.array().shape == (3, 64)
    assert np.array_equal(b64.array(), small.array())
    assert answer.prompt_tokens == sum(estimate_tokens(t) for t in texts)


def test_rerank_orders_documents_by_similarity() -> None:
    docs = ("我在杭州工作", "我的猫叫小白", "周报每周一发给 Alice", "my cat is called Snowball")
    with serve() as (_, client):
        req = RerankRequest(model="r", query="我的猫叫什么名字", documents=docs)
        path, body = build_rerank("sim", req)
        answer = parse_rerank(client.post(path, json=body).content, documents=len(docs))
        req = RerankRequest(model="r", query="what is my cat called", documents=docs, top_n=2)
        path, body = build_rerank("sim", req)
        top = parse_rerank(client.post(path, json=body).content, documents=len(docs))
    assert answer.results[0].index == 1
    assert sorted(r.index for r in answer.results) == [0, 1, 2, 3]
    assert [r.index for r in top.results][:1] == [3] and len(top.results) == 2
    assert answer.prompt_tokens and answer.prompt_tokens > 0


# --- limits -----------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_burst_over_rpm_gets_429s_with_retry_after() -> None:
    responses: list[httpx.Response] = []
    with SimProvider(settings=SimSettings(rpm=5, latency_ms=50)) as sim:
        async with httpx.AsyncClient(base_url=sim.base_url, timeout=10) as client:

            async def one() -> None:
                responses.append(await client.post("/embeddings", json=EMBED_BODY))

            with anyio.fail_after(10):
                async with anyio.create_task_group() as tg:
                    for _ in range(12):
                        tg.start_soon(one)
            seen = (await client.get(sim.url + "/stats")).json()
    statuses = Counter(r.status_code for r in responses)
    assert statuses == {200: 5, 429: 7}
    for r in responses:
        if r.status_code == 429:
            assert 1 <= int(r.headers["Retry-After"]) <= 60
            assert 0 < int(r.headers["retry-after-ms"]) <= 60_000
            assert r.json()["error"]["code"] == "rate_limit_exceeded"
    assert seen["requests"] == 12 and seen["ok"] == 5 and seen["rate_limited"] == 7
    assert seen["responses_by_status"] == {"200": 5, "429": 7}
    assert seen["peak_requests_per_window"] == 12
    assert seen["prompt_tokens"] == 5 * estimate_tokens("hello")


def test_the_window_slides_and_retry_after_is_honest() -> None:
    with serve(rpm=2, window_s=0.5) as (_, client):
        assert [client.post("/embeddings", json=EMBED_BODY).status_code for _ in range(2)] == [
            200,
            200,
        ]
        refused = client.post("/embeddings", json=EMBED_BODY)
        assert refused.status_code == 429
        wait_ms = int(refused.headers["retry-after-ms"])
        assert 0 < wait_ms <= 500
        time.sleep(wait_ms / 1000 + 0.02)
        assert client.post("/embeddings", json=EMBED_BODY).status_code == 200


def test_tpm_counts_prompt_and_max_tokens() -> None:
    with serve(tpm=100) as (_, client):
        body = chat_body("abcd", max_tokens=60)  # 8 prompt tokens + 60
        assert client.post("/chat/completions", json=body).status_code == 200
        assert client.post("/chat/completions", json=body).status_code == 429
        too_big = client.post("/chat/completions", json=chat_body("abcd", max_tokens=500))
        assert too_big.status_code == 400  # waiting cannot help a request over the limit
        seen = stats(client)
    assert seen["rate_limited"] == 1 and seen["bad_requests"] == 1 and seen["ok"] == 1


# --- injected failures ------------------------------------------------------------------------


def test_errors_are_injected_at_the_seeded_rate_with_retry_after() -> None:
    n = 300
    with serve(error_rate=0.3, error_status=503, retry_after_s=2, seed=7) as (_, client):
        responses = [client.post("/embeddings", json=EMBED_BODY) for _ in range(n)]
        seen = stats(client)
    with serve(error_rate=0.3, error_status=503, retry_after_s=2, seed=7) as (_, client):
        again = [client.post("/embeddings", json=EMBED_BODY).status_code for _ in range(50)]
    failed = [r for r in responses if r.status_code == 503]
    assert 0.2 * n <= len(failed) <= 0.4 * n
    assert all(r.headers["Retry-After"] == "2" for r in failed)
    assert {r.status_code for r in responses} == {200, 503}
    assert again == [r.status_code for r in responses[:50]]  # same seed, same story
    assert seen["errors_injected"] == len(failed)
    assert seen["ok"] == n - len(failed)
    assert seen["prompt_tokens"] == seen["ok"] * estimate_tokens("hello")


def test_garbage_is_injected_at_the_seeded_rate_and_never_parses() -> None:
    n = 200
    with serve(garbage_rate=0.25, seed=3) as (_, client):
        responses = [client.post("/chat/completions", json=chat_body(f"m{i}")) for i in range(n)]
        seen = stats(client)
    garbage, prompt_tokens = 0, 0
    for r in responses:
        assert r.status_code == 200
        try:
            prompt_tokens += parse_chat(r.content).prompt_tokens or 0
        except BadProviderOutput:
            garbage += 1
    assert 0.15 * n <= garbage <= 0.35 * n
    assert seen["garbage_injected"] == garbage and seen["ok"] == n - garbage
    assert seen["prompt_tokens"] == prompt_tokens  # what a ledger of parsed answers would hold


def test_latency_and_jitter_are_applied() -> None:
    with serve(latency_ms=150, jitter_ms=50) as (_, client):
        times = []
        for _ in range(4):
            start = time.perf_counter()
            assert client.post("/embeddings", json=EMBED_BODY).status_code == 200
            times.append(time.perf_counter() - start)
    assert min(times) >= 0.1 and max(times) < 0.6


@pytest.mark.anyio
async def test_concurrent_requests_are_served_together_and_peak_is_measured() -> None:
    with SimProvider(settings=SimSettings(latency_ms=300)) as sim:
        async with httpx.AsyncClient(base_url=sim.base_url, timeout=10) as client:

            async def one() -> None:
                assert (await client.post("/embeddings", json=EMBED_BODY)).status_code == 200

            start = time.perf_counter()
            with anyio.fail_after(10):
                async with anyio.create_task_group() as tg:
                    for _ in range(16):
                        tg.start_soon(one)
            elapsed = time.perf_counter() - start
            seen = (await client.get(sim.url + "/stats")).json()
    assert elapsed < 1.5  # not one after the other (16 x 0.3 s)
    assert 12 <= seen["peak_concurrency"] <= 16
    assert seen["current_concurrency"] == 0


def test_an_answer_nobody_waits_for_is_not_counted() -> None:
    with serve(latency_ms=400) as (sim, client):
        with pytest.raises(httpx.ReadTimeout):
            client.post("/embeddings", json=EMBED_BODY, timeout=0.1)
        deadline = time.monotonic() + 5
        while sim.stats().client_gone == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        seen = sim.stats()
    assert seen.client_gone == 1 and seen.ok == 0 and seen.prompt_tokens == 0


# --- keys, bad requests, stats ----------------------------------------------------------------


def test_a_required_key_is_checked_and_never_shown(caplog: pytest.LogCaptureFixture) -> None:
    key = "sk-sim-secret-0123456789"
    caplog.set_level(logging.DEBUG)
    with serve(require_key=key) as (sim, client):
        missing = client.post("/embeddings", json=EMBED_BODY)
        wrong = client.post("/embeddings", json=EMBED_BODY, headers={"Authorization": "Bearer x"})
        right = client.post(
            "/embeddings", json=EMBED_BODY, headers={"Authorization": f"Bearer {key}"}
        )
        seen = client.get(sim.url + "/stats")
    assert (missing.status_code, wrong.status_code, right.status_code) == (401, 401, 200)
    assert seen.json()["unauthorized"] == 2
    assert key not in seen.text and key not in missing.text and key not in repr(sim.settings)
    assert caplog.records and key not in caplog.text


def test_bad_requests_are_400_or_404_and_stats_reset() -> None:
    with serve() as (sim, client):
        assert client.post("/embeddings", content=b"{nope").status_code == 400
        assert client.post("/chat/completions", json={"model": "x"}).status_code == 400
        assert client.post("/embeddings", json={"input": []}).status_code == 400
        assert client.post("/nothing", json={}).status_code == 404
        assert client.get("/models").json()["data"]
        seen = stats(client)
        assert seen["bad_requests"] == 4 and seen["ok"] == 0
        assert seen["requests_by_path"]["/v1/embeddings"] == 2
        reset = client.post(sim.url + "/stats/reset").json()
        assert reset["requests"] == 0 and reset["bad_requests"] == 0
        assert sim.stats().requests == 0


def test_settings_are_validated() -> None:
    with pytest.raises(ValidationError):
        SimSettings(error_rate=1.5)
    with pytest.raises(ValidationError):
        SimSettings(error_status=404)
    with pytest.raises(ValidationError):
        SimSettings(unknown=1)  # type: ignore[call-arg]


def test_an_outage_is_switched_while_serving_and_can_end_by_itself() -> None:
    with serve(error_rate=1.0, error_status=503) as (sim, client):
        control = client.base_url.copy_with(path="/control")
        assert client.post("/embeddings", json=EMBED_BODY).status_code == 503
        ended = client.post(control, json={"error_rate": 0.0})
        assert ended.status_code == 200 and ended.json()["error_rate"] == 0.0
        assert client.post("/embeddings", json=EMBED_BODY).status_code == 200
        assert client.post(control, json={"error_rate": 2}).status_code == 400
        assert client.post(control, json={"no_such_setting": 1}).status_code == 400
        assert client.post(control, content=b"[1]").status_code == 400
        assert sim.settings.error_rate == 0.0  # a refused change changes nothing
        # an outage with an end: errors only within errors_for_s of the change
        sim.update(error_rate=1.0, errors_for_s=3600)
        assert client.post("/embeddings", json=EMBED_BODY).status_code == 503
        sim.update(errors_for_s=0)
        assert client.post("/embeddings", json=EMBED_BODY).status_code == 200
        with pytest.raises(ValidationError):
            sim.update(error_status=404)
        seen = stats(client)
    assert seen["errors_injected"] == 2 and seen["ok"] == 2


# --- the command line -------------------------------------------------------------------------


def test_the_cli_serves_until_terminated() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HLMEM_")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "hlmem", "sim-provider", "--port", "0", "--rpm", "100", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stdout, selectors.EVENT_READ)
            assert sel.select(timeout=20), "no URL announced"
        line = proc.stdout.readline()
        assert line.startswith("sim-provider listening on http://127.0.0.1:"), line
        base_url = line.split()[-1]
        with httpx.Client(base_url=base_url, timeout=10) as client:
            assert client.post("/embeddings", json=EMBED_BODY).status_code == 200
            assert stats(client)["ok"] == 1
        proc.terminate()  # SIGTERM to this PID: a graceful stop
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert json.loads(out)["ok"] == 1
