"""The lifecycle commands of the ``hlmem`` command line: forget, correct, explain, maintain,
export, import, backup and restore, the commands that change, explain or move the memories
already stored.

:mod:`hlmem.cli.app` owns the entry point, the parser and the helpers used here (output, the
database, the memory and its ``--drain``), and adds these commands with
:func:`add_lifecycle_commands`. Like every command, each is a few lines around one library call.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

import anyio

from hlmem.claims import ForgetResult
from hlmem.cli.common import Handler, memory_for, need_db, out
from hlmem.config import Config
from hlmem.messages import MaintenanceReport

#: ``command(name, handler, help_text)``: adds a subcommand to ``hlmem``'s parser, returns it
Command = Callable[[str, Handler, str], argparse.ArgumentParser]


def _forget_text(r: ForgetResult) -> str:
    if r.already_forgotten:
        return "already forgotten: nothing left to forget"
    if r.by == "query" and not r.matched:
        terms = ", ".join(r.query_terms)
        why = (
            f"no memory holds its content terms ({terms}) nor has a vector close enough"
            if terms
            else "it has no content terms (only question or forget words)"
        )
        return (
            f"nothing matches {r.query!r} (recall found {r.recalled} item(s); {why}): "
            "nothing was forgotten"
        )
    if not (r.claim_ids or r.event_ids):
        return "nothing to forget"
    verb = "would forget" if r.dry_run else "forgot"
    about = f" for {r.query!r} (content terms: {', '.join(r.query_terms)})" if r.query else ""
    lines = [
        f"{verb} {len(r.claim_ids)} claim(s) and {len(r.event_ids)} event(s){about}: "
        f"{r.vectors} vector(s), {r.fts_rows} full-text row(s), {r.evidence_links} evidence "
        f"link(s); {r.tombstones} tombstone(s)"
        + (" (dry run: nothing changed)" if r.dry_run else "")
    ]
    lines += [f"  claim {c}: {r.claim_texts.get(c, '')}" for c in r.claim_ids]
    lines += [f"  event {e}" for e in r.event_ids]
    lines += [f"  kept event {e} (still needed)" for e in r.kept_event_ids]
    lines += [f"  believed again: claim {c}" for c in r.reinstated_claim_ids]
    return "\n".join(lines)


def _say(text: str, end: str = "\n") -> None:
    sys.stderr.write(text + end)
    sys.stderr.flush()


async def _confirmed(args: argparse.Namespace, plan: ForgetResult) -> bool:
    """Whether the user confirms the plan of a query forget: shown on stdout (on stderr under
    ``--json``, whose stdout is the result), then asked on stderr, answered on a terminal;
    without one, refused (``--yes`` confirms in advance)."""
    terminal = sys.stdin is not None and sys.stdin.isatty()
    if getattr(args, "json", False) and terminal:
        _say(_forget_text(plan))
    else:
        out(args, plan.model_dump(mode="json"), _forget_text(plan))
    if not terminal:
        _say("not confirmed: nothing was forgotten (stdin is not a terminal; pass --yes)")
        return False
    _say("forget these? [y/N] ", end="")
    answer = await anyio.to_thread.run_sync(sys.stdin.readline)
    if answer.strip().lower() in {"y", "yes"}:
        return True
    _say("not confirmed: nothing was forgotten")
    return False


async def cmd_forget(args: argparse.Namespace, cfg: Config) -> int:
    """Forget by id at once; by query, show the plan and ask first (``--yes``: don't ask).
    Exit 1 when a query matches nothing or its plan is not confirmed."""
    async with memory_for(args, cfg) as mem:
        if args.query is None:
            result = await mem.forget(
                claim_id=args.claim,
                event_id=args.event,
                session_id=args.session,
                namespace=args.namespace,
                dry_run=args.dry_run,
            )
        else:
            result = await mem.forget(query=args.query, namespace=args.namespace, dry_run=True)
            if result.matched and not args.dry_run:
                if not (args.yes or await _confirmed(args, result)):
                    return 1
                result = await mem.forget(
                    query=args.query, namespace=args.namespace, confirmed=result
                )
    out(args, result.model_dump(mode="json"), _forget_text(result))
    return 1 if result.by == "query" and not result.matched else 0


async def cmd_correct(args: argparse.Namespace, cfg: Config) -> int:
    async with memory_for(args, cfg, drain=args.drain) as mem:
        done = await mem.correct(args.claim_id, args.text)
    when = "now replaces" if args.drain else "will replace (once the pipeline has placed it)"
    out(
        args,
        done.model_dump(mode="json"),
        f"correction recorded (event {done.event_id}): {done.predicate} = {done.value}; claim "
        f"{done.claim_id} {when} claim {done.corrects}",
    )
    return 0


async def cmd_explain(args: argparse.Namespace, cfg: Config) -> int:
    from hlmem.lifecycle import render

    async with memory_for(args, cfg) as mem:
        explanation = await mem.explain(args.id)
    out(args, explanation.model_dump(mode="json"), render(explanation))
    return 0


def _maintenance_text(r: MaintenanceReport) -> str:
    return "\n".join(
        [
            f"maintenance pass: {r.ticks} tick(s)",
            f"  ttl:       {r.ttl.expired} expired (vectors dropped: {r.ttl.vectors_dropped})",
            f"  decay:     {r.decay.decayed} of {r.decay.scanned} active claims decayed",
            f"  archive:   {r.archive.archived} archived "
            f"(vectors dropped: {r.archive.vectors_dropped})",
            f"  dedup:     {r.dedup.merged} merged of {r.dedup.scanned} compared",
            f"  reindex:   {r.reindex.rewritten} full-text rows rewritten of "
            f"{r.reindex.scanned}; observations archived {r.reindex.observations_archived}, "
            f"waiting {r.reindex.observations_waiting}",
            f"  secrets:   {r.reindex.secrets_rewritten} derived rows freed of a secret, of "
            f"{r.reindex.secrets_scanned} scanned",
            f"  hygiene:   {r.hygiene.jobs_purged} done jobs purged, "
            f"{r.hygiene.vector_log_pruned} vector deletions pruned",
        ]
    )


async def cmd_maintain(args: argparse.Namespace, cfg: Config) -> int:
    async with memory_for(args, cfg) as mem:
        report = await mem.maintain()
    out(args, report.model_dump(mode="json"), _maintenance_text(report))
    return 0


async def cmd_export(args: argparse.Namespace, cfg: Config) -> int:
    async with memory_for(args, cfg) as mem:
        done = await mem.export(args.file, namespace=args.namespace, vectors=not args.no_vectors)
    counts = ", ".join(f"{n} {kind}" for kind, n in done.counts.items() if n)
    out(args, done.model_dump(mode="json"), f"exported to {done.path}: {counts or 'nothing'}")
    return 0


async def cmd_import(args: argparse.Namespace, cfg: Config) -> int:
    async with memory_for(args, cfg, drain=args.drain) as mem:
        done = await mem.import_file(args.file)
    lines = [f"imported {done.path}:"] + [
        f"  {kind:<12} imported {c.imported}, duplicate {c.duplicate}, merged {c.merged}, "
        f"refused {c.refused}"
        for kind, c in done.counts.items()
    ]
    if done.reembedding:
        lines.append("  claims are re-embedded with the configured model by the pipeline")
    out(args, done.model_dump(mode="json"), "\n".join(lines))
    return 0


async def cmd_backup(args: argparse.Namespace, cfg: Config) -> int:
    from hlmem.portable import backup

    done = await backup(need_db(args), Path(args.file), cfg=cfg.store)
    out(
        args,
        done.model_dump(mode="json"),
        f"backed up to {done.path}: {done.bytes} bytes, {done.events} events, "
        f"{done.claims} claims, tombstones up to #{done.tombstone_max_id}",
    )
    return 0


async def cmd_restore(args: argparse.Namespace, cfg: Config) -> int:
    from hlmem.clock import SystemClock
    from hlmem.portable import restore

    done = await restore(need_db(args), Path(args.file), cfg=cfg, now=SystemClock().now())
    out(
        args,
        done.model_dump(mode="json"),
        f"restored {done.path} from {done.backup}; re-applied {done.tombstones_reapplied} of "
        f"{done.tombstones_before} tombstone(s): {len(done.claims_forgotten)} claim(s) and "
        f"{len(done.events_forgotten)} event(s) stay forgotten",
    )
    return 0


def add_lifecycle_commands(command: Command) -> None:
    """Add the lifecycle commands to ``hlmem``'s parser, through its ``command`` factory."""
    p = command(
        "forget", cmd_forget, "forget claims and their events for good (tombstones stop replays)"
    )
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--claim", help="this claim")
    which.add_argument("--event", help="this event and every claim resting on it")
    which.add_argument("--session", help="every event of this session and their claims")
    which.add_argument(
        "--query", help="the memories that match this query (shows the plan and asks first)"
    )
    p.add_argument(
        "--namespace", default=None, help="namespace (default: ingest.default_namespace)"
    )
    p.add_argument("--dry-run", action="store_true", help="show what would go; change nothing")
    p.add_argument(
        "--yes",
        action="store_true",
        help="forget a query's matches without asking (a query forget shows its plan and "
        "asks on a terminal; without one it refuses)",
    )
    p = command("correct", cmd_correct, "correct a claim with the user's value or words")
    p.add_argument("claim_id", help="the active claim to correct")
    p.add_argument("text", help='the new value ("北京") or the user\'s words ("其实我住在北京")')
    p.add_argument(
        "--drain", action="store_true", help="run the pipeline here until the correction is placed"
    )
    p = command("explain", cmd_explain, "explain where a memory came from and what changed it")
    explain = p.add_subparsers(dest="explain_cmd", required=True, metavar="WHAT")
    ec = explain.add_parser(
        "claim",
        help="a claim: clocks, evidence and sources, admission, merges, supersessions both "
        "ways, model calls",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    ec.add_argument("id", help="the claim id")
    ec.add_argument("--json", action="store_true", help="machine-readable output")
    command("maintain", cmd_maintain, "run one maintenance pass now (TTL, decay, archive, ...)")
    p = command("export", cmd_export, "export memories to a neutral JSONL file (see README)")
    p.add_argument("file", help="the JSONL file to write (replaced if it exists)")
    p.add_argument("--namespace", default=None, help="only this namespace (default: all)")
    p.add_argument("--no-vectors", action="store_true", help="leave the vectors out")
    p = command(
        "import", cmd_import, "import an export file (dedup; tombstones honoured; idempotent)"
    )
    p.add_argument("file", help="a file written by hlmem export")
    p.add_argument(
        "--drain", action="store_true", help="run the pipeline here until all is placed/embedded"
    )
    p = command("backup", cmd_backup, "consistent online copy of the database (SQLite backup API)")
    p.add_argument("file", help="the new database file to write")
    p = command(
        "restore",
        cmd_restore,
        "replace the database with a backup; what was forgotten since stays forgotten",
    )
    p.add_argument("file", help="a backup written by hlmem backup")
