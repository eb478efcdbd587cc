"""The public surface of ``hlmem``: pinned, so a change to it is a deliberate one."""

from __future__ import annotations

import importlib
import importlib.metadata

from helpers import python_lines

import hlmem

PUBLIC = [
    "Claim",
    "ClaimStatus",
    "Clock",
    "ClosedError",
    "Config",
    "ConfigError",
    "ContentTooLarge",
    "EventIn",
    "EvidenceSpan",
    "ForgottenFact",
    "HlmemError",
    "ImmutableEvent",
    "InputError",
    "MaintenanceReport",
    "ManualClock",
    "Memory",
    "OriginClass",
    "RecallHit",
    "Role",
    "SchemaError",
    "SessionKind",
    "Stats",
    "StoreBusy",
    "StoreError",
    "SystemClock",
    "__version__",
    "load_config",
    "open",
]


def test_all_is_pinned_and_sorted() -> None:
    assert sorted(hlmem.__all__) == PUBLIC
    assert len(set(hlmem.__all__)) == len(hlmem.__all__)


def test_every_public_name_is_importable() -> None:
    module = importlib.import_module("hlmem")
    for name in PUBLIC:
        assert getattr(module, name) is not None, name
    namespace: dict[str, object] = {}
    exec("from hlmem import *", namespace)
    assert set(PUBLIC) - {"__version__"} <= set(namespace)


def test_errors_are_hlmem_errors() -> None:
    for name in (
        "ClosedError",
        "ConfigError",
        "ContentTooLarge",
        "ImmutableEvent",
        "InputError",
        "SchemaError",
        "StoreBusy",
        "StoreError",
    ):
        assert issubclass(getattr(hlmem, name), hlmem.HlmemError), name
    assert issubclass(hlmem.ContentTooLarge, hlmem.InputError)
    assert issubclass(hlmem.ImmutableEvent, hlmem.StoreError)


def test_version_matches_the_installed_distribution() -> None:
    assert hlmem.__version__ == importlib.metadata.version("hlmem")


def test_the_helper_childs_imports_leave_the_facade_unloaded() -> None:
    """The pipeline's CPU helper child (``python -m hlmem.pipeline.offload``) starts at every burst:
    what it imports must not pull in the memory facade (store, pipeline, recall, gateway) or
    the configuration's models, which the package loads only when they are first used."""
    code = (
        "import sys, hlmem.pipeline.offload\n"
        "from hlmem.lang import langdata, segment\n"
        "from hlmem.lang.atoms import analysis\n"
        "from hlmem.claims.admission_rules import gate\n"
        "from hlmem.lang.embedding import LocalEmbedder\n"
        "from hlmem.lang.event_terms import event_body\n"
        "from hlmem.rules import RulesExtractor\n"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('hlmem'))))\n"
        "import hlmem\n"
        "print(hlmem.load_config(env={}).pipeline.offload, hlmem.Config.__module__)\n"
    )
    out = python_lines(code)
    loaded = set(out[0].split())
    assert {"hlmem.pipeline.offload", "hlmem.rules", "hlmem.lang.atoms.analysis"} <= loaded
    facade = {"hlmem.config", "hlmem.memory.facade", "hlmem.store.db", "hlmem.recall.recaller"}
    assert not loaded & facade, loaded
    assert out[1] == "auto hlmem.config"  # and the lazy names still resolve
