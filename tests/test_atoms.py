"""The deterministic dedup gate: protected atoms, similarity, entities and the labelled pairs."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from atom_pairs import MUST_MERGE, MUST_NOT_MERGE

from hlmem.lang import language_of
from hlmem.lang.atoms import (
    SIMILARITY_THRESHOLD,
    Atoms,
    atoms_of,
    disagreements,
    entities_of,
    same_fact,
    similarity,
    zh_number,
)

# --- the labelled pairs ----------------------------------------------------------------------

_SENTENCE_BREAK = re.compile(r"[。！？!?\n]|\.(?:\s|$)")


def test_pair_lists_are_large_and_bilingual() -> None:
    assert len(MUST_NOT_MERGE) >= 40
    assert len(MUST_MERGE) >= 20
    for pairs in ([(a, b) for a, b, _ in MUST_NOT_MERGE], MUST_MERGE):
        languages = {language_of(text) for pair in pairs for text in pair}
        assert languages == {"zh", "en"}
    for a, b, why in MUST_NOT_MERGE:
        assert a != b and why


def test_pair_texts_survive_a_remember_wrapper() -> None:
    """Each text is fed as "记住：<text>" / "remember: <text>" elsewhere: no sentence break
    inside it, no quote at its ends, nothing that starts with "remember"."""
    texts = [t for a, b, _ in MUST_NOT_MERGE for t in (a, b)] + [t for p in MUST_MERGE for t in p]
    for text in texts:
        assert not _SENTENCE_BREAK.search(text.rstrip("。.！!")), text
        assert text.strip(" \"'“”‘’「」『』`") == text, text
        assert not text.lower().startswith(("remember", "记住", "请记住"))


@pytest.mark.parametrize(("a", "b", "why"), MUST_NOT_MERGE, ids=[p[2] for p in MUST_NOT_MERGE])
def test_different_facts_are_kept_apart(a: str, b: str, why: str) -> None:
    merge, score, reasons = same_fact(a, b)
    assert not merge, (why, score)
    assert reasons
    assert same_fact(b, a)[0] is False


@pytest.mark.parametrize(("a", "b"), MUST_MERGE)
def test_near_duplicates_merge(a: str, b: str) -> None:
    merge, score, reasons = same_fact(a, b)
    assert merge, (score, reasons)
    assert reasons == []
    assert same_fact(b, a)[0] is True


def test_threshold_has_margin_on_both_lists() -> None:
    merging = [similarity(a, b) for a, b in MUST_MERGE]
    gated = [
        similarity(a, b)
        for a, b, _ in MUST_NOT_MERGE
        if not disagreements(atoms_of(a), atoms_of(b))
    ]
    assert len(gated) >= 10  # enough different-fact pairs reach the similarity stage
    assert min(merging) >= SIMILARITY_THRESHOLD + 0.04
    assert max(gated) <= SIMILARITY_THRESHOLD - 0.04


def test_threshold_is_a_parameter() -> None:
    a, b = "用户偏好深色模式", "用户偏好深色模式。"
    assert same_fact(a, b)[0]
    merge, _, reasons = same_fact("我喜欢喝咖啡", "我喜欢喝茶", threshold=0.0)
    assert not merge and reasons == ["entity 喝咖啡 != none"]  # the gate still holds
    assert same_fact("I like coffee", "I like tea", threshold=0.2)[0]


# --- atom families ---------------------------------------------------------------------------


def _family(text: str, family: str) -> set[str]:
    value: frozenset[str] = getattr(atoms_of(text), family)
    return set(value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("买 3 个苹果", {"3个"}),
        ("三个苹果", {"3个"}),
        ("The box weighs 5kg", {"5kg"}),
        ("箱子重5公斤", {"5kg"}),
        ("weighs 5 kilograms", {"5kg"}),
        ("Set the discount to 30%", {"30%"}),
        ("打百分之三十的折扣", {"30%"}),
        ("预算¥200", {"¥200"}),
        ("预算200元", {"¥200"}),
        ("预算两百块", {"¥200"}),
        ("房租两千元", {"¥2000"}),
        ("预算两千", {"2000"}),
        ("1.5万元", {"¥15000"}),
        ("It costs $5", {"$5"}),
        ("It costs 5 dollars", {"$5"}),
        ("We have 1,000 users", {"1000 user"}),
        ("5 million users", {"5000000 user"}),
        ("The team has twelve engineers", {"12"}),
        ("twenty-five people", {"25 people"}),
        ("他是第三名", {"#3名"}),
        ("on the third floor", {"#3"}),
        ("on the 3rd floor", {"#3"}),
        ("会议室在三楼", {"3楼"}),
        ("upgrade to 3.10", {"3.10"}),  # written decimals stay as written
    ],
)
def test_numbers(text: str, expected: set[str]) -> None:
    assert _family(text, "numbers") == expected


@pytest.mark.parametrize(
    "text",
    ["我们一起去", "万一下雨怎么办", "十分感谢", "我有一点累", "千万别忘了", "I have one cat"],
)
def test_chinese_words_with_numeral_characters_are_not_numbers(text: str) -> None:
    assert _family(text, "numbers") == set()
    assert _family(text, "times") == set()


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("三", 3),
        ("十", 10),
        ("十五", 15),
        ("二十", 20),
        ("两千", 2000),
        ("三千五", 3500),
        ("一百零五", 105),
        ("两万五", 25000),
        ("一亿", 100_000_000),
        ("二〇二四", 2024),
        ("三四十", None),
        ("", None),
        ("abc", None),
    ],
)
def test_zh_number(text: str, value: int | None) -> None:
    assert zh_number(text) == value


def test_chinese_numerals_equal_digits() -> None:
    for zh, digits in [("喝三杯咖啡", "喝3杯咖啡"), ("下午三点", "下午3点"), ("两千元", "2000元")]:
        assert disagreements(atoms_of(zh), atoms_of(digits)) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("deploy v1.2", {"v1.2"}),
        ("部署v1.2到生产环境。", {"v1.2"}),
        ("deploy version 1.2", {"v1.2"}),
        ("bump to 1.2.3", {"v1.2.3"}),
        ("release 2.0.0-rc1", {"v2.0.0-rc1"}),
        ("The project requires Python 3.11", {"v3.11"}),
        ("项目使用python 3.11", {"v3.11"}),
        ("版本1.2", {"v1.2"}),
        ("1.2版上线了", {"v1.2"}),
    ],
)
def test_versions(text: str, expected: set[str]) -> None:
    assert _family(text, "versions") == expected


@pytest.mark.parametrize(
    ("text", "family", "expected"),
    [
        ("会议在2024-05-03", "dates", {"2024-05-03"}),
        ("会议在2024/5/3", "dates", {"2024-05-03"}),
        ("我的生日是5月3日", "dates", {"?-05-03"}),
        ("我的生日是5月3号", "dates", {"?-05-03"}),
        ("二〇二四年五月三日", "dates", {"2024-05-03"}),
        ("2024年5月", "dates", {"2024-05"}),
        ("The launch is on March 3, 2025", "dates", {"2025-03-03"}),
        ("The launch is on 3 March 2025", "dates", {"2025-03-03"}),
        ("We ship in March", "dates", {"?-03"}),
        ("We may ship later", "dates", set()),
        ("明天去上海", "dates", {"tomorrow"}),
        ("Ship it tomorrow", "dates", {"tomorrow"}),
        ("下周发布", "dates", {"next week"}),
        ("Ship the release next week", "dates", {"next week"}),
        ("每天喝咖啡", "dates", {"daily"}),
        ("I run every day", "dates", {"daily"}),
        ("周三开会", "weekdays", {"Wed"}),
        ("星期三开会", "weekdays", {"Wed"}),
        ("礼拜三开会", "weekdays", {"Wed"}),
        ("The meeting is on Wednesday", "weekdays", {"Wed"}),
        ("周日休息", "weekdays", {"Sun"}),
        ("星期天休息", "weekdays", {"Sun"}),
        ("下周三开会", "weekdays", {"next Wed"}),
        ("每周一开会", "weekdays", {"every Mon"}),
        ("Standup every Monday", "weekdays", {"every Mon"}),
        ("No deploys on Fridays", "weekdays", {"every Fri"}),
        ("一周一次", "weekdays", set()),
        ("下午三点开会", "times", {"15:00"}),
        ("下午3点开会", "times", {"15:00"}),
        ("Call at 3pm", "times", {"15:00"}),
        ("Call at 3 PM", "times", {"15:00"}),
        ("Call at 3:00 pm", "times", {"15:00"}),
        ("Call at 15:00", "times", {"15:00"}),
        ("三点开会", "times", {"03:00"}),
        ("三点半开会", "times", {"03:30"}),
        ("下午三点一刻", "times", {"15:15"}),
        ("中午十二点吃饭", "times", {"12:00"}),
        ("凌晨两点上线", "times", {"02:00"}),
        ("下午开会", "times", {"afternoon"}),
        ("We meet at noon", "times", {"12:00"}),
    ],
)
def test_dates_weekdays_times(text: str, family: str, expected: set[str]) -> None:
    assert _family(text, family) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("日志在 /var/log/hlmem/app.log 里", {"/var/log/hlmem/app.log"}),
        ("The config lives in ~/.config/hlmem/config.toml.", {"~/.config/hlmem/config.toml"}),
        ("Edit src/hlmem/lang/atoms/analysis.py", {"src/hlmem/lang/atoms/analysis.py"}),
        ("Data is in C:\\Users\\me\\data", {"C:\\Users\\me\\data"}),
        ("文档在 https://Docs.Example.com/V1/ 上", {"https://docs.example.com/V1"}),
        ("Visit example.com today", {"example.com"}),
    ],
)
def test_paths_and_urls(text: str, expected: set[str]) -> None:
    assert _family(text, "paths") == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('Commit messages start with "fix:" here', {"fix:"}),
        ("标题用“快速开始”这个名字", {"快速开始"}),
        ("标题用「快速开始」这个名字", {"快速开始"}),
        ("标题用『快速开始』这个名字", {"快速开始"}),
        ("读完《三体》了", {"三体"}),
        ("口号是‘少即是多’这句", {"少即是多"}),
        ("Run `make test` first", {"make test"}),
        ("Say 'hello world' twice", {"hello world"}),
        ("Don't say it's fine", set()),  # apostrophes are not quotes
    ],
)
def test_quotes(text: str, expected: set[str]) -> None:
    assert _family(text, "quotes") == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("我的邮箱是 Alice@Example.com", {"alice@example.com"}),
        ("Ping @alice_w for reviews", {"@alice_w"}),
        ("数据库在 10.0.0.12:5432", {"10.0.0.12:5432"}),
        ("Use max_retries here", {"max_retries"}),
        ("Set maxRetries here", {"maxretries"}),
        ("调用 load_config() 读取配置", {"load_config()"}),
        ("Run it with --dry-run first", {"--dry-run"}),
        ("Call os.path.join here", {"os.path.join"}),
        ("Revert commit a1b2c3d4 now", {"a1b2c3d4"}),
        ("Deploy to db-prod-2 tonight", {"db-prod-2"}),
    ],
)
def test_identifiers(text: str, expected: set[str]) -> None:
    assert _family(text, "identifiers") == expected


@pytest.mark.parametrize(
    ("text", "cues"),
    [
        ("不允许删除", ("不",)),
        ("这个接口没有鉴权", ("没",)),
        ("我没喝咖啡", ("没",)),
        ("周末别打电话", ("别",)),
        ("不要用 tab 缩进", ("不要",)),
        ("补丁未合并", ("未",)),
        ("这个任务无截止日期", ("无",)),
        ("这是非公开数据", ("非",)),
        ("禁止删除日志", ("禁止",)),
        ("他不是不喜欢", ("不", "不")),
        ("I never drink coffee", ("never",)),
        ("The cache is not shared", ("not",)),
        ("The cache isn't shared", ("not",)),
        ("I can't come", ("not",)),
        ("I cannot come", ("not",)),
        ("No tests are needed", ("no",)),
        ("I no longer work there", ("no longer",)),
        ("Stop using the legacy API", ("stop",)),
        ("I stopped drinking coffee", ("stop",)),
        ("Disable caching", ("disable",)),
        ("我非常喜欢咖啡", ()),
        ("未来三年在上海", ()),
        ("别人的电脑", ()),
        ("不过我喜欢茶", ()),
        ("我不得不加班", ()),
        ("无论如何都要备份", ()),
    ],
)
def test_negation_cues(text: str, cues: tuple[str, ...]) -> None:
    assert atoms_of(text).negations == cues


def test_polarity_field_and_text_negation_must_both_agree() -> None:
    assert disagreements(atoms_of("允许删除"), atoms_of("允许删除", polarity=-1)) == [
        "polarity +1 != -1"
    ]
    # A negated text with polarity -1 is not "double negated" into the plain text.
    reasons = disagreements(atoms_of("不允许删除", polarity=-1), atoms_of("允许删除"))
    assert reasons == ["polarity -1 != +1", "negation 不 != none"]
    merge, _, reasons = same_fact("I don't eat meat", "I do not eat meat", a_polarity=-1)
    assert not merge and reasons == ["polarity -1 != +1"]


@pytest.mark.parametrize(
    ("a", "b", "agree"),
    [
        ("user", "用户", True),
        ("User ", "我", True),
        ("the user", "me", True),
        ("Alice", "alice", True),
        ("Ａｌｉｃｅ", "alice", True),
        ("alice", "bob", False),
        ("", "user", False),
        ("", "", True),
    ],
)
def test_subject(a: str, b: str, agree: bool) -> None:
    reasons = disagreements(atoms_of("喜欢咖啡", subject=a), atoms_of("喜欢咖啡", subject=b))
    assert (reasons == []) is agree
    assert same_fact("喜欢咖啡", "喜欢咖啡", a_subject=a, b_subject=b)[0] is agree


def test_reasons_are_readable() -> None:
    a, b = atoms_of("部署 v1.2 到生产环境"), atoms_of("部署 v1.3 到生产环境")
    assert disagreements(a, b) == ["version v1.2 != v1.3"]
    assert disagreements(atoms_of("喝3杯咖啡"), atoms_of("喝5杯咖啡")) == ["number 3杯 != 5杯"]
    assert disagreements(atoms_of("Submit it by Friday"), atoms_of("Submit it")) == [
        "weekday Fri != none"
    ]
    assert disagreements(atoms_of("Alice 喜欢咖啡"), atoms_of("Bob 喜欢咖啡")) == [
        "entity alice != bob"
    ]


def test_atoms_are_hashable_values() -> None:
    a = atoms_of("Deploy v1.2 to production on Friday")
    b = atoms_of("Deploy v1.2 to production on Friday")
    assert isinstance(a, Atoms)
    assert a == b and hash(a) == hash(b)
    assert len({a, b, atoms_of("Deploy v1.3")}) == 2


# --- entities --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Alice works at Google in London",
            [("Alice", "person"), ("Google", "org"), ("London", "place")],
        ),
        ("Mr Smith lives in New York", [("Smith", "person"), ("New York", "place")]),
        ("Bob's car is red", [("Bob", "person")]),
        ("I met Alice and Bob", [("Alice", "person"), ("Bob", "person")]),
        ("The Platform Team owns CI", [("Platform Team", "org"), ("CI", "other")]),
        ("We moved from MySQL to Postgres", [("MySQL", "product"), ("Postgres", "product")]),
        ("Ping @alice for reviews", [("@alice", "person")]),
        ("Alice met alice again", [("Alice", "person")]),
        ("Deploy v1.2 to production", []),
        ("Stop using the legacy API", [("API", "other")]),
        ("马云创立了阿里巴巴集团", [("马云", "person"), ("阿里巴巴集团", "org")]),
        ("小王和老李去了北京大学", [("小王", "person"), ("老李", "person"), ("北京大学", "org")]),
        ("王老师明天来杭州", [("王老师", "person"), ("杭州", "place")]),
        ("我住在浙江省杭州市", [("浙江省", "place"), ("杭州", "place")]),
        ("我在字节跳动工作", [("字节跳动", "org")]),
        ("用微信联系我", [("微信", "product")]),
        ("Alice 喜欢咖啡", [("Alice", "person")]),
        ("我喜欢喝咖啡", []),
    ],
)
def test_entities_of(text: str, expected: list[tuple[str, str]]) -> None:
    assert entities_of(text) == expected


def test_names_are_checked_by_presence_not_by_tagging() -> None:
    # A sentence-initial word may be tagged in one text and not in the other.
    assert disagreements(atoms_of("Deploy v1.2 now"), atoms_of("please deploy v1.2 now")) == []
    assert disagreements(atoms_of("Alice likes tea"), atoms_of("alice likes tea")) == []
    assert disagreements(atoms_of("我妈妈喜欢喝咖啡"), atoms_of("我喜欢喝咖啡")) != []
    assert disagreements(atoms_of("我用 vim 写代码"), atoms_of("我用 emacs 写代码")) != []


# --- similarity ------------------------------------------------------------------------------


def test_similarity_bounds_and_identity() -> None:
    assert similarity("", "") == 1.0
    assert similarity("部署v1.2", "部署v1.2") == 1.0
    assert similarity("", "部署v1.2") == 0.0
    for a, b, _ in MUST_NOT_MERGE:
        assert 0.0 <= similarity(a, b) <= 1.0


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Deploy V1.2 to Production", "deploy v1.2 to production"),
        ("部署ｖ１．２到生产环境", "部署v1.2到生产环境"),
        ("部署 v1.2，到生产环境！", "部署v1.2到生产环境"),
        ("请检查一下磁盘空间", "检查磁盘空间"),
        ("Please just make sure that the tests pass", "Make sure tests pass"),
        ("我的猫叫咪咪了", "我猫叫咪咪"),
        ("咖啡和茶都喜欢", "茶和咖啡都喜欢"),
    ],
)
def test_similarity_ignores_surface_noise(a: str, b: str) -> None:
    assert similarity(a, b) == 1.0


def test_similarity_is_symmetric_and_deterministic() -> None:
    texts = [t for a, b, _ in MUST_NOT_MERGE for t in (a, b)] + [t for p in MUST_MERGE for t in p]
    for a, b in zip(texts, reversed(texts), strict=True):
        assert similarity(a, b) == similarity(b, a)
        assert same_fact(a, b)[:2] == same_fact(b, a)[:2]
    probe = [(a, b) for a, b, _ in MUST_NOT_MERGE[:12]] + MUST_MERGE[:12]
    here = [[similarity(a, b), sorted(disagreements(atoms_of(a), atoms_of(b)))] for a, b in probe]
    script = (
        "import json, sys\n"
        "from hlmem.lang.atoms.analysis import atoms_of, disagreements, similarity\n"
        "pairs = json.loads(sys.stdin.read())\n"
        "print(json.dumps([[similarity(a, b), sorted(disagreements(atoms_of(a), atoms_of(b)))]"
        " for a, b in pairs]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        input=json.dumps(probe),
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        env={"PYTHONHASHSEED": "12345", "PATH": ""},
    )
    assert json.loads(done.stdout) == here


def test_warm_comparisons_reuse_cached_features() -> None:
    """A rough speed check: after one pass, comparisons only reuse cached per-text features."""
    from hlmem.lang.atoms import analysis as atoms

    texts = [t for a, b, _ in MUST_NOT_MERGE for t in (a, b)]
    for text in texts:
        same_fact(text, texts[0])
    before = (atoms._analyse.cache_info().misses, atoms._grams.cache_info().misses)
    for a in texts:
        for b in texts[:40]:
            same_fact(a, b)
    after = (atoms._analyse.cache_info().misses, atoms._grams.cache_info().misses)
    assert after == before
