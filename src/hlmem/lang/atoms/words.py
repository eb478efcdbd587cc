"""The words of a claim and what is read from them: contractions, negation cues and names.

:func:`expand` spells out English contractions first ("doesn't" -> "does not"), so that a
negation has one written form. The other functions read the text with its atom spans blanked
out (:func:`hlmem.lang.atoms.spans.find_spans`): :func:`tag_words` splits it into words, Latin runs
as written and CJK runs through jieba's part-of-speech tagger, with known names and
老王/王老师 kept whole; :func:`negation_cues` finds the Chinese and English negation cues
(不/没/别…, not/never/disable…; 非常 and 未来 only look negative); and
:func:`find_entities` finds the names: runs of capitalised words in English, POS tags and
patterns in Chinese, relations (妈妈, boss) and @handles, each strong or only guarded.

The word lists and patterns are :mod:`hlmem.lang.atoms.patterns`; :mod:`hlmem.lang.atoms.analysis`
combines these results with the spans into a claim's atoms. The tagger is loaded once per process,
under a lock, through :mod:`hlmem.lang.langdata`; otherwise this module keeps no state and does no
I/O.
"""

from __future__ import annotations

import threading
from functools import lru_cache
from types import ModuleType
from typing import NamedTuple

from hlmem.lang import langdata
from hlmem.lang.atoms import patterns as atom_rules
from hlmem.lang.atoms.spans import Span
from hlmem.lang.text import nfkc


class Word(NamedTuple):
    """One word of a masked text, at its offset."""

    start: int
    word: str
    flag: str  # jieba POS flag for CJK words; "eng" Latin; "c" 、; "x" punctuation


class Entity(NamedTuple):
    """One name of a text: its surface form, its kind (person, org, place, product, other)."""

    start: int
    surface: str
    kind: str
    strong: bool  # False: guarded by the gate only (a capitalised first word, a Latin term)


def expand(text: str) -> str:
    """NFKC without case folding (capitals mark names), single spaces, contractions spelled
    out ("doesn't" -> "does not", "can't" -> "can not", "I'm" -> "I am")."""
    text = " ".join(nfkc(text).split())
    if "'" not in text and "’" not in text and "cannot" not in text.lower():
        return text
    text = atom_rules.RE_NOT.sub(
        lambda m: f"{atom_rules.EXPANSIONS[m[1].lower()] if m[1] else m[2]} not", text
    )
    text = atom_rules.RE_CANNOT.sub("can not", text)
    return atom_rules.RE_CONTRACTION.sub(
        lambda m: f"{m[1]} {atom_rules.EXPANSIONS[m[2].lower()]}", text
    )


def negation_cues(masked: str) -> tuple[str, ...]:
    """The negation cues of a masked text, canonical ("没有" -> "没", "disabled" -> "disable")
    and sorted; the words that only look negative ("非常", "未来") are skipped."""
    cues = [
        atom_rules.NEGATIONS_ZH[m.group(0)]
        for m in atom_rules.RE_NEG_ZH.finditer(atom_rules.RE_NEG_SKIP.sub(" ", masked))
    ]
    for m in atom_rules.RE_NEG_EN.finditer(masked):
        cue = " ".join(m.group(0).lower().split())
        cues.append(
            "stop" if cue.startswith("stop") else atom_rules.NEGATIVE_WORDS_EN.get(cue, cue)
        )
    return tuple(sorted(cues))


_pos_lock = threading.Lock()


@lru_cache(maxsize=1)
def tagger() -> ModuleType:
    """jieba's part-of-speech tagger, loaded on first use (``jieba.posseg``)."""
    with _pos_lock:
        langdata.load()  # initialises jieba.dt and imports the tagger
    import jieba.posseg  # type: ignore[import-untyped]

    posseg: ModuleType = jieba.posseg
    return posseg


def _cjk_words(run: str, offset: int) -> list[Word]:
    """jieba POS-tagged words of one CJK run; known names and 老王/王老师 kept whole."""
    out: list[Word] = []
    pos = 0
    for m in atom_rules.RE_CN_NAME.finditer(run):
        out.extend(_tagged(run[pos : m.start()], offset + pos))
        flag = "known" if m.lastgroup == "known" else "nr"
        out.append(Word(offset + m.start(), m.group(0), flag))
        pos = m.end()
    out.extend(_tagged(run[pos:], offset + pos))
    return out


def _tagged(run: str, offset: int) -> list[Word]:
    out: list[Word] = []
    if run:
        for pair in tagger().cut(run):
            out.append(Word(offset, pair.word, pair.flag))
            offset += len(pair.word)
    return out


def tag_words(masked: str) -> list[Word]:
    """The words of a masked text in order: CJK runs POS-tagged, Latin words ("eng"), the
    enumeration comma 、 ("c") and punctuation ("x")."""
    words: list[Word] = []
    for m in atom_rules.RE_TOKEN.finditer(masked):
        if m.lastgroup == "cjk":
            words.extend(_cjk_words(m.group(0), m.start()))
        else:
            flag = {"lat": "eng", "conj": "c"}.get(m.lastgroup or "", "x")
            words.append(Word(m.start(), m.group(0), flag))
    return words


def find_entities(
    text: str, masked: str, words: list[Word], spans: list[Span]
) -> tuple[Entity, ...]:
    """Every name of the text in order, deduplicated case-insensitively (strong ones win)."""
    found = _english_entities(masked) + _chinese_entities(words)
    handles = [s for s in spans if s.family == "identifiers" and s.canon.startswith("@")]
    if atom_rules.CJK_RUN.search(masked):
        for w in words:  # Latin terms in Chinese text: "用 vim" vs "用 emacs"
            low = w.word.lower()
            if w.flag == "eng" and low not in atom_rules.STOP_EN and not low.isdigit():
                found.append(Entity(w.start, w.word, "other", False))
    found += [
        Entity(m.start(), m[0], "person", False) for m in atom_rules.RE_RELATION.finditer(masked)
    ]
    found += [Entity(s.start, text[s.start : s.end], "person", True) for s in handles]
    out: dict[str, Entity] = {}
    for e in sorted(found):
        key = e.surface.casefold()
        if key in atom_rules.SPEAKER_SUBJECTS:
            continue  # "User is based in Toronto": the speaker, the subject of most claims
        if key not in out or (e.strong and not out[key].strong):
            out[key] = e
    return tuple(sorted(out.values()))


def _english_entities(masked: str) -> list[Entity]:
    """Runs of capitalised words; a sentence's first word is strong only with evidence."""
    out: list[Entity] = []
    caps = list(atom_rules.RE_CAP.finditer(masked))
    i = 0
    while i < len(caps):
        run = [caps[i]]
        while i + 1 < len(caps):
            between = masked[run[-1].end() : caps[i + 1].start()]
            if between != " " and between.strip().lower() not in atom_rules.NAME_CONNECTORS:
                break
            run.append(caps[i + 1])
            i += 1
        i += 1
        while run and run[0].group(0).lower() in atom_rules.STOP_EN:
            run.pop(0)  # "The Google team", "Mr Smith"
        if not run:
            continue
        start, end = run[0].start(), run[-1].end()
        name = masked[start:end]
        kind = _english_kind(name)
        # The text around a name is read in place: a copy of what precedes or follows each
        # name would cost the length of the text per name.
        before = _skip_space(masked, start, -1)
        initial = before < 0 or masked[before] in atom_rules.SENTENCE_STARTERS
        strong = not initial or len(run) > 1 or kind != "person" or _subject_like(masked, end)
        out.append(Entity(start, name, kind, strong))
    return out


def _skip_space(text: str, at: int, step: int) -> int:
    """The first index from ``at`` (``step`` 1) or before it (``step`` -1) that is not
    whitespace; ``len(text)`` or -1 when there is none."""
    i = at if step > 0 else at - 1
    while 0 <= i < len(text) and text[i].isspace():
        i += step
    return i


def _subject_like(text: str, end: int) -> bool:
    """What follows a capitalised first word ending at ``end``: "Alice likes", "Bob's",
    "Carol is", "Dave 喜欢"."""
    if text.startswith(("'s", "’s"), end):
        return True
    if atom_rules.CJK_RUN.match(text, _skip_space(text, end, 1)):
        return True
    m = atom_rules.RE_NEXT_WORD.match(text, end)
    if m is None:
        return False
    word = m.group(1)
    if word in atom_rules.SUBJECT_VERBS:
        return True
    return len(word) > 3 and (word.endswith("ed") or (word.endswith("s") and word[-2] not in "su"))


def _english_kind(name: str) -> str:
    low = name.lower()
    last = low.split()[-1]
    if low in atom_rules.KNOWN_ORGS or last in atom_rules.ORG_SUFFIXES_EN:
        return "org"
    if low in atom_rules.KNOWN_PRODUCTS:
        return "product"
    if low in atom_rules.KNOWN_PLACES or last in atom_rules.PLACE_SUFFIXES_EN:
        return "place"
    if any(c.isupper() for c in name[1:].replace(" ", "")) or not name[:1].isupper():
        return "other"  # acronyms and CamelCase: products, teams, terms
    return "person"


def _chinese_entities(words: list[Word]) -> list[Entity]:
    out: list[Entity] = []
    for i, w in enumerate(words):
        if w.word in atom_rules.ORG_SUFFIXES_ZH:
            continue
        known = atom_rules.KNOWN_ZH.get(w.word) if w.flag == "known" else None
        nxt = words[i + 1].word if i + 1 < len(words) else ""
        if nxt in atom_rules.ORG_SUFFIXES_ZH and (known or w.flag in atom_rules.PROPER_FLAGS):
            out.append(Entity(w.start, w.word + nxt, "org", True))
        elif known:
            out.append(Entity(w.start, w.word, known, True))
        elif w.flag in atom_rules.PROPER_FLAGS and len(w.word) >= 2:
            kind = atom_rules.PROPER_FLAGS[w.flag]
            if kind == "person":
                # jieba's dictionary tags some phrases as names ("喝咖啡"): only a surname
                # first, or a 老王/王老师 pattern, makes a confident person.
                strong = w.word[0] in atom_rules.SURNAMES or w.word[0] in "老小"
            elif kind == "place":
                strong = w.word.endswith(atom_rules.PLACE_SUFFIXES_ZH)
            else:
                strong = kind == "org"
            out.append(Entity(w.start, w.word, kind, strong))
    return out
