"""The facade: :class:`Memory` and :func:`open`, the API a user's code calls.

``facade`` holds the class whose methods are the library's API, ``reads`` and ``writes`` their
bodies, ``arguments`` the checks every method runs on its arguments first, ``jsonl`` the
ingestion of a JSONL file of events.
"""

from __future__ import annotations

from hlmem.memory.facade import Memory, open, open_store
from hlmem.memory.jsonl import ingest_jsonl
from hlmem.memory.reads import Stats

__all__ = [
    "Memory",
    "Stats",
    "ingest_jsonl",
    "open",
    "open_store",
]
