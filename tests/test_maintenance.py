"""Maintenance, the pipeline's "sleep": TTL, decay, archive, dedup convergence, re-indexing and
hygiene, on real SQLite files through the real pipeline, with the injectable clock.

Time moves only by :class:`hlmem.ManualClock` (days pass in a line of code); job times, which
are wall-clock by design, are aged by rewriting their ``updated_at`` while no hlmem holds the
file. Nothing of hlmem is mocked: claims come in as events or structured writes, and the
assertions read the database file.
"""

from __future__ import annotations

import itertools
import json
import math
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest
from atom_pairs import MUST_MERGE
from helpers import (
    assert_consistent,
    claim_items,
    connect_raw,
    fast_config,
    rows,
    scalar,
    step,
    wait_until,
)
from test_cli import hlmem as hlmem_cli

import hlmem
from hlmem.clock import ManualClock
from hlmem.config import Config
from hlmem.jobs import JobSpec
from hlmem.lang import default_lexicon, language_of
from hlmem.memory import Memory
from hlmem.messages import FlushRequested, JobKind, JobStatus, MaintenanceTick
from hlmem.stages.maintenance import Maintenance
from hlmem.store import SyncTx

pytestmark = pytest.mark.anyio

DAY_S = 86400.0
START = datetime(2026, 3, 2, 9, tzinfo=UTC)  # a Monday


def config(**maintenance: Any) -> Config:
    """Test defaults, no periodic passes (the tests run them), plus maintenance overrides."""
    return fast_config(maintenance={"enabled": False, **maintenance})


def claim_of(db: Path, event_id: str) -> str:
    """The claim an event is evidence of."""
    found = rows(db, "SELECT claim_id FROM evidence WHERE event_id = ?", (event_id,))
    assert len(found) == 1, found
    return str(found[0][0])


def claim(db: Path, claim_id: str) -> dict[str, Any]:
    cur = connect_raw(db)
    try:
        cur.row_factory = None
        result = cur.execute("SELECT * FROM claims WHERE id = ?", (claim_id,))
        names = [d[0] for d in result.description]
        row = result.fetchone()
    finally:
        cur.close()
    assert row is not None, claim_id
    return dict(zip(names, row, strict=True))


def vectors_of(db: Path, claim_id: str) -> int:
    return int(
        scalar(
            db,
            "SELECT count(*) FROM vectors WHERE owner_kind = 'claim' AND owner_id = ?",
            (claim_id,),
        )
    )


def evidence_of(db: Path, claim_id: str) -> set[str]:
    return {r[0] for r in rows(db, "SELECT event_id FROM evidence WHERE claim_id = ?", (claim_id,))}


async def accessed(db: Path, claim_id: str, times: int) -> None:
    """Wait for recall's background touch (activation, access count) to land."""
    await wait_until(
        lambda: scalar(db, "SELECT access_count FROM claims WHERE id = ?", (claim_id,)) >= times
    )


# --- decay ----------------------------------------------------------------------------------


async def test_activation_decays_by_half_life_of_scope_and_importance(db_path: Path) -> None:
    clock = ManualClock(START)
    cfg = config(archive_silent_days=10_000)
    hl = cfg.maintenance.half_life_days
    factor = cfg.maintenance.half_life_importance_factor
    async with hlmem.open(db_path, config=cfg, clock=clock) as mem:
        low = await mem.remember("user", "note", "旧手机放在书房抽屉里", importance=0.2)
        high = await mem.remember(
            "user", "note", "The backup key is in the blue safe", importance=0.8
        )
        plan = await mem.remember(
            "user",
            "plan",
            "2027-01-15 去杭州开年会",
            scope="plan",
            valid_from=START + timedelta(days=300),
            valid_to=START + timedelta(days=301),
            importance=0.5,
        )
        told = await mem.add_event("chat", "我喜欢喝乌龙茶")
        await mem.flush()
        await mem.drain(timeout_s=30)
        ids = {
            name: claim_of(db_path, e)
            for name, e in (("low", low), ("high", high), ("plan", plan), ("told", told))
        }
        before = {name: claim(db_path, i) for name, i in ids.items()}

        clock.advance(60 * DAY_S)
        report = await mem.maintain()
        after = {name: claim(db_path, i) for name, i in ids.items()}

        assert report.decay.scanned == 4 and report.decay.decayed == 4
        assert report.archive.archived == report.ttl.expired == 0
        for name, row in after.items():
            half_life = hl.of(row["scope"]) * (1 + factor * row["importance"])
            assert row["activation"] == pytest.approx(math.pow(0.5, 60 / half_life), rel=1e-9)
            assert row["activation_at"] == hlmem.clock.iso(clock.now())
            # decay changes how easily a claim is recalled, never how sure we are of it
            assert row["confidence"] == before[name]["confidence"]
            assert row["status"] == "active"
        # a short half-life (plan) and low importance fall faster than high importance
        assert (
            after["plan"]["activation"] < after["low"]["activation"] < after["high"]["activation"]
        )
        assert before["told"]["confidence"] < 1.0 == before["low"]["confidence"]

        # writing the decayed value down is idempotent: nothing moved since
        again = await mem.maintain()
        assert again.decay.decayed == 0
        assert claim(db_path, ids["low"])["activation"] == after["low"]["activation"]

        # positive feedback raises activation (after decay) and counts as an access; negative
        # feedback moves utility only; a recall that returns a claim raises it a little
        await mem.feedback(ids["low"], useful=True)
        await mem.feedback(ids["high"], useful=False)
        boosted = claim(db_path, ids["low"])
        assert boosted["activation"] == pytest.approx(after["low"]["activation"] + 0.5)
        assert boosted["last_accessed_at"] == hlmem.clock.iso(clock.now())
        assert boosted["confidence"] == before["low"]["confidence"]
        assert claim(db_path, ids["high"])["activation"] == after["high"]["activation"]
        assert claim(db_path, ids["high"])["utility"] < 0
        hit = await mem.recall("旧手机放在书房抽屉里", k=1)
        assert claim_items(hit)[0].id == ids["low"]
        await accessed(db_path, ids["low"], 1)
        assert claim(db_path, ids["low"])["activation"] == pytest.approx(
            boosted["activation"] + 0.1
        )


async def test_recall_ranks_with_the_decayed_activation(db_path: Path) -> None:
    clock = ManualClock(START)
    cfg = fast_config(
        maintenance={
            "enabled": False,
            "half_life_importance_factor": 0.0,
            "half_life_days": {"long_term": 10.0},
        },
        recall={
            "weight_importance": 0.0,
            "weight_recency": 0.0,
            "weight_utility": 0.0,
            "weight_activation": 1.0,
        },
    )
    text = "The staging cluster runs on Kubernetes 1.29"
    async with hlmem.open(db_path, config=cfg, clock=clock) as mem:
        event_id = await mem.remember("user", "note", text)
        await mem.drain(timeout_s=30)
        claim_id = claim_of(db_path, event_id)

        first = next(i for i in claim_items(await mem.recall(text)) if i.id == claim_id)
        await accessed(db_path, claim_id, 1)  # activation 1.0 -> 1.1, evaluated at START
        clock.advance(10 * DAY_S)  # one half-life: no maintenance pass has run
        second = next(i for i in claim_items(await mem.recall(text)) if i.id == claim_id)

    # score = fused x (1 + weight_activation x (1 - exp(-activation / 2)))
    fused = first.score / (2 - math.exp(-1.0 / 2))
    assert second.score == pytest.approx(fused * (2 - math.exp(-(1.1 * 0.5) / 2)), rel=1e-9)
    assert second.score < first.score


# --- archive --------------------------------------------------------------------------------


async def test_long_silent_claims_are_archived_with_history_evidence_and_no_vectors(
    db_path: Path,
) -> None:
    clock = ManualClock(START)
    cfg = config(
        half_life_importance_factor=0.0,
        half_life_days={"long_term": 30.0},
        archive_silent_days=150.0,
        archive_max_activation=0.2,
    )
    cat = "我的猫叫小白"
    editor = "I use Neovim as my main editor"
    work = "我在杭州的一家创业公司工作"
    allergy = "I am allergic to peanuts"
    async with hlmem.open(db_path, config=cfg, clock=clock) as mem:
        events = {
            "cat": await mem.remember("user", "pets", "小白", text=cat, importance=0.6),
            "editor": await mem.remember("user", "uses", "Neovim", text=editor, importance=0.5),
            "work": await mem.remember("user", "employer", "杭州的创业公司", text=work),
            "allergy": await mem.remember(
                "user", "allergy", "peanuts", text=allergy, importance=0.95
            ),
        }
        await mem.drain(timeout_s=30)
        ids = {name: claim_of(db_path, e) for name, e in events.items()}
        confidence = {name: claim(db_path, i)["confidence"] for name, i in ids.items()}
        # the claim is found by both channels: the running process's vector index holds it
        found = claim_items(await mem.recall(cat))
        assert found[0].id == ids["cat"] and "vector" in found[0].channels
        await accessed(db_path, ids["cat"], 1)

        clock.advance(100 * DAY_S)
        used = claim_items(await mem.recall(editor, k=1))
        assert [i.id for i in used] == [ids["editor"]]
        await accessed(db_path, ids["editor"], 1)
        await mem.feedback(ids["work"], useful=True)

        clock.advance(100 * DAY_S)  # the cat: 200 days silent; the others: 100
        report = await mem.maintain()
        assert report.archive.archived == 1 and report.archive.vectors_dropped == 1

        cat_row = claim(db_path, ids["cat"])
        assert (cat_row["status"], cat_row["archive_reason"]) == ("archived", "silent")
        assert cat_row["archived_at"] == hlmem.clock.iso(clock.now())
        assert cat_row["activation"] <= 0.2
        for name in ("editor", "work", "allergy"):  # accessed, helped, or too important
            assert claim(db_path, ids[name])["status"] == "active", name
        for name, i in ids.items():
            assert claim(db_path, i)["confidence"] == confidence[name], name

        # out of current recall and current claims; the event it rests on is history too
        now = await mem.recall(cat)
        assert ids["cat"] not in {i.id for i in now.items}
        assert events["cat"] not in {i.id for i in now.items}
        assert ids["cat"] not in {c.id for c in await mem.claims()}
        # in history, marked, with its evidence; found by full text only: the in-memory vector
        # index dropped it through the deletion log
        old = [i for i in claim_items(await mem.recall(cat, mode="history")) if i.id == ids["cat"]]
        assert old and old[0].status == "archived" and old[0].channels == ("fts",)
        assert old[0].evidence[0].quote == cat
        history = {c.id: c for c in await mem.claims(history=True)}
        assert history[ids["cat"]].status == hlmem.ClaimStatus.ARCHIVED
        assert history[ids["cat"]].evidence[0].event_id == events["cat"]

    # the file: no vector left for the archived claim, the others keep theirs, evidence kept
    assert vectors_of(db_path, ids["cat"]) == 0
    assert all(vectors_of(db_path, ids[n]) == 1 for n in ("editor", "work", "allergy"))
    assert evidence_of(db_path, ids["cat"]) == {events["cat"]}
    logged = rows(db_path, "SELECT owner_id FROM vector_deletions WHERE owner_kind = 'claim'")
    assert logged == [(ids["cat"],)]


async def test_the_vector_deletion_log_is_pruned_after_its_keep_period(db_path: Path) -> None:
    clock = ManualClock(START)
    cfg = config(ttl_grace_days={"plan": 1.0}, ttl_importance_factor=0.0, vector_log_keep_days=1.0)
    async with hlmem.open(db_path, config=cfg, clock=clock) as mem:
        for i in range(3):
            await mem.remember(
                "user",
                "plan",
                f"2026-03-0{3 + i} 交第{i}份周报",
                scope="plan",
                valid_from=START + timedelta(days=1 + i),
                valid_to=START + timedelta(days=2 + i),
            )
        await mem.drain(timeout_s=30)
        assert len(claim_items(await mem.recall("周报"))) == 3  # loads the vector index

        clock.advance(10 * DAY_S)
        first = await mem.maintain()
        assert first.ttl.expired == 3 and first.ttl.vectors_dropped == 3
        assert first.hygiene.vector_log_pruned == 0  # seen now, pruned a day later
        assert scalar(db_path, "SELECT count(*) FROM vector_deletions") == 3

        clock.advance(0.5 * DAY_S)
        assert (await mem.maintain()).hygiene.vector_log_pruned == 0
        clock.advance(0.6 * DAY_S)
        assert (await mem.maintain()).hygiene.vector_log_pruned == 3
        assert scalar(db_path, "SELECT count(*) FROM vector_deletions") == 0
        # an index that read the log before it was pruned goes on; history still works
        old = claim_items(await mem.recall("周报", mode="history"))
        assert {i.status for i in old} == {"archived"} and len(old) == 3


# --- TTL ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "query"),
    [
        ("下周五去上海出差", "上海出差"),
        ("I have a dentist appointment next Friday", "dentist appointment"),
    ],
)
async def test_a_plan_expires_after_its_date_plus_grace(
    db_path: Path, text: str, query: str
) -> None:
    clock = ManualClock(START)  # Monday 2 March: "next Friday" is the 13th
    cfg = config()
    async with hlmem.open(db_path, config=cfg, clock=clock) as mem:
        event_id = await mem.add_event("chat", text)
        # a long-term claim with an end in the past never expires (its scope has no TTL)
        lease = await mem.remember(
            "user",
            "note",
            "办公室租约到 2026 年 3 月 10 日",
            valid_from=START - timedelta(days=300),
            valid_to=START + timedelta(days=8),
        )
        await mem.flush()
        await mem.drain(timeout_s=30)
        plan_id = claim_of(db_path, event_id)
        plan = claim(db_path, plan_id)
        assert (plan["scope"], plan["importance"]) == ("plan", 0.6)
        valid_to = hlmem.clock.parse_iso(plan["valid_to"])
        assert valid_to == datetime(2026, 3, 14, tzinfo=UTC)
        assert vectors_of(db_path, plan_id) == 1

        # the day after: the plan is over (current recall already leaves it out), but within
        # grace (1 day x (1 + importance 0.6) = 1.6 days) it is not expired yet
        clock.advance((valid_to - START).total_seconds() + 1.5 * DAY_S)
        assert (await mem.maintain()).ttl.expired == 0
        assert claim(db_path, plan_id)["status"] == "active"

        clock.advance(0.2 * DAY_S)
        report = await mem.maintain()
        assert (report.ttl.expired, report.ttl.vectors_dropped) == (1, 1)
        row = claim(db_path, plan_id)
        assert (row["status"], row["archive_reason"]) == ("archived", "expired")
        assert row["valid_to"] == plan["valid_to"] and row["retracted_at"] is None
        assert claim(db_path, claim_of(db_path, lease))["status"] == "active"

        assert plan_id not in {i.id for i in (await mem.recall(query)).items}
        old = [i for i in claim_items(await mem.recall(query, mode="history")) if i.id == plan_id]
        assert old and old[0].status == "archived" and old[0].evidence[0].event_id == event_id
        assert plan_id in {c.id for c in await mem.claims(history=True)}
        assert plan_id not in {c.id for c in await mem.claims()}
    assert vectors_of(db_path, plan_id) == 0
    assert evidence_of(db_path, plan_id) == {event_id}


# --- dedup convergence ----------------------------------------------------------------------

NEVER_MERGE = [
    ("部署 v1.2 到生产环境", "部署 v1.3 到生产环境"),
    ("允许删除生产数据库", "不允许删除生产数据库"),
    ("Deploy v1.2 to production", "Deploy v1.3 to production"),
]


def remember_request(text: str) -> str:
    return f"记住：{text}" if language_of(text) == "zh" else f"remember: {text}"


def notes(db: Path, namespace: str) -> list[tuple[Any, ...]]:
    """(id, status, superseded_by) of a namespace's notes, oldest stored first."""
    return rows(
        db,
        "SELECT id, status, superseded_by FROM claims WHERE namespace = ? AND predicate = 'note'"
        " ORDER BY rowid",
        (namespace,),
    )


async def test_dedup_convergence_merges_what_the_stage_would_merge_today(db_path: Path) -> None:
    # Stored under an older rule: dedup compared a new claim with only the newest claim of its
    # slot (candidates_max = 1), and a note told in between kept each pair apart. Today's rule
    # (candidates_max = 200) would merge them: maintenance applies it to what is stored.
    pairs = [("yes", i, a, b) for i, (a, b) in enumerate(MUST_MERGE)]
    pairs += [("no", i, a, b) for i, (a, b) in enumerate(NEVER_MERGE)]
    filler = {
        "zh": "会议纪要统一放在共享盘的归档目录",
        "en": "the meeting notes go to the archive folder on the shared drive",
    }
    older_rule = fast_config(maintenance={"enabled": False}, dedup={"candidates_max": 1})
    async with hlmem.open(db_path, config=older_rule) as mem:
        for phase in range(3):  # each phase its own dedup batches
            for kind, i, a, b in pairs:
                text = (a, filler[language_of(a)], b)[phase]
                await mem.add_event(f"s{phase}", remember_request(text), namespace=f"{kind}{i}")
            await mem.flush()
            await mem.drain(timeout_s=120)
    # Pairs whose texts fold to the same claim hash merged at once (an exact match does not
    # depend on the candidate window); every other pair was kept apart.
    apart = [p for p in pairs if len(notes(db_path, f"{p[0]}{p[1]}")) == 3]
    assert {language_of(a) for kind, _, a, _ in apart if kind == "yes"} == {"zh", "en"}
    assert sum(kind == "yes" for kind, *_ in apart) >= 20
    assert all(p in apart for p in pairs if p[0] == "no")
    expected = sum(kind == "yes" for kind, *_ in apart)

    async with hlmem.open(db_path, config=config(), pipeline="external") as mem:
        report = await mem.maintain()
        assert report.dedup.merged == expected
        assert report.dedup.vectors_dropped == expected
        assert (await mem.maintain()).dedup.merged == 0  # converged: nothing left to merge
        for kind, i, a, _ in apart:
            found = notes(db_path, f"{kind}{i}")
            if kind == "no":
                assert [r[1] for r in found] == ["active"] * 3, (a, found)
                continue
            (older, _, _), (_, between, _), (newer, status, by) = found
            assert between == "active"  # the note told in between merges with nothing
            assert (status, by) == ("superseded", older)
            assert claim(db_path, older)["status"] == "active"
            # the survivor holds both events; the merged claim keeps its own as history
            assert len(evidence_of(db_path, older)) == 2
            assert evidence_of(db_path, newer) <= evidence_of(db_path, older)
            assert rows(
                db_path,
                "SELECT stage FROM claim_merges WHERE claim_id = ? AND source_key = ?",
                (older, newer),
            ) == [("maintenance",)]
            reason = rows(
                db_path,
                "SELECT reason FROM supersessions WHERE old_claim_id = ? AND new_claim_id = ?",
                (newer, older),
            )
            assert reason and reason[0][0].startswith("merged: ")
            assert vectors_of(db_path, newer) == 0 and vectors_of(db_path, older) == 1
            assert (
                rows(
                    db_path,
                    "SELECT 1 FROM recall_docs WHERE kind = 'claim' AND item_id = ?",
                    (newer,),
                )
                == []
            )
            # the duplicate does not surface as a past belief of its own
            history = await mem.recall(a, namespace=f"{kind}{i}", mode="history")
            assert newer not in {item.id for item in history.items}
    merged = rows(db_path, "SELECT source_key FROM claim_merges WHERE stage = 'maintenance'")
    assert len(merged) == expected

    # the embedder's backfill does not give a merged duplicate its vector back
    async with hlmem.open(db_path, config=config()) as mem:
        await mem.drain(timeout_s=30)
    assert all(vectors_of(db_path, key) == 0 for (key,) in merged)


# --- bounded ticks through the job table ----------------------------------------------------


async def schedule(mem: Memory, stage: Maintenance) -> list[JobSpec]:
    """The stage's periodic tick, as the runner runs it: due passes are enqueued."""

    def run(tx: SyncTx) -> list[JobSpec]:
        specs = stage.tick(tx, mem.clock.now())
        mem.queue.enqueue_sync(tx, specs)
        return specs

    return await mem.store.run_in_transaction(run)


def maintenance_jobs(db: Path) -> list[tuple[str, MaintenanceTick]]:
    return [
        (status, MaintenanceTick.model_validate_json(payload))
        for status, payload in rows(
            db, "SELECT status, payload FROM jobs WHERE kind = 'maintenance' ORDER BY id"
        )
    ]


async def test_a_tick_does_bounded_work_and_the_rest_waits_for_the_next(db_path: Path) -> None:
    clock = ManualClock(START)
    cfg = config(max_items_per_task=3, pause_between_ticks_s=0.0, ttl_importance_factor=0.0)
    async with hlmem.open(db_path, config=cfg, clock=clock) as mem:
        for i in range(5):
            await mem.remember(
                "user",
                "plan",
                f"2026-03-0{3 + i} 去第{i}个客户那里",
                scope="plan",
                valid_from=START + timedelta(days=1 + i),
                valid_to=START + timedelta(days=2 + i),
            )
        await mem.remember("user", "note", "The wiki lives at wiki.example.com")
        await mem.remember("user", "note", "周报每周五下午发给组长")
        await mem.drain(timeout_s=30)

    clock.advance(30 * DAY_S)
    async with hlmem.open(db_path, config=cfg, clock=clock, pipeline="external") as mem:
        stage = Maintenance(mem.store, clock, cfg, lexicon=default_lexicon())
        assert await schedule(mem, stage) == []  # a file never maintained: the clock starts
        clock.advance(cfg.maintenance.interval_s - 1)
        assert await schedule(mem, stage) == []  # not due yet
        clock.advance(1)
        assert len(await schedule(mem, stage)) == 1
        await schedule(mem, stage)  # due still, but one pass is live: not enqueued twice
        assert [s for s, _ in maintenance_jobs(db_path)] == ["todo"]

        def archived() -> int:
            return int(scalar(db_path, "SELECT count(*) FROM claims WHERE status = 'archived'"))

        assert await step(mem, stage) == 1
        assert archived() == 3  # at most 3 per task per tick ...
        (_, first), (status, following) = maintenance_jobs(db_path)
        assert status == "todo" and first.report is None
        assert following.report is not None and following.report.ticks == 1
        assert following.report.ttl.expired == 3
        assert following.report.decay.scanned == 3 and following.report.dedup.scanned == 3
        assert following.lifecycle_after > 0 and "ttl" not in following.done

        assert await step(mem, stage) == 1
        assert archived() == 5  # ... the rest in the next tick
        ticks = 2
        while await step(mem, stage):
            ticks += 1
        states = maintenance_jobs(db_path)
        assert {s for s, _ in states} == {"done"} and len(states) == ticks
        for (_, before), (_, after) in itertools.pairwise(states[1:]):
            assert before.report is not None and after.report is not None
            for task in ("decay", "dedup", "reindex"):
                scanned = getattr(after.report, task).scanned - getattr(before.report, task).scanned
                assert 0 <= scanned <= 3, task
        # the pass is over: the schedule restarts from now
        assert rows(db_path, "SELECT marked_at FROM maintenance_state WHERE name = 'schedule'") == [
            (hlmem.clock.iso(clock.now()),)
        ]
        assert await schedule(mem, stage) == []


# --- job hygiene ----------------------------------------------------------------------------


async def test_job_hygiene_purges_only_old_done_jobs(db_path: Path) -> None:
    cfg = config(done_jobs_keep_days=7.0)
    async with hlmem.open(db_path, config=cfg) as mem:
        await mem.add_event("a", "我喜欢喝乌龙茶")
        await mem.add_event("b", "I live in Berlin")
        await mem.flush()
        await mem.drain(timeout_s=30)
    async with hlmem.open(db_path, config=cfg, pipeline="external") as mem:
        async with mem.store.transaction() as tx:  # two jobs nothing here consumes
            kind = JobKind.EXTRACTOR
            await mem.queue.enqueue(
                tx, [JobSpec(kind, FlushRequested()), JobSpec(kind, FlushRequested())]
            )
        failed, parked = await mem.queue.claim(kind, 2)
        await mem.queue.end(failed, JobStatus.FAILED, "RuntimeError: boom")
        await mem.queue.end(parked, JobStatus.PARKED, "BudgetExceeded: no budget")

    done = [r[0] for r in rows(db_path, "SELECT id FROM jobs WHERE status = 'done' ORDER BY id")]
    assert len(done) >= 6
    old = done[::2]  # every other done job finished 8 days ago; so did the failed and parked
    conn = connect_raw(db_path)
    try:
        conn.execute(
            "UPDATE jobs SET updated_at = updated_at - 8 * 86400"
            " WHERE id IN (SELECT value FROM json_each(?)) OR status IN ('failed', 'parked')",
            (json.dumps(old),),
        )
    finally:
        conn.close()

    async with hlmem.open(db_path, config=cfg, pipeline="external") as mem:
        report = await mem.maintain()
    assert report.hygiene.jobs_purged == len(old)
    left = dict(rows(db_path, "SELECT id, status FROM jobs"))
    assert set(left) == set(done) - set(old) | {failed.id, parked.id}
    assert (left[failed.id], left[parked.id]) == ("failed", "parked")
    # admission decisions are kept: explain needs them
    assert scalar(db_path, "SELECT count(*) FROM admission_decisions") > 0


# --- in the pipeline, beside ingestion ------------------------------------------------------

STATEMENTS = [
    "我喜欢喝乌龙茶",
    "I usually work from home on Fridays",
    "记住：部署 v1.2 到生产环境",
    "记住：部署 v1.3 到生产环境",
    "记住：允许删除测试数据库",
    "记住：不允许删除生产数据库",
    "remember: the staging database is db-stage-3",
    "我在杭州工作",
    "下周五去上海出差",  # told a month ago: long over
    "I have a dentist appointment next Friday",  # told a month ago: long over
]


async def test_maintenance_in_the_pipeline_beside_concurrent_ingestion(db_path: Path) -> None:
    cfg = fast_config(
        maintenance={"interval_s": 0.05, "max_items_per_task": 5, "pause_between_ticks_s": 0.0}
    )
    month_ago = datetime.now(UTC) - timedelta(days=30)

    async with hlmem.open(db_path, config=cfg) as mem:

        async def session(n: int) -> None:
            ns = f"ns{n % 4}"
            for text in STATEMENTS:
                told = month_ago if "Friday" in text or "下周五" in text else None
                await mem.add_event(f"s{n}", text, namespace=ns, occurred_at=told)
            await mem.end_session(f"s{n}", namespace=ns)

        with anyio.fail_after(120):
            async with anyio.create_task_group() as tg:
                for n in range(24):
                    tg.start_soon(session, n)
            await mem.flush()
            await mem.drain()
        await wait_until(
            lambda: (
                scalar(
                    db_path,
                    "SELECT count(*) FROM jobs WHERE kind = 'maintenance' AND status = 'done'",
                )
                >= 3
            ),
            timeout_s=60,
        )
        await mem.maintain()  # whatever the periodic passes left, beside them

    assert_consistent(db_path)
    assert scalar(db_path, "SELECT count(*) FROM events") == 24 * len(STATEMENTS)
    failed = "SELECT count(*) FROM jobs WHERE status IN ('failed', 'parked')"
    assert scalar(db_path, failed) == 0
    assert scalar(db_path, "SELECT count(*) FROM claims WHERE status = 'pending'") == 0
    plans = rows(db_path, "SELECT status, archive_reason FROM claims WHERE predicate = 'plan'")
    assert len(plans) >= 8 and set(plans) == {("archived", "expired")}
    # vectors: every active claim has one, no archived claim has any
    assert (
        scalar(
            db_path,
            "SELECT count(*) FROM claims c WHERE c.status = 'active' AND NOT EXISTS"
            " (SELECT 1 FROM vectors v WHERE v.owner_kind = 'claim' AND v.owner_id = c.id)",
        )
        == 0
    )
    assert (
        scalar(
            db_path,
            "SELECT count(*) FROM vectors v JOIN claims c ON c.id = v.owner_id"
            " WHERE v.owner_kind = 'claim' AND c.status = 'archived'",
        )
        == 0
    )
    # every claim rests on evidence; protected atoms kept the look-alikes apart
    assert (
        scalar(
            db_path,
            "SELECT count(*) FROM claims c WHERE NOT EXISTS"
            " (SELECT 1 FROM evidence e WHERE e.claim_id = c.id)",
        )
        == 0
    )
    for n in range(4):
        for like in ("%部署 v1.%", "%删除%数据库%"):
            kept = rows(
                db_path,
                "SELECT DISTINCT value FROM claims WHERE namespace = ? AND status = 'active'"
                " AND text LIKE ?",
                (f"ns{n}", like),
            )
            assert len(kept) == 2, (n, like, kept)


# --- command line ---------------------------------------------------------------------------


def run_cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    proc = hlmem_cli(*args, cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    return proc


def test_hlmem_maintain_json(tmp_path: Path) -> None:
    db = str(tmp_path / "cli.db")
    run_cli(
        tmp_path,
        "--db",
        db,
        "remember",
        "user",
        "plan",
        "2020-01-10 去北京开会",
        "--text",
        "1月10日去北京开会",
        "--scope",
        "plan",
        "--valid-from",
        "2020-01-10",
        "--valid-to",
        "2020-01-11",
        "--drain",
    )
    run_cli(tmp_path, "--db", db, "remember", "user", "likes", "green tea", "--drain")

    report = json.loads(run_cli(tmp_path, "--db", db, "maintain", "--json").stdout)
    assert set(report) == {
        "started_at",
        "finished_at",
        "ticks",
        "ttl",
        "decay",
        "archive",
        "dedup",
        "reindex",
        "hygiene",
    }
    assert report["ticks"] == 1
    assert report["ttl"] == {"expired": 1, "vectors_dropped": 1}
    assert report["decay"]["scanned"] == 1 and report["archive"]["archived"] == 0
    # the dedup window was read before the tick's transaction expired the plan
    assert report["dedup"] == {"scanned": 2, "merged": 0, "vectors_dropped": 0}
    assert report["hygiene"]["jobs_purged"] == 0

    current = json.loads(run_cli(tmp_path, "--db", db, "claims", "--json").stdout)
    assert [c["value"] for c in current] == ["green tea"]
    history = json.loads(run_cli(tmp_path, "--db", db, "claims", "--history", "--json").stdout)
    assert {c["value"]: c["status"] for c in history} == {
        "green tea": "active",
        "2020-01-10 去北京开会": "archived",
    }
    text = run_cli(tmp_path, "--db", db, "maintain").stdout
    assert "ttl:" in text and "0 expired" in text
