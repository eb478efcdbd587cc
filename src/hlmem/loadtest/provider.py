"""The model provider of a load test: the simulated one in a child process, or a real one capped.

:class:`SimProcess` runs ``hlmem sim-provider`` (:mod:`hlmem.sim.server`) as a child process on
127.0.0.1 and a free port, so that the simulated model's own CPU work (it answers extraction
prompts with the rules extractor) is not part of the process being measured, then stops it
with SIGTERM and reads the final ``/stats`` it prints. :func:`sim_config` points the model
extractor of a config at it, with the gateway's limits set to the server's and its price in the
price book; :func:`real_config` takes a config file with a real provider and caps its daily and
monthly budget, which the gateway enforces by reserving each call's worst case before sending.
This module starts and stops processes and builds configs; it sends no request itself.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any, Literal

import anyio
from anyio.abc import Process
from pydantic import ValidationError

from hlmem.config import Config, PriceConfig, ProviderConfig, load_config
from hlmem.errors import ConfigError, HlmemError
from hlmem.sim import SimSettings, SimStats

SIM_PROVIDER = "sim"
SIM_MODEL = "sim-chat"
#: limits given to the gateway when the simulated provider has none
UNLIMITED_RPM = 1e6
UNLIMITED_TPM = 1e9
#: the simulated provider recovers at once: the gateway's circuit breaker pauses it briefly
SIM_BREAKER_COOLDOWN_S = 2.0
SIM_START_TIMEOUT_S = 60.0
SIM_STOP_TIMEOUT_S = 30.0
_LISTENING = b"listening on "


def _with(cfg: Config, **sections: Any) -> Config:
    """``cfg`` with whole sections replaced, validated again as a whole (API keys stay set)."""
    fields = {name: getattr(cfg, name) for name in Config.model_fields}
    fields.update(sections)
    try:
        return Config(**fields)
    except ValidationError as exc:
        raise ConfigError(f"loadtest: invalid configuration: {exc}") from None


def sim_config(base: Config, base_url: str, sim: SimSettings, *, concurrency: int) -> Config:
    """``base`` with the model extractor on the simulated provider at ``base_url``: the
    gateway paces to the server's limits and prices its calls at the server's prices.

    :raises ConfigError: the result is not a valid config.
    """
    provider = ProviderConfig(
        preset="sim",
        base_url=base_url,
        requests_per_minute=float(sim.rpm or UNLIMITED_RPM),
        tokens_per_minute=float(sim.tpm or UNLIMITED_TPM),
        max_concurrency=concurrency,
        breaker_cooldown_s=SIM_BREAKER_COOLDOWN_S,
    )
    price = PriceConfig(
        input_per_1k=sim.price_in or 0.0,
        output_per_1k=sim.price_out or 0.0,
        currency=base.budget.currency,
    )
    extractor = base.extractor.model_copy(
        update={"kind": "model", "provider": SIM_PROVIDER, "model": SIM_MODEL}
    )
    return _with(
        base,
        providers={**base.providers, SIM_PROVIDER: provider},
        prices={**base.prices, f"{SIM_PROVIDER}/*": price},
        extractor=extractor,
    )


def real_config(path: str, *, budget: float, extractor: Literal["model", "rules"] | None) -> Config:
    """The config file's settings, with ``budget`` as its daily and monthly cap.

    A fresh database starts with nothing spent, so no run spends more than ``budget`` (unless
    it runs across the end of a UTC month, when both periods start again).

    :raises ConfigError: unreadable or invalid file, or no stage that calls a model.
    """
    cfg = load_config(path)
    capped = cfg.budget.model_copy(
        update={
            "daily_limit": min(cfg.budget.daily_limit, budget),
            "monthly_limit": min(cfg.budget.monthly_limit, budget),
        }
    )
    cfg = _with(cfg, budget=capped)
    if extractor == "rules":
        return rules_config(cfg)
    if extractor == "model" and cfg.extractor.kind != "model":
        raise ConfigError(f"{path}: --extractor model needs extractor.kind = 'model'")
    if not cfg.calls_models():
        raise ConfigError(
            f"{path}: no stage calls a model (extractor.kind = 'rules', local embedder, no dedup"
            " audit): there is nothing to cost; use --extractor rules for a no-cost run"
        )
    return cfg


def rules_config(base: Config) -> Config:
    """``base`` with the embedded rules extractor (no model call, no cost)."""
    return _with(base, extractor=base.extractor.model_copy(update={"kind": "rules"}))


class SimProcess:
    """``hlmem sim-provider`` in a child process on 127.0.0.1 (a free port)."""

    def __init__(self, settings: SimSettings, stderr_path: Path) -> None:
        self.settings = settings
        self.stderr_path = stderr_path
        self.base_url = ""
        self._proc: Process | None = None
        self._out = b""

    def argv(self) -> list[str]:
        s = self.settings
        argv = [sys.executable, "-m", "hlmem", "sim-provider", "--json"]
        argv += ["--host", "127.0.0.1", "--port", "0", "--seed", str(s.seed)]
        argv += ["--latency-ms", repr(s.latency_ms), "--jitter-ms", repr(s.jitter_ms)]
        argv += ["--error-rate", repr(s.error_rate), "--error-status", str(s.error_status)]
        for flag, value in (
            ("--rpm", s.rpm),
            ("--tpm", s.tpm),
            ("--price-in", s.price_in),
            ("--price-out", s.price_out),
        ):
            if value is not None:
                argv += [flag, repr(value)]
        return argv

    async def start(self) -> None:
        """Start the child and wait for the URL it announces.

        :raises HlmemError: it exited, or said nothing within ``SIM_START_TIMEOUT_S``.
        """
        # Our HLMEM_* settings are this process's: the child gets its flags and nothing else.
        env = {k: v for k, v in os.environ.items() if not k.startswith("HLMEM_")}
        with self.stderr_path.open("wb") as err:  # the child keeps its own descriptor
            self._proc = await anyio.open_process(
                self.argv(), stdout=subprocess.PIPE, stderr=err, env=env
            )
        stdout = self._proc.stdout
        assert stdout is not None
        with anyio.move_on_after(SIM_START_TIMEOUT_S):
            while b"\n" not in self._out:
                try:
                    self._out += await stdout.receive()
                except anyio.EndOfStream:
                    break
        line, _, self._out = self._out.partition(b"\n")
        if _LISTENING not in line:
            await self.aclose()
            tail = (await anyio.Path(self.stderr_path).read_text(errors="replace"))[-2000:]
            raise HlmemError(f"the simulated provider did not start: {line!r} {tail}")
        self.base_url = line.split(_LISTENING, 1)[1].decode().strip()

    async def stop(self) -> SimStats:
        """SIGTERM, then the final ``/stats`` it prints.

        :raises HlmemError: it did not stop in time, or printed no stats.
        """
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        proc.send_signal(signal.SIGTERM)
        with anyio.move_on_after(SIM_STOP_TIMEOUT_S) as scope:
            while True:
                try:
                    self._out += await proc.stdout.receive()
                except anyio.EndOfStream:
                    break
            await proc.wait()
        await self.aclose()
        if scope.cancelled_caught:
            raise HlmemError("the simulated provider did not stop in time")
        try:
            return SimStats.model_validate_json(self._out)
        except ValidationError as exc:
            raise HlmemError(f"the simulated provider printed no stats: {exc}") from None

    async def aclose(self) -> None:
        """Kill the child if it still runs, and close its pipes (idempotent)."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        with anyio.CancelScope(shield=True):
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
            await proc.aclose()
