"""The deterministic rule-based extractor, the embedded default (no model needed).

It reads a window's pieces and proposes claims with their evidence spans. This first version
handles explicit memory requests in Chinese and English ("记住：X", "请记住 X", "remember: X",
"remember that X"); the cognition issue (#4) extends it with preferences, corrections,
identity, moves and plans. Only the user's own words become claims: an assistant saying
"remember" is not the user asking to be remembered.
"""

from __future__ import annotations

import re

from hlmem.messages import ClaimDraft, EvidenceSpan, Role, WindowText
from hlmem.text import language_of

NAME = "rules-v1"

# Only a request to remember counts, not the word: "记住" at the start of a sentence or after
# 请 / 帮我 / 麻烦(你) / (一定)要, never "记住了"; "remember" as an imperative at the start of a
# sentence (after "also", "and", "ok", ...), after "please", or in "can/could you remember".
_SENTENCE_START = r"(?:^|(?<=[。！？!?.;；\n]))\s*"
_PATTERNS = (
    re.compile(
        rf"(?:{_SENTENCE_START}(?:(?:也|还|另外)[,，]?\s*)?(?:请|帮我|麻烦你?|你?一定要|要)?"
        r"|(?:请|帮我|麻烦你?|一定要))"
        r"记住(?!了)(?:一下|这个|这件事)?\s*[:：,，]?\s*(?P<x>[^。！？!?\n]+)"
    ),
    re.compile(
        rf"(?i)(?:{_SENTENCE_START}(?:(?:also|and|oh|ok|okay|btw|so|hey)[,]?\s+)*(?:please\s+)?"
        r"|\bplease\s+|\b(?:can|could|would)\s+you\s+(?:please\s+)?)"
        r"remember(?:\s+this)?(?:\s+that)?\s*[:,]?\s+"
        r"(?P<x>[^\n]+?)(?=[.!?](?:\s|$)|[!?]|\n|$)"
    ),
)
_TRIM = " \t\"'“”‘’「」『』,，:：;；"


def extract(window: WindowText) -> list[ClaimDraft]:
    """Claims proposed for one window, in reading order."""
    drafts: list[ClaimDraft] = []
    for piece in window.pieces:
        if piece.role is not Role.USER:
            continue
        for pattern in _PATTERNS:
            for match in pattern.finditer(piece.text):
                value = match.group("x").strip(_TRIM)
                if len(value) < 2:
                    continue
                # The quote is the match without surrounding blanks; its offsets must name
                # exactly that text in the event's content.
                raw = match.group(0)
                quote = raw.strip()
                start = piece.start_char + match.start() + (len(raw) - len(raw.lstrip()))
                end = start + len(quote)
                drafts.append(
                    ClaimDraft(
                        subject="user",
                        predicate="note",
                        value=value,
                        text=value,
                        language=language_of(value),
                        importance=0.7,
                        confidence=0.9,
                        evidence=(
                            EvidenceSpan(
                                event_id=piece.event_id,
                                quote=quote,
                                start_char=start,
                                end_char=end,
                            ),
                        ),
                    )
                )
    return drafts
