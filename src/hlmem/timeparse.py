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
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from typing import Any, Literal

Prefer = Literal["past", "future"]
Granularity = Literal["year", "month", "week", "day", "minute"]


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


# --- the combined pattern -------------------------------------------------------------------

_CN_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6,
              "七": 7, "八": 8, "九": 9}
_N = r"(?:\d{1,2}|[一二两三四五六七八九十]{1,3})"
_REL = r"(?:下下|上上|下|上|这|本|当)"
_MONTHS_EN = {
    "january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4,
    "apr": 4, "may": 5, "june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8,
    "september": 9, "sept": 9, "sep": 9, "october": 10, "oct": 10, "november": 11, "nov": 11,
    "december": 12, "dec": 12,
}
_MON = "(?:" + "|".join(sorted(_MONTHS_EN, key=len, reverse=True)) + ")"
_WEEKDAYS_EN = {d.lower(): i for i, d in enumerate(calendar.day_name)}
_WD = "(?:" + "|".join(_WEEKDAYS_EN) + ")"
_NUM_EN = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
           "seven": 7, "eight": 8, "nine": 9, "ten": 10, "a couple of": 2, "couple of": 2,
           "a few": 3, "few": 3}
_NEN = r"(?:\d{1,3}|a\s+couple\s+of|couple\s+of|a\s+few|few|an?|one|two|three|four|five|six" \
    r"|seven|eight|nine|ten)"

# One regex per kind of expression, in priority order: where two start at the same place, the
# earlier kind wins. Each runs only when its gate words occur in the text (a substring test is
# far cheaper than a regex scan), and English ones run on an ASCII-lowercased copy and begin
# with their own keyword, so the regex engine can skip ahead; a preposition before them ("on",
# "by", "the end of") is taken by a backward look (``_Kind.before``).
_DIGIT = "0123456789"
_MONTH_GATE = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_PREP_BEFORE = r"(?:\b(?:on|by|until|till|before|from|since|after)\s+)"


@dataclass(frozen=True, slots=True)
class _Kind:
    name: str
    pattern: re.Pattern[str]
    gate: tuple[str, ...]  # any of these in the (lowercased) text; "0123456789": any digit
    english: bool = False
    before: re.Pattern[str] | None = None  # what may precede it, matched backwards


def _kind(name: str, pattern: str, gate: tuple[str, ...], before: str | None = None,
          *, english: bool = False) -> _Kind:
    back = re.compile(f"(?:{before})$") if before else None
    return _Kind(name, re.compile(pattern), gate, english, back)


_WEEK_ZH = ("周", "星期", "礼拜")
_KINDS = (
    _kind("iso", r"(?<![\d.])(?P<iso_y>\d{4})[-/.](?P<iso_m>\d\d?)[-/.](?P<iso_d>\d\d?)(?!\d)",
          (_DIGIT,)),
    _kind("zd", rf"(?:(?P<zd_y>\d{{4}}|[今去明前后])年)?(?<![\d一二两三四五六七八九十个第每])"
          rf"(?P<zd_m>{_N})月份?(?:(?P<zd_d>{_N})[日号])?(?P<zd_p>上旬|中旬|下旬|初|中|底|末)?",
          ("月",)),
    _kind("zy", r"(?<!\d)(?P<zy_y>\d{4}|[今去明前后])年(?P<zy_p>年底|年末|年初|年中|底|末|初)?"
          r"(?![\d一二两三四五六七八九十])", ("年",)),
    _kind("zyp", r"(?<![今去明前后\d])(?P<zyp_p>年底|年末|年初|年中)", ("年",)),
    _kind("zm", rf"(?<![早晚马以之])(?P<zm_r>{_REL})个?月(?P<zm_p>上旬|中旬|下旬|初|中|底|末)?",
          ("月",)),
    _kind("zmp", r"(?<![\d个上下这本当一二两三四五六七八九十])(?P<zmp_p>月底|月末|月初|月中)",
          ("月",)),
    _kind("zw", rf"(?<![每早晚马以之])(?P<zw_r>{_REL})?个?(?:周|星期|礼拜)"
          r"(?P<zw_d>[一二三四五六日天1-7])", _WEEK_ZH),
    _kind("zwe", rf"(?<![每早晚马以之])(?P<zwe_r>{_REL})?个?周末", ("周末",)),
    _kind("zk", rf"(?<![每早晚马以之])(?P<zk_r>{_REL})个?(?:周|星期|礼拜)", _WEEK_ZH),
    _kind("zday", r"(?P<zday_w>大后天|大前天|今天|今日|今儿|明天|明日|明儿|后天|昨天|昨日|昨儿|前天"
          r"|今早|今晚|明早|明晚|昨晚)(?:早上|上午|中午|下午|傍晚|晚上|夜里)?"
          r"(?![\d一二两三四五六七八九十])", ("天", "日", "儿", "早", "晚")),
    _kind("zr", r"(?<!\d)(?P<zr_n>\d{1,3}|[一二两三四五六七八九十]{1,3})个?"
          r"(?P<zr_u>天|周|星期|礼拜|月|年)(?P<zr_dir>以后|之后|后|以前|之前|前)", ("后", "前")),
    _kind("et", r"(?P<et_h>\d\d?)(?::(?P<et_min>\d\d))?\s*(?P<et_ap>a\.?m\.?|p\.?m\.?)(?![a-z])"
          r"|(?P<et_h2>\d\d?):(?P<et_min2>\d\d)\b|(?P<et_noon>noon|midnight)\b",
          (_DIGIT, "noon", "midnight"), r"\bat\s+", english=True),
    _kind("zt", r"(?P<zt_pre>凌晨|早上|早晨|清晨|上午|中午|下午|傍晚|晚上|夜里)?"
          r"(?<![\d一二两三四五六七八九十第])(?P<zt_h>\d{1,2}|[一二两三四五六七八九十]{1,3})"
          r"(?:点|[:：](?=\d\d))(?:(?P<zt_half>半)|(?P<zt_q>一刻|三刻)|(?P<zt_min>\d{1,2}|"
          r"[一二三四五六七八九十]{1,3})分?)?(?P<zt_zh>钟|整)?", ("点", ":", "：")),
    _kind("emd", rf"(?P<emd_mon>{_MON})\.?\s+(?P<emd_d>\d\d?)(?:st|nd|rd|th)?\b"
          r"(?:,?\s+(?P<emd_y>\d{4})\b)?", _MONTH_GATE, _PREP_BEFORE, english=True),
    _kind("edm", rf"(?P<edm_d>\d\d?)(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<edm_mon>{_MON})\b\.?"
          r"(?:,?\s+(?P<edm_y>\d{4})\b)?", _MONTH_GATE,
          rf"{_PREP_BEFORE}?(?:\bthe\s+)?", english=True),
    _kind("emy", rf"(?P<emy_mon>{_MON})\b(?!\s+\d\d?(?:st|nd|rd|th)?\b(?!\d))"
          r"(?:,?\s+(?P<emy_y>\d{4})\b)?", _MONTH_GATE,
          r"\b(?:in|since|by|until|till|from|during|before|after|of|last|next|this|early|late"
          r"|mid|(?:the\s+)?(?:end|beginning|start|middle)\s+of)\s+|\bmid-", english=True),
    _kind("ee", r"(?P<ee_p>end|beginning|start|middle)\s+of\s+(?:the\s+)?"
          r"(?P<ee_r>this\s+|next\s+|last\s+)?(?P<ee_u>week|month|year)\b",
          ("end of", "beginning of", "start of", "middle of"),
          r"(?:\b(?:by|before|until|at|in|from)\s+)?(?:\bthe\s+)?", english=True),
    _kind("erw", rf"(?P<erw_r>this\s+coming|next|last|this|coming|past)\s+(?P<erw_wd>{_WD})\b",
          ("day",), _PREP_BEFORE, english=True),
    _kind("ew", rf"(?P<ew_wd>{_WD})\b", ("day",), _PREP_BEFORE, english=True),
    _kind("er", r"(?P<er_r>next|last|this|coming|past)\s+(?P<er_u>weekend|week|month|year)\b",
          ("week", "month", "year"),
          r"(?:\b(?:in|by|until|till|before|from|since|during|for|over)\s+)?(?:\bthe\s+)?",
          english=True),
    _kind("eday", r"(?P<eday_w>the\s+day\s+after\s+tomorrow|the\s+day\s+before\s+yesterday"
          r"|today|tonight|tomorrow|yesterday|this\s+morning|this\s+afternoon|this\s+evening)\b",
          ("today", "tonight", "tomorrow", "yesterday", "this morning", "this afternoon",
           "this evening"), english=True),
    _kind("ea", rf"(?P<ea_n>{_NEN})\s+(?P<ea_u>day|week|month|year)s?\s+"
          r"(?P<ea_dir>ago|later|from\s+now)\b", ("ago", "later", "from now"), english=True),
    _kind("ei", rf"in\s+(?P<ei_n>{_NEN})\s+(?P<ei_u>day|week|month|year)s?\b", ("in ",),
          english=True),
    _kind("ey", r"(?P<ey_pre>in|since|by|until|during|from|before|after)\s+"
          r"(?P<ey_y>(?:19|20)\d\d)\b", (_DIGIT,), english=True),
)
_CJK = re.compile(r"[\u3400-\u9fff]")
_ASCII_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}


def trie_pattern(words: Iterable[str]) -> str:
    """A regex matching any of ``words``, longest first, factored as a trie: at each position
    the engine follows one branch instead of trying every word (several times faster)."""
    root: dict[str, dict[str, Any]] = {}
    for word in words:
        node = root
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}

    def build(node: dict[str, dict[str, Any]]) -> str:
        branches = [re.escape(ch) + build(node[ch]) for ch in sorted(node) if ch]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        return f"(?:{body})?" if "" in node else body

    return build(root) or "(?!)"


# Every gate word (and any digit) in one scan: which kinds can match at all.
_GATES = re.compile(trie_pattern({g for k in _KINDS for g in k.gate if g != _DIGIT}) + r"|\d")
_WORD = frozenset("abcdefghijklmnopqrstuvwxyz0123456789'")
# Between a day and a time of day that belong together ("明天下午3点", "Friday at 3pm").
_JOIN_DAY_TIME = re.compile(r"[\s,，的]*(?:at\s*)?", re.I)
_JOIN_TIME_DAY = re.compile(r"[\s,，]*(?:on\s*)?", re.I)


# --- small calendar helpers ------------------------------------------------------------------


def cn_number(text: str) -> int | None:
    """An integer written with digits or Chinese numerals up to 99 ("12", "十二", "二十三")."""
    if text.isdigit():
        return int(text)
    if "十" in text:
        head, _, tail = text.partition("十")
        tens = _CN_DIGITS.get(head, -1) if head else 1
        ones = _CN_DIGITS.get(tail, -1) if tail else 0
        return tens * 10 + ones if tens >= 0 and ones >= 0 else None
    if len(text) == 1 and text in _CN_DIGITS:
        return _CN_DIGITS[text]
    return None


def _add_months(day: date, months: int) -> date:
    index = day.year * 12 + day.month - 1 + months
    year, month = divmod(index, 12)
    return date(year, month + 1, min(day.day, calendar.monthrange(year, month + 1)[1]))


def _month(year: int, month: int) -> tuple[date, date]:
    start = date(year, month, 1)
    return start, _add_months(start, 1)


def _part_of_month(year: int, month: int, part: str | None) -> tuple[date, date]:
    start, end = _month(year, month)
    if part in ("初", "上旬", "early", "beginning", "start"):
        return start, start.replace(day=11)
    if part in ("中", "中旬", "mid", "middle"):
        return start.replace(day=11), start.replace(day=21)
    if part in ("底", "末", "下旬", "late", "end"):
        return start.replace(day=21), end
    return start, end


def _part_of_year(year: int, part: str | None) -> tuple[date, date]:
    part = (part or "").lstrip("年")
    if part in ("底", "末", "end", "late"):
        return date(year, 12, 1), date(year + 1, 1, 1)
    if part in ("初", "beginning", "start", "early"):
        return date(year, 1, 1), date(year, 2, 1)
    if part in ("中", "middle", "mid"):
        return date(year, 6, 1), date(year, 8, 1)
    return date(year, 1, 1), date(year + 1, 1, 1)


def _monday(day: date) -> date:
    return day - timedelta(days=day.weekday())


def _year_for(today: date, month: int, day: int | None, prefer: Prefer | None) -> int:
    """The year of a month (and day) named without one, per ``prefer``."""
    year = today.year
    if prefer is None:
        return year
    named = (month, day or 1)
    now = (today.month, today.day if day else 1)
    if prefer == "past" and named > now:
        return year - 1
    if prefer == "future" and named < now:
        return year + 1
    return year


_REL_OFFSET = {"下下": 2, "上上": -2, "下": 1, "上": -1, "这": 0, "本": 0, "当": 0, "next": 1,
               "last": -1, "past": -1, "this": 0, "coming": 1}
_ZH_YEAR = {"今": 0, "去": -1, "明": 1, "前": -2, "后": 2}
_ZH_DAY = {"大后天": 3, "大前天": -3, "今天": 0, "今日": 0, "今儿": 0, "明天": 1, "明日": 1,
           "明儿": 1, "后天": 2, "昨天": -1, "昨日": -1, "昨儿": -1, "前天": -2, "今早": 0,
           "今晚": 0, "明早": 1, "明晚": 1, "昨晚": -1}
_EN_DAY = {"the day after tomorrow": 2, "the day before yesterday": -2, "today": 0,
           "tonight": 0, "tomorrow": 1, "yesterday": -1, "this morning": 0,
           "this afternoon": 0, "this evening": 0}
_ZH_WD = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6, "1": 0, "2": 1,
          "3": 2, "4": 3, "5": 4, "6": 5, "7": 6}


def _year_value(token: str, today: date) -> int:
    return int(token) if token.isdigit() else today.year + _ZH_YEAR[token]


def _weekday(today: date, weekday: int, rel: str | None, prefer: Prefer | None) -> date:
    if rel is None:
        if prefer == "past":
            return today - timedelta(days=(today.weekday() - weekday) % 7)
        return today + timedelta(days=(weekday - today.weekday()) % 7)
    if rel == "last":  # English: the latest one strictly before today
        return today - timedelta(days=(today.weekday() - weekday - 1) % 7 + 1)
    if rel in ("coming", "this coming"):  # the next one strictly after today
        return today + timedelta(days=(weekday - today.weekday() - 1) % 7 + 1)
    return _monday(today) + timedelta(days=7 * _REL_OFFSET[rel] + weekday)


def _shift(today: date, n: int, unit: str) -> tuple[date, date, Granularity]:
    """The day, month or year ``n`` units from today (negative: before)."""
    if unit in ("天", "day"):
        day = today + timedelta(days=n)
        return day, day + timedelta(days=1), "day"
    if unit in ("周", "星期", "礼拜", "week"):
        day = today + timedelta(days=7 * n)
        return day, day + timedelta(days=1), "day"
    if unit in ("月", "month"):
        first = _add_months(today.replace(day=1), n)
        return first, _add_months(first, 1), "month"
    return date(today.year + n, 1, 1), date(today.year + n + 1, 1, 1), "year"


# --- one match to an interval -----------------------------------------------------------------

_Dates = tuple[date, date, Granularity]
_Clock = tuple[int, int]


@dataclass(frozen=True, slots=True)
class _Ctx:
    """What a handler knows besides its match: the day, the reading, the preposition before."""

    today: date
    prefer: Prefer | None
    pre: str  # lowercase, e.g. "on", "the end of", "" when none
    text: str  # the original text (for case: "May" the month, "may" the verb)


def _iso(m: re.Match[str], c: _Ctx) -> _Dates | None:
    day = date(int(m["iso_y"]), int(m["iso_m"]), int(m["iso_d"]))
    return day, day + timedelta(days=1), "day"


def _zh_date(m: re.Match[str], c: _Ctx) -> _Dates | None:
    today, prefer = c.today, c.prefer
    month = cn_number(m["zd_m"])
    day = cn_number(m["zd_d"]) if m["zd_d"] else None
    if month is None or not 1 <= month <= 12 or (m["zd_d"] and day is None):
        return None
    year = _year_value(m["zd_y"], today) if m["zd_y"] else _year_for(today, month, day, prefer)
    if day is not None:
        start = date(year, month, day)
        return start, start + timedelta(days=1), "day"
    return (*_part_of_month(year, month, m["zd_p"]), "month")


def _zh_year(m: re.Match[str], c: _Ctx) -> _Dates | None:
    today = c.today
    year = _year_value(m["zy_y"], today)
    part = m["zy_p"]
    return (*_part_of_year(year, part), "month" if part else "year")


def _zh_year_part(m: re.Match[str], c: _Ctx) -> _Dates | None:
    today = c.today
    return (*_part_of_year(today.year, m["zyp_p"]), "month")


def _zh_month(m: re.Match[str], c: _Ctx) -> _Dates | None:
    today = c.today
    first = _add_months(today.replace(day=1), _REL_OFFSET[m["zm_r"]])
    return (*_part_of_month(first.year, first.month, m["zm_p"]), "month")


def _zh_month_part(m: re.Match[str], c: _Ctx) -> _Dates | None:
    today = c.today
    return (*_part_of_month(today.year, today.month, m["zmp_p"][1:]), "month")


def _zh_weekday(m: re.Match[str], c: _Ctx) -> _Dates | None:
    today, prefer = c.today, c.prefer
    day = _weekday(today, _ZH_WD[m["zw_d"]], m["zw_r"], prefer)
    return day, day + timedelta(days=1), "day"


def _weekend(today: date, rel: str | None) -> _Dates:
    saturday = _monday(today) + timedelta(days=5 + 7 * _REL_OFFSET.get(rel or "this", 0))
    return saturday, saturday + timedelta(days=2), "day"


def _zh_weekend(m: re.Match[str], c: _Ctx) -> _Dates | None:
    today = c.today
    return _weekend(today, m["zwe_r"])


def _zh_week(m: re.Match[str], c: _Ctx) -> _Dates | None:
    today = c.today
    monday = _monday(today) + timedelta(days=7 * _REL_OFFSET[m["zk_r"]])
    return monday, monday + timedelta(days=7), "week"


def _zh_day(m: re.Match[str], c: _Ctx) -> _Dates | None:
    today = c.today
    day = today + timedelta(days=_ZH_DAY[m["zday_w"]])
    return day, day + timedelta(days=1), "day"


def _zh_relative(m: re.Match[str], c: _Ctx) -> _Dates | None:
    today = c.today
    n = cn_number(m["zr_n"])
    if n is None:
        return None
    sign = 1 if m["zr_dir"].endswith("后") else -1
    return _shift(today, sign * n, m["zr_u"])


def _en_month(token: str) -> int:
    return _MONTHS_EN[token.lower().rstrip(".")]


_MODAL_PRE = frozenset({"last", "next", "this", "early", "late", "mid", "mid-"})


def _en_month_day(m: re.Match[str], c: _Ctx) -> _Dates | None:
    key = "emd" if "emd_mon" in m.re.groupindex else "edm"
    month, day = _en_month(m[f"{key}_mon"]), int(m[f"{key}_d"])
    if c.text[m.start(f"{key}_mon") : m.end(f"{key}_mon")] == "may" and not c.pre:
        return None  # "I may 2...": the verb
    year_text = m[f"{key}_y"]
    year = int(year_text) if year_text else _year_for(c.today, month, day, c.prefer)
    start = date(year, month, day)
    return start, start + timedelta(days=1), "day"


def _en_month_year(m: re.Match[str], c: _Ctx) -> _Dates | None:
    today, pre = c.today, " ".join(c.pre.split())
    if not pre and not m["emy_y"]:
        return None  # a bare "may" / "march" is too often a verb
    token = c.text[m.start("emy_mon") : m.end("emy_mon")]
    if token != "May" and token.lower() == "may" and pre in _MODAL_PRE:
        return None  # "this may be": the verb
    month = _en_month(m["emy_mon"])
    if m["emy_y"]:
        year = int(m["emy_y"])
    elif pre in ("last", "next", "this"):
        year = today.year + {"last": -1, "next": 1, "this": 0}[pre]
        if pre == "last" and month < today.month:
            year += 1
        elif pre == "next" and month > today.month:
            year -= 1
    else:
        year = _year_for(today, month, None, c.prefer)
    part = pre.split()[-2] if pre.endswith(" of") else pre.rstrip("-")
    return (*_part_of_month(year, month, part), "month")


def _en_edge(m: re.Match[str], c: _Ctx) -> _Dates | None:
    today = c.today
    part, unit = m["ee_p"].lower(), m["ee_u"].lower()
    offset = _REL_OFFSET[(m["ee_r"] or "this").strip().lower()]
    if unit == "year":
        return (*_part_of_year(today.year + offset, part), "month")
    if unit == "month":
        first = _add_months(today.replace(day=1), offset)
        return (*_part_of_month(first.year, first.month, part), "month")
    monday = _monday(today) + timedelta(days=7 * offset)
    start = monday + timedelta(days=4 if part == "end" else 0)
    return start, start + timedelta(days=3 if part == "end" else 2), "day"


def _en_rel_weekday(m: re.Match[str], c: _Ctx) -> _Dates | None:
    today, prefer = c.today, c.prefer
    rel = " ".join(m["erw_r"].lower().split())
    day = _weekday(today, _WEEKDAYS_EN[m["erw_wd"].lower()], rel, prefer)
    return day, day + timedelta(days=1), "day"


def _en_weekday(m: re.Match[str], c: _Ctx) -> _Dates | None:
    today, prefer = c.today, c.prefer
    day = _weekday(today, _WEEKDAYS_EN[m["ew_wd"].lower()], None, prefer)
    return day, day + timedelta(days=1), "day"


def _en_relative(m: re.Match[str], c: _Ctx) -> _Dates | None:
    today = c.today
    rel, unit = m["er_r"].lower(), m["er_u"].lower()
    offset = _REL_OFFSET[rel]
    if unit == "weekend":
        return _weekend(today, rel if rel != "coming" else "this")
    if unit == "week":
        monday = _monday(today) + timedelta(days=7 * offset)
        return monday, monday + timedelta(days=7), "week"
    if unit == "month":
        first = _add_months(today.replace(day=1), offset)
        return first, _add_months(first, 1), "month"
    return date(today.year + offset, 1, 1), date(today.year + offset + 1, 1, 1), "year"


def _en_day(m: re.Match[str], c: _Ctx) -> _Dates | None:
    today = c.today
    day = today + timedelta(days=_EN_DAY[" ".join(m["eday_w"].lower().split())])
    return day, day + timedelta(days=1), "day"


def _en_count(text: str) -> int:
    return int(text) if text.isdigit() else _NUM_EN[" ".join(text.lower().split())]


def _en_ago(m: re.Match[str], c: _Ctx) -> _Dates | None:
    today = c.today
    sign = -1 if m["ea_dir"].lower() == "ago" else 1
    return _shift(today, sign * _en_count(m["ea_n"]), m["ea_u"].lower())


def _en_in(m: re.Match[str], c: _Ctx) -> _Dates | None:
    today = c.today
    return _shift(today, _en_count(m["ei_n"]), m["ei_u"].lower())


def _en_year(m: re.Match[str], c: _Ctx) -> _Dates | None:
    year = int(m["ey_y"])
    return date(year, 1, 1), date(year + 1, 1, 1), "year"


_DATE_HANDLERS: dict[str, Callable[[re.Match[str], _Ctx], _Dates | None]] = {
    "iso": _iso, "zd": _zh_date, "zy": _zh_year, "zyp": _zh_year_part, "zm": _zh_month,
    "zmp": _zh_month_part, "zw": _zh_weekday, "zwe": _zh_weekend, "zk": _zh_week,
    "zday": _zh_day, "zr": _zh_relative, "emd": _en_month_day, "edm": _en_month_day,
    "emy": _en_month_year, "ee": _en_edge, "erw": _en_rel_weekday, "ew": _en_weekday,
    "er": _en_relative, "eday": _en_day, "ea": _en_ago, "ei": _en_in, "ey": _en_year,
}
_PM = ("下午", "傍晚", "晚上", "夜里")


def _zh_clock(m: re.Match[str], text: str) -> _Clock | None:
    hour = cn_number(m["zt_h"])
    pre = m["zt_pre"]
    if hour is None:
        return None
    if not pre and "点" not in m.group(0) and not _CJK.search(text):
        return None  # "10:30" in English needs "at" (see _en_clock): a score is not a time
    # "一点" / "两点" alone mean "a little" / "two points": a Chinese-numeral hour needs a
    # part of the day, or 钟/整/半/minutes, to be a time.
    if not m["zt_h"].isdigit() and not (pre or m["zt_zh"] or m["zt_half"] or m["zt_min"]):
        return None
    minute = 30 if m["zt_half"] else 15 if m["zt_q"] == "一刻" else 45 if m["zt_q"] else 0
    if m["zt_min"]:
        minute = cn_number(m["zt_min"]) or 0
    if pre in _PM and hour < 12:
        hour += 12
    elif pre == "中午" and hour < 6:
        hour += 12
    return (hour, minute) if hour < 24 and minute < 60 else None


def _en_clock(m: re.Match[str], pre: str) -> _Clock | None:
    if m["et_noon"]:
        return (12, 0) if m["et_noon"] == "noon" else (0, 0)
    if m["et_h2"]:
        if pre != "at":
            return None  # "10:30" alone may be a score or a ratio; "at 10:30" is a time
        hour, minute = int(m["et_h2"]), int(m["et_min2"])
    else:
        hour, minute = int(m["et_h"]), int(m["et_min"] or 0)
        if hour > 12 or hour == 0:
            return None
        pm = m["et_ap"].lower().startswith("p")
        hour = hour % 12 + (12 if pm else 0)
    return (hour, minute) if hour < 24 and minute < 60 else None


@dataclass(slots=True)
class _Found:
    start: int
    end: int
    dates: _Dates | None
    clock: _Clock | None


def _scan(text: str, today: date, prefer: Prefer | None) -> list[_Found]:
    # ASCII-only lowercasing keeps the length (str.lower can grow "İ"): offsets hold.
    low = text.lower() if text.isascii() else text.translate(_ASCII_LOWER)
    present = {_DIGIT if w.isdigit() else w for w in _GATES.findall(low)}
    if not present:
        return []
    candidates: list[tuple[int, int, int, _Kind, re.Match[str], str]] = []
    for rank, kind in enumerate(_KINDS):
        if present.isdisjoint(kind.gate):
            continue
        for m in kind.pattern.finditer(low if kind.english else text):
            start = m.start()
            if kind.english and start and low[start - 1] in _WORD:
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
    for start, _, end, kind, m, pre in candidates:
        if start < pos:
            continue
        item = _resolve_one(kind.name, m, _Ctx(today, prefer, pre, text), start)
        if item is not None:
            found.append(item)
            pos = end
    return found


def _resolve_one(name: str, m: re.Match[str], c: _Ctx, start: int) -> _Found | None:
    try:
        if name == "zt":
            clock = _zh_clock(m, c.text)
            return _Found(start, m.end(), None, clock) if clock else None
        if name == "et":
            clock = _en_clock(m, c.pre)
            return _Found(start, m.end(), None, clock) if clock else None
        dates = _DATE_HANDLERS[name](m, c)
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
            if item.dates[2] == "day" and _JOIN_DAY_TIME.fullmatch(gap):
                out.append(_Found(item.start, nxt.end, item.dates, nxt.clock))
                i += 2
                continue
        if nxt is not None and item.clock is not None and item.dates is None and nxt.dates:
            gap = text[item.end : nxt.start]
            if nxt.dates[2] == "day" and nxt.clock is None and _JOIN_TIME_DAY.fullmatch(gap):
                out.append(_Found(item.start, nxt.end, nxt.dates, item.clock))
                i += 2
                continue
        out.append(item)
        i += 1
    return out


def _utc(day: date, clock: _Clock | None, zone: tzinfo | None) -> datetime:
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
