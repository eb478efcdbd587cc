"""What every rule family shares: the lexicon, and the helpers that turn a match into a hit.

``RuleSet`` is the base of the Chinese, English and plan rules. Its helpers decide whose
sentence it is (``_subject_ok``: "我妈住在上海" is not about the user), which slot a value lands
on (``_slot``, ``_change_slot``, ``_correction_slot``), when a change happened or a state began
(``_when``, ``_changed``, ``_since``), and whether an organisation is an employer, a team, a
school or a place (``_org_hits``). A rule set holds only the lexicon and patterns compiled from
it, never per-window state: that lives in the ``Sentence``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping

from hlmem.lang import Language, Lexicon, normalize
from hlmem.lang.timeexpr import Prefer, TimeRef
from hlmem.messages import ClaimScope
from hlmem.rules.sentence import CJK, Hit, Sentence, marks_start
from hlmem.rules.values import clean, clean_en, clean_zh

# Words that make a state temporary (scope short_term) or a time expression future.
ZH_TEMP = re.compile(r"暂时|临时|暂且|这段时间|这阵子|这几天|先用")
_EN_TEMP = re.compile(
    r"\b(?:temporarily|for now|for the time being|for a while|for the moment|until further"
    r" notice)\b",
    re.I,
)
_ZH_FUTURE = re.compile(r"要|打算|准备|计划|将|会|下个|明年|下周|下月|得|需要|必须")
_EN_FUTURE = re.compile(
    r"\b(?:will|'ll|going to|gonna|plan|planning|next|need to|have to|must|soon)\b|'ll\b", re.I
)

# What is cut off a place ("我住的小区叫X": the name after 叫; "北京工作": the verb).
_ZH_NAMED = re.compile(r"(?:是|叫|在)")
_ZH_PLACE_CUT = re.compile(
    r"工作|上班|生活|发展|定居|住|读书|上学|附近|旁边|这边|那边|了|啦|的|去|啊|呢|吧"
)

# What an organisation is: a team, or too vague to be an employer.
_ZH_TEAM = re.compile(r"(?:团队|小组|项目组|事业部|部门|工作室|组|部)$")
EN_TEAM = re.compile(r"\bteam$|\bdepartment$|\bgroup$|\bsquad$", re.I)
_ZH_VAGUE_ORG = frozenset(
    "家 家里 公司 单位 这 那 这里 那里 外地 国外 海外 老家 附近 本地 当地 外企 国企 大厂"
    " 创业公司 一家公司 一线城市 北上广 哪".split()
)
# "在考虑工作" / "在这个行业中工作": 在 marks an action or a vague scope, not an employer.
_ZH_NOT_ORG = re.compile(
    r"^(?:这|那|哪|当前|现在|目前|原来|以前|之前|一直|考虑|找|做|换|忙|准备|思考|安排|处理|完成|开始"
    r"|结束|适应|投入|专注|认真|努力|拼命|熬夜|加班|用心|好好|继续|坚持|学习|为|家)"
    r"|(?<=..)(?:中|里|上|下|内|外|方面|期间)$"
)

# Subjects of a clause: the last one before a verb says who did it.
# Pronouns count anywhere; a person noun counts at a clause's start or after 我(的): "我妈住在上海"
# has another subject, "我是一名产品经理" does not.
_ZH_SUBJECT = re.compile(
    r"我们|咱们|我(?!的)|他们|她们|他|她|它|你们|你|您|(?:(?<![^，,；;\s])|(?<=我)|(?<=我的))"
    r"(?:大家|别人|有人|朋友|同事|老板|领导|老婆|老公|妻子|丈夫|女朋友|男朋友|女友|男友|对象|爱人|媳妇|爸爸|妈妈"
    r"|老爸|老妈|爸|妈|父亲|母亲|父母|儿子|女儿|孩子|宝宝|小孩|哥哥|姐姐|弟弟|妹妹|哥|姐|弟|妹|爷爷|奶奶|外公"
    r"|外婆|姥姥|姥爷|叔叔|阿姨|舅舅|姑姑|伯伯|表哥|表姐|堂哥|家人|室友|同学|老师|客户|公司|上司|下属|经理|邻居"
    r"|闺蜜|兄弟|姐妹|公公|婆婆|岳父|岳母)"
)
_EN_SUBJECT = re.compile(
    r"(?<![\w'])(?:i|we|he|she|they|you|it|my\s+(?!own\b)\w+|his\s+\w+|her\s+\w+|their\s+\w+"
    r"|our\s+\w+|someone|everyone|people)(?![\w])",
    re.I,
)
_SELF_WORDS = frozenset({"我", "我们", "咱们", "i", "we"})
_OWNER = re.compile(
    r"(?:我的|\bmy\s+)(?P<a>[^\s，,。的]{1,12}?|[a-z][a-z ]{1,20}?)\s*(?:is\s*)?$", re.I
)
_VERB_LEAD = {
    "zh": re.compile(r"^(?:使用|用|开|切到|换成)"),
    "en": re.compile(r"^(?:using|use|to use|with)\s+", re.I),
}

# What a "my X is Y" value must look like.
_DESCRIPTION = re.compile(
    r"^(?:很|非常|特别|太|挺|有点|比较|不|真|好|超|蛮|还|也|都|就|like\b|so\b|very\b|really\b|pretty\b"
    r"|quite\b|not\b|a bit\b|kind of\b|always\b|too\b|also\b|still\b|just\b)",
    re.I,
)
_PHONE = re.compile(r"\d(?:[\d\s-]*\d){5,}")

_EN_VAGUE_ORG = re.compile(
    r"^(?:(?:my|our|this|that|the|a|an)\s+)?(?:current\s+|new\s+|old\s+|small\s+|big\s+|local\s+)?"
    r"(?:company|firm|startup|job|office|home|place|work|business|organization|store|shop)$"
    r"|^(?:my|our|your|his|her|their)\b",
    re.I,
)
_NOT_A_THING = re.compile(
    r"\b(?:my|your|our|their|his|her|me|you|him|them|it)\b|^(?:a|the)\s+\w+ing\b", re.I
)


#: A rule reads one sentence and returns its hits (at most one draft per slot is kept).
Rule = Callable[[Sentence], list[Hit]]
#: Rules in priority order, each with the words it cannot match without (None: always run).
RuleTable = tuple[tuple[Rule, tuple[str, ...] | None], ...]


class RuleSet:
    """A family of rules over one lexicon, with the helpers the rules share."""

    def __init__(self, lexicon: Lexicon) -> None:
        self.lexicon = lexicon

    def _value(self, value: str, predicate: str) -> str:
        """``value`` in the lexicon's spelling for ``predicate``."""
        return self.lexicon.canonical_value(value, predicate)

    def _slot(self, predicate: str, value: str, lang: Language) -> tuple[str, str]:
        """A generic predicate ("likes", "uses") moves to its value's slot when the value has
        one, looking through a leading habit verb ("用深色模式", "using dark mode")."""
        lex = self.lexicon
        slot = lex.canonical_slot(predicate, value)
        if slot != predicate:
            return slot, lex.canonical_value(value, slot)
        rest = _VERB_LEAD[lang].sub("", value, count=1)
        if rest != value:
            slot = lex.canonical_slot(predicate, rest)
            if slot != predicate:
                return slot, lex.canonical_value(rest, slot)
        return predicate, self._value(value, predicate)

    def _attribute_value(self, attribute: str, value: str) -> tuple[str, str]:
        """Check a "my X is Y" value against what X must hold: a phone number has digits
        ("我的手机是iPhone" names the phone the user uses), an email an @, a city a place."""
        if _DESCRIPTION.match(value):
            return attribute, ""  # "my team is like a family", "我的工作很稳定": a description
        if attribute == "phone" and not _PHONE.search(value):
            return "uses", value
        if attribute == "email" and "@" not in value:
            return attribute, ""
        lang: Language = "zh" if CJK.search(value) else "en"
        if attribute == "occupation" and not self.lexicon.is_occupation(clean(value, lang)):
            return attribute, ""
        if attribute == "location":
            return attribute, self.lexicon.place(clean(value, lang)) or ""
        return attribute, self._value(value, attribute)

    def _change_slot(self, owner: str | None, value: str) -> str | None:
        """The slot a change to ``value`` lands on: the changed thing's ("把主题换成…"), the
        value's own (浅色模式 → ui_theme), else ``uses``; never a place (that is a move)."""
        lex = self.lexicon
        if owner:
            found = lex.attribute_predicate(owner) or lex.slot_of_value(owner)
            if found is not None:
                return found
        if lex.place(value) is not None or not value:
            return None
        slot = lex.slot_of_value(value)
        if slot is None and (len(value.split()) > 4 or _NOT_A_THING.search(value)):
            return None  # "going back to my youth": not a tool or a setting
        return slot or "uses"

    def _correction_slot(self, sent: Sentence, pre: str, old: str, new: str) -> str | None:
        """The slot a correction of ``old`` to ``new`` lands on: the one ``old`` had earlier
        in the window, the owner's ("我的X不是…"), a value's own, or ``location`` for places."""
        lex = self.lexicon
        predicate = sent.seen.get(normalize(old)) or sent.seen.get(
            normalize(lex.canonical_value(old))
        )
        if predicate is None:
            owner = _OWNER.search(pre)
            if owner:
                predicate = lex.attribute_predicate(owner.group("a"))
        if predicate is None:
            predicate = lex.slot_of_value(new) or lex.slot_of_value(old)
        if predicate is None and lex.place(new) and lex.place(old):
            predicate = "location"
        return None if predicate in (None, "note", "plan") else predicate

    def _subject_ok(self, sent: Sentence, lo: int, at: int) -> bool:
        """Whether the clause's subject before ``at`` is the speaker (or is left out)."""
        pattern = _ZH_SUBJECT if sent.lang == "zh" else _EN_SUBJECT
        subjects = pattern.findall(sent.norm, lo, at)
        return not subjects or subjects[-1].lower() in _SELF_WORDS

    def _self_said(self, sent: Sentence, m: re.Match[str], *, at_start: bool = False) -> bool:
        """A Chinese match with 我, or a clause after one that has it (the subject dropped)."""
        if m.group(0).lstrip().startswith("我"):
            return True
        if "我" in sent.text[: m.start()]:
            return self._subject_ok(sent, 0, m.start())
        return at_start and m.start() == 0

    def _temporal(self, sent: Sentence, at: int) -> tuple[tuple[str, ...], ClaimScope]:
        """The qualifiers and scope of the clause at ``at``: short_term when it says 暂时."""
        lo, hi = sent.clause(at)
        if sent.lang == "zh":
            found = ZH_TEMP.search(sent.text, lo, hi)
            return (("暂时",), "short_term") if found else ((), "long_term")
        found = _EN_TEMP.search(sent.norm, lo, hi)
        return (("temporarily",), "short_term") if found else ((), "long_term")

    def _prefer(self, sent: Sentence, lo: int, hi: int) -> Prefer:
        """Which way an ambiguous time in the clause resolves ("周五": the next or the last)."""
        pattern = _ZH_FUTURE if sent.lang == "zh" else _EN_FUTURE
        return "future" if pattern.search(sent.norm, lo, hi) else "past"

    def _when(self, sent: Sentence, at: int, *, since_only: bool = False) -> TimeRef | None:
        """The time a change at ``at`` happened (or will): the first time expression of its
        clause, else of the sentence. With ``since_only``, only one that marks a start
        ("从5月开始", "since May")."""
        lo, hi = sent.clause(at)
        prefer = self._prefer(sent, lo, hi)
        ref = sent.time_in(lo, hi, prefer)
        if ref is None and not since_only:
            refs = sent.times(prefer)
            ref = refs[0] if refs else None
        if ref is None:
            return None
        if since_only and not marks_start(sent, ref):
            return None
        sent.used.add(ref.span)
        return ref

    def _changed(self, sent: Sentence, at: int, hits: list[Hit]) -> list[Hit]:
        """Hits of a change: its time as valid_from, 暂时/temporarily as a qualifier."""
        ref = self._when(sent, at)
        qualifiers, scope = self._temporal(sent, at)
        for hit in hits:
            hit.qualifiers, hit.scope = qualifiers, scope
            if ref is not None:
                hit.valid_from = ref.start
        return hits

    def _since(self, sent: Sentence, at: int, hits: list[Hit]) -> list[Hit]:
        """Hits of a state: a time that marks its start as valid_from ("从5月开始")."""
        ref = self._when(sent, at, since_only=True)
        if ref is not None:
            for hit in hits:
                hit.valid_from = ref.start
        return hits

    def _cut_time(self, sent: Sentence, start: int, value: str) -> str:
        """``value`` (found at ``start``) cut before a time expression inside it."""
        for ref in sent.times(None):
            if start <= ref.span[0] < start + len(value):
                return value[: ref.span[0] - start]
        return value

    def _location(self, sent: Sentence, m: re.Match[str], raw: str, group: str) -> str | None:
        """The place ``raw`` (the match's ``group``) names, if the lexicon knows it as one."""
        return self.lexicon.place(self._clean_place(sent, m.start(group), raw))

    def _clean_place(self, sent: Sentence, start: int, raw: str) -> str:
        """``raw`` cut to the place itself: before a time, a verb or a particle."""
        value = self._cut_time(sent, start, raw)
        if sent.lang == "en":
            return clean_en(value)
        if value.startswith("的"):  # 我住的那个小区叫龙湖小区 / 我住的龙湖小区
            named = _ZH_NAMED.search(value)
            value = value[named.end() :] if named else value[1:]
        cut = _ZH_PLACE_CUT.search(value)
        return clean_zh(value[: cut.start()] if cut and cut.start() > 0 else value)

    def _org_hits(self, sent: Sentence, at: int, org: str, *, school: bool = False) -> list[Hit]:
        """Hits for an organisation or place named as where the user works or studies."""
        lex = self.lexicon
        org = clean(org, sent.lang)
        if not org or lex.is_stop_value(org):
            return []
        if sent.lang == "zh" and "的" in org:  # 杭州的一家公司 / 阿里的支付团队
            head, _, tail = org.rpartition("的")
            return self._org_hits(sent, at, head) + self._org_hits(sent, at, tail, school=school)
        place = lex.place(org)
        if place is not None:
            return [Hit("location", place, at, confidence=0.85)]
        team = (_ZH_TEAM if sent.lang == "zh" else EN_TEAM).search(org)
        if team:
            return [Hit("team", org, at, confidence=0.8)] if len(org) > len(team[0]) + 1 else []
        if org in _ZH_VAGUE_ORG or len(org) > (15 if sent.lang == "zh" else 40):
            return []
        if sent.lang == "en" and _EN_VAGUE_ORG.match(org):
            return []
        if sent.lang == "zh" and _ZH_NOT_ORG.search(org):
            return []
        return [Hit("school" if school else "employer", org, at, confidence=0.85)]


def alternation(words: Mapping[str, str] | Iterable[str]) -> str:
    """A regex alternation of ``words``, longest first (so "使用" wins over "用")."""
    escaped = sorted({re.escape(w) for w in words}, key=len, reverse=True)
    return "|".join(escaped) if escaped else "(?!)"
