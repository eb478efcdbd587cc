"""The ANN backend of VectorIndex (hlmem.index.ann): usearch graphs over large partitions of
dense vectors, their candidates re-scored exactly.

On small stores, with ``min_vectors`` lowered so that graphs are built: the same hits as the
exact scan (ids and scores), namespaces kept apart before the top k, deleted vectors never
returned (a plain DELETE, the real ``Memory.forget``, a restore of a backup and a re-embedding
under another model version), models never mixed, the exact scan while a graph is building or
when usearch is missing, graphs saved beside the database and loaded only when they match it.
Real SQLite files in tmp dirs; builds are waited for, never slept on."""

from __future__ import annotations

import logging
import shutil
import sys
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import connect_raw, fast_config, put_vectors, rows

import hlmem
from hlmem.clock import ManualClock
from hlmem.config import StoreConfig
from hlmem.errors import ConfigError
from hlmem.index import AnnParams, VectorHit, VectorIndex, choose_backend, numpy_bytes
from hlmem.index import ann as ann_module
from hlmem.index import vectors as vector_index
from hlmem.lang import LocalEmbedder
from hlmem.portable import restore
from hlmem.store import Store

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not ann_module.available(), reason="usearch is not installed"),
]

DIM = 32
MODEL, VERSION = "test-dense", "v1"
#: graphs for partitions of 200 vectors or more; saved files off unless a test wants them
SMALL = AnnParams(min_vectors=200, save=False)

Row = tuple[str, str, str | None, np.ndarray[Any, Any]]


def clustered(rng: np.random.Generator, n: int, centres: np.ndarray[Any, Any]) -> Any:
    """Unit vectors around ``centres`` (restatements of the same facts, as a memory holds)."""
    picked = centres[rng.integers(0, len(centres), n)]
    vecs = picked + rng.normal(0, 0.15, (n, centres.shape[1]))
    return (vecs / np.linalg.norm(vecs, axis=1, keepdims=True)).astype(np.float32)


def unit(rng: np.random.Generator, n: int, dim: int = DIM) -> Any:
    vecs = rng.standard_normal((n, dim))
    return (vecs / np.linalg.norm(vecs, axis=1, keepdims=True)).astype(np.float32)


async def put(
    store: Store, rows: Iterable[Row], *, model: str = MODEL, version: str = VERSION
) -> None:
    await put_vectors(store, rows, model=model, version=version)


def sql(store: Store, statement: str, params: Any = ()) -> None:
    conn = connect_raw(store.path)
    try:
        conn.execute(statement, params)
    finally:
        conn.close()


def hits(found: list[VectorHit]) -> list[tuple[str, str]]:
    return [(h.kind, h.item_id) for h in found]


def ids(found: list[VectorHit]) -> list[str]:
    return [h.item_id for h in found]


async def ready(index: VectorIndex, store: Store) -> None:
    await index.refresh(store)
    await index.wait_for_graphs()


async def test_ann_equals_the_exact_scan_and_keeps_namespaces_apart(store: Store) -> None:
    """A big namespace (claims and events, each with a graph) and a small one in the same file:
    every query gets the exact scan's top k, ids and scores; the small namespace gets its own k
    nearest however many nearer vectors the big one holds."""
    rng = np.random.default_rng(1)
    centres = unit(rng, 40)
    big = clustered(rng, 1600, centres)
    data: list[Row] = [
        ("claim" if i % 2 else "event", f"b{i}", "big", v) for i, v in enumerate(big)
    ]
    data += [("claim", f"s{i}", "small", v) for i, v in enumerate(clustered(rng, 30, centres))]
    await put(store, data)
    approx = VectorIndex(MODEL, VERSION, DIM, backend="ann", ann_params=SMALL)
    exact = VectorIndex(MODEL, VERSION, DIM, backend="numpy")
    await ready(approx, store)
    assert approx.graphs() == {("big", "claim"): 800, ("big", "event"): 800}
    assert approx.backend == "ann"
    for q in clustered(rng, 30, centres):
        for namespace, k in (("big", 10), ("big", 50), ("small", 10)):
            want = await exact.search(store, q, k, namespace=namespace)
            got = await approx.search(store, q, k, namespace=namespace)
            assert hits(got) == hits(want)
            assert np.allclose([h.score for h in got], [h.score for h in want], atol=1e-6)
        small = await approx.search(store, q, 10, namespace="small")
        assert all(i.startswith("s") for i in ids(small)) and len(small) == 10
    assert approx.memory_bytes() > exact.memory_bytes()  # the graphs


async def test_vectors_written_after_the_graph_are_found_at_once(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A vector written after its partition's graph was built is searched exactly beside the
    graph's candidates until the graph takes it (then the graph holds it)."""
    monkeypatch.setattr(vector_index, "EXTEND_AFTER_VECTORS", 50)
    rng = np.random.default_rng(2)
    await put(store, [("claim", f"c{i}", "ns", v) for i, v in enumerate(unit(rng, 400))])
    index = VectorIndex(MODEL, VERSION, DIM, backend="ann", ann_params=SMALL)
    await ready(index, store)
    assert index.graphs() == {("ns", "claim"): 400}
    fresh = unit(rng, 80)
    await put(store, [("claim", f"n{i}", "ns", v) for i, v in enumerate(fresh)])
    for i in (0, 41, 79):  # before the graph took them
        assert ids(await index.search(store, fresh[i], 1, namespace="ns")) == [f"n{i}"]
    await index.wait_for_graphs()
    assert index.graphs() == {("ns", "claim"): 480}
    for i in (0, 79):
        assert ids(await index.search(store, fresh[i], 1, namespace="ns")) == [f"n{i}"]


async def test_deleted_and_reembedded_vectors_are_never_returned(store: Store) -> None:
    """Deleted after the graph was built (a plain DELETE, the named forget query) or replaced by
    another model version's vector: no search returns them, even with their own vector as the
    query, and every search still gets k hits."""
    rng = np.random.default_rng(3)
    vecs = unit(rng, 600)
    await put(store, [("claim", f"c{i}", "ns", v) for i, v in enumerate(vecs)])
    index = VectorIndex(MODEL, VERSION, DIM, backend="ann", ann_params=SMALL)
    await ready(index, store)
    assert ids(await index.search(store, vecs[5], 1, namespace="ns")) == ["c5"]
    sql(store, "DELETE FROM vectors WHERE owner_id IN ('c5', 'c6')")
    async with store.transaction() as tx:
        await tx.execute("vector_delete_owner", ("claim", "c7"))
    await put(store, [("claim", "c8", "ns", vecs[8])], version="v2")  # re-embedded
    gone = {"c5", "c6", "c7", "c8"}
    for i in (5, 6, 7, 8):
        found = await index.search(store, vecs[i], 10, namespace="ns")
        assert len(found) == 10 and not gone & set(ids(found))
    # Most of the graph deleted: it is rebuilt without them, and still never returns them.
    sql(store, "DELETE FROM vectors WHERE CAST(substr(owner_id, 2) AS INTEGER) BETWEEN 100 AND 300")
    await index.refresh(store)
    await index.wait_for_graphs()
    assert index.graphs() == {("ns", "claim"): 600 - 4 - 201}
    exact = VectorIndex(MODEL, VERSION, DIM)
    for i in (5, 150, 301):
        want = await exact.search(store, vecs[i], 10, namespace="ns")
        assert hits(await index.search(store, vecs[i], 10, namespace="ns")) == hits(want)


async def test_models_and_versions_never_mix(store: Store) -> None:
    rng = np.random.default_rng(4)
    vecs = unit(rng, 300)
    await put(store, [("claim", f"a{i}", "ns", v) for i, v in enumerate(vecs)])
    await put(store, [("claim", f"b{i}", "ns", v) for i, v in enumerate(vecs)], model="other")
    await put(store, [("claim", f"c{i}", "ns", v) for i, v in enumerate(vecs[:250])], version="v2")
    mine = VectorIndex(MODEL, VERSION, DIM, backend="ann", ann_params=SMALL)
    theirs = VectorIndex("other", VERSION, DIM, backend="ann", ann_params=SMALL)
    await ready(mine, store)
    await ready(theirs, store)
    assert mine.graphs() == {("ns", "claim"): 300} and theirs.graphs() == {("ns", "claim"): 300}
    for q in vecs[:20]:
        assert all(i.startswith("a") for i in ids(await mine.search(store, q, 20, namespace="ns")))
        assert all(
            i.startswith("b") for i in ids(await theirs.search(store, q, 20, namespace="ns"))
        )


async def test_the_exact_scan_serves_while_the_graph_is_building(store: Store) -> None:
    rng = np.random.default_rng(5)
    vecs = unit(rng, 500)
    await put(store, [("claim", f"c{i}", "ns", v) for i, v in enumerate(vecs)])
    index = VectorIndex(MODEL, VERSION, DIM, backend="ann", ann_params=SMALL)
    exact = VectorIndex(MODEL, VERSION, DIM)
    with index.hold_graph_builds():
        for q in vecs[:5]:
            got = await index.search(store, q, 10, namespace="ns")
            assert hits(got) == hits(await exact.search(store, q, 10, namespace="ns"))
        assert index.graphs() == {}  # asked for, not started
    await index.wait_for_graphs()
    assert index.graphs() == {("ns", "claim"): 500}


async def test_without_usearch(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """The library missing: 'ann' is a configuration error that says what to install, 'auto'
    scans exactly."""
    monkeypatch.setitem(sys.modules, "usearch", None)
    monkeypatch.setitem(sys.modules, "usearch.index", None)
    assert not ann_module.available()
    with pytest.raises(ConfigError, match="usearch"):
        VectorIndex(MODEL, VERSION, DIM, backend="ann")
    rng = np.random.default_rng(6)
    vecs = unit(rng, 300)
    await put(store, [("claim", f"c{i}", "ns", v) for i, v in enumerate(vecs)])
    index = VectorIndex(MODEL, VERSION, DIM, backend="auto", ann_params=SMALL)
    assert ids(await index.search(store, vecs[3], 1, namespace="ns")) == ["c3"]
    assert index.backend == "numpy" and index.graphs() == {}


async def test_auto_picks_ann_for_large_dense_partitions_only(store: Store) -> None:
    rng = np.random.default_rng(7)
    sparse = np.zeros((300, DIM), dtype=np.float32)
    for row in sparse:  # hashed features: a few dimensions each
        row[rng.choice(DIM, 3, replace=False)] = rng.standard_normal(3)
    await put(store, [("claim", f"s{i}", "ns", v) for i, v in enumerate(sparse)], model="hashed")
    hashed = VectorIndex("hashed", VERSION, DIM, backend="auto", ann_params=SMALL)
    await ready(hashed, store)
    assert hashed.backend == "numpy" and hashed.graphs() == {}
    await put(store, [("claim", f"d{i}", "ns", v) for i, v in enumerate(unit(rng, 150))])
    dense = VectorIndex(MODEL, VERSION, DIM, backend="auto", ann_params=SMALL)
    await ready(dense, store)
    assert dense.backend == "numpy"  # 150 < min_vectors
    await put(store, [("claim", f"e{i}", "ns", v) for i, v in enumerate(unit(rng, 100))])
    await ready(dense, store)
    grown: str = dense.backend
    assert grown == "ann" and dense.graphs() == {("ns", "claim"): 250}


def test_choose_backend_counts_the_graphs() -> None:
    n, dim = 100_000, 384
    numpy_mib = numpy_bytes(n, dim) / 2**20
    graphs_mib = n * ann_module.GRAPH_BYTES_PER_VECTOR / 2**20
    both = numpy_mib + graphs_mib
    assert choose_backend(rows=n, dim=dim, numpy_max_mib=both + 1, graph_rows=n) == "ann"
    assert choose_backend(rows=n, dim=dim, numpy_max_mib=both - 1, graph_rows=n) == "numpy"
    assert choose_backend(rows=n, dim=dim, numpy_max_mib=both + 1) == "numpy"
    with pytest.raises(ConfigError):
        AnnParams(stale_share=1.5)
    with pytest.raises(ConfigError):
        AnnParams(min_vectors=0)


async def test_saved_graphs_load_only_when_they_match(
    store: Store, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A graph is saved beside the database and loaded by the next index; a file copied from
    another store is refused (rebuilt); the first deletion removes the file, which then holds
    a deleted vector."""
    caplog.set_level(logging.INFO, logger="hlmem.index.vectors")
    params = AnnParams(min_vectors=200, save=True)
    rng = np.random.default_rng(8)
    vecs = unit(rng, 400)
    await put(store, [("claim", f"c{i}", "ns", v) for i, v in enumerate(vecs)])
    first = VectorIndex(MODEL, VERSION, DIM, backend="ann", ann_params=params)
    await ready(first, store)
    folder = store.path.with_name(store.path.name + ".ann")
    files = sorted(p.name for p in folder.iterdir())
    assert len(files) == 2 and files[0].endswith(".json") and files[1].endswith(".usearch")

    def how() -> list[str]:
        found = [
            str(getattr(r, "how", ""))
            for r in caplog.records
            if getattr(r, "action", "") == "ann_graph_ready"
        ]
        caplog.clear()
        return found

    assert how() == ["built"]
    second = VectorIndex(MODEL, VERSION, DIM, backend="ann", ann_params=params)
    await ready(second, store)
    assert how() == ["loaded"] and second.graphs() == {("ns", "claim"): 400}
    assert ids(await second.search(store, vecs[9], 1, namespace="ns")) == ["c9"]

    # A truncated file is refused (and replaced by the rebuild).
    graph_path = next(p for p in folder.iterdir() if p.suffix == ".usearch")
    whole = graph_path.read_bytes()
    graph_path.write_bytes(whole[: len(whole) // 2])
    cut = VectorIndex(MODEL, VERSION, DIM, backend="ann", ann_params=params)
    await ready(cut, store)
    assert how() == ["built"] and graph_path.stat().st_size > len(whole) // 2

    # Another store with the same partition, other vectors: the copied file is refused.
    other = await Store.open(tmp_path / "other.db", StoreConfig())
    try:
        await put(other, [("claim", f"c{i}", "ns", v) for i, v in enumerate(unit(rng, 400))])
        shutil.copytree(folder, other.path.with_name(other.path.name + ".ann"))
        third = VectorIndex(MODEL, VERSION, DIM, backend="ann", ann_params=params)
        await ready(third, other)
        assert how() == ["built"]
    finally:
        await other.close()

    sql(store, "DELETE FROM vectors WHERE owner_id = 'c9'")
    await second.refresh(store)
    assert not any(p.suffix == ".usearch" for p in folder.iterdir())
    assert "c9" not in ids(await second.search(store, vecs[9], 5, namespace="ns"))


# --- through the memory: forget, restore ---------------------------------------------------------


async def test_forget_and_restore_never_bring_a_vector_back(tmp_path: Path) -> None:
    """Claims written through the memory get dense vectors (under the memory's own model, as a
    real model would give them); a graph is built over them. ``Memory.forget`` removes one, a
    restore of a backup taken before another forget re-applies that forget: neither vector is
    ever returned again, by the index that saw it all or by a new one on the restored file."""
    db = tmp_path / "mem.db"
    config = fast_config()
    embedder = LocalEmbedder(config.embedder.dim)
    model = (embedder.model_id, embedder.model_version, config.embedder.dim)
    rng = np.random.default_rng(9)
    params = AnnParams(min_vectors=100, save=True)
    clock = ManualClock(datetime(2026, 3, 1, tzinfo=UTC))
    async with hlmem.open(db, config=config, clock=clock) as mem:
        for i in range(150):
            await mem.remember(f"user{i}", "likes", f"colour {i}", namespace="ns")
        await mem.drain(timeout_s=30)
        claim_ids = [r[0] for r in rows(db, "SELECT id FROM claims ORDER BY id")]
        assert len(claim_ids) == 150
        vecs = unit(rng, len(claim_ids), model[2])
        await put(
            mem.store,
            [("claim", c, "ns", v) for c, v in zip(claim_ids, vecs, strict=True)],
            model=model[0],
            version=model[1],
        )
        index = VectorIndex(*model, backend="ann", ann_params=params)
        await ready(index, mem.store)
        assert index.graphs()[("ns", "claim")] == 150
        first, second = claim_ids[10], claim_ids[20]
        assert ids(await index.search(mem.store, vecs[10], 1, namespace="ns")) == [first]
        await mem.backup(tmp_path / "before.db")
        await mem.forget(claim_id=first)
        await mem.forget(claim_id=second)
        for q in (vecs[10], vecs[20]):
            found = ids(await index.search(mem.store, q, 10, namespace="ns"))
            assert first not in found and second not in found and len(found) == 10
    # The backup still has both; the restore re-applies the forgets made since.
    await restore(db, tmp_path / "before.db", cfg=config, now=datetime(2026, 3, 2, tzinfo=UTC))
    store = await Store.open(db, StoreConfig())
    try:
        fresh = VectorIndex(*model, backend="ann", ann_params=params)
        for idx in (index, fresh):
            await ready(idx, store)
            for q in (vecs[10], vecs[20]):
                found = ids(await idx.search(store, q, 10, namespace="ns"))
                assert first not in found and second not in found and len(found) == 10
    finally:
        await store.close()


async def test_a_file_holding_a_vector_deleted_meanwhile_is_removed_at_load(store: Store) -> None:
    """A vector deleted while no index ran (a CLI forget): the next index loads the saved graph,
    finds the vector dead, removes the file before the graph serves, and never returns it."""
    params = AnnParams(min_vectors=200, save=True)
    rng = np.random.default_rng(10)
    vecs = unit(rng, 300)
    await put(store, [("claim", f"c{i}", "ns", v) for i, v in enumerate(vecs)])
    await ready(VectorIndex(MODEL, VERSION, DIM, backend="ann", ann_params=params), store)
    folder = store.path.with_name(store.path.name + ".ann")
    assert any(p.suffix == ".usearch" for p in folder.iterdir())
    sql(store, "DELETE FROM vectors WHERE owner_id = 'c4'")
    later = VectorIndex(MODEL, VERSION, DIM, backend="ann", ann_params=params)
    await ready(later, store)
    assert later.graphs() == {("ns", "claim"): 300}  # loaded, with the dead vector in it
    assert not any(p.suffix == ".usearch" for p in folder.iterdir())
    assert "c4" not in ids(await later.search(store, vecs[4], 10, namespace="ns"))
