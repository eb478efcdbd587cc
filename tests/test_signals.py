"""Stop signals of a real ``hlmem worker`` process with work in flight.

The worker extracts with a model behind a gate: a server on 127.0.0.1 that holds each request
until the test opens it, then answers with the simulated provider. The request reaching the gate
is the handshake that an extraction job is running; each signal's line on the worker's stderr is
the handshake that it was received. Nothing sleeps: every wait is for one of those, bounded.

- Two SIGTERMs (or SIGINTs) while the call is held: the worker keeps stopping gracefully, the
  call completes once the gate opens, its result is committed, exit 0, no job left running.
- Three: it stops at once, exit 128 + the signal, and the job in flight is back in the queue;
  a second worker run finishes it and the claims appear.
"""

from __future__ import annotations

import http.client
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit

import pytest
from helpers import rows
from test_cli import hlmem, jsonl

from hlmem.sim import SimProvider

TIMEOUT_S = 120

CONVERSATION = [
    {"session_id": "s1", "role": "user", "content": "记住：我的猫叫小白，每天早上七点要喂它。"},
    {
        "session_id": "s1",
        "role": "user",
        "content": "Remember that the production database lives on db-prod-2 in Frankfurt.",
    },
]


class GatedProvider:
    """Holds every POST until :attr:`gate` is set, then relays it to ``upstream``."""

    def __init__(self, upstream: str) -> None:
        self.upstream = urlsplit(upstream)
        self.arrived = threading.Event()
        self.gate = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._server.owner = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,))

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def relay(self, path: str, body: bytes) -> tuple[int, bytes]:
        host = self.upstream.hostname or "127.0.0.1"
        conn = http.client.HTTPConnection(host, self.upstream.port, timeout=60)
        try:
            conn.request("POST", path, body, {"Content-Type": "application/json"})
            answer = conn.getresponse()
            return answer.status, answer.read()
        finally:
            conn.close()

    def __enter__(self) -> GatedProvider:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.gate.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        owner: GatedProvider = self.server.owner  # type: ignore[attr-defined]
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        owner.arrived.set()
        if not owner.gate.wait(TIMEOUT_S):
            return
        status, answer = owner.relay(self.path, body)
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)
        except OSError:  # the worker gave up on this call (a forced stop)
            self.close_connection = True


class Lines:
    """The lines of a child's stream, read by a thread (so the child never blocks on a pipe)."""

    def __init__(self, stream: IO[bytes]) -> None:
        self.lines: list[str] = []
        self._cond = threading.Condition()
        self._eof = False
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream: IO[bytes]) -> None:
        for raw in stream:
            with self._cond:
                self.lines.append(raw.decode("utf-8").rstrip("\n"))
                self._cond.notify_all()
        with self._cond:
            self._eof = True
            self._cond.notify_all()

    def wait_for(self, text: str) -> str:
        """The first line holding ``text``, once it has come (bounded by TIMEOUT_S)."""

        def found() -> str | None:
            return next((line for line in self.lines if text in line), None)

        with self._cond:
            self._cond.wait_for(lambda: found() is not None or self._eof, TIMEOUT_S)
            line = found()
        assert line is not None, f"no line with {text!r}; got: {self.lines}"
        return line

    def text(self) -> str:
        self._thread.join(TIMEOUT_S)
        return "\n".join(self.lines)


@pytest.fixture
def gated() -> Iterator[GatedProvider]:
    with SimProvider() as sim, GatedProvider(sim.base_url) as gate:
        yield gate


def write_config(path: Path, base_url: str) -> Path:
    path.write_text(
        f"""
[extractor]
kind = "model"
provider = "p"
model = "sim-chat"

[providers.p]
preset = "sim"
base_url = "{base_url}"
timeout_s = {TIMEOUT_S}
max_retries = 0
requests_per_minute = 60000
tokens_per_minute = 100000000

[prices."p/*"]
free = true

[pipeline]
shutdown_grace_s = {TIMEOUT_S}
""",
        encoding="utf-8",
    )
    return path


def start_worker(db: Path, config: Path, *args: str) -> tuple[subprocess.Popen[bytes], Lines]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HLMEM_")}
    env.update({"HLMEM_PIPELINE__POLL_INTERVAL_S": "0.02", "PYTHONUNBUFFERED": "1"})
    proc = subprocess.Popen(
        [sys.executable, "-m", "hlmem", "--db", str(db), "--config", str(config), "worker", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stderr is not None
    return proc, Lines(proc.stderr)


def jobs_by_status(db: Path) -> dict[tuple[str, str], int]:
    return {
        (kind, status): n
        for kind, status, n in rows(db, "SELECT kind, status, count(*) FROM jobs GROUP BY 1, 2")
    }


def active_values(db: Path) -> set[str]:
    return {r[0] for r in rows(db, "SELECT value FROM claims WHERE status = 'active'")}


def a_job_in_flight(tmp_path: Path, gated: GatedProvider) -> tuple[Path, Path, Any, Lines]:
    """A store with one window to extract, and a worker whose extraction call is held."""
    db, config = tmp_path / "m.db", write_config(tmp_path / "gated.toml", gated.base_url)
    events = jsonl(tmp_path / "events.jsonl", CONVERSATION)
    assert hlmem("--db", db, "ingest", events, cwd=tmp_path).returncode == 0
    proc, err = start_worker(db, config, "--flush")
    err.wait_for("worker running on")
    assert gated.arrived.wait(TIMEOUT_S), err.lines
    assert jobs_by_status(db).get(("extractor", "doing")) == 1
    return db, config, proc, err


def reap(proc: subprocess.Popen[bytes], err: Lines) -> str:
    """Wait for the worker (killed if a test failed before it ended) and close its pipes; its
    stdout."""
    if proc.poll() is None:
        try:
            proc.wait(TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    err.text()
    assert proc.stdout is not None and proc.stderr is not None
    out = proc.stdout.read().decode("utf-8")
    proc.stdout.close()
    proc.stderr.close()
    return out


def drain_again(db: Path, config: Path) -> None:
    """What the stopped worker left is finished by the next one (in process: no signal)."""
    done = hlmem(
        "--db", db, "--config", config, "worker", "--drain", "--settle-s", "0", cwd=db.parent
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=lambda s: s.name)
def test_a_second_signal_keeps_the_graceful_stop(
    tmp_path: Path, gated: GatedProvider, sig: signal.Signals
) -> None:
    db, config, proc, err = a_job_in_flight(tmp_path, gated)
    try:
        proc.send_signal(sig)
        err.wait_for(f"{sig.name} (1): stopping after the work in flight")
        proc.send_signal(sig)
        err.wait_for(f"{sig.name} (2): still stopping")
        assert proc.poll() is None  # the call is still held: nothing may have stopped it
        gated.gate.set()
        assert proc.wait(TIMEOUT_S) == 0, err.text()
    finally:
        if proc.poll() is None:
            proc.kill()
        out = reap(proc, err)
    assert "worker stopped: events=2" in out
    assert "Traceback" not in err.text()
    jobs = jobs_by_status(db)
    assert jobs[("extractor", "done")] == 1  # the call in flight was finished and committed
    assert not any(status == "doing" for _, status in jobs)
    drain_again(db, config)
    values = active_values(db)
    assert any("小白" in v for v in values), values
    assert any("db-prod-2" in v for v in values), values


@pytest.mark.parametrize(
    ("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)], ids=["SIGTERM", "SIGINT"]
)
def test_a_third_signal_stops_at_once_and_hands_the_job_back(
    tmp_path: Path, gated: GatedProvider, sig: signal.Signals, code: int
) -> None:
    db, config, proc, err = a_job_in_flight(tmp_path, gated)
    try:
        for count in (1, 2, 3):
            proc.send_signal(sig)
            err.wait_for(f"{sig.name} ({count}): ")
        assert proc.wait(TIMEOUT_S) == code, err.text()
    finally:
        if proc.poll() is None:
            proc.kill()
        reap(proc, err)
    text = err.text()
    assert "worker stopped at once" in text
    assert "Traceback" not in text
    jobs = jobs_by_status(db)
    assert jobs == {("windower", "done"): 2, ("extractor", "todo"): 1}, jobs
    gated.gate.set()
    drain_again(db, config)
    values = active_values(db)
    assert any("小白" in v for v in values), values
    assert any("db-prod-2" in v for v in values), values
