"""Activation decay: how easily a claim is recalled, as time passes and as it is used.

A claim's ``activation`` is stored with the time it was last evaluated (``activation_at``;
before that, when the claim was stored). Its value *now* is the stored value halved once per
half-life since then, where the half-life depends on the claim's scope and importance
(``maintenance.half_life_days`` times ``1 + half_life_importance_factor * importance``). So
decay is exact at any moment without rewriting rows: recall ranks with :func:`current`, and
maintenance only writes the decayed value down now and then (exponential decay composes, so
writing it down changes nothing but the stored pair).

Access raises activation: a recall that returns a claim adds ``access_boost``, positive
feedback adds ``feedback_boost`` (both after decay, capped at ``activation_cap``), and both count
as an access for archiving (``last_accessed_at``). Decay and boosts never touch ``confidence``:
how sure we are of a fact is not how often we think of it.

This module holds the arithmetic and the two writes (run on the writer thread inside a
transaction); it decides nothing about archiving, which is the maintenance stage's job.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from datetime import datetime

from hlmem.clock import iso, parse_iso
from hlmem.config import MaintenanceConfig
from hlmem.store import SyncTx

SECONDS_PER_DAY = 86400.0


def half_life_days(cfg: MaintenanceConfig, scope: str, importance: float) -> float:
    """The activation half-life of a claim of ``scope`` and ``importance``, in days."""
    return cfg.half_life_days.of(scope) * (1 + cfg.half_life_importance_factor * importance)


def days_between(since: str, now: datetime) -> float:
    """Days from the ISO time ``since`` to ``now`` (0 when ``since`` is later)."""
    return max(0.0, (now - parse_iso(since)).total_seconds() / SECONDS_PER_DAY)


def decayed(activation: float, *, days: float, half_life: float) -> float:
    """``activation`` after ``days`` of exponential decay with ``half_life`` (days)."""
    if math.isinf(half_life) or days <= 0:
        return activation
    return activation * math.pow(0.5, days / half_life)


def current(
    cfg: MaintenanceConfig,
    *,
    activation: float,
    since: str,
    scope: str,
    importance: float,
    now: datetime,
) -> float:
    """A claim's activation at ``now``: the stored value evaluated at ``since``, decayed."""
    return decayed(
        activation,
        days=days_between(since, now),
        half_life=half_life_days(cfg, scope, importance),
    )


def boost_sync(
    tx: SyncTx,
    cfg: MaintenanceConfig,
    claim_ids: Sequence[str] | Mapping[str, int],
    *,
    now: datetime,
    boost: float,
    count_access: bool,
) -> int:
    """Raise the activation of ``claim_ids`` by ``boost`` after decaying it to ``now``, and
    mark them accessed now (``count_access``: a recall, which also counts in
    ``access_count``). A mapping gives how many times each claim was accessed: it is raised
    that many boosts (as many accesses at ``now``) and counts that many accesses. Runs inside
    the caller's transaction; returns the claims changed."""
    times = claim_ids if isinstance(claim_ids, Mapping) else dict.fromkeys(claim_ids, 1)
    found = tx.fetchall("lifecycle_activation_rows", (json.dumps(list(times)),))
    at = iso(now)
    updates = [
        (
            min(
                current(
                    cfg,
                    activation=r["activation"],
                    since=r["since"],
                    scope=r["scope"],
                    importance=r["importance"],
                    now=now,
                )
                + boost * times[r["id"]],
                cfg.activation_cap,
            ),
            at,
            times[r["id"]] if count_access else 0,
            at,
            r["id"],
        )
        for r in found
    ]
    tx.executemany("lifecycle_touch", updates)
    return len(updates)
