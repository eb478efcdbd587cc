"""The documentation stays true: README, the CLI's help and config/default.toml.

Every example in the README runs as written: each ```python block in a fresh directory (the
```text block right after it is what it prints), each ```console block's ``$ hlmem ...`` lines
in a fresh directory through the program's entry point (the lines under a command are its
output; ``...`` stands for any text, ``# exits N`` for the exit code), each ```toml block
through :func:`hlmem.load_config`. The two ```sh blocks are the set-up commands, checked for
form.
"""

from __future__ import annotations

import argparse
import inspect
import os
import re
import shlex
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

import hlmem
from hlmem.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
DEFAULT_TOML = ROOT / "config" / "default.toml"
SET_UP_LANGS = {"sh", "bash", "shell", "zsh"}
FENCE = re.compile(r"^```([\w+-]*)[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
#: the README is for users: what hlmem is and how to use it, within this many lines
README_MAX_LINES = 350


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


# --- README code blocks ----------------------------------------------------------------------


@dataclass(frozen=True)
class Block:
    lang: str
    body: str
    #: the README line of the opening fence
    line: int
    #: for a python block: the ```text block right after it (or after a line ending in
    #: "prints:"), what the example prints
    output: str | None = None


def fenced_blocks() -> list[Block]:
    matches = list(FENCE.finditer(README))
    out: list[Block] = []
    for i, m in enumerate(matches):
        lang = m.group(1).lower()
        output = None
        if lang == "python" and i + 1 < len(matches):
            after = matches[i + 1]
            gap = README[m.end() : after.start()].strip()
            if after.group(1).lower() == "text" and (not gap or gap.endswith("prints:")):
                output = after.group(2)
        out.append(Block(lang, m.group(2), README.count("\n", 0, m.start()) + 1, output))
    return out


def blocks_of(*langs: str) -> list[Block]:
    return [b for b in fenced_blocks() if b.lang in langs]


def set_up_blocks() -> list[str]:
    return [b.body for b in fenced_blocks() if b.lang in SET_UP_LANGS]


def test_readme_fences_are_balanced() -> None:
    assert README.count("```") == 2 * len(fenced_blocks())


def test_readme_has_exactly_two_shell_set_up_blocks() -> None:
    shell = set_up_blocks()
    assert len(shell) == 2, shell
    quickstart = [b for b in shell if re.search(r"\bhlmem quickstart\b", b)]
    tests = [b for b in shell if re.search(r"-m pytest\b|\bpytest\b", b)]
    assert len(quickstart) == 1
    assert len(tests) == 1
    assert quickstart[0] is not tests[0]
    for body in shell:  # one command line each
        assert len(body.strip().splitlines()) == 1, body
    # no shell commands hide in unlabelled blocks
    for block in fenced_blocks():
        if not block.lang:
            assert not re.search(r"^\s*(\$ |\.venv/|python3? -m|pip )", block.body, re.M), block


def test_set_up_blocks_match_the_package_metadata() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    shell = set_up_blocks()
    quickstart = next(b for b in shell if "hlmem quickstart" in b)
    tests = next(b for b in shell if "pytest" in b)
    assert "hlmem" in project["scripts"]
    assert project["scripts"]["hlmem"] == "hlmem.cli.app:main"
    for extra in re.findall(r"\.\[(\w+)\]", tests):
        assert extra in project["optional-dependencies"]
    assert "pytest" in " ".join(project["optional-dependencies"]["test"])
    assert "pip install -e ." in quickstart


def test_readme_is_short_and_speaks_of_the_product() -> None:
    assert README.count("\n") <= README_MAX_LINES
    history = re.compile(
        r"\b(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|this|that|"
        r"earlier|later) session\b|\b\d\d:\d\d(?:[–-]\d\d:\d\d)? UTC\b|\brun \d\b|"
        r"\bbefore this work\b",
        re.IGNORECASE,
    )
    assert history.findall(README) == []


def test_readme_examples_exist_in_each_language() -> None:
    python = blocks_of("python")
    console = blocks_of("console")
    assert len(python) >= 3 and console
    for block in (*python, *console):
        assert re.search(r"[\u4e00-\u9fff]", block.body), f"README line {block.line}: no Chinese"
        assert re.search(r"[A-Za-z]{3,} [A-Za-z]{3,} [A-Za-z]{3,}", block.body), block.line


def output_matches(actual: str, expected: str) -> bool:
    """Line by line, trailing blanks ignored; ``...`` in an expected line is any text."""
    have = [line.rstrip() for line in actual.strip("\n").splitlines()]
    want = [line.rstrip() for line in expected.strip("\n").splitlines()]
    if len(have) != len(want):
        return False
    return all(
        re.fullmatch(".*".join(map(re.escape, w.split("..."))), h) is not None
        for h, w in zip(have, want, strict=True)
    )


def test_output_matching_is_strict() -> None:
    assert output_matches("a 1\nb ev_x2\n", "a 1\nb ev_...")
    assert not output_matches("a 1\nb ev_x2\n", "a 1")
    assert not output_matches("a 2\n", "a 1")
    assert not output_matches("a 1\nb\n", "a ...\nc")


@pytest.mark.parametrize("block", blocks_of("python"), ids=lambda b: f"README-line-{b.line}")
def test_readme_python_example_runs_as_written(
    block: Block,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """As a user would run it: a script of its own in an empty directory, no HLMEM_ settings."""
    for key in [k for k in os.environ if k.startswith("HLMEM_")]:
        monkeypatch.delenv(key)
    monkeypatch.chdir(tmp_path)
    code = compile(block.body, f"README.md, the example at line {block.line}", "exec")
    exec(code, {"__name__": "__main__"})
    printed = capsys.readouterr().out
    if block.output is not None:
        assert output_matches(printed, block.output), printed


@dataclass(frozen=True)
class Command:
    argv: list[str]
    exit_code: int
    output: str


def console_commands(body: str) -> list[Command]:
    """``$ hlmem ...`` lines, each with the lines under it (its stdout) and ``# exits N``."""
    commands: list[Command] = []
    for chunk in re.split(r"^\$ ", body, flags=re.MULTILINE)[1:]:
        line, _, output = chunk.partition("\n")
        code = re.search(r"#\s*exits\s+(\d+)\s*$", line)
        argv = shlex.split(line, comments=True)
        assert argv and argv[0] == "hlmem", line
        commands.append(Command(argv, int(code.group(1)) if code else 0, output))
    return commands


@pytest.mark.parametrize("block", blocks_of("console"), ids=lambda b: f"README-line-{b.line}")
def test_readme_console_example_runs_as_written(
    block: Block,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Every command of the block, in order, in one fresh directory, through the program's
    entry point (``hlmem.cli.main``, in process: its exit codes and output are the program's,
    which tests/test_cli_usage.py checks as a subprocess)."""
    commands = console_commands(block.body)
    assert commands, block.body
    assert block.body.lstrip().startswith("$ ")
    for key in [k for k in os.environ if k.startswith("HLMEM_")]:
        monkeypatch.delenv(key)
    monkeypatch.chdir(tmp_path)
    for cmd in commands:
        code = main(cmd.argv[1:])
        captured = capsys.readouterr()
        shown = " ".join(cmd.argv)
        assert code == cmd.exit_code, (shown, captured.out, captured.err)
        assert "Traceback" not in captured.err, (shown, captured.err)
        assert output_matches(captured.out, cmd.output), (shown, captured.out)


@pytest.mark.parametrize("block", blocks_of("toml"), ids=lambda b: f"README-line-{b.line}")
def test_readme_toml_example_is_a_valid_configuration(block: Block, tmp_path: Path) -> None:
    path = tmp_path / "hlmem.toml"
    path.write_text(block.body, encoding="utf-8")
    cfg = hlmem.load_config(path, env={})
    assert cfg != hlmem.Config()


def test_every_memory_method_is_in_the_readme() -> None:
    methods = [
        name
        for name, member in inspect.getmembers(hlmem.Memory)
        if not name.startswith("_") and inspect.iscoroutinefunction(member)
    ]
    assert len(methods) > 15
    missing = [m for m in methods if not re.search(rf"\bmem\.{m}\(", README)]
    assert missing == []


def test_config_keys_named_in_the_readme_exist() -> None:
    sections = "|".join(hlmem.Config.model_fields)
    named = re.findall(rf"`((?:{sections})(?:\.[a-z_]+)+)(?: = [^`]*)?`", README)
    assert len(named) >= 5, "README names no config keys"
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


def toml_leaves(
    data: dict[str, Any], fields: set[tuple[str, ...]], prefix: tuple[str, ...] = ()
) -> set[tuple[str, ...]]:
    """The keys written, down to the model's fields (a table that is a dict field's value is a
    leaf)."""
    out: set[tuple[str, ...]] = set()
    for key, value in data.items():
        path = (*prefix, key)
        if isinstance(value, dict) and value and path not in fields:
            out |= toml_leaves(value, fields, path)
        else:
            out.add(path)
    return out


def test_default_toml_names_every_field_of_every_config_model() -> None:
    data = tomllib.loads(DEFAULT_TOML.read_text(encoding="utf-8"))
    fields = model_leaves(hlmem.Config())
    written = toml_leaves(data, fields)
    assert fields - written == set(), "fields missing from config/default.toml"
    assert written - fields == set(), "keys in config/default.toml that no model has"
    # and each value is written out, not left to the default
    defaults = hlmem.Config().model_dump()
    for path in fields:
        want: Any = defaults
        have: Any = data
        for part in path:
            want, have = want[part], have[part]
        if isinstance(want, dict):  # TOML has arrays where the model has tuples
            want = {k: list(v) if isinstance(v, tuple) else v for k, v in want.items()}
        assert have == want, ".".join(path)
