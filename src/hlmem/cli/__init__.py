"""The ``hlmem`` command line.

The parser, the entry point :func:`main` and the core commands (``app``), what every command
shares (``common``: ``--db`` rules, output, options), the lifecycle commands (``lifecycle``), the
tools: quickstart, sim-provider, loadtest (``tools``), and the quickstart itself
(``quickstart``).
"""

from __future__ import annotations

from hlmem.cli.app import build_parser, main
from hlmem.cli.common import CREATES, EXIT_CODES

__all__ = [
    "CREATES",
    "EXIT_CODES",
    "build_parser",
    "main",
]
