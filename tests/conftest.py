from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import fast_config

from hlmem.config import Config


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


@pytest.fixture
def config() -> Iterator[Config]:
    yield fast_config()
