"""Sentences: how a user piece is cut, which sentences are skipped, and what a rule sees.

``sentences`` cuts a piece at terminal punctuation; ``skipped`` drops questions,
hypotheticals ("如果", "if", "would") and reported speech ("他说", "she said") whole, since
they say nothing about the speaker. A ``Sentence`` is what every rule reads (its text, a
normalised copy, its language and its time expressions, resolved lazily and cached), and a
``Hit`` is what a rule returns before the extractor turns it into a draft.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from hlmem.lang import Language
from hlmem.lang.timeexpr import Prefer, TimeRef, find_all
from hlmem.messages import ClaimScope

_SENTENCE_END = re.compile(r"[。！？!?；;…]+[”’」』\"')）]*|\.(?=\s|$)[”’\"')）]*|\n+")
_CLAUSE_SEP = re.compile(r"[，,；;：:]|\s+-\s+|\s—\s")
CJK = re.compile(r"[\u3400-\u9fff]")
# Filters read the sentence's tail, its start, or literal words: cheap scans.
_ZH_QUESTION_TAIL = re.compile(r"(?:[？?]|[吗么嘛][。！!～~]?)[\s”」]*$")
_ZH_QUESTION = re.compile(
    r"是不是|有没有|要不要|能不能|可不可以|会不会|对不对|好不好|行不行|喜不喜欢|什么|哪里|哪儿|哪个|哪些|怎么"
    r"|为什么|为啥|谁|几点|多少|几个|咋"
)
_EN_QUESTION_TAIL = re.compile(r"\?[\s\"')]*$")
_EN_QUESTION_START = re.compile(
    r"\W*(?:do|does|did|can|could|would|will|is|are|was|were|should|shall|have|has|what|where"
    r"|when|who|why|how|which|whats|what's|wanna|isn't|aren't|don't you)\b"
)
_ZH_UNREAL = re.compile(
    r"如果|假如|假设|要是|万一|倘若|若是|的话|假若|或许|也许|可能|说不定|不一定|想象"
)
_EN_UNREAL_WORDS = frozenset(
    "if suppose supposing imagine unless maybe perhaps might would wouldn't could wish hope"
    " wonder wondering i'd we'd probably considering".split()
)
_EN_UNREAL_PHRASES = ("thinking of", "thinking about")
_EN_WORD = re.compile(r"[a-z']+")
_ZH_REPORTED_GATE = ("说", "讲", "告诉", "觉得", "认为", "以为")
_ZH_REPORTED = re.compile(
    r"(?:他|她|他们|她们|别人|朋友|同事|老板|有人|妈妈|爸爸|我妈|我爸|老婆|老公|大家)(?:说|讲|告诉我|觉得|认为|以为)"
    r"|听说|据说|说[:：]|[“「『\"].*说|说.*[“「『\"]"
)
_EN_REPORTED_GATE = ("said", "says", "say ", "told", "tells", "think", "believe", "claim",
                     "according", "heard")  # fmt: skip
_EN_REPORTED = re.compile(
    r"\b(?:he|she|they|someone|somebody|people|everyone|everybody|my\s+\w+|his|her)\s+"
    r"(?:said|says|say|told me|tells me|thinks|think|believes|claims)\b|\baccording to\b"
    r"|\bheard that\b|\bsaid that\b|\"[^\"]*\"\s*,?\s*(?:he|she|they)\s+said"
)
# A sentence that says it corrects something ("其实", "actually") gives surer claims.
_ZH_CUE = re.compile(r"其实|实际上|更正|纠正|说错了|不对|准确地说|应该是|改一下")
_EN_CUE = re.compile(r"\b(?:actually|correction|i meant|to be precise|sorry,|i mean)\b", re.I)

# Words around a time expression that make it the start of a state: 从5月开始, since May.
_ZH_SINCE_AFTER = re.compile(r"^\s*(?:开始|起|以来)")
_ZH_SINCE_BEFORE = re.compile(r"(?:从|自从|自)\s*$")
_EN_SINCE = re.compile(r"^(?:since|starting|from|as of)\b", re.I)
_EN_SINCE_BEFORE = re.compile(r"\b(?:since|starting|as of|from)\s*$", re.I)


@dataclass(slots=True)
class Hit:
    """One claim found in a sentence, before it becomes a draft."""

    predicate: str
    value: str
    at: int  # where in the sentence it was found (its clause is quoted for long sentences)
    polarity: int = 1
    qualifiers: tuple[str, ...] = ()
    scope: ClaimScope = "long_term"
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    confidence: float = 0.8


class Sentence:
    """A sentence of a user piece, with the time expressions in it (computed when asked)."""

    __slots__ = ("_times", "anchor", "hits", "lang", "low", "norm", "seen", "start", "text", "used")

    def __init__(self, text: str, start: int, anchor: datetime, seen: dict[str, str]) -> None:
        self.text = text
        #: values claimed earlier in the window (normalised) -> their slot, for corrections
        self.seen = seen
        # English rules read a copy with straight apostrophes, and gates a lowercase one (both
        # the same length as the text: offsets hold).
        self.norm = text.replace("’", "'") if "’" in text else text
        self.lang: Language = "zh" if CJK.search(text) else "en"
        self.low = self.norm if self.lang == "zh" else self.norm.lower()
        self.start = start
        self.anchor = anchor
        self._times: dict[Prefer | None, list[TimeRef]] = {}
        #: claims this sentence has given so far; spans of time expressions a claim used
        self.hits = 0
        self.used: set[tuple[int, int]] = set()

    @property
    def cue(self) -> bool:
        """Whether the sentence says it corrects something (其实, actually)."""
        return bool((_ZH_CUE if self.lang == "zh" else _EN_CUE).search(self.text))

    def times(self, prefer: Prefer | None) -> list[TimeRef]:
        """The time expressions of the sentence, resolved towards ``prefer``."""
        found = self._times.get(prefer)
        if found is None:
            found = self._times[prefer] = find_all(self.text, self.anchor, prefer=prefer)
        return found

    def clause(self, at: int) -> tuple[int, int]:
        """The bounds of the clause around position ``at``."""
        start, end = 0, len(self.text)
        for m in _CLAUSE_SEP.finditer(self.text):
            if m.end() <= at:
                start = m.end()
            elif m.start() >= at:
                end = m.start()
                break
        return start, end

    def time_in(self, lo: int, hi: int, prefer: Prefer | None) -> TimeRef | None:
        """The first time expression that starts between ``lo`` and ``hi``."""
        return next((t for t in self.times(prefer) if lo <= t.span[0] < hi), None)


def sentences(text: str) -> list[tuple[int, int]]:
    """The sentence spans of ``text`` (terminal punctuation included, blanks trimmed)."""
    out: list[tuple[int, int]] = []
    start = 0
    for m in _SENTENCE_END.finditer(text):
        _add_span(out, text, start, m.end())
        start = m.end()
    _add_span(out, text, start, len(text))
    return out


def _add_span(out: list[tuple[int, int]], text: str, start: int, end: int) -> None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if end > start:
        out.append((start, end))


def skipped(sent: Sentence) -> bool:
    """Questions, hypotheticals and reported speech say nothing about the speaker."""
    text, low = sent.norm, sent.low
    tail = text.rstrip()[-4:]
    if len(text.strip()) < 2:
        return True
    if sent.lang == "zh":
        return bool(
            _ZH_QUESTION_TAIL.search(tail)
            or _ZH_QUESTION.search(text)
            or _ZH_UNREAL.search(text)
            or (any(w in text for w in _ZH_REPORTED_GATE) and _ZH_REPORTED.search(text))
        )
    return bool(
        _EN_QUESTION_TAIL.search(tail)
        or _EN_QUESTION_START.match(low)
        or not _EN_UNREAL_WORDS.isdisjoint(_EN_WORD.findall(low))
        or any(p in low for p in _EN_UNREAL_PHRASES)
        or (any(w in low for w in _EN_REPORTED_GATE) and _EN_REPORTED.search(low))
    )


def marks_start(sent: Sentence, ref: TimeRef) -> bool:
    """Whether ``ref`` says when something began: 从5月开始 / 5月起 / since May."""
    before, after = sent.norm[: ref.span[0]], sent.norm[ref.span[1] :]
    if sent.lang == "zh":
        return bool(_ZH_SINCE_AFTER.match(after) or _ZH_SINCE_BEFORE.search(before))
    return bool(_EN_SINCE.match(ref.expression) or _EN_SINCE_BEFORE.search(before))
