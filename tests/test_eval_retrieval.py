"""The retrieval evaluation (bench/eval_retrieval.py): BM25, the full-text index's tokens,
metrics and their intervals, recall shapes, loaders, time and isolation.

No dataset file is needed: the end-to-end case writes a two-conversation file in the LoCoMo
schema to ``tmp_path`` and runs the harness on it with a real hlmem store; the time and
isolation cases replay hand-made conversations into real stores.
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import eval_data  # type: ignore[import-not-found, unused-ignore]
import eval_periods  # type: ignore[import-not-found, unused-ignore]
import eval_retrieval  # type: ignore[import-not-found, unused-ignore]
import eval_stats  # type: ignore[import-not-found, unused-ignore]
from bm25 import BM25  # type: ignore[import-not-found, unused-ignore]
from fts_tokens import FtsTokenizer  # type: ignore[import-not-found, unused-ignore]
from helpers import connect_raw, rows

import hlmem
from hlmem import Claim, ClaimStatus, EvidenceSpan, RecallHit
from hlmem.lang import tokens

# --- BM25 -------------------------------------------------------------------------------------

CORPUS = [
    "我喜欢喝乌龙茶，不喜欢咖啡",
    "我在杭州工作，住在西湖区",
    "The cat sat on the mat",
    "The dog chased the cat around the garden, and the cat escaped",
    "I prefer tea over coffee",
    "我每天早上喝咖啡，有时候喝茶",
]


@pytest.fixture(scope="module")
def index() -> BM25:
    return BM25([tokens(doc) for doc in CORPUS])


@pytest.mark.parametrize(
    ("query", "ranking"),
    [
        ("喜欢乌龙茶吗", [0]),
        # same tf, the shorter document first
        ("咖啡", [0, 5]),
        # tf 2 in a longer document beats tf 1 in a short one (saturation with k1 = 1.2)
        ("Where does the cat sit?", [3, 2]),
        ("tea or coffee", [4]),
        ("西湖区在哪里", [1]),
        ("nothing matches", []),
    ],
)
def test_bm25_ranks_a_mixed_corpus(index: BM25, query: str, ranking: list[int]) -> None:
    assert index.top(tokens(query), 10) == ranking


def test_bm25_score_follows_okapi_formula() -> None:
    index = BM25([["a", "b"], ["b", "c", "c"]])
    avgdl = 2.5
    idf_c = math.log(1 + (2 - 1 + 0.5) / (1 + 0.5))
    expected = idf_c * 2 * 2.2 / (2 + 1.2 * (1 - 0.75 + 0.75 * 3 / avgdl))
    scores = index.scores(["c"])
    assert scores.keys() == {1}
    assert scores[1] == pytest.approx(expected)
    # a repeated query term counts each time; ties go to the earlier document
    assert index.scores(["c", "c"])[1] == pytest.approx(2 * expected)
    assert BM25([["x"], ["x"]]).top(["x"], 5) == [0, 1]
    assert BM25([]).top(["x"], 5) == []


# --- metrics ----------------------------------------------------------------------------------


def test_metrics_on_hand_made_cases() -> None:
    m = eval_retrieval.question_metrics(["a", "x", "b", "y"], {"a", "b", "z"}, (1, 3))
    assert m == pytest.approx(
        {"hit@1": 1, "recall@1": 1 / 3, "mrr@1": 1, "hit@3": 1, "recall@3": 2 / 3, "mrr@3": 1}
    )
    m = eval_retrieval.question_metrics(["x", "y", "a"], ["a"], (1, 3, 5))
    assert (m["hit@1"], m["mrr@1"], m["recall@1"]) == (0, 0, 0)
    assert (m["hit@3"], m["recall@3"]) == (1, 1)
    assert m["mrr@3"] == pytest.approx(1 / 3)
    assert m["mrr@5"] == pytest.approx(1 / 3)
    assert set(eval_retrieval.question_metrics([], ["a"], (1, 10)).values()) == {0.0}
    with pytest.raises(ValueError):
        eval_retrieval.question_metrics(["a"], [], (1,))


def test_tally_averages_per_category_and_overall() -> None:
    tally = eval_retrieval.Tally()
    tally.add("temporal", {"hit@1": 1.0})
    tally.add("temporal", {"hit@1": 0.0})
    tally.add("single-hop", {"hit@1": 1.0})
    assert tally.means() == {
        "single-hop": {"n": 1, "hit@1": 1.0},
        "temporal": {"n": 2, "hit@1": 0.5},
        "all": {"n": 3, "hit@1": pytest.approx(2 / 3, abs=1e-4)},
    }


# --- the two shapes of a recall result --------------------------------------------------------


def _claim(claim_id: str, *event_ids: str) -> Claim:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    return Claim(
        id=claim_id,
        namespace="ns",
        subject="user",
        predicate="likes",
        value="tea",
        text="user likes tea",
        status=ClaimStatus.ACTIVE,
        language="en",
        importance=0.5,
        confidence=0.8,
        valid_from=None,
        valid_to=None,
        recorded_at=now,
        evidence=tuple(
            EvidenceSpan(event_id=e, quote="tea", start_char=0, end_char=3) for e in event_ids
        ),
    )


def test_retrieved_event_ids_from_recall_hits() -> None:
    hits = [
        RecallHit(claim=_claim("c1", "e2", "e1"), score=0.9),
        RecallHit(claim=_claim("c2", "e1", "e3"), score=0.5),
        RecallHit(claim=_claim("c3"), score=0.1),
    ]
    assert eval_retrieval.retrieved_event_ids(hits) == ["e2", "e1", "e3"]
    assert eval_retrieval.retrieved_event_ids([]) == []


@dataclass(frozen=True)
class Span:
    event_id: str


@dataclass(frozen=True)
class Item:
    kind: str
    id: str
    evidence: list[Span]
    folded: tuple[str, ...] = ()


@dataclass(frozen=True)
class Result:
    items: list[Item]


def test_retrieved_event_ids_from_items() -> None:
    result = Result(
        items=[
            Item("event", "e5", [], folded=("e9",)),
            Item("claim", "c1", [Span("e2"), Span("e5")]),
            Item("event", "e2", [Span("ignored")]),
            Item("claim", "c2", [Span("e7")]),
        ]
    )
    assert eval_retrieval.retrieved_event_ids(result) == ["e5", "e9", "e2", "e7"]
    assert eval_retrieval.retrieved_event_ids(Result(items=[])) == []


# --- loaders ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1:56 pm on 8 May, 2023", datetime(2023, 5, 8, 13, 56, tzinfo=UTC)),
        ("12:09 am on 13 September, 2023", datetime(2023, 9, 13, 0, 9, tzinfo=UTC)),
        ("12:30 pm on 1 Sept 2023", datetime(2023, 9, 1, 12, 30, tzinfo=UTC)),
        ("10:04 AM on 19 December, 2023", datetime(2023, 12, 19, 10, 4, tzinfo=UTC)),
        ("2023/05/30 (Tue) 23:40", datetime(2023, 5, 30, 23, 40, tzinfo=UTC)),
        ("2023-05-30T23:40:00+02:00", datetime(2023, 5, 30, 21, 40, tzinfo=UTC)),
    ],
)
def test_parse_timestamp(text: str, expected: datetime) -> None:
    parsed = eval_data.parse_timestamp(text)
    assert parsed.tzinfo is not None
    assert parsed == expected


def test_parse_timestamp_chinese_reads_local_time() -> None:
    parsed = eval_data.parse_timestamp("2024年04月01日 周一 08:39", tz=eval_data.CHINA)
    assert parsed.utcoffset() == timedelta(hours=8)
    assert parsed.astimezone(UTC) == datetime(2024, 4, 1, 0, 39, tzinfo=UTC)


@pytest.mark.parametrize("text", ["", "yesterday", "1:56 pm on 8 Maybe, 2023", "2023/02/30 10:00"])
def test_parse_timestamp_refuses_garbage(text: str) -> None:
    with pytest.raises(ValueError):
        eval_data.parse_timestamp(text)


def test_locomo_evidence_normalisation() -> None:
    raw = ["D8:6; D9:17", "D:11:26", "D", "D1:03", "D2:4"]
    assert eval_data.locomo_evidence(raw) == ["D8:6", "D9:17", "D11:26", "D1:3", "D2:4"]


# --- end to end -------------------------------------------------------------------------------


def _session(*turns: tuple[str, str]) -> list[dict[str, Any]]:
    return [{"speaker": s, "text": t} for s, t in turns]


def _sample(sample_id: str, a: str, b: str, sessions: list[list[dict[str, Any]]]) -> Any:
    conv: dict[str, Any] = {"speaker_a": a, "speaker_b": b}
    for n, turns in enumerate(sessions, 1):
        conv[f"session_{n}"] = [t | {"dia_id": f"D{n}:{i}"} for i, t in enumerate(turns, 1)]
        conv[f"session_{n}_date_time"] = f"{n}:15 pm on {n + 2} March, 2024"
    conv["session_9_date_time"] = "1:00 pm on 1 April, 2024"  # a date with no session
    return {"sample_id": sample_id, "conversation": conv, "qa": []}


@pytest.fixture
def locomo_file(tmp_path: Path) -> Path:
    first = _sample(
        "conv-a",
        "Alice",
        "Bob",
        [
            _session(
                ("Alice", "I adopted a puppy named Biscuit last week!"),
                ("Bob", "Congrats! My sister moved to Lisbon in January."),
            ),
            _session(
                ("Alice", "Biscuit chewed my running shoes today."),
                ("Bob", "I started learning the cello."),
            ),
        ],
    )
    first["conversation"]["session_1"][1]["blip_caption"] = "a photo of a tram in Lisbon"
    first["qa"] = [
        {
            "question": "What is the name of Alice's puppy?",
            "answer": "Biscuit",
            "evidence": ["D1:1"],
            "category": 4,
        },
        {
            "question": "Which instrument is Bob learning?",
            "answer": "cello",
            "evidence": ["D:2:02"],
            "category": 4,
        },
        {
            "question": "Where does Bob's sister live?",
            "answer": "Lisbon",
            "evidence": ["D1:2; D7:1"],
            "category": 1,
        },
        {
            "question": "What did Alice's puppy eat?",
            "adversarial_answer": "shoes",
            "evidence": ["D2:1"],
            "category": 5,
        },
        {"question": "Anything?", "answer": "no", "evidence": ["D"], "category": 3},
    ]
    second = _sample(
        "conv-b",
        "Chen",
        "Dana",
        [_session(("Chen", "My favourite tea is oolong."), ("Dana", "I prefer green tea."))],
    )
    second["qa"] = [
        {
            "question": "What tea does Dana prefer?",
            "answer": "green",
            "evidence": ["D1:2"],
            "category": 2,
        },
    ]
    path = tmp_path / "locomo_like.json"
    path.write_text(json.dumps([first, second]), encoding="utf-8")
    return path


def test_load_locomo_quirks(locomo_file: Path) -> None:
    ds = eval_data.load_locomo(locomo_file)
    a, b = ds.conversations
    assert [t.id for t in a.turns] == ["D1:1", "D1:2", "D2:1", "D2:2"]
    assert [t.speaker for t in b.turns] == ["Chen", "Dana"]
    assert a.turns[1].text == "Bob: Congrats! My sister moved to Lisbon in January. " + (
        "[shares a photo of a tram in Lisbon]"
    )
    assert {t.role for t in a.turns} == {"user"}
    assert a.turns[0].at == datetime(2024, 3, 3, 13, 15, tzinfo=UTC)
    assert a.turns[1].at == a.turns[0].at + timedelta(seconds=1)
    assert [(q.category, q.gold) for q in a.questions] == [
        ("single-hop", ("D1:1",)),
        ("single-hop", ("D2:2",)),
        ("multi-hop", ("D1:2",)),
    ]
    assert ds.skipped == {
        "questions_adversarial": 1,
        "questions_without_evidence": 1,
        "evidence_ids_dropped": 2,  # "D7:1" (no such turn) and "D"
    }
    roles = eval_data.load_locomo(locomo_file, roles="a-user", adversarial=True)
    assert [t.role for t in roles.conversations[0].turns[:2]] == ["user", "assistant"]
    assert roles.conversations[0].questions[-1].category == "adversarial"


def test_harness_end_to_end(
    locomo_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--dataset", "locomo", "--data", str(locomo_file), "--workdir", str(tmp_path)]
    assert eval_retrieval.main(argv) == 0
    out = capsys.readouterr().out.strip().splitlines()
    result = json.loads(out[-1])
    assert any(line.startswith("locomo ") and " bm25 " in line for line in out[:-1])
    ds = result["datasets"]["locomo"]
    assert (ds["conversations"], ds["turns"], ds["questions"]) == (2, 6, 4)
    assert set(ds["systems"]) == {"hlmem", "bm25", "bm25-fts"}
    hl = ds["systems"]["hlmem"]
    for system in ds["systems"].values():
        assert system["metrics"]["all"]["n"] == 4
        assert set(system["metrics"]) == set(system["ci95"])
        assert set(system["metrics"]) == {"multi-hop", "single-hop", "temporal", "all"}
        for cat, intervals in system["ci95"].items():
            assert set(intervals) == {"hit@1", "recall@10", "mrr@10"}
            for name, (low, high) in intervals.items():
                assert 0.0 <= low <= system["metrics"][cat][name] <= high <= 1.0
    # every question shares a distinctive word with its evidence turn only
    for baseline in ("bm25", "bm25-fts"):
        assert ds["systems"][baseline]["metrics"]["single-hop"]["hit@1"] == 1.0
        assert ds["systems"][baseline]["metrics"]["all"]["hit@3"] == 1.0
    # every turn was replayed into the store under its dataset id
    assert (hl["events"], hl["failed_jobs"]) == (6, 0)
    for row in hl["metrics"].values():
        assert all(0.0 <= v <= 1.0 for name, v in row.items() if name != "n")
    versus = ds["versus_best_baseline"]
    assert versus["baseline"] in ("bm25", "bm25-fts") and versus["metric"] == "recall@10"
    best = versus["baseline_value"]
    assert best == ds["systems"][versus["baseline"]]["metrics"]["all"]["recall@10"]
    assert best == max(
        ds["systems"][b]["metrics"]["all"]["recall@10"] for b in eval_retrieval.BASELINES
    )
    assert versus["above"] == (hl["metrics"]["all"]["recall@10"] > best)
    assert result["targets"] == {"locomo_hlmem_above_best_baseline": versus["above"]}
    assert result["k"] == [1, 3, 5, 10]
    assert result["meta"]["overrides"]["recall"] == {"record_activation": False}
    assert result["meta"]["bootstrap"]["resamples"] == eval_stats.RESAMPLES
    assert ds["periods"]["questions"] == 4


def test_subset_spreads_single_question_conversations() -> None:
    at = datetime(2026, 1, 1, tzinfo=UTC)
    convs = [
        eval_data.Conversation(
            f"c{i}", (), (eval_data.Question(f"q{i}", "?", "ab"[i % 2], ("t",), at),)
        )
        for i in range(10)
    ]
    picked = eval_retrieval.subset(convs, 4)
    assert [c.id for c in picked] == ["c0", "c4", "c1", "c5"]
    assert eval_retrieval.subset(convs, None) == convs


def test_harness_refuses_a_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--dataset", "memdaily", "--data", str(tmp_path / "nothing.json")]
    assert eval_retrieval.main(argv) == 1
    err = capsys.readouterr().err
    assert "nothing.json" in err and "Traceback" not in err


def test_e5_embedder_is_configured_or_refused_clearly() -> None:
    # Whether this hlmem has the in-process e5 embedder or not, the option says which.
    try:
        cfg = eval_retrieval.eval_config(None, "e5")
    except eval_retrieval.EvalError as exc:
        assert "--embedder e5" in str(exc)
    else:
        assert (cfg.embedder.provider, cfg.embedder.dim) == ("e5", 384)
    local = eval_retrieval.eval_config(None, "local")
    assert local.embedder.provider == "local"
    assert local.recall.record_activation is False
    assert local.maintenance.enabled is False


# --- the full-text index's tokens -------------------------------------------------------------

TEXTS = [
    "I was running to the café; v1.2 is out!",
    "我喜欢喝乌龙茶，不喜欢咖啡",
    "The runners ran; 北京大学 hosted the e-mail workshop",
    "the the the",
]


def test_fts_tokens_stem_and_segment() -> None:
    with FtsTokenizer() as fts:
        assert fts.tokenize == "porter unicode61 remove_diacritics 2 tokenchars '.'"
        english, chinese, _, repeated = fts.event_tokens(TEXTS)
        assert {"run", "cafe", "v1.2"} <= set(english)
        assert {"乌龙", "乌龙茶", "咖啡"} <= set(chinese)
        assert repeated == ["the", "the", "the"]
        assert fts.tokenize_bodies(["", "   "]) == [[], []]
        # the question's terms (stop words out), stemmed as the index stems them
        assert sorted(fts.query_tokens(["Where does the runner run?"])[0]) == [
            "run",
            "runner",
            "where",
        ]
        assert {"喜欢", "茶"} <= set(fts.query_tokens(["我喜欢什么茶"])[0])


@pytest.mark.anyio
async def test_fts_tokens_are_what_the_store_indexes(db_path: Path) -> None:
    cfg = eval_retrieval.eval_config(None, "local")
    async with hlmem.open(db_path, config=cfg) as mem:
        await mem.add_events(
            {"session_id": "s", "role": "user", "content": text, "event_id": f"e{i}"}
            for i, text in enumerate(TEXTS)
        )
        await mem.flush()
        await mem.drain(timeout_s=60)
    conn = connect_raw(db_path)
    try:
        conn.execute("CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, recall_fts, instance)")
        found: dict[str, list[str]] = {}
        sql = (
            "SELECT d.item_id, v.term FROM temp.v AS v JOIN recall_docs AS d ON d.id = v.doc"
            " WHERE d.kind = 'event' AND v.col = 'body'"
        )
        for item_id, term in conn.execute(sql):
            found.setdefault(item_id, []).append(term)
    finally:
        conn.close()
    with FtsTokenizer() as fts:
        expected = fts.event_tokens(TEXTS)
    assert {k: sorted(v) for k, v in found.items()} == {
        f"e{i}": sorted(t) for i, t in enumerate(expected)
    }


# --- bootstrap --------------------------------------------------------------------------------


def test_bootstrap_is_fixed_and_sane() -> None:
    values = [1.0] * 30 + [0.0] * 70
    rows_a = eval_stats.resamples(100, key="ds/all", count=500)
    rows_b = eval_stats.resamples(100, key="ds/all", count=500)
    assert (rows_a == rows_b).all()
    assert not (rows_a == eval_stats.resamples(100, key="ds/other", count=500)).all()
    low, high = eval_stats.interval(values, rows_a)
    assert low < 0.3 < high
    assert 0.15 < high - low < 0.25  # about 4 standard errors of a proportion of 0.3
    assert eval_stats.interval([0.5] * 100, rows_a) == [0.5, 0.5]
    same = eval_stats.paired_difference(values, values, rows_a)
    assert same == {"diff": 0.0, "ci95": [0.0, 0.0]}
    better = eval_stats.paired_difference([1.0] * 100, values, rows_a)
    assert better["diff"] == 0.7 and better["ci95"][0] > 0.5
    with pytest.raises(ValueError):
        eval_stats.resamples(0, key="empty")


# --- time and isolation -----------------------------------------------------------------------

AT = datetime(2023, 3, 1, 9, 0, tzinfo=UTC)


def _turn(turn_id: str, text: str, at: datetime) -> Any:
    return eval_data.Turn(turn_id, f"s-{at.date()}", "user", "user", text, at)


def _trip_conversation() -> Any:
    """Two trips told a year apart, and a question about "last year" asked after both."""
    turns = (
        _turn("t1", "I visited Rome with my sister, a wonderful trip.", AT),
        _turn("t2", "We stayed near the Colosseum.", AT + timedelta(seconds=30)),
        _turn("t3", "I visited Paris with my sister, a wonderful trip.", AT + timedelta(days=400)),
    )
    asked = AT + timedelta(days=420)  # 2024-04-24: "last year" is 2023
    question = eval_data.Question(
        "q1", "Which city did I visit last year?", "temporal", ("t1",), asked
    )
    return eval_data.Conversation("trips", turns, (question,))


def test_replay_batches_follow_time() -> None:
    conv = _trip_conversation()
    batches = eval_retrieval.replay_batches(conv.turns)
    assert [[t.id for t in b] for b in batches] == [["t1", "t2"], ["t3"]]
    recorded = eval_retrieval.recorded_times(conv)
    assert recorded == {"t1": conv.turns[1].at, "t2": conv.turns[1].at, "t3": conv.turns[2].at}
    # LoCoMo gives no question date: asked just after the conversation's end
    undated = eval_data.Conversation(
        conv.id, conv.turns, (eval_data.Question("q", "?", "c", ("t1",)),)
    )
    assert eval_retrieval.asked_at(undated, undated.questions[0]) == (
        conv.turns[-1].at + eval_retrieval.LOCOMO_ASKED_AFTER
    )


@pytest.mark.anyio
async def test_recall_runs_at_the_question_date(tmp_path: Path) -> None:
    conv = _trip_conversation()
    cfg = eval_retrieval.eval_config(None, "local")
    run = await eval_retrieval.run_hlmem([conv], tmp_path / "d.db", cfg, 10)
    # "last year" is 2023 at the question's date: Paris, said in 2024, ranks after Rome
    ranked = run.ranked["q1"]
    assert "trips#t1" in ranked
    assert "trips#t3" not in ranked or ranked.index("trips#t1") < ranked.index("trips#t3")
    # events are recorded when the dataset says they were told (the batch's last turn)
    recorded = dict(rows(tmp_path / "d.db", "SELECT id, recorded_at FROM events"))
    assert recorded["trips#t1"] == recorded["trips#t2"] == "2023-03-01T09:00:30.000000+00:00"
    assert recorded["trips#t3"].startswith("2024-04-04T09:00:00")
    # on the machine's clock "last year" is long after both trips: both are kept
    machine = await eval_retrieval.run_hlmem(
        [conv], tmp_path / "m.db", cfg, 10, clock_kind="machine"
    )
    assert {"trips#t1", "trips#t3"} <= set(machine.ranked["q1"])


def _pets_conversation() -> Any:
    texts = [
        "Alice: my dog Biscuit loves the beach",
        "Bob: I adopted a cat called Mochi",
        "Alice: remember that I prefer green tea",
        "Bob: I prefer coffee in the morning",
        "Alice: Biscuit chewed my running shoes",
        "Bob: Mochi sleeps on my keyboard",
    ]
    turns = tuple(_turn(f"t{i}", t, AT + timedelta(hours=i)) for i, t in enumerate(texts))
    questions = tuple(
        eval_data.Question(f"q{i}", q, "single-hop", (g,), AT + timedelta(days=i))
        for i, (q, g) in enumerate(
            [
                ("What is the name of Alice's dog?", "t0"),
                ("What does Alice prefer to drink?", "t2"),
                ("What does Bob prefer in the morning?", "t3"),
                ("What did Biscuit chew?", "t4"),
                ("Where does Mochi sleep?", "t5"),
            ]
        )
    )
    return eval_data.Conversation("pets", turns, questions)


@pytest.mark.anyio
async def test_no_recall_changes_another(tmp_path: Path) -> None:
    conv = _pets_conversation()
    cfg = eval_retrieval.eval_config(None, "local")
    clock = hlmem.ManualClock(AT)
    async with hlmem.open(tmp_path / "iso.db", config=cfg, clock=clock) as mem:
        await eval_retrieval.replay(mem, clock, conv)
        before = rows(tmp_path / "iso.db", "SELECT id, activation, access_count FROM claims")
        forward, backward = eval_retrieval.SystemRun(), eval_retrieval.SystemRun()
        await eval_retrieval.ask(mem, clock, [conv], 10, forward)
        await eval_retrieval.ask(mem, clock, [conv], 10, backward, order=reversed)
        await eval_retrieval.ask(mem, clock, [conv], 10, forward)  # asked twice: same answers
        await mem.drain(timeout_s=60)
    assert forward.ranked == backward.ranked
    assert all(forward.ranked.values())
    assert rows(tmp_path / "iso.db", "SELECT id, activation, access_count FROM claims") == before


# --- periods ----------------------------------------------------------------------------------


def test_period_cuts_count_gold_said_after_the_period() -> None:
    trips = _trip_conversation()
    retold = eval_data.Conversation(
        "retold",
        trips.turns,
        (
            eval_data.Question(
                "q2",
                "Which city did I visit last year?",
                "temporal",
                ("t3",),
                trips.questions[0].asked_at,
            ),
            eval_data.Question(
                "q3",
                "What did I believe about Rome in March 2023?",
                "belief",
                ("t1", "t3"),
                trips.questions[0].asked_at,
            ),
            eval_data.Question(
                "q4", "Which city did I visit?", "plain", ("t1",), trips.questions[0].asked_at
            ),
        ),
    )
    cuts = eval_periods.count_cuts(
        [trips, retold], asked_at=eval_retrieval.asked_at, recorded=eval_retrieval.recorded_times
    )
    figures = cuts.figures()
    assert figures["questions"] == 4
    period = figures["period"]
    assert (period["questions"], period["gold_turns"], period["gold_turns_after_cut"]) == (2, 2, 1)
    assert cuts.period.some_gold_after == cuts.period.all_gold_after == ["q2"]
    assert period["examples"][0]["time_words"] == "last year"
    belief = figures["belief"]
    assert (belief["questions"], belief["gold_turns"], belief["gold_turns_after_cut"]) == (1, 2, 1)
    assert cuts.belief.some_gold_after == ["q3"] and cuts.belief.all_gold_after == []
