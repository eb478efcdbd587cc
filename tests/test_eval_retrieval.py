"""The retrieval evaluation (bench/eval_retrieval.py): BM25, metrics, recall shapes, loaders.

No dataset file is needed: the end-to-end case writes a two-conversation file in the LoCoMo
schema to ``tmp_path`` and runs the harness on it with a real hlmem store.
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
import eval_retrieval  # type: ignore[import-not-found, unused-ignore]
from bm25 import BM25  # type: ignore[import-not-found, unused-ignore]

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
    bm25, hl = ds["systems"]["bm25"], ds["systems"]["hlmem"]
    assert bm25["metrics"]["all"]["n"] == hl["metrics"]["all"]["n"] == 4
    assert set(bm25["metrics"]) == {"multi-hop", "single-hop", "temporal", "all"}
    # every question shares a distinctive word with its evidence turn only
    assert bm25["metrics"]["single-hop"]["hit@1"] == 1.0
    assert bm25["metrics"]["all"]["hit@3"] == 1.0
    # every turn was replayed into the store under its dataset id
    assert hl["events"] == 6
    for row in hl["metrics"].values():
        assert all(0.0 <= v <= 1.0 for name, v in row.items() if name != "n")
    assert isinstance(ds["hlmem_above_bm25"], bool)
    assert result["targets"] == {"locomo_hlmem_above_bm25": ds["hlmem_above_bm25"]}
    assert result["k"] == [1, 3, 5, 10]


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
