from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hlmem.gateway import answer_for, parse_extraction
from hlmem.lang import default_lexicon
from hlmem.messages import ClaimDraft, Role, WindowPiece, WindowText
from hlmem.rules import NAME, RulesExtractor, extract

AUGUST = datetime(2026, 8, 12, 9, 0, tzinfo=UTC)  # a Wednesday
MARCH = datetime(2026, 3, 10, 9, 0, tzinfo=UTC)


def piece(
    text: str,
    role: Role = Role.USER,
    *,
    event_id: str = "e",
    at: datetime = AUGUST,
    start_char: int = 0,
) -> WindowPiece:
    return WindowPiece(
        event_id=event_id,
        chunk_no=0,
        chunk_count=1,
        start_char=start_char,
        end_char=start_char + len(text),
        role=role,
        text=text,
        occurred_at=at,
    )


def window(*pieces: WindowPiece) -> WindowText:
    return WindowText(window_id="w", namespace="n", session_id="s", pieces=pieces)


def drafts(text: str, role: Role = Role.USER, *, at: datetime = AUGUST) -> list[ClaimDraft]:
    return extract(window(piece(text, role, at=at)))


def triples(text: str, *, at: datetime = AUGUST) -> list[tuple[str, str, int]]:
    return [(d.predicate, d.value, d.polarity) for d in drafts(text, at=at)]


def only(text: str, *, at: datetime = AUGUST) -> ClaimDraft:
    found = drafts(text, at=at)
    assert len(found) == 1, [(d.predicate, d.value) for d in found]
    return found[0]


def values(text: str, role: Role = Role.USER) -> list[str]:
    return [d.value for d in drafts(text, role, at=datetime(2026, 1, 1, tzinfo=UTC))]


# --- explicit requests to remember (rules-v1 behaviour, kept) -------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("记住：我的猫叫小白", ["我的猫叫小白"]),
        ("好的。记住一下，明天开会", ["明天开会"]),
        ("麻烦记住我住在杭州", ["我住在杭州"]),
        ("Oh, and remember that the prod DB is db-prod-2. Thanks!", ["the prod DB is db-prod-2"]),
        ("Can you remember that I like tea?", ["I like tea"]),
        ("ok. remember: deploy on friday", ["deploy on friday"]),
    ],
)
def test_requests_to_remember_become_claims(text: str, expected: list[str]) -> None:
    assert values(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "我记住了，谢谢",
        "nothing to remember here, just chatting",
        "I can't remember the name",
        "do you remember me?",
        "Remember when we went hiking last year?",  # recalling together, not a request
        "Remember Jon, just do it!",
        "Remember that epic block in Game 7?",
    ],
)
def test_the_word_alone_is_not_a_request(text: str) -> None:
    assert values(text) == []


def test_only_the_users_own_words_count() -> None:
    assert values("Remember that I can only see this chat.", Role.ASSISTANT) == []
    assert values("记住：这是工具输出", Role.TOOL) == []


def test_a_memory_request_is_a_note_and_nothing_else() -> None:
    note = only("记住我对花生过敏")
    assert (note.predicate, note.value, note.text, note.language) == (
        "note",
        "我对花生过敏",
        "我对花生过敏",
        "zh",
    )
    assert (note.importance, note.confidence) == (0.7, 0.9)


# --- the stories of DESIGN.md §8 ------------------------------------------------------------------


def test_story_one_dark_then_temporarily_light_mode_in_chinese() -> None:
    dark = only("我主要用深色模式")
    assert (dark.subject, dark.predicate, dark.value, dark.polarity) == (
        "user",
        "ui_theme",
        "深色模式",
        1,
    )
    assert (dark.text, dark.language, dark.scope, dark.qualifiers) == (
        "用户偏好深色模式",
        "zh",
        "long_term",
        (),
    )
    light = only("最近眼睛不舒服，暂时换成浅色模式")
    assert (light.predicate, light.value, light.polarity) == ("ui_theme", "浅色模式", 1)
    assert light.qualifiers == ("暂时",) and light.scope == "short_term"
    assert light.evidence[0].quote == "最近眼睛不舒服，暂时换成浅色模式"


def test_story_one_in_english() -> None:
    dark = only("I mostly use dark mode")
    assert (dark.predicate, dark.value, dark.text) == (
        "ui_theme",
        "dark mode",
        "User prefers dark mode",
    )
    light = only("my eyes hurt lately, switching to light mode temporarily")
    assert (light.predicate, light.value) == ("ui_theme", "light mode")
    assert light.qualifiers == ("temporarily",) and light.scope == "short_term"
    assert light.language == "en"


def test_story_two_hangzhou_then_beijing_since_may() -> None:
    hangzhou = only("我在杭州工作", at=MARCH)
    assert (hangzhou.predicate, hangzhou.value, hangzhou.valid_from) == ("location", "杭州", None)
    beijing = only("其实5月就搬去北京了", at=AUGUST)
    assert (beijing.predicate, beijing.value) == ("location", "北京")
    assert beijing.valid_from == datetime(2026, 5, 1, tzinfo=UTC)
    assert beijing.confidence > hangzhou.confidence  # 其实: a correction, said on purpose
    assert not default_lexicon().is_multi_valued(beijing.predicate)


def test_story_two_in_english() -> None:
    assert triples("I work in Hangzhou", at=MARCH) == [("location", "Hangzhou", 1)]
    moved = only("actually I moved to Beijing in May")
    assert (moved.predicate, moved.value) == ("location", "Beijing")
    assert moved.valid_from == datetime(2026, 5, 1, tzinfo=UTC)
    assert only("I work at Acme").predicate == "employer"
    assert only("我在阿里巴巴工作").value == "阿里巴巴"


def test_story_three_versions_and_negations_stay_apart() -> None:
    assert triples("我不喝咖啡了") == [("drinks", "咖啡", -1)]
    assert triples("我喝咖啡") == [("drinks", "咖啡", 1)]
    assert triples("I don't like cilantro") == [("likes", "cilantro", -1)]
    assert triples("I like cilantro") == [("likes", "cilantro", 1)]


# --- rule families ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("我喜欢猫", [("likes", "猫", 1)]),
        ("我很喜欢爬山。", [("likes", "爬山", 1)]),
        ("我不喜欢下雨天", [("likes", "下雨天", -1)]),
        ("我讨厌香菜", [("likes", "香菜", -1)]),
        ("我更喜欢茶而不是咖啡", [("prefers", "茶", 1)]),
        ("我偏好简洁的回答", [("prefers", "简洁的回答", 1)]),
        ("我最喜欢的颜色是蓝色", [("favorite_color", "蓝色", 1)]),
        ("我不喜欢深色模式", [("ui_theme", "深色模式", -1)]),
        ("以后不要再用表情符号了", [("prefers", "用表情符号", -1)]),
        ("I love sushi", [("likes", "sushi", 1)]),
        ("I really enjoy playing tennis on weekends.", [("likes", "playing tennis", 1)]),
        ("I hate waiting in lines", [("likes", "waiting in lines", -1)]),
        ("I'm not a fan of horror movies", [("likes", "horror movies", -1)]),
        ("I'm a big fan of jazz", [("likes", "jazz", 1)]),
        ("I prefer tea over coffee", [("prefers", "tea", 1)]),
        ("I prefer dark mode.", [("ui_theme", "dark mode", 1)]),
        ("my favorite color is blue", [("favorite_color", "blue", 1)]),
        ("Don't call me sir again.", [("prefers", "call me sir", -1)]),
        ("From now on, please keep answers short.", [("prefers", "keep answers short", 1)]),
    ],
)
def test_preferences_and_dislikes(text: str, expected: list[tuple[str, str, int]]) -> None:
    assert triples(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("我每天早上喝咖啡", [("drinks", "咖啡", 1)]),
        ("我已经不抽烟了", [("smokes", "烟", -1)]),
        ("我从不吃香菜", [("eats", "香菜", -1)]),
        ("我吃素", [("diet", "素食", 1)]),
        ("我用Mac", [("uses", "Mac", 1)]),
        ("我用的是Windows电脑", [("uses", "Windows电脑", 1)]),
        ("我用VS Code写代码", [("uses", "VS Code", 1)]),
        ("我用的手机是华为Mate60。", [("uses", "华为Mate60", 1)]),
        ("我主要用暗色模式。", [("ui_theme", "深色模式", 1)]),
        ("我养了两只猫", [("pets", "猫", 1)]),
        ("我有一只狗叫旺财", [("pets", "狗（旺财）", 1)]),
        ("I don't drink coffee anymore", [("drinks", "coffee", -1)]),
        ("I no longer eat meat.", [("eats", "meat", -1)]),
        ("I usually drink green tea.", [("drinks", "green tea", 1)]),
        ("I use Vim for everything.", [("uses", "Vim", 1)]),
        ("I use a MacBook Pro.", [("uses", "MacBook Pro", 1)]),
        ("I have a dog named Max.", [("pets", "dog (Max)", 1)]),
    ],
)
def test_habits_come_from_lexicon_verbs_and_negation_is_polarity(
    text: str, expected: list[tuple[str, str, int]]
) -> None:
    assert triples(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "我想喝咖啡",  # a wish
        "我在喝咖啡",  # right now
        "我喝了一杯咖啡",  # it happened
        "我吃饭了",
        "我用一下你的电脑",
        "I'm drinking coffee right now.",
        "Today I read an article about space.",
        "Taking notes on what I read often helps me.",
    ],
)
def test_one_off_actions_are_not_habits(text: str) -> None:
    assert triples(text) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("我叫张三", [("name", "张三", 1)]),
        ("叫我小王就行", [("name", "小王", 1)]),
        ("My name is Bob.", [("name", "Bob", 1)]),
        ("Hi, I'm Emma.", [("name", "Emma", 1)]),
        (
            "我叫李雷，是一名产品经理，在腾讯工作",
            [("name", "李雷", 1), ("employer", "腾讯", 1), ("occupation", "产品经理", 1)],
        ),
        (
            "我叫张三，在字节跳动上班，住在海淀区",
            [("name", "张三", 1), ("employer", "字节跳动", 1), ("location", "海淀区", 1)],
        ),
        (
            "My name's Alice and I work for Microsoft as a data scientist.",
            [
                ("name", "Alice", 1),
                ("occupation", "data scientist", 1),
                ("employer", "Microsoft", 1),
            ],
        ),
        ("我在支付团队", [("team", "支付团队", 1)]),
        ("I'm on the platform team", [("team", "platform team", 1)]),
        ("我是一名程序员", [("occupation", "程序员", 1)]),
        ("我是阿里的工程师", [("occupation", "工程师", 1), ("employer", "阿里", 1)]),
        (
            "I'm a software engineer at Google",
            [("occupation", "software engineer", 1), ("employer", "Google", 1)],
        ),
        ("I work in finance.", [("industry", "finance", 1)]),
        ("我在浙江大学读书", [("school", "浙江大学", 1)]),
        ("我住在北京", [("location", "北京", 1)]),
        ("我住在紫荆花园这个小区。", [("home", "紫荆花园小区", 1)]),
        ("I live in New York City.", [("location", "New York", 1)]),
        ("I'm based in Berlin.", [("location", "Berlin", 1)]),
        ("我是北京人", [("hometown", "北京", 1)]),
        ("我老家在湖南", [("hometown", "湖南", 1)]),
        ("I grew up in Shanghai.", [("hometown", "Shanghai", 1)]),
        ("I'm from Toronto originally", [("hometown", "Toronto", 1)]),
        ("我今年二十八岁", [("age", "28", 1)]),
        ("I'm 30 years old", [("age", "30", 1)]),
        ("我的生日是5月3日", [("birthday", "5月3日", 1)]),
        ("我的邮箱是 alice@example.com", [("email", "alice@example.com", 1)]),
        ("my phone number is 555-123-4567", [("phone", "555-123-4567", 1)]),
        ("我的手机是小米12", [("uses", "小米12", 1)]),  # the phone itself, not its number
        ("我是素食主义者", [("diet", "素食", 1)]),
        ("I'm vegetarian.", [("diet", "vegetarian", 1)]),
        ("我对花生过敏", [("allergy", "花生", 1)]),
        ("I'm allergic to peanuts.", [("allergy", "peanuts", 1)]),
        ("我会说日语", [("speaks", "日语", 1)]),
        ("I'm fluent in Spanish.", [("speaks", "Spanish", 1)]),
        ("我不会游泳", [("skill", "游泳", -1)]),
        ("I can play the guitar.", [("skill", "play guitar", 1)]),
        ("请用英文回答", [("reply_language", "英文", 1)]),
        ("以后别用英文回复我", [("reply_language", "英文", -1)]),
        ("Please reply in English from now on.", [("reply_language", "English", 1)]),
    ],
)
def test_identity_work_home_and_personal_facts(
    text: str, expected: list[tuple[str, str, int]]
) -> None:
    assert triples(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "I'm a bit tired.",
        "I work remotely.",
        "我在考虑工作上的问题",
        "我会尽快处理",
        "I'm an engineer at a startup and I love it",  # the job counts, "a startup" does not
    ],
)
def test_vague_or_wrong_objects_are_dropped(text: str) -> None:
    assert all(d.predicate not in ("employer", "skill", "name") for d in drafts(text))


@pytest.mark.parametrize(
    ("text", "predicate", "value", "valid_from"),
    [
        ("我搬到上海了", "location", "上海", None),
        ("我下个月搬去深圳", "location", "深圳", datetime(2026, 9, 1, tzinfo=UTC)),
        ("I moved to London last year.", "location", "London", datetime(2025, 1, 1, tzinfo=UTC)),
        (
            "I'm moving to Berlin next month.",
            "location",
            "Berlin",
            datetime(2026, 9, 1, tzinfo=UTC),
        ),
        ("我被调到了市场部", "team", "市场部", None),
        ("我刚入职字节跳动", "employer", "字节跳动", None),
        ("我跳槽到了阿里", "employer", "阿里", None),
        ("I just joined Stripe.", "employer", "Stripe", None),
        (
            "I started working at Google in March.",
            "employer",
            "Google",
            datetime(2026, 3, 1, tzinfo=UTC),
        ),
        ("我上个月开始在美团上班", "employer", "美团", datetime(2026, 7, 1, tzinfo=UTC)),
        ("我把编辑器换成了VS Code", "uses", "VS Code", None),
        ("把主题换成深色", "ui_theme", "深色模式", None),
        ("I switched back to dark mode.", "ui_theme", "dark mode", None),
        ("I switched to Vim", "uses", "Vim", None),
        (
            "I stopped drinking coffee last month",
            "drinks",
            "coffee",
            datetime(2026, 7, 1, tzinfo=UTC),
        ),
        ("我从上个月开始不喝咖啡了", "drinks", "咖啡", datetime(2026, 7, 1, tzinfo=UTC)),
    ],
)
def test_moves_and_changes_with_their_time(
    text: str, predicate: str, value: str, valid_from: datetime | None
) -> None:
    claim = only(text)
    assert (claim.predicate, claim.value, claim.valid_from) == (predicate, value, valid_from)


def test_temporarily_is_a_qualifier_in_the_conversations_language() -> None:
    claim = only("I'm using the light theme for now.")
    assert (claim.predicate, claim.value, claim.qualifiers, claim.scope) == (
        "ui_theme",
        "light mode",
        ("temporarily",),
        "short_term",
    )
    claim = only("我这段时间临时用浅色模式")
    assert (claim.value, claim.qualifiers, claim.scope) == ("浅色模式", ("暂时",), "short_term")


@pytest.mark.parametrize(
    ("text", "old_slot_text", "predicate", "value"),
    [
        ("不是杭州，是北京", "我在杭州工作", "location", "北京"),
        ("我不是在杭州，而是在北京", "", "location", "北京"),
        ("不是张三，是李四", "我叫张三", "name", "李四"),
        ("It's Beijing, not Hangzhou.", "", "location", "Beijing"),
        ("Actually my name is not Bob but Robert.", "", "name", "Robert"),
        ("其实我不在杭州工作了，我在北京", "", "location", "北京"),
        ("更正一下，我的邮箱是bob@new.com", "", "email", "bob@new.com"),
    ],
)
def test_corrections_give_the_corrected_value_on_the_same_slot(
    text: str, old_slot_text: str, predicate: str, value: str
) -> None:
    pieces = [piece(old_slot_text, event_id="e0")] if old_slot_text else []
    found = extract(window(*pieces, piece(text, event_id="e1")))
    corrected = [d for d in found if d.evidence[0].event_id == "e1"]
    assert [(d.predicate, d.value, d.polarity) for d in corrected] == [(predicate, value, 1)]


def test_a_correction_without_a_known_slot_says_nothing() -> None:
    assert triples("不是张三，是李四") == []
    assert triples("问题不是性能，而是内存") == []


@pytest.mark.parametrize(
    ("text", "value", "valid_from", "valid_to", "qualifiers"),
    [
        (
            "明天开会",
            "2026-08-13 开会",
            datetime(2026, 8, 13, tzinfo=UTC),
            datetime(2026, 8, 14, tzinfo=UTC),
            (),
        ),
        (
            "下周三之前交报告",
            "2026-08-19 交报告",
            datetime(2026, 8, 19, tzinfo=UTC),
            datetime(2026, 8, 20, tzinfo=UTC),
            ("截止",),
        ),
        (
            "我下周三要交报告",
            "2026-08-19 交报告",
            datetime(2026, 8, 19, tzinfo=UTC),
            datetime(2026, 8, 20, tzinfo=UTC),
            (),
        ),
        (
            "明天下午三点和客户开会",
            "2026-08-13 15:00 和客户开会",
            datetime(2026, 8, 13, 15, tzinfo=UTC),
            datetime(2026, 8, 14, tzinfo=UTC),
            (),
        ),
        (
            "我下个月要去日本旅游",
            "2026-09 去日本旅游",
            datetime(2026, 9, 1, tzinfo=UTC),
            datetime(2026, 10, 1, tzinfo=UTC),
            (),
        ),
        (
            "周五之前把PPT做完",
            "2026-08-14 把PPT做完",
            datetime(2026, 8, 14, tzinfo=UTC),
            datetime(2026, 8, 15, tzinfo=UTC),
            ("截止",),
        ),
        (
            "发布会的时间是下周一上午九点。",
            "2026-08-17 09:00 发布会",
            datetime(2026, 8, 17, 9, tzinfo=UTC),
            datetime(2026, 8, 18, tzinfo=UTC),
            (),
        ),
        (
            "I have a dentist appointment tomorrow at 3pm",
            "2026-08-13 15:00 dentist appointment",
            datetime(2026, 8, 13, 15, tzinfo=UTC),
            datetime(2026, 8, 14, tzinfo=UTC),
            (),
        ),
        (
            "I need to submit the report by next Wednesday",
            "2026-08-19 submit the report",
            datetime(2026, 8, 19, tzinfo=UTC),
            datetime(2026, 8, 20, tzinfo=UTC),
            ("deadline",),
        ),
        (
            "We're meeting the client on Friday",
            "2026-08-14 meeting the client",
            datetime(2026, 8, 14, tzinfo=UTC),
            datetime(2026, 8, 15, tzinfo=UTC),
            (),
        ),
        (
            "The report is due Friday.",
            "2026-08-14 report due",
            datetime(2026, 8, 14, tzinfo=UTC),
            datetime(2026, 8, 15, tzinfo=UTC),
            ("deadline",),
        ),
        (
            "I'm flying to Tokyo next week.",
            "2026-W34 flying to Tokyo",
            datetime(2026, 8, 17, tzinfo=UTC),
            datetime(2026, 8, 24, tzinfo=UTC),
            (),
        ),
    ],
)
def test_plans_and_deadlines_with_resolved_dates(
    text: str,
    value: str,
    valid_from: datetime,
    valid_to: datetime,
    qualifiers: tuple[str, ...],
) -> None:
    plan = only(text)
    assert (plan.predicate, plan.value, plan.scope) == ("plan", value, "plan")
    assert (plan.valid_from, plan.valid_to, plan.qualifiers) == (valid_from, valid_to, qualifiers)


def test_a_bare_month_in_a_plan_made_in_march_is_the_coming_may() -> None:
    plan = only("5月要去上海出差", at=MARCH)
    assert plan.value == "2026-05 去上海出差"
    assert plan.valid_from == datetime(2026, 5, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    "text",
    [
        "昨天我去了北京",
        "今天我参加了一场音乐会",
        "今天我想和你聊聊我的旅行计划",
        "明天天气不错",
        "明天的会取消了",
        "每周一开周会",
        "I went to Paris last Friday.",
        "I'm feeling a bit down today.",
        "We have a team meeting every Monday.",
        "Today I want to talk about my writing.",
        "明天见",
    ],
)
def test_past_events_routines_and_chat_are_not_plans(text: str) -> None:
    assert [d for d in drafts(text) if d.predicate == "plan"] == []


# --- what is not a claim ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "你喜欢什么？",
        "你喜欢什么",
        "你在哪里工作",
        "do you like coffee?",
        "Do you like coffee",
        "Are you based in Berlin?",
        "我是不是应该换成浅色模式",
        "如果明天下雨我就不去了",
        "要是我住在上海就好了",
        "If I lived in Paris I would walk everywhere.",
        "I would prefer tea.",
        "Maybe I'll move to Berlin.",
        "他说他喜欢猫",
        "我朋友在阿里工作",
        "我妈住在上海",
        "我女儿喜欢画画",
        "他住在北京",
        "My wife likes cats.",
        "My son plays soccer.",
        "She said she works at Google.",
        "I think he likes jazz.",
        "好的",
        "谢谢",
        "好的，谢谢",
        "ok",
        "ok thanks",
        "哈哈哈",
        "嗯嗯",
        "Sounds good!",
        "记住了",
        "",
    ],
)
def test_questions_hypotheticals_others_and_small_talk_give_nothing(text: str) -> None:
    assert drafts(text) == [] if text else extract(window()) == []


@pytest.mark.parametrize("role", [Role.ASSISTANT, Role.SYSTEM, Role.TOOL])
def test_other_roles_never_give_claims(role: Role) -> None:
    for text in ("我主要用深色模式", "I work at Acme", "明天开会", "我叫张三"):
        assert drafts(text, role) == []


# --- evidence, idempotence, the window ----------------------------------------------------------


SENTENCES = [
    "我主要用深色模式",
    "最近眼睛不舒服，暂时换成浅色模式",
    "其实5月就搬去北京了",
    "I mostly use dark mode. My name is Bob.",
    "Hi! I'm a software engineer at Google, and I live in Seattle.",
    "  我叫张三，在字节跳动上班。\n我不喝咖啡了！明天下午3点开会  ",
    "The report is due Friday. I'm allergic to peanuts.",
]


@pytest.mark.parametrize("text", SENTENCES)
def test_evidence_offsets_name_the_quote_in_the_events_content(text: str) -> None:
    found = drafts(text)
    assert found
    for draft in found:
        for span in draft.evidence:
            assert text[span.start_char : span.end_char] == span.quote
            assert span.quote == span.quote.strip() and span.quote


def test_offsets_count_from_the_events_content_for_a_later_chunk() -> None:
    content = "x" * 1000 + "我喜欢猫。I work at Acme."
    chunk = WindowPiece(
        event_id="e",
        chunk_no=1,
        chunk_count=2,
        start_char=1000,
        end_char=len(content),
        role=Role.USER,
        text=content[1000:],
        occurred_at=AUGUST,
    )
    found = extract(window(chunk))
    assert [(d.predicate, d.value) for d in found] == [("likes", "猫"), ("employer", "Acme")]
    for draft in found:
        span = draft.evidence[0]
        assert content[span.start_char : span.end_char] == span.quote
    assert found[0].evidence[0].quote == "我喜欢猫。"


def test_a_long_sentence_quotes_only_its_clause() -> None:
    busy = "我平时工作很忙，经常加班到很晚，周末也要处理各种各样的事情，"
    text = busy * 5 + "不过我最喜欢的颜色是蓝色"
    claim = only(text)
    assert claim.predicate == "favorite_color"
    assert claim.evidence[0].quote == "不过我最喜欢的颜色是蓝色"


def test_extraction_is_deterministic_and_the_default_is_the_configured_default() -> None:
    win = window(*(piece(t, event_id=f"e{i}") for i, t in enumerate(SENTENCES)))
    first = extract(win)
    assert first == extract(win)
    assert first == RulesExtractor(default_lexicon()).extract(win)
    assert NAME == "rules-v2"


def test_one_claim_per_slot_per_sentence() -> None:
    found = drafts("我喜欢猫，也喜欢狗")
    assert [(d.predicate, d.value) for d in found] == [("likes", "猫")]
    found = drafts("我喜欢猫。我也喜欢狗。")
    assert [(d.predicate, d.value) for d in found] == [("likes", "猫"), ("likes", "狗")]


def test_the_same_fact_twice_in_a_window_is_one_draft_with_both_evidence() -> None:
    win = window(
        piece("我喜欢猫", event_id="a"),
        piece("嗯", Role.ASSISTANT, event_id="b"),
        piece("对，我很喜欢猫！", event_id="c"),
    )
    found = extract(win)
    assert len(found) == 1
    assert [(e.event_id, e.quote) for e in found[0].evidence] == [
        ("a", "我喜欢猫"),
        ("c", "对，我很喜欢猫！"),
    ]


def test_the_same_value_said_differently_is_one_value() -> None:
    said = drafts("我主要用暗色模式。我喜欢夜间模式。我用深色主题")
    assert {d.value for d in said} == {"深色模式"}
    assert only("I live in NYC.").value == "New York"
    assert only("我住在北京市").value == "北京"


def test_language_follows_the_claim_text() -> None:
    assert only("我喜欢猫").language == "zh"
    assert only("I like cats").language == "en"


def test_the_rules_answer_round_trips_through_the_extraction_prompt() -> None:
    win = window(
        piece("我主要用深色模式。其实5月就搬去北京了", event_id="e1"),
        piece("好的", Role.ASSISTANT, event_id="e2"),
        piece("I'm allergic to peanuts. The report is due Friday.", event_id="e3"),
    )
    found = extract(win)
    assert len(found) == 4
    assert parse_extraction(answer_for(found, win).model_dump_json(), win) == found


_FRAGMENTS = [
    "我",
    "喜欢",
    "不",
    "喝",
    "咖啡",
    "了",
    "在",
    "杭州",
    "工作",
    "明天",
    "开会",
    "，",
    "。",
    "？",
    "其实",
    "5月",
    "搬去",
    "北京",
    "暂时",
    "换成",
    "浅色模式",
    "I ",
    "like ",
    "don't ",
    "work ",
    "at ",
    "Acme",
    "moved ",
    "to ",
    "Beijing ",
    "in May",
    ". ",
    "? ",
    "my name is ",
    "Bob",
    "remember ",
    "记住",
    "叫",
    "不是",
    "而是",
    "tomorrow ",
    "我的",
    "是",
    "的",
    "\n",
    " ",
    "’",
]


@given(st.lists(st.sampled_from(_FRAGMENTS), max_size=16), st.integers(0, 50))
@settings(max_examples=300, deadline=None)
def test_any_text_gives_valid_drafts_with_exact_evidence(parts: list[str], offset: int) -> None:
    content = "x" * offset + "".join(parts)
    if not content[offset:]:
        return
    chunk = WindowPiece(
        event_id="e",
        chunk_no=0,
        chunk_count=1,
        start_char=offset,
        end_char=len(content),
        role=Role.USER,
        text=content[offset:],
        occurred_at=AUGUST,
    )
    win = window(chunk)
    found = extract(win)
    assert found == extract(win)
    for draft in found:
        assert draft.value.strip() and draft.text
        for span in draft.evidence:
            assert content[span.start_char : span.end_char] == span.quote
