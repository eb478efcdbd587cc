"""SQLite: connections, transactions, migrations, WAL checkpointing and the file's health.

The async :class:`Store` with its one writer and group commit (``db``); what works on a plain
connection without the event loop, named queries and migrations (``sync``); the checkpointer
thread that keeps the WAL bounded (``wal``); ``hlmem doctor``'s checks (``doctor``).
"""

from __future__ import annotations

from hlmem.store.db import Store, Tx, fresh_schema, normalize_schema
from hlmem.store.doctor import check_database, render
from hlmem.store.sync import (
    JSON_QUERIES,
    QUERIES,
    ErrorMap,
    SyncReader,
    SyncTx,
    connect_sync,
    json_rows_form,
    migrations,
    records,
    sqlite_module,
    transact_sync,
)
from hlmem.store.wal import Checkpointer

__all__ = [
    "JSON_QUERIES",
    "QUERIES",
    "Checkpointer",
    "ErrorMap",
    "Store",
    "SyncReader",
    "SyncTx",
    "Tx",
    "check_database",
    "connect_sync",
    "fresh_schema",
    "json_rows_form",
    "migrations",
    "normalize_schema",
    "records",
    "render",
    "sqlite_module",
    "transact_sync",
]
