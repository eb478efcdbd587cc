"""``hlmem forget --query`` shows its plan and asks before it forgets (issue 20, point 3).

The command on a real file: without a terminal and without ``--yes`` the plan is shown and
nothing is forgotten (exit 1); on a terminal (a pseudo-terminal here, given to a real
``python -m hlmem`` subprocess) the answer decides; ``--yes`` forgets at once; ``--json``
carries the plan; a query that matches nothing forgets nothing (exit 1); ``--dry-run`` changes
nothing; forgets by id do not ask. Without a terminal the command runs in process
(``test_cli.hlmem``: its stdin is empty and no terminal). Rows are read from the file once the
command has finished.
"""

from __future__ import annotations

import json
import os
import pty
import subprocess
from pathlib import Path
from typing import Any

import pytest
from helpers import count, fast_config, rows
from test_cli import hlmem as run_cli
from test_cli import hlmem_process

import hlmem

pytestmark = pytest.mark.anyio

STORE = {
    "zh": ("记住：我的猫叫小白", "Remember that the prod DB is db-prod-2.", "忘掉我的猫"),
    "en": (
        "Remember that my cat is called Snowball.",
        "记住：prod 数据库是 db-prod-2",
        "forget my cat",
    ),
}
CAT = {"zh": "我的猫叫小白", "en": "my cat is called Snowball"}


def run(
    *args: str | Path, cwd: Path, answer: bytes | None = None, process: bool = False
) -> subprocess.CompletedProcess[str]:
    """``hlmem ARGS`` in process, its stdin no terminal, or with ``answer`` a pseudo-terminal
    that has ``answer`` typed into it; ``process``: ``python -m hlmem ARGS`` instead."""
    if answer is None:
        return hlmem_process(*args, cwd=cwd) if process else run_cli(*args, cwd=cwd)
    master, slave = pty.openpty()
    try:
        os.write(master, answer)  # waits in the terminal's line buffer for the prompt
        if process:
            return hlmem_process(*args, cwd=cwd, stdin=slave)
        with open(slave, encoding="utf-8", closefd=False) as terminal:
            return run_cli(*args, cwd=cwd, stdin=terminal)
    finally:
        os.close(slave)
        os.close(master)


async def make_store(db: Path, lang: str) -> dict[str, str]:
    """The cat and the prod DB, each in a session of its own; {event id: claim id}."""
    async with hlmem.open(db, config=fast_config()) as mem:
        for i, line in enumerate(STORE[lang][:2]):
            await mem.add_event(f"s{i}", line, event_id=f"ev-{i}")
            await mem.end_session(f"s{i}")
        await mem.drain(timeout_s=30)
        return {c.evidence[0].event_id: c.id for c in await mem.claims()}


def state(db: Path) -> dict[str, Any]:
    return {
        "events": sorted(r[0] for r in rows(db, "SELECT id FROM events")),
        "claims": sorted(r[0] for r in rows(db, "SELECT id FROM claims")),
        "tombstones": count(db, "tombstones"),
    }


@pytest.mark.parametrize("lang", ["zh", "en"])
async def test_without_a_terminal_the_plan_is_shown_and_nothing_forgotten(
    tmp_path: Path, lang: str
) -> None:
    db = tmp_path / "m.db"
    claims = await make_store(db, lang)
    before = state(db)
    proc = run("--db", db, "forget", "--query", STORE[lang][2], cwd=tmp_path)
    assert proc.returncode == 1, proc
    assert "would forget 1 claim(s) and 1 event(s)" in proc.stdout
    assert claims["ev-0"] in proc.stdout and CAT[lang] in proc.stdout and "ev-0" in proc.stdout
    assert claims["ev-1"] not in proc.stdout
    assert "--yes" in proc.stderr and "nothing was forgotten" in proc.stderr
    assert state(db) == before
    as_json = run("--db", db, "forget", "--query", STORE[lang][2], "--json", cwd=tmp_path)
    plan = json.loads(as_json.stdout)
    assert as_json.returncode == 1 and plan["dry_run"] is True
    assert plan["claim_ids"] == [claims["ev-0"]] and plan["event_ids"] == ["ev-0"]
    assert [m["id"] for m in plan["matched"]] and plan["claim_texts"][claims["ev-0"]]
    assert state(db) == before


@pytest.mark.parametrize("lang", ["zh", "en"])
async def test_on_a_terminal_the_answer_decides(tmp_path: Path, lang: str) -> None:
    db = tmp_path / "m.db"
    claims = await make_store(db, lang)
    before = state(db)
    no = run("--db", db, "forget", "--query", STORE[lang][2], cwd=tmp_path, answer=b"n\n")
    assert no.returncode == 1 and "[y/N]" in no.stderr and "nothing was forgotten" in no.stderr
    assert CAT[lang] in no.stdout and state(db) == before
    eof = run("--db", db, "forget", "--query", STORE[lang][2], cwd=tmp_path, answer=b"\x04")
    assert eof.returncode == 1 and state(db) == before
    yes = run("--db", db, "forget", "--query", STORE[lang][2], cwd=tmp_path, answer=b"y\n")
    assert yes.returncode == 0, yes.stderr
    assert "forgot 1 claim(s) and 1 event(s)" in yes.stdout
    after = state(db)
    assert after["claims"] == [claims["ev-1"]] and after["events"] == ["ev-1"]


async def test_the_program_asks_on_its_terminal(tmp_path: Path) -> None:
    """``python -m hlmem`` itself finds its terminal, asks, and forgets on ``y``."""
    db = tmp_path / "m.db"
    claims = await make_store(db, "zh")
    no_tty = run("--db", db, "forget", "--query", STORE["zh"][2], cwd=tmp_path, process=True)
    assert no_tty.returncode == 1 and "stdin is not a terminal" in no_tty.stderr
    yes = run(
        "--db", db, "forget", "--query", STORE["zh"][2], cwd=tmp_path, answer=b"y\n", process=True
    )
    assert yes.returncode == 0 and "[y/N]" in yes.stderr, yes.stderr
    assert "forgot 1 claim(s) and 1 event(s)" in yes.stdout
    after = state(db)
    assert after["claims"] == [claims["ev-1"]] and after["events"] == ["ev-1"]


@pytest.mark.parametrize("lang", ["zh", "en"])
async def test_yes_forgets_at_once_and_json_carries_the_plan(tmp_path: Path, lang: str) -> None:
    db = tmp_path / "m.db"
    claims = await make_store(db, lang)
    proc = run("--db", db, "forget", "--query", STORE[lang][2], "--yes", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    done = json.loads(proc.stdout)
    assert done["dry_run"] is False and done["claim_ids"] == [claims["ev-0"]]
    assert done["query"] == STORE[lang][2] and done["query_terms"]
    assert [(m["kind"], m["id"]) for m in done["matched"]] and done["tombstones"] > 0
    assert CAT[lang] in done["claim_texts"][claims["ev-0"]]
    after = state(db)
    assert after["claims"] == [claims["ev-1"]] and after["events"] == ["ev-1"]


@pytest.mark.parametrize(
    ("lang", "query"), [("zh", "我老婆叫什么"), ("zh", "我住在哪"), ("en", "Where do I live?")]
)
async def test_a_query_matching_nothing_forgets_nothing_and_exits_1(
    tmp_path: Path, lang: str, query: str
) -> None:
    db = tmp_path / "m.db"
    await make_store(db, lang)
    before = state(db)
    for extra in ([], ["--yes"], ["--dry-run"]):
        proc = run("--db", db, "forget", "--query", query, *extra, cwd=tmp_path)
        assert proc.returncode == 1, (extra, proc)
        assert "nothing matches" in proc.stdout and "nothing was forgotten" in proc.stdout
    as_json = run("--db", db, "forget", "--query", query, "--yes", "--json", cwd=tmp_path)
    got = json.loads(as_json.stdout)
    assert as_json.returncode == 1 and got["matched"] == [] and got["claim_ids"] == []
    assert state(db) == before


async def test_dry_run_and_forgets_by_id_do_not_ask(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    claims = await make_store(db, "zh")
    before = state(db)
    dry = run("--db", db, "forget", "--query", "prod DB", "--dry-run", cwd=tmp_path)
    assert dry.returncode == 0 and "would forget 1 claim(s)" in dry.stdout
    assert "[y/N]" not in dry.stderr and state(db) == before
    by_id = run("--db", db, "forget", "--claim", claims["ev-1"], cwd=tmp_path)
    assert by_id.returncode == 0 and "forgot 1 claim(s) and 1 event(s)" in by_id.stdout
    assert state(db)["claims"] == [claims["ev-0"]]
