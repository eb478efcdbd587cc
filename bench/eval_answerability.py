#!/usr/bin/env python
"""Calibrate ``recall.supported_coverage``: how well a feature of a recall's items says that
it found the question's evidence, on the dev data.

Each dataset is replayed once (the store cache of ``bench/eval_variants.py``), then every
question is asked with the evaluation's settings. Per question: the best item's score, and
the largest share of its search terms one of the first three items holds (``coverage``:
:func:`hlmem.recall.recaller.term_coverage`, what answerability reads) and whether the gold
evidence is the first item (hit@1) or among the first ten (hit@10). Every
question is also asked of the next conversation's namespace, where its evidence is not (the
dev data has no unanswerable questions: this stands in for them). For each candidate
threshold of each feature the table gives the share of questions it calls "supported" and,
of those and of the rest, the share with their evidence at rank 1 and in the first ten, and
the share of the foreign askings it calls "supported" (``foreign``, which should be low): a
good threshold keeps the evidence rate of "supported" high and the foreign rate low. The
slot rule (a current claim of the slot asked) is not counted here. ::

    cd bench && ../.venv/bin/python eval_answerability.py --quick

Stdout: the table, then one JSON object on the last line.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import anyio
import eval_data
import eval_retrieval as ev
import eval_variants as var
from eval_retrieval import DATASETS, QUICK_LIMITS

import hlmem
from hlmem.lang import query_terms
from hlmem.recall.recaller import term_coverage

THRESHOLDS = {
    "top": (1.0, 1.2, 1.4, 1.5, 1.6, 1.8, 2.0),
    "coverage": (0.2, 0.3, 0.4, 0.5, 0.6, 0.7),
}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", action="append", choices=DATASETS, default=None)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--config", type=Path, default=None)
    p.add_argument("--embedder", choices=list(ev.EMBEDDERS), default="local")
    p.add_argument("--cache", type=Path, default=Path("/tmp/hlmem-eval-cache"))
    args = p.parse_args(argv)
    return eval_data.default_loading(args)


async def questions(args: argparse.Namespace, name: str) -> list[dict[str, Any]]:
    limit = args.limit if args.limit is not None else (QUICK_LIMITS[name] if args.quick else None)
    ds = await anyio.to_thread.run_sync(ev.load, name, args)
    convs = ev.subset(ds.conversations, limit)
    db = await var.replayed(args, name, convs)
    out = []
    clock = hlmem.ManualClock(convs[0].turns[0].at)
    async with hlmem.open(db, config=var.config(args, {}), clock=clock) as mem:
        for n, conv in enumerate(convs):
            other = convs[(n + 1) % len(convs)]
            for q in conv.questions:
                clock.set(ev.asked_at(conv, q))
                result = await mem.recall(q.text, namespace=conv.id, k=10)
                ranked = ev.retrieved_event_ids(result)
                gold = {ev.event_id(conv, g) for g in q.gold}
                terms = query_terms(q.text)
                foreign: dict[str, float] | None = None
                if other is not conv:
                    elsewhere = await mem.recall(q.text, namespace=other.id, k=10)
                    foreign = {
                        "top": elsewhere.items[0].score if elsewhere.items else 0.0,
                        "coverage": term_coverage(terms, elsewhere.items),
                    }
                out.append(
                    {
                        "foreign": foreign,
                        "coverage": term_coverage(terms, result.items),
                        "top": result.items[0].score if result.items else 0.0,
                        "hit1": bool(ranked[:1] and ranked[0] in gold),
                        "hit10": bool(gold.intersection(ranked[:10])),
                        "slot": bool(result.query.slots),
                    }
                )
    return out


def table(rows: list[dict[str, Any]], feature: str) -> list[dict[str, Any]]:
    out = []
    for t in THRESHOLDS[feature]:
        above = [r for r in rows if r[feature] >= t]
        below = [r for r in rows if r[feature] < t]

        def rate(group: list[dict[str, Any]], key: str) -> float | None:
            return round(sum(r[key] for r in group) / len(group), 3) if group else None

        foreign = [r["foreign"][feature] for r in rows if r["foreign"] is not None]
        out.append(
            {
                "feature": feature,
                "threshold": t,
                "foreign": round(sum(f >= t for f in foreign) / len(foreign), 3)
                if foreign
                else None,
                "supported": round(len(above) / len(rows), 3),
                "hit1_supported": rate(above, "hit1"),
                "hit10_supported": rate(above, "hit10"),
                "hit1_below": rate(below, "hit1"),
                "hit10_below": rate(below, "hit10"),
            }
        )
    return out


async def run(args: argparse.Namespace) -> dict[str, Any]:
    result: dict[str, Any] = {}
    every: list[dict[str, Any]] = []
    for name in args.dataset or DATASETS:
        rows = await questions(args, name)
        every += rows
        result[name] = {"n": len(rows), "slot_questions": sum(r["slot"] for r in rows)}
        result[name]["table"] = table(rows, "top") + table(rows, "coverage")
    result["all"] = {"n": len(every), "table": table(every, "top") + table(every, "coverage")}
    return result


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    result = anyio.run(run, args, backend="asyncio")
    for name, data in result.items():
        print(f"\n{name}  n={data['n']}")
        print(
            "  feature  threshold supported  hit@1|sup hit@10|sup  hit@1|below hit@10|below"
            "  foreign"
        )
        for r in data["table"]:
            print(
                f"  {r['feature']:8} {r['threshold']:9} {r['supported']:9} "
                f"{r['hit1_supported']!s:>10} "
                f"{r['hit10_supported']!s:>10} {r['hit1_below']!s:>12} {r['hit10_below']!s:>12}"
                f"  {r['foreign']!s:>7}"
            )
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
