"""Configuration: frozen pydantic models and ``load_config``.

Precedence, lowest first: the model defaults (documented one by one in ``config/default.toml``,
which a test keeps identical to them) -> a TOML file (``config/local.toml`` or ``--config``) ->
``HLMEM_<SECTION>__<KEY>`` environment variables -> explicit overrides (CLI flags, API
arguments). This module is the only reader of ``os.environ``, and only when ``load_config`` is
called: nothing is read at import. Every model forbids unknown keys, so a misspelt setting is an
error, not a silent default.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

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


class Config(_Section):
    store: StoreConfig = StoreConfig()
    ingest: IngestConfig = IngestConfig()
    windower: WindowerConfig = WindowerConfig()
    pipeline: PipelineConfig = PipelineConfig()
    extractor: ExtractorConfig = ExtractorConfig()


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
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"invalid configuration: {exc}") from exc


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
