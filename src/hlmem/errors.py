"""The hlmem error tree.

Errors are grouped by what the caller does next::

    HlmemError
    ├── ConfigError              bad configuration: fix it and start again
    ├── InputError               bad input from a caller: nothing was written
    │   ├── ContentTooLarge      an event's content is over ingest.max_content_chars
    │   └── ForgottenFact        a forget's tombstone stops a remembered fact (forgotten_at)
    ├── StoreError               the database refused or is unusable
    │   ├── SchemaError          migrations missing, unknown or SQLite too old
    │   └── ImmutableEvent       an UPDATE or unguarded DELETE hit the events table
    ├── Retryable                try again later (the job runner retries these with backoff)
    │   ├── StoreBusy            the database stayed locked past busy_timeout
    │   ├── LeaseLost            another worker took a job whose lease expired
    │   ├── ForgetPending        a forget request waits for the claims it names to settle
    │   ├── ExtractionFailed     an extraction answer stayed invalid after its repair calls
    │   └── Deferred             not now, and not an attempt: the job waits retry_after_s
    ├── ProviderError            a model provider call failed (never holds an API key)
    │   ├── ProviderUnavailable  Retryable: 5xx or connection failure
    │   │   └── CircuitOpen      Deferred: the provider is paused after repeated failures
    │   ├── RateLimited          Deferred: 429 from the provider (retry_after_s)
    │   ├── ProviderTimeout      Retryable: no answer within the provider's timeout_s
    │   ├── BadProviderOutput    Retryable: the answer does not parse or has the wrong shape
    │   ├── ProviderOutage       Parkable: the provider has been failing for outage_park_s
    │   └── ProviderRejected     Permanent: the provider refused the request (4xx, not 429)
    ├── Parkable                 wait for an outside change (budget, a provider back); parked
    │   └── BudgetExceeded       a call's worst-case cost is over a daily or monthly budget
    ├── Permanent                retrying cannot help: the job fails with its reason
    │   ├── BadJobPayload        a job row's payload does not validate
    │   └── UnknownPrice         the price book has no price for a model: fail closed
    └── ClosedError              the memory object, store or pipeline is already closed

Provider trouble never ends a job as failed: a ``Deferred`` refusal (breaker open, 429) gives
its attempt back, 5xx and timeouts that use up a job's attempts park it as ``ProviderOutage``,
and only ``Permanent`` errors and answers that stay unparseable through every attempt fail it.

Every class's docstring is its default message. Errors carry typed fields, never dicts.
"""

from __future__ import annotations

from collections.abc import Callable


class HlmemError(Exception):
    """An hlmem operation failed."""

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or (type(self).__doc__ or "").strip())


class ConfigError(HlmemError):
    """The configuration is invalid."""


class InputError(HlmemError):
    """The input is invalid; nothing was written."""


class ContentTooLarge(InputError):
    """An event's content is longer than ingest.max_content_chars."""

    def __init__(self, length: int, limit: int) -> None:
        super().__init__(f"content has {length} characters, over the limit of {limit}")
        self.length = length
        self.limit = limit


class ForgottenFact(InputError):
    """The fact was forgotten: a forget's tombstone stops it, and nothing was written."""

    def __init__(self, message: str, *, kinds: tuple[str, ...], forgotten_at: str) -> None:
        super().__init__(message)
        #: the kinds of the tombstones that stop it (content, slot, event, claim, session)
        self.kinds = kinds
        #: when the (earliest) forget that stops it was made, ISO 8601
        self.forgotten_at = forgotten_at


class StoreError(HlmemError):
    """The database operation failed."""


class SchemaError(StoreError):
    """The database schema or SQLite version is not usable."""


class ImmutableEvent(StoreError):
    """Events are immutable: they are never updated and only deleted through forget."""


class Retryable(HlmemError):
    """A transient failure; the operation may succeed later."""


class StoreBusy(Retryable):
    """The database stayed locked past busy_timeout."""


class LeaseLost(Retryable):
    """A job's lease expired and another worker owns it now."""

    def __init__(self, job_ids: list[int]) -> None:
        super().__init__(f"lease lost for jobs {job_ids[:10]}")
        self.job_ids = job_ids


class ForgetPending(Retryable):
    """An in-conversation forget request waits for the claims it names to finish the pipeline."""


class ProviderError(HlmemError):
    """A model provider call failed."""


class BadProviderOutput(ProviderError, Retryable):
    """The provider's answer does not parse or does not have the expected shape."""

    RAW_MAX_CHARS = 2000

    def __init__(self, detail: str, raw: str | bytes = "") -> None:
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
        super().__init__(f"bad provider output: {detail}")
        self.detail = detail
        # Kept for the dead-letter record; a parse failure never becomes "nothing found".
        self.raw = text[: self.RAW_MAX_CHARS]


class Deferred(Retryable):
    """The provider (or its circuit breaker) refused the call for now; nothing was wrong with the
    job, so the refusal is not one of its attempts: it waits ``retry_after_s`` and runs again."""

    retry_after_s: float | None = None

    def wait_s(self) -> float | None:
        """Seconds to wait from now (``None``: as the runner's backoff says)."""
        return self.retry_after_s


class Parkable(HlmemError):
    """The job must wait for an outside change (budget, a provider back) and is parked."""


class Permanent(HlmemError):
    """A failure that retrying cannot fix."""


# --- provider errors raised by the gateway (gateway.py); their messages never hold a key -------


class ProviderUnavailable(ProviderError, Retryable):
    """The provider answered 5xx or could not be reached."""

    def __init__(self, message: str | None = None, *, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class CircuitOpen(ProviderUnavailable, Deferred):
    """The provider is paused after repeated failures (its circuit breaker is open)."""

    def __init__(
        self,
        message: str | None = None,
        *,
        retry_after_s: float | None = None,
        reopens_in: Callable[[], float] | None = None,
    ) -> None:
        super().__init__(message, retry_after_s=retry_after_s)
        self._reopens_in = reopens_in

    def wait_s(self) -> float | None:
        """The breaker's wait as it is now, not as it was when it refused: a job refused while a
        trial call was in flight, and written back after that trial succeeded, runs at once."""
        return self.retry_after_s if self._reopens_in is None else self._reopens_in()


class RateLimited(ProviderError, Deferred):
    """The provider answered 429 Too Many Requests."""

    def __init__(self, message: str | None = None, *, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class ProviderTimeout(ProviderError, Retryable):
    """The provider did not answer within its timeout_s."""


class ProviderOutage(ProviderError, Parkable):
    """The provider has been failing for longer than gateway.outage_park_s (or a job's attempts
    were all used up by its errors); the job is parked until the provider answers again."""

    def __init__(
        self, message: str | None = None, *, provider: str | None = None, down_s: float = 0.0
    ) -> None:
        super().__init__(message)
        self.provider = provider
        self.down_s = down_s


class ProviderRejected(ProviderError, Permanent):
    """The provider refused the request (a 4xx status other than 429)."""

    def __init__(self, message: str | None = None, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class BudgetExceeded(Parkable):
    """A call's worst-case cost is over a daily or monthly budget; nothing was sent."""

    def __init__(
        self, *, scope: str, needed: float, used: float, limit: float, currency: str
    ) -> None:
        super().__init__(
            f"{scope} budget: the call may cost {needed:.6f} {currency}, "
            f"{used:.6f} of {limit:.6f} {currency} used"
        )
        self.scope = scope
        self.needed = needed
        self.used = used
        self.limit = limit
        self.currency = currency


class UnknownPrice(Permanent):
    """The price book has no price for the model and it is not marked free; nothing was sent."""

    def __init__(self, provider: str, model: str) -> None:
        super().__init__(
            f'no price for {provider}/{model}: add [prices."{provider}/{model}"] '
            "(or free = true) to the config"
        )
        self.provider = provider
        self.model = model


class BadJobPayload(Permanent):
    """A job's payload does not validate against its message type."""

    def __init__(self, job_id: int, detail: str) -> None:
        super().__init__(f"job {job_id}: invalid payload: {detail}")
        self.job_id = job_id


class ClosedError(HlmemError):
    """The object is closed."""


class ExtractionFailed(Retryable):
    """A window's extraction answer stayed invalid after its repair calls: one attempt of the
    job; after its last attempt it is dead-lettered with the last raw answer kept (``raw``,
    shown by ``hlmem jobs list``)."""

    def __init__(self, detail: str, raw: str = "") -> None:
        super().__init__(f"extraction failed: {detail}")
        self.raw = raw
