"""Time expressions in Chinese and English, resolved against the telling event's own timestamp.

:func:`resolve` finds the first time expression in a text and turns it into a :class:`TimeRef`:
a half-open interval ``[start, end)`` in UTC, the matched expression and its span in the text.
:func:`find_all` returns every expression, left to right. Both are pure and fast: each kind of
expression has its own precompiled regex, run only when its key words occur in the text (English
ones on a lowercased copy, starting with their own keyword so the regex engine can skip ahead).
They never read the clock: "明天" means the day after ``anchor``.

Calendar arithmetic happens in the anchor's own timezone (pass an anchor converted to the user's
zone to get local days), and the results are converted to UTC. Weeks run Monday to Sunday.

Some expressions name no direction: a bare month ("5月", "in May"), a day of a month ("5月3日",
"May 3"), a bare weekday ("周五", "on Friday"). ``prefer`` picks their reading:

- ``None`` (the calendar reading): months and dates fall in the anchor's year; a bare weekday is
  the coming one (today included).
- ``"past"``: the latest occurrence at or before the anchor ("其实5月就搬去北京了" said in August:
  May of that year; said in March: May of the year before).
- ``"future"``: the next occurrence at or after the anchor ("5月搬家" said in August: next May).

Explicitly relative expressions ("下周三", "last Friday", "去年", "3 days ago") ignore ``prefer``.
Readings chosen where usage varies: "下周X"/"next X" is X of next week; "上周X" is X of last week;
"last X" (English) is the latest X strictly before today; "this X" is X of this week.
"月底"/"end of the month" is days 21 to the end, "月初" days 1-10, "月中" days 11-20; "年底" is
December, "年初" January. A time of day ("下午3点", "at 3pm") joins an adjacent day; alone it is
on the anchor's day. A time-of-day reference ends at the end of its day.

Not handled: ranges ("3月到5月"), recurring times ("每周一", "on Fridays": refused on purpose),
quarters, holidays, and numbers written as words beyond ten.

The words and the per-kind patterns live in :mod:`hlmem.lang.timeexpr.words`, what one match means
(the calendar arithmetic) in :mod:`hlmem.lang.timeexpr.calendar`; this module scans a text with the
patterns, keeps the first of overlapping matches, joins a day and its time of day, and converts to
UTC.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo

from hlmem.lang.timeexpr.calendar import (
    DATE_HANDLERS,
    ClockTime,
    Context,
    Dates,
    Granularity,
    Prefer,
    en_clock,
    zh_clock,
)
from hlmem.lang.timeexpr.words import (
    ASCII_LOWER,
    CJK,
    DIGIT,
    GATES,
    JOIN_DAY_TIME,
    JOIN_TIME_DAY,
    KINDS,
    WORD,
    Kind,
    cn_number,
    trie_pattern,
)

__all__ = ["Granularity", "Prefer", "TimeRef", "cn_number", "find_all", "resolve", "trie_pattern"]


@dataclass(frozen=True, slots=True)
class TimeRef:
    """A resolved time expression: the interval ``[start, end)`` (UTC) it names."""

    start: datetime
    end: datetime
    #: the matched text, e.g. "下周三" or "on Friday" (a leading preposition is included)
    expression: str
    #: where the expression is in the text: ``text[span[0]:span[1]] == expression``
    span: tuple[int, int]
    granularity: Granularity


@dataclass(slots=True)
class _Found:
    start: int
    end: int
    dates: Dates | None
    clock: ClockTime | None


def _scan(text: str, today: date, prefer: Prefer | None) -> list[_Found]:
    # ASCII-only lowercasing keeps the length (str.lower can grow "İ"): offsets hold.
    low = text.lower() if text.isascii() else text.translate(ASCII_LOWER)
    present = {DIGIT if w.isdigit() else w for w in GATES.findall(low)}
    if not present:
        return []
    candidates: list[tuple[int, int, int, Kind, re.Match[str], str]] = []
    for rank, kind in enumerate(KINDS):
        if present.isdisjoint(kind.gate):
            continue
        for m in kind.pattern.finditer(low if kind.english else text):
            start = m.start()
            if kind.english and start and low[start - 1] in WORD:
                continue  # inside a word: "schedule" is not "dec"
            pre = ""
            if kind.before is not None:
                back = kind.before.search(low, max(0, start - 30), start)
                if back is not None and back.start() < start:
                    pre, start = low[back.start() : start].strip(), back.start()
            candidates.append((start, rank, m.end(), kind, m, pre))
    candidates.sort(key=lambda c: (c[0], c[1]))
    found: list[_Found] = []
    pos = 0
    chinese = CJK.search(text) is not None  # once: asked per match, it cost the text each time
    for start, _, end, kind, m, pre in candidates:
        if start < pos:
            continue
        item = _resolve_one(kind.name, m, Context(today, prefer, pre, text), start, chinese)
        if item is not None:
            found.append(item)
            pos = end
    return found


def _resolve_one(
    name: str, m: re.Match[str], c: Context, start: int, chinese: bool
) -> _Found | None:
    try:
        if name == "zt":
            clock = zh_clock(m, chinese)
            return _Found(start, m.end(), None, clock) if clock else None
        if name == "et":
            clock = en_clock(m, c.pre)
            return _Found(start, m.end(), None, clock) if clock else None
        dates = DATE_HANDLERS[name](m, c)
        return _Found(start, m.end(), dates, None) if dates else None
    except (ValueError, OverflowError):  # "2月30日", "13月", year 0: not a date
        return None


def _merge(text: str, found: list[_Found]) -> list[_Found]:
    """Join a day and an adjacent time of day ("明天下午3点", "3pm on Friday") into one."""
    out: list[_Found] = []
    i = 0
    while i < len(found):
        item = found[i]
        nxt = found[i + 1] if i + 1 < len(found) else None
        if nxt is not None and item.clock is None and nxt.clock is not None and item.dates:
            gap = text[item.end : nxt.start]
            if item.dates[2] == "day" and JOIN_DAY_TIME.fullmatch(gap):
                out.append(_Found(item.start, nxt.end, item.dates, nxt.clock))
                i += 2
                continue
        if nxt is not None and item.clock is not None and item.dates is None and nxt.dates:
            gap = text[item.end : nxt.start]
            if nxt.dates[2] == "day" and nxt.clock is None and JOIN_TIME_DAY.fullmatch(gap):
                out.append(_Found(item.start, nxt.end, nxt.dates, item.clock))
                i += 2
                continue
        out.append(item)
        i += 1
    return out


def _utc(day: date, clock: ClockTime | None, zone: tzinfo | None) -> datetime:
    at = time(*clock) if clock else time()
    return datetime.combine(day, at, tzinfo=zone).astimezone(UTC)


def find_all(text: str, anchor: datetime, *, prefer: Prefer | None = None) -> list[TimeRef]:
    """Every time expression in ``text``, left to right, resolved against ``anchor``.

    :raises ValueError: ``anchor`` is naive (a time without a zone cannot be placed).
    """
    if anchor.tzinfo is None:
        raise ValueError("anchor must be timezone-aware")
    today = anchor.date()
    refs: list[TimeRef] = []
    for item in _merge(text, _scan(text, today, prefer)):
        granularity: Granularity
        if item.dates is None:
            assert item.clock is not None
            start_day, end_day, granularity = today, today + timedelta(days=1), "minute"
        else:
            start_day, end_day, granularity = item.dates
        if item.clock is not None:
            granularity = "minute"
            end_day = start_day + timedelta(days=1)
        refs.append(
            TimeRef(
                start=_utc(start_day, item.clock, anchor.tzinfo),
                end=_utc(end_day, None, anchor.tzinfo),
                expression=text[item.start : item.end],
                span=(item.start, item.end),
                granularity=granularity,
            )
        )
    return refs


def resolve(text: str, anchor: datetime, *, prefer: Prefer | None = None) -> TimeRef | None:
    """The first time expression in ``text`` resolved against ``anchor``, or ``None``.

    :raises ValueError: ``anchor`` is naive.
    """
    refs = find_all(text, anchor, prefer=prefer)
    return refs[0] if refs else None
