"""In-conversation forget requests: "忘了我刚才说的", "forget what I just said", "scratch that".

:func:`forget_requests` finds the clauses of a user turn that ask the assistant to forget what
the user just said. It is deterministic and strict: a clause counts only when it is, as a
whole, a request addressed to the assistant with an object that points back at the user's own
words ("我刚才说的", "这个", "what I just said", "that") or a fixed retraction ("当我没说",
"scratch that"). Ordinary sentences holding the word never count: "别忘了明天开会" and "don't
forget my meeting" are plans, "我忘了带钥匙" and "I forgot my keys" are statements, "forget it"
and "算了" are "never mind", and "forget that I'm vegetarian" names content (forget it by query).
Verbs that also edit code ("删掉", "delete", "remove") count only with an object that is speech
("删掉我刚才说的"), never with a bare "that".

Both extractors emit a found request as a draft with the reserved predicate
:data:`FORGET_PREDICATE` (:func:`request_drafts`): the rules extractor while it reads a piece, the
model extractor beside the model's claims (a model's own drafts with that predicate are dropped:
a model never decides a forget). The admission stage re-checks the quote here and then forgets
(see :mod:`hlmem.stages.admission`). This module is pure: no I/O, no state, patterns compiled
at import.
"""

from __future__ import annotations

import re

from hlmem.lang import language_of
from hlmem.messages import ClaimDraft, EvidenceSpan, Role, WindowPiece, WindowText

#: the predicate of a draft that is a forget request, never a claim (admission acts on it)
FORGET_PREDICATE = "forget_request"

_CLAUSE = re.compile(r"[^，,。.!！?？;；\n]+[，,。.!！?？;；]*")

# --- Chinese ------------------------------------------------------------------------------------

_ZH_LEAD = r"(?:(?:好吧|算了|哦|噢|嗯|啊|对了|不对|不好意思|抱歉|还有|另外|那个)\s*)*"
_ZH_POLITE = r"(?:请你?|麻烦你?|帮我|你能|能不能|可以|可不可以|你可以|你可不可以)?"
_ZH_SPEECH = (
    r"(?:我)?(?:刚才|刚刚|刚|前面|上面|之前|方才|上一句)?"
    r"(?:说的|讲的|告诉你的|提到的|发的|写的|说过的)"
    r"(?:话|内容|事|事情|那些|那个|这个|那句话?|这句话?|那些话|东西)?"
)
_ZH_DEIXIS = (
    r"(?:这个|那个|这件事|那件事|这句话?|那句话?|这条|那条|这些|那些|上一句话?|上一条|"
    r"刚才那句话?|刚才那条|刚才那个|刚才的话|刚才的|刚刚那句话?|刚刚的话|刚刚的)"
)
_ZH_TAIL = r"(?:吧|了|哦|啊|呀|嘛|哈|好吗|好不好|行吗|可以吗|谢谢)*"
_ZH_FORGET = r"(?:忘了|忘掉|忘记|忘)"
_ZH_ERASE = r"(?:删掉|删了|删除|去掉|抹掉|清除|清掉)"
_ZH_REQUEST = re.compile(
    rf"{_ZH_LEAD}(?:"
    # 忘了我刚才说的 / 请忘掉这个 / 删掉我刚才说的
    rf"{_ZH_POLITE}(?:{_ZH_FORGET}(?:一下)?{_ZH_SPEECH}"
    rf"|(?:忘掉|忘记)(?:一下)?{_ZH_DEIXIS}"
    rf"|{_ZH_ERASE}(?:一下)?{_ZH_SPEECH})"
    # 把我刚才说的忘了 / 把这个忘掉
    rf"|{_ZH_POLITE}把(?:{_ZH_SPEECH}|{_ZH_DEIXIS})(?:给)?(?:{_ZH_FORGET}|{_ZH_ERASE})(?:掉)?"
    # 别记这个 / 不用记了 / 不要记住我刚才说的
    rf"|{_ZH_POLITE}(?:别|不要|不用|不必)(?:记|记住|记下|记着|保存|存)"
    rf"(?:{_ZH_SPEECH}|{_ZH_DEIXIS}|了)"
    # 就当我没说 / 刚才说的不算
    r"|(?:就)?当我没(?:说|讲)(?:过)?"
    rf"|(?:{_ZH_SPEECH}|{_ZH_DEIXIS})(?:不算数?|作废|别记了?|不用记了?|请忘掉|忘掉)"
    rf"){_ZH_TAIL}"
)
# "忘了我刚才说的啥" is "I forgot what I said", a question about it.
_ZH_QUESTION = re.compile(r"啥|什么|哪")

# --- English ------------------------------------------------------------------------------------

_EN_LEAD = r"(?:(?:oh|ok|okay|actually|wait|hmm|sorry|no|nah|hey|um|uh|also|and|so|well|oops)\s+)*"
_EN_POLITE = (
    r"(?:(?:please|pls|just|(?:can|could|would|will)\s+you(?:\s+please)?|"
    r"i\s+(?:want|need)\s+you\s+to|i'?d\s+like\s+you\s+to)\s+)*"
)
_EN_SPEECH = (
    r"(?:what\s+i\s+(?:just\s+)?(?:said|told\s+you|wrote|typed|mentioned|shared)"
    r"(?:\s+(?:earlier|before|just\s+now|a\s+moment\s+ago))?"
    r"|(?:my|the|that)\s+(?:last|previous)\s+(?:message|sentence|statement|comment|answer|reply"
    r"|thing\s+i\s+said)"
    r"|(?:the\s+)?last\s+thing\s+i\s+said"
    r"|(?:everything|all)\s+(?:that\s+)?i\s+just\s+(?:said|told\s+you|wrote))"
)
_EN_DEIXIS = r"(?:that|this)(?:\s+(?:last\s+)?(?:part|bit|one|message|info|information))?"
_EN_TAIL = r"(?:\s+(?:please|pls|thanks|thank\s+you|ok|okay|now|too|as\s+well|for\s+me))*"
_EN_REQUEST = re.compile(
    rf"{_EN_LEAD}(?:"
    rf"{_EN_POLITE}(?:forget|disregard|erase|unlearn)(?:\s+about)?\s+(?:{_EN_SPEECH}|{_EN_DEIXIS})"
    rf"|{_EN_POLITE}(?:delete|remove|drop|discard|ignore|strike)\s+{_EN_SPEECH}"
    rf"|(?:please\s+)?(?:don't|do\s+not)\s+(?:remember|save|store|keep|memori[sz]e|record)"
    rf"\s+(?:{_EN_SPEECH}|{_EN_DEIXIS})"
    rf"|never\s*mind\s+{_EN_SPEECH}"
    r"|scratch\s+that"
    rf"){_EN_TAIL}"
)
_TRAILING = "，,。.!！?？;；~～ \t"


def forget_requests(text: str) -> list[tuple[int, int]]:
    """The spans (start, end) of the clauses of ``text`` that are forget requests, in order.

    A clause is cut at sentence and comma punctuation; it counts when the whole clause, without
    its closing punctuation, is a request (see the module docstring). Never raises.
    """
    out: list[tuple[int, int]] = []
    for m in _CLAUSE.finditer(text):
        raw = m.group(0)
        body = raw.rstrip(_TRAILING)
        lead = len(body) - len(body.lstrip())
        body = body.strip()
        if body and is_forget_request(body):
            start = m.start() + lead
            out.append((start, start + len(body)))
    return out


def request_draft(piece: WindowPiece, start: int, end: int) -> ClaimDraft:
    """The request at ``piece.text[start:end]`` as a draft: never a claim, admission acts on it
    (its value only keeps two requests of one window apart)."""
    quote = piece.text[start:end]
    at = piece.start_char + start
    return ClaimDraft(
        subject="user",
        predicate=FORGET_PREDICATE,
        value=f"{piece.event_id}#{at}",
        text=quote,
        language=language_of(quote),
        importance=0.0,
        confidence=1.0,
        evidence=(
            EvidenceSpan(
                event_id=piece.event_id, quote=quote, start_char=at, end_char=at + len(quote)
            ),
        ),
    )


def request_drafts(window: WindowText) -> list[ClaimDraft]:
    """The forget requests of a window's user pieces, as drafts, in reading order."""
    return [
        request_draft(piece, start, end)
        for piece in window.pieces
        if piece.role is Role.USER
        for start, end in forget_requests(piece.text)
    ]


def is_forget_request(clause: str) -> bool:
    """Whether one clause (punctuation around it ignored) is a forget request."""
    body = clause.strip().strip(_TRAILING)
    if not body or len(body) > 80:
        return False
    if re.search(r"[\u3400-\u9fff]", body):
        compact = re.sub(r"\s+", "", body)
        return bool(_ZH_REQUEST.fullmatch(compact)) and not _ZH_QUESTION.search(compact)
    low = " ".join(body.replace("’", "'").lower().split())
    return bool(_EN_REQUEST.fullmatch(low))
