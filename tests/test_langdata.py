"""``hlmem.lang.langdata``: jieba's default tables from hlmem's cache cut exactly as jieba's own.

Each case runs in a fresh interpreter (jieba's tables are per process), with the cache in a
directory of its own: the first process loads jieba's way and writes the cache, the next ones
read it; all of them must hold the same tables and cut Chinese and English text the same way
(words, part-of-speech tags, full-text bodies, atoms). A damaged cache is never an error.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

PROBE = r"""
import dataclasses, hashlib, json, sys
from pathlib import Path
from hlmem.lang import langdata, segment
from hlmem.lang.atoms import analysis as atoms
from hlmem.lang.event_terms import event_body
from hlmem.lang.text import tokens

cached = langdata.load(cache_dir=Path(sys.argv[1]))
segment.load()
atoms.load()
import jieba, jieba.posseg

def canonical(value):  # sets sorted: their order changes with the hash seed
    if dataclasses.is_dataclass(value):
        return {f.name: canonical(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (set, frozenset)):
        return sorted(map(str, value))
    if isinstance(value, (list, tuple)):
        return [canonical(v) for v in value]
    return value if isinstance(value, (str, int, float, type(None))) else repr(value)

def digest(obj):
    return hashlib.sha256(json.dumps(obj, ensure_ascii=False).encode()).hexdigest()

texts = [
    "记住：我住在杭州西湖区，明天下午三点和老王去体检。",
    "其实不是周三，而是周四开会；部署 v1.2 不允许删除 /var/log。",
    "Remember that the prod DB is db-prod-2 and I prefer dark mode in v1.3.",
]
print(json.dumps({
    "cached": cached,
    "freq": digest([jieba.dt.total, sorted(jieba.dt.FREQ.items())]),
    "tags": digest(sorted(jieba.posseg.dt.word_tag_tab.items())),
    "pos": [[(p.word, p.flag) for p in jieba.posseg.cut(t)] for t in texts],
    "bodies": [event_body(t) for t in texts],
    "tokens": [tokens(t) for t in texts],
    "atoms": [canonical(atoms.atoms_of(t)) for t in texts],
    "entities": [atoms.entities_of(t) for t in texts],
}, ensure_ascii=False))
"""


def probe(cache_dir: Path) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(cache_dir)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def caches(cache_dir: Path) -> list[Path]:
    return sorted(cache_dir.glob("hlmem-jieba-*.bin"))


@pytest.fixture(scope="module")
def jiebas_own(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """A cache directory and what a first process, with no cache there yet, loaded jieba's
    way (and wrote the cache from); one such load serves both tests (each takes seconds)."""
    cache_dir = tmp_path_factory.mktemp("jieba-cache")
    return cache_dir, probe(cache_dir)


def test_cached_tables_cut_exactly_as_jiebas_own(
    jiebas_own: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    origin, first = jiebas_own
    assert first["cached"] is False
    [written] = caches(origin)
    assert written.stat().st_mode & 0o077 == 0  # written private, as mkstemp makes it
    cache = tmp_path / written.name
    shutil.copy2(written, cache)

    second = probe(tmp_path)
    assert second["cached"] is True
    assert {k: v for k, v in second.items() if k != "cached"} == {
        k: v for k, v in first.items() if k != "cached"
    }
    assert ["北京市"] != second["pos"][0]  # the probe really cut something
    assert ("杭州", "ns") in [tuple(p) for p in second["pos"][0]]
    assert "v1.2" in second["bodies"][1]
    assert caches(tmp_path) == [cache]  # read, not rewritten


def test_a_damaged_cache_means_jiebas_own_load(
    jiebas_own: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    origin, reference = jiebas_own
    [written] = caches(origin)
    data = written.read_bytes()
    cache = tmp_path / written.name
    for damaged in (data[: len(data) // 2], b"not a cache", data[:40] + b"\xff" * 64):
        cache.write_bytes(damaged)
        got = probe(tmp_path)
        assert got["cached"] is False
        assert {k: v for k, v in got.items() if k != "cached"} == {
            k: v for k, v in reference.items() if k != "cached"
        }
        # ... and the cache is whole again for the next process
        assert cache.read_bytes() == data
