"""Plans and deadlines with a date, in both languages: 明天开会, 下周三之前交, "on Friday".

A plan is a clause with a time expression that is not over yet and, in Chinese, a word that
makes it something to do (开会, 提交, 出差 …); in English, the speaker (or "we", "let's") as its
subject with a modal or a gerund, or something said to be due. Routines ("every Monday",
每周一), things done (周五去了北京, "I went on Friday") and chat ("talk to you tomorrow") are not
plans. The value is the resolved date label and the action; ``valid_from``/``valid_to`` span
the date. The rule runs last, so a time expression an earlier rule used is not a plan.
"""

from __future__ import annotations

import re
from datetime import timedelta

from hlmem.lang import Language, Lexicon
from hlmem.lang.timeexpr import TimeRef
from hlmem.rules.base import RuleSet, RuleTable
from hlmem.rules.sentence import CJK, Hit, Sentence
from hlmem.rules.values import ZH_TRAIL, clean_en
from hlmem.rules.zh import ZH_ADV

# Plans: a clause with a time that is not over, and (zh) a word that makes it something to do.
_ZH_PLAN_WORDS = tuple(
    "要 还得 得去 需要 打算 计划 准备 将 必须 安排 约了 约好 预约 开会 会议 交 提交 出差 去 回"
    " 参加 考试 面试 飞 出发 截止 到期 时间是 日期是 定在 定于 举行 举办 召开 搬家 办理 上课"
    " 值班 加班 体检 复查 看病 看医生 聚餐 聚会 旅行 旅游 汇报 演讲 答辩 发布 上线 部署 评审"
    " 结婚 婚礼 报名 缴费 还款 付款 订 开学 放假 请假 休假 出国 回国 拜访 约会 截稿 见面 见客户"
    " 做完 完成 搞定 弄完 写完 发给 发送".split()
)
_ZH_PLAN_MARK = re.compile("|".join(sorted(_ZH_PLAN_WORDS, key=len, reverse=True)))
# An English plan has the speaker (or "we", "let's") as its subject, or says what is due.
_EN_PLAN_WORDS = ("i ", "i'", "we ", "we'", "let's", "let us", "due", "deadline")
_ZH_NOT_PLAN = re.compile(
    r"取消|推迟|延期|改期|不去了|不来了|天气|下雨|下雪|降温|升温|刮风|台风|气温|温度|雾霾|晴|阴天|生日快乐|快乐"
    r"|和你|跟你|向你|给你|请教|聊聊|谈谈|聊一聊|谈一谈|聊一下|谈一下|分享"
)
_ZH_ROUTINE = re.compile(r"每周|每天|每个|每次|每月|每年|平时|经常|常常|通常|一般|总是|有时")
# A clause with 了 is something done, unless one of these words says it is still to come.
_ZH_WILL = re.compile(r"要|打算|准备|计划|将|会去|会来|得去|还得|需要|必须")
_ZH_OTHER_LEAD = re.compile(
    r"^\s*(?:他|她|它|你|您|大家|别人|有人|朋友|同事|老板|领导|老婆|老公|爸|妈|孩子|客户)"
)
_ZH_EVENT_TIME = re.compile(
    r"(?P<x>[^，,]+?)的(?:时间|日期|截止时间|截止日期|开始时间|举办时间)(?:是|为|定在|定于|在)\s*$"
)
_ZH_DEADLINE_AFTER = re.compile(r"^\s*(?:之前|以前|前|截止|为止|到期)")
_ZH_DEADLINE_BEFORE = re.compile(r"(?:截止到?|截至|最晚|最迟)\s*$")
_ZH_BEFORE_TIME = re.compile(r"(?:在|于|从|截止到?|截至|最晚|最迟|到)\s*$")
_ZH_AFTER_TIME = re.compile(r"^\s*(?:之前|以前|前|之后|以后|后|截止|为止|到期|的时候|的|开始|起)?")
_ZH_PLAN_LEAD = re.compile(
    rf"^(?:我们|咱们|我|{ZH_ADV}|要|得|需要|打算|计划|准备|想|将|会|必须|还要|还得|就要|应该|记得|一起"
    r"|大概|那么|那|所以|然后|\s)+"
)
_ZH_PLAN_STOP = frozenset(
    {"见", "再说", "再聊", "聊", "吧", "好", "可以", "行", "没空", "有空", "没事", "再见"}
)
_EN_DEADLINE = re.compile(r"^(?:by|before|until|till)\b", re.I)
_EN_DUE_END = re.compile(r"\b(?:due|deadline(?: is)?)\s*(?:on|by)?\s*$", re.I)
_EN_DUE = re.compile(r"^(?:the\s+|my\s+|our\s+)?(?P<x>[\w' -]{2,40}?)\s+(?:is|are)\s+due\b", re.I)
_EN_PLAN_SUBJECT = re.compile(
    r"^(?:(?:so|and|oh|also|btw|ok|okay|well|anyway|but|then|just|actually|remember)\s*,?\s+)*"
    r"(?P<s>i|we|let's|let us)(?P<aux>'m|'re|'ll|'ve|\s+am|\s+are|\s+will|\s+shall|\s+have"
    r"|\s+has)?\s+",
    re.I,
)
_EN_FILLER = r"(?:also|still|definitely|finally|just|really|then|probably|actually|now|be)\s+"
_EN_MODALS = re.compile(
    rf"^(?:{_EN_FILLER})*(?:going to|gonna|planning to|planning on|plan to|plan on|have to"
    rf"|have got to|got to|need to|must|should|want to|intend to|supposed to|scheduled to"
    rf"|about to|will|planning)\s+(?:(?:{_EN_FILLER})|(?:going to|gonna|have to|need to|be"
    rf"|remember to)\s+)*",
    re.I,
)
_EN_FILLERS = re.compile(rf"^(?:{_EN_FILLER})+", re.I)
_EN_HAVE = re.compile(
    r"^(?:(?:have|has)\s+(?:(?:a|an|the|my|our|another)\s+)?|got\s+(?:a|an|my|our|another)\s+)",
    re.I,
)
_EN_ARTICLE = re.compile(r"^(?:(?:a|an|the|my|our|another)\s+)?", re.I)
_EN_PAST = frozenset(
    "was were went had did saw met got came took made bought ate drank flew left gave told said"
    " wrote ran began sent lost found won broke brought built caught chose drove fell felt fought"
    " forgot froze grew heard held hurt kept knew led lent meant paid put quit rode rang rose sat"
    " sold shot showed shut sang slept spent stood stole stuck taught thought threw understood"
    " woke wore became".split()
)
_EN_STATIVE = frozenset(
    "feeling being doing thinking wondering hoping trying having getting"
    " going struggling looking working considering finding starting".split()
)
_EN_CHAT = re.compile(
    r"^(?:talk|chat|share|ask|tell|discuss|say|speak|complain|vent|hear|learn|know)\b", re.I
)
_EN_CHAT_ANY = re.compile(r"\b(?:talk to you|chat with you|see you|talk again|with you)\b", re.I)
_EN_RECURRING = re.compile(
    r"\b(?:every|each|weekly|daily|monthly|on (?:mon|tues|wednes|thurs|fri|satur|sun)days)\b"
)
_EN_DEADLINE_IS = re.compile(
    r"^(?:the\s+|my\s+|our\s+)?deadline(?:\s+for\s+(?P<x>[\w' -]{2,40}?))?\s+(?:is|was)$", re.I
)
_EN_PLAN_STOP = frozenset({"", "be back", "see you", "talk", "chat", "be there", "be free"})


class PlanRules(RuleSet):
    """The plan rule, with its gate words per language (``rules``)."""

    def __init__(self, lexicon: Lexicon) -> None:
        super().__init__(lexicon)
        self.rules: dict[Language, RuleTable] = {
            "zh": ((self._plan, _ZH_PLAN_WORDS),),
            "en": ((self._plan, _EN_PLAN_WORDS),),
        }

    def _plan(self, sent: Sentence) -> list[Hit]:
        start_of_day = sent.anchor.replace(hour=0, minute=0, second=0, microsecond=0)
        for ref in sent.times("future"):
            if ref.span in sent.used or ref.end <= start_of_day:
                continue
            found = self._zh_plan(sent, ref) if sent.lang == "zh" else self._en_plan(sent, ref)
            if found is None:
                continue
            action, deadline = found
            qualifiers = (("截止",) if sent.lang == "zh" else ("deadline",)) if deadline else ()
            return [
                Hit(
                    "plan",
                    f"{_date_label(ref)} {action}",
                    ref.span[0],
                    qualifiers=qualifiers,
                    scope="plan",
                    valid_from=ref.start,
                    valid_to=ref.end,
                    confidence=0.8,
                )
            ]
        return []

    def _zh_plan(self, sent: Sentence, ref: TimeRef) -> tuple[str, bool] | None:
        lo, hi = sent.clause(ref.span[0])
        clause = sent.text[lo:hi]
        if not _ZH_PLAN_MARK.search(clause) or _ZH_NOT_PLAN.search(clause):
            return None
        if _ZH_ROUTINE.search(sent.text):
            return None  # 每周一开周会, 我平时周末也要加班: a routine, not a plan
        if not self._subject_ok(sent, lo, ref.span[1]):
            return None
        before = sent.text[lo : ref.span[0]]
        after = sent.text[ref.span[1] : hi]
        if _ZH_OTHER_LEAD.match(after):
            return None
        deadline = bool(_ZH_DEADLINE_AFTER.match(after) or _ZH_DEADLINE_BEFORE.search(before))
        event = _ZH_EVENT_TIME.search(before)
        if event is not None:  # 发布会的时间是下周一上午九点
            before, after = event["x"], ""
            deadline = deadline or "截止" in event.group(0)
        before = _ZH_BEFORE_TIME.sub("", before)
        after = _ZH_AFTER_TIME.sub("", after, count=1)
        action = _ZH_PLAN_LEAD.sub("", (before + after).strip())
        if "了" in action.replace("了解", "") and not _ZH_WILL.search(clause):
            return None  # 周五去了北京: done
        action = ZH_TRAIL.sub("", action).strip()
        if not action or action in _ZH_PLAN_STOP or CJK.search(action) is None:
            return None
        return action, deadline

    def _en_plan(self, sent: Sentence, ref: TimeRef) -> tuple[str, bool] | None:
        lo, hi = sent.clause(ref.span[0])
        before = sent.norm[lo : ref.span[0]]
        after = sent.norm[ref.span[1] : hi]
        deadline = bool(_EN_DEADLINE.match(ref.expression) or _EN_DUE_END.search(before))
        if _EN_RECURRING.search(sent.low, lo, hi):
            return None  # "every Monday": a routine, not a plan
        text = " ".join(f"{before} {after}".split()).strip(" ,.;:!")
        due = _EN_DUE.match(text)
        if due:
            return f"{clean_en(due['x'])} due", True
        named = _EN_DEADLINE_IS.match(text)
        if named:
            return " ".join(filter(None, (clean_en(named["x"] or ""), "deadline"))), True
        subject = _EN_PLAN_SUBJECT.match(text)
        if subject is None:
            return None
        rest = text[subject.end() :]
        aux = (subject["aux"] or "").strip().lower()
        modal = _EN_MODALS.match(rest)
        planned = bool(modal) or subject["s"].lower().startswith("let")
        rest = rest[modal.end() :] if modal else _EN_FILLERS.sub("", rest)
        if rest.split(" ", 1)[0].lower() in _EN_PAST:
            return None  # "I got a new remote that arrived on Friday": it happened
        have = _EN_HAVE.match(rest) or (_EN_ARTICLE.match(rest) if aux in ("have", "has") else None)
        if have is not None:
            rest, planned = rest[have.end() :], True
        first = rest.split(" ", 1)[0].lower()
        if first.endswith("ing") and len(first) > 4 and first not in _EN_STATIVE:
            planned = True
        if not planned or first in _EN_PAST or (first.endswith("ed") and first != "need"):
            return None
        if (
            _EN_CHAT.match(rest)
            or _EN_CHAT_ANY.search(rest)
            or (_is_today(sent, ref) and not modal)
        ):
            return None  # "today I want to talk about ...", "I have good news today"
        action = clean_en(rest)
        if not action or action.lower() in _EN_PLAN_STOP:
            return None
        return action, deadline


def _is_today(sent: Sentence, ref: TimeRef) -> bool:
    """Whether ``ref`` is the speaker's whole day ("today", "tonight"), with no hour."""
    return ref.granularity == "day" and ref.start.date() == sent.anchor.date()


def _date_label(ref: TimeRef) -> str:
    """A short, language-neutral label of a time reference: 2026-05-01, 2026-05, 2026-W34."""
    start, end = ref.start, ref.end
    if ref.granularity == "minute":
        return f"{start:%Y-%m-%d %H:%M}"
    days = (end - start).days
    if days == 1:
        return f"{start:%Y-%m-%d}"
    if start.month == 1 and start.day == 1 and end == start.replace(year=start.year + 1):
        return f"{start:%Y}"
    if start.day == 1 and end.day == 1 and (end.month - start.month) % 12 == 1 and days < 32:
        return f"{start:%Y-%m}"
    if ref.granularity == "week" and days == 7:
        iso = start.isocalendar()
        return f"{iso.year}-W{iso.week:02d}"
    return f"{start:%Y-%m-%d}/{end - timedelta(days=1):%Y-%m-%d}"
