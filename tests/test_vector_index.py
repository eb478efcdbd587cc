"""VectorIndex: exact top-k against a brute-force reference, incremental refresh (inserts,
updates, deletes, a pruned deletion log), filters, model versions, both backends, the stdlib
fallback, and the 0005 migration of existing vector rows."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable, Sequence
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest
from helpers import VECTOR_ROW_TIME, connect_raw, put_vectors

from hlmem.config import StoreConfig
from hlmem.errors import ConfigError, InputError
from hlmem.index import (
    Backend,
    Prefilter,
    VectorHit,
    VectorIndex,
    choose_backend,
    numpy_bytes,
    vector_rows,
)
from hlmem.index import vectors as vector_index
from hlmem.store import Store, migrations

pytestmark = pytest.mark.anyio

DIM = 32
MODEL, VERSION = "test-model", "v1"
NOW = VECTOR_ROW_TIME

Row = tuple[str, str, str | None, np.ndarray[Any, Any]]  # kind, id, namespace, vector


@pytest.fixture(params=["numpy", "sqlite-vec"])
def backend(request: pytest.FixtureRequest) -> Backend:
    value: Backend = request.param
    return value


@pytest.fixture
async def store(db_path: Path, backend: Backend) -> AsyncIterator[Store]:
    s = await Store.open(db_path, StoreConfig())
    try:
        if backend == "sqlite-vec" and s.caps.vec_version is None:
            pytest.skip("sqlite-vec does not load here")
        yield s
    finally:
        await s.close()


def unit(rng: np.random.Generator, n: int, dim: int = DIM) -> np.ndarray[Any, Any]:
    vecs = rng.standard_normal((n, dim)).astype(np.float32)
    out: np.ndarray[Any, Any] = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
    return out


async def put(
    store: Store, rows: Iterable[Row], *, model: str = MODEL, version: str = VERSION
) -> None:
    await put_vectors(store, rows, model=model, version=version)


async def sql(store: Store, statement: str, params: Sequence[Any] = ()) -> None:
    """A statement no named query covers (a plain DELETE or UPDATE, as other code may do), on
    a connection of its own (the same SQLite library, as helpers.connect_raw requires)."""
    conn = connect_raw(store.path)
    try:
        conn.execute(statement, params)
    finally:
        conn.close()


def reference(
    rows: Sequence[Row], query: np.ndarray[Any, Any], k: int, namespace: str, kinds: set[str]
) -> list[tuple[str, str, float]]:
    """Brute force: every matching row's cosine, sorted (ties by write order), first k."""
    keep = [
        (kind, owner, vec) for kind, owner, ns, vec in rows if ns == namespace and kind in kinds
    ]
    if not keep:
        return []
    matrix = np.stack([vec for _, _, vec in keep]).astype(np.float64)
    cosines = matrix @ query / np.linalg.norm(matrix, axis=1) / np.linalg.norm(query)
    order = np.argsort(-cosines, kind="stable")[:k]
    return [(keep[i][0], keep[i][1], float(cosines[i])) for i in order]


def ids(hits: list[VectorHit]) -> list[str]:
    return [h.item_id for h in hits]


async def test_exact_top_k_equals_brute_force(store: Store, backend: Backend) -> None:
    rng = np.random.default_rng(7)
    vecs = unit(rng, 1500) * rng.uniform(0.5, 2.0, (1500, 1)).astype(np.float32)  # not unit
    kinds = ("claim", "event", "observation")
    rows = [(kinds[i % 3], f"o{i}", "ns-a" if i % 4 else "ns-b", v) for i, v in enumerate(vecs)]
    await put(store, rows)
    index = VectorIndex(MODEL, VERSION, DIM, backend=backend)
    for q in unit(rng, 20):
        for namespace, wanted in (("ns-a", {"claim", "event"}), ("ns-b", {"observation"})):
            hits = await index.search(store, q, 10, namespace=namespace, kinds=wanted)
            expected = reference(rows, q, 10, namespace, wanted)
            assert [(h.kind, h.item_id) for h in hits] == [(k, o) for k, o, _ in expected]
            assert np.allclose([h.score for h in hits], [s for _, _, s in expected], atol=1e-5)
    assert len(await index.search(store, unit(rng, 1)[0], 5000, namespace="ns-b")) == 250


async def test_refresh_sees_inserts_updates_and_deletes(store: Store, backend: Backend) -> None:
    rng = np.random.default_rng(1)
    a, b, c = unit(rng, 3)
    index = VectorIndex(MODEL, VERSION, DIM, backend=backend)
    assert await index.refresh(store) == 0
    assert len(index) == 0

    await put(store, [("claim", "c1", "ns", a), ("claim", "c2", "ns", b)])
    assert await index.refresh(store) == 2
    assert len(index) == 2
    assert await index.refresh(store) == 0  # nothing changed: nothing read
    assert ids(await index.search(store, a, 1, namespace="ns")) == ["c1"]

    await put(store, [("claim", "c1", "ns", c)])  # vector_upsert replaces c1's vector
    assert await index.refresh(store) >= 1
    hits = await index.search(store, c, 2, namespace="ns")
    assert ids(hits) == ["c1", "c2"] and hits[0].score == pytest.approx(1.0, abs=1e-5)

    await sql(store, "UPDATE vectors SET vector = ? WHERE owner_id = 'c2'", (a.tobytes(),))
    assert await index.refresh(store) >= 1  # an in-place UPDATE moves the row to a new seq
    assert ids(await index.search(store, a, 1, namespace="ns")) == ["c2"]

    await sql(store, "DELETE FROM vectors WHERE owner_id = 'c1'")
    assert await index.refresh(store) >= 1
    assert ids(await index.search(store, c, 5, namespace="ns")) == ["c2"]
    assert len(index) == 1

    await put(store, [("claim", "c1", "ns", c)])  # deleted, then back
    assert ids(await index.search(store, c, 1, namespace="ns")) == ["c1"]
    await index.refresh(store)  # sqlite-vec counts rows on refresh, not on search
    assert len(index) == 2


async def test_search_refreshes_by_itself(store: Store, backend: Backend) -> None:
    rng = np.random.default_rng(2)
    a, b = unit(rng, 2)
    index = VectorIndex(MODEL, VERSION, DIM, backend=backend)
    assert await index.search(store, a, 3, namespace="ns") == []
    await put(store, [("claim", "c1", "ns", a)])
    assert ids(await index.search(store, a, 3, namespace="ns")) == ["c1"]
    async with store.transaction() as tx:
        await tx.execute("vector_delete_owner", ("claim", "c1"))
    await put(store, [("event", "e1", "ns", b)])
    assert ids(await index.search(store, a, 3, namespace="ns")) == ["e1"]


async def test_deletions_and_regrowth_keep_search_exact(store: Store, backend: Backend) -> None:
    """Enough rows to grow the matrix past its first capacity, most deleted (the numpy
    backend compacts), then more written: still equal to brute force."""
    rng = np.random.default_rng(3)
    vecs = unit(rng, 3000)
    rows = [("claim", f"c{i}", "ns", v) for i, v in enumerate(vecs)]
    await put(store, rows)
    index = VectorIndex(MODEL, VERSION, DIM, backend=backend)
    assert await index.refresh(store) == 3000
    await sql(store, "DELETE FROM vectors WHERE CAST(substr(owner_id, 2) AS INTEGER) % 10 != 0")
    assert await index.refresh(store) >= 2700
    assert len(index) == 300
    more = [("claim", f"d{i}", "ns", v) for i, v in enumerate(unit(rng, 500))]
    await put(store, more)
    kept = [r for r in rows if int(r[1][1:]) % 10 == 0] + more
    for q in unit(rng, 5):
        hits = await index.search(store, q, 7, namespace="ns")
        assert ids(hits) == [o for _, o, _ in reference(kept, q, 7, "ns", {"claim"})]
    if backend == "numpy":
        assert index.memory_bytes() < 4096 * DIM * 4 + 1_000_000  # compacted, not 3000+ rows


async def test_a_pruned_deletion_log_forces_a_reload(store: Store, backend: Backend) -> None:
    rng = np.random.default_rng(4)
    a, b, c = unit(rng, 3)
    await put(store, [("claim", "c1", "ns", a), ("claim", "c2", "ns", b)])
    index = VectorIndex(MODEL, VERSION, DIM, backend=backend)
    await index.refresh(store)
    await sql(store, "DELETE FROM vectors WHERE owner_id = 'c1'")
    async with store.transaction() as tx:
        await tx.execute("vector_deletions_prune", {"upto": 10**9})
    await put(store, [("claim", "c3", "ns", c)])
    changed = await index.refresh(store)
    if backend == "numpy":
        assert changed == 2  # reloaded: c2 and c3
    assert sorted(ids(await index.search(store, a, 5, namespace="ns"))) == ["c2", "c3"]


async def test_another_store_or_a_restored_file_reloads(
    store: Store, backend: Backend, tmp_path: Path
) -> None:
    rng = np.random.default_rng(16)
    a, b = unit(rng, 2)
    await put(store, [("claim", "c1", "ns", a), ("claim", "c2", "ns", b)])
    index = VectorIndex(MODEL, VERSION, DIM, backend=backend)
    assert len(await index.search(store, a, 5, namespace="ns")) == 2
    other = await Store.open(tmp_path / "other.db", StoreConfig())
    try:
        await put(other, [("claim", "x1", "ns", b)])
        assert ids(await index.search(other, a, 5, namespace="ns")) == ["x1"]
    finally:
        await other.close()
    assert sorted(ids(await index.search(store, a, 5, namespace="ns"))) == ["c1", "c2"]


async def test_concurrent_writes_and_searches_end_exact(store: Store, backend: Backend) -> None:
    """Searches (each refreshing) race with writers that insert, replace and delete."""
    rng = np.random.default_rng(17)
    index = VectorIndex(MODEL, VERSION, DIM, backend=backend)
    vecs = unit(rng, 600)
    queries = unit(rng, 40)

    async def writer() -> None:
        for start in range(0, 600, 50):
            await put(
                store, [("claim", f"c{i % 400}", "ns", vecs[i]) for i in range(start, start + 50)]
            )
            await sql(store, "DELETE FROM vectors WHERE owner_id = ?", (f"c{start // 3}",))

    async def reader() -> None:
        for q in queries:
            await index.search(store, q, 5, namespace="ns")

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            tg.start_soon(writer)
            tg.start_soon(reader)
            tg.start_soon(reader)
    latest: dict[str, np.ndarray[Any, Any]] = {}
    for start in range(0, 600, 50):
        for i in range(start, start + 50):
            latest[f"c{i % 400}"] = vecs[i]
        latest.pop(f"c{start // 3}", None)
    rows = [("claim", owner, "ns", vec) for owner, vec in latest.items()]
    for q in queries[:10]:
        assert ids(await index.search(store, q, 5, namespace="ns")) == [
            o for _, o, _ in reference(rows, q, 5, "ns", {"claim"})
        ]


async def test_namespace_and_kind_filters(store: Store, backend: Backend) -> None:
    rng = np.random.default_rng(5)
    q = unit(rng, 1)[0]
    near = q + 0.01 * unit(rng, 1)[0]
    await put(
        store,
        [
            ("claim", "c-here", "here", near),
            ("event", "e-here", "here", near),
            ("observation", "o-here", "here", near),
            ("claim", "c-there", "there", near),
        ],
    )
    index = VectorIndex(MODEL, VERSION, DIM, backend=backend)
    found = await index.search(store, q, 10, namespace="here")
    assert sorted(ids(found)) == ["c-here", "e-here"]  # claims and events by default
    assert {h.kind for h in found} == {"claim", "event"}
    events = await index.search(store, q, 10, namespace="here", kinds=["event"])
    assert ids(events) == ["e-here"]
    all_kinds = await index.search(
        store, q, 10, namespace="here", kinds=("claim", "event", "observation")
    )
    assert len(all_kinds) == 3
    assert ids(await index.search(store, q, 10, namespace="there")) == ["c-there"]
    assert await index.search(store, q, 10, namespace="nowhere") == []
    assert await index.search(store, q, 10, namespace="here", kinds=()) == []
    with pytest.raises(InputError):
        await index.search(store, q, 10, namespace="here", kinds=["episode"])


async def test_allow_restricts_candidates_before_top_k(store: Store, backend: Backend) -> None:
    rng = np.random.default_rng(6)
    q = unit(rng, 1)[0]
    others = unit(rng, 50)
    rows: list[Row] = [("claim", f"near{i}", "ns", q + 0.05 * v) for i, v in enumerate(others)]
    rows += [("claim", "far1", "ns", others[0]), ("claim", "far2", "ns", others[1])]
    rows += [("claim", "elsewhere", "other", q)]
    await put(store, rows)
    index = VectorIndex(MODEL, VERSION, DIM, backend=backend)
    top = await index.search(store, q, 2, namespace="ns")
    assert all(i.startswith("near") for i in ids(top))
    allowed = await index.search(store, q, 2, namespace="ns", allow=["far1", "far2", "elsewhere"])
    assert sorted(ids(allowed)) == ["far1", "far2"]  # the far ones are the top-k of the allowed
    assert await index.search(store, q, 2, namespace="ns", allow=[]) == []
    assert await index.search(store, q, 2, namespace="ns", allow=["missing"]) == []


async def test_model_versions_never_mix(store: Store, backend: Backend) -> None:
    rng = np.random.default_rng(8)
    a, b = unit(rng, 2)
    await put(store, [("claim", "c1", "ns", a), ("claim", "c2", "ns", b)])
    await put(store, [("claim", "c3", "ns", a)], version="v2")
    await put(store, [("claim", "c4", "ns", a)], model="other-model")
    await put(store, [("claim", "c5", "ns", unit(rng, 1, 16)[0])], version="v1-16")
    v1 = VectorIndex(MODEL, VERSION, DIM, backend=backend)
    v2 = VectorIndex(MODEL, "v2", DIM, backend=backend)
    assert ids(await v1.search(store, a, 10, namespace="ns")) == ["c1", "c2"]
    assert ids(await v2.search(store, a, 10, namespace="ns")) == ["c3"]
    # Re-embedding c1 with v2 replaces its row (one vector per owner and model): it leaves v1.
    await put(store, [("claim", "c1", "ns", a)], version="v2")
    assert ids(await v1.search(store, a, 10, namespace="ns")) == ["c2"]
    assert ids(await v2.search(store, a, 10, namespace="ns")) == ["c3", "c1"]  # tie: seq order
    await v1.refresh(store)
    assert len(v1) == 1


async def test_zero_vectors(store: Store, backend: Backend) -> None:
    rng = np.random.default_rng(9)
    a = unit(rng, 1)[0]
    zero = np.zeros(DIM, dtype=np.float32)
    await put(store, [("claim", "c1", "ns", a), ("claim", "empty", "ns", zero)])
    index = VectorIndex(MODEL, VERSION, DIM, backend=backend)
    assert await index.search(store, zero, 5, namespace="ns") == []  # nothing is near nothing
    hits = await index.search(store, a, 5, namespace="ns")
    assert ids(hits) == ["c1", "empty"]
    assert hits[1].score == 0.0  # a stored zero vector is like an orthogonal one


async def test_empty_index_and_bad_queries(store: Store, backend: Backend) -> None:
    index = VectorIndex(MODEL, VERSION, DIM, backend=backend)
    q = unit(np.random.default_rng(10), 1)[0]
    assert await index.search(store, q, 5, namespace="ns") == []
    assert await index.search(store, q, 0, namespace="ns") == []
    assert len(index) == 0
    with pytest.raises(InputError):
        await index.search(store, q[:5], 5, namespace="ns")
    with pytest.raises(InputError):
        await index.search(store, np.full(DIM, np.nan), 5, namespace="ns")
    with pytest.raises(ConfigError):
        VectorIndex(MODEL, VERSION, DIM, backend="faiss")  # type: ignore[arg-type]


async def test_both_backends_agree(db_path: Path) -> None:
    s = await Store.open(db_path, StoreConfig())
    try:
        if s.caps.vec_version is None:
            pytest.skip("sqlite-vec does not load here")
        rng = np.random.default_rng(11)
        await put(s, [("claim", f"c{i}", "ns", v) for i, v in enumerate(unit(rng, 400))])
        exact = VectorIndex(MODEL, VERSION, DIM)
        vec = VectorIndex(MODEL, VERSION, DIM, backend="sqlite-vec")
        for q in unit(rng, 10):
            mine = await exact.search(s, q, 8, namespace="ns")
            theirs = await vec.search(s, q, 8, namespace="ns")
            assert ids(mine) == ids(theirs)
            assert np.allclose([h.score for h in mine], [h.score for h in theirs], atol=1e-5)
        assert exact.memory_bytes() > 400 * DIM * 4 and vec.memory_bytes() == 0
    finally:
        await s.close()


async def test_writers_without_namespace_or_with_update_are_seen(
    store: Store, backend: Backend
) -> None:
    """A writer that passes no namespace (the embedder stage) gets the claim's, by trigger; an
    upsert that updates in place (``ON CONFLICT DO UPDATE``, as older code wrote) is moved to a
    new seq by trigger, so the index sees every new vector."""
    rng = np.random.default_rng(12)
    a, b = unit(rng, 2)
    await sql(
        store,
        "INSERT INTO claims (id, namespace, subject, predicate, value, text, content_hash,"
        " slot_key, recorded_at) VALUES ('c1', 'ns', 'user', 'note', 'x', 'x', 'h', 's', ?)",
        (NOW,),
    )
    index = VectorIndex(MODEL, VERSION, DIM, backend=backend)
    await put(store, [("claim", "c1", None, a)])
    hits = await index.search(store, a, 1, namespace="ns")
    assert ids(hits) == ["c1"] and hits[0].score == pytest.approx(1.0, abs=1e-5)
    await sql(
        store,
        "INSERT INTO vectors (owner_kind, owner_id, model_id, model_version, dim, vector,"
        " created_at) VALUES ('claim', 'c1', ?, ?, ?, ?, ?) ON CONFLICT (owner_kind, owner_id,"
        " model_id) DO UPDATE SET vector = excluded.vector",
        (MODEL, VERSION, DIM, b.tobytes(), NOW),
    )
    hits = await index.search(store, b, 1, namespace="ns")
    assert ids(hits) == ["c1"] and hits[0].score == pytest.approx(1.0, abs=1e-5)


async def test_stdlib_fallback(tmp_path: Path) -> None:
    """Without the extension the numpy backend works and sqlite-vec says what is missing.
    (Its own file: never the same file through two SQLite libraries in one process.)"""
    s = await Store.open(tmp_path / "stdlib.db", StoreConfig(sqlite_module="stdlib"))
    try:
        assert s.caps.vec_version is None
        rng = np.random.default_rng(13)
        a, b = unit(rng, 2)
        await put(s, [("claim", "c1", "ns", a), ("event", "e1", "ns", b)])
        numpy_index = VectorIndex(MODEL, VERSION, DIM)
        assert ids(await numpy_index.search(s, a, 2, namespace="ns")) == ["c1", "e1"]
        vec_index = VectorIndex(MODEL, VERSION, DIM, backend="sqlite-vec")
        with pytest.raises(ConfigError, match="sqlite-vec extension"):
            await vec_index.search(s, a, 2, namespace="ns")
        with pytest.raises(ConfigError, match="numpy"):
            await vec_index.refresh(s)
    finally:
        await s.close()


async def test_migration_keeps_vectors_and_backfills_namespace(db_path: Path) -> None:
    """A file at 0004 with vector rows: 0005 keeps every row, takes the namespace from the claim
    or event, and gives each a seq the index reads."""
    rng = np.random.default_rng(14)
    a, b, c = unit(rng, 3)
    conn = connect_raw(db_path)
    conn.execute(
        "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL,"
        " applied_at TEXT NOT NULL)"
    )
    for version, name, script in migrations():
        if version < 5:
            conn.executescript(script)
            conn.execute("INSERT INTO schema_migrations VALUES (?, ?, 'then')", (version, name))
    conn.execute(
        "INSERT INTO events (id, namespace, session_id, role, content, content_hash, occurred_at,"
        " recorded_at, origin_class, session_kind) VALUES ('e1', 'ns-e', 's', 'user', 'hi', 'h',"
        " ?, ?, 'user_direct', 'interactive')",
        (NOW, NOW),
    )
    conn.execute(
        "INSERT INTO claims (id, namespace, subject, predicate, value, text, content_hash,"
        " slot_key, recorded_at) VALUES ('c1', 'ns-c', 'user', 'note', 'x', 'x', 'h', 's', ?)",
        (NOW,),
    )
    old = "INSERT INTO vectors VALUES (?, ?, ?, ?, ?, ?, ?)"
    for kind, owner, vec in (("claim", "c1", a), ("event", "e1", b), ("claim", "gone", c)):
        conn.execute(old, (kind, owner, MODEL, VERSION, DIM, vec.tobytes(), NOW))
    conn.close()

    s = await Store.open(db_path, StoreConfig())
    try:
        index = VectorIndex(MODEL, VERSION, DIM)
        assert await index.refresh(s) == 3
        assert ids(await index.search(s, a, 5, namespace="ns-c")) == ["c1"]
        assert ids(await index.search(s, b, 5, namespace="ns-e")) == ["e1"]
    finally:
        await s.close()
    check = connect_raw(db_path)
    try:
        got = check.execute("SELECT seq, owner_id, namespace FROM vectors ORDER BY seq").fetchall()
        assert sorted((owner, ns) for _, owner, ns in got) == [
            ("c1", "ns-c"),
            ("e1", "ns-e"),
            ("gone", None),  # its owner is unknown: kept, found by no namespace search
        ]
        assert len({seq for seq, _, _ in got}) == 3
    finally:
        check.close()


async def test_prefilter_rescores_candidates_exactly(db_path: Path) -> None:
    """SimHash candidates, float32 scores: every hit's score is its exact cosine, recall@10 is
    high, a stored vector finds itself after updates and deletes, and a scan smaller than
    ``min_rows`` (or than the candidate count) stays exact."""
    s = await Store.open(db_path, StoreConfig())
    try:
        rng = np.random.default_rng(15)
        rows = [("claim", f"c{i}", "ns", v) for i, v in enumerate(unit(rng, 3000))]
        rows += [("claim", f"x{i}", "other", v) for i, v in enumerate(unit(rng, 500))]
        await put(s, rows)
        approx = VectorIndex(
            MODEL, VERSION, DIM, prefilter=Prefilter(bits=256, candidates=300, min_rows=0)
        )
        recalls = []
        for q in unit(rng, 30):
            hits = await approx.search(s, q, 10, namespace="ns")
            exact = {o: sc for _, o, sc in reference(rows, q, 3500, "ns", {"claim"})}
            assert all(h.score == pytest.approx(exact[h.item_id], abs=1e-5) for h in hits)
            top = [o for _, o, _ in reference(rows, q, 10, "ns", {"claim"})]
            recalls.append(len(set(ids(hits)) & set(top)) / 10)
        assert np.mean(recalls) >= 0.8

        moved = unit(rng, 50)
        await put(s, [("claim", f"c{i}", "ns", v) for i, v in enumerate(moved)])
        await sql(s, "DELETE FROM vectors WHERE owner_id IN ('c50', 'c51')")
        for i in (0, 25, 49):
            assert ids(await approx.search(s, moved[i], 1, namespace="ns")) == [f"c{i}"]
        assert "c50" not in ids(await approx.search(s, rows[50][3], 10, namespace="ns"))

        small = VectorIndex(MODEL, VERSION, DIM, prefilter=Prefilter(min_rows=10_000))
        wide = VectorIndex(MODEL, VERSION, DIM, prefilter=Prefilter(candidates=5000, min_rows=0))
        plain = VectorIndex(MODEL, VERSION, DIM)
        for q in unit(rng, 5):
            want = ids(await plain.search(s, q, 10, namespace="ns"))
            assert ids(await small.search(s, q, 10, namespace="ns")) == want
            assert ids(await wide.search(s, q, 10, namespace="ns")) == want
        assert approx.memory_bytes() > plain.memory_bytes()
    finally:
        await s.close()
    with pytest.raises(ConfigError):
        Prefilter(bits=100)
    with pytest.raises(ConfigError):
        VectorIndex(MODEL, VERSION, DIM, backend="sqlite-vec", prefilter=Prefilter())


def test_hits_are_frozen_values() -> None:
    hit = VectorHit("claim", "c1", 0.5)
    assert hit == VectorHit("claim", "c1", 0.5)
    with pytest.raises(AttributeError):
        hit.score = 1.0  # type: ignore[misc]
    assert json.dumps([hit.kind, hit.item_id, hit.score]) == '["claim", "c1", 0.5]'


# --- partitions, auto backend, prefilter --------------------------------------------------------


async def test_an_owner_moving_namespace_leaves_the_old_one(store: Store, backend: Backend) -> None:
    rng = np.random.default_rng(21)
    a, b = unit(rng, 2)
    index = VectorIndex(MODEL, VERSION, DIM, backend=backend)
    await put(store, [("claim", "c1", "ns-a", a), ("claim", "c2", "ns-a", b)])
    assert ids(await index.search(store, a, 5, namespace="ns-a")) == ["c1", "c2"]
    await put(store, [("claim", "c1", "ns-b", a)])  # the same owner, now in another namespace
    assert ids(await index.search(store, a, 5, namespace="ns-a")) == ["c2"]
    assert ids(await index.search(store, a, 5, namespace="ns-b")) == ["c1"]


def test_choose_backend_by_memory() -> None:
    rows, dim = 100_000, 384
    need_mib = numpy_bytes(rows, dim) / 2**20
    assert 150 < need_mib < 200  # the floats (146 MiB) and a few hundred bytes a row
    assert choose_backend(rows=rows, dim=dim, numpy_max_mib=need_mib + 1) == "numpy"
    assert choose_backend(rows=rows, dim=dim, numpy_max_mib=need_mib - 1) == "sqlite-vec"
    # without the extension numpy is the only way, whatever the memory
    assert choose_backend(rows=rows, dim=dim, numpy_max_mib=1, vec_loaded=False) == "numpy"
    with_bits = numpy_bytes(rows, dim, Prefilter(bits=384))
    assert with_bits == numpy_bytes(rows, dim) + rows * 48


async def test_auto_backend_follows_the_memory_budget(db_path: Path) -> None:
    """``auto`` loads into numpy while the vectors fit, uses sqlite-vec (same answers) when
    they do not, and moves to sqlite-vec when the set outgrows the budget."""
    s = await Store.open(db_path, StoreConfig())
    try:
        if s.caps.vec_version is None:
            pytest.skip("sqlite-vec does not load here")
        rng = np.random.default_rng(22)
        rows = [("claim", f"c{i}", "ns", v) for i, v in enumerate(unit(rng, 300))]
        await put(s, rows)
        budget = numpy_bytes(400, DIM) / 2**20  # room for 400 vectors
        fits = VectorIndex(MODEL, VERSION, DIM, backend="auto", numpy_max_mib=budget)
        tight = VectorIndex(MODEL, VERSION, DIM, backend="auto", numpy_max_mib=budget / 2)
        exact = VectorIndex(MODEL, VERSION, DIM)
        q = unit(rng, 1)[0]
        want = ids(await exact.search(s, q, 10, namespace="ns"))
        assert ids(await fits.search(s, q, 10, namespace="ns")) == want
        assert fits.backend == "numpy" and fits.memory_bytes() > 0
        assert ids(await tight.search(s, q, 10, namespace="ns")) == want
        assert tight.backend == "sqlite-vec" and tight.memory_bytes() == 0
        assert len(tight) == 300
        await put(s, [("claim", f"n{i}", "ns", v) for i, v in enumerate(unit(rng, 200))])
        want = ids(await exact.search(s, q, 10, namespace="ns"))
        assert ids(await fits.search(s, q, 10, namespace="ns")) == want
        grown: str = fits.backend
        assert grown == "sqlite-vec" and fits.memory_bytes() == 0  # outgrew the budget
    finally:
        await s.close()


async def test_auto_without_the_extension_stays_numpy(tmp_path: Path) -> None:
    s = await Store.open(tmp_path / "stdlib.db", StoreConfig(sqlite_module="stdlib"))
    try:
        rng = np.random.default_rng(23)
        vecs = unit(rng, 50)
        await put(s, [("claim", f"c{i}", "ns", v) for i, v in enumerate(vecs)])
        index = VectorIndex(MODEL, VERSION, DIM, backend="auto", numpy_max_mib=0)
        assert ids(await index.search(s, vecs[7], 1, namespace="ns")) == ["c7"]
        assert index.backend == "numpy"
    finally:
        await s.close()


async def test_prefilter_returns_the_exact_top_k_on_a_fixed_set(db_path: Path) -> None:
    """On a fixed seed set of clustered vectors (restatements of the same facts, as a memory
    holds), the SimHash prefilter re-scoring 256 of 4,000 rows returns exactly the exact scan's
    top 10, ids and scores, for every query. Not a guarantee in general (bench/recall.py
    measures recall against the exact scan on its data): a regression check of the method."""
    s = await Store.open(db_path, StoreConfig())
    try:
        rng = np.random.default_rng(24)
        centres = unit(rng, 200)
        vecs = centres[rng.integers(0, 200, 4000)] + rng.normal(0, 0.08, (4000, DIM))
        vecs = (vecs / np.linalg.norm(vecs, axis=1, keepdims=True)).astype(np.float32)
        await put(s, [("claim", f"c{i}", "ns", v) for i, v in enumerate(vecs)])
        exact = VectorIndex(MODEL, VERSION, DIM)
        approx = VectorIndex(
            MODEL, VERSION, DIM, prefilter=Prefilter(bits=256, candidates=256, min_rows=1000)
        )
        queries = centres[:40] + rng.normal(0, 0.05, (40, DIM)).astype(np.float32)
        for q in queries:
            want = await exact.search(s, q, 10, namespace="ns")
            got = await approx.search(s, q, 10, namespace="ns")
            assert ids(got) == ids(want)
            assert np.allclose([h.score for h in got], [h.score for h in want], atol=1e-6)
        # per_hit scales the candidates with k
        wide = Prefilter(bits=256, candidates=10, per_hit=20, min_rows=0)
        assert wide.wanted(10) == 200 and wide.wanted(100) == 2000
    finally:
        await s.close()
    with pytest.raises(ConfigError):
        Prefilter(per_hit=-1)


async def test_sparse_queries_scan_only_their_dimensions_exactly(
    store: Store, backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hashed-feature vectors are mostly zeros: the numpy scan then reads only the query's
    non-zero dimensions, a block of rows at a time, and a large scan is split in two threads.
    Same top-k and scores as brute force, and as the dense product."""
    monkeypatch.setattr(vector_rows, "SPARSE_MIN_ROWS", 100)
    monkeypatch.setattr(vector_rows, "_BLOCK_ROWS", 700)  # several blocks, a ragged last one
    monkeypatch.setattr(vector_index, "SPLIT_MIN_FLOATS", 1)  # every scan in two halves
    rng = np.random.default_rng(25)

    def sparse(n: int, nnz: int) -> np.ndarray[Any, Any]:
        out = np.zeros((n, DIM), dtype=np.float32)
        for row in out:
            row[rng.choice(DIM, nnz, replace=False)] = rng.standard_normal(nnz)
        return out

    rows = [("claim", f"c{i}", "ns", v) for i, v in enumerate(sparse(3000, 6))]
    await put(store, rows)
    index = VectorIndex(MODEL, VERSION, DIM, backend=backend)
    for q in [*sparse(20, 4), *unit(rng, 3)]:  # sparse queries, then dense ones
        hits = await index.search(store, q, 10, namespace="ns")
        expected = reference(rows, q, 10, "ns", {"claim"})
        assert np.allclose([h.score for h in hits], [s for _, _, s in expected], atol=1e-5)
        assert ids(hits) == [o for _, o, _ in expected]


@pytest.mark.parametrize("zeros", [0.0, 0.5, 0.99, 1.0])
@pytest.mark.parametrize("negative", [False, True])
def test_top_rows_selects_the_largest_scores_whatever_their_ties(
    zeros: float, negative: bool
) -> None:
    """Mostly-zero scores (a query sharing no dimension with most vectors) take the fast path;
    every distribution gives the k largest scores."""
    rng = np.random.default_rng(int(zeros * 100) + negative)
    n, k = 20_000, 50
    scores = rng.random(n).astype(np.float32) - (0.9 if negative else 0.0)
    scores[rng.random(n) < zeros] = 0
    rows = vector_index.top_rows(scores, k)
    assert len(set(rows.tolist())) == k
    assert np.array_equal(np.sort(scores[rows]), np.sort(scores)[-k:])
