"""The running load of ``hlmem loadtest``: what to offer (:class:`LoadSpec`), offering it, sampling.

:class:`LoadSpec` holds the flags of ``hlmem loadtest``. ``Load`` runs one load against an open
memory: ``slots`` producer tasks send the conversations of :mod:`hlmem.loadtest.conversations`
through ``add_event`` on their schedule, while background tasks sample the job table, the ledger and
the RSS every ``sample_interval_s`` and poll for the claims of a sample of memorable events; then it
flushes and drains. What it records is a ``Measured``. It neither starts a provider nor opens a
database (:mod:`hlmem.loadtest.command` does both) nor builds the report
(:mod:`hlmem.loadtest.totals`). :class:`LoadSpec` lives here so that both can use it without an
import cycle; :mod:`hlmem.loadtest.command` re-exports it. The underscored names are shared with
those two modules only.
"""

from __future__ import annotations

import json
import math
import os
import zlib
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import anyio
from pydantic import BaseModel, ConfigDict, Field, model_validator

from hlmem.errors import HlmemError
from hlmem.loadtest.analysis import Sample
from hlmem.loadtest.conversations import ConversationGenerator, GenTurn
from hlmem.loadtest.provider import SIM_PROVIDER
from hlmem.memory import Memory
from hlmem.sim import SimSettings

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


@dataclass
class Measured:
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


def loadavg() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


class Load:
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
        self.m = Measured()
        self.progress = progress
        self.status = status
        self.phase: Literal["offer", "offer_end", "drain", "end"] = "offer"
        # Memorable events are followed when their id's hash falls under this share, so the
        # sample spreads over the whole run (about 2 in 5 events are memorable).
        wanted = spec.e2e_sample / max(spec.planned_events * 0.4, 1)
        self._e2e_share = min(1.0, wanted)

    async def run(self) -> Measured:
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
        for r in await store.fetchall("loadtest_job_depth"):
            kind, status, jobs, items = r["kind"], r["status"], r["jobs"], r["items"]
            total[kind] = total.get(kind, 0) + items
            if status in ("todo", "doing"):
                backlog[kind] = backlog.get(kind, 0) + items
            elif status == "done":
                done[kind] = items
            elif status == "failed":
                failed += jobs
            elif status == "parked":
                parked += jobs
        ledger = (await store.fetchall("loadtest_ledger_totals"))[0]
        ok, cost = ledger["ok"], ledger["cost"]
        claims = sum(
            r["n"] for r in await store.fetchall("claim_counts") if r["status"] != "pending"
        )
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
            calls_error=int(ledger["errors"]),
            prompt_tokens=int(ledger["prompt_tokens"]),
            completion_tokens=int(ledger["completion_tokens"]),
            cost=float(cost),
            retries=int(ledger["retries"]),
            rate_limited=int(ledger["rate_limited"]),
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
            for r in rows:
                acked = pending.pop(r["event_id"], None)  # None: a concurrent poll saw it first
                if acked is not None:
                    self.m.e2e.append(asked - acked)
