"""hlmem: local-first long-term memory for LLM agents.

``async with hlmem.open("memory.db") as mem:`` then ``await mem.add_event(...)``,
``await mem.drain()`` and ``await mem.recall("...")``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hlmem.clock import Clock, ManualClock, SystemClock
from hlmem.config import Config, load_config
from hlmem.errors import (
    ClosedError,
    ConfigError,
    ContentTooLarge,
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
    from hlmem.memory import Memory, Stats, open

__version__ = "0.1.0"

#: public names of :mod:`hlmem.memory`, imported on first use: the library facade pulls in the
#: store, the pipeline, recall and the gateway, which a process that only needs the language
#: tools (the pipeline's CPU helper child, ``python -m hlmem.offload``) never loads
_LAZY = frozenset({"Memory", "Stats", "open"})

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
        from hlmem import memory

        value = getattr(memory, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'hlmem' has no attribute {name!r}")
