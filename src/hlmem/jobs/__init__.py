"""The durable queue: the job table is the truth, in-memory queues only carry work.

Enqueue, claim, complete, retry decisions, parking, recovery of expired leases and the owners
that hold them (``queue``).
"""

from __future__ import annotations

from hlmem.jobs.queue import (
    JobQueue,
    JobSpec,
    new_owner,
    owner_is_dead,
    retire_owner,
    retry_decision,
)

__all__ = [
    "JobQueue",
    "JobSpec",
    "new_owner",
    "owner_is_dead",
    "retire_owner",
    "retry_decision",
]
