"""``hlmem doctor --db FILE`` on real stores, sound and damaged, through the real command line.

The store is made by ``hlmem ingest --drain`` (Chinese and English events, claims, full-text rows,
vectors); each test damages a copy the way it names (raw SQL on a plain connection, or bytes on
disk) and checks what the doctor reports, its exit code, and that it changed nothing.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from helpers import connect_raw, rows, scalar
from test_cli import VALID, hlmem, jsonl

CHECKS = ["integrity", "schema", "full-text index", "foreign keys"]


@pytest.fixture(scope="module")
def sound(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("sound")
    events = jsonl(folder / "events.jsonl", VALID * 2)
    proc = hlmem("--db", "good.db", "ingest", events, "--drain", cwd=folder)
    assert proc.returncode == 0, proc.stderr
    db = folder / "good.db"
    assert scalar(db, "SELECT count(*) FROM claims") > 0
    assert scalar(db, "SELECT count(*) FROM recall_docs") > 0
    return db


@pytest.fixture
def db(sound: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "memory.db"
    shutil.copyfile(sound, copy)
    return copy


def doctor(db: Path, **env: str) -> tuple[int, dict[str, Any], str]:
    """Exit code, the JSON report's database part by check name, and the text report."""
    as_json = hlmem("doctor", "--db", db, "--json", cwd=db.parent, env=env)
    as_text = hlmem("--db", db, "doctor", cwd=db.parent, env=env)
    assert as_json.returncode == as_text.returncode
    assert as_json.stderr == as_text.stderr == ""
    report = json.loads(as_json.stdout)["database"]
    assert [c["name"] for c in report["checks"]][:1] == ["integrity"]
    by_name = {c["name"]: c for c in report["checks"]}
    assert report["healthy"] is (as_json.returncode == 0)
    return as_json.returncode, by_name, as_text.stdout


def statuses(checks: dict[str, Any]) -> dict[str, str]:
    return {name: c["status"] for name, c in checks.items()}


def raw(db: Path, *statements: str) -> None:
    conn = connect_raw(db)
    try:
        conn.execute("PRAGMA foreign_keys = OFF")
        for sql in statements:
            conn.execute(sql)
    finally:
        conn.close()


def test_a_sound_store_is_healthy_and_left_untouched(db: Path) -> None:
    before = db.read_bytes()
    code, checks, text = doctor(db)
    assert code == 0, text
    assert statuses(checks) == dict.fromkeys(CHECKS, "ok")
    assert "schema.sql" in checks["schema"]["detail"]
    assert "recall_fts" in checks["full-text index"]["detail"]
    assert text.rstrip().endswith("healthy")
    assert db.read_bytes() == before
    assert sorted(os.listdir(db.parent)) == ["memory.db"]


def test_damaged_pages_are_found_by_quick_check(db: Path) -> None:
    data = bytearray(db.read_bytes())
    page = int.from_bytes(data[16:18], "big") or 65536
    (root,) = rows(db, "SELECT rootpage FROM sqlite_master WHERE name = 'events'")[0]
    data[(root - 1) * page : root * page] = b"\x5a" * page
    db.write_bytes(bytes(data))
    code, checks, text = doctor(db)
    assert code == 1
    assert checks["integrity"]["status"] == "problem"
    assert checks["integrity"]["detail"].startswith("quick_check: ")
    assert "\n" not in checks["integrity"]["detail"]
    assert "problem(s) found" in text


def test_a_dropped_index_and_a_stray_table_are_named(db: Path) -> None:
    raw(db, "DROP INDEX jobs_ready", "CREATE TABLE scratch (x)")
    code, checks, _ = doctor(db)
    assert code == 1
    assert statuses(checks) == {**dict.fromkeys(CHECKS, "ok"), "schema": "problem"}
    assert checks["schema"]["detail"] == "missing: index jobs_ready; unexpected: table scratch"


def test_a_changed_trigger_is_named(db: Path) -> None:
    (sql,) = rows(db, "SELECT sql FROM sqlite_master WHERE name = 'events_no_update'")[0]
    raw(db, "DROP TRIGGER events_no_update", sql.replace("BEGIN", "WHEN 0 BEGIN", 1))
    code, checks, _ = doctor(db)
    assert code == 1
    assert checks["schema"]["detail"] == "different: trigger events_no_update"


def test_a_pending_migration_is_reported_not_applied(db: Path) -> None:
    last = scalar(db, "SELECT max(version) FROM schema_migrations")
    # the one before it (numbers may skip: a migration is numbered when its branch starts)
    previous = scalar(db, f"SELECT max(version) FROM schema_migrations WHERE version < {last}")
    raw(db, f"DELETE FROM schema_migrations WHERE version = {last}")
    code, checks, _ = doctor(db)
    assert code == 1
    assert checks["schema"]["detail"] == f"migrations [{last}] not applied: run `hlmem migrate`"
    assert scalar(db, "SELECT max(version) FROM schema_migrations") == previous  # not migrated


def test_orphan_rows_are_counted_by_table(db: Path) -> None:
    raw(
        db,
        "INSERT INTO evidence (claim_id, event_id, quote, start_char, end_char)"
        " VALUES ('cl_gone', 'ev_gone', '我的猫叫小白', 0, 6)",
    )
    code, checks, _ = doctor(db)
    assert code == 1
    assert statuses(checks) == {**dict.fromkeys(CHECKS, "ok"), "foreign keys": "problem"}
    detail = checks["foreign keys"]["detail"]
    assert detail.startswith("2 orphan row(s): ")
    assert "evidence -> claims (1)" in detail and "evidence -> events (1)" in detail


def test_a_full_text_index_out_of_step_with_its_rows(db: Path) -> None:
    raw(db, "INSERT INTO recall_fts (rowid, body, ns) VALUES (999999, 'ghost 幽灵', 'ns0')")
    code, checks, _ = doctor(db)
    assert code == 1
    assert statuses(checks) == {**dict.fromkeys(CHECKS, "ok"), "full-text index": "problem"}
    assert checks["full-text index"]["detail"].startswith("recall_fts: integrity-check failed")


def test_the_full_text_check_is_skipped_while_another_process_writes(db: Path) -> None:
    writer = connect_raw(db)
    try:
        writer.execute("BEGIN IMMEDIATE")  # held for the whole doctor run
        code, checks, _ = doctor(db, HLMEM_STORE__BUSY_TIMEOUT_MS="50")
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert code == 0
    assert checks["full-text index"]["status"] == "skipped"
    assert checks["full-text index"]["detail"].startswith("not checked: another process")


def test_files_that_are_no_hlmem_store(tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("我的笔记 / my notes\n", encoding="utf-8")
    code, checks, _ = doctor(text)
    assert code == 1
    assert checks == {
        "integrity": {
            "name": "integrity",
            "status": "problem",
            "detail": "quick_check: file is not a database",
        }
    }
    other = tmp_path / "other.db"
    conn = connect_raw(other)
    conn.execute("CREATE TABLE notes (body TEXT)")
    conn.close()
    code, checks, _ = doctor(other)
    assert code == 1
    assert checks["schema"]["detail"] == "no schema_migrations: not hlmem's"
    assert sorted(os.listdir(tmp_path)) == ["notes.txt", "other.db"]
