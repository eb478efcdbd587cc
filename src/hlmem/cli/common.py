"""What every ``hlmem`` command shares: the handler type, the ``--db`` rules, output, options.

:data:`CREATES` names the commands that may create the ``--db`` file; :func:`need_db` refuses a
missing one for every other command; :data:`DB_OPTIONAL` names those that run without ``--db``.
:func:`memory_for` opens the memory a command works on, :func:`out` prints a result as text or
``--json``, :func:`env_opt` adds an option that ``HLMEM_<NAME>`` can set. The command modules
(:mod:`hlmem.cli.app`, :mod:`hlmem.cli.lifecycle`, :mod:`hlmem.cli.tools`) import these; nothing
here imports them.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from hlmem.config import Config, env_default
from hlmem.errors import HlmemError
from hlmem.memory import Memory
from hlmem.memory import open as open_memory

Handler = Callable[[argparse.Namespace, Config], Awaitable[int]]

#: the commands that may create the ``--db`` file (``restore``: its target; ``loadtest``: a
#: fresh one, which must not exist); every other command refuses a missing file
CREATES = frozenset({"init", "ingest", "remember", "import", "restore", "loadtest"})

#: the commands that run without ``--db`` (``doctor``: checks a file only when given one;
#: ``loadtest``: makes a temporary one); for every other one a missing ``--db`` is a usage error
DB_OPTIONAL = frozenset({"doctor", "quickstart", "sim-provider", "loadtest"})

#: exit code -> what it means (the module docstring, ``--help`` and the README list them)
EXIT_CODES = {
    0: "done (doctor: healthy; worker: stopped gracefully)",
    1: "failed: bad input, no such database, a corrupt or unreadable file; doctor: problems",
    2: "usage: unknown command or option, missing argument or --db",
    3: "ingest --drain, worker --drain: jobs are parked (budget or a provider outage)",
    4: "ingest --drain, worker --drain: jobs failed (hlmem jobs list --status failed)",
    70: "internal error, a bug (-v prints the traceback)",
    130: "interrupted by SIGINT (Ctrl-C); worker: stopped at once by a third SIGINT",
    141: "stdout closed early (| head): the output was cut short",
    143: "worker: stopped at once by a third SIGTERM",
}


def env_opt(
    parser: argparse.ArgumentParser, flag: str, env: str, help_text: str, **kw: Any
) -> None:
    parser.add_argument(flag, default=env_default(env), help=f"{help_text} [env HLMEM_{env}]", **kw)


def out(args: argparse.Namespace, data: Any, text: str) -> None:
    if getattr(args, "json", False):
        print(json.dumps(data, ensure_ascii=False, indent=2, default=str))
    else:
        print(text)


def need_db(args: argparse.Namespace) -> Path:
    """The ``--db`` path; unless the command may create it (:data:`CREATES`), it must exist.

    :raises HlmemError: no ``--db``, or no such file for a command that only reads or changes.
    """
    if not args.db:
        raise HlmemError("no database: pass --db FILE or set HLMEM_DB")
    path = Path(args.db)
    if args.command not in CREATES and not path.exists():
        raise HlmemError(f"no such database: {path} (create one with `hlmem init`)")
    return path


@asynccontextmanager
async def memory_for(
    args: argparse.Namespace,
    cfg: Config,
    *,
    drain: bool = False,
    flush: bool = False,
    inline: bool | None = None,
) -> AsyncIterator[Memory]:
    """The memory at ``--db`` (created only by the :data:`CREATES` commands). Its pipeline is
    left to a worker, unless ``drain``: then it runs here and is drained after the block (open
    windows closed first with ``flush``), so the command returns once what it wrote has been
    processed. ``inline`` runs the pipeline here without that drain (the caller drains)."""
    async with open_memory(
        need_db(args),
        config=cfg,
        pipeline="inline" if (drain if inline is None else inline) else "external",
        create=args.command in CREATES,
    ) as mem:
        yield mem
        if drain:
            if flush:
                await mem.flush()
            await mem.drain()
