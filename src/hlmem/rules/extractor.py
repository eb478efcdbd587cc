"""The extractor: runs the rule families over a window's user pieces and builds the drafts.

For each user piece, in-conversation forget requests come first ("忘了我刚才说的", "forget
what I just said": a draft with the reserved predicate ``forget_request`` that admission acts
on, :mod:`hlmem.rules.forget_request`; the request's clause is read by no other rule, the rest of
its sentence is), then explicit memory requests (``notes``); every other sentence
that ``skipped`` keeps goes through the rules of its language in priority order, each rule
only when one of its gate words is in the sentence, and yields at most one draft per slot.
Drafts of the same claim within a window merge into one, with up to ``_EVIDENCE_MAX`` spans.
The extractor keeps no per-window state, so one instance serves many threads.
"""

from __future__ import annotations

import re
from datetime import UTC
from functools import lru_cache

from hlmem.lang import Language, Lexicon, default_lexicon, language_of, normalize
from hlmem.lang.timeexpr import trie_pattern
from hlmem.messages import ClaimDraft, EvidenceSpan, Role, WindowPiece, WindowText
from hlmem.rules.base import RuleTable
from hlmem.rules.en import EnRules
from hlmem.rules.forget_request import forget_requests, request_draft
from hlmem.rules.notes import NOTE_PATTERNS, note
from hlmem.rules.plans import PlanRules
from hlmem.rules.sentence import Hit, Sentence, sentences, skipped
from hlmem.rules.zh import ZhRules

NAME = "rules-v2"

_QUOTE_MAX_CHARS = 120
_VALUE_MAX_CHARS: dict[Language, int] = {"zh": 24, "en": 60}
_EVIDENCE_MAX = 3


class RulesExtractor:
    """The rules extractor over a given lexicon (``extract`` uses the built-in one)."""

    def __init__(self, lexicon: Lexicon) -> None:
        self.lexicon = lexicon
        #: the extractor's name: ``rules-v2``, with the lexicon's digest when it is not built-in
        self.name = NAME if lexicon.sources[1:] == () else f"{NAME}+{lexicon.digest}"
        plans = PlanRules(lexicon)
        # The plan rule runs last: a time expression an earlier rule used (a move's date, a
        # habit's start) is not a plan.
        self._rules: dict[Language, RuleTable] = {
            "zh": (*ZhRules(lexicon).rules, *plans.rules["zh"]),
            "en": (*EnRules(lexicon).rules, *plans.rules["en"]),
        }
        self._gates = {lang: _gate_index(rules) for lang, rules in self._rules.items()}

    def extract(self, window: WindowText) -> list[ClaimDraft]:
        """Claims proposed for one window, in reading order (same window, same drafts)."""
        drafts: list[ClaimDraft] = []
        index: dict[tuple[str, str, str, int, tuple[str, ...]], int] = {}
        seen_values: dict[str, str] = {}  # a value said earlier in the window -> its slot
        for piece in window.pieces:
            if piece.role is not Role.USER:
                continue
            for draft in self._piece(piece, seen_values):
                key = (
                    draft.subject,
                    draft.predicate,
                    draft.value,
                    draft.polarity,
                    draft.qualifiers,
                )
                at = index.get(key)
                if at is None:
                    index[key] = len(drafts)
                    drafts.append(draft)
                    continue
                # The same claim again in this window: one draft, one more piece of evidence.
                old = drafts[at]
                span = draft.evidence[0]
                places = {(e.event_id, e.start_char) for e in old.evidence}
                if (span.event_id, span.start_char) not in places:
                    if len(old.evidence) < _EVIDENCE_MAX:
                        evidence = (*old.evidence, span)
                        drafts[at] = old.model_copy(update={"evidence": evidence})
        return drafts

    def _piece(self, piece: WindowPiece, seen_values: dict[str, str]) -> list[ClaimDraft]:
        """The drafts of one user piece: its memory requests, then its sentences' hits."""
        text = piece.text
        anchor = piece.occurred_at
        if anchor.tzinfo is None:
            anchor = anchor.replace(tzinfo=UTC)
        out: list[ClaimDraft] = []
        noted: list[tuple[int, int]] = []
        requests = forget_requests(text)
        out.extend(request_draft(piece, start, end) for start, end in requests)
        for pattern, word in NOTE_PATTERNS:
            if word not in text and word not in text.lower():
                continue
            for m in pattern.finditer(text):
                draft = note(piece, m)
                if draft is not None:
                    out.append(draft)
                    noted.append((m.start(), m.end()))
        for start, end in _outside(sentences(text), requests, text):
            if any(s < end and start < e for s, e in noted):
                continue  # a memory request is taken as said, not read again
            sent = Sentence(text[start:end], start, anchor, seen_values)
            if skipped(sent):
                continue
            slots: set[str] = set()
            gates, by_word = self._gates[sent.lang]
            enabled = {i for word in _gate_words(gates, sent.low) for i in by_word[word]}
            for i, (rule, gate) in enumerate(self._rules[sent.lang]):
                if gate is not None and i not in enabled:
                    continue
                for hit in rule(sent):
                    if hit.predicate in slots:
                        continue
                    draft = self._draft(piece, sent, hit)
                    if draft is not None:
                        slots.add(hit.predicate)
                        sent.hits += 1
                        seen_values[normalize(draft.value)] = draft.predicate
                        out.append(draft)
        return out

    def _draft(self, piece: WindowPiece, sent: Sentence, hit: Hit) -> ClaimDraft | None:
        """A hit as a draft quoting its sentence (or clause), or None for a stop or long value."""
        lex = self.lexicon
        value = hit.value.strip()
        if not value or lex.is_stop_value(value, hit.predicate):
            return None
        longest = _VALUE_MAX_CHARS[sent.lang] * (2 if hit.predicate == "plan" else 1)
        if len(value) > longest:
            return None  # a long "value" is a clause, not a crisp fact
        text = lex.text_for(hit.predicate, value, language=sent.lang, polarity=hit.polarity)
        lo, hi = 0, len(sent.text)
        if hi > _QUOTE_MAX_CHARS:
            lo, hi = sent.clause(hit.at)
        raw = sent.text[lo:hi]
        quote = raw.strip()
        if not quote:
            return None
        start = piece.start_char + sent.start + lo + (len(raw) - len(raw.lstrip()))
        confidence = min(0.95, hit.confidence + (0.05 if sent.cue else 0.0))
        return ClaimDraft(
            subject="user",
            predicate=hit.predicate,
            value=value,
            text=text,
            language=language_of(text),
            polarity=1 if hit.polarity > 0 else -1,
            qualifiers=hit.qualifiers,
            scope=hit.scope,
            importance=lex.importance(hit.predicate),
            confidence=confidence,
            valid_from=hit.valid_from,
            valid_to=hit.valid_to,
            evidence=(
                EvidenceSpan(
                    event_id=piece.event_id,
                    quote=quote,
                    start_char=start,
                    end_char=start + len(quote),
                ),
            ),
        )


def _outside(
    spans: list[tuple[int, int]], cut: list[tuple[int, int]], text: str
) -> list[tuple[int, int]]:
    """``spans`` without the ``cut`` spans; what is left of a sentence stays a sentence
    ("忘掉我刚才说的，我其实住在北京" keeps "我其实住在北京")."""
    if not cut:
        return spans
    out: list[tuple[int, int]] = []
    for start, end in spans:
        pieces = [(start, end)]
        for c0, c1 in cut:
            pieces = (
                [
                    part
                    for s, e in pieces
                    for part in ((s, min(e, c0)), (max(s, c1), e))
                    if part[0] < part[1]
                ]
                if any(s < c1 and c0 < e for s, e in pieces)
                else pieces
            )
        for s, e in pieces:
            while s < e and (text[s].isspace() or text[s] in _CUT_PUNCT):
                s += 1
            while e > s and text[e - 1].isspace():
                e -= 1
            if e > s:
                out.append((s, e))
    return out


_CUT_PUNCT = "，,。.!！?？;；:："


@lru_cache(maxsize=1)
def _default() -> RulesExtractor:
    """The extractor over the built-in lexicon, built on first use and shared."""
    return RulesExtractor(default_lexicon())


def extract(window: WindowText) -> list[ClaimDraft]:
    """Claims proposed for one window by the rules over the built-in lexicon."""
    return _default().extract(window)


def _gate_index(
    rules: RuleTable,
) -> tuple[re.Pattern[str], dict[str, frozenset[int]]]:
    """One regex finding every gate word, and which rules each found word enables. A found
    word enables the rules of every gate word inside it: "started" also opens "start"."""
    words = {w for _, gate in rules for w in gate or ()}
    by_word = {
        word: frozenset(
            i for i, (_, gate) in enumerate(rules) if any(g in word for g in gate or ())
        )
        for word in words
    }
    return re.compile(trie_pattern(words)), by_word


def _gate_words(pattern: re.Pattern[str], text: str) -> set[str]:
    """Every gate word in ``text``, overlapping ones too ("i'm allergic": "i'm a", "allerg")."""
    found = set()
    m = pattern.search(text)
    while m is not None:
        found.add(m.group(0))
        m = pattern.search(text, m.start() + 1)
    return found
