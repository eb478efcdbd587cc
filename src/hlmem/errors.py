"""The hlmem error tree.

Errors are grouped by what the caller does next::

    HlmemError
    ├── ConfigError              bad configuration: fix it and start again
    ├── InputError               bad input from a caller: nothing was written
    │   └── ContentTooLarge      an event's content is over ingest.max_content_chars
    ├── StoreError               the database refused or is unusable
    │   ├── SchemaError          migrations missing, unknown or SQLite too old
    │   └── ImmutableEvent       an UPDATE or unguarded DELETE hit the events table
    ├── Retryable                try again later (the job runner retries these with backoff)
    │   ├── StoreBusy            the database stayed locked past busy_timeout
    │   └── LeaseLost            another worker took a job whose lease expired
    ├── Parkable                 wait for an outside change (budget); the job is parked
    ├── Permanent                retrying cannot help: the job fails with its reason
    │   └── BadJobPayload        a job row's payload does not validate
    └── ClosedError              the memory object, store or pipeline is already closed

Every class's docstring is its default message. Errors carry typed fields, never dicts.
"""

from __future__ import annotations


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


class Parkable(HlmemError):
    """The job must wait for an outside change (such as budget) and is parked."""


class Permanent(HlmemError):
    """A failure that retrying cannot fix."""


class BadJobPayload(Permanent):
    """A job's payload does not validate against its message type."""

    def __init__(self, job_id: int, detail: str) -> None:
        super().__init__(f"job {job_id}: invalid payload: {detail}")
        self.job_id = job_id


class ClosedError(HlmemError):
    """The object is closed."""
