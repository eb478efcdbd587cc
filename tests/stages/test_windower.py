"""Windower: size and age caps, end_session, flush scopes, chunking, isolation and order.

Most tests run the real pipeline (``pipeline="inline"``) on a real SQLite file with a
:class:`ManualClock`. Where a rule must be isolated from the periodic sweep or from batching
luck, the test produces with ``pipeline="external"`` and drives the real :class:`Windower`
itself: claim jobs, ``apply`` them in the job-completing transaction, exactly as the runner does.
"""

from __future__ import annotations

import json
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import timedelta
from itertools import pairwise
from pathlib import Path
from typing import Any

import anyio
import pytest
from helpers import apply, fast_config, rows, step, wait_until
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import hlmem
from hlmem.clock import iso, parse_iso
from hlmem.config import Config
from hlmem.lang import default_lexicon
from hlmem.memory import Memory
from hlmem.messages import JobKind, WindowClosed
from hlmem.stages.base import Stage
from hlmem.stages.extractor import Extractor
from hlmem.stages.windower import Windower
from hlmem.store import SyncTx

ZH = [
    "今天我们讨论了项目进度。",
    "我更喜欢用 Python 写后端。",
    "下周二要去上海出差。",
    "测试覆盖率还不够高，需要补充。",
    "这个接口的延迟有点大！",
    "晚上一起吃火锅吗？",
]
EN = [
    "We reviewed the roadmap today.",
    "The staging server restarts at noon.",
    "Please keep the replies short.",
    "Latency on the search endpoint doubled!",
    "Is the release still on Friday?",
    "I moved the meeting to Thursday.",
]
MIXED = [text for pair in zip(ZH, EN, strict=True) for text in pair]


# --- helpers --------------------------------------------------------------------------------


@dataclass
class Win:
    id: str
    namespace: str
    session_id: str
    status: str
    opened_at: str
    closed_at: str | None
    reason: str | None
    item_count: int
    items: list[tuple[str, int, int, int, int]] = field(default_factory=list)

    @property
    def event_ids(self) -> list[str]:
        return [i[0] for i in self.items]


def windows(db: Path) -> list[Win]:
    """Every window with its items in ``pos`` order, windows in order of their first event."""
    out = {
        r[0]: Win(*r)
        for r in rows(
            db,
            "SELECT id, namespace, session_id, status, opened_at, closed_at, close_reason,"
            " item_count FROM windows",
        )
    }
    first_seq: dict[str, tuple[int, int]] = {}
    for wid, _pos, event_id, chunk_no, chunk_count, start, end, seq in rows(
        db,
        "SELECT wi.window_id, wi.pos, wi.event_id, wi.chunk_no, wi.chunk_count, wi.start_char,"
        " wi.end_char, e.seq FROM window_items wi JOIN events e ON e.id = wi.event_id"
        " ORDER BY wi.window_id, wi.pos",
    ):
        out[wid].items.append((event_id, chunk_no, chunk_count, start, end))
        first_seq.setdefault(wid, (seq, chunk_no))
    return sorted(out.values(), key=lambda w: (first_seq.get(w.id, (1 << 62, 0)), w.opened_at))


def of_session(ws: list[Win], session_id: str, namespace: str = "default") -> list[Win]:
    return [w for w in ws if w.session_id == session_id and w.namespace == namespace]


async def step_all(mem: Memory, stage: Stage[Any], limit: int = 1000) -> None:
    with anyio.fail_after(30):
        while await step(mem, stage, limit):
            pass


async def sweep(mem: Memory, windower: Windower) -> None:
    def tick(tx: SyncTx) -> None:
        mem.queue.enqueue_sync(tx, windower.tick(tx, windower.clock.now()))

    await mem.store.run_in_transaction(tick)
    mem.queue.ring({JobKind.EXTRACTOR})


# --- size cap -------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_window_closes_at_five_events(db_path: Path) -> None:
    clock = hlmem.ManualClock()
    async with hlmem.open(db_path, config=fast_config(), clock=clock) as mem:
        ids = [await mem.add_event("s1", text) for text in MIXED]  # 12 events
        await mem.drain(timeout_s=10)

    ws = windows(db_path)
    assert [(w.status, w.reason, w.item_count) for w in ws] == [
        ("closed", "size", 5),
        ("closed", "size", 5),
        ("open", None, 2),
    ]
    assert [e for w in ws for e in w.event_ids] == ids
    assert all(len(w.items) == w.item_count for w in ws)
    # every closed window was extracted once; the open one was not
    extracted = {r[0] for r in rows(db_path, "SELECT window_id FROM extractions")}
    assert extracted == {w.id for w in ws if w.status == "closed"}


@pytest.mark.anyio
@pytest.mark.parametrize("cap", [1, 3, 8])
async def test_size_cap_is_configurable(db_path: Path, cap: int) -> None:
    cfg = fast_config(windower={"max_events": cap})
    async with hlmem.open(db_path, config=cfg, clock=hlmem.ManualClock()) as mem:
        ids = await mem.add_events(
            [{"session_id": "会话-1", "content": text} for text in MIXED[:10]]
        )
        await mem.drain(timeout_s=10)

    ws = windows(db_path)
    sizes = [w.item_count for w in ws]
    assert sizes == [cap] * (10 // cap) + ([10 % cap] if 10 % cap else [])
    assert [w.status for w in ws] == ["closed"] * (10 // cap) + (["open"] if 10 % cap else [])
    assert all(w.reason == "size" for w in ws if w.status == "closed")
    assert [e for w in ws for e in w.event_ids] == ids


# --- age cap --------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_event_at_max_age_closes_the_old_window_first(db_path: Path) -> None:
    """The arrival rule alone (no sweep runs): an event >= 120 s after the window's first."""
    clock = hlmem.ManualClock()
    t0 = clock.now()
    cfg = fast_config()
    async with hlmem.open(db_path, config=cfg, clock=clock, pipeline="external") as mem:
        windower = Windower(cfg.windower, clock)
        await mem.add_event("s1", "第一条：我们开始吧。", event_id="e1")
        await step_all(mem, windower)
        clock.advance(60)
        await mem.add_event("s1", "Second message, one minute later.", event_id="e2")
        clock.advance(59.999)  # 119.999 s after e1: still the same window
        await mem.add_event("s1", "第三条，差一点就两分钟了。", event_id="e3")
        await step_all(mem, windower)
        assert [(w.status, w.event_ids) for w in windows(db_path)] == [("open", ["e1", "e2", "e3"])]

        clock.advance(0.001)  # exactly max_age_s after e1
        await mem.add_event("s1", "Fourth message: two minutes after the first.", event_id="e4")
        await step_all(mem, windower)
        clock.advance(121)
        await mem.add_event("s1", "第五条，又过了两分钟。", event_id="e5")
        await step_all(mem, windower)

    ws = windows(db_path)
    assert [(w.status, w.reason, w.event_ids) for w in ws] == [
        ("closed", "age", ["e1", "e2", "e3"]),
        ("closed", "age", ["e4"]),
        ("open", None, ["e5"]),
    ]
    # the old window closes at the arriving event's time; the new one opens with it
    assert ws[0].closed_at == iso(t0 + timedelta(seconds=120)) == ws[1].opened_at
    assert ws[1].closed_at == iso(t0 + timedelta(seconds=241)) == ws[2].opened_at
    # each closed window got its extraction job
    jobs = rows(db_path, "SELECT payload FROM jobs WHERE kind = 'extractor'")
    assert sorted(json.loads(p)["window_id"] for (p,) in jobs) == sorted([ws[0].id, ws[1].id])


@pytest.mark.anyio
async def test_event_after_max_age_inline(db_path: Path) -> None:
    """The same rule through the running pipeline (the sweep may get there first: same result)."""
    clock = hlmem.ManualClock()
    async with hlmem.open(db_path, config=fast_config(), clock=clock) as mem:
        await mem.add_event("s1", "Remember that the build takes ten minutes.", event_id="e1")
        clock.advance(100)
        await mem.add_event("s1", "好的，我知道了。", event_id="e2", role="assistant")
        await mem.drain(timeout_s=10)
        clock.advance(21)
        await mem.add_event("s1", "新的话题：周末去爬山。", event_id="e3")
        await mem.drain(timeout_s=10)
        claims = await mem.claims()

    ws = windows(db_path)
    assert [(w.status, w.reason, w.event_ids) for w in ws] == [
        ("closed", "age", ["e1", "e2"]),
        ("open", None, ["e3"]),
    ]
    assert [c.text for c in claims] == ["the build takes ten minutes"]


@pytest.mark.anyio
async def test_sweep_closes_aged_window_without_new_event(db_path: Path) -> None:
    clock = hlmem.ManualClock()
    t0 = clock.now()
    cfg = fast_config()  # windower.sweep_interval_s = 0.02
    async with hlmem.open(db_path, config=cfg, clock=clock) as mem:
        await mem.add_event("old", "记住：周五下午三点开会", event_id="o1")
        await mem.add_event("old", "And the room is B-204.", event_id="o2")
        clock.advance(60)
        await mem.add_event("young", "This session started a minute later.", event_id="y1")
        await mem.drain(timeout_s=10)

        clock.advance(59.5)  # 119.5 s: several sweeps run, nothing is due yet
        await anyio.sleep(cfg.windower.sweep_interval_s * 10)
        assert {w.status for w in windows(db_path)} == {"open"}

        clock.advance(0.5)  # 120 s after o1, no new event: the sweep closes it
        await wait_until(lambda: of_session(windows(db_path), "old")[0].status == "closed")
        await mem.drain(timeout_s=10)
        claims = await mem.claims()

    old, young = of_session(windows(db_path), "old"), of_session(windows(db_path), "young")
    assert [(w.status, w.reason, w.event_ids) for w in old] == [("closed", "age", ["o1", "o2"])]
    assert old[0].closed_at == iso(t0 + timedelta(seconds=120))
    assert [(w.status, w.event_ids) for w in young] == [("open", ["y1"])]
    assert [c.text for c in claims] == ["周五下午三点开会"]
    assert rows(db_path, "SELECT window_id FROM extractions") == [(old[0].id,)]


# --- end_session and flush ------------------------------------------------------------------


@pytest.mark.anyio
async def test_end_session_closes_only_that_session(db_path: Path) -> None:
    async with hlmem.open(db_path, config=fast_config(), clock=hlmem.ManualClock()) as mem:
        for i in range(3):
            await mem.add_event("s1", ZH[i], event_id=f"a{i}")
        for i in range(2):
            await mem.add_event("s2", EN[i], event_id=f"b{i}")
            await mem.add_event("s1", EN[i], namespace="other", event_id=f"c{i}")
        await mem.end_session("s1")
        await mem.drain(timeout_s=10)

        ws = windows(db_path)
        assert [(w.status, w.reason) for w in of_session(ws, "s1")] == [("closed", "session_end")]
        assert [w.status for w in of_session(ws, "s2")] == ["open"]
        assert [w.status for w in of_session(ws, "s1", "other")] == ["open"]
        ended = rows(
            db_path, "SELECT namespace, session_id FROM sessions WHERE ended_at IS NOT NULL"
        )
        assert ended == [("default", "s1")]

        # a later event of the ended session opens a new window
        await mem.add_event("s1", "会话结束后又来了一条。", event_id="a9")
        await mem.end_session("s1", namespace="other")
        await mem.end_session("never-seen")  # nothing open: harmless
        await mem.drain(timeout_s=10)

    ws = windows(db_path)
    assert [(w.status, w.event_ids) for w in of_session(ws, "s1")] == [
        ("closed", ["a0", "a1", "a2"]),
        ("open", ["a9"]),
    ]
    assert [(w.status, w.reason) for w in of_session(ws, "s1", "other")] == [
        ("closed", "session_end")
    ]
    assert [w.status for w in of_session(ws, "s2")] == ["open"]
    assert len(rows(db_path, "SELECT * FROM extractions")) == 2


@pytest.mark.anyio
async def test_flush_all_one_namespace_one_session(db_path: Path) -> None:
    layout = [("a", "s1"), ("a", "s2"), ("b", "s1"), ("b", "s3"), ("default", "s1")]
    async with hlmem.open(db_path, config=fast_config(), clock=hlmem.ManualClock()) as mem:
        for n, (ns, sid) in enumerate(layout):
            await mem.add_event(sid, MIXED[n], namespace=ns, event_id=f"{ns}-{sid}")
        await mem.drain(timeout_s=10)

        def status() -> dict[tuple[str, str], list[tuple[str, str | None]]]:
            out: dict[tuple[str, str], list[tuple[str, str | None]]] = defaultdict(list)
            for w in windows(db_path):
                out[(w.namespace, w.session_id)].append((w.status, w.reason))
            return dict(out)

        assert all(v == [("open", None)] for v in status().values())

        await mem.flush(namespace="a", session_id="s1")  # one session of one namespace
        await mem.drain(timeout_s=10)
        s = status()
        assert s[("a", "s1")] == [("closed", "flush")]
        assert all(s[k] == [("open", None)] for k in layout if k != ("a", "s1"))

        await mem.flush(session_id="s1")  # no namespace: the default namespace's session
        await mem.drain(timeout_s=10)
        s = status()
        assert s[("default", "s1")] == [("closed", "flush")]
        assert s[("b", "s1")] == [("open", None)]

        await mem.flush(namespace="b")  # one namespace
        await mem.drain(timeout_s=10)
        s = status()
        assert s[("b", "s1")] == s[("b", "s3")] == [("closed", "flush")]
        assert s[("a", "s2")] == [("open", None)]

        await mem.flush()  # everything
        await mem.drain(timeout_s=10)
        assert all(v == [("closed", "flush")] for v in status().values())
        await mem.flush()  # nothing open: harmless
        await mem.drain(timeout_s=10)

    assert len(rows(db_path, "SELECT * FROM extractions")) == len(layout)
    assert len(rows(db_path, "SELECT * FROM windows")) == len(layout)


# --- chunking -------------------------------------------------------------------------------

ZH_LONG = "".join(ZH * 3)  # many short sentences ending in 。！？
EN_LONG = " ".join(
    [
        "The build passed.",
        "Tests are green!",
        "Ship it on Friday?",
        "Docs need work.",
        "Bob owns the API.",
        "Keep it simple.",
    ]
    * 3
)


@pytest.mark.anyio
@pytest.mark.parametrize(("lang", "text"), [("zh", ZH_LONG), ("en", EN_LONG)])
async def test_long_content_is_split_into_chunks_at_sentence_breaks(
    db_path: Path, lang: str, text: str
) -> None:
    chunk_chars = 60
    cfg = fast_config(windower={"chunk_chars": chunk_chars})
    async with hlmem.open(db_path, config=cfg, clock=hlmem.ManualClock()) as mem:
        long_id = await mem.add_event("s", text, event_id=f"long-{lang}")
        short_id = await mem.add_event("s", "短消息 short", event_id=f"short-{lang}")
        await mem.flush()
        await mem.drain(timeout_s=10)
        ws = windows(db_path)
        pieces = await mem.store.fetchall("window_pieces", (json.dumps([w.id for w in ws]),))

    items = [i for w in ws for i in w.items]
    chunks = [i for i in items if i[0] == long_id]
    n = len(chunks)
    assert n >= 3 and len(text) > chunk_chars
    # one piece per chunk, numbered in order, all knowing the chunk count
    assert [(c[1], c[2]) for c in chunks] == [(k, n) for k in range(n)]
    # the chunks cover the text exactly: contiguous, no overlap, nothing dropped
    assert chunks[0][3] == 0 and chunks[-1][4] == len(text)
    assert all(a[4] == b[3] for a, b in pairwise(chunks))
    assert all(0 < c[4] - c[3] <= chunk_chars for c in chunks)
    # every cut is at a sentence end (each chunk's last third holds one in this text)
    for c in chunks[:-1]:
        assert text[c[3] : c[4]].rstrip()[-1] in "。！？.!?", text[c[3] : c[4]]
    # the extractor sees exactly the text: the chunk texts join back to the content
    by_event: dict[str, list[str]] = defaultdict(list)
    for p in pieces:
        by_event[p[3]].append(p[10])
    assert "".join(by_event[long_id]) == text
    # each chunk is a window piece: the cap counts chunks, and the next event follows them
    assert [w.item_count for w in ws] == [5] * (n // 5) + [(n % 5) + 1]
    assert [w.reason for w in ws] == ["size"] * (n // 5) + ["flush"]
    assert items[-1][0] == short_id


@pytest.mark.anyio
async def test_without_sentence_ends_cuts_fall_at_clauses_or_spaces(db_path: Path) -> None:
    zh = "我们先讨论需求，再确定接口，然后分工写代码，最后一起联调测试，" * 4  # clauses only
    en = " ".join(["alpha", "beta", "gamma", "delta", "epsilon", "zeta"] * 6)  # words only
    cfg = fast_config(windower={"chunk_chars": 50, "max_events": 50})
    async with hlmem.open(db_path, config=cfg, clock=hlmem.ManualClock()) as mem:
        await mem.add_event("s", zh, event_id="zh")
        await mem.add_event("s", en, event_id="en")
        await mem.flush()
        await mem.drain(timeout_s=10)

    items = [i for w in windows(db_path) for i in w.items]
    for eid, text, tail in [("zh", zh, "，"), ("en", en, " ")]:
        chunks = [i for i in items if i[0] == eid]
        assert len(chunks) >= 3
        assert "".join(text[c[3] : c[4]] for c in chunks) == text
        assert all(text[c[3] : c[4]].endswith(tail) for c in chunks[:-1])


@pytest.mark.anyio
async def test_content_without_breaks_is_cut_at_chunk_chars(db_path: Path) -> None:
    text = "没有标点的长文本" * 20 + "x" * 35  # 195 characters, no break anywhere
    cfg = fast_config(windower={"chunk_chars": 50})
    async with hlmem.open(db_path, config=cfg, clock=hlmem.ManualClock()) as mem:
        await mem.add_event("s", text, event_id="nobreak")
        exact = "y" * 50  # exactly chunk_chars: not split
        await mem.add_event("s", exact, event_id="exact")
        await mem.flush()
        await mem.drain(timeout_s=10)

    items = [i for w in windows(db_path) for i in w.items]
    assert [(i[0], i[1], i[3], i[4]) for i in items] == [
        ("nobreak", 0, 0, 50),
        ("nobreak", 1, 50, 100),
        ("nobreak", 2, 100, 150),
        ("nobreak", 3, 150, 195),
        ("exact", 0, 0, 50),
    ]


# --- isolation and order --------------------------------------------------------------------


@pytest.mark.anyio
async def test_windows_never_mix_sessions_or_namespaces(db_path: Path) -> None:
    """The same session id in two namespaces, interleaved with another session."""
    async with hlmem.open(db_path, config=fast_config(), clock=hlmem.ManualClock()) as mem:
        batch = []
        for i in range(7):
            batch.append(
                {"session_id": "s", "namespace": "a", "content": ZH[i % 6], "event_id": f"a{i}"}
            )
            batch.append(
                {"session_id": "s", "namespace": "b", "content": EN[i % 6], "event_id": f"b{i}"}
            )
            batch.append(
                {"session_id": "t", "namespace": "a", "content": MIXED[i], "event_id": f"t{i}"}
            )
        await mem.add_events(batch[:10])  # one group commit mixing all three sessions
        for event in batch[10:]:
            await mem.add_events([event])
        await mem.drain(timeout_s=10)

    ws = windows(db_path)
    meta = {
        r[0]: (r[1], r[2]) for r in rows(db_path, "SELECT id, namespace, session_id FROM events")
    }
    for w in ws:
        assert {meta[e] for e in w.event_ids} == {(w.namespace, w.session_id)}
    for ns, sid, prefix in [("a", "s", "a"), ("b", "s", "b"), ("a", "t", "t")]:
        got = of_session(ws, sid, ns)
        assert [(w.status, w.event_ids) for w in got] == [
            ("closed", [f"{prefix}{i}" for i in range(5)]),
            ("open", [f"{prefix}5", f"{prefix}6"]),
        ]


@pytest.mark.anyio
async def test_windows_closed_together_share_extractor_jobs(db_path: Path) -> None:
    """windower.windows_per_job: the windows one batch closes go to the extractor in jobs of
    up to that many, per namespace, each window in exactly one job, and each is extracted once
    (zh and en sessions)."""
    cfg = fast_config(windower={"windows_per_job": 3})
    clock = hlmem.ManualClock()
    async with hlmem.open(db_path, config=cfg, clock=clock, pipeline="external") as mem:
        sessions = [("a", f"zh-{i}", ZH) for i in range(7)] + [("b", f"en-{i}", EN) for i in (0, 1)]
        await mem.add_events(
            [
                {"namespace": ns, "session_id": sid, "content": texts[k]}
                for ns, sid, texts in sessions
                for k in range(5)
            ]
        )
        assert await step(mem, Windower(cfg.windower, clock)) >= 1
        jobs = await mem.queue.claim(JobKind.EXTRACTOR, 100)
        payloads = [j.payload for j in jobs if isinstance(j.payload, WindowClosed)]
        assert len(payloads) == len(jobs)
        by_ns: dict[str, list[int]] = defaultdict(list)
        for p in payloads:
            by_ns[p.namespace].append(len(p.window_ids))
        assert sorted(by_ns["a"]) == [1, 3, 3] and by_ns["b"] == [2]
        in_jobs = [w for p in payloads for w in p.window_ids]
        closed = {w.id for w in windows(db_path) if w.status == "closed"}
        assert len(in_jobs) == len(set(in_jobs)) == len(closed) == 9
        assert set(in_jobs) == closed
        sizes = dict(rows(db_path, "SELECT id, size FROM jobs WHERE kind = 'extractor'"))
        assert all(sizes[j.id] == len(p.window_ids) for j, p in zip(jobs, payloads, strict=True))
        await mem.queue.release(jobs)
        extractor = Extractor(mem.store, clock, cfg, lexicon=default_lexicon(), gateway=None)
        assert await step(mem, extractor) == 4
    extracted = rows(db_path, "SELECT window_id, job_id FROM extractions")
    assert sorted(w for w, _ in extracted) == sorted(closed)
    job_of = {w: j.id for j, p in zip(jobs, payloads, strict=True) for w in p.window_ids}
    assert all(job_of[w] == job for w, job in extracted)


@pytest.mark.anyio
async def test_order_within_a_session_is_commit_order(db_path: Path) -> None:
    """Many sessions interleaved across group commits and windower batches keep their order."""
    cfg = fast_config(windower={"max_events": 4})
    async with hlmem.open(db_path, config=cfg, clock=hlmem.ManualClock()) as mem:
        expected: dict[str, list[str]] = defaultdict(list)

        async def producer(sid: str) -> None:
            for i in range(9):
                eid = await mem.add_event(sid, f"{sid} 第{i}条 message {i}.")
                expected[sid].append(eid)

        async with anyio.create_task_group() as tg:
            for k in range(6):
                tg.start_soon(producer, f"会话{k}")
        await mem.flush()
        await mem.drain(timeout_s=20)

    ws = windows(db_path)
    for sid, ids in expected.items():
        mine = of_session(ws, sid)
        assert [e for w in mine for e in w.event_ids] == ids
        assert [w.item_count for w in mine] == [4, 4, 1]
    positions: dict[str, list[int]] = defaultdict(list)
    for wid, pos in rows(
        db_path, "SELECT window_id, pos FROM window_items ORDER BY window_id, pos"
    ):
        positions[wid].append(pos)
    assert all(p == list(range(len(p))) for p in positions.values())


# --- replay and batching edge cases ---------------------------------------------------------


@pytest.mark.anyio
async def test_replayed_windower_job_places_nothing_twice(db_path: Path) -> None:
    clock = hlmem.ManualClock()
    cfg = fast_config()
    async with hlmem.open(db_path, config=cfg, clock=clock, pipeline="external") as mem:
        windower = Windower(cfg.windower, clock)
        await mem.add_events(
            [
                {"session_id": "s", "content": t, "event_id": f"e{i}"}
                for i, t in enumerate(MIXED[:7])
            ]
        )
        jobs = await mem.queue.claim(JobKind.WINDOWER, 10)
        assert len(jobs) == 1
        await apply(mem, windower, jobs, None, complete=True)
        before = windows(db_path)
        for _ in range(2):  # the same job applied again (a replay after a lost ack)
            assert await apply(mem, windower, jobs, None) == []

    after = windows(db_path)
    assert after == before
    assert [(w.status, w.event_ids) for w in after] == [
        ("closed", [f"e{i}" for i in range(5)]),
        ("open", ["e5", "e6"]),
    ]
    assert len(rows(db_path, "SELECT * FROM window_items")) == 7
    assert len(rows(db_path, "SELECT * FROM jobs WHERE kind = 'extractor'")) == 1


@pytest.mark.anyio
async def test_flush_in_the_batch_that_fills_a_stored_window(db_path: Path) -> None:
    """A stored window filled (closed by size) and a flush in one windower batch.

    The flush must not reload the stale stored copy of the window it just closed: its
    item_count and close reason must stay those of the size close.
    """
    clock = hlmem.ManualClock()
    cfg = fast_config()
    async with hlmem.open(db_path, config=cfg, clock=clock, pipeline="external") as mem:
        windower = Windower(cfg.windower, clock)
        for i in range(3):
            await mem.add_event("s", ZH[i], event_id=f"e{i}")
        await step_all(mem, windower)  # the window is stored, open, with 3 items
        for i in range(3, 6):
            await mem.add_event("s", EN[i], event_id=f"e{i}")
        await mem.end_session("s")
        await mem.flush()
        await step(mem, windower, limit=10)  # e3, e4 (fills it), e5, session end, flush
        extractor = Extractor(mem.store, clock, cfg, lexicon=default_lexicon(), gateway=None)
        await step_all(mem, extractor)

    ws = windows(db_path)
    assert [(w.status, w.reason, w.item_count, w.event_ids) for w in ws] == [
        ("closed", "size", 5, [f"e{i}" for i in range(5)]),
        ("closed", "session_end", 1, ["e5"]),
    ]
    assert sorted(r[0] for r in rows(db_path, "SELECT window_id FROM extractions")) == sorted(
        w.id for w in ws
    )


# --- property: random interleavings ---------------------------------------------------------

# the same session id in two namespaces, and few sessions so that windows fill up
SESSIONS = [("a", "s0"), ("b", "s0"), ("a", "s1"), ("default", "s1")]

event_st = st.tuples(
    st.integers(0, len(SESSIONS) - 1),  # which session
    st.sampled_from(["zh", "en", "long-zh", "long-en"]),
    st.booleans(),  # user or assistant
)
add_st = st.tuples(st.just("add"), st.lists(event_st, min_size=1, max_size=6))
op_st = st.one_of(
    add_st,
    add_st,  # twice: adding is the common operation
    st.tuples(st.just("end"), st.integers(0, len(SESSIONS) - 1)),
    st.tuples(st.just("flush"), st.integers(0, 2), st.integers(0, len(SESSIONS) - 1)),
    st.tuples(st.just("advance"), st.sampled_from([1.0, 30.0, 119.0, 120.0, 300.0])),
    st.tuples(st.just("process"), st.integers(1, 12)),  # one windower batch of n jobs
    st.tuples(st.just("sweep")),
)


def _content(kind: str, n: int) -> str:
    if kind == "zh":
        return ZH[n % len(ZH)]
    if kind == "en":
        return EN[n % len(EN)]
    if kind == "long-zh":
        return "".join(ZH[(n + k) % len(ZH)] for k in range(12))
    return " ".join(EN[(n + k) % len(EN)] for k in range(5))


async def _run_ops(db: Path, cfg: Config, ops: list[tuple[Any, ...]], final_batch: int) -> None:
    clock = hlmem.ManualClock()
    async with hlmem.open(db, config=cfg, clock=clock, pipeline="external") as mem:
        windower = Windower(cfg.windower, clock)
        n = 0
        for op in ops:
            if op[0] == "add":
                batch = []
                for s, kind, user in op[1]:
                    ns, sid = SESSIONS[s]
                    batch.append(
                        {
                            "session_id": sid,
                            "namespace": ns,
                            "content": _content(kind, n),
                            "role": "user" if user else "assistant",
                            "event_id": f"ev{n:04d}",
                        }
                    )
                    n += 1
                await mem.add_events(batch)
            elif op[0] == "end":
                ns, sid = SESSIONS[op[1]]
                await mem.end_session(sid, namespace=ns)
            elif op[0] == "flush":
                ns, sid = SESSIONS[op[2]]
                if op[1] == 0:
                    await mem.flush()
                elif op[1] == 1:
                    await mem.flush(namespace=ns)
                else:
                    await mem.flush(namespace=ns, session_id=sid)
            elif op[0] == "advance":
                clock.advance(op[1])
            elif op[0] == "process":
                await step(mem, windower, op[1])
            else:
                await sweep(mem, windower)
        await step_all(mem, windower, limit=final_batch)
        extractor = Extractor(mem.store, clock, cfg, lexicon=default_lexicon(), gateway=None)
        await step_all(mem, extractor, limit=3)
        backlog = sum([await mem.queue.backlog(k) for k in (JobKind.WINDOWER, JobKind.EXTRACTOR)])
    assert backlog == 0


def _check_invariants(db: Path, cfg: Config) -> None:
    max_events, max_age = cfg.windower.max_events, timedelta(seconds=cfg.windower.max_age_s)
    events = rows(db, "SELECT id, namespace, session_id, content, recorded_at, seq FROM events")
    ws = windows(db)
    placed: dict[tuple[str, int], list[str]] = defaultdict(list)
    by_session: dict[tuple[str, str], list[Win]] = defaultdict(list)
    for w in ws:
        by_session[(w.namespace, w.session_id)].append(w)
        for item in w.items:
            placed[(item[0], item[1])].append(w.id)
    rec = {e[0]: e for e in events}

    for eid, ns, sid, content, _recorded, _seq in events:
        # every chunk of every event is in exactly one window ...
        chunks = [i for w in ws for i in w.items if i[0] == eid]
        assert chunks, f"{eid} ({ns}/{sid}) was never windowed"
        chunks.sort(key=lambda i: i[1])
        assert [i[1] for i in chunks] == list(range(len(chunks)))
        assert all(i[2] == len(chunks) for i in chunks)
        # ... and the chunks cover the content exactly
        assert chunks[0][3] == 0 and chunks[-1][4] == len(content)
        assert all(a[4] == b[3] for a, b in pairwise(chunks))
        assert all(i[4] - i[3] <= cfg.windower.chunk_chars for i in chunks)
    assert all(len(v) == 1 for v in placed.values())

    for w in ws:
        # never across sessions or namespaces; never over the cap; counts agree
        assert {(rec[i[0]][1], rec[i[0]][2]) for i in w.items} <= {(w.namespace, w.session_id)}
        assert w.item_count == len(w.items) <= max_events
        if w.reason == "size":
            assert w.item_count == max_events
        # no window spans max_age_s or more of recorded time
        if w.items:
            first = parse_iso(rec[w.items[0][0]][4])
            last = parse_iso(rec[w.items[-1][0]][4])
            assert last - first < max_age
            assert w.opened_at == rec[w.items[0][0]][4]

    for (ns, sid), mine in by_session.items():
        # the session's pieces, in commit order, are the windows' items in order
        order = sorted(
            ((e[5], i[1]), (i[0], i[1]))
            for e in events
            if (e[1], e[2]) == (ns, sid)
            for i in [x for w in ws for x in w.items if x[0] == e[0]]
        )
        assert [(i[0], i[1]) for w in mine for i in w.items] == [p for _, p in order]
        # every window but the session's last is closed
        assert all(w.status == "closed" for w in mine[:-1])

    extracted = {r[0] for r in rows(db, "SELECT window_id FROM extractions")}
    assert extracted == {w.id for w in ws if w.status == "closed" and w.items}


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    ops=st.lists(op_st, min_size=1, max_size=40),
    max_events=st.integers(1, 6),
    final_batch=st.integers(1, 8),
)
@example(  # a stored window filled, then flushed, in one batch (a bug the property found)
    ops=[
        ("add", [(0, "zh", True), (1, "en", True)]),
        ("process", 1),
        ("add", [(1, "zh", True), (0, "en", False)]),
        ("flush", 0, 0),
        ("process", 12),
    ],
    max_events=2,
    final_batch=4,
)
def test_random_interleavings_keep_windowing_invariants(
    ops: list[tuple[Any, ...]], max_events: int, final_batch: int
) -> None:
    cfg = fast_config(windower={"max_events": max_events, "chunk_chars": 50})
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "memory.db"
        anyio.run(_run_ops, db, cfg, ops, final_batch, backend="asyncio")
        _check_invariants(db, cfg)
