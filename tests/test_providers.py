"""Wire formats (providers.py) and the extraction prompt (prompts.py): pure functions, no I/O."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hlmem import rules
from hlmem.errors import BadProviderOutput, ConfigError
from hlmem.gateway import (
    EXTRACTION_PROMPT_ID,
    PRESETS,
    ChatMessage,
    ChatRequest,
    EmbedRequest,
    RerankRequest,
    answer_for,
    build_chat,
    build_embed,
    build_rerank,
    estimate_chat_tokens,
    estimate_tokens,
    is_extraction,
    parse_answer,
    parse_chat,
    parse_embed,
    parse_extraction,
    parse_rerank,
    preset,
    read_window_lines,
    render_extraction,
)
from hlmem.messages import ClaimDraft, Role, WindowPiece, WindowText

PRESET_NAMES = sorted(PRESETS)
T0 = datetime(2024, 5, 3, 9, 30, tzinfo=UTC)


def chat_answer(content: Any = "hi", **extra: Any) -> bytes:
    body = {
        "id": "x",
        "model": "m-1",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15},
    }
    body.update(extra)
    return json.dumps(body).encode()


# --- presets and builders ---------------------------------------------------------------------


def test_presets_name_their_endpoints() -> None:
    assert preset("openai").base_url == "https://api.openai.com/v1"
    assert preset("dashscope").base_url == "https://dashscope.aliyuncs.com/compatible-mode/v1"
    assert preset("zhipu").base_url == "https://open.bigmodel.cn/api/paas/v4"
    assert preset("sim").base_url.startswith("http://127.0.0.1:")
    assert preset(PRESETS["zhipu"]) is PRESETS["zhipu"]
    with pytest.raises(ConfigError, match="unknown provider preset"):
        preset("nope")


@pytest.mark.parametrize("name", PRESET_NAMES)
def test_chat_request_and_answer_round_trip(name: str) -> None:
    req = ChatRequest(
        model="m-1",
        messages=(
            ChatMessage(role="system", content="s"),
            ChatMessage(role="user", content="你好"),
        ),
        max_tokens=77,
        json_mode=True,
    )
    path, body = build_chat(name, req)
    assert path == "/chat/completions"
    assert body["model"] == "m-1"
    assert body["messages"] == [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "你好"},
    ]
    assert body[PRESETS[name].max_tokens_field] == 77
    assert body["response_format"] == {"type": "json_object"}
    json.dumps(body)  # serialisable as is
    answer = parse_chat(chat_answer("好的"))
    assert (answer.text, answer.prompt_tokens, answer.completion_tokens) == ("好的", 12, 3)
    assert (answer.model, answer.finish_reason) == ("m-1", "stop")


def test_temperature_is_clamped_to_what_the_provider_takes() -> None:
    req = ChatRequest(model="m", messages=(ChatMessage(role="user", content="x"),), temperature=1.5)
    assert build_chat("zhipu", req)[1]["temperature"] == 1.0
    assert build_chat("openai", req)[1]["temperature"] == 1.5


def test_openai_uses_max_completion_tokens_and_plain_text_by_default() -> None:
    req = ChatRequest(model="gpt", messages=(ChatMessage(role="user", content="x"),))
    _, body = build_chat("openai", req)
    assert "max_completion_tokens" in body and "max_tokens" not in body
    assert "response_format" not in body
    _, body = build_chat("dashscope", req)
    assert "max_tokens" in body


def test_chat_answer_without_usage_has_no_counts() -> None:
    raw = json.dumps({"choices": [{"message": {"content": "x"}}]})
    answer = parse_chat(raw)
    assert answer.prompt_tokens is None and answer.completion_tokens is None


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"not json",
        b"<html>502</html>",
        b"[]",
        b'{"id": "x", "choices": [',
        b'{"choices": []}',
        b'{"choices": null}',
        b'{"choices": [{"message": {"content": null}}]}',
        b'{"choices": [{"message": {"content": ["a"]}}]}',
        b'{"error": {"message": "overloaded"}}',
        chat_answer(usage={"prompt_tokens": -1}),
        chat_answer(usage={"prompt_tokens": "12"}),
        b"\xff\xfe",
    ],
)
def test_malformed_chat_answers_raise_bad_provider_output(raw: bytes) -> None:
    with pytest.raises(BadProviderOutput) as info:
        parse_chat(raw)
    assert info.value.raw == raw.decode("utf-8", "replace")


def test_bad_provider_output_keeps_the_raw_text_truncated() -> None:
    raw = "x" * 10_000
    with pytest.raises(BadProviderOutput) as info:
        parse_chat(raw)
    assert info.value.raw == raw[: BadProviderOutput.RAW_MAX_CHARS]


@pytest.mark.parametrize("name", PRESET_NAMES)
def test_embeddings_round_trip(name: str) -> None:
    req = EmbedRequest(model="e", inputs=("a", "b"), dimensions=3)
    path, body = build_embed(name, req)
    assert path == "/embeddings"
    assert body == {"model": "e", "input": ["a", "b"], "encoding_format": "float", "dimensions": 3}
    raw = json.dumps(
        {
            "data": [  # out of order on purpose: the index decides
                {"index": 1, "embedding": [0.0, 1.0, 0.0]},
                {"index": 0, "embedding": [1.0, 0.0, 0.5]},
            ],
            "model": "e",
            "usage": {"prompt_tokens": 2, "total_tokens": 2},
        }
    )
    answer = parse_embed(raw, expected=2)
    assert answer.vectors == [[1.0, 0.0, 0.5], [0.0, 1.0, 0.0]]
    assert answer.array().dtype == np.float32 and answer.array().shape == (2, 3)
    assert answer.prompt_tokens == 2


def test_embeddings_in_base64_decode_to_float32() -> None:
    vec = np.array([0.25, -1.5, 3.0], dtype="<f4")
    raw = json.dumps(
        {"data": [{"index": 0, "embedding": base64.b64encode(vec.tobytes()).decode()}]}
    )
    assert parse_embed(raw).vectors == [[0.25, -1.5, 3.0]]


def test_embedding_batches_are_bounded_by_the_preset() -> None:
    too_many = EmbedRequest(
        model="e", inputs=tuple("x" * (PRESETS["dashscope"].embed_max_batch + 1))
    )
    with pytest.raises(ConfigError, match="batch"):
        build_embed("dashscope", too_many)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b'{"data": []}', None),
        (b'{"object": "list"}', None),
        (b'{"data": [{"index": 0}]}', None),
        (b'{"data": [{"index": 0, "embedding": []}]}', None),
        (b'{"data": [{"index": 0, "embedding": ["a"]}]}', None),
        (b'{"data": [{"index": 0, "embedding": [true]}]}', None),
        (b'{"data": [{"index": 0, "embedding": [NaN]}]}', None),
        (b'{"data": [{"index": 0, "embedding": [1e999]}]}', None),
        (b'{"data": [{"index": 0, "embedding": [1]}, {"index": 1, "embedding": [1, 2]}]}', None),
        (b'{"data": [{"index": 0, "embedding": [1]}, {"index": 0, "embedding": [2]}]}', None),
        (b'{"data": [{"index": 2, "embedding": [1]}]}', None),
        (b'{"data": [{"index": 0, "embedding": "!!"}]}', None),
        (b'{"data": [{"index": 0, "embedding": [1.0]}]}', 2),
    ],
)
def test_malformed_embeddings_raise(raw: bytes, expected: int | None) -> None:
    with pytest.raises(BadProviderOutput):
        parse_embed(raw, expected=expected)


def test_rerank_request_shapes() -> None:
    req = RerankRequest(model="r", query="q", documents=("a", "b", "c"), top_n=2)
    for name in ("zhipu", "sim"):
        path, body = build_rerank(name, req)
        assert path == "/rerank"
        assert body == {
            "model": "r",
            "query": "q",
            "documents": ["a", "b", "c"],
            "top_n": 2,
            "return_documents": False,
        }
    url, body = build_rerank("dashscope", req)
    assert url.startswith("https://dashscope.aliyuncs.com/api/v1/services/rerank/")
    assert body["input"] == {"query": "q", "documents": ["a", "b", "c"]}
    assert body["parameters"]["top_n"] == 2
    with pytest.raises(ConfigError, match="no rerank"):
        build_rerank("openai", req)


def test_rerank_answers_parse_best_first_in_both_shapes() -> None:
    jina = {
        "results": [{"index": 2, "relevance_score": 0.1}, {"index": 0, "relevance_score": 0.9}],
        "usage": {"total_tokens": 30},
    }
    dashscope = {"output": {"results": jina["results"]}, "usage": {"total_tokens": 30}}
    for raw in (jina, dashscope):
        answer = parse_rerank(json.dumps(raw), documents=3)
        assert [(r.index, r.score) for r in answer.results] == [(0, 0.9), (2, 0.1)]
        assert answer.prompt_tokens == 30


@pytest.mark.parametrize(
    "raw",
    [
        b'{"results": null}',
        b'{"results": [{"index": 0}]}',
        b'{"results": [{"index": -1, "relevance_score": 1}]}',
        b'{"results": [{"index": 5, "relevance_score": 1}]}',
        b'{"results": [{"index": "0", "relevance_score": 1}]}',
        b'{"results": [{"index": 0, "relevance_score": "high"}]}',
        b'{"results": [{"index": 0, "relevance_score": 1}, {"index": 0, "relevance_score": 2}]}',
        b'{"results": [1]}',
        b"{",
    ],
)
def test_malformed_rerank_answers_raise(raw: bytes) -> None:
    with pytest.raises(BadProviderOutput):
        parse_rerank(raw, documents=3)


# --- token estimates --------------------------------------------------------------------------


def test_estimate_tokens_counts_cjk_per_character_and_latin_per_four() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd") == 1
    assert estimate_tokens("hello world!") == 3
    assert estimate_tokens("我主要用深色模式") == 8
    assert estimate_tokens("我用 dark mode") == 2 + 3
    assert estimate_tokens("こんにちは，세계") == 8
    messages = [ChatMessage(role="user", content="abcd")]
    assert estimate_chat_tokens(messages) == 1 + 4 + 3


@given(st.text(max_size=200), st.text(max_size=200))
def test_estimate_tokens_is_nearly_additive_and_bounded(a: str, b: str) -> None:
    whole = estimate_tokens(a + b)
    assert whole <= estimate_tokens(a) + estimate_tokens(b)
    assert whole >= estimate_tokens(a) + estimate_tokens(b) - 1
    assert whole <= len(a + b)


# --- the extraction prompt --------------------------------------------------------------------


def window(*turns: tuple[Role, str], start_char: int = 0) -> WindowText:
    return WindowText(
        window_id="w1",
        namespace="ns",
        session_id="s1",
        pieces=tuple(
            WindowPiece(
                event_id=f"evt_{i:04d}",
                chunk_no=0,
                chunk_count=1,
                start_char=start_char,
                end_char=start_char + len(text),
                role=role,
                text=text,
                occurred_at=T0 + timedelta(hours=10 * i),
            )
            for i, (role, text) in enumerate(turns)
        ),
    )


ZH = window(
    (Role.USER, "我主要用深色模式。"),
    (Role.ASSISTANT, "好的，已记下。"),
    (Role.USER, "记住：我的猫叫小白\n它三岁了"),
    (Role.USER, "其实5月就搬去北京了"),
)
EN = window(
    (Role.USER, "I mostly use dark mode."),
    (Role.ASSISTANT, "Noted."),
    (Role.USER, "Please remember that the prod DB is db-prod-2. Thanks!"),
)


def test_render_shows_numbered_lines_and_never_our_ids() -> None:
    messages = render_extraction(ZH)
    assert [m.role for m in messages] == ["system", "user"]
    assert is_extraction(messages) and messages[0].content.startswith(EXTRACTION_PROMPT_ID)
    content = messages[1].content
    assert "evt_" not in content and "w1" not in content and "s1" not in content
    assert "1 user: 我主要用深色模式。" in content
    assert "2 assistant: 好的，已记下。" in content
    assert "3 user 2024-05-04: 记住：我的猫叫小白\\n它三岁了" in content  # one line per piece
    assert "2024-05-03" in content.splitlines()[0]
    assert read_window_lines(content) == [
        (i, p.role, p.text) for i, p in enumerate(ZH.pieces, start=1)
    ]
    assert not is_extraction([ChatMessage(role="user", content="hello")])


@pytest.mark.parametrize("win", [ZH, EN], ids=["zh", "en"])
def test_the_rules_answer_round_trips_to_the_same_drafts(win: WindowText) -> None:
    drafts = rules.extract(win)
    assert drafts
    text = answer_for(drafts, win).model_dump_json()
    assert parse_extraction(text, win) == drafts


def test_aliases_map_back_and_quotes_map_to_exact_offsets() -> None:
    chunk_start = 1000  # the second chunk of a long event: offsets are in the event's content
    content = "x" * chunk_start + "Please remember that the prod DB is db-prod-2. Thanks!"
    win = window((Role.USER, "我主要用深色模式。"), (Role.USER, content[chunk_start:]))
    win = win.model_copy(
        update={
            "pieces": (
                win.pieces[0],
                win.pieces[1].model_copy(
                    update={"start_char": chunk_start, "end_char": len(content), "chunk_no": 1}
                ),
            )
        }
    )
    answer = {
        "claims": [
            {
                "subject": "user",
                "predicate": "prefers",
                "value": "深色模式",
                "text": "用户偏好深色模式",
                "polarity": 1,
                "qualifiers": ["主要"],
                "importance": 0.6,
                "confidence": 0.9,
                "valid_from": "2024-05-03",
                "evidence": [{"event": 1, "quote": "主要用深色模式"}],
            },
            {
                "subject": "prod DB",
                "predicate": "is",
                "value": "db-prod-2",
                "text": "The prod DB is db-prod-2",
                "polarity": 1,
                "qualifiers": [],
                "importance": 0.8,
                "confidence": 0.95,
                "evidence": [{"event": 2, "quote": "the prod DB is db-prod-2"}],
            },
        ]
    }
    first, second = parse_extraction(json.dumps(answer, ensure_ascii=False), win)
    assert first.language == "zh" and second.language == "en"
    assert first.qualifiers == ("主要",)
    span = first.evidence[0]
    assert span.event_id == "evt_0000" and (span.start_char, span.end_char) == (1, 8)
    assert "我主要用深色模式。"[span.start_char : span.end_char] == span.quote
    span = second.evidence[0]
    assert span.event_id == "evt_0001"
    assert content[span.start_char : span.end_char] == "the prod DB is db-prod-2" == span.quote
    parsed = parse_answer(json.dumps(answer))
    assert parsed.claims[0].valid_from_time() == datetime(2024, 5, 3, tzinfo=UTC)


def test_quotes_match_across_rendered_newlines_and_code_fences() -> None:
    claim = {
        "subject": "user",
        "predicate": "note",
        "value": "猫",
        "text": "猫",
        "evidence": [{"event": 3, "quote": "我的猫叫小白\\n它三岁了"}],
    }
    fenced = "```json\n" + json.dumps({"claims": [claim]}, ensure_ascii=False) + "\n```"
    (draft,) = parse_extraction(fenced, ZH)
    span = draft.evidence[0]
    assert span.quote == "我的猫叫小白\n它三岁了"
    assert ZH.pieces[2].text[span.start_char : span.end_char] == span.quote
    assert (draft.importance, draft.confidence, draft.polarity) == (0.5, 0.8, 1)


def test_a_quote_with_a_space_the_text_lacks_still_maps_to_the_text() -> None:
    win = window((Role.USER, "记住：周报每周一发给Alice"))
    claim = _claim(evidence=[{"event": 1, "quote": "周报每周一发给 Alice"}])
    (draft,) = parse_extraction(json.dumps({"claims": [claim]}, ensure_ascii=False), win)
    span = draft.evidence[0]
    assert (
        span.quote == "周报每周一发给Alice" == win.pieces[0].text[span.start_char : span.end_char]
    )


def test_an_empty_answer_is_no_claims() -> None:
    assert parse_extraction('{"claims": []}', ZH) == []


def _claim(**change: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "subject": "user",
        "predicate": "note",
        "value": "v",
        "text": "t",
        "evidence": [{"event": 1, "quote": "深色模式"}],
    }
    base.update(change)
    return base


@pytest.mark.parametrize(
    "text",
    [
        "",
        "no claims here",
        '{"claims": ',
        "[]",
        '{"facts": []}',
        json.dumps({"claims": [_claim(evidence=[])]}),
        json.dumps({"claims": [_claim(evidence=[{"event": 9, "quote": "深色模式"}])]}),
        json.dumps({"claims": [_claim(evidence=[{"event": 0, "quote": "深色模式"}])]}),
        json.dumps({"claims": [_claim(evidence=[{"event": "a", "quote": "深色模式"}])]}),
        json.dumps({"claims": [_claim(evidence=[{"event": 1, "quote": "浅色模式"}])]}),
        json.dumps({"claims": [_claim(evidence=[{"event": 1, "quote": ""}])]}),
        json.dumps({"claims": [_claim(polarity=0)]}),
        json.dumps({"claims": [_claim(importance=3)]}),
        json.dumps({"claims": [_claim(subject="")]}),
    ],
)
def test_bad_extraction_answers_raise_and_never_mean_nothing_found(text: str) -> None:
    with pytest.raises(BadProviderOutput):
        parse_extraction(text, ZH)


def test_the_prompt_is_compact() -> None:
    turns = [
        (Role.USER, "我最近在学日语，每周末上两次课。"),
        (Role.ASSISTANT, "太好了，需要我帮你制定学习计划吗？"),
        (Role.USER, "Please remember that the staging cluster moved to eu-west-2."),
        (Role.ASSISTANT, "Got it, staging is now in eu-west-2."),
        (Role.USER, "记住：周报每周一发给 Alice"),
    ]
    win = window(*turns)
    content_tokens = sum(estimate_tokens(text) for _, text in turns)
    prompt_tokens = estimate_chat_tokens(render_extraction(win))
    fixed = estimate_chat_tokens(render_extraction(window(turns[0]))) - estimate_tokens(turns[0][1])
    per_line = (prompt_tokens - content_tokens - fixed) / (len(turns) - 1)
    assert "JSON" in render_extraction(win)[0].content  # json_mode needs the word in the prompt
    assert fixed <= 320, fixed  # instructions, example and header, once per window
    assert per_line <= 6, per_line  # "3 user 2024-05-04: " and the newline
    assert (prompt_tokens - content_tokens) / len(turns) <= 70  # a default 5-event window


def test_claim_drafts_from_the_prompt_are_the_stored_kind() -> None:
    (draft,) = parse_extraction(
        json.dumps({"claims": [_claim(polarity=-1, qualifiers=["暂时"])]}), ZH
    )
    assert isinstance(draft, ClaimDraft)
    assert draft.polarity == -1 and draft.qualifiers == ("暂时",)
