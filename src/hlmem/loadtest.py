"""``hlmem loadtest``: what N agents talking at some rate cost, and whether the pipeline keeps up.

:func:`run_loadtest` starts the simulated provider (``hlmem sim-provider``, a child process on
127.0.0.1, so that the model server's CPU is not the measured process's) or takes a real
provider from a config file under a hard budget cap the gateway enforces (both in
:mod:`hlmem.loadprovider`). It opens a
fresh database with ``hlmem.open`` (the inline pipeline, ``extractor.kind = "model"`` through
the one shared gateway and its ledger, exactly as an application would), and offers the
conversations of :mod:`hlmem.loadgen` through ``add_event``: ``slots`` sessions talk at once,
each sending its events in order on a fixed schedule (open loop at ``rate`` events/s), or each
as soon as its previous event is acknowledged (no ``rate``). When the load has been offered it
flushes, drains, and reads the ledger, the job table and the provider's ``/stats``.

While the load runs, background tasks sample the job table, the ledger and the RSS every
``sample_interval_s`` (reads on the store's reader connection), and poll for the claims of a
sample of memorable events (event -> claim visible). :mod:`hlmem.loadreport` turns it all into
the report; :mod:`hlmem.report_html` draws it.
"""

from __future__ import annotations

import json
import logging
import math
import os
import platform
import tempfile
import zlib
from array import array
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import anyio
from pydantic import BaseModel, ConfigDict, Field, model_validator

from hlmem.config import Config
from hlmem.errors import HlmemError, InputError
from hlmem.loadgen import ConversationGenerator, GenTurn
from hlmem.loadprovider import SIM_PROVIDER, SimProcess, real_config, rules_config, sim_config
from hlmem.loadreport import (
    E2E,
    SECONDS_PER_DAY,
    Check,
    LoadReport,
    Machine,
    Sample,
    StageCalls,
    ack_timeline,
    histogram,
    latency_summary,
    methods,
    percentile,
    stage_flows,
    verdict,
)
from hlmem.memory import Memory
from hlmem.memory import open as open_memory
from hlmem.sim_state import SimSettings, SimStats

log = logging.getLogger(__name__)

#: how often the claims of sampled memorable events are looked for
E2E_POLL_S = 0.1
#: event ids per visibility query
E2E_QUERY_IDS = 500


class LoadSpec(BaseModel):
    """What to offer, and to which provider (the flags of ``hlmem loadtest``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    sessions: int = Field(20, ge=1)
    events_per_session: int = Field(20, ge=1)
    #: events/s offered over all sessions (open loop); None: each session sends as soon as its
    #: previous event is acknowledged
    rate: float | None = Field(None, gt=0)
    #: sessions talking at the same time (the others start as these end); None: all of them
    concurrency: int | None = Field(None, ge=1)
    #: stop offering after this long even if events are left
    duration_s: float | None = Field(None, gt=0)
    seed: int = 0
    #: "sim" (the simulated provider) or a TOML config file with a real provider
    provider: str = SIM_PROVIDER
    #: "model": the model extractor (what costs money); "rules": the embedded default, no cost;
    #: None: "model" with the simulated provider, the config's own with a config file
    extractor: Literal["model", "rules"] | None = None
    #: hard cap on spending (budget currency), required with a real provider
    budget: float | None = Field(None, gt=0)
    # the simulated provider (ignored with a config file); prices per 1,000 tokens
    latency_ms: float = Field(200.0, ge=0)
    jitter_ms: float = Field(0.0, ge=0)
    rpm: int | None = Field(None, ge=1)
    tpm: int | None = Field(None, ge=1)
    error_rate: float = Field(0.0, ge=0, le=1)
    price_in: float = Field(0.00015, ge=0)
    price_out: float = Field(0.0006, ge=0)
    #: requests the gateway keeps in flight to the simulated provider
    provider_concurrency: int = Field(16, ge=1)
    sample_interval_s: float = Field(0.5, gt=0)
    #: memorable events followed to their claims (end-to-end latency)
    e2e_sample: int = Field(300, ge=0)
    drain_timeout_s: float = Field(600.0, gt=0)

    @model_validator(mode="after")
    def _budget_for_real_providers(self) -> LoadSpec:
        if self.provider != SIM_PROVIDER and self.budget is None:
            raise ValueError(
                "a real provider (--provider CONFIG) needs --budget: the hard spending cap the "
                "gateway enforces for the run"
            )
        return self

    @property
    def planned_events(self) -> int:
        return self.sessions * self.events_per_session

    @property
    def slots(self) -> int:
        return min(self.concurrency or self.sessions, self.sessions)

    @property
    def uses_sim(self) -> bool:
        return self.provider == SIM_PROVIDER and self.extractor != "rules"

    def sim_settings(self) -> SimSettings:
        """The simulated provider's behaviour (injected errors are HTTP 500s)."""
        return SimSettings(
            latency_ms=self.latency_ms,
            jitter_ms=self.jitter_ms,
            rpm=self.rpm,
            tpm=self.tpm,
            error_rate=self.error_rate,
            seed=self.seed,
            price_in=self.price_in,
            price_out=self.price_out,
        )


# --- the run -------------------------------------------------------------------------------------


@dataclass
class _Measured:
    """What the running load records (the offered-phase clock starts at ``t0``)."""

    t0: float = 0.0
    offered: int = 0
    acked: int = 0
    add_errors: list[str] = field(default_factory=list)
    ack_at: array[float] = field(default_factory=lambda: array("d"))
    ack_latency: array[float] = field(default_factory=lambda: array("d"))
    slips: array[float] = field(default_factory=lambda: array("d"))
    pending: dict[str, float] = field(default_factory=dict)  # tracked event id -> ack time
    tracked: int = 0
    e2e: list[float] = field(default_factory=list)
    samples: list[Sample] = field(default_factory=list)
    offered_s: float = 0.0
    drain_s: float = 0.0
    drained: bool = False


def _rss_mib() -> float | None:
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return None


def _loadavg() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


class _Load:
    """One run's producers and samplers against an open memory."""

    def __init__(
        self,
        spec: LoadSpec,
        mem: Memory,
        *,
        progress: Callable[[int], object] | None,
        status: Callable[[str], object] | None,
    ) -> None:
        self.spec = spec
        self.mem = mem
        self.gen = ConversationGenerator(spec.seed, events_per_session=spec.events_per_session)
        self.m = _Measured()
        self.progress = progress
        self.status = status
        self.phase: Literal["offer", "offer_end", "drain", "end"] = "offer"
        # Memorable events are followed when their id's hash falls under this share, so the
        # sample spreads over the whole run (about 2 in 5 events are memorable).
        wanted = spec.e2e_sample / max(spec.planned_events * 0.4, 1)
        self._e2e_share = min(1.0, wanted)

    async def run(self) -> _Measured:
        m = self.m
        async with anyio.create_task_group() as tg:
            m.t0 = anyio.current_time()
            tg.start_soon(self._sample_loop)
            tg.start_soon(self._e2e_loop)
            async with anyio.create_task_group() as producers:
                for slot in range(self.spec.slots):
                    producers.start_soon(self._slot, slot)
            m.offered_s = max(anyio.current_time() - m.t0, 1e-9)
            self.phase = "offer_end"
            await self._sample()
            self.phase = "drain"
            await self.mem.flush()
            drain_start = anyio.current_time()
            try:
                await self.mem.drain(timeout_s=self.spec.drain_timeout_s)
                m.drained = True
            except TimeoutError:
                m.drained = False
            m.drain_s = anyio.current_time() - drain_start
            self.phase = "end"
            await self._poll_e2e()
            await self._sample()
            tg.cancel_scope.cancel()
        return m

    # --- producers ---------------------------------------------------------------------------

    async def _slot(self, slot: int) -> None:
        """Sessions slot, slot + slots, ... one after another, on this slot's schedule."""
        spec, m = self.spec, self.m
        slots = spec.slots
        period = slots / spec.rate if spec.rate else 0.0
        deadline = m.t0 + spec.duration_s if spec.duration_s else math.inf
        k = 0
        for index in range(slot, spec.sessions, slots):
            turns = self.gen.session(index)
            for turn in turns:
                due = m.t0 + period * (slot / slots + k) if spec.rate else anyio.current_time()
                if due >= deadline or anyio.current_time() >= deadline:
                    return
                now = anyio.current_time()
                if due > now:
                    await anyio.sleep(due - now)
                    now = anyio.current_time()
                m.slips.append(now - due)
                await self._send(turn, due)
                k += 1
            await self.mem.end_session(turns[0].session_id, namespace=turns[0].namespace)

    async def _send(self, turn: GenTurn, due: float) -> None:
        m = self.m
        m.offered += 1
        try:
            await self.mem.add_event(
                turn.session_id,
                turn.content,
                namespace=turn.namespace,
                role=turn.role,
                event_id=turn.event_id,
                origin_class=turn.origin_class,
                metadata={"loadtest": {"kind": turn.kind}},
            )
        except HlmemError as exc:  # reported (and the checks fail): the run goes on
            m.add_errors.append(f"{turn.event_id}: {type(exc).__name__}: {exc}")
            return
        acked = anyio.current_time()
        m.acked += 1
        m.ack_at.append(acked - m.t0)
        m.ack_latency.append(acked - due)
        if turn.memorable and self._followed(turn.event_id):
            m.pending[turn.event_id] = acked
            m.tracked += 1
        if self.progress is not None:
            self.progress(1)

    def _followed(self, event_id: str) -> bool:
        if self.m.tracked >= self.spec.e2e_sample:
            return False
        return zlib.crc32(event_id.encode()) % 100_000 < self._e2e_share * 100_000

    # --- samplers ----------------------------------------------------------------------------

    async def _sample_loop(self) -> None:
        while True:
            await self._sample()
            await anyio.sleep(self.spec.sample_interval_s)

    async def _sample(self) -> None:
        store = self.mem.store
        backlog: dict[str, int] = {}
        done: dict[str, int] = {}
        total: dict[str, int] = {}
        failed = parked = 0
        for kind, status, jobs, items in await store.fetchall("loadtest_job_depth"):
            total[kind] = total.get(kind, 0) + items
            if status in ("todo", "doing"):
                backlog[kind] = backlog.get(kind, 0) + items
            elif status == "done":
                done[kind] = items
            elif status == "failed":
                failed += jobs
            elif status == "parked":
                parked += jobs
        ok, err, _refused, prompt, completion, cost, retries, limited = (
            await store.fetchall("loadtest_ledger_totals")
        )[0]
        claims = sum(n for status, n in await store.fetchall("claim_counts") if status != "pending")
        sample = Sample(
            t_s=round(anyio.current_time() - self.m.t0, 3),
            phase=self.phase,
            acked=self.m.acked,
            backlog=backlog,
            done=done,
            total=total,
            failed=failed,
            parked=parked,
            calls_ok=int(ok),
            calls_error=int(err),
            prompt_tokens=int(prompt),
            completion_tokens=int(completion),
            cost=float(cost),
            retries=int(retries),
            rate_limited=int(limited),
            claims=claims,
            rss_mib=_rss_mib(),
        )
        self.m.samples.append(sample)
        if self.status is not None:
            self.status(
                f"{self.phase}: backlog {sum(backlog.values())}, calls {ok}, cost {cost:.4f}"
            )

    async def _e2e_loop(self) -> None:
        while True:
            await anyio.sleep(E2E_POLL_S)
            await self._poll_e2e()

    async def _poll_e2e(self) -> None:
        pending = self.m.pending
        ids = list(pending)
        for start in range(0, len(ids), E2E_QUERY_IDS):
            chunk = ids[start : start + E2E_QUERY_IDS]
            asked = anyio.current_time()  # the read's snapshot is taken after this
            rows = await self.mem.store.fetchall("loadtest_visible_events", (json.dumps(chunk),))
            for (event_id,) in rows:
                acked = pending.pop(event_id, None)  # None: a concurrent poll saw it first
                if acked is not None:
                    self.m.e2e.append(asked - acked)


# --- the report ----------------------------------------------------------------------------------


async def _facts(mem: Memory) -> dict[str, Any]:
    """The database's totals once the run has drained."""
    store = mem.store
    stats = await mem.stats()
    windows: dict[str, int] = {}
    for status, reason, n in await store.fetchall("loadtest_windows"):
        key = reason if status == "closed" else status
        windows[key] = windows.get(key, 0) + n
    decisions: dict[str, dict[str, int]] = {}
    for origin, decision, n in await store.fetchall("loadtest_source_decisions"):
        decisions.setdefault(origin, {})[decision] = n
    by_stage = [
        StageCalls(
            stage=r[0],
            kind=r[1],
            calls=r[2],
            ok=r[3],
            errors=r[4],
            refused=r[5],
            prompt_tokens=r[6],
            completion_tokens=r[7],
            cost=r[8],
            retries=r[9],
            rate_limited=r[10],
            error_classes=sorted(r[11].split(",")) if r[11] else [],
        )
        for r in await store.fetchall("loadtest_ledger_by_stage")
    ]
    return {
        "stats": stats,
        "windows": windows,
        "extractions": {r[0]: r[1] for r in await store.fetchall("loadtest_extractions")},
        "events_by_origin": dict(await store.fetchall("loadtest_events_by_origin")),
        "claims_by_origin": dict(await store.fetchall("loadtest_claims_by_origin")),
        "extracted_by_origin": dict(await store.fetchall("loadtest_extracted_by_origin")),
        "decisions": decisions,
        "by_stage": by_stage,
        "sqlite": f"{store.caps.driver} {store.caps.sqlite_version}",
    }


def _checks(
    spec: LoadSpec, cfg: Config, m: _Measured, facts: dict[str, Any], sim: SimStats | None
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
    m: _Measured,
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
            loadavg_end=_loadavg(),
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


@asynccontextmanager
async def _provider(
    spec: LoadSpec, base: Config, workdir: Path
) -> AsyncIterator[tuple[Config, SimProcess | None, str]]:
    """(the run's config, the simulated provider or None, how the report names the provider)."""
    if not spec.uses_sim:
        if spec.provider == SIM_PROVIDER:
            yield rules_config(base), None, "none (rules extractor)"
        else:
            assert spec.budget is not None  # LoadSpec requires it
            cfg = real_config(spec.provider, budget=spec.budget, extractor=spec.extractor)
            names = ", ".join(sorted(cfg.providers)) or "none"
            yield cfg, None, f"{spec.provider} ({names}; budget cap {spec.budget:g})"
        return
    sim = SimProcess(spec.sim_settings(), workdir / "sim-provider.stderr")
    try:
        await sim.start()
        cfg = sim_config(base, sim.base_url, sim.settings, concurrency=spec.provider_concurrency)
        yield cfg, sim, f"sim at {sim.base_url}"
    finally:
        await sim.aclose()


async def run_loadtest(
    spec: LoadSpec,
    base: Config,
    *,
    db: str | Path | None = None,
    progress: Callable[[int], object] | None = None,
    status: Callable[[str], object] | None = None,
) -> LoadReport:
    """Offer ``spec``'s load to a fresh database, drain, and report what it cost.

    ``base`` supplies every setting the load test does not set itself (pipeline, windower,
    admission, ...; with a real provider the config file named by ``spec.provider`` is used
    instead). ``db`` is kept afterwards (it must not exist yet); without it a temporary file is
    used. ``progress(n)`` is called per acknowledged event, ``status(text)`` per sample.

    :raises InputError: ``db`` exists already.
    :raises ConfigError: invalid settings, or a real provider without a model stage.
    :raises HlmemError: the simulated provider did not start or stop.
    """
    if db is not None and await anyio.Path(db).exists():
        raise InputError(f"loadtest needs a fresh database: {db} exists")
    started_at = datetime.now(UTC)
    loadavg_start = _loadavg()
    with tempfile.TemporaryDirectory(prefix="hlmem-loadtest-") as tmp:
        path = Path(db) if db is not None else Path(tmp) / "loadtest.db"
        async with _provider(spec, base, Path(tmp)) as (cfg, sim, provider):
            async with open_memory(path, config=cfg) as mem:
                measured = await _Load(spec, mem, progress=progress, status=status).run()
                facts = await _facts(mem)
            sim_stats = await sim.stop() if sim is not None else None
    log.info("loadtest finished", extra={"action": "loadtest_finished", "events": measured.acked})
    return build_report(
        spec,
        cfg,
        measured,
        facts,
        sim_stats,
        started_at=started_at,
        provider=provider,
        loadavg_start=loadavg_start,
    )
