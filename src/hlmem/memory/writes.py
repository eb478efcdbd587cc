"""The write side of the facade beyond ingest: ``remember``, ``feedback`` and ``forget``.

``Memory.remember`` is split in two: :func:`remember_input` validates the fields and builds the
claim draft and its event (nothing touches the store, so a blank field is an
:class:`~hlmem.errors.InputError` even on a closed memory), and :func:`remember_commit` writes
the event, its session and the admission job in one transaction. That transaction first reads
the tombstones that would stop the fact (its event's id, content or session, its candidate key,
its slot key): a forgotten fact is refused there and then (:class:`~hlmem.errors.ForgottenFact`,
with the forget's time), not dropped later by the trigger or by admission; with
``override_forget`` the fact's content and slot tombstones are lifted instead, and the lift is
recorded as an admission decision of the new candidate (``explain`` shows it). Tombstones of
event ids, claim ids and sessions are never lifted: the forgotten events and claims stay out.
:func:`feedback` moves a claim's utility (and, when useful, its activation); :func:`forget`
runs :mod:`hlmem.claims.forgetting` with a recall that grants no activation.
:class:`hlmem.memory.facade.Memory` is the API: its methods call these, and this module must not
import :mod:`hlmem.memory.facade` (no cycle).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any, Literal, NamedTuple

from pydantic import ValidationError

from hlmem.claims import ForgetResult, blocked_reason, boost_sync, redacted_draft, tombstone_key
from hlmem.claims import forget as forget_items
from hlmem.clock import Clock, iso, wall
from hlmem.config import Config
from hlmem.errors import ForgottenFact, InputError
from hlmem.jobs import JobQueue, JobSpec
from hlmem.lang import Lexicon, content_hash, derived_id, language_of
from hlmem.messages import (
    Candidate,
    ClaimDraft,
    ClaimScope,
    ClaimsProposed,
    EventIn,
    EvidenceSpan,
    JobKind,
    RecallResult,
)
from hlmem.pipeline import EventWriter, coerce_event
from hlmem.recall import Recaller
from hlmem.store import Store, SyncTx

log = logging.getLogger(__name__)

#: the tombstones remember(override_forget=True) may lift: the fact's, never an event's or a claim's
LIFTABLE = frozenset({"content", "slot"})


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
    store: Store,
    queue: JobQueue,
    writer: EventWriter,
    remembered: Remembered,
    *,
    override_forget: bool = False,
    mode: str = "enforce",
) -> str:
    """Write a remembered event, its session and its admission job; the event id (the stored
    one if the event id was known: then nothing is written). ``mode``: the admission mode
    recorded with an override.

    :raises ForgottenFact: a forget's tombstone stops the fact (nothing written).
    :raises InputError: ``override_forget``, but what stops it is not the fact's content or slot.
    """
    ns, content, occurred, draft, event = remembered
    row = writer.prepare(event)
    evidence = draft.evidence[0].model_copy(update={"event_id": row[0]})
    candidate = Candidate(
        key=derived_id("clm", "remember", row[0]),
        namespace=ns,
        draft=redacted_draft(draft.model_copy(update={"evidence": (evidence,)})),  # a payload
        recorded_at=occurred,
        source="remember",
        extractor="remember",
    )
    spec = JobSpec(JobKind.ADMISSION, ClaimsProposed(candidates=(candidate,)), namespace=ns)
    now = wall()
    stops = {
        "id": row[0],
        "namespace": ns,
        "hash": content_hash(content),
        "session": row[2],
        "occurred": row[6],
        "claim": candidate.key,
        "slot": tombstone_key(ns, draft),
    }

    def write(tx: SyncTx) -> str:
        if tx.fetchall("existing_event_ids", (json.dumps([row[0]]),)):
            return row[0]
        found = tx.fetchall("forget_blocking_fact", stops)
        if found:
            _stopped(tx, found, row[0], candidate.key, iso(occurred), override_forget, mode)
        tx.execute("insert_event", (*row[:5], stops["hash"], *row[6:]))
        tx.execute("insert_session", (row[1], row[2], row[9], row[7]))
        tx.execute("insert_job", spec.row(now))
        return row[0]

    stored = await store.run_in_transaction(write)
    queue.ring({JobKind.ADMISSION})
    return stored


def _stopped(
    tx: SyncTx, found: list[Any], event_id: str, key: str, at: str, override: bool, mode: str
) -> None:
    """Refuse a remembered fact that tombstones (``found``: id, kind, time; oldest first) stop,
    or, with ``override``, lift them and record it.

    :raises ForgottenFact: without ``override``.
    :raises InputError: with it, when an event id, claim id or session tombstone stops it.
    """
    kinds = tuple(dict.fromkeys(str(f["kind"]) for f in found))
    first = found[0]
    if not override:
        why = blocked_reason(first["kind"], first["created_at"])
        raise ForgottenFact(
            f"remember: blocked: {why}; nothing was stored "
            "(override_forget / --override-forget teaches it again)",
            kinds=kinds,
            forgotten_at=str(first["created_at"]),
        )
    fixed = [f for f in found if f["kind"] not in LIFTABLE]
    if fixed:
        why = blocked_reason(fixed[0]["kind"], fixed[0]["created_at"])
        raise InputError(
            f"remember: {why}: override_forget lifts a "
            "forgotten fact's content and slot only; remember it under a new event id or session"
        )
    tx.executemany("forget_lift_tombstone", [(f["id"],) for f in found])
    tx.executemany(
        "insert_admission_decision",
        [
            (
                event_id,
                key,
                mode,
                "admit",
                f"override_forget: {f['kind']} tombstone of {f['created_at']} lifted",
                at,
            )
            for f in found
        ],
    )
    log.info(
        "forget overridden",
        extra={"action": "override_forget", "event_id": event_id, "tombstones": len(found)},
    )


async def feedback(
    store: Store, config: Config, clock: Clock, item_id: str, *, useful: bool
) -> None:
    """Move a recalled item's feedback utility (``Memory.feedback``): ``item_id`` is an item's
    ``feedback_id`` ("<query_id>:<item id>") or a claim's id. A claim's utility is in its row;
    an event's (events are immutable) in ``event_feedback``.

    :raises InputError: ``item_id`` names no claim and no event.
    """
    cfg = config.maintenance
    _, sep, rest = item_id.partition(":")
    target = rest if sep and item_id.startswith("q_") and rest else item_id
    delta = 0.25 if useful else -0.25
    now = clock.now()

    def write(tx: SyncTx) -> int:
        changed = tx.execute("recall_feedback", {"id": target, "delta": delta})
        if changed and useful:
            boost_sync(tx, cfg, [target], now=now, boost=cfg.feedback_boost, count_access=False)
        if not changed:
            changed = tx.execute(
                "recall_event_feedback", {"id": target, "delta": delta, "now": iso(now)}
            )
        return changed

    changed = await store.run_in_transaction(write)
    if not changed:
        raise InputError(f"feedback: no claim or event {target!r}")


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
    """Run :func:`hlmem.claims.forgetting.forget` (``Memory.forget``), recalling through
    ``recaller``.

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
            related=False,  # only what the query's words name, never its neighbours
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
