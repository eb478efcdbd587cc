"""The report of a ``hlmem loadtest`` run: the drained database's totals, the checks, the report.

Once the load of :mod:`hlmem.loadtest.load` has drained, ``read_facts`` reads the database's totals
(windows, extractions, source decisions, the ledger by stage) on the store's reader connection,
and :func:`build_report` puts them together with the run's measurements and the simulated
provider's ``/stats`` into a :class:`~hlmem.loadtest.analysis.LoadReport`, with the consistency
checks a run must pass (``_checks``). The models, the analysis (percentiles, stage flows, the
verdict) and the text form stay in :mod:`hlmem.loadtest.analysis`; this module only assembles. It is
called by
:func:`hlmem.loadtest.command.run_loadtest`, and :mod:`hlmem.loadtest.command` re-exports
:func:`build_report`.
"""

from __future__ import annotations

import math
import os
import platform
from datetime import datetime
from typing import Any

from hlmem.config import Config
from hlmem.loadtest.analysis import (
    E2E,
    SECONDS_PER_DAY,
    Check,
    LoadReport,
    Machine,
    StageCalls,
    ack_timeline,
    histogram,
    latency_summary,
    methods,
    percentile,
    stage_flows,
    verdict,
)
from hlmem.loadtest.load import E2E_POLL_S, LoadSpec, Measured, loadavg
from hlmem.memory import Memory
from hlmem.sim import SimStats


async def read_facts(mem: Memory) -> dict[str, Any]:
    """The database's totals once the run has drained."""
    store = mem.store
    stats = await mem.stats()
    windows: dict[str, int] = {}
    for r in await store.fetchall("loadtest_windows"):
        key = r["reason"] if r["status"] == "closed" else r["status"]
        windows[key] = windows.get(key, 0) + r["n"]
    decisions: dict[str, dict[str, int]] = {}
    for r in await store.fetchall("loadtest_source_decisions"):
        decisions.setdefault(r["origin_class"], {})[r["decision"]] = r["n"]
    by_stage = [
        StageCalls(
            stage=r["stage"],
            kind=r["call_kind"],
            calls=r["calls"],
            ok=r["ok"],
            errors=r["errors"],
            refused=r["refused"],
            prompt_tokens=r["prompt_tokens"],
            completion_tokens=r["completion_tokens"],
            cost=r["cost"],
            retries=r["retries"],
            rate_limited=r["rate_limited"],
            error_classes=sorted(r["error_classes"].split(",")) if r["error_classes"] else [],
        )
        for r in await store.fetchall("loadtest_ledger_by_stage")
    ]

    async def by_origin(query: str) -> dict[str, int]:
        return {r["origin_class"]: r["n"] for r in await store.fetchall(query)}

    return {
        "stats": stats,
        "windows": windows,
        "extractions": {
            r["extractor"]: r["n"] for r in await store.fetchall("loadtest_extractions")
        },
        "events_by_origin": await by_origin("loadtest_events_by_origin"),
        "claims_by_origin": await by_origin("loadtest_claims_by_origin"),
        "extracted_by_origin": await by_origin("loadtest_extracted_by_origin"),
        "decisions": decisions,
        "by_stage": by_stage,
        "sqlite": f"{store.caps.driver} {store.caps.sqlite_version}",
    }


def _checks(
    spec: LoadSpec, cfg: Config, m: Measured, facts: dict[str, Any], sim: SimStats | None
) -> list[Check]:
    stats = facts["stats"]
    calls: list[StageCalls] = facts["by_stage"]
    ok_calls = sum(c.ok for c in calls)
    extractor_ok = sum(c.ok for c in calls if c.stage == "extractor")
    model_windows = sum(n for name, n in facts["extractions"].items() if name.startswith("model:"))
    closed = sum(n for k, n in facts["windows"].items() if k != "open")
    extracted = sum(facts["extractions"].values())
    # a window whose extraction was refused for budget waits, parked, for budget to return
    parked_windows = stats.jobs.get("extractor", {}).get("parked", 0)
    out = [
        Check(
            name="events offered = stored",
            expected=m.offered,
            actual=stats.events,
            ok=m.offered == stats.events and m.acked == m.offered,
        ),
        Check(
            name="model calls = windows extracted by the model",
            expected=model_windows,
            actual=extractor_ok,
            ok=extractor_ok == model_windows,
        ),
        Check(
            name="every window closed and extracted once (or parked for budget)",
            expected=closed + facts["windows"].get("open", 0),
            actual=extracted + parked_windows,
            ok=closed == extracted + parked_windows and facts["windows"].get("open", 0) == 0,
        ),
    ]
    if sim is not None:
        cost = sum(c.cost for c in calls)
        sim_cost = sim.cost or 0.0
        sent = sum(c.ok + c.errors + c.retries for c in calls)
        out += [
            Check(
                name="ledger cost = sim-provider /stats cost",
                expected=round(sim_cost, 9),
                actual=round(cost, 9),
                ok=math.isclose(cost, sim_cost, rel_tol=1e-9, abs_tol=1e-12),
            ),
            Check(
                name="ledger tokens = sim-provider /stats tokens",
                expected=sim.total_tokens,
                actual=sum(c.prompt_tokens + c.completion_tokens for c in calls),
                ok=(sum(c.prompt_tokens for c in calls), sum(c.completion_tokens for c in calls))
                == (sim.prompt_tokens, sim.completion_tokens),
            ),
            Check(
                name="requests sent = sim-provider /stats requests",
                expected=sim.requests,
                actual=sent,
                ok=sent == sim.requests,
            ),
            Check(
                name="answered calls = sim-provider /stats ok",
                expected=sim.ok,
                actual=ok_calls,
                ok=ok_calls == sim.ok,
            ),
        ]
    injected = spec.uses_sim and spec.error_rate > 0
    if not injected and spec.budget is None:
        stuck = sum(
            n
            for kinds in stats.jobs.values()
            for s, n in kinds.items()
            if s in ("failed", "parked")
        )
        out.append(Check(name="no failed or parked jobs", expected=0, actual=stuck, ok=stuck == 0))
    if cfg.admission.mode == "enforce":
        untrusted = set(cfg.admission.untrusted_origins)
        leaked = sum(n for o, n in facts["claims_by_origin"].items() if o in untrusted)
        out.append(
            Check(
                name="no claim from an untrusted source", expected=0, actual=leaked, ok=leaked == 0
            )
        )
        # (of those whose window reached the extractor: a window parked for budget has not)
        web = facts["extracted_by_origin"].get("external_web", 0)
        blocked = facts["decisions"].get("external_web", {}).get("block", 0)
        out.append(
            Check(
                name="every external_web event blocked",
                expected=web,
                actual=blocked,
                ok=web == blocked,
            )
        )
    return out


def build_report(
    spec: LoadSpec,
    cfg: Config,
    m: Measured,
    facts: dict[str, Any],
    sim: SimStats | None,
    *,
    started_at: datetime,
    provider: str,
    loadavg_start: float | None,
) -> LoadReport:
    stats = facts["stats"]
    calls: list[StageCalls] = facts["by_stage"]
    events = max(m.acked, 1)
    prompt = sum(c.prompt_tokens for c in calls)
    completion = sum(c.completion_tokens for c in calls)
    cost = sum(c.cost for c in calls)
    ack_rate = m.acked / m.offered_s
    projection_rate = spec.rate if spec.rate else ack_rate
    jobs = stats.jobs
    parked = sum(k.get("parked", 0) for k in jobs.values())
    flows = stage_flows(m.samples, m.offered_s)
    kept_up, bottleneck, why = verdict(
        flows, drained=m.drained, drain_s=m.drain_s, offered_s=m.offered_s, parked=parked
    )
    rss = [s.rss_mib for s in m.samples if s.rss_mib is not None]
    slips = sorted(m.slips)
    slip99 = percentile(slips, 0.99)
    extractor = "rules" if cfg.extractor.kind == "rules" else f"model {cfg.extractor.model}"
    return LoadReport(
        spec=spec.model_dump(mode="json"),
        started_at=started_at,
        machine=Machine(
            python=platform.python_version(),
            platform=platform.platform(terse=True),
            cpus=os.cpu_count(),
            sqlite=facts["sqlite"],
            loadavg_start=loadavg_start,
            loadavg_end=loadavg(),
        ),
        provider=provider,
        extractor=extractor,
        admission_mode=cfg.admission.mode,
        currency=cfg.budget.currency,
        config={
            "windower.max_events": cfg.windower.max_events,
            "windower.max_age_s": cfg.windower.max_age_s,
            "extractor.max_tokens": cfg.extractor.max_tokens,
            "pipeline.extractor.workers": cfg.pipeline.extractor.workers,
            "pipeline.extractor.batch_size": cfg.pipeline.extractor.batch_size,
            "ingest.writer": cfg.ingest.writer,
            "providers": {
                name: p.model_dump(
                    include={
                        "preset",
                        "requests_per_minute",
                        "tokens_per_minute",
                        "max_concurrency",
                    }
                )
                for name, p in cfg.providers.items()
            },
            "budget.daily_limit": cfg.budget.daily_limit,
        },
        events_planned=spec.planned_events,
        events_offered=m.offered,
        events_acked=m.acked,
        events_stored=stats.events,
        add_errors=m.add_errors[:20],
        offered_s=round(m.offered_s, 3),
        offered_rate_per_s=spec.rate,
        ack_rate_per_s=round(ack_rate, 2),
        ack_latency=latency_summary(m.ack_latency),
        send_slip_p99_ms=None if slip99 is None else round(slip99 * 1000, 3),
        ack_timeline=ack_timeline(m.ack_at, m.ack_latency),
        ack_histogram=histogram(m.ack_latency),
        e2e=E2E(
            tracked=m.tracked,
            visible=len(m.e2e),
            never_visible=len(m.pending),
            latency=latency_summary(m.e2e),
            histogram=histogram(m.e2e),
        ),
        llm_calls=sum(c.ok for c in calls),
        requests_sent=sum(c.ok + c.errors + c.retries for c in calls),
        calls_per_event=round(sum(c.ok for c in calls) / events, 4),
        prompt_tokens=prompt,
        completion_tokens=completion,
        tokens_per_event=round((prompt + completion) / events, 2),
        cost=cost,
        cost_per_event=cost / events,
        cost_per_1k_events=cost / events * 1000,
        projection_rate_per_s=round(projection_rate, 3),
        projected_cost_per_day=cost / events * projection_rate * SECONDS_PER_DAY,
        calls_by_stage=calls,
        sim=sim,
        rate_limited=sum(c.rate_limited for c in calls),
        retries=sum(c.retries for c in calls),
        provider_errors=sum(c.errors for c in calls),
        refused=sum(c.refused for c in calls),
        jobs_failed=sum(k.get("failed", 0) for k in jobs.values()),
        jobs_parked=parked,
        jobs=jobs,
        windows=facts["windows"],
        extractions=facts["extractions"],
        windows_model_extracted=sum(
            n for name, n in facts["extractions"].items() if name.startswith("model:")
        ),
        claims=stats.claims,
        events_by_origin=facts["events_by_origin"],
        claims_by_origin=facts["claims_by_origin"],
        source_decisions=facts["decisions"],
        drained=m.drained,
        drain_s=round(m.drain_s, 3),
        kept_up=kept_up,
        bottleneck=bottleneck,
        bottleneck_reason=why,
        stages=flows,
        rss_start_mib=rss[0] if rss else None,
        rss_peak_mib=max(rss) if rss else None,
        rss_end_mib=rss[-1] if rss else None,
        timeline=m.samples,
        checks=_checks(spec, cfg, m, facts, sim),
        methods=methods(poll_s=E2E_POLL_S, sample_s=spec.sample_interval_s),
    )
