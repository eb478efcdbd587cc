from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hlmem.config import Config, load_config
from hlmem.store import sqlite_module


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


def fast_config(**sections: dict[str, object]) -> Config:
    """Defaults tuned for tests: short polls and sweeps, environment ignored."""
    overrides: dict[str, object] = {
        "pipeline": {"poll_interval_s": 0.02, "drain_poll_s": 0.01, "shutdown_grace_s": 5},
        "windower": {"sweep_interval_s": 0.02},
    }
    for name, values in sections.items():
        base = overrides.setdefault(name, {})
        assert isinstance(base, dict)
        base.update(values)
    return load_config(env={}, overrides=overrides)


@pytest.fixture
def config() -> Iterator[Config]:
    yield fast_config()


def connect_raw(path: Path) -> Any:
    """A plain DB-API connection to an hlmem file, for assertions.

    It uses the same SQLite module as hlmem (sqlean when installed). Never open the file with a
    *different* SQLite library in the same process: POSIX locks are per process, so when the
    other library closes its file descriptor it drops hlmem's locks too, may checkpoint and
    delete the WAL under hlmem, and writes get lost. Other processes may use any library.
    """
    module = sqlite_module("auto")
    return module.connect(str(path), isolation_level=None)
