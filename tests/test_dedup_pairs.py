"""The protected-atom pairs through the real pipeline: events in, claims out.

Each pair gets its own namespace; its two texts arrive as explicit memory requests
("记住：…" / "remember: …") in two sessions, so they are two windows, two extractions and two
candidates that meet in the dedup stage. A must-not-merge pair leaves two claims and no merge;
a must-merge pair leaves one claim holding both events as evidence.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from atom_pairs import MUST_MERGE, MUST_NOT_MERGE
from helpers import fast_config, rows

import hlmem
from hlmem.lang import language_of
from hlmem.memory import Memory

pytestmark = pytest.mark.anyio


def request(text: str) -> str:
    return f"记住：{text}" if language_of(text) == "zh" else f"remember: {text}"


async def send_pairs(mem: Memory, pairs: list[tuple[str, str]], prefix: str) -> None:
    for i, (a, b) in enumerate(pairs):
        ns = f"{prefix}{i}"
        await mem.add_event("first", request(a), namespace=ns)
        await mem.add_event("second", request(b), namespace=ns)
    await mem.flush()
    await mem.drain(timeout_s=120)


def notes(db: Path, ns: str) -> list[tuple[str, str]]:
    return rows(
        db,
        "SELECT id, value FROM claims WHERE namespace = ? AND predicate = 'note'"
        " AND status IN ('active', 'superseded')",
        (ns,),
    )


def test_there_are_enough_pairs() -> None:
    assert len(MUST_NOT_MERGE) >= 40 and len(MUST_MERGE) >= 20
    for pairs in ([(a, b) for a, b, _ in MUST_NOT_MERGE], MUST_MERGE):
        langs = {language_of(a) for a, _ in pairs}
        assert langs == {"zh", "en"}


async def test_protected_atoms_keep_pairs_apart_through_the_pipeline(db_path: Path) -> None:
    pairs = [(a, b) for a, b, _ in MUST_NOT_MERGE]
    async with hlmem.open(db_path, config=fast_config()) as mem:
        await send_pairs(mem, pairs, "no")
    merged = []
    for i, (a, b) in enumerate(pairs):
        found = notes(db_path, f"no{i}")
        if len(found) != 2:
            merged.append((a, b, [v for _, v in found]))
    assert merged == []
    assert rows(db_path, "SELECT count(*) FROM claim_merges") == [(0,)]


async def test_near_duplicates_merge_into_one_claim_with_both_events(db_path: Path) -> None:
    async with hlmem.open(db_path, config=fast_config()) as mem:
        await send_pairs(mem, MUST_MERGE, "yes")
    kept_apart = []
    for i, (a, b) in enumerate(MUST_MERGE):
        found = notes(db_path, f"yes{i}")
        evidence = rows(
            db_path,
            "SELECT count(DISTINCT event_id) FROM evidence WHERE claim_id = ?",
            (found[0][0],),
        )
        if len(found) != 1 or evidence != [(2,)]:
            kept_apart.append((a, b, [v for _, v in found]))
    assert kept_apart == []
    assert rows(db_path, "SELECT count(*) FROM claim_merges")[0][0] == len(MUST_MERGE)
