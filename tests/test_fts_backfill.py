"""Re-derived full-text rows are the rows the pipeline writes: events re-indexed by
:func:`hlmem.index.fts.fts_backfill` get the extractor's body, claims re-indexed by it or by
maintenance get the dedup stage's. Events and claims come in through the real pipeline, in
Chinese and English; the assertions read the database file.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import fast_config, rows

import hlmem
from hlmem.index import FTS_DELETE, fts_backfill, fts_key
from hlmem.lang import default_lexicon

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
