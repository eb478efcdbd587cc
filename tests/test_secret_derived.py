"""Nothing derived from an event holds its secret: recall, vectors, payloads, prompts, old stores.

The event keeps what was said; its full-text row, its vector, the drafts in job payloads, what
a model is sent and what a dead letter keeps do not. A recall for the exact secret finds what a
wrong guess finds (no oracle). A store written before the rules knew a phrasing is cleaned by
maintenance's ``secrets`` task. Real stores, the real pipeline, the scripted and simulated
providers on 127.0.0.1; old stores are made by writing their rows as an older version did.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from helpers import connect_raw, fast_config, rows, scalar, wait_until
from scripted_provider import ScriptedProvider, chat_reply
from secret_phrasings import LEAKS_ZH, SAFE_ZH
from test_model_extraction import model_config
from test_offload import CHILD_READY_S, offload_config, offloader
from test_secret_phrasings import _derived_texts, _found, _vectors_not_of_scrubbed_text

import hlmem
from hlmem.claims import GATE_PASSED, gate, redacted_draft, state_name
from hlmem.clock import ManualClock
from hlmem.lang import LocalEmbedder, scrub
from hlmem.messages import Candidate, ClaimDraft, ClaimsProposed, EvidenceSpan
from hlmem.sim import SimProvider

pytestmark = pytest.mark.anyio

PASSWORD = "Hunter2!xyz"
SLACK = "xoxb-" + "1234567890-1234567890123-" + "aB3dE5fG7hJ9kL1mN2pQ4rS6"
SAID = {
    "zh": [("pw", f"我的密码是{PASSWORD}"), ("other", "我喜欢喝咖啡")],
    "en": [("pw", f"the slack bot token is {SLACK}"), ("other", "I live in Berlin")],
}
SECRET = {"zh": PASSWORD, "en": SLACK}
GUESS = {"zh": "Hunter2!xyy", "en": SLACK[:-1] + "7"}


def draft(value: str, text: str, *, predicate: str = "note", quote: str = "") -> ClaimDraft:
    return ClaimDraft(
        subject="user",
        predicate=predicate,
        value=value,
        text=text,
        language="en",
        evidence=(
            EvidenceSpan(
                event_id="ev", quote=quote or text, start_char=0, end_char=len(quote or text)
            ),
        ),
    )


# --- the gate and the payload form of a draft ---------------------------------------------------


def test_a_draft_is_redacted_for_its_payload_and_blocked_by_its_markers() -> None:
    leaky = draft("the root pw is Tr0ub4dor&10", "the root pw is Tr0ub4dor&10")
    payload = redacted_draft(leaky)
    assert "Tr0ub4dor&10" not in payload.model_dump_json()
    assert payload.value == payload.text == "the root pw is [REDACTED:password]"
    assert payload.evidence[0].start_char == 0 and payload.evidence[0].end_char == 27
    assert gate(leaky).rule == gate(payload).rule == "secret:password"
    clean = draft("dark mode", "User prefers dark mode")
    assert redacted_draft(clean) is clean and gate(clean).rule == GATE_PASSED


def test_a_value_named_as_a_secret_is_one() -> None:
    # ("user", "wifi_password", "hunter2abc"): the value alone reads like any word
    named = draft("hunter2abc", "my wifi", predicate="wifi_password", quote="my wifi")
    assert gate(named).rule == "secret:password"
    assert redacted_draft(named).value == "[REDACTED:password]"
    pin = draft("4321", "my card", predicate="pin", quote="my card")
    assert gate(pin).rule == "secret:password"
    assert gate(draft("1Password", "user uses 1Password", predicate="uses")).rule == GATE_PASSED


# --- recall is no oracle ----------------------------------------------------------------------


@pytest.mark.parametrize("lang", ["zh", "en"])
async def test_recall_for_the_exact_secret_finds_what_a_wrong_guess_finds(
    db_path: Path, lang: str
) -> None:
    async with hlmem.open(db_path, config=fast_config()) as mem:
        ids = {name: await mem.add_event(f"s-{name}", text) for name, text in SAID[lang]}
        await mem.flush()
        await mem.drain(timeout_s=30)
        exact = await mem.recall(SECRET[lang], k=20)
        guess = await mem.recall(GUESS[lang], k=20)
        # the query cannot match what redaction leaves in place of a secret
        markers = [await mem.recall(q, k=20) for q in ("REDACTED", "[REDACTED:password]")]
    assert ids["pw"] not in {i.id for i in exact.items}
    assert [i.id for i in exact.items] == [i.id for i in guess.items]
    assert all(ids["pw"] not in {i.id for i in m.items} for m in markers)
    body = scalar(db_path, "SELECT body FROM recall_docs WHERE item_id = ?", (ids["pw"],))
    assert SECRET[lang].lower()[:8] not in body and "redacted" not in body
    # the event itself keeps what was said
    assert rows(db_path, "SELECT content FROM events WHERE id = ?", (ids["pw"],)) == [
        (dict(SAID[lang])["pw"],)
    ]


# --- vectors ----------------------------------------------------------------------------------


async def test_a_vector_is_of_the_text_without_its_secrets_even_cut_at_the_limit(
    db_path: Path,
) -> None:
    limit = 64
    cfg = fast_config(embedder={"event_max_chars": limit})
    straddling = "I keep notes about our servers here, and the root pw is Tr0ub4dor&10xyz ok"
    assert straddling.index("Tr0ub4dor") < limit < straddling.index("xyz")
    longer = ("password: Aa1!aaaa " * 12) + "then pw Tr0ub4dor&11abcdef at the end"
    async with hlmem.open(db_path, config=cfg) as mem:
        for n, text in enumerate([straddling, longer]):
            await mem.add_event(f"s{n}", text)
        await mem.flush()
        await mem.drain(timeout_s=30)
    found = rows(
        db_path,
        "SELECT e.content, v.vector FROM vectors v JOIN events e ON e.id = v.owner_id"
        " WHERE v.owner_kind = 'event' ORDER BY e.seq",
    )
    embedder = LocalEmbedder(cfg.embedder.dim)
    for content, blob in found:
        got = np.frombuffer(blob, dtype=np.float32)
        assert np.allclose(got, embedder.embed([scrub(content)[:limit]])[0], atol=1e-6)
        assert not np.allclose(got, embedder.embed([content[:limit]])[0], atol=1e-6)


# --- the CPU helper child ---------------------------------------------------------------------


async def test_the_helper_child_derives_nothing_with_a_secret_either(db_path: Path) -> None:
    cfg = offload_config()
    said = [t for t, _ in LEAKS_ZH] + [t for t, _ in SAFE_ZH]
    async with hlmem.open(db_path, config=cfg, clock=ManualClock()) as mem:
        off = offloader(mem)
        await mem.add_event("warm-up", "我主要用深色模式")  # in the thread: the child starts
        await mem.flush()
        await mem.drain(timeout_s=30)
        await wait_until(lambda: off.pid is not None, timeout_s=CHILD_READY_S)
        for n, text in enumerate(said):
            await mem.add_event(f"s{n}", text)
        await mem.flush()
        await mem.drain(timeout_s=120)
        served = dict(off.served)
    assert served["extract"] > 0 and served["embed"] > 0
    secrets = {s: t for t, ss in LEAKS_ZH for s in ss}
    assert _found(_derived_texts(db_path), secrets) == []
    dim, limit = cfg.embedder.dim, cfg.embedder.event_max_chars
    assert _vectors_not_of_scrubbed_text(db_path, dim, limit) == []


# --- structured writes ------------------------------------------------------------------------


async def test_remember_of_a_secret_keeps_it_out_of_the_job_payload(db_path: Path) -> None:
    async with hlmem.open(db_path, config=fast_config()) as mem:
        await mem.remember("user", "wifi_password", "hunter2abc")
        await mem.remember("server", "note", "the root pw is Tr0ub4dor&10")
        await mem.remember("user", "ui_theme", "深色模式")
        await mem.drain(timeout_s=30)
        claims = await mem.claims()
    assert [c.value for c in claims] == ["深色模式"]
    payloads = " ".join(r[0] for r in rows(db_path, "SELECT payload FROM jobs"))
    assert "hunter2abc" not in payloads and "Tr0ub4dor&10" not in payloads
    rules = sorted(r[0] for r in rows(db_path, "SELECT rule FROM admission_decisions"))
    assert rules == ["passed", "secret:password", "secret:password"]


# --- model extraction: what the provider is sent, and what a dead letter keeps -------------------


async def test_a_model_is_sent_the_window_redacted_and_claims_keep_exact_offsets(
    tmp_path: Path,
) -> None:
    db = tmp_path / "m.db"
    said = f"我叫小明，我的密码是 {PASSWORD}。我住在杭州"
    with SimProvider() as sim:
        async with hlmem.open(db, config=model_config(sim.base_url)) as mem:
            event = await mem.add_event("s", said)
            await mem.add_event("s", f"Remember: the root pw is {PASSWORD[::-1]}9")
            await mem.flush()
            await mem.drain(timeout_s=60)
            claims = await mem.claims()
    assert sorted(c.value for c in claims) == ["小明", "杭州"]
    for c in claims:
        (span,) = c.evidence
        assert said[span.start_char : span.end_char] == span.quote and span.event_id == event
    decisions = {r[0] for r in rows(db, "SELECT rule FROM admission_decisions")}
    assert "secret:password" in decisions
    assert _found(_derived_texts(db), {PASSWORD: said, PASSWORD[::-1] + "9": "note"}) == []


async def test_the_prompt_and_a_dead_letter_hold_no_secret(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    said = "我的邮箱密码和QQ密码都是 qwerty@2024，我住在杭州"
    with ScriptedProvider() as server:
        cfg = model_config(server.base_url)
        # a model that echoes a secret back in answers that never parse, every attempt
        calls = cfg.pipeline.extractor.max_attempts * (1 + cfg.extractor.repair_attempts)
        server.script(json_body=chat_reply("not json: qwerty@2024"), times=calls)
        async with hlmem.open(db, config=cfg) as mem:
            await mem.add_event("s", said)
            await mem.flush()
            await mem.drain(timeout_s=60)
            (failed,) = await mem.list_jobs(status="failed")
        sent = json.dumps([s.body for s in server.seen], ensure_ascii=False)
    first = server.seen[0].body["messages"][1]["content"]
    assert "qwerty@2024" not in first and "[REDACTED:password]" in first and "杭州" in first
    assert "qwerty@2024" not in sent.replace("not json: qwerty@2024", "")  # only its own echo
    assert failed.detail and "not json" in failed.detail and "qwerty@2024" not in failed.detail
    assert "qwerty@2024" not in (failed.last_error or "")
    assert _found(_derived_texts(db), {"qwerty@2024": said}) == []


# --- import -----------------------------------------------------------------------------------


async def test_an_imported_claim_holding_a_secret_is_refused(tmp_path: Path) -> None:
    old, new = tmp_path / "old.db", tmp_path / "new.db"
    async with hlmem.open(old, config=fast_config()) as mem:
        await mem.add_event("s", "记住：周五前交报告")
        await mem.add_event("t", "记住：下周一开会")
        await mem.flush()
        await mem.drain(timeout_s=30)
    # an older version let this note through: its claim holds the password
    conn = connect_raw(old)
    try:
        conn.execute(
            "UPDATE claims SET value = ?, text = ? WHERE value = '下周一开会'",
            ("服务器 root 密码 Tr0ub4dor&11", "服务器 root 密码 Tr0ub4dor&11"),
        )
    finally:
        conn.close()
    async with hlmem.open(old, config=fast_config()) as mem:
        await mem.export(tmp_path / "old.jsonl", vectors=False)
    async with hlmem.open(new, config=fast_config()) as mem:
        summary = await mem.import_file(tmp_path / "old.jsonl")
        await mem.drain(timeout_s=30)
        claims = await mem.claims()
    assert [c.value for c in claims] == ["周五前交报告"]
    assert summary.counts["claim"].refused == 1
    assert _found(_derived_texts(new), {"Tr0ub4dor&11": "note"}) == []


# --- a store written before the rules knew the phrasing ------------------------------------------


def _make_old(db: Path, event_id: str, claim_id: str, dim: int) -> None:
    """What an older version derived: a full-text row, vectors, job payloads with the secret."""
    embedder = LocalEmbedder(dim)
    raw = "服务器 root 密码 Tr0ub4dor&11"
    leaked = draft(raw, raw).model_copy(
        update={
            "evidence": (EvidenceSpan(event_id=event_id, quote=raw, start_char=0, end_char=18),)
        }
    )
    candidate = Candidate(
        key="clm_old",
        namespace="default",
        draft=leaked,
        recorded_at=datetime(2026, 1, 1, tzinfo=UTC),
    )
    payload = ClaimsProposed(candidates=(candidate,)).model_dump_json()
    conn = connect_raw(db)
    try:
        conn.execute(
            "UPDATE recall_docs SET body = ? WHERE item_id = ?",
            ("服 务 器 root 密 码 服务 务器 密码 tr0ub4dor 11", event_id),
        )
        vector = embedder.embed([raw])[0].astype(np.float32).tobytes()
        conn.execute(
            "UPDATE vectors SET vector = ? WHERE owner_id IN (?, ?)", (vector, event_id, claim_id)
        )
        conn.execute("UPDATE claims SET value = ?, text = ? WHERE id = ?", (raw, raw, claim_id))
        conn.execute(
            "INSERT INTO jobs (kind, status, payload, created_at, updated_at) VALUES"
            " ('admission', 'done', ?, 0, 0)",
            (payload,),
        )
        conn.execute(
            "INSERT INTO jobs (kind, status, payload, last_error, detail, created_at, updated_at)"
            " VALUES ('extractor', 'failed', ?, ?, ?, 0, 0)",
            (
                json.dumps({"kind": "window_closed", "window_ids": ["w"]}),
                f"ExtractionFailed: quote not found: {raw!r}",
                '{"claims": "' + raw + '"}',
            ),
        )
    finally:
        conn.close()


async def test_maintenance_takes_secrets_out_of_what_an_older_version_derived(
    db_path: Path,
) -> None:
    clock = ManualClock(datetime(2026, 3, 1, 9, 0, tzinfo=UTC))
    cfg = fast_config()
    async with hlmem.open(db_path, config=cfg, clock=clock) as mem:
        event_id = await mem.add_event("s", "服务器 root 密码 Tr0ub4dor&11")
        await mem.add_event("t", "记住：周五前交报告")
        await mem.flush()
        await mem.drain(timeout_s=30)
        (claim,) = await mem.claims()
    _make_old(db_path, event_id, claim.id, cfg.embedder.dim)
    secret = {"Tr0ub4dor&11": "服务器 root 密码"}
    assert _found(_derived_texts(db_path), secret)  # the old store leaks
    async with hlmem.open(db_path, config=cfg, clock=clock) as mem:
        before = await mem.recall("Tr0ub4dor&11")
        report = await mem.maintain()
        await mem.drain(timeout_s=30)  # the embedder's backfill embeds anew
        after = await mem.recall("Tr0ub4dor&11")
        again = await mem.maintain()
    assert event_id in {i.id for i in before.items}  # the oracle of the old store
    assert event_id not in {i.id for i in after.items}
    # a full-text row, the claim, its and the event's vectors, the admission and the failed job
    assert report.reindex.secrets_rewritten == 6
    assert report.reindex.secrets_scanned >= 6
    assert again.reindex.secrets_rewritten == 0
    assert _found(_derived_texts(db_path), secret) == []
    assert (
        scalar(
            db_path, "SELECT count(*) FROM maintenance_state WHERE name = ?", (state_name("jobs"),)
        )
        == 1
    )
    embedder = LocalEmbedder(cfg.embedder.dim)
    for owner, text in rows(
        db_path,
        "SELECT v.owner_id, coalesce(e.content, c.text) FROM vectors v"
        " LEFT JOIN events e ON e.id = v.owner_id LEFT JOIN claims c ON c.id = v.owner_id"
        " WHERE v.owner_id IN (?, ?)",
        (event_id, claim.id),
    ):
        (blob,) = rows(db_path, "SELECT vector FROM vectors WHERE owner_id = ?", (owner,))[0]
        want = embedder.embed([scrub(text)[: cfg.embedder.event_max_chars]])[0]
        assert np.allclose(np.frombuffer(blob, dtype=np.float32), want, atol=1e-6)
