"""Protected atoms, text similarity and entities: the deterministic half of the dedup funnel.

Dedup may merge two claims only when every *protected atom* agrees (:func:`disagreements`
returns nothing) and their texts are near-duplicates (:func:`similarity` at or above
:data:`SIMILARITY_THRESHOLD`); :func:`same_fact` applies both. The atoms are the parts of a
claim where one changed character changes the fact: the subject, negation and the polarity
field, numbers with units, versions, dates, weekdays, times, paths and URLs, quoted strings,
identifiers (emails, @handles, IPs, code) and names. "部署 v1.2" and "部署 v1.3" are very
similar texts and still two facts: when in doubt, keep both.

Atoms are extracted by rules, in Chinese and English, from the text as written (never
translated). Chinese numerals become digits where a measure word or a clock says they are
numbers (三杯 == 3杯, 下午三点 == 15:00, 两千元 == ¥2000). Names come from capitalisation in
English and from jieba's part-of-speech tags plus patterns in Chinese. Tagging is noisy and
depends on context, so names are checked by *presence*: a name found in one claim must occur
in the other claim's text, however it was tagged there.

The word lists, lexicons and compiled patterns live in :mod:`hlmem.lang.atoms.patterns`; span
extraction and canonical forms in :mod:`hlmem.lang.atoms.spans`; contractions, negation cues,
tagged words and names in :mod:`hlmem.lang.atoms.words`. This module holds the :class:`Atoms`
record, the per-text analysis that combines them, similarity and the public API. It keeps no
state but bounded ``lru_cache`` tables of per-text features. It is synchronous and CPU-bound
(jieba); async callers with volume run it in a worker thread. It does no I/O and imports
nothing from stages or the store.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise
from typing import NamedTuple

from hlmem.lang.atoms import patterns as atom_rules
from hlmem.lang.atoms import spans as atom_spans
from hlmem.lang.atoms import words as atom_words
from hlmem.lang.atoms.spans import Span, SpanIndex
from hlmem.lang.atoms.words import Entity, Word
from hlmem.lang.text import normalize

#: Default merge threshold for :func:`similarity`, calibrated on ``tests/atom_pairs.py``.
SIMILARITY_THRESHOLD = 0.78

_CACHE_TEXTS = 4096  # texts per feature cache (~6 kB each): the claims of a few busy subjects


class _Analysis(NamedTuple):
    """The features of one text, from its atom spans, words, negation cues and names."""

    spans: tuple[Span, ...]
    words: tuple[Word, ...]
    negations: tuple[str, ...]
    entities: tuple[Entity, ...]


@dataclass(frozen=True, slots=True)
class Atoms:
    """The protected atoms of one claim; hashable, compared by :func:`disagreements`."""

    subject: str  # normalised; the speaker ("user", "用户", "我") is "user"
    polarity: int  # the claim's polarity field, +1 or -1
    negations: tuple[str, ...]  # negation cues of the text, sorted ("not", "不", "没")
    numbers: frozenset[str]  # "3杯", "¥200", "30%", "5kg", "#3" (ordinal)
    versions: frozenset[str]  # "v1.2", "v3.11"
    dates: frozenset[str]  # "2024-05-03", "?-05-03", "tomorrow", "next week", "weekly"
    weekdays: frozenset[str]  # "Wed", "next Wed", "every Fri"
    times: frozenset[str]  # "15:00", "afternoon"
    paths: frozenset[str]  # file paths and URLs
    quotes: frozenset[str]  # quoted strings, normalised
    identifiers: frozenset[str]  # emails, @handles, IPs, code identifiers
    entities: frozenset[str]  # names and relations, casefolded; checked by presence
    words: frozenset[str]  # the Latin words of the normalised text (presence check)
    cjk: str  # the CJK characters of the normalised text (presence check)


_SET_FAMILIES = (
    ("numbers", "number"),
    ("versions", "version"),
    ("dates", "date"),
    ("weekdays", "weekday"),
    ("times", "time"),
    ("paths", "path"),
    ("quotes", "quote"),
    ("identifiers", "identifier"),
)


@lru_cache(maxsize=_CACHE_TEXTS)
def _analyse(text: str) -> _Analysis:
    text = atom_words.expand(text)
    spans, masked = atom_spans.find_spans(text)
    words = atom_words.tag_words(masked)
    return _Analysis(
        tuple(spans),
        tuple(words),
        atom_words.negation_cues(masked),
        atom_words.find_entities(text, masked, words, spans),
    )


# --- similarity ------------------------------------------------------------------------------

_SUFFIXES = ("ing", "ies", "ied", "ed", "es", "ly", "s")
_SUBSTITUTION = 0.7  # score factor when both texts have a unigram the other lacks
_ADDITION = 0.85  # score factor when only one text has unigrams the other lacks


def _stem(word: str) -> str:
    """A tiny English suffix stripper: "deploying", "deployed", "deploys" -> "deploy"."""
    if not word.isascii() or not word.isalpha() or len(word) <= 4:
        return word
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            stem = word[: -len(suffix)]
            return stem + "y" if suffix in ("ies", "ied") else stem
    return word


def _tokens(analysis: _Analysis) -> list[str]:
    """The canonical token sequence: each atom as one token, CJK words and English stems,
    without punctuation, fillers and particles."""
    items = [
        (s.start, f"\x01{s.family[0]}{s.canon}") for s in analysis.spans if s.family != "quotes"
    ]
    idents = SpanIndex(s for s in analysis.spans if s.family == "identifiers")
    for w in analysis.words:
        end = w.start + len(w.word)
        if w.flag not in atom_rules.FILLER_FLAGS and not idents.overlaps(w.start, end):
            items.append((w.start, w.word.casefold().replace("’", "'")))
    items.sort(key=lambda item: item[0])
    seq: list[str] = []
    for _, tok in items:
        if tok.startswith("\x01"):
            seq.append(tok)
        elif atom_rules.CJK_RUN.match(tok):
            tok = atom_rules.RE_FILLER_ZH.sub("", tok)
            if tok and tok not in atom_rules.FILLER_ZH:
                seq.append(tok)
        elif tok not in atom_rules.FILLER_EN:
            seq.append(_stem(tok.replace("-", "")))
    # "咖啡和茶" / "茶和咖啡", "tea and coffee" / "coffee and tea": one order.
    for i in range(1, len(seq) - 1):
        if seq[i] in atom_rules.CONJUNCTIONS and seq[i + 1] < seq[i - 1]:
            seq[i - 1], seq[i + 1] = seq[i + 1], seq[i - 1]
    return seq


@lru_cache(maxsize=_CACHE_TEXTS)
def _grams(text: str) -> tuple[frozenset[str], frozenset[str]]:
    """Unigrams (CJK characters, English stems, atoms) and ordered bigrams of a text."""
    flat: list[str] = []
    for tok in _tokens(_analyse(text)):
        if atom_rules.CJK_RUN.fullmatch(tok):
            flat.extend(tok)
        else:
            flat.append(tok)
    return frozenset(flat), frozenset(f"{a}\x02{b}" for a, b in pairwise(flat))


def _dice(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    return 2 * len(a & b) / (len(a) + len(b))


def similarity(a: str, b: str) -> float:
    """How alike two claim texts are, from 0 to 1: symmetric, deterministic, zh and en.

    Texts are compared after normalisation (width, case, punctuation, spacing, contractions),
    without filler words and particles (请, 一下, 了, 的, please, that, the), with numbers,
    dates and times in canonical form (三杯 == 3杯, 周三 == 星期三, 下午三点 == 3pm) and with
    "A和B" / "A and B" in one order. The score is 0.6 x the Dice overlap of unigrams (CJK
    characters, English stems, atoms) plus 0.4 x that of ordered bigrams. After this
    canonicalisation a near-duplicate has the same unigrams, only perhaps in another order, so
    the score is then multiplied by 0.85 when one text adds words ("审核后部署" vs "部署") and
    by 0.7 when both have words the other lacks: a substituted word (深色/浅色, tabs/spaces) is
    a different value.
    """
    if a == b:
        return 1.0
    ua, ba = _grams(a)
    ub, bb = _grams(b)
    score = _dice(ua, ub) if not ba and not bb else 0.6 * _dice(ua, ub) + 0.4 * _dice(ba, bb)
    if ua - ub and ub - ua:
        score *= _SUBSTITUTION
    elif ua != ub:
        score *= _ADDITION
    return score


# --- public API ------------------------------------------------------------------------------


def load() -> None:
    """Load the part-of-speech tagger now (its word-tag table and jieba's dictionary: ~0.3 s
    once per process from :mod:`hlmem.lang.langdata`'s cache, ~2 s without)."""
    atom_words.tagger()


def _subject_key(subject: str) -> str:
    key = normalize(subject).strip(" .。:：")
    return "user" if key in atom_rules.SPEAKER_SUBJECTS else key


@lru_cache(maxsize=_CACHE_TEXTS)
def _atoms(text: str, subject: str, polarity: int) -> Atoms:
    analysis = _analyse(text)
    families: dict[str, set[str]] = {name: set() for name, _ in _SET_FAMILIES}
    for span in analysis.spans:
        families[span.family].add(span.canon)
    norm = normalize(text)
    return Atoms(
        subject=_subject_key(subject),
        polarity=-1 if polarity < 0 else 1,
        negations=analysis.negations,
        numbers=frozenset(families["numbers"]),
        versions=frozenset(families["versions"]),
        dates=frozenset(families["dates"]),
        weekdays=frozenset(families["weekdays"]),
        times=frozenset(families["times"]),
        paths=frozenset(families["paths"]),
        quotes=frozenset(families["quotes"]),
        identifiers=frozenset(families["identifiers"]),
        entities=frozenset(e.surface.casefold() for e in analysis.entities),
        words=frozenset(atom_rules.RE_LATIN.findall(norm)),
        cjk="".join(atom_rules.CJK_RUN.findall(norm)),
    )


def atoms_of(text: str, *, subject: str = "", polarity: int = 1) -> Atoms:
    """The protected atoms of a claim: its text's atoms, its subject and its polarity.

    The subject is normalised (case, width, spaces) and the speaker's names ("user", "用户",
    "我", "me") become "user"; an empty subject stays empty and matches only another empty one.
    """
    return _atoms(text, subject, polarity)


def _present(entity: str, atoms: Atoms) -> bool:
    return all(part in atoms.words for part in atom_rules.RE_LATIN.findall(entity)) and all(
        run in atoms.cjk for run in atom_rules.CJK_RUN.findall(entity)
    )


def _show(values: Iterable[str]) -> str:
    return ", ".join(sorted(values)) or "none"


def disagreements(a: Atoms, b: Atoms) -> list[str]:
    """Why two claims may not be merged, e.g. ``["version v1.2 != v1.3"]``; ``[]`` when every
    atom agrees. Each family must hold the same set on both sides (an atom one side lacks
    disagrees); each name of either claim must occur in the other claim's text."""
    out: list[str] = []
    if a.subject != b.subject:
        out.append(f"subject {a.subject or 'none'} != {b.subject or 'none'}")
    if a.polarity != b.polarity:
        out.append(f"polarity {a.polarity:+d} != {b.polarity:+d}")
    if a.negations != b.negations:
        out.append(f"negation {_show(a.negations)} != {_show(b.negations)}")
    for field, label in _SET_FAMILIES:
        va: frozenset[str] = getattr(a, field)
        vb: frozenset[str] = getattr(b, field)
        if va != vb:
            out.append(f"{label} {_show(va - vb)} != {_show(vb - va)}")
    only_a = [e for e in a.entities if not _present(e, b)]
    only_b = [e for e in b.entities if not _present(e, a)]
    if only_a or only_b:
        out.append(f"entity {_show(only_a)} != {_show(only_b)}")
    return out


def agree(a: Atoms, b: Atoms) -> bool:
    """Whether every atom agrees: ``not disagreements(a, b)``, without writing the reasons
    (the dedup stage's hot path asks this of every candidate and slot claim)."""
    if a.subject != b.subject or a.polarity != b.polarity or a.negations != b.negations:
        return False
    if any(getattr(a, field) != getattr(b, field) for field, _ in _SET_FAMILIES):
        return False
    return all(_present(e, b) for e in a.entities) and all(_present(e, a) for e in b.entities)


def entities_of(text: str) -> list[tuple[str, str]]:
    """Named entities of ``text`` as ``(surface, kind)`` pairs, kind one of person, org,
    place, product or other; deduplicated case-insensitively, in order of appearance.

    English names come from capitalisation (a sentence's first word only with evidence, as
    in "Alice likes"), Chinese names from jieba POS tags and patterns (老王, 王老师, …集团),
    both checked against short lists of known organisations, products and places; @handles
    are persons. Words the gate guards without being sure they are names are left out.
    """
    return [(e.surface, e.kind) for e in _analyse(text).entities if e.strong]


def same_fact(
    a_text: str,
    b_text: str,
    *,
    a_subject: str = "",
    b_subject: str = "",
    a_polarity: int = 1,
    b_polarity: int = 1,
    threshold: float = SIMILARITY_THRESHOLD,
) -> tuple[bool, float, list[str]]:
    """Whether two claims state the same fact: ``(merge, similarity, reasons)``.

    ``reasons`` lists every disagreeing atom and, when the texts are not alike enough,
    ``"similarity 0.52 < 0.78"``; ``merge`` is true exactly when it is empty.
    """
    reasons = disagreements(
        atoms_of(a_text, subject=a_subject, polarity=a_polarity),
        atoms_of(b_text, subject=b_subject, polarity=b_polarity),
    )
    score = similarity(a_text, b_text)
    if score < threshold:
        reasons.append(f"similarity {score:.2f} < {threshold:.2f}")
    return not reasons, score, reasons
