"""Extractor: source admission, then one extraction per closed window.

``prepare`` loads each window's pieces with their events' provenance (one read for the batch)
and decides source admission per event *before any model is called*: under provenance
``enforce`` the pieces of untrusted events (external web pages, tool output, cron, heartbeat
and subagent sessions, …) are left out of what the extractor sees, and a window with nothing
left costs no call at all; neither does a window whose user turns are only acknowledgements,
thanks or one-off commands (:func:`hlmem.claims.admission_rules.worth_extracting`). The rest goes to
the rules extractor (in a worker thread, or for a big batch in the pipeline's CPU helper child,
:mod:`hlmem.pipeline.offload`) or, with ``extractor.kind = "model"``, to one structured chat call
per window through the gateway; an answer that does not parse gets
``repair_attempts`` repair calls; still bad, that was one attempt of the job
(``ExtractionFailed`` is retryable), which is dead-lettered with the raw answer kept after its
last attempt. One window's failure fails only its own job (``job_errors``).

``apply`` writes, for each window not yet extracted, one ``extractions`` row (the proof that the
window was extracted exactly once), the source decision and full-text row of each of its
events, one ``ClaimsProposed`` job per namespace carrying the batch's drafts to admission, and
one embedder job for the batch's events. Candidate keys derive from the window
and the draft's place and content, so a replayed job proposes the same keys.

Nothing derived here holds a secret: full-text bodies leave secrets out
(:func:`hlmem.lang.event_terms.event_body`), a draft is redacted before its job payload is written
(:func:`hlmem.claims.admission_rules.redacted_draft`: admission then blocks it as ``secret:<kind>``,
and its key derives from the redacted content, so no key is a hash of a password), a model is sent
the window with its secrets replaced by markers (its quotes are found back in the event's own
text), and a dead-lettered answer is kept redacted (and without the window's secrets, should
a model echo one).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from itertools import groupby
from typing import Any

import anyio

from hlmem.claims import admission_rules as admission
from hlmem.clock import Clock, iso, parse_iso
from hlmem.config import Config
from hlmem.errors import BadProviderOutput, ConfigError, ExtractionFailed
from hlmem.gateway import ChatMessage, ChatRequest, Gateway, prompts
from hlmem.jobs import JobSpec
from hlmem.lang import (
    Lexicon,
    content_hash,
    default_lexicon,
    derived_id,
    event_body,
    find_secrets,
    redact,
)
from hlmem.messages import (
    Candidate,
    ClaimDraft,
    ClaimsProposed,
    EmbedClaims,
    Job,
    JobKind,
    WindowClosed,
    WindowText,
    window_from,
)
from hlmem.rules import NAME as RULES_NAME
from hlmem.rules import RulesExtractor
from hlmem.stages.base import CpuHelper, Stage
from hlmem.store import Store, SyncTx

#: the extractor name recorded for a window with nothing worth a call (no admitted user turn
#: that could hold a memory): processed, exactly once, for free
NOTHING_TO_EXTRACT = "skipped:nothing-to-extract"

REPAIR_PROMPT = (
    "Your answer could not be used: {error}\n"
    'Reply again with JSON only, {{"claims":[...]}} as instructed, quoting lines exactly.'
)


@dataclass
class _Source:
    """One event's provenance as the extractor needs it (its times as stored: parsed only for
    the few events that a claim rests on)."""

    occurred: str
    recorded: str
    decision: admission.Decision

    @cached_property
    def occurred_at(self) -> datetime:
        return parse_iso(self.occurred)

    @cached_property
    def recorded_at(self) -> datetime:
        return parse_iso(self.recorded)

    @property
    def learned_at(self) -> datetime:
        """Recorded time of what this event tells: when the agent was told it, the event's own
        ``occurred_at``, never later than its ingestion. A log replayed long after (whatever its
        origin or session kind) keeps its belief history; a timestamp in the future (clock skew)
        counts from ingestion; and neither depends on when the pipeline got round to it."""
        return min(self.occurred_at, self.recorded_at)


@dataclass
class _Window:
    job_id: int
    window_id: str
    namespace: str
    session_id: str
    #: the ``window_pieces`` rows of the pieces admitted to extraction
    rows: list[Any]
    sources: dict[str, _Source]
    drafts: list[ClaimDraft] = field(default_factory=list)
    model: str = ""
    error: Exception | None = None
    #: full-text rows of the window's events (fts_insert parameters)
    fts: list[tuple[str, str, str, str]] = field(default_factory=list)

    @cached_property
    def window(self) -> WindowText:
        """The admitted pieces as a message; built only for the extractor in this process
        (the helper child gets :meth:`plain` instead, and builds the same from it)."""
        return window_from(self.plain())

    def plain(self) -> tuple[Any, ...]:
        """The window as :func:`hlmem.messages.window_tuple` gives it, straight from the rows."""
        pieces = tuple(
            (
                r["event_id"],
                r["chunk_no"],
                r["chunk_count"],
                r["start_char"],
                r["end_char"],
                r["role"],
                r["text"],
                r["occurred_at"],
            )
            for r in self.rows
        )
        return (self.window_id, self.namespace, self.session_id, pieces)

    @cached_property
    def worth_extracting(self) -> bool:
        """Whether any admitted user turn can hold a memory: a window of acknowledgements,
        thanks and one-off commands (or of other roles only) costs no extraction call. (The
        helper child sets it for the windows it extracts.)"""
        return admission.window_worth_extracting((r["role"], r["text"]) for r in self.rows)


@dataclass
class _Outputs:
    """What ``apply`` writes for a set of windows: rows and the jobs it enqueues."""

    extractions: list[tuple[object, ...]]
    decisions: list[tuple[object, ...]]
    fts: list[tuple[str, str, str, str]]
    jobs: list[JobSpec]


class Extracted(list[_Window]):
    """The prepared windows; ``planned``: the outputs of all of them that did not fail, built
    in ``prepare`` so the writer thread only runs SQL (rebuilt in ``apply`` when some window
    turns out already extracted, a replay)."""

    planned: tuple[frozenset[str], _Outputs] | None = None


class Extractor(Stage[Extracted]):
    name = JobKind.EXTRACTOR
    downstream = JobKind.ADMISSION

    def __init__(
        self,
        store: Store,
        clock: Clock,
        cfg: Config,
        *,
        lexicon: Lexicon,
        gateway: Gateway | None,
        offloader: CpuHelper | None = None,
    ) -> None:
        """``gateway`` is None when nothing calls a model; ``offloader``, when given, runs big
        batches of the rules in the CPU helper child.

        :raises ConfigError: ``extractor.kind = "model"`` and no gateway.
        """
        if cfg.extractor.kind == "model" and gateway is None:
            raise ConfigError('extractor.kind = "model" needs a model gateway (none was given)')
        self.store = store
        self.clock = clock
        self.cfg = cfg
        self.lexicon = lexicon
        self.gateway = gateway
        self.rules = RulesExtractor(lexicon)
        # The helper child knows only the built-in lexicon and the rules extractor.
        offloads = cfg.extractor.kind != "model" and lexicon.digest == default_lexicon().digest
        self.offloader = offloader if offloads else None
        self.policy = admission.SourcePolicy(
            mode=cfg.admission.mode,
            untrusted_origins=frozenset(cfg.admission.untrusted_origins),
            untrusted_session_kinds=frozenset(cfg.admission.untrusted_session_kinds),
        )
        model = cfg.extractor.kind == "model"
        self.extractor_name = f"model:{cfg.extractor.model}" if model else RULES_NAME
        self._decisions: dict[tuple[str, str], admission.Decision] = {}

    # --- prepare: outside the transaction ----------------------------------------------------

    async def prepare(self, jobs: list[Job]) -> Extracted:
        by_window = {
            window_id: j
            for j in jobs
            if isinstance(j.payload, WindowClosed)
            for window_id in j.payload.window_ids
        }
        rows = await self.store.fetchall("window_pieces", (json.dumps(list(by_window)),))
        out = [
            self._window(by_window[wid].id, list(g))
            for wid, g in groupby(rows, lambda r: r["window_id"])
        ]
        # Every event of the window is indexed for full-text recall once, with its first piece
        # (untrusted ones too: recall shows them only when asked). A chunked event is indexed
        # whole, so its content is read.
        first = [r for r in rows if r["chunk_no"] == 0]
        whole = {r["event_id"] for r in first if r["chunk_count"] > 1}
        contents = (
            {
                c["id"]: c["content"]
                for c in await self.store.fetchall("event_contents", (json.dumps(sorted(whole)),))
            }
            if whole
            else {}
        )
        texts = [contents.get(r["event_id"], r["text"]) for r in first]
        bodies = await self._compute(out, texts)
        by_id = {w.window_id: w for w in out}
        for r, body in zip(first, bodies, strict=True):
            by_id[r["window_id"]].fts.append(("event", r["event_id"], r["namespace"], body))
        if self.cfg.extractor.kind == "model":
            async with anyio.create_task_group() as tg:
                for w in out:
                    if w.worth_extracting:
                        tg.start_soon(self._model_extract, w)
        prepared = Extracted(out)
        ok = [w for w in out if w.error is None]
        outputs = self._outputs(ok, iso(self.clock.now()))
        for spec in outputs.jobs:
            spec.payload_json  # noqa: B018 - serialised here, not on the writer thread
        prepared.planned = (frozenset(w.window_id for w in ok), outputs)
        return prepared

    async def _compute(self, windows: list[_Window], texts: list[str]) -> list[str]:
        """The full-text bodies of ``texts``; and, with the rules, each window's
        ``worth_extracting`` and the drafts of those worth it: in the helper child for a big
        batch, else in a worker thread (a model's calls come after, in ``prepare``)."""
        if self.offloader is not None and len(windows) >= self.offloader.min_windows:
            done = await self.offloader.extract([w.plain() for w in windows], texts)
            if done is not None:
                bodies, drafts = done
                for w, window_drafts in zip(windows, drafts, strict=True):
                    w.worth_extracting = window_drafts is not None
                    w.drafts = window_drafts or []
                return bodies

        def run() -> list[str]:
            bodies = [event_body(t) for t in texts]
            if self.cfg.extractor.kind != "model":
                for w in windows:
                    if w.worth_extracting:
                        w.drafts = self.rules.extract(w.window)
            return bodies

        return await anyio.to_thread.run_sync(run)

    def _window(self, job_id: int, rows: list[Any]) -> _Window:
        sources: dict[str, _Source] = {}
        admitted = []
        for r in rows:
            source = sources.get(r["event_id"])
            if source is None:
                origin_class, session_kind = r["origin_class"], r["session_kind"]
                source = sources[r["event_id"]] = _Source(
                    occurred=r["occurred_at"],
                    recorded=r["recorded_at"],
                    decision=self._source_decision(origin_class, session_kind),
                )
            if source.decision.sends_to_extraction:
                admitted.append(r)
        head = rows[0]
        return _Window(
            job_id, head["window_id"], head["namespace"], head["session_id"], admitted, sources
        )

    def _source_decision(self, origin_class: str, session_kind: str) -> admission.Decision:
        """:func:`hlmem.claims.admission_rules.source_decision` under this stage's policy, once per
        (origin, session kind): a pure function of the two."""
        key = (origin_class, session_kind)
        decision = self._decisions.get(key)
        if decision is None:
            decision = self._decisions[key] = admission.source_decision(
                self.policy, origin_class, session_kind
            )
        return decision

    async def _model_extract(self, w: _Window) -> None:
        assert self.gateway is not None
        cfg = self.cfg.extractor
        shown = _redacted_window(w.window)
        messages = prompts.render_extraction(shown)
        w.model = cfg.model
        for attempt in range(cfg.repair_attempts + 1):
            request = ChatRequest(
                model=cfg.model,
                messages=tuple(messages),
                max_tokens=cfg.max_tokens,
                temperature=cfg.temperature,
                json_mode=True,
            )
            try:
                answer = await self.gateway.chat(
                    stage=self.name,
                    provider=cfg.provider,
                    request=request,
                    namespace=w.namespace,
                    job_id=w.job_id,
                )
            except Exception as exc:  # this window's job retries, parks or fails alone
                w.error = exc
                return
            try:
                drafts = prompts.parse_extraction(answer.text, shown)
            except BadProviderOutput as exc:
                if attempt == cfg.repair_attempts:
                    known = _secrets_of(w.window)
                    raw, detail = _without(answer.text, known), _without(exc.detail, known)
                    w.error = ExtractionFailed(detail, raw)
                    return
                messages = [
                    *messages,
                    ChatMessage(role="assistant", content=answer.text),
                    ChatMessage(role="user", content=REPAIR_PROMPT.format(error=exc.detail)),
                ]
                continue
            if shown is not w.window:
                drafts = [_in_event_text(d, w.window) for d in drafts]
            w.drafts = [self._canonical(d) for d in drafts]
            return

    def _canonical(self, draft: ClaimDraft) -> ClaimDraft:
        """A model's predicate mapped onto the lexicon's slots (e.g. ``theme`` → ``ui_theme``)."""
        predicate = self.lexicon.canonical_predicate(draft.predicate)
        slot = self.lexicon.slot_of_value(draft.value)
        if slot is not None and predicate in ("prefers", "preference", "uses", "likes"):
            predicate = slot
        return (
            draft
            if predicate == draft.predicate
            else draft.model_copy(update={"predicate": predicate})
        )

    def job_errors(self, prepared: Extracted) -> dict[int, Exception]:
        return {w.job_id: w.error for w in prepared if w.error is not None}

    # --- apply: inside the job-completing transaction ----------------------------------------

    def apply(self, tx: SyncTx, jobs: list[Job], prepared: Extracted) -> list[JobSpec]:
        mine = {j.id for j in jobs}
        todo = [w for w in prepared if w.job_id in mine]
        ids = json.dumps([w.window_id for w in todo])
        done = {r["window_id"] for r in tx.fetchall("existing_extractions", (ids,))}
        todo = [w for w in todo if w.window_id not in done]
        planned = prepared.planned
        if planned is not None and planned[0] == {w.window_id for w in todo}:
            outputs = planned[1]
        else:
            outputs = self._outputs(todo, iso(self.clock.now()))
        tx.executemany("insert_extraction", outputs.extractions)
        tx.executemany("insert_admission_decision", outputs.decisions)
        tx.executemany("fts_insert", outputs.fts)
        return outputs.jobs

    def _outputs(self, windows: list[_Window], now: str) -> _Outputs:
        out = _Outputs([], [], [], [])
        proposed: dict[str, list[Candidate]] = {}  # namespace -> the batch's candidates
        for w in windows:
            out.fts.extend(w.fts)
            name = self.extractor_name if w.worth_extracting else NOTHING_TO_EXTRACT
            out.extractions.append((w.window_id, name, w.model, len(w.drafts), w.job_id, now))
            out.decisions.extend(
                (event_id, None, self.policy.mode, s.decision.decision, s.decision.rule, now)
                for event_id, s in w.sources.items()
            )
            if w.drafts:
                proposed.setdefault(w.namespace, []).extend(
                    self._candidate(w, i, d) for i, d in enumerate(w.drafts)
                )
        # One admission job per namespace for the whole batch (not one per window): the job
        # table's cost is per job, and admission decides each candidate on its own anyway.
        out.jobs = [
            JobSpec(
                JobKind.ADMISSION,
                ClaimsProposed(candidates=tuple(candidates)),
                namespace=namespace,
                size=len(candidates),
            )
            for namespace, candidates in proposed.items()
        ]
        # recall's vector channel covers events: one embedder job per embedder.batch_size of
        # them, so that a slow model's job is short (claims' vectors, which go first, wait for
        # one job at most) and a stop loses little
        events = self._events_to_embed(out.fts, proposed)
        size = self.cfg.embedder.batch_size
        out.jobs.extend(
            JobSpec(
                JobKind.EMBEDDER,
                EmbedClaims(event_ids=events[start : start + size]),
                size=len(events[start : start + size]),
            )
            for start in range(0, len(events), size)
        )
        return out

    def _events_to_embed(
        self, fts: list[tuple[str, str, str, str]], proposed: dict[str, list[Candidate]]
    ) -> tuple[str, ...]:
        """The indexed events whose vectors ``embedder.events`` asks for: all, none, or
        (``"uncovered"``) those no proposed claim rests on. A proposal that admission or dedup
        then drops leaves its events uncovered: the embedder's backfill finds them."""
        mode = self.cfg.embedder.events
        if mode == "none":
            return ()
        events = tuple(row[1] for row in fts)
        if mode == "uncovered":
            cited = {
                span.event_id
                for candidates in proposed.values()
                for c in candidates
                for span in c.draft.evidence
            }
            events = tuple(e for e in events if e not in cited)
        return events

    def _candidate(self, w: _Window, index: int, draft: ClaimDraft) -> Candidate:
        first = w.sources[draft.evidence[0].event_id]
        draft = admission.redacted_draft(draft)  # before the payload and the key are made
        if draft.valid_from is None:
            # Said without a time: true from when it was said (the event's own time).
            draft = draft.model_copy(update={"valid_from": first.occurred_at})
        chash = content_hash(f"{draft.subject}\x1f{draft.predicate}\x1f{draft.value}")
        return Candidate(
            key=derived_id("clm", w.window_id, index, chash),
            namespace=w.namespace,
            draft=draft,
            recorded_at=first.learned_at,
            source="extraction",
            extractor=self.extractor_name,
            window_id=w.window_id,
        )


def _redacted_window(window: WindowText) -> WindowText:
    """``window`` as a model may see it: each piece's secrets replaced by their markers (the
    window itself when it holds none)."""
    texts = [redact(p.text) for p in window.pieces]
    if all(t == p.text for t, p in zip(texts, window.pieces, strict=True)):
        return window
    pieces = tuple(
        p if t == p.text else p.model_copy(update={"text": t})
        for t, p in zip(texts, window.pieces, strict=True)
    )
    return window.model_copy(update={"pieces": pieces})


def _secrets_of(window: WindowText) -> list[tuple[str, str]]:
    """The secrets said in ``window`` (of 4 characters or more), longest first, with their
    kinds: what a dead letter must not keep, even when a model echoes one bare."""
    found = {
        p.text[start:end]: kind
        for p in window.pieces
        for start, end, kind in find_secrets(p.text)
        if end - start >= 4
    }
    return sorted(found.items(), key=lambda item: -len(item[0]))


def _without(text: str, known: list[tuple[str, str]]) -> str:
    text = redact(text)
    for secret, kind in known:
        text = text.replace(secret, f"[REDACTED:{kind}]")
    return text


def _in_event_text(draft: ClaimDraft, window: WindowText) -> ClaimDraft:
    """A draft parsed from the redacted window, its quotes' offsets found again in the events'
    own text. A quote holding a marker is first narrowed to the clause of the claim's value
    (:func:`hlmem.claims.admission_rules.narrowed_span`); one that cannot be keeps its marker
    (admission blocks such a draft as a secret)."""
    spans = []
    for span in draft.evidence:
        if "[REDACTED:" in span.quote:
            span = admission.narrowed_span(span, draft.value) or span
        if "[REDACTED:" not in span.quote:
            for piece in window.pieces:
                at = piece.text.find(span.quote) if piece.event_id == span.event_id else -1
                if at >= 0:
                    start = piece.start_char + at
                    span = span.model_copy(
                        update={"start_char": start, "end_char": start + len(span.quote)}
                    )
                    break
        spans.append(span)
    return draft.model_copy(update={"evidence": tuple(spans)})
