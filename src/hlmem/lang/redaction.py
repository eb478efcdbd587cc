"""Secret detection and redaction: credentials, passwords, card numbers, Chinese ID numbers.

:func:`find_secrets` finds them and :func:`redact` masks them as ``[REDACTED:<kind>]``, for the
admission gate (a claim holding a secret is never stored) and wherever recall or explain shows
stored text. Each family is a regular expression compiled at import plus a small validator
(Luhn, the ID checksum, entropy), so results are reproducible and name the family that fired.

This module does no I/O and holds no state. It never logs the text it scans: the one log record
it writes says that redaction failed, not what it failed on.
"""

from __future__ import annotations

import logging
import math
import re
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import chain, pairwise

from hlmem.lang.credentials import HINTS as CREDENTIAL_HINTS
from hlmem.lang.credentials import KINDS as CREDENTIAL_KINDS
from hlmem.lang.credentials import credential_spans

log = logging.getLogger(__name__)

# Each detector names the lowercase substrings ("hints") without which it cannot match. A text
# with no hint at all (most event content and quotes) costs one lower() and a few substring
# tests. Keyword detectors run over the lowercased text, so their patterns start with a literal
# and the regex engine can skip ahead; boundaries before a match are checked in code for the
# same reason (a leading lookbehind disables that skip).

_W = "A-Za-z0-9_"
_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")
_LETTERS = frozenset("abcdefghijklmnopqrstuvwxyz")
_MARKER = re.compile(r"\[REDACTED:[a-z_]+\]")
#: what :func:`redact` puts in place of a secret
MARKER = _MARKER
_DIGIT_HINT = re.compile(r"[0-9]{4}[ -]?[0-9]{2}")
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_CJK = "\u3000-\u303f\u3400-\u9fff\uf900-\ufaff\uff00-\uffef"
_QUOTES = "\"'“”‘’「」『』`"
_KEY_VALUE = rf"(?!\[redacted:)[^\s{_QUOTES}{_CJK},;&]"  # ... of a key (it ends a query field)
_ASSIGN = r"[\"']?\s*(?:[:=：]|is\b|was\b|是|为|為)\s*[\"'“‘「『]?"
_TRAILING = ".,;:)]}>"  # a sentence may end right after a value; "!" and "?" may belong to it
_PLACEHOLDER = re.compile(r"(?i)^(?:<.*>|\$\{?.*|\{\{?.*|%.*%|x{3,}.*|\*+|\.{3,}|.*your[_-].*)$")
_UUID = re.compile(r"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}")
_HEX = re.compile(r"[0-9a-fA-F]+")
_WORDS = re.compile(r"[a-z]+(?:-[a-z]+)*")
_KEY_QUALIFIER = re.compile(
    r"(?:api|access|secret|private|client|encryption|signing|master|license|app)[_\- ]?$"
)
# A Luhn-valid number right after one of these words is an order or ticket number, not a card.
_NOT_CARD_CONTEXT = re.compile(
    r"(?i)(?:订单|单号|编号|流水|运单|快递|发票|工单|串号|电话|手机|(?<![a-z])(?:order|tracking"
    r"|invoice|ref|ticket|serial|sku|imei|isbn|ean|upc|phone|tel|id|no)(?![a-z]))[^0-9]{0,12}$"
)
_ID_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
_ID_CHECK = "10X98765432"


def luhn_valid(digits: str) -> bool:
    """The Luhn checksum of payment card numbers (ASCII digits only)."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def cn_id_valid(number: str) -> bool:
    """The GB 11643 check character of an 18-character Chinese resident ID number."""
    if len(number) != 18 or not number[:17].isascii() or not number[:17].isdigit():
        return False
    total = sum(int(d) * w for d, w in zip(number[:17], _ID_WEIGHTS, strict=True))
    return _ID_CHECK[total % 11] == number[17].upper()


def _entropy(s: str) -> float:
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in Counter(s).values())


def _class_switches(s: str) -> int:
    def cls(ch: str) -> int:
        return 0 if ch.isdigit() else 1 if ch.islower() else 2 if ch.isupper() else 3

    return sum(cls(a) != cls(b) for a, b in pairwise(s))


def _looks_random(token: str) -> bool:
    """A long token that reads like generated key material, not a word, path, id or hash name."""
    if len(token) < 20 or _UUID.fullmatch(token) or token.startswith(("/", "~", ".")):
        return False
    if not (any(c.isdigit() for c in token) and any(c.isalpha() for c in token)):
        return False
    if _class_switches(token) < len(token) // 4:  # "release_2024_candidate_build" switches little
        return False
    if _HEX.fullmatch(token):
        return len(token) >= 32 and _entropy(token) >= 3.0
    return _entropy(token) >= 3.5


def _plausible_value(value: str) -> bool:
    """An assigned value that could be a credential: not a placeholder, a word or a tiny number."""
    if len(value) < 8 or _PLACEHOLDER.match(value) or len(set(value)) <= 2:
        return False
    has_digit = any(c.isdigit() for c in value)
    mixed_case = any(c.islower() for c in value) and any(c.isupper() for c in value)
    return has_digit or (mixed_case and len(value) >= 12) or _looks_random(value)


def _card_valid(text: str, start: int, end: int) -> bool:
    digits = "".join(c for c in text[start:end] if c.isdigit())
    iin_ok = digits[0] in "3456" or "22" <= digits[:2] <= "27"
    if not (13 <= len(digits) <= 19 and iin_ok and luhn_valid(digits)):
        return False
    return not _NOT_CARD_CONTEXT.search(text, max(0, start - 24), start)


Check = Callable[[str, "re.Match[str]", int, int], bool]


def _value(ok: Callable[[str], bool]) -> Check:
    return lambda text, m, start, end: ok(text[start:end])


def _credential(text: str, m: re.Match[str], start: int, end: int) -> bool:
    # "key" alone is too common ("primary key: id_1"); it counts after api/access/secret/...
    before = text[max(0, m.start() - 12) : m.start()].lower()
    if m.group(1) == "key" and not _KEY_QUALIFIER.search(before):
        return False
    return _plausible_value(text[start:end])


@dataclass(frozen=True)
class _Detector:
    """One secret family: where it may be, what matches it, and which group is the secret."""

    kind: str
    hints: tuple[str, ...]  # lowercase substrings, one of which the text must hold; () = digits
    pattern: re.Pattern[str]
    group: int = 0
    check: Check | None = None
    #: run over the lowercased text (keyword patterns written in lowercase)
    lower: bool = False
    #: characters that may not stand right before the match (checked in code, see above)
    not_after: frozenset[str] = frozenset()
    #: drop sentence punctuation that a greedy value pattern took
    trim: bool = False


_KEY_HINTS = ("key", "token", "secret", "credential", "密钥", "秘钥", "令牌", "私钥", "凭证")
# Order is priority: when two detectors overlap, the earlier one names the span. Credentials
# said in words (hlmem.lang.credentials) rank between the two tuples.
_BEFORE_CREDENTIALS: tuple[_Detector, ...] = (
    _Detector(
        "private_key",
        ("-----begin",),
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----(?:[\s\S]{0,20000}?"
            r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|[A-Za-z0-9+/=\s]*)"
        ),
    ),
    _Detector(
        "jwt",
        ("eyj",),
        re.compile(rf"eyJ[{_W}-]{{8,}}\.eyJ[{_W}-]{{8,}}\.[{_W}-]{{8,}}"),
        not_after=_TOKEN_CHARS,
    ),
    _Detector(
        "anthropic_key",
        ("sk-ant-",),
        re.compile(rf"sk-ant-[{_W}-]{{20,}}"),
        not_after=_TOKEN_CHARS,
    ),
    _Detector(
        "openai_key",
        ("sk-",),
        re.compile(rf"sk-(?!ant-)[{_W}-]{{20,}}"),
        check=_value(lambda s: not _WORDS.fullmatch(s[3:])),
        not_after=_TOKEN_CHARS,
    ),
    _Detector(
        "aws_access_key",
        ("akia", "asia", "abia", "acca"),
        re.compile(r"(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Z0-9])"),
        not_after=frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"),
    ),
    _Detector(
        "aws_secret_key",
        ("aws",),
        re.compile(
            r"aws[_\- ]?secret(?:[_\- ]?access)?(?:[_\- ]?key)?"
            + _ASSIGN
            + r"([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])"
        ),
        group=1,
        lower=True,
    ),
    _Detector(
        "github_token",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        re.compile(rf"gh[pousr]_[A-Za-z0-9]{{30,255}}|github_pat_[{_W}]{{22,255}}"),
        not_after=_TOKEN_CHARS,
    ),
    _Detector(
        "slack_token",
        ("xox",),
        re.compile(r"xox[bpars]-[A-Za-z0-9-]{10,}"),
        not_after=_TOKEN_CHARS,
    ),
    _Detector(
        "google_api_key",
        ("aiza",),
        re.compile(rf"AIza[{_W}-]{{35}}(?![{_W}-])"),
        not_after=_TOKEN_CHARS,
    ),
    _Detector(
        "stripe_key",
        ("_live_", "_test_"),
        re.compile(r"[sr]k_(?:live|test)_[0-9A-Za-z]{16,}"),
        not_after=_TOKEN_CHARS,
    ),
    # https://user:password@host: only the password goes.
    _Detector(
        "url_password", ("://",), re.compile(r"://[^\s/:@]{0,128}:([^\s/@]{1,256})@"), group=1
    ),
    _Detector(
        "bearer_token",
        ("bearer",),
        re.compile(r"bearer\s+([\w.~+/-]{16,}=*)"),
        group=1,
        check=_value(_plausible_value),
        lower=True,
        not_after=_ALNUM,
    ),
)
_AFTER_CREDENTIALS: tuple[_Detector, ...] = (
    _Detector(
        "credential",
        _KEY_HINTS,
        re.compile(
            r"(token|secret|credentials?|key|(?:api\s*)?(?:密钥|秘钥|令牌|私钥|凭证))(?![a-z])"
            + _ASSIGN
            + rf"({_KEY_VALUE}{{8,512}})"
        ),
        group=2,
        check=_credential,
        lower=True,
        trim=True,
    ),
    _Detector(
        "cn_id_number",
        (),
        re.compile(
            r"(?<![0-9A-Za-z])[1-9][0-9]{5}(?:18|19|20)[0-9]{2}(?:0[1-9]|1[0-2])"
            r"(?:0[1-9]|[12][0-9]|3[01])[0-9]{3}[0-9Xx](?![0-9A-Za-z])"
        ),
        check=_value(cn_id_valid),
    ),
    _Detector(
        "card_number",
        (),
        re.compile(
            r"(?<![0-9A-Za-z_+./-])(?:[0-9]{13,19}"
            r"|[0-9]{4}([ -])[0-9]{4}\1[0-9]{4}\1[0-9]{1,4}(?:\1[0-9]{1,3})?"
            r"|[0-9]{4}([ -])[0-9]{6}\2[0-9]{4,5})(?![0-9A-Za-z_]|[.,-][0-9])"
        ),
        check=lambda text, m, start, end: _card_valid(text, start, end),
    ),
)
_NEAR_KEYWORD = re.compile(
    r"(?:keys?|tokens?|secrets?|credentials?)(?![a-z])|密钥|秘钥|令牌|私钥|凭证"
)
_TOKEN = re.compile(r"(?<![\w+/=-])[\w+/=-]{20,512}(?![\w+/=-])", re.ASCII)
_NEAR_CHARS = 48
#: the version of the detection rules: raised whenever they find more, so that maintenance
#: takes out of what was derived before what the new rules find (:mod:`hlmem.claims.secret_scan`)
RULES_VERSION = 2
_REDACT_PASSES_MAX = 8  # each pass only adds markers; two are the most seen in practice
_DETECTORS = (*_BEFORE_CREDENTIALS, *_AFTER_CREDENTIALS)
_HINTS = tuple(dict.fromkeys([*(h for d in _DETECTORS for h in d.hints), *CREDENTIAL_HINTS]))

SECRET_KINDS: tuple[str, ...] = tuple(
    dict.fromkeys(
        [
            *(d.kind for d in _BEFORE_CREDENTIALS),
            *CREDENTIAL_KINDS.values(),
            *(d.kind for d in _AFTER_CREDENTIALS),
            "high_entropy",
        ]
    )
)


def _lowered(text: str) -> str:
    low = text.lower()
    # lower() lengthens a handful of characters ("İ"); offsets must stay those of ``text``.
    return low if len(low) == len(text) else text.translate(_ASCII_LOWER)


def _detector_hits(text: str, low: str) -> Iterable[tuple[int, int, str]]:
    digits = _DIGIT_HINT.search(text) is not None
    yield from _hits(_BEFORE_CREDENTIALS, text, low, digits)
    if any(h in low for h in CREDENTIAL_HINTS):
        yield from credential_spans(text, low)
    yield from _hits(_AFTER_CREDENTIALS, text, low, digits)


def _hits(
    detectors: tuple[_Detector, ...], text: str, low: str, digits: bool
) -> Iterable[tuple[int, int, str]]:
    for det in detectors:
        if not (any(h in low for h in det.hints) if det.hints else digits):
            continue
        subject, pos = (low if det.lower else text), 0
        while (m := det.pattern.search(subject, pos)) is not None:
            hit = _accept(det, text, low, m)
            if hit is not None:
                yield hit
            # Look again one character on, not after the match: a greedy value ("pwd:sk-…")
            # may have swallowed a real one ("password: …"); find_secrets merges overlaps.
            pos = m.start() + 1


def _accept(det: _Detector, text: str, low: str, m: re.Match[str]) -> tuple[int, int, str] | None:
    if m.start() > 0 and low[m.start() - 1] in det.not_after and low[m.start()] < "\x80":
        return None  # a Latin keyword or token glued to a word; CJK keywords have no spaces
    start, end = m.span(det.group)
    if det.trim:
        while end > start and text[end - 1] in _TRAILING:
            end -= 1
    if end > start and (det.check is None or det.check(text, m, start, end)):
        return start, end, det.kind
    return None


def _random_near_keyword(
    text: str, low: str, markers: list[tuple[int, int]]
) -> Iterable[tuple[int, int, str]]:
    """Long random-looking tokens within a few characters after key / token / secret / 密钥.

    Redaction must be idempotent, so markers of an earlier pass count neither as keywords (the
    "key" of ``[REDACTED:openai_key]``) nor as distance: a marker ends the search, because it
    may be shorter than what it replaced and would bring a farther token into reach.
    """
    tokens: list[re.Match[str]] | None = None
    starts: list[int] = []
    for k in _NEAR_KEYWORD.finditer(low):
        if k.start() > 0 and low[k.start() - 1] in _LETTERS and low[k.start()] < "\x80":
            continue  # "monkey"; a CJK keyword needs no space before it
        if any(s <= k.start() < e for s, e in markers):
            continue
        if tokens is None:
            tokens = list(_TOKEN.finditer(text))
            starts = [t.start() for t in tokens]
        reach = min([k.end() + _NEAR_CHARS, *(s for s, _ in markers if s >= k.end())])
        i = bisect_left(starts, k.end())
        while i < len(tokens) and tokens[i].start() <= reach:
            if _looks_random(tokens[i].group()):
                yield tokens[i].start(), tokens[i].end(), "high_entropy"
            i += 1


def find_secrets(text: str) -> list[tuple[int, int, str]]:
    """``(start, end, kind)`` of each secret in ``text``, in order and without overlaps.

    Only the secret itself is spanned: in "密码是abc123" or ``api_key=…`` the keyword stays.
    Overlapping hits of several detectors merge into one span (the union: when detectors
    disagree about where a secret ends, more is hidden, not less), named by the detector
    listed first. Markers of an earlier :func:`redact` are left alone.
    """
    if not text:
        return []
    low = _lowered(text)
    if not any(h in low for h in _HINTS) and not _DIGIT_HINT.search(text):
        return []
    markers = [m.span() for m in _MARKER.finditer(text)] if "[REDACTED:" in text else []
    hits = [
        (start, end, rank, kind)
        for rank, (start, end, kind) in enumerate(
            chain(_detector_hits(text, low), _random_near_keyword(text, low, markers))
        )
        if all(end <= s or start >= e for s, e in markers)
    ]
    hits.sort()
    spans: list[tuple[int, int, str]] = []
    best = 0  # rank of the detector that names the last span
    for start, end, rank, kind in hits:
        if spans and start < spans[-1][1]:
            first, last, name = spans[-1]
            if rank < best:
                name, best = kind, rank
            spans[-1] = (first, max(last, end), name)
        else:
            spans.append((start, end, kind))
            best = rank
    return spans


def redact(text: str) -> str:
    """``text`` with every secret replaced by ``[REDACTED:<kind>]``; the rest is kept as is.

    Passes repeat until one finds nothing (a marker can change what its neighbours look like:
    a key glued to the text before a private key only stands alone once that key is a
    marker), so ``redact(redact(t)) == redact(t)``. Text without secrets takes one pass.
    Never raises: should a detector ever fail, the whole text is withheld rather than shown.
    """
    try:
        for _ in range(_REDACT_PASSES_MAX):
            spans = find_secrets(text)
            if not spans:
                return text
            text = _replace(text, spans)
    except Exception:  # a redaction failure must not break recall or explain, nor leak text
        log.warning("redaction failed", extra={"action": "redaction_failed"}, exc_info=True)
        return "[REDACTED:unscanned]"
    return text


def scrub(text: str) -> str:
    """``text`` as anything derived from it may hold it (a full-text row, a vector's input):
    :func:`redact`, then every marker replaced by a blank, so that an index holds neither the
    secret nor a word that every redacted text shares (a query for "REDACTED" or
    "[REDACTED:password]" must not find every text that held a password). Never raises."""
    if "[REDACTED:" not in text and not find_secrets(text):
        return text
    return _MARKER.sub(" ", redact(text))


def secret_kind(text: str) -> str | None:
    """The kind of the first secret in ``text``, or of the first marker an earlier
    :func:`redact` left there; None when it holds neither."""
    found = find_secrets(text)
    if found:
        return found[0][2]
    marker = _MARKER.search(text) if "[REDACTED:" in text else None
    return marker.group()[10:-1] if marker else None


def _replace(text: str, spans: list[tuple[int, int, str]]) -> str:
    out: list[str] = []
    pos = 0
    for start, end, kind in spans:
        out += (text[pos:start], f"[REDACTED:{kind}]")
        pos = end
    out.append(text[pos:])
    return "".join(out)
