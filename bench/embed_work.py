#!/usr/bin/env python
"""Embedder work by ``embedder.events`` setting: texts and e5 tokens per event, what e5 sustains.

Plain script over real files::

    .venv/bin/python bench/embed_work.py --quick    # subsets, < 60 s
    .venv/bin/python bench/embed_work.py            # every dev conversation (a few minutes)

Each dataset (LoCoMo, MemDaily and the LongMemEval oracle dev files from ``../shared/data``, read
at run time by ``bench/eval_data.py``, and the ingest bench's ``ContentPool``) is replayed into a
fresh store on the embedded default (rules extractor, local embedder, ``events = "all"``) and
drained. From what the store then holds, the texts each setting would embed follow exactly: every
claim's text, and the events' (secrets left out, cut to ``event_max_chars``): ``all`` at 2000,
512 and 256 characters, ``uncovered`` (the events no claim rests on, at 2000) and ``none``.
Per setting: vectors per event and multilingual-e5-small tokens per event (the model's own
count). Then e5 (one thread, as the stage runs it) embeds a sample of each setting's texts in
batches of 32 for a time budget (8 s, at most 400 texts; ``--quick``: one batch of 16): CPU ms
per token (a longer text costs more per token), and so the events per second of one core that
setting sustains, CPU-bound. The local embedder embeds the same sample as the same-run baseline.
``--quick`` replays 1 LoCoMo conversation, 50 MemDaily trajectories, 8 LongMemEval oracle
haystacks and 300 pool events.

Stdout: a table, then one JSON object on the last line. Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import eval_data
from eval_data import Conversation
from ingest import ContentPool

import hlmem
from hlmem.lang import E5Embedder, LocalEmbedder, scrub
from hlmem.store import sqlite_module

SETTINGS = {  # name -> (events, event_max_chars)
    "all@2000": ("all", 2000),
    "all@512": ("all", 512),
    "all@256": ("all", 256),
    "uncovered@2000": ("uncovered", 2000),
    "none": ("none", 2000),
}
QUICK = {"locomo": 1, "memdaily": 50, "longmemeval": 8, "pool": 300}
FULL = {"locomo": None, "memdaily": None, "longmemeval": None, "pool": 4000}


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


async def replay(db: Path, convs: list[Conversation]) -> None:
    cfg = hlmem.load_config(env={}, overrides={"maintenance": {"enabled": False}})
    async with hlmem.open(db, config=cfg) as mem:
        for conv in convs:
            await mem.add_events(eval_data.as_events(conv))
        await mem.flush()
        await mem.drain()


async def replay_pool(db: Path, n: int) -> None:
    pool = ContentPool(seed=7)
    async with hlmem.open(db, config=hlmem.load_config(env={})) as mem:
        sessions = 50
        for k in range(n // sessions):
            for i in range(sessions):
                role, content, _ = pool.event(i, k)
                await mem.add_event(f"pool-{i}", content, role=role)
        await mem.flush()
        await mem.drain()


def texts_by_setting(db: Path) -> tuple[int, dict[str, list[str]]]:
    """(events, texts each setting embeds)."""
    conn = sqlite_module("auto").connect(str(db))
    try:
        events = conn.execute(
            "SELECT e.id, e.content FROM events e JOIN recall_docs d"
            " ON d.kind = 'event' AND d.item_id = e.id"
        ).fetchall()
        cited = {r[0] for r in conn.execute("SELECT DISTINCT event_id FROM evidence")}
        claims = [
            r[0]
            for r in conn.execute(
                "SELECT text FROM claims WHERE status IN ('active', 'superseded')"
            )
        ]
    finally:
        conn.close()
    scrubbed = {eid: scrub(content) for eid, content in events}
    out = {}
    for name, (mode, chars) in SETTINGS.items():
        chosen = {
            "all": scrubbed,
            "uncovered": {e: t for e, t in scrubbed.items() if e not in cited},
        }
        texts = [t[:chars] for t in chosen.get(mode, {}).values()]
        out[name] = texts + [scrub(c) for c in claims]
    return len(events), out


def cost(model: E5Embedder, texts: list[str], budget_s: float, most: int) -> dict[str, float]:
    """CPU ms per token embedding a sample of ``texts`` in batches of 32 (one thread), until
    ``budget_s`` has passed or ``most`` texts are done."""
    sample = random.Random(7).sample(texts, min(len(texts), most))
    tokens = done = 0
    c0, w0 = time.process_time(), time.perf_counter()
    for start in range(0, len(sample), 32):
        batch = sample[start : start + 32]
        model.embed(batch)
        tokens += sum(model._model.token_count(t) for t in batch)
        done += len(batch)
        if time.perf_counter() - w0 >= budget_s:
            break
    cpu = time.process_time() - c0
    return {"texts": done, "tokens": tokens, "cpu_ms_per_token": round(cpu / tokens * 1000, 3)}


def local_cost(texts: list[str], most: int) -> float:
    sample = random.Random(7).sample(texts, min(len(texts), most))
    local = LocalEmbedder()
    c0 = time.process_time()
    local.embed(sample)
    return round((time.process_time() - c0) / len(sample) * 1000, 4)


def load(name: str, limit: int | None) -> list[Conversation]:
    if name == "locomo":
        convs = list(eval_data.load_locomo().conversations)
    elif name == "memdaily":
        convs = list(eval_data.load_memdaily().conversations)
    else:
        oracle = eval_data.DATA / "longmemeval" / "longmemeval_oracle.dev.json.gz"
        convs = list(eval_data.load_longmemeval(oracle).conversations)
    return convs[:limit] if limit else convs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="subsets: under a minute")
    args = parser.parse_args(argv)
    limits = QUICK if args.quick else FULL
    budget_s, most = (0.5, 16) if args.quick else (8.0, 400)
    model = E5Embedder(threads=1)
    workdir = Path(tempfile.mkdtemp(prefix="hlmem-embed-work-"))
    result: dict[str, Any] = {"meta": {"mode": "quick" if args.quick else "full"}, "datasets": {}}
    try:
        for name, limit in limits.items():
            log(f"{name}: replaying")
            db = workdir / f"{name}.db"
            if name == "pool":
                asyncio.run(replay_pool(db, limit or 0))
            else:
                asyncio.run(replay(db, load(name, limit)))
            events, texts = texts_by_setting(db)
            log(f"{name}: {events} events; e5 on samples")
            rows = {}
            for setting, chosen in texts.items():
                tokens = sum(model._model.token_count(t) for t in chosen)
                row: dict[str, Any] = {
                    "vectors_per_event": round(len(chosen) / events, 3),
                    "tokens_per_event": round(tokens / events, 1),
                }
                if chosen:
                    row["e5"] = cost(model, chosen, budget_s, most)
                    per_event_s = row["tokens_per_event"] * row["e5"]["cpu_ms_per_token"] / 1000
                    row["e5_events_per_cpu_s"] = round(1 / per_event_s, 2) if per_event_s else None
                    row["local_cpu_ms_per_text"] = local_cost(chosen, most)
                rows[setting] = row
            result["datasets"][name] = {"events": events} | rows
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(
        f"{'dataset':<12} {'setting':<15} {'vec/event':>9} {'tok/event':>9} {'ms/token':>9} "
        f"{'e5 events/CPU s':>15} {'local ms/text':>13}"
    )
    for name, ds in result["datasets"].items():
        for setting in SETTINGS:
            r = ds[setting]
            e5 = r.get("e5", {})
            print(
                f"{name:<12} {setting:<15} {r['vectors_per_event']:>9} {r['tokens_per_event']:>9} "
                f"{e5.get('cpu_ms_per_token', '-')!s:>9} {r.get('e5_events_per_cpu_s', '-')!s:>15} "
                f"{r.get('local_cpu_ms_per_text', '-')!s:>13}"
            )
    print(json.dumps(result, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
