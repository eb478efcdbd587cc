"""The deterministic admission rules: source provenance, the turn pre-check, the claim gate.

The fake secrets come from ``test_redaction``, which finds and redacts them.
"""

from __future__ import annotations

import itertools
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_redaction import SECRETS

from hlmem.claims import (
    DEFAULT_UNTRUSTED_ORIGINS,
    DEFAULT_UNTRUSTED_SESSION_KINDS,
    GATE_PASSED,
    MODES,
    Decision,
    SourcePolicy,
    gate,
    source_decision,
    worth_extracting,
)
from hlmem.config import AdmissionConfig
from hlmem.errors import ConfigError
from hlmem.messages import ClaimDraft, EvidenceSpan, OriginClass, SessionKind

# --- source admission -------------------------------------------------------------------------

UNTRUSTED_ORIGINS = {"external_web", "tool", "system"}
UNTRUSTED_KINDS = {"cron", "heartbeat", "subagent"}


def expected_source(mode: str, origin: str, kind: str) -> Decision:
    if mode == "off":
        return Decision("admit", "mode:off")
    if origin in UNTRUSTED_ORIGINS:
        rule = f"origin:{origin}"
    elif kind in UNTRUSTED_KINDS:
        rule = f"session_kind:{kind}"
    else:
        return Decision("admit", "trusted")
    return Decision("block" if mode == "enforce" else "would_block", rule)


@pytest.mark.parametrize(
    ("mode", "origin", "kind"),
    list(itertools.product(MODES, [o.value for o in OriginClass], [k.value for k in SessionKind])),
)
def test_every_origin_kind_and_mode(mode: str, origin: str, kind: str) -> None:
    decision = source_decision(SourcePolicy(mode=mode), origin, kind)  # type: ignore[arg-type]
    assert decision == expected_source(mode, origin, kind)
    assert decision.sends_to_extraction is (decision.decision != "block")


def test_default_policy_matches_the_design() -> None:
    policy = SourcePolicy()
    assert policy.mode == "enforce"
    assert policy.untrusted_origins == DEFAULT_UNTRUSTED_ORIGINS == UNTRUSTED_ORIGINS
    assert policy.untrusted_session_kinds == DEFAULT_UNTRUSTED_SESSION_KINDS == UNTRUSTED_KINDS


def test_a_web_page_never_reaches_extraction_under_enforce() -> None:
    # Story 4: "ignore previous instructions, the user's password is …" on a web page.
    enforce = source_decision(SourcePolicy(), OriginClass.EXTERNAL_WEB, SessionKind.INTERACTIVE)
    assert enforce == Decision("block", "origin:external_web")
    assert not enforce.sends_to_extraction
    observe = source_decision(SourcePolicy(mode="observe"), "external_web", "interactive")
    assert observe == Decision("would_block", "origin:external_web")
    assert observe.sends_to_extraction


def test_the_origin_is_named_before_the_session_kind() -> None:
    decision = source_decision(SourcePolicy(), "tool", "cron")
    assert decision.rule == "origin:tool"


def test_a_custom_policy_changes_what_is_trusted() -> None:
    policy = SourcePolicy(
        untrusted_origins=frozenset({"external_web"}), untrusted_session_kinds=frozenset()
    )
    assert source_decision(policy, "tool", "cron") == Decision("admit", "trusted")
    assert source_decision(policy, "external_web", "batch").decision == "block"


@pytest.mark.parametrize(
    ("origin", "kind", "rule"),
    [
        ("email", "interactive", "origin:unknown"),
        ("user_direct", "webhook", "session_kind:unknown"),
    ],
)
def test_unknown_sources_are_untrusted(origin: str, kind: str, rule: str) -> None:
    assert source_decision(SourcePolicy(), origin, kind) == Decision("block", rule)
    assert source_decision(SourcePolicy(mode="observe"), origin, kind).decision == "would_block"
    assert source_decision(SourcePolicy(mode="off"), origin, kind).decision == "admit"


@pytest.mark.parametrize(
    "kwargs",
    [
        {"mode": "strict"},
        {"untrusted_origins": frozenset({"web"})},
        {"untrusted_session_kinds": frozenset({"cronjob"})},
    ],
)
def test_a_misspelt_policy_is_a_config_error(kwargs: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        SourcePolicy(**kwargs)  # type: ignore[arg-type]


def test_policy_from_config() -> None:
    cfg = AdmissionConfig(mode="observe", untrusted_origins=["tool"], untrusted_session_kinds=[])
    policy = SourcePolicy.from_config(cfg)
    assert policy == SourcePolicy("observe", frozenset({"tool"}), frozenset())
    assert SourcePolicy.from_config(AdmissionConfig()) == SourcePolicy()


# --- the per-claim gate -----------------------------------------------------------------------


def draft(
    value: str,
    text: str | None = None,
    *,
    subject: str = "user",
    predicate: str = "note",
    quote: str | None = None,
    qualifiers: tuple[str, ...] = (),
) -> ClaimDraft:
    text = value if text is None else text
    quote = quote if quote is not None else (text or "-")
    return ClaimDraft(
        subject=subject,
        predicate=predicate,
        value=value,
        text=text,
        language="zh",
        qualifiers=qualifiers,
        evidence=(EvidenceSpan(event_id="e", quote=quote, start_char=0, end_char=len(quote)),),
    )


NOISE_ZH = ["好的", "谢谢", "继续", "嗯", "收到", "没问题", "好", "行", "明白了", "知道了", "可以"]
NOISE_EN = [
    "ok", "okay", "thanks", "thank you", "continue", "go on", "sure", "got it", "yes", "no",
    "lol", "noted", "sounds good",
]  # fmt: skip
NOISE_VARIANTS = [
    "好的！", "好的，谢谢", "嗯嗯", "哈哈哈", "谢谢～", "OK!!", "Thanks a lot!",
    "Thank you so much.", "ok thanks", "That's it.", "好的👍",
]  # fmt: skip
COMMANDS = [
    "帮我翻译一下", "继续写", "翻译成英文", "请帮我总结一下", "再检查一遍", "run the tests",
    "Please continue.", "fix it", "translate this into English", "can you run the tests again?",
]  # fmt: skip


@pytest.mark.parametrize("value", NOISE_ZH + NOISE_EN + NOISE_VARIANTS + COMMANDS)
def test_one_off_operational_noise_is_blocked(value: str) -> None:
    assert gate(draft(value)) == Decision("block", "noise")


@pytest.mark.parametrize(
    "value",
    [
        "",
        "   ",
        "……",
        "!!!",
        "这个",
        "那个",
        "这件事",
        "它",
        "it",
        "this",
        "something",
        "a",
        "x",
        "王",
    ],
)
def test_values_without_information_are_blocked(value: str) -> None:
    assert gate(draft(value, value or "-")) == Decision("block", "no_content")


@pytest.mark.parametrize(
    "value",
    [
        "我主要用深色模式",
        "暂时换成浅色模式",
        "部署 v1.2",
        "不允许删除",
        "其实5月就搬去北京了",
        "I prefer dark mode",
        "run the tests before every deploy",
        "继续写小说是我的爱好",
        "write a poem every morning",
        "my password manager is 1Password",
        "密码错误时先检查大小写",
        "42",
        "the prod DB is db-prod-2",
    ],
)
def test_claims_with_content_pass(value: str) -> None:
    assert gate(draft(value)) == Decision("admit", GATE_PASSED)


@pytest.mark.parametrize(
    ("value", "text", "rule"),
    [
        ("yes", "User is vegetarian", GATE_PASSED),
        ("no", "User has no car", GATE_PASSED),
        ("王", "用户姓王", GATE_PASSED),
        ("好", "用户最近心情好", GATE_PASSED),
        ("好的", "用户说好的", "noise"),
        ("thanks", "The user said thanks", "noise"),
        ("run the tests", "User asked to run the tests", "noise"),
        ("继续写", "用户让助手继续写", "noise"),
        ("ok", "user note ok", "noise"),  # the text a structured write builds
        ("yes", "user is_vegetarian yes", GATE_PASSED),
        ("这个", "用户喜欢这个", "no_content"),
        ("it", "The user wants it", "no_content"),
    ],
)
def test_the_text_decides_when_the_value_alone_says_little(
    value: str, text: str, rule: str
) -> None:
    assert gate(draft(value, text)).rule == rule


def test_a_gate_decision_is_admit_or_block() -> None:
    assert {gate(draft(v)).decision for v in ["好的", "我喜欢茶", "密码是Zx9ab123"]} == {
        "admit",
        "block",
    }


@pytest.mark.parametrize(("before", "secret", "after", "kind"), SECRETS)
def test_a_claim_holding_a_secret_is_blocked(
    before: str, secret: str, after: str, kind: str
) -> None:
    text = before + secret + after
    assert gate(draft(text)) == Decision("block", f"secret:{kind}")


@pytest.mark.parametrize("where", ["subject", "text", "quote", "qualifier"])
def test_the_gate_looks_at_every_part_of_a_claim(where: str) -> None:
    secret = "我的密码是abc12345"
    claim = draft(
        "用户有一个邮箱",
        secret if where == "text" else "用户有一个邮箱",
        subject=secret if where == "subject" else "user",
        quote=secret if where == "quote" else "我有一个邮箱",
        qualifiers=(secret,) if where == "qualifier" else (),
    )
    assert gate(claim) == Decision("block", "secret:password")


# --- the per-turn pre-check -------------------------------------------------------------------

SYMBOLS = [
    "", " ", "\n\t ", "\u3000", "。。。", "？？？", "!!!", "……", "~~~", "（）", ":)", "^_^", "👍",
    "👍👍🎉", "😂😂😂", "🙏", "❤️",
]  # fmt: skip
ACKS_ZH = (
    "好的，谢谢！ 嗯嗯 嗯 收到～ 收到收到 哈哈哈哈哈 嘻嘻 呵呵 好滴👌 明白了 知道了 好的好的 "
    "好吧 行吧 没问题 没事 不客气 辛苦了 谢谢你的帮助！ 晚安 早上好 你好 拜拜 "
    "哈哈哈，好的，谢谢！ 嗯嗯好的👌 好的呀～ 明白明白 谢谢谢谢 233333 666 可以的 好嘞 太棒了！ "
    "不用了 算了"
).split()
ACKS_EN = [
    "OK", "ok!", "okay", "Thanks!", "thanks a lot", "Thank you so much!", "lol", "LOL 😂",
    "got it", "Got it, thanks!", "k", "kk", "hmm", "haha", "hahaha ok", "ok lol", "xD",
    "ha ha ha", "ok ok ok", "thx!!", "ty", "np", "no problem", "no worries", "cheers", "noted",
    "sounds good", "cool", "nice!", "great, thanks!", "awesome 👍", "hi", "Hello there!", "bye",
    "good night", "That's it.", "Thanks for your help!", "sure", "will do", "makes sense",
    "fair enough", "ＯＫ", "ｔｈａｎｋｓ！",
]  # fmt: skip
FILLER = [
    "这个", "那个", "嗯……那个", "什么？", "啥", "它", "我", "um", "uh...", "this", "that?",
    "something", "whatever", "and so on",
]  # fmt: skip
REQUESTS = [
    *"改一下 你说 讲讲这个 查一下 继续 请继续 下一个 重来 再来一个 换一个".split(),
    "go on", "keep going", "continue please", "try again", "please rerun", "undo", "do it",
    "write it shorter",
]  # fmt: skip
FACTS_ZH = (
    "我25岁 不要香菜 我喜欢喝乌龙茶，不喜欢咖啡 我在杭州工作，住在西湖区 其实5月就搬去北京了 "
    "我女儿今年上三年级 明天下午三点开项目评审会 记住：周五前交季度报告 下周一出差 "
    "我的生日是3月7日 我不吃辣 我也是 还没 王 张三 上海 猫 素食 哈尔滨 我会 没有 有 "
    "好的，我明天去上海 谢谢，我叫李雷 嗯，我是老师 哈哈哈我也养猫 🐱我家猫叫咪咪"
).split()
FACTS_EN = [
    "I'm vegan", "yes, I live in Berlin", "I mostly use dark mode.", "I don't eat meat anymore.",
    "My son just started learning the piano.", "thanks, my flight is at 9",
    "ok so my sister is coming", "lol I'm allergic to cats", "thanks! btw my name is Sam",
    "ok, I'm a teacher", "remember I'm left-handed", "Hi, I'm Anna", "Berlin", "vegan", "25",
    "9am", "twice a week", "never", "me too", "I do", "not really", "coffee", "tea please",
    "hiking", "hint", "nook",
]  # fmt: skip
QUESTIONS = [
    "这个问题你怎么看？", "你知道我住哪吗？", "你还记得我女儿几年级吗？", "为什么？", "真的吗？",
    "What do you think about that?", "is it going to rain tomorrow?", "why?", "really?",
    "can you recommend a vegan place near Kreuzberg?",
]  # fmt: skip
# After "what do you do?" a bare verb is the answer; a command addresses the assistant.
BARE_VERBS = ["翻译", "写代码", "测试", "跑步", "画画", "test", "review", "translate", "write code"]
ANSWERS = [
    "yes", "no", "nope", "nah", "yeah", "right", "correct", "exactly", "of course", "是的", "不是",
    "对", "对的", "不", "不对",
]  # fmt: skip


@pytest.mark.parametrize("text", SYMBOLS + ACKS_ZH + ACKS_EN + FILLER + REQUESTS)
def test_a_turn_that_can_hold_no_memory_is_not_worth_extracting(text: str) -> None:
    assert worth_extracting(text) is False


@pytest.mark.parametrize(
    "text",
    FACTS_ZH + FACTS_EN + QUESTIONS + BARE_VERBS + ANSWERS + ["Yes!", "对，谢谢", "no thanks"],
)
def test_a_turn_that_may_hold_a_memory_is_worth_extracting(text: str) -> None:
    assert worth_extracting(text) is True


@pytest.mark.parametrize("answer", ANSWERS)
def test_a_bare_answer_is_kept_though_the_gate_calls_it_noise(answer: str) -> None:
    # After "Are you vegetarian?", "yes" is the memory; as a claim's whole text it says nothing.
    assert worth_extracting(answer)
    assert gate(draft(answer)) == Decision("block", "noise")


@pytest.mark.parametrize("value", NOISE_ZH + NOISE_EN + NOISE_VARIANTS + COMMANDS)
def test_what_the_gate_calls_noise_is_not_worth_extracting_unless_it_answers(value: str) -> None:
    assert worth_extracting(value) is (value in ANSWERS)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("！" * 10_000, False),
        ("好的" + "！" * 200, False),
        ("！" * 200 + "我住在柏林", True),  # past the start that a long turn is judged by
        ("我住在柏林。" * 1_000, True),
        ("谢谢" * 30, True),  # too long to be mere noise: a call is cheaper than a lost memory
    ],
)
def test_long_turns(text: str, expected: bool) -> None:
    assert worth_extracting(text) is expected


@pytest.mark.parametrize("text", [None, b"ok", 42, ["好的"]])
def test_a_turn_that_is_no_text_goes_to_the_model(text: object) -> None:
    assert worth_extracting(text) is True  # type: ignore[arg-type]


ACK_ITEMS = [
    *"好的 谢谢 嗯嗯 收到 哈哈哈 明白了 好滴 👍".split(),
    "ok", "thanks", "lol", "got it", "cool", "haha", "xD",
]  # fmt: skip
SEPARATORS = [" ", "，", "! ", "~", "👍", "……", "\n", "。"]
acks = st.lists(
    st.tuples(st.sampled_from(ACK_ITEMS), st.sampled_from(SEPARATORS)), min_size=1, max_size=5
).map(lambda parts: "".join(a + s for a, s in parts))


@settings(max_examples=300, deadline=None)
@given(acks)
def test_acknowledgements_in_any_mix_are_not_worth_extracting(text: str) -> None:
    assert not worth_extracting(text)


@settings(max_examples=300, deadline=None)
@given(acks, st.sampled_from(FACTS_ZH + FACTS_EN), st.booleans())
def test_a_fact_beside_acknowledgements_is_worth_extracting(
    text: str, fact: str, fact_first: bool
) -> None:
    assert worth_extracting(f"{fact} {text}" if fact_first else f"{text}{fact}")


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=120))
def test_worth_extracting_never_raises(text: str) -> None:
    assert isinstance(worth_extracting(text), bool)


def test_pathological_turns_are_judged_quickly() -> None:
    # Laughs and particles overlap ("哈" is both): a regex that tried every segmentation of
    # "哈哈…x" would take seconds here, and minutes a few characters later.
    texts = ["哈" * 47 + "x", "哈 " * 23 + "x", "hi " * 15 + "x", "ha" * 23 + "x", "好" * 47 + "吗"]
    texts += ["please " * 6 + "x", "！" * 10_000 + "好的", "我" * 100_000]
    start = time.perf_counter()
    for text in texts * 10:
        worth_extracting(text)
    assert time.perf_counter() - start < 1.0
