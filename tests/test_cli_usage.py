"""The exit codes the README and ``hlmem --help`` document for usage errors and cut pipes.

A usage error (no ``--db`` for a command that needs one, an unknown flag) exits 2 with the usage
line and creates nothing; ``hlmem recall ... | head`` ends quietly with 141 when the reader
leaves after its first line. Real subprocesses of the ``hlmem`` program, a real pipe.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hlmem.cli import main
from hlmem.cli.common import DB_OPTIONAL, EXIT_CODES

TIMEOUT_S = 300


def clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HLMEM_")}
    env["PYTHONIOENCODING"] = "utf-8"
    return env


def hlmem(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hlmem", *map(str, args)],
        cwd=cwd,
        env=clean_env(),
        capture_output=True,
        encoding="utf-8",
        timeout=TIMEOUT_S,
        check=False,
    )


def usage_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """Run ``hlmem`` in process; it must end as a usage error (exit 2). Its stderr."""
    with pytest.raises(SystemExit) as ended:
        main(argv)
    captured = capsys.readouterr()
    assert ended.value.code == 2, captured.err
    assert captured.out == ""
    assert "usage: hlmem" in captured.err
    return captured.err


@pytest.mark.parametrize(
    "args",
    [
        ["init"],
        ["stats", "--json"],
        ["recall", "我的猫叫什么？"],
        ["recall", "where is the prod DB"],
        ["ingest", "events.jsonl"],
        ["worker", "--drain"],
        ["forget", "--query", "忘掉我的猫", "--yes"],
        ["remember", "user", "pet_name", "小白"],
        ["jobs", "list"],
        ["ops", "report"],
    ],
)
def test_a_command_without_db_is_a_usage_error(
    tmp_path: Path,
    args: list[str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("HLMEM_DB", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "events.jsonl").write_text(
        json.dumps({"session_id": "s", "content": "记住：我的猫叫小白"}) + "\n", encoding="utf-8"
    )
    err = usage_error(args, capsys)
    assert "hlmem: error: no database: pass --db FILE or set HLMEM_DB" in err
    assert [p.name for p in tmp_path.iterdir()] == ["events.jsonl"]  # nothing created


@pytest.mark.parametrize(
    "args",
    [
        ["--db", "x.db", "recall", "猫", "--no-such-flag"],
        ["--db", "x.db", "recall", "the cat", "--top", "3"],
        ["--db", "x.db", "no-such-command"],
        ["recall", "猫", "--no-such-flag"],  # no --db either: the flag is named first
        ["--db", "x.db", "jobs", "list", "--kind", "admision"],  # a misspelt stage
        ["--db", "x.db", "jobs", "retry", "--kind", "抽取"],
    ],
)
def test_an_unknown_flag_or_command_is_a_usage_error(
    tmp_path: Path,
    args: list[str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    err = usage_error(args, capsys)
    assert "no database" not in err
    assert not (tmp_path / "x.db").exists()


def test_the_program_exits_2_without_db_and_1_for_a_db_that_does_not_exist(
    tmp_path: Path,
) -> None:
    """The real program, for the exit codes themselves: 2 is usage, 1 a failure."""
    proc = hlmem("recall", "我的猫叫什么？", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "usage: hlmem" in proc.stderr and "no database" in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    proc = hlmem("--db", "missing.db", "recall", "where is the prod DB", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "hlmem: error: no such database: missing.db" in proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_the_commands_that_need_no_db_run_without_one(tmp_path: Path) -> None:
    assert {"doctor", "quickstart", "sim-provider", "loadtest"} == DB_OPTIONAL
    proc = hlmem("doctor", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["sqlite_module"]


def test_exit_2_is_documented_as_a_usage_error() -> None:
    assert EXIT_CODES[2].startswith("usage:")
    assert "--db" in EXIT_CODES[2]


@pytest.fixture(scope="module")
def big_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store whose recall prints far more than a pipe holds (64 KiB on Linux), so a reader
    that leaves early is sure to cut the output short."""
    work = tmp_path_factory.mktemp("big")
    lines = [
        json.dumps(
            {
                "session_id": f"s{i % 4}",
                "content": f"第{i}次部署记录 deploy log {i}: " + "服务器 deploy 日志 cat 猫 " * 300,
            },
            ensure_ascii=False,
        )
        for i in range(40)
    ]
    (work / "big.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    proc = hlmem("--db", "big.db", "ingest", "big.jsonl", "--drain", cwd=work)
    assert proc.returncode == 0, proc.stderr
    return work / "big.db"


def test_recall_into_head_ends_quietly_with_the_documented_code(
    big_store: Path, tmp_path: Path
) -> None:
    """Like ``hlmem recall "部署 deploy 日志" | head -1``: the reader takes one line and closes
    the pipe while the program still has most of its output to write."""
    query = "部署 deploy 日志"
    proc = subprocess.Popen(
        [sys.executable, "-m", "hlmem", "--db", str(big_store), "recall", query, "--k", "40"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=clean_env(),
        cwd=tmp_path,
    )
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline().decode("utf-8")
    proc.stdout.close()
    err = proc.stderr.read().decode("utf-8")
    proc.stderr.close()
    code = proc.wait(timeout=TIMEOUT_S)
    assert "[event]" in first or "[claim]" in first, first
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
    assert err == "", err
    assert code == 141, err
    assert "stdout closed early" in EXIT_CODES[141]
