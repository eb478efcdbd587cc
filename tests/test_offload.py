"""``pipeline.offload``: the extractor's and embedder's CPU work in a helper child process.

Real child processes and real files, nothing mocked: the child's answers are compared with
what the worker thread computes for the same input, and a pipeline that hands its batches to
the child (``offload_min_windows = 1``) must leave exactly the file that one without it leaves,
also when the child is killed with SIGKILL in the middle of the run.
"""

from __future__ import annotations

import itertools
import os
import signal
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest
from helpers import fast_config, python_lines, rows, wait_until

import hlmem
from hlmem.claims import gate, window_worth_extracting
from hlmem.config import Config, PipelineConfig, WindowerConfig
from hlmem.lang import LocalEmbedder, default_lexicon, event_body
from hlmem.memory import Memory
from hlmem.messages import EventsAdded, Job, Role, WindowPiece, WindowText, window_tuple
from hlmem.pipeline import Offloader
from hlmem.rules import RulesExtractor
from hlmem.stages.windower import Windower

pytestmark = pytest.mark.anyio

CHILD_READY_S = 60.0  # interpreter, imports and jieba, on a busy machine


def offload_config(**pipeline: object) -> Config:
    """The first batch starts the child, and every batch goes to it once it is ready."""
    small = {
        "offload_min_windows": 1,
        "offload_min_texts": 1,
        "offload_min_candidates": 1,
        "offload_start_after_texts": 1,
    }
    return fast_config(pipeline={**small, **pipeline}, windower={"max_events": 4})


def offloader(mem: Memory) -> Offloader:
    pipeline = mem._pipeline
    assert pipeline is not None and pipeline.offloader is not None
    return pipeline.offloader


def gone(pid: int) -> bool:
    """The process has exited and been reaped (no zombie left behind)."""
    return not Path(f"/proc/{pid}").exists()


# --- content: zh and en, many sessions, every claim its own ------------------------------------


def event(n: int) -> dict[str, Any]:
    """The n-th event: memory requests, plans, chat, long tool output (chunked), in two
    namespaces and 24 sessions; each claim names n, so no two sessions' claims interact."""
    session = n % 24
    kind = (n // 24) % 6
    role = "user"
    if kind == 0:
        content = f"记住：第{n}号服务器在{n % 9 + 1}楼机房。"
    elif kind == 1:
        content = f"Remember that build {n} of the checkout service is green."
    elif kind == 2:
        content = f"帮我记住一下，下周三下午三点和第{n}组开会讨论预算"
    elif kind == 3:
        role = "assistant"
        content = f"好的，已经记下了第{n}条。 Noted item {n}, thanks!"
    elif kind == 4:
        content = f"Note for later: ticket HL-{n} blocks the v1.{n % 7} release, e-mail Alice."
    else:
        role = "tool"
        content = f"日志 line {n}: 连接超时 timeout after {n} ms; retrying. " * 60
    return {
        "session_id": f"会话-{session}" if session % 2 else f"chat-{session}",
        "namespace": "work" if session % 3 == 0 else None,
        "content": content,
        "role": role,
        "event_id": f"ev-{n:04d}",
        "occurred_at": datetime(2026, 3, 2, 9, tzinfo=UTC) + timedelta(minutes=n),
    }


async def ingest(mem: Memory, numbers: range | list[int]) -> None:
    numbers = list(numbers)
    for start in range(0, len(numbers), 50):
        await mem.add_events([event(n) for n in numbers[start : start + 50]])
    await mem.flush()
    await mem.flush(namespace="work")
    await mem.drain(timeout_s=60)


def dump(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    """What the extractor and embedder derive, without processing times."""
    claims = (
        "id, namespace, subject, predicate, value, text, qualifiers, polarity, scope, importance,"
        " confidence, language, content_hash, slot_key, status, valid_from, valid_to, extractor,"
        " window_id"
    )
    return {
        "extractions": rows(
            db, "SELECT window_id, extractor, model, claim_count FROM extractions ORDER BY 1"
        ),
        "claims": rows(db, f"SELECT {claims} FROM claims ORDER BY id"),
        "evidence": rows(db, "SELECT * FROM evidence ORDER BY claim_id, event_id"),
        "fts": rows(db, "SELECT kind, item_id, namespace, body FROM recall_docs ORDER BY 1, 2"),
        "vectors": rows(
            db,
            "SELECT owner_kind, owner_id, namespace, model_id, model_version, dim, vector"
            " FROM vectors ORDER BY 1, 2",
        ),
        # how many jobs depends on how batches formed; that they all succeeded does not
        "jobs": rows(db, "SELECT DISTINCT kind, status FROM jobs ORDER BY 1, 2"),
    }


async def reference(db: Path, cuts: list[int]) -> dict[str, list[tuple[Any, ...]]]:
    """The same input with ``offload = "off"``, drained at the same ``cuts`` (each flush
    closes the open windows, so it decides the windows)."""
    cfg = offload_config(offload="off")
    async with hlmem.open(db, config=cfg, clock=hlmem.ManualClock()) as mem:
        assert mem._pipeline is not None and mem._pipeline.offloader is None
        for start, stop in itertools.pairwise([0, *cuts]):
            await ingest(mem, range(start, stop))
    return dump(db)


def assert_complete(got: dict[str, list[tuple[Any, ...]]], total: int) -> None:
    assert {status for _, status in got["jobs"]} == {"done"}
    assert len(got["claims"]) > total // 3
    assert {kind for kind, *_ in got["fts"]} == {"claim", "event"}
    assert len([v for v in got["vectors"] if v[0] == "event"]) == total


# --- the child computes what the thread computes ------------------------------------------------


def windows() -> list[WindowText]:
    texts = [
        ("user", "记住：我的猫叫小白。我住在杭州，明天下午三点去体检。"),
        ("assistant", "Remember that I cannot read your email."),
        ("user", "Remember that the prod DB is db-prod-2; I moved to Berlin last March."),
        ("user", "其实不是周三，而是周四和老王开会。 I prefer dark mode in v1.2 of the editor."),
        ("user", "忘了我刚才说的。 Please remember: my manager is Alice Chen."),
    ]
    out = []
    for w in range(6):
        pieces = []
        for i, (role, text) in enumerate(texts[w % 2 :]):
            body = f"{text} ({w}-{i})"
            pieces.append(
                WindowPiece(
                    event_id=f"ev-{w}-{i}",
                    chunk_no=i % 2,
                    chunk_count=2 if i % 2 else 1,
                    start_char=7 * (i % 2),
                    end_char=7 * (i % 2) + len(body),
                    role=Role(role),
                    text=body,
                    occurred_at=datetime(2026, 3, 2, 9, tzinfo=UTC) + timedelta(days=w, hours=i),
                )
            )
        out.append(
            WindowText(
                window_id=f"win-{w}", namespace="default", session_id=f"s{w}", pieces=tuple(pieces)
            )
        )
    return out


def chatter() -> list[WindowText]:
    """Windows of acknowledgements and non-user turns only (zh and en)."""
    at = datetime(2026, 3, 2, 9, tzinfo=UTC)
    turns = [
        [("user", "好的，谢谢"), ("assistant", "记住：明天下午三点开会")],
        [("user", "ok thanks!")],
    ]
    return [
        WindowText(
            window_id=f"win-chat-{w}",
            namespace="default",
            session_id=f"chat-{w}",
            pieces=tuple(
                WindowPiece(
                    event_id=f"ev-chat-{w}-{i}",
                    chunk_no=0,
                    chunk_count=1,
                    start_char=0,
                    end_char=len(text),
                    role=Role(role),
                    text=text,
                    occurred_at=at,
                )
                for i, (role, text) in enumerate(pieces)
            ),
        )
        for w, pieces in enumerate(turns)
    ]


async def test_the_child_computes_exactly_what_the_thread_computes() -> None:
    batch = [*windows(), *chatter()]
    plain = [window_tuple(w) for w in batch]
    texts = [p.text for w in batch for p in w.pieces] + ["", "长" * 3000, "e-mail v1.2 1,000"]
    rules = RulesExtractor(default_lexicon())
    off = Offloader(PipelineConfig(offload_start_after_texts=len(texts) + 1))
    with anyio.fail_after(CHILD_READY_S):
        async with anyio.create_task_group() as tg:
            await tg.start(off.run)
            # no child yet: the caller computes the batch; a second one shows enough volume to
            # start one (in the background)
            assert await off.extract(plain, texts) is None
            await anyio.wait_all_tasks_blocked()
            assert off.starts == 0
            assert await off.extract(plain, texts) is None
            await wait_until(lambda: off.pid is not None, timeout_s=CHILD_READY_S)
            pid = off.pid
            assert pid is not None

            got = await off.extract(plain, texts)
            assert got is not None
            bodies, drafts = got
            assert bodies == [event_body(t) for t in texts]
            # a window of chatter is not worth extracting: no drafts, and no rules run on it
            expected = [
                rules.extract(w)
                if window_worth_extracting((p.role, p.text) for p in w.pieces)
                else None
                for w in batch
            ]
            assert expected[-2:] == [None, None]
            assert sum(len(e or []) for e in expected) >= 10
            assert drafts == expected
            assert [[d.model_dump_json() for d in ds or []] for ds in drafts] == [
                [d.model_dump_json() for d in ds or []] for ds in expected
            ]

            # admission's gate of every draft, and of variants it blocks (a secret in the
            # value, a quote or the text; noise; a bare pronoun): the same verdicts and rules
            flat = [d for ds in expected for d in ds or []]
            variants = [
                flat[0].model_copy(update={"value": "sk-" + "a1B2c3D4" * 4}),
                flat[1].model_copy(update={"text": "我的密码是 password=Hunter2Secret!"}),
                flat[2].model_copy(
                    update={
                        "evidence": (
                            flat[2]
                            .evidence[0]
                            .model_copy(update={"quote": "AKIAIOSFODNN7EXAMPLE"}),
                        )
                    }
                ),
                flat[3].model_copy(update={"value": "好的"}),
                flat[4].model_copy(update={"value": "it", "text": "it"}),
            ]
            verdicts = await off.gate([*flat, *variants])
            assert verdicts == [gate(d) for d in [*flat, *variants]]
            assert {v.decision for v in verdicts} == {"admit", "block"}
            assert {v.rule for v in verdicts[-5:-2]} >= {"secret:password"}

            for dim in (384, 64):
                vectors = await off.embed(texts, dim=dim)
                assert vectors is not None
                assert vectors.shape == (len(texts), dim)
                assert vectors.tobytes() == LocalEmbedder(dim).embed(texts).tobytes()

            # an error answer (no embedder of 4 dimensions): the caller computes it instead
            assert await off.embed(texts, dim=4) is None
            assert off.failures == 1
            assert off.pid == pid  # the child itself is fine
            assert off.served == {"extract": 1, "embed": 2, "gate": 1}
            tg.cancel_scope.cancel()
    assert off.pid is None
    assert pid is not None and gone(pid)


async def test_a_burst_the_windower_sees_starts_the_child() -> None:
    """The windower counts the events of each batch it is given: a batch of at least
    ``offload_min_texts`` events is a burst, and bursts adding up to
    ``offload_start_after_texts`` start the child before any extractor batch asks."""
    cfg = PipelineConfig(offload_min_texts=64, offload_start_after_texts=300)
    off = Offloader(cfg)
    windower = Windower(WindowerConfig(), hlmem.ManualClock(), offloader=off)

    def job(n: int, size: int) -> Job:
        ids = tuple(f"ev-{n}-{i}" for i in range(size))
        return Job(id=n, kind="windower", payload=EventsAdded(event_ids=ids), attempts=0)

    with anyio.fail_after(CHILD_READY_S):
        async with anyio.create_task_group() as tg:
            await tg.start(off.run)
            await windower.prepare([job(1, 40), job(2, 20)])  # 60 events: a trickle
            await windower.prepare([job(3, 63)])
            assert off.demand == 0
            await windower.prepare([job(4, 50), job(5, 50)])  # 100 events in one batch
            assert off.demand == 100
            await anyio.wait_all_tasks_blocked()
            assert off.starts == 0
            await windower.prepare([job(6, 200)])
            assert off.demand == 300
            await wait_until(lambda: off.pid is not None, timeout_s=CHILD_READY_S)
            assert off.starts == 1
            await windower.prepare([job(7, 500)])  # a running child needs no more demand
            assert off.demand == 300
            tg.cancel_scope.cancel()
    assert off.pid is None


# --- the pipeline: same file with and without the child -----------------------------------------


async def test_an_offloaded_pipeline_leaves_the_same_file(tmp_path: Path) -> None:
    total = 360
    expected = await reference(tmp_path / "thread.db", [48, total])
    assert_complete(expected, total)

    db = tmp_path / "child.db"
    async with hlmem.open(db, config=offload_config(), clock=hlmem.ManualClock()) as mem:
        off = offloader(mem)
        await ingest(mem, range(48))  # in the thread: the child starts meanwhile
        await wait_until(lambda: off.pid is not None, timeout_s=CHILD_READY_S)
        await ingest(mem, range(48, total))
        assert off.served["extract"] > 0 and off.served["embed"] > 0
        assert off.failures == 0
    assert dump(db) == expected


async def test_a_child_killed_mid_run_loses_nothing(tmp_path: Path) -> None:
    total = 360
    expected = await reference(tmp_path / "thread.db", [48, 200, 260, total])
    assert_complete(expected, total)

    db = tmp_path / "child.db"
    async with hlmem.open(db, config=offload_config(), clock=hlmem.ManualClock()) as mem:
        off = offloader(mem)
        await ingest(mem, range(48))
        await wait_until(lambda: off.pid is not None, timeout_s=CHILD_READY_S)
        first = off.pid
        assert first is not None
        async with anyio.create_task_group() as tg:
            tg.start_soon(ingest, mem, range(48, 200))
            await wait_until(lambda: off.served["extract"] > 0)
            os.kill(first, signal.SIGKILL)
        # the batch that finds it dead (this one, if not one above) runs in the thread, and
        # the next big batch starts a new child, which takes the rest
        await ingest(mem, range(200, 260))
        await wait_until(lambda: off.pid not in (None, first), timeout_s=CHILD_READY_S)
        assert gone(first)
        served = dict(off.served)
        await ingest(mem, range(260, total))
        assert off.served["extract"] > served["extract"]
        assert (off.starts, off.failures) == (2, 1)
    assert dump(db) == expected


# --- lifecycle ----------------------------------------------------------------------------------


async def test_close_leaves_no_child_behind(db_path: Path) -> None:
    async with hlmem.open(db_path, config=offload_config(), clock=hlmem.ManualClock()) as mem:
        off = offloader(mem)
        await ingest(mem, range(48))
        await wait_until(lambda: off.pid is not None, timeout_s=CHILD_READY_S)
        pid = off.pid
        assert pid is not None and not gone(pid)
        # a close with work in flight: the child is closed after its last batch
        await mem.add_events([event(n) for n in range(48, 120)])
        await mem.flush()
    assert gone(pid)
    assert off.pid is None


async def test_small_batches_never_start_a_child(db_path: Path) -> None:
    cfg = offload_config(offload_min_windows=16, offload_min_texts=64, offload_min_candidates=64)
    async with hlmem.open(db_path, config=cfg, clock=hlmem.ManualClock()) as mem:
        off = offloader(mem)
        # 36 events of 6 sessions: under 16 windows, 64 texts to embed and 64 proposed claims
        # per batch
        await ingest(mem, [n for n in range(144) if n % 24 < 6])
        assert off.starts == 0 and off.pid is None and off.demand == 0
    assert rows(db_path, "SELECT count(*) FROM claims")[0][0] > 0


async def test_a_short_burst_of_big_batches_starts_no_child(db_path: Path) -> None:
    cfg = fast_config(windower={"max_events": 4})
    assert cfg.pipeline.offload == "auto"
    async with hlmem.open(db_path, config=cfg, clock=hlmem.ManualClock()) as mem:
        off = offloader(mem)
        await ingest(mem, range(360))
        assert 0 < off.demand < cfg.pipeline.offload_start_after_texts
        assert off.starts == 0 and off.pid is None
    assert rows(db_path, "SELECT count(*) FROM claims")[0][0] > 0


async def test_a_custom_lexicon_keeps_extraction_in_the_thread(
    db_path: Path, tmp_path: Path
) -> None:
    lexicon = tmp_path / "extra.toml"
    lexicon.write_text(
        '[predicates.rides]\ncardinality = "multi"\ntext = { zh = "用户骑{value}", en = "User'
        ' rides {value}" }\nverbs = { zh = ["骑"], en = ["ride"] }\n',
        encoding="utf-8",
    )
    # embeddings and admission's gate (which no lexicon changes) stay in the thread too
    cfg = offload_config(offload_min_texts=1_000_000, offload_min_candidates=1_000_000)
    cfg = cfg.model_copy(
        update={"extractor": cfg.extractor.model_copy(update={"lexicon_paths": [str(lexicon)]})}
    )
    async with hlmem.open(db_path, config=cfg, clock=hlmem.ManualClock()) as mem:
        off = offloader(mem)
        await ingest(mem, range(48))
        assert off.starts == 0 and off.pid is None
    assert rows(db_path, "SELECT count(*) FROM claims")[0][0] > 0


def test_offload_settings_are_checked() -> None:
    cfg = hlmem.load_config(env={})
    assert (cfg.pipeline.offload, cfg.pipeline.offload_min_windows) == ("auto", 16)
    assert cfg.pipeline.offload_min_texts == 64
    assert cfg.pipeline.offload_min_candidates == 16
    assert cfg.pipeline.offload_start_after_texts == 2000
    env = {"HLMEM_PIPELINE__OFFLOAD": "off"}
    assert hlmem.load_config(env=env).pipeline.offload == "off"
    bad_values: list[dict[str, object]] = [
        {"offload": "always"},
        {"offload_min_windows": 0},
        {"offload_min_texts": -1},
        {"offload_min_candidates": 0},
        {"offload_start_after_texts": -1},
    ]
    for bad in bad_values:
        with pytest.raises(hlmem.ConfigError):
            hlmem.load_config(env={}, overrides={"pipeline": bad})


def test_the_child_skips_pkg_resources_and_jieba_still_opens_its_files() -> None:
    """The child (and the ``hlmem`` program) make ``import pkg_resources`` fail (a scan of
    every installed distribution, ~0.17 s of a start); jieba then opens its own files with a
    plain ``open``."""
    code = (
        "import sys\n"
        "from hlmem.lang.langdata import skip_pkg_resources\n"
        "skip_pkg_resources()\n"
        "import jieba\n"
        "print(sys.modules.get('pkg_resources') is None)\n"
        "print(jieba.get_dict_file().readline().decode('utf-8').strip())\n"
    )
    out = python_lines(code)
    assert out[0] == "True"  # never imported
    word, count, tag = out[1].split()  # the dictionary's first line: word, count, POS tag
    assert word and count.isdigit() and tag.isalpha()
