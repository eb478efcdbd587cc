"""The ``hlmem loadtest`` report as one self-contained HTML page: inline SVG plots, no script.

:func:`render_html` draws a :class:`~hlmem.loadtest.analysis.LoadReport` as HTML with its plots
(throughput, queue depth per stage, ack latency over time and as a histogram, end-to-end
latency, cost and RSS over time) drawn here as plain SVG: no JavaScript, no stylesheet or font
from the network, so the file opens offline in any browser and can be attached to a ticket.
The markup is well-formed (every element closed, every text escaped), so an XML parser reads
it too. Each plot is an ``<svg class="plot" id="plot-...">``; each series a ``<polyline>`` (or
bars, ``<rect>``) whose ``data-points`` attribute says how many points it draws.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape
from pathlib import Path

from hlmem.loadtest.analysis import HistogramBin, LoadReport, Sample

WIDTH, HEIGHT = 760, 280
LEFT, RIGHT, TOP, BOTTOM = 70, 170, 30, 46
GRID, AXIS = "#e6e6e6", "#888888"
#: throughput is plotted as the rate over the last second (at least)
RATE_WINDOW_S = 1.0
PALETTE = (
    "#1f77b4",
    "#d62728",
    "#2ca02c",
    "#ff7f0e",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#17becf",
)

_CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", "PingFang SC", sans-serif;
       margin: 2em auto; max-width: 980px; color: #222; padding: 0 1em; }
h1 { font-size: 1.5em; } h2 { font-size: 1.15em; margin-top: 1.8em; }
table { border-collapse: collapse; margin: .5em 0; }
td, th { border: 1px solid #ddd; padding: .25em .6em; text-align: right; }
td:first-child, th:first-child { text-align: left; }
.ok { color: #2a7a2a; } .fail { color: #b00020; font-weight: bold; }
.verdict { font-size: 1.1em; padding: .6em .8em; border-radius: 4px; background: #f3f6fa; }
figure { margin: 1em 0; } figcaption { color: #555; font-size: .9em; }
svg.plot { background: #fff; border: 1px solid #e4e4e4; }
p.method { color: #444; font-size: .92em; }
"""


@dataclass(frozen=True)
class Series:
    name: str
    points: Sequence[tuple[float, float]]


def _fmt(value: float) -> str:
    """A tick label: 0, 2.5, 40, 1,200, 0.0035."""
    if value == int(value):
        return f"{int(value):,}"
    magnitude = abs(value)
    if magnitude >= 10:
        return f"{value:,.0f}"
    if magnitude >= 1:
        return f"{value:.1f}"
    return f"{value:.2g}"


def _short(ms: float) -> str:
    """A histogram bound: 5, 500, 1k, 10k."""
    return f"{ms / 1000:g}k" if ms >= 1000 else f"{ms:g}"


def _ticks(high: float, count: int = 5) -> list[float]:
    """Round tick values from 0 to at least ``high``."""
    if high <= 0 or not math.isfinite(high):
        return [0.0, 1.0]
    raw = high / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    return [i * step for i in range(math.ceil(high / step) + 1)]


def _frame(chart_id: str, title: str, x_label: str, y_label: str) -> list[str]:
    return [
        f'<svg class="plot" id="{escape(chart_id)}" xmlns="http://www.w3.org/2000/svg" '
        f'width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        'font-family="sans-serif" font-size="11" fill="#333" '
        f'aria-label="{escape(title)}">',
        f"<title>{escape(title)}</title>",
        f'<text x="{LEFT}" y="18" font-weight="bold">{escape(title)}</text>',
        f'<text x="{LEFT + (WIDTH - LEFT - RIGHT) / 2:.0f}" y="{HEIGHT - 8}" '
        f'text-anchor="middle">{escape(x_label)}</text>',
        f'<text x="14" y="{TOP + (HEIGHT - TOP - BOTTOM) / 2:.0f}" text-anchor="middle" '
        f'transform="rotate(-90 14 {TOP + (HEIGHT - TOP - BOTTOM) / 2:.0f})">'
        f"{escape(y_label)}</text>",
    ]


def _axes(
    out: list[str],
    x_ticks: list[float],
    y_ticks: list[float],
    x_of: Callable[[float], float],
    y_of: Callable[[float], float],
) -> None:
    plot_right, plot_bottom = WIDTH - RIGHT, HEIGHT - BOTTOM
    for t in y_ticks:
        y = y_of(t)
        out.append(
            f'<line class="grid" x1="{LEFT}" y1="{y:.1f}" x2="{plot_right}" y2="{y:.1f}" '
            f'stroke="{GRID}"/>'
        )
        out.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{_fmt(t)}</text>')
    for t in x_ticks:
        x = x_of(t)
        out.append(
            f'<text x="{x:.1f}" y="{plot_bottom + 16}" text-anchor="middle">{_fmt(t)}</text>'
        )
    out.append(
        f'<line class="axis" x1="{LEFT}" y1="{plot_bottom}" x2="{plot_right}" y2="{plot_bottom}" '
        f'stroke="{AXIS}"/>'
    )
    out.append(
        f'<line class="axis" x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{plot_bottom}" '
        f'stroke="{AXIS}"/>'
    )


def _legend(out: list[str], names: Sequence[str]) -> None:
    x = WIDTH - RIGHT + 12
    for i, name in enumerate(names):
        y = TOP + 6 + i * 18
        color = PALETTE[i % len(PALETTE)]
        out.append(f'<rect x="{x}" y="{y - 9}" width="12" height="10" fill="{color}"/>')
        out.append(f'<text x="{x + 18}" y="{y}">{escape(name)}</text>')


def line_chart(
    chart_id: str,
    title: str,
    x_label: str,
    y_label: str,
    series: Sequence[Series],
    *,
    marker_x: float | None = None,
    marker_label: str = "",
) -> str:
    """An SVG line chart of ``series`` (x and y from 0 up to their largest values)."""
    drawn = [s for s in series if s.points]
    xs = [x for s in drawn for x, _ in s.points] or [0.0, 1.0]
    ys = [y for s in drawn for _, y in s.points] or [0.0, 1.0]
    x_ticks, y_ticks = _ticks(max(max(xs), marker_x or 0.0)), _ticks(max(ys) * 1.05)
    x_span, y_span = x_ticks[-1] or 1.0, y_ticks[-1] or 1.0
    width, height = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x_of(x: float) -> float:
        return LEFT + width * x / x_span

    def y_of(y: float) -> float:
        return TOP + height * (1 - y / y_span)

    out = _frame(chart_id, title, x_label, y_label)
    _axes(out, x_ticks, y_ticks, x_of, y_of)
    if marker_x is not None:
        x = x_of(marker_x)
        out.append(
            f'<line class="marker" x1="{x:.1f}" y1="{TOP}" x2="{x:.1f}" y2="{HEIGHT - BOTTOM}" '
            f'stroke="{AXIS}" stroke-dasharray="4 3"/>'
        )
        out.append(f'<text x="{x + 4:.1f}" y="{TOP + 10}">{escape(marker_label)}</text>')
    for i, s in enumerate(series):
        if not s.points:
            continue
        color = PALETTE[i % len(PALETTE)]
        coords = " ".join(f"{x_of(x):.1f},{y_of(y):.1f}" for x, y in s.points)
        out.append(
            f'<polyline class="series" data-series="{escape(s.name)}" '
            f'data-points="{len(s.points)}" fill="none" stroke="{color}" stroke-width="1.8" '
            f'points="{coords}"/>'
        )
    _legend(out, [s.name for s in series])
    out.append("</svg>")
    return "\n".join(out)


def bar_chart(
    chart_id: str, title: str, x_label: str, y_label: str, bars: Sequence[tuple[str, float]]
) -> str:
    """An SVG bar chart: one labelled bar per (label, value)."""
    y_ticks = _ticks(max([v for _, v in bars] or [1.0]) * 1.05)
    y_span = y_ticks[-1] or 1.0
    width, height = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    slot = width / max(len(bars), 1)

    def y_of(y: float) -> float:
        return TOP + height * (1 - y / y_span)

    out = _frame(chart_id, title, x_label, y_label)
    _axes(out, [], y_ticks, lambda x: x, y_of)
    out.append(f'<g class="series" data-series="{escape(y_label)}" data-points="{len(bars)}">')
    for i, (label, value) in enumerate(bars):
        x = LEFT + i * slot
        top = y_of(value)
        out.append(
            f'<rect x="{x + slot * 0.12:.1f}" y="{top:.1f}" width="{slot * 0.76:.1f}" '
            f'height="{HEIGHT - BOTTOM - top:.1f}" fill="{PALETTE[0]}" data-value="{value:g}">'
            f"<title>{escape(label)}: {value:g}</title></rect>"
        )
        out.append(
            f'<text x="{x + slot / 2:.1f}" y="{HEIGHT - BOTTOM + 16}" text-anchor="middle">'
            f"{escape(label)}</text>"
        )
    out.append("</g>")
    out.append("</svg>")
    return "\n".join(out)


# --- the report's plots --------------------------------------------------------------------------


def _rates(samples: Sequence[Sample], value: str) -> list[tuple[float, float]]:
    """Per-second rate of a cumulative sample field, each over the last second or more (a
    stage completes whole batches: rates over shorter spans are mostly spikes)."""
    out = []
    start = 0
    for b in samples[1:]:
        while start + 1 < len(samples) and b.t_s - samples[start + 1].t_s >= RATE_WINDOW_S:
            start += 1
        a = samples[start]
        dt = b.t_s - a.t_s
        if dt > 0:
            out.append((b.t_s, max(getattr(b, value) - getattr(a, value), 0) / dt))
    return out


def _bins(bins: Sequence[HistogramBin]) -> list[tuple[str, float]]:
    """(label, count) of the bins from the first non-empty one to the last (all when empty)."""
    used = [i for i, b in enumerate(bins) if b.count]
    first, last = (used[0], used[-1]) if used else (0, len(bins) - 1)
    out = []
    for b in bins[first : last + 1]:
        label = f">{_short(bins[-2].upper_ms or 0)}" if b.upper_ms is None else _short(b.upper_ms)
        out.append((label, float(b.count)))
    return out


def plots(r: LoadReport) -> list[tuple[str, str]]:
    """(svg, caption) of every plot of the report."""
    samples = r.timeline
    stages = [f.stage for f in r.stages if any(s.backlog.get(f.stage) for s in samples)]
    stages = stages or [f.stage for f in r.stages[:1]]

    def over_time(chart_id: str, title: str, y_label: str, series: list[Series]) -> str:
        return line_chart(
            chart_id,
            title,
            "seconds since the load started",
            y_label,
            series,
            marker_x=r.offered_s,
            marker_label="load ends",
        )

    throughput = [
        Series("events acked/s", _rates(samples, "acked")),
        Series("claims placed/s", _rates(samples, "claims")),
        Series("model calls/s", _rates(samples, "calls_ok")),
    ]
    queue = [
        Series(stage, [(s.t_s, float(s.backlog.get(stage, 0))) for s in samples])
        for stage in stages
    ]
    latency = [
        Series("p50", [(b.t_s, b.p50_ms) for b in r.ack_timeline]),
        Series("p95", [(b.t_s, b.p95_ms) for b in r.ack_timeline]),
        Series("p99", [(b.t_s, b.p99_ms) for b in r.ack_timeline]),
    ]
    cost = [Series("cumulative cost", [(s.t_s, s.cost) for s in samples])]
    rss = [Series("RSS", [(s.t_s, s.rss_mib) for s in samples if s.rss_mib is not None])]
    return [
        (
            over_time("plot-throughput", "Throughput", "per second", throughput),
            "Acknowledged events, claims placed by the conflict stage, and answered model calls "
            "per second, each over the last second of samples.",
        ),
        (
            over_time("plot-queue", "Queue depth per stage", "items todo or doing", queue),
            "Items (events, windows, claims) waiting or running in each stage's job table.",
        ),
        (
            line_chart(
                "plot-latency", "Ack latency over time", "second of the load", "ms", latency
            ),
            "add_event latency percentiles of the events acknowledged in each second.",
        ),
        (
            bar_chart(
                "plot-latency-hist",
                "Ack latency",
                "ms (each bar: at most this much)",
                "events",
                _bins(r.ack_histogram),
            ),
            "How many acks took at most each bound.",
        ),
        (
            bar_chart(
                "plot-e2e-hist",
                "Event to claim visible",
                "ms (each bar: at most this much)",
                "sampled events",
                _bins(r.e2e.histogram),
            ),
            f"{r.e2e.visible} sampled memorable events; see the method below.",
        ),
        (
            over_time("plot-cost", f"Cost over time ({r.currency})", r.currency, cost),
            "Cost in the usage ledger (settled calls), as sampled.",
        ),
        (
            over_time("plot-rss", "Memory (RSS)", "MiB", rss),
            "Resident set size of the process running hlmem (the simulated provider runs in "
            "its own process).",
        ),
    ]


# --- the page ------------------------------------------------------------------------------------


def _table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    head = "".join(f"<th>{escape(str(h))}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in row) + "</tr>" for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _money(value: float, currency: str) -> str:
    return f"{value:.6f} {currency}"


def _summary(r: LoadReport) -> str:
    cur = r.currency
    rate = "as fast as acked" if r.offered_rate_per_s is None else f"{r.offered_rate_per_s:g}/s"
    rows: list[tuple[str, object]] = [
        (
            "events offered / acked / stored",
            f"{r.events_offered} / {r.events_acked} / "
            f"{r.events_stored} (of {r.events_planned} planned)",
        ),
        ("offered rate; offered for", f"{rate}; {r.offered_s:.1f} s"),
        ("ack throughput", f"{r.ack_rate_per_s:.1f} events/s"),
        (
            "ack latency p50 / p95 / p99",
            f"{r.ack_latency.p50_ms} / {r.ack_latency.p95_ms} / {r.ack_latency.p99_ms} ms",
        ),
        (
            "event → claim visible p50 / p95",
            f"{r.e2e.latency.p50_ms} / {r.e2e.latency.p95_ms} ms "
            f"({r.e2e.visible} of {r.e2e.tracked} sampled; {r.e2e.never_visible} never visible)",
        ),
        (
            "model calls per event",
            f"{r.calls_per_event:.4f} ({r.llm_calls} answered, {r.requests_sent} requests sent)",
        ),
        (
            "tokens per event",
            f"{r.tokens_per_event:.1f} ({r.prompt_tokens} prompt + "
            f"{r.completion_tokens} completion)",
        ),
        ("cost; per 1k events", f"{_money(r.cost, cur)}; {_money(r.cost_per_1k_events, cur)}"),
        (
            "projected cost per day",
            f"{r.projected_cost_per_day:.2f} {cur} at {r.projection_rate_per_s:g} events/s",
        ),
        (
            "429s / retries / failed calls / refused",
            f"{r.rate_limited} / {r.retries} / {r.provider_errors} / {r.refused}",
        ),
        ("jobs failed / parked", f"{r.jobs_failed} / {r.jobs_parked}"),
        ("windows (by close reason)", r.windows),
        ("claims (by status)", r.claims),
        ("drained in", f"{r.drain_s:.1f} s" + ("" if r.drained else " (timed out)")),
        ("RSS start / peak / end", f"{r.rss_start_mib} / {r.rss_peak_mib} / {r.rss_end_mib} MiB"),
    ]
    return _table(["figure", "value"], rows)


def render_html(r: LoadReport) -> str:
    """The report as a self-contained HTML document."""
    verdict = (
        "The pipeline kept up."
        if r.kept_up
        else f"The pipeline did not keep up; bottleneck: {r.bottleneck or 'unknown'}."
    )
    figures = "\n".join(
        f"<figure>{svg}<figcaption>{escape(caption)}</figcaption></figure>"
        for svg, caption in plots(r)
    )
    stages = _table(
        [
            "stage",
            "in/s",
            "done/s",
            "backlog start",
            "end",
            "peak",
            "slope/s",
            "growth",
            "lag s",
            "falling behind",
        ],
        [
            (
                f.stage,
                f.inflow_per_s,
                f.done_per_s,
                f.backlog_start,
                f.backlog_end,
                f.backlog_peak,
                f.slope_per_s,
                f"{f.growth:.1%}",
                "-" if f.lag_s is None else f.lag_s,
                "yes" if f.falling_behind else "",
            )
            for f in r.stages
        ],
    )
    calls = _table(
        [
            "stage",
            "kind",
            "calls",
            "ok",
            "errors",
            "refused",
            "tokens in",
            "tokens out",
            f"cost {r.currency}",
            "retries",
            "429s",
            "error classes",
        ],
        [
            (
                c.stage,
                c.kind,
                c.calls,
                c.ok,
                c.errors,
                c.refused,
                c.prompt_tokens,
                c.completion_tokens,
                f"{c.cost:.6f}",
                c.retries,
                c.rate_limited,
                ", ".join(c.error_classes),
            )
            for c in r.calls_by_stage
        ],
    )
    checks = "".join(
        f'<li class="{"ok" if c.ok else "fail"}">{"✓" if c.ok else "✗"} {escape(c.name)}: '
        f"{escape(str(c.actual))}"
        + ("" if c.ok else f" (expected {escape(str(c.expected))})")
        + "</li>"
        for c in r.checks
    )
    method_items = "".join(
        f'<p class="method"><b>{escape(name.replace("_", " "))}.</b> {escape(text)}</p>'
        for name, text in r.methods.items()
    )
    spec = _table(["setting", "value"], sorted(r.spec.items()))
    config = _table(["setting", "value"], sorted(r.config.items()))
    m = r.machine
    title = (
        f"hlmem loadtest — {r.spec['sessions']} sessions × {r.spec['events_per_session']} events"
    )
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8"/>
<title>{escape(title)}</title>
<style>{_CSS}</style>
</head>
<body>
<h1>{escape(title)}</h1>
<p>Run {escape(r.started_at.isoformat(timespec="seconds"))}; provider {escape(r.provider)};
extractor {escape(r.extractor)}; admission {escape(r.admission_mode)}.
Machine: {m.cpus} CPU(s), Python {escape(m.python)}, {escape(m.sqlite)}, {escape(m.platform)};
load average {m.loadavg_start} → {m.loadavg_end}.</p>
<p class="verdict">{escape(verdict)} {escape(r.bottleneck_reason)}</p>
<h2>Summary</h2>
{_summary(r)}
<h2>Consistency checks</h2>
<ul>{checks}</ul>
<h2>Plots</h2>
{figures}
<h2>Stages</h2>
{stages}
<h2>Model calls by stage</h2>
{calls}
<h2>Method</h2>
{method_items}
<p class="method"><b>projected cost per day</b> = cost per event × offered rate (events/s) ×
86,400 = {r.cost_per_event:.3g} × {r.projection_rate_per_s:g} × 86,400 =
{r.projected_cost_per_day:.2f} {escape(r.currency)}.</p>
<h2>Settings</h2>
{spec}
{config}
</body>
</html>
"""


def write_html(r: LoadReport, path: Path) -> None:
    """Write :func:`render_html` to ``path`` (UTF-8)."""
    path.write_text(render_html(r), encoding="utf-8")
