"""A scripted OpenAI-compatible HTTP server on 127.0.0.1 for exact reply sequences.

``ThreadingHTTPServer`` on a free port in a background thread. Each POST takes the next scripted
reply (or the default one when the script is empty) and is recorded with its arrival time, path,
``Authorization`` header and JSON body::

    provider.script(status=429, headers={"Retry-After": "1"}).then(json=chat_reply("ok"))

For what the simulated provider (``hlmem.sim.server``) cannot express exactly: a given status
sequence, a body that echoes the key, an answer slower than the client's timeout.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from hlmem.config import Config, load_config
from hlmem.gateway import ChatMessage, ChatRequest


def chat_reply(
    text: str, *, prompt_tokens: int | None = 10, completion_tokens: int | None = 5
) -> Any:
    """A chat completion body; usage omitted when both counts are ``None``."""
    body: dict[str, Any] = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "model": "test-model",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        ],
    }
    if prompt_tokens is not None or completion_tokens is not None:
        body["usage"] = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens}
    return body


@dataclass(frozen=True)
class Reply:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


@dataclass(frozen=True)
class Seen:
    at: float  # time.monotonic() on arrival
    path: str
    authorization: str | None
    body: Any


class ScriptedProvider:
    def __init__(self, default: Reply | None = None) -> None:
        self.default = default or Reply(200, json.dumps(chat_reply("ok")).encode())
        self.seen: list[Seen] = []
        self._script: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server = _Server(("127.0.0.1", 0), self)
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,))

    # --- script -------------------------------------------------------------------------------

    def script(
        self,
        *,
        status: int = 200,
        json_body: Any = None,
        text: str | None = None,
        headers: dict[str, str] | None = None,
        delay_s: float = 0.0,
        times: int = 1,
    ) -> ScriptedProvider:
        if text is not None:
            body = text.encode()
        elif json_body is not None:
            body = json.dumps(json_body).encode()
        else:
            body = json.dumps({"error": {"message": f"status {status}"}}).encode()
        with self._lock:
            for _ in range(times):
                self._script.append(Reply(status, body, dict(headers or {}), delay_s))
        return self

    then = script

    def next_reply(self, seen: Seen) -> Reply:
        with self._lock:
            self.seen.append(seen)
            return self._script.popleft() if self._script else self.default

    @property
    def requests(self) -> int:
        with self._lock:
            return len(self.seen)

    # --- lifecycle ----------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> ScriptedProvider:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


class _Server(ThreadingHTTPServer):
    daemon_threads = True  # a handler sleeping through a scripted delay must not block the stop

    def __init__(self, address: tuple[str, int], owner: ScriptedProvider) -> None:
        self.owner = owner
        super().__init__(address, _Handler)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        owner = self.server.owner
        reply = owner.next_reply(
            Seen(time.monotonic(), self.path, self.headers.get("Authorization"), body)
        )
        if reply.delay_s and owner._stopping.wait(reply.delay_s):
            return
        try:
            self.send_response(reply.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(reply.body)))
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(reply.body)
        except OSError:  # the client gave up (timeout): nothing to tell it
            self.close_connection = True


# --- configuration for a gateway pointed at a test server -------------------------------------

PROVIDER = "p"
#: the price of every model of PROVIDER in gateway_config (per 1,000 tokens)
PRICE_IN, PRICE_OUT = 0.5, 1.0


def gateway_config(
    base_url: str,
    *,
    provider: dict[str, Any] | None = None,
    prices: dict[str, Any] | None = None,
    budget: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
    **sections: Any,
) -> Config:
    """One provider named ``p`` at ``base_url`` with fast retries and generous limits."""
    settings: dict[str, Any] = {
        "preset": "sim",
        "base_url": base_url,
        "requests_per_minute": 60_000,
        "tokens_per_minute": 100_000_000,
        "max_concurrency": 16,
        "max_retries": 3,
        "retry_base_s": 0.01,
        "retry_max_s": 2.0,
        "timeout_s": 5.0,
        "connect_timeout_s": 2.0,
    }
    settings.update(provider or {})
    overrides: dict[str, Any] = {
        "providers": {PROVIDER: settings},
        "prices": {f"{PROVIDER}/*": {"input_per_1k": PRICE_IN, "output_per_1k": PRICE_OUT}}
        if prices is None
        else prices,
        "budget": budget or {},
        **sections,
    }
    return load_config(env=env or {}, overrides=overrides)


def chat_request(text: str = "hello", *, model: str = "m", max_tokens: int = 100) -> ChatRequest:
    return ChatRequest(
        model=model, messages=(ChatMessage(role="user", content=text),), max_tokens=max_tokens
    )
