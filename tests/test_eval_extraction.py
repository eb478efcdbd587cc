"""The extraction evaluation (bench/eval_extraction.py): its scores on hand-made claims, facts and
answers, the LoCoMo observation reader, and one run end to end on a two-trajectory file in
MemDaily's schema (a real store, the rules extractor). No dataset file is read.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import eval_extraction as ee  # type: ignore[import-not-found, unused-ignore]


def claim(
    value: str,
    *events: str,
    status: str = "active",
    subject: str = "user",
    predicate: str = "likes",
    quote: str = "",
    text: str = "",
) -> Any:
    return ee.ClaimView(
        status,
        subject,
        predicate,
        "plan" if predicate == "plan" else "long_term",
        value,
        text or f"User {predicate} {value}",
        events,
        (quote or value,) * len(events),
    )


# --- MemDaily: the answer in a current claim its evidence produced ---------------------------


def test_memdaily_counts_answers_held_by_current_claims_of_the_evidence() -> None:
    claims = [
        claim("华为 Mate 60", "c#1", predicate="uses"),  # spaces and width fold away
        claim("龙湖小区", "c#2", predicate="home"),
        claim("深色模式", "c#3", status="superseded"),  # history: not current
        claim("北京", "c#9", predicate="location"),  # rests on no evidence of the question
        claim("ＯＰＰＯ Find X3。", "c#4"),
    ]
    cases = [
        ee.AnswerCase("simple", "华为Mate60", frozenset({"c#1"})),
        ee.AnswerCase("simple", "阳光小区", frozenset({"c#2"})),  # produced, wrong words
        ee.AnswerCase("simple", "深色模式", frozenset({"c#3"})),
        ee.AnswerCase("noisy", "北京", frozenset({"c#5"})),
        ee.AnswerCase("hybrid", "oppo find x3; 龙湖小区", frozenset({"c#4", "c#2"})),
        ee.AnswerCase("hybrid", "oppo find x3；上海", frozenset({"c#4"})),  # one part missing
    ]
    scores = ee.score_memdaily(cases, claims)
    assert scores["all"] == {
        "questions": 6,
        "answered": 2,
        "answered_share": round(2 / 6, 4),
        "produced": 4,
        "produced_share": round(4 / 6, 4),
    }
    assert (scores["simple"]["questions"], scores["simple"]["answered"]) == (3, 1)
    assert (scores["hybrid"]["answered"], scores["hybrid"]["produced"]) == (1, 2)
    assert scores["noisy"]["produced_share"] == 0.0
    assert ee.answer_parts(" 银行柜员; 北京 ") == ["银行柜员", "北京"]
    assert ee.answer_parts("。") == []


# --- LoCoMo: observations a claim rests on and shares words with -----------------------------


def test_observations_kept_by_a_claim_on_the_turn_they_cite() -> None:
    names = {"conv-1": {"melanie", "caroline"}}
    obs = [
        # kept: "clarinet" and "play", two of five content words (not half)
        ee.Observation(
            "conv-1",
            "session_1",
            "Melanie",
            "Melanie plays the clarinet to relax and express herself.",
            ("D1:2",),
        ),
        # kept by half: pottery, calm of {fan, pottery, calm, big}
        ee.Observation(
            "conv-1",
            "session_1",
            "Melanie",
            "Melanie is a big fan of pottery, calming.",
            ("D1:3", "D1:4"),
        ),
        # rests, but the claim's words are other
        ee.Observation(
            "conv-1", "session_1", "Caroline", "Caroline went to a support group.", ("D1:5",)
        ),
        # no claim on its turn (the claim's words are on another turn)
        ee.Observation("conv-1", "session_2", "Caroline", "Caroline paints sunsets.", ("D2:1",)),
    ]
    claims = {
        "conv-1": [
            claim("clarinet", "conv-1#D1:2", predicate="plays"),
            claim("pottery, so calming", "conv-1#D1:4"),
            claim("tea", "conv-1#D1:5"),
            claim("painting sunsets", "conv-1#D2:9"),
        ]
    }
    scores = ee.score_observations(obs, claims, names)
    assert scores["all"] == {
        "facts": 4,
        "kept": 2,
        "kept_share": 0.5,
        "kept_half": 1,
        "kept_half_share": 0.25,
        "rests": 3,
        "rests_share": 0.75,
    }
    assert scores["conv-1"]["facts"] == 4


def test_content_words_leave_out_names_function_words_and_user() -> None:
    words = ee.content_words(
        "User: Caroline attended the LGBTQ support groups yesterday", {"caroline"}
    )
    assert words == {"attend", "lgbtq", "support", "group", "yesterday"}
    assert ee.content_words("我表哥喜欢钓鱼") >= {"钓鱼"}


def test_observations_are_read_with_their_turns_normalised(tmp_path: Path) -> None:
    path = tmp_path / "locomo.json"
    sample = {
        "sample_id": "conv-9",
        "observation": {
            "session_1_observation": {
                "Jon": [["Jon opens a studio.", ["D1:3", "D:1:05"]], ["Jon dances.", "D"]],
                "Gina": [["Gina sells clothes.", "D1:7"]],
            }
        },
    }
    path.write_text(json.dumps([sample, {**sample, "sample_id": "conv-8"}]), encoding="utf-8")
    got = ee.load_observations(path, {"conv-9"})
    assert [(o.conversation, o.session, o.speaker, o.fact, o.turns) for o in got] == [
        ("conv-9", "session_1", "Jon", "Jon opens a studio.", ("D1:3", "D1:5")),
        ("conv-9", "session_1", "Gina", "Gina sells clothes.", ("D1:7",)),
    ]


# --- precision: other people as the user, habits as plans -----------------------------------


@pytest.mark.parametrize(
    ("c", "third_person", "habit"),
    [
        (claim("钓鱼", "e#1", quote="我表哥阿强特别喜欢钓鱼"), True, False),
        (claim("hiking", "e#1", quote="My little sister loves hiking."), True, False),
        (claim("tea", "e#1", quote="My boss's favourite is tea"), True, False),
        (claim("钓鱼", "e#1", subject="阿强", quote="我表哥阿强特别喜欢钓鱼"), False, False),
        (claim("tea", "e#1", quote="I drink tea with friends."), False, False),
        (claim("去水库", "e#1", predicate="plan", quote="每个周末都去水库"), False, True),
        (claim("gym", "e#1", predicate="plan", quote="Every Monday I go to the gym"), False, True),
        (claim("gym", "e#1", predicate="plan", quote="I'll go to the gym on Monday"), False, False),
        (claim("跑步", "e#1", quote="我每天都跑步"), False, False),  # a habit, not a plan
    ],
)
def test_precision_suspects(c: Any, third_person: bool, habit: bool) -> None:
    assert ee.third_person_as_user(c) is third_person
    assert ee.habit_as_plan(c) is habit


def test_precision_counts_and_shares() -> None:
    claims = [
        claim("钓鱼", "e#1", predicate="plan", quote="我表哥每个周末都去钓鱼"),
        claim("tea", "e#2"),
        claim("深色模式", "e#3", subject="Leo", quote="my son Leo likes dark mode"),
        claim("2026-12-05 dentist", "e#4", predicate="plan", quote="Dentist on Friday."),
    ]
    got = ee.precision(claims)
    assert {k: v for k, v in got.items() if k != "examples"} == {
        "claims": 4,
        "user_claims": 3,
        "plans": 2,
        "third_person_as_user": 1,
        "third_person_share_of_user_claims": round(1 / 3, 4),
        "habit_as_plan": 1,
        "habit_share_of_plans": 0.5,
    }
    assert got["examples"]["habit_as_plan"] == [["User plan 钓鱼", "我表哥每个周末都去钓鱼"]]
    assert ee.precision([])["third_person_share_of_user_claims"] is None


def test_subset_spreads_over_the_dataset() -> None:
    convs = list(range(10))
    assert ee.subset(convs, 3) == [0, 3, 6]
    assert ee.subset(convs, None) is convs
    assert ee.subset(convs, 20) is convs


# --- end to end: a file in MemDaily's schema, a real store -----------------------------------


def test_a_run_on_a_memdaily_file_ends_with_one_json_object(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def trajectory(tid: int, messages: list[str], question: str, answer: str) -> dict[str, Any]:
        return {
            "tid": tid,
            "message_list": [
                {
                    "mid": i,
                    "message": m,
                    "time": f"2024年04月0{tid + 1}日 周一 08:3{i}",
                    "place": "",
                }
                for i, m in enumerate(messages)
            ],
            "question_list": [
                {
                    "qid": 0,
                    "question": question,
                    "answer": answer,
                    "target_step_id": [0],
                    "time": f"2024年04月0{tid + 1}日 周一 09:00",
                }
            ],
        }

    data = tmp_path / "memdaily"
    data.mkdir()
    (data / "01_simple_items.json").write_text(
        json.dumps(
            [
                trajectory(
                    0,
                    ["我住的那个小区叫龙湖小区。", "今天天气不错。"],
                    "我住哪个小区？",
                    "龙湖小区",
                ),
                trajectory(1, ["金融科技论坛的地点是北京。"], "论坛在哪里？", "北京"),
            ],
            ensure_ascii=False,
        ),
        encoding="utf-8",
    )
    code = ee.main(["--dataset", "memdaily", "--data", str(data), "--workdir", str(tmp_path)])
    out = capsys.readouterr().out.strip().splitlines()
    assert code == 0
    result = json.loads(out[-1])
    memdaily = result["datasets"]["memdaily"]
    assert memdaily["run"]["conversations"] == 2
    assert memdaily["answers"]["all"]["questions"] == 2
    assert memdaily["answers"]["all"]["answered"] == 1  # the home; the forum's place: no claim
    assert memdaily["precision"]["claims"] >= 1
    assert any(line.startswith("memdaily") and "1/2" in line for line in out[:-1])
