"""Credentials said in words: a secret-bearing noun near a value shaped like a secret.

People tell passwords in many ways: "the root pw is Tr0ub4dor&10", "服务器 root 密码
Tr0ub4dor&11" (no 是), "我的邮箱密码和QQ密码都是 qwerty@2024", "Tr0ub4dor&12 is my wifi
password", "支付密码 654321", "验证码 482913", "my login is alice / Tr0ub4dor&9". So a
credential is found by what it is, not by a sentence template: a **cue** (a secret-bearing
noun) and a **value** near it, in any order, in either language, and how close the two are
decides how much the value must look like a secret:

- after the cue with an assignment (``:``, ``=``, is / was / are, 是 / 为 / 都是 / 改成 …, the
  English ones after an optional "for my gmail account"): any value that is not an ordinary
  word of a sentence ("the password is incorrect", "密码是什么" hold none);
- right after the cue, without one ("root 密码 Tr0ub4dor&11", "支付密码 654321"): a value
  with a digit or a symbol among its letters, or a number of 4 digits or more;
- before the cue, joined by a copula ("Tr0ub4dor&12 is my wifi password", "654321 是支付密码",
  "use X as the password"), or later in the same clause after an assignment ("密码我记在这里：
  X", "the password, in case you forget, is X"): the same shape, a bare year excluded;
- a list takes every value ("分别是 abc123 和 def456").

The cue families: passwords (password, passwd, passcode, passphrase, pwd, pw, 密码 and every
compound of it: 邮箱密码, 支付密码, QQ密码, 登录密码 …, 口令), PINs (numbers only), one-time and
verification codes (验证码, 动态码, OTP, "verification code", …; kind ``verification_code``),
``pass=`` / ``pass:``, and logins (login, account, username, 登录, 账号, 用户名), which hold a
secret only as a pair: in "my login is alice / Tr0ub4dor&9" the password goes and the user
name stays (like ``https://user:password@host``: a name is how one is called, not what lets
one in).

Everything here is linear in the text: the cues are found by one scan of the lowercased
text, each cue looks at a bounded stretch around it (:data:`VALUE_MAX`, :data:`BEFORE_CHARS`,
:data:`FAR_CHARS`), the stretch before a cue never reaches back past the previous cue, and a
cue inside a value already taken is skipped. No I/O, no state.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from itertools import pairwise

CJK = "\u3000-\u303f\u3400-\u9fff\uf900-\ufaff\uff00-\uffef"
QUOTES = "\"'“”‘’「」『』`"
_OPEN_QUOTE = "[\"'“‘「『]?"
#: the longest value a cue inspects; a longer run of value characters is taken whole once
#: accepted (scanned once: the cues inside it are skipped)
VALUE_MAX = 256
#: how far before a cue a value may stand ("Tr0ub4dor&12 is my wifi password")
BEFORE_CHARS = 64
#: how far after a cue, in the same clause, an assignment may come ("密码我记在这里：X")
FAR_CHARS = 40

_LATIN = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")
_VALUE_RUN = re.compile(rf"[^\s{QUOTES}{CJK}]+")
_VALUE = re.compile(rf"[^\s{QUOTES}{CJK}]{{1,{VALUE_MAX}}}")
_TRAILING = ".,;:)]}>"  # a sentence may end right after a value; "!" and "?" may belong to it
_MARKER_START = "[redacted:"
_EDGES = "()[]{}<>*_~#@`'\"-+=!?.,;:/\\|"

# Cues are found from their hints with str.find (a regex alternation tried at every position
# costs ~0.15 µs a character; finding the hints costs a small fraction of that), and each hint
# found is read by its family's pattern where it stands ("code" backwards: "sms code").
_PW = re.compile(r"passwords?|passwd|passcodes?|pass ?phrases?|pass|pwd|pw|密码|密碼|口令")
_PIN = re.compile(r"pin(?:\s*(?:codes?|numbers?)|\s*码|\s*碼)?")
_CODE = re.compile(r"otp(?:\s*codes?)?|验证码|驗證碼|动态码|安全码|授权码|提取码|确认码")
_CODE_WORDS = re.compile(
    r"(?:verification|security|confirmation|auth(?:entication|orization)?|access|2fa|mfa|sms"
    r"|one[- ]time)\s*\Z"
)
_CODES = re.compile(r"codes?")
_LOGIN = re.compile(
    r"log-?ins?|logons?|sign-?ins?|user ?names?|accounts?|登录|登陆|登入|账号|帐号|帳號|账户|用户名"
)
_PW_HINTS = ("pass", "pw", "密码", "密碼", "口令")
_CODE_HINTS = ("otp", "验证码", "驗證碼", "动态码", "安全码", "授权码", "提取码", "确认码")
_PASS_GLUE = frozenset("_/|\n,;({")
_PASS_USER = re.compile(r"user|login|账号|帐号|用户")
_USER_AND = re.compile(r"(?:user ?(?:name)?|login|账号|帐号|用户名?)\s*(?:/|&|和|与|\band\b)\s*\Z")
_LOGIN_HINTS = (
    "login", "log-in", "logon", "sign-in", "signin", "username", "user name", "account",
    "登录", "登陆", "登入", "账号", "帐号", "帳號", "账户", "用户名",
)  # fmt: skip
#: (hint, family, the pattern read where the hint starts)
_ANCHORS: tuple[tuple[str, str, re.Pattern[str]], ...] = (
    *((h, "pw", _PW) for h in _PW_HINTS),
    ("pin", "pin", _PIN),
    ("code", "code", _CODES),
    *((h, "code", _CODE) for h in _CODE_HINTS),
    *((h, "login", _LOGIN) for h in _LOGIN_HINTS),
)
#: lowercase substrings without which no cue can match (the fast path of a text)
HINTS = tuple(h for h, _, _ in _ANCHORS)
#: the kind of secret each cue family names
KINDS = {
    "pw": "password",
    "pass": "password",
    "pin": "password",
    "login": "password",
    "code": "verification_code",
}

# An assignment between a cue and its value.
_SET_ZH = (
    r"(?:(?:的话|呢|啊|嘛)\s*[,，]?\s*)?"
    r"(?:都|也|还|就|仍然?|还是|一直|已经|已|现在|目前|暂时|分别|统一|全都|全部)*"
    r"(?:是|为|為|改成了?|改为|改為|修改为|修改成|重置为|重置成|更新为|设置为|设置成|设为|设成了?"
    r"|换成了?|变成了?|用的是|叫做?)"
)
_SET_EN = (
    r"(?:(?:is|was|are|were|'s|will be|has been|have been|remains|stays)"
    r"(?:\s+(?:now|still|both|all|also|just|currently|always|actually|simply|then))*"
    r"(?:\s+(?:set|changed|reset|updated)\s+to)?"
    r"|(?:changed|set|reset|updated)\s+to)(?![a-z])"
)
_SET_SYM = r"(?:[:=：]|=>|->)"
_SYMBOL = re.compile(_SET_SYM)
_QUALIFIER = r"(?:\s+(?:for|of|to|on|at|in)(?:\s+[^\s:=：，。,;；!?！？\"'“”]{1,32}){1,4}?)?"
_GLUED_TAIL = r"(?:[_-][a-z0-9_-]{0,24}(?=[\"']?\s*[:=：]))?"  # DB_PASSWORD_PROD=...
_AFTER_SET = re.compile(
    _GLUED_TAIL
    + _QUALIFIER
    + rf"[\"']?\s*(?P<set>{_SET_SYM}|{_SET_ZH}|{_SET_EN}|(?P<to>to)(?![a-z]))\s*[:：]?\s*"
    + _OPEN_QUOTE
)
_AFTER_BARE = re.compile(rf"[\"']?[ \t]*{_OPEN_QUOTE}")
_MORE = re.compile(r"\s*(?:和|与|與|跟|及|、|,|，|/|;|；|&|\band\b)\s*" + _OPEN_QUOTE)
_PAIR = re.compile(rf"[ \t]*(?P<u>[^\s{QUOTES}{CJK}/|:：,，]{{1,64}})(?P<sep>\s*[/|:：,，]\s*|\s+)")

# A value before its cue, then a copula and a few words: "Tr0ub4dor&12 is my wifi ",
# "654321 是支付", "X 当作新的". The value starts at a boundary (so the search tries only a
# few places), and the filler ends where the cue begins.
_DETERMINERS = (
    r"(?:(?:my|the|our|your|his|her|their|a|an|this|that|new|current|old|real|actual|default"
    r"|main|only|same)\s+)*(?:[a-z0-9_.+-]{1,20}\s+)?"
)
_FILLER_ZH = (
    r"(?:我们的?|我的?|你的?|他的?|她的?|新的?|现在的|当前的?|默认的?|的|这个|那个)*"
    r"[\u3400-\u9fffa-z0-9 ]{0,10}"
)
_BEFORE = re.compile(
    rf"(?:(?<=[\s{CJK}\"'“‘「『(:=,])|^)(?P<v>[^\s{QUOTES}{CJK}]{{4,{BEFORE_CHARS}}})"
    rf"(?:\s+(?:is|was|are|as|will be)\s+{_DETERMINERS}"
    rf"|\s*(?:就是|也是|都是|是|为|為|作为|作為|当作|当成|当|做|设为|设成|改成了?|改为){_FILLER_ZH})\Z"
)
# A value later in the clause, after an assignment: "密码我记在这里了：X", "the password, in
# case you forget, is X". The words right after the cue must not make another noun of it
# ("password manager", "密码学", "密码长度").
_FAR_OPENER = re.compile(
    r"\s*[,，(（?？]|\s+(?:for|you|i|we|that|which|here|again|btw|by|in|on|at|to|of|just|now"
    r"|then|please)(?![a-z])|\s*(?![管学锁箱本框器强长规策位表机卡错输找提格])[\u3400-\u9fff]"
)
_FAR = re.compile(
    rf"[^.。!！;；\n:：=]{{1,{FAR_CHARS}}}?"  # a question may come first: "my password? it's X"
    rf"(?:[:：=]|是|为|(?<![a-z])(?:is|was)(?![a-z])|'s(?![a-z]))\s*{_OPEN_QUOTE}"
)

_UNITS_ZH = frozenset("年月日号號天次位个個岁歲元块塊分秒点點小周")
_UNITS_EN = re.compile(
    r"\s*(?:digits?|characters?|chars?|letters?|symbols?|times?|days?|hours?|minutes?|mins?"
    r"|seconds?|weeks?|months?|years?|attempts?|tries|retries)(?![a-z])"
)
_NOT_SECRET_SHAPE = re.compile(
    r"(?i)[a-z][a-z0-9+.-]*://.*|www\..*|[/~.\\].*|[\w.+-]+@[\w-]+\.[\w.-]+"
    r"|v?\d+(?:\.\d+)+(?:[-+][\w.]+)?|[a-z]+\d+(?:\.\d+)+"
)
_PLACEHOLDER = re.compile(r"(?i)^(?:<.*>|\$\{?.*|\{\{?.*|%.*%|x{3,}.*|\*+|\.{3,}|.*your[_-].*)$")
_YEAR = re.compile(r"(?:19|20)[0-9]{2}")
_WORDISH = re.compile(r"[a-z]+(?:-[a-z]+)*")
_WORD_ENDINGS = ("ing", "ed", "able", "ible", "ive", "ful", "less", "ous", "ly", "tion", "ment")
_STOP = frozenset(
    "yes no true false off is was the a an my mine your yours his her hers their our ours its "
    "incorrect wrong correct right invalid valid required expired empty blank missing changed "
    "reset set same different strong weak secure insecure safe hidden stored saved encrypted "
    "hashed needed optional mandatory too not very still already now also being been what "
    "unknown forgotten long short protected ok fine good bad new old updated none null n/a na "
    "tbd here below above there in on at for to of and or that this it manager managers field "
    "policy rules requirements see please check enter type use click follow case sensitive "
    "simple easy hard complicated complex secret private personal only just something "
    "anything nothing same same-as like unchanged different default temporary temp".split()
)


def _has_letter(value: str) -> bool:
    return any(c.isalpha() for c in value)


def _quantity(low: str, end: int) -> bool:
    """Whether the number ending at ``end`` counts something ("8位", "90 days", "12 chars")."""
    after = low[end : end + 1]
    return bool(after and after in _UNITS_ZH) or _UNITS_EN.match(low, end) is not None


def _numeric(value: str, low: str, end: int) -> bool:
    """4 to 16 ASCII digits, not a quantity."""
    return 4 <= len(value) <= 16 and value.isascii() and value.isdigit() and not _quantity(low, end)


def _shaped(value: str, low: str, end: int) -> bool:
    """Shaped like a secret without an assignment: letters with a digit or a symbol among
    them, mixed case that switches often, or a number of 4 digits or more. Punctuation around
    a word does not make it one ("(OTP)", "manager**:", "@artsy")."""
    if _numeric(value, low, end):
        return True
    core = value.strip(_EDGES)
    if len(core) < 4 or _NOT_SECRET_SHAPE.fullmatch(value) or _PLACEHOLDER.match(value):
        return False
    if len(set(core)) <= 2 or not _has_letter(core):
        return False
    if any(not c.isalpha() for c in core):
        return True
    switches = sum(a.islower() != b.islower() for a, b in pairwise(core))
    return len(core) >= 8 and switches >= 3


def _assigned(value: str) -> bool:
    """Any value after an assignment, except the ordinary words that follow one in a sentence
    about passwords ("is incorrect", "is required", "is at least …")."""
    folded = value.casefold()
    if len(value) < 3 or folded in _STOP or _PLACEHOLDER.match(value) or len(set(value)) <= 1:
        return False
    if value.startswith(("/", "~/", "./", "http")):
        return False
    return not (_WORDISH.fullmatch(folded) and len(folded) >= 6 and folded.endswith(_WORD_ENDINGS))


def _value_at(text: str, low: str, pos: int) -> tuple[int, int] | None:
    """The value that starts at ``pos`` (without the sentence punctuation it ends on), or
    None: nothing value-like there, or the marker of an earlier redaction."""
    m = _VALUE.match(text, pos)
    if m is None or low.startswith(_MARKER_START, pos):
        return None
    end = m.end()
    while end > pos and text[end - 1] in _TRAILING:
        end -= 1
    return (pos, end) if end > pos else None


def _whole(text: str, start: int, end: int) -> int:
    """Where an accepted value really ends: a value cut at :data:`VALUE_MAX` goes on."""
    if end - start < VALUE_MAX:
        return end
    m = _VALUE_RUN.match(text, start)
    return m.end() if m else end


def _after(
    text: str, low: str, family: str, cue: tuple[int, int]
) -> tuple[list[tuple[int, int]], bool]:
    """The values after a cue, and whether an assignment introduced them."""
    cue_start, cue_end = cue
    if _USER_AND.search(low, max(0, cue_start - 16), cue_start):
        family = "login"  # "user/pass: dave / Dav3Pass!", "用户名和密码：…": a pair
    m = _AFTER_SET.match(low, cue_end)
    # "changed my password to X": "to" only introduces a value shaped like a secret ("send
    # the password to alice" names who gets it)
    assigned = m is not None and m.group("to") is None
    if family == "pass" and not (m is not None and _SYMBOL.fullmatch(m.group("set"))):
        return [], assigned
    if family == "login":
        return _pair(text, low, m.end() if m else cue_end), assigned
    pos = m.end() if m else _after_bare(low, cue_end, glued=low[cue_end - 1] >= "\x80")
    if pos is None:
        return [], assigned
    found = _value_at(text, low, pos)
    if found is None or not _fits(family, text, low, found, assigned=assigned):
        return [], assigned
    values = [found]
    while (more := _MORE.match(low, values[-1][1])) is not None:
        nxt = _value_at(text, low, more.end())
        if nxt is None or not _fits(family, text, low, nxt, assigned=False):
            break
        values.append(nxt)
    return values, assigned


def _after_bare(low: str, cue_end: int, *, glued: bool) -> int | None:
    """Where a value right after the cue starts: after blanks or a quote, or (a Han cue,
    "支付密码654321") straight after it; a Latin cue glued to more ("password_hash",
    "password-protected") has none."""
    m = _AFTER_BARE.match(low, cue_end)
    if m is None or (m.end() == cue_end and not glued):
        return None
    return m.end()


def _fits(family: str, text: str, low: str, span: tuple[int, int], *, assigned: bool) -> bool:
    value = text[span[0] : span[1]]
    if family == "pin":
        return _numeric(value, low, span[1])
    if family == "code":
        return _numeric(value, low, span[1]) or (
            len(value) >= 4 and any(c.isdigit() for c in value) and _shaped(value, low, span[1])
        )
    if assigned:  # a number after one is no quantity either ("is 1000 times better")
        return _assigned(value) and not (value.isdigit() and _quantity(low, span[1]))
    return _shaped(value, low, span[1])


def _pair(text: str, low: str, pos: int) -> list[tuple[int, int]]:
    """The password of a ``user / password`` pair after a login cue (the user name stays)."""
    m = _PAIR.match(low, pos)
    if m is None:
        return []
    found = _value_at(text, low, m.end())
    if found is None:
        return []
    value = text[found[0] : found[1]]
    if not _shaped(value, low, found[1]):
        return []
    if not m.group("sep").strip():  # "login alice Tr0ub4dor&9": only a value with a digit
        core = value.strip(_EDGES)  # or a symbol in it ("accounts include @HansObrist")
        if len(core) < 6 or core.isalpha():
            return []
    return [found]


def _before(text: str, low: str, family: str, start: int, floor: int) -> tuple[int, int] | None:
    """A value before the cue at ``start``, joined to it by a copula (never before ``floor``,
    the end of the previous cue's reach)."""
    if family in ("login", "pass"):
        return None
    lo = max(floor, start - BEFORE_CHARS - 24)
    # pos / endpos, not a slice: the boundary before the value is read in the whole text
    m = _BEFORE.search(low, lo, start)
    if m is None:
        return None
    span = m.span("v")
    while span[1] > span[0] and text[span[1] - 1] in _TRAILING:
        span = (span[0], span[1] - 1)
    value = text[span[0] : span[1]]
    if not value or value.lower().startswith(_MARKER_START):
        return None
    if value.isdigit() and len(value) == 4 and _YEAR.fullmatch(value):
        return None  # "2024 is the year I changed my password"
    return span if _fits(family, text, low, span, assigned=False) else None


def _far(text: str, low: str, family: str, cue_end: int) -> tuple[int, int] | None:
    """A value later in the cue's clause, after an assignment (module docstring)."""
    if family not in ("pw", "code") or not _FAR_OPENER.match(low, cue_end):
        return None
    m = _FAR.match(low, cue_end)
    if m is None:
        return None
    found = _value_at(text, low, m.end())
    if found is None:
        return None
    value = text[found[0] : found[1]]
    if value.isdigit():
        return found if _numeric(value, low, found[1]) else None
    ok = len(value) >= 6 and _has_letter(value) and _shaped(value, low, found[1])
    return found if ok else None


def _cue_ok(low: str, start: int, end: int) -> bool:
    """A Latin cue stands alone ("1Password", "ping", "passage", "compass" are no cues); a
    Han one needs no spaces around it."""
    if low[start] >= "\x80":
        return True
    if start > 0 and low[start - 1] in _LATIN:
        return False
    return end >= len(low) or low[end] not in _LATIN


def _cues(low: str) -> list[tuple[int, int, str]]:
    """``(start, end, family)`` of every cue, in order, none inside another."""
    found: list[tuple[int, int, str]] = []
    for hint, family, pattern in _ANCHORS:
        at = low.find(hint)
        while at >= 0:
            cue = _cue_at(low, at, family, pattern)
            if cue is not None and _cue_ok(low, cue[0], cue[1]):
                found.append(cue)
            at = low.find(hint, at + 1)
    found.sort()
    cues: list[tuple[int, int, str]] = []
    for cue in found:
        if not cues or cue[0] >= cues[-1][1]:
            cues.append(cue)
        elif cue[1] - cue[0] > cues[-1][1] - cues[-1][0] and cue[0] == cues[-1][0]:
            cues[-1] = cue  # the longer reading of the same place: "pin code", not "pin"
    return cues


def _cue_at(
    low: str, at: int, family: str, pattern: re.Pattern[str]
) -> tuple[int, int, str] | None:
    if family == "code" and pattern is _CODES:  # "verification code": the words come first
        before = _CODE_WORDS.search(low, max(0, at - 24), at)
        m = pattern.match(low, at)
        return (before.start(), m.end(), family) if before and m else None
    m = pattern.match(low, at)
    if m is None:
        return None
    if family == "pw" and m.group() == "pass":
        # "pass=", "DB_PASS:", "user/pass:"; not "boarding pass:"
        if at and low[at - 1] not in _PASS_GLUE and not _PASS_USER.search(low, max(0, at - 16), at):
            return None
        family = "pass"
    return m.start(), m.end(), family


def credential_spans(text: str, low: str) -> Iterator[tuple[int, int, str]]:
    """``(start, end, kind)`` of each credential value in ``text`` (``low`` is its lowercased
    form, with the same offsets), in cue order; spans may overlap (the caller merges)."""
    taken = 0  # a cue inside a value already taken is part of that value
    floor = 0  # how far back the next cue's "value before" may look
    for start, end, family in _cues(low):
        if start < taken:
            continue
        kind = KINDS[family]
        values, assigned = _after(text, low, family, (start, end))
        if not values and not assigned:
            far = _far(text, low, family, end)
            values = [far] if far else []
        before = _before(text, low, family, start, floor)
        if before is not None:
            yield before[0], before[1], kind
        for vs, ve in values:
            ve = _whole(text, vs, ve)
            taken = max(taken, ve)
            yield vs, ve, kind
        floor = max(end, taken)
