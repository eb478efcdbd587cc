"""Configuration: frozen pydantic models and ``load_config``.

Precedence, lowest first: the model defaults (documented one by one in ``config/default.toml``,
which a test keeps identical to them) -> a TOML file (``config/local.toml`` or ``--config``) ->
``HLMEM_<SECTION>__<KEY>`` environment variables -> explicit overrides (CLI flags, API
arguments). This module is the only reader of ``os.environ``, and only when ``load_config`` is
called: nothing is read at import. Every model forbids unknown keys, so a misspelt setting is an
error, not a silent default.
"""

from __future__ import annotations

import math
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    model_validator,
)

from hlmem.errors import ConfigError

ENV_PREFIX = "HLMEM_"


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class StoreConfig(_Section):
    sqlite_module: Literal["auto", "sqlean", "stdlib"] = "auto"
    load_vec: bool = True
    busy_timeout_ms: int = Field(10_000, ge=0)
    iter_chunk_size: int = Field(256, ge=1)


class IngestConfig(_Section):
    default_namespace: str = Field("default", min_length=1, max_length=200)
    max_content_chars: int = Field(1_000_000, ge=1)
    max_metadata_bytes: int = Field(65_536, ge=2)
    group_commit_max_rows: int = Field(2_000, ge=1)
    pending_max_submissions: int = Field(10_000, ge=1)
    backlog_high_water_jobs: int = Field(50_000, ge=1)
    backlog_low_water_jobs: int = Field(40_000, ge=0)
    backlog_refresh_s: float = Field(0.1, gt=0)
    # Where group commits run: aiosqlite's writer thread, or a writer child process with its own
    # GIL (hlmem.writer_process) so SQLite work never contends with the event loop.
    writer: Literal["thread", "process"] = "thread"

    @model_validator(mode="after")
    def _water_marks(self) -> IngestConfig:
        if self.backlog_low_water_jobs > self.backlog_high_water_jobs:
            raise ValueError("backlog_low_water_jobs must not exceed backlog_high_water_jobs")
        return self


class WindowerConfig(_Section):
    max_events: int = Field(5, ge=1)
    max_age_s: float = Field(120.0, gt=0)
    chunk_chars: int = Field(2_000, ge=50)
    sweep_interval_s: float = Field(1.0, gt=0)


class StageConfig(_Section):
    workers: int = Field(1, ge=1)
    batch_size: int = Field(64, ge=1)
    buffer_batches: int = Field(2, ge=1)
    max_attempts: int = Field(5, ge=1)
    retry_base_s: float = Field(0.5, ge=0)
    retry_max_s: float = Field(60.0, ge=0)
    downstream_high_water_jobs: int = Field(20_000, ge=1)


class PipelineConfig(_Section):
    poll_interval_s: float = Field(0.2, gt=0)
    lease_s: float = Field(60.0, gt=0)
    shutdown_grace_s: float = Field(10.0, ge=0)
    recovery_interval_s: float = Field(15.0, gt=0)
    drain_poll_s: float = Field(0.02, gt=0)
    windower: StageConfig = StageConfig(workers=1, batch_size=4, buffer_batches=2)
    extractor: StageConfig = StageConfig(workers=2, batch_size=32, buffer_batches=2)


class ExtractorConfig(_Section):
    kind: Literal["rules"] = "rules"


#: wire-format presets of providers.py; a provider may also name an allowlisted plugin
BUILTIN_PRESETS = ("openai", "dashscope", "zhipu", "sim")


class ProviderConfig(_Section):
    """One model provider (``[providers.NAME]``): where it is, its key's variable, its limits."""

    preset: str = "openai"
    base_url: str = ""
    api_key_env: str = ""
    # Filled by load_config from the variable named in api_key_env; never read from a file.
    api_key: SecretStr | None = Field(None, exclude=True, repr=False)
    timeout_s: float = Field(60.0, gt=0)
    connect_timeout_s: float = Field(5.0, gt=0)
    max_retries: int = Field(4, ge=0)
    retry_base_s: float = Field(0.5, ge=0)
    retry_max_s: float = Field(30.0, ge=0)
    requests_per_minute: float = Field(60.0, gt=0)
    tokens_per_minute: float = Field(100_000.0, gt=0)
    max_concurrency: int = Field(4, ge=1)
    breaker_failures: int = Field(5, ge=1)
    breaker_cooldown_s: float = Field(30.0, ge=0)


class PriceConfig(_Section):
    """Price of one ``provider/model`` (``[prices."PROVIDER/MODEL"]``), per 1,000 tokens."""

    input_per_1k: float | None = Field(None, ge=0)
    output_per_1k: float | None = Field(None, ge=0)
    currency: str = Field("USD", min_length=1)
    free: bool = False

    @model_validator(mode="after")
    def _complete(self) -> PriceConfig:
        if not self.free and (self.input_per_1k is None or self.output_per_1k is None):
            raise ValueError("a price needs input_per_1k and output_per_1k (or free = true)")
        return self


class NamespaceBudgetConfig(_Section):
    daily_limit: float = Field(math.inf, ge=0)
    monthly_limit: float = Field(math.inf, ge=0)


class BudgetConfig(_Section):
    currency: str = Field("USD", min_length=1)
    daily_limit: float = Field(math.inf, ge=0)
    monthly_limit: float = Field(math.inf, ge=0)
    namespace_daily_limit: float = Field(math.inf, ge=0)
    namespace_monthly_limit: float = Field(math.inf, ge=0)
    namespaces: dict[str, NamespaceBudgetConfig] = {}
    resume_interval_s: float = Field(30.0, gt=0)
    reservation_ttl_s: float = Field(3600.0, gt=0)


class PluginsConfig(_Section):
    allowlist: list[str] = []


class Config(_Section):
    store: StoreConfig = StoreConfig()
    ingest: IngestConfig = IngestConfig()
    windower: WindowerConfig = WindowerConfig()
    pipeline: PipelineConfig = PipelineConfig()
    extractor: ExtractorConfig = ExtractorConfig()
    providers: dict[str, ProviderConfig] = {}
    prices: dict[str, PriceConfig] = {}
    budget: BudgetConfig = BudgetConfig()
    plugins: PluginsConfig = PluginsConfig()

    @model_validator(mode="after")
    def _providers_and_prices(self) -> Config:
        for name, provider in self.providers.items():
            if provider.preset not in BUILTIN_PRESETS and provider.preset not in (
                self.plugins.allowlist
            ):
                raise ValueError(
                    f"providers.{name}.preset {provider.preset!r} is neither one of "
                    f"{list(BUILTIN_PRESETS)} nor a plugin named in plugins.allowlist"
                )
        for key, price in self.prices.items():
            provider_name, _, model = key.partition("/")
            if not provider_name or not model:
                raise ValueError(f'prices."{key}": the key must be "PROVIDER/MODEL"')
            if not price.free and price.currency != self.budget.currency:
                raise ValueError(
                    f'prices."{key}" is in {price.currency} but budget.currency is '
                    f"{self.budget.currency}: give every price in the budget's currency"
                )
        return self


def load_config(
    path: str | Path | None = None,
    *,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Config:
    """Build a :class:`Config` from a TOML file, ``HLMEM_*`` variables and overrides.

    ``env`` defaults to ``os.environ``; pass ``{}`` to ignore the environment. Environment keys
    name a section path with double underscores: ``HLMEM_WINDOWER__MAX_EVENTS=8`` or
    ``HLMEM_PIPELINE__EXTRACTOR__WORKERS=4``; values are parsed as TOML scalars.
    ``overrides`` is a nested mapping with the same shape as the file.

    :raises ConfigError: unreadable file, bad TOML, unknown key or invalid value.
    """
    data: dict[str, Any] = {}
    if path is not None:
        try:
            data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"cannot read config {path}: {exc}") from exc
    environ = os.environ if env is None else env
    for key, raw in environ.items():
        if not key.startswith(ENV_PREFIX) or "__" not in key:
            continue
        parts = [p.lower() for p in key[len(ENV_PREFIX) :].split("__")]
        _merge(data, _nest(parts, _parse_scalar(raw)))
    if overrides:
        _merge(data, dict(overrides))
    providers = data.get("providers")
    for name, section in (providers if isinstance(providers, dict) else {}).items():
        if isinstance(section, Mapping) and "api_key" in section:
            raise ConfigError(
                f"providers.{name}.api_key: never write a key into the configuration; "
                "put it in an environment variable and name that variable in api_key_env"
            )
    try:
        cfg = Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"invalid configuration: {exc}") from exc
    return _with_api_keys(cfg, environ)


def _with_api_keys(cfg: Config, environ: Mapping[str, str]) -> Config:
    """Read each provider's key from the variable its ``api_key_env`` names (if it is set)."""
    keyed = {
        name: p.model_copy(update={"api_key": SecretStr(environ[p.api_key_env])})
        for name, p in cfg.providers.items()
        if p.api_key_env and environ.get(p.api_key_env)
    }
    if not keyed:
        return cfg
    return cfg.model_copy(update={"providers": {**cfg.providers, **keyed}})


def _parse_scalar(raw: str) -> Any:
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw


def _nest(parts: list[str], value: Any) -> dict[str, Any]:
    out: dict[str, Any] = {parts[-1]: value}
    for part in reversed(parts[:-1]):
        out = {part: out}
    return out


def _merge(base: dict[str, Any], extra: Mapping[str, Any]) -> None:
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(base.get(key), dict):
            _merge(base[key], value)
        else:
            base[key] = dict(value) if isinstance(value, Mapping) else value


def env_default(name: str) -> str | None:
    """The ``HLMEM_<NAME>`` environment value for a CLI option, if set (read at call time)."""
    return os.environ.get(ENV_PREFIX + name)
