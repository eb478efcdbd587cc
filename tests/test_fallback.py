"""The stdlib sqlite3 fallback (no extension loading, older SQLite) runs the whole pipeline."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import claim_items, fast_config

import hlmem

pytestmark = pytest.mark.anyio


async def test_pipeline_on_the_stdlib_sqlite3_module(db_path: Path) -> None:
    cfg = fast_config(store={"sqlite_module": "stdlib"})
    async with hlmem.open(db_path, config=cfg) as mem:
        assert mem.store.caps.driver == "sqlite3"
        assert mem.store.caps.vec_version is None
        await mem.add_events(
            [
                {"session_id": "s1", "content": "记住：我的猫叫小白"},
                {"session_id": "s1", "content": "Remember that the prod DB is db-prod-2."},
                {"session_id": "s1", "content": "好的", "event_id": "e-3"},
            ]
        )
        assert await mem.add_event("s1", "again", event_id="e-3") == "e-3"  # idempotent
        await mem.end_session("s1")
        await mem.drain(timeout_s=20)
        stats = await mem.stats()
        claims = {c.value for c in await mem.claims()}
        hits = await mem.recall("我的猫叫什么")
    assert stats.events == 3
    assert stats.windows == {"closed": 1}
    assert claims == {"我的猫叫小白", "the prod DB is db-prod-2"}
    assert claim_items(hits)[0].value == "我的猫叫小白"
