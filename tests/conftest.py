from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hlmem.config import Config, load_config


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
