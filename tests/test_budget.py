"""Budget: limits per day, month and namespace; parking and resuming; crash recovery; config.

Jobs run through a real ``StageRunner`` with a tiny stage that calls the gateway, against the
scripted loopback server, so "parked" and "resumed" are what the runner and the job table do.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import textwrap
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import pytest
from helpers import rows, wait_until
from scripted_provider import PROVIDER, ScriptedProvider, chat_request, gateway_config

from hlmem.clock import ManualClock, SystemClock
from hlmem.config import Config, PipelineConfig, StageConfig, load_config
from hlmem.errors import BudgetExceeded, ConfigError, Parkable
from hlmem.gateway import Budget, CallInfo, Gateway, Tokens
from hlmem.jobs import JobQueue, JobSpec
from hlmem.messages import FlushRequested, Job, JobKind
from hlmem.stages.base import Stage, StageRunner
from hlmem.store import Store, SyncTx

pytestmark = pytest.mark.anyio

#: a call of chat_request("job N", max_tokens=100) reserves about this much at the test prices
#: (about 9 prompt tokens at 0.5/1k + 100 completion tokens at 1.0/1k) and, answered by the
#: scripted server's default reply (10 prompt, 5 completion tokens), costs exactly SPENT
WORST = 0.1045
SPENT = 0.01


class Probe(Stage[list[str]]):
    """One model call per job, in the job's namespace."""

    name = JobKind.EXTRACTOR  # any stage's kind: the job table takes no other

    def __init__(self, gw: Gateway) -> None:
        self.gw = gw

    async def prepare(self, jobs: list[Job]) -> list[str]:
        out = []
        for job in jobs:
            assert isinstance(job.payload, FlushRequested)
            answer = await self.gw.chat(
                stage=self.name,
                provider=PROVIDER,
                request=chat_request(f"job {job.id}"),
                namespace=job.payload.namespace,
                job_id=job.id,
            )
            out.append(answer.text)
        return out

    def apply(self, tx: SyncTx, jobs: list[Job], prepared: list[str]) -> list[JobSpec]:
        return []


async def enqueue(queue: JobQueue, n: int, namespace: str = "ns") -> None:
    specs = [
        JobSpec(kind=JobKind.EXTRACTOR, payload=FlushRequested(namespace=namespace))
        for _ in range(n)
    ]
    async with queue.store.transaction() as tx:
        await queue.enqueue(tx, specs)


def job_states(db: Path) -> dict[str, int]:
    return dict(rows(db, "SELECT status, count(*) FROM jobs GROUP BY status"))


async def run_probe_until(gw: Gateway, queue: JobQueue, db: Path, done: Any) -> None:
    """Run the probe stage until ``done(job_states)`` holds."""
    pipeline = PipelineConfig(poll_interval_s=0.02)
    runner = StageRunner(
        Probe(gw), queue, StageConfig(batch_size=1, max_attempts=3), pipeline, SystemClock()
    )
    async with anyio.create_task_group() as tg:
        await tg.start(runner.run)
        await wait_until(lambda: done(job_states(db)), timeout_s=15)
        runner.stop()


def budget_config(server: ScriptedProvider, **budget: Any) -> Config:
    return gateway_config(server.base_url, budget={"resume_interval_s": 0.05, **budget})


# --- budget exhausted mid-run, then raised ----------------------------------------------------


async def test_jobs_refused_for_budget_are_parked_then_resume_when_the_limit_is_raised(
    server: ScriptedProvider, store: Store, db_path: Path
) -> None:
    queue = JobQueue(store, lease_s=30, clock=SystemClock())
    await enqueue(queue, 6)
    # 0.125 fits the worst case of a call on top of two settled ones, not three
    async with Gateway.open(
        budget_config(server, daily_limit=0.125), store, clock=SystemClock()
    ) as gw:
        await run_probe_until(
            gw, queue, db_path, lambda s: s.get("done", 0) + s.get("parked", 0) == 6
        )
    assert job_states(db_path) == {"done": 3, "parked": 3}
    assert len(server.seen) == 3  # a refused call never reaches the provider
    parked = rows(db_path, "SELECT last_error FROM jobs WHERE status = 'parked'")
    assert all(e.startswith("BudgetExceeded: daily budget") for (e,) in parked)
    assert rows(db_path, "SELECT count(*) FROM provider_calls WHERE outcome = 'refused'") == [(3,)]

    # a raised limit: the gateway resumes the parked jobs when it opens, and they complete
    async with Gateway.open(
        budget_config(server, daily_limit=1.0), store, clock=SystemClock()
    ) as gw:
        await run_probe_until(gw, queue, db_path, lambda s: s == {"done": 6})
    assert len(server.seen) == 6
    outcomes = rows(db_path, "SELECT outcome, count(*) FROM provider_calls GROUP BY outcome")
    assert dict(outcomes) == {"ok": 6, "refused": 3}
    # nothing lost, nothing done twice: one ok call per job
    per_job = rows(
        db_path, "SELECT job_id, count(*) FROM provider_calls WHERE outcome = 'ok' GROUP BY job_id"
    )
    assert sorted(per_job) == [(i, 1) for i in range(1, 7)]
    spent = rows(db_path, "SELECT sum(cost) FROM provider_calls")[0][0]
    assert spent == pytest.approx(6 * SPENT)


async def test_a_parked_job_resumes_by_itself_on_a_new_day(
    server: ScriptedProvider, store: Store, db_path: Path
) -> None:
    clock = ManualClock(datetime(2026, 3, 31, 23, 0, tzinfo=UTC))
    queue = JobQueue(store, lease_s=30, clock=SystemClock())
    await enqueue(queue, 2)
    async with Gateway.open(budget_config(server, daily_limit=0.11), store, clock=clock) as gw:
        await run_probe_until(gw, queue, db_path, lambda s: s == {"done": 1, "parked": 1})
        clock.advance(3600)  # midnight UTC: a new day (and month), nothing else changes
        await run_probe_until(gw, queue, db_path, lambda s: s == {"done": 2})
    days = rows(db_path, "SELECT period, amount FROM budget_usage WHERE namespace = '' ORDER BY 1")
    assert [d for d, _ in days] == ["D2026-03-31", "D2026-04-01", "M2026-03", "M2026-04"]
    assert [a for _, a in days] == [pytest.approx(SPENT)] * 4


async def test_resume_wakes_only_as_many_jobs_as_the_headroom_covers(
    server: ScriptedProvider, store: Store, db_path: Path
) -> None:
    queue = JobQueue(store, lease_s=30, clock=SystemClock())
    await enqueue(queue, 5)
    async with Gateway.open(
        budget_config(server, daily_limit=0.05), store, clock=SystemClock()
    ) as gw:
        await run_probe_until(gw, queue, db_path, lambda s: s == {"parked": 5})
    # room for two worst cases (2.5 x): two jobs resume, three stay parked
    cfg = budget_config(server, daily_limit=2.5 * WORST, resume_interval_s=3600)
    async with Gateway.open(cfg, store, clock=SystemClock()):
        pass
    assert job_states(db_path) == {"todo": 2, "parked": 3}
    assert rows(db_path, "SELECT id, attempts FROM jobs WHERE status = 'todo'") == [(1, 0), (2, 0)]


# --- limits -----------------------------------------------------------------------------------


async def test_namespace_limits_and_overrides(
    server: ScriptedProvider, store: Store, db_path: Path
) -> None:
    cfg = budget_config(
        server, namespace_daily_limit=0.11, namespaces={"vip": {"daily_limit": 1.0}}
    )
    async with Gateway.open(cfg, store, clock=SystemClock()) as gw:

        async def call(namespace: str | None) -> str:
            try:
                await gw.chat(
                    stage="s", provider=PROVIDER, request=chat_request("job 1"), namespace=namespace
                )
            except BudgetExceeded as exc:
                assert isinstance(exc, Parkable)
                return exc.scope
            return "ok"

        assert [await call("a") for _ in range(2)] == ["ok", "namespace 'a' daily"]
        assert [await call("b") for _ in range(2)] == ["ok", "namespace 'b' daily"]
        assert [await call("vip") for _ in range(3)] == ["ok"] * 3
        assert [await call(None) for _ in range(3)] == ["ok"] * 3
        usage = {scope: (used, limit) for scope, used, limit in await gw.budget.usage("a")}
    assert usage["daily"][0] == pytest.approx(8 * SPENT)
    assert usage["daily"][1] == float("inf")
    assert usage["namespace 'a' daily"][0] == pytest.approx(SPENT)
    assert usage["namespace 'a' daily"][1] == 0.11


async def test_a_monthly_limit_refuses_across_days(
    server: ScriptedProvider, store: Store, db_path: Path
) -> None:
    clock = ManualClock(datetime(2026, 5, 10, tzinfo=UTC))
    cfg = budget_config(server, monthly_limit=0.12)
    async with Gateway.open(cfg, store, clock=clock) as gw:
        await gw.chat(stage="s", provider=PROVIDER, request=chat_request("job 1"))
        clock.advance(86400)
        await gw.chat(stage="s", provider=PROVIDER, request=chat_request("job 1"))
        clock.advance(86400)
        with pytest.raises(BudgetExceeded, match="monthly budget") as info:
            await gw.chat(stage="s", provider=PROVIDER, request=chat_request("job 1"))
    assert info.value.needed == pytest.approx(WORST)
    assert info.value.used == pytest.approx(2 * SPENT)
    assert len(server.seen) == 2


# --- crash between reserve and settle ---------------------------------------------------------


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


async def test_a_hold_of_a_dead_process_is_released_on_recovery(
    server: ScriptedProvider, store: Store, db_path: Path
) -> None:
    cfg = budget_config(server, daily_limit=0.15)
    dead = Budget(cfg, store, SystemClock(), owner=f"{socket.gethostname()}:{dead_pid()}:feed")
    await dead.reserve(CallInfo("s", PROVIDER, "m", "chat", "ns", 42), Tokens(9, 100))
    assert rows(db_path, "SELECT status, owner FROM budget_reservations")[0][0] == "held"
    async with Gateway.open(cfg, store, clock=SystemClock()) as gw:  # recovery runs at open
        await gw.chat(stage="s", provider=PROVIDER, request=chat_request("job 1"))
    assert rows(db_path, "SELECT status, amount FROM budget_reservations ORDER BY id") == [
        ("released", 0.0),
        ("settled", pytest.approx(SPENT)),
    ]
    assert rows(db_path, "SELECT outcome, error_class, job_id FROM provider_calls ORDER BY id") == [
        ("error", "ReservationAbandoned", 42),
        ("ok", None, None),
    ]


async def test_a_hold_of_another_host_is_released_only_after_the_ttl(
    server: ScriptedProvider, store: Store, db_path: Path
) -> None:
    clock = ManualClock(datetime(2026, 6, 1, tzinfo=UTC))
    cfg = budget_config(server, reservation_ttl_s=3600)
    elsewhere = Budget(cfg, store, clock, owner="another-host:123:abcd")
    held = await elsewhere.reserve(CallInfo("s", PROVIDER, "m", "chat"), Tokens(9, 100))
    clock.advance(1800)
    async with Gateway.open(cfg, store, clock=clock) as gw:
        assert await gw.recover() == 0
        clock.advance(3600)
        assert await gw.recover() == 1
    # a settle that arrives after recovery released the hold still counts its cost once
    await elsewhere.settle(held, Tokens(10, 5), elsewhere_attempts())
    assert rows(db_path, "SELECT status, amount FROM budget_reservations") == [
        ("settled", pytest.approx(SPENT))
    ]
    usage = rows(db_path, "SELECT amount FROM budget_usage WHERE period LIKE 'D%'")
    assert usage == [(pytest.approx(SPENT),)]


def elsewhere_attempts() -> Any:
    from hlmem.gateway import Attempts

    return Attempts(sent=1, latency_ms=5.0)


CRASHING_CALL = textwrap.dedent(
    """
    import sys, anyio
    from hlmem.clock import SystemClock
    from hlmem.config import load_config
    from hlmem.gateway.client import Gateway
    from hlmem.gateway.providers import ChatMessage, ChatRequest
    from hlmem.store.db import Store

    async def main(db, base_url):
        cfg = load_config(env={}, overrides={
            "providers": {"p": {"preset": "sim", "base_url": base_url, "timeout_s": 60}},
            "prices": {"p/*": {"input_per_1k": 0.5, "output_per_1k": 1.0}},
        })
        store = await Store.open(db, cfg.store)
        async with Gateway.open(cfg, store, clock=SystemClock()) as gw:
            request = ChatRequest(model="m", messages=(ChatMessage(role="user", content="hi"),))
            await gw.chat(stage="extractor", provider="p", request=request, job_id=9)

    anyio.run(main, sys.argv[1], sys.argv[2])
    """
)


@pytest.mark.slow
async def test_a_process_killed_between_reserve_and_settle_leaves_nothing_held(
    server: ScriptedProvider, store: Store, db_path: Path, tmp_path: Path
) -> None:
    server.script(delay_s=30, text="{}")  # the provider never answers in time
    script = tmp_path / "crash.py"
    script.write_text(CRASHING_CALL)
    proc = await anyio.open_process([sys.executable, str(script), str(db_path), server.base_url])
    async with proc:
        try:
            await wait_until(lambda: server.requests == 1, timeout_s=20)
            held = rows(db_path, "SELECT status, owner, amount FROM budget_reservations")
            assert [h[0] for h in held] == ["held"]
            assert held[0][1].split(":")[1] == str(proc.pid)
        finally:
            proc.send_signal(signal.SIGKILL)
            await proc.wait()
    assert float(rows(db_path, "SELECT sum(amount) FROM budget_usage")[0][0]) > 0
    async with Gateway.open(budget_config(server), store, clock=SystemClock()):
        pass
    assert rows(db_path, "SELECT status, amount FROM budget_reservations") == [("released", 0.0)]
    assert rows(db_path, "SELECT sum(amount) FROM budget_usage") == [(0.0,)]
    assert rows(db_path, "SELECT stage, outcome, error_class, job_id FROM provider_calls") == [
        ("extractor", "error", "ReservationAbandoned", 9)
    ]


# --- configuration ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"prices": {"p/m": {"input_per_1k": 1.0}}}, "input_per_1k and output_per_1k"),
        ({"prices": {"m": {"free": True}}}, "PROVIDER/MODEL"),
        (
            {"prices": {"p/m": {"input_per_1k": 1, "output_per_1k": 2, "currency": "CNY"}}},
            "budget.currency",
        ),
        ({"budget": {"daily_limit": -1}}, "daily_limit"),
        ({"providers": {"p": {"preset": "bogus"}}}, "plugins.allowlist"),
        ({"providers": {"p": {"requests_per_minute": 0}}}, "requests_per_minute"),
        ({"providers": {"p": {"timeot_s": 3}}}, "timeot_s"),
    ],
)
def test_invalid_gateway_settings_are_config_errors(
    overrides: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config(env={}, overrides=overrides)


def test_a_key_written_into_the_configuration_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "keys.toml"
    path.write_text('[providers.p]\npreset = "openai"\napi_key = "sk-in-a-file-123456"\n')
    with pytest.raises(ConfigError, match="api_key_env") as info:
        load_config(path, env={})
    assert "sk-in-a-file-123456" not in str(info.value)


def test_keys_are_read_from_the_named_variable_and_stay_secret(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text(
        '[providers.qwen]\npreset = "dashscope"\napi_key_env = "MY_QWEN_KEY"\n'
        '[prices."qwen/qwen-plus"]\ninput_per_1k = 0.0008\noutput_per_1k = 0.002\n'
        "[budget]\ndaily_limit = 5.0\n"
    )
    cfg = load_config(path, env={"MY_QWEN_KEY": "sk-qwen-9a8b7c6d"})
    key = cfg.providers["qwen"].api_key
    assert key is not None and key.get_secret_value() == "sk-qwen-9a8b7c6d"
    assert "sk-qwen" not in repr(cfg) + str(cfg.model_dump()) + cfg.model_dump_json()
    assert load_config(path, env={}).providers["qwen"].api_key is None
    assert cfg.budget.daily_limit == 5.0
    assert cfg.budget.monthly_limit == float("inf")


async def test_no_providers_by_default_keeps_the_embedded_mode(store: Store) -> None:
    cfg = load_config(env={})
    assert cfg.providers == {} and cfg.prices == {} and cfg.plugins.allowlist == []
    # nothing to reach: no key, no network needed
    async with Gateway.open(cfg, store, clock=SystemClock()) as gw:
        assert await gw.resume_parked_for_budget() == 0
