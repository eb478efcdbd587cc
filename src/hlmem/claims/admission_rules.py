"""The deterministic rules of admission: source provenance, the turn pre-check, the claim gate.

Three pure, synchronous functions decide what may become a memory:

- :func:`source_decision` decides, before any model is called, whether an event's source may
  feed extraction (provenance mode ``enforce`` / ``observe`` / ``off`` over origin classes and
  session kinds). Untrusted sources are still stored as events; they just never become claims
  by themselves under ``enforce``.
- :func:`worth_extracting` tells, before a model is paid for, whether a user turn could hold
  a memory at all: empty, punctuation, acknowledgements and filler cannot.
- :func:`gate` decides per proposed claim: no information content, one-off operational noise
  (acknowledgements, momentary commands) and secrets are blocked; the mode does not apply.

Secrets are found by :mod:`hlmem.lang.redaction`. A proposed claim is redacted
(:func:`redacted_draft`) before it is written to a job payload, so the gate also blocks a draft
holding the marker of a secret (``secret:<kind>``): explain's decision names the kind, never
the secret.

This module does no I/O, holds no state and never logs memory text. Every rule is a regular
expression compiled at import, so results are reproducible and explainable: each
:class:`Decision` names the rule that fired.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import pairwise
from typing import TYPE_CHECKING, Literal

from hlmem.errors import ConfigError
from hlmem.lang import MARKER, find_secrets, nfkc, redact, secret_kind
from hlmem.messages import ClaimDraft, EvidenceSpan, OriginClass, Role, SessionKind

if TYPE_CHECKING:
    from hlmem.config import AdmissionConfig

Mode = Literal["enforce", "observe", "off"]
Verdict = Literal["admit", "block", "would_block"]

MODES: tuple[Mode, ...] = ("enforce", "observe", "off")
DEFAULT_UNTRUSTED_ORIGINS = frozenset(
    {OriginClass.EXTERNAL_WEB.value, OriginClass.TOOL.value, OriginClass.SYSTEM.value}
)
DEFAULT_UNTRUSTED_SESSION_KINDS = frozenset(
    {SessionKind.CRON.value, SessionKind.HEARTBEAT.value, SessionKind.SUBAGENT.value}
)
_ORIGINS = frozenset(o.value for o in OriginClass)
_SESSION_KINDS = frozenset(k.value for k in SessionKind)


# --- source admission -------------------------------------------------------------------------


@dataclass(frozen=True)
class SourcePolicy:
    """Which sources may feed extraction, and what happens to the others.

    :raises ConfigError: on an unknown mode, origin class or session kind (a misspelt name
        would otherwise silently trust a source).
    """

    mode: Mode = "enforce"
    untrusted_origins: frozenset[str] = DEFAULT_UNTRUSTED_ORIGINS
    untrusted_session_kinds: frozenset[str] = DEFAULT_UNTRUSTED_SESSION_KINDS

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ConfigError(f"admission mode {self.mode!r} is not one of {', '.join(MODES)}")
        for name, given, known in (
            ("origin class", self.untrusted_origins, _ORIGINS),
            ("session kind", self.untrusted_session_kinds, _SESSION_KINDS),
        ):
            unknown = sorted(set(given) - known)
            if unknown:
                raise ConfigError(f"unknown untrusted {name}: {', '.join(unknown)}")

    @classmethod
    def from_config(cls, cfg: AdmissionConfig) -> SourcePolicy:
        """The policy of the ``[admission]`` config section."""
        return cls(
            mode=cfg.mode,
            untrusted_origins=frozenset(cfg.untrusted_origins),
            untrusted_session_kinds=frozenset(cfg.untrusted_session_kinds),
        )


@dataclass(frozen=True)
class Decision:
    """An admission verdict and the machine-readable name of the rule that gave it."""

    decision: Verdict
    rule: str

    @property
    def sends_to_extraction(self) -> bool:
        """Whether the source's text goes on (``would_block`` is recorded, not enforced)."""
        return self.decision != "block"


def source_decision(policy: SourcePolicy, origin_class: str, session_kind: str) -> Decision:
    """Admit, block or (under ``observe``) flag one event's source.

    The origin is checked before the session kind, so the rule names the first reason. A value
    that is no known origin class or session kind is untrusted (``origin:unknown``): an event
    written by a newer version must not gain trust by being unrecognised.
    """
    if policy.mode == "off":
        return Decision("admit", "mode:off")
    rule = untrusted_rule(policy, origin_class, session_kind)
    if rule is None:
        return Decision("admit", "trusted")
    return Decision("block" if policy.mode == "enforce" else "would_block", rule)


def untrusted_rule(policy: SourcePolicy, origin_class: str, session_kind: str) -> str | None:
    """Why a source is untrusted under ``policy`` (``origin:web``, ``session_kind:cron``, …),
    or ``None`` for a trusted one, whatever the mode."""
    origin, kind = str(origin_class), str(session_kind)
    if origin not in _ORIGINS:
        return "origin:unknown"
    if origin in policy.untrusted_origins:
        return f"origin:{origin}"
    if kind not in _SESSION_KINDS:
        return "session_kind:unknown"
    if kind in policy.untrusted_session_kinds:
        return f"session_kind:{kind}"
    return None


# --- the per-turn pre-check and the per-claim gate --------------------------------------------

GATE_PASSED = "passed"
_GATE_MAX_CHARS = 48  # longer values are never mere noise, and this bounds the regexes below
_TURN_HEAD_CHARS = 2 * _GATE_MAX_CHARS


def _alternation(words: Iterable[str]) -> str:
    """Longest first, so that an atomic group takes the longest word (no backtracking)."""
    parts = []
    for word in sorted(set(words), key=len, reverse=True):
        body = r"\s*".join(re.escape(w) for w in word.split())
        # A Latin word must end at a word end: "no" is noise, "nook" is not "no" + "ok".
        parts.append(body + r"(?![a-z0-9])" if word[-1].isascii() else body)
    return "|".join(parts)


def _sequence_of(words: Iterable[str], *, also: str = "") -> re.Pattern[str]:
    """One or more of ``words``, or of what the pattern ``also`` matches, spaced or not.

    Each item is atomic: once a word (or ``also``) has matched, no other reading of the same
    characters is tried, so a failing text costs linear time, not one try per segmentation.
    """
    alt = _alternation(words) + (f"|{also}" if also else "")
    return re.compile(rf"(?>{alt})(?:\s*(?>{alt}))*")


_PARTICLES = "了 啦 吧 呢 啊 呀 哇 嘛 呐 哟 耶 的 哦 噢 喔 哈 嘿 呵 嗯 恩 额 呃 诶 欸".split()
_NOISE_ZH = (
    "好的 好滴 好嘞 好哒 好吧 好呀 好啊 好 行 行吧 可以 嗯哼 谢谢 谢谢你 谢谢您 谢了 谢啦 多谢 "
    "感谢 非常感谢 十分感谢 辛苦了 辛苦 收到 了解 明白 懂了 知道了 知道 没问题 没事 没关系 "
    "不客气 不用了 不用 算了 对 对的 是的 是 不是 不 不对 继续 接着 下一个 下一步 再来 "
    "再来一个 换一个 重来 棒 很棒 太棒了 很好 不错 厉害 牛 赞 完美 你好 您好 嗨 早 早安 "
    "早上好 晚安 拜拜 再见 稍等 等等 等一下 我知道 我明白 我懂 了解了 明白了 辛苦你了 "
    "谢谢帮忙 谢谢你的帮助 谢谢您的帮助 感谢你的帮助 感谢帮助"
).split()
_NOISE_EN_PHRASES = (
    "ok,okay,okey,okie,k,kk,yes,yeah,yep,yup,ya,yea,no,nope,nah,sure,thanks,thank you,thank u,"
    "thx,ty,tysm,cheers,continue,go on,keep going,go ahead,proceed,next,got it,gotcha,understood,"
    "noted,roger,cool,nice,great,awesome,perfect,good,fine,alright,all right,right,sounds good,"
    "lgtm,lol,lmao,rofl,hmm,hm,um,uh,ah,oh,wow,no problem,np,no worries,of course,sure thing,"
    "will do,done,agreed,exactly,indeed,correct,hi,hello,hey,bye,goodbye,good night,"
    "good morning,please,pls,again,so much,very much,a lot,and,but,then,too,i see,makes sense,"
    "thats it,thats all,fair enough,wait,one moment,hold on,thanks a lot,hi there,hello there,"
    "hey there,thanks for your help,thanks for the help,thank you for your help,"
    "thank you for the help,thanks for that,appreciate it,much appreciated"
).split(",")
_NOISE = _sequence_of([*_NOISE_ZH, *_PARTICLES, *_NOISE_EN_PHRASES])
# A Latin laugh ends at a word end, so that as an item of a sequence "hint" is no "hi" + "nt".
_LAUGH_ITEM = r"(?:(?:ha|he|hi)+h?|xd+)(?![a-z0-9])|(?:哈|呵|嘿|嘻)+|233+|666+"
_LAUGH = re.compile(_LAUGH_ITEM)
# After "Are you vegetarian?" the answer "yes" is the memory: a turn that only answers yes or
# no is worth extracting, though a claim whose value is only "yes" says nothing by itself.
_ANSWERS = frozenset(
    "是,是的,对,对的,不是,不,不对,yes,yeah,yep,yup,ya,yea,no,nope,nah,right,correct,exactly,"
    "indeed,of course".split(",")
)
_ACK = _sequence_of(
    [w for w in (*_NOISE_ZH, *_PARTICLES, *_NOISE_EN_PHRASES) if w not in _ANSWERS],
    also=_LAUGH_ITEM,
)

_FILLER_ZH = (
    "这个 那个 这 那 它 它们 这些 那些 这样 那样 这里 那里 这件事 那件事 某事 某个 东西 "
    "什么 啥 一些 一下 之类 等等 事情 事 他 她 我 你 他们 我们 你们 其他 其它 某些 一个"
).split()
_FILLER_EN = (
    "it,this,that,these,those,something,anything,everything,nothing,stuff,thing,things,"
    "whatever,etc,so,the,a,an,them,they,he,she,him,her,here,there,one,some,such,same,above,"
    "below,you,me,i,we,us,something like that,and so on"
).split(",")
_NO_CONTENT = _sequence_of([*_FILLER_ZH, *_FILLER_EN, *_PARTICLES])

_CMD_ZH = re.compile(
    r"(?:请|麻烦你?|能不能|可不可以|可以|能|你)?(?:帮我|帮忙|给我|替我|帮)?"
    r"(?:再|重新|继续|接着|马上|现在|先)?"
    r"(?>翻译|总结|概括|解释|改写|修改|润色|检查|运行|执行|生成|搜索|重试|重写|优化|格式化|"
    r"整理|列出|计算|打开|关闭|删除|删掉|保存|提交|编译|测试|发送|复制|分析|讲讲|说说|回答|"
    r"输出|展示|显示|停止|暂停|开始|重来|撤销|回退|刷新|重启|上传|下载|安装|更新|扩写|缩写|"
    r"精简|简化|校对|纠错|补充|完善|调试|修复|看看|继续|写|改|跑|画|查|搜|看|列|算|删|发|"
    r"讲|说|停|修)"
    r"(?:一下|一遍|下|完|好)?"
    r"(?:这段话|这句话|这个|那个|这段|这句|这些|那些|上面的|下面的|上面|下面|上文|前面的|前面|"
    r"刚才的|刚才|它|代码|文字|文本|内容|文件|测试|结果|答案|全部|所有的|所有|成中文|成英文|"
    r"成日文|成英语|成汉语|为中文|为英文|一遍|一次|下去|出来)?"
    r"(?:一下|一遍|吧|了|呢|啊|呀|哈|吗)*"
)
_CMD_EN = re.compile(
    r"(?:(?:please|pls|can you|could you|would you|will you|now|just|ok|okay|so|and|then|"
    r"go ahead and|lets)\s+)*"
    r"(?>re ?run|run|translate|summari[sz]e|explain|continue|keep going|go on|rewrite|write|fix|"
    r"try again|retry|check|test|build|compile|show|print|list|format|refactor|undo|redo|stop|"
    r"pause|resume|restart|open|close|delete|remove|save|commit|push|send|proceed|regenerate|"
    r"expand|shorten|elaborate|clarify|debug|review|proofread|simplify|do it|try)(?![a-z])"
    r"(?:\s+(?>it|this|that|these|those|them|the|all|again|now|please|for|me|us|up|out|on|"
    r"through|above|below|code|tests|test|text|files|file|output|build|script|suite|one|more|"
    r"into|to|in|english|chinese|french|japanese|spanish|german|bit|a|little|shorter|longer|"
    r"simpler|quickly|first|once|twice|same|previous|last|answer|paragraph|sentence|message|"
    r"page|thanks|lint|linter|unit|integration|step|steps|function|cell|command|query|"
    r"changes|change|writing|going)(?![a-z]))*"
)
# A bare verb may answer "what do you do?" ("翻译", "写代码", "review"): a command turn is only
# noise when a word in it is addressed to the assistant (a request, "again", "it", "上面的").
_TO_ASSISTANT_ZH = re.compile(
    r"请|麻烦|帮|给我|替我|能不能|可不可以|你|再|重新|继续|接着|马上|现在|先|一下|一遍|下去|出来|"
    r"这|那|它|上面|下面|上文|前面|刚才|全部|所有|成|为|吧|吗|呢|啊|呀|哈|"
    r"重试|重来|重写|撤销|回退|停|刷新|重启|扩写|缩写|润色|纠错"
)
_TO_ASSISTANT_EN = frozenset(
    "please pls can could would will now just ok okay so then go lets it this that these those "
    "them the all again me us above below once twice more same previous last first quickly "
    "thanks up out through into to in bit little shorter longer simpler retry rerun re undo "
    "redo regenerate proceed resume stop pause continue elaborate clarify".split()
)
# Words that only frame a value (who said it, that it is a note): "用户说好的" and the text
# "user note ok" that a structured write builds say no more than "好的" and "ok".
_SPEECH_ZH = re.compile(
    r"用户|助手|说了|说|表示|回复|回答|答道|答|让|叫|请求|要求|请|告诉|想要|希望|输入|打了|回了|"
    r"同意|确认|我|你|对|道|地|了"
)
_SPEECH_EN = frozenset(
    "user users the a an i me my you assistant ai said says say saying replied replies reply "
    "answered answers answer responded responds asked asks ask told tells wants want wanted "
    "requested requests request to with by that please just simply typed wrote writes sent "
    "and then also in response agreed acknowledged confirms confirmed thanked note notes noted "
    "remark remarks comment comments message messages statement utterance command instruction "
    "ack feedback".split()
)
_NOT_WORD = re.compile(r"[\W_]+")
_APOSTROPHE = re.compile(r"['’`]")


def _letters(text: str) -> str:
    """Casefolded words and digits, single-spaced: "好的！" -> "好的", "It's" -> "its"."""
    text = _APOSTROPHE.sub("", nfkc(text).casefold())
    return " ".join(_NOT_WORD.sub(" ", text).split())


def _is_noise(letters: str) -> bool:
    if len(letters) > _GATE_MAX_CHARS:
        return False
    if _NOISE.fullmatch(letters) or _LAUGH.fullmatch(letters.replace(" ", "")):
        return True
    return bool(_CMD_ZH.fullmatch(letters.replace(" ", "")) or _CMD_EN.fullmatch(letters))


def _is_request(letters: str) -> bool:
    """A momentary command addressed to the assistant: "帮我翻译一下", "run the tests again"."""
    compact = letters.replace(" ", "")
    if _CMD_ZH.fullmatch(compact) and _TO_ASSISTANT_ZH.search(compact):
        return True
    return bool(_CMD_EN.fullmatch(letters)) and not _TO_ASSISTANT_EN.isdisjoint(letters.split())


def _says_more(draft: ClaimDraft, value: str) -> bool:
    """Whether the claim's text holds words beyond its value, its subject and speech verbs.

    ("user", "is_vegetarian", "yes", "User is vegetarian") says more than "yes";
    ("user", "said", "好的", "用户说好的") does not.
    """
    rest = _letters(draft.text)
    for known in (value, _letters(draft.subject)):
        if known:
            rest = rest.replace(known, " ")
    rest = _SPEECH_ZH.sub(" ", rest)
    return any(word not in _SPEECH_EN for word in rest.split())


def gate(draft: ClaimDraft) -> Decision:
    """Admit a proposed claim, or block it as a secret, empty of content, or noise.

    Secrets are looked for in the subject, predicate, value, text, qualifiers and evidence
    quotes; content and noise are judged on the value. A one-character or noise value is
    kept when the claim's text says more than the value ("用户姓王", "User is vegetarian");
    a value that is only a pronoun never is, because its referent is lost.
    """
    kind = _secret_of(draft)
    if kind is not None:
        return Decision("block", f"secret:{kind}")
    value = _letters(draft.value)
    if not value:
        return Decision("block", "no_content")
    if _is_noise(value) and not _says_more(draft, value):
        return Decision("block", "noise")
    pronouns_only = len(value) <= _GATE_MAX_CHARS and _NO_CONTENT.fullmatch(value)
    if pronouns_only or (len(value) == 1 and not _says_more(draft, value)):
        return Decision("block", "no_content")
    return Decision("admit", GATE_PASSED)


def _named(subject: str, predicate: str) -> str:
    """What a value is said under ("user wifi password: " before "hunter2abc"): a value that
    is a secret only under a secret's name ("wifi_password") is found after it."""
    return f"{subject} {predicate.replace('_', ' ')}: "


def claim_secret(subject: str, predicate: str, value: str, texts: Iterable[str]) -> str | None:
    """The kind of the first secret (or redaction marker) in a claim's fields and ``texts``
    (its text, qualifiers, quotes), or None: what :func:`gate` blocks, what an import refuses."""
    for field in (subject, predicate, value, *texts):
        kind = secret_kind(field)
        if kind is not None:
            return kind
    return secret_kind(_named(subject, predicate) + value)


def _secret_of(draft: ClaimDraft) -> str | None:
    texts = (draft.text, *draft.qualifiers, *(span.quote for span in draft.evidence))
    return claim_secret(draft.subject, draft.predicate, draft.value, texts)


_CLAUSE_END = re.compile(r"[，,;；。!?！？\n]|\.(?=\s|$)")
_QUOTE_TRIM = " \t\r\n，,;；。.!?！？:：、"


def narrowed_span(span: EvidenceSpan, value: str) -> EvidenceSpan | None:
    """A quote that holds a secret (or its marker) narrowed to the clause that holds the
    claim's value and no secret ("我叫小明，我的密码是 X" -> "我叫小明"), its offsets moved
    with it; the span itself when its quote holds no secret; None when no such clause is
    there (the claim then rests on the secret: it is blocked)."""
    quote = span.quote
    secrets = [(s, e) for s, e, _ in find_secrets(quote)]
    if "[REDACTED:" in quote:
        secrets += [m.span() for m in MARKER.finditer(quote)]
    if not secrets:
        return span
    bounds = [0, *(m.end() for m in _CLAUSE_END.finditer(quote)), len(quote)]
    for a, b in pairwise(bounds):
        part = quote[a:b]
        if a >= b or not value or value not in part or any(s < b and e > a for s, e in secrets):
            continue
        kept = part.strip(_QUOTE_TRIM)
        start = span.start_char + a + len(part) - len(part.lstrip(_QUOTE_TRIM))
        return span.model_copy(
            update={"quote": kept, "start_char": start, "end_char": start + len(kept)}
        )
    return None


def _payload_span(span: EvidenceSpan, value: str) -> EvidenceSpan:
    narrowed = narrowed_span(span, value)
    if narrowed is not None:
        return narrowed
    return span.model_copy(update={"quote": redact(span.quote)})


def redacted_draft(draft: ClaimDraft) -> ClaimDraft:
    """``draft`` as a job payload may hold it: a quote that holds a secret narrowed to the
    clause of the claim's value (:func:`narrowed_span`: the claim then stands without the
    secret), and every other secret of its fields and quotes replaced by its marker (such a
    draft is blocked by :func:`gate`; its quote keeps its offsets and is never shown). The
    draft itself when it holds none (the usual case)."""
    value = _redacted_value(draft)
    update: dict[str, object] = {
        "subject": redact(draft.subject),
        "predicate": redact(draft.predicate),
        "value": value,
        "text": redact(draft.text),
        "qualifiers": tuple(redact(q) for q in draft.qualifiers),
        "evidence": tuple(_payload_span(e, value) for e in draft.evidence),
    }
    if all(update[name] == getattr(draft, name) for name in update):
        return draft
    return draft.model_copy(update=update)


def _redacted_value(draft: ClaimDraft) -> str:
    value = redact(draft.value)
    if value != draft.value:
        return value
    head = _named(draft.subject, draft.predicate)
    spans = [
        (max(0, s - len(head)), e - len(head), kind)
        for s, e, kind in find_secrets(head + value)
        if e > len(head)
    ]
    for start, end, kind in reversed(spans):
        value = f"{value[:start]}[REDACTED:{kind}]{value[end:]}"
    return value


def window_worth_extracting(pieces: Iterable[tuple[str, str]]) -> bool:
    """Whether a window of ``(role, text)`` pieces is worth an extraction: any user turn
    among them is :func:`worth_extracting`."""
    return any(role == Role.USER and worth_extracting(text) for role, text in pieces)


def worth_extracting(text: str) -> bool:
    """Whether a user turn could hold a memory: the check before a model is paid to extract.

    False only for a turn that can hold none: nothing but whitespace, punctuation or emoji;
    acknowledgements, thanks, greetings and laughter, alone or several together ("好的，谢谢",
    "ok lol 👍"); filler ("嗯……那个"); a momentary command addressed to the assistant
    ("帮我翻译一下", "run the tests again"). Anything else is True, questions and short
    answers included ("我25岁", "不要香菜", "yes", "翻译"): a wrong False loses a memory, a
    wrong True costs one call. Never raises.
    """
    try:
        # NFKC costs about 0.15 µs a character: a long turn is judged by its start when that
        # already says more than noise can, and read whole only when it is mostly symbols.
        letters = _letters(text[:_TURN_HEAD_CHARS])
        if len(letters) <= _GATE_MAX_CHARS and len(text) > _TURN_HEAD_CHARS:
            letters = _letters(text)
    except Exception:  # nothing may stop extraction: an unreadable turn goes to the model
        return True
    if not letters:
        return False
    if len(letters) > _GATE_MAX_CHARS:
        return True
    return not (_ACK.fullmatch(letters) or _NO_CONTENT.fullmatch(letters) or _is_request(letters))
