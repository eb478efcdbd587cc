"""Segmentation for the full-text channel of recall: FTS bodies and safe MATCH expressions.

SQLite's FTS5 tokenizers cannot cut Chinese into words, so the text is segmented here and
stored as space-separated tokens (:func:`index_text`); FTS5 then only splits on spaces, folds
case and diacritics and stems English (``porter unicode61 ... tokenchars '.'``, see migration
``0004_recall_fts.sql``). A query is segmented the same way (:func:`query_terms`) and turned
into a MATCH string in which every term is a quoted string (:func:`match_expression`): user
input can never reach FTS5's query syntax. This module is synchronous and CPU-bound (jieba):
async callers go through ``anyio.to_thread.run_sync``. It knows nothing of SQL tables
(:mod:`hlmem.index.fts` does).

Rules, the same for bodies and queries (text first normalised by :func:`hlmem.lang.text.normalize`):

- A run of Han characters is cut by jieba in search mode: every word, then the two- and
  three-character words inside longer ones, so "主题" finds "界面主题" and "北京" finds
  "我住在北京市".
- Elsewhere a word is a run of letters or digits; words joined by ``- . : _ '`` form a
  compound. A body holds the compound's parts in order, then the parts glued together
  ("e-mail" -> ``e mail email``); a query asks for the glued token (``"email"``), which finds
  "e-mail", "e_mail" and "email" alike, or, when no item holds it, for its parts as a phrase
  (:func:`spelled_apart`: "billing-api" finds "the billing api"). A compound with a '.' in it
  ("v1.2-beta", "node.js") is asked for as its parts in one phrase (``"v1.2 beta"``). A phrase
  costs far more to rank than a token: FTS5 walks the doclists of all its parts, twice (the
  match and bm25's count), to find the rows where they stand together (6.7 vs 0.6 ms for
  "k8s-node-9" in a store of 150,000 events).
- A dotted number stays whole ("v1.2", "3.14", "python3.11"); a body also holds its number
  and its letter prefix ("1.2", "python"). Digit-group commas go ("1,000" -> ``1000``).
- Punctuation and symbols are dropped. Bodies keep stop words; queries drop them.

jieba keeps one global dictionary, which :mod:`hlmem.lang.text` (and through it the local embedder)
and :mod:`hlmem.lang.atoms.analysis` also use. A user word added there would change their tokens and
make stored vectors disagree with new ones, so this module segments with its own ``jieba.Tokenizer``
and its own user words (the built-in ``hlmem/data/userdict.txt`` and
:func:`load_user_dictionary`).
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterator, Sequence
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from hlmem.errors import ConfigError
from hlmem.lang.text import normalize

log = logging.getLogger(__name__)

#: queries longer than this are cut: a paragraph pasted as a query needs no more terms
MAX_QUERY_TERMS = 64
#: texts up to this length are cached; longer ones are segmented each time
_CACHE_MAX_CHARS = 512

_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
#: a run of Han characters (captured: ``split`` keeps it); shared with hlmem.lang.event_terms
HAN_RUN = re.compile(f"([{_HAN}]+)")
_HAN_ONLY = re.compile(f"[{_HAN}]+")
_WORD = re.compile(r"[^\W_]")
# Letters or digits, possibly joined into a compound by - . : _ ' (the joiners are dropped).
_COMPOUND = re.compile(r"[^\W_]+(?:[-.:_'’][^\W_]+)*")
JOINER = re.compile(r"[-:_'’]")
_PLAIN = re.compile(r"[^\W_]+")
_DOTTED = re.compile(r"([^\W\d_]*)(\d+(?:\.\d+)+)")
DIGIT_COMMA = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")

#: function words dropped from queries (bodies keep them; see the module docstring)
STOP_WORDS = frozenset(
    """
    的 地 得 了 着 过 到 是 我 你 您 他 她 它 们 在 和 与 及 或 就 都 也 还 又 很
    吗 呢 吧 啊 呀 哦 嗯 么 把 被 对 从 给 让 这 那 哪 谁 啥 什么 怎么 怎样 怎么样
    哪个 哪些 哪里 为什么 我们 你们 他们 她们 它们 这个 那个 这些 那些 一个 一下
    a an the is are am was were be been being i me my mine you your yours he him his she her
    it its we us our they them their to of and or in on at for by with from as this that these
    those what which who whom whose do does did have has had
    """.split()
)


class _Segmenter:
    """jieba's cutter with hlmem's user words, created on first use.

    ``generation`` counts dictionary loads; cached results are keyed by it, so a text cut
    while a dictionary was being loaded is never served afterwards.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.generation = 0
        self._tokenizer: Any = None
        self._loaded: set[str] = set()

    def tokenizer(self) -> Any:
        tokenizer = self._tokenizer
        if tokenizer is None:
            with self.lock:
                if self._tokenizer is None:
                    self._tokenizer = _new_tokenizer()
                    builtin = resources.files("hlmem").joinpath("data", "userdict.txt")
                    self._add(_parse(str(builtin), builtin.read_text("utf-8")))
                    if isinstance(builtin, Path):  # config/userdict.txt links to it
                        self._loaded.add(str(builtin.resolve()))
                tokenizer = self._tokenizer
        return tokenizer

    def load(self, paths: Sequence[str | Path]) -> None:
        self.tokenizer()  # initialise first: it takes the lock too
        for path in paths:
            key = str(Path(path).expanduser().resolve())
            with self.lock:
                if key in self._loaded:
                    continue
                entries = _parse(key, _read(key))
                self._add(entries)
                self._loaded.add(key)
            log.info(
                "user dictionary loaded",
                extra={"action": "userdict_loaded", "path": key, "words": len(entries)},
            )

    def _add(self, entries: list[tuple[str, int | None, str | None]]) -> None:
        # Caller holds the lock. Concurrent cuts may see part of the new words; the
        # generation bump after the last word keeps those cuts out of the cache.
        for word, freq, tag in entries:
            self._tokenizer.add_word(word, freq, tag)
        self.generation += 1


def _new_tokenizer() -> Any:
    """A ``jieba.Tokenizer`` with the default dictionary, isolated from ``jieba.dt``.

    Loading the default dictionary again costs about 1.3 s and 75 MB here; copying the one
    jieba already holds costs 12 ms and 15 MB (keys and counts are shared). The copy relies
    on jieba's ``FREQ``/``total``/``initialized`` attributes, stable since 0.39; without them
    the tokenizer loads its dictionary the slow way.
    """
    import jieba

    jieba.setLogLevel(logging.WARNING)
    jieba.initialize()  # jieba's own lock makes this safe to race with hlmem.lang.text
    tokenizer = jieba.Tokenizer()
    base = jieba.dt
    if isinstance(getattr(base, "FREQ", None), dict) and getattr(base, "initialized", False):
        tokenizer.FREQ = dict(base.FREQ)
        tokenizer.total = base.total
        tokenizer.initialized = True
    else:  # pragma: no cover - a jieba without the attributes above
        tokenizer.initialize()
    return tokenizer


def _read(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"user dictionary {path}: no such file") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"user dictionary {path}: not UTF-8 text ({exc.reason})") from None
    except OSError as exc:
        raise ConfigError(f"user dictionary {path}: cannot read ({exc.strerror})") from None


def _parse(source: str, text: str) -> list[tuple[str, int | None, str | None]]:
    """Entries of a user dictionary: ``word [frequency] [tag]`` per line, ``#`` comments.

    The whole file is checked before any word is added: a bad file adds nothing.

    :raises ConfigError: a line is not in that format.
    """
    entries: list[tuple[str, int | None, str | None]] = []
    for number, line in enumerate(text.splitlines(), 1):
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        word, rest = normalize(fields[0]), fields[1:]
        freq: int | None = None
        tag: str | None = None
        if rest and rest[0].isdecimal():
            freq = int(rest.pop(0))
        if rest and re.fullmatch(r"[a-z]+", rest[0]):
            tag = rest.pop(0)
        problem = None
        if rest:
            problem = f"expected 'word [frequency] [tag]', got {line.strip()!r}"
        elif freq == 0:
            # jieba turns frequency 0 into a global HMM rule that would reach jieba.dt too
            problem = f"frequency of {word!r} must be positive"
        elif not _HAN_ONLY.fullmatch(word):
            # other scripts are cut by hlmem's own rules, never by jieba
            problem = f"{word!r} must be Han characters only"
        if problem:
            raise ConfigError(f"user dictionary {source}, line {number}: {problem}")
        entries.append((word, freq, tag))
    return entries


_segmenter = _Segmenter()


def load() -> None:
    """Load the segmenter now (jieba's dictionary and the user dictionaries; ~1 s once per
    process) instead of on the first text that needs it."""
    _segmenter.tokenizer()


def load_user_dictionary(paths: Sequence[str | Path]) -> None:
    """Add the words of jieba user dictionaries to the recall segmentation.

    Each file is loaded once per process (by resolved path; a second call is a no-op, even
    when the file has changed). Words change the bodies of items indexed from then on:
    already indexed items keep their old tokens, which search mode mostly makes harmless
    (a new word "深色模式" is still found through "深色" and "模式").

    :raises ConfigError: a file is missing, unreadable, not UTF-8 or has a bad line.
    """
    _segmenter.load(paths)


def _han_words(run: str) -> list[str]:
    words: list[str] = _segmenter.tokenizer().lcut_for_search(run)
    return words


def _compound_units(compound: str) -> tuple[list[str], list[str]]:
    """The units of a compound in order, and the extra tokens a body adds after them."""
    units: list[str] = []
    extra: list[str] = []
    for piece in JOINER.split(compound):
        dotted = _DOTTED.fullmatch(piece)
        if dotted:
            units.append(piece)
            prefix, number = dotted.groups()
            if prefix:
                extra.append(number)
                if len(prefix) > 1:
                    extra.append(prefix)
        else:
            units.extend(piece.split("."))
    if len(units) > 1 and not any("." in unit for unit in units):
        extra.append("".join(units))  # "e-mail" -> "email"
    return units, extra


def _query_term(compound: str, units: list[str], extra: list[str]) -> str:
    """What a query asks for to find ``compound``: the glued token its bodies hold, when it
    has one and no '.' ("e-mail" -> "email"), else its units as one phrase ("v1.2 beta",
    "node js": event bodies written by earlier versions hold no glued token for a '.'
    joint, so a query keeps finding them)."""
    if len(units) > 1 and "." not in compound:
        return extra[-1]
    return " ".join(units)


def other_tokens(chunk: str) -> list[str]:
    """A body's tokens for a chunk of normalised text without Han characters (digit-group
    commas removed): each compound's units, then its extra tokens. Shared with
    :mod:`hlmem.lang.event_terms`, so that claims and events index a compound alike."""
    tokens: list[str] = []
    for word in _COMPOUND.findall(chunk):
        if _PLAIN.fullmatch(word):  # most words: no joiner, no dot
            tokens.append(word)
        else:
            units, extra = _compound_units(word)
            tokens += units
            tokens += extra
    return tokens


def _terms(text: str) -> Iterator[tuple[list[str], list[str], str]]:
    """(units, extra, query term) for every term of ``text``: a Han word is one unit, no
    extra and its own query term."""
    text = DIGIT_COMMA.sub("", normalize(text))
    for index, chunk in enumerate(HAN_RUN.split(text)):
        if not chunk:
            continue
        if index % 2:  # the split's captured group: a Han run
            for word in _han_words(chunk):
                if _WORD.search(word):
                    yield [word], [], word
        else:
            for match in _COMPOUND.finditer(chunk):
                units, extra = _compound_units(match.group())
                yield units, extra, _query_term(match.group(), units, extra)


def _index_uncached(text: str) -> str:
    tokens: list[str] = []
    for units, extra, _query in _terms(text):
        tokens += units
        tokens += extra
    return " ".join(tokens)


@lru_cache(maxsize=4096)
def _index_cached(text: str, generation: int) -> str:
    return _index_uncached(text)


def index_text(text: str) -> str:
    """The FTS body of a claim or event: its search tokens separated by single spaces.

    Short texts are cached (bounded LRU, keyed by the dictionary generation).
    """
    if len(text) > _CACHE_MAX_CHARS:
        return _index_uncached(text)
    return _index_cached(text, _segmenter.generation)


@lru_cache(maxsize=1024)
def _query_cached(text: str, generation: int) -> tuple[tuple[str, str | None], ...]:
    seen: dict[str, str | None] = {}
    for units, _extra, term in _terms(text):
        if term not in STOP_WORDS and term not in seen:
            spaced = " ".join(units)
            seen[term] = spaced if spaced != term else None
    return tuple(seen.items())[:MAX_QUERY_TERMS]


def _query(text: str) -> tuple[tuple[str, str | None], ...]:
    """A query's (term, parts or None) pairs, cached: what query_terms and spelled_apart read."""
    return _query_cached(text[: _CACHE_MAX_CHARS * 8], _segmenter.generation)


def query_terms(text: str) -> list[str]:
    """The distinct search terms of a query, in order, stop words dropped (at most
    :data:`MAX_QUERY_TERMS`). A compound is one glued token ("e-mail" -> "email",
    "2024-05-01" -> "20240501"), or, with a dotted number in it, a term of several tokens
    matched as a phrase ("v1.2-beta" -> "v1.2 beta")."""
    return [term for term, _ in _query(text)]


def spelled_apart(text: str) -> dict[str, str]:
    """The glued compound terms of a query (:func:`query_terms`) with their parts as a phrase
    ("billing-api": ``{"billingapi": "billing api"}``): what full-text search asks for instead
    when no item holds the glued token, because the stored text spells it with spaces."""
    return {term: spaced for term, spaced in _query(text) if spaced is not None}


def quote(term: str) -> str:
    """``term`` as an FTS5 string: double-quoted, inner double quotes doubled."""
    return '"' + term.replace('"', '""') + '"'


def match_expression(text: str) -> str | None:
    """A safe FTS5 MATCH expression for a query: its terms quoted and joined with ``OR``.

    bm25 ranks items that contain more (and rarer) terms first. ``None`` when the query has
    nothing to search for: empty, punctuation only or stop words only.
    """
    terms = query_terms(text)
    if not terms:
        return None
    return " OR ".join(quote(term) for term in terms)
