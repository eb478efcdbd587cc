"""Secrets told in ordinary words, end to end: nothing derived from them holds them.

Every phrasing of ``secret_phrasings`` (about 130, English and Chinese) is said as a user turn,
each in its own session, through the real pipeline with the rules extractor, one store per
language. Then, for every leak phrasing, its secret is looked for (case-insensitive, as a whole
word) everywhere the store derived something: every text column of every table but ``events``
(claims, evidence, jobs of every status, admission decisions, extractions, full-text rows …),
the full-text index itself (a MATCH for each of the secret's tokens), the vectors (each event's
vector must be the embedding of its text without secrets), ``claims``, ``explain`` of every
claim, ``recall`` with the secret itself as the query (nothing that holds or points to it, and
the same as a wrong guess: no oracle), the ``export`` file (its event records keep the text as
stored, the documented immutable record; no other record holds the secret) and every log
record at DEBUG. For every non-leak phrasing, the meaning is still remembered where the rules
remember it.
"""

from __future__ import annotations

import json
import logging
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import connect_raw, fast_config, rows
from secret_phrasings import LEAKS_EN, LEAKS_ZH, SAFE_EN, SAFE_ZH

import hlmem
from hlmem.clock import ManualClock
from hlmem.lang import LocalEmbedder, event_body, scrub
from hlmem.lifecycle import render
from hlmem.memory import Memory

pytestmark = pytest.mark.anyio

TABLES = {
    "en": (LEAKS_EN, SAFE_EN),
    "zh": (LEAKS_ZH, SAFE_ZH),
}
#: leak phrasings whose other meaning must survive: (text, the claim value kept)
KEPT = {
    "我叫大伟，我的密码是 DaWei@2024": "大伟",
    "我住在深圳，支付密码 778899": "深圳",
    "My name is Alex. My password is Alex!Pw42": "Alex",
    "My name is Bea, and my password is Bea!Pw77": "Bea",
}


def _pattern(secret: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![0-9A-Za-z]){re.escape(secret)}(?![0-9A-Za-z])", re.IGNORECASE)


class Store:
    """One language's store after ingestion, and what to look for in it."""

    def __init__(self, mem: Memory, db: Path, lang: str) -> None:
        self.mem, self.db, self.lang = mem, db, lang
        self.leaks, self.safe = TABLES[lang]
        self.events: dict[str, str] = {}  # phrasing -> event id

    async def ingest(self, clock: ManualClock) -> None:
        said = [(f"leak-{i}", t) for i, (t, _) in enumerate(self.leaks)]
        said += [(f"safe-{i}", t) for i, (t, _) in enumerate(self.safe)]
        for session, text in said:
            self.events[text] = await self.mem.add_event(f"{self.lang}-{session}", text)
            clock.advance(1)
        await self.mem.flush()
        await self.mem.drain(timeout_s=120)


def _found(texts: dict[str, str], secrets: dict[str, str]) -> list[str]:
    """Where each secret occurs among ``texts`` (place -> text): "secret @ place"."""
    hits = []
    for secret, line in secrets.items():
        pattern = _pattern(secret)
        hits += [
            f"{secret!r} ({line!r}) @ {place}" for place, t in texts.items() if pattern.search(t)
        ]
    return hits


def _derived_texts(db: Path) -> dict[str, str]:
    """Every text value of every table but ``events`` (and the FTS5 shadow tables, binary)."""
    conn = connect_raw(db)
    try:
        tables = [
            r[0]
            for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            if r[0] != "events" and not r[0].startswith(("recall_fts", "sqlite_"))
        ]
        out: dict[str, str] = {}
        for table in tables:
            for n, row in enumerate(conn.execute(f'SELECT * FROM "{table}"')):
                for i, value in enumerate(row):
                    if isinstance(value, str):
                        out[f"{table}[{n}].{i}"] = value
        return out
    finally:
        conn.close()


def _secret_tokens(leaks: list[tuple[str, tuple[str, ...]]], safe: list[Any]) -> dict[str, str]:
    """The full-text tokens of the secrets that no text around them has (token -> secret)."""
    around = set()
    for text, secrets in leaks:
        for secret in secrets:
            text = text.replace(secret, " ")
        around |= set(event_body(text).split())
    for text, _ in safe:
        around |= set(event_body(text).split())
    return {
        token: secret
        for _, secrets in leaks
        for secret in secrets
        for token in event_body(secret).split()  # no secret context: nothing is redacted
        if token not in around and len(token) >= 2
    }


@pytest.mark.parametrize("lang", ["en", "zh"])
async def test_no_phrasing_of_a_secret_leaks_and_no_remark_is_lost(
    tmp_path: Path, lang: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)  # every logger: ours and the libraries under us
    db = tmp_path / f"{lang}.db"
    clock = ManualClock(datetime(2026, 3, 1, 9, 0, tzinfo=UTC))
    cfg = fast_config()
    async with hlmem.open(db, config=cfg, clock=clock) as mem:
        store = Store(mem, db, lang)
        await store.ingest(clock)
        secrets = {s: t for t, ss in store.leaks for s in ss}
        claims = await mem.claims(history=True)
        shown = {f"claim {c.id}": c.model_dump_json() for c in claims}
        for c in claims:
            explained = await mem.explain(c.id)
            shown[f"explain {c.id}"] = explained.model_dump_json() + render(explained)
        recalled = {}
        for text, ss in store.leaks:
            for secret in ss:
                hit = await mem.recall(secret, k=20)
                guess = await mem.recall(_wrong_guess(secret), k=20)
                recalled[secret] = (text, hit, guess)
                # what recall returns (not the query it echoes back as it understood it)
                shown[f"recall {secret}"] = hit.model_dump_json(exclude={"query"})
        await mem.export(tmp_path / "export.jsonl")
        # the label names the record (logger, level, message format), so a failure tells its source
        logs = {
            f"log {n} {r.name} {r.levelname} {r.msg!r:.80}": repr(r.__dict__) + r.getMessage()
            for n, r in enumerate(caplog.records)
        }

    leaked = _found({**shown, **logs, **_derived_texts(db)}, secrets)
    leaked += _leaks_in_export(tmp_path / "export.jsonl", secrets, store)
    leaked += _leaks_in_the_index(db, _secret_tokens(store.leaks, store.safe))
    leaked += _vectors_not_of_scrubbed_text(db, cfg.embedder.dim, cfg.embedder.event_max_chars)
    leaked += _recall_oracles(recalled, store.events, claims)
    assert leaked == [], "\n".join(leaked)

    # in history too: "I moved to Shanghai" supersedes "I live in Berlin"
    values = [c.value for c in claims]
    wanted = [*store.safe, *((t, v) for t, v in KEPT.items() if t in store.events)]
    lost = [f"{t!r}: {v!r}" for t, v in wanted if v and not any(v in have for have in values)]
    assert lost == [], "remembered no more:\n" + "\n".join(lost)
    # A remark about passwords is indexed whole: nothing of it was taken for a secret.
    bodies = dict(rows(db, "SELECT item_id, body FROM recall_docs WHERE kind = 'event'"))
    over = [t for t, _ in store.safe if bodies[store.events[t]] != event_body(t)]
    assert over == [], over


def _wrong_guess(secret: str) -> str:
    """A guess as close as it gets: the last character changed."""
    last = secret[-1]
    return secret[:-1] + ("7" if last.isdigit() and last != "7" else "x" if last != "x" else "y")


def _leaks_in_export(path: Path, secrets: dict[str, str], store: Store) -> list[str]:
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    events = {r["id"]: r["content"] for r in records if r.get("type") == "event"}
    others = {f"export line {n}": json.dumps(r, ensure_ascii=False) for n, r in enumerate(records)}
    others = {k: v for k, v in others.items() if '"type": "event"' not in v}
    leaks = _found(others, secrets)
    # The events themselves are exported as stored (the immutable record, documented).
    leaks += [
        f"event {t!r} not exported as said" for t, e in store.events.items() if events.get(e) != t
    ]
    return leaks


def _leaks_in_the_index(db: Path, tokens: dict[str, str]) -> list[str]:
    """A secret's tokens in a full-text row, or found by the index itself (which stems)."""
    bodies = {r[0]: set(r[1].split()) for r in rows(db, "SELECT item_id, body FROM recall_docs")}
    leaks = [
        f"token {token!r} of {secret!r} in the full-text row of {item}"
        for token, secret in tokens.items()
        for item, body in bodies.items()
        if token in body
    ]
    for token, secret in tokens.items():
        matched = rows(db, "SELECT rowid FROM recall_fts WHERE recall_fts MATCH ?", (f'"{token}"',))
        if matched:
            leaks.append(f"the index finds {token!r} of {secret!r} ({len(matched)} rows)")
    return leaks


def _vectors_not_of_scrubbed_text(db: Path, dim: int, max_chars: int) -> list[str]:
    """Each event's vector must be the embedding of its text without secrets."""
    found = rows(
        db,
        "SELECT e.content, v.vector FROM vectors v JOIN events e ON e.id = v.owner_id"
        " WHERE v.owner_kind = 'event'",
    )
    assert found, "no event vectors to check"
    embedder = LocalEmbedder(dim)
    expected = embedder.embed([scrub(content)[:max_chars] for content, _ in found])
    return [
        f"the vector of {content!r} is not that of its scrubbed text"
        for (content, blob), want in zip(found, expected, strict=True)
        if not np.allclose(np.frombuffer(blob, dtype=np.float32), want, atol=1e-6)
    ]


def _recall_oracles(
    recalled: dict[str, tuple[str, Any, Any]], events: dict[str, str], claims: list[Any]
) -> list[str]:
    """A recall for a secret must find what holds it (its event, the claims resting on that
    event) exactly as a wrong guess does: only through the words around the secret, which a
    guess may share ("Wifi#Home77" said in "my wifi password is …"), never through the secret
    itself. (Other items may differ: a number's vector is near other numbers.)"""
    resting: dict[str, set[str]] = {}
    for c in claims:
        for e in c.evidence:
            resting.setdefault(e.event_id, set()).add(c.id)
    out = []
    for secret, (text, hit, guess) in recalled.items():
        points = {events[text], *resting.get(events[text], set())}
        exact = sorted(i.id for i in hit.items if i.id in points)
        wrong = sorted(i.id for i in guess.items if i.id in points)
        if exact != wrong:
            out.append(f"recall({secret!r}) finds {exact}, a wrong guess {wrong}: ({text!r})")
    return out
