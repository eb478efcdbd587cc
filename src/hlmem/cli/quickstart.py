"""``hlmem quickstart``: the whole pipeline on the embedded default, in a temp directory.

A bundled Chinese + English sample conversation goes through the whole write pipeline on the
embedded default (rules extractor, local embedder: no model, no server, no network); the result
holds what was remembered, what the memory changed its mind about and why, how many events were
kept out as untrusted, and a few recalls, which ``cli.py`` prints.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from importlib import resources
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from hlmem.config import Config
from hlmem.memory import Stats, ingest_jsonl
from hlmem.memory import open as open_memory
from hlmem.messages import Claim, IngestSummary, RecallResult

QUERIES = (
    "我的猫叫什么名字？",
    "我现在偏好什么界面主题？",
    "Where does the production database live?",
    "Acme 合同什么时候到期",
)


class Change(BaseModel):
    """A belief the memory changed: what it was, what it is, and why."""

    model_config = ConfigDict(frozen=True)

    old: Claim
    new: Claim
    reason: str


class QuickstartResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    ingest: IngestSummary
    stats: Stats
    claims: list[Claim]
    changes: list[Change]
    #: events stored but never extracted: their source is untrusted (provenance enforce)
    untrusted_events: int
    recall: dict[str, RecallResult]


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
            history = {c.id: c for c in await mem.claims(history=True)}
            changes = [
                Change(old=history[s.old], new=history[s.new], reason=s.reason)
                for s in await mem.supersessions(history)
                if s.old in history and s.new in history
            ]
            events = await mem.events(include_untrusted=True, limit=1000)
            return QuickstartResult(
                ingest=summary,
                stats=await mem.stats(),
                # in conversation order: by when the evidence was said
                claims=sorted(
                    await mem.claims(), key=lambda c: (c.valid_from is None, c.valid_from, c.id)
                ),
                changes=changes,
                untrusted_events=sum(not e.trusted for e in events),
                recall={q: await mem.recall(q, k=3) for q in QUERIES},
            )
