"""Span extraction: where each protected atom is in a text, and its canonical form.

:func:`find_spans` scans a text for emails, URLs, @handles, dates, paths, IPs, weekdays,
times, relative dates, parts of the day, versions and numbers, in that fixed order: a match
inside an earlier family's span is dropped, so "v1.2" is one version and not also a number.
Code identifiers and quoted strings are scanned last and hide nothing. Each match gets a
canonical form, so that one fact written two ways gives one atom: 三杯 and 3杯 are "3杯",
下午三点 and 3pm are "15:00", 两千元 is "¥2000", "March 3" is "?-03-03". Chinese numerals
are read by :func:`zh_number`.

The scan takes time linear in the text, however long (a recall query may have thousands of
characters): a match is checked against the spans before it by bisection (:class:`SpanIndex`),
and the patterns whose ``finditer`` would read a long word again from each of its characters
(emails, paths, versions, identifiers) are scanned by :func:`scan` and :func:`_emails`, which
find exactly the same matches.

The patterns and word lists are :mod:`hlmem.lang.atoms.patterns`; :mod:`hlmem.lang.atoms.analysis`
combines the spans with the words, negation cues and names of :mod:`hlmem.lang.atoms.words`. Pure
functions of strings: no state, no I/O, no jieba.
"""

from __future__ import annotations

import re
import string
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator
from decimal import Decimal, InvalidOperation
from functools import partial
from itertools import accumulate
from typing import NamedTuple

from hlmem.lang.atoms import patterns as atom_rules
from hlmem.lang.text import normalize


class Span(NamedTuple):
    """One atom of a text: where it is, its family and its canonical form."""

    start: int
    end: int
    family: str  # an Atoms field name
    canon: str


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


def overlaps(spans: list[Span], start: int, end: int) -> bool:
    """Whether ``[start, end)`` overlaps one of ``spans`` (a scan of them: for a few spans;
    :class:`SpanIndex` answers for many)."""
    return any(s.start < end and start < s.end for s in spans)


class SpanIndex:
    """Spans sorted by start, with the running maximum of their ends: whether a range overlaps
    one of them in O(log n), where :func:`overlaps` scans them all (a long text has thousands
    of spans, and every match of every family asks)."""

    __slots__ = ("_max_ends", "_starts")

    def __init__(self, spans: Iterable[Span]) -> None:
        ordered = sorted(spans)
        self._starts = [s.start for s in ordered]
        self._max_ends = list(accumulate((s.end for s in ordered), max))

    def overlaps(self, start: int, end: int) -> bool:
        """Whether ``[start, end)`` overlaps one of the spans: the spans that start before
        ``end`` are a prefix of the sorted list, and one of them reaches past ``start``
        exactly when the longest reach among them does."""
        i = bisect_left(self._starts, end)
        return i > 0 and self._max_ends[i - 1] > start


def _scan(
    find: Callable[[str], Iterable[re.Match[str]]],
    text: str,
    spans: list[Span],
    family: str,
    canon_of: Callable[[re.Match[str]], str],
) -> None:
    # One family's matches never overlap each other (finditer resumes after each match, and a
    # span lies inside its match), so they are checked against the earlier families' spans only.
    taken = SpanIndex(spans)
    found: list[Span] = []
    for m in find(text):
        group = "x" if m.groupdict().get("x") else "x2" if m.groupdict().get("x2") else 0
        start, end = m.span(group)
        while start < end and text[start] == " ":
            start += 1
        while end > start and text[end - 1] == " ":
            end -= 1
        if start < end and not taken.overlaps(start, end):
            canon = canon_of(m)
            if canon:
                found.append(Span(start, end, family, canon))
    spans.extend(found)


_EMAIL_LOCAL = frozenset(string.ascii_letters + string.digits + "_.+-")  # RE_EMAIL's [\w.+-]


def _emails(text: str) -> Iterator[re.Match[str]]:
    """The matches of :data:`~hlmem.lang.atoms.patterns.RE_EMAIL`, exactly as ``finditer`` finds
    them, in time linear in the text.

    ``finditer`` tries the pattern at every character, and at each one of a long word (a hash,
    a token, a hex dump) it reads the rest of the word looking for the "@": quadratic. Here only
    one start per "@" is tried: the local part holds no "@", so a match's "@" is the first one
    after its start, and every start inside the run of local-part characters before an "@"
    reads up to that same "@" and the same domain after it; the leftmost of them (not before
    the end of the previous match) is the start ``finditer`` would report.
    """
    pos = 0
    while (at := text.find("@", pos)) >= 0:
        start = at
        while start > pos and text[start - 1] in _EMAIL_LOCAL:
            start -= 1
        m = atom_rules.RE_EMAIL.match(text, start) if start < at else None
        if m is None:
            pos = at + 1
        else:
            yield m
            pos = m.end()


def scan(alternatives: atom_rules.RunScan, text: str) -> Iterator[re.Match[str]]:
    """The matches of the whole pattern of ``alternatives``, exactly as its ``finditer`` finds
    them, in time linear in the text.

    ``finditer`` tries the whole pattern at every character, and an alternative that reads a
    run of characters from each start (``a-b-c-...`` looking for a "-2", a word looking for
    its "/") reads the rest of a long run at each of its characters: quadratic. Here each
    alternative searches on its own, and one with a run skips the run after failing at its
    first start (:class:`~hlmem.lang.atoms.patterns.RunScan`). The leftmost of the alternatives'
    next matches is the whole pattern's, the first alternative winning a tie, as in the pattern
    itself; a match found beyond the current position stays valid (it does not depend on
    where the search began) until the scan passes its start. None of the patterns matches an
    empty string.
    """
    pending: list[re.Match[str] | None] = [None] * len(alternatives.only)
    live = list(range(len(alternatives.only)))
    pos = 0
    while live:
        best: re.Match[str] | None = None
        for i in list(live):
            m = pending[i]
            if m is None or m.start() < pos:
                m = pending[i] = _search(alternatives, i, text, pos)
                if m is None:
                    live.remove(i)
                    continue
            if best is None or m.start() < best.start():
                best = m
        if best is None:
            return
        yield best
        pos = best.end()


def _search(alternatives: atom_rules.RunScan, i: int, text: str, pos: int) -> re.Match[str] | None:
    """Alternative ``i``'s leftmost match starting at ``pos`` or later."""
    only = alternatives.only[i]
    if i not in alternatives.runs:
        return only.search(text, pos)
    starts, run = alternatives.runs[i]
    while (candidate := starts.search(text, pos)) is not None:
        at = candidate.start()
        if (m := only.match(text, at)) is not None:
            return m
        stretch = run.match(text, at)
        pos = stretch.end() if stretch is not None and stretch.end() > at else at + 1
    return None


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


def find_spans(text: str) -> tuple[list[Span], str]:
    """Every atom span of ``text`` in order, and the text with the hiding spans blanked.

    A span hides later families' matches and is blanked for word and name extraction, except
    code identifiers and quotes, whose words still count as words and names.
    """
    spans: list[Span] = []
    _scan(_emails, text, spans, "identifiers", lambda m: m.group(0).casefold())
    _scan(atom_rules.RE_URL.finditer, text, spans, "paths", _canon_url)
    _scan(
        atom_rules.RE_HANDLE.finditer,
        text,
        spans,
        "identifiers",
        lambda m: m.group(0).rstrip(".").casefold(),
    )
    _scan(atom_rules.RE_DATE_ISO.finditer, text, spans, "dates", _canon_date_iso)
    _scan(
        atom_rules.RE_DATE_US.finditer,
        text,
        spans,
        "dates",
        lambda m: "/".join(str(int(g)) for g in m.groups()),
    )
    _scan(partial(scan, atom_rules.PATH_SCAN), text, spans, "paths", _canon_path)
    _scan(atom_rules.RE_IP.finditer, text, spans, "identifiers", lambda m: m.group(0))
    _scan(atom_rules.RE_DATE_ZH.finditer, text, spans, "dates", _canon_date_zh)
    _scan(atom_rules.RE_DATE_EN.finditer, text, spans, "dates", _canon_date_en)
    _scan(atom_rules.RE_WEEKDAY.finditer, text, spans, "weekdays", _canon_weekday)
    _scan(atom_rules.RE_TIME.finditer, text, spans, "times", _canon_time)
    _scan(atom_rules.RE_RELATIVE.finditer, text, spans, "dates", _canon_relative)
    _scan(atom_rules.RE_POD.finditer, text, spans, "times", _canon_pod)
    _scan(partial(scan, atom_rules.VERSION_SCAN), text, spans, "versions", _canon_version)
    _scan(atom_rules.RE_NUMBER.finditer, text, spans, "numbers", _canon_number)
    hiding = SpanIndex(spans)
    chars = list(text)
    for s in spans:
        chars[s.start : s.end] = " " * (s.end - s.start)
    for m in scan(atom_rules.IDENT_SCAN, text):
        if not hiding.overlaps(m.start(), m.end()):
            spans.append(Span(m.start(), m.end(), "identifiers", m.group(0).casefold()))
    for m in atom_rules.RE_QUOTE.finditer(text):
        inner = normalize(next(g for g in m.groups() if g is not None))
        if inner and not hiding.overlaps(m.start() + 1, m.end() - 1):
            spans.append(Span(m.start(), m.end(), "quotes", inner))
    spans.sort()
    return spans, "".join(chars)
