"""Loaders for the retrieval evaluation: LoCoMo, LongMemEval and MemDaily in one typed shape.

Each loader reads one dataset file (or, for MemDaily, a folder of files) at run time and returns
a :class:`Dataset`: conversations whose turns are in replay (time) order, each with the
questions asked about it and the gold evidence as turn ids of that conversation. The data stay
where they are (``../shared/data``, evaluation only): nothing here copies them anywhere.

The quirks of each dataset are handled as its README says (``/work/shared/data/*/README.md``);
what a loader leaves out is counted in :attr:`Dataset.skipped`, so a report can say so.
"""

from __future__ import annotations

import gzip
import json
import lzma
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from pathlib import Path
from typing import Any, Literal

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
DEFAULT_PATHS = {
    "locomo": DATA / "locomo" / "locomo_dev.json",
    "longmemeval": DATA / "longmemeval" / "longmemeval_s_cleaned.dev.json.xz",
    "memdaily": DATA / "memdaily" / "messages_and_QAs_dev",
}
#: MemDaily is Chinese daily life (places like 广东深圳); its clock times are read as UTC+8.
CHINA = timezone(timedelta(hours=8), "UTC+08:00")

Role = Literal["user", "assistant"]


@dataclass(frozen=True)
class Turn:
    id: str  # the dataset's own id for the turn, unique within its conversation
    session: str
    speaker: str
    role: Role
    text: str
    at: datetime  # timezone-aware


@dataclass(frozen=True)
class Question:
    id: str
    text: str
    category: str
    gold: tuple[str, ...]  # ids of evidence turns of the same conversation; never empty
    asked_at: datetime | None = None
    answer: str = ""  # the dataset's answer, as written (LoCoMo: empty for category 5)


@dataclass(frozen=True)
class Conversation:
    id: str
    turns: tuple[Turn, ...]  # in replay order: by time, then as the dataset lists them
    questions: tuple[Question, ...]


@dataclass(frozen=True)
class Dataset:
    name: str
    source: Path
    conversations: tuple[Conversation, ...]
    #: what the loader left out, by reason (questions, evidence ids, turns)
    skipped: dict[str, int] = field(default_factory=dict)


# --- timestamps -------------------------------------------------------------------------------

_MONTHS = {
    name: i
    for i, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
# LoCoMo: "1:56 pm on 8 May, 2023"
_LOCOMO_TIME = re.compile(
    r"(\d{1,2}):(\d{2})\s*([ap])\.?\s*m\.?\s+on\s+(\d{1,2})\s+([a-z]+)\.?,?\s+(\d{4})", re.I
)
# LongMemEval: "2023/05/30 (Tue) 23:40"
_LME_TIME = re.compile(r"(\d{4})/(\d{1,2})/(\d{1,2})\s*(?:\(\w+\))?\s*(\d{1,2}):(\d{2})")
# MemDaily: "2024年04月01日 周一 08:39"
_ZH_TIME = re.compile(
    r"(\d{4})\s*年\s*(\d{1,2})\s*月\s*(\d{1,2})\s*[日号]\s*(?:(?:周|星期)[一二三四五六日天])?\s*"
    r"(\d{1,2})[:：](\d{2})"
)


def parse_timestamp(text: str, *, tz: tzinfo = UTC) -> datetime:
    """An aware datetime from any of the three datasets' formats (or ISO 8601).

    Naive times are read in ``tz``. The weekday some formats carry is ignored.

    :raises ValueError: the text matches no known format, or names an impossible date.
    """
    s = " ".join(text.split())
    if m := _LOCOMO_TIME.fullmatch(s):
        hour, minute, half, day, month_name, year = m.groups()
        month = _MONTHS.get(month_name.lower())
        if month is None:
            raise ValueError(f"unknown month in timestamp {text!r}")
        h = int(hour) % 12 + (12 if half.lower() == "p" else 0)
        return datetime(int(year), month, int(day), h, int(minute), tzinfo=tz)
    if m := _LME_TIME.fullmatch(s) or _ZH_TIME.fullmatch(s):
        year, month, day, hour, minute = (int(g) for g in m.groups())
        return datetime(year, month, day, hour, minute, tzinfo=tz)
    try:
        parsed = datetime.fromisoformat(s)
    except ValueError:
        raise ValueError(f"unrecognised timestamp {text!r}") from None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=tz)


def _replay_order(turns: list[Turn]) -> tuple[Turn, ...]:
    # sorted() is stable: turns with equal times keep the dataset's order.
    return tuple(sorted(turns, key=lambda t: t.at))


def _read_json(path: Path) -> Any:
    raw = path.read_bytes()
    if path.suffix == ".gz":
        raw = gzip.decompress(raw)
    elif path.suffix == ".xz":
        raw = lzma.decompress(raw)
    return json.loads(raw)


# --- LoCoMo -----------------------------------------------------------------------------------

#: The JSON's category numbers, named as in the official evaluation code (see the README: the
#: numbering does not follow the order of the paper's list).
LOCOMO_CATEGORIES = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}
_SESSION_KEY = re.compile(r"session_(\d+)")
_DIA_ID = re.compile(r"D:?(\d+):0*(\d+)")


def locomo_evidence(raw: list[str]) -> list[str]:
    """Normalise LoCoMo evidence strings to ``D<n>:<i>`` ids (the README's rules).

    Splits on ``;`` and whitespace, removes the stray ``:`` after ``D`` (``D:11:26``) and leading
    zeros in the turn index. Pieces that are no id at all (``"D"``) are dropped here; ids of
    turns that do not exist are dropped by the caller, which knows the turns.
    """
    return [f"D{int(m[1])}:{int(m[2])}" for p in _pieces(raw) if (m := _DIA_ID.fullmatch(p))]


def _pieces(raw: list[str]) -> list[str]:
    return [p for item in raw for p in re.split(r"[;\s]+", item) if p]


def _locomo_content(turn: dict[str, Any]) -> str:
    text = str(turn.get("text", "")).strip()
    caption = str(turn.get("blip_caption") or "").strip()
    # The image itself is not in the data; its caption is what a text-only memory can keep.
    return f"{text} [shares {caption}]".strip() if caption else text


def load_locomo(
    path: Path = DEFAULT_PATHS["locomo"],
    *,
    adversarial: bool = False,
    roles: Literal["both-user", "a-user"] = "both-user",
) -> Dataset:
    """LoCoMo (``locomo10.json`` schema): one conversation per sample.

    Turns: ``dia_id`` as the id, ``session_<n>`` as the session, the text prefixed with the
    speaker's name (both speakers are people the questions ask about, so the memory must know
    who said what) and, for a shared image, its ``blip_caption``. A turn's time is its
    session's ``session_<n>_date_time`` (date keys without a session are ignored) plus one second
    per turn index, which keeps the order within a session. ``roles``: both speakers as
    ``user`` (default), or speaker A as ``user`` and speaker B as ``assistant``.
    Questions: category 5 (adversarial: the right answer is "not mentioned") is left out unless
    ``adversarial``; evidence is normalised by :func:`locomo_evidence`, and ids of turns that do
    not exist are dropped; questions left with no evidence are skipped.

    :raises ValueError: a session without a parseable date.
    """
    skipped: Counter[str] = Counter()
    conversations = []
    for sample in _read_json(path):
        conv = sample["conversation"]
        speaker_a = conv["speaker_a"]
        numbers = sorted(int(m[1]) for k in conv if (m := _SESSION_KEY.fullmatch(k)))
        turns = []
        for n in numbers:
            when = conv.get(f"session_{n}_date_time")
            if not when:
                raise ValueError(f"{sample['sample_id']}: session_{n} has no date_time")
            start = parse_timestamp(when)
            for i, t in enumerate(conv[f"session_{n}"]):
                text = _locomo_content(t)
                if not text:
                    skipped["blank_turns"] += 1
                    continue
                role: Role = (
                    "user" if roles == "both-user" or t["speaker"] == speaker_a else ("assistant")
                )
                turns.append(
                    Turn(
                        id=str(t["dia_id"]),
                        session=f"session_{n}",
                        speaker=str(t["speaker"]),
                        role=role,
                        text=f"{t['speaker']}: {text}",
                        at=start + timedelta(seconds=i),
                    )
                )
        known = {t.id for t in turns}
        questions = []
        for q_index, qa in enumerate(sample["qa"]):
            category = LOCOMO_CATEGORIES.get(int(qa["category"]), f"category-{qa['category']}")
            if category == "adversarial" and not adversarial:
                skipped["questions_adversarial"] += 1
                continue
            raw = [str(e) for e in qa.get("evidence", [])]
            kept = [i for i in locomo_evidence(raw) if i in known]
            skipped["evidence_ids_dropped"] += len(_pieces(raw)) - len(kept)
            gold = tuple(dict.fromkeys(kept))
            if not gold:
                skipped["questions_without_evidence"] += 1
                continue
            questions.append(
                Question(
                    id=f"{sample['sample_id']}#q{q_index}",
                    text=str(qa["question"]),
                    category=category,
                    gold=gold,
                    answer=str(qa.get("answer", "")),
                )
            )
        conversations.append(
            Conversation(str(sample["sample_id"]), _replay_order(turns), tuple(questions))
        )
    return Dataset("locomo", path, tuple(conversations), dict(+skipped))


# --- LongMemEval ------------------------------------------------------------------------------


def load_longmemeval(
    path: Path = DEFAULT_PATHS["longmemeval"], *, abstention: bool = False
) -> Dataset:
    """LongMemEval (S, M or oracle file; ``.json``, ``.json.gz`` or ``.json.xz``).

    One conversation per question: its haystack sessions, sorted by ``haystack_dates`` (the S
    file is mostly but not entirely sorted; oracle is not). A turn's id is
    ``<session id>#<index in session>``; a session id that occurs twice in one haystack (a few
    filler sessions do) gets ``@2`` on its second copy. A turn's time is its session's date plus
    one second per turn index. Gold: the turns marked ``has_answer`` (turn-level evidence).
    Abstention questions (``_abs``) are left out unless ``abstention`` (then in their own
    category, ``abstention``), as is any question with no ``has_answer`` turn.
    ``question_date`` becomes :attr:`Question.asked_at`.
    """
    skipped: Counter[str] = Counter()
    conversations = []
    for item in _read_json(path):
        qid = str(item["question_id"])
        seen: Counter[str] = Counter()
        turns: list[Turn] = []
        gold: list[str] = []
        sessions = zip(
            item["haystack_session_ids"],
            item["haystack_dates"],
            item["haystack_sessions"],
            strict=True,
        )
        for sid, date, session in sessions:
            seen[sid] += 1
            session_id = sid if seen[sid] == 1 else f"{sid}@{seen[sid]}"
            start = parse_timestamp(date)
            for i, t in enumerate(session):
                tid = f"{session_id}#{i}"
                if t.get("has_answer"):
                    gold.append(tid)
                if not str(t["content"]).strip():
                    skipped["blank_turns"] += 1
                    continue
                role: Role = "assistant" if t["role"] == "assistant" else "user"
                turns.append(
                    Turn(
                        tid, session_id, role, role, str(t["content"]), start + timedelta(seconds=i)
                    )
                )
        is_abs = qid.endswith("_abs")
        questions: tuple[Question, ...] = ()
        if is_abs and not abstention:
            skipped["questions_abstention"] += 1
        elif not gold:
            skipped["questions_without_evidence"] += 1
        else:
            questions = (
                Question(
                    id=qid,
                    text=str(item["question"]),
                    category="abstention" if is_abs else str(item["question_type"]),
                    gold=tuple(gold),
                    asked_at=parse_timestamp(str(item["question_date"])),
                    answer=str(item.get("answer", "")),
                ),
            )
        conversations.append(Conversation(qid, _replay_order(turns), questions))
    return Dataset("longmemeval", path, tuple(conversations), dict(+skipped))


# --- MemDaily ---------------------------------------------------------------------------------

_MEMDAILY_FILE = re.compile(r"\d+_(.+)_(roles|events|items|places|hybrid)")


def load_memdaily(path: Path = DEFAULT_PATHS["memdaily"]) -> Dataset:
    """MemDaily (MemSim ``messages_and_QAs`` schema): a folder of ``NN_<type>_<scenario>.json``
    files, or one such file.

    One conversation per trajectory, id ``<file stem>#<tid>``; a message's id is its ``mid``, so
    ``<file stem>#<tid>#<mid>`` is the README's provenance id. Every message is the user's; the
    data has no sessions, so each calendar day's messages form one. Times (``2024年04月01日
    周一 08:39``) are read as UTC+8. The category is the question type from the file name
    (simple, conditional, comparative, aggregative, post_processing, noisy). As upstream's
    ``post_process.py`` does, a trajectory whose question is ``[ERRORQ]`` or answer ``[ERRORA]``
    is dropped. Gold: ``target_step_id``; ids of messages that do not exist are dropped.
    """
    files = sorted(path.glob("*.json")) if path.is_dir() else [path]
    skipped: Counter[str] = Counter()
    conversations = []
    for file in files:
        m = _MEMDAILY_FILE.fullmatch(file.stem)
        category = m[1] if m else "unknown"
        for trajectory in _read_json(file):
            conv_id = f"{file.stem}#{trajectory['tid']}"
            qas = trajectory["question_list"]
            if any(qa["question"] == "[ERRORQ]" or qa["answer"] == "[ERRORA]" for qa in qas):
                skipped["trajectories_error_filtered"] += 1
                continue
            turns = []
            for msg in trajectory["message_list"]:
                text = str(msg["message"]).strip()
                if not text:
                    skipped["blank_turns"] += 1
                    continue
                at = parse_timestamp(str(msg["time"]), tz=CHINA)
                turns.append(Turn(str(msg["mid"]), at.date().isoformat(), "user", "user", text, at))
            known = {t.id for t in turns}
            questions = []
            for qa in qas:
                ids = [str(i) for i in qa["target_step_id"]]
                gold = tuple(dict.fromkeys(i for i in ids if i in known))
                skipped["evidence_ids_dropped"] += len(ids) - len([i for i in ids if i in known])
                if not gold:
                    skipped["questions_without_evidence"] += 1
                    continue
                asked = qa.get("time")
                questions.append(
                    Question(
                        id=f"{conv_id}#q{qa['qid']}",
                        text=str(qa["question"]),
                        category=category,
                        gold=gold,
                        asked_at=parse_timestamp(str(asked), tz=CHINA) if asked else None,
                        answer=str(qa["answer"]),
                    )
                )
            conversations.append(Conversation(conv_id, _replay_order(turns), tuple(questions)))
    return Dataset("memdaily", path, tuple(conversations), dict(+skipped))


LOADERS = {"locomo": load_locomo, "longmemeval": load_longmemeval, "memdaily": load_memdaily}


def as_events(
    conv: Conversation,
    turns: Iterable[Turn] | None = None,
    *,
    ids: Callable[[Turn], str] | None = None,
) -> Iterator[dict[str, Any]]:
    """``turns`` (by default every turn of ``conv``) as ``Memory.add_events`` items: one
    namespace per conversation, batch history (``session_kind "batch"``), the speaker in the
    metadata, and an event id of ``ids(turn)`` when given."""
    for t in conv.turns if turns is None else turns:
        event: dict[str, Any] = {
            "session_id": t.session,
            "role": t.role,
            "content": t.text,
            "occurred_at": t.at,
            "namespace": conv.id,
            "session_kind": "batch",
            "metadata": {"speaker": t.speaker},
        }
        if ids is not None:
            event["event_id"] = ids(t)
        yield event


def run_meta(started: float) -> dict[str, Any]:
    """The machine and timing part of a bench's JSON ``meta``: elapsed seconds since
    ``started`` (``time.perf_counter()``), Python, CPUs, the 1-minute load average, the date."""
    import os
    import platform
    import time

    return {
        "elapsed_s": round(time.perf_counter() - started, 1),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "loadavg_1m": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def default_loading(args: Any) -> Any:
    """``args`` with the dataset-loading options of ``bench/eval_retrieval.py`` at their
    defaults (the default files, no adversarial or abstention questions, both LoCoMo speakers
    as user), for the scripts that load the datasets the same way."""
    args.data, args.adversarial, args.abstention, args.locomo_roles = (
        None,
        False,
        False,
        "both-user",
    )
    return args
