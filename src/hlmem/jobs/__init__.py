"""The durable queue: the job table is the truth, in-memory queues only carry work.

Enqueue, claim, complete, parking, recovery of expired leases and the owners that hold them
(``queue``); the retry policy that jobs and model calls share (``retry``).
"""

from __future__ import annotations

from hlmem.jobs.queue import (
    JobQueue,
    JobSpec,
    new_owner,
    owner_is_dead,
    retire_owner,
)
from hlmem.jobs.retry import Backoff, RetryDecision, RetryPolicy

__all__ = [
    "Backoff",
    "JobQueue",
    "JobSpec",
    "RetryDecision",
    "RetryPolicy",
    "new_owner",
    "owner_is_dead",
    "retire_owner",
]
