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

The word lists, lexicons and compiled patterns live in :mod:`hlmem.atom_rules`; this module
holds the code: span extraction and canonical forms, negation cues, names, similarity and the
public API. It keeps no state but bounded ``lru_cache`` tables of per-text features. It is
synchronous and CPU-bound (jieba); async callers with volume run it in a worker thread. It
does no I/O and imports nothing from stages or the store.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from itertools import pairwise
from types import ModuleType
from typing import NamedTuple

from hlmem import atom_rules, langdata
from hlmem.text import nfkc, normalize

#: Default merge threshold for :func:`similarity`, calibrated on ``tests/atom_pairs.py``.
SIMILARITY_THRESHOLD = 0.78

_CACHE_TEXTS = 4096  # texts per feature cache (~6 kB each): the claims of a few busy subjects

# --- records ---------------------------------------------------------------------------------


class _Span(NamedTuple):
    start: int
    end: int
    family: str  # an Atoms field name
    canon: str


class _Word(NamedTuple):
    start: int
    word: str
    flag: str  # jieba POS flag for CJK words; "eng" Latin; "c" 、; "x" punctuation


class _Entity(NamedTuple):
    start: int
    surface: str
    kind: str
    strong: bool  # False: guarded by the gate only (a capitalised first word, a Latin term)


class _Analysis(NamedTuple):
    spans: tuple[_Span, ...]
    words: tuple[_Word, ...]
    negations: tuple[str, ...]
    entities: tuple[_Entity, ...]


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

# --- numbers ---------------------------------------------------------------------------------


def zh_number(text: str) -> int | None:
    """The value of a Chinese numeral ("三" 3, "十五" 15, "两千" 2000, "三千五" 3500)."""
    if not text or any(c not in atom_rules.NUM_ZH for c in text):
        return None
    if all(c in atom_rules.DIGIT_ZH for c in text):  # positional: 二〇二四
        return int("".join(str(atom_rules.DIGIT_ZH[c]) for c in text))
    total = section = 0
    digit: int | None = None
    last_unit, after_zero = 1, False
    for ch in text:
        if ch in atom_rules.DIGIT_ZH:
            if digit:
                return None  # "三四十": not one number
            digit, after_zero = atom_rules.DIGIT_ZH[ch], after_zero or ch in "零〇"
        elif ch in atom_rules.SMALL_UNIT_ZH:
            last_unit = atom_rules.SMALL_UNIT_ZH[ch]
            section += (1 if digit is None else digit) * last_unit
            digit, after_zero = None, False
        else:
            last_unit = atom_rules.BIG_UNIT_ZH[ch]
            total += (section + (digit or 0)) * last_unit
            section, digit, after_zero = 0, None, False
    if digit is not None:
        # Colloquial "三千五" is 3500 and "两万五" 25000, but "一百零五" is 105.
        section += digit if after_zero or last_unit == 1 else digit * last_unit // 10
    return total + section


def _int(text: str | None) -> int | None:
    if not text:
        return None
    return int(text) if text.isdigit() else zh_number(text)


def _decimal(text: str) -> Decimal | None:
    try:
        return Decimal(text.replace(",", ""))
    except InvalidOperation:
        value = zh_number(text)
        return None if value is None else Decimal(value)


# --- extraction ------------------------------------------------------------------------------


def _overlaps(spans: list[_Span], start: int, end: int) -> bool:
    return any(s.start < end and start < s.end for s in spans)


def _scan(
    pattern: re.Pattern[str],
    text: str,
    spans: list[_Span],
    family: str,
    canon_of: Callable[[re.Match[str]], str],
) -> None:
    for m in pattern.finditer(text):
        group = "x" if m.groupdict().get("x") else "x2" if m.groupdict().get("x2") else 0
        start, end = m.span(group)
        while start < end and text[start] == " ":
            start += 1
        while end > start and text[end - 1] == " ":
            end -= 1
        if start < end and not _overlaps(spans, start, end):
            canon = canon_of(m)
            if canon:
                spans.append(_Span(start, end, family, canon))


def _canon_url(m: re.Match[str]) -> str:
    url = m.group(0).rstrip(".,;:!?")
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "", url
    host, slash, path = rest.partition("/")
    out = (f"{scheme.lower()}://" if scheme else "") + host.lower() + slash + path
    return out.rstrip("/")


def _canon_path(m: re.Match[str]) -> str:
    path = m.group(0).rstrip(".,;:!?")
    return path.rstrip("/") or path


def _canon_date_iso(m: re.Match[str]) -> str:
    year, _, month, day = m.groups()
    if not 1 <= int(month) <= 12 or (day and not 1 <= int(day) <= 31):
        return ""
    return f"{year}-{int(month):02d}" + (f"-{int(day):02d}" if day else "")


def _canon_date_zh(m: re.Match[str]) -> str:
    year, month, day, year_only, day_only = m.groups()
    if year_only:
        return str(_int(year_only))
    if day_only:
        d = _int(day_only)
        return f"?-?-{d:02d}" if d and 1 <= d <= 31 else ""
    mo, d, y = _int(month), _int(day), _int(year)
    if mo is None or not 1 <= mo <= 12 or (d is not None and not 1 <= d <= 31):
        return ""
    ys = "?" if y is None else str(y + 2000 if y < 100 else y)
    return f"{ys}-{mo:02d}" + (f"-{d:02d}" if d is not None else "")


def _canon_date_en(m: re.Match[str]) -> str:
    g = m.groupdict()
    month = atom_rules.MONTHS[(g["m1"] or g["m2"] or g["m3"] or g["m4"]).capitalize()]
    day, year = g["d1"] or g["d2"], g["y1"] or g["y2"] or g["y3"]
    if day and not 1 <= int(day) <= 31:
        return ""
    return f"{year or '?'}-{month:02d}" + (f"-{int(day):02d}" if day else "")


def _canon_time(m: re.Match[str]) -> str:
    g = m.groupdict()
    if g["word"]:
        return "12:00" if g["word"].lower() == "noon" else "00:00"
    minute = 0
    if g["h"]:
        hour, tail = _int(g["h"]), g["tail"] or ""
        if hour is None or hour > 24 or (g["h"] == "一" and not g["pod"] and not tail):
            return ""  # "一点" is usually "a little", not one o'clock
        if tail == "半":
            minute = 30
        elif tail in ("一刻", "三刻"):
            minute = 15 if tail == "一刻" else 45
        elif tail not in ("", "钟", "整"):
            minute = _int(tail.strip("过分")) or 0
        meridiem = atom_rules.PODS_ZH.get(g["pod"] or "", "")
    elif g["h2"]:
        hour, minute = int(g["h2"]), int(g["m2"])
        meridiem = (g["ap2"] or "")[:1].lower() or atom_rules.PODS_ZH.get(g["pod2"] or "", "")
    else:
        hour = int(g["h3"] or g["h4"])
        meridiem = (g["ap3"] or "")[:1].lower()
    if (meridiem == "p" and hour < 12) or (meridiem == "n" and hour <= 3):
        hour += 12
    elif meridiem == "a" and hour == 12:
        hour = 0
    return f"{hour:02d}:{minute:02d}" if minute < 60 else ""


def _canon_weekday(m: re.Match[str]) -> str:
    g = m.groupdict()
    if g["d"]:
        index = atom_rules.WEEKDAY_ZH[g["d"]]
        pre = atom_rules.WEEK_PREFIX_ZH[(g["pre"] or "").rstrip("个")]
    else:
        name = (g["d2"] or g["d3"]).lower()[:3]
        index = [d.lower() for d in atom_rules.WEEKDAYS].index(name)
        pre = (g["pre2"] or "").lower()
        pre = "every" if g["pl"] or pre == "every" else "" if pre == "on" else pre
    return f"{pre} {atom_rules.WEEKDAYS[index]}".strip()


def _canon_relative(m: re.Match[str]) -> str:
    word = " ".join(m.group(0).lower().split())
    return atom_rules.RELATIVE.get(word, word)


def _canon_pod(m: re.Match[str]) -> str:
    word = m.group(0).lower()
    return atom_rules.POD_CANON.get(word, word)


def _canon_version(m: re.Match[str]) -> str:
    if m.group("x"):
        pre = m.group("pre").strip()
        named = pre[:1].isupper() or pre.lower() in atom_rules.VERSION_NAMES
        return "v" + m.group("x") if named else ""
    if m.group("x2"):
        return "v" + m.group("x2")
    return "v" + atom_rules.RE_V_PREFIX.sub("", m.group(0).lower())


def _canon_number(m: re.Match[str]) -> str:
    g = m.groupdict()
    unit = (g["unit"] or "").strip()
    unit = atom_rules.UNITS_ZH.get(unit) or atom_rules.UNITS_EN.get(unit.lower(), "")
    cur = atom_rules.CURRENCY.get((g["cur"] or "").lower(), "")
    if unit in ("¥", "$", "€", "£"):
        cur, unit = unit, ""
    value: Decimal | None
    if g["pct"]:
        value, unit = _decimal(g["pct"]), "%"
    elif g["ord"] or g["eno"] or g["dord"]:
        n = atom_rules.EN_ORDINALS.get((g["eno"] or "").lower()) or _int(g["ord"] or g["dord"])
        return "" if n is None else f"#{n}{unit}"
    elif g["en"]:
        head, _, tail = g["en"].lower().partition("-")
        value = Decimal(atom_rules.EN_NUMBERS[head] + atom_rules.ONES.get(tail, 0))
    else:
        multiplier = (g["mul"] or "").strip().lower()
        if g["d"] and "." in g["d"] and not multiplier:
            # Written decimals stay as written: "3.10" and "3.1" may be two versions.
            return _number_text(cur, g["d"].replace(",", ""), unit)
        value = _decimal(g["d"] or g["zh"] or g["zh2"] or "")
        if value is not None and multiplier:
            value *= atom_rules.MULTIPLIERS[multiplier]
    if value is None:
        return ""
    return _number_text(cur, format(value.normalize(), "f"), unit)


def _number_text(currency: str, value: str, unit: str) -> str:
    """ "¥200", "30%", "5kg", "3杯", "25 people"."""
    space = " " if unit.isalpha() and unit.isascii() and len(unit) > 2 else ""
    return f"{currency}{value}{space}{unit}"


def _spans(text: str) -> tuple[list[_Span], str]:
    """Every atom span of ``text`` in order, and the text with the hiding spans blanked.

    A span hides later families' matches and is blanked for word and name extraction, except
    code identifiers and quotes, whose words still count as words and names.
    """
    spans: list[_Span] = []
    _scan(atom_rules.RE_EMAIL, text, spans, "identifiers", lambda m: m.group(0).casefold())
    _scan(atom_rules.RE_URL, text, spans, "paths", _canon_url)
    _scan(
        atom_rules.RE_HANDLE,
        text,
        spans,
        "identifiers",
        lambda m: m.group(0).rstrip(".").casefold(),
    )
    _scan(atom_rules.RE_DATE_ISO, text, spans, "dates", _canon_date_iso)
    _scan(
        atom_rules.RE_DATE_US,
        text,
        spans,
        "dates",
        lambda m: "/".join(str(int(g)) for g in m.groups()),
    )
    _scan(atom_rules.RE_PATH, text, spans, "paths", _canon_path)
    _scan(atom_rules.RE_IP, text, spans, "identifiers", lambda m: m.group(0))
    _scan(atom_rules.RE_DATE_ZH, text, spans, "dates", _canon_date_zh)
    _scan(atom_rules.RE_DATE_EN, text, spans, "dates", _canon_date_en)
    _scan(atom_rules.RE_WEEKDAY, text, spans, "weekdays", _canon_weekday)
    _scan(atom_rules.RE_TIME, text, spans, "times", _canon_time)
    _scan(atom_rules.RE_RELATIVE, text, spans, "dates", _canon_relative)
    _scan(atom_rules.RE_POD, text, spans, "times", _canon_pod)
    _scan(atom_rules.RE_VERSION, text, spans, "versions", _canon_version)
    _scan(atom_rules.RE_NUMBER, text, spans, "numbers", _canon_number)
    hiding = list(spans)
    chars = list(text)
    for s in hiding:
        chars[s.start : s.end] = " " * (s.end - s.start)
    for m in atom_rules.RE_IDENT.finditer(text):
        if not _overlaps(hiding, m.start(), m.end()):
            spans.append(_Span(m.start(), m.end(), "identifiers", m.group(0).casefold()))
    for m in atom_rules.RE_QUOTE.finditer(text):
        inner = normalize(next(g for g in m.groups() if g is not None))
        if inner and not _overlaps(hiding, m.start() + 1, m.end() - 1):
            spans.append(_Span(m.start(), m.end(), "quotes", inner))
    spans.sort()
    return spans, "".join(chars)


def _negations(masked: str) -> tuple[str, ...]:
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


def _expand(text: str) -> str:
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


_pos_lock = threading.Lock()


def load() -> None:
    """Load the part-of-speech tagger now (its word-tag table and jieba's dictionary: ~0.3 s
    once per process from :mod:`hlmem.langdata`'s cache, ~2 s without)."""
    _posseg()


@lru_cache(maxsize=1)
def _posseg() -> ModuleType:
    with _pos_lock:
        langdata.load()  # initialises jieba.dt and imports the tagger
    import jieba.posseg  # type: ignore[import-untyped]

    posseg: ModuleType = jieba.posseg
    return posseg


def _cjk_words(run: str, offset: int) -> list[_Word]:
    """jieba POS-tagged words of one CJK run; known names and 老王/王老师 kept whole."""
    out: list[_Word] = []
    pos = 0
    for m in atom_rules.RE_CN_NAME.finditer(run):
        out.extend(_tagged(run[pos : m.start()], offset + pos))
        flag = "known" if m.lastgroup == "known" else "nr"
        out.append(_Word(offset + m.start(), m.group(0), flag))
        pos = m.end()
    out.extend(_tagged(run[pos:], offset + pos))
    return out


def _tagged(run: str, offset: int) -> list[_Word]:
    out: list[_Word] = []
    if run:
        for pair in _posseg().cut(run):
            out.append(_Word(offset, pair.word, pair.flag))
            offset += len(pair.word)
    return out


@lru_cache(maxsize=_CACHE_TEXTS)
def _analyse(text: str) -> _Analysis:
    text = _expand(text)
    spans, masked = _spans(text)
    words: list[_Word] = []
    for m in atom_rules.RE_TOKEN.finditer(masked):
        if m.lastgroup == "cjk":
            words.extend(_cjk_words(m.group(0), m.start()))
        else:
            flag = {"lat": "eng", "conj": "c"}.get(m.lastgroup or "", "x")
            words.append(_Word(m.start(), m.group(0), flag))
    return _Analysis(
        tuple(spans), tuple(words), _negations(masked), _entities(text, masked, words, spans)
    )


# --- entities --------------------------------------------------------------------------------


def _entities(
    text: str, masked: str, words: list[_Word], spans: list[_Span]
) -> tuple[_Entity, ...]:
    """Every name of the text in order, deduplicated case-insensitively (strong ones win)."""
    found = _english_entities(masked) + _chinese_entities(words)
    handles = [s for s in spans if s.family == "identifiers" and s.canon.startswith("@")]
    if atom_rules.CJK_RUN.search(masked):
        for w in words:  # Latin terms in Chinese text: "用 vim" vs "用 emacs"
            low = w.word.lower()
            if w.flag == "eng" and low not in atom_rules.STOP_EN and not low.isdigit():
                found.append(_Entity(w.start, w.word, "other", False))
    found += [
        _Entity(m.start(), m[0], "person", False) for m in atom_rules.RE_RELATION.finditer(masked)
    ]
    found += [_Entity(s.start, text[s.start : s.end], "person", True) for s in handles]
    out: dict[str, _Entity] = {}
    for e in sorted(found):
        key = e.surface.casefold()
        if key in atom_rules.SPEAKER_SUBJECTS:
            continue  # "User is based in Toronto": the speaker, the subject of most claims
        if key not in out or (e.strong and not out[key].strong):
            out[key] = e
    return tuple(sorted(out.values()))


def _english_entities(masked: str) -> list[_Entity]:
    """Runs of capitalised words; a sentence's first word is strong only with evidence."""
    out: list[_Entity] = []
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
        before = masked[:start].rstrip()
        initial = not before or before[-1] in atom_rules.SENTENCE_STARTERS
        strong = not initial or len(run) > 1 or kind != "person" or _subject_like(masked[end:])
        out.append(_Entity(start, name, kind, strong))
    return out


def _subject_like(after: str) -> bool:
    """What follows a capitalised first word: "Alice likes", "Bob's", "Carol is", "Dave 喜欢"."""
    if after.startswith(("'s", "’s")) or atom_rules.CJK_RUN.match(after.lstrip()):
        return True
    m = atom_rules.RE_NEXT_WORD.match(after)
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


def _chinese_entities(words: list[_Word]) -> list[_Entity]:
    out: list[_Entity] = []
    for i, w in enumerate(words):
        if w.word in atom_rules.ORG_SUFFIXES_ZH:
            continue
        known = atom_rules.KNOWN_ZH.get(w.word) if w.flag == "known" else None
        nxt = words[i + 1].word if i + 1 < len(words) else ""
        if nxt in atom_rules.ORG_SUFFIXES_ZH and (known or w.flag in atom_rules.PROPER_FLAGS):
            out.append(_Entity(w.start, w.word + nxt, "org", True))
        elif known:
            out.append(_Entity(w.start, w.word, known, True))
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
            out.append(_Entity(w.start, w.word, kind, strong))
    return out


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
    idents = [s for s in analysis.spans if s.family == "identifiers"]
    for w in analysis.words:
        end = w.start + len(w.word)
        if w.flag not in atom_rules.FILLER_FLAGS and not _overlaps(idents, w.start, end):
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
