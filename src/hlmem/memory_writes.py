"""The write side of the facade beyond ingest: ``remember``, ``feedback`` and ``forget``.

``Memory.remember`` is split in two: :func:`remember_input` validates the fields and builds the
claim draft and its event (nothing touches the store, so a blank field is an
:class:`~hlmem.errors.InputError` even on a closed memory), and :func:`remember_commit` writes
the event, its session and the admission job in one transaction. :func:`feedback` moves a
claim's utility (and, when useful, its activation); :func:`forget` runs :mod:`hlmem.forget`
with a recall that grants no activation. :class:`hlmem.memory.Memory` is the API: its methods
call these, and this module must not import :mod:`hlmem.memory` (no cycle).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Literal, NamedTuple

from pydantic import ValidationError

from hlmem.clock import Clock, wall
from hlmem.config import Config
from hlmem.errors import InputError
from hlmem.forget import ForgetResult
from hlmem.forget import forget as forget_items
from hlmem.ingest import EventWriter, coerce_event
from hlmem.lexicon import Lexicon
from hlmem.lifecycle import boost_sync
from hlmem.messages import (
    Candidate,
    ClaimDraft,
    ClaimScope,
    ClaimsProposed,
    EventIn,
    EvidenceSpan,
    RecallResult,
)
from hlmem.queue import JobQueue, JobSpec
from hlmem.recall import Recaller
from hlmem.store import Store, SyncTx
from hlmem.text import content_hash, derived_id, language_of


class Remembered(NamedTuple):
    """What :func:`remember_input` validated, for :func:`remember_commit`."""

    ns: str
    content: str
    occurred: datetime
    draft: ClaimDraft
    event: EventIn


def remember_input(
    config: Config,
    clock: Clock,
    lexicon: Callable[[], Lexicon],
    subject: str,
    predicate: str,
    value: str,
    *,
    text: str | None,
    namespace: str | None,
    session_id: str,
    event_id: str | None,
    polarity: Literal[1, -1],
    qualifiers: Iterable[str],
    scope: ClaimScope,
    valid_from: datetime | None,
    valid_to: datetime | None,
    importance: float,
    confidence: float,
) -> Remembered:
    """Validate ``Memory.remember``'s fields into a claim draft and its event.

    ``lexicon`` is called only once the subject and predicate are known not to be blank.

    :raises InputError: a blank field, or an invalid time, score or scope.
    """
    ns = namespace or config.ingest.default_namespace
    content = text if text is not None else f"{subject} {predicate} {value}"
    occurred = clock.now()
    try:
        draft = ClaimDraft(
            subject=_field("subject", subject),
            predicate=lexicon().canonical_predicate(_field("predicate", predicate)),
            value=_field("value", value),
            text=_field("text", content),
            language=language_of(content),
            polarity=polarity,
            qualifiers=tuple(qualifiers),
            scope=scope,
            importance=importance,
            confidence=confidence,
            valid_from=valid_from or occurred,
            valid_to=valid_to,
            evidence=(
                EvidenceSpan(event_id="-", quote=content, start_char=0, end_char=len(content)),
            ),
        )
        event = coerce_event(
            {
                "session_id": session_id,
                "content": content,
                "namespace": ns,
                "event_id": event_id,
                "occurred_at": occurred,
                "metadata": {"remember": {"subject": subject, "predicate": predicate}},
            }
        )
    except ValidationError as exc:
        raise InputError(f"remember: {exc.errors()[0]['msg']}") from None
    return Remembered(ns, content, occurred, draft, event)


async def remember_commit(
    store: Store, queue: JobQueue, writer: EventWriter, remembered: Remembered
) -> str:
    """Write a remembered event, its session and its admission job; the event id (the stored
    one if the event id was known: then nothing is written)."""
    ns, content, occurred, draft, event = remembered
    row = writer.prepare(event)
    evidence = draft.evidence[0].model_copy(update={"event_id": row[0]})
    candidate = Candidate(
        key=derived_id("clm", "remember", row[0]),
        namespace=ns,
        draft=draft.model_copy(update={"evidence": (evidence,)}),
        recorded_at=occurred,
        source="remember",
        extractor="remember",
    )
    spec = JobSpec("admission", ClaimsProposed(candidates=(candidate,)), namespace=ns)
    now = wall()

    def write(tx: SyncTx) -> str:
        if tx.fetchall("existing_event_ids", (json.dumps([row[0]]),)):
            return row[0]
        tx.execute("insert_event", (*row[:5], content_hash(content), *row[6:]))
        tx.execute("insert_session", (row[1], row[2], row[9], row[7]))
        tx.execute("insert_job", spec.row(now))
        return row[0]

    stored = await store.run_in_transaction(write)
    queue.ring({"admission"})
    return stored


async def feedback(
    store: Store, config: Config, clock: Clock, item_id: str, *, useful: bool
) -> None:
    """Move a claim's feedback utility (``Memory.feedback``).

    :raises InputError: ``item_id`` names no claim (events carry no feedback).
    """
    cfg = config.maintenance

    def write(tx: SyncTx) -> int:
        changed = tx.execute("recall_feedback", {"id": item_id, "delta": 0.25 if useful else -0.25})
        if changed and useful:
            boost_sync(
                tx,
                cfg,
                [item_id],
                now=clock.now(),
                boost=cfg.feedback_boost,
                count_access=False,
            )
        return changed

    changed = await store.run_in_transaction(write)
    if not changed:
        raise InputError(f"feedback: no claim {item_id!r} (feedback applies to claims)")


async def forget(
    store: Store,
    config: Config,
    recaller: Recaller,
    now: datetime,
    *,
    claim_id: str | None,
    event_id: str | None,
    session_id: str | None,
    query: str | None,
    namespace: str | None,
    dry_run: bool,
    confirmed: ForgetResult | None = None,
) -> ForgetResult:
    """Run :func:`hlmem.forget.forget` (``Memory.forget``), recalling through ``recaller``.

    :raises InputError: not exactly one selector, or one that names nothing known.
    """

    async def recall(text: str, ns: str, k: int) -> RecallResult:
        # Not Memory.recall: what a forget looks up must not gain activation.
        return await recaller.recall(
            text,
            namespace=ns,
            now=now,
            k=k,
            mode=None,
            as_of=None,
            valid_at=None,
            budget_tokens=None,
            include_untrusted=False,
        )

    return await forget_items(
        store,
        config,
        now,
        recall=recall,
        claim_id=claim_id,
        event_id=event_id,
        session_id=session_id,
        query=query,
        namespace=namespace,
        dry_run=dry_run,
        confirmed=confirmed,
    )


def _field(name: str, value: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"remember: {name} is blank")
    return value.strip()
