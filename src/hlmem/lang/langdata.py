"""jieba's default tables, loaded in a fraction of jieba's own time.

A fresh process that cuts Chinese needs two tables of jieba's default dictionary: the prefix
dictionary (``jieba.dt.FREQ``, ~500k words and prefixes with their counts, which jieba reads
from a ``marshal`` cache: ~1.7 s here) and the part-of-speech tagger's word tags
(``jieba.posseg.dt.word_tag_tab``, parsed from ``dict.txt`` at import: ~0.6 s). The pipeline's
CPU helper child (:mod:`hlmem.pipeline.offload`) pays both at every start, so a short burst was over
before it was ready. :func:`load` reads them from a cache of plain data instead (the words as
one UTF-8 text, the counts as an int64 array, each tagged word's tag as one byte): ~0.3 s.

The cache holds exactly the tables jieba built itself: :func:`load` writes it right after a
load the slow way (jieba's own), in this process, of the default dictionary only. Cutting with
cached tables therefore gives the same words and tags as without. The file is keyed by jieba's
version and its dictionary file's size and mtime, lives in jieba's temporary directory, is
written atomically (readers see a whole file or none) and is used only when this user owns it;
anything unexpected in it (truncated, another layout) means the slow load, never an error.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import io
import json
import logging
import os
import sys
import tempfile
from array import array
from pathlib import Path
from types import ModuleType
from typing import Any

log = logging.getLogger(__name__)

#: the cache layout's version (part of its file name)
FORMAT = 1
_MAGIC = b"hlmem-jieba-tables\n"


def load(cache_dir: Path | None = None) -> bool:
    """Initialise ``jieba.dt`` and import ``jieba.posseg`` with the default dictionary's
    tables: from the cache when there is one (``True``), else jieba's own way, then write the
    cache for the next process (``False``). Does nothing to a ``jieba.dt`` already initialised
    (or set to another dictionary) but import the tagger.

    ``cache_dir``: where the cache lives (default: jieba's temporary directory)."""
    import jieba

    jieba.setLogLevel(logging.WARNING)
    dt = jieba.dt
    path = cache_path(jieba, cache_dir)
    with dt.lock:
        fresh = not dt.initialized and dt.dictionary == jieba.DEFAULT_DICT
        tables = _read(path) if fresh and path is not None else None
        if tables is not None:
            freq, total, word_tags = tables
            dt.FREQ, dt.total, dt.initialized = freq, total, True
            _import_posseg(jieba, word_tags)
            return True
    jieba.initialize()
    import jieba.posseg  # type: ignore[import-untyped]

    if fresh and path is not None:
        _write(path, dt.FREQ, dt.total, jieba.posseg.dt.word_tag_tab)
    return False


def skip_pkg_resources() -> None:
    """Make ``import pkg_resources`` fail in this process; for hlmem's own processes only.

    jieba imports setuptools' ``pkg_resources`` to open its dictionary file, and falls back to
    a plain ``open`` when that import fails. The import scans every installed distribution:
    ~0.17 s of a process's start here (jieba then imports in ~0.06 s instead of ~0.24), for a
    file that :func:`load` does not even open. hlmem's helper child and the ``hlmem`` program
    call this before jieba is imported; a library call never does, since other code in a
    user's process may need ``pkg_resources``. Nothing happens when it is imported already."""
    if "pkg_resources" not in sys.modules:
        sys.modules["pkg_resources"] = None  # type: ignore[assignment]


def cache_path(jieba: ModuleType, cache_dir: Path | None = None) -> Path | None:
    """Where the cache of this jieba's default tables lives (``None``: its dictionary file
    cannot be found)."""
    if not jieba.__file__:
        return None
    try:  # where jieba's ``get_module_res`` opens it
        dict_file = Path(jieba.__file__).resolve().parent / jieba.DEFAULT_DICT_NAME
        stat = dict_file.stat()
    except (OSError, AttributeError):
        return None
    key = f"{FORMAT}\x1f{jieba.__version__}\x1f{dict_file}\x1f{stat.st_size}\x1f{stat.st_mtime_ns}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    folder = cache_dir or Path(jieba.dt.tmp_dir or tempfile.gettempdir())
    return folder / f"hlmem-jieba-{digest}.bin"


def _import_posseg(jieba: ModuleType, word_tags: dict[str, str]) -> None:
    """Import ``jieba.posseg`` without its parse of ``dict.txt``, then give it ``word_tags``."""
    if "jieba.posseg" in sys.modules:  # imported already, with its own table
        return
    # At import the tagger reads its word tags from ``jieba.dt.get_dict_file()``: an empty
    # file for that one call (an instance attribute, removed at once), then the cached table.
    jieba.dt.get_dict_file = lambda: io.BytesIO(b"")
    try:
        posseg = importlib.import_module("jieba.posseg")
    finally:
        del jieba.dt.get_dict_file
    posseg.dt.word_tag_tab = word_tags


def _read(path: Path) -> tuple[dict[str, int], int, dict[str, str]] | None:
    try:
        with open(path, "rb") as f:
            if os.fstat(f.fileno()).st_uid != os.getuid():  # not ours: never trusted
                return None
            data = f.read()
        if not data.startswith(_MAGIC):
            return None
        start = len(_MAGIC)
        end = data.index(b"\n", start)
        head: dict[str, Any] = json.loads(data[start:end])
        n, tagged, words_len = head["words"], head["tagged"], head["words_bytes"]
        pos = end + 1
        words = data[pos : pos + words_len].decode("utf-8").split("\n")
        pos += words_len
        counts = array("q")
        counts.frombytes(data[pos : pos + 8 * n])
        tag_ids = data[pos + 8 * n :]
        tags: list[str] = head["tags"]
        if len(words) != n or len(counts) != n or len(tag_ids) != tagged or tagged > n:
            return None
        freq = dict(zip(words, counts, strict=True))
        word_tags = dict(zip(words[:tagged], map(tags.__getitem__, tag_ids), strict=True))
        return freq, int(head["total"]), word_tags
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return None


def _write(path: Path, freq: dict[str, int], total: int, word_tags: dict[str, str]) -> None:
    """Write the cache (the tagged words first, so both tables share their word strings);
    skipped when the tables do not fit the layout."""
    tags = sorted(set(word_tags.values()))
    if len(tags) > 256 or any(w not in freq for w in word_tags):
        return
    tagged = list(word_tags)
    rest = [w for w in freq if w not in word_tags]
    words = tagged + rest
    if any("\n" in w for w in words):
        return
    index = {t: i for i, t in enumerate(tags)}
    blob = "\n".join(words).encode("utf-8")
    head = {"words": len(words), "tagged": len(tagged), "total": total, "tags": tags}
    head["words_bytes"] = len(blob)
    counts = array("q", (freq[w] for w in words))
    tmp: str | None = None
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(_MAGIC + json.dumps(head).encode() + b"\n")
            f.write(blob)
            f.write(counts.tobytes())
            f.write(bytes(index[word_tags[w]] for w in tagged))
        os.replace(tmp, path)
    except (OSError, OverflowError):
        log.warning("jieba table cache not written", extra={"action": "langdata_not_cached"})
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
