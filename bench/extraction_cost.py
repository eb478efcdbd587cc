#!/usr/bin/env python
"""Extraction cost: LLM calls and tokens per event through the whole pipeline.

A multi-session Chinese + English conversation goes through ``hlmem.open`` (inline pipeline)
with ``extractor.kind = "model"`` against the simulated provider (``hlmem.sim.server``, a real
OpenAI-compatible HTTP server on 127.0.0.1 that answers the extraction prompt with the rules
extractor's claims and reports usage like a real provider)::

    .venv/bin/python bench/extraction_cost.py --quick     # about 20 s
    .venv/bin/python bench/extraction_cost.py             # more and longer sessions

Conversations: by default the Chinese dialogues of DuLeMon and the English sessions of LoCoMo
(dev part) from ``../shared/data`` when that folder exists (read at run time, for evaluation;
nothing is copied), interleaved as concurrent sessions, user and assistant turns alike; with
``--source synthetic`` (or without the data) a built-in generator of zh + en turns.

Figures, from the usage ledger (``provider_calls``) and checked against the server's
``/stats``: calls per event, prompt and completion tokens per event, cost per 1,000 events at
``--price-in`` / ``--price-out`` per 1k tokens, claims per event. Targets at steady load: ≤ 0.2
calls per event and ≤ 400 tokens per event. Steady load is what a conversation that goes on
costs: the windows closed because they were full (``steady_*``, from the ledger joined to each
call's window); the other windows are session tails, closed by ``end_session`` with fewer
events, and the all-windows figures (``calls_per_event``, ``tokens_per_event``) include them.
In the same run, the floors those figures are
measured against: one call per full window (1 / windower.max_events calls per event), and the
conversation's own text, which every extraction must send (content tokens per event); the
ratios say how close the pipeline comes. For scale (not measured here): mem0 2.2.1 used as its
docs show spends about 0.51 calls and 4,900 tokens per event on this kind of conversation;
the original HL-Mem 0.2 calls.

Stdout: a table, then one JSON object with every figure on the last line.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import hlmem
from hlmem.config import load_config
from hlmem.gateway import estimate_tokens
from hlmem.sim import SimProvider, SimSettings

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
MAX_CALLS_PER_EVENT = 0.2
MAX_TOKENS_PER_EVENT = 400.0


@dataclass(frozen=True)
class Turn:
    session: str
    role: str
    text: str
    at: datetime


# --- conversations --------------------------------------------------------------------------

_CJK_SPACE = re.compile(r"(?<=[\u3000-\u9fff\uff00-\uffef])\s+(?=[\u3000-\u9fff\uff00-\uffef])")


def dulemon(limit: int, turns: int) -> list[list[Turn]]:
    """DuLeMon's Chinese dialogues (its text is word-segmented: the spaces are removed)."""
    path = DATA / "dulemon" / "samples.json"
    out = []
    start = datetime(2026, 3, 2, 9, tzinfo=UTC)
    with path.open(encoding="utf-8") as lines:
        for n, line in enumerate(lines):
            if len(out) >= limit:
                break
            record = json.loads(line)
            session = f"zh-{n}"
            convo = []
            for i, raw in enumerate(record["conversation"][:turns]):
                speaker, _, text = raw.partition(": ")
                text = _CJK_SPACE.sub("", text.split("\t")[0]).strip()
                role = "user" if speaker == "Usr" else "assistant"
                convo.append(Turn(session, role, text, start + timedelta(minutes=i)))
            out.append(convo)
    return out


def locomo(limit: int, turns: int) -> list[list[Turn]]:
    """LoCoMo's English sessions (dev part): speaker A as the user, B as the assistant."""
    data = json.loads((DATA / "locomo" / "locomo_dev.json").read_text(encoding="utf-8"))
    out = []
    for c, sample in enumerate(data):
        conv = sample["conversation"]
        keys = sorted(
            (k for k in conv if re.fullmatch(r"session_\d+", k)), key=lambda k: int(k[8:])
        )
        for k in keys:
            if len(out) >= limit:
                return out
            a = conv["speaker_a"]
            start = datetime(2026, 3, 2, 9, tzinfo=UTC)
            convo = [
                Turn(
                    f"en-{c}-{k}",
                    "user" if t["speaker"] == a else "assistant",
                    t["text"],
                    start + timedelta(minutes=i),
                )
                for i, t in enumerate(conv[k][:turns])
            ]
            out.append(convo)
    return out


ZH_USER = [
    "我主要用深色模式",
    "最近眼睛不舒服，暂时换成浅色模式",
    "记住：周五前交季度报告",
    "我在杭州工作，住在西湖区",
    "其实5月就搬去北京了",
    "我喜欢喝乌龙茶，不喜欢咖啡",
    "明天下午三点开项目评审会",
    "好的，谢谢",
    "这个问题你怎么看？",
    "我女儿今年上三年级",
]
EN_USER = [
    "I mostly use dark mode.",
    "Remember that the staging cluster moved to eu-west-2.",
    "I work at Acme as a data engineer.",
    "Actually I moved to Berlin in May.",
    "I prefer tea over coffee.",
    "The design review is next Wednesday.",
    "ok thanks",
    "What do you think about that?",
    "My son just started learning the piano.",
    "I don't eat meat anymore.",
]
ZH_BOT = ["好的，记下了。", "明白，还有别的吗？", "听起来不错！", "需要我提醒你吗？"]
EN_BOT = ["Got it.", "Sounds good, anything else?", "Noted!", "Want me to remind you?"]


def synthetic(sessions: int, turns: int, seed: int = 7) -> list[list[Turn]]:
    rng = random.Random(seed)
    out = []
    start = datetime(2026, 3, 2, 9, tzinfo=UTC)
    for s in range(sessions):
        zh = s % 2 == 0
        users, bots = (ZH_USER, ZH_BOT) if zh else (EN_USER, EN_BOT)
        convo = []
        for i in range(turns):
            role = "user" if i % 2 == 0 else "assistant"
            text = rng.choice(users if role == "user" else bots)
            convo.append(
                Turn(f"{'zh' if zh else 'en'}-{s}", role, text, start + timedelta(minutes=i))
            )
        out.append(convo)
    return out


def conversations(source: str, sessions: int, turns: int) -> tuple[str, list[list[Turn]]]:
    if source == "shared" or (source == "auto" and (DATA / "locomo").is_dir()):
        half = sessions // 2
        return "dulemon+locomo", dulemon(half, turns) + locomo(sessions - half, turns)
    return "synthetic", synthetic(sessions, turns)


def interleave(convos: list[list[Turn]]) -> list[Turn]:
    """Round-robin across sessions: many sessions writing at once (blank turns dropped)."""
    convos = [[t for t in c if t.text.strip()] for c in convos]
    out: list[Turn] = []
    for i in range(max(len(c) for c in convos)):
        out.extend(c[i] for c in convos if i < len(c))
    return out


# --- the run --------------------------------------------------------------------------------


def config(base_url: str, price_in: float, price_out: float) -> Any:
    return load_config(
        env={},
        overrides={
            "providers": {
                "sim": {
                    "preset": "sim",
                    "base_url": base_url,
                    "requests_per_minute": 1e6,
                    "tokens_per_minute": 1e9,
                    "max_concurrency": 16,
                }
            },
            "prices": {"sim/*": {"input_per_1k": price_in, "output_per_1k": price_out}},
            "extractor": {"kind": "model", "provider": "sim", "model": "sim-chat"},
            "pipeline": {"extractor": {"workers": 2, "batch_size": 16}},
        },
    )


async def run(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    source, convos = conversations(args.source, args.sessions, args.turns)
    turns = interleave(convos)
    db = workdir / "cost.db"
    with SimProvider(settings=SimSettings(latency_ms=args.latency_ms)) as sim:
        cfg = config(sim.base_url, args.price_in, args.price_out)
        started = time.perf_counter()
        async with hlmem.open(db, config=cfg) as mem:
            await mem.add_events(
                {"session_id": t.session, "role": t.role, "content": t.text, "occurred_at": t.at}
                for t in turns
            )
            for c in convos:
                await mem.end_session(c[0].session)
            await mem.drain(timeout_s=600)
            elapsed = time.perf_counter() - started
            ledger = await mem.store.fetchall("bench_extraction_ledger")
            by_reason = {
                r[0]: [int(v) for v in r[1:]]
                for r in await mem.store.fetchall("bench_extraction_by_close_reason")
            }
            counts = await mem.stats()
        stats = sim.stats()
    calls, prompt, completion, cost = ledger[0]
    calls, prompt, completion, cost = (
        int(calls),
        int(prompt or 0),
        int(completion or 0),
        cost or 0.0,
    )
    events = counts.events
    windows = sum(counts.windows.values())
    full_windows = sum(1 for c in convos for _ in range(len(c) // cfg.windower.max_events))
    content_tokens = sum(estimate_tokens(t.text) for t in turns)
    tokens = prompt + completion
    floor_calls = 1 / cfg.windower.max_events
    # Steady load: windows closed because they were full (a conversation going on). The other
    # windows are session tails (closed by end_session with fewer events).
    _, steady_events, steady_calls, steady_prompt, steady_completion = by_reason.get(
        "size", [0, 0, 0, 0, 0]
    )
    steady_events = max(steady_events, 1)
    steady_cpe = steady_calls / steady_events
    steady_tpe = (steady_prompt + steady_completion) / steady_events
    return {
        "source": source,
        "sessions": len(convos),
        "events": events,
        "windows": windows,
        "full_windows": full_windows,
        "calls": calls,
        "claims": sum(counts.claims.values()),
        "windows_by_close_reason": {
            k: {"windows": v[0], "events": v[1], "calls": v[2]} for k, v in by_reason.items()
        },
        "steady_calls_per_event": round(steady_cpe, 4),
        "steady_tokens_per_event": round(steady_tpe, 1),
        # The simulated model answers with the rules extractor's claims, which are few and
        # short; a real model writes more. Its ceiling: every call using all of max_tokens.
        "steady_worst_case_tokens_per_event": round(
            (steady_prompt + steady_calls * cfg.extractor.max_tokens) / steady_events, 1
        ),
        "calls_per_event": round(calls / events, 4),
        "prompt_tokens_per_event": round(prompt / events, 1),
        "completion_tokens_per_event": round(completion / events, 1),
        "tokens_per_event": round(tokens / events, 1),
        "content_tokens_per_event": round(content_tokens / events, 1),
        "claims_per_event": round(sum(counts.claims.values()) / events, 3),
        "cost_per_1k_events": round(cost / events * 1000, 6),
        "price_per_1k_tokens": {"input": args.price_in, "output": args.price_out},
        "floor_calls_per_event": floor_calls,
        "calls_vs_floor": round((calls / events) / floor_calls, 3),
        "tokens_vs_content": round(tokens / max(content_tokens, 1), 2),
        "ledger_matches_server": (calls, prompt, completion)
        == (stats.ok, stats.prompt_tokens, stats.completion_tokens),
        "server_requests": stats.requests,
        "elapsed_s": round(elapsed, 2),
        "events_per_s": round(events / elapsed, 1),
        "targets": {
            "steady_calls_per_event_le_0_2": steady_cpe <= MAX_CALLS_PER_EVENT,
            "steady_tokens_per_event_le_400": steady_tpe <= MAX_TOKENS_PER_EVENT,
            "steady_worst_case_tokens_per_event_le_400": (
                steady_prompt + steady_calls * cfg.extractor.max_tokens
            )
            / steady_events
            <= MAX_TOKENS_PER_EVENT,
            "all_tokens_per_event_le_400": tokens / events <= MAX_TOKENS_PER_EVENT,
        },
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smaller run (under 60 s)")
    parser.add_argument("--source", choices=["auto", "shared", "synthetic"], default="auto")
    parser.add_argument("--sessions", type=int, default=None)
    parser.add_argument("--turns", type=int, default=None, help="turns per session at most")
    parser.add_argument("--latency-ms", type=float, default=0.0, help="simulated model latency")
    parser.add_argument("--price-in", type=float, default=0.0004, help="per 1k prompt tokens")
    parser.add_argument("--price-out", type=float, default=0.0012, help="per 1k completion tokens")
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args()
    args.sessions = args.sessions or (40 if args.quick else 200)
    args.turns = args.turns or (30 if args.quick else 60)
    import anyio

    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        result = anyio.run(run, args, Path(tmp), backend="asyncio")
    result["meta"] = {
        "quick": args.quick,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    width = max(len(k) for k in result)
    for key, value in result.items():
        if key not in ("meta", "targets", "price_per_1k_tokens", "windows_by_close_reason"):
            print(f"{key:<{width}}  {value}")
    for name, ok in result["targets"].items():
        print(f"{'PASS' if ok else 'FAIL'}  {name}")
    print(json.dumps(result, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
