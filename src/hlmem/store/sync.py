"""The blocking side of the store: what works on a plain DB-API connection, with no event loop.

It holds the named queries (``sql/queries*.sql``, loaded once into :data:`QUERIES`, and their
JSON-array forms), the packaged migrations, the choice of SQLite module, :func:`connect_sync`
and :func:`transact_sync`, the thread-side views :class:`SyncTx` and :class:`SyncReader`, and
the mapping of a module's exceptions onto hlmem errors (:class:`ErrorMap`).

:mod:`hlmem.store.db` builds its async :class:`~hlmem.store.db.Store` on these and re-exports every
name here that other modules use: import them from ``hlmem.store.db``, not from this module. The
ingest writer child (:mod:`hlmem.pipeline.writer`) and the portable export use the same pieces
on connections of their own. This module imports nothing of aiosqlite or anyio, and must not
import :mod:`hlmem.store.db` (no cycle).
"""

from __future__ import annotations

import importlib
import json
import logging
import re
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

from hlmem.config import StoreConfig
from hlmem.errors import ImmutableEvent, SchemaError, StoreBusy, StoreError

log = logging.getLogger(__name__)

Params = Sequence[Any] | dict[str, Any]
T = TypeVar("T")
R = TypeVar("R", bound=tuple[Any, ...])


def load_queries(text: str) -> dict[str, str]:
    """Split ``-- name: x`` blocks into a mapping of name -> SQL."""
    queries: dict[str, str] = {}
    name: str | None = None
    lines: list[str] = []
    for line in text.splitlines():
        if line.startswith("-- name:"):
            if name:
                queries[name] = "\n".join(lines).strip()
            name, lines = line.removeprefix("-- name:").strip(), []
        elif name is not None and not line.startswith("--"):
            lines.append(line)
    if name:
        queries[name] = "\n".join(lines).strip()
    return queries


def _sql_text(name: str) -> str:
    return resources.files("hlmem").joinpath("sql", name).read_text(encoding="utf-8")


def _all_queries() -> dict[str, str]:
    """``queries.sql`` plus every ``queries_<area>.sql`` beside it; a name defined twice is an
    error, not a silent override."""
    folder = resources.files("hlmem").joinpath("sql")
    areas = sorted(
        f.name
        for f in folder.iterdir()
        if f.name.startswith("queries_") and f.name.endswith(".sql")
    )
    names = ["queries.sql", *areas]
    out: dict[str, str] = {}
    for name in names:
        for key, sql in load_queries(_sql_text(name)).items():
            if key in out:
                raise SchemaError(f"query {key!r} is defined twice (sql/{name})")
            out[key] = sql
    return out


QUERIES = _all_queries()

# A single-row ``INSERT ... VALUES (?, ...)`` whose tail (an upsert clause) binds nothing.
_INSERT_VALUES = re.compile(
    r"^(INSERT\b[^(]*\([^()]*\))\s*VALUES\s*\(((?:[^()]|\([^()]*\))*)\)(.*)$", re.S | re.I
)
_NAMED_PARAM = re.compile(r"[:@$][A-Za-z_]")


def json_rows_form(sql: str) -> str | None:
    """The one-statement form of a single-row ``INSERT ... VALUES (?, ...)``: every row in one
    JSON array read with ``json_each``, inserted in array order.

    One statement is one ``sqlite3_step``, so the writer thread releases the GIL once for the
    whole batch instead of once per row: with ``executemany``, another busy Python thread makes
    the writer wait for the GIL after every row (measured: 2–6 ms per FTS row against ~0.1 ms).
    ``None`` when the statement has another shape (named parameters, parameters in the tail).
    """
    match = _INSERT_VALUES.match(sql.strip().rstrip(";").strip())
    if match is None:
        return None
    head, values, tail = match.groups()
    if "?" in tail or _NAMED_PARAM.search(values) or _NAMED_PARAM.search(tail):
        return None
    pieces = values.split("?")
    columns = pieces[0] + "".join(
        f"json_extract(value, '$[{i}]')" + piece for i, piece in enumerate(pieces[1:])
    )
    return f"{head}\nSELECT {columns}\nFROM json_each(?)\nWHERE true\nORDER BY key{tail}"


#: name -> the JSON-array form of every named query :func:`json_rows_form` can rewrite
JSON_QUERIES = {
    name: form for name, sql in QUERIES.items() if (form := json_rows_form(sql)) is not None
}


def json_payload(name: str, rows: list[Any]) -> str | None:
    """``rows`` as one JSON array for the JSON form of ``name``; ``None`` to bind row by row
    (one row, no JSON form, or values JSON cannot carry exactly: bytes, NaN, mappings)."""
    if len(rows) < 2 or name not in JSON_QUERIES:
        return None
    try:
        return json.dumps(rows, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError):
        return None


#: first line of a migration that must run with foreign keys off (a table rebuild)
FOREIGN_KEYS_OFF = "-- hlmem: foreign_keys=off"


def migrations() -> list[tuple[int, str, str]]:
    """(version, name, sql) of every packaged migration, in order."""
    folder = resources.files("hlmem").joinpath("sql", "migrations")
    out = []
    for item in folder.iterdir():
        if item.name.endswith(".sql"):
            version = int(item.name.split("_", 1)[0])
            out.append((version, item.name, item.read_text(encoding="utf-8")))
    return sorted(out)


def split_statements(module: ModuleType, script: str) -> list[str]:
    """Split a script into complete statements (triggers keep their inner semicolons)."""
    statements, buf = [], ""
    for line in script.splitlines(keepends=True):
        buf += line
        if module.complete_statement(buf):
            if buf.strip() and not all(
                ln.strip().startswith("--") or not ln.strip() for ln in buf.splitlines()
            ):
                statements.append(buf.strip())
            buf = ""
    if buf.strip() and any(
        ln.strip() and not ln.strip().startswith("--") for ln in buf.splitlines()
    ):
        raise SchemaError(f"incomplete SQL statement at end of script: {buf[:80]!r}")
    return statements


def sqlite_module(choice: str) -> ModuleType:
    """The DB-API module to use: ``sqlean`` when available (or asked for), else stdlib."""
    if choice in ("auto", "sqlean"):
        try:
            return importlib.import_module("sqlean")
        except ImportError:
            if choice == "sqlean":
                raise SchemaError(
                    "store.sqlite_module = 'sqlean' but sqlean-py is not installed"
                ) from None
    return sqlite3


# --- blocking helpers, shared by Store (on aiosqlite's thread) and hlmem.pipeline.writer ------


def connect_sync(
    path: str | Path, cfg: StoreConfig, module: ModuleType, *, create: bool = True
) -> tuple[Any, str | None]:
    """Open one connection with hlmem's pragmas; blocking. Return it and the sqlite-vec version
    (``None`` when not loaded: not configured, or the module cannot load extensions).

    ``create=False`` opens only an existing hlmem database: SQLite itself is told not to create
    the file, and a file without hlmem's schema is refused before anything is written to it.

    :raises StoreError: ``create=False`` and the file is not an hlmem database.
    :raises module.Error: the file cannot be opened or read (unmapped: see :class:`ErrorMap`).
    """
    if create:
        conn = module.connect(str(path), isolation_level=None, check_same_thread=False)
    else:
        uri = Path(path).absolute().as_uri() + "?mode=rw"
        conn = module.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
    try:
        conn.row_factory = module.Row
        conn.execute(f"PRAGMA busy_timeout = {int(cfg.busy_timeout_ms)}")
        if not create and not conn.execute(QUERIES["backup_is_hlmem"]).fetchone()["present"]:
            raise StoreError(f"{path} is not an hlmem database (create one with `hlmem init`)")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
    except BaseException:
        conn.close()
        raise
    vec_version: str | None = None
    if cfg.load_vec and hasattr(conn, "enable_load_extension"):
        try:
            import sqlite_vec

            conn.enable_load_extension(True)
            sqlite_vec.load(conn)
            conn.enable_load_extension(False)
            vec_version = conn.execute("SELECT vec_version() AS version").fetchone()["version"]
        except Exception as exc:  # extension missing or not loadable: numpy fallback
            log.info("sqlite-vec not loaded: %s", exc, extra={"action": "vec_unavailable"})
    return conn, vec_version


def transact_sync(conn: Any, fn: Callable[[SyncTx], T], *, json_rows: bool = True) -> T:
    """``BEGIN IMMEDIATE``, ``fn``, ``COMMIT`` on ``conn``; blocking. Any exception rolls back
    and is re-raised (module errors unmapped: wrap the call in ``ErrorMap.mapped``).
    ``json_rows``: as :class:`SyncTx`."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        result = fn(SyncTx(conn, json_rows=json_rows))
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return result


class SyncTx:
    """Named-query access for a function that runs on the writer thread.

    Used by :meth:`Store.run_in_transaction`, for hot paths where a whole transaction must cost
    one thread hop. Its methods block; they are only ever called on the writer's own thread.
    ``json_rows=False`` binds :meth:`executemany` row by row even where a JSON-array form
    exists: for a process whose GIL no other thread wants (the ingest writer child), where
    binding rows costs SQLite less than reading them back out of JSON.
    """

    def __init__(self, conn: Any, *, json_rows: bool = True) -> None:
        self._conn = conn
        self._json_rows = json_rows

    def execute(self, name: str, params: Params = ()) -> int:
        return int(self._conn.execute(QUERIES[name], params).rowcount)

    def executemany(self, name: str, rows: Iterable[Params]) -> int:
        """As :meth:`Tx.executemany`: one statement over a JSON array where it can."""
        rows = list(rows)
        if not rows:
            return 0
        payload = json_payload(name, rows) if self._json_rows else None
        if payload is not None:
            return int(self._conn.execute(JSON_QUERIES[name], (payload,)).rowcount)
        return int(self._conn.executemany(QUERIES[name], rows).rowcount)

    def fetchall(self, name: str, params: Params = ()) -> list[Any]:
        return list(self._conn.execute(QUERIES[name], params).fetchall())


class SyncReader:
    """Named reads for a function that runs on the reader thread (:meth:`Store.read`).

    Its method blocks; it is only ever called on the reader's own thread. Each read is a
    statement of its own (autocommit): reads of one function may see different commits.
    """

    def __init__(self, conn: Any) -> None:
        self._conn = conn

    def fetchall(self, name: str, params: Params = ()) -> list[Any]:
        return list(self._conn.execute(QUERIES[name], params).fetchall())

    def fetch_packed(self, name: str, params: Params = ()) -> list[Any]:
        """The rows of a named read that returns them packed in one value: a JSON array of
        arrays (``json_group_array(json_array(...))``), its values text, integers or null.

        The module takes each row of a statement back under the GIL, one hand-off per row, and
        on a busy machine each one waits for the threads that hold it (the event loop, a vector
        scan): 50 event rows measured 2-8 ms of wall time for ~0.4 ms of CPU. Packed, SQLite
        builds the whole answer without the GIL and Python takes it in one step. The array's
        order is not guaranteed (SQLite orders an aggregate's input only on request): a read
        that needs an order returns the column to sort by."""
        (packed,) = self._conn.execute(QUERIES[name], params).fetchone()
        rows: list[Any] = json.loads(packed)
        return rows


def records(cls: type[R], rows: Sequence[Any]) -> list[R]:
    """The ``rows`` of one statement as records of ``cls``, a ``NamedTuple`` whose fields are
    the statement's columns in their order: read by field name at a tuple's cost, for hot
    paths (a name lookup on a ``Row`` scans its columns). The columns are checked against the
    fields once, on the first row, so a statement whose columns change fails here instead of
    being read wrong.

    :raises SchemaError: the statement's columns are not the record's fields.
    """
    if not rows:
        return []
    fields: tuple[str, ...] = getattr(cls, "_fields", ())
    columns = tuple(rows[0].keys())
    if columns != fields:
        raise SchemaError(f"{cls.__name__} has fields {fields}, the rows columns {columns}")
    new = tuple.__new__
    return [new(cls, r) for r in rows]


class ErrorMap:
    """Translate the active module's exceptions into hlmem errors.

    The module's own classes: ``sqlean``'s exceptions are not the stdlib ``sqlite3``'s (a
    corrupt file raises ``sqlean.dbapi2.DatabaseError``), so catching one module's classes lets
    the other's through."""

    def __init__(self, module: ModuleType) -> None:
        self.module = module

    @contextmanager
    def mapped(self, context: str = "") -> Iterator[None]:
        """Map the module's errors raised in the block; ``context`` prefixes their message
        (e.g. ``"backup: memory.db: "``)."""
        try:
            yield
        except self.module.IntegrityError as exc:
            if "immutable" in str(exc):
                raise ImmutableEvent(context + str(exc)) from exc
            raise StoreError(context + str(exc)) from exc
        except self.module.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                raise StoreBusy(context + str(exc)) from exc
            if "immutable" in str(exc):
                raise ImmutableEvent(context + str(exc)) from exc
            raise StoreError(context + str(exc)) from exc
        except self.module.DatabaseError as exc:  # a corrupt file, not a database, ...
            raise StoreError(context + str(exc)) from exc
