"""Online backup and restore of a store file, with the SQLite backup API.

**Backup** copies the database on a connection of its own, in steps of :data:`BACKUP_PAGES`
pages, inside one read transaction: in WAL mode a reader never blocks the writer, and holding
one snapshot for the whole copy means the pipeline's commits meanwhile neither restart the
copy nor leak into it, so the copy is consistent (what was committed when it began) however
busy ingestion is. It is written to a temporary name, checked (``PRAGMA quick_check``) and
renamed into place. The result is a normal hlmem database; its tombstone ledger is the
source's at that moment (:attr:`BackupResult.tombstone_max_id`).

**Restore** replaces a store file's content with a backup's, and **re-applies the tombstone
ledger of the store being replaced**: everything forgotten after the backup was taken stays
forgotten. In order, nothing touching the target until the last step:

1. the target is locked exclusively (``locking_mode=EXCLUSIVE``, ``BEGIN EXCLUSIVE``): when
   any other connection has it open (an ``hlmem worker``, a server, an open ``Memory``), the
   restore is refused with :class:`~hlmem.errors.StoreBusy` and nothing changes. The lock is
   held to the end, so nothing can open the file meanwhile. Its tombstones are read;
2. the backup is copied to a staging file beside the target and migrated to this version;
3. every tombstone of the target that the staging copy lacks is written there as it was (same
   kind, key, reason and time), and each forget they record (grouped by reason and time) runs
   again with the forget cascade (:func:`hlmem.claims.forgetting.apply_forget`): claims, vectors,
   full-text rows, evidence and events go; a retraction ("forget what I just said")
   reinstates as it did;
4. the staging copy is copied over the target in one backup step (one transaction on the
   target: a crash leaves the old content or the new, never a mix) and removed.

Restoring the same backup twice gives the same content: the second run re-applies the same
forgets to the same copy.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any, cast

import anyio
from pydantic import BaseModel, ConfigDict

from hlmem.claims import SESSION_SEP, ForgetBy, ForgetPlan, apply_forget
from hlmem.clock import iso
from hlmem.config import Config, StoreConfig
from hlmem.errors import InputError, SchemaError, StoreBusy, StoreError
from hlmem.index import index_after_migration
from hlmem.lang import load_lexicon, new_id
from hlmem.store import QUERIES, ErrorMap, Store, SyncTx, connect_sync, migrations, sqlite_module

log = logging.getLogger(__name__)

#: pages copied per backup step (4 MiB at the default page size)
BACKUP_PAGES = 1024
#: pause between two backup steps, so the copy yields the GIL and the disk to the pipeline
BACKUP_SLEEP_S = 0.0
_FORGET_KINDS = ("claim", "event", "session", "query", "request")


class BackupResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    path: str
    bytes: int
    #: the highest tombstone id the backup holds (0: none)
    tombstone_max_id: int
    events: int
    claims: int


class RestoreResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    path: str
    backup: str
    #: migrations applied to the backup's schema on the way in
    migrated: tuple[int, ...]
    #: tombstones the replaced store had
    tombstones_before: int
    #: of those, the ones the backup lacked, written back and re-applied
    tombstones_reapplied: int
    #: what the re-applied forgets deleted from the backup's content
    claims_forgotten: tuple[str, ...]
    events_forgotten: tuple[str, ...]


# --- backup ---------------------------------------------------------------------------------------


def _hlmem_file(conn: Any, path: Path) -> None:
    """:raises InputError: ``path`` is not an hlmem database."""
    try:
        known = conn.execute(QUERIES["backup_is_hlmem"]).fetchone()["present"]
    except Exception as exc:
        raise InputError(f"{path} is not an SQLite database ({exc})") from None
    if not known:
        raise InputError(f"{path} is not an hlmem database (no schema_migrations)")


def backup_sync(db: Path, dest: Path, cfg: StoreConfig) -> BackupResult:
    """Copy ``db`` to ``dest`` online (module docstring); blocking: run it in a thread.

    :raises InputError: no such database, or ``dest`` exists already.
    :raises StoreError: ``db`` is not an hlmem database or cannot be read (corrupt), or the
        copy failed its check; ``dest`` is not written.
    """
    if not db.is_file():
        raise InputError(f"backup: no such database: {db}")
    if dest.exists():
        raise InputError(f"backup: {dest} exists already (choose a new file)")
    if not dest.parent.is_dir():
        raise InputError(f"backup: no such folder: {dest.parent}")
    module = sqlite_module(cfg.sqlite_module)
    tmp = dest.with_name(dest.name + ".partial")
    tmp.unlink(missing_ok=True)
    # A corrupt or foreign file raises the module's own errors: one line, never a traceback.
    with ErrorMap(module).mapped(f"backup: {db}: "):
        snap = _copy(db, tmp, dest, cfg, module)
    result = BackupResult(
        path=str(dest),
        bytes=dest.stat().st_size,
        tombstone_max_id=int(snap["tombstone_max_id"]),
        events=int(snap["events"]),
        claims=int(snap["claims"]),
    )
    log.info("backup", extra={"action": "backup", "path": str(dest), "bytes": result.bytes})
    return result


def _copy(db: Path, tmp: Path, dest: Path, cfg: StoreConfig, module: Any) -> Any:
    """Copy ``db`` through ``tmp`` (checked, synced) to ``dest``; the snapshot's counts."""
    src, _ = connect_sync(db, cfg.model_copy(update={"load_vec": False}), module, create=False)
    try:
        dst = module.connect(str(tmp), isolation_level=None)
        dst.row_factory = module.Row
        try:
            src.execute("BEGIN")  # one snapshot for every step: commits meanwhile stay out
            snap = src.execute(QUERIES["backup_snapshot"]).fetchone()
            src.backup(dst, pages=BACKUP_PAGES, sleep=BACKUP_SLEEP_S)
            src.execute("COMMIT")
            check = dst.execute("PRAGMA quick_check").fetchone()["quick_check"]
            if check != "ok":
                raise StoreError(f"backup: the copy of {db} fails its check: {_one_line(check)}")
        finally:
            dst.close()
        with tmp.open("rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, dest)
    finally:
        src.close()
        for leftover in _files(tmp):
            leftover.unlink(missing_ok=True)
    return snap


async def backup(db: Path, dest: Path, *, cfg: StoreConfig) -> BackupResult:
    """Copy the store file ``db`` to the new file ``dest`` online (module docstring): safe
    while the pipeline, workers and ingestion run on ``db``.

    :raises InputError: no such database, or ``dest`` exists already.
    :raises StoreError: ``db`` is not an hlmem database or cannot be read, or the copy failed.
    """
    return await anyio.to_thread.run_sync(backup_sync, db, dest, cfg)


def _one_line(check: str) -> str:
    """``PRAGMA quick_check``'s first row (its findings, one per line) on one line."""
    return "; ".join(check.splitlines())


def _files(db: Path) -> list[Path]:
    return [db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")]


# --- restore --------------------------------------------------------------------------------------


def _lock(db: Path, source: Path, cfg: StoreConfig) -> tuple[Any, list[Any]]:
    """An exclusive connection to ``db`` (held until closed) and the tombstones it has.

    :raises InputError: no backup at ``source``, or it is ``db`` itself.
    :raises StoreBusy: another connection has ``db`` open.
    """
    if not source.is_file():
        raise InputError(f"restore: no such backup: {source}")
    if db.exists() and source.resolve() == db.resolve():
        raise InputError("restore: the backup is the database itself")
    module = sqlite_module(cfg.sqlite_module)
    conn = module.connect(str(db), isolation_level=None, check_same_thread=False)
    try:
        conn.row_factory = module.Row  # the tombstones are read by column name
        conn.execute("PRAGMA busy_timeout = 0")
        conn.execute("PRAGMA locking_mode = EXCLUSIVE")
        try:
            conn.execute("BEGIN EXCLUSIVE")
        except module.OperationalError as exc:
            raise StoreBusy(
                f"restore: {db} is open elsewhere (a pipeline, worker, server or open memory);"
                f" stop it first ({exc})"
            ) from None
        has = conn.execute(QUERIES["backup_has_tombstones"]).fetchone()["present"]
        rows = list(conn.execute(QUERIES["restore_tombstones"]).fetchall()) if has else []
        conn.execute("COMMIT")  # the exclusive lock stays (locking_mode)
    except BaseException:
        conn.close()
        raise
    return conn, rows


def _stage(source: Path, staging: Path, cfg: StoreConfig) -> set[int]:
    """Copy the backup ``source`` to ``staging`` (checked: an hlmem database, sound); the
    migrations it has."""
    module = sqlite_module(cfg.sqlite_module)
    src = module.connect(str(source), isolation_level=None)
    try:
        src.row_factory = module.Row
        _hlmem_file(src, source)
        known = {v for v, _, _ in migrations()}
        have = {r["version"] for r in src.execute("SELECT version FROM schema_migrations")}
        if have - known:
            raise SchemaError(f"restore: {source} has migrations {sorted(have - known)} unknown")
        dst = module.connect(str(staging), isolation_level=None)
        dst.row_factory = module.Row
        try:
            src.backup(dst)
            check = dst.execute("PRAGMA quick_check").fetchone()["quick_check"]
            if check != "ok":
                raise StoreError(f"restore: {source} fails its check: {_one_line(check)}")
        finally:
            dst.close()
    finally:
        src.close()
    return have


def _copy_over(staging: Path, target: Any, cfg: StoreConfig) -> None:
    module = sqlite_module(cfg.sqlite_module)
    src = module.connect(str(staging), isolation_level=None)
    try:
        src.backup(target)  # one step: one transaction on the target
    finally:
        src.close()


def _plans(rows: Iterable[Any]) -> list[ForgetPlan]:
    """One forget plan per original forget (tombstones sharing reason and time), oldest
    first; a session's own plan for each session tombstone."""
    groups: dict[tuple[str, str], list[Any]] = {}
    for r in sorted(rows, key=lambda r: r["id"]):
        groups.setdefault((r["reason"], r["created_at"]), []).append(r)
    plans: list[ForgetPlan] = []
    for (reason, _), group in groups.items():
        by = _forget_by(reason)
        claims = frozenset(r["key"] for r in group if r["kind"] == "claim")
        events = frozenset(r["key"] for r in group if r["kind"] == "event")
        slots = frozenset(
            (r["namespace"], r["key"][len(r["namespace"]) + 1 :])
            for r in group
            if r["kind"] == "slot"
        )
        ns = group[0]["namespace"]
        plans.append(
            ForgetPlan(
                by=by,
                reason=reason,
                namespace=ns,
                claim_ids=claims,
                event_ids=events,
                restated=slots,
                reinstate=by == "request",
            )
        )
        for r in group:
            if r["kind"] == "session":
                namespace, _, session = r["key"].partition(SESSION_SEP)
                plans.append(ForgetPlan(by="session", reason=reason, session=(namespace, session)))
    return plans


def _forget_by(reason: str) -> ForgetBy:
    if reason.startswith("forget request"):
        return "request"
    word = reason.removeprefix("forget by ").split(" ", 1)[0]
    return cast(ForgetBy, word) if word in _FORGET_KINDS else "event"


def _reapply(tx: SyncTx, before: list[Any], now: str) -> tuple[int, set[str], set[str]]:
    """Write the tombstones the restored copy lacks and run their forgets again; how many,
    and the claims and events deleted."""
    pairs = json.dumps([[r["kind"], r["key"]] for r in before])
    missing = {(r["kind"], r["key"]) for r in tx.fetchall("restore_missing", (pairs,))}
    rows = [r for r in before if (r["kind"], r["key"]) in missing]
    if not rows:
        return 0, set(), set()
    tx.executemany(
        "import_tombstone",
        [
            (r["kind"], r["key"], r["namespace"], r["reason"], r["created_at"], r["blocked"])
            for r in rows
        ],
    )
    content = [
        [r["namespace"], r["key"][len(r["namespace"]) + 1 :]]
        for r in rows
        if r["kind"] == "content"
    ]
    found = {e["id"] for e in tx.fetchall("restore_content_events", (json.dumps(content),))}
    claims: set[str] = set()
    events: set[str] = set()
    plans = _plans(rows)
    if found:
        plans.append(ForgetPlan(by="event", reason="forget by content", event_ids=frozenset(found)))
    for plan in plans:
        result = apply_forget(tx, plan, now, dry_run=False)
        claims |= set(result.claim_ids)
        events |= set(result.event_ids)
    return len(rows), claims, events


async def restore(db: Path, source: Path, *, cfg: Config, now: datetime) -> RestoreResult:
    """Replace the content of the store file ``db`` with the backup ``source``, then re-apply
    the tombstones ``db`` had that the backup lacks (module docstring).

    :raises StoreBusy: ``db`` is open in another connection or process: nothing changed.
    :raises InputError: ``source`` is missing or not an hlmem database.
    :raises SchemaError: ``source`` comes from a newer hlmem.
    :raises StoreError: ``db`` or ``source`` cannot be read (corrupt): nothing changed (a target
        that did not exist is not left behind).
    """
    errors = ErrorMap(sqlite_module(cfg.store.sqlite_module))
    created = not await anyio.Path(db).exists()  # a new target: a failed restore removes it
    with errors.mapped(f"restore: {db}: "):
        guard, before = await anyio.to_thread.run_sync(_lock, db, source, cfg.store)
    staging = db.with_name(f".{db.name}.restore-{new_id('rs')}.db")
    restored = False
    try:
        with errors.mapped(f"restore: {source}: "):
            have = await anyio.to_thread.run_sync(_stage, source, staging, cfg.store)
        migrated = sorted({v for v, _, _ in migrations()} - have)
        store = await Store.open(staging, cfg.store)
        try:
            # a backup older than the full-text index: its items get their rows
            await index_after_migration(store, lexicon=load_lexicon(cfg.extractor.lexicon_paths))
            stamp = iso(now)
            count, claims, events = await store.run_in_transaction(
                lambda tx: _reapply(tx, before, stamp)
            )
        finally:
            await store.close()
        with errors.mapped(f"restore: {db}: "):
            await anyio.to_thread.run_sync(_copy_over, staging, guard, cfg.store)
        restored = True
    finally:
        await anyio.to_thread.run_sync(guard.close)
        leftovers = _files(staging) + (_files(db) if created and not restored else [])
        for leftover in leftovers:
            leftover.unlink(missing_ok=True)
    result = RestoreResult(
        path=str(db),
        backup=str(source),
        migrated=tuple(migrated),
        tombstones_before=len(before),
        tombstones_reapplied=count,
        claims_forgotten=tuple(sorted(claims)),
        events_forgotten=tuple(sorted(events)),
    )
    log.info(
        "restored",
        extra={"action": "restore", "path": str(db), "reapplied": count, "claims": len(claims)},
    )
    return result
