"""The report of ``hlmem loadtest``: pydantic models, the analysis of a run, and its text form.

:mod:`hlmem.loadtest.command` measures; this module turns its measurements into a
:class:`LoadReport`: latency percentiles, cost per event and per day, per-stage backlog growth
(which stage could not keep up), and the consistency checks a run must pass (events offered = events
stored, model calls = windows extracted, ledger cost = the simulated provider's count, ...). Every
figure in a report is measured in that run; the methods are stated in ``LoadReport.methods``.
:mod:`hlmem.loadtest.html` draws the same report as a self-contained HTML page.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from hlmem.sim import SimStats

#: the stages of the write path, in order (maintenance is periodic, not on the path)
WRITE_STAGES = ("windower", "extractor", "admission", "dedup", "conflict", "embedder")
#: a stage falls behind when its backlog grows by more than this fraction of what arrives
FALLING_BEHIND_RATIO = 0.05
#: ... and that slope is this many standard errors above zero (a backlog that only oscillates
#: as batches are claimed and completed is not growing) ...
FALLING_BEHIND_SIGMAS = 2.0
#: ... and, at the end of the offered load, holds at least this many items and more than this
#: many seconds of its own work (a short burst or items in flight are not a bottleneck)
FALLING_BEHIND_MIN_ITEMS = 10
FALLING_BEHIND_LAG_S = 2.0
#: the pipeline kept up when it drains within max(this, KEPT_UP_DRAIN_FRACTION * offered time):
#: one that keeps up holds its steady lag (seconds of work) when the load ends, one that fell
#: behind a backlog that grew with the run
KEPT_UP_DRAIN_MIN_S = 10.0
KEPT_UP_DRAIN_FRACTION = 0.10
SECONDS_PER_DAY = 86_400
#: upper bounds of the ack latency histogram, in ms (the last bucket is open)
HISTOGRAM_EDGES_MS = (*(m * 10**e for e in range(5) for m in (1, 2, 5)), 100_000)

METHODS = {
    "ack_latency": (
        "From the moment an event was due (open loop: its slot's schedule at the offered rate; "
        "as fast as possible: the call) to the return of add_event, which returns once the "
        "event and its job are committed. Late sends queue behind slow acks and are counted "
        "(no coordinated omission)."
    ),
    "end_to_end": (
        "For a deterministic sample of the events that state a memorable fact (known from the "
        "generator), the reader connection is polled every {poll_ms:.0f} ms for a claim that "
        "is not pending and has the event as evidence (what recall can return). Latency runs "
        "from the event's ack to the poll that first saw it: an upper bound, late by at most "
        "one poll. It includes the wait for the session's window to close (windower.max_events "
        "events, or the session's end)."
    ),
    "cost": (
        "From the usage ledger (provider_calls): every call's tokens and cost at the price book. "
        "calls per event and tokens per event divide by the events acknowledged; "
        "projected cost per day = cost per event x offered rate (events/s) x 86,400."
    ),
    "bottleneck": (
        "Every {sample_s:.2f} s the job table is sampled (items todo or doing per stage). Per "
        "stage: inflow and items done per s over the offered phase; over its second half (once "
        "backlogs have climbed to their working level) the least-squares slope of the backlog "
        "(items/s) and growth = slope / inflow. A stage falls behind when growth > {ratio:.0%}, "
        "the slope is more than {sigmas:.0f} standard errors above zero, and, when the offered "
        "load ends, it holds at least {min_items} items and more than "
        "{lag_s:.0f} s of its own work (backlog / items done per s). The pipeline kept up when "
        "no stage fell behind and it drained within max({drain_min:.0f} s, {drain_frac:.0%} of "
        "the offered time); otherwise the bottleneck is the stage with the largest growth (or, "
        "if none grew, the most seconds of work queued). Claimed jobs buffered in a stage's "
        "memory count as doing."
    ),
}


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class LatencySummary(_Model):
    count: int
    p50_ms: float | None
    p95_ms: float | None
    p99_ms: float | None
    max_ms: float | None
    mean_ms: float | None


class Sample(_Model):
    """One look at the pipeline while the load ran (every ``sample_interval_s``)."""

    t_s: float  # since the start of the offered load
    phase: Literal["offer", "offer_end", "drain", "end"]
    acked: int
    backlog: dict[str, int]  # items todo or doing, per stage
    done: dict[str, int]  # items done, per stage
    total: dict[str, int]  # items ever enqueued, per stage
    failed: int
    parked: int
    calls_ok: int
    calls_error: int
    prompt_tokens: int
    completion_tokens: int
    cost: float
    retries: int
    rate_limited: int
    claims: int  # claims placed (any status but pending)
    rss_mib: float | None


class AckBucket(_Model):
    """Acknowledgements of one second of the offered load."""

    t_s: float
    acks: int
    p50_ms: float
    p95_ms: float
    p99_ms: float


class HistogramBin(_Model):
    upper_ms: float | None  # None: the open last bin
    count: int


class StageFlow(_Model):
    """How one stage coped with the offered load."""

    stage: str
    inflow_per_s: float
    done_per_s: float
    backlog_start: int
    backlog_end: int
    backlog_peak: int
    slope_per_s: float
    growth: float  # slope / inflow (0 when nothing arrived)
    lag_s: float | None  # backlog at the end / done per s (None: nothing was done)
    falling_behind: bool


class StageCalls(_Model):
    stage: str
    kind: str
    calls: int
    ok: int
    errors: int
    refused: int
    prompt_tokens: int
    completion_tokens: int
    cost: float
    retries: int
    rate_limited: int
    error_classes: list[str]


class Check(_Model):
    name: str
    expected: float | int | str
    actual: float | int | str
    ok: bool


class E2E(_Model):
    tracked: int
    visible: int
    never_visible: int
    latency: LatencySummary
    histogram: list[HistogramBin]


class Machine(_Model):
    python: str
    platform: str
    cpus: int | None
    sqlite: str
    loadavg_start: float | None
    loadavg_end: float | None


class LoadReport(_Model):
    """Everything ``hlmem loadtest`` measured in one run."""

    spec: dict[str, object]  # the LoadSpec, as given
    started_at: datetime
    machine: Machine
    provider: str
    extractor: str
    admission_mode: str
    currency: str
    config: dict[str, object]  # the settings that shape the figures

    # load and acknowledgements
    events_planned: int
    events_offered: int
    events_acked: int
    events_stored: int
    add_errors: list[str]
    offered_s: float
    offered_rate_per_s: float | None  # what was asked (None: as fast as possible)
    ack_rate_per_s: float
    ack_latency: LatencySummary
    send_slip_p99_ms: float | None
    ack_timeline: list[AckBucket]
    ack_histogram: list[HistogramBin]
    e2e: E2E

    # model calls and money
    llm_calls: int  # answered calls (ok), all stages
    requests_sent: int  # every HTTP request, retries included
    calls_per_event: float
    prompt_tokens: int
    completion_tokens: int
    tokens_per_event: float
    cost: float
    cost_per_event: float
    cost_per_1k_events: float
    projection_rate_per_s: float
    projected_cost_per_day: float
    calls_by_stage: list[StageCalls]
    sim: SimStats | None

    # failures
    rate_limited: int  # 429 answers received
    retries: int
    provider_errors: int  # calls that failed after their retries
    refused: int  # calls refused before sending (budget, unknown price, circuit open)
    jobs_failed: int
    jobs_parked: int
    jobs: dict[str, dict[str, int]]

    # pipeline
    windows: dict[str, int]  # closed windows by close reason, plus "open"
    extractions: dict[str, int]  # extracted windows by extractor
    windows_model_extracted: int
    claims: dict[str, int]
    events_by_origin: dict[str, int]
    claims_by_origin: dict[str, int]
    source_decisions: dict[str, dict[str, int]]
    drained: bool
    drain_s: float
    kept_up: bool
    bottleneck: str | None
    bottleneck_reason: str
    stages: list[StageFlow]
    rss_start_mib: float | None
    rss_peak_mib: float | None
    rss_end_mib: float | None
    timeline: list[Sample]

    checks: list[Check]
    methods: dict[str, str] = Field(default_factory=dict)

    @property
    def consistent(self) -> bool:
        """Whether every consistency check passed."""
        return all(c.ok for c in self.checks)

    @model_validator(mode="after")
    def _unique_checks(self) -> LoadReport:
        names = [c.name for c in self.checks]
        if len(names) != len(set(names)):
            raise ValueError("check names must be unique")
        return self


# --- analysis ------------------------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float | None:
    """Nearest-rank ``q`` quantile (0 < q <= 1) of ``values``; ``None`` when empty."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(math.ceil(q * len(ordered)) - 1, 0)]


def latency_summary(seconds: Sequence[float]) -> LatencySummary:
    ordered = sorted(seconds)

    def ms(q: float) -> float | None:
        value = percentile(ordered, q)
        return None if value is None else round(value * 1000, 3)

    return LatencySummary(
        count=len(ordered),
        p50_ms=ms(0.50),
        p95_ms=ms(0.95),
        p99_ms=ms(0.99),
        max_ms=round(ordered[-1] * 1000, 3) if ordered else None,
        mean_ms=round(sum(ordered) / len(ordered) * 1000, 3) if ordered else None,
    )


def histogram(seconds: Sequence[float]) -> list[HistogramBin]:
    counts = [0] * (len(HISTOGRAM_EDGES_MS) + 1)
    for s in seconds:
        ms = s * 1000
        index = next((i for i, e in enumerate(HISTOGRAM_EDGES_MS) if ms <= e), -1)
        counts[index] += 1
    edges: list[float | None] = [float(e) for e in HISTOGRAM_EDGES_MS]
    return [HistogramBin(upper_ms=e, count=c) for e, c in zip([*edges, None], counts, strict=True)]


def ack_timeline(ack_at: Sequence[float], latency: Sequence[float]) -> list[AckBucket]:
    """Acks per whole second of the offered load (``ack_at`` in s since its start)."""
    buckets: dict[int, list[float]] = {}
    for at, lat in zip(ack_at, latency, strict=True):
        buckets.setdefault(int(at), []).append(lat)
    out = []
    for second in sorted(buckets):
        values = sorted(buckets[second])
        out.append(
            AckBucket(
                t_s=float(second),
                acks=len(values),
                p50_ms=round((percentile(values, 0.50) or 0.0) * 1000, 3),
                p95_ms=round((percentile(values, 0.95) or 0.0) * 1000, 3),
                p99_ms=round((percentile(values, 0.99) or 0.0) * 1000, 3),
            )
        )
    return out


def slope(points: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """Least-squares slope of (t, y) and its standard error (0, 0 for fewer than two distinct
    times; the error is infinite with only two points)."""
    n = len(points)
    if n < 2:
        return 0.0, 0.0
    mean_t = sum(t for t, _ in points) / n
    mean_y = sum(y for _, y in points) / n
    var = sum((t - mean_t) ** 2 for t, _ in points)
    if var == 0:
        return 0.0, 0.0
    b = sum((t - mean_t) * (y - mean_y) for t, y in points) / var
    if n < 3:
        return b, math.inf
    residual = sum((y - mean_y - b * (t - mean_t)) ** 2 for t, y in points)
    return b, math.sqrt(residual / (n - 2) / var)


def stage_flows(samples: Sequence[Sample], offered_s: float) -> list[StageFlow]:
    """Per write-path stage (and any other job kind but maintenance): inflow, throughput and
    backlog growth while the load was offered.

    Inflow and throughput are over the whole offered phase. The backlog's slope and growth are
    over its second half (all of it when that holds fewer than three samples): backlogs climb
    from zero to their working level as the load starts, which is not falling behind, while a
    stage that cannot keep up goes on growing.
    """
    offer = [s for s in samples if s.phase in ("offer", "offer_end")]
    if not offer:
        return []
    first, last = offer[0], offer[-1]
    steady = [s for s in offer if s.t_s >= first.t_s + (last.t_s - first.t_s) / 2]
    if len(steady) < 3:
        steady = offer
    steady_s = steady[-1].t_s - steady[0].t_s
    kinds = {k for s in samples for k in s.total}
    stages = [*WRITE_STAGES, *sorted(kinds - set(WRITE_STAGES) - {"maintenance"})]
    span = max(offered_s, 1e-9)
    flows = []
    for stage in stages:
        inflow = (last.total.get(stage, 0) - first.total.get(stage, 0)) / span
        done = (last.done.get(stage, 0) - first.done.get(stage, 0)) / span
        grow, error = slope([(s.t_s, float(s.backlog.get(stage, 0))) for s in steady])
        arrived = steady[-1].total.get(stage, 0) - steady[0].total.get(stage, 0)
        steady_inflow = arrived / steady_s if steady_s > 0 else inflow
        growth = grow / steady_inflow if steady_inflow > 0 else 0.0
        end = last.backlog.get(stage, 0)
        flows.append(
            StageFlow(
                stage=stage,
                inflow_per_s=round(inflow, 3),
                done_per_s=round(done, 3),
                backlog_start=first.backlog.get(stage, 0),
                backlog_end=end,
                backlog_peak=max(s.backlog.get(stage, 0) for s in offer),
                slope_per_s=round(grow, 3),
                growth=round(growth, 4),
                lag_s=round(end / done, 3) if done > 0 else None,
                falling_behind=growth > FALLING_BEHIND_RATIO
                and grow > FALLING_BEHIND_SIGMAS * error
                and end >= FALLING_BEHIND_MIN_ITEMS
                and (done <= 0 or end / done > FALLING_BEHIND_LAG_S),
            )
        )
    return flows


def verdict(
    flows: Sequence[StageFlow], *, drained: bool, drain_s: float, offered_s: float, parked: int
) -> tuple[bool, str | None, str]:
    """(kept up?, the bottleneck stage or None, why), by the rule in ``METHODS["bottleneck"]``."""
    allowed = max(KEPT_UP_DRAIN_MIN_S, KEPT_UP_DRAIN_FRACTION * offered_s)
    falling = [f for f in flows if f.falling_behind]
    drain_ok = drained and drain_s <= allowed
    if not falling and drain_ok:
        why = f"no stage's backlog grew; drained in {drain_s:.1f} s (allowed {allowed:.1f} s)"
        if parked:
            why += f"; {parked} job(s) parked (budget)"
        return True, None, why
    if falling:
        worst = max(falling, key=lambda f: f.growth)
        why = (
            f"{worst.stage} backlog grew {worst.slope_per_s:.1f} items/s against an inflow of "
            f"{worst.inflow_per_s:.1f}/s (growth {worst.growth:.0%}), {worst.backlog_end} items "
            f"queued at the end of the offered load"
        )
        return False, worst.stage, why + ("" if drained else "; drain timed out")
    queued = [f for f in flows if f.backlog_end > 0]
    if queued:
        worst = max(queued, key=lambda f: math.inf if f.lag_s is None else f.lag_s)
        lag = "∞" if worst.lag_s is None else f"{worst.lag_s:.1f}"
        why = (
            f"no backlog grew steadily, but {worst.stage} held {worst.backlog_end} items "
            f"({lag} s of work) when the offered load ended"
        )
        stage: str | None = worst.stage
    else:
        stage, why = None, "no backlog at the end of the offered load"
    if drained:
        why += f"; drain took {drain_s:.1f} s (allowed {allowed:.1f} s)"
    else:
        why += "; drain timed out"
    if parked:
        why += f"; {parked} job(s) parked (budget)"
    return False, stage, why


def methods(*, poll_s: float, sample_s: float) -> dict[str, str]:
    params = {
        "poll_ms": poll_s * 1000,
        "sample_s": sample_s,
        "ratio": FALLING_BEHIND_RATIO,
        "sigmas": FALLING_BEHIND_SIGMAS,
        "min_items": FALLING_BEHIND_MIN_ITEMS,
        "lag_s": FALLING_BEHIND_LAG_S,
        "drain_min": KEPT_UP_DRAIN_MIN_S,
        "drain_frac": KEPT_UP_DRAIN_FRACTION,
    }
    return {name: text.format(**params) for name, text in METHODS.items()}


# --- text ----------------------------------------------------------------------------------------


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} ms"


def _lat(s: LatencySummary, *, p99: bool = True) -> str:
    text = f"p50 {_ms(s.p50_ms)}, p95 {_ms(s.p95_ms)}"
    return text + (f", p99 {_ms(s.p99_ms)}" if p99 else "") + f" (n={s.count})"


def render(r: LoadReport) -> str:
    """The report as a short plain-text summary."""
    cur = r.currency
    rate = "as fast as possible" if r.offered_rate_per_s is None else f"{r.offered_rate_per_s:g}/s"
    lines = [
        f"hlmem loadtest: {r.spec['sessions']} sessions x {r.spec['events_per_session']} events, "
        f"offered {rate}, seed {r.spec['seed']}; provider {r.provider}, extractor {r.extractor}",
        f"machine: {r.machine.cpus} CPU(s), Python {r.machine.python}, {r.machine.sqlite}, "
        f"load average {r.machine.loadavg_start} -> {r.machine.loadavg_end}",
        "",
        f"events    offered {r.events_offered}, acknowledged {r.events_acked}, stored "
        f"{r.events_stored} (of {r.events_planned} planned) in {r.offered_s:.1f} s",
        f"ack       {r.ack_rate_per_s:.1f} events/s; latency {_lat(r.ack_latency)}",
        f"e2e       event -> claim visible: {_lat(r.e2e.latency, p99=False)}; "
        f"{r.e2e.never_visible} of {r.e2e.tracked} sampled never visible",
        f"calls     {r.llm_calls} answered ({r.calls_per_event:.3f} per event), "
        f"{r.requests_sent} requests sent; {r.tokens_per_event:.1f} tokens per event",
        f"cost      {r.cost:.6f} {cur} total; {r.cost_per_1k_events:.6f} {cur} per 1k events; "
        f"projected {r.projected_cost_per_day:.2f} {cur}/day at {r.projection_rate_per_s:g} "
        "events/s (cost per event x rate x 86,400)",
        f"failures  429s {r.rate_limited}, retries {r.retries}, failed calls "
        f"{r.provider_errors}, refused {r.refused}; jobs failed {r.jobs_failed}, parked "
        f"{r.jobs_parked}",
        f"windows   {r.windows}; model-extracted {r.windows_model_extracted}; claims {r.claims}",
        f"memory    RSS {r.rss_start_mib} -> peak {r.rss_peak_mib} -> {r.rss_end_mib} MiB",
        "",
        f"{'stage':<10} {'in/s':>8} {'done/s':>8} {'backlog end':>11} {'peak':>6} "
        f"{'slope/s':>8} {'growth':>7}",
    ]
    for f in r.stages:
        lines.append(
            f"{f.stage:<10} {f.inflow_per_s:>8.1f} {f.done_per_s:>8.1f} {f.backlog_end:>11} "
            f"{f.backlog_peak:>6} {f.slope_per_s:>8.2f} {f.growth:>7.1%}"
            + ("  <- falling behind" if f.falling_behind else "")
        )
    verdict_text = "kept up" if r.kept_up else f"did NOT keep up (bottleneck: {r.bottleneck})"
    lines += ["", f"pipeline {verdict_text}: {r.bottleneck_reason}", ""]
    for c in r.checks:
        lines.append(
            f"{'ok  ' if c.ok else 'FAIL'} {c.name}: {c.actual}"
            + ("" if c.ok else f" (expected {c.expected})")
        )
    return "\n".join(lines)
