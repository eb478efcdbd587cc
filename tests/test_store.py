from __future__ import annotations

from collections.abc import AsyncIterator
from importlib import resources
from pathlib import Path
from typing import Any

import anyio
import pytest

from hlmem.config import StoreConfig
from hlmem.errors import SchemaError, StoreError
from hlmem.store import Store, fresh_schema, migrations, normalize_schema, sqlite_module

pytestmark = pytest.mark.anyio

EVENT = (
    "ev1", "default", "s1", "user", "记住：我的猫叫小白", "h1",
    "2026-01-01T00:00:00.000000+00:00", "2026-01-01T00:00:00.000000+00:00",
    "user_direct", "interactive", "{}",
)


def store_cfg_module(cfg: StoreConfig) -> Any:
    return sqlite_module(cfg.sqlite_module)


@pytest.fixture(params=["sqlean", "stdlib"])
def store_cfg(request: pytest.FixtureRequest) -> StoreConfig:
    return StoreConfig(sqlite_module=request.param)


@pytest.fixture
async def store(db_path: Path, store_cfg: StoreConfig) -> AsyncIterator[Store]:
    s = await Store.open(db_path, store_cfg)
    try:
        yield s
    finally:
        await s.close()


async def test_both_sqlite_modules_open(store: Store, store_cfg: StoreConfig) -> None:
    if store_cfg.sqlite_module == "sqlean":
        assert store.caps.driver == "sqlean"
        assert store.caps.vec_version is not None  # sqlite-vec loads through sqlean
    else:
        assert store.caps.driver == "sqlite3"
        assert store.caps.vec_version is None  # stdlib fallback: no extensions


async def test_wal_and_foreign_keys(store: Store, db_path: Path) -> None:
    conn = store.module.connect(str(db_path))
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        conn.close()
    async with store.transaction() as tx:
        with pytest.raises(StoreError, match="FOREIGN KEY"):
            await tx.execute(
                "insert_evidence", ("no-such-claim", "no-such-event", "q", 0, 1)
            )


async def test_migrations_yield_schema_sql(store_cfg: StoreConfig) -> None:
    shipped = resources.files("hlmem").joinpath("sql", "schema.sql").read_text(encoding="utf-8")
    assert normalize_schema(await fresh_schema(store_cfg)) == normalize_schema(shipped)


async def test_migrations_are_recorded_and_idempotent(store: Store, db_path: Path) -> None:
    versions = [v for v, _, _ in migrations()]
    assert await store.applied_migrations() == versions
    assert await store.migrate() == []  # nothing left to apply
    again = await Store.open(db_path, store.cfg)
    try:
        assert await again.applied_migrations() == versions
    finally:
        await again.close()


async def test_unknown_migration_is_refused(db_path: Path, store_cfg: StoreConfig) -> None:
    store = await Store.open(db_path, store_cfg)
    await store.close()
    raw = store_cfg_module(store_cfg).connect(str(db_path))
    with raw:
        raw.execute("INSERT INTO schema_migrations VALUES (9999, '9999_future.sql', 'x')")
    raw.close()
    with pytest.raises(SchemaError, match="9999"):
        await Store.open(db_path, store_cfg)


async def test_events_are_immutable_in_the_database(store: Store, db_path: Path) -> None:
    async with store.transaction() as tx:
        await tx.execute("insert_event", EVENT)
    raw = store.module.connect(str(db_path), isolation_level=None)
    try:
        with pytest.raises(store.module.IntegrityError, match="immutable"):
            raw.execute("UPDATE events SET content = 'x' WHERE id = 'ev1'")
        with pytest.raises(store.module.IntegrityError, match="immutable"):
            raw.execute("DELETE FROM events WHERE id = 'ev1'")
        assert raw.execute("SELECT content FROM events").fetchall() == [(EVENT[4],)]
        # The forget path: a tombstone naming the event lets the delete through.
        raw.execute("BEGIN IMMEDIATE")
        raw.execute(
            "INSERT INTO tombstones (kind, key, namespace, created_at) VALUES"
            " ('event', 'ev1', 'default', '2026-01-01')"
        )
        raw.execute("DELETE FROM events WHERE id = 'ev1'")
        raw.execute("COMMIT")
    finally:
        raw.close()
    assert await store.scalar("count_events") == 0


async def test_transaction_rolls_back_on_error(store: Store) -> None:
    with pytest.raises(RuntimeError):
        async with store.transaction() as tx:
            await tx.execute("insert_event", EVENT)
            raise RuntimeError("boom")
    assert await store.scalar("count_events") == 0


async def test_nested_transaction_is_a_savepoint(store: Store) -> None:
    second = ("ev2", *EVENT[1:])
    async with store.transaction() as tx:
        await tx.execute("insert_event", EVENT)
        with pytest.raises(RuntimeError):
            async with store.transaction() as inner:
                await inner.execute("insert_event", second)
                raise RuntimeError("inner fails")
    rows = await store.fetchall("existing_event_ids", ('["ev1", "ev2"]',))
    assert [r[0] for r in rows] == ["ev1"]


async def test_cancelled_transaction_rolls_back(store: Store) -> None:
    with anyio.move_on_after(0.05):
        async with store.transaction() as tx:
            await tx.execute("insert_event", EVENT)
            await anyio.sleep(10)
    assert await store.scalar("count_events") == 0
    async with store.transaction() as tx:  # the writer is usable afterwards
        await tx.execute("insert_event", EVENT)
    assert await store.scalar("count_events") == 1


async def test_concurrent_transactions_serialise(store: Store) -> None:
    async def insert(i: int) -> None:
        async with store.transaction() as tx:
            await tx.execute("insert_event", (f"ev{i}", *EVENT[1:]))

    async with anyio.create_task_group() as tg:
        for i in range(50):
            tg.start_soon(insert, i)
    assert await store.scalar("count_events") == 50


async def test_sqlite_module_sqlean_is_default() -> None:
    assert StoreConfig().sqlite_module == "auto"
