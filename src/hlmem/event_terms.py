"""The full-text body of a raw event, built without jieba.

Every event is indexed, thousands per second, and jieba costs about 0.3–0.6 ms per
conversation turn. A Han run is therefore indexed as its characters, character pairs and
character triples, which contain every word of three characters or fewer that jieba could cut
from it, and every shorter word inside a longer one: the query side (:func:`hlmem.segment.
match_expression`, jieba in search mode, which emits those short words) finds them. Everything
else is indexed like :func:`hlmem.segment.index_text` indexes it (tested to agree on words,
numbers, versions and compounds), so they match the same way as in claims.
"""

from __future__ import annotations

import re
from operator import add

from hlmem.segment import DIGIT_COMMA, HAN_RUN, JOINER
from hlmem.text import normalize


def _han_tokens(run: str) -> list[str]:
    # map(add, ...) builds the pairs and triples in C: this runs for every event.
    pairs = list(map(add, run, run[1:]))
    return [*run, *pairs, *map(add, pairs, run[2:])]


# Outside Han runs, the tokens index_text makes, found by one regex: a dotted number with its
# letter prefix ("v1.2", "python3.11") whole, else runs of letters or digits; words joined by
# - . : _ ' come apart into their units (a query asks for them as a phrase). Most chunks have
# no dotted number and no joiner: a plain findall of the runs (same tokens) then does.
_TOKEN = re.compile(r"([^\W\d_]*)(\d+(?:\.\d+)+)|[^\W_]+")
_WORD = re.compile(r"[^\W_]+")
_DOTTED = re.compile(r"\d\.\d")
_JOINT = re.compile(r"[^\W_][-:_'’][^\W_]")
# Possessive runs from a word start only: no retrying from every letter of every word.
_JOINED = re.compile(r"(?<![^\W_])[^\W_]++(?:[-:_'’][^\W_]++)+")


def _other_tokens(chunk: str) -> list[str]:
    if _DOTTED.search(chunk):
        out: list[str] = []
        for m in _TOKEN.finditer(chunk):
            out.append(m.group())
            if m.group(2) and m.group(1):  # "v1.2": also "1.2" and "v"
                out.append(m.group(2))
                if len(m.group(1)) > 1:
                    out.append(m.group(1))
    else:
        out = _WORD.findall(chunk)
    if _JOINT.search(chunk):  # "e-mail" is also found as "email"
        out.extend(JOINER.sub("", j) for j in _JOINED.findall(chunk))
    return out


def event_body(text: str) -> str:
    """The FTS body of an event's text: Han n-grams and the other tokens as in claims."""
    tokens: list[str] = []
    text = DIGIT_COMMA.sub("", normalize(text))
    for index, chunk in enumerate(HAN_RUN.split(text)):
        if not chunk:
            continue
        if index % 2:  # a Han run (the split's captured group)
            tokens.extend(_han_tokens(chunk))
        else:
            tokens.extend(_other_tokens(chunk))
    return " ".join(tokens)
