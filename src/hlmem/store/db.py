"""SQLite storage: connections, transactions, migrations and the named queries.

The store owns every connection and every SQL statement (the statements live in
``sql/queries.sql``; the schema in ``sql/migrations``). There is exactly one writer connection,
guarded by an ``anyio.Lock``; ``transaction()`` issues ``BEGIN IMMEDIATE`` on it and a nested
call becomes a ``SAVEPOINT``. Reads go through a separate reader connection, which WAL lets run
beside the writer. The store never decides *what* to write: queue, ingest and stages do, by name.

SQLite module: the machine's stdlib ``sqlite3`` may be too old and unable to load extensions,
so by default the store uses ``sqlean`` (a sqlite3-compatible module with its own modern SQLite)
and loads sqlite-vec into it. When that module is missing (or ``store.sqlite_module = "stdlib"``)
the stdlib is used without extensions and vector search falls back to numpy. Each module has its
own exception classes and ``Row``: the store catches and uses the module's own.

The blocking, thread-side pieces (named queries, migrations files, the module choice,
``connect_sync``/``transact_sync``, ``SyncTx``/``SyncReader``, error mapping) live in
:mod:`hlmem.store.sync`; the package re-exports both modules' public names.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

import aiosqlite
import anyio

from hlmem.clock import SystemClock, iso
from hlmem.config import StoreConfig
from hlmem.errors import ClosedError, SchemaError, StoreError
from hlmem.store.sync import (
    FOREIGN_KEYS_OFF,
    JSON_QUERIES,
    QUERIES,
    ErrorMap,
    Params,
    SyncReader,
    SyncTx,
    connect_sync,
    json_payload,
    migrations,
    split_statements,
    sqlite_module,
    transact_sync,
)
from hlmem.store.wal import Checkpointer

log = logging.getLogger(__name__)

MIN_SQLITE = (3, 35, 0)  # RETURNING
T = TypeVar("T")

__all__ = [
    "MIN_SQLITE",
    "SCHEMA_HEADER",
    "Capabilities",
    "Store",
    "Tx",
    "fresh_schema",
    "normalize_schema",
]


@dataclass(frozen=True)
class Capabilities:
    driver: str
    sqlite_version: str
    vec_version: str | None


class Tx:
    """Named-query access inside a transaction on the writer connection."""

    def __init__(self, conn: aiosqlite.Connection, errors: ErrorMap) -> None:
        self._conn = conn
        self._errors = errors

    async def execute(self, name: str, params: Params = ()) -> int:
        """Run one named statement; return the number of rows it changed."""
        with self._errors.mapped():
            cur = await self._conn.execute(QUERIES[name], params)
            count = cur.rowcount
            await cur.close()
            return count

    async def executemany(self, name: str, rows: Iterable[Params]) -> int:
        """Run one named statement for each row; a single-row INSERT runs once, over all
        rows as one JSON array (:func:`json_rows_form`). Return the rows changed."""
        rows = list(rows)
        if not rows:
            return 0
        with self._errors.mapped():
            payload = json_payload(name, rows)
            if payload is not None:
                cur = await self._conn.execute(JSON_QUERIES[name], (payload,))
            else:
                cur = await self._conn.executemany(QUERIES[name], rows)
            count = cur.rowcount
            await cur.close()
            return count

    async def fetchall(self, name: str, params: Params = ()) -> list[Any]:
        with self._errors.mapped():
            return list(await self._conn.execute_fetchall(QUERIES[name], params))


class Store:
    """One SQLite file: a writer connection (transactions) and a reader connection."""

    def __init__(
        self,
        path: Path,
        cfg: StoreConfig,
        module: ModuleType,
        writer: aiosqlite.Connection,
        reader: aiosqlite.Connection,
        caps: Capabilities,
    ) -> None:
        self.path = path
        self.cfg = cfg
        self.module = module
        self.caps = caps
        self._writer = writer
        self._reader = reader
        self._errors = ErrorMap(module)
        # fast_acquire: an uncontended acquire does not yield, so the group commit is not
        # queued behind every ready producer task before it may start.
        self._lock = anyio.Lock(fast_acquire=True)
        self._checkpointer: Checkpointer | None = None
        self._tx_depth: contextvars.ContextVar[int] = contextvars.ContextVar(
            f"hlmem_tx_{id(self)}", default=0
        )
        self._closed = False
        #: the migrations this open applied (a caller derives what SQL could not, e.g. 0004's
        #: full-text rows of the items already there)
        self.migrated_now: list[int] = []

    @classmethod
    async def open(
        cls, path: str | Path, cfg: StoreConfig, *, migrate: bool = True, create: bool = True
    ) -> Store:
        """Open (and by default migrate) the database file at ``path``.

        ``create=False`` opens only an existing hlmem database: a missing file is refused and
        never created (no ``-wal`` or ``-shm`` either), and so is a file without hlmem's schema,
        before anything is written to it (the command line's read commands open so).

        :raises SchemaError: SQLite too old, or the file has migrations this version lacks.
        :raises StoreError: no such file (``create=False``), or it cannot be opened: not a
            database, not an hlmem database (``create=False``), corrupt, a directory, no access.
        """
        path = Path(path)
        module = sqlite_module(cfg.sqlite_module)
        version = tuple(int(p) for p in module.sqlite_version.split("."))
        if version < MIN_SQLITE:
            raise SchemaError(f"SQLite {module.sqlite_version} is older than 3.35 (RETURNING)")
        if not create and not path.exists():
            raise StoreError(f"no such database: {path} (create one with `hlmem init`)")
        vec_version: list[str | None] = [None]

        def connector() -> Any:
            conn, vec_version[0] = connect_sync(path, cfg, module, create=create)
            return conn

        errors = ErrorMap(module)
        with errors.mapped(f"cannot open {path}: "):
            writer = await _connect(connector, cfg.iter_chunk_size)
        try:
            with errors.mapped(f"cannot open {path}: "):
                reader = await _connect(connector, cfg.iter_chunk_size)
        except BaseException:
            await writer.close()
            raise
        caps = Capabilities(module.__name__, module.sqlite_version, vec_version[0])
        store = cls(path, cfg, module, writer, reader, caps)
        try:
            with errors.mapped(f"{path}: "):
                if migrate:
                    store.migrated_now = await store.migrate()
                else:
                    await store.check_schema()
                await store._start_checkpointer()
        except BaseException:
            await store.close()
            raise
        log.info(
            "store opened",
            extra={"action": "store_opened", "path": str(path), "driver": caps.driver},
        )
        return store

    async def _start_checkpointer(self) -> None:
        """WAL checkpoints move from the writer's commits to a thread of their own: with
        SQLite's automatic checkpoint, the commit that takes the WAL past 1,000 pages copies
        them into the database (with an fsync) before it returns, and every transaction queued
        behind it waits."""
        cfg = self.cfg.model_copy(update={"load_vec": False})
        with self._errors.mapped():
            conn = await anyio.to_thread.run_sync(
                lambda: connect_sync(self.path, cfg, self.module)[0]
            )
        self._checkpointer = Checkpointer(conn, self.cfg.wal_restart_frames)
        self._checkpointer.start()
        await self._writer.execute("PRAGMA wal_autocheckpoint = 0")

    def _committed(self) -> None:
        if self._checkpointer is not None:
            self._checkpointer.nudge()

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with anyio.CancelScope(shield=True):
            if self._checkpointer is not None:
                await anyio.to_thread.run_sync(self._checkpointer.stop)
            await self._reader.close()
            await self._writer.close()

    # --- transactions -------------------------------------------------------------------------

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Tx]:
        """A write transaction: ``BEGIN IMMEDIATE``, or a ``SAVEPOINT`` when nested.

        Any exception (cancellation included) rolls back and re-raises. Commit and rollback run
        shielded: an aiosqlite call keeps running on its thread even when its awaiter is
        cancelled, so we must see it through.

        :raises StoreBusy: another process held the write lock past busy_timeout.
        """
        if self._closed:
            raise ClosedError("store is closed")
        depth = self._tx_depth.get()
        if depth:
            name = f"sp{depth}"
            token = self._tx_depth.set(depth + 1)
            try:
                await self._writer.execute(f"SAVEPOINT {name}")
                try:
                    yield Tx(self._writer, self._errors)
                except BaseException:
                    with anyio.CancelScope(shield=True):
                        await self._writer.execute(f"ROLLBACK TO {name}")
                        await self._writer.execute(f"RELEASE {name}")
                    raise
                with anyio.CancelScope(shield=True):
                    await self._writer.execute(f"RELEASE {name}")
            finally:
                self._tx_depth.reset(token)
            return
        async with self._lock:
            token = self._tx_depth.set(1)
            try:
                checkpointer = self._checkpointer
                if checkpointer is not None and checkpointer.due():
                    with anyio.CancelScope(shield=True):
                        catch_up = partial(checkpointer.catch_up, self._writer._conn)
                        await self._writer._execute(catch_up)  # type: ignore[no-untyped-call]
                try:
                    with self._errors.mapped():
                        await self._writer.execute("BEGIN IMMEDIATE")
                except BaseException:
                    # Cancelled while waiting, the BEGIN still runs on aiosqlite's thread: roll
                    # it back (queued behind it; a no-op when none began) or the connection
                    # stays inside a transaction and every later BEGIN fails.
                    with anyio.CancelScope(shield=True):
                        await self._writer.rollback()
                    raise
                try:
                    yield Tx(self._writer, self._errors)
                except BaseException:
                    with anyio.CancelScope(shield=True):
                        await self._writer.rollback()
                    raise
                with anyio.CancelScope(shield=True), self._errors.mapped():
                    await self._writer.commit()
                self._committed()
            finally:
                self._tx_depth.reset(token)

    async def run_in_transaction(self, fn: Callable[[SyncTx], T]) -> T:
        """Run ``fn`` inside ``BEGIN IMMEDIATE … COMMIT`` on the writer thread, in one hop.

        Every awaited aiosqlite call is a round trip to its thread (70-400 µs here); the group
        commit runs several statements per batch, so it hands the whole transaction over at
        once. ``fn`` must be short, synchronous and idempotent on retry like any transaction;
        an exception in it rolls back and is re-raised here. This uses aiosqlite's internal
        ``_execute`` (the function-on-the-connection-thread primitive behind all its methods),
        which the test suite exercises on every commit.

        :raises StoreBusy: another process held the write lock past busy_timeout.
        """
        if self._closed:
            raise ClosedError("store is closed")
        if self._tx_depth.get():
            raise StoreError("run_in_transaction cannot nest inside another transaction")
        writer, checkpointer = self._writer, self._checkpointer

        def run() -> T:
            if checkpointer is not None:
                checkpointer.catch_up(writer._conn)
            return transact_sync(writer._conn, fn)

        async with self._lock:
            # Once queued, the function runs to the end on the thread whatever happens to us:
            # wait for it, so that the lock is held exactly as long as the transaction is.
            with anyio.CancelScope(shield=True), self._errors.mapped():
                result: T = await writer._execute(run)  # type: ignore[no-untyped-call]
        self._committed()
        return result

    # --- reads --------------------------------------------------------------------------------

    async def fetchall(self, name: str, params: Params = ()) -> list[Any]:
        """Run a named read on the reader connection."""
        if self._closed:
            raise ClosedError("store is closed")
        with self._errors.mapped():
            return list(await self._reader.execute_fetchall(QUERIES[name], params))

    async def read(self, fn: Callable[[SyncReader], T]) -> T:
        """Run ``fn`` with the reader connection on the reader's thread, in one hop; its result.

        For a read whose next statement depends on the rows of the one before (recall: which
        entities the query names decides what is searched next): a trip to the reader thread
        costs 0.1-0.5 ms of thread hand-offs, more than small statements, and more still on a
        busy machine, where every wake-up waits for a core. ``fn`` must be short and must not
        touch the event loop; it holds the GIL while it runs Python (SQLite releases it). Reads
        queued behind it wait for it: aiosqlite runs one function at a time, in the order they
        were queued.

        :raises StoreError: a read failed (an exception of ``fn`` itself is re-raised as is).
        """
        if self._closed:
            raise ClosedError("store is closed")
        reader = self._reader
        with self._errors.mapped():
            out: T = await reader._execute(fn, SyncReader(reader._conn))  # type: ignore[no-untyped-call]
        return out

    async def scalar(self, name: str, params: Params = ()) -> Any:
        rows = await self.fetchall(name, params)
        return rows[0][0] if rows else None

    # --- schema -------------------------------------------------------------------------------

    async def applied_migrations(self) -> list[int]:
        await self._writer.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
        )
        rows = await self._writer.execute_fetchall("SELECT version FROM schema_migrations")
        return sorted(int(r["version"]) for r in rows)

    async def migrate(self) -> list[int]:
        """Apply every packaged migration not yet recorded, each in its own transaction.

        :raises SchemaError: the file records a migration this version does not know.
        """
        known = migrations()
        applied = await self.applied_migrations()
        unknown = set(applied) - {v for v, _, _ in known}
        if unknown:
            raise SchemaError(f"database has migrations {sorted(unknown)} unknown to this hlmem")
        done = []
        for version, name, sql in known:
            if version in applied:
                continue
            # A migration that rebuilds a table says so on its first line: foreign keys are
            # off while it runs (a DROP would otherwise cascade), and checked before commit.
            rebuild = sql.startswith(FOREIGN_KEYS_OFF)
            if rebuild:
                await self._writer.execute("PRAGMA foreign_keys = OFF")
            try:
                async with self.transaction():
                    # re-check under the write lock: another process may have migrated
                    rows = await self._writer.execute_fetchall(
                        "SELECT 1 FROM schema_migrations WHERE version = ?", (version,)
                    )
                    if rows:
                        continue
                    for statement in split_statements(self.module, sql):
                        with self._errors.mapped():
                            await self._writer.execute(statement)
                    if rebuild:
                        broken = list(
                            await self._writer.execute_fetchall("PRAGMA foreign_key_check")
                        )
                        if broken:
                            raise SchemaError(
                                f"migration {name} breaks foreign keys: {tuple(broken[0])}"
                            )
                    await self._writer.execute(
                        "INSERT INTO schema_migrations (version, name, applied_at)"
                        " VALUES (?, ?, ?)",
                        (version, name, iso(SystemClock().now())),
                    )
            finally:
                if rebuild:
                    await self._writer.execute("PRAGMA foreign_keys = ON")
            done.append(version)
            log.info("migrated", extra={"action": "migration_applied", "version": version})
        return done

    async def check_schema(self) -> None:
        known = {v for v, _, _ in migrations()}
        applied = set(await self.applied_migrations())
        if applied != known:
            raise SchemaError(
                f"schema out of date: applied {sorted(applied)}, known {sorted(known)}; "
                "run `hlmem migrate`"
            )

    async def schema_dump(self) -> str:
        """Every CREATE statement of the schema, ordered by type and name (``sql/schema.sql``)."""
        rows = await self._reader.execute_fetchall(
            "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%'"
            " ORDER BY type, name"
        )
        return "".join(f"{r['sql']};\n\n" for r in rows)


class _CallNamesOnly(logging.Filter):
    """Keeps aiosqlite's DEBUG records ("executing <call>") to the name of the call.

    aiosqlite logs each queued call as its ``functools.partial``, whose repr holds the SQL
    parameters: event content, with whatever secret a user said (DESIGN.md §7b: no log line
    holds one). The record keeps its place in the log, without the arguments."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple) and record.args:
            record.args = tuple(_call_name(a) for a in record.args)
        return True


def _call_name(arg: object) -> object:
    if isinstance(arg, BaseException):
        return arg
    func = getattr(arg, "func", arg)
    return getattr(func, "__qualname__", None) or type(func).__name__


_AIOSQLITE_LOG_FILTER = _CallNamesOnly()
logging.getLogger("aiosqlite").addFilter(_AIOSQLITE_LOG_FILTER)


async def _connect(connector: Callable[[], Any], iter_chunk_size: int) -> aiosqlite.Connection:
    """An aiosqlite connection made by ``connector`` on its own thread.

    When ``connector`` fails, aiosqlite queues its thread's stop but does not wait for it: the
    thread then calls back into the event loop, which may have closed by then (a command that
    fails at once), and prints "Event loop is closed". Wait for the thread here instead.
    """
    conn = aiosqlite.Connection(connector, iter_chunk_size)
    try:
        return await conn
    except BaseException:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(conn._thread.join)
        raise


SCHEMA_HEADER = (
    "-- The schema that all migrations in sql/migrations yield. Generated, and checked by\n"
    "-- tests/test_store.py; regenerate with: python -m hlmem.store > src/hlmem/sql/schema.sql\n\n"
)


async def fresh_schema(cfg: StoreConfig | None = None) -> str:
    """Migrate a new temporary database and return its schema as ``sql/schema.sql`` holds it."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        store = await Store.open(Path(tmp) / "schema.db", cfg or StoreConfig())
        try:
            return SCHEMA_HEADER + await store.schema_dump()
        finally:
            await store.close()


def normalize_schema(text: str) -> list[str]:
    """Statements with comments dropped and whitespace folded, for comparing schemas."""
    lines = [ln for ln in text.splitlines() if not ln.strip().startswith("--")]
    return [" ".join(st.split()) for st in "\n".join(lines).split(";\n") if st.strip()]
