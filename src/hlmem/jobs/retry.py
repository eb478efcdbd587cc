"""The one retry policy: how long to wait before trying again, and when to stop.

Both things hlmem retries use it: a job (the stage runner, :class:`RetryPolicy`: attempts
counted in the job table, the wait written as the job's ``run_after``) and a model call (the
gateway, :class:`Backoff` alone: retries counted in the call, the wait slept).

The wait grows exponentially from ``base_s`` and is capped at ``max_s``; each wait is drawn
between half of that and all of it ("equal jitter"), so retries never spin and a crowd of
them does not come back at the same instant. The randomness is the policy's ``rng``: a test
passes a seeded (or fixed) ``random.Random`` and knows every wait.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from hlmem.config import StageConfig


@dataclass(frozen=True)
class Backoff:
    """Exponential backoff with equal jitter."""

    base_s: float
    max_s: float
    rng: random.Random = field(default_factory=random.Random, compare=False, repr=False)

    def delay_s(self, retry: int) -> float:
        """The wait before retry number ``retry`` (0: the first retry): between half and all
        of ``min(max_s, base_s * 2**retry)``."""
        ceiling = min(self.max_s, self.base_s * 2.0 ** max(retry, 0))
        return ceiling * (0.5 + self.rng.random() / 2)


@dataclass(frozen=True)
class RetryDecision:
    """Run the job again, not before ``run_after`` (wall seconds, as the job table holds)."""

    run_after: float


@dataclass(frozen=True)
class RetryPolicy:
    """A job's retries: up to ``max_attempts`` attempts in all, waiting :class:`Backoff`."""

    max_attempts: int
    backoff: Backoff

    @classmethod
    def of(cls, cfg: StageConfig, rng: random.Random) -> RetryPolicy:
        """The policy a stage's configuration sets (``max_attempts``, ``retry_base_s``,
        ``retry_max_s``), drawing its jitter from ``rng``."""
        return cls(cfg.max_attempts, Backoff(cfg.retry_base_s, cfg.retry_max_s, rng))

    def decide(self, attempts: int, now: float) -> RetryDecision | None:
        """After a job's ``attempts``-th attempt failed at ``now``: when to run it again, or
        ``None`` when its attempts are used up."""
        if attempts >= self.max_attempts:
            return None
        return RetryDecision(run_after=now + self.backoff.delay_s(attempts - 1))
