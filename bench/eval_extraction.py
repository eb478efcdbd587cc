#!/usr/bin/env python
"""What the extractor remembers, without an LLM: the claims hlmem's rules make of MemDaily and
LoCoMo, against what the datasets say was worth remembering.

Each conversation (a MemDaily trajectory, a LoCoMo sample) is replayed as
``bench/eval_retrieval.py`` replays it (:func:`eval_retrieval.replay`: one namespace per
conversation, ``eval_data.as_events``, event ids ``<conversation>#<turn>``, a
:class:`hlmem.ManualClock` following the turns), into one store per dataset, with the
configuration's extractor (the rules by default) and no maintenance pass. Then every claim of
each namespace is read with its evidence (``mem.claims(history=True)``) and scored:

- **MemDaily, answer kept** (:func:`score_memdaily`): the share of questions for which some
  evidence message (``target_step_id``) produced a *current* claim (active) that contains the
  answer: the answer's words, case, width, spaces and punctuation folded, inside the claim's
  value or text (a hybrid question's answer, "华为Mate 60; 山东青岛", needs each of its parts
  in such a claim). ``produced`` counts the questions whose evidence produced any current claim.
  Comparative, aggregative and post-processing answers ("2人", a city's description) are
  computed from several facts and are rarely in any one claim: read those categories apart.
- **LoCoMo, observations kept** (:func:`score_observations`): each session's ``observation``
  facts (written by gpt-3.5, per speaker, each citing the turn(s) it comes from). A fact
  ``rests`` when some claim (of any status) has an evidence link to a turn it cites; it is
  ``kept`` when such a claim's value and text also share a content word with the fact (English
  words of three letters or more, function words, "user" and the two speakers' names left out,
  crudely stemmed: :func:`content_words`), and ``kept_half`` when they share at least half of
  the fact's content words. The facts are gpt-3.5's sentences ("Melanie plays the clarinet as a
  way to express herself and relax"), a claim is one atom ("plays: clarinet"): half is strict.
- **Precision checks** (:func:`precision`), over every claim of the dataset: *third person as
  user*, a claim whose subject is ``user`` while its evidence quote names a relative, colleague
  or friend (表哥, 同事, 女儿, my son, my boss, …: :data:`PEOPLE_ZH`, :data:`PEOPLE_EN`);
  *habit as plan*, a ``plan`` claim whose quote says a habit (每个周末, 每天, every Monday,
  usually, …: :data:`HABITS`). Both are suspects found by words, an upper bound on the errors:
  "I went hiking with my son" may well be about the user.

::

    .venv/bin/python bench/eval_extraction.py --quick      # a subset of each dataset, < 60 s
    .venv/bin/python bench/eval_extraction.py              # every dev conversation
    .venv/bin/python bench/eval_extraction.py --dataset memdaily --limit 300

The data are read from ``../shared/data`` at run time and never copied. Stdout: a table, then
one JSON object on the last line. Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import eval_data
import eval_retrieval
from eval_data import Conversation, Dataset

import hlmem
from hlmem.config import Config, load_config
from hlmem.errors import ConfigError, HlmemError
from hlmem.lang import normalize, tokens

DATASETS = ("memdaily", "locomo")
#: conversations per dataset in --quick (a MemDaily trajectory ~9 turns, a LoCoMo sample ~500),
#: evenly spaced over the dataset (:func:`subset`), so that every MemDaily type is in it
QUICK_LIMITS = {"memdaily": 150, "locomo": 1}
#: what a claim's own words say about whom: never a content word shared with a fact
_NOT_CONTENT = frozenset({"user", "用户"})
#: what every run sets, whatever --config says: no maintenance pass, no recall boosts, and no
#: vectors for raw events (nothing here recalls)
EVAL_OVERRIDES: dict[str, Any] = eval_retrieval.EVAL_OVERRIDES | {"embedder": {"events": "none"}}

#: words that name another person in Chinese: kin, work, friends (a claim whose quote holds
#: one is likely about that person)
PEOPLE_ZH = (
    "表哥 表姐 表弟 表妹 堂哥 堂姐 堂弟 堂妹 哥哥 姐姐 弟弟 妹妹 爸爸 妈妈 父亲 母亲 儿子 女儿 "
    "老婆 老公 妻子 丈夫 爷爷 奶奶 外公 外婆 叔叔 阿姨 舅舅 姑姑 孩子 同事 上司 老板 领导 "
    "朋友 室友 同学 邻居 男朋友 女朋友 闺蜜"
).split()
#: the same in English, after "my" (one adjective may come between: "my little sister")
PEOPLE_EN = (
    "son daughter wife husband mom mother dad father brother sister cousin uncle aunt "
    "grandma grandmother grandpa grandfather kid kids child children boss manager colleague "
    "coworker co-worker friend friends boyfriend girlfriend partner neighbor neighbour roommate"
).split()
_PEOPLE = re.compile(
    "|".join(PEOPLE_ZH)
    + r"|\bmy\s+(?:[a-z]+\s+)?(?:"
    + "|".join(re.escape(w) for w in PEOPLE_EN)
    + r")(?:'s)?\b",
    re.IGNORECASE,
)
#: habit phrasings: something done regularly, not on one date
HABITS = re.compile(
    r"每个?(?:周末|周|星期|礼拜|天|晚|早|月|年)|每逢|周末都|总是|经常|通常|平时|"
    r"\b(?:every|each)\s+(?:day|week|weekend|morning|evening|night|month|year|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b|"
    r"\bon\s+(?:weekends|mondays|tuesdays|wednesdays|thursdays|fridays|saturdays|sundays)\b|"
    r"\b(?:usually|always|often)\b",
    re.IGNORECASE,
)
#: English function words left out of content words (hlmem's own search stop words too)
_FUNCTION_WORDS = frozenset(
    "the and but for nor yet with from into onto about after before over under than then "
    "there here these those this that what which who whom whose when where why how has have "
    "had having her hers his him she they them their theirs its our ours your yours been being "
    "will would can could should shall may might must just also very really some any all more "
    "most other such not are was were does did doing done get got gets going one two out off "
    "too much many lot lots thing things way ways recently currently".split()
)
_NON_WORD = re.compile(r"[\W_]+")


class EvalError(Exception):
    """A run that cannot start: bad configuration or a dataset file that cannot be read."""


# --- what was extracted -----------------------------------------------------------------------


@dataclass(frozen=True)
class ClaimView:
    """A claim as the scoring reads it: its words, its status and the events it rests on."""

    status: str
    subject: str
    predicate: str
    scope: str
    value: str
    text: str
    events: tuple[str, ...]
    quotes: tuple[str, ...]

    @classmethod
    def of(cls, c: hlmem.Claim) -> ClaimView:
        return cls(
            c.status,
            c.subject,
            c.predicate,
            c.scope,
            c.value,
            c.text,
            tuple(e.event_id for e in c.evidence),
            tuple(e.quote for e in c.evidence),
        )


@dataclass(frozen=True)
class Observation:
    """One LoCoMo ``observation`` fact: who it is about, and the turns it cites."""

    conversation: str
    session: str
    speaker: str
    fact: str
    turns: tuple[str, ...]


def load_observations(
    path: Path, conversations: Collection[str] | None = None
) -> list[Observation]:
    """The ``observation`` facts of a LoCoMo file (of ``conversations`` only, when given), with
    their turn ids normalised as the questions' evidence is (:func:`eval_data.locomo_evidence`);
    a fact citing no existing turn id is left out.

    :raises OSError, ValueError, KeyError: the file is missing or not of LoCoMo's schema.
    """
    out = []
    for sample in json.loads(path.read_bytes()):
        conv_id = str(sample["sample_id"])
        if conversations is not None and conv_id not in conversations:
            continue
        for key, by_speaker in sample.get("observation", {}).items():
            session = key.removesuffix("_observation")
            for speaker, facts in by_speaker.items():
                for fact, cited in facts:
                    raw = [cited] if isinstance(cited, str) else [str(c) for c in cited]
                    turns = tuple(dict.fromkeys(eval_data.locomo_evidence(raw)))
                    if turns:
                        out.append(Observation(conv_id, session, str(speaker), str(fact), turns))
    return out


# --- scoring: pure functions of what was extracted --------------------------------------------


def compact(text: str) -> str:
    """``text`` folded (NFKC, case) without punctuation or spaces: "八个周。" → "八个周"."""
    return _NON_WORD.sub("", normalize(text))


def holds_answer(claim: ClaimView, answer: str) -> bool:
    """Whether the claim's value or text contains ``answer`` (folded, punctuation aside)."""
    wanted = compact(answer)
    return bool(wanted) and (wanted in compact(claim.value) or wanted in compact(claim.text))


def answer_parts(answer: str) -> list[str]:
    """A MemDaily answer's parts: a hybrid question asks two things, "银行柜员; 北京"."""
    return [p for p in re.split(r"\s*[;；]\s*", answer.strip()) if compact(p)]


@dataclass(frozen=True)
class AnswerCase:
    """A MemDaily question as scored: its category, its answer and its evidence events."""

    category: str
    answer: str
    evidence: frozenset[str]


def score_memdaily(cases: Iterable[AnswerCase], claims: Sequence[ClaimView]) -> dict[str, Any]:
    """How many questions' evidence produced a current claim holding the answer (``answered``)
    and any current claim at all (``produced``), overall and by category."""
    current: dict[str, list[ClaimView]] = {}
    for c in claims:
        if c.status == "active":
            for event in dict.fromkeys(c.events):
                current.setdefault(event, []).append(c)
    counts: dict[str, Counter[str]] = {}
    for case in cases:
        made = [c for e in case.evidence for c in current.get(e, ())]
        for key in ("all", case.category):
            n = counts.setdefault(key, Counter())
            n["questions"] += 1
            n["produced"] += bool(made)
            parts = answer_parts(case.answer)
            n["answered"] += bool(parts) and all(
                any(holds_answer(c, part) for c in made) for part in parts
            )
    return {key: _shares(n, "questions", ("answered", "produced")) for key, n in counts.items()}


def content_words(text: str, names: Collection[str] = ()) -> set[str]:
    """The content words of English ``text``: hlmem's search tokens of three letters or more
    (Chinese words of two characters or more), without function words and ``names``
    (lower-case) and "user", crudely stemmed ("attended" → "attend", "stories" → "story")."""
    out = set()
    for token in tokens(text):
        word = token.lower().removesuffix("'s")
        ascii_word = word.isascii()
        if (ascii_word and len(word) < 3) or (not ascii_word and len(word) < 2):
            continue
        if word in _FUNCTION_WORDS or word in names or word in _NOT_CONTENT:
            continue
        out.add(_stem(word) if ascii_word else word)
    return out


def _stem(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix) and not word.endswith("ss"):
            return word[: -len(suffix)]
    return word


def score_observations(
    observations: Iterable[Observation],
    claims: Mapping[str, Sequence[ClaimView]],
    names: Mapping[str, Collection[str]],
) -> dict[str, Any]:
    """For each fact: does a claim rest on a turn it cites (``rests``), and does one of those
    share at least one (``kept``) or half (``kept_half``) of its content words? ``claims``
    and ``names`` (the speakers' names, lower-case) by conversation; claims' evidence events
    are ``<conversation>#<turn>``. Overall and by conversation."""
    resting: dict[str, dict[str, list[set[str]]]] = {}  # conv -> event -> claims' words
    counts: dict[str, Counter[str]] = {}
    for obs in observations:
        conv = obs.conversation
        if conv not in resting:
            resting[conv] = {}
            for c in claims.get(conv, ()):
                words = content_words(f"{c.value} {c.text}", names.get(conv, ()))
                for event in dict.fromkeys(c.events):
                    resting[conv].setdefault(event, []).append(words)
        fact = content_words(obs.fact, names.get(conv, ()))
        found = [w for t in obs.turns for w in resting[conv].get(f"{conv}#{t}", ())]
        shared = max((len(fact & w) for w in found), default=0)
        for key in ("all", conv):
            n = counts.setdefault(key, Counter())
            n["facts"] += 1
            n["rests"] += bool(found)
            n["kept"] += shared >= 1
            n["kept_half"] += shared >= 1 and 2 * shared >= len(fact)
    return {key: _shares(n, "facts", ("kept", "kept_half", "rests")) for key, n in counts.items()}


def third_person_as_user(claim: ClaimView) -> bool:
    """A ``user`` claim whose evidence quote names another person (a relative, a colleague, a
    friend): likely that person's fact stored as the user's."""
    return claim.subject == "user" and any(_PEOPLE.search(q) for q in claim.quotes)


def habit_as_plan(claim: ClaimView) -> bool:
    """A plan whose evidence quote says a habit ("每个周末都去", "every Monday I …")."""
    is_plan = claim.predicate == "plan" or claim.scope == "plan"
    return is_plan and any(HABITS.search(q) for q in claim.quotes)


def precision(claims: Iterable[ClaimView]) -> dict[str, Any]:
    """The two precision checks over ``claims`` (every status): counts, their shares and up to
    three examples each (claim text, first quote)."""
    n: Counter[str] = Counter()
    examples: dict[str, list[list[str]]] = {"third_person_as_user": [], "habit_as_plan": []}
    for c in claims:
        n["claims"] += 1
        n["user_claims"] += c.subject == "user"
        n["plans"] += c.predicate == "plan" or c.scope == "plan"
        for name, suspect in (
            ("third_person_as_user", third_person_as_user),
            ("habit_as_plan", habit_as_plan),
        ):
            if suspect(c):
                n[name] += 1
                if len(examples[name]) < 3:
                    examples[name].append([c.text, c.quotes[0] if c.quotes else ""])
    return {
        "claims": n["claims"],
        "user_claims": n["user_claims"],
        "plans": n["plans"],
        "third_person_as_user": n["third_person_as_user"],
        "third_person_share_of_user_claims": _ratio(n["third_person_as_user"], n["user_claims"]),
        "habit_as_plan": n["habit_as_plan"],
        "habit_share_of_plans": _ratio(n["habit_as_plan"], n["plans"]),
        "examples": examples,
    }


def _ratio(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def _shares(n: Counter[str], total: str, parts: Sequence[str]) -> dict[str, Any]:
    out: dict[str, Any] = {total: n[total]}
    for part in parts:
        out[part] = n[part]
        out[f"{part}_share"] = _ratio(n[part], n[total])
    return out


# --- replay and read --------------------------------------------------------------------------


async def extracted(
    convs: Sequence[Conversation], db: Path, cfg: Config
) -> tuple[dict[str, list[ClaimView]], dict[str, Any]]:
    """Replay ``convs`` into a store at ``db``; every claim of each, and the run's figures."""
    clock = hlmem.ManualClock(convs[0].turns[0].at if convs and convs[0].turns else None)
    out: dict[str, list[ClaimView]] = {}
    async with hlmem.open(db, config=cfg, clock=clock) as mem:
        started = time.perf_counter()
        for i, conv in enumerate(convs, 1):
            await eval_retrieval.replay(mem, clock, conv)
            if i % 100 == 0:
                print(f"  {i}/{len(convs)} conversations", file=sys.stderr)
        ingest_s = time.perf_counter() - started
        for conv in convs:
            claims = await mem.claims(namespace=conv.id, history=True, limit=1_000_000)
            out[conv.id] = [ClaimView.of(c) for c in claims]
        stats = await mem.stats()
    failed = sum(by_status.get("failed", 0) for by_status in stats.jobs.values())
    return out, {
        "conversations": len(convs),
        "events": stats.events,
        "claims": sum(len(v) for v in out.values()),
        "active_claims": sum(c.status == "active" for v in out.values() for c in v),
        "failed_jobs": failed,
        "ingest_s": round(ingest_s, 1),
    }


async def evaluate(
    name: str, ds: Dataset, *, limit: int | None, cfg: Config, workdir: Path
) -> dict[str, Any]:
    convs = subset(ds.conversations, limit)
    print(f"{name}: replaying {len(convs)} conversations", file=sys.stderr)
    claims, figures = await extracted(convs, workdir / f"{name}.db", cfg)
    out: dict[str, Any] = {"run": figures, "skipped": ds.skipped}
    if name == "memdaily":
        cases = [
            AnswerCase(
                q.category,
                q.answer,
                frozenset(eval_retrieval.event_id(conv, g) for g in q.gold),
            )
            for conv in convs
            for q in conv.questions
        ]
        out["answers"] = score_memdaily(cases, [c for v in claims.values() for c in v])
    else:
        observations = load_observations(ds.source, {c.id for c in convs})
        names = {
            conv.id: {w.lower() for t in conv.turns for w in t.speaker.split()} for conv in convs
        }
        out["observations"] = score_observations(observations, claims, names)
    out["precision"] = precision(c for v in claims.values() for c in v)
    return out


# --- the report -------------------------------------------------------------------------------


def table(result: Mapping[str, Any]) -> list[str]:
    lines = [f"{'dataset':<10} {'figure':<44} {'count':>13} {'share':>7}"]

    def row(dataset: str, figure: str, n: Mapping[str, Any], part: str, whole: str) -> None:
        share = _ratio(n[part], n[whole])
        shown = "-" if share is None else f"{share:.3f}"
        lines.append(f"{dataset:<10} {figure:<44} {f'{n[part]}/{n[whole]}':>13} {shown:>7}")

    for name, d in result["datasets"].items():
        for key, n in d.get("answers", {}).items():
            row(name, f"answer in a current claim: {key}", n, "answered", "questions")
        if "answers" in d:
            row(
                name,
                "evidence produced a current claim",
                d["answers"]["all"],
                "produced",
                "questions",
            )
        if "observations" in d:
            o = d["observations"]["all"]
            row(name, "observation kept (a content word)", o, "kept", "facts")
            row(name, "observation kept (half its content words)", o, "kept_half", "facts")
            row(name, "observation: a claim rests on its turn", o, "rests", "facts")
        p = d["precision"]
        row(
            name, "third person stored as user (suspects)", p, "third_person_as_user", "user_claims"
        )
        row(name, "habit stored as a plan (suspects)", p, "habit_as_plan", "plans")
    return lines


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=" ".join(__doc__.split("\n\n")[0].split()),
        allow_abbrev=False,
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--dataset", choices=DATASETS, default=None, help="omitted: both")
    parser.add_argument("--data", type=Path, default=None, help="a file of that dataset's schema")
    parser.add_argument("--quick", action="store_true", help="a subset of each dataset (< 60 s)")
    parser.add_argument("--limit", type=int, default=None, help="conversations per dataset")
    parser.add_argument("--config", type=Path, default=None, help="hlmem TOML; omitted: built-ins")
    parser.add_argument("--workdir", type=Path, default=None, help="for the temporary stores")
    args = parser.parse_args(argv)
    if args.data is not None and args.dataset is None:
        parser.error("--data needs --dataset")
    if args.limit is not None and args.limit < 1:
        parser.error("--limit must be positive")
    return args


def subset(convs: Sequence[Conversation], limit: int | None) -> Sequence[Conversation]:
    """``limit`` conversations evenly spaced over ``convs`` (all of them without a limit)."""
    if limit is None or limit >= len(convs):
        return convs
    return [convs[i * len(convs) // limit] for i in range(limit)]


def load(name: str, path: Path | None) -> Dataset:
    """:raises EvalError: the file is missing or not of the dataset's schema."""
    path = path or eval_data.DEFAULT_PATHS[name]
    try:
        return eval_data.load_memdaily(path) if name == "memdaily" else eval_data.load_locomo(path)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise EvalError(f"{name}: cannot read {path}: {type(exc).__name__}: {exc}") from exc


async def run(args: argparse.Namespace, workdir: Path, cfg: Config) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in [args.dataset] if args.dataset else DATASETS:
        limit = (
            args.limit if args.limit is not None else (QUICK_LIMITS[name] if args.quick else None)
        )
        ds = await anyio.to_thread.run_sync(load, name, args.data)
        out[name] = await evaluate(name, ds, limit=limit, cfg=cfg, workdir=workdir)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    try:
        try:
            cfg = load_config(args.config, env={}, overrides=EVAL_OVERRIDES)
        except ConfigError as exc:
            raise EvalError(str(exc)) from exc
        with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
            datasets = anyio.run(run, args, Path(tmp), cfg, backend="asyncio")
    except (EvalError, HlmemError) as exc:
        print(f"eval_extraction: error: {exc}", file=sys.stderr)
        return 1
    result: dict[str, Any] = {
        "datasets": datasets,
        "meta": {
            "quick": args.quick,
            "limit": args.limit,
            "extractor": cfg.extractor.kind,
            "config": str(args.config) if args.config else "built-in defaults",
            "overrides": EVAL_OVERRIDES,
        }
        | eval_data.run_meta(started),
    }
    for line in table(result):
        print(line)
    print(json.dumps(result, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
