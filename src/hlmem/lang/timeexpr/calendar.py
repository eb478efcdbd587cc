"""What a matched time expression means: calendar arithmetic and one handler per kind.

Each handler takes one match of a pattern from :mod:`hlmem.lang.timeexpr.words` and returns the days
it names (``[start, end)`` and a granularity) or a time of day, or ``None`` when the match is not a
time after all ("I may 2...", "一点"). The readings (``prefer``, weeks from Monday, "月底" as days
21 to the end) are the ones described in :mod:`hlmem.lang.timeexpr.parse`, which scans a text, calls
these handlers and builds the :class:`~hlmem.lang.timeexpr.parse.TimeRef` results in UTC; here there
are only days, no timezone. ``Prefer`` and ``Granularity`` live here so that both modules can use
them without an import cycle; timeparse re-exports them. The underscored names are shared with
timeparse only.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Literal

from hlmem.lang.timeexpr.words import (
    EN_DAY,
    MONTHS_EN,
    NUM_EN,
    REL_OFFSET,
    WEEKDAYS_EN,
    ZH_DAY,
    ZH_WD,
    ZH_YEAR,
    cn_number,
)

Prefer = Literal["past", "future"]
Granularity = Literal["year", "month", "week", "day", "minute"]


# --- small calendar helpers ------------------------------------------------------------------


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


def _year_value(token: str, today: date) -> int:
    return int(token) if token.isdigit() else today.year + ZH_YEAR[token]


def _weekday(today: date, weekday: int, rel: str | None, prefer: Prefer | None) -> date:
    if rel is None:
        if prefer == "past":
            return today - timedelta(days=(today.weekday() - weekday) % 7)
        return today + timedelta(days=(weekday - today.weekday()) % 7)
    if rel == "last":  # English: the latest one strictly before today
        return today - timedelta(days=(today.weekday() - weekday - 1) % 7 + 1)
    if rel in ("coming", "this coming"):  # the next one strictly after today
        return today + timedelta(days=(weekday - today.weekday() - 1) % 7 + 1)
    return _monday(today) + timedelta(days=7 * REL_OFFSET[rel] + weekday)


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

Dates = tuple[date, date, Granularity]
ClockTime = tuple[int, int]


@dataclass(frozen=True, slots=True)
class Context:
    """What a handler knows besides its match: the day, the reading, the preposition before."""

    today: date
    prefer: Prefer | None
    pre: str  # lowercase, e.g. "on", "the end of", "" when none
    text: str  # the original text (for case: "May" the month, "may" the verb)


def _iso(m: re.Match[str], c: Context) -> Dates | None:
    day = date(int(m["iso_y"]), int(m["iso_m"]), int(m["iso_d"]))
    return day, day + timedelta(days=1), "day"


def _zh_date(m: re.Match[str], c: Context) -> Dates | None:
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


def _zh_year(m: re.Match[str], c: Context) -> Dates | None:
    today = c.today
    year = _year_value(m["zy_y"], today)
    part = m["zy_p"]
    return (*_part_of_year(year, part), "month" if part else "year")


def _zh_year_part(m: re.Match[str], c: Context) -> Dates | None:
    today = c.today
    return (*_part_of_year(today.year, m["zyp_p"]), "month")


def _zh_month(m: re.Match[str], c: Context) -> Dates | None:
    today = c.today
    first = _add_months(today.replace(day=1), REL_OFFSET[m["zm_r"]])
    return (*_part_of_month(first.year, first.month, m["zm_p"]), "month")


def _zh_month_part(m: re.Match[str], c: Context) -> Dates | None:
    today = c.today
    return (*_part_of_month(today.year, today.month, m["zmp_p"][1:]), "month")


def _zh_weekday(m: re.Match[str], c: Context) -> Dates | None:
    today, prefer = c.today, c.prefer
    day = _weekday(today, ZH_WD[m["zw_d"]], m["zw_r"], prefer)
    return day, day + timedelta(days=1), "day"


def _weekend(today: date, rel: str | None) -> Dates:
    saturday = _monday(today) + timedelta(days=5 + 7 * REL_OFFSET.get(rel or "this", 0))
    return saturday, saturday + timedelta(days=2), "day"


def _zh_weekend(m: re.Match[str], c: Context) -> Dates | None:
    today = c.today
    return _weekend(today, m["zwe_r"])


def _zh_week(m: re.Match[str], c: Context) -> Dates | None:
    today = c.today
    monday = _monday(today) + timedelta(days=7 * REL_OFFSET[m["zk_r"]])
    return monday, monday + timedelta(days=7), "week"


def _zh_day(m: re.Match[str], c: Context) -> Dates | None:
    today = c.today
    day = today + timedelta(days=ZH_DAY[m["zday_w"]])
    return day, day + timedelta(days=1), "day"


def _zh_relative(m: re.Match[str], c: Context) -> Dates | None:
    today = c.today
    n = cn_number(m["zr_n"])
    if n is None:
        return None
    sign = 1 if m["zr_dir"].endswith("后") else -1
    return _shift(today, sign * n, m["zr_u"])


def _en_month(token: str) -> int:
    return MONTHS_EN[token.lower().rstrip(".")]


_MODAL_PRE = frozenset({"last", "next", "this", "early", "late", "mid", "mid-"})


def _en_month_day(m: re.Match[str], c: Context) -> Dates | None:
    key = "emd" if "emd_mon" in m.re.groupindex else "edm"
    month, day = _en_month(m[f"{key}_mon"]), int(m[f"{key}_d"])
    if c.text[m.start(f"{key}_mon") : m.end(f"{key}_mon")] == "may" and not c.pre:
        return None  # "I may 2...": the verb
    year_text = m[f"{key}_y"]
    year = int(year_text) if year_text else _year_for(c.today, month, day, c.prefer)
    start = date(year, month, day)
    return start, start + timedelta(days=1), "day"


def _en_month_year(m: re.Match[str], c: Context) -> Dates | None:
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


def _en_edge(m: re.Match[str], c: Context) -> Dates | None:
    today = c.today
    part, unit = m["ee_p"].lower(), m["ee_u"].lower()
    offset = REL_OFFSET[(m["ee_r"] or "this").strip().lower()]
    if unit == "year":
        return (*_part_of_year(today.year + offset, part), "month")
    if unit == "month":
        first = _add_months(today.replace(day=1), offset)
        return (*_part_of_month(first.year, first.month, part), "month")
    monday = _monday(today) + timedelta(days=7 * offset)
    start = monday + timedelta(days=4 if part == "end" else 0)
    return start, start + timedelta(days=3 if part == "end" else 2), "day"


def _en_rel_weekday(m: re.Match[str], c: Context) -> Dates | None:
    today, prefer = c.today, c.prefer
    rel = " ".join(m["erw_r"].lower().split())
    day = _weekday(today, WEEKDAYS_EN[m["erw_wd"].lower()], rel, prefer)
    return day, day + timedelta(days=1), "day"


def _en_weekday(m: re.Match[str], c: Context) -> Dates | None:
    today, prefer = c.today, c.prefer
    day = _weekday(today, WEEKDAYS_EN[m["ew_wd"].lower()], None, prefer)
    return day, day + timedelta(days=1), "day"


def _en_relative(m: re.Match[str], c: Context) -> Dates | None:
    today = c.today
    rel, unit = m["er_r"].lower(), m["er_u"].lower()
    offset = REL_OFFSET[rel]
    if unit == "weekend":
        return _weekend(today, rel if rel != "coming" else "this")
    if unit == "week":
        monday = _monday(today) + timedelta(days=7 * offset)
        return monday, monday + timedelta(days=7), "week"
    if unit == "month":
        first = _add_months(today.replace(day=1), offset)
        return first, _add_months(first, 1), "month"
    return date(today.year + offset, 1, 1), date(today.year + offset + 1, 1, 1), "year"


def _en_day(m: re.Match[str], c: Context) -> Dates | None:
    today = c.today
    day = today + timedelta(days=EN_DAY[" ".join(m["eday_w"].lower().split())])
    return day, day + timedelta(days=1), "day"


def _en_count(text: str) -> int:
    return int(text) if text.isdigit() else NUM_EN[" ".join(text.lower().split())]


def _en_ago(m: re.Match[str], c: Context) -> Dates | None:
    today = c.today
    sign = -1 if m["ea_dir"].lower() == "ago" else 1
    return _shift(today, sign * _en_count(m["ea_n"]), m["ea_u"].lower())


def _en_in(m: re.Match[str], c: Context) -> Dates | None:
    today = c.today
    return _shift(today, _en_count(m["ei_n"]), m["ei_u"].lower())


def _en_year(m: re.Match[str], c: Context) -> Dates | None:
    year = int(m["ey_y"])
    return date(year, 1, 1), date(year + 1, 1, 1), "year"


DATE_HANDLERS: dict[str, Callable[[re.Match[str], Context], Dates | None]] = {
    "iso": _iso,
    "zd": _zh_date,
    "zy": _zh_year,
    "zyp": _zh_year_part,
    "zm": _zh_month,
    "zmp": _zh_month_part,
    "zw": _zh_weekday,
    "zwe": _zh_weekend,
    "zk": _zh_week,
    "zday": _zh_day,
    "zr": _zh_relative,
    "emd": _en_month_day,
    "edm": _en_month_day,
    "emy": _en_month_year,
    "ee": _en_edge,
    "erw": _en_rel_weekday,
    "ew": _en_weekday,
    "er": _en_relative,
    "eday": _en_day,
    "ea": _en_ago,
    "ei": _en_in,
    "ey": _en_year,
}
_PM = ("下午", "傍晚", "晚上", "夜里")


def zh_clock(m: re.Match[str], chinese: bool) -> ClockTime | None:
    """The clock of a Chinese time match; ``chinese``: whether the text has CJK characters."""
    hour = cn_number(m["zt_h"])
    pre = m["zt_pre"]
    if hour is None:
        return None
    if not pre and "点" not in m.group(0) and not chinese:
        return None  # "10:30" in English needs "at" (see en_clock): a score is not a time
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


def en_clock(m: re.Match[str], pre: str) -> ClockTime | None:
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
