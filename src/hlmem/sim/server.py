"""A simulated OpenAI-compatible provider: a real HTTP server on loopback for tests and load tests.

``SimProvider`` serves ``POST /v1/chat/completions``, ``/v1/embeddings`` and ``/v1/rerank`` (also
without the ``/v1`` prefix) from a ``ThreadingHTTPServer`` on a background thread, so that the
gateway can be exercised over real sockets. This module owns the server: the request handler,
the order of each request's steps, and starting and stopping. What each endpoint accepts and
answers is in :mod:`hlmem.sim.answer` (an extraction prompt is answered with what the rules
extractor finds in the same lines, embeddings come from
:class:`~hlmem.lang.embedding.LocalEmbedder`, rerank scores are embedding cosines, and every answer
carries ``usage`` counted with
:func:`hlmem.gateway.providers.estimate_tokens`). The settings, the shared state, the rate windows
and the statistics are in :mod:`hlmem.sim.state`.

It misbehaves on purpose, as configured by :class:`~hlmem.sim.state.SimSettings`: it enforces
its own request and token limits over a sliding window (429 with ``Retry-After`` when exceeded),
injects errors and malformed bodies at seeded rates, and sleeps a latency with jitter. Order per
request: authorisation, body validation, rate limit (rejected requests do not use the window),
then latency, then error or garbage injection, then the answer.

``GET /stats`` reports what it saw (:class:`~hlmem.sim.state.SimStats`); ``POST /stats/reset``
zeroes it. ``POST /control`` with a JSON object of settings changes them while it serves (e.g.
``{"error_rate": 0}`` ends an outage; :meth:`SimProvider.update` does the same in process), and
``errors_for_s`` ends injected errors by itself after that many seconds. An API key is checked
only when ``require_key`` is set, and it is never logged or reported.
"""

from __future__ import annotations

import json
import logging
import select
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

from pydantic import ValidationError

from hlmem.sim.answer import ROUTES, bad_json_answer, garbage_body
from hlmem.sim.state import (
    Reply,
    SimSettings,
    SimState,
    SimStats,
    bad_request,
    error_reply,
    retry_headers,
)

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 32 * 1024 * 1024


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

    def __init__(self, address: tuple[str, int], state: SimState) -> None:
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
        if path == "/control":
            self._control(body)
            return
        state = self.server.state
        state.arrive(path)
        reply: Reply | None = error_reply(
            500, "internal error (simulated provider)", "server_error"
        )
        try:
            reply = self._serve(state, path, body)
        except Reply as refused:
            reply = refused
        except Exception:
            log.exception("sim provider failed a request", extra={"action": "sim_failed"})
        finally:
            # Counted before the answer is written: whoever reads /stats after reading the
            # answer sees it counted.
            state.leave(499 if reply is None else reply.status)
        if reply is not None:
            self._send(reply.status, reply.body, reply.headers)

    def _control(self, raw: bytes) -> None:
        """Change settings while serving; 400 for a body that is not valid settings."""
        try:
            changes = json.loads(raw)
            if not isinstance(changes, dict):
                raise ValueError("the body is not a JSON object")
            settings = self.server.state.update(changes)
        except (ValueError, ValidationError) as exc:
            message = str(exc).splitlines()[0]
            self._send_json(400, {"error": {"message": message, "type": "invalid_settings"}})
            return
        self._send(200, settings.model_dump_json(exclude={"require_key"}).encode())

    def _read_body(self) -> bytes | None:
        length = self.headers.get("Content-Length")
        if length is None or not length.isdigit() or int(length) > MAX_BODY_BYTES:
            self.close_connection = True
            self._send_json(411 if length is None else 413, {"error": {"message": "bad length"}})
            return None
        return self.rfile.read(int(length))

    def _serve(self, state: SimState, path: str, raw: bytes) -> Reply | None:
        """The answer to one API request (``None``: the client is gone); refusals and injected
        errors are raised as ``Reply``."""
        key = state.settings.require_key
        if key is not None and self.headers.get("Authorization") != f"Bearer {key}":
            state.count("unauthorized")
            raise error_reply(401, "missing or wrong API key", "invalid_api_key")
        route = ROUTES.get(path)
        if route is None:
            state.count("bad_request")
            raise error_reply(404, f"no route {path}", "not_found")
        try:
            payload = json.loads(raw)
            if not isinstance(payload, dict):
                raise bad_request("the body is not a JSON object")
            tokens, answer = route(state, payload)
        except (ValueError, Reply) as exc:
            state.count("bad_request")
            raise exc if isinstance(exc, Reply) else bad_request("the body is not JSON") from None
        state.admit(tokens)
        error, garbage, latency_s, bad_json = state.fate()
        if latency_s > 0:
            state.stopping.wait(latency_s)
        if error:
            state.count("error")
            s = state.settings
            headers = retry_headers(s.retry_after_s) if s.retry_after_s is not None else None
            raise error_reply(s.error_status, "injected error (simulated)", "server_error", headers)
        result = answer()
        if bad_json and path.endswith("/chat/completions"):
            state.count("bad_json")
            result = bad_json_answer(result)
        if garbage is not None:
            state.count("garbage")
            return Reply(200, garbage_body(garbage, result))
        if _client_gone(self.connection):  # it timed out: the answer would count for nobody
            state.count("client_gone")
            self.close_connection = True
            return None
        state.succeeded(path, result)
        return Reply(200, json.dumps(result.body, ensure_ascii=False).encode())


class SimProvider:
    """The simulated provider on a background thread: ``with SimProvider(settings=...) as sp:``.

    ``port=0`` picks a free port; :attr:`base_url` is what a client (or the ``sim`` preset)
    points at.
    """

    def __init__(
        self, host: str = "127.0.0.1", port: int = 0, settings: SimSettings | None = None
    ) -> None:
        self._state = SimState(settings or SimSettings())
        self._address = (host, port)
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def settings(self) -> SimSettings:
        """The settings in force now."""
        return self._state.settings

    def update(self, **changes: Any) -> SimSettings:
        """Change settings while serving (as ``POST /control`` does); the new settings.

        :raises pydantic.ValidationError: an unknown setting or an invalid value.
        """
        return self._state.update(changes)

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
