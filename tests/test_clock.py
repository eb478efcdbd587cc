"""Clocks: the three readings (domain time, wall seconds, monotonic seconds) and how a manual
clock moves them, and what ``hlmem.open`` asks of a clock it is given."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import hlmem
from hlmem.clock import ManualClock, SystemClock


def test_advance_moves_every_reading_and_set_steps_the_wall_only() -> None:
    start = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
    clock = ManualClock(start)
    mono = clock.monotonic()
    clock.advance(90)
    assert clock.now() == start + timedelta(seconds=90)
    assert clock.wall() == (start + timedelta(seconds=90)).timestamp()
    assert clock.monotonic() == mono + 90
    # An operator (or NTP) steps the clock back a day: domain and wall time follow ...
    clock.set(start - timedelta(days=1))
    assert clock.now() == start - timedelta(days=1)
    assert clock.wall() == (start - timedelta(days=1)).timestamp()
    assert clock.monotonic() == mono + 90  # ... intervals do not
    clock.set(datetime(2031, 1, 1, tzinfo=UTC))
    assert clock.monotonic() == mono + 90


def test_a_manual_clock_refuses_to_run_backwards_or_to_be_naive() -> None:
    clock = ManualClock()
    with pytest.raises(ValueError, match="0 s or more"):
        clock.advance(-1)
    with pytest.raises(ValueError, match="timezone-aware"):
        clock.set(datetime(2026, 1, 1))  # naive: the point of the check
    with pytest.raises(ValueError, match="timezone-aware"):
        ManualClock(datetime(2026, 1, 1))
    assert clock.now() == datetime(2026, 1, 1, tzinfo=UTC)


def test_the_system_clock_reads_the_machine() -> None:
    clock = SystemClock()
    assert abs(clock.now().timestamp() - clock.wall()) < 60
    first = clock.monotonic()
    assert clock.monotonic() >= first


class DomainOnly:
    """A clock with only the domain reading: what hlmem's clock asked for before."""

    def now(self) -> datetime:
        return datetime(2026, 1, 1, tzinfo=UTC)


def test_open_refuses_a_clock_without_every_reading(tmp_path: Path) -> None:
    with pytest.raises(hlmem.ConfigError, match=r"now\(\), wall\(\) and monotonic\(\)"):
        hlmem.open(tmp_path / "记忆.db", clock=DomainOnly())  # type: ignore[arg-type]
    assert os.listdir(tmp_path) == []
