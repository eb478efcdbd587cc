"""Okapi BM25 over pre-tokenised documents: the retrieval evaluation's lexical baseline.

Plain Python with an inverted index, no dependencies: the corpora are one conversation each
(tens to a few hundred turns), so building and querying cost far less than tokenising. The
caller tokenises (the evaluation uses ``hlmem.lang.text.tokens``, so the baseline and hlmem see the
same words); this module never does.

Score of document d for query q (terms repeated in q count each time, as in the usual
formulation):  sum over t in q of  idf(t) * tf(t,d) * (k1 + 1) / (tf(t,d) + k1 * (1 - b + b *
|d| / avgdl)),  with the non-negative idf of Lucene, ln(1 + (N - df + 0.5) / (df + 0.5)).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

K1 = 1.2
B = 0.75


class BM25:
    """An index of ``docs`` (token lists); documents are named by their position."""

    def __init__(self, docs: Sequence[Sequence[str]], *, k1: float = K1, b: float = B) -> None:
        self.k1 = k1
        self.b = b
        self.n_docs = len(docs)
        self.lengths = [len(d) for d in docs]
        self.avgdl = sum(self.lengths) / self.n_docs if self.n_docs else 0.0
        self.postings: dict[str, list[tuple[int, int]]] = {}
        for i, doc in enumerate(docs):
            for term, tf in Counter(doc).items():
                self.postings.setdefault(term, []).append((i, tf))

    def idf(self, term: str) -> float:
        df = len(self.postings.get(term, ()))
        return math.log(1 + (self.n_docs - df + 0.5) / (df + 0.5))

    def scores(self, query: Sequence[str]) -> dict[int, float]:
        """Score of every document sharing at least one term with ``query`` (others score 0)."""
        out: dict[int, float] = {}
        if not self.avgdl:
            return out
        for term, qtf in Counter(query).items():
            postings = self.postings.get(term)
            if not postings:
                continue
            idf = self.idf(term)
            for i, tf in postings:
                norm = self.k1 * (1 - self.b + self.b * self.lengths[i] / self.avgdl)
                out[i] = out.get(i, 0.0) + qtf * idf * tf * (self.k1 + 1) / (tf + norm)
        return out

    def top(self, query: Sequence[str], k: int) -> list[int]:
        """The ``k`` best documents, best first; ties go to the earlier document. Documents with
        no query term are never returned, so the list may be shorter than ``k``."""
        scored = self.scores(query)
        return sorted(scored, key=lambda i: (-scored[i], i))[:k]
