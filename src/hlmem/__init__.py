"""hlmem: local-first long-term memory for LLM agents.

``async with hlmem.open("memory.db") as mem:`` then ``await mem.add_event(...)``,
``await mem.drain()`` and ``await mem.recall("...")``.
"""

from __future__ import annotations

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
from hlmem.memory import Memory, Stats, open
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

__version__ = "0.1.0"

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
