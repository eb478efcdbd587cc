"""How often a question's gold evidence was said after the period the question names.

Recall reads a time in the question the way :func:`hlmem.recall.understanding.parse` does, at
the question's own time: "what did I buy last month" becomes ``valid_at`` = the month's start
and ``period_end`` = its end (at most the question's time), and an event said at or after
``period_end`` is left out (:func:`hlmem.recall.items.event_visible`); a question about belief
("what did I think in May") becomes ``as_of``, and an event recorded after it is left out. A
turn that tells of the period later ("last year I visited Italy", said after that year) is
then never returned as an event, whatever its words.

This module calls the same parser, with no known entities (they change which entities a query
names, not its time), and counts the questions whose gold turns fall on the wrong side of
that cut. It measures; it changes nothing in recall.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from eval_data import Conversation, Question

from hlmem.recall import understanding

#: examples kept per kind of cut, for the report
EXAMPLES = 5


@dataclass
class CutCount:
    """Questions whose parse cuts events by one kind of time, and their gold turns."""

    questions: int = 0
    by_category: Counter[str] = field(default_factory=Counter)
    gold_turns: int = 0
    gold_after: int = 0
    some_gold_after: list[str] = field(default_factory=list)  # question ids
    all_gold_after: list[str] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)
    examples: list[dict[str, Any]] = field(default_factory=list)

    def add(
        self,
        q: Question,
        now: datetime,
        cut: datetime,
        times: Sequence[datetime],
        words: str,
        *,
        inclusive: bool,
    ) -> None:
        """One question cutting at ``cut``; ``times``: its gold turns' times; a turn at
        exactly ``cut`` is on the far side unless the cut is ``inclusive``."""
        after = sum(1 for t in times if (t > cut if inclusive else t >= cut))
        self.questions += 1
        self.by_category[q.category] += 1
        self.ids.append(q.id)
        self.gold_turns += len(times)
        self.gold_after += after
        if after:
            self.some_gold_after.append(q.id)
            if len(self.examples) < EXAMPLES:
                self.examples.append(
                    {
                        "question": q.text,
                        "asked_at": now.isoformat(),
                        "time_words": words,
                        "cut": cut.isoformat(),
                        "gold_at": [t.isoformat() for t in times],
                    }
                )
        if after == len(times):
            self.all_gold_after.append(q.id)

    def figures(self) -> dict[str, Any]:
        return {
            "questions": self.questions,
            "by_category": dict(sorted(self.by_category.items())),
            "gold_turns": self.gold_turns,
            "gold_turns_after_cut": self.gold_after,
            "questions_some_gold_after_cut": len(self.some_gold_after),
            "questions_all_gold_after_cut": len(self.all_gold_after),
            "examples": self.examples,
        }


@dataclass
class PeriodCounts:
    questions: int = 0
    #: "in May", "last year": events said at or after the period's end are left out
    period: CutCount = field(default_factory=CutCount)
    #: "what did I think in May": events recorded after that are left out
    belief: CutCount = field(default_factory=CutCount)

    def figures(self) -> dict[str, Any]:
        return {
            "questions": self.questions,
            "period": self.period.figures(),
            "belief": self.belief.figures(),
        }


def count_cuts(
    convs: Sequence[Conversation],
    *,
    asked_at: Callable[[Conversation, Question], datetime],
    recorded: Callable[[Conversation], dict[str, datetime]],
) -> PeriodCounts:
    """Parse every question at its time (``asked_at``) and count the gold turns said (by a
    turn's time) or recorded (``recorded``: turn id -> recorded time) on the far side of the
    cut its parse makes."""
    out = PeriodCounts()
    for conv in convs:
        said = {t.id: t.at for t in conv.turns}
        stored = recorded(conv)
        for q in conv.questions:
            out.questions += 1
            now = asked_at(conv, q)
            parsed = understanding.parse(q.text, now)
            words = " ".join(parsed.time_words)
            # event_visible: hidden when occurred_at >= period_end, or recorded_at > as_of
            if parsed.period_end is not None:
                times = [said[g] for g in q.gold]
                out.period.add(q, now, parsed.period_end, times, words, inclusive=False)
            elif parsed.as_of is not None:
                times = [stored[g] for g in q.gold]
                out.belief.add(q, now, parsed.as_of, times, words, inclusive=True)
    return out
