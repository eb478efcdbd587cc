"""The runtime around the stages: assembly, ingestion, and the helper processes.

:class:`Pipeline` builds the stages and owns their task group (``assembly``); event ingestion
with group commit and backpressure (``ingest``), in a writer child process when configured
(``writer``); the CPU helper child (``offload``) and the frame protocol of both children
(``childio``).

Its names are imported on first use (PEP 562): the writer and CPU helper children run modules of
this package and must not load the pipeline's assembly (stages, gateway, httpx).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hlmem.pipeline.assembly import FORCE_AFTER, Pipeline, stop_signals
    from hlmem.pipeline.childio import HEADER, frame
    from hlmem.pipeline.group_commit import EventRow
    from hlmem.pipeline.ingest import EventWriter, coerce_event
    from hlmem.pipeline.offload import Offloader
    from hlmem.pipeline.writer import WriterProcess

#: public name -> the module of this package that defines it
_LAZY = {
    "FORCE_AFTER": "assembly",
    "Pipeline": "assembly",
    "stop_signals": "assembly",
    "HEADER": "childio",
    "frame": "childio",
    "EventRow": "group_commit",
    "EventWriter": "ingest",
    "coerce_event": "ingest",
    "Offloader": "offload",
    "WriterProcess": "writer",
}

__all__ = [
    "FORCE_AFTER",
    "HEADER",
    "EventRow",
    "EventWriter",
    "Offloader",
    "Pipeline",
    "WriterProcess",
    "coerce_event",
    "frame",
    "stop_signals",
]


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    globals()[name] = value
    return value
