"""Synthetic dense embeddings for the ANN benches: unit vectors with the structure of a text
embedding model's (multilingual-e5-small: 384 dimensions, L2-normalised).

Not model output: embedding a million synthetic texts with e5 on two cores would take hours.
What they share with e5's vectors is what an ANN index is sensitive to:

- **anisotropy**: every vector leans on one common direction, so unrelated texts are not
  orthogonal (e5-small's cosines between unrelated sentences sit around 0.7-0.8; here
  :data:`COMMON` sets ~0.7), which shrinks the spread of values an int8 quantiser must resolve;
- **topics within subjects**: each vector belongs to one of ``n / PER_TOPIC`` topic centres
  (restatements of the same fact), and each topic to one of :data:`SUBJECTS` subjects (a person,
  a service, a project), so that similarity is a continuum: ~0.93 inside a topic, ~0.8 inside a
  subject, ~0.7 between unrelated vectors; a query's 50 nearest reach past its own topic;
- **queries** are not stored vectors: a query is a topic's centre with fresh noise (recall
  "without the query's embedding" stored).

Everything is a pure function of the seed, generated in blocks (a million rows in ~10 s).
"""

from __future__ import annotations

from typing import Any

import numpy as np

DIM = 384
#: weight of the common direction against a unit topic-plus-noise part: cosines between
#: unrelated vectors ~ COMMON**2 / (1 + COMMON**2)
COMMON = 1.5
#: noise around a topic centre (per dimension, before normalisation), relative to the centre
NOISE = 0.55
#: noise of a topic centre around its subject's
TOPIC_SPREAD = 0.9
SUBJECTS = 2_000
#: stored vectors per topic, on average
PER_TOPIC = 20
BLOCK_ROWS = 65_536

Matrix = np.ndarray[Any, np.dtype[np.float32]]


def _unit(x: Matrix) -> Matrix:
    out: Matrix = (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)
    return out


class DenseWorld:
    """Topic centres and a common direction for a store of about ``n`` vectors, fixed by
    ``seed``."""

    def __init__(self, seed: int, n: int, *, dim: int = DIM) -> None:
        rng = np.random.default_rng(seed)
        self.dim = dim
        self.seed = seed
        self.common = _unit(rng.standard_normal((1, dim)).astype(np.float32))[0]
        subjects = _unit(rng.standard_normal((SUBJECTS, dim)).astype(np.float32))
        topics = max(SUBJECTS, n // PER_TOPIC)
        spread = rng.standard_normal((topics, dim)).astype(np.float32)
        spread *= np.float32(TOPIC_SPREAD / np.sqrt(dim))
        self.centres = _unit(subjects[rng.integers(0, SUBJECTS, topics)] + spread)

    def _around(self, topic: np.ndarray[Any, Any], rng: np.random.Generator) -> Matrix:
        noise = rng.standard_normal((len(topic), self.dim)).astype(np.float32)
        noise *= np.float32(NOISE / np.sqrt(self.dim))
        part = _unit(self.centres[topic] + noise)
        return _unit(part + np.float32(COMMON) * self.common)

    def vectors(self, n: int, *, stream: int = 0) -> Matrix:
        """``n`` stored vectors (row-major float32, unit norm); ``stream`` picks another
        independent sequence (another namespace, the events beside the claims)."""
        return self.vectors_at(0, n, stream=stream)

    def vectors_at(self, start: int, n: int, *, stream: int = 0) -> Matrix:
        """Rows ``start`` to ``start + n`` of the sequence :meth:`vectors` gives (each block of
        :data:`BLOCK_ROWS` rows has a seed of its own: align ``start`` to save work)."""
        out = np.empty((n, self.dim), dtype=np.float32)
        stop = start + n
        for block in range(start // BLOCK_ROWS * BLOCK_ROWS, stop, BLOCK_ROWS):
            rng = np.random.default_rng([self.seed, stream, block])
            topic = rng.integers(0, len(self.centres), BLOCK_ROWS)
            rows = self._around(topic, rng)
            lo, hi = max(start, block), min(stop, block + BLOCK_ROWS)
            out[lo - start : hi - start] = rows[lo - block : hi - block]
        return out

    def queries(self, n: int, *, seed: int = 1) -> Matrix:
        """``n`` query vectors: topic centres with noise of their own (never a stored vector)."""
        rng = np.random.default_rng([self.seed, 10**6, seed])
        return self._around(rng.integers(0, len(self.centres), n), rng)
