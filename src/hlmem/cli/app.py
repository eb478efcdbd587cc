"""The ``hlmem`` command line: argparse subcommands, one library call each.

Results go to stdout (``--json`` for machines), logs to stderr. Every option can also be set as
``HLMEM_<NAME>``; ``--help`` names the variable. The lifecycle commands (forget, correct,
explain, maintain, export, import, backup, restore) live in :mod:`hlmem.cli.lifecycle`, the tools
(quickstart, sim-provider, loadtest) in :mod:`hlmem.cli.tools`; this module owns the parser, the
entry point and the helpers every command uses.

Only the commands in :data:`CREATES` may create the ``--db`` file; every other one refuses a
path that does not exist, and makes nothing there. A failure is one line on stderr, never a
traceback (``-v`` adds it for an internal error). Exit codes (:data:`EXIT_CODES`, also in
``--help`` and the README):

- 0: done (``doctor``: healthy; ``worker``: stopped gracefully, after a signal or ``--drain``);
- 1: failed: bad input, no such database, a corrupt or unreadable file, ``doctor`` found problems;
- 2: usage: an unknown command or option, a missing argument, no ``--db`` for a command that
  needs one;
- 3: ``ingest --drain``, ``worker --drain``: work did not finish, jobs are parked (for budget or a
  provider outage: they resume by themselves);
- 4: ``ingest --drain``, ``worker --drain``: jobs failed while they ran (dead letters: ``hlmem
  jobs list --status failed``, ``hlmem jobs retry``); 4 wins over 3, rejected input lines (1)
  over both;
- 70: internal error, a bug (``-v`` prints its traceback);
- 130: interrupted by SIGINT (Ctrl-C); ``worker``: stopped at once by a third SIGINT;
- 141: stdout was closed early (``hlmem recall ... | head``): the output was cut short;
- 143: ``worker``: stopped at once by a third SIGTERM.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sqlite3
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio

from hlmem.cli.common import (
    DB_OPTIONAL,
    EXIT_CODES,
    Handler,
    env_opt,
    memory_for,
    need_db,
    out,
)
from hlmem.clock import SystemClock, wall
from hlmem.config import Config, load_config
from hlmem.errors import ForgottenFact, HlmemError
from hlmem.gateway import WorkSummary, unfinished_work
from hlmem.lang import langdata
from hlmem.memory import Memory, open_store
from hlmem.memory import open as open_memory
from hlmem.messages import Claim, JobKind
from hlmem.pipeline import FORCE_AFTER, stop_signals
from hlmem.store import Store

# --- commands ---------------------------------------------------------------------------------


async def cmd_init(args: argparse.Namespace, cfg: Config) -> int:
    store = await open_store(need_db(args), cfg)
    await store.close()
    out(args, {"db": str(args.db), "driver": store.caps.driver}, f"initialised {args.db}")
    return 0


async def cmd_migrate(args: argparse.Namespace, cfg: Config) -> int:
    store = await open_store(need_db(args), cfg, create=False)
    applied = await store.applied_migrations()
    await store.close()
    out(args, {"applied": applied}, f"schema at migration {max(applied)}")
    return 0


def _count_lines(path: Path) -> int:
    if not path.is_file():
        raise HlmemError(f"no such file: {path}")
    with path.open("rb") as lines:
        return sum(1 for _ in lines)


#: exit codes of ``ingest --drain`` and ``worker --drain`` when the drained work did not finish
EXIT_PARKED = 3
EXIT_FAILED = 4
DRAIN_EXIT_HELP = (
    "exit codes: 0 all work finished; 1 an error (or, for ingest, rejected lines); 3 jobs were "
    "parked (for budget or a provider outage: they resume by themselves); 4 jobs failed "
    "(hlmem jobs list --status failed; hlmem jobs retry)"
)


async def _drained(mem: Memory, *, flush: bool, settle_s: float, since: float) -> WorkSummary:
    """Drain (after closing open windows with ``flush``) and count the jobs that failed since
    ``since`` and those parked now; unfinished work is said on stderr, never silent."""
    if flush:
        await mem.flush()
    await mem.drain(settle_s=settle_s)
    work = await unfinished_work(mem.store, since=since)
    if not work.finished:
        print(f"hlmem: work did not finish: {work.line()}", file=sys.stderr)
    return work


def _drain_exit(work: WorkSummary | None) -> int:
    if work is None or work.finished:
        return 0
    return EXIT_FAILED if work.failed else EXIT_PARKED


async def cmd_ingest(args: argparse.Namespace, cfg: Config) -> int:
    from tqdm import tqdm

    from hlmem.memory import ingest_jsonl

    path = Path(args.file)
    total = await anyio.to_thread.run_sync(_count_lines, path)
    started, work = wall(), None
    async with memory_for(args, cfg, inline=args.drain) as mem:
        with tqdm(total=total, unit="line", disable=args.json or not sys.stderr.isatty()) as bar:
            summary = await ingest_jsonl(mem, path, progress=bar.update)
        if args.drain:
            work = await _drained(mem, flush=True, settle_s=0.0, since=started)
    for err in (*summary.errors, *summary.blocked_lines):
        print(err, file=sys.stderr)
    text = (
        f"accepted {summary.accepted}, duplicate {summary.duplicate}, "
        + (f"blocked {summary.blocked} (forgotten), " if summary.blocked else "")
        + f"rejected {summary.rejected}"
    )
    data = summary.model_dump()
    if work is not None:
        text, data["unfinished"] = f"{text}; {work.line()}", work.model_dump()
    out(args, data, text)
    return 1 if summary.rejected else _drain_exit(work)


async def cmd_worker(args: argparse.Namespace, cfg: Config) -> int:
    db, started, work = need_db(args), wall(), None
    # The signals are received from before the pipeline starts until after it has stopped.
    async with stop_signals(_stopping(cfg)) as stop:
        async with open_memory(db, config=cfg, pipeline="inline", create=False) as mem:
            print(f"hlmem: worker running on {db} (pid {os.getpid()})", file=sys.stderr, flush=True)
            with stop.until_requested():
                if args.drain:
                    work = await _drained(
                        mem, flush=args.flush, settle_s=args.settle_s, since=started
                    )
                else:
                    if args.flush:
                        await mem.flush()
                    await anyio.sleep_forever()
            stats = await mem.stats()
    if stop.forced is not None:
        print(
            "hlmem: worker stopped at once; its jobs in flight are back in the queue",
            file=sys.stderr,
        )
        return 128 + stop.forced.value
    data, text = stats.model_dump(), "worker stopped: " + _stats_line(stats.model_dump())
    if work is not None:
        text, data["unfinished"] = f"{text}; {work.line()}", work.model_dump()
    out(args, data, text)
    return _drain_exit(work)


def _stopping(cfg: Config) -> Callable[[signal.Signals, int], None]:
    """What a worker says on stderr when it receives a stop signal (once per signal)."""
    grace = cfg.pipeline.shutdown_grace_s

    def say(sig: signal.Signals, count: int) -> None:
        if count == 1:
            text = f"stopping after the work in flight (at most {grace:g} s)"
        elif count < FORCE_AFTER:
            text = f"still stopping; signal {FORCE_AFTER - count} more time(s) to stop at once"
        else:
            text = "stopping at once"
        print(f"hlmem: {sig.name} ({count}): {text}", file=sys.stderr, flush=True)

    return say


async def cmd_jobs(args: argparse.Namespace, cfg: Config) -> int:
    async with memory_for(args, cfg) as mem:
        if args.jobs_cmd == "list":
            rows = await mem.list_jobs(status=args.status, kind=args.kind, limit=args.limit)
            text = "\n".join(
                f"{r.id:>8} {r.kind:<10} {r.status:<7} attempts={r.attempts} {r.last_error or ''}"
                + (f"\n         raw answer: {r.detail[:500]!r}" if r.detail else "")
                for r in rows
            )
            out(args, [r.model_dump() for r in rows], text or "no jobs")
        elif args.jobs_cmd == "retry":
            n = await mem.retry_jobs(kind=args.kind, job_id=args.id)
            out(args, {"retried": n}, f"{n} job(s) back to todo")
        else:
            n = await mem.purge_jobs(older_than_s=args.older_than_days * 86400)
            out(args, {"purged": n}, f"{n} done job(s) purged")
    return 0


def _stats_line(s: dict[str, Any]) -> str:
    return (
        f"events={s['events']} sessions={s['sessions']} claims={s['claims']} "
        f"windows={s['windows']} jobs={s['jobs']}"
    )


async def cmd_stats(args: argparse.Namespace, cfg: Config) -> int:
    async with memory_for(args, cfg) as mem:
        stats = (await mem.stats()).model_dump()
    out(args, stats, _stats_line(stats))
    return 0


async def cmd_recall(args: argparse.Namespace, cfg: Config) -> int:
    async with memory_for(args, cfg) as mem:
        result = await mem.recall(
            args.query,
            namespace=args.namespace,
            k=args.k,
            mode="history" if args.history else None,
            as_of=_when(args.as_of),
            valid_at=_when(args.valid_at),
            budget_tokens=args.budget_tokens,
            include_untrusted=args.include_untrusted,
            session_id=args.session_id,
        )
    lines = [
        f"{i.score:.4f}  [{i.kind}{'' if i.status in ('active', 'event') else ', ' + i.status}]"
        f"  {i.text}"
        for i in result.items
    ]
    text = "\n".join(lines) or "nothing recalled"
    out(
        args,
        # the versioned RecallResult (schema_version; its shape: hlmem.recall)
        result.model_dump(mode="json"),
        text if result.degraded is None else f"(full text only: {result.degraded})\n{text}",
    )
    return 0


def _when(text: str | None) -> datetime | None:
    if text is None:
        return None
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise HlmemError(f"not an ISO 8601 time: {text!r}") from None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


async def cmd_remember(args: argparse.Namespace, cfg: Config) -> int:
    """A forgotten fact is refused (exit 1, with the forget's time); ``--override-forget``
    teaches it again and says which forget it lifted."""
    fields = {
        "text": args.text,
        "namespace": args.namespace,
        "polarity": -1 if args.negated else 1,
        "qualifiers": args.qualifier,
        "scope": args.scope,
        "valid_from": _when(args.valid_from),
        "valid_to": _when(args.valid_to),
        "importance": args.importance,
    }
    lifted: ForgottenFact | None = None
    async with memory_for(args, cfg, drain=args.drain) as mem:
        try:
            event_id = await mem.remember(args.subject, args.predicate, args.value, **fields)
        except ForgottenFact as exc:
            if not args.override_forget:
                raise
            lifted = exc
            event_id = await mem.remember(
                args.subject, args.predicate, args.value, override_forget=True, **fields
            )
    note = (
        f"; override_forget: lifted the {', '.join(lifted.kinds)} tombstone(s) of the forget "
        f"of {lifted.forgotten_at}"
        if lifted
        else ""
    )
    data = {"event_id": event_id, "lifted": list(lifted.kinds) if lifted else []}
    out(args, data, f"remembered (event {event_id}){note}")
    return 0


def _claim_line(c: Claim) -> str:
    sign = "" if c.polarity > 0 else "NOT "
    quals = f" ({', '.join(c.qualifiers)})" if c.qualifiers else ""
    since = c.valid_from.date().isoformat() if c.valid_from else "?"
    until = c.valid_to.date().isoformat() if c.valid_to else ""
    return (
        f"{c.status:<10} {c.subject} {c.predicate}: {sign}{c.value}{quals}  "
        f"[valid {since}..{until}; learned {c.recorded_at.date().isoformat()}]  {c.id}"
    )


async def cmd_claims(args: argparse.Namespace, cfg: Config) -> int:
    async with memory_for(args, cfg) as mem:
        found = await mem.claims(
            namespace=args.namespace,
            subject=args.subject,
            predicate=args.predicate,
            history=args.history,
            as_of=_when(args.as_of),
            valid_at=_when(args.valid_at),
            limit=args.limit,
        )
    out(
        args,
        [c.model_dump(mode="json") for c in found],
        "\n".join(_claim_line(c) for c in found) or "no claims",
    )
    return 0


async def cmd_ops(args: argparse.Namespace, cfg: Config) -> int:
    from hlmem.gateway import ops_report, parse_since, render

    since = parse_since(args.since)
    store = await open_store(need_db(args), cfg, create=False)
    try:
        report = await ops_report(store, cfg, since=since, clock=SystemClock())
    finally:
        await store.close()
    out(args, report.model_dump(mode="json"), render(report))
    return 0


async def cmd_doctor(args: argparse.Namespace, cfg: Config) -> int:
    from hlmem.store import check_database, render

    db = need_db(args) if args.db else None
    with tempfile.TemporaryDirectory() as tmp:
        store = await Store.open(Path(tmp) / "doctor.db", cfg.store)
        caps = store.caps
        await store.close()
    info: dict[str, Any] = {
        "python": sys.version.split()[0],
        "sqlite_module": caps.driver,
        "sqlite_version": caps.sqlite_version,
        "sqlite_vec": caps.vec_version,
    }
    text = "\n".join(f"{k}: {v}" for k, v in info.items())
    if db is None:
        out(args, info, text)
        return 0
    report = await anyio.to_thread.run_sync(check_database, db, cfg.store)
    info["database"] = report.model_dump(mode="json")
    out(args, info, text + "\n" + render(report))
    return 0 if report.healthy else 1


# --- parser -----------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    # Imported here, not at the top: hlmem.cli.lifecycle and cli_tools use this module's helpers.
    from hlmem.cli.lifecycle import add_lifecycle_commands
    from hlmem.cli.tools import add_tool_commands

    fmt = _Help
    parser = argparse.ArgumentParser(
        prog="hlmem",
        description="Local-first long-term memory for LLM agents.",
        epilog="exit codes:\n" + "\n".join(f"  {k:<4} {v}" for k, v in EXIT_CODES.items()),
        allow_abbrev=False,
        formatter_class=fmt,
    )
    env_opt(parser, "--db", "DB", "SQLite database file")
    env_opt(parser, "--config", "CONFIG", "TOML config file (see config/default.toml)")
    parser.add_argument(
        "-v", "--verbose", action="count", default=0, help="more logs on stderr (-vv: debug)"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, handler: Handler, help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(
            name, help=help_text, description=help_text, allow_abbrev=False, formatter_class=fmt
        )
        p.add_argument("--json", action="store_true", help="machine-readable output")
        # also after the command; SUPPRESS: absent here, the value before the command stays
        p.add_argument(
            "--db", default=argparse.SUPPRESS, help="SQLite database file [env HLMEM_DB]"
        )
        p.set_defaults(handler=handler)
        return p

    command("init", cmd_init, "create the database file and its schema")
    command("migrate", cmd_migrate, "apply pending schema migrations")
    p = command("ingest", cmd_ingest, "ingest events from a JSONL file (one event per line)")
    p.epilog = "with --drain, " + DRAIN_EXIT_HELP
    p.add_argument(
        "file",
        help="JSONL file: session_id, role, content, optional event_id, "
        "namespace, occurred_at, origin_class, session_kind, metadata",
    )
    p.add_argument(
        "--drain", action="store_true", help="run the pipeline here until all is processed"
    )
    p = command("worker", cmd_worker, "run the pipeline on the database (until SIGINT/SIGTERM)")
    p.epilog = (
        "SIGINT or SIGTERM stops it gracefully: the work in flight finishes (at most\n"
        "pipeline.shutdown_grace_s), then exit 0. A second signal changes nothing. A third\n"
        "stops it at once: the jobs in flight go back to the queue; exit 130 (SIGINT) or 143.\n"
        "With --drain, " + DRAIN_EXIT_HELP
    )
    p.add_argument("--drain", action="store_true", help="exit once no job is waiting or running")
    p.add_argument("--flush", action="store_true", help="close every open window first")
    p.add_argument(
        "--settle-s", type=float, default=0.5, help="with --drain: idle time before exiting"
    )
    p = command("jobs", cmd_jobs, "inspect and re-drive pipeline jobs")
    jobs = p.add_subparsers(dest="jobs_cmd", required=True, metavar="ACTION")
    jl = jobs.add_parser("list", help="list jobs, newest first", formatter_class=fmt)
    jl.add_argument(
        "--status", choices=["todo", "doing", "done", "failed", "parked"], help="only this status"
    )
    jl.add_argument("--kind", choices=list(JobKind), help="only this stage")
    jl.add_argument("--limit", type=int, default=50, help="most rows shown")
    jl.add_argument("--json", action="store_true", help="machine-readable output")
    jr = jobs.add_parser(
        "retry", help="put failed and parked jobs back to todo", formatter_class=fmt
    )
    jr.add_argument("--kind", choices=list(JobKind), help="only this stage")
    jr.add_argument("--id", type=int, help="only this job")
    jr.add_argument("--json", action="store_true", help="machine-readable output")
    jp = jobs.add_parser("purge", help="delete old done jobs", formatter_class=fmt)
    jp.add_argument(
        "--older-than-days", type=float, default=7.0, help="purge done jobs older than this"
    )
    jp.add_argument("--json", action="store_true", help="machine-readable output")
    command("stats", cmd_stats, "counts of events, claims, windows and jobs")
    p = command("recall", cmd_recall, "recall claims and events relevant to a query")
    p.add_argument("query")
    p.add_argument(
        "--namespace", default=None, help="namespace (default: ingest.default_namespace)"
    )
    p.add_argument("--k", type=int, default=10, help="how many results")
    p.add_argument("--history", action="store_true", help="include superseded claims")
    p.add_argument("--as-of", help="what was believed at this ISO 8601 time (recorded time)")
    p.add_argument("--valid-at", help="what was true at this ISO 8601 time (valid time)")
    p.add_argument(
        "--budget-tokens", type=int, default=None, help="context packet budget (default: config)"
    )
    p.add_argument(
        "--include-untrusted", action="store_true", help="also events from untrusted sources"
    )
    p.add_argument(
        "--session-id",
        default=None,
        help="the asking session: what it said within recall.echo_window_s is left out",
    )
    p = command(
        "remember",
        cmd_remember,
        "record an explicit memory (an event and its claim, no extraction)",
    )
    p.add_argument("subject", help='who or what it is about ("user" for the speaker)')
    p.add_argument("predicate", help="the fact slot, e.g. ui_theme, location, likes")
    p.add_argument("value", help="the value, in the conversation's language")
    p.add_argument("--text", help="the statement as said (default: subject predicate value)")
    p.add_argument(
        "--namespace", default=None, help="namespace (default: ingest.default_namespace)"
    )
    p.add_argument("--negated", action="store_true", help="the fact is negated (polarity -1)")
    p.add_argument(
        "--qualifier", action="append", default=[], help="a qualifier, e.g. 暂时 (repeatable)"
    )
    p.add_argument("--scope", choices=["long_term", "short_term", "plan"], default="long_term")
    p.add_argument("--valid-from", help="ISO 8601 time it became true (default: now)")
    p.add_argument("--valid-to", help="ISO 8601 time it stops being true")
    p.add_argument("--importance", type=float, default=0.7, help="0..1")
    p.add_argument(
        "--drain", action="store_true", help="run the pipeline here until the claim is placed"
    )
    p.add_argument(
        "--override-forget",
        action="store_true",
        help="teach a forgotten fact again: lift its forget's content and slot tombstones",
    )
    p = command("claims", cmd_claims, "list claims: current beliefs, history, as of a time")
    p.add_argument(
        "--namespace", default=None, help="namespace (default: ingest.default_namespace)"
    )
    p.add_argument("--subject", help="only this subject")
    p.add_argument("--predicate", help="only this predicate (slot)")
    p.add_argument("--history", action="store_true", help="include superseded claims")
    p.add_argument("--as-of", help="what was believed at this ISO 8601 time (recorded time)")
    p.add_argument("--valid-at", help="what was true at this ISO 8601 time (valid time)")
    p.add_argument("--limit", type=int, default=100, help="most claims shown")
    p = command("ops", cmd_ops, "operations: model-call costs, latency and queue health")
    ops = p.add_subparsers(dest="ops_cmd", required=True, metavar="ACTION")
    orep = ops.add_parser(
        "report",
        help="provider calls, tokens, cost, latency, failures and 429s by stage, provider and "
        "model; job-queue health; cost per event and per claim",
        formatter_class=fmt,
    )
    orep.add_argument("--since", default="24h", help="window: 30m, 24h, 7d, ...")
    orep.add_argument("--json", action="store_true", help="machine-readable output")
    add_lifecycle_commands(command)
    p = command("doctor", cmd_doctor, "check SQLite and sqlite-vec; with --db, the database file")
    p.epilog = (
        "With --db: PRAGMA quick_check, the migrations and schema against sql/schema.sql,\n"
        "the full-text index against its rows, orphan rows. Nothing is changed or created;\n"
        "exit 0 when healthy, 1 when a check found a problem."
    )
    add_tool_commands(command)
    return parser


def main(argv: list[str] | None = None) -> int:
    if argv is None:  # run as the ``hlmem`` program, not called by a user's code
        langdata.skip_pkg_resources()
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.db and args.command not in DB_OPTIONAL:  # a usage error (2), as argparse's are
        parser.error("no database: pass --db FILE or set HLMEM_DB")
    with _logs_to_stderr(args.verbose):
        try:
            cfg = load_config(args.config)
            code = int(anyio.run(args.handler, args, cfg, backend="asyncio"))
            sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
            return code
        except (Exception, KeyboardInterrupt, BaseExceptionGroup) as exc:
            return _failed(exc, verbose=args.verbose)


@contextmanager
def _logs_to_stderr(verbose: int) -> Iterator[None]:
    """Logs go to stderr for the length of one command, then the root logger is as it was:
    ``main`` called again in one process (by the tests, or a user's code) neither doubles its
    log lines nor writes to the stderr of the call before."""
    root = logging.getLogger()
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    level = root.level
    root.addHandler(handler)
    root.setLevel([logging.WARNING, logging.INFO, logging.DEBUG][min(verbose, 2)])
    try:
        yield
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


class _Help(argparse.ArgumentDefaultsHelpFormatter):
    """Defaults shown; a text laid out in lines (the exit codes, the signals) kept as written,
    the others wrapped."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if "\n" in text:
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for sub in exc.exceptions for leaf in _leaves(sub)]
    return [exc]


def _db_errors() -> tuple[type[BaseException], ...]:
    """The DB-API error classes of both SQLite modules (``sqlean``'s are its own)."""
    errors: list[type[BaseException]] = [sqlite3.Error]
    sqlean = sys.modules.get("sqlean")
    if sqlean is not None:
        errors.append(sqlean.Error)
    return tuple(errors)


def _failed(exc: BaseException, *, verbose: int) -> int:
    """The exit code of a command that raised ``exc``, after one line on stderr (module
    docstring); errors inside task groups are found in their exception groups."""
    leaves = _leaves(exc)
    if any(isinstance(e, BrokenPipeError) for e in leaves):
        # The reader left (``| head``): nothing more can be shown. Python flushes stdout again
        # at exit; point it at devnull so that flush cannot fail too (the Python docs' recipe).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    if any(isinstance(e, KeyboardInterrupt) for e in leaves):
        print("hlmem: interrupted", file=sys.stderr)
        return 130
    # what a user can act on, in this order
    expected: tuple[type[BaseException], ...] = (HlmemError, *_db_errors(), OSError)
    first = next((e for kind in expected for e in leaves if isinstance(e, kind)), None)
    if first is not None:
        print(f"hlmem: error: {first}", file=sys.stderr)
        return 1
    bug = leaves[0]
    print(
        f"hlmem: internal error: {type(bug).__name__}: {bug}"
        + ("" if verbose else " (run with -v for the traceback)"),
        file=sys.stderr,
    )
    if verbose:
        logging.getLogger("hlmem").error("internal error", exc_info=bug)
    return 70


if __name__ == "__main__":
    raise SystemExit(main())
