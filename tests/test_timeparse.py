from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hlmem.lang.timeexpr import Prefer, cn_number, find_all, resolve

# Wednesday 12 August 2026, 09:00 UTC: every relative expression below resolves against it.
WED = datetime(2026, 8, 12, 9, 0, tzinfo=UTC)
MARCH = datetime(2026, 3, 10, 9, 0, tzinfo=UTC)


def at(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


def span_of(text: str, anchor: datetime = WED, prefer: Prefer | None = None) -> tuple[str, ...]:
    ref = resolve(text, anchor, prefer=prefer)
    assert ref is not None, text
    return (ref.expression, ref.start.isoformat(), ref.end.isoformat(), ref.granularity)


def day(d: date) -> tuple[str, str]:
    start = datetime(d.year, d.month, d.day, tzinfo=UTC)
    return start.isoformat(), (start + timedelta(days=1)).isoformat()


@pytest.mark.parametrize(
    ("text", "expression", "start", "end", "granularity"),
    [
        ("今天开会", "今天", at(2026, 8, 12), at(2026, 8, 13), "day"),
        ("明天开会", "明天", at(2026, 8, 13), at(2026, 8, 14), "day"),
        ("后天出发", "后天", at(2026, 8, 14), at(2026, 8, 15), "day"),
        ("大后天", "大后天", at(2026, 8, 15), at(2026, 8, 16), "day"),
        ("昨天下雨了", "昨天", at(2026, 8, 11), at(2026, 8, 12), "day"),
        ("前天", "前天", at(2026, 8, 10), at(2026, 8, 11), "day"),
        ("今天晚上去看电影", "今天晚上", at(2026, 8, 12), at(2026, 8, 13), "day"),
        ("下周三交", "下周三", at(2026, 8, 19), at(2026, 8, 20), "day"),
        ("下星期一", "下星期一", at(2026, 8, 17), at(2026, 8, 18), "day"),
        ("上周五见过他", "上周五", at(2026, 8, 7), at(2026, 8, 8), "day"),
        ("这周五", "这周五", at(2026, 8, 14), at(2026, 8, 15), "day"),
        ("本周日", "本周日", at(2026, 8, 16), at(2026, 8, 17), "day"),
        ("下下周二", "下下周二", at(2026, 8, 25), at(2026, 8, 26), "day"),
        ("礼拜天", "礼拜天", at(2026, 8, 16), at(2026, 8, 17), "day"),
        ("下周", "下周", at(2026, 8, 17), at(2026, 8, 24), "week"),
        ("周末去爬山", "周末", at(2026, 8, 15), at(2026, 8, 17), "day"),
        ("上个月", "上个月", at(2026, 7, 1), at(2026, 8, 1), "month"),
        ("下个月", "下个月", at(2026, 9, 1), at(2026, 10, 1), "month"),
        ("这个月", "这个月", at(2026, 8, 1), at(2026, 9, 1), "month"),
        ("本月底", "本月底", at(2026, 8, 21), at(2026, 9, 1), "month"),
        ("月初", "月初", at(2026, 8, 1), at(2026, 8, 11), "month"),
        ("下个月中旬", "下个月中旬", at(2026, 9, 11), at(2026, 9, 21), "month"),
        ("5月3日", "5月3日", at(2026, 5, 3), at(2026, 5, 4), "day"),
        ("5月3号", "5月3号", at(2026, 5, 3), at(2026, 5, 4), "day"),
        ("十二月二十五日", "十二月二十五日", at(2026, 12, 25), at(2026, 12, 26), "day"),
        ("2024年5月", "2024年5月", at(2024, 5, 1), at(2024, 6, 1), "month"),
        ("2024年5月3日", "2024年5月3日", at(2024, 5, 3), at(2024, 5, 4), "day"),
        ("去年5月", "去年5月", at(2025, 5, 1), at(2025, 6, 1), "month"),
        ("明年三月初", "明年三月初", at(2027, 3, 1), at(2027, 3, 11), "month"),
        ("去年", "去年", at(2025, 1, 1), at(2026, 1, 1), "year"),
        ("今年", "今年", at(2026, 1, 1), at(2027, 1, 1), "year"),
        ("明年", "明年", at(2027, 1, 1), at(2028, 1, 1), "year"),
        ("2020年", "2020年", at(2020, 1, 1), at(2021, 1, 1), "year"),
        ("年底", "年底", at(2026, 12, 1), at(2027, 1, 1), "month"),
        ("今年年底", "今年年底", at(2026, 12, 1), at(2027, 1, 1), "month"),
        ("明年年初", "明年年初", at(2027, 1, 1), at(2027, 2, 1), "month"),
        ("三天后", "三天后", at(2026, 8, 15), at(2026, 8, 16), "day"),
        ("两周后", "两周后", at(2026, 8, 26), at(2026, 8, 27), "day"),
        ("两个月前", "两个月前", at(2026, 6, 1), at(2026, 7, 1), "month"),
        ("下午3点开会", "下午3点", at(2026, 8, 12, 15), at(2026, 8, 13), "minute"),
        ("明天下午3点", "明天下午3点", at(2026, 8, 13, 15), at(2026, 8, 14), "minute"),
        ("明天上午十点半", "明天上午十点半", at(2026, 8, 13, 10, 30), at(2026, 8, 14), "minute"),
        ("下周一晚上七点", "下周一晚上七点", at(2026, 8, 17, 19), at(2026, 8, 18), "minute"),
        ("5月3日 14:30", "5月3日 14:30", at(2026, 5, 3, 14, 30), at(2026, 5, 4), "minute"),
        ("两点钟", "两点钟", at(2026, 8, 12, 2), at(2026, 8, 13), "minute"),
    ],
)
def test_chinese_expressions(
    text: str, expression: str, start: datetime, end: datetime, granularity: str
) -> None:
    assert span_of(text) == (expression, start.isoformat(), end.isoformat(), granularity)


@pytest.mark.parametrize(
    ("text", "expression", "start", "end", "granularity"),
    [
        ("see you today", "today", at(2026, 8, 12), at(2026, 8, 13), "day"),
        ("tonight", "tonight", at(2026, 8, 12), at(2026, 8, 13), "day"),
        ("Tomorrow I fly", "Tomorrow", at(2026, 8, 13), at(2026, 8, 14), "day"),
        ("yesterday", "yesterday", at(2026, 8, 11), at(2026, 8, 12), "day"),
        (
            "the day after tomorrow",
            "the day after tomorrow",
            at(2026, 8, 14),
            at(2026, 8, 15),
            "day",
        ),
        ("on Friday", "on Friday", at(2026, 8, 14), at(2026, 8, 15), "day"),
        ("by Friday", "by Friday", at(2026, 8, 14), at(2026, 8, 15), "day"),
        ("last Friday", "last Friday", at(2026, 8, 7), at(2026, 8, 8), "day"),
        ("last Tuesday", "last Tuesday", at(2026, 8, 11), at(2026, 8, 12), "day"),
        ("next Monday", "next Monday", at(2026, 8, 17), at(2026, 8, 18), "day"),
        ("this Friday", "this Friday", at(2026, 8, 14), at(2026, 8, 15), "day"),
        ("this coming Wednesday", "this coming Wednesday", at(2026, 8, 19), at(2026, 8, 20), "day"),
        ("in May", "in May", at(2026, 5, 1), at(2026, 6, 1), "month"),
        ("since March", "since March", at(2026, 3, 1), at(2026, 4, 1), "month"),
        ("May 3", "May 3", at(2026, 5, 3), at(2026, 5, 4), "day"),
        ("on May 3rd, 2024", "on May 3rd, 2024", at(2024, 5, 3), at(2024, 5, 4), "day"),
        ("3 May", "3 May", at(2026, 5, 3), at(2026, 5, 4), "day"),
        ("the 3rd of May", "the 3rd of May", at(2026, 5, 3), at(2026, 5, 4), "day"),
        ("May 2024", "May 2024", at(2024, 5, 1), at(2024, 6, 1), "month"),
        ("in early May", "early May", at(2026, 5, 1), at(2026, 5, 11), "month"),
        ("end of June", "end of June", at(2026, 6, 21), at(2026, 7, 1), "month"),
        ("last month", "last month", at(2026, 7, 1), at(2026, 8, 1), "month"),
        ("next week", "next week", at(2026, 8, 17), at(2026, 8, 24), "week"),
        ("next year", "next year", at(2027, 1, 1), at(2028, 1, 1), "year"),
        ("this weekend", "this weekend", at(2026, 8, 15), at(2026, 8, 17), "day"),
        (
            "by the end of the month",
            "by the end of the month",
            at(2026, 8, 21),
            at(2026, 9, 1),
            "month",
        ),
        ("end of next year", "end of next year", at(2027, 12, 1), at(2028, 1, 1), "month"),
        ("3 days ago", "3 days ago", at(2026, 8, 9), at(2026, 8, 10), "day"),
        ("a few weeks ago", "a few weeks ago", at(2026, 7, 22), at(2026, 7, 23), "day"),
        ("in two weeks", "in two weeks", at(2026, 8, 26), at(2026, 8, 27), "day"),
        ("in 2024", "in 2024", at(2024, 1, 1), at(2025, 1, 1), "year"),
        ("2024-05-03", "2024-05-03", at(2024, 5, 3), at(2024, 5, 4), "day"),
        ("2024/5/3", "2024/5/3", at(2024, 5, 3), at(2024, 5, 4), "day"),
        ("at 3pm", "at 3pm", at(2026, 8, 12, 15), at(2026, 8, 13), "minute"),
        (
            "tomorrow at 10:30 am",
            "tomorrow at 10:30 am",
            at(2026, 8, 13, 10, 30),
            at(2026, 8, 14),
            "minute",
        ),
        ("3pm on Friday", "3pm on Friday", at(2026, 8, 14, 15), at(2026, 8, 15), "minute"),
        ("at noon", "at noon", at(2026, 8, 12, 12), at(2026, 8, 13), "minute"),
    ],
)
def test_english_expressions(
    text: str, expression: str, start: datetime, end: datetime, granularity: str
) -> None:
    assert span_of(text) == (expression, start.isoformat(), end.isoformat(), granularity)


@pytest.mark.parametrize(
    ("text", "anchor", "prefer", "start"),
    [
        # The story: said in August, "5月" of a move that happened is this May...
        ("其实5月就搬去北京了", WED, "past", at(2026, 5, 1)),
        # ... and in a plan made in March it is the coming May (the calendar reading agrees).
        ("5月搬家", MARCH, "future", at(2026, 5, 1)),
        ("5月搬家", MARCH, None, at(2026, 5, 1)),
        ("5月搬家", WED, "future", at(2027, 5, 1)),
        ("5月", WED, None, at(2026, 5, 1)),
        ("十月", WED, "past", at(2025, 10, 1)),
        ("8月", WED, "past", at(2026, 8, 1)),  # the current month counts as either
        ("8月", WED, "future", at(2026, 8, 1)),
        ("12月25日", WED, "past", at(2025, 12, 25)),
        ("8月1日", WED, "future", at(2027, 8, 1)),
        ("周五", WED, None, at(2026, 8, 14)),  # a bare weekday: the coming one
        ("周五", WED, "past", at(2026, 8, 7)),
        ("周三", WED, "future", at(2026, 8, 12)),  # today counts as coming
        ("周三", WED, "past", at(2026, 8, 12)),
        ("in May", WED, "past", at(2026, 5, 1)),
        ("in May", WED, "future", at(2027, 5, 1)),
        ("in May", MARCH, "future", at(2026, 5, 1)),
        ("May 3", WED, "future", at(2027, 5, 3)),
        ("on Friday", WED, "past", at(2026, 8, 7)),
        ("last May", WED, None, at(2026, 5, 1)),
        ("next May", WED, None, at(2027, 5, 1)),
        ("last May", MARCH, None, at(2025, 5, 1)),
        ("next March", MARCH, None, at(2027, 3, 1)),
    ],
)
def test_undirected_expressions_follow_prefer(
    text: str, anchor: datetime, prefer: Prefer | None, start: datetime
) -> None:
    ref = resolve(text, anchor, prefer=prefer)
    assert ref is not None and ref.start == start


def test_explicitly_relative_expressions_ignore_prefer() -> None:
    prefers: tuple[Prefer | None, ...] = (None, "past", "future")
    for prefer in prefers:
        for text, start in (
            ("下周三", at(2026, 8, 19)),
            ("去年", at(2025, 1, 1)),
            ("last Friday", at(2026, 8, 7)),
            ("2024-05-03", at(2024, 5, 3)),
        ):
            ref = resolve(text, WED, prefer=prefer)
            assert ref is not None and ref.start == start


@pytest.mark.parametrize(
    "text",
    [
        "",
        "好的，谢谢",
        "ok thanks",
        "I may go later",  # the verb, not the month
        "this may be wrong",
        "we march on",
        "快一点",  # "a little", not one o'clock
        "一点点",
        "每周一开会",  # a routine, not a date
        "on Fridays we play",
        "2月30日",  # no such day
        "13月",
        "3个月的项目",  # a duration
        "version 1.2.3",
        "the score was 10:30",  # a ratio, not a time without "at"
        "schedule",
    ],
)
def test_non_expressions(text: str) -> None:
    assert resolve(text, WED) is None


def test_find_all_returns_every_expression_in_order_with_exact_spans() -> None:
    text = "明天下午3点开会，下周三交报告，5月搬家"
    refs = find_all(text, WED)
    assert [r.expression for r in refs] == ["明天下午3点", "下周三", "5月"]
    for ref in refs:
        assert text[ref.span[0] : ref.span[1]] == ref.expression
    text = "Meeting tomorrow at 3pm, report due next Friday, moving in May."
    assert [r.expression for r in find_all(text, WED)] == [
        "tomorrow at 3pm",
        "next Friday",
        "in May",
    ]


def test_days_are_the_anchors_days_and_results_are_utc() -> None:
    # 23:30 on 12 August in Shanghai is 15:30 UTC; "明天" there is 13 August, local midnight.
    shanghai = timezone(timedelta(hours=8))
    ref = resolve("明天", datetime(2026, 8, 12, 23, 30, tzinfo=shanghai))
    assert ref is not None
    assert ref.start == datetime(2026, 8, 13, tzinfo=shanghai)
    assert ref.start.tzinfo is UTC and ref.start == at(2026, 8, 12, 16)
    ref = resolve("明天", datetime(2026, 8, 12, 15, 30, tzinfo=UTC))
    assert ref is not None and ref.start == at(2026, 8, 13)


def test_a_naive_anchor_is_refused() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        resolve("明天", datetime(2026, 8, 12))


def test_chinese_numbers() -> None:
    assert [cn_number(t) for t in ("3", "十", "十二", "二十", "二十三", "两", "九十九")] == [
        3,
        10,
        12,
        20,
        23,
        2,
        99,
    ]
    assert cn_number("百") is None


_PIECES = [
    "明天",
    "下周三",
    "5月",
    "3日",
    "下午",
    "3点",
    " ",
    "，",
    "我",
    "开会",
    "May",
    "may",
    "on ",
    "Friday",
    "next ",
    "week",
    "2024",
    "-",
    "05",
    "03",
    "at ",
    "3pm",
    "ago",
    "in ",
    "two ",
    "days",
    "年",
    "月",
    "周",
    "点",
    "半",
    "十",
    "上",
    "个",
]


@given(st.lists(st.sampled_from(_PIECES), max_size=12), st.sampled_from([None, "past", "future"]))
@settings(max_examples=300, deadline=None)
def test_spans_always_name_the_expression_and_intervals_are_ordered(
    pieces: list[str], prefer: Prefer | None
) -> None:
    text = "".join(pieces)
    previous_end = 0
    for ref in find_all(text, WED, prefer=prefer):
        assert text[ref.span[0] : ref.span[1]] == ref.expression
        assert ref.span[0] >= previous_end
        previous_end = ref.span[1]
        assert ref.start < ref.end
        assert ref.start.tzinfo is UTC and ref.end.tzinfo is UTC
