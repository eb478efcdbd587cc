from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from functools import partial
from importlib import resources
from pathlib import Path
from typing import Any

import anyio
import pytest

from hlmem.config import StoreConfig
from hlmem.errors import SchemaError, StoreError
from hlmem.store import (
    JSON_QUERIES,
    QUERIES,
    Checkpointer,
    Store,
    SyncTx,
    connect_sync,
    fresh_schema,
    json_rows_form,
    migrations,
    normalize_schema,
    sqlite_module,
)

pytestmark = pytest.mark.anyio

EVENT = (
    "ev1",
    "default",
    "s1",
    "user",
    "记住：我的猫叫小白",
    "h1",
    "2026-01-01T00:00:00.000000+00:00",
    "2026-01-01T00:00:00.000000+00:00",
    "user_direct",
    "interactive",
    "{}",
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
            await tx.execute("insert_evidence", ("no-such-claim", "no-such-event", "q", 0, 1))


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


async def test_the_claims_rebuild_keeps_rows_and_links(
    db_path: Path, store_cfg: StoreConfig
) -> None:
    """0003 rebuilds ``claims`` (a new CHECK): rows and the evidence and supersession rows that
    reference them survive (foreign keys are off during the rebuild, so the DROP does not
    cascade), and foreign keys work again afterwards."""
    module = store_cfg_module(store_cfg)
    conn = module.connect(str(db_path), isolation_level=None)
    conn.execute(
        "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL,"
        " applied_at TEXT NOT NULL)"
    )
    conn.execute("PRAGMA foreign_keys = ON")
    for version, name, sql in migrations():
        if version < 3:
            conn.executescript(sql)
            conn.execute("INSERT INTO schema_migrations VALUES (?, ?, 'then')", (version, name))
    conn.execute("INSERT INTO events VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", EVENT)
    claim = (
        "INSERT INTO claims (id, namespace, subject, predicate, value, text, content_hash,"
        " slot_key, status, recorded_at) VALUES (?, 'default', 'user', 'note', ?, ?, ?, 's', ?,"
        " '2026-01-01')"
    )
    conn.execute(claim, ("c1", "猫叫小白", "猫叫小白", "h1", "superseded"))
    conn.execute(claim, ("c2", "猫叫小黑", "猫叫小黑", "h2", "active"))
    conn.execute("INSERT INTO evidence VALUES ('c1', 'ev1', '小白', 3, 5)")
    conn.execute("INSERT INTO supersessions VALUES ('c1', 'c2', 'renamed', '2026-01-02')")
    conn.close()

    s = await Store.open(db_path, store_cfg)
    try:
        assert [v for v, _, _ in migrations()] == await s.applied_migrations()
        async with s.transaction() as tx:
            await tx.execute("activate_claim", ("c1",))  # not pending: no change
        evidence = await s.fetchall("evidence_for_claims", ('["c1"]',))
        assert [tuple(r) for r in evidence] == [("c1", "ev1", "小白", 3, 5)]
        with pytest.raises(StoreError):  # foreign keys are enforced again
            async with s.transaction() as tx:
                await tx.execute("insert_evidence", ("no-such-claim", "ev1", "q", 0, 1))
    finally:
        await s.close()
    check = module.connect(str(db_path), isolation_level=None)
    try:
        assert check.execute("SELECT id, status FROM claims ORDER BY id").fetchall() == [
            ("c1", "superseded"),
            ("c2", "active"),
        ]
        assert check.execute("SELECT count(*) FROM supersessions").fetchone()[0] == 1
        assert check.execute("PRAGMA foreign_key_check").fetchall() == []
    finally:
        check.close()


# --- executemany as one statement over a JSON array -------------------------------------------


def test_json_rows_form_rewrites_only_single_row_inserts() -> None:
    form = json_rows_form("INSERT INTO t (a, b) VALUES (?, lower(?)) ON CONFLICT (a) DO NOTHING;")
    assert form is not None
    assert "json_extract(value, '$[0]'), lower(json_extract(value, '$[1]'))" in form
    assert form.rstrip().endswith("ON CONFLICT (a) DO NOTHING")
    assert "ORDER BY key" in form  # rows go in in array order
    # shapes it leaves alone: named parameters, parameters in the upsert tail, updates
    assert json_rows_form("INSERT INTO t (a) VALUES (:a)") is None
    assert (
        json_rows_form("INSERT INTO t (a) VALUES (?) ON CONFLICT (a) DO UPDATE SET b = ?") is None
    )
    assert json_rows_form("UPDATE t SET a = ? WHERE id = ?") is None
    assert "insert_event" in JSON_QUERIES and "fts_insert" in JSON_QUERIES


async def test_executemany_json_form_writes_what_row_binding_writes(
    store: Store, db_path: Path, store_cfg: StoreConfig
) -> None:
    """The same rows through the JSON form (writer thread, async Tx) and row by row
    (``json_rows=False``) are stored identically: types, NULLs, Chinese text, order."""
    rows = [
        (
            f"{tag}{i}",
            "默认",
            f"会话{i % 3}",
            "user",
            text,
            f"h{i}",
            "2026-01-01T00:00:00+00:00",
            "2026-01-01T00:00:00+00:00",
            "user_direct",
            "interactive",
            meta,
        )
        for tag in ("a", "b", "c")
        for i, (text, meta) in enumerate(
            [
                ("我的猫叫小白", "{}"),
                ('quote " and \\ backslash', '{"k": [1, 2.5, null]}'),
                ("emoji 🐱 and tab\t", "{}"),
            ]
        )
    ]
    by_tag = {t: [r for r in rows if r[0].startswith(t)] for t in "abc"}
    await store.run_in_transaction(lambda tx: tx.executemany("insert_event", by_tag["a"]))
    async with store.transaction() as tx:
        assert await tx.executemany("insert_event", by_tag["b"]) == 3
    await store.run_in_transaction(
        lambda tx: SyncTx(tx._conn, json_rows=False).executemany("insert_event", by_tag["c"])
    )
    conn = store_cfg_module(store_cfg).connect(str(db_path))
    try:
        stored = conn.execute(
            "SELECT id, namespace, session_id, content, metadata, typeof(content) FROM events "
            "ORDER BY seq"
        ).fetchall()
    finally:
        conn.close()
    assert [r[0] for r in stored] == [r[0] for r in rows]  # array order is seq order
    for tag in "bc":
        mine = [r[1:] for r in stored if r[0].startswith(tag)]
        assert mine == [r[1:] for r in stored if r[0].startswith("a")]
    assert stored[0][1:4] == ("默认", "会话0", "我的猫叫小白")


async def test_executemany_binds_rows_json_cannot_carry(store: Store, db_path: Path) -> None:
    """Bytes (a vector) and NaN have no exact JSON form: those rows are bound one by one."""
    blob = bytes(range(8))
    rows = [
        ("claim", f"c{i}", "default", "m", "v1", 2, blob, "2026-01-01T00:00:00+00:00")
        for i in range(3)
    ]
    assert await store.run_in_transaction(lambda tx: tx.executemany("vector_upsert", rows)) == 3
    conn = sqlite_module(StoreConfig().sqlite_module).connect(str(db_path))
    try:
        blobs = conn.execute("SELECT vector FROM vectors ORDER BY owner_id").fetchall()
    finally:
        conn.close()
    assert [b[0] for b in blobs] == [blob] * 3


# --- the WAL stays bounded under a steady stream of commits ---------------------------------

# ~6 KiB of Chinese and English per event: a few pages each, so the WAL fills quickly.
_ZH, _EN = "今天和产品团队讨论了第二季度的路线图，", "The deploy of payment-service went fine. "
_LONG = _ZH * 60 + _EN * 60


def _insert_events(tx: SyncTx, rows: Sequence[tuple[Any, ...]]) -> int:
    return tx.executemany("insert_event", rows)


def _wal_bytes(db_path: Path) -> int:
    wal = db_path.with_name(db_path.name + "-wal")
    return wal.stat().st_size if wal.exists() else 0


@pytest.mark.parametrize("how", ["transaction", "run_in_transaction"])
async def test_a_steady_stream_of_commits_keeps_the_wal_bounded(db_path: Path, how: str) -> None:
    """Commits back to back: a checkpoint on its own thread always has one landing while it
    runs, so SQLite never starts the WAL over by itself (it grew to 160 MiB in 4 s at 10,000
    events/s). The writer restarts it once it passes ``store.wal_restart_frames``, and by
    itself once it passes the checkpointer's ``limit_bytes``, however late the thread is."""
    store = await Store.open(db_path, StoreConfig(wal_restart_frames=64))
    largest = group = 0
    try:
        for n in range(1500):
            before = _wal_bytes(db_path)
            rows = [(f"ev{n}-{i}", "default", f"s{i}", "user", f"{n} {_LONG}", f"h{n}-{i}",
                     *EVENT[6:]) for i in range(4)]  # fmt: skip
            if how == "transaction":
                async with store.transaction() as tx:
                    for row in rows:
                        await tx.execute("insert_event", row)
            else:
                await store.run_in_transaction(partial(_insert_events, rows=rows))
            after = _wal_bytes(db_path)
            largest, group = max(largest, after), max(group, after - before)
        assert await store.scalar("count_events") == 6000
        assert store._checkpointer is not None
        caught_up, limit = store._checkpointer.caught_up, store._checkpointer.limit_bytes
    finally:
        await store.close()
    assert caught_up > 0
    # Measured: 2.8-6.8 MiB with restarts while the thread kept up, 83 MiB without restarts,
    # 36-49 MB on a busy machine before the writer checked the WAL itself.
    assert largest <= limit + group, (largest, limit, group)
    assert largest < 32 * 2**20, (largest, limit, group)


async def test_the_writer_bounds_the_wal_when_the_checkpointer_thread_never_runs(
    db_path: Path, store_cfg: StoreConfig
) -> None:
    """The thread's checkpoints come late on a busy machine (the steady-stream test above saw
    49 MB of WAL while it waited for CPU); here it never runs at all. The writer checks the
    WAL file itself before each transaction: past ``limit_bytes`` it checkpoints on its own
    connection, the next transaction starts the WAL over, and SQLite cuts the file back to the
    limit. So the WAL never holds more than the limit plus one group's pages."""
    await (await Store.open(db_path, store_cfg)).close()  # the schema
    module = store_cfg_module(store_cfg)
    conn, _ = connect_sync(db_path, store_cfg, module)
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    checkpointer = Checkpointer(connect_sync(db_path, store_cfg, module)[0], 64, limit_frames=256)
    largest = group = 0
    try:
        for n in range(150):  # ~6 MiB of WAL: six times the limit
            checkpointer.catch_up(conn)
            before = _wal_bytes(db_path)
            conn.execute("BEGIN")
            rows = [(f"ev{n}-{i}", "default", f"s{i}", "user", f"{n} {_LONG}", f"h{n}-{i}",
                     *EVENT[6:]) for i in range(4)]  # fmt: skip
            conn.executemany(QUERIES["insert_event"], rows)
            conn.execute("COMMIT")
            checkpointer.nudge()  # nothing answers: the thread was never started
            after = _wal_bytes(db_path)
            largest, group = max(largest, after), max(group, after - before)
        assert conn.execute("SELECT count(*) FROM events").fetchone()[0] == 600
    finally:
        checkpointer.stop()  # never started: closes its connection
        conn.close()
    assert checkpointer.forced > 0 and checkpointer.caught_up > 0
    assert largest <= checkpointer.limit_bytes + group


async def test_the_writer_catches_up_on_little_of_the_wal(
    db_path: Path, store_cfg: StoreConfig
) -> None:
    """The writer's catch-up (Checkpointer.catch_up) stalls its commits while it copies and
    syncs, so the checkpointer thread checkpoints again until a pass finds nothing new: the
    catch-ups are left a sliver of what it copied. With a single pass they copied half as
    many frames as the thread here (and synced every page its passes had copied); now <1 %.
    Commits this fast outrun the thread's restarts (the WAL reached 206 MB here before the
    writer checked it itself): the catch-ups the writer runs by itself at ``limit_bytes``
    copy what the thread has not, and are counted apart (``forced_frames``)."""
    await (await Store.open(db_path, store_cfg)).close()  # the schema
    module = store_cfg_module(store_cfg)
    conn, _ = connect_sync(db_path, store_cfg, module)
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    checkpointer = Checkpointer(connect_sync(db_path, store_cfg, module)[0], 64)
    checkpointer.start()
    largest = group = 0
    try:
        for n in range(3000):  # commits back to back, 20 events of ~1 KiB each
            checkpointer.catch_up(conn)
            before = _wal_bytes(db_path)
            conn.execute("BEGIN")
            rows = [(f"ev{n}-{i}", "default", f"会话{(n * 7 + i) % 97}", "user",
                     f"{n}/{i} {_ZH * 10} {_EN * 10}", f"h{n}-{i}", *EVENT[6:])
                    for i in range(20)]  # fmt: skip
            conn.executemany(QUERIES["insert_event"], rows)
            conn.execute("COMMIT")
            checkpointer.nudge()
            after = _wal_bytes(db_path)
            largest, group = max(largest, after), max(group, after - before)
        assert conn.execute("SELECT count(*) FROM events").fetchone()[0] == 60_000
    finally:
        checkpointer.stop()
        conn.close()
    assert checkpointer.caught_up > 0  # the WAL did start over
    assert checkpointer.catch_up_frames * 20 < checkpointer.copied_here
    assert largest <= checkpointer.limit_bytes + group
