from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from helpers import fast_config
from scripted_provider import ScriptedProvider

from hlmem.config import Config
from hlmem.store import Store


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


@pytest.fixture
def config() -> Iterator[Config]:
    yield fast_config()


@pytest.fixture
def server() -> Iterator[ScriptedProvider]:
    """A scripted OpenAI-compatible server on 127.0.0.1 (tests/scripted_provider.py)."""
    with ScriptedProvider() as provider:
        yield provider


@pytest.fixture
async def store(db_path: Path) -> AsyncIterator[Store]:
    """A migrated store on a fresh file (modules may override it with their own)."""
    s = await Store.open(db_path, Config().store)
    try:
        yield s
    finally:
        await s.close()
