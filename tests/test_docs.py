"""The documentation stays true: README, the CLI's help and config/default.toml."""

from __future__ import annotations

import argparse
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

import hlmem
from hlmem.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
DEFAULT_TOML = ROOT / "config" / "default.toml"
SHELL_LANGS = {"sh", "bash", "shell", "console", "zsh"}
FENCE = re.compile(r"^```([\w+-]*)[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)


def subcommands(
    parser: argparse.ArgumentParser,
) -> dict[str, tuple[str | None, argparse.ArgumentParser]]:
    """name -> (help, parser) of a parser's subcommands."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help for a in action._choices_actions}
            return {name: (helps.get(name), sub) for name, sub in action.choices.items()}
    return {}


TOP = subcommands(build_parser())
NESTED = [
    (parent, name, help_text)
    for parent, (_, sub) in TOP.items()
    for name, (help_text, _) in subcommands(sub).items()
]


def test_the_parser_has_the_documented_commands() -> None:
    assert {
        "init",
        "migrate",
        "ingest",
        "worker",
        "jobs",
        "stats",
        "recall",
        "doctor",
        "quickstart",
    } <= set(TOP)
    assert {(p, n) for p, n, _ in NESTED} >= {
        ("jobs", "list"),
        ("jobs", "retry"),
        ("jobs", "purge"),
    }


@pytest.mark.parametrize("name", sorted(TOP))
def test_every_subcommand_has_help_and_is_in_the_readme(name: str) -> None:
    help_text, sub = TOP[name]
    assert help_text and len(help_text.strip()) > 10, name
    assert help_text.strip() in sub.format_help()
    assert re.search(rf"`hlmem [^`\n]*\b{re.escape(name)}\b[^`\n]*`", README), (
        f"README's command table does not mention `hlmem ... {name}`"
    )


@pytest.mark.parametrize(("parent", "name", "help_text"), NESTED)
def test_every_nested_subcommand_has_help_and_is_in_the_readme(
    parent: str, name: str, help_text: str | None
) -> None:
    assert help_text and len(help_text.strip()) > 10, f"{parent} {name}"
    assert re.search(
        rf"`hlmem [^`\n]*\b{re.escape(parent)}\b[^`\n]*\b{re.escape(name)}\b[^`\n]*`", README
    ), f"README does not mention `hlmem {parent} {name}`"


# --- README set-up blocks ---------------------------------------------------------------------


def fenced_blocks() -> list[tuple[str, str]]:
    return [(m.group(1).lower(), m.group(2)) for m in FENCE.finditer(README)]


def test_readme_fences_are_balanced() -> None:
    assert README.count("```") == 2 * len(fenced_blocks())


def test_readme_has_exactly_two_shell_set_up_blocks() -> None:
    shell = [body for lang, body in fenced_blocks() if lang in SHELL_LANGS]
    assert len(shell) == 2, shell
    quickstart = [b for b in shell if re.search(r"\bhlmem quickstart\b", b)]
    tests = [b for b in shell if re.search(r"-m pytest\b|\bpytest\b", b)]
    assert len(quickstart) == 1
    assert len(tests) == 1
    assert quickstart[0] is not tests[0]
    # no shell commands hide in unlabelled blocks
    for lang, body in fenced_blocks():
        if not lang:
            assert not re.search(r"^\s*(\$ |\.venv/|python3? -m|pip )", body, re.MULTILINE), body


def test_set_up_blocks_match_the_package_metadata() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    shell = [body for lang, body in fenced_blocks() if lang in SHELL_LANGS]
    quickstart = next(b for b in shell if "hlmem quickstart" in b)
    tests = next(b for b in shell if "pytest" in b)
    assert "hlmem" in project["scripts"]
    assert project["scripts"]["hlmem"] == "hlmem.cli.app:main"
    for extra in re.findall(r"\.\[(\w+)\]", tests):
        assert extra in project["optional-dependencies"]
    assert "pytest" in " ".join(project["optional-dependencies"]["test"])
    assert "pip install -e ." in quickstart


def test_config_keys_named_in_the_readme_exist() -> None:
    named = re.findall(r"`((?:store|ingest|windower|pipeline|extractor)(?:\.[a-z_]+)+)`", README)
    assert named, "README names no config keys"
    defaults = hlmem.Config().model_dump()
    for dotted in named:
        node: Any = defaults
        for part in dotted.split("."):
            assert isinstance(node, dict) and part in node, dotted
            node = node[part]


# --- config/default.toml ----------------------------------------------------------------------


def test_default_toml_is_exactly_the_model_defaults() -> None:
    assert hlmem.load_config(DEFAULT_TOML, env={}) == hlmem.Config()


def model_leaves(model: BaseModel, prefix: tuple[str, ...] = ()) -> set[tuple[str, ...]]:
    out: set[tuple[str, ...]] = set()
    for name in type(model).model_fields:
        value = getattr(model, name)
        if isinstance(value, BaseModel):
            out |= model_leaves(value, (*prefix, name))
        else:
            out.add((*prefix, name))
    return out


def toml_leaves(data: dict[str, Any], prefix: tuple[str, ...] = ()) -> set[tuple[str, ...]]:
    out: set[tuple[str, ...]] = set()
    for key, value in data.items():
        if isinstance(value, dict) and value:  # an empty table is a leaf: a dict field's default
            out |= toml_leaves(value, (*prefix, key))
        else:
            out.add((*prefix, key))
    return out


def test_default_toml_names_every_field_of_every_config_model() -> None:
    data = tomllib.loads(DEFAULT_TOML.read_text(encoding="utf-8"))
    fields = model_leaves(hlmem.Config())
    written = toml_leaves(data)
    assert fields - written == set(), "fields missing from config/default.toml"
    assert written - fields == set(), "keys in config/default.toml that no model has"
    # and each value is written out, not left to the default
    defaults = hlmem.Config().model_dump()
    for path in fields:
        want: Any = defaults
        have: Any = data
        for part in path:
            want, have = want[part], have[part]
        assert have == want, ".".join(path)
