"""The tool commands of the ``hlmem`` command line: quickstart, sim-provider and loadtest, the
commands that run hlmem on a sample, serve a simulated provider, or measure a workload, rather
than work on a memory the user keeps.

:mod:`hlmem.cli.app` owns the entry point, the parser and the helpers used here, and adds these
commands with :func:`add_tool_commands`. Like every command, each is a few lines around one
library call.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

from hlmem.cli.common import Handler, out
from hlmem.config import Config, env_default
from hlmem.pipeline import stop_signals

#: ``command(name, handler, help_text)``: adds a subcommand to ``hlmem``'s parser, returns it
Command = Callable[[str, Handler, str], argparse.ArgumentParser]


async def cmd_quickstart(args: argparse.Namespace, cfg: Config) -> int:
    from tqdm import tqdm

    from hlmem.cli.quickstart import run_quickstart, sample_lines

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
    from pydantic import ValidationError

    from hlmem.errors import ConfigError
    from hlmem.sim import SimProvider, SimSettings

    try:
        fields = {k: v for k, v in vars(args).items() if k in SimSettings.model_fields}
        settings = SimSettings(**fields)
    except ValidationError as exc:
        raise ConfigError(f"sim-provider: {exc}") from None
    async with stop_signals() as stop:  # installed before the URL is announced
        provider = SimProvider(args.host, args.port, settings).start()
        try:
            print(f"sim-provider listening on {provider.base_url}", flush=True)
            await stop.requested.wait()
        finally:
            with anyio.CancelScope(shield=True):  # stopped even when a third signal forces it
                await anyio.to_thread.run_sync(provider.stop)
    stats = provider.stats()
    text = f"sim-provider stopped: {stats.requests} requests, {stats.ok} ok"
    out(args, stats.model_dump(), text)
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
    from hlmem.loadtest import LoadSpec, run_loadtest, write_html
    from hlmem.loadtest import render as render_load

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
    out(args, report.model_dump(mode="json"), render_load(report))
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


def add_tool_commands(command: Command) -> None:
    """Add the tool commands to ``hlmem``'s parser, through its ``command`` factory."""
    command("quickstart", cmd_quickstart, "run a sample conversation through a fresh store")
    _add_sim_provider(
        command("sim-provider", cmd_sim_provider, "serve a simulated OpenAI-compatible provider")
    )
    _add_loadtest(
        command("loadtest", cmd_loadtest, "what N sessions cost and whether the pipeline keeps up")
    )
