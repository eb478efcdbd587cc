"""``hlmem loadtest``: what N agents talking at some rate cost, and whether the pipeline keeps up.

Synthetic conversations (``conversations``), the provider of the run (``provider``), the running
load (``load``), the run itself (``command``), the drained database's totals and checks
(``totals``), the report's analysis and text (``analysis``) and its HTML page (``html``).
"""

from __future__ import annotations

from hlmem.loadtest.analysis import LoadReport, Sample, render, stage_flows, verdict
from hlmem.loadtest.command import run_loadtest
from hlmem.loadtest.conversations import ConversationGenerator, GenTurn
from hlmem.loadtest.html import render_html, write_html
from hlmem.loadtest.load import LoadSpec

__all__ = [
    "ConversationGenerator",
    "GenTurn",
    "LoadReport",
    "LoadSpec",
    "Sample",
    "render",
    "render_html",
    "run_loadtest",
    "stage_flows",
    "verdict",
    "write_html",
]
