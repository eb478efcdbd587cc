"""The provider gateway: every model call hlmem makes goes through here, and only here.

``async with Gateway.open(cfg, store) as gw:`` then ``await gw.chat(stage=..., provider=...,
request=ChatRequest(...))`` (or ``embed`` / ``rerank``). One gateway object is shared by every
stage and session of a process, so its limits hold for all of them together. This is the only
module that imports ``httpx``: one ``AsyncClient`` per configured provider, with explicit
timeouts and connection limits. Wire formats are ``providers.py``'s (pure functions); prices,
limits and the ledger are ``budget.py``'s; the circuit breaker, the outage clock and the jobs
waiting for a provider are ``outage.py``'s.

One layer per method, outermost first:

``_call``        refuse while the breaker is open (``CircuitOpen``), reserve the worst-case cost
                 (``budget.reserve``: ``UnknownPrice`` or ``BudgetExceeded`` before any byte
                 goes out), then settle to the usage the provider reported (an estimate, marked
                 so, where it reported none) and write the ledger row, or release on failure;
                 parse the answer. Provider trouble of a provider failing for
                 ``gateway.outage_park_s`` is raised as ``ProviderOutage`` (the job parks).
``_retrying``    the circuit breaker, then attempts with exponential backoff and jitter on 429,
                 5xx, timeouts and connection errors (``hlmem.jobs.Backoff``, the policy jobs
                 retry by too), honouring ``Retry-After``.
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

import enum
import logging
import random
import re
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import TypeVar

import anyio
import httpx
from aiolimiter import AsyncLimiter

from hlmem.clock import Clock
from hlmem.config import Config, ProviderConfig
from hlmem.errors import (
    BadProviderOutput,
    CircuitOpen,
    ClosedError,
    ConfigError,
    HlmemError,
    ProviderOutage,
    ProviderRejected,
    ProviderTimeout,
    ProviderUnavailable,
    RateLimited,
)
from hlmem.gateway.budget import Budget, CallInfo, Reservation, Tokens, Wire, prompt_usage
from hlmem.gateway.outage import Breaker, OutageWatch
from hlmem.gateway.providers import (
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
    load_plugin_presets,
    parse_chat,
    parse_embed,
    parse_rerank,
    retry_after_s,
)
from hlmem.jobs import Backoff, new_owner, retire_owner

__all__ = ["Gateway", "GatewayState", "load_plugin_presets", "redact", "retry_after_s"]
from hlmem.store import Store

log = logging.getLogger(__name__)

A = TypeVar("A")

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


# --- errors: the one place httpx exceptions are translated ------------------------------------


def redact(text: str, secret: str | None) -> str:
    """``text`` without ``secret`` and without anything shaped like a key or bearer token."""
    if secret:
        text = text.replace(secret, "[redacted]")
    return _KEYLIKE.sub("[redacted]", text)


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


class _Provider:
    """One configured provider: its client, limiters, breaker and back-off pause."""

    def __init__(
        self,
        name: str,
        cfg: ProviderConfig,
        preset: ProviderPreset,
        transport: httpx.AsyncBaseTransport | None,
        clock: Callable[[], float],
        rng: random.Random,
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
        self.breaker = Breaker(cfg.breaker_failures, cfg.breaker_cooldown_s, clock=clock)
        self.backoff = Backoff(cfg.retry_base_s, cfg.retry_max_s, rng)
        # Real monotonic time, not the injected clock's: the pause is slept through for real.
        self.paused_until = 0.0

    def pause(self, seconds: float | None) -> None:
        """Hold every request to this provider for ``seconds`` (it answered 429)."""
        if seconds:
            self.paused_until = max(self.paused_until, time.monotonic() + seconds)


# --- the gateway ------------------------------------------------------------------------------


class Gateway:
    """Budgeted, rate-limited, retried access to the configured model providers.

    ``clock`` dates the ledger and budgets (``now()``) and times the breakers and the outage
    clock (``monotonic()``); ``rng`` is the retry jitter's randomness (a fresh
    ``random.Random`` when not given)."""

    def __init__(
        self,
        cfg: Config,
        store: Store,
        *,
        clock: Clock,
        transport: httpx.AsyncBaseTransport | None = None,
        rng: random.Random | None = None,
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
        self.outages = OutageWatch(store, outage_park_s=cfg.gateway.outage_park_s)
        self._recovery = anyio.Event()
        self.state = GatewayState.OPEN
        rng = rng or random.Random()
        self._providers = {
            name: _Provider(
                name,
                pcfg,
                PRESETS.get(pcfg.preset) or plugins[pcfg.preset],
                transport,
                clock.monotonic,
                rng,
            )
            for name, pcfg in cfg.providers.items()
        }

    @classmethod
    @asynccontextmanager
    async def open(
        cls,
        cfg: Config,
        store: Store,
        *,
        clock: Clock,
        transport: httpx.AsyncBaseTransport | None = None,
        rng: random.Random | None = None,
    ) -> AsyncIterator[Gateway]:
        """Open the providers' clients, release crashed holds, resume parked jobs, and keep
        doing the latter two every ``budget.resume_interval_s`` while open; and every
        ``gateway.probe_interval_s`` move the jobs that wait for a failing provider
        (:class:`hlmem.gateway.outage.OutageWatch`).

        ``transport`` replaces the network for every provider, for tests a socket cannot
        express; everything else should talk to a real (loopback) server.

        :raises ConfigError: an unknown plugin preset, or an API key variable that is not set.
        """
        gw = cls(cfg, store, clock=clock, transport=transport, rng=rng)
        error: BaseException | None = None
        try:
            await gw.recover()
            await gw.resume_parked_for_budget()
            await gw._look()  # a job parked for an outage goes as a probe at once
            async with anyio.create_task_group() as tg:
                tg.start_soon(gw._housekeeping)
                tg.start_soon(gw._watch)
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

        def used(answer: ChatAnswer) -> tuple[Tokens, bool]:
            tokens = Tokens(
                worst.prompt if answer.prompt_tokens is None else answer.prompt_tokens,
                estimate_tokens(answer.text)
                if answer.completion_tokens is None
                else answer.completion_tokens,
            )
            return tokens, answer.prompt_tokens is None or answer.completion_tokens is None

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
            lambda answer: prompt_usage(answer.prompt_tokens, worst),
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
            lambda answer: prompt_usage(answer.prompt_tokens, worst),
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
        used: Callable[[A], tuple[Tokens, bool]],
    ) -> A:
        """Reserve, run, then settle (or release) and write the ledger row.

        Provider trouble (5xx, timeouts, 429s, an open breaker) becomes ``ProviderOutage``
        once ``p`` has been failing for ``gateway.outage_park_s``."""
        try:
            p.breaker.check(p.name, self._now())
        except CircuitOpen as exc:
            refusal = self._outage(p, exc)
            await self.budget.refuse(call, type(refusal).__name__)
            raise refusal from (None if refusal is exc else exc)
        reservation = await self.budget.reserve(call, worst)
        wire = Wire()
        try:
            raw = await self._retrying(p, path, body, worst.total, wire)
            answer = parse(raw)
        except BaseException as exc:
            with anyio.CancelScope(shield=True):
                await self._fail(reservation, exc, wire, worst)
            self._log(call, "error", wire, type(exc).__name__)
            if isinstance(exc, ProviderUnavailable | ProviderTimeout | RateLimited):
                p.breaker.troubled(self._now())
                outage = self._outage(p, exc)
                if outage is not exc:
                    raise outage from exc
            raise
        tokens, estimated = used(answer)
        with anyio.CancelScope(shield=True):
            await self.budget.settle(
                reservation, wire.plus(tokens), wire.attempts(), estimated=estimated
            )
        self._log(call, "ok", wire, None)
        return answer

    async def _fail(
        self, reservation: Reservation, exc: BaseException, wire: Wire, worst: Tokens
    ) -> None:
        """End a failed call: an answer that arrived but does not parse is charged (what it
        reports, else an estimate), as is usage an error answer reported; else released."""
        charged = wire.charged(worst) if isinstance(exc, BadProviderOutput) else None
        if charged is None and wire.billed.total:
            charged = (wire.billed, False)
        await self.budget.fail(
            reservation,
            type(exc).__name__,
            wire.attempts(),
            charged=None if charged is None else charged[0],
            estimated=charged is not None and charged[1],
        )

    def _outage(self, p: _Provider, exc: Exception) -> Exception:
        """``exc``, or a ``ProviderOutage`` when ``p`` has failed for ``outage_park_s`` (or
        will have, by the time ``exc`` asks the job to come back)."""
        down = p.breaker.down_for(self._now())
        limit = self.cfg.gateway.outage_park_s
        # A refusal asking to wait past the limit parks now rather than wait in todo.
        if down + (getattr(exc, "retry_after_s", None) or 0.0) < limit:
            return exc
        return ProviderOutage(
            f"{p.name}: failing for {down:.0f} s (gateway.outage_park_s = {limit:g}): {exc}",
            provider=p.name,
            down_s=down,
        )

    def _now(self) -> float:
        """The breaker's and outage clock's time: the injected clock's monotonic seconds."""
        return self.clock.monotonic()

    async def _retrying(
        self, p: _Provider, path: str, body: dict[str, object], tokens: int, wire: Wire
    ) -> bytes:
        """Attempts until one succeeds, a permanent error, or retries run out."""
        retry = 0
        while True:
            trial = p.breaker.enter(p.name, self._now())
            error: RateLimited | ProviderUnavailable | ProviderTimeout
            try:
                async with self._throttle(p, tokens):
                    raw = await self._send_once(p, path, body, wire)
            except RateLimited as exc:
                p.breaker.end_trial(trial)
                wire.rate_limited += 1
                p.pause(exc.retry_after_s)
                error = exc
                delay = (
                    exc.retry_after_s if exc.retry_after_s is not None else p.backoff.delay_s(retry)
                )
            except (ProviderUnavailable, ProviderTimeout) as exc:
                if p.breaker.failed(self._now()):
                    log.warning(
                        "circuit opened for %s",
                        p.name,
                        extra={"action": "circuit_opened", "provider": p.name},
                    )
                error = exc
                delay = max(p.backoff.delay_s(retry), _retry_after_of(exc))
            except BaseException:
                p.breaker.end_trial(trial)
                raise
            else:
                # Back from an open breaker, or the first answer this process has seen: the jobs
                # waiting for the provider go at once, not at the watcher's next look.
                back = p.breaker.consecutive >= p.breaker.failures or not p.breaker.seen_up
                p.breaker.succeeded()
                if back:
                    self._recovery.set()
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
        self, p: _Provider, path: str, body: dict[str, object], wire: Wire
    ) -> bytes:
        """One request; a non-2xx status or transport failure raises a ``ProviderError``."""
        wire.sent += 1
        started = time.perf_counter()
        try:
            with _translated(p.name, p.secret):
                response = await p.client.post(path, json=body)
                if response.is_error:
                    wire.bill(response.content)
                response.raise_for_status()
        finally:
            wire.latency_ms = (time.perf_counter() - started) * 1000
        wire.answered, wire.body = True, response.content
        return response.content

    # --- housekeeping and logs ----------------------------------------------------------------

    async def _housekeeping(self) -> None:
        while True:
            await anyio.sleep(self.cfg.budget.resume_interval_s)
            try:
                await self.budget.recover()
                await self.budget.resume_parked()
                # Jobs another process parked for an outage of a provider that answers here.
                await self.outages.catch_up((p.name, p.breaker) for p in self._providers.values())
            except ClosedError:
                return
            except HlmemError as exc:
                log.warning(
                    "budget housekeeping failed: %s", exc, extra={"action": "housekeeping_failed"}
                )

    async def _watch(self) -> None:
        """Every ``gateway.probe_interval_s``, or at once when a provider answers again after
        trouble: park, probe or resume the jobs waiting for each provider."""
        while True:
            with anyio.move_on_after(self.cfg.gateway.probe_interval_s):
                await self._recovery.wait()
            self._recovery = anyio.Event()
            try:
                await self._look()
            except ClosedError:
                return
            except HlmemError as exc:
                log.warning("outage watch failed: %s", exc, extra={"action": "outage_watch_failed"})

    async def _look(self) -> None:
        for p in self._providers.values():
            await self.outages.watch(p.name, p.breaker, self._now())

    def _log(self, call: CallInfo, outcome: str, wire: Wire, error_class: str | None) -> None:
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
