"""Clocks and timestamps.

A clock gives three readings, each for its own use:

``now()``        domain time (``occurred_at``, ``recorded_at``, valid time): a timezone-aware UTC
                 datetime, stored as fixed-width ISO 8601 text so that string order is time order;
``wall()``       epoch seconds for what other processes compare: the job table's leases,
                 ``run_after`` and ``updated_at``;
``monotonic()``  seconds for intervals measured inside this process (a breaker's cooldown, how
                 long a provider has been failing, when a cached count is re-read): it never
                 jumps when the wall clock is stepped.

Everything that decides by time takes its clock: tests pass a :class:`ManualClock` and move it
(the windower's 120 s cap, a lease that expires, a breaker's cooldown) instead of waiting. The
job queue of ``hlmem.open`` always runs on the machine's clock, whatever domain clock it is
given: other processes read the same job table.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware UTC."""
        ...

    def wall(self) -> float:
        """Epoch seconds of the same instant, comparable across processes."""
        ...

    def monotonic(self) -> float:
        """Seconds from an arbitrary origin that only ever move forward."""
        ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)

    def wall(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()


class ManualClock:
    """A clock that moves only when told to.

    :meth:`advance` moves every reading; :meth:`set` steps the wall and domain time only, as an
    operator or NTP stepping the system clock would, so intervals on :meth:`monotonic` do not
    end (or get longer) because of it.
    """

    def __init__(self, start: datetime | None = None) -> None:
        self._now = _aware(start) if start is not None else datetime(2026, 1, 1, tzinfo=UTC)
        self._monotonic = 0.0

    def now(self) -> datetime:
        return self._now

    def wall(self) -> float:
        return self._now.timestamp()

    def monotonic(self) -> float:
        return self._monotonic

    def advance(self, seconds: float) -> None:
        """Let ``seconds`` pass.

        :raises ValueError: ``seconds`` is negative (time set back is :meth:`set`).
        """
        if seconds < 0:
            raise ValueError(f"a clock advances by a duration of 0 s or more, not {seconds}")
        self._now += timedelta(seconds=seconds)
        self._monotonic += seconds

    def set(self, when: datetime) -> None:
        """Step the wall and domain time to ``when`` (forward or back); monotonic time stays.

        :raises ValueError: ``when`` is naive.
        """
        self._now = _aware(when)


def _aware(dt: datetime) -> datetime:
    if dt.tzinfo is None:
        raise ValueError("naive datetime: hlmem timestamps must be timezone-aware")
    return dt


def iso(dt: datetime) -> str:
    """Fixed-width UTC ISO 8601 text: ``2026-01-01T00:00:00.000000+00:00``."""
    if dt.tzinfo is not UTC:
        if dt.tzinfo is None:
            raise ValueError("naive datetime: hlmem timestamps must be timezone-aware")
        dt = dt.astimezone(UTC)
    return dt.isoformat(timespec="microseconds")


def parse_iso(text: str) -> datetime:
    dt = datetime.fromisoformat(text)
    if dt.tzinfo is None:
        raise ValueError(f"timestamp {text!r} has no timezone")
    return dt.astimezone(UTC)


def parse_iso_opt(text: str | None) -> datetime | None:
    """:func:`parse_iso` of a nullable column: ``None`` (or empty) stays ``None``."""
    return parse_iso(text) if text else None


def wall() -> float:
    """The machine's wall-clock seconds, for job-table times written outside a job queue."""
    return time.time()
