"""A simulated OpenAI-compatible provider: a real HTTP server on loopback for tests and load tests.

``SimProvider`` serves ``POST /v1/chat/completions``, ``/v1/embeddings`` and ``/v1/rerank`` (also
without the ``/v1`` prefix) from a ``ThreadingHTTPServer`` on a background thread, so that the
gateway can be exercised over real sockets. Its answers mean something: an extraction prompt
from :mod:`hlmem.prompts` is answered with what the rules extractor finds in the same lines,
embeddings come from :class:`~hlmem.embedding.LocalEmbedder`, and rerank scores are embedding
cosines. Every answer carries ``usage`` counted with :func:`hlmem.providers.estimate_tokens`,
the same estimate the gateway reserves with.

It misbehaves on purpose, as configured by :class:`SimSettings`: it enforces its own request
and token limits over a sliding window (429 with ``Retry-After`` when exceeded), injects errors
and malformed bodies at seeded rates, and sleeps a latency with jitter. Order per request:
authorisation, body validation, rate limit (rejected requests do not use the window), then
latency, then error or garbage injection, then the answer. Tokens in the window are the
prompt estimate plus the request's ``max_tokens`` (as OpenAI counts them at admission).

``GET /stats`` reports what it saw (:class:`SimStats`); ``POST /stats/reset`` zeroes it. An API
key is checked only when ``require_key`` is set, and it is never logged or reported.
"""

from __future__ import annotations

import base64
import json
import logging
import math
import random
import select
import socket
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field

from hlmem import atoms, rules
from hlmem.embedding import DEFAULT_DIM, LocalEmbedder
from hlmem.messages import WindowPiece, WindowText
from hlmem.prompts import answer_for, is_audit, is_extraction, read_audit, read_window
from hlmem.providers import ChatMessage, estimate_chat_tokens, estimate_tokens

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 32 * 1024 * 1024
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


class SimSettings(BaseModel):
    """How the simulated provider behaves. Rates are fractions of admitted requests."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    latency_ms: float = Field(0.0, ge=0)
    jitter_ms: float = Field(0.0, ge=0)
    rpm: int | None = Field(None, ge=1, description="requests per window; None: unlimited")
    tpm: int | None = Field(None, ge=1, description="tokens per window; None: unlimited")
    window_s: float = Field(60.0, gt=0, description="the sliding window of rpm and tpm")
    error_rate: float = Field(0.0, ge=0, le=1)
    error_status: Literal[429, 500, 503] = 500
    retry_after_s: float | None = Field(None, ge=0)
    garbage_rate: float = Field(0.0, ge=0, le=1)
    #: fraction of chat answers that are well-formed HTTP answers (with usage) whose message
    #: content is malformed JSON: a model that wrote bad JSON, not a broken server
    bad_json_rate: float = Field(0.0, ge=0, le=1)
    seed: int = 0
    price_in: float | None = Field(None, ge=0, description="per 1k prompt tokens, echoed")
    price_out: float | None = Field(None, ge=0, description="per 1k completion tokens, echoed")
    require_key: str | None = Field(None, repr=False)
    embed_dim: int = Field(DEFAULT_DIM, ge=16)


class SimStats(BaseModel):
    """What the simulated provider saw (``GET /stats``).

    ``requests`` counts API requests (not ``/stats``), whatever their fate. ``ok`` counts
    well-formed 200 answers, and only those count tokens, so a ledger of the answers a client
    could parse adds up to the same totals. ``rate_limited`` counts the 429s of the server's
    own limits; injected 429s count in ``errors_injected``. ``client_gone`` counts answers
    dropped because the client had hung up (timed out). ``peak_requests_per_window`` is the most
    requests *received* (refused ones too) in any trailing ``window_s``: what a client-side
    rate limiter must keep at or under ``rpm``.
    """

    model_config = ConfigDict(frozen=True)

    requests: int
    requests_by_path: dict[str, int]
    responses_by_status: dict[str, int]
    ok: int
    ok_by_path: dict[str, int]
    errors_injected: int
    garbage_injected: int
    bad_json_injected: int = 0
    rate_limited: int
    bad_requests: int
    unauthorized: int
    client_gone: int
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    peak_concurrency: int
    current_concurrency: int
    peak_requests_per_window: int
    window_s: float
    price_in: float | None
    price_out: float | None
    cost: float | None


class _Reply(Exception):
    """A finished HTTP answer raised out of request handling (errors and refusals)."""

    def __init__(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        super().__init__(status)
        self.status = status
        self.body = body
        self.headers = headers or {}


def _error(status: int, message: str, kind: str, headers: dict[str, str] | None = None) -> _Reply:
    body = {"error": {"message": message, "type": kind, "code": kind}}
    return _Reply(status, json.dumps(body).encode(), headers)


def _retry_headers(seconds: float) -> dict[str, str]:
    return {"Retry-After": str(math.ceil(seconds)), "retry-after-ms": str(math.ceil(seconds * 1e3))}


@dataclass
class _Answer:
    body: dict[str, Any]
    prompt_tokens: int
    completion_tokens: int


@dataclass
class _Counters:
    requests: Counter[str] = field(default_factory=Counter)
    statuses: Counter[str] = field(default_factory=Counter)
    ok: Counter[str] = field(default_factory=Counter)
    events: Counter[str] = field(default_factory=Counter)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    peak_concurrency: int = 0
    peak_per_window: int = 0


class _State:
    """Shared by the handler threads: settings, seeded draws, windows and counters (one lock)."""

    def __init__(self, settings: SimSettings) -> None:
        self.settings = settings
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.rng = random.Random(settings.seed)
        self.counters = _Counters()
        self.concurrency = 0
        self.received: deque[float] = deque()
        self.admitted: deque[float] = deque()
        self.tokens: deque[tuple[float, int]] = deque()
        self.tokens_in_window = 0
        self.embedders: dict[int, LocalEmbedder] = {}
        self.connections: set[socket.socket] = set()

    # --- bookkeeping -----------------------------------------------------------------------

    def arrive(self, path: str) -> None:
        now = time.monotonic()
        with self.lock:
            self.counters.requests[path] += 1
            self.concurrency += 1
            self.counters.peak_concurrency = max(self.counters.peak_concurrency, self.concurrency)
            self.received.append(now)
            while self.received and self.received[0] <= now - self.settings.window_s:
                self.received.popleft()
            self.counters.peak_per_window = max(self.counters.peak_per_window, len(self.received))

    def leave(self, status: int) -> None:
        with self.lock:
            self.concurrency -= 1
            self.counters.statuses[str(status)] += 1

    def count(self, event: str) -> None:
        with self.lock:
            self.counters.events[event] += 1

    def succeeded(self, path: str, answer: _Answer) -> None:
        with self.lock:
            self.counters.ok[path] += 1
            self.counters.prompt_tokens += answer.prompt_tokens
            self.counters.completion_tokens += answer.completion_tokens

    def reset(self) -> None:
        with self.lock:
            self.counters = _Counters()
            self.counters.peak_concurrency = self.concurrency

    def snapshot(self) -> SimStats:
        s = self.settings
        with self.lock:
            c = self.counters
            cost = None
            if s.price_in is not None and s.price_out is not None:
                cost = (c.prompt_tokens * s.price_in + c.completion_tokens * s.price_out) / 1000
            return SimStats(
                requests=sum(c.requests.values()),
                requests_by_path=dict(c.requests),
                responses_by_status=dict(c.statuses),
                ok=sum(c.ok.values()),
                ok_by_path=dict(c.ok),
                errors_injected=c.events["error"],
                garbage_injected=c.events["garbage"],
                bad_json_injected=c.events["bad_json"],
                rate_limited=c.events["rate_limited"],
                bad_requests=c.events["bad_request"],
                unauthorized=c.events["unauthorized"],
                client_gone=c.events["client_gone"],
                prompt_tokens=c.prompt_tokens,
                completion_tokens=c.completion_tokens,
                total_tokens=c.prompt_tokens + c.completion_tokens,
                peak_concurrency=c.peak_concurrency,
                current_concurrency=self.concurrency,
                peak_requests_per_window=c.peak_per_window,
                window_s=s.window_s,
                price_in=s.price_in,
                price_out=s.price_out,
                cost=cost,
            )

    # --- admission and fate ----------------------------------------------------------------

    def admit(self, tokens: int) -> None:
        """Take a place in the rate window, or raise a 429 naming when one frees up (400 when
        the request alone is over the token limit: waiting cannot help it)."""
        s = self.settings
        if s.tpm is not None and tokens > s.tpm:
            self.count("bad_request")
            raise _error(400, f"the request needs {tokens} tokens, over tpm", "request_too_large")
        now = time.monotonic()
        with self.lock:
            horizon = now - s.window_s
            while self.admitted and self.admitted[0] <= horizon:
                self.admitted.popleft()
            while self.tokens and self.tokens[0][0] <= horizon:
                self.tokens_in_window -= self.tokens.popleft()[1]
            wait = 0.0
            if s.rpm is not None and len(self.admitted) >= s.rpm:
                wait = self.admitted[len(self.admitted) - s.rpm] + s.window_s - now
            if s.tpm is not None and self.tokens_in_window + tokens > s.tpm:
                freed, excess = 0, self.tokens_in_window + tokens - s.tpm
                for at, n in self.tokens:
                    freed += n
                    if freed >= excess:
                        wait = max(wait, at + s.window_s - now)
                        break
            if wait > 0:
                self.counters.events["rate_limited"] += 1
            else:
                self.admitted.append(now)
                self.tokens.append((now, tokens))
                self.tokens_in_window += tokens
        if wait > 0:
            raise _error(
                429, "rate limit reached (simulated)", "rate_limit_exceeded", _retry_headers(wait)
            )

    def fate(self) -> tuple[bool, int | None, float, bool]:
        """Seeded draws for one admitted request: (error?, garbage kind or None, latency s,
        bad JSON content?). The last draw is made only when its rate is set, so the other
        draws of a seed stay the same."""
        s = self.settings
        with self.lock:
            u_error, u_garbage, u_jitter = self.rng.random(), self.rng.random(), self.rng.random()
            kind = self.rng.randrange(3)
            bad_json = s.bad_json_rate > 0 and self.rng.random() < s.bad_json_rate
        latency_ms = max(0.0, s.latency_ms + (2 * u_jitter - 1) * s.jitter_ms)
        garbage = kind if u_garbage < s.garbage_rate else None
        return u_error < s.error_rate, garbage, latency_ms / 1000, bad_json

    def embedder(self, dim: int) -> LocalEmbedder:
        with self.lock:
            if dim not in self.embedders:
                self.embedders[dim] = LocalEmbedder(dim)
            return self.embedders[dim]


# --- answers ----------------------------------------------------------------------------------

# A request, once validated: the tokens it takes in the rate window, and how to answer it.
_Work = tuple[int, Callable[[], _Answer]]


def _bad(message: str) -> _Reply:
    return _error(400, message, "invalid_request_error")


def _usage(prompt: int, completion: int = 0) -> dict[str, int]:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def _messages(payload: dict[str, Any]) -> list[ChatMessage]:
    raw = payload.get("messages")
    if not isinstance(raw, list) or not raw:
        raise _bad("messages must be a non-empty list")
    out = []
    for m in raw:
        if not isinstance(m, dict):
            raise _bad("a message is not an object")
        content = m.get("content")
        if isinstance(content, list):  # content parts: keep the text ones
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        if not isinstance(content, str):
            raise _bad("a message has no text content")
        role = _ROLES.get(m.get("role"), "user")
        out.append(ChatMessage(role=role, content=content))
    return out


def _max_tokens(payload: dict[str, Any]) -> int:
    value = payload.get("max_completion_tokens", payload.get("max_tokens"))
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise _bad("max_tokens must be a positive integer")
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


def _chat(state: _State, payload: dict[str, Any]) -> _Work:
    messages = _messages(payload)
    max_tokens = _max_tokens(payload)
    prompt = estimate_chat_tokens(messages)
    model = str(payload.get("model") or "sim-chat")
    response_format = payload.get("response_format")
    json_mode = isinstance(response_format, dict) and response_format.get("type") in (
        "json_object",
        "json_schema",
    )

    def answer() -> _Answer:
        if is_extraction(messages):
            text = _extraction_text(messages)
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
        return _Answer(body, prompt, completion)

    return prompt + max_tokens, answer


def _texts(value: Any, what: str) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and value:
        out = []
        for item in value:
            text = item.get("text") if isinstance(item, dict) else item
            if not isinstance(text, str):
                raise _bad(f"{what} must be strings")
            out.append(text)
        return out
    raise _bad(f"{what} must be a string or a non-empty list of strings")


def _embeddings(state: _State, payload: dict[str, Any]) -> _Work:
    inputs = _texts(payload.get("input"), "input")
    dim = payload.get("dimensions", state.settings.embed_dim)
    if isinstance(dim, bool) or not isinstance(dim, int) or not 16 <= dim <= 8192:
        raise _bad("dimensions must be an integer from 16 to 8192")
    as_base64 = payload.get("encoding_format") == "base64"
    prompt = sum(estimate_tokens(t) for t in inputs)
    model = str(payload.get("model") or "sim-embed")

    def answer() -> _Answer:
        vectors = state.embedder(dim).embed(inputs)
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
        return _Answer(body, prompt, 0)

    return prompt, answer


def _rerank(state: _State, payload: dict[str, Any]) -> _Work:
    query = payload.get("query")
    if not isinstance(query, str):
        raise _bad("query must be a string")
    documents = _texts(payload.get("documents"), "documents")
    top_n = payload.get("top_n") or len(documents)
    if isinstance(top_n, bool) or not isinstance(top_n, int) or top_n < 1:
        raise _bad("top_n must be a positive integer")
    with_documents = bool(payload.get("return_documents"))
    q = estimate_tokens(query)
    prompt = sum(q + estimate_tokens(d) for d in documents)
    model = str(payload.get("model") or "sim-rerank")

    def answer() -> _Answer:
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
        return _Answer(body, prompt, 0)

    return prompt, answer


_ROUTES: dict[str, Callable[[_State, dict[str, Any]], _Work]] = {
    **dict.fromkeys(_CHAT_PATHS, _chat),
    **dict.fromkeys(_EMBED_PATHS, _embeddings),
    **dict.fromkeys(_RERANK_PATHS, _rerank),
}


def _bad_json(answer: _Answer) -> _Answer:
    """The same answer (and usage) with its message content cut in half: malformed JSON."""
    body = json.loads(json.dumps(answer.body))
    message = body["choices"][0]["message"]
    message["content"] = message["content"][: max(1, len(message["content"]) // 2)]
    return _Answer(body, answer.prompt_tokens, answer.completion_tokens)


def _garbage(kind: int, answer: _Answer) -> bytes:
    """A malformed 200 body: truncated JSON, not JSON at all, or JSON of the wrong shape."""
    if kind == 0:
        whole = json.dumps(answer.body, ensure_ascii=False).encode()
        return whole[: max(1, len(whole) // 2)]
    if kind == 1:
        return b"<html><body>502 Bad Gateway (simulated)</body></html>"
    return b'{"object": "unexpected", "data": null, "choices": null}'


# --- the HTTP server --------------------------------------------------------------------------


def _client_gone(conn: socket.socket) -> bool:
    """Whether the client closed its end (it timed out) while the answer was being prepared."""
    try:
        readable, _, _ = select.select([conn], [], [], 0)
        return bool(readable) and conn.recv(1, socket.MSG_PEEK) == b""
    except OSError:
        return True


class _Server(ThreadingHTTPServer):
    daemon_threads = False  # server_close() joins the handler threads: a clean stop
    request_queue_size = 1024  # bursts of new connections must not overflow the listen queue

    def __init__(self, address: tuple[str, int], state: _State) -> None:
        self.state = state
        super().__init__(address, _Handler)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: pooled clients reuse their connections
    server: _Server
    server_version = "hlmem-sim"

    def setup(self) -> None:
        super().setup()
        # Headers and body go out as two writes; without this, Nagle's algorithm and the
        # client's delayed ACK add ~40 ms to every keep-alive answer.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self.server.state.lock:
            self.server.state.connections.add(self.connection)

    def finish(self) -> None:
        with self.server.state.lock:
            self.server.state.connections.discard(self.connection)
        super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        # The request line names the path only: no header (and so no key) is ever logged.
        log.debug(format, *args, extra={"action": "sim_http"})

    def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        try:
            self.wfile.write(body)
        except OSError:  # the client went away; nothing to tell it
            self.close_connection = True

    def _send_json(self, status: int, data: Any) -> None:
        self._send(status, json.dumps(data, ensure_ascii=False).encode())

    def do_GET(self) -> None:
        path = urlsplit(self.path).path
        if path == "/stats":
            self._send(200, self.server.state.snapshot().model_dump_json().encode())
        elif path in ("/v1/models", "/models"):
            names = ("sim-chat", "sim-embed", "sim-rerank")
            self._send_json(
                200, {"object": "list", "data": [{"id": n, "object": "model"} for n in names]}
            )
        elif path == "/health":
            self._send_json(200, {"ok": True})
        else:
            self._send_json(404, {"error": {"message": "not found", "type": "not_found"}})

    def do_POST(self) -> None:
        path = urlsplit(self.path).path
        body = self._read_body()
        if body is None:
            return
        if path == "/stats/reset":
            self.server.state.reset()
            self._send(200, self.server.state.snapshot().model_dump_json().encode())
            return
        state = self.server.state
        state.arrive(path)
        reply: _Reply | None = _error(500, "internal error (simulated provider)", "server_error")
        try:
            reply = self._serve(state, path, body)
        except _Reply as refused:
            reply = refused
        except Exception:
            log.exception("sim provider failed a request", extra={"action": "sim_failed"})
        finally:
            # Counted before the answer is written: whoever reads /stats after reading the
            # answer sees it counted.
            state.leave(499 if reply is None else reply.status)
        if reply is not None:
            self._send(reply.status, reply.body, reply.headers)

    def _read_body(self) -> bytes | None:
        length = self.headers.get("Content-Length")
        if length is None or not length.isdigit() or int(length) > MAX_BODY_BYTES:
            self.close_connection = True
            self._send_json(411 if length is None else 413, {"error": {"message": "bad length"}})
            return None
        return self.rfile.read(int(length))

    def _serve(self, state: _State, path: str, raw: bytes) -> _Reply | None:
        """The answer to one API request (``None``: the client is gone); refusals and injected
        errors are raised as ``_Reply``."""
        key = state.settings.require_key
        if key is not None and self.headers.get("Authorization") != f"Bearer {key}":
            state.count("unauthorized")
            raise _error(401, "missing or wrong API key", "invalid_api_key")
        route = _ROUTES.get(path)
        if route is None:
            state.count("bad_request")
            raise _error(404, f"no route {path}", "not_found")
        try:
            payload = json.loads(raw)
            if not isinstance(payload, dict):
                raise _bad("the body is not a JSON object")
            tokens, answer = route(state, payload)
        except (ValueError, _Reply) as exc:
            state.count("bad_request")
            raise exc if isinstance(exc, _Reply) else _bad("the body is not JSON") from None
        state.admit(tokens)
        error, garbage, latency_s, bad_json = state.fate()
        if latency_s > 0:
            state.stopping.wait(latency_s)
        if error:
            state.count("error")
            s = state.settings
            headers = _retry_headers(s.retry_after_s) if s.retry_after_s is not None else None
            raise _error(s.error_status, "injected error (simulated)", "server_error", headers)
        result = answer()
        if bad_json and path.endswith("/chat/completions"):
            state.count("bad_json")
            result = _bad_json(result)
        if garbage is not None:
            state.count("garbage")
            return _Reply(200, _garbage(garbage, result))
        if _client_gone(self.connection):  # it timed out: the answer would count for nobody
            state.count("client_gone")
            self.close_connection = True
            return None
        state.succeeded(path, result)
        return _Reply(200, json.dumps(result.body, ensure_ascii=False).encode())


class SimProvider:
    """The simulated provider on a background thread: ``with SimProvider(settings=...) as sp:``.

    ``port=0`` picks a free port; :attr:`base_url` is what a client (or the ``sim`` preset)
    points at.
    """

    def __init__(
        self, host: str = "127.0.0.1", port: int = 0, settings: SimSettings | None = None
    ) -> None:
        self.settings = settings or SimSettings()
        self._state = _State(self.settings)
        self._address = (host, port)
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the sim provider is not started")
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        """``http://host:port`` (stats live at ``/stats``)."""
        return f"http://{self._address[0]}:{self.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible base URL, ``http://host:port/v1``."""
        return f"{self.url}/v1"

    def start(self) -> SimProvider:
        """Bind and serve on a background thread; returns once the socket is listening."""
        if self._server is not None:
            raise RuntimeError("the sim provider is already started")
        self._state.stopping.clear()
        self._server = _Server(self._address, self._state)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="sim-provider"
        )
        self._thread.start()
        log.info("sim provider started", extra={"action": "sim_started", "url": self.url})
        return self

    def stop(self) -> None:
        """Stop serving, close open connections and join every thread."""
        server, self._server = self._server, None
        if server is None:
            return
        self._state.stopping.set()
        server.shutdown()
        with self._state.lock:
            connections = list(self._state.connections)
        for conn in connections:  # idle keep-alive connections would hold their threads
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        server.server_close()
        if self._thread is not None:
            self._thread.join()
        log.info("sim provider stopped", extra={"action": "sim_stopped"})

    def stats(self) -> SimStats:
        """What the server has seen so far (the same as ``GET /stats``)."""
        return self._state.snapshot()

    def reset_stats(self) -> None:
        self._state.reset()

    def __enter__(self) -> SimProvider:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
