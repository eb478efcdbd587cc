"""The local embedder: deterministic hashed text features, no model and no download.

A text becomes a bag of features in five families, each hashed with a signed hash into the
same ``dim`` buckets (the "hashing trick"):

- ``word``: jieba search words for Chinese, words for other scripts (via :func:`hlmem.text.tokens`),
  with English words lightly stemmed and function words dropped;
- ``bigram``: adjacent pairs of those words, so word order and phrases count a little;
- ``cjk``: character bi- and trigrams of CJK runs (robust where jieba splits differently);
- ``cjk1``: CJK single characters, a weak signal for very short texts;
- ``latin``: character 3-5-grams inside each non-CJK word, with ``<`` and ``>`` marking its
  ends (robust to inflection, typos and compound names such as ``db-prod-2``).

Term counts are weighted sub-linearly (``1 + ln tf``); each family is L2-normalised on its own
and scaled by its family weight, so a long word cannot drown the others, and the sum is
L2-normalised again. The cosine of two vectors is then close to a weighted mean of per-family
overlaps. Hashes are BLAKE2b of the feature's bytes, never Python's ``hash()`` (which is salted
per process), so vectors are identical in every process and on every machine.

:data:`MODEL_ID` names the method and :func:`model_version` hashes every parameter (dimension,
weights, n-gram ranges, stop words, jieba's version), so vectors of different settings are
never compared. Everything here is synchronous and CPU-bound; async callers use a thread.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from functools import cached_property, lru_cache
from itertools import pairwise
from typing import Any

import numpy as np

from hlmem.text import normalize, tokens

MODEL_ID = "hlmem-local-hash"
DEFAULT_DIM = 384
FEATURES_VERSION = 1

# Family weights: how much each kind of overlap counts in the cosine.
_WEIGHTS: dict[str, float] = {"word": 0.8, "bigram": 0.45, "cjk": 0.9, "cjk1": 0.35, "latin": 1.0}
_CJK_NGRAMS = (2, 3)
_LATIN_NGRAMS = (3, 4, 5)

_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_LATIN_WORD = re.compile(r"[^\W_]+(?:[-_.'][^\W_]+)*")
_PART_SPLIT = re.compile(r"[-_.']")
# Function words carry no topic: they only make unrelated sentences look alike.
_STOP_EN = frozenset(
    """a an the is are was were be been being am i you he she it we they me him her us them my
    your his its our their mine yours this that these those there here what which who whom whose
    when where why how do does did doing done have has had having to of and or but if then so
    as at by for from in into on onto off out over under up down with without about than too
    very can could will would shall should may might must not no nor only just also please
    remember let lets s t re ve ll d m ok okay yes hey hi oh""".split()
)
_STOP_ZH = frozenset(
    "的 了 是 在 和 与 就 都 也 吗 呢 吧 啊 呀 哦 嗯 着 过 把 被 让 给 又 还 很 太 我 你 他 她 它 "
    "我们 你们 他们 这 那 这个 那个 一个 请 记住 一下 什么 怎么".split()
)
_STOP_CHARS = frozenset("的了是在和与就都也吗呢吧啊呀哦嗯着过把被让给又还很太我你他她它这那个请")
_SUFFIXES = ("ing", "ies", "ied", "ed", "es", "ly", "s")


def _stem(word: str) -> str:
    """A tiny English suffix stripper: "deploying", "deployed", "deploys" -> "deploy"."""
    if not word.isascii() or not word.isalpha() or len(word) <= 4:
        return word
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            stem = word[: -len(suffix)]
            return stem + "y" if suffix in ("ies", "ied") else stem
    return word


def _words(text: str) -> list[str]:
    out = []
    for word in tokens(text):
        if word in _STOP_EN or word in _STOP_ZH:
            continue
        out.append(_stem(word))
    return out


def _features(text: str) -> dict[str, Counter[str]]:
    """The features of one normalised text, by family."""
    families: dict[str, Counter[str]] = {name: Counter() for name in _WEIGHTS}
    words = _words(text)
    families["word"].update(words)
    families["bigram"].update(f"{a} {b}" for a, b in pairwise(words))
    for run in _CJK_RUN.findall(text):
        families["cjk1"].update(ch for ch in run if ch not in _STOP_CHARS)
        for n in _CJK_NGRAMS:
            families["cjk"].update(run[i : i + n] for i in range(len(run) - n + 1))
    for match in _LATIN_WORD.finditer(_CJK_RUN.sub(" ", text)):
        compound = match.group(0)
        parts = _PART_SPLIT.split(compound)
        if len(parts) > 1:
            families["word"][compound] += 1  # identifiers such as db-prod-2 match whole, too
        for word in parts:
            if word in _STOP_EN:
                continue
            marked = f"<{_stem(word)}>"
            for n in _LATIN_NGRAMS:
                families["latin"].update(marked[i : i + n] for i in range(len(marked) - n + 1))
    return families


@lru_cache(maxsize=1 << 17)
def _bucket(feature: str, dim: int) -> tuple[int, float]:
    """The bucket and sign of one feature: BLAKE2b, stable across processes."""
    digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
    value = int.from_bytes(digest, "little")
    return value % dim, (1.0 if value >> 63 else -1.0)


def _family_vector(
    family: str, counts: Counter[str], dim: int
) -> np.ndarray[Any, np.dtype[np.float64]] | None:
    if not counts:
        return None
    index = np.empty(len(counts), dtype=np.int64)
    weight = np.empty(len(counts), dtype=np.float64)
    for i, (feature, tf) in enumerate(counts.items()):
        bucket, sign = _bucket(f"{family}\x1f{feature}", dim)
        index[i] = bucket
        weight[i] = sign * (1.0 + math.log(tf))
    vec = np.bincount(index, weights=weight, minlength=dim)
    norm = float(np.linalg.norm(vec))
    return vec / norm if norm > 0 else None


class LocalEmbedder:
    """Deterministic hashed-feature embeddings, L2-normalised float32 of ``dim`` dimensions."""

    model_id = MODEL_ID

    def __init__(self, dim: int = DEFAULT_DIM) -> None:
        if dim < 16:
            raise ValueError("dim must be at least 16")
        self.dim = dim

    @cached_property
    def model_version(self) -> str:
        """A short hash of every parameter that shapes the vectors."""
        return model_version(self.dim)

    def embed_one(self, text: str) -> np.ndarray[Any, np.dtype[np.float32]]:
        """The vector of one text; an empty or feature-less text gives the zero vector."""
        out = np.zeros(self.dim, dtype=np.float64)
        for family, counts in _features(normalize(text)).items():
            vec = _family_vector(family, counts, self.dim)
            if vec is not None:
                out += _WEIGHTS[family] * vec
        norm = float(np.linalg.norm(out))
        if norm > 0:
            out /= norm
        return out.astype(np.float32)

    def embed(self, texts: Sequence[str] | Iterable[str]) -> np.ndarray[Any, np.dtype[np.float32]]:
        """Vectors of ``texts`` as one ``(n, dim)`` float32 array, rows in input order."""
        rows = [self.embed_one(t) for t in texts]
        if not rows:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.vstack(rows)


def model_version(dim: int = DEFAULT_DIM) -> str:
    """A short, stable hash of the embedder's parameters (with jieba's version)."""
    import jieba

    parts = [
        MODEL_ID,
        str(FEATURES_VERSION),
        str(dim),
        repr(sorted(_WEIGHTS.items())),
        repr((_CJK_NGRAMS, _LATIN_NGRAMS, _SUFFIXES)),
        " ".join(sorted(_STOP_EN | _STOP_ZH | _STOP_CHARS)),
        str(getattr(jieba, "__version__", "?")),
    ]
    return hashlib.blake2b("\x1f".join(parts).encode("utf-8"), digest_size=6).hexdigest()


def cosine(
    a: np.ndarray[Any, np.dtype[np.float32]], b: np.ndarray[Any, np.dtype[np.float32]]
) -> float:
    """Cosine similarity of two vectors (0.0 when either is zero)."""
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    if na == 0 or nb == 0:
        return 0.0
    return float(np.dot(a, b) / (na * nb))
