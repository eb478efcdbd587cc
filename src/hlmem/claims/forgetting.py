"""Explicit forget: tombstones first, then the cascade, in one writer transaction.

What is forgotten (DESIGN.md §6):

- **by claim**: the claim; **by event**: every claim resting on the event, and the event;
  **by session**: every claim resting on an event of the session, and all its events;
  **by query**: the query is recalled in the namespace (its time words apply: current beliefs
  by default); of the items it returns, only those that really match the query pass (the
  absolute floor of :mod:`hlmem.claims.forget_match`: its content terms, or a near-identical
  vector), and of those the ones scoring at least ``forget.query_relative_score`` of the best are
  forgotten, at most ``forget.query_max_items``: a claim (with the claims recall folded into
  it), or an event (as by event: with every claim resting on it). When nothing passes,
  nothing is forgotten (``matched`` is empty). ``dry_run`` reports what would go (the plan,
  with the claims' texts redacted) and writes nothing; ``confirmed=`` that dry run forgets
  exactly what it listed, or nothing (:class:`~hlmem.errors.InputError` when the store has
  changed since).
- With each claim go its vectors, full-text row, evidence links, entity links (entities no
  other claim names go too), merge records and supersessions, the claims merged into it and
  kept as rows (maintenance's dedup convergence), its admission decisions, and the finished
  admission and dedup jobs whose payloads quote it; derived observations are marked
  ``needs_recompute``. The claim row is deleted: the status ``forgotten`` is never stored.
- Its evidence events go when no remaining claim rests on them and no unfinished pipeline work
  still reads them (their other claims may not exist yet); the rest are reported as kept.
  Named events (by event, by session, an in-conversation request's target) always go.
- Supersession chains stay coherent: a claim that a forgotten claim had superseded is relinked
  to the forgotten claim's surviving successor. When there is none, an **erasure** (forget by
  claim, event, session, query) leaves it superseded: the belief it held was given up, and
  forgetting the new value does not bring the old one back. A **retraction** (an
  in-conversation "forget what I just said") restores it: it is believed again, as if the
  retracted words had never been said.

Tombstones hold keys and hashes only (migration 0006 lists them): the claim id and the keys of
candidates merged into it, the slot key of every wording (namespace + claim content hash), the
id of every deleted event, the content hash of deleted evidence events that carry a fact (a bare
"yes" is no fact, and must not silence every later "yes"), and for a session its key. They stop
replays, re-extraction, re-driven jobs, structured writes and corrections from bringing anything
back: admission and dedup refuse tombstoned candidates, and database triggers drop events,
full-text rows and vectors of forgotten items whatever wrote them. A re-sent forgotten event
is dropped and counted (``Stats.tombstones``): ``add_event`` returns its id as usual, since a
sender replaying after a crash must not fail on it, and the group commit says which events a
tombstone stopped (:func:`blocking_tombstones`; ``hlmem ingest`` reports them as blocked).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import re
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

import anyio
import numpy as np
from pydantic import BaseModel, ConfigDict

from hlmem.claims.admission_rules import worth_extracting
from hlmem.claims.forget_match import ForgetMatch, choose
from hlmem.clock import iso, parse_iso
from hlmem.config import Config
from hlmem.errors import InputError
from hlmem.lang import LocalEmbedder, redact
from hlmem.messages import RecallItem, RecallResult
from hlmem.store import Store, SyncTx

log = logging.getLogger(__name__)

ForgetBy = Literal["claim", "event", "session", "query", "request"]

#: the reason of a supersession relinked past a forgotten claim (no values: they may be gone)
RELINK_REASON = "superseded by a later claim (a claim between them was forgotten)"
SESSION_SEP = "\x1f"
_MERGE_DEPTH = 8
_LETTERS = re.compile(r"[\W_]+")
_CJK = re.compile(r"[\u3400-\u9fff]")


class ForgetResult(BaseModel):
    """What a forget deleted (or, with ``dry_run``, would delete)."""

    model_config = ConfigDict(frozen=True)

    by: ForgetBy
    dry_run: bool
    namespace: str | None
    #: claims deleted, with everything resting on them
    claim_ids: tuple[str, ...] = ()
    #: events deleted
    event_ids: tuple[str, ...] = ()
    #: evidence events of the forgotten claims kept: another claim rests on them, or pipeline
    #: work on them is unfinished
    kept_event_ids: tuple[str, ...] = ()
    #: claims believed again because the claim that had superseded them was retracted
    reinstated_claim_ids: tuple[str, ...] = ()
    #: tombstones written (already present ones not counted)
    tombstones: int = 0
    vectors: int = 0
    fts_rows: int = 0
    evidence_links: int = 0
    observations_invalidated: int = 0
    #: the named claim, event or session had been forgotten before: nothing left to do
    already_forgotten: bool = False
    #: the claims' texts, secrets redacted, by claim id (the plan a user confirms)
    claim_texts: dict[str, str] = {}
    #: by query: the query, its content terms, how many items recall returned, and those that
    #: matched it (passed the floor) and were chosen; empty: nothing matches, nothing forgotten
    query: str | None = None
    query_terms: tuple[str, ...] = ()
    recalled: int = 0
    matched: tuple[ForgetMatch, ...] = ()


@dataclass(frozen=True)
class ForgetPlan:
    """What to forget; :func:`apply_forget` works out the rest inside the transaction."""

    by: ForgetBy
    reason: str
    namespace: str | None = None
    claim_ids: frozenset[str] = frozenset()
    #: events to delete whatever rests on them (their claims are forgotten too)
    event_ids: frozenset[str] = frozenset()
    #: (namespace, session id): all its events are named
    session: tuple[str, str] | None = None
    #: (namespace, claim content hash) of candidates stopped before they became claims: live
    #: claims saying the same are forgotten too
    restated: frozenset[tuple[str, str]] = frozenset()
    #: keys and slot keys of candidates stopped before they became claims
    candidate_keys: frozenset[str] = frozenset()
    slot_keys: frozenset[str] = frozenset()
    #: named events whose content is a forgotten fact (content tombstone)
    fact_events: frozenset[str] = frozenset()
    #: restore the predecessor of a forgotten current claim (a retraction)
    reinstate: bool = False
    #: the caller's own jobs, not counted as unfinished work
    exclude_jobs: tuple[int, ...] = ()
    #: (claim ids, event ids) of the dry run the caller confirmed: anything else aborts
    expect: tuple[tuple[str, ...], tuple[str, ...]] | None = None
    #: by query: the query, its content terms, how many items recall returned, those chosen
    query: str | None = None
    query_terms: tuple[str, ...] = ()
    recalled: int = 0
    matched: tuple[ForgetMatch, ...] = ()


@dataclass
class _Found:
    claims: dict[str, Any] = field(default_factory=dict)
    merges: list[Any] = field(default_factory=list)
    events: dict[str, Any] = field(default_factory=dict)
    kept: list[str] = field(default_factory=list)
    facts: set[str] = field(default_factory=set)


_BLOCKED_WHAT = {
    "event": "this event was forgotten",
    "content": "its content was forgotten",
    "session": "its session was forgotten (and it happened before that)",
    "slot": "this fact was forgotten",
    "claim": "this claim was forgotten",
}


class Blocked(BaseModel):
    """An event id a forget stops: nothing with that id is stored, however often it is sent."""

    model_config = ConfigDict(frozen=True)

    event_id: str
    #: when the forget that stops it was made
    forgotten_at: datetime
    #: the forget's reason ("forget by query"; "dropped on arrival: its content was forgotten
    #: (forget by claim)" for an event whose content or session a forget had stopped)
    reason: str


async def blocked(store: Store, event_ids: Iterable[str]) -> dict[str, Blocked]:
    """The ids of ``event_ids`` that a forget stops, with when and why (``Memory.blocked``)."""
    ids = sorted(set(event_ids))
    found = await store.fetchall("forget_event_tombstones", (json.dumps(ids),)) if ids else []
    return {
        r["key"]: Blocked(
            event_id=r["key"], forgotten_at=parse_iso(r["created_at"]), reason=r["reason"]
        )
        for r in found
    }


def blocked_reason(kind: str, at: str) -> str:
    """What a caller is told about something a tombstone of ``kind``, written at ``at``, stops:
    "its content was forgotten at 2026-03-01T09:00:00+00:00"."""
    return f"{_BLOCKED_WHAT.get(kind, f'a {kind} tombstone stops it')} at {at}"


def _js(items: Iterable[Any]) -> str:
    return json.dumps(sorted(items), ensure_ascii=False)


def carries_content(text: str) -> bool:
    """Whether an event's text is a fact worth a content tombstone: not an acknowledgement and
    not a bare answer ("yes", "是的"), which would silence every later one."""
    letters = _LETTERS.sub("", text)
    return worth_extracting(text) and len(letters) >= (3 if _CJK.search(letters) else 4)


def _find(tx: SyncTx, plan: ForgetPlan) -> _Found:
    named = set(plan.event_ids)
    if plan.session is not None:
        named |= {r["id"] for r in tx.fetchall("forget_session_events", plan.session)}
    seeds = set(plan.claim_ids)
    seeds |= {r["claim_id"] for r in tx.fetchall("forget_claims_of_events", (_js(named),))}
    if plan.restated:
        pairs = json.dumps(sorted([ns, h] for ns, h in plan.restated), ensure_ascii=False)
        seeds |= {r["id"] for r in tx.fetchall("forget_claims_of_hashes", (pairs,))}
    found = _Found(claims={r["id"]: r for r in tx.fetchall("forget_claim_rows", (_js(seeds),))})
    # A claim merged into a forgotten one and kept as a row (maintenance's dedup convergence
    # supersedes the newer of two equal claims) says the same thing: it goes too.
    for _ in range(_MERGE_DEPTH):
        found.merges = tx.fetchall("forget_merge_sources", (_js(found.claims),))
        more = {r["source_key"] for r in found.merges} - set(found.claims)
        rows = tx.fetchall("forget_claim_rows", (_js(more),)) if more else []
        if not rows:
            break
        found.claims.update((r["id"], r) for r in rows)
    ids = _js(found.claims)
    evidence = {r["event_id"] for r in tx.fetchall("forget_evidence_events", (ids,))}
    others = evidence - named
    needed = {
        r["event_id"]
        for r in tx.fetchall("forget_events_still_needed", {"events": _js(others), "claims": ids})
    }
    busy = {
        r["event_id"]
        for r in tx.fetchall(
            "forget_events_in_flight",
            {"events": _js(others - needed), "exclude_jobs": _js(plan.exclude_jobs)},
        )
    }
    doomed = named | (others - needed - busy)
    found.events = {r["id"]: r for r in tx.fetchall("forget_event_rows", (_js(doomed),))}
    found.kept = sorted(evidence - set(found.events))
    found.facts = ((evidence | plan.fact_events) & set(found.events)) - {
        e for e, r in found.events.items() if not carries_content(r["content"])
    }
    return found


def _tombstone_keys(plan: ForgetPlan, found: _Found) -> list[tuple[str, str, str]]:
    """(kind, key, namespace) of every tombstone the forget writes."""
    keys: list[tuple[str, str, str]] = []
    for cid, r in found.claims.items():
        ns = r["namespace"]
        keys += [("claim", cid, ns), ("slot", f"{ns}:{r['content_hash']}", ns)]
    for m in found.merges:
        ns = found.claims[m["claim_id"]]["namespace"]
        keys.append(("claim", m["source_key"], ns))
        if m["source_hash"]:
            keys.append(("slot", f"{ns}:{m['source_hash']}", ns))
    ns = plan.namespace or ""
    keys += [("claim", k, ns) for k in sorted(plan.candidate_keys)]
    keys += [("slot", k, ns) for k in sorted(plan.slot_keys)]
    for eid, r in found.events.items():
        ns = r["namespace"]
        keys.append(("event", eid, ns))
        if eid in found.facts:
            keys.append(("content", f"{ns}:{r['content_hash']}", ns))
    if plan.session is not None:
        keys.append(("session", SESSION_SEP.join(plan.session), plan.session[0]))
    return list(dict.fromkeys(keys))


def apply_forget(tx: SyncTx, plan: ForgetPlan, now: str, *, dry_run: bool) -> ForgetResult:
    """Forget what ``plan`` names inside the caller's transaction: tombstones first, then the
    cascade (module docstring). With ``dry_run`` nothing is written. Runs on the writer thread.
    """
    found = _find(tx, plan)
    claims, events = _js(found.claims), _js(found.events)
    counts = tx.fetchall("forget_counts", {"claims": claims, "events": events})[0]
    keys = _tombstone_keys(plan, found)
    present = tx.fetchall("tombstoned_any", (json.dumps([[k, key] for k, key, _ in keys]),))
    result = ForgetResult(
        by=plan.by,
        dry_run=dry_run,
        namespace=plan.namespace,
        claim_ids=tuple(sorted(found.claims)),
        event_ids=tuple(sorted(found.events)),
        kept_event_ids=tuple(found.kept),
        tombstones=len(keys) - len(present),
        vectors=counts["vectors"],
        fts_rows=counts["fts_rows"],
        evidence_links=counts["evidence_links"],
        observations_invalidated=counts["observations_invalidated"],
        claim_texts={c: redact(str(r["text"])) for c, r in sorted(found.claims.items())},
        query=plan.query,
        query_terms=plan.query_terms,
        recalled=plan.recalled,
        matched=plan.matched,
    )
    if plan.expect is not None and plan.expect != (result.claim_ids, result.event_ids):
        raise InputError(
            f"forget: what it names changed since the plan was shown (now "
            f"{len(result.claim_ids)} claim(s) and {len(result.event_ids)} event(s)): nothing "
            "was forgotten; review the new plan"
        )
    if dry_run or not (keys or found.claims or found.events):
        return result
    # The tombstones first: from here on nothing forgotten can be written back, and the events
    # trigger lets exactly these events be deleted.
    tx.executemany("insert_tombstone", [(k, key, ns, plan.reason, now) for k, key, ns in keys])
    tx.executemany(
        "invalidate_observations", [{"now": now, "claim_id": c} for c in sorted(found.claims)]
    )
    reinstated = _heal(tx, found.claims, reinstate=plan.reinstate, now=now)
    owners = [("claim", c) for c in sorted(found.claims)] + [("event", e) for e in found.events]
    tx.executemany("vector_delete_owner", owners)
    tx.executemany("fts_delete", owners)
    merged = {r["source_key"] for r in found.merges} | set(plan.candidate_keys)
    tx.execute(
        "forget_delete_decisions", {"keys": _js(set(found.claims) | merged), "events": events}
    )
    needles = [json.dumps(x, ensure_ascii=False) for x in (*found.claims, *merged, *found.events)]
    tx.execute("forget_delete_done_jobs", {"needles": json.dumps(needles, ensure_ascii=False)})
    entities = [r["entity_id"] for r in tx.fetchall("forget_claim_entities", (claims,))]
    tx.execute("forget_delete_claims", (claims,))
    tx.execute("forget_delete_orphan_entities", (_js(entities),))
    tx.execute("forget_delete_events", (events,))
    if plan.session is not None:
        tx.execute("forget_delete_empty_session", plan.session)
    return result.model_copy(update={"reinstated_claim_ids": tuple(reinstated)})


def _starts(row: Any) -> str:
    """Where a claim starts on the valid-time axis (forget_claim_rows)."""
    return str(row["valid_from"] or row["recorded_at"])


def _heal(tx: SyncTx, gone: dict[str, Any], *, reinstate: bool, now: str) -> list[str]:
    """Keep supersession chains coherent around the claims about to be deleted (see the module
    docstring); the claims believed again."""
    by_new: dict[str, list[Any]] = {}
    for p in tx.fetchall("forget_predecessors", (_js(gone),)):
        if p["old_claim_id"] not in gone and p["status"] == "superseded":
            by_new.setdefault(p["new_claim_id"], []).append(p)
    reinstated: list[str] = []
    for forgotten, preds in sorted(by_new.items()):
        successor = _survivor(gone, forgotten)
        if successor is None and reinstate:
            # The newest predecessor was the belief this claim replaced; late arrivals it had
            # put into history stay there, now behind the restored one.
            best = max(preds, key=_recency)
            tx.execute(
                "forget_reinstate", {"id": best["old_claim_id"], "cut": _starts(gone[forgotten])}
            )
            reinstated.append(best["old_claim_id"])
            successor, preds = best["old_claim_id"], [p for p in preds if p is not best]
        if successor is None:
            continue
        for p in preds:
            tx.execute("forget_relink", {"old": p["old_claim_id"], "new": successor})
            tx.execute("insert_supersession", (p["old_claim_id"], successor, RELINK_REASON, now))
    return reinstated


def _recency(p: Any) -> tuple[str, str, str]:
    """How recent a predecessor (forget_predecessors) is: where it starts on the valid-time
    axis, then when it was recorded, then its id (a tie-break)."""
    return (p["valid_from"] or p["recorded_at"], p["recorded_at"], p["old_claim_id"])


def _survivor(gone: dict[str, Any], claim_id: str) -> str | None:
    """The nearest successor of ``claim_id`` that is not being forgotten, if any."""
    seen = {claim_id}
    nxt = gone[claim_id]["superseded_by"]
    while nxt is not None and nxt in gone and nxt not in seen:
        seen.add(nxt)
        nxt = gone[nxt]["superseded_by"]
    return None if nxt is None or nxt in gone else str(nxt)


# --- the public entry points (Memory.forget) ----------------------------------------------------


async def plan_for(
    store: Store,
    *,
    claim_id: str | None,
    event_id: str | None,
    session_id: str | None,
    namespace: str | None,
    default_namespace: str,
) -> ForgetPlan | None:
    """The plan of a forget by claim, event or session, or ``None`` when what it names was
    forgotten before.

    :raises InputError: it names nothing known, or something in another namespace.
    """
    if claim_id is not None:
        rows = await store.fetchall("forget_claim_rows", (json.dumps([claim_id]),))
        ns = rows[0]["namespace"] if rows else None
        kind, key, what = "claim", claim_id, f"claim {claim_id!r}"
    elif event_id is not None:
        rows = await store.fetchall("forget_event_rows", (json.dumps([event_id]),))
        ns = rows[0]["namespace"] if rows else None
        kind, key, what = "event", event_id, f"event {event_id!r}"
    else:
        assert session_id is not None
        ns = namespace or default_namespace
        rows = await store.fetchall("forget_session_events", (ns, session_id))
        kind, key = "session", SESSION_SEP.join((ns, session_id))
        what = f"session {session_id!r} in namespace {ns!r}"
    if not rows:
        if await store.fetchall("forget_tombstone_of", (kind, key)):
            return None
        raise InputError(f"forget: no {what}")
    if namespace is not None and ns != namespace:
        raise InputError(f"forget: {what} is in namespace {ns!r}, not {namespace!r}")
    plan = ForgetPlan(
        by=kind,  # type: ignore[arg-type]
        reason=f"forget by {kind}",
        namespace=ns,
        claim_ids=frozenset([claim_id] if claim_id else ()),
        event_ids=frozenset([event_id] if event_id else ()),
        session=(ns, session_id) if session_id is not None and ns is not None else None,
    )
    return plan


async def query_plan(
    store: Store,
    cfg: Config,
    recall: Callable[[str, str, int], Awaitable[RecallResult]],
    query: str,
    namespace: str,
) -> ForgetPlan:
    """The plan of a forget by query: what recall finds for it that passes the floor and the
    relative score (:func:`hlmem.claims.forget_match.choose`); a claim with the claims folded into
    it, an event with the claims resting on it."""
    found = await recall(query, namespace, 4 * cfg.forget.query_max_items)
    sims = await _similarities(store, cfg, query, found.items)
    terms, chosen = await anyio.to_thread.run_sync(choose, found, sims, cfg.forget)
    return ForgetPlan(
        by="query",
        reason="forget by query",
        namespace=namespace,
        claim_ids=frozenset(x for m in chosen if m.kind == "claim" for x in (m.id, *m.folded)),
        event_ids=frozenset(m.id for m in chosen if m.kind == "event"),
        query=query,
        query_terms=tuple(terms),
        recalled=len(found.items),
        matched=tuple(chosen),
    )


async def _similarities(
    store: Store, cfg: Config, query: str, items: Iterable[RecallItem]
) -> dict[tuple[str, str], float]:
    """The cosine of each item's stored vector with the query's, by (kind, id): only with the
    local embedder (the one recall's vector channel uses), for the items that have a vector."""
    keys = [[i.kind, i.id] for i in items]
    if cfg.embedder.provider != "local" or not keys:
        return {}
    embedder = LocalEmbedder(cfg.embedder.dim)
    q = embedder.embed_one(query)
    found = await store.fetchall(
        "forget_item_vectors",
        {"items": json.dumps(keys), "model": embedder.model_id, "version": embedder.model_version},
    )
    out: dict[tuple[str, str], float] = {}
    for r in found:
        v = np.frombuffer(r["vector"], dtype=np.float32)
        norm = float(np.linalg.norm(v) * np.linalg.norm(q))
        if v.shape == q.shape and norm > 0:
            out[(r["owner_kind"], r["owner_id"])] = float(v @ q) / norm
    return out


def _expecting(plan: ForgetPlan, confirmed: ForgetResult, query: str | None) -> ForgetPlan:
    """``plan``, bound to forget exactly what the ``confirmed`` dry run listed.

    :raises InputError: ``confirmed`` is no dry run of this selector and namespace.
    """
    if (
        not confirmed.dry_run
        or confirmed.by != plan.by
        or confirmed.namespace != plan.namespace
        or confirmed.query != query
    ):
        raise InputError("forget: confirmed= takes the dry run of the same forget")
    expect = (confirmed.claim_ids, confirmed.event_ids)
    return dataclasses.replace(plan, expect=expect)


def empty_result(by: ForgetBy, namespace: str | None, *, dry_run: bool) -> ForgetResult:
    return ForgetResult(by=by, dry_run=dry_run, namespace=namespace, already_forgotten=True)


async def forget(
    store: Store,
    cfg: Config,
    now: datetime,
    *,
    recall: Callable[[str, str, int], Awaitable[RecallResult]],
    claim_id: str | None = None,
    event_id: str | None = None,
    session_id: str | None = None,
    query: str | None = None,
    namespace: str | None = None,
    dry_run: bool = False,
    confirmed: ForgetResult | None = None,
) -> ForgetResult:
    """Forget by exactly one of claim id, event id, session id or query (module docstring).

    ``recall(query, namespace, k)`` recalls for a forget by query. ``confirmed``: the dry run
    of the same selector the caller showed and had confirmed.

    :raises InputError: not exactly one selector, a blank one, or one naming nothing known;
        ``confirmed`` is no dry run of this selector, or what it listed has changed.
    """
    given = {"claim_id": claim_id, "event_id": event_id, "session_id": session_id, "query": query}
    named = {k: v for k, v in given.items() if v is not None}
    if len(named) != 1:
        raise InputError("forget: name exactly one of claim_id, event_id, session_id, query")
    ((name, value),) = named.items()
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"forget: {name} is blank")
    if query is not None:
        ns = namespace or cfg.ingest.default_namespace
        plan = await query_plan(store, cfg, recall, query, ns)
    else:
        known = await plan_for(
            store,
            claim_id=claim_id,
            event_id=event_id,
            session_id=session_id,
            namespace=namespace,
            default_namespace=cfg.ingest.default_namespace,
        )
        if known is None:
            by: ForgetBy = "claim" if claim_id else "event" if event_id else "session"
            return empty_result(by, namespace, dry_run=dry_run)
        plan = known
    if confirmed is not None:
        plan = _expecting(plan, confirmed, query)
    stamp = iso(now)

    def run(tx: SyncTx) -> ForgetResult:
        return apply_forget(tx, plan, stamp, dry_run=dry_run)

    result = await store.run_in_transaction(run)
    log.info(
        "forget",
        extra={
            "action": "forget_dry_run" if dry_run else "forget",
            "by": result.by,
            "claims": len(result.claim_ids),
            "events": len(result.event_ids),
        },
    )
    return result
