"""The simulated OpenAI-compatible provider, for tests and load tests.

A real HTTP server on loopback (``server``) with configurable latency, rate limits, errors and
prices (``state``), answering chat, embedding and rerank requests (``answer``).
"""

from __future__ import annotations

from hlmem.sim.server import SimProvider
from hlmem.sim.state import SimSettings, SimStats

__all__ = [
    "SimProvider",
    "SimSettings",
    "SimStats",
]
