"""The tokens of hlmem's full-text index, for a BM25 baseline over exactly what recall searches.

An event's row in the index (``recall_fts``) is :func:`hlmem.lang.event_body` of its text:
secrets left out, a Han run as its characters, pairs and triples, other words as
``index_text`` writes them. FTS5's tokenizer then folds case and diacritics and stems English
(``porter unicode61 remove_diacritics 2 tokenchars '.'``). A question is searched by its
:func:`hlmem.lang.query_terms` (jieba's search mode for Chinese, stop words out, each term
once), each term put through the same tokenizer.

Porter is not re-implemented here: the texts go into an in-memory FTS5 table created with the
tokenize options of hlmem's own schema (read from ``hlmem/sql/schema.sql``), in the SQLite
module hlmem's store uses, and an ``fts5vocab`` table of kind ``instance`` lists the tokens each
row holds. So the baseline sees every token the index holds, as often as it holds it.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from importlib import resources

from hlmem.lang import event_body, query_terms
from hlmem.store.sync import sqlite_module

#: rows tokenized per in-memory table: keeps SQLite's sort of one batch's instances small
BATCH_ROWS = 2_000
_TOKENIZE = re.compile(
    r"CREATE VIRTUAL TABLE recall_fts USING fts5\((?:[^;]*?)tokenize\s*=\s*\"([^\"]+)\"", re.S
)


def index_tokenizer() -> str:
    """The ``tokenize`` option of hlmem's ``recall_fts`` table, from the shipped schema.

    :raises RuntimeError: the schema no longer declares it where this looks.
    """
    schema = resources.files("hlmem.sql").joinpath("schema.sql").read_text(encoding="utf-8")
    found = _TOKENIZE.search(schema)
    if found is None:
        raise RuntimeError("hlmem/sql/schema.sql: no tokenize option on recall_fts")
    return found[1]


class FtsTokenizer:
    """FTS5's tokens of texts, as hlmem's index would hold them; one in-memory database."""

    def __init__(self, *, driver: str = "auto") -> None:
        self.tokenize = index_tokenizer()
        self._db = sqlite_module(driver).connect(":memory:", isolation_level=None)

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> FtsTokenizer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def tokenize_bodies(self, bodies: Sequence[str]) -> list[list[str]]:
        """The tokens of each ready-made FTS body, in order of ``bodies`` (each token as
        often as the row holds it; their order within a row is not kept)."""
        out: list[list[str]] = []
        for start in range(0, len(bodies), BATCH_ROWS):
            out.extend(self._batch(bodies[start : start + BATCH_ROWS]))
        return out

    def _batch(self, bodies: Sequence[str]) -> list[list[str]]:
        db = self._db
        db.execute("DROP TABLE IF EXISTS vocab")
        db.execute("DROP TABLE IF EXISTS docs")
        quoted = self.tokenize.replace("'", "''")
        db.execute(
            f"CREATE VIRTUAL TABLE docs USING fts5(body, content = '', tokenize = '{quoted}')"
        )
        db.execute("CREATE VIRTUAL TABLE vocab USING fts5vocab(docs, 'instance')")
        db.execute("BEGIN")
        db.executemany("INSERT INTO docs (rowid, body) VALUES (?, ?)", enumerate(bodies, 1))
        db.execute("COMMIT")
        out: list[list[str]] = [[] for _ in bodies]
        for doc, joined in db.execute(
            "SELECT doc, group_concat(term, ' ') FROM vocab GROUP BY doc"
        ):
            # unicode61 never keeps a space inside a token; interned: a corpus repeats them
            out[doc - 1] = [sys.intern(term) for term in joined.split(" ")]
        return out

    def event_tokens(self, texts: Sequence[str]) -> list[list[str]]:
        """The tokens of each text as the index holds it for an event with that content."""
        return self.tokenize_bodies([event_body(t) for t in texts])

    def query_tokens(self, texts: Sequence[str]) -> list[list[str]]:
        """The tokens each query's full-text search asks for: its terms, tokenized. Two terms
        that stem alike ("runs", "running") give the token twice, as the two MATCH phrases
        both match it."""
        return self.tokenize_bodies([" ".join(query_terms(t)) for t in texts])
