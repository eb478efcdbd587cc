"""The operations report (``hlmem ops report``): what the model calls cost and how the queue is.

Reads only: the ledger (``provider_calls``), the job table, event and claim counts, and the
budget's running sums. Calls are summarised per (stage, provider, model) and in total: calls,
outcomes, tokens, cost, latency p50/p95 (of the last request of each call), failure rate,
retries and 429s, and how much of the tokens and cost is the provider's own count (its
``usage``) and how much hlmem's estimate where the provider reported none. Job-queue health is
per stage: jobs by status, parked ones by reason (budget, provider outage), and the age of the
oldest unfinished one; jobs parked for a provider outage are also listed by provider. Cost per
event and per claim divide the window's cost by the events recorded and claims learnt in the
same window. :func:`unfinished_work` counts the jobs that failed since a time and those parked
now (what ``ingest --drain`` and ``worker --drain`` report). No API key is ever in any of these
tables.
"""

from __future__ import annotations

import json
import math
import re
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict

from hlmem.clock import Clock, iso, wall
from hlmem.config import Config
from hlmem.errors import InputError
from hlmem.gateway.budget import Budget
from hlmem.messages import JobStatus
from hlmem.store import Store

_SINCE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
ALL = "*"


def parse_since(text: str) -> timedelta:
    """``30m``, ``24h``, ``7d``, ``90s``, ``2w`` as a duration.

    :raises InputError: anything else.
    """
    match = _SINCE.match(text)
    if not match or float(match.group(1)) <= 0:
        raise InputError(f"--since {text!r}: give a duration such as 30m, 24h or 7d")
    return timedelta(seconds=float(match.group(1)) * _UNIT_S[match.group(2)])


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class CallSummary(_Model):
    """Provider calls of one (stage, provider, model), or of all (``*``)."""

    stage: str
    provider: str
    model: str
    calls: int
    ok: int
    errors: int
    refused: int
    prompt_tokens: int
    completion_tokens: int
    cost: float
    latency_p50_ms: float | None
    latency_p95_ms: float | None
    failure_rate: float  # errors / calls sent (refused calls were never sent)
    retries: int
    rate_limited: int  # 429 answers received
    error_classes: dict[str, int]
    # Of the tokens and cost above, what hlmem estimated because the provider reported no usage
    # (the rest is the provider's own count).
    estimated_calls: int = 0
    estimated_prompt_tokens: int = 0
    estimated_completion_tokens: int = 0
    estimated_cost: float = 0.0


class QueueHealth(_Model):
    """Jobs of one stage by status, and the age of its oldest unfinished job."""

    stage: str
    todo: int
    doing: int
    parked: int
    failed: int
    done: int
    oldest_unfinished_age_s: float | None
    parked_budget: int = 0  # parked by BudgetExceeded
    parked_outage: int = 0  # parked by ProviderOutage


class OutageLine(_Model):
    """Jobs parked because a provider has been failing (``*``: jobs of no known provider)."""

    provider: str
    parked: int
    since: datetime


class WorkSummary(_Model):
    """Jobs that failed since a time, and jobs parked now (by reason)."""

    failed: int
    parked: int
    parked_budget: int
    parked_outage: int

    @property
    def finished(self) -> bool:
        return self.failed == 0 and self.parked == 0

    def line(self) -> str:
        return (
            f"failed {self.failed}, parked {self.parked} "
            f"(budget {self.parked_budget}, outage {self.parked_outage})"
        )


class BudgetLine(_Model):
    scope: str
    used: float
    limit: float | None  # None: no limit


class OpsReport(_Model):
    since: datetime
    until: datetime
    currency: str
    total: CallSummary
    by_call: list[CallSummary]
    queue: list[QueueHealth]
    events: int
    claims: int
    cost_per_event: float | None
    cost_per_claim: float | None
    budget: list[BudgetLine]
    outages: list[OutageLine] = []


def percentile(values: list[float], q: float) -> float | None:
    """The nearest-rank ``q`` quantile (0 < q <= 1) of ``values``; ``None`` when empty."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(math.ceil(q * len(ordered)) - 1, 0)]


def _summary(stage: str, provider: str, model: str, rows: list[Any]) -> CallSummary:
    outcomes = [r["outcome"] for r in rows]
    ok, errors = outcomes.count("ok"), outcomes.count("error")
    latencies = [r["latency_ms"] for r in rows if r["latency_ms"] is not None]
    classes: dict[str, int] = defaultdict(int)
    guessed = [r for r in rows if r["usage_estimated"]]
    for r in rows:
        if r["error_class"]:
            classes[r["error_class"]] += 1
    return CallSummary(
        stage=stage,
        provider=provider,
        model=model,
        calls=len(rows),
        ok=ok,
        errors=errors,
        refused=outcomes.count("refused"),
        prompt_tokens=sum(r["prompt_tokens"] for r in rows),
        completion_tokens=sum(r["completion_tokens"] for r in rows),
        cost=sum(r["cost"] for r in rows),
        latency_p50_ms=percentile(latencies, 0.50),
        latency_p95_ms=percentile(latencies, 0.95),
        failure_rate=errors / (ok + errors) if ok + errors else 0.0,
        retries=sum(r["retries"] for r in rows),
        rate_limited=sum(r["rate_limited"] for r in rows),
        error_classes=dict(sorted(classes.items())),
        estimated_calls=len(guessed),
        estimated_prompt_tokens=sum(r["prompt_tokens"] for r in guessed),
        estimated_completion_tokens=sum(r["completion_tokens"] for r in guessed),
        estimated_cost=sum(r["cost"] for r in guessed),
    )


async def _queue(store: Store) -> list[QueueHealth]:
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    oldest: dict[str, float] = {}
    for r in await store.fetchall("job_counts"):
        kind = r["kind"]
        counts[kind][r["status"]] += r["n"]
        if r["status"] != JobStatus.DONE:
            oldest[kind] = min(oldest.get(kind, math.inf), r["oldest"])
    for r in await store.fetchall("parked_job_reasons"):
        counts[r["kind"]][f"parked_{r['reason']}"] += r["n"]
    now = wall()
    return [
        QueueHealth(
            stage=kind,
            todo=c["todo"],
            doing=c["doing"],
            parked=c["parked"],
            failed=c["failed"],
            done=c["done"],
            oldest_unfinished_age_s=round(now - oldest[kind], 3) if kind in oldest else None,
            parked_budget=c["parked_budget"],
            parked_outage=c["parked_outage"],
        )
        for kind, c in sorted(counts.items())
    ]


async def _budget_lines(cfg: Config, store: Store, clock: Clock) -> list[BudgetLine]:
    now = clock.now()
    budget = Budget(cfg, store, clock, owner="")
    limits = budget.limits(None, now)
    rows = await store.fetchall(
        "budget_usage_periods", (json.dumps(sorted({lim.period for lim in limits})),)
    )
    used = {(r["period"], r["namespace"]): float(r["amount"]) for r in rows}
    for namespace in sorted({r["namespace"] for r in rows if r["namespace"]}):
        limits += budget.limits(namespace, now)[2:]
    return [
        BudgetLine(
            scope=lim.scope,
            used=used.get((lim.period, lim.namespace), 0.0),
            limit=None if math.isinf(lim.limit) else lim.limit,
        )
        for lim in limits
    ]


async def ops_report(store: Store, cfg: Config, *, since: timedelta, clock: Clock) -> OpsReport:
    """Summarise the ledger, the queue and the budget over the last ``since``."""
    now = clock.now()
    start = now - since
    rows = await store.fetchall("ledger_since", (iso(start),))
    groups: dict[tuple[str, str, str], list[Any]] = defaultdict(list)
    for r in rows:
        groups[(r["stage"], r["provider"], r["model"])].append(r)
    total = _summary(ALL, ALL, ALL, rows)
    events = int(await store.scalar("count_events_since", (iso(start),)))
    claims = int(await store.scalar("count_claims_since", (iso(start),)))
    return OpsReport(
        since=start,
        until=now,
        currency=cfg.budget.currency,
        total=total,
        by_call=[_summary(*key, group) for key, group in sorted(groups.items())],
        queue=await _queue(store),
        events=events,
        claims=claims,
        cost_per_event=total.cost / events if events else None,
        cost_per_claim=total.cost / claims if claims else None,
        budget=await _budget_lines(cfg, store, clock),
        outages=[
            OutageLine(
                provider=r["provider"] or ALL,
                parked=r["n"],
                since=datetime.fromtimestamp(r["since"], UTC),
            )
            for r in await store.fetchall("outage_parked_by_provider")
        ],
    )


async def unfinished_work(store: Store, *, since: float) -> WorkSummary:
    """Work a drain left unfinished: the jobs that failed since ``since`` (wall-clock seconds,
    as the job table keeps them; older dead letters were reported when they failed) and every
    job parked now, whenever it was parked (by reason)."""
    counts: dict[tuple[str, str], int] = defaultdict(int)
    for r in await store.fetchall("ended_jobs_since", (since,)):
        counts[(r["status"], r["reason"])] += r["n"]
    parked = {reason: n for (status, reason), n in counts.items() if status == JobStatus.PARKED}
    return WorkSummary(
        failed=sum(n for (status, _), n in counts.items() if status == JobStatus.FAILED),
        parked=sum(parked.values()),
        parked_budget=parked.get("budget", 0),
        parked_outage=parked.get("outage", 0),
    )


def _usage_line(s: CallSummary, cur: str) -> str:
    """Tokens and cost as the provider counted them, and what hlmem estimated."""
    reported_in = s.prompt_tokens - s.estimated_prompt_tokens
    reported_out = s.completion_tokens - s.estimated_completion_tokens
    return (
        f"usage reported by the provider: {reported_in}/{reported_out} tokens, "
        f"{s.cost - s.estimated_cost:.6f} {cur}; estimated (no usage reported, "
        f"{s.estimated_calls} calls): {s.estimated_prompt_tokens}/"
        f"{s.estimated_completion_tokens} tokens, {s.estimated_cost:.6f} {cur}"
    )


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


def render(report: OpsReport) -> str:
    """The report as plain-text tables."""
    cur = report.currency
    lines = [
        f"provider calls from {iso(report.since)[:19]} to {iso(report.until)[:19]} UTC",
        f"{'stage':<12} {'provider':<10} {'model':<18} {'calls':>6} {'ok':>6} {'err':>5} "
        f"{'refused':>7} {'tokens in/out':>15} {'cost ' + cur:>12} {'p50 ms':>7} "
        f"{'p95 ms':>7} {'fail':>6} {'retries':>7} {'429s':>5}",
    ]
    for s in [*report.by_call, report.total]:
        lines.append(
            f"{s.stage[:12]:<12} {s.provider[:10]:<10} {s.model[:18]:<18} {s.calls:>6} "
            f"{s.ok:>6} {s.errors:>5} {s.refused:>7} "
            f"{f'{s.prompt_tokens}/{s.completion_tokens}':>15} {s.cost:>12.6f} "
            f"{_ms(s.latency_p50_ms):>7} {_ms(s.latency_p95_ms):>7} {s.failure_rate:>6.1%} "
            f"{s.retries:>7} {s.rate_limited:>5}"
        )
    if report.total.error_classes:
        classes = ", ".join(f"{k} {v}" for k, v in report.total.error_classes.items())
        lines.append(f"errors and refusals: {classes}")
    lines.append(_usage_line(report.total, cur))
    per_event = "-" if report.cost_per_event is None else f"{report.cost_per_event:.6f}"
    per_claim = "-" if report.cost_per_claim is None else f"{report.cost_per_claim:.6f}"
    lines += [
        "",
        f"events {report.events}, claims {report.claims}; cost per event {per_event} {cur}, "
        f"per claim {per_claim} {cur}",
        "",
        f"{'stage':<12} {'todo':>7} {'doing':>7} {'parked':>7} {'failed':>7} {'done':>9} "
        f"{'oldest unfinished':>18}",
    ]
    for q in report.queue:
        age = "-" if q.oldest_unfinished_age_s is None else f"{q.oldest_unfinished_age_s:.0f} s"
        why = f"  (budget {q.parked_budget}, outage {q.parked_outage})" if q.parked else ""
        lines.append(
            f"{q.stage[:12]:<12} {q.todo:>7} {q.doing:>7} {q.parked:>7} {q.failed:>7} "
            f"{q.done:>9} {age:>18}{why}"
        )
    if not report.queue:
        lines.append("(no jobs)")
    for o in report.outages:
        lines.append(
            f"parked for a provider outage: {o.parked} jobs ({o.provider}), "
            f"since {iso(o.since)[:19]} UTC; they resume when a probe call succeeds"
        )
    lines += ["", "budget"]
    for b in report.budget:
        limit = "no limit" if b.limit is None else f"{b.limit:.6f} {cur}"
        lines.append(f"  {b.scope:<40} {b.used:.6f} {cur} of {limit}")
    return "\n".join(lines)
