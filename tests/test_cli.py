"""The ``hlmem`` command line on real SQLite files.

Each test runs the program's ``main(argv)`` in this process (:func:`hlmem`: its own stdout, stderr
and stdin, a clean environment without inherited ``HLMEM_*``, its own working directory; a
Python start-up and the Chinese dictionary's load per command made this suite several minutes
longer) and checks exit codes, stdout/stderr and what the database file holds afterwards (read
with a plain ``sqlite3`` connection, only while no hlmem command has the file open). What only a
real process shows runs as one (:func:`hlmem_process`): ``python -m hlmem`` and the console
scripts here; signals, crashes and closed pipes in their own modules.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import io
import json
import logging
import os
import sqlite3
import subprocess
import sys
import threading
import warnings
from collections.abc import Iterator, Sequence
from contextlib import closing
from pathlib import Path
from typing import Any, TextIO

import pytest
from helpers import assert_consistent, count, rows

from hlmem.cli.app import main
from hlmem.store import migrations

TIMEOUT_S = 120
TEN_MB = 10 * 1024 * 1024

# Short polls so that --drain and worker runs finish quickly; set through the environment,
# which also exercises HLMEM_<SECTION>__<KEY> configuration in the CLI.
FAST_ENV = {
    "HLMEM_PIPELINE__POLL_INTERVAL_S": "0.02",
    "HLMEM_PIPELINE__DRAIN_POLL_S": "0.01",
    "HLMEM_WINDOWER__SWEEP_INTERVAL_S": "0.02",
}


def hlmem(
    *args: str | Path,
    cwd: Path,
    env: dict[str, str] | None = None,
    timeout: float = TIMEOUT_S,
    stdin: TextIO | None = None,
) -> subprocess.CompletedProcess[str]:
    """``hlmem ARGS`` run in this process (:func:`hlmem.cli.app.main`), as the program runs it:
    its own stdout and stderr, ``stdin`` (default: empty, no terminal), the environment without
    inherited ``HLMEM_*`` and the working directory ``cwd``. Called from inside an event loop
    (an async test), it runs on a thread of its own, and the loop waits as it would for a
    subprocess. A real process is what :func:`hlmem_process` runs, for what only a process
    shows: exit codes on signals, crashes, children, ``python -m hlmem`` itself."""
    argv, environment, given = [str(a) for a in args], _environment(env), stdin or io.StringIO()
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        proc = _main(argv, cwd, environment, given)
    else:
        done: list[subprocess.CompletedProcess[str]] = []
        thread = threading.Thread(
            target=lambda: done.append(_main(argv, cwd, environment, given)), name="hlmem-cli"
        )
        thread.start()
        thread.join(timeout)
        assert done, f"hlmem {argv} did not finish in {timeout} s"
        proc = done[0]
    _no_leaks(proc)
    return proc


def hlmem_process(
    *args: str | Path,
    cwd: Path,
    env: dict[str, str] | None = None,
    timeout: float = TIMEOUT_S,
    stdin: int = subprocess.DEVNULL,
) -> subprocess.CompletedProcess[str]:
    """``python -m hlmem ARGS`` as a real subprocess (what :func:`hlmem` runs in process);
    ``stdin`` a file descriptor (default: ``/dev/null``)."""
    proc = subprocess.run(
        [sys.executable, "-W", "error::ResourceWarning", "-m", "hlmem", *map(str, args)],
        cwd=cwd,
        env={**_environment(env), "PYTHONIOENCODING": "utf-8"},
        stdin=stdin,
        capture_output=True,
        encoding="utf-8",
        timeout=timeout,
        check=False,
    )
    _no_leaks(proc)
    return proc


def _environment(env: dict[str, str] | None) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("HLMEM_")}
    return {**clean, **FAST_ENV, **(env or {})}


def _no_leaks(proc: subprocess.CompletedProcess[str]) -> None:
    # every command closes what it opens, whatever its outcome
    assert "ResourceWarning" not in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr


def _main(
    argv: list[str], cwd: Path, env: dict[str, str], stdin: TextIO
) -> subprocess.CompletedProcess[str]:
    """``main(argv)`` with the process state a program starts with, restored afterwards.

    What a subprocess would print at its exit is checked here too: an object left unclosed
    (a ``ResourceWarning`` in its finaliser, collected before returning) is written to this
    stderr, and a thread the command started must have ended."""
    out, err = io.StringIO(), io.StringIO()
    before = set(threading.enumerate())
    saved_env, saved_hook = dict(os.environ), sys.unraisablehook

    def unraisable(u: Any) -> None:
        err.write(f"Exception ignored in: {u.object!r}\n{type(u.exc_value).__name__}: ")
        err.write(f"{u.exc_value}\n")

    try:
        os.environ.clear()
        os.environ.update(env)
        sys.unraisablehook = unraisable
        with (
            contextlib.chdir(cwd),
            contextlib.redirect_stdout(out),
            contextlib.redirect_stderr(err),
            _stdin(stdin),
            warnings.catch_warnings(),
        ):
            warnings.simplefilter("error", ResourceWarning)
            try:
                code = main(argv)
            except SystemExit as exc:  # argparse: usage errors (2), --help (0)
                code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
            gc.collect()
    finally:
        sys.unraisablehook = saved_hook
        os.environ.clear()
        os.environ.update(saved_env)
    for thread in set(threading.enumerate()) - before:
        if not thread.daemon and thread.name != "hlmem-cli":
            thread.join(TIMEOUT_S)  # a subprocess would wait for it at exit
            assert not thread.is_alive(), f"hlmem {argv} left {thread} running"
    return subprocess.CompletedProcess(["hlmem", *argv], code, out.getvalue(), err.getvalue())


@contextlib.contextmanager
def _stdin(stream: TextIO) -> Iterator[None]:
    saved, sys.stdin = sys.stdin, stream
    try:
        yield
    finally:
        sys.stdin = saved


def ok_json(proc: subprocess.CompletedProcess[str]) -> Any:
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def jsonl(path: Path, items: Sequence[dict[str, Any] | bytes]) -> Path:
    lines = [
        item if isinstance(item, bytes) else json.dumps(item, ensure_ascii=False).encode("utf-8")
        for item in items
    ]
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


VALID: list[dict[str, Any]] = [
    {"session_id": "zh-1", "role": "user", "content": "你好，我最近在准备一个新项目。"},
    {"session_id": "zh-1", "role": "user", "content": "记住：我的猫叫小白，每天早上七点要喂它。"},
    {"session_id": "zh-1", "role": "assistant", "content": "记住了：你的猫叫小白。"},
    {
        "session_id": "en-1",
        "role": "user",
        "content": "Remember that the production database lives on db-prod-2 in Frankfurt.",
        "event_id": "msg-42",
        "occurred_at": "2026-03-03T14:01:00+00:00",
        "metadata": {"channel": "chat", "标签": "生产"},
    },
    {"session_id": "en-1", "role": "tool", "content": "$ ./deploy.sh --dry-run\nok"},
    {"session_id": "en-1", "role": "user", "content": "thanks, that's all"},
]


# --- init / migrate / doctor ------------------------------------------------------------------


def test_init_creates_the_schema_and_migrate_is_idempotent(tmp_path: Path) -> None:
    db = tmp_path / "new.db"
    proc = hlmem("--db", db, "init", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert db.is_file()
    tables = {r[0] for r in rows(db, "SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"events", "jobs", "windows", "claims", "evidence", "tombstones"} <= tables
    triggers = {r[0] for r in rows(db, "SELECT name FROM sqlite_master WHERE type = 'trigger'")}
    assert {"events_no_update", "events_delete_needs_tombstone"} <= triggers

    versions = [v for v, _, _ in migrations()]
    assert ok_json(hlmem("--db", db, "migrate", "--json", cwd=tmp_path)) == {"applied": versions}
    assert ok_json(hlmem("--db", db, "init", "--json", cwd=tmp_path))["db"] == str(db)
    assert rows(db, "SELECT version FROM schema_migrations ORDER BY 1") == [(v,) for v in versions]


def test_db_from_the_environment(tmp_path: Path) -> None:
    db = tmp_path / "env.db"
    assert hlmem("init", cwd=tmp_path, env={"HLMEM_DB": str(db)}).returncode == 0
    assert db.is_file()


def test_doctor_json(tmp_path: Path) -> None:
    info = ok_json(hlmem("doctor", "--json", cwd=tmp_path))
    assert set(info) >= {"python", "sqlite_module", "sqlite_version", "sqlite_vec"}
    assert info["sqlite_module"] in ("sqlean", "sqlite3")
    major, minor, *_ = (int(p) for p in info["sqlite_version"].split("."))
    assert (major, minor) >= (3, 35)
    assert info["python"] == ".".join(map(str, sys.version_info[:3]))
    text = hlmem("doctor", cwd=tmp_path)
    assert text.returncode == 0
    assert "sqlite_version: " in text.stdout


# --- ingest -----------------------------------------------------------------------------------


def test_ingest_valid_file_then_reingest_is_a_no_op(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    events = jsonl(tmp_path / "events.jsonl", VALID)
    first = ok_json(hlmem("--db", db, "ingest", events, "--json", cwd=tmp_path))
    assert first == {
        "accepted": len(VALID),
        "duplicate": 0,
        "rejected": 0,
        "errors": [],
        "blocked": 0,
        "blocked_lines": [],
    }
    stored = rows(db, "SELECT id, session_id, role, content, metadata FROM events ORDER BY seq")
    assert [r[3] for r in stored] == [e["content"] for e in VALID]
    assert stored[3][0] == "msg-42"
    assert json.loads(stored[3][4]) == {"channel": "chat", "标签": "生产"}
    assert count(db, "sessions") == 2
    jobs_before = rows(db, "SELECT id, kind, status, payload FROM jobs")
    assert_consistent(db)

    again = hlmem("--db", db, "ingest", events, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert f"accepted 0, duplicate {len(VALID)}, rejected 0" in again.stdout
    assert (
        rows(db, "SELECT id, session_id, role, content, metadata FROM events ORDER BY seq")
        == stored
    )
    assert rows(db, "SELECT id, kind, status, payload FROM jobs") == jobs_before


def test_ingest_identical_lines_are_one_event_and_times_tell_repeats_apart(
    tmp_path: Path,
) -> None:
    db = tmp_path / "m.db"
    same = {"session_id": "s", "content": "好的 ok"}
    said = [{**same, "occurred_at": f"2026-03-01T09:0{i}:00+08:00"} for i in range(2)]
    events = jsonl(tmp_path / "events.jsonl", [same, same, same, *said, said[1]])
    first = ok_json(hlmem("--db", db, "ingest", events, "--json", cwd=tmp_path))
    assert (first["accepted"], first["duplicate"]) == (3, 3)
    again = ok_json(hlmem("--db", db, "ingest", events, "--json", cwd=tmp_path))
    assert (again["accepted"], again["duplicate"]) == (0, 6)
    assert count(db, "events") == 3


def test_ingest_explicit_event_id_duplicates(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    events = jsonl(
        tmp_path / "events.jsonl",
        [
            {"session_id": "s", "content": "记住：我的猫叫小白", "event_id": "x"},
            {"session_id": "s", "content": "Remember that my cat is Snowy.", "event_id": "x"},
            {"session_id": "t", "content": "another", "event_id": "y"},
        ],
    )
    summary = ok_json(hlmem("--db", db, "ingest", events, "--json", cwd=tmp_path))
    assert (summary["accepted"], summary["duplicate"], summary["rejected"]) == (2, 1, 0)
    assert rows(db, "SELECT id, content FROM events ORDER BY seq") == [
        ("x", "记住：我的猫叫小白"),
        ("y", "another"),
    ]
    assert_consistent(db)


def test_ingest_drain_extracts_claims_and_recall_finds_them(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    events = jsonl(tmp_path / "events.jsonl", VALID)
    summary = ok_json(hlmem("--db", db, "ingest", events, "--drain", "--json", cwd=tmp_path))
    assert summary["accepted"] == len(VALID)
    claims = {r[0]: r[1] for r in rows(db, "SELECT text, status FROM claims")}
    assert claims == {
        "我的猫叫小白，每天早上七点要喂它": "active",
        "the production database lives on db-prod-2 in Frankfurt": "active",
    }
    evidence = rows(
        db,
        "SELECT c.text, e.event_id, e.quote FROM evidence e JOIN claims c ON c.id = e.claim_id"
        " ORDER BY e.event_id",
    )
    assert (
        "the production database lives on db-prod-2 in Frankfurt",
        "msg-42",
        "Remember that the production database lives on db-prod-2 in Frankfurt",
    ) in evidence
    assert rows(db, "SELECT DISTINCT status FROM jobs") == [("done",)]

    stats = ok_json(hlmem("--db", db, "stats", "--json", cwd=tmp_path))
    assert stats["events"] == len(VALID)
    assert stats["claims"] == {"active": 2}
    assert stats["windows"] == {"closed": 2}
    assert stats["jobs"]["windower"] == {"done": stats["jobs"]["windower"]["done"]}
    # the two windows in one extractor job or two (windower.windows_per_job), all done
    assert list(stats["jobs"]["extractor"]) == ["done"]
    assert stats["jobs"]["extractor"]["done"] in (1, 2)

    zh = ok_json(hlmem("--db", db, "recall", "我的猫叫什么名字？", "--json", cwd=tmp_path))
    first = zh["items"][0]
    assert (first["kind"], first["text"]) == ("claim", "我的猫叫小白，每天早上七点要喂它")
    assert first["evidence"][0]["quote"].startswith("记住：我的猫叫小白")
    for key in (
        "id",
        "subject",
        "predicate",
        "value",
        "status",
        "valid_from",
        "valid_to",
        "recorded_at",
        "score",
    ):
        assert key in first
    assert {"event_id", "session_id", "quote", "occurred_at"} <= set(first["evidence"][0])
    assert "我的猫叫小白" in zh["packet"] and 0 < zh["tokens"] <= 2000
    assert zh["query"]["mode"] == "current"
    en = ok_json(
        hlmem(
            "--db", db, "recall", "Where does the production database live?", "--json", cwd=tmp_path
        )
    )
    claim = next(i for i in en["items"] if i["kind"] == "claim")
    assert claim["text"] == "the production database lives on db-prod-2 in Frankfurt"
    assert claim["evidence"][0]["event_id"] == "msg-42"
    none = hlmem("--db", db, "recall", "quantum chromodynamics", cwd=tmp_path)
    assert none.returncode == 0
    assert none.stdout.strip() == "nothing recalled"
    one = ok_json(
        hlmem("--db", db, "recall", "我的猫叫什么名字？", "--k", "1", "--json", cwd=tmp_path)
    )
    assert [i["text"] for i in one["items"]] == ["我的猫叫小白，每天早上七点要喂它"]


BAD_LINES: list[tuple[bytes | dict[str, Any], str]] = [
    (b'{"session_id": "s1", "content": ', "invalid JSON"),
    (b"[1, 2, 3]", "JSON object"),
    (b'"just a string"', "JSON object"),
    ({"role": "user", "content": "没有会话"}, "session_id: Field required"),
    ({"session_id": "s1", "role": "user"}, "content: Field required"),
    ({"session_id": "s1", "content": "hello", "colour": "red"}, "colour: Extra inputs"),
    ({"session_id": "s1", "content": "hello", "role": "robot"}, "role: Input should be"),
    ({"session_id": "s1", "content": "你好", "occurred_at": "2026-03-02T09:00:00"}, "timezone"),
    ({"session_id": "s1", "content": "hello", "occurred_at": "yesterday"}, "occurred_at"),
    (b'{"session_id": "s1", "content": "bad \xff\xfe bytes"}', "invalid UTF-8"),
    ({"session_id": "s1", "content": "x" * TEN_MB}, "over the limit of 1000000"),
    ({"session_id": "s1", "content": "   "}, "content is blank"),
    ({"session_id": "s1", "content": "ok", "metadata": {"k": "\udc00"}}, "metadata"),
    ({"session_id": "s1", "content": "ok", "metadata": "not an object"}, "metadata"),
    ({"session_id": "s1", "content": "ok", "event_id": ""}, "event_id"),
]


def _bad_file(path: Path) -> tuple[Path, dict[int, str], list[int]]:
    """Valid lines (Chinese and English) interleaved with every kind of bad line."""
    items: list[dict[str, Any] | bytes] = []
    expected: dict[int, str] = {}
    valid_lines: list[int] = []
    valid = iter(VALID * 3)
    for bad, reason in BAD_LINES:
        item = dict(next(valid))
        item.pop("event_id", None)  # VALID repeats: keep every valid line a new event
        item["session_id"] = f"{item['session_id']}-{len(items)}"
        items.append(item)
        valid_lines.append(len(items))
        if isinstance(bad, dict):
            # ensure_ascii keeps the lone surrogate as a \udc00 escape, as JSON allows
            items.append(json.dumps(bad).encode("utf-8"))
        else:
            items.append(bad)
        expected[len(items)] = reason
    return jsonl(path, items), expected, valid_lines


def test_ingest_bad_lines_are_reported_and_the_rest_is_stored_once(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    path, expected, valid_lines = _bad_file(tmp_path / "events.jsonl")
    proc = hlmem("--db", db, "ingest", path, "--json", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["accepted"] == len(valid_lines)
    assert summary["duplicate"] == 0
    assert summary["rejected"] == len(expected)
    reported = {}
    for line in proc.stderr.splitlines():
        if line.startswith("line "):
            at, _, reason = line.removeprefix("line ").partition(": ")
            reported[int(at)] = reason
    assert sorted(reported) == sorted(expected)
    for number, reason in expected.items():
        assert reason in reported[number], (number, reported[number])
    assert summary["errors"] == [f"line {n}: {reported[n]}" for n in sorted(reported)]
    # the 10 MB content is neither echoed back nor stored
    assert len(proc.stderr) < 10_000
    assert count(db, "events") == len(valid_lines)
    assert rows(db, "SELECT max(length(content)) FROM events")[0][0] < 1000
    assert_consistent(db)

    # same file again: nothing new, the same lines rejected
    again = hlmem("--db", db, "ingest", path, "--json", cwd=tmp_path)
    assert again.returncode == 1
    summary = json.loads(again.stdout)
    assert (summary["accepted"], summary["duplicate"], summary["rejected"]) == (
        0,
        len(valid_lines),
        len(expected),
    )
    assert count(db, "events") == len(valid_lines)

    # fix every bad line in place: only the fixed lines are added
    lines = path.read_bytes().split(b"\n")
    for number in expected:
        lines[number - 1] = json.dumps(
            {"session_id": "fixed", "content": f"修好的第{number}行 / fixed line {number}"},
            ensure_ascii=False,
        ).encode("utf-8")
    path.write_bytes(b"\n".join(lines))
    fixed = ok_json(hlmem("--db", db, "ingest", path, "--json", cwd=tmp_path))
    assert fixed == {
        "accepted": len(expected),
        "duplicate": len(valid_lines),
        "rejected": 0,
        "errors": [],
        "blocked": 0,
        "blocked_lines": [],
    }
    assert count(db, "events") == len(valid_lines) + len(expected)
    assert sorted(
        r[0] for r in rows(db, "SELECT content FROM events WHERE session_id = 'fixed'")
    ) == sorted(f"修好的第{n}行 / fixed line {n}" for n in expected)
    assert_consistent(db)


def test_ingest_only_bad_lines_stores_nothing(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    path = jsonl(tmp_path / "bad.jsonl", [b"{", {"content": "x"}])
    proc = hlmem("--db", db, "ingest", path, cwd=tmp_path)
    assert proc.returncode == 1
    assert "accepted 0, duplicate 0, rejected 2" in proc.stdout
    assert "line 1: invalid JSON" in proc.stderr
    assert "line 2: session_id: Field required" in proc.stderr
    assert count(db, "events") == 0
    assert count(db, "jobs") == 0


def test_ingest_skips_blank_lines_and_accepts_crlf(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    path = tmp_path / "crlf.jsonl"
    path.write_bytes(
        b'{"session_id": "s", "content": "\xe4\xbd\xa0\xe5\xa5\xbd"}\r\n\r\n   \n'
        b'{"session_id": "s", "content": "hello"}\r\n'
    )
    summary = ok_json(hlmem("--db", db, "ingest", path, "--json", cwd=tmp_path))
    assert (summary["accepted"], summary["rejected"]) == (2, 0)
    assert [r[0] for r in rows(db, "SELECT content FROM events ORDER BY seq")] == ["你好", "hello"]


# --- stats / jobs -----------------------------------------------------------------------------


def test_stats_json_on_an_empty_and_a_filled_store(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    assert hlmem("--db", db, "init", cwd=tmp_path).returncode == 0  # stats creates nothing
    empty = ok_json(hlmem("--db", db, "stats", "--json", cwd=tmp_path))
    assert empty["events"] == 0
    assert empty["claims"] == {}
    assert empty["windows"] == {}
    assert empty["jobs"] == {}
    events = jsonl(tmp_path / "events.jsonl", VALID)
    assert hlmem("--db", db, "ingest", events, cwd=tmp_path).returncode == 0
    stats = ok_json(hlmem("--db", db, "stats", "--json", cwd=tmp_path))
    assert {"events", "claims", "windows", "jobs"} <= set(stats)
    assert stats["events"] == len(VALID)
    assert stats["sessions"] == 2
    assert stats["claims"] == {}  # nothing processed yet: the ingest ran without --drain
    assert stats["jobs"] == {"windower": {"todo": 1}}
    text = hlmem("--db", db, "stats", cwd=tmp_path)
    assert text.returncode == 0
    assert f"events={len(VALID)}" in text.stdout


def test_jobs_list_retry_purge(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    events = jsonl(tmp_path / "events.jsonl", VALID)
    assert hlmem("--db", db, "ingest", events, cwd=tmp_path).returncode == 0
    listed = ok_json(hlmem("--db", db, "jobs", "list", "--json", cwd=tmp_path))
    assert [(j["kind"], j["status"]) for j in listed] == [("windower", "todo")]
    assert sorted(listed[0]["payload"]["event_ids"]) == sorted(
        r[0] for r in rows(db, "SELECT id FROM events")
    )

    # a job whose payload cannot be decoded fails permanently with its reason
    with closing(sqlite3.connect(db)) as conn:
        conn.execute(
            "INSERT INTO jobs (kind, payload, created_at, updated_at)"
            " VALUES ('extractor', '{\"kind\": \"bogus\"}', 0, 0)"
        )
        conn.commit()
    worker = hlmem(
        "--db", db, "worker", "--drain", "--flush", "--settle-s", "0.2", "--json", cwd=tmp_path
    )
    assert worker.returncode == 4, worker.stderr  # a job failed: the drain says so
    stats = json.loads(worker.stdout)
    assert stats["unfinished"] == {"failed": 1, "parked": 0, "parked_budget": 0, "parked_outage": 0}
    # the two windows in one extractor job or two (windower.windows_per_job)
    assert stats["jobs"]["extractor"] in ({"done": 1, "failed": 1}, {"done": 2, "failed": 1})
    assert stats["claims"] == {"active": 2}

    failed = ok_json(
        hlmem("--db", db, "jobs", "list", "--status", "failed", "--json", cwd=tmp_path)
    )
    assert len(failed) == 1
    assert failed[0]["kind"] == "extractor"
    assert "invalid payload" in failed[0]["last_error"]
    only_windower = ok_json(
        hlmem("--db", db, "jobs", "list", "--kind", "windower", "--json", cwd=tmp_path)
    )
    assert {j["kind"] for j in only_windower} == {"windower"}
    assert (
        len(ok_json(hlmem("--db", db, "jobs", "list", "--limit", "1", "--json", cwd=tmp_path))) == 1
    )

    assert ok_json(
        hlmem("--db", db, "jobs", "retry", "--kind", "windower", "--json", cwd=tmp_path)
    ) == {"retried": 0}
    assert ok_json(
        hlmem("--db", db, "jobs", "retry", "--id", str(failed[0]["id"]), "--json", cwd=tmp_path)
    ) == {"retried": 1}
    assert rows(db, "SELECT status, attempts FROM jobs WHERE id = ?", (failed[0]["id"],)) == [
        ("todo", 0)
    ]
    assert ok_json(hlmem("--db", db, "jobs", "retry", "--json", cwd=tmp_path)) == {"retried": 0}

    done = count(db, "jobs") - 1
    assert ok_json(hlmem("--db", db, "jobs", "purge", "--json", cwd=tmp_path)) == {"purged": 0}
    assert ok_json(
        hlmem("--db", db, "jobs", "purge", "--older-than-days", "0", "--json", cwd=tmp_path)
    ) == {"purged": done}
    assert rows(db, "SELECT status FROM jobs") == [("todo",)]
    # purging jobs never touches what they produced
    assert count(db, "events") == len(VALID)
    assert count(db, "claims") == 2
    text = hlmem("--db", db, "jobs", "list", cwd=tmp_path)
    assert text.returncode == 0
    assert "extractor" in text.stdout


# --- quickstart -------------------------------------------------------------------------------


def test_quickstart_prints_remembered_claims_and_recalls(tmp_path: Path) -> None:
    proc = hlmem("quickstart", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "remembered 7 claims:" in out
    # it changed its mind, and says why; the web page and the tool output stayed out
    assert "用户偏好深色模式  →  用户偏好浅色模式" in out and "ui_theme changed" in out
    assert "kept out: 2 event(s) from untrusted sources" in out
    assert "hunter2" not in out
    assert "我的猫叫小白，每天早上七点要喂它" in out
    assert "the production database lives on db-prod-2 in Frankfurt" in out
    assert "[evidence: “记住：我的猫叫小白，每天早上七点要喂它”]" in out
    zh_recall = out.split("recall: 我的猫叫什么名字？", 1)[1].split("recall:", 1)[0]
    assert "我的猫叫小白" in zh_recall
    en_recall = out.split("recall: Where does the production database live?", 1)[1]
    assert "db-prod-2" in en_recall.split("recall:", 1)[0]
    assert list(tmp_path.iterdir()) == []  # it leaves nothing behind


def test_quickstart_json(tmp_path: Path) -> None:
    data = ok_json(hlmem("quickstart", "--json", cwd=tmp_path))
    assert data["ingest"]["rejected"] == 0
    assert data["ingest"]["accepted"] == 17
    assert data["stats"]["claims"] == {"active": 7, "superseded": 1}
    [change] = data["changes"]
    assert (change["old"]["value"], change["new"]["value"]) == ("深色模式", "浅色模式")
    assert change["new"]["qualifiers"] == ["暂时"] and data["untrusted_events"] == 2
    texts = {c["text"] for c in data["claims"]}
    assert "Acme's contact is Li Wei (li.wei@acme.example)" in texts
    assert all(hits for hits in data["recall"].values())


# --- the program itself ------------------------------------------------------------------------


def test_the_program_answers_as_main_does(tmp_path: Path) -> None:
    """The real program, started each way a user starts it (``python -m hlmem`` and the two
    console scripts), and the in-process runner agree on output and exit code: rejected lines
    (1), a command that works (0) and a usage error (2), each on a file of its own."""
    folders = [tmp_path / "program", tmp_path / "main"]
    for folder in folders:
        folder.mkdir()
        jsonl(folder / "events.jsonl", [*VALID[:2], b"{"])
    scripts = Path(sys.executable).parent
    for launcher, argv, code in (
        ([sys.executable, "-m", "hlmem"], ["--db", "m.db", "ingest", "events.jsonl"], 1),
        ([str(scripts / "hlmem")], ["--db", "m.db", "stats", "--json"], 0),
        ([str(scripts / "hl-mem")], ["--db", "m.db", "stats", "--no-such-flag"], 2),
    ):
        program = subprocess.run(
            [*launcher, *argv],
            cwd=folders[0],
            env={**_environment(None), "PYTHONIOENCODING": "utf-8"},
            capture_output=True,
            encoding="utf-8",
            timeout=TIMEOUT_S,
            check=False,
        )
        in_process = hlmem(*argv, cwd=folders[1])
        assert program.returncode == in_process.returncode == code, program.stderr
        assert program.stdout == in_process.stdout
        assert program.stderr == in_process.stderr
    assert count(folders[0] / "m.db", "events") == count(folders[1] / "m.db", "events") == 2


def test_each_command_logs_to_its_own_stderr_and_leaves_logging_as_it_was(
    tmp_path: Path,
) -> None:
    """``-v`` logs reach the stderr of the call that asked, once per line, and a second call in
    the same process neither doubles them nor writes to the first call's stderr."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    first = hlmem("-v", "--db", "a.db", "init", cwd=tmp_path)
    second = hlmem("-v", "--db", "b.db", "init", cwd=tmp_path)
    quiet = hlmem("--db", "c.db", "init", cwd=tmp_path)
    for proc, name in ((first, "a.db"), (second, "b.db")):
        assert proc.returncode == 0, proc.stderr
        opened = [line for line in proc.stderr.splitlines() if "store opened" in line]
        assert len(opened) == 1 and "INFO hlmem.store" in opened[0], proc.stderr
        assert name in proc.stdout
    assert "b.db" not in first.stderr and quiet.stderr == ""
    assert (root.handlers, root.level) == (handlers, level)


# --- exit codes -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["bogus"],
        ["--db", "x.db", "ingest"],
        ["--db", "x.db", "recall"],
        ["--db", "x.db", "jobs"],
        ["--db", "x.db", "jobs", "explode"],
        ["--db", "x.db", "jobs", "list", "--status", "sleeping"],
        ["--db", "x.db", "recall", "猫", "--k", "many"],
        ["--db", "x.db", "stats", "--no-such-flag"],
        ["--dbx", "x.db", "stats"],  # no abbreviations
        ["--db", "x.db", "ingest", "a.jsonl", "--dra"],
    ],
)
def test_usage_errors_exit_2(tmp_path: Path, args: list[str]) -> None:
    proc = hlmem(*args, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "usage:" in proc.stderr
    assert proc.stdout == ""
    assert not (tmp_path / "x.db").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--db", "x.db", "ingest", "missing.jsonl"], "no such file"),
        (["--db", "x.db", "ingest", "."], "no such file"),
        (["--db", "x.db", "--config", "missing.toml", "stats"], "cannot read config"),
        (["--db", "x.db", "--config", "bad.toml", "stats"], "invalid configuration"),
    ],
)
def test_failures_exit_1(tmp_path: Path, args: list[str], message: str) -> None:
    jsonl(tmp_path / "events.jsonl", VALID[:1])
    (tmp_path / "bad.toml").write_text("[windower]\nmax_event = 3\n", encoding="utf-8")
    proc = hlmem(*args, cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert f"hlmem: error: {message}" in proc.stderr
    assert proc.stdout == ""
    assert not (tmp_path / "x.db").exists()


def test_bad_environment_config_exits_1(tmp_path: Path) -> None:
    proc = hlmem("--db", "x.db", "stats", cwd=tmp_path, env={"HLMEM_WINDOWER__MAX_EVENTS": "0"})
    assert proc.returncode == 1
    assert "invalid configuration" in proc.stderr
    assert "max_events" in proc.stderr


def test_config_file_applies(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    config = tmp_path / "small.toml"
    config.write_text("[ingest]\nmax_content_chars = 10\n", encoding="utf-8")
    events = jsonl(
        tmp_path / "events.jsonl",
        [
            {"session_id": "s", "content": "短消息"},
            {"session_id": "s", "content": "这条消息超过十个字符了哦"},
        ],
    )
    proc = hlmem("--db", db, "--config", config, "ingest", events, cwd=tmp_path)
    assert proc.returncode == 1
    assert "line 2: content has 12 characters, over the limit of 10" in proc.stderr
    assert [r[0] for r in rows(db, "SELECT content FROM events")] == ["短消息"]


def test_remember_and_claims_with_both_clocks(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    first = ok_json(
        hlmem(
            "--db",
            db,
            "remember",
            "user",
            "location",
            "杭州",
            "--text",
            "我在杭州工作",
            "--valid-from",
            "2026-03-10T09:00:00+00:00",
            "--drain",
            "--json",
            cwd=tmp_path,
        )
    )
    ok_json(
        hlmem(
            "--db",
            db,
            "remember",
            "user",
            "location",
            "北京",
            "--text",
            "其实5月就搬去北京了",
            "--valid-from",
            "2026-05-01",
            "--drain",
            "--json",
            cwd=tmp_path,
        )
    )
    current = ok_json(
        hlmem("--db", db, "claims", "--predicate", "location", "--json", cwd=tmp_path)
    )
    assert [(c["value"], c["status"]) for c in current] == [("北京", "active")]
    history = ok_json(hlmem("--db", db, "claims", "--history", "--json", cwd=tmp_path))
    assert {(c["value"], c["status"]) for c in history} == {
        ("北京", "active"),
        ("杭州", "superseded"),
    }
    april = ok_json(hlmem("--db", db, "claims", "--valid-at", "2026-04-15", "--json", cwd=tmp_path))
    assert [c["value"] for c in april] == ["杭州"]
    assert rows(
        db, "SELECT event_id FROM evidence JOIN claims ON claims.id = claim_id WHERE value = '杭州'"
    ) == [(first["event_id"],)]
    text = hlmem("--db", db, "claims", "--history", cwd=tmp_path)
    assert text.returncode == 0 and "superseded" in text.stdout and "北京" in text.stdout

    bad = hlmem("--db", db, "remember", "user", "location", " ", cwd=tmp_path)
    assert bad.returncode == 1 and "value is blank" in bad.stderr
    bad_time = hlmem("--db", db, "claims", "--as-of", "last tuesday", cwd=tmp_path)
    assert bad_time.returncode == 1 and "ISO 8601" in bad_time.stderr
