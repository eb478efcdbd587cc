"""Per-provider wire formats for OpenAI-compatible APIs: build a request, parse an answer.

This module is pure apart from :func:`load_plugin_presets` (which imports the allowlisted
plugin presets): no I/O, no httpx, no clock. ``gateway.py`` sends what ``build_*`` returns
(a path relative to the preset's base URL, or an absolute URL, and a JSON body) and hands the
raw answer bytes to ``parse_*``. Anything that does not parse, or parses into the wrong shape,
raises :class:`~hlmem.errors.BadProviderOutput` carrying the raw text; a broken answer never
turns into an empty result ("nothing found"). API keys never pass through here.

Presets: ``openai``, ``dashscope`` (Alibaba Model Studio, OpenAI-compatible mode), ``zhipu``
(BigModel open platform, API v4) and ``sim`` (``hlmem sim-provider`` on loopback). They differ
in the name of the max-tokens field, in the largest embedding batch, and in where rerank lives:
Zhipu and the simulator take the Jina/Cohere shape at ``/rerank``; DashScope's ``gte-rerank``
is its native text-rerank service (an absolute URL, its own envelope); OpenAI has none.
"""

from __future__ import annotations

import base64
import binascii
import email.utils
import json
import logging
import math
import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from importlib.metadata import entry_points
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from hlmem.errors import BadProviderOutput, ConfigError

log = logging.getLogger(__name__)

#: entry-point group of third-party provider plugins (each a ``ProviderPreset``)
PLUGIN_GROUP = "hlmem.providers"
CHAT_PATH = "/chat/completions"
EMBED_PATH = "/embeddings"
DEFAULT_SIM_PORT = 8089


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ProviderPreset(_Frozen):
    """What differs between OpenAI-compatible providers on the wire."""

    name: str
    base_url: str
    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    #: Highest temperature the provider accepts; higher requested values are clamped.
    temperature_max: float = 2.0
    #: Largest number of inputs one embeddings request may carry.
    embed_max_batch: int = Field(2048, ge=1)
    #: Path relative to ``base_url``, an absolute URL, or ``None`` when there is no rerank.
    rerank_path: str | None = "/rerank"
    rerank_style: Literal["jina", "dashscope"] = "jina"


PRESETS: dict[str, ProviderPreset] = {
    p.name: p
    for p in (
        ProviderPreset(
            name="openai",
            base_url="https://api.openai.com/v1",
            max_tokens_field="max_completion_tokens",
            rerank_path=None,
        ),
        ProviderPreset(
            name="dashscope",
            base_url="https://dashscope.aliyuncs.com/compatible-mode/v1",
            temperature_max=1.99,  # Qwen takes [0, 2)
            embed_max_batch=10,
            rerank_path="https://dashscope.aliyuncs.com/api/v1/services/rerank/text-rerank/text-rerank",
            rerank_style="dashscope",
        ),
        ProviderPreset(
            name="zhipu",
            base_url="https://open.bigmodel.cn/api/paas/v4",
            temperature_max=1.0,  # GLM takes [0, 1]
            embed_max_batch=64,
        ),
        ProviderPreset(
            name="sim", base_url=f"http://127.0.0.1:{DEFAULT_SIM_PORT}/v1", embed_max_batch=256
        ),
    )
}


def preset(name: str | ProviderPreset) -> ProviderPreset:
    """The preset called ``name`` (a preset passes through).

    :raises ConfigError: no preset has that name.
    """
    if isinstance(name, ProviderPreset):
        return name
    try:
        return PRESETS[name]
    except KeyError:
        raise ConfigError(f"unknown provider preset {name!r}; known: {sorted(PRESETS)}") from None


# --- token estimates --------------------------------------------------------------------------

# CJK ideographs, kana, hangul and full-width punctuation: about one token per character in the
# tokenizers of GPT-4o, Qwen and GLM (often a little less). Everything else: about four
# characters per token, the usual figure for English. Both err on the high side, because the
# gateway reserves budget and rate with these numbers before it knows the real usage.
_CJK_CHARS = re.compile(
    r"[\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]"
)
_MESSAGE_OVERHEAD_TOKENS = 4  # role and separators of one chat message
_REPLY_PRIMING_TOKENS = 3


def estimate_tokens(text: str) -> int:
    """Estimated tokens of ``text``: CJK ~1 per character, other text ~4 characters per token."""
    cjk = 0 if text.isascii() else _CJK_CHARS.subn("", text)[1]
    return cjk + math.ceil((len(text) - cjk) / 4)


def estimate_chat_tokens(messages: tuple[ChatMessage, ...] | list[ChatMessage]) -> int:
    """Estimated prompt tokens of a chat request (contents plus per-message overhead)."""
    return _REPLY_PRIMING_TOKENS + sum(
        estimate_tokens(m.content) + _MESSAGE_OVERHEAD_TOKENS for m in messages
    )


# --- request and answer models ----------------------------------------------------------------


class ChatMessage(_Frozen):
    role: Literal["system", "user", "assistant"]
    content: str


class ChatRequest(_Frozen):
    model: str
    messages: tuple[ChatMessage, ...] = Field(min_length=1)
    max_tokens: int = Field(1024, ge=1)
    temperature: float = Field(0.0, ge=0, le=2)
    json_mode: bool = False


class ChatAnswer(_Frozen):
    """A chat completion. Token counts are ``None`` when the provider reported no usage."""

    text: str
    prompt_tokens: int | None
    completion_tokens: int | None
    model: str
    finish_reason: str | None


class EmbedRequest(_Frozen):
    model: str
    inputs: tuple[str, ...] = Field(min_length=1)
    dimensions: int | None = Field(None, ge=1)


class EmbedAnswer(_Frozen):
    """Embeddings in input order (float32 values as lists; :meth:`array` stacks them)."""

    vectors: list[list[float]]
    model: str
    prompt_tokens: int | None

    def array(self) -> np.ndarray[Any, np.dtype[np.float32]]:
        """The vectors as one ``(n, dim)`` float32 array."""
        return np.asarray(self.vectors, dtype=np.float32)


class RerankRequest(_Frozen):
    model: str
    query: str
    documents: tuple[str, ...] = Field(min_length=1)
    top_n: int | None = Field(None, ge=1)


class RerankResult(_Frozen):
    index: int
    score: float


class RerankAnswer(_Frozen):
    """Rerank results, best first; ``index`` points into the request's documents."""

    results: tuple[RerankResult, ...]
    prompt_tokens: int | None


# --- builders ---------------------------------------------------------------------------------


def build_chat(p: str | ProviderPreset, req: ChatRequest) -> tuple[str, dict[str, Any]]:
    """Path and JSON body of a chat completion request.

    :raises ConfigError: unknown preset.
    """
    pre = preset(p)
    body: dict[str, Any] = {
        "model": req.model,
        "messages": [m.model_dump() for m in req.messages],
        pre.max_tokens_field: req.max_tokens,
        "temperature": min(req.temperature, pre.temperature_max),
        "stream": False,
    }
    if req.json_mode:
        body["response_format"] = {"type": "json_object"}
    return CHAT_PATH, body


def build_embed(p: str | ProviderPreset, req: EmbedRequest) -> tuple[str, dict[str, Any]]:
    """Path and JSON body of an embeddings request.

    :raises ConfigError: unknown preset, or more inputs than the preset takes in one request.
    """
    pre = preset(p)
    if len(req.inputs) > pre.embed_max_batch:
        raise ConfigError(
            f"{len(req.inputs)} inputs, over {pre.name}'s embedding batch of {pre.embed_max_batch}"
        )
    body: dict[str, Any] = {
        "model": req.model,
        "input": list(req.inputs),
        "encoding_format": "float",
    }
    if req.dimensions is not None:
        body["dimensions"] = req.dimensions
    return EMBED_PATH, body


def build_rerank(p: str | ProviderPreset, req: RerankRequest) -> tuple[str, dict[str, Any]]:
    """Path (or absolute URL) and JSON body of a rerank request.

    :raises ConfigError: unknown preset, or a preset without a rerank endpoint.
    """
    pre = preset(p)
    if pre.rerank_path is None:
        raise ConfigError(f"provider preset {pre.name!r} has no rerank endpoint")
    top_n = req.top_n if req.top_n is not None else len(req.documents)
    if pre.rerank_style == "dashscope":
        return pre.rerank_path, {
            "model": req.model,
            "input": {"query": req.query, "documents": list(req.documents)},
            "parameters": {"top_n": top_n, "return_documents": False},
        }
    return pre.rerank_path, {
        "model": req.model,
        "query": req.query,
        "documents": list(req.documents),
        "top_n": top_n,
        "return_documents": False,
    }


# --- parsers ----------------------------------------------------------------------------------


def _load(raw: bytes | str) -> dict[str, Any]:
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadProviderOutput(f"not JSON: {exc}", raw) from None
    if not isinstance(data, dict):
        raise BadProviderOutput("not a JSON object", raw)
    error = data.get("error")
    if error:
        message = error.get("message") if isinstance(error, dict) else error
        raise BadProviderOutput(f"provider error in a 200 answer: {str(message)[:200]}", raw)
    return data


def _count(usage: Any, key: str, raw: bytes | str) -> int | None:
    if not isinstance(usage, dict) or usage.get(key) is None:
        return None
    value = usage[key]
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise BadProviderOutput(f"usage.{key} is not a count", raw)
    return value


def reported_usage(raw: bytes | str) -> tuple[int, int] | None:
    """(prompt, completion) tokens of a body's ``usage``, whatever else the body holds (an
    answer of the wrong shape, an error); ``None`` when it is not JSON or reports no usage."""
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None
    usage = data.get("usage") if isinstance(data, dict) else None
    if not isinstance(usage, dict):
        return None
    counts = []
    for key in ("prompt_tokens", "completion_tokens"):
        value = usage.get(key, 0)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            return None
        counts.append(value)
    if "prompt_tokens" not in usage and "completion_tokens" not in usage:
        return None
    return counts[0], counts[1]


def parse_chat(raw: bytes | str) -> ChatAnswer:
    """The first choice of a chat completion answer.

    :raises BadProviderOutput: not JSON, no choice, or no text content.
    """
    data = _load(raw)
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise BadProviderOutput("no choices in the chat answer", raw)
    message = choices[0].get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, str):
        raise BadProviderOutput("the first choice has no text content", raw)
    finish = choices[0].get("finish_reason")
    usage = data.get("usage")
    return ChatAnswer(
        text=content,
        prompt_tokens=_count(usage, "prompt_tokens", raw),
        completion_tokens=_count(usage, "completion_tokens", raw),
        model=str(data.get("model") or ""),
        finish_reason=finish if isinstance(finish, str) else None,
    )


def _vector(item: Any, raw: bytes | str) -> list[float]:
    embedding = item.get("embedding") if isinstance(item, dict) else None
    if isinstance(embedding, str):  # encoding_format="base64": little-endian float32
        try:
            decoded = base64.b64decode(embedding, validate=True)
        except (binascii.Error, ValueError):
            raise BadProviderOutput("embedding is not valid base64", raw) from None
        if not decoded or len(decoded) % 4:
            raise BadProviderOutput("base64 embedding is not float32", raw)
        return np.frombuffer(decoded, dtype="<f4").astype(np.float64).tolist()  # type: ignore[no-any-return]
    if not isinstance(embedding, list) or not embedding:
        raise BadProviderOutput("an item has no embedding", raw)
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in embedding):
        raise BadProviderOutput("an embedding holds a value that is not a number", raw)
    return embedding


def parse_embed(raw: bytes | str, *, expected: int | None = None) -> EmbedAnswer:
    """Embeddings in input order; ``expected`` is the number of inputs sent.

    :raises BadProviderOutput: not JSON, missing or extra vectors, ragged or non-finite values.
    """
    data = _load(raw)
    items = data.get("data")
    if not isinstance(items, list) or not items:
        raise BadProviderOutput("no data in the embeddings answer", raw)
    indexed: dict[int, list[float]] = {}
    for position, item in enumerate(items):
        index = item.get("index", position) if isinstance(item, dict) else position
        if not isinstance(index, int) or index in indexed:
            raise BadProviderOutput("embedding indexes are not distinct integers", raw)
        indexed[index] = _vector(item, raw)
    if sorted(indexed) != list(range(len(indexed))):
        raise BadProviderOutput("embedding indexes are not 0..n-1", raw)
    if expected is not None and len(indexed) != expected:
        raise BadProviderOutput(f"{len(indexed)} embeddings for {expected} inputs", raw)
    vectors = [indexed[i] for i in range(len(indexed))]
    if len({len(v) for v in vectors}) != 1:
        raise BadProviderOutput("embeddings have different dimensions", raw)
    if not np.isfinite(np.asarray(vectors, dtype=np.float32)).all():
        raise BadProviderOutput("an embedding holds a non-finite value", raw)
    return EmbedAnswer(
        vectors=vectors,
        model=str(data.get("model") or ""),
        prompt_tokens=_count(data.get("usage"), "prompt_tokens", raw)
        or _count(data.get("usage"), "total_tokens", raw),
    )


def parse_rerank(raw: bytes | str, *, documents: int | None = None) -> RerankAnswer:
    """Rerank results best first, from the Jina/Cohere shape or DashScope's native one.

    ``documents`` is the number of documents sent; an index outside it is an error.

    :raises BadProviderOutput: not JSON, no results, or an index or score of the wrong kind.
    """
    data = _load(raw)
    usage = data.get("usage")
    output = data.get("output")
    results = output.get("results") if isinstance(output, dict) else data.get("results")
    if not isinstance(results, list):
        raise BadProviderOutput("no results in the rerank answer", raw)
    parsed: list[RerankResult] = []
    for item in results:
        if not isinstance(item, dict):
            raise BadProviderOutput("a rerank result is not an object", raw)
        index, score = item.get("index"), item.get("relevance_score", item.get("score"))
        if isinstance(index, bool) or not isinstance(index, int) or index < 0:
            raise BadProviderOutput("a rerank result has no valid index", raw)
        if documents is not None and index >= documents:
            raise BadProviderOutput(f"rerank index {index} outside {documents} documents", raw)
        if isinstance(score, bool) or not isinstance(score, int | float):
            raise BadProviderOutput("a rerank result has no valid score", raw)
        if not math.isfinite(score):
            raise BadProviderOutput("a rerank result has no valid score", raw)
        parsed.append(RerankResult(index=index, score=float(score)))
    if len({r.index for r in parsed}) != len(parsed):
        raise BadProviderOutput("a document appears twice in the rerank results", raw)
    parsed.sort(key=lambda r: (-r.score, r.index))
    tokens = _count(usage, "prompt_tokens", raw) or _count(usage, "total_tokens", raw)
    return RerankAnswer(results=tuple(parsed), prompt_tokens=tokens)


# --- headers and plugins ----------------------------------------------------------------------


def retry_after_s(headers: Mapping[str, str], now: datetime | None = None) -> float | None:
    """Seconds a provider asked us to wait: ``retry-after-ms``, or ``Retry-After`` as seconds
    or as an HTTP date; ``None`` when absent or unreadable."""
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(float(millis) / 1000, 0.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max((when - (now or datetime.now(UTC))).total_seconds(), 0.0)


def load_plugin_presets(allowlist: Iterable[str]) -> dict[str, ProviderPreset]:
    """The presets of the ``hlmem.providers`` entry points named in ``allowlist``.

    An entry point not named is never imported. Each must be a ``ProviderPreset`` (or a callable
    returning one).

    :raises ConfigError: an allowed plugin fails to import or is not a preset.
    """
    allowed = set(allowlist)
    found: dict[str, ProviderPreset] = {}
    for ep in entry_points(group=PLUGIN_GROUP):
        if ep.name not in allowed:
            continue
        try:
            obj = ep.load()
            if callable(obj) and not isinstance(obj, ProviderPreset):
                obj = obj()
        except Exception as exc:
            raise ConfigError(f"provider plugin {ep.name!r} failed to load: {exc}") from exc
        if not isinstance(obj, ProviderPreset):
            raise ConfigError(f"provider plugin {ep.name!r} is not a hlmem ProviderPreset")
        found[ep.name] = obj
        log.info("plugin loaded", extra={"action": "plugin_loaded", "plugin": ep.name})
    return found
