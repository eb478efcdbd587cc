"""The Chinese rules: one method per rule family, each gated by the words it needs.

Identity, work and home (我叫 / 我在X工作 / 我住在), moves and changes (搬去 / 换成 / 调到),
preferences and habits (我喜欢 / 我不喝咖啡了; negation is polarity, never another predicate),
personal facts (age, allergies, pets, skills, the reply language) and standing instructions
(以后不要…). The patterns are written for one clause at a time (``_V`` never crosses a comma),
and a match counts only when the user is its subject (``_self_said``, ``_subject_ok``).
Plans with a date are in ``plans``; the helpers all rule families share are in ``base``.
"""

from __future__ import annotations

import re

from hlmem.lang import Lexicon
from hlmem.lang.timeexpr import cn_number
from hlmem.rules.base import ZH_TEMP, RuleSet, RuleTable, alternation
from hlmem.rules.sentence import CJK, Hit, Sentence
from hlmem.rules.values import ZH_CUT, ZH_TRAIL, ZH_WHICH_IS, clean_zh

_V = r"[^，,。！？!?；;：:\n]"  # a character inside one Chinese clause
# Pattern fragments: adverbs between 我 and the verb, a negation, a start ("从5月开始"), the
# speaker (我, or a clause after a comma, the subject dropped).
ZH_ADV = (
    "(?:现在|目前|平时|平常|日常|一般|通常|主要|经常|常常|总是|老是|一直|向来|也|还|都|只|就|才|早就|已经|"
    "最近|近来|其实|本来|真的|确实|比较|挺|很|特别|非常|最|更|蛮|超级|超|还是|基本上|基本|每天|天天|每周|"
    "每晚|早上|晚上|中午|开始|以后|今后|从此|再也|平日|一向|偶尔|有时候|有时|也都|暂时|临时|实在|一般都|"
    "只会|仍然|依然|依旧|照样|反正|倒是|其实也|这段时间|这阵子|这几天|最近这段时间)"
)
_ZH_NEG = r"(?P<neg>再也不|从来不|从不|已经不|早就不|不再|不太|不怎么|并不|一点也不|一点都不|不)"
_ZH_SINCE = rf"(?:从{_V}{{1,8}}?(?:开始|起)|{_V}{{1,6}}?(?:开始|起|以来))?"
_ZH_SELF = r"(?:(?<![他她它你您们])我(?!们|妈|爸|家|的)|(?<=[，,；;])\s*)"

_ZH_USE_CUT = re.compile(
    r"(?<=.{2})(?:来|写|做|开发|处理|编|跑|画|记|管理|看|听|打|剪|拍|学|上网|工作|办公|聊天|编程|玩|查|搜"
    r"|上班|上学|出门|通勤|提神)"
)
_ZH_BAD_LEAD = re.compile(
    r"^(?:你|您|了|过|着|一下|完|不|得|起|到|去|来|掉|的时候|下来|起来|上去|过来|着呢|这个|那个|这些|那些)"
)
_ZH_PERSON = re.compile(r"[我你您他她它]")  # "我吃的面包是我表姐做的": about someone else
_ZH_HABITUAL = re.compile(
    r"每天|天天|平时|平常|一般|通常|经常|常常|总是|老是|一直|向来|现在|开始|最近|主要|都|只|偶尔|有时|每周|每晚|早上"
    r"|晚上|习惯"
)

_ZH_CORRECTION = re.compile(
    rf"不是(?P<old>{_V}{{1,15}}?)[，,]?\s*(?:而是|而|是)(?P<new>{_V}{{1,15}})"
)
_ZH_CORRECTION_LEAD = re.compile(r"^(?:在|于|住在|去|到|用)")
_ZH_NAME = re.compile(
    r"(?:我(?:的)?(?:名字|姓名|全名)(?:叫做?|是)|(?<![他她它你])我叫(?:做)?(?![了过着醒车外你他她它人声不什"
    r"起住])|(?<![别不要])(?:你|您|大家)?(?:可以|就|以后|都)?叫我)\s*(?P<x>[\u4e00-\u9fffA-Za-z·]"
    r"[\u4e00-\u9fffA-Za-z·'. -]{0,20}?)\s*(?=就行|就好|就可以|吧|好了|即可|$|[，,。！？!?；;、\s])"
)
_ZH_NOT_NAME = re.compile(r"[是的了在我你他她和跟]")
_ZH_FAVORITE = re.compile(
    rf"我(?:的)?最(?:喜欢|爱)的(?P<a>{_V}{{1,8}}?)(?P<neg>不)?是(?P<x>{_V}{{1,20}})"
)
_ZH_ATTRIBUTE = re.compile(
    rf"我的(?P<a>[^\s，,。！？!?；;的是不]{{1,8}}?)(?P<neg>不)?(?:是|为|叫)(?P<x>{_V}{{1,40}})"
)
_ZH_MOVE = re.compile(rf"(?:搬家|搬)(?:去|到|回|至|来)了?(?P<x>{_V}{{1,15}})")
_ZH_RELOCATE = re.compile(
    rf"(?:调|派|外派|调动|转|回|来|去)(?:到|去)?了?(?P<x>{_V}{{1,12}}?)(?:工作|上班|发展|定居|生活|常驻"
    r"|驻场)(?!的)"
)
_ZH_JOIN = re.compile(
    rf"(?:入职了?|加入了?|跳槽到了?|跳槽去了?|跳槽进了?|转岗到了?|调到了?|调去了?|调入了?)(?P<x>{_V}{{1,15}})"
)
_ZH_CHANGE = re.compile(
    rf"(?:把(?P<obj>{_V}{{1,10}}?)|从(?P<src>{_V}{{1,12}}?))?(?:换成|换到|换为|改成|改为|改用|换用|切换到"
    rf"|切换成|切换为|切换回|切到|切成|切回|转用|调成|设成|设置成|设置为|设为|用回|换回|改回)了?(?P<x>{_V}{{1,20}})"
)
_ZH_WORK = re.compile(
    rf"(?:(?<![他她它你])我|^|(?<=[，,；;]))(?P<adv>{ZH_ADV}*){_ZH_SINCE}{ZH_ADV}*(?:在|于)"
    rf"(?P<x>{_V}{{1,20}}?)(?P<v>工作|上班|任职|就职|供职|实习|打工|上学|读书|念书|读研|读博|读大学"
    r"|上大学)"
    r"(?![的过室服日量狂]|时间|经验|能力|压力|效率)"
)
_ZH_SCHOOL_VERBS = frozenset({"上学", "读书", "念书", "读研", "读博", "读大学", "上大学"})
_ZH_TEAM_RULE = re.compile(
    rf"(?:(?<![他她它你])我|^|(?<=[，,；;]))(?P<adv>{ZH_ADV}*)(?:在|属于|是)(?P<x>{_V}{{1,15}}?"
    r"(?:团队|小组|项目组|事业部|部门|工作室|组))(?:的)?(?=[，,。！？!?；;\s]|$)"
)
_ZH_LIVE = re.compile(
    rf"(?:(?<![他她它你])我|^|(?<=[，,；;]))(?P<adv>{ZH_ADV}*)(?:住在|家住|家在|定居在|定居于|定居"
    rf"|生活在|居住在|常驻|长住在|长住|现居|住)(?P<x>{_V}{{1,15}})"
)
_ZH_FROM = re.compile(
    rf"(?<![他她它你])我(?P<adv>{ZH_ADV}*)(?:来自|出生在|出生于|生在|长在|老家在|老家是|家乡是|家乡在"
    rf"|老家)(?P<x>{_V}{{1,15}})"
)
_ZH_I_AM = re.compile(
    rf"(?:(?<![他她它你])我|(?<=[，,；;]))(?P<adv>{ZH_ADV}*)(?P<neg>不)?是(?:一名|一个|一位|个|名|位)?(?P<x>{_V}{{1,20}})"
)
_ZH_AT_PLACE = re.compile(
    rf"(?:(?<![他她它你])我|^|(?<=[，,；;]))(?P<adv>{ZH_ADV}*)(?:人)?在(?P<x>{_V}{{1,10}}?)"
    r"(?:呢|了|啊|啦)?(?=[，,。！？!?；;\s]|$)"
)
_ZH_ALLERGY = re.compile(
    rf"(?<![他她它你])我{ZH_ADV}*(?P<neg>不)?(?:对(?P<x>{_V}{{1,12}}?)|有(?P<y>{_V}{{1,8}}?))"
    r"(?:严重|有点|有些|轻微)?过敏"
)
_ZH_USING = re.compile(
    rf"(?<![他她它你])我(?P<adv>{ZH_ADV}*)(?:在|正在)(?:用|使用)(?P<x>{_V}{{1,20}})"
)
_ZH_DOING = re.compile(r"^(?:做|搞|干|从事)")
_ZH_JOB = re.compile(rf"(?<![他她它你])我(?P<adv>{ZH_ADV}*)(?:当|做|干)了?(?P<x>{_V}{{1,12}})")
_ZH_DURATION = re.compile(r"^(?:[\d一二两三四五六七八九十几多半]+(?:年|个月)(?:的)?|了)+")
_ZH_AGE = re.compile(
    r"(?<![他她它你])我(?:今年|现在|已经|都)?(?:已经)?(?P<n>\d{1,3}|[一二两三四五六七八九十]{1,3})(?:周)?岁"
)
_ZH_PREFERENCE = re.compile(
    rf"{_ZH_SELF}(?P<adv>{ZH_ADV}*){_ZH_SINCE}{_ZH_NEG}?(?P<adv2>{ZH_ADV}*)(?P<v>喜欢上了|喜欢上|爱上了|爱上|喜欢"
    rf"|热爱|喜爱|酷爱|偏爱|偏好|钟爱|钟情于|钟情|倾向于|爱|讨厌|厌恶|反感|受不了|烦|习惯于|习惯)"
    rf"(?P<x>{_V}{{1,25}})"
)
_ZH_DISLIKE = frozenset({"讨厌", "厌恶", "反感", "受不了", "烦"})
_ZH_PREFER = frozenset({"偏爱", "偏好", "倾向于", "钟情", "钟情于"})
_ZH_DONT_STANDING = re.compile(
    rf"(?:以后|今后|往后|之后|从现在起|从现在开始|下次|永远)(?:请|你)?(?:都|也)?(?:不要|别|不用|不必|不需要)"
    rf"(?:再)?(?P<x>{_V}{{2,25}})"
)
_ZH_DONT_AGAIN = re.compile(rf"(?:不要|别)再(?P<x>{_V}{{2,25}})")
_ZH_DONT_SELF = re.compile(
    rf"(?<![他她它你])我(?P<adv>{ZH_ADV}*)(?:不要|不需要|不想要)(?P<x>{_V}{{1,15}})"
)
_ZH_SKILL = re.compile(
    rf"(?<![他她它你])我(?P<adv>{ZH_ADV}*)(?P<neg>不)?(?P<v>会|懂|精通|擅长|熟悉|掌握了|掌握)"
    rf"(?P<x>{_V}{{1,15}})"
)
_ZH_SKILL_VERB = re.compile(
    r"^(?:说|讲|弹|拉|吹|唱|画|写代码|编程|游泳|开车|骑|做饭|做菜|下棋|滑雪|滑冰|跳舞|打|踢|用|修|织|剪|拍|翻译)"
)
_ZH_SPEAK = re.compile(r"^(?:说|讲)")
_ZH_WORK_GATE = tuple(
    "工作 上班 任职 就职 供职 实习 打工 上学 读书 念书 读研 读博 大学 团队 组 部 工作室".split()
)


class ZhRules(RuleSet):
    """The Chinese rules over one lexicon, as a table in priority order (``rules``)."""

    def __init__(self, lexicon: Lexicon) -> None:
        super().__init__(lexicon)
        zh_verbs = alternation(lexicon.habit_verbs("zh"))
        langs = alternation(dict.fromkeys(lexicon.values_of("reply_language"), ""))
        animals = alternation(lexicon.animals)
        self._habit_re = re.compile(
            rf"{_ZH_SELF}(?P<adv>{ZH_ADV}*){_ZH_SINCE}{_ZH_NEG}?{ZH_ADV}*(?P<v>{zh_verbs})"
            rf"(?P<x>{_V}{{1,20}})"
        )
        self._reply_re = re.compile(
            rf"(?P<neg>不要|别|不用)?(?:用|使用|说)(?P<x>{langs})(?:来)?(?:回答|回复|答复|交流|沟通|和我说话"
            r"|跟我说话|跟我说|和我聊|跟我聊|聊天|写|对话)"
        )
        self._pet_re = re.compile(
            rf"(?<![他她它你])我(?:家)?{ZH_ADV}*(?:有|养了|养着|养)(?:[一两二三四五六七八九十几]+"
            rf"(?:只|条|个|头|匹))?(?P<x>{animals})(?!粮|砂|窝|毛|屋|笼|食|绳|玩具|盆|厕所|零食|罐头|用品)"
            rf"(?:[，,]?\s*(?:它|他|她)?(?:叫|名叫|名字叫|取名叫)"
            r"(?P<n>[\u4e00-\u9fffA-Za-z]{1,6}))?"
        )
        # Each rule with the words it cannot match without (a substring test is much cheaper
        # than a regex scan). The extractor appends the plan rule.
        # fmt: off
        self.rules: RuleTable = (
            (self._correction, ("不是",)),
            (self._name, ("叫", "名字", "姓名")),
            (self._attribute, ("我的", "最喜欢的", "最爱的")),
            (self._move, ("搬", "调", "派", "转", "回", "来", "去", "入职", "加入", "跳槽")),
            (self._change, ("换", "改", "切", "转用", "调成", "设", "用回")),
            (self._work, _ZH_WORK_GATE),
            (self._live, ("住", "家在", "定居", "生活在", "常驻", "现居", "在")),
            (self._personal, ("过敏", "有", "养", "我是")),
            (self._identity, ("是", "来自", "出生", "生在", "长在", "老家", "家乡", "当", "做",
                              "干")),
            (self._age, ("岁",)),
            (self._reply_language, ("回答", "回复", "答复", "交流", "沟通", "说", "聊", "写",
                                    "对话")),
            (self._preference, ("喜欢", "爱", "偏", "钟", "倾向", "讨厌", "厌恶", "反感",
                                "受不了", "烦", "习惯")),
            (self._dont, ("不要", "别", "不用", "不必", "不需要", "不想要")),
            (self._skill, ("会", "懂", "精通", "擅长", "熟悉", "掌握")),
            (self._habit, tuple(lexicon.habit_verbs("zh"))),
            (self._using, ("在用", "在使用")),
        )
        # fmt: on

    def _correction(self, sent: Sentence) -> list[Hit]:
        out = []
        for m in _ZH_CORRECTION.finditer(sent.text):
            lo, _ = sent.clause(m.start())
            if not self._subject_ok(sent, lo, m.start()):
                continue
            old = _ZH_CORRECTION_LEAD.sub("", clean_zh(m["old"]))
            new = _ZH_CORRECTION_LEAD.sub("", clean_zh(m["new"]))
            predicate = self._correction_slot(sent, sent.text[: m.start()], old, new)
            if predicate and new and new != old:
                out.append(Hit(predicate, self._value(new, predicate), m.start(), confidence=0.85))
        return out

    def _name(self, sent: Sentence) -> list[Hit]:
        m = _ZH_NAME.search(sent.text)
        if m is None:
            return []
        name = m["x"].strip()
        if CJK.search(name):
            if not 1 <= len(name) <= 4 or _ZH_NOT_NAME.search(name):
                return []
        elif len(name.split()) > 3:
            return []
        return [Hit("name", name, m.start(), confidence=0.9)]

    def _attribute(self, sent: Sentence) -> list[Hit]:
        out = []
        for m in _ZH_FAVORITE.finditer(sent.text):
            predicate = self.lexicon.favorite_predicate(m["a"]) or "likes"
            value = clean_zh(m["x"])
            out.append(Hit(predicate, value, m.start(), -1 if m["neg"] else 1, confidence=0.85))
        for m in _ZH_ATTRIBUTE.finditer(sent.text):
            attribute = self.lexicon.attribute_predicate(m["a"])
            if attribute is None:
                continue
            value = ZH_TRAIL.sub("", m["x"].strip())
            attribute, value = self._attribute_value(attribute, value)
            out.append(Hit(attribute, value, m.start(), -1 if m["neg"] else 1, confidence=0.85))
        return out

    def _move(self, sent: Sentence) -> list[Hit]:
        out = []
        for pattern, kind in ((_ZH_MOVE, "move"), (_ZH_RELOCATE, "move"), (_ZH_JOIN, "join")):
            for m in pattern.finditer(sent.text):
                lo, _ = sent.clause(m.start())
                if not self._subject_ok(sent, lo, m.start()):
                    continue
                if kind == "join" and "我" not in sent.text[: m.start()]:
                    continue
                place = self._location(sent, m, m["x"], "x")
                if place is not None:
                    hits = [Hit("location", place, m.start(), confidence=0.85)]
                elif kind == "join":
                    value = self._cut_time(sent, m.start("x"), m["x"])
                    hits = self._org_hits(sent, m.start(), value)
                else:
                    continue
                out.extend(self._changed(sent, m.start(), hits))
        return out

    def _change(self, sent: Sentence) -> list[Hit]:
        out = []
        for m in _ZH_CHANGE.finditer(sent.text):
            lo, _ = sent.clause(m.start())
            if not self._subject_ok(sent, lo, m.start()):
                continue
            value = clean_zh(self._cut_time(sent, m.start("x"), m["x"]))
            predicate = self._change_slot(m["obj"] or m["src"], value)
            if predicate is None:
                continue
            hit = Hit(predicate, self._value(value, predicate), m.start(), confidence=0.8)
            out.extend(self._changed(sent, m.start(), [hit]))
        return out

    def _work(self, sent: Sentence) -> list[Hit]:
        out = []
        for m in _ZH_WORK.finditer(sent.text):
            if self._self_said(sent, m, at_start=True):
                school = m["v"] in _ZH_SCHOOL_VERBS
                hits = self._org_hits(sent, m.start(), m["x"], school=school)
                out.extend(self._since(sent, m.start(), hits))
        for m in _ZH_TEAM_RULE.finditer(sent.text):
            if self._self_said(sent, m, at_start=True):
                out.append(Hit("team", clean_zh(m["x"]), m.start(), confidence=0.8))
        return out

    def _live(self, sent: Sentence) -> list[Hit]:
        out = []
        for m in _ZH_LIVE.finditer(sent.text):
            if not self._self_said(sent, m, at_start=True):
                continue
            place = self._location(sent, m, m["x"], "x")
            if place is not None:
                out.extend(self._since(sent, m.start(), [Hit("location", place, m.start())]))
                continue
            home = self.lexicon.home(self._clean_place(sent, m.start("x"), m["x"]))
            if home is not None:
                out.append(Hit("home", home, m.start()))
        for m in _ZH_AT_PLACE.finditer(sent.text):  # 我(现在)在北京: where the user is
            if self._self_said(sent, m, at_start=True):
                place = self.lexicon.place(clean_zh(m["x"]))
                if place is not None:
                    out.append(Hit("location", place, m.start(), confidence=0.7))
        return out

    def _identity(self, sent: Sentence) -> list[Hit]:
        lex = self.lexicon
        out = []
        for m in _ZH_FROM.finditer(sent.text):
            place = self._location(sent, m, m["x"], "x")
            if place is not None:
                out.append(Hit("hometown", place, m.start(), confidence=0.85))
        for m in _ZH_I_AM.finditer(sent.text):
            if not self._self_said(sent, m):
                continue
            value = clean_zh(m["x"])
            polarity = -1 if m["neg"] else 1
            if value.endswith("人") and lex.place(value[:-1]):
                out.append(Hit("hometown", lex.place(value[:-1]) or "", m.start(), polarity))
                continue
            slot = lex.slot_of_value(value)
            if slot is not None:  # 我是素食主义者 -> diet
                out.append(Hit(slot, lex.canonical_value(value, slot), m.start(), polarity))
                continue
            value = _ZH_DOING.sub("", value)
            head, _, title = value.rpartition("的")
            if lex.is_occupation(title):
                out.append(Hit("occupation", title, m.start(), polarity, confidence=0.85))
                if head and polarity > 0:
                    out.extend(self._org_hits(sent, m.start(), head))
        for m in _ZH_JOB.finditer(sent.text):
            value = clean_zh(_ZH_DURATION.sub("", m["x"]))
            if lex.is_occupation(value):
                out.append(Hit("occupation", value, m.start(), confidence=0.8))
        return out

    def _personal(self, sent: Sentence) -> list[Hit]:
        """Allergies (我对花生过敏) and pets, with their names (我养了一只猫叫咪咪)."""
        out = []
        for m in _ZH_ALLERGY.finditer(sent.text):
            value = clean_zh(m["x"] or m["y"])
            if value and not _ZH_PERSON.search(value):
                out.append(Hit("allergy", value, m.start(), -1 if m["neg"] else 1, confidence=0.9))
        for m in self._pet_re.finditer(sent.text):
            value = f"{m['x']}（{m['n']}）" if m["n"] else m["x"]
            out.append(Hit("pets", value, m.start(), confidence=0.85))
        return out

    def _using(self, sent: Sentence) -> list[Hit]:
        out = []
        for m in _ZH_USING.finditer(sent.text):
            value = clean_zh(_ZH_USE_CUT.split(m["x"], maxsplit=1)[0])
            if value and not _ZH_BAD_LEAD.match(value) and not _ZH_PERSON.search(value):
                predicate, value = self._slot("uses", value, "zh")
                hit = Hit(predicate, value, m.start(), confidence=0.75)
                out.extend(
                    self._changed(sent, m.start(), [hit]) if ZH_TEMP.search(sent.text) else [hit]
                )
        return out

    def _age(self, sent: Sentence) -> list[Hit]:
        m = _ZH_AGE.search(sent.text)
        age = cn_number(m["n"]) if m else None
        if m is None or age is None or not 0 < age < 120:
            return []
        return [Hit("age", str(age), m.start(), confidence=0.85)]

    def _reply_language(self, sent: Sentence) -> list[Hit]:
        m = self._reply_re.search(sent.text)
        if m is None:
            return []
        value = self._value(m["x"], "reply_language")
        return [Hit("reply_language", value, m.start(), -1 if m["neg"] else 1)]

    def _preference(self, sent: Sentence) -> list[Hit]:
        out = []
        for m in _ZH_PREFERENCE.finditer(sent.text):
            if not self._self_said(sent, m) or m["x"].startswith("的"):
                continue
            verb, adverbs = m["v"], (m["adv"] or "") + (m["adv2"] or "")
            negative = verb in _ZH_DISLIKE
            if negative and m["neg"]:
                continue  # "不讨厌": neither a like nor a dislike
            polarity = -1 if negative or m["neg"] else 1
            value = clean_zh(m["x"])
            if verb.startswith("习惯"):
                predicate, value = self._habit_of(value)
            elif verb in _ZH_PREFER or "更" in adverbs:
                predicate = "prefers"
            else:
                predicate = "likes"
            if value and not _ZH_BAD_LEAD.match(value) and not _ZH_PERSON.search(value):
                predicate, value = self._slot(predicate, value, "zh")
                hit = Hit(predicate, value, m.start(), polarity)
                out.extend(self._since(sent, m.start(), [hit]))
        return out

    def _habit_of(self, value: str) -> tuple[str, str]:
        """ "习惯用Vim" → (uses, Vim); otherwise (habit, the value)."""
        for verb, predicate in self.lexicon.habit_verbs("zh").items():
            if value.startswith(verb) and len(value) > len(verb):
                return predicate, value[len(verb) :]
        return "habit", value

    def _dont(self, sent: Sentence) -> list[Hit]:
        if sent.hits:
            return []
        for pattern in (_ZH_DONT_STANDING, _ZH_DONT_AGAIN, _ZH_DONT_SELF):
            m = pattern.search(sent.text)
            if m is not None and (pattern is not _ZH_DONT_SELF or self._self_said(sent, m)):
                value = clean_zh(m["x"])
                if value and not _ZH_BAD_LEAD.match(value):
                    predicate, value = self._slot("prefers", value, "zh")
                    return [Hit(predicate, value, m.start(), -1, confidence=0.75)]
        return []

    def _skill(self, sent: Sentence) -> list[Hit]:
        m = _ZH_SKILL.search(sent.text)
        if m is None:
            return []
        value = clean_zh(m["x"])
        if m["v"] == "会" and not _ZH_SKILL_VERB.match(value):
            return []
        polarity = -1 if m["neg"] else 1
        spoken = _ZH_SPEAK.match(value)
        if spoken and len(value) > spoken.end():
            return [Hit("speaks", value[spoken.end() :], m.start(), polarity, confidence=0.8)]
        return [Hit("skill", value, m.start(), polarity, confidence=0.75)] if value else []

    def _habit(self, sent: Sentence) -> list[Hit]:
        out = []
        verbs = self.lexicon.habit_verbs("zh")
        for m in self._habit_re.finditer(sent.text):
            if not self._self_said(sent, m):
                continue
            predicate, raw = verbs[m["v"]], m["x"]
            if raw.startswith("的"):
                which = ZH_WHICH_IS.match(raw)
                raw = raw[which.end() :] if which else raw[1:]
            if raw.startswith("了"):
                if predicate != "pets":
                    continue  # 我吃了一个苹果: something that happened, not a habit
                raw = raw[1:]
            if _ZH_BAD_LEAD.match(raw):
                continue
            clause_end = ZH_CUT.search(raw)
            head = raw[: clause_end.start()] if clause_end else raw
            if not m["neg"] and head.rstrip().endswith("了") and predicate != "pets":
                if not _ZH_HABITUAL.search(m["adv"] or ""):
                    continue  # 我吃饭了: done, not a habit
            cut = _ZH_USE_CUT.search(raw)  # 用VS Code写代码, 骑车上班: the object only
            raw = raw[: cut.start()] if cut else raw
            value = clean_zh(raw)
            if value and not _ZH_PERSON.search(value):
                predicate, value = self._slot(predicate, value, "zh")
                polarity = -1 if m["neg"] else 1
                hit = Hit(predicate, value, m.start(), polarity, confidence=0.75)
                hit.qualifiers, hit.scope = self._temporal(sent, m.start())
                out.extend(self._since(sent, m.start(), [hit]))
        return out
