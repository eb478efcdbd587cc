"""hlmem: local-first long-term memory for LLM agents.

``async with hlmem.open("memory.db") as mem:`` then ``await mem.add_event(...)``,
``await mem.drain()`` and ``await mem.recall("...")``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from hlmem.clock import Clock, ManualClock, SystemClock
from hlmem.errors import (
    ClosedError,
    ConfigError,
    ContentTooLarge,
    ForgottenFact,
    HlmemError,
    ImmutableEvent,
    InputError,
    SchemaError,
    StoreBusy,
    StoreError,
)
from hlmem.messages import (
    Claim,
    ClaimStatus,
    EventIn,
    EvidenceSpan,
    MaintenanceReport,
    OriginClass,
    RecallHit,
    Role,
    SessionKind,
)

if TYPE_CHECKING:
    from hlmem.config import Config, load_config
    from hlmem.memory import Memory, Stats, open

__version__ = "0.1.0"

#: public names imported on first use, by module: the library facade pulls in the store, the
#: pipeline, recall and the gateway, and the configuration's models, none of which a process
#: that only needs the language tools (the pipeline's CPU helper child, ``python -m
#: hlmem.pipeline.offload``) loads
_LAZY = {"Memory": "memory", "Stats": "memory", "open": "memory"} | {
    "Config": "config",
    "load_config": "config",
}

__all__ = [
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


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module = importlib.import_module(f"hlmem.{_LAZY[name]}")
        value = getattr(module, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'hlmem' has no attribute {name!r}")
