"""Whether a recalled memory really matches a forget query: the absolute floor of forget by query.

Recall ranks; it never says "nothing here is about that". Its best hit for "我老婆叫什么" in a
store that only knows a cat's name is the cat. So a query forget (:mod:`hlmem.claims.forgetting`)
keeps only the items that pass this floor, and only then applies the relative score among them:

- **Content terms.** The query's search terms (:func:`hlmem.lang.segment.query_terms`: jieba for
  Chinese, stop words dropped) minus the words that say what is asked rather than what it is
  about: question words (什么, 哪, where, what's), the answer's type (名字, name, city, 号码),
  naming and copula verbs (叫, called, named), forget verbs (忘掉, forget, delete) and the
  query's time words (之前, 上个月). "我老婆叫什么" keeps "老婆"; "我叫什么名字" keeps nothing.
- **Terms floor.** A memory passes when it holds at least ``forget.query_min_term_coverage`` of
  the query's content terms (all of them by default): "我喜欢喝咖啡" does not name "我喜欢喝茶",
  "I live in Beijing" does not name "I live in Shanghai". A memory holds a term when one of its
  search tokens (:func:`hlmem.lang.segment.index_text`, the same tokens full-text search indexes) is
  the term; a Chinese term may also start a longer token ("猫" in "猫叫"; never "住" in "记住");
  a Latin term may differ by a plain inflection ("lives", "lived"); a glued compound
  ("db-prod") also matches its parts. Secret markers (``[REDACTED:…]``) are no content.
- **Vector floor.** Or its stored vector's cosine with the query's is at least
  ``forget.query_min_similarity`` (the local embedder's hashed n-grams: a near-restatement, set
  high because a different value in the same words scores high too: "部署 v1.3" / "部署 v1.2"
  0.79). Items without a vector, and stores whose embedder is not local, use terms only.

Pure and synchronous (jieba): :func:`hlmem.claims.forgetting.forget` calls it on a worker thread.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict

from hlmem.config import ForgetConfig
from hlmem.lang import HAN_RUN, index_text, query_terms, spelled_apart
from hlmem.messages import RecallItem, RecallResult

#: words of a forget query that say what is asked, not what it is about (see module docstring)
QUERY_NOISE = frozenset(
    """
    忘掉 忘记 忘了 忘 删掉 删除 删了 删 去掉 抹掉 清除 清掉 不要 别 记住 记得
    记下 记 请 麻烦 帮 帮我 一下 关于 有关 相关 所有 全部 一切 叫 叫做 名叫
    称为 名字 名称 哪儿 几 多少 怎么 怎样 是不是 号码 城市 地方 时间 日期 信息
    内容 记忆 东西 事 事情 我家 这条 那条 说 说过 讲 告诉 提到
    forget forgets forgot forgotten delete remove erase drop please about everything anything
    all any memory memories info information stuff thing things name names named called call
    calls where when why how whats wheres whos hows whens city place number date time said say
    says told tell mentioned just again know remember
    """.split()
)
_MARKER = re.compile(r"\[REDACTED:[a-z_]+\]")
_SUFFIXES = ("ing", "ed", "es", "s")


class ForgetMatch(BaseModel):
    """A recalled item that passed the floor and was chosen: what a query forget names."""

    model_config = ConfigDict(frozen=True)

    kind: Literal["claim", "event"]
    id: str
    #: as recall shows it: secrets redacted
    text: str
    #: recall's score (the relative score compares these)
    score: float
    #: the query's content terms it holds
    terms: tuple[str, ...]
    #: its vector's cosine with the query's; None without a vector (or a local embedder)
    similarity: float | None = None
    #: equivalent claims recall folded into it: they go with it
    folded: tuple[str, ...] = ()


def content_terms(query: str, time_words: Iterable[str] = ()) -> list[str]:
    """The query's content terms, in order (module docstring)."""
    times = [w for w in time_words if w]
    return [
        t
        for t in query_terms(query)
        if t not in QUERY_NOISE and not any(t in w or w in t for w in times)
    ]


def _stem(word: str) -> str:
    """A Latin word without a plain inflection: "lives", "lived", "living" -> "liv"."""
    for suffix in _SUFFIXES:
        if len(word) > len(suffix) + 2 and word.endswith(suffix) and not word.endswith("ss"):
            word = word[: -len(suffix)]
            break
    return word[:-1] if len(word) > 3 and word.endswith("e") else word


def _holds(term: str, parts: str | None, tokens: set[str], stems: set[str]) -> bool:
    if term in tokens:
        return True
    if HAN_RUN.fullmatch(term):
        # A Chinese term may begin a longer word ("猫" in "猫叫"), never end one ("住" in "记住").
        return any(len(tok) > len(term) and tok.startswith(term) for tok in tokens)
    words = (parts or term).split(" ")
    return all(w in tokens or _stem(w) in stems for w in words)


def shared_terms(terms: list[str], query: str, texts: Iterable[str]) -> list[str]:
    """The content ``terms`` of ``query`` that the memory whose ``texts`` are given holds."""
    tokens: set[str] = set()
    for text in texts:
        tokens.update(index_text(_MARKER.sub(" ", text)).split())
    stems = {_stem(t) for t in tokens}
    apart = spelled_apart(query)
    return [t for t in terms if _holds(t, apart.get(t), tokens, stems)]


def passes(
    terms: list[str],
    shared: list[str],
    similarity: float | None,
    *,
    min_coverage: float,
    min_similarity: float,
) -> bool:
    """Whether a memory with these ``shared`` terms and vector ``similarity`` passes the floor."""
    if terms and shared and len(shared) >= min_coverage * len(terms) - 1e-9:
        return True
    return similarity is not None and similarity >= min_similarity


def _texts(item: RecallItem) -> list[str]:
    return [item.text, item.value or "", *(e.quote for e in item.evidence)]


def choose(
    result: RecallResult,
    similarities: dict[tuple[str, str], float],
    cfg: ForgetConfig,
) -> tuple[list[str], list[ForgetMatch]]:
    """The query's content terms, and the items of ``result`` a query forget names: those that
    pass the floor (module docstring), then of them those scoring at least
    ``cfg.query_relative_score`` of the best one, at most ``cfg.query_max_items``, best first.
    ``similarities`` holds the items' cosines by (kind, id)."""
    query = result.query.text
    terms = content_terms(query, result.query.time_words)
    passed: list[ForgetMatch] = []
    for item in result.items:
        shared = shared_terms(terms, query, _texts(item)) if terms else []
        sim = similarities.get((item.kind, item.id))
        if passes(
            terms,
            shared,
            sim,
            min_coverage=cfg.query_min_term_coverage,
            min_similarity=cfg.query_min_similarity,
        ):
            passed.append(
                ForgetMatch(
                    kind=item.kind,
                    id=item.id,
                    text=item.text,
                    score=item.score,
                    terms=tuple(shared),
                    similarity=sim,
                    folded=item.folded,
                )
            )
    best = max((m.score for m in passed), default=0.0)
    chosen = [m for m in passed if m.score >= best * cfg.query_relative_score]
    return terms, sorted(chosen, key=lambda m: -m.score)[: cfg.query_max_items]
