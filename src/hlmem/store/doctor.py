"""``hlmem doctor --db FILE``: whether a database file is sound, checked without changing it.

:func:`check_database` opens an existing file (never creating one) on a plain connection of its
own, inside one transaction that is rolled back, and runs four checks, each cheap next to a
backup of the same file:

- **integrity**: ``PRAGMA quick_check`` (pages, records, index sizes; not index contents);
- **schema**: the migrations recorded against those this version ships, then, when they agree,
  every table, index and trigger against ``sql/schema.sql`` (the schema the migrations yield,
  compared as ``tests/test_store.py`` compares a fresh store);
- **full-text index**: the FTS5 ``integrity-check`` of each full-text table, against the rows it
  indexes (it is written as an INSERT: the rollback keeps the file as it was; when another
  process holds the write lock it is skipped, and said so);
- **foreign keys**: ``PRAGMA foreign_key_check``, the rows whose parent is gone.

A check that cannot run on a damaged file reports the database's own error as its finding. The
report is healthy when no check found a problem. The checks block: the command runs them in a
worker thread.
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from hlmem.config import StoreConfig
from hlmem.errors import StoreError
from hlmem.store.db import normalize_schema
from hlmem.store.sync import QUERIES, migrations, sqlite_module

Status = Literal["ok", "problem", "skipped"]

#: lines of ``PRAGMA quick_check`` and of each list of names kept in a finding
MAX_FINDINGS = 10
_OBJECT = re.compile(
    r"^CREATE (?:UNIQUE |VIRTUAL )?(TABLE|INDEX|TRIGGER|VIEW) (?:IF NOT EXISTS )?[\"'`\[]?(\w+)",
    re.I,
)
_FTS_TABLES = (
    "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL TABLE%'"
    " AND lower(sql) LIKE '%using fts5%' ORDER BY name"
)


class Check(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    status: Status
    detail: str


class DatabaseReport(BaseModel):
    model_config = ConfigDict(frozen=True)

    path: str
    healthy: bool
    checks: tuple[Check, ...]


def check_database(path: Path, cfg: StoreConfig) -> DatabaseReport:
    """Check the database file at ``path`` (module docstring); blocking.

    :raises StoreError: no such file (nothing is created).
    """
    if not path.exists():
        raise StoreError(f"no such database: {path}")
    module = sqlite_module(cfg.sqlite_module)
    try:
        conn = module.connect(path.absolute().as_uri() + "?mode=rw", uri=True, isolation_level=None)
    except module.Error as exc:
        return _report(path, [Check(name="integrity", status="problem", detail=str(exc))])
    try:
        conn.row_factory = module.Row
        conn.execute(f"PRAGMA busy_timeout = {int(cfg.busy_timeout_ms)}")
        conn.execute("BEGIN")
        checks = [_integrity(conn, module)]
        if checks[0].status == "ok" or "not a database" not in checks[0].detail:
            checks += [_schema(conn, module), _fts(conn, module), _foreign_keys(conn, module)]
    finally:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        conn.close()
    return _report(path, checks)


def _report(path: Path, checks: list[Check]) -> DatabaseReport:
    healthy = all(c.status != "problem" for c in checks)
    return DatabaseReport(path=str(path), healthy=healthy, checks=tuple(checks))


def _names(items: list[str]) -> str:
    more = f" (+{len(items) - MAX_FINDINGS} more)" if len(items) > MAX_FINDINGS else ""
    return ", ".join(items[:MAX_FINDINGS]) + more


def _integrity(conn: Any, module: Any) -> Check:
    try:
        lines = [r["quick_check"] for r in conn.execute(f"PRAGMA quick_check({MAX_FINDINGS})")]
    except module.Error as exc:  # too damaged for the check to finish
        return Check(name="integrity", status="problem", detail=f"quick_check: {exc}")
    if lines == ["ok"]:
        return Check(name="integrity", status="ok", detail="quick_check: ok")
    found = "; ".join(part for line in lines for part in line.splitlines())
    return Check(name="integrity", status="problem", detail="quick_check: " + found)


def _schema(conn: Any, module: Any) -> Check:
    try:
        if not conn.execute(QUERIES["backup_is_hlmem"]).fetchone()["present"]:
            return Check(
                name="schema", status="problem", detail="no schema_migrations: not hlmem's"
            )
        applied = {int(r["version"]) for r in conn.execute("SELECT version FROM schema_migrations")}
        rows = conn.execute(
            "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%'"
        ).fetchall()
    except module.Error as exc:
        return Check(name="schema", status="problem", detail=str(exc))
    known = {v for v, _, _ in migrations()}
    if applied - known:
        detail = f"migrations {sorted(applied - known)} are unknown to this hlmem (a newer one)"
        return Check(name="schema", status="problem", detail=detail)
    if known - applied:
        detail = f"migrations {sorted(known - applied)} not applied: run `hlmem migrate`"
        return Check(name="schema", status="problem", detail=detail)
    findings = _schema_differences([r["sql"] for r in rows])
    if findings:
        return Check(name="schema", status="problem", detail="; ".join(findings))
    detail = f"migrations {min(known)}-{max(known)} applied; tables, indexes and triggers as in "
    return Check(name="schema", status="ok", detail=detail + "schema.sql")


def _schema_differences(statements: list[str]) -> list[str]:
    """What differs between the file's CREATE ``statements`` and ``sql/schema.sql``, by kind of
    difference (missing, unexpected, different), each naming the objects."""
    shipped = resources.files("hlmem").joinpath("sql", "schema.sql").read_text(encoding="utf-8")
    want = _objects(shipped)
    have = _objects("".join(f"{sql};\n\n" for sql in statements))  # as Store.schema_dump does
    return [
        f"{label}: {_names(names)}"
        for label, names in (
            ("missing", sorted(set(want) - set(have))),
            ("unexpected", sorted(set(have) - set(want))),
            ("different", sorted(k for k in set(want) & set(have) if want[k] != have[k])),
        )
        if names
    ]


def _objects(text: str) -> dict[str, str]:
    """``"index jobs_ready"`` -> its statement, whitespace folded, for each CREATE in ``text``."""
    out: dict[str, str] = {}
    for statement in normalize_schema(text):
        match = _OBJECT.match(statement)
        if match is not None:
            out[f"{match.group(1).lower()} {match.group(2)}"] = statement
    return out


def _fts(conn: Any, module: Any) -> Check:
    try:
        tables = [r["name"] for r in conn.execute(_FTS_TABLES)]
    except module.Error as exc:
        return Check(name="full-text index", status="problem", detail=str(exc))
    bad: list[str] = []
    for table in tables:
        try:
            # rank 1: also compare the index with the rows of its external content table
            conn.execute(f"INSERT INTO {table} ({table}, rank) VALUES ('integrity-check', 1)")
        except module.OperationalError as exc:
            # The check is written as an INSERT: it needs the write lock and a writable file.
            if any(word in str(exc) for word in ("locked", "busy", "readonly")):
                why = (
                    "the file is read-only" if "readonly" in str(exc) else "another process writes"
                )
                detail = f"not checked: {why} ({exc})"
                return Check(name="full-text index", status="skipped", detail=detail)
            bad.append(f"{table}: integrity-check failed: {exc}")
        except module.Error as exc:
            bad.append(f"{table}: integrity-check failed: {exc}")
    if bad:
        return Check(name="full-text index", status="problem", detail="; ".join(bad))
    detail = f"{_names(tables) or 'no full-text tables'}: integrity-check passed"
    return Check(name="full-text index", status="ok", detail=detail)


def _foreign_keys(conn: Any, module: Any) -> Check:
    try:
        rows = conn.execute("PRAGMA foreign_key_check").fetchall()
    except module.Error as exc:
        return Check(name="foreign keys", status="problem", detail=str(exc))
    if not rows:
        return Check(name="foreign keys", status="ok", detail="no orphan rows")
    counts: dict[str, int] = {}
    for r in rows:
        key = f"{r['table']} -> {r['parent']}"
        counts[key] = counts.get(key, 0) + 1
    listed = [f"{key} ({n})" for key, n in sorted(counts.items())]
    detail = f"{len(rows)} orphan row(s): {_names(listed)}"
    return Check(name="foreign keys", status="problem", detail=detail)


def render(report: DatabaseReport) -> str:
    """The report as ``hlmem doctor`` prints it."""
    lines = [f"database: {report.path}"]
    lines += [f"  {c.name:<16} {c.status:<8} {c.detail}" for c in report.checks]
    problems = sum(c.status == "problem" for c in report.checks)
    lines.append("healthy" if report.healthy else f"{problems} problem(s) found")
    return "\n".join(lines)
