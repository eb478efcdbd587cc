"""The local embedder: deterministic hashed text features, no model and no download.

A text becomes a bag of features in five families, each hashed with a signed hash into the
same ``dim`` buckets (the "hashing trick"):

- ``word``: Latin-script words (any non-CJK script, in fact), lightly stemmed, function words
  dropped; an identifier such as ``db-prod-2`` or ``v1.2`` also counts as one whole word;
- ``bigram``: adjacent pairs of those words, so word order and phrases count a little;
- ``cjk``: character bigrams of CJK runs (they stand in for words: no segmenter is used);
- ``cjk1``: CJK characters other than function characters (的, 了, 我 ...), weighted highest:
  without word boundaries, the characters two texts share carry most of the Chinese signal;
- ``latin``: character 3-5-grams inside each word, with its ends marked (robust to inflection,
  typos and compound names).

Term counts are weighted sub-linearly (``1 + ln tf``); each family is scaled to its family
weight (its norm estimated as if its features did not collide) and the sum is L2-normalised,
so the cosine of two vectors is close to a weighted mean of per-family overlaps.

The work is vectorised over a whole batch: each text's features are laid out as one string
(its CJK runs, then its stemmed words, separated by spaces), the batch's strings are joined,
and numpy hashes every n-gram and word of that stream at once from prefix sums of its code
points (a polynomial hash mod 2**64, finished by a 64-bit mixer, salted per family); one sort
finds the term counts and two ``bincount`` calls build the vectors. Only tokenising and
stemming run per text in Python. Hashes never use Python's ``hash()`` (salted per process)
and all integer arithmetic is mod 2**64, so vectors are the same in every process and on
every machine; a text's vector does not depend on the other texts of its batch.

:data:`MODEL_ID` names the method and :func:`model_version` hashes every parameter (dimension,
weights, n-gram sizes, stop words, hash constants), so vectors of different settings are never
compared. Everything here is synchronous and CPU-bound; async callers use a thread.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterable, Iterator, Sequence
from functools import cached_property
from typing import Any, Protocol

import numpy as np

from hlmem.lang.text import nfkc

MODEL_ID = "hlmem-local-hash"
DEFAULT_DIM = 384
FEATURES_VERSION = 2  # 1: jieba words, per-feature BLAKE2b; 2: no segmenter, vectorised

#: float32 vectors, one row per text
Vectors = np.ndarray[Any, np.dtype[np.float32]]
_Ints = np.ndarray[Any, np.dtype[np.int64]]
_Hashes = np.ndarray[Any, np.dtype[np.uint64]]

# Family weights: how much each kind of overlap counts in the cosine.
_WEIGHTS: dict[str, float] = {"word": 0.8, "bigram": 0.45, "cjk": 0.9, "cjk1": 1.2, "latin": 1.0}
_FAMILY = {name: i for i, name in enumerate(_WEIGHTS)}
_FAMILY_BITS = 3  # a slot is text << _FAMILY_BITS | family
_FAMILY_WEIGHT = np.zeros(1 << _FAMILY_BITS)
_FAMILY_WEIGHT[: len(_WEIGHTS)] = list(_WEIGHTS.values())
_LATIN_NGRAMS = (3, 4, 5)
_TF_CAP = 1024  # a term counted more often than this in one text counts as this often

_CJK_BLOCKS = ((0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF))
_CJK = "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in _CJK_BLOCKS)
_CJK_RUN = re.compile(f"[{_CJK}]+")
_LATIN_WORD = re.compile(f"[^\\W_{_CJK}]+(?:[-_.'][^\\W_{_CJK}]+)*")
_ASCII_WORD = re.compile(r"[a-z0-9]+(?:[-_.'][a-z0-9]+)*")  # _LATIN_WORD on casefolded ASCII
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
_STOP_CHARS = frozenset("的了是在和与就都也吗呢吧啊呀哦嗯着过把被让给又还很太我你他她它这那个请")
_SUFFIXES = ("ing", "ies", "ied", "ed", "es", "ly", "s")

# The stream: a space separates words and texts; _MARK opens a whole identifier.
_SPACE, _MARK = " ", "\x01"
_C_OTHER, _C_SPACE, _C_MARK, _C_CJK_STOP, _C_CJK = range(5)  # CJK classes last: ``>= STOP``
# Polynomial hash base (odd, so it has an inverse mod 2**64) and the murmur3 fmix64 constants.
_BASE = 0x9E3779B97F4A7C15
_BASE_INVERSE = pow(_BASE, -1, 1 << 64)
_MIX = (0xFF51AFD7ED558CCD, 0xC4CEB9FE1A85EC53)
_HASH_BITS = 40  # hash bits kept next to the slot in a sort key: 32 for the bucket, 1 for the sign
_CHUNK_TEXTS = 256
_CHUNK_CHARS = 1 << 18
_LATIN_MEMO_SIZE = 1 << 16


def _class_table() -> np.ndarray[Any, np.dtype[np.uint8]]:
    """The class of every code point in the Basic Multilingual Plane."""
    table = np.full(0x10000, _C_OTHER, dtype=np.uint8)
    for lo, hi in _CJK_BLOCKS:
        table[lo : hi + 1] = _C_CJK
    table[[ord(ch) for ch in _STOP_CHARS]] = _C_CJK_STOP
    table[ord(_SPACE)] = _C_SPACE
    table[ord(_MARK)] = _C_MARK
    return table


_CLASS = _class_table()


def _salt(name: str) -> int:
    return int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "little")


_SALT = {
    name: _salt(f"{MODEL_ID}/{name}")
    for name in ("word", "bigram", "cjk", "cjk1", *(f"latin{n}" for n in _LATIN_NGRAMS))
}
# 1 + ln(tf) with the sign of the hash: _TF_WEIGHT[tf << 1 | sign bit]
_TF_WEIGHT = np.array(
    [sign * (1.0 + math.log(tf)) if tf else 0.0 for tf in range(_TF_CAP + 1) for sign in (-1, 1)]
)


# --- per text: tokens -------------------------------------------------------------------------


def _fold(text: str) -> str:
    """NFKC and casefold: :func:`hlmem.lang.text.normalize` without its whitespace pass."""
    return nfkc(text).casefold()


def _stem(word: str) -> str:
    """A tiny English suffix stripper: "deploying", "deployed", "deploys" -> "deploy"."""
    if not word.isascii() or not word.isalpha() or len(word) <= 4:
        return word
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            stem = word[: -len(suffix)]
            return stem + "y" if suffix in ("ies", "ied") else stem
    return word


class _LatinMemo(dict[str, str]):
    """A word as the stream spells it: stemmed parts without stop words, then the whole word
    after :data:`_MARK` when it has parts (``db-prod-2`` -> ``db prod 2 \\x01db-prod-2``)."""

    def __missing__(self, word: str) -> str:
        parts = _PART_SPLIT.split(word)
        kept = [_stem(part) for part in parts if part not in _STOP_EN]
        if len(parts) > 1:
            kept.append(_MARK + word)
        if len(self) >= _LATIN_MEMO_SIZE:
            self.clear()
        entry = self[word] = _SPACE.join(kept)
        return entry


_LATIN = _LatinMemo()


def _segment(text: str) -> str:
    """One text as the stream holds it: a space, its CJK runs, a space, its words."""
    folded = _fold(text)
    if folded.isascii():  # the same words as _LATIN_WORD finds, found faster
        runs, words = "", _ASCII_WORD.findall(folded)
    else:
        runs, words = _SPACE.join(_CJK_RUN.findall(folded)), _LATIN_WORD.findall(folded)
    return f"{_SPACE}{runs}{_SPACE}{_SPACE.join(map(_LATIN.__getitem__, words))}"


# --- per batch: features ----------------------------------------------------------------------


def _powers(base: int, n: int) -> _Hashes:
    out = np.empty(n, dtype=np.uint64)
    out[0] = 1
    out[1:] = base
    return np.cumprod(out, out=out)


def _fmix(h: _Hashes) -> _Hashes:
    """murmur3's 64-bit finaliser (in place): every output bit depends on every input bit."""
    h ^= h >> np.uint64(33)
    h *= np.uint64(_MIX[0])
    h ^= h >> np.uint64(33)
    h *= np.uint64(_MIX[1])
    h ^= h >> np.uint64(33)
    return h


class _Stream:
    """The code points of a batch's segments, with prefix sums for substring hashes."""

    def __init__(self, segments: list[str]) -> None:
        text = "".join(segments) + _SPACE
        self.code = np.frombuffer(text.encode("utf-32-le"), dtype="<u4")
        size = len(self.code)
        lengths = np.array([len(s) for s in segments] + [1], dtype=np.int64)
        self.owner: _Ints = np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)
        self.cls = _CLASS[np.minimum(self.code, 0xFFFF)]  # beyond the BMP: _C_OTHER
        self.shift = _powers(_BASE, size + 1)
        self.unshift = _powers(_BASE_INVERSE, size)
        self.prefix = np.zeros(size + 1, dtype=np.uint64)
        np.cumsum(self.code * self.shift[:size], out=self.prefix[1:])

    def hash(self, start: _Ints, length: _Ints | int) -> _Hashes:
        """sum(code[start + j] * BASE**j for j < length): the same wherever the substring is."""
        out: _Hashes = (self.prefix[start + length] - self.prefix[start]) * self.unshift[start]
        return out

    def join(self, left: _Hashes, length: _Ints, right: _Hashes) -> _Hashes:
        """The hash of ``left + " " + right`` from the hashes of its parts."""
        out: _Hashes = left + self.shift[length] * np.uint64(ord(_SPACE))
        out += self.shift[length + 1] * right
        return out


class _Features:
    """Every feature occurrence of a batch: where it starts, its family and its raw hash."""

    def __init__(self, stream: _Stream) -> None:
        self.stream = stream
        self.starts: list[_Ints] = []
        self.hashes: list[_Hashes] = []
        self.tags: list[tuple[int, int]] = []  # (family, salt) of each part

    def add(self, family: str, salt: str, start: _Ints, h: _Hashes) -> None:
        self.starts.append(start)
        self.hashes.append(h)
        self.tags.append((_FAMILY[family], _SALT[salt]))

    def keyed(self) -> tuple[_Ints, _Hashes]:
        """Slots (``text << _FAMILY_BITS | family``) and salted, mixed hashes of each occurrence."""
        counts = [len(s) for s in self.starts]
        family = np.repeat(np.array([f for f, _ in self.tags], dtype=np.int64), counts)
        salt = np.repeat(np.array([s for _, s in self.tags], dtype=np.uint64), counts)
        slot = (self.stream.owner[np.concatenate(self.starts)] << _FAMILY_BITS) | family
        return slot, _fmix(np.concatenate(self.hashes) ^ salt)


def _features(stream: _Stream) -> _Features:
    feats = _Features(stream)
    cls = stream.cls
    chars = np.nonzero(cls == _C_CJK)[0]
    feats.add("cjk1", "cjk1", chars, stream.code[chars].astype(np.uint64))
    cjk = cls >= _C_CJK_STOP
    pairs = np.nonzero(cjk[:-1] & cjk[1:])[0]
    feats.add("cjk", "cjk", pairs, stream.hash(pairs, 2))
    # words are the runs between spaces; the stream starts and ends with one
    space = cls == _C_SPACE
    edges = np.nonzero(space[:-1] != space[1:])[0] + 1
    start, length = edges[0::2], edges[1::2] - edges[0::2]
    first = cls[start]
    whole = first <= _C_MARK  # Latin words and whole identifiers
    feats.add("word", "word", start[whole], stream.hash(start[whole], length[whole]))
    latin = first == _C_OTHER
    start, length = start[latin], length[latin]
    words = stream.hash(start, length)
    pair = np.nonzero(stream.owner[start[:-1]] == stream.owner[start[1:]])[0]
    bigrams = stream.join(words[pair], length[pair], words[pair + 1])
    feats.add("bigram", "bigram", start[pair], bigrams)
    # n-grams of " word ": from the space before each word up to the space after it
    offset = np.arange(int(length.sum())) - np.repeat(np.cumsum(length) - length, length)
    begin = np.repeat(start - 1, length) + offset
    room = np.repeat(length, length) - offset  # word characters from ``begin + 1`` on
    for n in _LATIN_NGRAMS:
        at = begin[room >= n - 2]
        feats.add("latin", f"latin{n}", at, stream.hash(at, n))
    return feats


def _vectors(feats: _Features, texts: int, dim: int) -> np.ndarray[Any, np.dtype[np.float64]]:
    """Count equal features of a slot (one sort), weight, scale by family, sum into buckets."""
    slots, hashes = feats.keyed()
    if not len(slots):
        return np.zeros((texts, dim), dtype=np.float64)
    key = (slots.astype(np.uint64) << np.uint64(_HASH_BITS)) | (
        hashes >> np.uint64(64 - _HASH_BITS)
    )
    key.sort()
    first = np.nonzero(np.concatenate(([True], key[1:] != key[:-1])))[0]
    tf = np.empty_like(first)
    tf[:-1] = first[1:] - first[:-1]
    tf[-1] = len(key) - first[-1]
    key = key[first]
    slot = (key >> np.uint64(_HASH_BITS)).view(np.int64)
    sign = ((key >> np.uint64(32)) & np.uint64(1)).view(np.int64)
    weight = _TF_WEIGHT[(np.minimum(tf, _TF_CAP) << 1) | sign]
    norm = np.sqrt(np.bincount(slot, weights=weight * weight, minlength=texts << _FAMILY_BITS))
    family_weight = np.tile(_FAMILY_WEIGHT, texts)
    scale = np.divide(family_weight, norm, out=np.zeros_like(norm), where=norm > 0)
    weight *= scale[slot]
    bucket = ((key & np.uint64(0xFFFFFFFF)) * np.uint64(dim)) >> np.uint64(32)
    bucket += (slot >> _FAMILY_BITS).view(np.uint64) * np.uint64(dim)
    sums = np.bincount(bucket.view(np.int64), weights=weight, minlength=texts * dim)
    return sums.astype(np.float64, copy=False).reshape(texts, dim)


def _embed_chunk(texts: list[str], dim: int) -> np.ndarray[Any, np.dtype[np.float32]]:
    stream = _Stream([_segment(text) for text in texts])
    out = _vectors(_features(stream), len(texts), dim)
    norm = np.sqrt(np.square(out).sum(axis=1, keepdims=True))
    np.divide(out, norm, out=out, where=norm > 0)
    return out.astype(np.float32)


def _chunks(texts: Iterable[str]) -> Iterator[list[str]]:
    """Batches of at most _CHUNK_TEXTS texts and about _CHUNK_CHARS characters."""
    chunk: list[str] = []
    chars = 0
    for text in texts:
        if chunk and (len(chunk) >= _CHUNK_TEXTS or chars + len(text) > _CHUNK_CHARS):
            yield chunk
            chunk, chars = [], 0
        chunk.append(text)
        chars += len(text)
    if chunk:
        yield chunk


class TextEmbedder(Protocol):
    """An embedder that runs in this process: :class:`LocalEmbedder`, or
    :class:`hlmem.lang.e5.E5Embedder`. Stored texts go through :meth:`embed`, a question
    through :meth:`embed_query` (a model may embed the two differently)."""

    model_id: str
    dim: int

    @property
    def model_version(self) -> str: ...

    def embed(self, texts: Sequence[str] | Iterable[str]) -> Vectors: ...

    def embed_query(self, text: str) -> Vectors: ...


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

    def embed_one(self, text: str) -> Vectors:
        """The vector of one text; an empty or feature-less text gives the zero vector."""
        vector: Vectors = self.embed([text])[0]
        return vector

    def embed_query(self, text: str) -> Vectors:
        """A question's vector: the same features as a stored text's (:meth:`embed_one`)."""
        return self.embed_one(text)

    def embed(self, texts: Sequence[str] | Iterable[str]) -> Vectors:
        """Vectors of ``texts`` as one ``(n, dim)`` float32 array, rows in input order."""
        rows = [_embed_chunk(chunk, self.dim) for chunk in _chunks(texts)]
        if not rows:
            return np.zeros((0, self.dim), dtype=np.float32)
        return rows[0] if len(rows) == 1 else np.vstack(rows)


def model_version(dim: int = DEFAULT_DIM) -> str:
    """A short, stable hash of the embedder's parameters."""
    parts = [
        MODEL_ID,
        str(FEATURES_VERSION),
        str(dim),
        repr(sorted(_WEIGHTS.items())),
        repr((_CJK_BLOCKS, _LATIN_NGRAMS, _SUFFIXES, _TF_CAP, _BASE, _MIX, _HASH_BITS)),
        " ".join(sorted(_STOP_EN | _STOP_CHARS)),
    ]
    return hashlib.blake2b("\x1f".join(parts).encode("utf-8"), digest_size=6).hexdigest()


def cosine(a: Vectors, b: Vectors) -> float:
    """Cosine similarity of two vectors (0.0 when either is zero)."""
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    if na == 0 or nb == 0:
        return 0.0
    return float(np.dot(a, b) / (na * nb))
