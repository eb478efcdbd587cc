"""Query understanding for recall: time intent, entities and subject, deterministic, zh + en.

- **Time intent.** 现在 / 目前 / 当前 / now / currently → current beliefs; 之前 / 以前 / 原来 /
  过去 / 曾经 / previously / before / used to → history (superseded claims too); an explicit time
  ("5月", "in April", "2026-04-15", "上个月") → ``valid_at`` (what was true then, as we know it
  now; events said before the period's end count as said then, later ones rank after them:
  ``period_end``), or ``as_of``
  (what the system believed then) when the query asks about belief (当时以为 / 那时候记的 /
  believed / thought / knew / on record). Explicit arguments win.
- **Entities.** Names in the query (:func:`hlmem.lang.atoms.analysis.entities_of`, plus every entity
  the namespace already knows whose name occurs in the query). A known entity with one meaning is
  high-confidence and constrains recall; a name the store does not know, or one that maps to
  several entities of different kinds, is *loose*: recall stays wide. The store is asked only
  for the names the query could contain (:func:`name_candidates`: every substring of up to
  :data:`MAX_NAME_CHARS` characters), so the cost follows the query, not the namespace.
- **Subject.** A query in the first person (我 / 我的 / I / my / me) is about the speaker.
- **Slots.** With a lexicon, the speaker's slots the question names ("我住在哪？" →
  ``location``: :func:`hlmem.recall.slots.asked_slots`), unless it names a known entity.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterable
from datetime import datetime

from hlmem.claims import SPEAKER
from hlmem.lang import Lexicon, normalize
from hlmem.lang.atoms import SPEAKER_SUBJECTS
from hlmem.lang.atoms import analysis as atoms
from hlmem.lang.timeexpr import parse as timeparse
from hlmem.messages import QueryParse, RecallMode
from hlmem.recall.slots import asked_slots

_CURRENT = re.compile(
    r"现在|目前|当前|如今|眼下|最近|这阵子|\b(?:now|currently|these days|at the moment|today)\b",
    re.IGNORECASE,
)
_HISTORY = re.compile(
    r"之前|以前|原来|过去|曾经|先前|早先|起初|当初|"
    r"\b(?:previously|before|used to|formerly|earlier|in the past|originally|history)\b",
    re.IGNORECASE,
)
_BELIEF = re.compile(
    r"当时(?:以为|认为|记得|记录|知道)|那时(?:候)?(?:以为|认为|记得|记的|知道)|记录(?:里|上)|"
    r"\b(?:believed?|thought|knew|on record|did you (?:know|think|have))\b",
    re.IGNORECASE,
)
_FIRST_PERSON = re.compile(r"我|\b(?:i|my|me|mine|i'm|i've)\b", re.IGNORECASE)
#: the query asks what the assistant said ("you recommended", "our previous chat", "你推荐过")
_ASSISTANT_SAID = re.compile(
    r"你(?:之前|上次|刚才|以前|曾经|那时)?(?:说过|说的|提到|提过|推荐|建议|告诉|给我|写的|写过|"
    r"列出|列的|讲过|讲的|介绍)|我们(?:之前|上次|刚才|以前)?(?:聊|谈|讨论)(?:过|的)|"
    r"\byou(?:'ve| have)? (?:told|said|mentioned|recommended|suggested|provided|gave|wrote|"
    r"created|listed|shared|explained|described|named|proposed|showed)\b|"
    r"\bdid you (?:say|tell|mention|recommend|suggest|write|give|list)\b|"
    r"\bour (?:previous|last|earlier|past) (?:conversation|chat|discussion|talk)",
    re.IGNORECASE,
)
#: a bare follow-up about another time: "之前呢？", "那以前呢", "and before?", "previously?"
_FOLLOW_UP = re.compile(
    r"^\s*(?:那|那么)?(?:之前|以前|原来|过去|当初|先前|现在|目前)(?:呢|的呢|是什么|是哪)?\s*[?？。.!！]*\s*$|"
    r"^\s*(?:and|what about|how about)?\s*(?:before|previously|earlier|now|before that)"
    r"\s*[?.!]*\s*$",
    re.IGNORECASE,
)
#: the longest entity name (normalised, in characters) a query is matched against
MAX_NAME_CHARS = 32
#: the most candidate names asked of the store in one statement (:func:`name_batches`)
NAME_BATCH = 5_000


def parse(
    text: str,
    now: datetime,
    *,
    known_entities: Iterable[tuple[str, str]] = (),
    mode: RecallMode | None = None,
    as_of: datetime | None = None,
    valid_at: datetime | None = None,
    lexicon: Lexicon | None = None,
) -> QueryParse:
    """Understand ``text`` asked at ``now``; ``known_entities`` are (name, kind) pairs the
    namespace holds. Explicit ``mode``, ``as_of`` and ``valid_at`` override what the text says.
    With ``lexicon``, the speaker's slots the question names (``slots``)."""
    words: list[str] = []
    said_mode: RecallMode | None = None
    history = _HISTORY.search(text)
    current = _CURRENT.search(text)
    if history:
        said_mode = "history"
        words.append(history.group())
    elif current:
        said_mode = "current"
        words.append(current.group())
    when = None if as_of or valid_at else timeparse.resolve(text, now, prefer="past")
    period_end = None
    if when is not None and when.start <= now:
        words.append(when.expression.strip())
        # A point inside the named period: its start, or "now" when the period is still going.
        point = min(when.start, now)
        if _BELIEF.search(text):
            as_of = max(point, min(when.end, now))
        else:
            # Claims true at that point; events said during the period were said "then".
            valid_at, period_end = point, max(point, min(when.end, now))
    strong, loose = _entities(text, known_entities)
    # A question naming a known entity is about it, not about the speaker's slot.
    slots = asked_slots(text, lexicon) if lexicon is not None and not strong else ()
    return QueryParse(
        text=text,
        mode=mode or said_mode or ("history" if as_of or valid_at else "current"),
        as_of=as_of,
        valid_at=valid_at,
        period_end=period_end,
        time_words=tuple(words),
        entities=strong,
        loose_entities=loose,
        subject=SPEAKER if _FIRST_PERSON.search(text) else None,
        asks_assistant=bool(_ASSISTANT_SAID.search(text)),
        slots=slots,
    )


def is_follow_up(text: str) -> bool:
    """Whether ``text`` only asks about another time than the question before it ("之前呢？",
    "and before?"): it names no slot of its own, and means the previous question's."""
    return bool(_FOLLOW_UP.match(text))


def name_candidates(text: str) -> list[str]:
    """The strings a known entity's normalised name must be one of to occur in ``text``: each
    distinct substring of ``normalize(text)`` of 2 to :data:`MAX_NAME_CHARS` characters that
    neither starts nor ends with a space (normalised names never do). :func:`parse` matches
    what the store returns for these exactly as it would match every entity of the namespace;
    only names longer than :data:`MAX_NAME_CHARS` are never found."""
    folded = normalize(text)
    size = len(folded)
    ends = [end for end in range(1, size + 1) if folded[end - 1] != " "]
    # In the order they first occur (a dict, not a set): the same list in every process.
    found = dict.fromkeys(
        folded[start:end]
        for start in range(size)
        if folded[start] != " "
        for end in ends[bisect_left(ends, start + 2) : bisect_right(ends, start + MAX_NAME_CHARS)]
    )
    return list(found)


def name_batches(text: str) -> list[list[str]]:
    """:func:`name_candidates` in batches of at most :data:`NAME_BATCH`, one statement each.
    SQLite's ``IN (SELECT value FROM json_each(?))`` builds a temporary index of the whole
    list, which costs more than linearly once it outgrows the page cache (0.01 s for 10,000
    names, 2.7 s for 300,000, and a long query has up to 31 per character); in batches the
    lookups stay linear in the query."""
    names = name_candidates(text)
    return [names[i : i + NAME_BATCH] for i in range(0, len(names), NAME_BATCH)]


def _entities(
    text: str, known: Iterable[tuple[str, str]]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(high-confidence, loose) entity names of ``text``."""
    folded = normalize(text)
    kinds: dict[str, set[str]] = {}
    for name, kind in known:
        key = normalize(name)
        if len(key) >= 2 and key not in SPEAKER_SUBJECTS and _occurs(key, folded):
            kinds.setdefault(key, set()).add(kind)
    # The longest known names win ("张三丰" over "张三"); a name inside a longer one is dropped.
    names = sorted(kinds, key=len, reverse=True)
    strong = [n for n in names if len(kinds[n]) == 1 and not _longer(names, n)]
    ambiguous = [n for n in names if len(kinds[n]) > 1]
    seen = set(strong) | set(ambiguous)
    unknown = [
        normalize(name)
        for name, _ in atoms.entities_of(text)
        if normalize(name) not in seen and not any(normalize(name) in s for s in seen)
    ]
    return tuple(strong), tuple(dict.fromkeys([*ambiguous, *unknown]))


def _occurs(name: str, folded: str) -> bool:
    """Whether ``name`` occurs in ``folded`` as a whole word where it has Latin letters or
    digits at an edge: "user" is not in "user-api", nor "api" in "user-api", nor "v1" in
    "v1.2"; "bob" is in "bob's" and in "i met bob." ("张三" may touch other Chinese
    characters: Chinese has no spaces between words)."""
    start = folded.find(name)
    while start >= 0:
        end = start + len(name)
        joined_before = _latin(name[0]) and _continues(folded, start - 1, -1)
        joined_after = _latin(name[-1]) and _continues(folded, end, 1)
        if not (joined_before or joined_after):
            return True
        start = folded.find(name, start + 1)
    return False


def _latin(ch: str) -> bool:
    return ch.isascii() and ch.isalnum()


def _continues(text: str, at: int, step: int) -> bool:
    """Whether the character at ``at`` carries a Latin word on (a letter or digit, or a
    joiner such as "-" or "." with one behind it)."""
    if not 0 <= at < len(text):
        return False
    if _latin(text[at]):
        return True
    nxt = at + step
    return text[at] in "-_./" and 0 <= nxt < len(text) and _latin(text[nxt])


def _longer(names: list[str], name: str) -> list[str]:
    """The names longer than ``name`` that contain it."""
    return [m for m in names if m != name and len(m) > len(name) and name in m]
