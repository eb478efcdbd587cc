"""Secrets derived before the redaction rules knew them: found again, and taken out.

A store written by an older version (or before the rules learned a phrasing) may hold secrets
in what it derived from events: an event's full-text row, the vector of an event or a claim,
a job payload (the drafts of an admission or dedup job), a dead letter's raw answer. This is
the ``secrets`` task of maintenance (:mod:`hlmem.stages.maintenance`): it walks events,
claims and jobs once per version of the rules (:data:`hlmem.lang.redaction.RULES_VERSION`), with
its cursors in ``maintenance_state`` (``secrets:v<N>:events`` and so on), so each row is read
once however many passes run, and a new version of the rules reads everything again.

- an event whose text holds a secret gets its full-text row rewritten
  (:func:`hlmem.lang.event_terms.event_body` leaves secrets out) and loses its vectors, which the
  embedder's backfill computes again from the text without its secrets;
- a claim holding one (stored before the gate knew the phrasing) is redacted where it
  stands (subject, predicate, value, text, qualifiers: the secret becomes its marker, the rest
  stays, and so do its status, clocks and evidence links) and loses its vectors likewise; its
  full-text row is rewritten by the ``reindex`` task, which builds rows from the claim as it
  now reads. An evidence quote holding a secret is redacted too (its offsets still name the
  span of the event);
- a job's drafts are redacted (:func:`hlmem.claims.admission_rules.redacted_draft`), and so are its
  ``last_error`` and ``detail`` (a model's raw answer).

:func:`prepare` reads and computes outside any transaction; :func:`apply` writes in the tick's
transaction, re-checking that each row is still there (a forget may have deleted it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import anyio
from pydantic import ValidationError

from hlmem.claims.admission_rules import claim_secret, redacted_draft
from hlmem.lang import RULES_VERSION, event_body, find_secrets, redact
from hlmem.messages import ClaimDraft, ClaimsAdmitted, ClaimsProposed, EvidenceSpan
from hlmem.store import Store, SyncTx

#: the three walks, in the order a tick takes them
WALKS = ("events", "claims", "jobs")
#: the column each walk's cursor moves along
_CURSOR = {"events": "seq", "claims": "rowid", "jobs": "id"}
_PAYLOADS: dict[str, type[ClaimsProposed | ClaimsAdmitted]] = {
    "claims_proposed": ClaimsProposed,
    "claims_admitted": ClaimsAdmitted,
}


def state_name(walk: str) -> str:
    """The ``maintenance_state`` row of one walk under the current rules."""
    return f"secrets:v{RULES_VERSION}:{walk}"


@dataclass
class SecretScan:
    """One tick's worth of the scan: what to rewrite, and where each walk got to."""

    scanned: int = 0
    #: (body, event id) of full-text rows to rewrite
    bodies: list[tuple[str, str]] = field(default_factory=list)
    #: (owner kind, owner id) whose vectors go
    vectors: list[tuple[str, str]] = field(default_factory=list)
    #: (subject, predicate, value, text, qualifiers) redacted, the claim id, value and text as read
    claims: list[tuple[Any, ...]] = field(default_factory=list)
    #: (quote redacted, claim id, event id, quote as read)
    quotes: list[tuple[str, str, str, str]] = field(default_factory=list)
    #: (payload, detail, last_error) new, the job id, and the three as read: a job changed
    #: since (a forget blanked its drafts) is left for the next version of the scan
    jobs: list[tuple[Any, ...]] = field(default_factory=list)
    #: each walk's next cursor, and whether it has more to read
    cursors: dict[str, tuple[int, bool]] = field(default_factory=dict)

    @property
    def done(self) -> bool:
        return not any(more for _, more in self.cursors.values())


async def prepare(store: Store, limit: int) -> SecretScan:
    """Read the next ``limit`` rows of each walk not finished, and find their secrets (in a
    worker thread: redaction is CPU work).

    :raises StoreError: a read failed.
    """
    windows: dict[str, tuple[int, list[Any]]] = {}
    for walk in WALKS:
        found = await store.fetchall("maintenance_state_get", (state_name(walk),))
        after = int(found[0]["cursor"]) if found else 0
        rows = await store.fetchall(f"secrets_scan_{walk}", {"after": after, "limit": limit})
        windows[walk] = (after, rows)
    claim_ids = json.dumps([r["id"] for r in windows["claims"][1]])
    quotes = await store.fetchall("secrets_scan_quotes", (claim_ids,))
    return await anyio.to_thread.run_sync(_scan, windows, quotes, limit)


def _scan(windows: dict[str, tuple[int, list[Any]]], quotes: list[Any], limit: int) -> SecretScan:
    scan = SecretScan()
    for walk, (after, rows) in windows.items():
        scan.scanned += len(rows)
        cursor = int(rows[-1][_CURSOR[walk]]) if rows else after
        scan.cursors[walk] = (cursor, len(rows) >= limit)
        for row in rows:
            if walk == "events":
                _event(scan, row)
            elif walk == "claims":
                _claim(scan, row)
            else:
                _job(scan, row)
    for q in quotes:
        quote = q["quote"]
        shown = redact(quote)
        if shown != quote:
            scan.quotes.append((shown, q["claim_id"], q["event_id"], quote))
    return scan


def _event(scan: SecretScan, row: Any) -> None:
    event_id, content, body = row["id"], row["content"], row["body"]
    if not find_secrets(content):
        return
    scan.vectors.append(("event", event_id))
    fresh = event_body(content)
    if body is not None and body != fresh:
        scan.bodies.append((fresh, event_id))


def _claim(scan: SecretScan, row: Any) -> None:
    claim_id, subject, predicate = row["id"], row["subject"], row["predicate"]
    value, text = row["value"], row["text"]
    said = tuple(json.loads(row["qualifiers"]))
    if not claim_secret(subject, predicate, value, (text, *said)):
        return
    scan.vectors.append(("claim", claim_id))
    span = EvidenceSpan(event_id="-", quote="", start_char=0, end_char=0)
    d = redacted_draft(
        ClaimDraft(
            subject=subject,
            predicate=predicate,
            value=value,
            text=text,
            language="und",
            qualifiers=said,
            evidence=(span,),
        )
    )
    fields = (d.subject, d.predicate, d.value, d.text, json.dumps(list(d.qualifiers)))
    scan.claims.append((*fields, claim_id, value, text))


def _job(scan: SecretScan, row: Any) -> None:
    job_id, payload = row["id"], row["payload"]
    detail, last_error = row["detail"], row["last_error"]
    new_payload = _redacted_payload(payload)
    new_detail = redact(detail) if detail else detail
    new_error = redact(last_error) if last_error else last_error
    if (new_payload, new_detail, new_error) != (payload, detail, last_error):
        scan.jobs.append(
            (new_payload, new_detail, new_error, int(job_id), payload, detail, last_error)
        )


def _redacted_payload(payload: str) -> str:
    """A job payload with the drafts it carries redacted (the payload itself when none holds
    a secret, or when it carries no drafts)."""
    kind = next((k for k in _PAYLOADS if f'"{k}"' in payload), None)
    if kind is None:
        return payload
    try:
        message = _PAYLOADS[kind].model_validate_json(payload)
    except ValidationError:
        return payload  # not this shape after all: nothing of a draft to redact
    candidates = tuple(
        c if (d := redacted_draft(c.draft)) is c.draft else c.model_copy(update={"draft": d})
        for c in message.candidates
    )
    if all(a is b for a, b in zip(candidates, message.candidates, strict=True)):
        return payload
    return message.model_copy(update={"candidates": candidates}).model_dump_json()


def apply(tx: SyncTx, scan: SecretScan, now: str) -> int:
    """Write one tick of the scan and move its cursors; the rows rewritten (full-text rows,
    claims, quotes, jobs) and vector owners cleared."""
    if scan.bodies:
        tx.executemany("secrets_rewrite_event_body", scan.bodies)
    if scan.claims:
        tx.executemany("secrets_rewrite_claim", scan.claims)
    if scan.quotes:
        tx.executemany("secrets_rewrite_quote", scan.quotes)
    for owner in scan.vectors:
        tx.execute("vector_delete_owner", owner)
    if scan.jobs:
        tx.executemany("secrets_rewrite_job", scan.jobs)
    for walk, (cursor, _) in scan.cursors.items():
        tx.execute("maintenance_state_set", (state_name(walk), cursor, now))
    rewritten = (scan.bodies, scan.claims, scan.quotes, scan.jobs)
    return sum(map(len, rewritten)) + len(scan.vectors)
