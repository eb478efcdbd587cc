"""Extractor: explicit memory requests become claims with evidence, exactly once per window."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import pytest
from helpers import apply, fast_config, rows, step

import hlmem
from hlmem.clock import iso
from hlmem.jobs import JobSpec
from hlmem.lang import default_lexicon
from hlmem.memory import Memory
from hlmem.messages import ClaimsProposed, JobKind, WindowClosed
from hlmem.stages.base import Stage
from hlmem.stages.extractor import Extractor
from hlmem.stages.windower import Windower

pytestmark = pytest.mark.anyio

CONVERSATION: list[tuple[str, str, str]] = [
    # (event id, role, content)
    ("u1", "user", "记住：我的猫叫小白"),
    ("a1", "assistant", "好的，我会记住：你的猫叫小白。"),
    ("u2", "user", "请记住我的生日是五月三日。还有别的事吗？"),
    ("u3", "user", "Oh, and remember that the prod DB is db-prod-2. Thanks!"),
    ("a2", "assistant", "Remember that I can only see this conversation."),
    ("u4", "user", "今天天气不错，我们去散步吧。"),
    ("t1", "tool", "remember that this came from a tool"),
    ("u5", "user", "Please remember: standup moved to 9:30"),
]
EXPECTED = {
    # value: (event id, language, words the quote must hold)
    "我的猫叫小白": ("u1", "zh", "记住"),
    "我的生日是五月三日": ("u2", "zh", "请记住"),
    "the prod DB is db-prod-2": ("u3", "en", "remember that"),
    "standup moved to 9:30": ("u5", "en", "remember"),
}


def contents(db: Path) -> dict[str, str]:
    return {r[0]: r[1] for r in rows(db, "SELECT id, content FROM events")}


async def step_all(mem: Memory, stage: Stage[Any]) -> None:
    with anyio.fail_after(30):
        while await step(mem, stage):
            pass


async def add_conversation(
    mem: Memory, session_id: str = "s1", *, prefix: str = "", namespace: str | None = None
) -> None:
    """The 8 events of CONVERSATION: with the size cap of 5, a window of 5 and one of 3."""
    for event_id, role, content in CONVERSATION:
        await mem.add_event(
            session_id, content, role=role, event_id=prefix + event_id, namespace=namespace
        )


def assert_evidence_indexes_content(db: Path) -> None:
    text = contents(db)
    for claim_id, event_id, quote, start, end in rows(
        db, "SELECT claim_id, event_id, quote, start_char, end_char FROM evidence"
    ):
        assert 0 <= start < end <= len(text[event_id]), claim_id
        assert text[event_id][start:end] == quote, (claim_id, text[event_id][start:end], quote)


async def test_explicit_requests_from_the_user_become_claims_with_evidence(
    db_path: Path,
) -> None:
    clock = hlmem.ManualClock()
    async with hlmem.open(db_path, config=fast_config(), clock=clock) as mem:
        await add_conversation(mem)
        await mem.end_session("s1")
        await mem.drain(timeout_s=10)
        claims = await mem.claims()

    assert {c.value for c in claims} == set(EXPECTED)
    text = contents(db_path)
    for claim in claims:
        event_id, language, marker = EXPECTED[claim.value]
        assert claim.language == language
        assert claim.status is hlmem.ClaimStatus.ACTIVE
        assert claim.recorded_at == clock.now()
        assert len(claim.evidence) == 1
        ev = claim.evidence[0]
        assert ev.event_id == event_id
        assert marker in ev.quote.casefold() and claim.value in ev.quote
        assert text[event_id][ev.start_char : ev.end_char] == ev.quote
    # nothing from the assistant or the tool, however it is phrased
    evidence_events = {r[0] for r in rows(db_path, "SELECT event_id FROM evidence")}
    assert evidence_events == {"u1", "u2", "u3", "u5"}
    assert_evidence_indexes_content(db_path)
    # two windows (closed by size, then by end_session), one extraction each, claim counts kept
    windows = rows(db_path, "SELECT id, close_reason FROM windows ORDER BY opened_at, close_reason")
    assert sorted(r for _, r in windows) == ["session_end", "size"]
    extractions = dict(rows(db_path, "SELECT window_id, claim_count FROM extractions"))
    per_window = Counter(r[0] for r in rows(db_path, "SELECT window_id FROM claims"))
    assert extractions == dict(per_window) and sorted(extractions.values()) == [1, 3]


async def test_assistant_remember_alone_gives_no_claim(db_path: Path) -> None:
    async with hlmem.open(db_path, config=fast_config(), clock=hlmem.ManualClock()) as mem:
        await mem.add_event("s", "记住：明天早上八点开会", role="assistant")
        await mem.add_event("s", "Remember that the deploy is frozen.", role="assistant")
        await mem.add_event("s", "请记住这个：服务器密码每月更换", role="system")
        await mem.end_session("s")
        await mem.drain(timeout_s=10)
        assert await mem.claims() == []
        stats = await mem.stats()

    assert stats.claims == {} and stats.evidence == 0
    assert rows(db_path, "SELECT claim_count FROM extractions") == [(0,)]


async def test_evidence_offsets_hold_with_surrounding_whitespace(db_path: Path) -> None:
    """The quote is exactly the span its offsets name, even when the match ends in blanks."""
    events = [
        ("w1", "记住：明天早上八点开会  \n然后一起吃早饭"),
        ("w2", "  remember that the VPN config lives in /etc/vpn  \nok"),
        ("w3", "Remember this: the printer on floor 3 is broken ."),
        ("w4", "帮我记住一下， 车停在 B2 层 "),
    ]
    async with hlmem.open(db_path, config=fast_config(), clock=hlmem.ManualClock()) as mem:
        for event_id, content in events:
            await mem.add_event("s", content, event_id=event_id)
        await mem.end_session("s")
        await mem.drain(timeout_s=10)
        claims = await mem.claims()

    assert {c.value for c in claims} == {
        "明天早上八点开会",
        "the VPN config lives in /etc/vpn",
        "the printer on floor 3 is broken",
        "车停在 B2 层",
    }
    assert_evidence_indexes_content(db_path)
    for claim in claims:
        (ev,) = claim.evidence
        assert ev.quote == ev.quote.strip() and claim.value in ev.quote


async def test_evidence_offsets_index_the_whole_event_when_chunked(db_path: Path) -> None:
    zh = (
        "今天的会议讨论了很多事情。" * 8 + "记住：下周三提交季度报告。" + "其他的细节以后再说。" * 3
    )
    en = "We talked about many things today. " * 6 + "Remember that the demo is on Monday. Bye."
    cfg = fast_config(windower={"chunk_chars": 60})
    async with hlmem.open(db_path, config=cfg, clock=hlmem.ManualClock()) as mem:
        await mem.add_event("s", zh, event_id="long-zh")
        await mem.add_event("s", en, event_id="long-en")
        await mem.flush()
        await mem.drain(timeout_s=10)
        claims = await mem.claims()

    chunks = rows(db_path, "SELECT event_id, count(*) FROM window_items GROUP BY event_id")
    assert all(n > 2 for _, n in chunks)
    by_value = {c.value: c.evidence[0] for c in claims}
    assert set(by_value) == {"下周三提交季度报告", "the demo is on Monday"}
    zh_ev, en_ev = by_value["下周三提交季度报告"], by_value["the demo is on Monday"]
    assert zh_ev.event_id == "long-zh" and zh_ev.start_char == zh.index("记住")
    assert en_ev.event_id == "long-en" and en_ev.start_char == en.index("Remember")
    assert_evidence_indexes_content(db_path)


@pytest.mark.parametrize("per_job", [1, 16])
async def test_replaying_a_window_creates_no_duplicates(db_path: Path, per_job: int) -> None:
    """Also with both windows in one job (windower.windows_per_job, the rules' default) and
    with each in its own (a model extractor's)."""
    clock = hlmem.ManualClock()
    cfg = fast_config(windower={"windows_per_job": per_job})
    async with hlmem.open(db_path, config=cfg, clock=clock, pipeline="external") as mem:
        extractor = Extractor(mem.store, clock, cfg, lexicon=default_lexicon(), gateway=None)
        await add_conversation(mem)
        await mem.end_session("s1")
        await step_all(mem, Windower(cfg.windower, clock))

        jobs = await mem.queue.claim(JobKind.EXTRACTOR, 10)
        # the window closed by size and the one closed by end_session
        windows = [j.payload for j in jobs if isinstance(j.payload, WindowClosed)]
        assert [len(w.window_ids) for w in windows] == ([1, 1] if per_job == 1 else [2])
        assert len(windows) == len(jobs)
        prepared = await extractor.prepare(jobs)
        outputs = await apply(mem, extractor, jobs, prepared, complete=True)
        proposed = [
            c.draft.value
            for spec in outputs
            if isinstance(spec.payload, ClaimsProposed)
            for c in spec.payload.candidates
        ]
        assert sorted(proposed) == sorted(EXPECTED)

        def snapshot() -> tuple[list[Any], ...]:
            return (
                rows(db_path, "SELECT * FROM extractions ORDER BY 1"),
                rows(db_path, "SELECT payload FROM jobs WHERE kind = 'admission' ORDER BY id"),
                rows(db_path, "SELECT event_id, decision, rule FROM admission_decisions"),
            )

        first = snapshot()
        # one admission job for the batch (both windows are in one namespace)
        assert len(first[0]) == 2 and len(first[1]) == 1 and len(first[2]) == len(CONVERSATION)

        # the same job applied again, with the same and with freshly prepared input
        clock.advance(30)
        for again in (prepared, await extractor.prepare(jobs)):
            assert await apply(mem, extractor, jobs, again) == []
        assert snapshot() == first

        # the windows handed over again as new jobs (each twice in one batch) through the stage
        payloads = [j.payload for j in jobs]
        assert all(isinstance(p, WindowClosed) for p in payloads)
        async with mem.store.transaction() as tx:
            await mem.queue.enqueue(tx, [JobSpec(JobKind.EXTRACTOR, p) for p in payloads * 2])
        assert await step(mem, extractor) == 2 * len(jobs)
        assert snapshot() == first

        # a window_closed job naming a window that does not exist is harmless
        ghost = WindowClosed(window_id="win_missing", namespace="default", session_id="s1")
        async with mem.store.transaction() as tx:
            await mem.queue.enqueue(tx, [JobSpec(JobKind.EXTRACTOR, ghost)])
        assert await step(mem, extractor) == 1
        assert snapshot() == first
        statuses = Counter(
            r[0]
            for r in rows(
                db_path, "SELECT status FROM jobs WHERE kind NOT IN ('admission', 'embedder')"
            )
        )

    assert set(statuses) == {"done"}
    # extractions.job_id: the jobs that did it, one row per window
    assert len(first[0]) == 2 and {r[4] for r in first[0]} == {j.id for j in jobs}


async def test_one_extraction_per_window(db_path: Path) -> None:
    clock = hlmem.ManualClock()
    async with hlmem.open(db_path, config=fast_config(), clock=clock) as mem:
        for sid in ("甲", "乙", "丙"):
            # default: 9 events (windows of 5 and 4); work: 8 events (windows of 5 and 3)
            await add_conversation(mem, sid, prefix=f"{sid}-")
            await mem.add_event(sid, "最后一句，没有要记的。", event_id=f"{sid}-end")
            await add_conversation(mem, sid, prefix=f"{sid}-work-", namespace="work")
        await mem.flush()
        await mem.drain(timeout_s=20)
        default_claims = await mem.claims()
        work_claims = await mem.claims(namespace="work")

    windows = rows(db_path, "SELECT id, status FROM windows")
    assert len(windows) == 12 and {s for _, s in windows} == {"closed"}
    extractions = rows(db_path, "SELECT window_id, claim_count FROM extractions")
    assert sorted(w for w, _ in extractions) == sorted(w for w, _ in windows)
    # Each namespace heard every request three times: one claim each, with three evidence
    # links (dedup merges the repeats instead of adding rows).
    assert sum(n for _, n in extractions) == 2 * 3 * len(EXPECTED)
    assert len(default_claims) == len(work_claims) == len(EXPECTED)
    assert {c.value for c in default_claims} == set(EXPECTED)
    assert all(len(c.evidence) == 3 for c in default_claims + work_claims)
    assert all(c.recorded_at == clock.now() for c in default_claims)
    for claim in default_claims:
        assert claim.valid_from is not None and iso(claim.valid_from) == iso(clock.now())
    assert_evidence_indexes_content(db_path)
