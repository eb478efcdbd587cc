"""The ``hlmem`` command line: argparse subcommands, one library call each.

Results go to stdout (``--json`` for machines), logs to stderr. Exit codes: 0 ok, 1 failure,
2 usage; ``ingest --drain`` and ``worker --drain`` also say whether the work they drained
finished: 3 when jobs were parked (for budget or a provider outage: they resume by themselves),
4 when jobs failed (dead letters: ``hlmem jobs list --status failed``, ``hlmem jobs retry``);
4 wins over 3, and rejected input lines (1) over both. Every option can also be set as
``HLMEM_<NAME>``; ``--help`` names the variable.
The lifecycle commands (forget, correct, explain, maintain, export, import, backup, restore)
live in :mod:`hlmem.cli_lifecycle`; this module owns the parser, the entry point and the
helpers every command uses.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio

from hlmem import langdata
from hlmem.clock import wall
from hlmem.config import Config, env_default, load_config
from hlmem.errors import HlmemError
from hlmem.memory import Memory
from hlmem.memory import open as open_memory
from hlmem.messages import Claim
from hlmem.ops import WorkSummary, unfinished_work
from hlmem.pipeline import wait_for_stop_signal
from hlmem.store import Store

Handler = Callable[[argparse.Namespace, Config], Awaitable[int]]


def _env_opt(
    parser: argparse.ArgumentParser, flag: str, env: str, help_text: str, **kw: Any
) -> None:
    parser.add_argument(flag, default=env_default(env), help=f"{help_text} [env HLMEM_{env}]", **kw)


def _out(args: argparse.Namespace, data: Any, text: str) -> None:
    if getattr(args, "json", False):
        print(json.dumps(data, ensure_ascii=False, indent=2, default=str))
    else:
        print(text)


def _need_db(args: argparse.Namespace) -> Path:
    if not args.db:
        raise HlmemError("no database: pass --db FILE or set HLMEM_DB")
    return Path(args.db)


@asynccontextmanager
async def _memory(
    args: argparse.Namespace, cfg: Config, *, drain: bool = False, flush: bool = False
) -> AsyncIterator[Memory]:
    """The memory at ``--db``. Its pipeline is left to a worker, unless ``drain``: then it runs
    here and is drained after the block (open windows closed first with ``flush``), so the
    command returns once what it wrote has been processed."""
    async with open_memory(
        _need_db(args), config=cfg, pipeline="inline" if drain else "external"
    ) as mem:
        yield mem
        if drain:
            if flush:
                await mem.flush()
            await mem.drain()


# --- commands ---------------------------------------------------------------------------------


async def cmd_init(args: argparse.Namespace, cfg: Config) -> int:
    store = await Store.open(_need_db(args), cfg.store)
    await store.close()
    _out(args, {"db": str(args.db), "driver": store.caps.driver}, f"initialised {args.db}")
    return 0


async def cmd_migrate(args: argparse.Namespace, cfg: Config) -> int:
    store = await Store.open(_need_db(args), cfg.store)
    applied = await store.applied_migrations()
    await store.close()
    _out(args, {"applied": applied}, f"schema at migration {max(applied)}")
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

    from hlmem.jsonl import ingest_jsonl

    path = Path(args.file)
    total = await anyio.to_thread.run_sync(_count_lines, path)
    started, work = wall(), None
    async with open_memory(
        _need_db(args), config=cfg, pipeline="inline" if args.drain else "external"
    ) as mem:
        with tqdm(total=total, unit="line", disable=args.json or not sys.stderr.isatty()) as bar:
            summary = await ingest_jsonl(mem, path, progress=bar.update)
        if args.drain:
            work = await _drained(mem, flush=True, settle_s=0.0, since=started)
    for err in summary.errors:
        print(err, file=sys.stderr)
    text = (
        f"accepted {summary.accepted}, duplicate {summary.duplicate}, rejected {summary.rejected}"
    )
    data = summary.model_dump()
    if work is not None:
        text, data["unfinished"] = f"{text}; {work.line()}", work.model_dump()
    _out(args, data, text)
    return 1 if summary.rejected else _drain_exit(work)


async def cmd_worker(args: argparse.Namespace, cfg: Config) -> int:
    started, work = wall(), None
    async with open_memory(_need_db(args), config=cfg, pipeline="inline") as mem:
        if args.drain:
            work = await _drained(mem, flush=args.flush, settle_s=args.settle_s, since=started)
        else:
            if args.flush:
                await mem.flush()
            await wait_for_stop_signal()
        stats = await mem.stats()
    data, text = stats.model_dump(), "worker stopped: " + _stats_line(stats.model_dump())
    if work is not None:
        text, data["unfinished"] = f"{text}; {work.line()}", work.model_dump()
    _out(args, data, text)
    return _drain_exit(work)


async def cmd_jobs(args: argparse.Namespace, cfg: Config) -> int:
    async with _memory(args, cfg) as mem:
        if args.jobs_cmd == "list":
            rows = await mem.list_jobs(status=args.status, kind=args.kind, limit=args.limit)
            text = "\n".join(
                f"{r.id:>8} {r.kind:<10} {r.status:<7} attempts={r.attempts} {r.last_error or ''}"
                + (f"\n         raw answer: {r.detail[:500]!r}" if r.detail else "")
                for r in rows
            )
            _out(args, [r.model_dump() for r in rows], text or "no jobs")
        elif args.jobs_cmd == "retry":
            n = await mem.retry_jobs(kind=args.kind, job_id=args.id)
            _out(args, {"retried": n}, f"{n} job(s) back to todo")
        else:
            n = await mem.purge_jobs(older_than_s=args.older_than_days * 86400)
            _out(args, {"purged": n}, f"{n} done job(s) purged")
    return 0


def _stats_line(s: dict[str, Any]) -> str:
    return (
        f"events={s['events']} sessions={s['sessions']} claims={s['claims']} "
        f"windows={s['windows']} jobs={s['jobs']}"
    )


async def cmd_stats(args: argparse.Namespace, cfg: Config) -> int:
    async with _memory(args, cfg) as mem:
        stats = (await mem.stats()).model_dump()
    _out(args, stats, _stats_line(stats))
    return 0


async def cmd_recall(args: argparse.Namespace, cfg: Config) -> int:
    async with _memory(args, cfg) as mem:
        result = await mem.recall(
            args.query,
            namespace=args.namespace,
            k=args.k,
            mode="history" if args.history else None,
            as_of=_when(args.as_of),
            valid_at=_when(args.valid_at),
            budget_tokens=args.budget_tokens,
            include_untrusted=args.include_untrusted,
        )
    lines = [
        f"{i.score:.4f}  [{i.kind}{'' if i.status in ('active', 'event') else ', ' + i.status}]"
        f"  {i.text}"
        for i in result.items
    ]
    _out(
        args,
        {
            "query": result.query.model_dump(mode="json"),
            "items": [i.model_dump(mode="json") for i in result.items],
            "packet": result.packet,
            "tokens": result.tokens,
        },
        "\n".join(lines) or "nothing recalled",
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
    async with _memory(args, cfg, drain=args.drain) as mem:
        event_id = await mem.remember(
            args.subject,
            args.predicate,
            args.value,
            text=args.text,
            namespace=args.namespace,
            polarity=-1 if args.negated else 1,
            qualifiers=args.qualifier,
            scope=args.scope,
            valid_from=_when(args.valid_from),
            valid_to=_when(args.valid_to),
            importance=args.importance,
        )
    _out(args, {"event_id": event_id}, f"remembered (event {event_id})")
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
    async with _memory(args, cfg) as mem:
        found = await mem.claims(
            namespace=args.namespace,
            subject=args.subject,
            predicate=args.predicate,
            history=args.history,
            as_of=_when(args.as_of),
            valid_at=_when(args.valid_at),
            limit=args.limit,
        )
    _out(
        args,
        [c.model_dump(mode="json") for c in found],
        "\n".join(_claim_line(c) for c in found) or "no claims",
    )
    return 0


async def cmd_ops(args: argparse.Namespace, cfg: Config) -> int:
    from hlmem.ops import ops_report, parse_since, render

    since = parse_since(args.since)
    store = await Store.open(_need_db(args), cfg.store)
    try:
        report = await ops_report(store, cfg, since=since)
    finally:
        await store.close()
    _out(args, report.model_dump(mode="json"), render(report))
    return 0


async def cmd_doctor(args: argparse.Namespace, cfg: Config) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        store = await Store.open(Path(tmp) / "doctor.db", cfg.store)
        caps = store.caps
        await store.close()
    info = {
        "python": sys.version.split()[0],
        "sqlite_module": caps.driver,
        "sqlite_version": caps.sqlite_version,
        "sqlite_vec": caps.vec_version,
    }
    _out(args, info, "\n".join(f"{k}: {v}" for k, v in info.items()))
    return 0


async def cmd_quickstart(args: argparse.Namespace, cfg: Config) -> int:
    from tqdm import tqdm

    from hlmem.quickstart import run_quickstart, sample_lines

    with tqdm(total=sample_lines(), desc="ingest", unit="event", disable=args.json) as bar:
        result = await run_quickstart(cfg, progress=bar.update)
    if args.json:
        print(result.model_dump_json(indent=2))
        return 0
    windows = result.stats.windows.get("closed", 0)
    print(
        f"\ningested {result.ingest.accepted} events from {result.stats.sessions} sessions"
        f" into {windows} windows"
    )
    print(f"remembered {len(result.claims)} claims:")
    for claim in result.claims:
        quote = claim.evidence[0].quote if claim.evidence else ""
        quals = f" ({', '.join(claim.qualifiers)})" if claim.qualifiers else ""
        print(f"  - {claim.text}{quals}    [evidence: “{quote}”]")
    if result.changes:
        print("changed its mind (the old belief stays as history):")
    for change in result.changes:
        print(f"  - {change.old.text}  →  {change.new.text}    [{change.reason}]")
    if result.untrusted_events:
        print(
            f"kept out: {result.untrusted_events} event(s) from untrusted sources, stored but"
            " never extracted (provenance enforce)"
        )
    for query, recalled in result.recall.items():
        print(f"\nrecall: {query}")
        for item in recalled.items:
            print(f"  [{item.kind}] {item.text}")
        if not recalled.items:
            print("  (nothing)")
    return 0


async def cmd_sim_provider(args: argparse.Namespace, cfg: Config) -> int:
    from anyio.lowlevel import checkpoint
    from pydantic import ValidationError

    from hlmem.errors import ConfigError
    from hlmem.sim_provider import SimProvider
    from hlmem.sim_state import SimSettings

    try:
        fields = {k: v for k, v in vars(args).items() if k in SimSettings.model_fields}
        settings = SimSettings(**fields)
    except ValidationError as exc:
        raise ConfigError(f"sim-provider: {exc}") from None
    provider = SimProvider(args.host, args.port, settings).start()
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(wait_for_stop_signal)
            await checkpoint()  # let it install its handlers before the URL is announced
            print(f"sim-provider listening on {provider.base_url}", flush=True)
    finally:
        await anyio.to_thread.run_sync(provider.stop)
    stats = provider.stats()
    text = f"sim-provider stopped: {stats.requests} requests, {stats.ok} ok"
    _out(args, stats.model_dump(), text)
    return 0


def _typed_opts(sub: argparse.ArgumentParser, prefix: str) -> Callable[..., None]:
    """``opt(flag, type, default, help_text, **kw)``: add ``flag`` to ``sub``, its default
    overridden by ``HLMEM_<prefix><FLAG>`` when that is set."""

    def opt(flag: str, kind: type, default: object, help_text: str, **kw: Any) -> None:
        env = prefix + flag.lstrip("-").replace("-", "_").upper()
        value = env_default(env)
        sub.add_argument(
            flag,
            type=kind,
            default=default if value is None else value,
            help=f"{help_text} [env HLMEM_{env}]",
            **kw,
        )

    return opt


def _add_sim_provider(sub: argparse.ArgumentParser) -> None:
    opt = _typed_opts(sub, "SIM_")
    opt("--host", str, "127.0.0.1", "address to bind")
    opt("--port", int, 8089, "port to bind (0: any free port)")
    opt("--latency-ms", float, 0.0, "latency added to every admitted request")
    opt("--jitter-ms", float, 0.0, "latency varies uniformly by up to this much either way")
    opt("--rpm", int, None, "requests admitted per window (None: unlimited)")
    opt("--tpm", int, None, "prompt + max_tokens admitted per window (None: unlimited)")
    opt("--window-s", float, 60.0, "the sliding window of --rpm and --tpm")
    opt("--error-rate", float, 0.0, "fraction of admitted requests answered with --error-status")
    opt("--error-status", int, 500, "status of injected errors", choices=[429, 500, 503])
    opt("--retry-after", float, None, "Retry-After of injected errors, s", dest="retry_after_s")
    opt("--errors-for-s", float, None, "inject errors only this long after start (an outage)")
    opt("--garbage-rate", float, 0.0, "fraction of admitted requests answered with malformed JSON")
    opt(
        "--bad-json-rate",
        float,
        0.0,
        "fraction of chat answers whose content (not the HTTP body) is malformed JSON",
    )
    opt("--seed", int, 0, "seed of the injected errors, garbage and jitter")
    opt("--price-in", float, None, "price per 1k prompt tokens (only echoed in /stats)")
    opt("--price-out", float, None, "price per 1k completion tokens (only echoed in /stats)")
    opt("--require-key", str, None, "answer 401 unless 'Authorization: Bearer KEY' is sent")


#: ``hlmem loadtest --extractor`` choices
EXTRACTORS = ["model", "rules"]


async def cmd_loadtest(args: argparse.Namespace, cfg: Config) -> int:
    from pydantic import ValidationError
    from tqdm import tqdm

    from hlmem.errors import ConfigError
    from hlmem.loadreport import render as render_load
    from hlmem.loadtest import LoadSpec, run_loadtest
    from hlmem.report_html import write_html

    try:
        spec = LoadSpec(**{k: v for k, v in vars(args).items() if k in LoadSpec.model_fields})
    except ValidationError as exc:
        raise ConfigError(f"loadtest: {exc}") from None
    quiet = args.json or not sys.stderr.isatty()
    with tqdm(total=spec.planned_events, desc="loadtest", unit="event", disable=quiet) as bar:
        report = await run_loadtest(
            spec, cfg, db=args.db, progress=bar.update, status=bar.set_postfix_str
        )
    if args.report:
        await anyio.to_thread.run_sync(write_html, report, Path(args.report))
    _out(args, report.model_dump(mode="json"), render_load(report))
    return 0 if report.consistent else 1


def _add_loadtest(sub: argparse.ArgumentParser) -> None:
    opt = _typed_opts(sub, "LOADTEST_")
    opt("--sessions", int, 20, "agent sessions (conversations)")
    opt("--events-per-session", int, 20, "events each session sends")
    opt("--rate", float, None, "events/s offered over all sessions (None: as fast as acked)")
    opt("--concurrency", int, None, "sessions talking at once (None: all)")
    opt("--duration", float, None, "stop offering after this many seconds", dest="duration_s")
    opt("--seed", int, 0, "seed of the conversations (and of the sim-provider)")
    opt("--provider", str, "sim", "'sim' or a TOML config with a real provider (needs --budget)")
    opt("--extractor", str, None, "model or rules (default: model on sim)", choices=EXTRACTORS)
    opt("--budget", float, None, "hard spending cap enforced by the gateway (real provider)")
    opt("--latency-ms", float, 200.0, "sim: latency of every answer")
    opt("--jitter-ms", float, 0.0, "sim: latency varies by up to this much either way")
    opt("--rpm", int, None, "sim: requests per minute it admits (the gateway paces to it)")
    opt("--tpm", int, None, "sim: tokens per minute it admits (the gateway paces to it)")
    opt("--error-rate", float, 0.0, "sim: fraction of requests answered with HTTP 500")
    opt("--price-in", float, 0.00015, "sim: price per 1k prompt tokens (budget currency)")
    opt("--price-out", float, 0.0006, "sim: price per 1k completion tokens (budget currency)")
    opt("--provider-concurrency", int, 16, "sim: requests the gateway keeps in flight")
    opt("--sample-interval-s", float, 0.5, "queue depth, cost and RSS sampled this often")
    opt("--e2e-sample", int, 300, "memorable events followed to their claim (e2e latency)")
    opt("--drain-timeout-s", float, 600.0, "give up draining after this long")
    opt("--report", str, None, "also write a self-contained HTML report to this file")


# --- parser -----------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    # Imported here, not at the top: hlmem.cli_lifecycle uses this module's helpers.
    from hlmem.cli_lifecycle import add_lifecycle_commands

    fmt = argparse.ArgumentDefaultsHelpFormatter
    parser = argparse.ArgumentParser(
        prog="hlmem",
        description="Local-first long-term memory for LLM agents.",
        allow_abbrev=False,
        formatter_class=fmt,
    )
    _env_opt(parser, "--db", "DB", "SQLite database file")
    _env_opt(parser, "--config", "CONFIG", "TOML config file (see config/default.toml)")
    parser.add_argument(
        "-v", "--verbose", action="count", default=0, help="more logs on stderr (-vv: debug)"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, handler: Handler, help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(
            name, help=help_text, description=help_text, allow_abbrev=False, formatter_class=fmt
        )
        p.add_argument("--json", action="store_true", help="machine-readable output")
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
    p.epilog = "with --drain, " + DRAIN_EXIT_HELP
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
    jl.add_argument("--kind", help="only this stage (windower, extractor)")
    jl.add_argument("--limit", type=int, default=50, help="most rows shown")
    jl.add_argument("--json", action="store_true", help="machine-readable output")
    jr = jobs.add_parser(
        "retry", help="put failed and parked jobs back to todo", formatter_class=fmt
    )
    jr.add_argument("--kind", help="only this stage")
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
    command("doctor", cmd_doctor, "check the SQLite module, its version and sqlite-vec")
    command("quickstart", cmd_quickstart, "run a sample conversation through a fresh store")
    _add_sim_provider(
        command("sim-provider", cmd_sim_provider, "serve a simulated OpenAI-compatible provider")
    )
    _add_loadtest(
        command("loadtest", cmd_loadtest, "what N sessions cost and whether the pipeline keeps up")
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    if argv is None:  # run as the ``hlmem`` program, not called by a user's code
        langdata.skip_pkg_resources()
    parser = build_parser()
    args = parser.parse_args(argv)
    level = [logging.WARNING, logging.INFO, logging.DEBUG][min(args.verbose, 2)]
    logging.basicConfig(
        level=level, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    try:
        cfg = load_config(args.config)
        return int(anyio.run(args.handler, args, cfg, backend="asyncio"))
    except HlmemError as exc:
        print(f"hlmem: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
