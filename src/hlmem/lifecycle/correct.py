"""User corrections: "that is wrong, it is X" replaces a claim with the user's value.

:func:`correct` turns a correction of one active claim into a structured write on the same slot
(like ``Memory.remember``): an event holding the user's words, whose metadata names the
corrected claim, and one candidate that goes through admission, dedup and conflict like any
other. The words may be a bare value ("北京") or a sentence ("其实我住在北京", "I actually live
in Berlin"): the rules extractor reads a sentence, and the value it finds on the claim's slot
(with its polarity, qualifiers and time) is taken; a sentence that says something about other
slots only is refused.

The conflict stage knows a correction by its extractor name
(:data:`hlmem.messages.CORRECTION_EXTRACTOR`) and the corrected claim by its event's metadata. A
correction always becomes the current value: the corrected claim is superseded with the reason
``user correction: ...`` even when the new value starts earlier in valid time (a late statement
would not replace a newer fact), and even on a multi-valued slot, where a different value would
otherwise live beside it. By default the correcting claim is valid from where the corrected one was:
the old value was wrong, not changed, so its valid time closes where it opened, while recorded time
keeps what the system believed until the correction. Dedup never merges a correction away; when the
slot already holds the value, conflict folds the correction into that claim and supersedes the
corrected one by it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

import anyio
from pydantic import BaseModel, ConfigDict

from hlmem.claims import admission_rules as admission
from hlmem.claims import subject_key, tombstone_key
from hlmem.clock import parse_iso, wall
from hlmem.errors import InputError
from hlmem.jobs import JobSpec
from hlmem.lang import Language, Lexicon, content_hash, derived_id, language_of
from hlmem.messages import (
    CORRECTION_EXTRACTOR,
    Candidate,
    ClaimDraft,
    ClaimScope,
    ClaimsProposed,
    EvidenceSpan,
    JobKind,
    Role,
    WindowPiece,
    WindowText,
)
from hlmem.pipeline import EventRow
from hlmem.rules import RulesExtractor
from hlmem.store import Store, SyncTx

#: the session a correction's event is stored in (unless the caller names one)
CORRECTION_SESSION = "correct"


class Correction(BaseModel):
    """A correction on its way: the event holding it and the claim it will place."""

    model_config = ConfigDict(frozen=True)

    event_id: str
    #: the id the correcting claim gets (unless the slot already holds the value: then conflict
    #: folds it into that claim)
    claim_id: str
    #: the corrected claim, superseded once the pipeline has placed the correction
    corrects: str
    predicate: str
    value: str
    polarity: int
    text: str


@dataclass(frozen=True)
class _Target:
    id: str
    namespace: str
    subject: str
    predicate: str
    value: str
    status: str
    polarity: Literal[1, -1]
    qualifiers: tuple[str, ...]
    scope: ClaimScope
    importance: float
    starts: datetime


async def load_target(store: Store, claim_id: str) -> _Target:
    """The active claim to correct.

    :raises InputError: no such claim, forgotten, or not current.
    """
    rows = await store.fetchall("explain_claim", (claim_id,))
    if not rows:
        if await store.fetchall("forget_tombstone_of", ("claim", claim_id)):
            raise InputError(f"correct: claim {claim_id!r} was forgotten")
        raise InputError(f"correct: no claim {claim_id!r}")
    r = rows[0]
    if r["status"] != "active":
        newer = f" (its successor is {r['superseded_by']})" if r["superseded_by"] else ""
        raise InputError(
            f"correct: claim {claim_id!r} is {r['status']}, not current{newer}:"
            " correct the current claim"
        )
    return _Target(
        id=r["id"],
        namespace=r["namespace"],
        subject=r["subject"],
        predicate=r["predicate"],
        value=r["value"],
        status=r["status"],
        polarity=-1 if r["polarity"] < 0 else 1,
        qualifiers=tuple(json.loads(r["qualifiers"])),
        scope=r["scope"] if r["scope"] in ("short_term", "plan") else "long_term",
        importance=r["importance"],
        starts=parse_iso(r["valid_from"] or r["recorded_at"]),
    )


async def correction_draft(
    target: _Target, words: str, *, lexicon: Lexicon, now: datetime
) -> ClaimDraft:
    """The draft replacing ``target`` with the user's ``words`` (a value or a sentence).

    :raises InputError: blank words, a sentence about other slots only, the same value, or a
        value the worth-remembering gate refuses.
    """
    text = words.strip() if isinstance(words, str) else ""
    if not text:
        raise InputError("correct: the correction is blank")
    window = WindowText(
        window_id="correct",
        namespace=target.namespace,
        session_id=CORRECTION_SESSION,
        pieces=(
            WindowPiece(
                event_id="-",
                chunk_no=0,
                chunk_count=1,
                start_char=0,
                end_char=len(text),
                role=Role.USER,
                text=text,
                occurred_at=now,
            ),
        ),
    )
    found = await anyio.to_thread.run_sync(RulesExtractor(lexicon).extract, window)
    mine = [
        d
        for d in found
        if lexicon.canonical_predicate(d.predicate) == target.predicate
        and subject_key(d.subject) == subject_key(target.subject)
    ]
    if found and not mine:
        raise InputError(
            f"correct: {text!r} says nothing about {target.predicate}; give the new value"
        )
    if mine:
        d = mine[0]
        value, polarity, qualifiers = d.value, d.polarity, d.qualifiers
        scope, valid_from, valid_to = d.scope, d.valid_from, d.valid_to
    else:
        value, polarity, qualifiers = text, target.polarity, ()
        scope, valid_from, valid_to = target.scope, None, None
    if (value, polarity, tuple(qualifiers)) == (target.value, target.polarity, target.qualifiers):
        raise InputError(f"correct: claim {target.id!r} already says {value!r}")
    language: Language = "zh" if language_of(value + text) == "zh" else "en"
    draft = ClaimDraft(
        subject=target.subject,
        predicate=target.predicate,
        value=value,
        text=lexicon.text_for(target.predicate, value, language=language, polarity=polarity),
        language=language,
        polarity=polarity,
        qualifiers=tuple(qualifiers),
        scope=scope,
        importance=target.importance,
        confidence=1.0,
        valid_from=valid_from or target.starts,
        valid_to=valid_to,
        evidence=(EvidenceSpan(event_id="-", quote=text, start_char=0, end_char=len(text)),),
    )
    verdict = admission.gate(draft)
    if verdict.decision == "block":
        raise InputError(f"correct: the new value is refused ({verdict.rule})")
    return draft


async def submit(
    store: Store, target: _Target, draft: ClaimDraft, row: EventRow, *, recorded_at: datetime
) -> Correction:
    """Write the correction's event and its admission job in one transaction.

    :raises InputError: the value or the words were forgotten (a tombstone refuses them).
    """
    evidence = draft.evidence[0].model_copy(update={"event_id": row[0]})
    candidate = Candidate(
        key=derived_id("clm", CORRECTION_EXTRACTOR, row[0]),
        namespace=target.namespace,
        draft=draft.model_copy(update={"evidence": (evidence,)}),
        recorded_at=recorded_at,
        source="remember",
        extractor=CORRECTION_EXTRACTOR,
    )
    slot = tombstone_key(target.namespace, draft)
    if await store.fetchall("tombstoned_any", (json.dumps([["slot", slot]]),)):
        raise InputError("correct: that value was forgotten; a correction cannot bring it back")
    spec = JobSpec(
        JobKind.ADMISSION, ClaimsProposed(candidates=(candidate,)), namespace=target.namespace
    )
    now = wall()

    def write(tx: SyncTx) -> None:
        if tx.fetchall("existing_event_ids", (json.dumps([row[0]]),)):
            raise InputError(f"correct: event id {row[0]!r} is taken")
        tx.execute("insert_event", (*row[:5], content_hash(row[4]), *row[6:]))
        if not tx.fetchall("existing_event_ids", (json.dumps([row[0]]),)):
            # The events trigger dropped it: these words were forgotten (a content tombstone).
            raise InputError("correct: these words were forgotten; say the correction otherwise")
        tx.execute("insert_session", (row[1], row[2], row[9], row[7]))
        tx.execute("insert_job", spec.row(now))

    await store.run_in_transaction(write)
    return Correction(
        event_id=row[0],
        claim_id=candidate.key,
        corrects=target.id,
        predicate=draft.predicate,
        value=draft.value,
        polarity=draft.polarity,
        text=draft.text,
    )


def event_fields(target: _Target, text: str, event_id: str | None, now: datetime) -> dict[str, Any]:
    """The fields of a correction's event (``coerce_event`` input)."""
    return {
        "session_id": CORRECTION_SESSION,
        "content": text.strip(),
        "namespace": target.namespace,
        "event_id": event_id,
        "occurred_at": now,
        "metadata": {"correct": {"claim_id": target.id}},
    }
