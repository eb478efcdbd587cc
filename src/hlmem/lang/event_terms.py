"""The full-text body of a raw event, built without jieba.

Every event is indexed, thousands per second, and jieba costs about 0.3–0.6 ms per
conversation turn. A Han run is therefore indexed as its characters, character pairs and
character triples, which contain every word of three characters or fewer that jieba could cut
from it, and every shorter word inside a longer one: the query side (:func:`hlmem.lang.segment.
match_expression`, jieba in search mode, which emits those short words) finds them. Everything
else is indexed as :func:`hlmem.lang.segment.index_text` indexes it (the same function), so a query
finds a word, a number, a version or a compound in an event as in a claim
(``tests/test_segment.py`` checks that every query term of a text finds that text's body).

A body never holds a secret: the text is :func:`hlmem.lang.redaction.scrub`-bed first (secrets
out, and no marker left for a query to match), so searching for a password finds nothing,
whether it is the right one or a wrong guess.
"""

from __future__ import annotations

import re
from operator import add

from hlmem.lang.redaction import scrub
from hlmem.lang.segment import DIGIT_COMMA, HAN_RUN, other_tokens
from hlmem.lang.text import normalize

#: the longest Han word an event body holds whole: longer ones only as these n-grams
MAX_GRAM = 3


def han_grams(word: str) -> list[str] | None:
    """For a Han word longer than :data:`MAX_GRAM` characters, the n-grams an event body holds
    for it: every run of ``MAX_GRAM`` characters, in order (all of them are in the body of any
    text containing the word, so a search that needs the word itself, not only its shorter
    words, can ask an event for them). ``None`` for a shorter word, which a body holds whole,
    and for anything that is not Han."""
    if len(word) <= MAX_GRAM or not HAN_RUN.fullmatch(word):
        return None
    return [word[i : i + MAX_GRAM] for i in range(len(word) - MAX_GRAM + 1)]


def _han_tokens(run: str) -> list[str]:
    # map(add, ...) builds the pairs and triples in C: this runs for every event.
    pairs = list(map(add, run, run[1:]))
    return [*run, *pairs, *map(add, pairs, run[2:])]


# Outside Han runs, the tokens index_text makes (hlmem.lang.segment.other_tokens). Most chunks
# have no compound, no letter or digit joined to another by - . : _ ' (a dotted number is one):
# their tokens are the runs of letters or digits, found by one findall.
_WORD = re.compile(r"[^\W_]+")
_JOINT = re.compile(r"[^\W_][-.:_'’][^\W_]")


def _other_tokens(chunk: str) -> list[str]:
    if _JOINT.search(chunk):
        return other_tokens(chunk)
    return _WORD.findall(chunk)


def event_body(text: str) -> str:
    """The FTS body of an event's text, its secrets left out: Han n-grams and the other
    tokens as in claims."""
    tokens: list[str] = []
    text = DIGIT_COMMA.sub("", normalize(scrub(text)))
    for index, chunk in enumerate(HAN_RUN.split(text)):
        if not chunk:
            continue
        if index % 2:  # a Han run (the split's captured group)
            tokens.extend(_han_tokens(chunk))
        else:
            tokens.extend(_other_tokens(chunk))
    return " ".join(tokens)
