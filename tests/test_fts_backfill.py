"""Re-derived full-text rows are the rows the pipeline writes: events re-indexed by
:func:`hlmem.index.fts.fts_backfill` get the extractor's body, claims re-indexed by it or by
maintenance get the dedup stage's. Events and claims come in through the real pipeline, in
Chinese and English; the assertions read the database file.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import anyio
import pytest
from helpers import connect_raw, fast_config, rows

import hlmem
from hlmem.cli import app as cli
from hlmem.index import FTS_DELETE, FTS_MIGRATION, fts_backfill, fts_key
from hlmem.lang import default_lexicon, event_body
from hlmem.portable import restore
from hlmem.store import migrations

NOW = datetime(2026, 6, 1, tzinfo=UTC)

pytestmark = pytest.mark.anyio

# Texts whose event body (Han n-grams, "e-mail" also as "email") differs from index_text's,
# plus one event long enough to be split into chunks (the extractor then indexes it whole).
TEXTS = {
    "zh": [
        "我住在北京市朝阳区，养了一只猫叫小白",
        "我喜欢喝乌龙茶，不喜欢咖啡",
        "记住：我的生日是三月五日。" + "今天天气很好，我们去公园散步吧。" * 8,
    ],
    "en": [
        "I live in Berlin and my e-mail is on the v1.2 server",
        "My favourite drink is oolong tea, about 1,000 cups a year",
        "Remember: my sister's name is Grace. " + "We walked along the river for hours. " * 6,
    ],
}


def fts_rows(db: Path, kind: str) -> list[tuple[object, ...]]:
    return rows(
        db,
        "SELECT kind, item_id, namespace, body FROM recall_docs WHERE kind = ? ORDER BY item_id",
        (kind,),
    )


async def ingest(mem: hlmem.Memory, texts: list[str]) -> None:
    for text in texts:
        await mem.add_event("s1", text)
    await mem.end_session("s1")
    await mem.drain(timeout_s=60)


@pytest.mark.parametrize("lang", sorted(TEXTS))
async def test_backfilled_events_get_the_extractors_rows(db_path: Path, lang: str) -> None:
    cfg = fast_config(windower={"chunk_chars": 50}, maintenance={"enabled": False})
    async with hlmem.open(db_path, config=cfg) as mem:
        await ingest(mem, TEXTS[lang])
        extracted = fts_rows(db_path, "event")
        assert len(extracted) == len(TEXTS[lang])
        async with mem.store.transaction() as tx:
            await tx.executemany(FTS_DELETE, [fts_key("event", str(r[1])) for r in extracted])
        assert fts_rows(db_path, "event") == []
        assert await fts_backfill(mem.store, lexicon=default_lexicon(), batch_size=2) == len(
            extracted
        )
        assert fts_rows(db_path, "event") == extracted


@pytest.mark.parametrize("how", ["maintenance", "backfill"])
@pytest.mark.parametrize("lang", sorted(TEXTS))
async def test_rederived_claims_get_the_dedup_rows(db_path: Path, lang: str, how: str) -> None:
    """With their value and their slot's names in both languages, not their text alone."""
    cfg = fast_config(maintenance={"enabled": False})
    async with hlmem.open(db_path, config=cfg) as mem:
        await ingest(mem, TEXTS[lang])
        stored = fts_rows(db_path, "claim")
        assert stored, "the rules extractor found no claim"
        async with mem.store.transaction() as tx:
            await tx.executemany(FTS_DELETE, [fts_key("claim", str(r[1])) for r in stored])
        if how == "maintenance":
            assert (await mem.maintain()).reindex.rewritten == len(stored)
        else:
            assert await fts_backfill(mem.store, lexicon=default_lexicon(), batch_size=1) == len(
                stored
            )
        assert fts_rows(db_path, "claim") == stored


#: events said before the full-text index existed (a file at migration 0003)
OLD_EVENTS = {"zh": "我养了一只猫叫小白", "en": "My sister Grace plays the cello"}
OLD_QUERIES = {"zh": "小白", "en": "cello"}


def _file_before_the_index(db: Path) -> None:
    """A database at migration 0003 holding one event per language, written as that version
    did: the migrations' SQL, then the rows."""
    conn = connect_raw(db)
    try:
        conn.execute(
            "CREATE TABLE schema_migrations"
            " (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
        )
        for version, name, sql in migrations():
            if version < FTS_MIGRATION:
                conn.executescript(sql)
                conn.execute(
                    "INSERT INTO schema_migrations VALUES (?, ?, '2026-01-01T00:00:00+00:00')",
                    (version, name),
                )
        for n, (lang, text) in enumerate(sorted(OLD_EVENTS.items())):
            conn.execute(
                "INSERT INTO events (id, namespace, session_id, role, content, content_hash,"
                " occurred_at, recorded_at, origin_class, session_kind)"
                " VALUES (?, 'default', ?, 'user', ?, ?, '2026-01-01T09:00:00+00:00',"
                " '2026-01-01T09:00:00+00:00', 'user_direct', 'interactive')",
                (f"ev-old-{lang}", f"s-{n}", text, f"h{n}"),
            )
        conn.commit()
    finally:
        conn.close()


@pytest.mark.parametrize("opener", ["memory", "cli-migrate", "restore"])
async def test_a_file_from_before_the_index_is_indexed_when_it_migrates(
    db_path: Path, opener: str, tmp_path: Path
) -> None:
    if opener == "restore":  # a backup taken before the index existed
        _file_before_the_index(tmp_path / "old-backup.db")
        await restore(db_path, tmp_path / "old-backup.db", cfg=fast_config(), now=NOW)
    else:
        _file_before_the_index(db_path)
    if opener == "cli-migrate":
        assert await anyio.to_thread.run_sync(cli.main, ["--db", str(db_path), "migrate"]) == 0
        assert FTS_MIGRATION in [
            r[0] for r in rows(db_path, "SELECT version FROM schema_migrations")
        ]
    cfg = fast_config(maintenance={"enabled": False})
    async with hlmem.open(db_path, config=cfg, create=False) as mem:
        for lang, query in OLD_QUERIES.items():
            found = await mem.recall(query, k=5)
            assert f"ev-old-{lang}" in [i.id for i in found.items], (lang, found.items)
    assert fts_rows(db_path, "event") == [
        ("event", f"ev-old-{lang}", "default", event_body(OLD_EVENTS[lang]))
        for lang in sorted(OLD_EVENTS)
    ]
