"""``hlmem quickstart``: the whole pipeline on the embedded default, in a temp directory.

A bundled Chinese + English sample conversation goes through ingestion, the windower and the
rule-based extractor (no model, no server, no network); then it prints what was remembered and
a few recalls.
"""

from __future__ import annotations

import json
import sys
import tempfile
from importlib import resources
from pathlib import Path

from tqdm import tqdm

from hlmem.config import Config
from hlmem.jsonl import ingest_jsonl
from hlmem.memory import open as open_memory

QUERIES = ("我的猫叫什么名字？", "Where does the production database live?", "Acme 合同什么时候到期")


def sample_path() -> Path:
    return Path(str(resources.files("hlmem").joinpath("data", "sample_conversation.jsonl")))


async def run_quickstart(cfg: Config, *, as_json: bool = False) -> int:
    sample = sample_path()
    lines = sum(1 for _ in sample.open("rb"))
    with tempfile.TemporaryDirectory(prefix="hlmem-quickstart-") as tmp:
        db = Path(tmp) / "memory.db"
        async with open_memory(db, config=cfg) as mem:
            with tqdm(total=lines, desc="ingest", unit="event", file=sys.stderr, disable=as_json) as bar:
                summary = await ingest_jsonl(mem, sample, progress=bar.update)
            await mem.flush()
            await mem.drain(timeout_s=60)
            stats = await mem.stats()
            claims = await mem.claims()
            recalls = {q: await mem.recall(q, k=3) for q in QUERIES}
    if as_json:
        print(
            json.dumps(
                {
                    "ingest": summary.model_dump(),
                    "stats": stats.model_dump(),
                    "claims": [c.model_dump(mode="json") for c in claims],
                    "recall": {q: [h.model_dump(mode="json") for h in hs] for q, hs in recalls.items()},
                },
                ensure_ascii=False,
                indent=2,
            )
        )
        return 0
    print(f"\ningested {summary.accepted} events from {stats.sessions} sessions into {stats.windows.get('closed', 0)} windows")
    print(f"remembered {len(claims)} claims:")
    for claim in reversed(claims):
        quote = claim.evidence[0].quote if claim.evidence else ""
        print(f"  - {claim.text}    [evidence: “{quote}”]")
    for query, hits in recalls.items():
        print(f"\nrecall: {query}")
        for hit in hits:
            print(f"  {hit.score:.2f}  {hit.claim.text}")
        if not hits:
            print("  (nothing)")
    return 0
