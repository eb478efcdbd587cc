"""The slot lexicon: which predicates exist, how many values a slot holds, and value words.

A slot is (subject, predicate). The lexicon says which predicates are single-valued (a new
value supersedes the old: ``location``, ``ui_theme``) and which accumulate (``likes``,
``plan``); unknown predicates count as multi-valued, because when in doubt hlmem keeps both
claims rather than supersede one. It maps predicate synonyms to one name (``theme`` →
``ui_theme``), value words to their slot (深色模式 → ``ui_theme``; a place → ``location``), and
holds the vocabulary of the rules extractor: habit verbs, attribute nouns, job titles, a
gazetteer of places, claim text templates.

The built-in lexicon is ``hlmem/data/lexicon.toml`` (also reachable as ``config/lexicon.toml``
in a checkout; its header documents the format). :func:`load_lexicon` reads it, then the
user's extra files in order: a scalar in a later file replaces the earlier one, a list is
extended, a table is merged key by key. This module reads files only when asked, never at
import, and never reads the environment.
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from hlmem.errors import ConfigError
from hlmem.lang.text import normalize

Language = Literal["zh", "en"]

_PREDICATE_NAME = re.compile(r"^[a-z][a-z0-9_]*(?:_\*)?$")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_NON_WORD = re.compile(r"[^a-z0-9]+")
_CJK_ONLY = re.compile(r"^[\u3400-\u9fff]+$")
_CJK_ANY = re.compile(r"[\u3400-\u9fff]")


# --- the file format -------------------------------------------------------------------------


class _Spec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class _Texts(_Spec):
    zh: str | None = None
    en: str | None = None

    @field_validator("zh", "en")
    @classmethod
    def _has_value_slot(cls, value: str | None) -> str | None:
        if value is not None and "{value}" not in value:
            raise ValueError('a text template must contain "{value}"')
        return value


class _Labels(_Spec):
    zh: str | None = None
    en: str | None = None


class _Words(_Spec):
    zh: list[str] = []
    en: list[str] = []


class _PredicateSpec(_Spec):
    cardinality: Literal["single", "multi"] | None = None
    importance: float | None = Field(None, ge=0, le=1)
    generic: bool | None = None
    volatile: bool | None = None
    synonyms: list[str] = []
    label: _Labels = _Labels()
    text: _Texts = _Texts()
    negated: _Texts = _Texts()
    verbs: _Words = _Words()
    attributes: _Words = _Words()
    values: dict[str, list[str]] = {}
    stop_values: list[str] = []


class _Favorites(_Spec):
    zh: dict[str, str] = {}
    en: dict[str, str] = {}


class _Places(_Spec):
    names: list[str] = []
    aliases: dict[str, str] = {}
    suffixes: list[str] = []
    home_suffixes: list[str] = []
    not_places: list[str] = []


class _WordLists(_Spec):
    industries: list[str] = []
    animals: list[str] = []
    stop_values: list[str] = []


class _LexiconSpec(_Spec):
    format: Literal[1] = 1
    predicates: dict[str, _PredicateSpec] = {}
    favorites: _Favorites = _Favorites()
    occupations: _Words = _Words()
    words: _WordLists = _WordLists()
    places: _Places = _Places()

    @field_validator("predicates")
    @classmethod
    def _snake_case(cls, value: dict[str, _PredicateSpec]) -> dict[str, _PredicateSpec]:
        for name in value:
            if not _PREDICATE_NAME.match(name):
                raise ValueError(f"predicate {name!r} is not snake_case (e.g. ui_theme)")
        return value


# --- the compiled lexicon --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Predicate:
    """One predicate as the lexicon defines it (families such as ``favorite_*`` included)."""

    name: str
    multi_valued: bool
    importance: float
    generic: bool
    label: Mapping[str, str]
    text: Mapping[str, str]
    negated: Mapping[str, str]
    #: its values change by themselves (a status, a plan, a price): recall says how old one is
    volatile: bool = False
    #: the nouns naming it ("我的X是Y" / "my X is Y"), by language
    attributes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    synonyms: tuple[str, ...] = ()


def predicate_key(predicate: str) -> str:
    """A predicate name folded to snake_case: ``"prefersTheme"`` → ``"prefers_theme"``."""
    spaced = _CAMEL.sub("_", predicate.strip())
    return _NON_WORD.sub("_", normalize(spaced)).strip("_")


def _english_forms(verb: str) -> tuple[list[str], str]:
    """``"listen to"`` → its base and third-person forms, and its -ing form."""
    head, _, rest = verb.partition(" ")
    tail = f" {rest}" if rest else ""
    third = head + ("es" if head.endswith(("s", "sh", "ch", "x", "o")) else "s")
    ing = (head[:-1] if head.endswith("e") and not head.endswith("ee") else head) + "ing"
    return [f"{head}{tail}", f"{third}{tail}"], f"{ing}{tail}"


class Lexicon:
    """The merged lexicon, with lookup tables built once. Instances are immutable."""

    def __init__(self, spec: _LexiconSpec, *, sources: Sequence[str] = ()) -> None:
        self.sources = tuple(sources)
        dumped = json.dumps(spec.model_dump(), ensure_ascii=False, sort_keys=True)
        #: a short hash of the merged content: two lexicons with one digest behave the same
        self.digest = hashlib.blake2b(dumped.encode(), digest_size=6).hexdigest()
        self._predicates: dict[str, Predicate] = {}
        self._families: list[tuple[str, Predicate]] = []
        self._synonyms: dict[str, str] = {}
        self._values: dict[str, tuple[str, str]] = {}  # value key -> (predicate, canonical)
        self._aliases_of: dict[str, list[tuple[str, str]]] = {}  # predicate -> (key, canonical)
        self._stop: dict[str, frozenset[str]] = {}
        self._attributes: dict[str, str] = {}
        self._search_words: dict[str, list[str]] = {}  # predicate -> its names, for search
        self._verbs: dict[str, dict[str, str]] = {"zh": {}, "en": {}}
        self._ing: dict[str, str] = {}
        for name, p in spec.predicates.items():
            self._add_predicate(name, p)
        self._global_stop = frozenset(normalize(w) for w in spec.words.stop_values)
        self._industries = frozenset(normalize(w) for w in spec.words.industries)
        self.animals: tuple[str, ...] = tuple(spec.words.animals)
        self._occupations_zh = tuple(sorted(spec.occupations.zh, key=len, reverse=True))
        self._occupations_en = frozenset(normalize(w) for w in spec.occupations.en)
        favorites = (*spec.favorites.en.items(), *spec.favorites.zh.items())
        self._favorites = {normalize(k): f"favorite_{v}" for k, v in favorites}
        self._favorite_zh = {f"favorite_{v}": k for k, v in reversed(spec.favorites.zh.items())}
        self._places: dict[str, str] = {}
        for name in spec.places.names:
            self._places.setdefault(normalize(name), name)
        for alias, canonical in spec.places.aliases.items():
            self._places[normalize(alias)] = canonical
        self._place_suffixes = tuple(sorted(spec.places.suffixes, key=len, reverse=True))
        self._not_places = frozenset(normalize(w) for w in spec.places.not_places)
        self._home_suffixes = tuple(sorted(spec.places.home_suffixes, key=len, reverse=True))

    def _add_predicate(self, name: str, p: _PredicateSpec) -> None:
        label = {k: v for k, v in p.label.model_dump().items() if v}
        pred = Predicate(
            name=name,
            multi_valued=p.cardinality != "single",
            importance=0.5 if p.importance is None else p.importance,
            generic=bool(p.generic),
            label=label,
            text={k: v for k, v in p.text.model_dump().items() if v},
            negated={k: v for k, v in p.negated.model_dump().items() if v},
            volatile=bool(p.volatile),
            attributes={"zh": tuple(p.attributes.zh), "en": tuple(p.attributes.en)},
            synonyms=tuple(p.synonyms),
        )
        if name.endswith("_*"):
            self._families.append((name[:-1], pred))
            return
        self._predicates[name] = pred
        for synonym in p.synonyms:
            self._synonyms.setdefault(predicate_key(synonym), name)
        aliases = self._aliases_of.setdefault(name, [])
        for canonical, others in p.values.items():
            for word in (canonical, *others):
                self._values[normalize(word)] = (name, canonical)
                aliases.append((normalize(word), canonical))
        self._stop[name] = frozenset(normalize(w) for w in p.stop_values)
        words = self._search_words.setdefault(name, [*label.values()])
        words.extend(s.replace("_", " ") for s in p.synonyms)
        for lang in ("zh", "en"):
            for noun in getattr(p.attributes, lang):
                self._attributes[normalize(noun)] = name
                words.append(noun)
        for verb in p.verbs.zh:
            self._verbs["zh"][verb] = name
        for verb in p.verbs.en:
            forms, ing = _english_forms(normalize(verb))
            for form in forms:
                self._verbs["en"][form] = name
            self._ing[ing] = name

    # --- predicates -------------------------------------------------------------------------

    def search_words(self, predicate: str) -> list[str]:
        """The words a question about ``predicate`` may use, in both languages: its labels,
        attribute nouns and synonyms ("所在地", "城市", "location", "lives in", …); full-text
        search indexes a claim with them. Empty for a predicate the lexicon does not know."""
        return list(dict.fromkeys(self._search_words.get(self.canonical_predicate(predicate), [])))

    def predicates(self) -> list[Predicate]:
        """Every predicate the lexicon defines by name (not the ``_*`` families), in file order."""
        return list(self._predicates.values())

    def canonical_predicate(self, predicate: str) -> str:
        """The lexicon's name for ``predicate`` (synonyms folded: ``theme`` → ``ui_theme``);
        an unknown predicate comes back in snake_case."""
        key = predicate_key(predicate)
        if key in self._predicates:
            return key
        return self._synonyms.get(key, key)

    def predicate(self, predicate: str) -> Predicate | None:
        """The definition of ``predicate`` (after :meth:`canonical_predicate`), if any."""
        name = self.canonical_predicate(predicate)
        found = self._predicates.get(name)
        if found is not None:
            return found
        for prefix, family in self._families:
            if name.startswith(prefix) and len(name) > len(prefix):
                return family
        return None

    def is_multi_valued(self, predicate: str) -> bool:
        """Whether a slot of ``predicate`` holds several values at once. Unknown predicates
        are multi-valued: a new value never supersedes an old one on a guess."""
        found = self.predicate(predicate)
        return True if found is None else found.multi_valued

    def is_volatile(self, predicate: str) -> bool:
        """Whether values of ``predicate`` go stale by themselves (``volatile = true``)."""
        found = self.predicate(predicate)
        return found is not None and found.volatile

    def importance(self, predicate: str) -> float:
        found = self.predicate(predicate)
        return 0.5 if found is None else found.importance

    # --- values -----------------------------------------------------------------------------

    def slot_of_value(self, value: str) -> str | None:
        """The predicate whose slot ``value`` names (深色模式 → ``ui_theme``), or ``None``.

        Only the lexicon's value words name a slot. A place does not: it may be where the
        user lives, where they come from or what they like (see :meth:`place`).
        """
        hit = self._values.get(normalize(value))
        return None if hit is None else hit[0]

    def canonical_slot(self, predicate: str, value: str) -> str:
        """Where a claim belongs: a generic predicate (``likes``, ``uses``, ...) moves to the
        single-valued slot its value names ("uses 深色模式" → ``ui_theme``); otherwise
        :meth:`canonical_predicate`."""
        name = self.canonical_predicate(predicate)
        found = self._predicates.get(name)
        if found is not None and found.generic:
            hit = self._values.get(normalize(value))
            if hit is not None and not self._predicates[hit[0]].multi_valued:
                return hit[0]
        return name

    def canonical_value(self, value: str, predicate: str | None = None) -> str:
        """``value`` in its canonical spelling (暗色模式 → 深色模式, "NYC" → "New York").

        With a known ``predicate``, a value that starts exactly one of its canonical values
        (深色 → 深色模式, "dark" → "dark mode") resolves to it.
        """
        key = normalize(value)
        hit = self._values.get(key)
        if hit is not None and (predicate is None or hit[0] == predicate):
            return hit[1]
        place = self.place(value)
        if place is not None:
            return place
        if predicate is not None and len(key) >= 2:
            found = {
                canonical
                for alias, canonical in self._aliases_of.get(predicate, ())
                if alias.startswith(key)
                and (_CJK_ANY.match(key) or alias[len(key) : len(key) + 1] in ("", " "))
            }
            if len(found) == 1:
                return found.pop()
        return value

    def values_of(self, predicate: str) -> list[str]:
        """Every spelling of the values the lexicon lists for ``predicate``, longest first."""
        words = {canonical for _, canonical in self._aliases_of.get(predicate, ())}
        words.update(k for k, (p, _) in self._values.items() if p == predicate)
        return sorted(words, key=len, reverse=True)

    def is_stop_value(self, value: str, predicate: str | None = None) -> bool:
        """A value that is never a fact on its own (这个, "it", and per-predicate words
        such as 饭 for ``eats``)."""
        key = normalize(value)
        return key in self._global_stop or (
            predicate is not None and key in self._stop.get(predicate, frozenset())
        )

    # --- places, jobs, attributes ----------------------------------------------------------

    def place(self, value: str) -> str | None:
        """The canonical name of ``value`` if it is a place (gazetteer or suffix rule)."""
        key = normalize(value)
        if not key or key in self._not_places:
            return None
        known = self._places.get(key)
        if known is not None:
            return known
        if self.home(value) is not None:
            return None
        if key.endswith("市") and key[:-1] in self._places:  # 杭州市 -> 杭州
            return self._places[key[:-1]]
        for suffix in self._place_suffixes:
            if not value.endswith(suffix) or len(value) <= len(suffix):
                continue
            stem = value[: -len(suffix)]
            if _CJK_ONLY.match(value) and len(value) <= 8:
                return value
            if suffix.startswith(" ") and all(w[:1].isupper() for w in stem.split()):
                return value
        return None

    def home(self, value: str) -> str | None:
        """``value`` if it names where someone lives inside a city (紫荆花园小区), else None."""
        for suffix in self._home_suffixes:
            if value.endswith(suffix) and len(value) > len(suffix):
                return value
        return None

    def is_occupation(self, value: str) -> bool:
        """Whether ``value`` reads as a job title (程序员, "software engineer")."""
        if _CJK_ANY.search(value):
            return len(value) <= 12 and value.endswith(self._occupations_zh)
        words = normalize(value).split()
        if not 1 <= len(words) <= 5:
            return False
        return words[-1] in self._occupations_en or " ".join(words[-2:]) in self._occupations_en

    def is_industry(self, value: str) -> bool:
        return normalize(value) in self._industries

    def attribute_predicate(self, noun: str) -> str | None:
        """The predicate a noun names in "我的X是Y" / "my X is Y" (邮箱 → ``email``)."""
        return self._attributes.get(normalize(noun))

    def favorite_predicate(self, topic: str) -> str | None:
        """The predicate of "我最喜欢的X" / "my favorite X" (颜色 → ``favorite_color``)."""
        return self._favorites.get(normalize(topic))

    def habit_verbs(self, language: Language) -> Mapping[str, str]:
        """Habit verbs to their predicates (喝 → ``drinks``; English base and -s forms)."""
        return self._verbs[language]

    def gerunds(self) -> Mapping[str, str]:
        """The -ing forms of English habit verbs ("drinking" → ``drinks``)."""
        return self._ing

    # --- claim text -------------------------------------------------------------------------

    def text_for(self, predicate: str, value: str, *, language: Language, polarity: int) -> str:
        """A readable, self-contained claim in ``language``: 用户偏好深色模式."""
        found = self.predicate(predicate)
        templates = {} if found is None else (found.text if polarity > 0 else found.negated)
        template = templates.get(language)
        if template is not None:
            return template.replace("{value}", value)
        label = self._label(predicate, found, language)
        if language == "zh":
            owner = "用户" if label.startswith("最") else "用户的"
            return f"{owner}{label}{'是' if polarity > 0 else '不是'}{value}"
        return f"User's {label} is {'' if polarity > 0 else 'not '}{value}"

    def _label(self, predicate: str, found: Predicate | None, language: Language) -> str:
        name = self.canonical_predicate(predicate)
        if name.startswith("favorite_") and name in self._favorite_zh and language == "zh":
            return f"最喜欢的{self._favorite_zh[name]}"
        if found is not None and language in found.label and not name.startswith("favorite_"):
            return found.label[language]
        return name.replace("_", " ")


# --- loading ---------------------------------------------------------------------------------

_BUILTIN = "lexicon.toml"


def _read(source: str, data: bytes) -> dict[str, Any]:
    try:
        raw = tomllib.loads(data.decode("utf-8"))
        _LexiconSpec.model_validate(raw)
    except UnicodeDecodeError as exc:
        raise ConfigError(f"lexicon {source}: not UTF-8 text ({exc.reason})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"lexicon {source}: invalid TOML: {exc}") from None
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:5]
        )
        raise ConfigError(f"lexicon {source}: {problems}") from None
    return raw


def _merge(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """``extra`` over ``base``: tables merge, lists extend (without repeats), scalars replace."""
    out = dict(base)
    for key, value in extra.items():
        old = out.get(key)
        if isinstance(old, dict) and isinstance(value, dict):
            out[key] = _merge(old, value)
        elif isinstance(old, list) and isinstance(value, list):
            out[key] = old + [v for v in value if v not in old]
        else:
            out[key] = value
    return out


def _build(documents: Iterable[tuple[str, dict[str, Any]]]) -> Lexicon:
    merged: dict[str, Any] = {}
    sources = []
    for source, raw in documents:
        merged = _merge(merged, raw)
        sources.append(source)
    return Lexicon(_LexiconSpec.model_validate(merged), sources=sources)


def _builtin() -> tuple[str, dict[str, Any]]:
    resource = resources.files("hlmem").joinpath("data").joinpath(_BUILTIN)
    return f"hlmem/data/{_BUILTIN}", _read(f"hlmem/data/{_BUILTIN}", resource.read_bytes())


@lru_cache(maxsize=1)
def default_lexicon() -> Lexicon:
    """The built-in lexicon (read once per process)."""
    return _build([_builtin()])


def load_lexicon(extra_paths: Sequence[str | Path] = ()) -> Lexicon:
    """The built-in lexicon extended by ``extra_paths``, applied in order.

    :raises ConfigError: a file is missing, unreadable, not TOML, or not in the lexicon format.
    """
    if not extra_paths:
        return default_lexicon()
    documents = [_builtin()]
    for entry in extra_paths:
        path = Path(entry)
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise ConfigError(f"lexicon {path}: cannot read: {exc.strerror}") from None
        documents.append((str(path), _read(str(path), data)))
    return _build(documents)
