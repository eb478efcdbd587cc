"""Bad paths, corrupt files and closed pipes, through the real ``hlmem`` command line.

A mistyped ``--db`` must not create a database: only the commands in ``hlmem.cli.app.CREATES`` may
create the file, every other one says it does not exist (exit 1) and leaves the folder as it
was, ``-wal`` and ``-shm`` included. A corrupt or foreign file, a directory or an unreachable
place gives one line on stderr and exit 1, never a traceback (``hlmem()`` of ``test_cli``
asserts that for every run). A reader that goes away (``hlmem recall ... | head``) ends the
command quietly with exit 141. The corrupt files are real stores made by ``hlmem ingest``, then
damaged on disk.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from helpers import connect_raw, rows
from test_cli import VALID, hlmem, jsonl, ok_json

import hlmem as hlmem_lib
from hlmem.cli import CREATES, EXIT_CODES, build_parser
from hlmem.config import StoreConfig
from hlmem.errors import StoreError
from hlmem.store import Store

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")

#: every command that takes --db but may not create it, with the arguments it needs
READERS: list[list[str]] = [
    ["migrate"],
    ["worker", "--drain"],
    ["jobs", "list"],
    ["jobs", "retry"],
    ["jobs", "purge"],
    ["stats"],
    ["recall", "我的猫叫什么？"],
    ["recall", "where is the production database?"],
    ["claims"],
    ["ops", "report"],
    ["forget", "--claim", "cl_nothing"],
    ["correct", "cl_nothing", "北京"],
    ["explain", "claim", "cl_nothing"],
    ["maintain"],
    ["export", "out.jsonl"],
    ["backup", "out.db"],
    ["doctor"],
]
#: the commands that never open a database
NO_DB = {"quickstart", "sim-provider"}


def top_commands() -> set[str]:
    parser = build_parser()
    (sub,) = [a for a in parser._actions if a.dest == "command"]
    assert isinstance(sub.choices, dict)
    return set(sub.choices)


def test_every_command_is_either_a_reader_a_creator_or_needs_no_database() -> None:
    readers = {argv[0] for argv in READERS}
    assert not readers & CREATES
    assert readers | CREATES | NO_DB == top_commands()


@pytest.mark.parametrize("argv", READERS, ids=" ".join)
def test_a_missing_database_is_refused_and_never_created(tmp_path: Path, argv: list[str]) -> None:
    before = sorted(os.listdir(tmp_path))
    proc = hlmem("--db", "missing.db", *argv, cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.splitlines() == [
        "hlmem: error: no such database: missing.db (create one with `hlmem init`)"
    ]
    assert proc.stdout == ""
    assert sorted(os.listdir(tmp_path)) == before  # no missing.db, -wal, -shm, out.*


def test_db_after_the_command_is_refused_the_same_way(tmp_path: Path) -> None:
    proc = hlmem("doctor", "--db", "nowhere/missing.db", cwd=tmp_path)
    assert proc.returncode == 1
    assert "no such database: nowhere/missing.db" in proc.stderr
    assert os.listdir(tmp_path) == []


def test_the_creating_commands_create_the_file(tmp_path: Path) -> None:
    assert hlmem("--db", "a.db", "init", cwd=tmp_path).returncode == 0
    events = jsonl(tmp_path / "events.jsonl", VALID)
    assert hlmem("--db", "b.db", "ingest", events, cwd=tmp_path).returncode == 0
    said = hlmem("--db", "c.db", "remember", "user", "city", "杭州", cwd=tmp_path)
    assert said.returncode == 0, said.stderr
    assert hlmem("--db", "c.db", "export", "c.jsonl", cwd=tmp_path).returncode == 0
    assert hlmem("--db", "d.db", "import", "c.jsonl", cwd=tmp_path).returncode == 0
    assert hlmem("--db", "c.db", "backup", "c.bak", cwd=tmp_path).returncode == 0
    assert hlmem("--db", "e.db", "restore", "c.bak", cwd=tmp_path).returncode == 0
    for name, events_stored in [("a", 0), ("b", len(VALID)), ("c", 1), ("d", 1), ("e", 1)]:
        stats = ok_json(hlmem("--db", f"{name}.db", "stats", "--json", cwd=tmp_path))
        assert stats["events"] == events_stored, name


def test_a_foreign_sqlite_file_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    other = tmp_path / "notes.db"
    conn = connect_raw(other)
    conn.execute("CREATE TABLE notes (body TEXT)")
    conn.execute("INSERT INTO notes VALUES ('我的笔记'), ('my notes')")
    conn.close()
    content = other.read_bytes()
    for argv in (["stats"], ["recall", "笔记"], ["export", "out.jsonl"], ["backup", "out.db"]):
        proc = hlmem("--db", other, *argv, cwd=tmp_path)
        assert proc.returncode == 1, proc.stderr
        assert proc.stderr.count("\n") == 1
        assert "is not an hlmem database" in proc.stderr, proc.stderr
    assert other.read_bytes() == content  # not migrated, not switched to WAL
    assert sorted(os.listdir(tmp_path)) == ["notes.db"]


# --- the library keeps creating by default ----------------------------------------------------


@pytest.mark.anyio
async def test_the_library_creates_unless_told_not_to(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no such database"):
        async with hlmem_lib.open(tmp_path / "absent.db", create=False):
            pass
    assert os.listdir(tmp_path) == []
    async with hlmem_lib.open(tmp_path / "new.db") as mem:
        await mem.add_event("s", "记住：周五交报告")
    async with hlmem_lib.open(tmp_path / "new.db", create=False, pipeline="external") as mem:
        assert (await mem.stats()).events == 1


# --- corrupt files, bad paths ----------------------------------------------------------------


@pytest.fixture(scope="module")
def good_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real store: the Chinese and English events of ``test_cli``, drained into claims."""
    folder = tmp_path_factory.mktemp("good")
    events = jsonl(folder / "events.jsonl", VALID * 3)
    proc = hlmem("--db", "good.db", "ingest", events, "--drain", cwd=folder)
    assert proc.returncode == 0, proc.stderr
    return folder / "good.db"


def damaged(good: Path, folder: Path, how: str) -> Path:
    """A copy of ``good`` in ``folder``, damaged ``how``."""
    db = folder / f"{how}.db"
    data = bytearray(good.read_bytes())
    if how == "header":  # the first page's header: not recognisably SQLite
        data[0:100] = b"\xa5" * 100
    elif how == "truncated":
        del data[len(data) // 3 :]
    elif how == "pages":  # the root page of every table but the schema's own: every read fails
        page = int.from_bytes(data[16:18], "big") or 65536
        roots = rows(
            good,
            "SELECT rootpage FROM sqlite_master WHERE rootpage > 1 AND tbl_name NOT IN"
            " ('schema_migrations')",
        )
        for (root,) in roots:
            start = (root - 1) * page
            data[start : start + page] = b"\x5a" * page
    elif how == "text":
        data = bytearray("这不是数据库 / not a database\n".encode())
    db.write_bytes(bytes(data))
    return db


CORRUPT_COMMANDS = [
    ["stats"],
    ["recall", "我的猫叫什么？"],
    ["claims"],
    ["backup", "copy.db"],
    ["export", "copy.jsonl"],
]


@pytest.mark.parametrize("how", ["header", "truncated", "pages", "text"])
def test_a_corrupt_database_gives_one_line_and_exit_1(
    good_store: Path, tmp_path: Path, how: str
) -> None:
    db = damaged(good_store, tmp_path, how)
    for argv in CORRUPT_COMMANDS:
        proc = hlmem("--db", db, *argv, cwd=tmp_path)
        assert proc.returncode == 1, (argv, proc.stdout, proc.stderr)
        lines = proc.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("hlmem: error: "), (argv, proc.stderr)
        assert any(
            m in lines[0] for m in ("not a database", "malformed", "is not an hlmem database")
        ), lines
        assert "Exception in thread" not in proc.stderr
        assert not (tmp_path / "copy.db").exists()
        assert not (tmp_path / "copy.jsonl").exists()


@pytest.mark.parametrize("how", ["header", "pages", "text"])
def test_restoring_a_corrupt_backup_changes_nothing(
    good_store: Path, tmp_path: Path, how: str
) -> None:
    bad = damaged(good_store, tmp_path, how)
    shutil.copyfile(good_store, tmp_path / "kept.db")
    kept = (tmp_path / "kept.db").read_bytes()
    for target in ("new.db", "kept.db"):
        proc = hlmem("--db", target, "restore", bad, cwd=tmp_path)
        assert proc.returncode == 1, proc.stderr
        lines = proc.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("hlmem: error: "), proc.stderr
    assert (tmp_path / "kept.db").read_bytes() == kept
    assert sorted(os.listdir(tmp_path)) == sorted([bad.name, "kept.db"])  # no new.db left


@pytest.mark.parametrize("where", ["directory", "under a file", "unreachable"])
@pytest.mark.parametrize("argv", [["init"], ["stats"], ["doctor"]], ids=" ".join)
def test_a_path_that_cannot_be_a_database_gives_one_line(
    tmp_path: Path, where: str, argv: list[str]
) -> None:
    (tmp_path / "a-folder").mkdir()
    (tmp_path / "a-file").write_text("x", encoding="utf-8")
    path = {
        "directory": "a-folder",
        "under a file": "a-file/x.db",
        "unreachable": "/proc/hlmem-nowhere/x.db",
    }[where]
    proc = hlmem("--db", path, *argv, cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "Exception in thread" not in proc.stderr
    assert "Event loop is closed" not in proc.stderr
    if argv == ["doctor"] and where == "directory":  # it exists: doctor reports what it found
        assert "unable to open database file" in proc.stdout
    else:
        assert len(proc.stderr.splitlines()) == 1, proc.stderr
        assert proc.stderr.startswith("hlmem: error: ")
    assert sorted(os.listdir(tmp_path)) == ["a-file", "a-folder"]


@pytest.mark.anyio
async def test_a_failed_open_leaves_no_sqlite_thread_behind(tmp_path: Path) -> None:
    """The cause of "Event loop is closed": aiosqlite's thread outliving a failed connect."""
    garbage = tmp_path / "garbage.db"
    garbage.write_text("not a database\n", encoding="utf-8")
    (tmp_path / "a-file").write_text("x", encoding="utf-8")
    for path in (garbage, tmp_path, tmp_path / "a-file" / "x.db"):
        before = set(threading.enumerate())
        with pytest.raises(StoreError, match="cannot open"):
            await Store.open(path, StoreConfig())
        # no await since the failure: a thread still alive now would call back into the loop
        left = [
            t
            for t in threading.enumerate()
            if t not in before and t.is_alive() and "_connection_worker_thread" in t.name
        ]
        assert left == [], path


# --- a reader that goes away ------------------------------------------------------------------


def test_recall_into_a_closed_pipe_ends_quietly_with_141(good_store: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HLMEM_")}
    for query in ("我的猫叫什么？", "production database"):
        proc = subprocess.Popen(
            [sys.executable, "-m", "hlmem", "--db", str(good_store), "recall", query, "--json"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=tmp_path,
        )
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()  # like `| head` that has read enough: every write meets EPIPE
        err = proc.stderr.read().decode("utf-8")
        proc.stderr.close()
        assert proc.wait(timeout=120) == 141, err
        assert err == "", err  # no BrokenPipeError, no "Exception ignored"


# --- the exit codes are documented ------------------------------------------------------------


def test_every_exit_code_is_documented_in_help_docstring_and_readme() -> None:
    import hlmem.cli.app

    help_text = build_parser().format_help()
    assert "exit codes:" in help_text
    section = README[README.index("## Command line") :]
    section = section[: section.index("\n## ", 3)]
    for code in EXIT_CODES:
        assert f"  {code} " in help_text, code
        assert f"- {code}: " in (hlmem.cli.app.__doc__ or ""), code
        assert f"`{code}`" in section, code
