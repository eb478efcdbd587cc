from __future__ import annotations

import tomllib
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path

import pytest

from hlmem.errors import ConfigError
from hlmem.lang import Lexicon, default_lexicon, load_lexicon, predicate_key
from hlmem.messages import Role, WindowPiece, WindowText
from hlmem.rules import NAME, RulesExtractor

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def lex() -> Lexicon:
    return default_lexicon()


def window(text: str) -> WindowText:
    piece = WindowPiece(
        event_id="e",
        chunk_no=0,
        chunk_count=1,
        start_char=0,
        end_char=len(text),
        role=Role.USER,
        text=text,
        occurred_at=datetime(2026, 8, 12, tzinfo=UTC),
    )
    return WindowText(window_id="w", namespace="n", session_id="s", pieces=(piece,))


# --- the built-in lexicon ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "predicate",
    [
        "name",
        "location",
        "employer",
        "ui_theme",
        "team",
        "hometown",
        "occupation",
        "age",
        "birthday",
        "email",
        "reply_language",
        "diet",
        "home",
        "favorite_color",
    ],
)
def test_single_valued_predicates(lex: Lexicon, predicate: str) -> None:
    assert not lex.is_multi_valued(predicate)


@pytest.mark.parametrize(
    "predicate",
    [
        "likes",
        "prefers",
        "drinks",
        "eats",
        "uses",
        "note",
        "plan",
        "skill",
        "pets",
        "allergy",
        "speaks",
        "no_such_predicate",
        "favorite",
    ],
)
def test_multi_valued_predicates_and_unknown_ones(lex: Lexicon, predicate: str) -> None:
    assert lex.is_multi_valued(predicate)


@pytest.mark.parametrize(
    ("given", "canonical"),
    [
        ("theme", "ui_theme"),
        ("prefers_theme", "ui_theme"),
        ("prefersTheme", "ui_theme"),
        ("UI theme", "ui_theme"),
        ("color-scheme", "ui_theme"),
        ("lives_in", "location"),
        ("works_at", "employer"),
        ("job_title", "occupation"),
        ("Likes", "likes"),
        ("something_new", "something_new"),
        ("Something New", "something_new"),
    ],
)
def test_canonical_predicate_folds_synonyms_and_spelling(
    lex: Lexicon, given: str, canonical: str
) -> None:
    assert lex.canonical_predicate(given) == canonical


def test_synonyms_share_cardinality(lex: Lexicon) -> None:
    assert not lex.is_multi_valued("theme") and not lex.is_multi_valued("lives_in")


def test_predicate_key() -> None:
    assert predicate_key("  prefersDarkMode ") == "prefers_dark_mode"
    assert predicate_key("ＵＩ Theme") == "ui_theme"


@pytest.mark.parametrize(
    ("value", "slot"),
    [
        ("深色模式", "ui_theme"),
        ("暗色模式", "ui_theme"),
        ("浅色模式", "ui_theme"),
        ("dark mode", "ui_theme"),
        ("Dark Mode", "ui_theme"),
        ("light theme", "ui_theme"),
        ("英语", "reply_language"),
        ("vegetarian", "diet"),
        ("北京", None),  # a place names no slot by itself: home, hometown, likes...
        ("咖啡", None),
        ("", None),
    ],
)
def test_slot_of_value(lex: Lexicon, value: str, slot: str | None) -> None:
    assert lex.slot_of_value(value) == slot


@pytest.mark.parametrize(
    ("value", "predicate", "canonical"),
    [
        ("暗色模式", None, "深色模式"),
        ("夜间模式", None, "深色模式"),
        ("Dark Theme", None, "dark mode"),
        ("深色", "ui_theme", "深色模式"),  # a unique prefix, once the slot is known
        ("dark", "ui_theme", "dark mode"),
        ("深色", None, "深色"),
        ("d", "ui_theme", "d"),
        ("北京市", None, "北京"),
        ("杭州市", None, "杭州"),
        ("NYC", None, "New York"),
        ("the US", None, "United States"),
        ("英语", "reply_language", "英文"),
        ("咖啡", "drinks", "咖啡"),
    ],
)
def test_canonical_value(lex: Lexicon, value: str, predicate: str | None, canonical: str) -> None:
    assert lex.canonical_value(value, predicate) == canonical


def test_generic_predicates_move_to_the_single_slot_their_value_names(lex: Lexicon) -> None:
    assert lex.canonical_slot("likes", "深色模式") == "ui_theme"
    assert lex.canonical_slot("prefers", "dark mode") == "ui_theme"
    assert lex.canonical_slot("preference", "浅色模式") == "ui_theme"
    assert lex.canonical_slot("likes", "北京") == "likes"
    assert lex.canonical_slot("likes", "咖啡") == "likes"
    assert lex.canonical_slot("drinks", "深色模式") == "drinks"  # not a generic predicate
    assert lex.canonical_slot("theme", "anything") == "ui_theme"


@pytest.mark.parametrize(
    ("value", "place"),
    [
        ("北京", "北京"),
        ("Hangzhou", "Hangzhou"),
        ("hangzhou", "Hangzhou"),
        ("海淀区", "海淀区"),
        ("余杭区", "余杭区"),
        ("义乌市", "义乌"),  # a known city: 市 folds away
        ("溧阳市", "溧阳市"),  # an unknown one: the suffix rule
        ("昆明", "昆明"),
        ("Springfield City", "Springfield City"),
        ("Bengaluru", "Bangalore"),
        ("小区", None),
        ("市区", None),
        ("紫荆花园小区", None),  # where someone lives, but not a city: the `home` slot
        ("公司", None),
        ("阿里巴巴", None),
        ("Acme", None),
        ("", None),
    ],
)
def test_places(lex: Lexicon, value: str, place: str | None) -> None:
    assert lex.place(value) == place


def test_homes(lex: Lexicon) -> None:
    assert lex.home("紫荆花园小区") == "紫荆花园小区"
    assert lex.home("小区") is None
    assert lex.home("北京") is None


@pytest.mark.parametrize(
    ("value", "is_job"),
    [
        ("程序员", True),
        ("产品经理", True),
        ("software engineer", True),
        ("Teacher", True),
        ("data scientist", True),
        ("bit tired", False),
        ("好人", False),
        ("fan", False),
    ],
)
def test_occupations(lex: Lexicon, value: str, is_job: bool) -> None:
    assert lex.is_occupation(value) is is_job


def test_attributes_favorites_verbs_and_stop_values(lex: Lexicon) -> None:
    assert lex.attribute_predicate("邮箱") == "email"
    assert lex.attribute_predicate("Email Address") == "email"
    assert lex.attribute_predicate("老家") == "hometown"
    assert lex.attribute_predicate("鞋码") is None
    assert lex.favorite_predicate("颜色") == "favorite_color"
    assert lex.favorite_predicate("colour") == "favorite_color"
    assert lex.habit_verbs("zh")["喝"] == "drinks"
    assert lex.habit_verbs("en")["drinks"] == "drinks"
    assert lex.habit_verbs("en")["listen to"] == "listens_to"
    assert lex.gerunds()["using"] == "uses"
    assert lex.is_stop_value("这个") and lex.is_stop_value("It")
    assert lex.is_stop_value("饭", "eats") and not lex.is_stop_value("饭", "likes")


@pytest.mark.parametrize(
    ("predicate", "value", "language", "polarity", "text"),
    [
        ("ui_theme", "深色模式", "zh", 1, "用户偏好深色模式"),
        ("ui_theme", "dark mode", "en", 1, "User prefers dark mode"),
        ("drinks", "咖啡", "zh", -1, "用户不喝咖啡"),
        ("likes", "cilantro", "en", -1, "User does not like cilantro"),
        ("employer", "Acme", "en", 1, "User works at Acme"),
        ("location", "杭州", "zh", 1, "用户在杭州"),
        ("favorite_color", "蓝色", "zh", 1, "用户最喜欢的颜色是蓝色"),
        ("favorite_color", "blue", "en", 1, "User's favorite color is blue"),
        ("shoe_size", "42", "zh", 1, "用户的shoe size是42"),
        ("shoe_size", "42", "en", -1, "User's shoe size is not 42"),
    ],
)
def test_claim_texts(
    lex: Lexicon, predicate: str, value: str, language: str, polarity: int, text: str
) -> None:
    assert lex.text_for(predicate, value, language=language, polarity=polarity) == text  # type: ignore[arg-type]


# --- loading -------------------------------------------------------------------------------------


def test_the_default_is_read_once_and_load_without_extras_is_the_default() -> None:
    assert default_lexicon() is default_lexicon()
    assert load_lexicon() is default_lexicon()
    assert load_lexicon([]) is default_lexicon()
    assert default_lexicon().sources == ("hlmem/data/lexicon.toml",)


def test_the_file_ships_as_package_data_and_config_points_at_it() -> None:
    packaged = resources.files("hlmem").joinpath("data").joinpath("lexicon.toml")
    assert packaged.is_file()
    config_copy = REPO / "config" / "lexicon.toml"
    assert config_copy.read_bytes() == packaged.read_bytes()
    assert tomllib.loads(packaged.read_text("utf-8"))["format"] == 1
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))
    assert "data/*.toml" in pyproject["tool"]["setuptools"]["package-data"]["hlmem"]


EXTRA = """
[predicates.editor]
cardinality = "single"
importance = 0.55
synonyms = ["code_editor", "ide"]
label = { zh = "编辑器", en = "editor" }
text = { zh = "用户用{value}写代码", en = "User codes in {value}" }
attributes = { zh = ["编辑器"], en = ["editor"] }

[predicates.editor.values]
"Vim" = ["vi", "neovim"]
"Emacs" = []
"VS Code" = ["vscode", "Visual Studio Code"]

[predicates.rides]
cardinality = "multi"
text = { zh = "用户骑{value}", en = "User rides {value}" }
verbs = { zh = ["骑"], en = ["ride"] }

[predicates.likes]
cardinality = "single"

[predicates.ui_theme.values]
"高对比度模式" = ["高对比度"]

[places]
names = ["临安", "Gotham"]
"""


@pytest.fixture
def extra_file(tmp_path: Path) -> Path:
    path = tmp_path / "team.toml"
    path.write_text(EXTRA, encoding="utf-8")
    return path


def test_extra_files_extend_and_override(extra_file: Path) -> None:
    lex = load_lexicon([extra_file])
    assert lex.sources == ("hlmem/data/lexicon.toml", str(extra_file))
    assert lex.digest != default_lexicon().digest
    assert not lex.is_multi_valued("editor") and lex.canonical_predicate("ide") == "editor"
    assert lex.slot_of_value("neovim") == "editor" and lex.canonical_value("neovim") == "Vim"
    assert not lex.is_multi_valued("likes")  # a scalar replaced
    assert lex.canonical_predicate("loves") == "likes"  # ... and the rest kept
    # lists and tables are extended, not replaced
    assert lex.canonical_value("暗色模式") == "深色模式"
    assert lex.slot_of_value("高对比度") == "ui_theme"
    assert lex.place("临安") == "临安" and lex.place("北京") == "北京"
    assert lex.habit_verbs("zh")["骑"] == "rides" and lex.habit_verbs("zh")["喝"] == "drinks"
    assert lex.importance("editor") == 0.55
    # the default lexicon is untouched
    assert default_lexicon().slot_of_value("neovim") is None


def test_a_configured_lexicon_drives_the_extractor(extra_file: Path) -> None:
    rules = RulesExtractor(load_lexicon([extra_file]))
    assert rules.name.startswith(f"{NAME}+")
    assert RulesExtractor(default_lexicon()).name == NAME
    switched = rules.extract(window("I switched to neovim."))
    assert [(d.predicate, d.value, d.text) for d in switched] == [
        ("editor", "Vim", "User codes in Vim")
    ]
    rides = rules.extract(window("我每天骑自行车上班"))
    assert [(d.predicate, d.value) for d in rides] == [("rides", "自行车")]
    changed = rules.extract(window("我把编辑器换成了Emacs"))
    assert [(d.predicate, d.value) for d in changed] == [("editor", "Emacs")]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("predicates = [", "invalid TOML"),
        ("[predicates.ui_theme]\ncardinality = 'several'", "cardinality"),
        ("[predicates.UiTheme]\ncardinality = 'single'", "snake_case"),
        ("[predicates.x]\ncolour = 'blue'", "colour"),
        ("[predicates.x]\ntext = { en = 'no placeholder' }", "{value}"),
        ("[predicates.x]\nimportance = 2", "importance"),
        ("unknown_table = 1", "unknown_table"),
        ("format = 2", "format"),
    ],
)
def test_bad_files_are_config_errors_naming_the_file(
    tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ConfigError, match=r"bad\.toml") as info:
        load_lexicon([path])
    assert message in str(info.value)


def test_a_missing_or_unreadable_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_lexicon([tmp_path / "missing.toml"])
    binary = tmp_path / "binary.toml"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ConfigError, match="UTF-8"):
        load_lexicon([binary])
