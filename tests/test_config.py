"""Configuration: precedence file < environment < overrides, and strict validation."""

from __future__ import annotations

from pathlib import Path

import pydantic
import pytest

import hlmem
from hlmem.config import Config, load_config


def write(tmp_path: Path, text: str, name: str = "hlmem.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# --- precedence -------------------------------------------------------------------------------


def test_defaults_with_no_file_and_an_empty_environment() -> None:
    assert load_config(env={}) == Config()
    assert load_config(env={}).windower.max_events == 5


def test_precedence_file_then_env_then_overrides(tmp_path: Path) -> None:
    path = write(tmp_path, "[windower]\nmax_events = 6\nmax_age_s = 30.0\n")
    env = {"HLMEM_WINDOWER__MAX_EVENTS": "8"}

    from_file = load_config(path, env={})
    assert from_file.windower.max_events == 6
    assert from_file.windower.max_age_s == 30.0

    from_env = load_config(path, env=env)
    assert from_env.windower.max_events == 8
    assert from_env.windower.max_age_s == 30.0  # the file's other keys survive the merge

    from_overrides = load_config(path, env=env, overrides={"windower": {"max_events": 10}})
    assert from_overrides.windower.max_events == 10
    assert from_overrides.windower.max_age_s == 30.0
    assert from_overrides.windower.chunk_chars == Config().windower.chunk_chars

    # env without a file still beats the defaults
    assert load_config(env=env).windower.max_events == 8


def test_env_reaches_nested_sections_and_parses_toml_scalars() -> None:
    cfg = load_config(
        env={
            "HLMEM_PIPELINE__EXTRACTOR__WORKERS": "4",
            "HLMEM_PIPELINE__LEASE_S": "12.5",
            "HLMEM_STORE__LOAD_VEC": "false",
            "HLMEM_STORE__SQLITE_MODULE": "stdlib",  # bare word: taken as a string
            "HLMEM_INGEST__DEFAULT_NAMESPACE": '"团队"',
        }
    )
    assert cfg.pipeline.extractor.workers == 4
    assert cfg.pipeline.windower.workers == Config().pipeline.windower.workers
    assert cfg.pipeline.lease_s == 12.5
    assert cfg.store.load_vec is False
    assert cfg.store.sqlite_module == "stdlib"
    assert cfg.ingest.default_namespace == "团队"


def test_env_ignores_unrelated_variables() -> None:
    cfg = load_config(
        env={
            "HLMEM_DB": "/tmp/x.db",  # a CLI option, not a config key
            "HLMEM_CONFIG": "missing.toml",
            "WINDOWER__MAX_EVENTS": "9",  # no prefix
            "PATH": "/usr/bin",
        }
    )
    assert cfg == Config()


def test_overrides_merge_sections_without_dropping_siblings(tmp_path: Path) -> None:
    path = write(tmp_path, "[pipeline.extractor]\nworkers = 3\nbatch_size = 8\n")
    cfg = load_config(path, env={}, overrides={"pipeline": {"extractor": {"workers": 5}}})
    assert cfg.pipeline.extractor.workers == 5
    assert cfg.pipeline.extractor.batch_size == 8
    assert cfg.pipeline.lease_s == Config().pipeline.lease_s


def test_file_in_chinese_comments_and_values(tmp_path: Path) -> None:
    path = write(tmp_path, '# 默认命名空间\n[ingest]\ndefault_namespace = "我的记忆"\n')
    assert load_config(path, env={}).ingest.default_namespace == "我的记忆"


def test_config_is_frozen() -> None:
    cfg = load_config(env={})
    with pytest.raises(pydantic.ValidationError):
        cfg.windower.max_events = 9  # type: ignore[misc]


# --- unknown keys -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "[windower]\nmax_event = 6\n",  # misspelt key
        "[windwoer]\nmax_events = 6\n",  # misspelt section
        "max_events = 6\n",  # key at top level
        "[pipeline.extracter]\nworkers = 2\n",  # misspelt nested section
        "[pipeline.extractor]\nworker = 2\n",  # misspelt nested key
    ],
)
def test_unknown_keys_in_the_file_are_errors(tmp_path: Path, text: str) -> None:
    with pytest.raises(hlmem.ConfigError, match="invalid configuration"):
        load_config(write(tmp_path, text), env={})


@pytest.mark.parametrize(
    "env",
    [
        {"HLMEM_WINDOWER__MAX_EVENT": "8"},
        {"HLMEM_WINDOWS__MAX_EVENTS": "8"},
        {"HLMEM_PIPELINE__EXTRACTOR__WORKRS": "2"},
    ],
)
def test_unknown_keys_in_the_environment_are_errors(env: dict[str, str]) -> None:
    with pytest.raises(hlmem.ConfigError):
        load_config(env=env)


def test_unknown_keys_in_overrides_are_errors() -> None:
    with pytest.raises(hlmem.ConfigError, match="max_evnets"):
        load_config(env={}, overrides={"windower": {"max_evnets": 3}})


# --- invalid values ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "[windower]\nmax_events = 0\n",
        '[windower]\nmax_events = "five"\n',
        "[windower]\nmax_age_s = -1.0\n",
        "[windower]\nchunk_chars = 10\n",
        '[store]\nsqlite_module = "mysql"\n',
        "[store]\nbusy_timeout_ms = -5\n",
        "[ingest]\nmax_content_chars = 0\n",
        '[ingest]\ndefault_namespace = ""\n',
        "[pipeline]\nlease_s = 0\n",
        '[extractor]\nkind = "gpt"\n',
        "windower = 3\n",  # a section given as a scalar
    ],
)
def test_invalid_values_in_the_file_are_errors(tmp_path: Path, text: str) -> None:
    with pytest.raises(hlmem.ConfigError, match="invalid configuration"):
        load_config(write(tmp_path, text), env={})


@pytest.mark.parametrize(
    "env",
    [
        {"HLMEM_WINDOWER__MAX_EVENTS": "0"},
        {"HLMEM_WINDOWER__MAX_EVENTS": "many"},
        {"HLMEM_PIPELINE__EXTRACTOR__WORKERS": "-1"},
        {"HLMEM_STORE__LOAD_VEC": "maybe"},
    ],
)
def test_invalid_values_in_the_environment_are_errors(env: dict[str, str]) -> None:
    with pytest.raises(hlmem.ConfigError):
        load_config(env=env)


def test_invalid_override_is_an_error() -> None:
    with pytest.raises(hlmem.ConfigError, match="max_events"):
        load_config(env={}, overrides={"windower": {"max_events": -3}})


def test_unreadable_and_malformed_files_are_errors(tmp_path: Path) -> None:
    with pytest.raises(hlmem.ConfigError, match="cannot read config"):
        load_config(tmp_path / "missing.toml", env={})
    with pytest.raises(hlmem.ConfigError, match="cannot read config"):
        load_config(write(tmp_path, "[windower\nmax_events = 6\n"), env={})
    bad_utf8 = tmp_path / "latin1.toml"
    bad_utf8.write_bytes(b'[ingest]\ndefault_namespace = "caf\xe9"\n')
    with pytest.raises(hlmem.ConfigError, match="cannot read config"):
        load_config(bad_utf8, env={})


def test_config_error_is_an_hlmem_error() -> None:
    assert issubclass(hlmem.ConfigError, hlmem.HlmemError)


# --- backpressure water marks -----------------------------------------------------------------


def test_low_water_above_high_water_is_rejected(tmp_path: Path) -> None:
    text = "[ingest]\nbacklog_high_water_jobs = 100\nbacklog_low_water_jobs = 101\n"
    with pytest.raises(hlmem.ConfigError, match="backlog_low_water_jobs"):
        load_config(write(tmp_path, text), env={})
    with pytest.raises(hlmem.ConfigError, match="backlog_low_water_jobs"):
        load_config(env={"HLMEM_INGEST__BACKLOG_HIGH_WATER_JOBS": "10"})  # default low is 40000
    with pytest.raises(hlmem.ConfigError):
        load_config(
            env={},
            overrides={"ingest": {"backlog_high_water_jobs": 5, "backlog_low_water_jobs": 6}},
        )


def test_low_water_equal_to_or_below_high_water_is_accepted() -> None:
    equal = load_config(
        env={}, overrides={"ingest": {"backlog_high_water_jobs": 7, "backlog_low_water_jobs": 7}}
    )
    assert (equal.ingest.backlog_high_water_jobs, equal.ingest.backlog_low_water_jobs) == (7, 7)
    below = load_config(
        env={
            "HLMEM_INGEST__BACKLOG_HIGH_WATER_JOBS": "10",
            "HLMEM_INGEST__BACKLOG_LOW_WATER_JOBS": "0",
        }
    )
    assert (below.ingest.backlog_high_water_jobs, below.ingest.backlog_low_water_jobs) == (10, 0)
