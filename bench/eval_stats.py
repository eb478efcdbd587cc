"""Bootstrap intervals for the retrieval evaluation's per-question metrics.

Percentile bootstrap over questions: :data:`RESAMPLES` resamples of a group's questions (with
replacement, as many as the group holds), each resample's mean, and the 2.5th and 97.5th
percentiles of those means as the 95 % interval. The resamples of a group are drawn once, from
a generator seeded by :data:`SEED` and the group's name, and shared by every system and metric
of that group: the intervals of a run are the same every time it is run on the same questions,
and a difference between two systems is resampled paired (the same questions for both).

Questions are resampled one by one: LoCoMo's questions come from five conversations, so its
intervals leave out the variation between conversations (they are narrower than a resampling
of conversations would give).
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

RESAMPLES = 2_000
SEED = 20_261_202
LEVEL = 0.95

Resamples = npt.NDArray[np.intp]


def resamples(n: int, *, key: str, count: int = RESAMPLES, seed: int = SEED) -> Resamples:
    """``count`` rows of ``n`` question positions drawn with replacement, the same for the
    same ``key`` (a group's name), ``n``, ``count`` and ``seed``.

    :raises ValueError: ``n`` or ``count`` below 1.
    """
    if n < 1 or count < 1:
        raise ValueError("a bootstrap needs at least one question and one resample")
    rng = np.random.default_rng([seed, zlib.crc32(key.encode("utf-8"))])
    return rng.integers(0, n, size=(count, n))


def interval(values: Sequence[float], rows: Resamples, *, level: float = LEVEL) -> list[float]:
    """``[low, high]``: the percentile interval of the mean of ``values`` (one per question,
    in the order ``rows`` indexes) over the resamples ``rows``."""
    means = np.asarray(values, dtype=np.float64)[rows].mean(axis=1)
    tail = (1 - level) / 2
    low, high = np.quantile(means, [tail, 1 - tail])
    return [round(float(low), 4), round(float(high), 4)]


def paired_difference(
    a: Sequence[float], b: Sequence[float], rows: Resamples, *, level: float = LEVEL
) -> dict[str, float | list[float]]:
    """Mean of ``a - b`` (per question, both in the same order) and its interval, the same
    questions drawn for both systems in each resample."""
    diff = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    return {
        "diff": round(float(diff.mean()), 4),
        "ci95": interval(diff.tolist(), rows, level=level),
    }
