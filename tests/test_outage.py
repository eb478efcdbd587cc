"""Provider trouble parks work, it never loses it: outages, the breaker, 429s and bad answers.

The whole pipeline with the model extractor runs against the simulated provider on 127.0.0.1
(its error rate switched while it serves), or a tiny stage runs against the scripted server,
with a :class:`~hlmem.clock.ManualClock` driving the breaker's cooldown and the outage clock,
so no test waits through a real cooldown. Assertions are on job states, attempts, claims, the
ledger and ``ops report``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from helpers import rows, scalar, wait_until
from scripted_provider import PROVIDER, ScriptedProvider, chat_request, gateway_config

import hlmem
from hlmem.clock import ManualClock, SystemClock
from hlmem.config import Config, PipelineConfig, StageConfig
from hlmem.gateway import Gateway, ops_report, render
from hlmem.jobs import JobQueue, JobSpec
from hlmem.messages import FlushRequested, Job, JobKind
from hlmem.sim import SimProvider, SimSettings
from hlmem.stages.base import Stage, StageRunner
from hlmem.store import Store, SyncTx

pytestmark = pytest.mark.anyio

COOLDOWN_S = 30.0
FAST: dict[str, Any] = {
    "pipeline": {
        "poll_interval_s": 0.02,
        "drain_poll_s": 0.01,
        "shutdown_grace_s": 5,
        "extractor": {"workers": 2, "batch_size": 8, "retry_base_s": 0.01, "retry_max_s": 0.05},
    },
    "windower": {"sweep_interval_s": 0.02},
    "gateway": {"probe_interval_s": 0.02},
}


def outage_config(base_url: str, **gateway: Any) -> Config:
    """The model extractor on the provider at ``base_url``: instant retries (so that, before
    refusals stopped counting as attempts, jobs used up their attempts while the breaker was
    open), one request at a time and a breaker that opens after 3 failures for COOLDOWN_S of
    the injected clock."""
    sections = {**FAST, "gateway": {**FAST["gateway"], **gateway}}
    provider = {
        "max_retries": 2,
        "retry_base_s": 0,
        "max_concurrency": 1,
        "breaker_failures": 3,
        "breaker_cooldown_s": COOLDOWN_S,
    }
    return gateway_config(
        base_url,
        provider=provider,
        extractor={"kind": "model", "provider": PROVIDER, "model": "sim-chat"},
        **sections,
    )


def line(i: int) -> str:
    if i % 2:
        return f"Remember that ticket {i} belongs to Alice."
    return f"记住：项目{i}的截止日期是周五"


async def say(mem: hlmem.Memory, sessions: int) -> None:
    for i in range(sessions):
        await mem.add_event(f"s{i}", line(i))
    await mem.flush()


def claim_set(db: Path) -> set[tuple[Any, ...]]:
    return set(rows(db, "SELECT subject, predicate, value FROM claims WHERE status = 'active'"))


def job_states(db: Path, kind: str = "extractor") -> dict[str, int]:
    return dict(rows(db, "SELECT status, count(*) FROM jobs WHERE kind = ? GROUP BY 1", (kind,)))


def settled(db: Path, jobs: int) -> bool:
    """Every extractor job exists and none is running or ready to run: each one is done, or
    waits (for the provider to come back), or has ended."""
    busy = scalar(
        db,
        "SELECT count(*) FROM jobs WHERE kind = 'extractor'"
        " AND (status = 'doing' OR (status = 'todo' AND run_after <= ?))",
        (time.time(),),
    )
    return busy == 0 and bool(job_states(db)) and sum(job_states(db).values()) == jobs


def ended(db: Path) -> bool:
    """No job is todo or doing."""
    return not scalar(db, "SELECT count(*) FROM jobs WHERE status IN ('todo', 'doing')")


def refusals(db: Path, error_class: str) -> int:
    return int(
        scalar(db, "SELECT count(*) FROM provider_calls WHERE error_class = ?", (error_class,))
    )


async def expected_claims(tmp_path: Path, sessions: int) -> set[tuple[Any, ...]]:
    """What the rules extractor finds in the same lines: the simulated model answers with it."""
    db = tmp_path / "rules.db"
    async with hlmem.open(db, config=hlmem.load_config(env={}, overrides=FAST)) as mem:
        await say(mem, sessions)
        await mem.drain(timeout_s=60)
    found = claim_set(db)
    assert len(found) == sessions
    return found


# --- an outage the breaker rides out ----------------------------------------------------------


async def test_a_60_percent_503_outage_fails_no_job_and_every_claim_arrives(
    tmp_path: Path,
) -> None:
    sessions = 24
    expected = await expected_claims(tmp_path, sessions)
    db, clock = tmp_path / "m.db", ManualClock()
    with SimProvider(settings=SimSettings(error_rate=0.6, error_status=503, seed=5)) as sim:
        async with hlmem.open(db, config=outage_config(sim.base_url), clock=clock) as mem:
            await say(mem, sessions)
            # The breaker opens and refuses calls; their jobs wait instead of failing.
            await wait_until(lambda: settled(db, sessions), timeout_s=30)
            assert refusals(db, "CircuitOpen") >= 3
            assert job_states(db).get("failed", 0) == 0
            sim.update(error_rate=0.0)  # the provider is back ...
            clock.advance(COOLDOWN_S)  # ... and the breaker's cooldown is over
            await mem.drain(timeout_s=60)
        stats = sim.stats()
    assert stats.errors_injected >= 3  # the breaker opened
    assert job_states(db) == {"done": sessions}
    assert scalar(db, "SELECT count(*) FROM extractions") == sessions
    assert claim_set(db) == expected
    # A refusal is not an attempt: no job spent its attempts while the circuit was open.
    assert scalar(db, "SELECT max(attempts) FROM jobs WHERE kind = 'extractor'") < 5


async def test_an_outage_longer_than_outage_park_s_parks_its_jobs_until_the_provider_is_back(
    tmp_path: Path,
) -> None:
    sessions = 10
    expected = await expected_claims(tmp_path, sessions)
    db, clock = tmp_path / "m.db", ManualClock()
    with SimProvider(settings=SimSettings(error_rate=1.0, error_status=503)) as sim:
        cfg = outage_config(sim.base_url, outage_park_s=120.0)
        async with hlmem.open(db, config=cfg, clock=clock) as mem:
            await say(mem, sessions)
            await wait_until(lambda: refusals(db, "CircuitOpen") >= 1, timeout_s=30)
            clock.advance(121)  # down for longer than outage_park_s
            await wait_until(lambda: job_states(db) == {"parked": sessions}, timeout_s=30)
            await mem.drain(timeout_s=30)  # parked jobs are not waited for: this returns
            report = render(await ops_report(mem.store, cfg, since=_day(), clock=clock))
            parked = rows(db, "SELECT last_error, attempts FROM jobs WHERE kind = 'extractor'")
            assert all(e.startswith("ProviderOutage") for e, _ in parked)
            assert "parked for a provider outage: 10 jobs (p)" in report
            assert scalar(db, "SELECT count(*) FROM claims") == 0

            sim.update(error_rate=0.0)
            clock.advance(COOLDOWN_S)  # the breaker lets one probe through; it succeeds
            await wait_until(lambda: job_states(db) == {"done": sessions}, timeout_s=30)
            await mem.drain(timeout_s=30)
    assert claim_set(db) == expected


def _day() -> Any:
    from datetime import timedelta

    return timedelta(days=1)


# --- one stage against the scripted server: what counts as an attempt -------------------------


class Caller(Stage[list[str]]):
    """One model call per job."""

    name = JobKind.EXTRACTOR  # any stage's kind: the job table takes no other

    def __init__(self, gw: Gateway) -> None:
        self.gw = gw

    async def prepare(self, jobs: list[Job]) -> list[str]:
        out = []
        for job in jobs:
            answer = await self.gw.chat(
                stage=self.name,
                provider=PROVIDER,
                request=chat_request(f"job {job.id}"),
                job_id=job.id,
            )
            out.append(answer.text)
        return out

    def apply(self, tx: SyncTx, jobs: list[Job], prepared: list[str]) -> list[JobSpec]:
        return []


async def run_jobs(gw: Gateway, store: Store, n: int, done: Any, *, max_attempts: int = 3) -> None:
    queue = JobQueue(store, lease_s=30, clock=SystemClock())
    specs = [
        JobSpec(kind=JobKind.EXTRACTOR, payload=FlushRequested(namespace="ns")) for _ in range(n)
    ]
    async with store.transaction() as tx:
        await queue.enqueue(tx, specs)
    stage_cfg = StageConfig(
        batch_size=1, max_attempts=max_attempts, retry_base_s=0.01, retry_max_s=0.02
    )
    runner = StageRunner(
        Caller(gw), queue, stage_cfg, PipelineConfig(poll_interval_s=0.02), SystemClock()
    )
    async with anyio.create_task_group() as tg:
        await tg.start(runner.run)
        await done()
        runner.stop()


async def test_429s_are_not_attempts(server: ScriptedProvider, store: Store, db_path: Path) -> None:
    # The provider throttles six times in a row; the gateway gives up on each at once (no
    # retries), and the job waits the provider's Retry-After each time without using an attempt.
    server.script(status=429, headers={"retry-after-ms": "10"}, times=6)
    cfg = gateway_config(
        server.base_url, provider={"max_retries": 0}, gateway={"probe_interval_s": 0.02}
    )
    async with Gateway.open(cfg, store, clock=SystemClock()) as gw:
        await run_jobs(gw, store, 1, lambda: wait_until(lambda: ended(db_path)))
    assert rows(db_path, "SELECT status, attempts FROM jobs") == [("done", 1)]
    assert len(server.seen) == 7
    assert refusals(db_path, "RateLimited") == 6


async def test_5xx_that_use_up_the_attempts_park_the_job_and_it_resumes_when_the_provider_answers(
    server: ScriptedProvider, store: Store, db_path: Path
) -> None:
    server.script(status=503, times=4)
    clock = ManualClock()
    cfg = gateway_config(
        server.base_url,
        provider={"max_retries": 1, "retry_base_s": 0, "breaker_failures": 100},
        gateway={"probe_interval_s": 0.02},
    )
    async with Gateway.open(cfg, store, clock=clock) as gw:

        async def parked_then_done() -> None:
            await wait_until(lambda: ended(db_path))
            [(status, error)] = rows(db_path, "SELECT status, last_error FROM jobs")
            assert status == "parked"  # provider trouble never fails a job
            assert error.startswith("ProviderOutage")
            clock.advance(COOLDOWN_S)
            await wait_until(lambda: job_states(db_path) == {"done": 1})

        await run_jobs(gw, store, 1, parked_then_done, max_attempts=2)
    assert len(server.seen) == 5


async def test_a_4xx_still_fails_the_job_at_once(
    server: ScriptedProvider, store: Store, db_path: Path
) -> None:
    server.script(status=400, json_body={"error": {"message": "bad request"}})
    cfg = gateway_config(server.base_url, gateway={"probe_interval_s": 0.02})
    async with Gateway.open(cfg, store, clock=SystemClock()) as gw:
        await run_jobs(gw, store, 1, lambda: wait_until(lambda: ended(db_path)))
    [(error, attempts)] = rows(db_path, "SELECT last_error, attempts FROM jobs")
    assert error.startswith("ProviderRejected") and attempts == 1
    assert len(server.seen) == 1


# --- answers that do not parse ----------------------------------------------------------------


async def test_500s_and_bad_json_answers_fail_no_job(tmp_path: Path) -> None:
    sessions = 60
    expected = await expected_claims(tmp_path, sessions)
    db = tmp_path / "m.db"
    settings = SimSettings(error_rate=0.2, error_status=500, bad_json_rate=0.3, seed=11)
    with SimProvider(settings=settings) as sim:
        cfg = gateway_config(
            sim.base_url,
            provider={"max_retries": 2, "retry_base_s": 0, "breaker_failures": 1000},
            extractor={"kind": "model", "provider": PROVIDER, "model": "sim-chat"},
            **FAST,
        )
        async with hlmem.open(db, config=cfg) as mem:
            await say(mem, sessions)
            await mem.drain(timeout_s=120)
        stats = sim.stats()
    assert stats.bad_json_injected > 10 and stats.errors_injected > 10
    assert job_states(db) == {"done": sessions}
    assert claim_set(db) == expected
