"""Bad arguments to the public API: an InputError (or ConfigError) naming the argument, and
nothing written.

Every public ``Memory`` method gets wrong types and out-of-range values (zh and en texts), on
a real store holding an event and a remembered claim; each call must raise the hlmem error,
its message must name the argument, and the database must be byte-for-byte what it was (every
table read back). ``hlmem.open`` takes a mapping shaped like the TOML file, and refuses a bad
path, config, clock or pipeline with a ConfigError before any file exists.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import pytest
from helpers import connect_raw, fast_config, rows
from test_cli import hlmem as run_cli

import hlmem
from hlmem.config import load_config
from hlmem.errors import ConfigError, InputError
from hlmem.memory import Memory, arguments, ingest_jsonl

pytestmark = pytest.mark.anyio

NAIVE = datetime(2026, 3, 1, 9, 0)
AWARE = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
MAX_QUERY = 60


def snapshot(db: Path) -> str:
    """A digest of every row of every ordinary table (virtual tables through their shadows)."""
    conn = connect_raw(db)
    try:
        names = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'"
                " AND sql NOT LIKE 'CREATE VIRTUAL%' ORDER BY name"
            )
        ]
        digest = hashlib.sha256()
        for name in names:
            table_rows = sorted(repr(tuple(r)) for r in conn.execute(f'SELECT * FROM "{name}"'))
            digest.update(f"{name}:{len(table_rows)}:{table_rows}".encode())
        return digest.hexdigest()
    finally:
        conn.close()


@pytest.fixture
async def mem(tmp_path: Path) -> AsyncIterator[Memory]:
    config = fast_config(recall={"max_query_chars": MAX_QUERY})
    async with hlmem.open(tmp_path / "m.db", config=config, pipeline="external") as memory:
        await memory.add_event("s-1", "记住：我的猫叫小白")
        await memory.remember("user", "lives_in", "Berlin", text="I live in Berlin")
        yield memory


def gen() -> Any:
    yield "clm_1"


# (method, positional arguments, keyword arguments, the argument the message must name)
BAD: list[tuple[str, tuple[Any, ...], dict[str, Any], str]] = [
    ("add_event", ("s-1", None), {}, "content"),
    ("add_event", (None, "我住在北京"), {}, "session_id"),
    ("add_event", ("s-1", "我住在北京"), {"role": "robot"}, "role"),
    ("add_event", ("s-1", "I live in Berlin"), {"occurred_at": NAIVE}, "occurred_at"),
    ("add_event", ("s-1", "I live in Berlin"), {"namespace": 5}, "namespace"),
    ("add_events", (None,), {}, "events"),
    ("add_events", ("我住在北京",), {}, "events"),
    ("add_events", ({"session_id": "s", "content": "x"},), {}, "events"),
    ("add_events", (hlmem.EventIn(session_id="s", content="我住在北京"),), {}, "events"),
    ("add_events", ([{"session_id": "s", "content": "ok"}, {"session_id": "s"}],), {}, "event 1"),
    ("remember", (None, "lives_in", "北京"), {}, "subject"),
    ("remember", ("user", "lives_in", 5), {}, "value"),
    ("remember", ("user", "lives_in", "北京"), {"qualifiers": "暂时"}, "qualifiers"),
    ("remember", ("user", "lives_in", "北京"), {"qualifiers": ["暂时", 5]}, "qualifiers[1]"),
    ("remember", ("user", "lives_in", "北京"), {"valid_from": "2026-03-01"}, "valid_from"),
    ("remember", ("user", "lives_in", "北京"), {"valid_to": NAIVE}, "valid_to"),
    ("remember", ("user", "lives_in", "北京"), {"polarity": True}, "polarity"),
    ("remember", ("user", "lives_in", "北京"), {"importance": "high"}, "importance"),
    ("remember", ("user", "lives_in", "北京"), {"confidence": 2}, "confidence"),
    ("remember", ("user", "lives_in", "北京"), {"scope": "forever"}, "scope"),
    ("remember", ("user", "lives_in", "北京"), {"namespace": ""}, "namespace"),
    ("remember", ("user", "lives_in", "北京"), {"session_id": None}, "session_id"),
    ("remember", ("user", "lives_in", "北京"), {"override_forget": "yes"}, "override_forget"),
    ("end_session", (None,), {}, "session_id"),
    ("end_session", ("s-1",), {"namespace": 5}, "namespace"),
    ("flush", (), {"namespace": 5}, "namespace"),
    ("flush", (), {"session_id": ["s-1"]}, "session_id"),
    ("drain", (), {"timeout_s": "1"}, "timeout_s"),
    ("drain", (), {"timeout_s": -1}, "timeout_s"),
    ("drain", (), {"settle_s": None}, "settle_s"),
    ("claims", (), {"subject": 5}, "subject"),
    ("claims", (), {"valid_at": "2026-03-01"}, "valid_at"),
    ("claims", (), {"as_of": NAIVE}, "as_of"),
    ("claims", (), {"limit": -1}, "limit"),
    ("claims", (), {"history": "no"}, "history"),
    ("events", (), {"limit": 0}, "limit"),
    ("events", (), {"session_id": 5}, "session_id"),
    ("events", (), {"include_untrusted": 1}, "include_untrusted"),
    ("supersessions", ("clm_1",), {}, "claim_ids"),
    ("supersessions", (None,), {}, "claim_ids"),
    ("supersessions", ([None],), {}, "claim_ids[0]"),
    ("recall", (None,), {}, "query"),
    ("recall", (42,), {}, "query"),
    ("recall", (b"where do I live?",), {}, "query"),
    ("recall", ("我" * (MAX_QUERY + 1),), {}, "recall.max_query_chars"),
    ("recall", ("where do I live? " * 4,), {}, "recall.max_query_chars"),
    ("recall", ("我住在哪里？",), {"k": 0}, "k"),
    ("recall", ("我住在哪里？",), {"k": "3"}, "k"),
    ("recall", ("我住在哪里？",), {"k": True}, "k"),
    ("recall", ("我住在哪里？",), {"budget_tokens": -5}, "budget_tokens"),
    ("recall", ("我住在哪里？",), {"budget_tokens": 0}, "budget_tokens"),
    ("recall", ("where do I live?",), {"namespace": 5}, "namespace"),
    ("recall", ("where do I live?",), {"namespace": ["default"]}, "namespace"),
    ("recall", ("where do I live?",), {"mode": "past"}, "mode"),
    ("recall", ("where do I live?",), {"as_of": NAIVE}, "as_of"),
    ("recall", ("where do I live?",), {"valid_at": "2026-03-01"}, "valid_at"),
    ("recall", ("where do I live?",), {"include_untrusted": "yes"}, "include_untrusted"),
    ("feedback", (None,), {"useful": True}, "item_id"),
    ("feedback", ("clm_1",), {"useful": "no"}, "useful"),
    ("forget", (), {"claim_id": 5}, "claim_id"),
    ("forget", (), {"query": "我的猫", "namespace": 5}, "namespace"),
    ("forget", (), {"query": "我的猫", "dry_run": "yes"}, "dry_run"),
    ("forget", (), {"query": "我的猫", "confirmed": {"claim_ids": []}}, "confirmed"),
    ("correct", (None, "北京"), {}, "claim_id"),
    ("correct", ("clm_1", None), {}, "text"),
    ("explain", (None,), {}, "claim_id"),
    ("export", (None,), {}, "path"),
    ("export", (Path("no-such-dir") / "out.jsonl",), {"vectors": "no"}, "vectors"),
    ("import_file", (5,), {}, "path"),
    ("backup", ("",), {}, "path"),
    ("list_jobs", (), {"status": "stuck"}, "status"),
    ("list_jobs", (), {"limit": "10"}, "limit"),
    ("retry_jobs", (), {"job_id": 0}, "job_id"),
    ("purge_jobs", (), {"older_than_s": "1d"}, "older_than_s"),
]


@pytest.mark.parametrize(
    ("method", "args", "kwargs", "named"),
    BAD,
    ids=[f"{m}-{n}-{i}" for i, (m, _, _, n) in enumerate(BAD)],
)
async def test_a_bad_argument_is_an_input_error_naming_it_and_writes_nothing(
    mem: Memory, method: str, args: tuple[Any, ...], kwargs: dict[str, Any], named: str
) -> None:
    before = snapshot(mem.path)
    with pytest.raises(InputError) as caught, anyio.fail_after(10):  # drain would wait
        await getattr(mem, method)(*args, **kwargs)
    assert named in str(caught.value), str(caught.value)
    assert snapshot(mem.path) == before


def test_every_checked_method_is_a_memory_method_with_those_arguments() -> None:
    """The rules name real arguments: a renamed argument must not lose its check."""
    import inspect

    for method, rules in arguments.RULES.items():
        params = inspect.signature(getattr(Memory, method)).parameters
        assert set(rules) <= set(params), (method, set(rules) - set(params))
    tested = {m for m, _, _, _ in BAD}
    assert set(arguments.RULES) <= tested


async def test_good_arguments_still_work(mem: Memory) -> None:
    """The checks refuse only what is wrong: aware times, generators, enums, PathLike."""
    assert await mem.recall("我" * MAX_QUERY, k=1, budget_tokens=50) is not None
    found = await mem.claims(as_of=AWARE, history=True, limit=5)
    assert await mem.supersessions(c.id for c in found) == []
    assert await mem.supersessions(gen()) == []
    assert await mem.supersessions({c.id: c for c in found}) == []  # a mapping: its keys
    assert await mem.list_jobs(status=hlmem.messages.JobStatus.TODO, limit=10)
    await mem.remember("user", "likes", "tea", qualifiers=(q for q in ["暂时"]))
    claims = await mem.claims(history=True)
    assert claims == found  # nothing processed: pipeline="external"
    assert (await mem.list_jobs(kind="admission", limit=10))[0].payload["candidates"][0]["draft"][
        "qualifiers"
    ] == ["暂时"]


# --- hlmem.open -------------------------------------------------------------------------------


async def test_open_takes_a_mapping_shaped_like_the_toml_file(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    options = {"recall": {"max_query_chars": 12}}
    async with hlmem.open(db, config=options, pipeline="external") as mem:
        assert mem.config.recall.max_query_chars == 12
        assert mem.config.windower == load_config().windower  # the rest as without a mapping
        await mem.recall("我住在哪里？where")  # 11 characters
        with pytest.raises(InputError, match=r"recall\.max_query_chars"):
            await mem.recall("我住在哪里？ where?")


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"config": {"recall": {"k": 5}}}, "recall.k"),
        ({"config": {"recall": {"max_query_chars": 0}}}, "recall.max_query_chars"),
        ({"config": "config/local.toml"}, "config"),
        ({"pipeline": "bogus"}, "'inline', 'external'"),
        ({"pipeline": None}, "pipeline"),
        ({"clock": "now"}, "clock"),
        ({"create": "no"}, "create"),
    ],
)
def test_open_refuses_bad_options_before_any_file_exists(
    tmp_path: Path, kwargs: dict[str, Any], named: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        hlmem.open(tmp_path / "m.db", **kwargs)
    assert named in str(caught.value)
    assert os.listdir(tmp_path) == []


def test_open_refuses_a_path_that_is_not_one(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="path"):
        hlmem.open(None)  # type: ignore[arg-type]


# --- role ---------------------------------------------------------------------------------


async def test_an_event_without_role_is_the_users_in_the_api_and_in_jsonl(tmp_path: Path) -> None:
    """The README says so: role defaults to "user" everywhere."""
    path = tmp_path / "events.jsonl"
    path.write_text(json.dumps({"session_id": "s", "content": "我住在北京"}) + "\n", "utf-8")
    async with hlmem.open(tmp_path / "m.db", config=fast_config(), pipeline="external") as mem:
        await mem.add_event("s", "I live in Berlin")
        summary = await ingest_jsonl(mem, path)
        assert summary.accepted == 1
    stored = rows(tmp_path / "m.db", "SELECT role, origin_class FROM events ORDER BY seq")
    assert stored == [("user", "user_direct"), ("user", "user_direct")]


# --- the command line -----------------------------------------------------------------------


def test_a_query_over_the_limit_is_one_line_and_exit_1_on_the_command_line(
    tmp_path: Path,
) -> None:
    env = {"HLMEM_RECALL__MAX_QUERY_CHARS": "100"}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return run_cli("--db", tmp_path / "m.db", *args, cwd=tmp_path, env=env)

    assert run("init").returncode == 0
    proc = run("recall", "我住在哪里" * 21)
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [
        "hlmem: error: recall: query has 105 characters, over the limit of 100 "
        "(recall.max_query_chars)"
    ]
    fine = run("recall", "我住在哪里" * 20)
    assert fine.returncode == 0, fine.stderr
