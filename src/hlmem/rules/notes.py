"""Explicit memory requests: "记住：X", "remember that X" become a ``note`` draft.

A request is found on the whole user piece, before it is cut into sentences, and the
extractor then takes the sentences it covers as said: no other rule reads them. This module
only matches and builds the draft; it keeps no state and never looks at assistant turns.
"""

from __future__ import annotations

import re

from hlmem.lang import language_of
from hlmem.messages import ClaimDraft, EvidenceSpan, WindowPiece

# Only a request to remember counts, not the word: "记住" at the start of a sentence or after
# 请 / 帮我 / 麻烦(你) / (一定)要, never "记住了"; "remember" as an imperative at the start of a
# sentence (after "also", "and", "ok", ...), after "please", or in "can/could you remember";
# never "remember when ..." or a "remember that ...?" asked back (recalling, not requesting).
_SENTENCE_START = r"(?:^|(?<=[。！？!?.;；\n]))\s*"
#: (pattern, a word the piece must hold for the pattern to be tried)
NOTE_PATTERNS = (
    (
        re.compile(
            rf"(?:{_SENTENCE_START}(?:(?:也|还|另外)[,，]?\s*)?(?:请|帮我|麻烦你?|你?一定要|要)?"
            r"|(?:请|帮我|麻烦你?|一定要))"
            r"记住(?!了)(?:一下|这个|这件事)?\s*[:：,，]?\s*(?P<x>[^。！？!?\n]+)"
        ),
        "记住",
    ),
    (
        re.compile(
            rf"(?i)(?:{_SENTENCE_START}(?:(?:also|and|oh|ok|okay|btw|so|hey)[,]?\s+)*(?:please\s+)?"
            r"|\bplease\s+|\b(?:can|could|would)\s+you\s+(?:please\s+)?)"
            r"remember(?:\s+this)?(?:\s+that)?\s*[:,]?\s+"
            # "remember when ...", "remember Jon, ...": recalling together, not a request
            r"(?!(?:when|how|what|where|who|why|the time|me)\b)(?-i:(?![A-Z][a-z]+,))"
            r"(?P<x>[^\n]+?)(?=[.!?](?:\s|$)|[!?]|\n|$)"
        ),
        "remember",
    ),
)
_YOU_REMEMBER = re.compile(r"\byou\s+(?:please\s+)?remember", re.I)
_NOTE_TRIM = " \t\"'“”‘’「」『』,，:：;；"


def note(piece: WindowPiece, m: re.Match[str]) -> ClaimDraft | None:
    """The ``note`` draft of a request match, or None when it is too short or asked back."""
    value = m.group("x").strip(_NOTE_TRIM)
    if len(value) < 2:
        return None
    asked = piece.text[m.end() : m.end() + 1] == "?"
    if asked and not _YOU_REMEMBER.search(m.group(0)):
        return None  # "Remember that epic block in Game 7?": a question, not a request
    # The quote is the match without surrounding blanks; its offsets must name exactly that
    # text in the event's content.
    raw = m.group(0)
    quote = raw.strip()
    start = piece.start_char + m.start() + (len(raw) - len(raw.lstrip()))
    return ClaimDraft(
        subject="user",
        predicate="note",
        value=value,
        text=value,
        language=language_of(value),
        importance=0.7,
        confidence=0.9,
        evidence=(
            EvidenceSpan(
                event_id=piece.event_id, quote=quote, start_char=start, end_char=start + len(quote)
            ),
        ),
    )
