"""The words and patterns of time expressions: what :mod:`hlmem.lang.timeexpr.parse` looks for in a
text.

Numerals, month and weekday names, the words that count from today ("下", "last", "明天"), and
one precompiled regex per kind of expression (``KINDS``, in priority order), each with the gate
words that must occur in a text before it runs. Nothing here reads a match:
:mod:`hlmem.lang.timeexpr.calendar` turns a match into days or a time of day, and
:mod:`hlmem.lang.timeexpr.parse` scans a text with these patterns. The underscored names are shared
with those two modules only;
:func:`trie_pattern` and :func:`cn_number` are public and re-exported by timeparse.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

# --- the combined pattern -------------------------------------------------------------------

_CN_DIGITS = {
    "零": 0,
    "〇": 0,
    "一": 1,
    "二": 2,
    "两": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
}
_N = r"(?:\d{1,2}|[一二两三四五六七八九十]{1,3})"
_REL = r"(?:下下|上上|下|上|这|本|当)"
MONTHS_EN = {
    "january": 1,
    "jan": 1,
    "february": 2,
    "feb": 2,
    "march": 3,
    "mar": 3,
    "april": 4,
    "apr": 4,
    "may": 5,
    "june": 6,
    "jun": 6,
    "july": 7,
    "jul": 7,
    "august": 8,
    "aug": 8,
    "september": 9,
    "sept": 9,
    "sep": 9,
    "october": 10,
    "oct": 10,
    "november": 11,
    "nov": 11,
    "december": 12,
    "dec": 12,
}
_MON = "(?:" + "|".join(sorted(MONTHS_EN, key=len, reverse=True)) + ")"
WEEKDAYS_EN = {d.lower(): i for i, d in enumerate(calendar.day_name)}
_WD = "(?:" + "|".join(WEEKDAYS_EN) + ")"
NUM_EN = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "a couple of": 2,
    "couple of": 2,
    "a few": 3,
    "few": 3,
}
_NEN = (
    r"(?:\d{1,3}|a\s+couple\s+of|couple\s+of|a\s+few|few|an?|one|two|three|four|five|six"
    r"|seven|eight|nine|ten)"
)

# One regex per kind of expression, in priority order: where two start at the same place, the
# earlier kind wins. Each runs only when its gate words occur in the text (a substring test is
# far cheaper than a regex scan), and English ones run on an ASCII-lowercased copy and begin
# with their own keyword, so the regex engine can skip ahead; a preposition before them ("on",
# "by", "the end of") is taken by a backward look (``Kind.before``).
DIGIT = "0123456789"
_MONTH_GATE = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_PREP_BEFORE = r"(?:\b(?:on|by|until|till|before|from|since|after)\s+)"


@dataclass(frozen=True, slots=True)
class Kind:
    name: str
    pattern: re.Pattern[str]
    gate: tuple[str, ...]  # any of these in the (lowercased) text; "0123456789": any digit
    english: bool = False
    before: re.Pattern[str] | None = None  # what may precede it, matched backwards


def _kind(
    name: str,
    pattern: str,
    gate: tuple[str, ...],
    before: str | None = None,
    *,
    english: bool = False,
) -> Kind:
    back = re.compile(f"(?:{before})$") if before else None
    return Kind(name, re.compile(pattern), gate, english, back)


_WEEK_ZH = ("周", "星期", "礼拜")
KINDS = (
    _kind(
        "iso",
        r"(?<![\d.])(?P<iso_y>\d{4})[-/.](?P<iso_m>\d\d?)[-/.](?P<iso_d>\d\d?)(?!\d)",
        (DIGIT,),
    ),
    _kind(
        "zd",
        rf"(?:(?P<zd_y>\d{{4}}|[今去明前后])年)?(?<![\d一二两三四五六七八九十个第每])"
        rf"(?P<zd_m>{_N})月份?(?:(?P<zd_d>{_N})[日号])?(?P<zd_p>上旬|中旬|下旬|初|中|底|末)?",
        ("月",),
    ),
    _kind(
        "zy",
        r"(?<!\d)(?P<zy_y>\d{4}|[今去明前后])年(?P<zy_p>年底|年末|年初|年中|底|末|初)?"
        r"(?![\d一二两三四五六七八九十])",
        ("年",),
    ),
    _kind("zyp", r"(?<![今去明前后\d])(?P<zyp_p>年底|年末|年初|年中)", ("年",)),
    _kind(
        "zm",
        rf"(?<![早晚马以之])(?P<zm_r>{_REL})个?月(?P<zm_p>上旬|中旬|下旬|初|中|底|末)?",
        ("月",),
    ),
    _kind(
        "zmp", r"(?<![\d个上下这本当一二两三四五六七八九十])(?P<zmp_p>月底|月末|月初|月中)", ("月",)
    ),
    _kind(
        "zw",
        rf"(?<![每早晚马以之])(?P<zw_r>{_REL})?个?(?:周|星期|礼拜)"
        r"(?P<zw_d>[一二三四五六日天1-7])",
        _WEEK_ZH,
    ),
    _kind("zwe", rf"(?<![每早晚马以之])(?P<zwe_r>{_REL})?个?周末", ("周末",)),
    _kind("zk", rf"(?<![每早晚马以之])(?P<zk_r>{_REL})个?(?:周|星期|礼拜)", _WEEK_ZH),
    _kind(
        "zday",
        r"(?P<zday_w>大后天|大前天|今天|今日|今儿|明天|明日|明儿|后天|昨天|昨日|昨儿|前天"
        r"|今早|今晚|明早|明晚|昨晚)(?:早上|上午|中午|下午|傍晚|晚上|夜里)?"
        r"(?![\d一二两三四五六七八九十])",
        ("天", "日", "儿", "早", "晚"),
    ),
    _kind(
        "zr",
        r"(?<!\d)(?P<zr_n>\d{1,3}|[一二两三四五六七八九十]{1,3})个?"
        r"(?P<zr_u>天|周|星期|礼拜|月|年)(?P<zr_dir>以后|之后|后|以前|之前|前)",
        ("后", "前"),
    ),
    _kind(
        "et",
        r"(?P<et_h>\d\d?)(?::(?P<et_min>\d\d))?\s*(?P<et_ap>a\.?m\.?|p\.?m\.?)(?![a-z])"
        r"|(?P<et_h2>\d\d?):(?P<et_min2>\d\d)\b|(?P<et_noon>noon|midnight)\b",
        (DIGIT, "noon", "midnight"),
        r"\bat\s+",
        english=True,
    ),
    _kind(
        "zt",
        r"(?P<zt_pre>凌晨|早上|早晨|清晨|上午|中午|下午|傍晚|晚上|夜里)?"
        r"(?<![\d一二两三四五六七八九十第])(?P<zt_h>\d{1,2}|[一二两三四五六七八九十]{1,3})"
        r"(?:点|[:：](?=\d\d))(?:(?P<zt_half>半)|(?P<zt_q>一刻|三刻)|(?P<zt_min>\d{1,2}|"
        r"[一二三四五六七八九十]{1,3})分?)?(?P<zt_zh>钟|整)?",
        ("点", ":", "："),
    ),
    _kind(
        "emd",
        rf"(?P<emd_mon>{_MON})\.?\s+(?P<emd_d>\d\d?)(?:st|nd|rd|th)?\b"
        r"(?:,?\s+(?P<emd_y>\d{4})\b)?",
        _MONTH_GATE,
        _PREP_BEFORE,
        english=True,
    ),
    _kind(
        "edm",
        rf"(?P<edm_d>\d\d?)(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<edm_mon>{_MON})\b\.?"
        r"(?:,?\s+(?P<edm_y>\d{4})\b)?",
        _MONTH_GATE,
        rf"{_PREP_BEFORE}?(?:\bthe\s+)?",
        english=True,
    ),
    _kind(
        "emy",
        rf"(?P<emy_mon>{_MON})\b(?!\s+\d\d?(?:st|nd|rd|th)?\b(?!\d))"
        r"(?:,?\s+(?P<emy_y>\d{4})\b)?",
        _MONTH_GATE,
        r"\b(?:in|since|by|until|till|from|during|before|after|of|last|next|this|early|late"
        r"|mid|(?:the\s+)?(?:end|beginning|start|middle)\s+of)\s+|\bmid-",
        english=True,
    ),
    _kind(
        "ee",
        r"(?P<ee_p>end|beginning|start|middle)\s+of\s+(?:the\s+)?"
        r"(?P<ee_r>this\s+|next\s+|last\s+)?(?P<ee_u>week|month|year)\b",
        ("end of", "beginning of", "start of", "middle of"),
        r"(?:\b(?:by|before|until|at|in|from)\s+)?(?:\bthe\s+)?",
        english=True,
    ),
    _kind(
        "erw",
        rf"(?P<erw_r>this\s+coming|next|last|this|coming|past)\s+(?P<erw_wd>{_WD})\b",
        ("day",),
        _PREP_BEFORE,
        english=True,
    ),
    _kind("ew", rf"(?P<ew_wd>{_WD})\b", ("day",), _PREP_BEFORE, english=True),
    _kind(
        "er",
        r"(?P<er_r>next|last|this|coming|past)\s+(?P<er_u>weekend|week|month|year)\b",
        ("week", "month", "year"),
        r"(?:\b(?:in|by|until|till|before|from|since|during|for|over)\s+)?(?:\bthe\s+)?",
        english=True,
    ),
    _kind(
        "eday",
        r"(?P<eday_w>the\s+day\s+after\s+tomorrow|the\s+day\s+before\s+yesterday"
        r"|today|tonight|tomorrow|yesterday|this\s+morning|this\s+afternoon|this\s+evening)\b",
        (
            "today",
            "tonight",
            "tomorrow",
            "yesterday",
            "this morning",
            "this afternoon",
            "this evening",
        ),
        english=True,
    ),
    _kind(
        "ea",
        rf"(?P<ea_n>{_NEN})\s+(?P<ea_u>day|week|month|year)s?\s+"
        r"(?P<ea_dir>ago|later|from\s+now)\b",
        ("ago", "later", "from now"),
        english=True,
    ),
    _kind(
        "ei", rf"in\s+(?P<ei_n>{_NEN})\s+(?P<ei_u>day|week|month|year)s?\b", ("in ",), english=True
    ),
    _kind(
        "ey",
        r"(?P<ey_pre>in|since|by|until|during|from|before|after)\s+"
        r"(?P<ey_y>(?:19|20)\d\d)\b",
        (DIGIT,),
        english=True,
    ),
)
CJK = re.compile(r"[\u3400-\u9fff]")
ASCII_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}


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
GATES = re.compile(trie_pattern({g for k in KINDS for g in k.gate if g != DIGIT}) + r"|\d")
WORD = frozenset("abcdefghijklmnopqrstuvwxyz0123456789'")
# Between a day and a time of day that belong together ("明天下午3点", "Friday at 3pm").
JOIN_DAY_TIME = re.compile(r"[\s,，的]*(?:at\s*)?", re.I)
JOIN_TIME_DAY = re.compile(r"[\s,，]*(?:on\s*)?", re.I)


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


# How far a word counts from today (in days, weeks, months or years, by its use), and the
# Chinese weekday names (Monday = 0).
REL_OFFSET = {
    "下下": 2,
    "上上": -2,
    "下": 1,
    "上": -1,
    "这": 0,
    "本": 0,
    "当": 0,
    "next": 1,
    "last": -1,
    "past": -1,
    "this": 0,
    "coming": 1,
}
ZH_YEAR = {"今": 0, "去": -1, "明": 1, "前": -2, "后": 2}
ZH_DAY = {
    "大后天": 3,
    "大前天": -3,
    "今天": 0,
    "今日": 0,
    "今儿": 0,
    "明天": 1,
    "明日": 1,
    "明儿": 1,
    "后天": 2,
    "昨天": -1,
    "昨日": -1,
    "昨儿": -1,
    "前天": -2,
    "今早": 0,
    "今晚": 0,
    "明早": 1,
    "明晚": 1,
    "昨晚": -1,
}
EN_DAY = {
    "the day after tomorrow": 2,
    "the day before yesterday": -2,
    "today": 0,
    "tonight": 0,
    "tomorrow": 1,
    "yesterday": -1,
    "this morning": 0,
    "this afternoon": 0,
    "this evening": 0,
}
ZH_WD = {
    "一": 0,
    "二": 1,
    "三": 2,
    "四": 3,
    "五": 4,
    "六": 5,
    "日": 6,
    "天": 6,
    "1": 0,
    "2": 1,
    "3": 2,
    "4": 3,
    "5": 4,
    "6": 5,
    "7": 6,
}
