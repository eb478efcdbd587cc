"""``hlmem loadtest``: what N agents talking at some rate cost, and whether the pipeline keeps up.

:func:`run_loadtest` starts the simulated provider (``hlmem sim-provider``, a child process on
127.0.0.1, so that the model server's CPU is not the measured process's) or takes a real
provider from a config file under a hard budget cap the gateway enforces (both in
:mod:`hlmem.loadtest.provider`). It opens a
fresh database with ``hlmem.open`` (the inline pipeline, ``extractor.kind = "model"`` through
the one shared gateway and its ledger, exactly as an application would), and offers the
conversations of :mod:`hlmem.loadtest.conversations` through ``add_event``: ``slots`` sessions talk
at once, each sending its events in order on a fixed schedule (open loop at ``rate`` events/s), or
each as soon as its previous event is acknowledged (no ``rate``). When the load has been offered it
flushes, drains, and reads the ledger, the job table and the provider's ``/stats``.

While the load runs, background tasks sample the job table, the ledger and the RSS every
``sample_interval_s`` (reads on the store's reader connection), and poll for the claims of a
sample of memorable events (event -> claim visible). :mod:`hlmem.loadtest.analysis` turns it all
into the report; :mod:`hlmem.loadtest.html` draws it.

:class:`LoadSpec` and the running load (producers and samplers) live in :mod:`hlmem.loadtest.load`,
the reading of the drained database and the report's assembly (:func:`build_report`) in
:mod:`hlmem.loadtest.totals`; this module starts the provider, opens the database, runs both,
and re-exports their public names.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path

import anyio

from hlmem.config import Config
from hlmem.errors import InputError
from hlmem.loadtest.analysis import LoadReport
from hlmem.loadtest.load import E2E_POLL_S, E2E_QUERY_IDS, Load, LoadSpec, loadavg
from hlmem.loadtest.provider import SIM_PROVIDER, SimProcess, real_config, rules_config, sim_config
from hlmem.loadtest.totals import build_report, read_facts
from hlmem.memory import open as open_memory

__all__ = ["E2E_POLL_S", "E2E_QUERY_IDS", "LoadSpec", "build_report", "run_loadtest"]

log = logging.getLogger(__name__)


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
    loadavg_start = loadavg()
    with tempfile.TemporaryDirectory(prefix="hlmem-loadtest-") as tmp:
        path = Path(db) if db is not None else Path(tmp) / "loadtest.db"
        async with _provider(spec, base, Path(tmp)) as (cfg, sim, provider):
            async with open_memory(path, config=cfg) as mem:
                measured = await Load(spec, mem, progress=progress, status=status).run()
                facts = await read_facts(mem)
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
