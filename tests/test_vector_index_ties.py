"""VectorIndex top-k selection at scale: the sampled cut-off of ``top_rows`` picks the k
largest scores whatever their distribution, and equal scores at the k-th place go to the
earliest written vectors, the same on one thread or split over two (a memory holds many
restatements with identical vectors: identical scores are common, not a corner case)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hlmem.config import StoreConfig
from hlmem.index import VectorHit, VectorIndex, earliest_ties, top_rows, vector_rows
from hlmem.index import vectors as vector_index
from hlmem.store import Store

DIM = 32
MODEL, VERSION = "test-model", "v1"
NOW = "2026-01-01T00:00:00.000000+00:00"

Scores = np.ndarray[Any, np.dtype[np.float32]]


NAMES = [
    "distinct",
    "ascending",
    "descending",
    "few above a floor of zeros",
    "few above a negative floor",
    "coarse steps",
    "all equal",
]


def distributions(n: int) -> dict[str, Scores]:
    rng = np.random.default_rng(31)
    spread = rng.random(n).astype(np.float32)
    few_high = np.zeros(n, dtype=np.float32)
    few_high[rng.choice(n, 60, replace=False)] = rng.random(60).astype(np.float32) + 1
    steps = np.round(spread * 20) / 20  # 21 values: thousands tied at every one
    return {
        "distinct": spread,
        "ascending": np.sort(spread),
        "descending": np.sort(spread)[::-1].copy(),
        "few above a floor of zeros": few_high,
        "few above a negative floor": few_high - np.float32(0.5),
        "coarse steps": steps.astype(np.float32),
        "all equal": np.full(n, 0.25, dtype=np.float32),
    }


@pytest.mark.parametrize("name", NAMES)
def test_top_rows_finds_the_k_largest_through_its_sample(name: str) -> None:
    """300k scores (the sample step is 77): the k selected are k largest, for sorted,
    reversed, tied and mostly-equal scores alike."""
    scores = distributions(300_000)[name]
    assert list(distributions(100)) == NAMES
    for k in (1, 50, 500):
        rows = top_rows(scores, k)
        assert len(set(rows.tolist())) == k
        assert np.array_equal(np.sort(scores[rows]), np.sort(scores)[-k:])


def test_earliest_ties_keeps_the_lowest_seqs_at_the_cut() -> None:
    scores = np.array([0.9, 0.5, 0.5, 0.7, 0.5, 0.5, 0.1], dtype=np.float32)
    seqs = np.array([10, 60, 20, 30, 50, 40, 70], dtype=np.int64)
    chosen = earliest_ties(scores, np.array([0, 3, 1, 4]), seqs)  # two of four tied 0.5s
    assert sorted(chosen.tolist()) == [0, 2, 3, 5]  # the 0.5s written first: seqs 20 and 40
    no_tie = earliest_ties(scores, np.array([0, 3]), seqs)
    assert sorted(no_tie.tolist()) == [0, 3]


async def put(store: Store, rows: list[tuple[str, np.ndarray[Any, Any]]]) -> None:
    params = [
        ("claim", owner, "ns", MODEL, VERSION, DIM, vec.astype(np.float32).tobytes(), NOW)
        for owner, vec in rows
    ]
    async with store.transaction() as tx:
        await tx.executemany("vector_upsert", params)


def by_write_order(
    rows: list[tuple[str, np.ndarray[Any, Any]]], query: np.ndarray[Any, Any], k: int
) -> list[str]:
    """Brute force: cosine, best first, equal cosines in write order."""
    matrix = np.stack([v for _, v in rows]).astype(np.float64)
    cosines = matrix @ query / np.linalg.norm(matrix, axis=1) / np.linalg.norm(query)
    return [rows[i][0] for i in np.argsort(-cosines, kind="stable")[:k]]


@pytest.mark.anyio
@pytest.mark.parametrize("split", [False, True])
async def test_tied_vectors_rank_in_write_order_on_one_thread_or_two(
    db_path: Path, monkeypatch: pytest.MonkeyPatch, split: bool
) -> None:
    """3,000 vectors that restate 12 facts (identical vectors, written in a shuffled order;
    a delete moves the last row into its hole, so row order is not write order): for sparse
    queries the top k, cut in the middle of a run of ties, is brute force's with ties in
    write order, whether the partition is scanned whole or in two halves on two threads.
    (Queries of at most 8 non-zero values of 32: a dense query's BLAS product may round
    identical vectors differently by position.)"""
    monkeypatch.setattr(vector_rows, "SPARSE_MIN_ROWS", 100)
    monkeypatch.setattr(vector_rows, "_BLOCK_ROWS", 700)
    monkeypatch.setattr(vector_index, "SPLIT_MIN_FLOATS", 1 if split else 10**12)
    rng = np.random.default_rng(32)
    facts = np.zeros((12, DIM), dtype=np.float32)
    for fact in facts:
        fact[rng.choice(DIM, 4, replace=False)] = rng.standard_normal(4)
    rows = [(f"c{i}", facts[f]) for i, f in enumerate(rng.integers(0, 12, 3000))]
    s = await Store.open(db_path, StoreConfig())
    try:
        await put(s, rows)
        index = VectorIndex(MODEL, VERSION, DIM)
        await index.refresh(s)
        async with s.transaction() as tx:
            await tx.executemany("vector_delete_owner", [("claim", "c5"), ("claim", "c17")])
        rows = [r for r in rows if r[0] not in ("c5", "c17")]
        queries = [facts[i] + np.float32(0.3) * facts[(i + 1) % 12] for i in range(12)]
        for q in queries:
            for k in (7, 60, 300):
                hits: list[VectorHit] = await index.search(s, q, k, namespace="ns")
                assert [h.item_id for h in hits] == by_write_order(rows, q, k)
    finally:
        await s.close()
