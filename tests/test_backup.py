"""Online backup and restore end to end (DESIGN.md §6, §7; story 5).

A backup taken while tasks keep adding events is a consistent hlmem database holding at least
everything acknowledged before it began; a restore after a forget made since the backup keeps
the forgotten claim, event, vectors and full-text rows gone, and restoring twice gives the
same content; a restore is refused while the file is open elsewhere; and the CLI. Real SQLite
files, the real pipeline.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import anyio
import pytest
from helpers import assert_consistent, count, fast_config, rows
from test_cli import hlmem as run_cli
from test_cli import ok_json
from test_portable import TABLES, build, by_value

import hlmem
from hlmem.clock import ManualClock
from hlmem.config import Config
from hlmem.errors import InputError, StoreBusy
from hlmem.portable import restore

pytestmark = pytest.mark.anyio

NOW = datetime(2026, 9, 1, tzinfo=UTC)


@pytest.fixture
def config() -> Config:
    return fast_config()


def content(db: Path) -> dict[str, list[tuple[object, ...]]]:
    """Every row of the memory tables, in a stable order (ids, not rowids)."""
    return {
        "claims": rows(db, "SELECT id, status, superseded_by, retracted_at FROM claims ORDER BY 1"),
        "events": rows(db, "SELECT id, content FROM events ORDER BY 1"),
        "evidence": rows(db, "SELECT claim_id, event_id FROM evidence ORDER BY 1, 2"),
        "vectors": rows(db, "SELECT owner_kind, owner_id FROM vectors ORDER BY 1, 2"),
        "fts": rows(db, "SELECT kind, item_id FROM recall_docs ORDER BY 1, 2"),
        "tombstones": rows(db, "SELECT kind, key FROM tombstones ORDER BY 1, 2"),
        "supersessions": rows(
            db, "SELECT old_claim_id, new_claim_id FROM supersessions ORDER BY 1"
        ),
    }


async def test_backup_while_ingestion_runs(tmp_path: Path, config: Config) -> None:
    db, copy = tmp_path / "live.db", tmp_path / "copy.db"
    acked: list[str] = []
    async with hlmem.open(db, config=config) as mem:
        for i in range(200):
            lang = "我喜欢喝绿茶，第{}次说" if i % 2 else "I like green tea, said {} times."
            acked.append(await mem.add_event(f"s{i % 7}", lang.format(i), event_id=f"pre-{i}"))
        during: list[str] = []
        stop = anyio.Event()

        async def talk(worker: int) -> None:
            n = 0
            while not stop.is_set():
                text = (
                    f"I live in city number {worker}-{n}." if n % 2 else f"我住在{worker}号城市{n}"
                )
                during.append(await mem.add_event(f"w{worker}", text, event_id=f"w{worker}-{n}"))
                n += 1

        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                for w in range(3):
                    tg.start_soon(talk, w)
                await anyio.sleep(0.05)
                started = len(during)
                done = await mem.backup(copy)
                await anyio.sleep(0.05)
                stop.set()
        await mem.flush()
        await mem.drain(timeout_s=60)
    assert started > 0 and len(during) > started  # ingestion went on around the backup
    assert rows(copy, "PRAGMA integrity_check") == [("ok",)]
    assert_consistent(copy)
    stored = {r[0] for r in rows(copy, "SELECT id FROM events")}
    assert set(acked) | set(during[:started]) <= stored
    assert done.events == len(stored) and done.path == str(copy)
    assert_consistent(db)
    # the copy is a normal hlmem database: it opens, its pipeline resumes, it recalls
    async with hlmem.open(copy, config=config) as mem:
        await mem.flush()
        await mem.drain(timeout_s=60)
        found = await mem.recall("What do I like to drink?")
    assert any("tea" in i.text.lower() for i in found.items)
    assert_consistent(copy)


async def test_backup_refuses_an_existing_file(tmp_path: Path, config: Config) -> None:
    db, copy = tmp_path / "a.db", tmp_path / "copy.db"
    copy.write_bytes(b"keep me")
    async with hlmem.open(db, config=config) as mem:
        with pytest.raises(InputError, match="exists already"):
            await mem.backup(copy)
    assert copy.read_bytes() == b"keep me"


async def test_restore_keeps_what_was_forgotten_after_the_backup(
    tmp_path: Path, config: Config
) -> None:
    db, copy = tmp_path / "a.db", tmp_path / "copy.db"
    clock = await build(db, config)
    async with hlmem.open(db, config=config, clock=clock) as mem:
        backed = await mem.backup(copy)
        light = by_value(await mem.claims(), "浅色模式")[0]
        await mem.forget(claim_id=light.id)
        await mem.forget(event_id="march-2")  # "I live in Shanghai." and its claim
        tea = next(c for c in await mem.claims() if "tea" in c.value.lower())
        await mem.add_event("later", "I speak Japanese.", event_id="later-0")  # after: lost
        await mem.end_session("later")
        await mem.drain(timeout_s=30)
        before = await mem.stats()
    assert backed.tombstone_max_id == 0
    done = await restore(db, copy, cfg=config, now=NOW)
    assert done.tombstones_reapplied == before.tombstones["claim"]["count"] + sum(
        v["count"] for k, v in before.tombstones.items() if k != "claim"
    )
    assert light.id in done.claims_forgotten and "march-2" in done.events_forgotten
    after = content(db)
    ids = {c[0] for c in after["claims"]}
    assert light.id not in ids and tea.id in ids
    assert not [e for e in after["events"] if e[0] in ("march-2", "later-0")]
    for owner in (light.id, "march-2"):
        assert owner not in {v[1] for v in after["vectors"]}
        assert owner not in {f[1] for f in after["fts"]}
    assert rows(db, "PRAGMA foreign_key_check") == []
    # a forgotten item stays forgotten in the restored store: a replay is dropped
    async with hlmem.open(db, config=config, clock=ManualClock(NOW)) as mem:
        await mem.add_event("march", "I live in Shanghai.", event_id="march-2")
        await mem.end_session("march")
        await mem.drain(timeout_s=30)
        current = await mem.claims()
        history = await mem.claims(history=True)
    assert "Shanghai" not in {c.value for c in history}
    assert {c.value for c in current if c.predicate == "ui_theme"} == set()
    assert by_value(history, "深色模式")[0].status == "superseded"  # an erasure: stays so
    # restoring the same backup again gives the same content
    first = content(db)
    again = await restore(db, copy, cfg=config, now=NOW)
    assert content(db) == first
    assert again.claims_forgotten == done.claims_forgotten
    assert {t: count(db, t) for t in TABLES}["events"] == len(first["events"])


async def test_restore_is_refused_while_the_store_is_open(tmp_path: Path, config: Config) -> None:
    db, copy = tmp_path / "a.db", tmp_path / "copy.db"
    async with hlmem.open(db, config=config) as mem:
        await mem.add_event("s", "我主要用深色模式", event_id="e1")
        await mem.backup(copy)
        await mem.add_event("s", "I live in Shanghai.", event_id="e2")
        with pytest.raises(StoreBusy, match="open elsewhere"):
            await restore(db, copy, cfg=config, now=NOW)
        assert await mem.add_event("s", "I like tea.", event_id="e3") == "e3"
    assert {r[0] for r in rows(db, "SELECT id FROM events")} == {"e1", "e2", "e3"}
    with pytest.raises(InputError, match="no such backup"):
        await restore(db, tmp_path / "missing.db", cfg=config, now=NOW)


def test_cli_backup_and_restore(tmp_path: Path) -> None:
    db, copy = tmp_path / "a.db", tmp_path / "copy.db"
    ok_json(
        run_cli(
            "--db",
            db,
            "remember",
            "user",
            "ui_theme",
            "深色模式",
            "--drain",
            "--json",
            cwd=tmp_path,
        )
    )
    backed = ok_json(run_cli("--db", db, "backup", copy, "--json", cwd=tmp_path))
    assert backed["claims"] == 1 and copy.is_file()
    (claim,) = ok_json(run_cli("--db", db, "claims", "--json", cwd=tmp_path))
    ok_json(run_cli("--db", db, "forget", "--claim", claim["id"], "--json", cwd=tmp_path))
    restored = ok_json(run_cli("--db", db, "restore", copy, "--json", cwd=tmp_path))
    assert restored["claims_forgotten"] == [claim["id"]]
    assert ok_json(run_cli("--db", db, "claims", "--json", cwd=tmp_path)) == []
    again = run_cli("--db", db, "backup", copy, "--json", cwd=tmp_path)
    assert again.returncode == 1 and "exists already" in again.stderr
    assert run_cli("--db", db, "restore", cwd=tmp_path).returncode == 2
