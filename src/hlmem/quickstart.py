"""``hlmem quickstart``: the whole pipeline on the embedded default, in a temp directory.

A bundled Chinese + English sample conversation goes through ingestion, the windower and the
rule-based extractor (no model, no server, no network); the result holds what was remembered
and a few recalls, which ``cli.py`` prints.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from importlib import resources
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from hlmem.config import Config
from hlmem.jsonl import ingest_jsonl
from hlmem.memory import Stats
from hlmem.memory import open as open_memory
from hlmem.messages import Claim, IngestSummary, RecallHit

QUERIES = (
    "我的猫叫什么名字？",
    "Where does the production database live?",
    "Acme 合同什么时候到期",
)


class QuickstartResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    ingest: IngestSummary
    stats: Stats
    claims: list[Claim]
    recall: dict[str, list[RecallHit]]


def sample_path() -> Path:
    return Path(str(resources.files("hlmem").joinpath("data", "sample_conversation.jsonl")))


def sample_lines() -> int:
    return len(sample_path().read_bytes().splitlines())


async def run_quickstart(
    cfg: Config, *, progress: Callable[[int], None] | None = None
) -> QuickstartResult:
    """Ingest the sample into a fresh temporary store, drain, and recall."""
    with tempfile.TemporaryDirectory(prefix="hlmem-quickstart-") as tmp:
        async with open_memory(Path(tmp) / "memory.db", config=cfg) as mem:
            summary = await ingest_jsonl(mem, sample_path(), progress=progress)
            await mem.flush()
            await mem.drain(timeout_s=60)
            return QuickstartResult(
                ingest=summary,
                stats=await mem.stats(),
                # in conversation order: by when the evidence was said
                claims=sorted(
                    await mem.claims(), key=lambda c: (c.valid_from is None, c.valid_from, c.id)
                ),
                recall={q: await mem.recall(q, k=3) for q in QUERIES},
            )
