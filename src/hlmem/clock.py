"""Clocks and timestamps.

Domain times (``occurred_at``, ``recorded_at``, valid time) are timezone-aware UTC datetimes,
stored as fixed-width ISO 8601 text so that string order is time order. The clock is injectable:
tests pass a :class:`ManualClock` to exercise time rules (the windower's 120 s cap) without
waiting. Job leases and retry times are wall-clock floats (``time.time()``) because other
processes compare them.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware UTC."""
        ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


class ManualClock:
    """A clock that moves only when told to."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2026, 1, 1, tzinfo=UTC)

    def now(self) -> datetime:
        return self._now

    def advance(self, seconds: float) -> None:
        self._now += timedelta(seconds=seconds)


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
    """Wall-clock seconds for job leases and retry times, comparable across processes."""
    return time.time()
