"""The provider gateway: every model call hlmem makes goes through here, and only here.

``async with Gateway.open(cfg, store) as gw:`` then ``await gw.chat(stage=..., provider=...,
request=ChatRequest(...))`` (or ``embed`` / ``rerank``). One gateway object is shared by every
stage and session of a process, so its limits hold for all of them together. This is the only
module that imports ``httpx``: one ``AsyncClient`` per configured provider, with explicit
timeouts and connection limits. Wire formats are ``providers.py``'s (pure functions); prices,
limits and the ledger are ``budget.py``'s.

One layer per method, outermost first:

``_call``        reserve the worst-case cost (``budget.reserve``: ``UnknownPrice`` or
                 ``BudgetExceeded`` before any byte goes out), then settle to the actual usage
                 and write the ledger row, or release on failure; parse the answer.
``_retrying``    the circuit breaker, then attempts with exponential backoff and jitter on 429,
                 5xx, timeouts and connection errors, honouring ``Retry-After``.
``_throttle``    a concurrency slot (``anyio.CapacityLimiter``), a pause while the provider
                 asked us to back off, then the request-rate and token-rate leaky buckets
                 (``aiolimiter``).
``_send_once``   one HTTP request; httpx errors become ``ProviderError`` subclasses in one
                 place (``_translated``).

The throttle sits *inside* the retry loop (the style guide draws it outside) on purpose: every
retry is a request the provider counts, so it must pass the rate limiter again, and a task
sleeping through a backoff must not hold a concurrency slot.

API keys live in the clients' default headers and nowhere else: they are never logged, never
written to the ledger, and redacted from any provider text an error message quotes.
"""

from __future__ import annotations

import email.utils
import enum
import logging
import random
import re
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib.metadata import entry_points
from typing import TypeVar

import anyio
import httpx
from aiolimiter import AsyncLimiter

from hlmem.budget import Attempts, Budget, CallInfo, Tokens
from hlmem.clock import Clock, SystemClock
from hlmem.config import Config, ProviderConfig
from hlmem.errors import (
    BadProviderOutput,
    CircuitOpen,
    ClosedError,
    ConfigError,
    HlmemError,
    ProviderRejected,
    ProviderTimeout,
    ProviderUnavailable,
    RateLimited,
)
from hlmem.providers import (
    PRESETS,
    ChatAnswer,
    ChatRequest,
    EmbedAnswer,
    EmbedRequest,
    ProviderPreset,
    RerankAnswer,
    RerankRequest,
    build_chat,
    build_embed,
    build_rerank,
    estimate_chat_tokens,
    estimate_tokens,
    parse_chat,
    parse_embed,
    parse_rerank,
)
from hlmem.queue import new_owner, retire_owner
from hlmem.store import Store

log = logging.getLogger(__name__)

A = TypeVar("A")

#: entry-point group of third-party provider plugins (each a ``providers.ProviderPreset``)
PLUGIN_GROUP = "hlmem.providers"
#: we pace requests at this fraction of requests_per_minute / tokens_per_minute, so that network
#: and scheduling jitter never lets a provider's sliding window see one request too many
RATE_MARGIN = 0.98
#: the token bucket holds this many seconds of tokens_per_minute (larger calls pass in chunks)
TOKEN_BURST_S = 0.5
_ERROR_TEXT_CHARS = 300
_KEYLIKE = re.compile(r"(?i)(\bsk-[A-Za-z0-9_\-*.]{4,}|\bbearer\s+\S+)")


class GatewayState(enum.Enum):
    OPEN = "open"
    CLOSED = "closed"


# --- plugins ----------------------------------------------------------------------------------


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


# --- errors: the one place httpx exceptions are translated ------------------------------------


def redact(text: str, secret: str | None) -> str:
    """``text`` without ``secret`` and without anything shaped like a key or bearer token."""
    if secret:
        text = text.replace(secret, "[redacted]")
    return _KEYLIKE.sub("[redacted]", text)


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


def _status_error(provider: str, response: httpx.Response, secret: str | None) -> Exception:
    status = response.status_code
    detail = redact(response.text[:_ERROR_TEXT_CHARS], secret)
    message = f"{provider}: HTTP {status}: {detail}"
    wait = retry_after_s(response.headers)
    if status == 429:
        return RateLimited(message, retry_after_s=wait)
    if status >= 500 or status == 408:
        return ProviderUnavailable(message, retry_after_s=wait)
    return ProviderRejected(message, status=status)


@contextmanager
def _translated(provider: str, secret: str | None) -> Iterator[None]:
    """Turn httpx exceptions into ``ProviderError`` subclasses (``from`` the original)."""
    try:
        yield
    except httpx.HTTPStatusError as exc:
        raise _status_error(provider, exc.response, secret) from exc
    except httpx.TimeoutException as exc:
        raise ProviderTimeout(f"{provider}: no answer in time ({type(exc).__name__})") from exc
    except httpx.UnsupportedProtocol as exc:
        raise ProviderRejected(f"{provider}: {redact(str(exc), secret)}") from exc
    except httpx.TransportError as exc:
        detail = redact(str(exc), secret)[:_ERROR_TEXT_CHARS]
        raise ProviderUnavailable(f"{provider}: {type(exc).__name__}: {detail}") from exc


# --- per-provider state -----------------------------------------------------------------------


class _Breaker:
    """Opens after ``failures`` consecutive failures; after ``cooldown_s`` one trial request
    may pass (half-open): its success closes the breaker, its failure opens it again."""

    def __init__(self, failures: int, cooldown_s: float) -> None:
        self.failures = failures
        self.cooldown_s = cooldown_s
        self.consecutive = 0
        self.open_until = 0.0
        self.trial = False

    def check(self, provider: str, now: float) -> None:
        """:raises CircuitOpen: open, or half-open with its trial in flight."""
        if self.consecutive >= self.failures and (now < self.open_until or self.trial):
            wait = max(self.open_until - now, 0.0) or self.cooldown_s
            raise CircuitOpen(
                f"{provider}: circuit open after {self.consecutive} consecutive failures",
                retry_after_s=wait,
            )

    def enter(self, provider: str, now: float) -> bool:
        """Let an attempt through (True when it is the half-open trial).

        :raises CircuitOpen: open, or half-open with its trial in flight.
        """
        self.check(provider, now)
        if self.consecutive < self.failures:
            return False
        self.trial = True
        return True

    def succeeded(self) -> None:
        self.consecutive, self.trial = 0, False

    def failed(self, now: float) -> bool:
        """Count a failure; True when this one opened the breaker."""
        self.consecutive += 1
        was_trial, self.trial = self.trial, False
        if was_trial or self.consecutive == self.failures:
            self.open_until = now + self.cooldown_s
            return True
        return False

    def end_trial(self, trial: bool) -> None:
        if trial:
            self.trial = False


class _Provider:
    """One configured provider: its client, limiters, breaker and back-off pause."""

    def __init__(
        self,
        name: str,
        cfg: ProviderConfig,
        preset: ProviderPreset,
        transport: httpx.AsyncBaseTransport | None,
    ) -> None:
        self.name = name
        self.cfg = cfg
        self.preset = preset
        self.secret = cfg.api_key.get_secret_value() if cfg.api_key is not None else None
        headers = {"Authorization": f"Bearer {self.secret}"} if self.secret else {}
        self.client = httpx.AsyncClient(
            base_url=cfg.base_url or preset.base_url,
            headers=headers,
            timeout=httpx.Timeout(cfg.timeout_s, connect=cfg.connect_timeout_s),
            limits=httpx.Limits(
                max_connections=cfg.max_concurrency, max_keepalive_connections=cfg.max_concurrency
            ),
            transport=transport,
            trust_env=False,  # config.py is the only reader of the environment
        )
        self.concurrency = anyio.CapacityLimiter(cfg.max_concurrency)
        # Capacity 1: requests evenly spaced, never a burst.
        self.requests = AsyncLimiter(1, 60 / (cfg.requests_per_minute * RATE_MARGIN))
        tokens_per_s = cfg.tokens_per_minute * RATE_MARGIN / 60
        self.token_chunk = max(tokens_per_s * TOKEN_BURST_S, 1.0)
        self.tokens = AsyncLimiter(self.token_chunk, self.token_chunk / tokens_per_s)
        self.breaker = _Breaker(cfg.breaker_failures, cfg.breaker_cooldown_s)
        self.paused_until = 0.0

    def pause(self, seconds: float | None) -> None:
        """Hold every request to this provider for ``seconds`` (it answered 429)."""
        if seconds:
            self.paused_until = max(self.paused_until, time.monotonic() + seconds)

    def backoff_s(self, retry: int) -> float:
        ceiling = min(self.cfg.retry_max_s, self.cfg.retry_base_s * 2.0**retry)
        return ceiling * random.uniform(0.5, 1.0)


@dataclass
class _Wire:
    """What happened on the wire during one call (mutable while it runs)."""

    sent: int = 0
    rate_limited: int = 0
    latency_ms: float | None = None
    answered: bool = False  # a 2xx answer arrived

    def attempts(self) -> Attempts:
        return Attempts(self.sent, self.rate_limited, self.latency_ms)


# --- the gateway ------------------------------------------------------------------------------


class Gateway:
    """Budgeted, rate-limited, retried access to the configured model providers."""

    def __init__(
        self,
        cfg: Config,
        store: Store,
        *,
        clock: Clock,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        needed = {p.preset for p in cfg.providers.values() if p.preset not in PRESETS}
        plugins = load_plugin_presets(a for a in cfg.plugins.allowlist if a in needed)
        for name, pcfg in cfg.providers.items():
            if pcfg.preset not in PRESETS and pcfg.preset not in plugins:
                raise ConfigError(f"providers.{name}: no plugin provides preset {pcfg.preset!r}")
            if pcfg.api_key_env and pcfg.api_key is None:
                raise ConfigError(
                    f"providers.{name}: the environment variable {pcfg.api_key_env} "
                    "(api_key_env) is not set"
                )
        self.cfg = cfg
        self.store = store
        self.clock = clock
        self.owner = new_owner()
        self.budget = Budget(cfg, store, clock, self.owner)
        self.state = GatewayState.OPEN
        self._providers = {
            name: _Provider(name, pcfg, PRESETS.get(pcfg.preset) or plugins[pcfg.preset], transport)
            for name, pcfg in cfg.providers.items()
        }

    @classmethod
    @asynccontextmanager
    async def open(
        cls,
        cfg: Config,
        store: Store,
        *,
        clock: Clock | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> AsyncIterator[Gateway]:
        """Open the providers' clients, release crashed holds, resume parked jobs, and keep
        doing the latter two every ``budget.resume_interval_s`` while open.

        ``transport`` replaces the network for every provider, for tests a socket cannot
        express; everything else should talk to a real (loopback) server.

        :raises ConfigError: an unknown plugin preset, or an API key variable that is not set.
        """
        gw = cls(cfg, store, clock=clock or SystemClock(), transport=transport)
        error: BaseException | None = None
        try:
            await gw.recover()
            await gw.resume_parked_for_budget()
            async with anyio.create_task_group() as tg:
                tg.start_soon(gw._housekeeping)
                try:
                    yield gw
                except BaseException as exc:
                    # Re-raised below, once the task group is gone, so that the caller's own
                    # exception is not wrapped in an ExceptionGroup.
                    error = exc
                finally:
                    tg.cancel_scope.cancel()
        finally:
            await gw.aclose()
        if error is not None:
            raise error

    async def aclose(self) -> None:
        if self.state is GatewayState.CLOSED:
            return
        self.state = GatewayState.CLOSED
        with anyio.CancelScope(shield=True):
            for provider in self._providers.values():
                await provider.client.aclose()
        retire_owner(self.owner)

    # --- public calls -------------------------------------------------------------------------

    async def chat(
        self,
        *,
        stage: str,
        provider: str,
        request: ChatRequest,
        namespace: str | None = None,
        job_id: int | None = None,
    ) -> ChatAnswer:
        """One chat completion, budgeted, throttled, retried and written to the ledger.

        :raises UnknownPrice: the model has no price (nothing sent).
        :raises BudgetExceeded: its worst case is over a budget (nothing sent; park the job).
        :raises RateLimited | ProviderUnavailable | ProviderTimeout: retries exhausted.
        :raises BadProviderOutput: the answer does not parse (retryable by the job runner).
        :raises ProviderRejected: the provider refused the request (4xx).
        :raises ClosedError: the gateway is closed.
        """
        p = self._provider(provider)
        path, body = build_chat(p.preset, request)
        worst = Tokens(estimate_chat_tokens(request.messages), request.max_tokens)

        def used(answer: ChatAnswer) -> Tokens:
            return Tokens(
                worst.prompt if answer.prompt_tokens is None else answer.prompt_tokens,
                estimate_tokens(answer.text)
                if answer.completion_tokens is None
                else answer.completion_tokens,
            )

        call = CallInfo(stage, provider, request.model, "chat", namespace, job_id)
        return await self._call(call, p, path, body, worst, parse_chat, used)

    async def embed(
        self,
        *,
        stage: str,
        provider: str,
        request: EmbedRequest,
        namespace: str | None = None,
        job_id: int | None = None,
    ) -> EmbedAnswer:
        """Embeddings for ``request.inputs`` in order; raises as :meth:`chat` does, plus
        ``ConfigError`` for a batch larger than the provider takes."""
        p = self._provider(provider)
        path, body = build_embed(p.preset, request)
        worst = Tokens(sum(estimate_tokens(text) for text in request.inputs))
        call = CallInfo(stage, provider, request.model, "embed", namespace, job_id)
        return await self._call(
            call,
            p,
            path,
            body,
            worst,
            lambda raw: parse_embed(raw, expected=len(request.inputs)),
            lambda answer: Tokens(answer.prompt_tokens or worst.prompt),
        )

    async def rerank(
        self,
        *,
        stage: str,
        provider: str,
        request: RerankRequest,
        namespace: str | None = None,
        job_id: int | None = None,
    ) -> RerankAnswer:
        """Documents reranked for ``request.query``; raises as :meth:`chat` does, plus
        ``ConfigError`` for a provider without rerank."""
        p = self._provider(provider)
        path, body = build_rerank(p.preset, request)
        query = estimate_tokens(request.query)
        worst = Tokens(sum(query + estimate_tokens(doc) for doc in request.documents))
        call = CallInfo(stage, provider, request.model, "rerank", namespace, job_id)
        return await self._call(
            call,
            p,
            path,
            body,
            worst,
            lambda raw: parse_rerank(raw, documents=len(request.documents)),
            lambda answer: Tokens(answer.prompt_tokens or worst.prompt),
        )

    async def recover(self) -> int:
        """Release reservations held by crashed processes; the number released."""
        self._check_open()
        return await self.budget.recover()

    async def resume_parked_for_budget(self) -> int:
        """Move jobs parked by ``BudgetExceeded`` back to todo where budget allows; how many."""
        self._check_open()
        return await self.budget.resume_parked()

    # --- layers -------------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self.state is not GatewayState.OPEN:
            raise ClosedError("the gateway is closed")

    def _provider(self, name: str) -> _Provider:
        self._check_open()
        try:
            return self._providers[name]
        except KeyError:
            raise ConfigError(
                f"no provider {name!r} is configured (providers: {sorted(self._providers)})"
            ) from None

    async def _call(
        self,
        call: CallInfo,
        p: _Provider,
        path: str,
        body: dict[str, object],
        worst: Tokens,
        parse: Callable[[bytes], A],
        used: Callable[[A], Tokens],
    ) -> A:
        """Reserve, run, then settle (or release) and write the ledger row."""
        try:
            p.breaker.check(p.name, time.monotonic())
        except CircuitOpen as exc:
            await self.budget.refuse(call, type(exc).__name__)
            raise
        reservation = await self.budget.reserve(call, worst)
        wire = _Wire()
        try:
            raw = await self._retrying(p, path, body, worst.total, wire)
            answer = parse(raw)
        except BaseException as exc:
            charged = wire.answered and isinstance(exc, BadProviderOutput)
            with anyio.CancelScope(shield=True):
                await self.budget.fail(
                    reservation, type(exc).__name__, wire.attempts(), charged=charged
                )
            self._log(call, "error", wire, type(exc).__name__)
            raise
        with anyio.CancelScope(shield=True):
            await self.budget.settle(reservation, used(answer), wire.attempts())
        self._log(call, "ok", wire, None)
        return answer

    async def _retrying(
        self, p: _Provider, path: str, body: dict[str, object], tokens: int, wire: _Wire
    ) -> bytes:
        """Attempts until one succeeds, a permanent error, or retries run out."""
        retry = 0
        while True:
            trial = p.breaker.enter(p.name, time.monotonic())
            error: RateLimited | ProviderUnavailable | ProviderTimeout
            try:
                async with self._throttle(p, tokens):
                    raw = await self._send_once(p, path, body, wire)
            except RateLimited as exc:
                p.breaker.end_trial(trial)
                wire.rate_limited += 1
                p.pause(exc.retry_after_s)
                error = exc
                delay = exc.retry_after_s if exc.retry_after_s is not None else p.backoff_s(retry)
            except (ProviderUnavailable, ProviderTimeout) as exc:
                if p.breaker.failed(time.monotonic()):
                    log.warning(
                        "circuit opened for %s",
                        p.name,
                        extra={"action": "circuit_opened", "provider": p.name},
                    )
                error = exc
                delay = max(p.backoff_s(retry), _retry_after_of(exc))
            except BaseException:
                p.breaker.end_trial(trial)
                raise
            else:
                p.breaker.succeeded()
                return raw
            if retry >= p.cfg.max_retries or delay > p.cfg.retry_max_s:
                raise error
            retry += 1
            log.debug(
                "retrying %s in %.2fs: %s",
                p.name,
                delay,
                type(error).__name__,
                extra={"action": "provider_retry", "provider": p.name, "retry": retry},
            )
            await anyio.sleep(delay)

    @asynccontextmanager
    async def _throttle(self, p: _Provider, tokens: int) -> AsyncIterator[None]:
        """Hold a concurrency slot, wait out a 429 pause, then take request and token rate.

        The slot is taken first: a task waiting for rate must not have its rate spent while it
        then waits for a slot, or the requests would leave in a burst when slots free up."""
        async with p.concurrency:
            # A deadline other tasks may push back (each 429 extends it): sleep until it holds.
            while (pause := p.paused_until - time.monotonic()) > 0:  # noqa: ASYNC110
                await anyio.sleep(pause)
            await p.requests.acquire()
            left = float(tokens)
            while left > 0:
                chunk = min(left, p.token_chunk)
                await p.tokens.acquire(chunk)
                left -= chunk
            yield

    async def _send_once(
        self, p: _Provider, path: str, body: dict[str, object], wire: _Wire
    ) -> bytes:
        """One request; a non-2xx status or transport failure raises a ``ProviderError``."""
        wire.sent += 1
        started = time.perf_counter()
        try:
            with _translated(p.name, p.secret):
                response = await p.client.post(path, json=body)
                response.raise_for_status()
        finally:
            wire.latency_ms = (time.perf_counter() - started) * 1000
        wire.answered = True
        return response.content

    # --- housekeeping and logs ----------------------------------------------------------------

    async def _housekeeping(self) -> None:
        while True:
            await anyio.sleep(self.cfg.budget.resume_interval_s)
            try:
                await self.budget.recover()
                await self.budget.resume_parked()
            except ClosedError:
                return
            except HlmemError as exc:
                log.warning(
                    "budget housekeeping failed: %s", exc, extra={"action": "housekeeping_failed"}
                )

    def _log(self, call: CallInfo, outcome: str, wire: _Wire, error_class: str | None) -> None:
        log.debug(
            "provider call %s",
            outcome,
            extra={
                "action": "provider_call",
                "stage": call.stage,
                "provider": call.provider,
                "model": call.model,
                "kind": call.kind,
                "job_id": call.job_id,
                "outcome": outcome,
                "error_class": error_class,
                "retries": wire.attempts().retries,
                "latency_ms": wire.latency_ms,
            },
        )


def _retry_after_of(exc: ProviderUnavailable | ProviderTimeout) -> float:
    return (exc.retry_after_s if isinstance(exc, ProviderUnavailable) else None) or 0.0
