"""Prompt templates, each next to the pydantic model of the answer it expects.

The extraction prompt shows a window's pieces as numbered lines (``1 user: …``). The numbers are
small aliases; the model never sees our ids, and :func:`drafts_from_answer` maps them back. A
model quotes its evidence; the quote is located in the piece's text to get exact character
offsets in the event's content. An answer that does not parse, names an unknown line, or quotes
text that is not on the line raises :class:`~hlmem.errors.BadProviderOutput`: a bad answer is
never read as "no claims".

Line format, one piece per line (the simulated provider reads it back with
:func:`read_window_lines`): ``<alias> <role>[ <YYYY-MM-DD>]: <text>``. The date appears when it
differs from the previous line's (the header gives the first). Newlines inside a piece are shown
as the two characters ``\\n`` so that every piece stays on one line.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, date, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from hlmem.errors import BadProviderOutput
from hlmem.gateway.providers import ChatMessage, ChatRequest
from hlmem.lang import language_of
from hlmem.messages import ClaimDraft, ClaimScope, EvidenceSpan, Role, WindowText
from hlmem.rules import FORGET_PREDICATE, request_drafts

EXTRACTION_PROMPT_ID = "hlmem-extract-v1"

EXTRACTION_SYSTEM = f"""{EXTRACTION_PROMPT_ID}
Extract durable memory claims from the numbered conversation lines: facts about the user or \
their world, preferences, plans with dates, corrections, and anything they ask to remember. \
Skip small talk, questions, one-off commands and the assistant's own suggestions.
Reply with JSON only:
{{"claims":[{{"subject":"user","predicate":"prefers","value":"深色模式","text":"用户偏好深色模式",\
"polarity":1,"qualifiers":[],"importance":0.6,"confidence":0.9,\
"evidence":[{{"event":2,"quote":"我主要用深色模式"}}]}}]}}
Rules:
- subject, value, text, qualifiers: in the language of the conversation.
- subject "user" for the speaker; else the entity as named. predicate: short English snake_case.
- polarity -1 when the fact is negated ("不允许删除", "no longer").
- qualifiers: limits such as "暂时"/"temporarily"; scope: long_term|short_term|plan.
- valid_from/valid_to (optional): ISO dates; resolve "明天"/"5月"/"last Friday" by line date.
- evidence: the line number and an exact, short quote copied from that line.
- Nothing worth keeping: {{"claims":[]}}"""

_ROLES = "|".join(r.value for r in Role)
_LINE = re.compile(rf"^(\d+) ({_ROLES})(?: (\d{{4}}-\d{{2}}-\d{{2}}))?: (.*)$")
_HEADER = "Conversation (UTC dates), first line dated {date}:"


def _escape(text: str) -> str:
    return text.replace("\r", "\\r").replace("\n", "\\n")


def _unescape(text: str) -> str:
    return text.replace("\\n", "\n").replace("\\r", "\r")


def render_extraction(window: WindowText) -> list[ChatMessage]:
    """The chat messages of one extraction call for ``window`` (piece ``i`` is line ``i+1``)."""
    lines: list[str] = []
    previous: date | None = None
    first = window.pieces[0].occurred_at.date() if window.pieces else None
    for alias, piece in enumerate(window.pieces, start=1):
        day = piece.occurred_at.date()
        stamp = f" {day.isoformat()}" if previous is not None and day != previous else ""
        lines.append(f"{alias} {piece.role.value}{stamp}: {_escape(piece.text)}")
        previous = day
    header = _HEADER.format(date=first.isoformat() if first else "-")
    return [
        ChatMessage(role="system", content=EXTRACTION_SYSTEM),
        ChatMessage(role="user", content="\n".join([header, *lines])),
    ]


def is_extraction(messages: list[ChatMessage] | tuple[ChatMessage, ...]) -> bool:
    """Whether a chat request is this module's extraction prompt."""
    return bool(messages) and messages[0].content.startswith(EXTRACTION_PROMPT_ID)


def read_window_lines(content: str) -> list[tuple[int, Role, str]]:
    """The ``(alias, role, text)`` lines of a rendered window (the inverse of rendering)."""
    return [(alias, role, text) for alias, role, text, _ in read_window(content)]


_HEADER_DATE = re.compile(r"first line dated (\d{4}-\d{2}-\d{2})")


def read_window(content: str) -> list[tuple[int, Role, str, date | None]]:
    """The ``(alias, role, text, day)`` lines of a rendered window, each with its UTC date
    (from the header for the first line, then from the last dated line)."""
    header = _HEADER_DATE.search(content.split("\n", 1)[0])
    day = date.fromisoformat(header.group(1)) if header else None
    out = []
    for line in content.splitlines():
        match = _LINE.match(line)
        if match:
            if match.group(3):
                day = date.fromisoformat(match.group(3))
            out.append((int(match.group(1)), Role(match.group(2)), _unescape(match.group(4)), day))
    return out


# --- the dedup audit: is this pair one fact? --------------------------------------------------

AUDIT_PROMPT_ID = "hlmem-dedup-audit-v1"

AUDIT_SYSTEM = f"""{AUDIT_PROMPT_ID}
Two memory claims follow as A and B. Do they state the same fact, so that keeping one loses \
nothing (same subject, values, numbers, versions, dates, names and negation)?
Reply with JSON only: {{"same": true}} or {{"same": false}}."""


def audit_request(model: str, a: str, b: str) -> ChatRequest:
    """The chat request asking whether claims ``a`` and ``b`` are one fact."""
    return ChatRequest(
        model=model,
        messages=(
            ChatMessage(role="system", content=AUDIT_SYSTEM),
            ChatMessage(role="user", content=f"A: {_escape(a)}\nB: {_escape(b)}"),
        ),
        max_tokens=16,
        json_mode=True,
    )


def is_audit(messages: list[ChatMessage] | tuple[ChatMessage, ...]) -> bool:
    return bool(messages) and messages[0].content.startswith(AUDIT_PROMPT_ID)


def read_audit(content: str) -> tuple[str, str]:
    """The two claim texts of an audit request's user message."""
    a, _, b = content.partition("\nB: ")
    return _unescape(a.removeprefix("A: ")), _unescape(b)


def parse_audit(text: str) -> bool:
    """The audit's verdict; anything but a clear ``{"same": true}`` keeps both claims.

    When in doubt keep both: an unreadable answer is a "no", not an error.
    """
    fenced = _FENCE.match(text)
    try:
        value = json.loads(fenced.group(1) if fenced else text.strip())
    except ValueError:
        return False
    return isinstance(value, dict) and value.get("same") is True


# --- recall's query expansion: other words for one question ----------------------------------

EXPANSION_PROMPT_ID = "hlmem-recall-expand-v1"

EXPANSION_SYSTEM = f"""{EXPANSION_PROMPT_ID}
A user asks their memory the question that follows. Write up to {{n}} short search queries that \
would find the stored memory answering it: other words for the same need, the likely answer's \
wording, and one in the other language (Chinese <-> English). No answers, no explanations.
Reply with JSON only: {{{{"queries": ["...", "..."]}}}}"""


def expansion_request(model: str, question: str, n: int) -> ChatRequest:
    """The chat request asking for up to ``n`` other queries for ``question``."""
    return ChatRequest(
        model=model,
        messages=(
            ChatMessage(role="system", content=EXPANSION_SYSTEM.format(n=n)),
            ChatMessage(role="user", content=_escape(question)),
        ),
        max_tokens=40 * n + 16,
        json_mode=True,
    )


def is_expansion(messages: list[ChatMessage] | tuple[ChatMessage, ...]) -> bool:
    return bool(messages) and messages[0].content.startswith(EXPANSION_PROMPT_ID)


def read_expansion(messages: list[ChatMessage] | tuple[ChatMessage, ...]) -> tuple[str, int]:
    """The question and the number of queries an expansion request asks for."""
    n = re.search(r"Write up to (\d+)", messages[0].content)
    question = messages[1].content if len(messages) > 1 else ""
    return _unescape(question), int(n.group(1)) if n else 1


def parse_expansion(text: str, n: int) -> list[str]:
    """At most ``n`` distinct non-empty queries of an expansion answer.

    :raises BadProviderOutput: not JSON, or no ``queries`` list of strings.
    """
    fenced = _FENCE.match(text)
    try:
        value = json.loads(fenced.group(1) if fenced else text.strip())
    except ValueError as exc:
        raise BadProviderOutput(f"the expansion is not JSON: {exc}", text) from exc
    queries = value.get("queries") if isinstance(value, dict) else None
    if not isinstance(queries, list) or not all(isinstance(q, str) for q in queries):
        raise BadProviderOutput("the expansion has no list of queries", text)
    out: list[str] = []
    for q in queries:
        q = " ".join(q.split())
        if q and q not in out:
            out.append(q)
    return out[:n]


# --- the expected answer ----------------------------------------------------------------------


class _Answer(BaseModel):
    # Models add keys of their own now and then; ignoring them is safer than failing a window.
    model_config = ConfigDict(frozen=True, extra="ignore")


class EvidenceRef(_Answer):
    event: int = Field(ge=1)
    quote: str = Field(min_length=1)


class ExtractedClaim(_Answer):
    subject: str = Field(min_length=1)
    predicate: str = Field(min_length=1)
    value: str = Field(min_length=1)
    text: str = Field(min_length=1)
    polarity: Literal[1, -1] = 1
    qualifiers: tuple[str, ...] = ()
    scope: ClaimScope = "long_term"
    importance: float = Field(0.5, ge=0, le=1)
    confidence: float = Field(0.8, ge=0, le=1)
    valid_from: str | None = None
    valid_to: str | None = None
    evidence: tuple[EvidenceRef, ...] = Field(min_length=1)

    @field_validator("scope", mode="before")
    @classmethod
    def _known_scope(cls, value: object) -> object:
        # An unknown scope word is not worth failing a window for.
        return value if value in ("long_term", "short_term", "plan") else "long_term"

    def valid_from_time(self) -> datetime | None:
        """``valid_from`` as a UTC datetime when it is an ISO date or time, else ``None``."""
        return _iso_time(self.valid_from)

    def valid_to_time(self) -> datetime | None:
        """``valid_to`` as a UTC datetime when it is an ISO date or time, else ``None``."""
        return _iso_time(self.valid_to)


def _iso_time(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        parsed = datetime.fromisoformat(text.strip())
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


class ExtractionAnswer(_Answer):
    """The answer to the extraction prompt: ``{"claims": [...]}``."""

    claims: tuple[ExtractedClaim, ...]


_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


def parse_answer(text: str) -> ExtractionAnswer:
    """The extraction answer in ``text`` (a JSON object, possibly inside a code fence).

    :raises BadProviderOutput: not JSON, or not the answer's shape.
    """
    fenced = _FENCE.match(text)
    body = fenced.group(1) if fenced else text.strip()
    try:
        return ExtractionAnswer.model_validate(json.loads(body))
    except (ValueError, ValidationError) as exc:
        raise BadProviderOutput(f"extraction answer: {str(exc)[:300]}", text) from None


def _locate(piece_text: str, quote: str) -> tuple[int, int] | None:
    """Where ``quote`` is in ``piece_text``: exactly, or else with each run of whitespace (or a
    rendered ``\\n``) in the quote matching any whitespace, or none, in the text."""
    at = piece_text.find(quote)
    if at >= 0:
        return at, at + len(quote)
    parts = [p for p in re.split(r"(?:\s|\\[nr])+", quote.strip()) if p]
    if not parts:
        return None
    match = re.search(r"\s*".join(re.escape(p) for p in parts), piece_text)
    return (match.start(), match.end()) if match else None


def drafts_from_answer(answer: ExtractionAnswer, window: WindowText) -> list[ClaimDraft]:
    """Claim drafts with evidence in our ids and exact offsets in each event's content.

    :raises BadProviderOutput: a line number not in the window, or a quote not on its line.
    """
    drafts = []
    for claim in answer.claims:
        spans = []
        for ref in claim.evidence:
            if ref.event > len(window.pieces):
                raise BadProviderOutput(f"evidence names line {ref.event}, not in the window")
            piece = window.pieces[ref.event - 1]
            found = _locate(piece.text, ref.quote)
            if found is None:
                raise BadProviderOutput(
                    f"quote not found on line {ref.event}: {ref.quote[:80]!r}", ref.quote
                )
            start, end = found
            spans.append(
                EvidenceSpan(
                    event_id=piece.event_id,
                    quote=piece.text[start:end],
                    start_char=piece.start_char + start,
                    end_char=piece.start_char + end,
                )
            )
        drafts.append(
            ClaimDraft(
                subject=claim.subject,
                predicate=claim.predicate,
                value=claim.value,
                text=claim.text,
                language=language_of(claim.text),
                polarity=claim.polarity,
                qualifiers=claim.qualifiers,
                scope=claim.scope,
                importance=claim.importance,
                confidence=claim.confidence,
                valid_from=claim.valid_from_time(),
                valid_to=claim.valid_to_time(),
                evidence=tuple(spans),
            )
        )
    return drafts


def parse_extraction(text: str, window: WindowText) -> list[ClaimDraft]:
    """Parse a model's extraction answer for ``window`` into claim drafts, followed by the
    window's in-conversation forget requests, which the rules find, never the model
    (:mod:`hlmem.rules.forget_request`).

    :raises BadProviderOutput: see :func:`parse_answer` and :func:`drafts_from_answer`.
    """
    drafts = drafts_from_answer(parse_answer(text), window)
    return [d for d in drafts if d.predicate != FORGET_PREDICATE] + request_drafts(window)


def answer_for(drafts: list[ClaimDraft], window: WindowText) -> ExtractionAnswer:
    """The answer a perfect model would give for ``drafts`` of ``window`` (what the simulated
    provider sends back, computed by the rules extractor)."""

    def alias(span: EvidenceSpan) -> int:
        for i, piece in enumerate(window.pieces, start=1):
            if piece.event_id == span.event_id and piece.start_char <= span.start_char:
                if span.start_char < piece.end_char:
                    return i
        raise ValueError(f"evidence outside the window: {span.event_id}")

    return ExtractionAnswer(
        claims=tuple(
            ExtractedClaim(
                subject=d.subject,
                predicate=d.predicate,
                value=d.value,
                text=d.text,
                polarity=d.polarity,
                qualifiers=d.qualifiers,
                scope=d.scope,
                importance=d.importance,
                confidence=d.confidence,
                valid_from=d.valid_from.isoformat() if d.valid_from else None,
                valid_to=d.valid_to.isoformat() if d.valid_to else None,
                evidence=tuple(EvidenceRef(event=alias(e), quote=e.quote) for e in d.evidence),
            )
            for d in drafts
            if d.predicate != FORGET_PREDICATE  # requests are found by rules, not answered
        )
    )
