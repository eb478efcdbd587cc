"""The deterministic rule-based extractor, the embedded default (no model needed).

It reads a window's pieces and proposes claims with exact evidence spans. Only the user's own
words become claims: an assistant saying "remember" is not the user asking to be remembered.
Each user piece is cut into sentences; questions, hypotheticals ("如果", "if", "would") and
reported speech ("他说", "she said") are skipped whole. Each remaining sentence goes through
rule families in priority order, and yields at most one claim per slot:

- explicit memory requests ("记住：X", "remember that X") → ``note`` (the sentence is then
  taken as said, and no other rule reads it);
- corrections ("不是X而是Y", "not X but Y") → the corrected value, on the slot the earlier
  value had in this window or the lexicon gives it; "其实" / "actually" raise confidence;
- identity, work and home: 我叫 / 我在X工作 / 我住在 / my name is / I work at / I live in;
  a place lands on ``location`` (where the user is based), an organisation on ``employer``;
- moves and changes (搬去 / 换成 / 调到 / moved to / switched to), with the time they name as
  ``valid_from`` and 暂时 / temporarily as a qualifier (scope ``short_term``);
- preferences and habits (我喜欢 / 我不喝咖啡了 / I prefer / I don't drink coffee): negation
  is polarity, never another predicate; habit verbs come from the lexicon;
- plans and deadlines with a date (明天开会 / 下周三之前交 / on Friday) → ``plan``, with the
  resolved date in the value, ``valid_from``/``valid_to`` set and scope ``plan``.
- personal facts: age, birthday, email, phone, diet, allergies, pets, skills and languages,
  the reply language the user asks for, standing instructions ("以后不要…", "from now on").

Values are short and canonical (particles, articles and trailing adverbs stripped, lexicon
spellings applied) so the same fact said twice gives the same (subject, predicate, value).
The claim text is built from the lexicon's templates in the sentence's language. The module
is pure and deterministic (the same window always gives the same drafts) and keeps no state, so
one extractor serves many threads. Speed: every rule names the words it cannot match without,
and runs only on sentences that hold one of them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache

from hlmem.lexicon import Language, Lexicon, default_lexicon
from hlmem.messages import ClaimDraft, ClaimScope, EvidenceSpan, Role, WindowPiece, WindowText
from hlmem.text import language_of, normalize
from hlmem.timeparse import Prefer, TimeRef, cn_number, find_all, trie_pattern

NAME = "rules-v2"

# --- explicit memory requests (as in rules-v1) ------------------------------------------------

# Only a request to remember counts, not the word: "记住" at the start of a sentence or after
# 请 / 帮我 / 麻烦(你) / (一定)要, never "记住了"; "remember" as an imperative at the start of a
# sentence (after "also", "and", "ok", ...), after "please", or in "can/could you remember";
# never "remember when ..." or a "remember that ...?" asked back (recalling, not requesting).
_SENTENCE_START = r"(?:^|(?<=[。！？!?.;；\n]))\s*"
_NOTE_PATTERNS = (
    (re.compile(
        rf"(?:{_SENTENCE_START}(?:(?:也|还|另外)[,，]?\s*)?(?:请|帮我|麻烦你?|你?一定要|要)?"
        r"|(?:请|帮我|麻烦你?|一定要))"
        r"记住(?!了)(?:一下|这个|这件事)?\s*[:：,，]?\s*(?P<x>[^。！？!?\n]+)"
    ), "记住"),
    (re.compile(
        rf"(?i)(?:{_SENTENCE_START}(?:(?:also|and|oh|ok|okay|btw|so|hey)[,]?\s+)*(?:please\s+)?"
        r"|\bplease\s+|\b(?:can|could|would)\s+you\s+(?:please\s+)?)"
        r"remember(?:\s+this)?(?:\s+that)?\s*[:,]?\s+"
        # "remember when ...", "remember Jon, ...": recalling together, not a request
        r"(?!(?:when|how|what|where|who|why|the time|me)\b)(?-i:(?![A-Z][a-z]+,))"
        r"(?P<x>[^\n]+?)(?=[.!?](?:\s|$)|[!?]|\n|$)"
    ), "remember"),
)
_YOU_REMEMBER = re.compile(r"\byou\s+(?:please\s+)?remember", re.I)
_NOTE_TRIM = " \t\"'“”‘’「」『』,，:：;；"

# --- sentences and the filters that skip them ------------------------------------------------

_SENTENCE_END = re.compile(r"[。！？!?；;…]+[”’」』\"')）]*|\.(?=\s|$)[”’\"')）]*|\n+")
_CLAUSE_SEP = re.compile(r"[，,；;：:]|\s+-\s+|\s—\s")
_CJK = re.compile(r"[\u3400-\u9fff]")
# Filters read the sentence's tail, its start, or literal words: cheap scans.
_ZH_QUESTION_TAIL = re.compile(r"(?:[？?]|[吗么嘛][。！!～~]?)[\s”」]*$")
_ZH_QUESTION = re.compile(
    r"是不是|有没有|要不要|能不能|可不可以|会不会|对不对|好不好|行不行|喜不喜欢|什么|哪里|哪儿|哪个|哪些|怎么"
    r"|为什么|为啥|谁|几点|多少|几个|咋"
)
_EN_QUESTION_TAIL = re.compile(r"\?[\s\"')]*$")
_EN_QUESTION_START = re.compile(
    r"\W*(?:do|does|did|can|could|would|will|is|are|was|were|should|shall|have|has|what|where"
    r"|when|who|why|how|which|whats|what's|wanna|isn't|aren't|don't you)\b"
)
_ZH_UNREAL = re.compile(
    r"如果|假如|假设|要是|万一|倘若|若是|的话|假若|或许|也许|可能|说不定|不一定|想象"
)
_EN_UNREAL_WORDS = frozenset(
    "if suppose supposing imagine unless maybe perhaps might would wouldn't could wish hope"
    " wonder wondering i'd we'd probably considering".split()
)
_EN_UNREAL_PHRASES = ("thinking of", "thinking about")
_EN_WORD = re.compile(r"[a-z']+")
_ZH_REPORTED_GATE = ("说", "讲", "告诉", "觉得", "认为", "以为")
_ZH_REPORTED = re.compile(
    r"(?:他|她|他们|她们|别人|朋友|同事|老板|有人|妈妈|爸爸|我妈|我爸|老婆|老公|大家)(?:说|讲|告诉我|觉得|认为|以为)"
    r"|听说|据说|说[:：]|[“「『\"].*说|说.*[“「『\"]"
)
_EN_REPORTED_GATE = ("said", "says", "say ", "told", "tells", "think", "believe", "claim",
                     "according", "heard")
_EN_REPORTED = re.compile(
    r"\b(?:he|she|they|someone|somebody|people|everyone|everybody|my\s+\w+|his|her)\s+"
    r"(?:said|says|say|told me|tells me|thinks|think|believes|claims)\b|\baccording to\b"
    r"|\bheard that\b|\bsaid that\b|\"[^\"]*\"\s*,?\s*(?:he|she|they)\s+said"
)
_ZH_CUE = re.compile(r"其实|实际上|更正|纠正|说错了|不对|准确地说|应该是|改一下")
_EN_CUE = re.compile(r"\b(?:actually|correction|i meant|to be precise|sorry,|i mean)\b", re.I)
_ZH_TEMP = re.compile(r"暂时|临时|暂且|这段时间|这阵子|这几天|先用")
_EN_TEMP = re.compile(
    r"\b(?:temporarily|for now|for the time being|for a while|for the moment|until further"
    r" notice)\b", re.I
)
_ZH_FUTURE = re.compile(r"要|打算|准备|计划|将|会|下个|明年|下周|下月|得|需要|必须")
_EN_FUTURE = re.compile(
    r"\b(?:will|'ll|going to|gonna|plan|planning|next|need to|have to|must|soon)\b|'ll\b", re.I
)
_ZH_WILL = re.compile(r"要|打算|准备|计划|将|会去|会来|得去|还得|需要|必须")
_ZH_SINCE_AFTER = re.compile(r"^\s*(?:开始|起|以来)")
_ZH_SINCE_BEFORE = re.compile(r"(?:从|自从|自)\s*$")
_EN_SINCE = re.compile(r"^(?:since|starting|from|as of)\b", re.I)
_EN_SINCE_BEFORE = re.compile(r"\b(?:since|starting|as of|from)\s*$", re.I)

# --- value cleanup ---------------------------------------------------------------------------

_V = r"[^，,。！？!?；;：:\n]"  # a character inside one Chinese clause
_E = r"(?:[^,;!?\n.]|\.(?!\s|$))"  # a character inside one English clause
_ZH_TRAIL = re.compile(
    r"(?:了|啦|吧|的|呢|哦|喔|噢|呀|啊|嘛|哈|哇|咯|罢了|而已|哈哈|等等|等|~|～|\s|[“”\"'。！!？?…])+$"
)
_ZH_LEAD = re.compile(
    r"^(?:的是|是|于|一下|这个|那个|这家|那家|这款|那款|[一两几]?(?:个|家|只|条|位|名|台|辆|部|本|杯|款|种)|一些|一点|点儿|很多|各种|所有"
    r"|这种|那种|[“\"'])+"
)
_ZH_CUT = re.compile(
    r"而不是|而非|胜过|多过|多于|超过|因为|但是|不过|可是|所以|然后|而且|并且|以及|，|。|的时候|之后|以后"
    r"|(?<=..)(?:感觉|觉得|真心|真的|挺好|不错|好用|效果)"
)
_ZH_NAMED = re.compile(r"(?:是|叫|在)")
_ZH_PLACE_CUT = re.compile(
    r"工作|上班|生活|发展|定居|住|读书|上学|附近|旁边|这边|那边|了|啦|的|去|啊|呢|吧"
)
_ZH_USE_CUT = re.compile(
    r"(?<=.{2})(?:来|写|做|开发|处理|编|跑|画|记|管理|看|听|打|剪|拍|学|上网|工作|办公|聊天|编程|玩|查|搜"
    r"|上班|上学|出门|通勤|提神)"
)
_EN_CUT = re.compile(
    r"\s+(?:because|since|but|so that|so|when|while|if|though|although|which|who|where"
    r"|as well as|rather than|instead of|more than|over|than|and i|and we|whenever|unless"
    r"|until|after|before|for (?:work|fun|now|a while|the time being|the moment)|these days"
    r"|originally|though|anyway|such as|including|especially|particularly|for example|like this"
    r"|for (?:[\w-]+\s+){0,3}(?:years?|months?|weeks?|days?|a living)|coming up"
    r"|nowadays|anymore|any more|at the moment|right now|every (?:day|morning|night|week)"
    r"|a lot|very much|so much|too|as well|either|at all|lately|recently|now|though|daily"
    r"|most of the time|on weekends|at work|at home|temporarily|instead|again|here|there)\b.*$",
    re.I,
)
_EN_LEAD = re.compile(r"^(?:(?:the|a|an|some|to|really|also|just)\s+)+", re.I)
_EN_TRAIL = re.compile(
    r"[\s\"'”’)]+$|\s+(?:on|at|by|in|to|with|for|from|of|and|or|about|around|roughly|nearly|almost"
    r"|over|some)$",
    re.I,
)
_EN_BAD_LEAD = re.compile(
    r"^(?:with|for|to|at|in|on|by|from|about|it\b|this\b|that\b|your\b|you\b|a bit\b|them\b"
    r"|how\b|the way\b|way\b|when\b|what\b|is\b|are\b|was\b|being\b|the thought\b|thought\b"
    r"|my\b|our\b|his\b|her\b|their\b|like\b|so\b|very\b|pretty\b|quite\b|not\b|too\b"
    # reactions to a suggestion: "I like the idea of ...", "I like the sound of ..."
    r"|idea\b|ideas\b|sound of|suggestion|reminder|recommendation|tips?\b|approach|options?\b"
    r"|look of|concept|along\b|around\b|through\b|its\b)",
    re.I,
)
_EN_USE_CUT = re.compile(
    r"\s+(?:to|for|when|at|in order to|as|on|with|in|because|since|and|but|so|that|which|who)\s.*$",
    re.I,
)
_EN_PRONOUN = re.compile(r"\b(?:them|it|him|her|you|these|those|there)\b", re.I)
_ZH_BAD_LEAD = re.compile(
    r"^(?:你|您|了|过|着|一下|完|不|得|起|到|去|来|掉|的时候|下来|起来|上去|过来|着呢|这个|那个|这些|那些)"
)
_ZH_PERSON = re.compile(r"[我你您他她它]")  # "我吃的面包是我表姐做的": about someone else
# "用的手机是华为Mate60", "喜欢用的是X": the thing itself comes after 是.
_ZH_WHICH_IS = re.compile(r"^[^是的，,]{0,3}的[^是，,]{0,8}?是")
_ZH_FILLER = re.compile(r"(?<=.)(?:这个|那个|这家|那家|这款|那款|这台|那台)(?=.)")
_ZH_TEAM = re.compile(r"(?:团队|小组|项目组|事业部|部门|工作室|组|部)$")
_EN_TEAM = re.compile(r"\bteam$|\bdepartment$|\bgroup$|\bsquad$", re.I)
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
_ZH_HABITUAL = re.compile(
    r"每天|天天|平时|平常|一般|通常|经常|常常|总是|老是|一直|向来|现在|开始|最近|主要|都|只|偶尔|有时|每周|每晚|早上"
    r"|晚上|习惯"
)

_ZH_ADV = (
    "(?:现在|目前|平时|平常|日常|一般|通常|主要|经常|常常|总是|老是|一直|向来|也|还|都|只|就|才|早就|已经|"
    "最近|近来|其实|本来|真的|确实|比较|挺|很|特别|非常|最|更|蛮|超级|超|还是|基本上|基本|每天|天天|每周|"
    "每晚|早上|晚上|中午|开始|以后|今后|从此|再也|平日|一向|偶尔|有时候|有时|也都|暂时|临时|实在|一般都|"
    "只会|仍然|依然|依旧|照样|反正|倒是|其实也|这段时间|这阵子|这几天|最近这段时间)"
)
_ZH_NEG = r"(?P<neg>再也不|从来不|从不|已经不|早就不|不再|不太|不怎么|并不|一点也不|一点都不|不)"
_ZH_SINCE = rf"(?:从{_V}{{1,8}}?(?:开始|起)|{_V}{{1,6}}?(?:开始|起|以来))?"
_ZH_SELF = r"(?:(?<![他她它你您们])我(?!们|妈|爸|家|的)|(?<=[，,；;])\s*)"

_EN_ADV = (
    r"(?:(?:really|also|still|now|currently|usually|mostly|mainly|generally|normally|typically"
    r"|always|often|only|just|actually|definitely|totally|absolutely|kind of|kinda|sort of"
    r"|pretty much|primarily|basically|personally|honestly|even|all|especially|genuinely|do"
    r"|truly|already|mostly|simply|strongly|much|much rather|rather|by far)\s+)*"
)
_EN_NEG = r"(?P<neg>(?:don't|dont|do not|no longer|never|can't|cannot|can not)\s+)"
_EN_I = r"(?:(?<![\w'])[Ii])"


def _clean_zh(value: str) -> str:
    which = _ZH_WHICH_IS.match(value)
    if which and which.end() < len(value):
        value = value[which.end() :]
    value = _ZH_FILLER.sub("", value)
    cut = _ZH_CUT.search(value)
    if cut and cut.start() > 0:
        value = value[: cut.start()]
    value = _ZH_LEAD.sub("", value.strip())
    return _ZH_TRAIL.sub("", value).strip()


def _clean_en(value: str) -> str:
    value = _EN_CUT.sub("", value.strip())
    value = _EN_LEAD.sub("", value)
    for _ in range(3):
        value = _EN_TRAIL.sub("", value).strip(" ,.;:!?\"'")
    return value


def _clean(value: str, lang: Language) -> str:
    return _clean_zh(value) if lang == "zh" else _clean_en(value)


# --- rule patterns ---------------------------------------------------------------------------

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
_ZH_CORRECTION = re.compile(
    rf"不是(?P<old>{_V}{{1,15}}?)[，,]?\s*(?:而是|而|是)(?P<new>{_V}{{1,15}})"
)
_ZH_CORRECTION_LEAD = re.compile(r"^(?:在|于|住在|去|到|用)")
_ZH_NAME = re.compile(
    r"(?:我(?:的)?(?:名字|姓名|全名)(?:叫做?|是)|(?<![他她它你])我叫(?:做)?(?![了过着醒车外你他她它人声不什"
    r"起住])|(?<![别不要])(?:你|您|大家)?(?:可以|就|以后|都)?叫我)\s*(?P<x>[\u4e00-\u9fffA-Za-z·]"
    r"[\u4e00-\u9fffA-Za-z·'. -]{0,20}?)\s*(?=就行|就好|就可以|吧|好了|即可|$|[，,。！？!?；;、\s])"
)
_DESCRIPTION = re.compile(
    r"^(?:很|非常|特别|太|挺|有点|比较|不|真|好|超|蛮|还|也|都|就|like\b|so\b|very\b|really\b|pretty\b"
    r"|quite\b|not\b|a bit\b|kind of\b|always\b|too\b|also\b|still\b|just\b)",
    re.I,
)
_PHONE = re.compile(r"\d(?:[\d\s-]*\d){5,}")
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
    rf"(?:(?<![他她它你])我|^|(?<=[，,；;]))(?P<adv>{_ZH_ADV}*){_ZH_SINCE}{_ZH_ADV}*(?:在|于)"
    rf"(?P<x>{_V}{{1,20}}?)(?P<v>工作|上班|任职|就职|供职|实习|打工|上学|读书|念书|读研|读博|读大学"
    r"|上大学)"
    r"(?![的过室服日量狂]|时间|经验|能力|压力|效率)"
)
_ZH_SCHOOL_VERBS = frozenset({"上学", "读书", "念书", "读研", "读博", "读大学", "上大学"})
_ZH_TEAM_RULE = re.compile(
    rf"(?:(?<![他她它你])我|^|(?<=[，,；;]))(?P<adv>{_ZH_ADV}*)(?:在|属于|是)(?P<x>{_V}{{1,15}}?"
    r"(?:团队|小组|项目组|事业部|部门|工作室|组))(?:的)?(?=[，,。！？!?；;\s]|$)"
)
_ZH_LIVE = re.compile(
    rf"(?:(?<![他她它你])我|^|(?<=[，,；;]))(?P<adv>{_ZH_ADV}*)(?:住在|家住|家在|定居在|定居于|定居"
    rf"|生活在|居住在|常驻|长住在|长住|现居|住)(?P<x>{_V}{{1,15}})"
)
_ZH_FROM = re.compile(
    rf"(?<![他她它你])我(?P<adv>{_ZH_ADV}*)(?:来自|出生在|出生于|生在|长在|老家在|老家是|家乡是|家乡在"
    rf"|老家)(?P<x>{_V}{{1,15}})"
)
_ZH_I_AM = re.compile(
    rf"(?:(?<![他她它你])我|(?<=[，,；;]))(?P<adv>{_ZH_ADV}*)(?P<neg>不)?是(?:一名|一个|一位|个|名|位)?(?P<x>{_V}{{1,20}})"
)
_ZH_AT_PLACE = re.compile(
    rf"(?:(?<![他她它你])我|^|(?<=[，,；;]))(?P<adv>{_ZH_ADV}*)(?:人)?在(?P<x>{_V}{{1,10}}?)"
    r"(?:呢|了|啊|啦)?(?=[，,。！？!?；;\s]|$)"
)
_ZH_ALLERGY = re.compile(
    rf"(?<![他她它你])我{_ZH_ADV}*(?P<neg>不)?(?:对(?P<x>{_V}{{1,12}}?)|有(?P<y>{_V}{{1,8}}?))"
    r"(?:严重|有点|有些|轻微)?过敏"
)
_ZH_USING = re.compile(
    rf"(?<![他她它你])我(?P<adv>{_ZH_ADV}*)(?:在|正在)(?:用|使用)(?P<x>{_V}{{1,20}})"
)
_ZH_DOING = re.compile(r"^(?:做|搞|干|从事)")
_ZH_JOB = re.compile(rf"(?<![他她它你])我(?P<adv>{_ZH_ADV}*)(?:当|做|干)了?(?P<x>{_V}{{1,12}})")
_ZH_DURATION = re.compile(r"^(?:[\d一二两三四五六七八九十几多半]+(?:年|个月)(?:的)?|了)+")
_ZH_AGE = re.compile(
    r"(?<![他她它你])我(?:今年|现在|已经|都)?(?:已经)?(?P<n>\d{1,3}|[一二两三四五六七八九十]{1,3})(?:周)?岁"
)
_ZH_PREFERENCE = re.compile(
    rf"{_ZH_SELF}(?P<adv>{_ZH_ADV}*){_ZH_SINCE}{_ZH_NEG}?(?P<adv2>{_ZH_ADV}*)(?P<v>喜欢上了|喜欢上|爱上了|爱上|喜欢"
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
    rf"(?<![他她它你])我(?P<adv>{_ZH_ADV}*)(?:不要|不需要|不想要)(?P<x>{_V}{{1,15}})"
)
_ZH_SKILL = re.compile(
    rf"(?<![他她它你])我(?P<adv>{_ZH_ADV}*)(?P<neg>不)?(?P<v>会|懂|精通|擅长|熟悉|掌握了|掌握)"
    rf"(?P<x>{_V}{{1,15}})"
)
_ZH_SKILL_VERB = re.compile(
    r"^(?:说|讲|弹|拉|吹|唱|画|写代码|编程|游泳|开车|骑|做饭|做菜|下棋|滑雪|滑冰|跳舞|打|踢|用|修|织|剪|拍|翻译)"
)
_ZH_SPEAK = re.compile(r"^(?:说|讲)")

_EN_NOT_BUT = re.compile(
    rf"\bnot\s+(?P<old>{_E}{{1,40}}?)\s*,?\s+but\s+(?P<new>{_E}{{1,40}})", re.I
)
_EN_NEW_NOT_OLD = re.compile(
    r"(?:\b(?:it's|it is|that's|that is|i meant|i mean|actually|sorry)[,\s]+|^)"
    rf"(?P<new>[\w' -]{{1,40}}?)\s*,\s*not\s+(?P<old>{_E}{{1,40}})",
    re.I,
)
_EN_NAME = re.compile(
    r"\b(?i:my\s+name(?:'s|\s+is))\s+(?P<a>[A-Za-z][\w'-]*(?:\s+[A-Z][\w'-]*){0,2})"
    r"|(?<![\w'])(?i:i)(?:'m|\s+am)\s+(?i:called)\s+(?P<b>[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*){0,2})"
    r"|(?:^|[,;]\s*|\b(?i:please|just|you can|can)\s+)(?i:call me)\s+(?P<c>[A-Z][\w'-]*)"
    r"|(?<![\w'])(?i:i)\s+(?i:go by)\s+(?P<d>[A-Z][\w'-]*)"
    r"|^(?i:hi|hello|hey)[,!]?\s+(?i:i)(?:'m|\s+am)\s+(?P<e>[A-Z][a-z]+)\s*(?=[,.!]|$)"
)
_EN_NOT_NAME = frozenset({"not", "sorry", "fine", "good", "back", "here", "ready", "done", "just"})
_EN_FAVORITE = re.compile(
    rf"\bmy\s+(?:all[- ]time\s+)?favou?rite\s+(?P<a>[a-z][a-z ]{{1,25}}?)\s+(?:is|are|'s)\s+"
    rf"(?P<neg>not\s+)?(?P<x>{_E}+)",
    re.I,
)
_EN_ATTRIBUTE = re.compile(
    rf"\bmy\s+(?P<a>[a-z][a-z -]{{1,25}}?)(?P<is>\s+is|'s)\s+(?P<neg>not\s+)?(?P<x>{_E}+)",
    re.I,
)
_NAMED_VALUE = re.compile(r"[A-Z0-9]|\S*@")
_EN_MOVE = re.compile(
    rf"\b(?P<v>moved|relocated|moving|relocating|move|relocate)\s+(?:back\s+|over\s+|out\s+"
    rf"|away\s+)?to\s+(?P<x>{_E}+)",
    re.I,
)
_EN_JOIN = re.compile(
    rf"{_EN_I}(?:'ve|\s+have)?\s+(?:just\s+|recently\s+|finally\s+)?(?P<v>joined|started at"
    r"|started working at|started working for|got a job at|got a job with|accepted an offer"
    rf" from|accepted a job at)\s+(?P<x>{_E}+)",
    re.I,
)
_EN_SET = re.compile(
    r"\b(?:changed|switched|set|changing|switching|setting|turned)\s+(?:the|my)\s+"
    rf"(?P<attr>[a-z][a-z ]{{1,20}}?)\s+(?:to|into)\s+(?P<x>{_E}+)",
    re.I,
)
_EN_CHANGE = re.compile(
    r"\b(?:switched back|switching back|changed back|switched|switching|switch|changed|changing"
    r"|change|migrated|migrating|migrate|moved over"
    rf"|moving over|gone over|went over)\s+(?:over\s+|back\s+)?to\s+(?P<x>{_E}+)",
    re.I,
)
_EN_START_USING = re.compile(
    rf"\b(?:started|start|starting|began|begun|begin)\s+(?:using|to use)\s+(?P<x>{_E}+)", re.I
)
_EN_WORK = re.compile(
    rf"{_EN_I}(?:'m|\s+am|'ve\s+been|\s+have\s+been)?\s+{_EN_ADV}(?:work|working|employed"
    rf"|interning|intern)\s+(?P<p>at|for|in)\s+(?P<x>{_E}+)",
    re.I,
)
_EN_JOB_END = r"\s*(?=$|[,.;!?]|\s+(?:and|but|so|who|which|since|now|these days|here)\b)"
_EN_JOB = re.compile(
    rf"{_EN_I}(?:'m|\s+am)\s+{_EN_ADV}(?P<neg>not\s+)?(?:a|an)\s+(?P<x>[a-z][\w -]{{1,40}}?)"
    rf"(?:\s+(?P<p>at|for|in|with)\s+(?P<org>{_E}+?))?{_EN_JOB_END}",
    re.I,
)
_EN_WORK_AS = re.compile(
    rf"{_EN_I}\s+{_EN_ADV}work(?:ing)?\s+as\s+(?:a\s+|an\s+)?(?P<x>[a-z][\w -]{{1,40}}?)"
    rf"(?:\s+(?P<p>at|for|in|with)\s+(?P<org>{_E}+?))?{_EN_JOB_END}",
    re.I,
)
_EN_TEAM_RULE = re.compile(
    rf"{_EN_I}(?:'m|\s+am)\s+{_EN_ADV}(?:on|in|part of|with)\s+(?:the\s+)?(?P<x>[\w -]{{1,30}}?"
    r"\s+(?:team|department|group|squad))\b",
    re.I,
)
_EN_LIVE = re.compile(
    rf"{_EN_I}(?:'m|\s+am|'ve\s+been|\s+have\s+been)?\s+{_EN_ADV}(?:live|living|reside|residing"
    rf"|based|settled)\s+(?:in|out of)\s+(?P<x>{_E}+)",
    re.I,
)
_EN_IN_PLACE = re.compile(
    rf"{_EN_I}(?:'m|\s+am)\s+(?:currently\s+|now\s+|still\s+)?in\s+(?P<x>[A-Z][\w .'-]{{1,30}}?)"
    r"(?=\s*(?:[,.;!]|$))"
)
_PROPER = re.compile(r"^[A-Z][\w'.-]*(?:\s+[A-Z][\w'.-]*){0,3}$")
_EN_I_AM = re.compile(
    rf"{_EN_I}(?:'m|\s+am)\s+{_EN_ADV}(?P<neg>not\s+)?(?:an?\s+)?(?P<x>[a-z][\w-]*(?:\s+[a-z][\w-]*)?)"
    r"(?=\s*(?:[,.;!]|$))",
    re.I,
)
_EN_ALLERGY = re.compile(
    rf"{_EN_I}(?:'m|\s+am)\s+{_EN_ADV}(?P<neg>not\s+)?(?:very\s+|severely\s+|mildly\s+)?"
    rf"allergic\s+to\s+(?P<x>{_E}+)|{_EN_I}\s+have\s+(?:a|an)\s+(?:severe\s+|mild\s+)?"
    r"(?P<y>[\w -]{2,30}?)\s+allergy",
    re.I,
)
_EN_USING = re.compile(
    rf"{_EN_I}(?:'m|\s+am)\s+{_EN_ADV}(?P<v>using)\s+(?P<x>{_E}+)", re.I
)
_EN_FROM = re.compile(
    rf"{_EN_I}(?:'m|\s+am)\s+(?:originally\s+|actually\s+)?from\s+(?P<x>{_E}+)"
    rf"|{_EN_I}\s+(?:was\s+born|grew\s+up|was\s+raised)\s+in\s+(?P<x2>{_E}+)",
    re.I,
)
_EN_AGE = re.compile(
    r"(?<![\w'])[Ii](?:'m|\s+am)\s+(?P<n>\d{1,3})(?:\s+years?\s+old|\s*(?:yo|y/o|yrs old)\b"
    r"|(?=\s*(?:now|this year)?\s*(?:[.,!;]|$)))|(?<![\w'])[Ii]\s+(?:just\s+)?turned\s+"
    r"(?P<n2>\d{1,3})\b"
)
_EN_PREFERENCE = re.compile(
    rf"{_EN_I}\s+{_EN_ADV}(?:{_EN_NEG}{_EN_ADV})?(?P<v>like|love|enjoy|adore|prefer|hate|dislike"
    rf"|detest|loathe|can't stand|cannot stand|can't bear)\s+(?P<x>{_E}+)",
    re.I,
)
_EN_FAN = re.compile(
    rf"{_EN_I}(?:'m|\s+am)\s+{_EN_ADV}(?P<neg>not\s+)?{_EN_ADV}(?:into|(?:a\s+)?(?:big\s+|huge\s+"
    rf"|massive\s+)?fan\s+of)\s+(?P<x>{_E}+)",
    re.I,
)
_EN_VAGUE_ORG = re.compile(
    r"^(?:(?:my|our|this|that|the|a|an)\s+)?(?:current\s+|new\s+|old\s+|small\s+|big\s+|local\s+)?"
    r"(?:company|firm|startup|job|office|home|place|work|business|organization|store|shop)$"
    r"|^(?:my|our|your|his|her|their)\b",
    re.I,
)
_NOT_A_THING = re.compile(
    r"\b(?:my|your|our|their|his|her|me|you|him|them|it)\b|^(?:a|the)\s+\w+ing\b", re.I
)
# "what I read", "as I like": the speaker inside a relative clause.
_EN_RELATIVE = re.compile(
    r"\b(?:what|that|which|who|whom|where|when|how|why|as|if|whether|than|because|whatever"
    r"|how much|how many)\s*$",
    re.I,
)
_EN_DISLIKE = frozenset(
    {"hate", "dislike", "detest", "loathe", "can't stand", "cannot stand", "can't bear"}
)
_EN_DONT_AGAIN = re.compile(
    rf"(?:^|\bplease\s+)(?P<neg>don't|do not|never)\s+(?P<x>{_E}+?)\s+(?:again|anymore|any more"
    r"|from now on|in the future)\b",
    re.I,
)
_EN_STANDING = re.compile(
    r"\b(?:from now on|in the future|going forward)\s*,?\s*(?:please\s+)?"
    rf"(?P<neg>(?:don't|do not|never|stop)\s+)?(?P<x>{_E}{{3,}})",
    re.I,
)
_EN_CAN = re.compile(
    rf"{_EN_I}\s+{_EN_ADV}(?:can|(?P<neg>can't|cannot|can not))\s+(?:also\s+)?(?P<v>speak|play"
    rf"|cook|swim|drive|code|program|sing|dance|ski|snowboard|surf|paint|draw|knit|sew)\b\s*"
    rf"(?P<x>{_E}*)",
    re.I,
)
_EN_GOOD_AT = re.compile(
    rf"{_EN_I}(?:'m|\s+am)\s+{_EN_ADV}(?P<neg>not\s+)?{_EN_ADV}(?P<v>good|great|skilled|proficient"
    rf"|fluent|experienced|an expert|expert|decent)\s+(?:at|in|with)\s+(?P<x>{_E}+)",
    re.I,
)
_EN_KNOW_HOW = re.compile(rf"{_EN_I}\s+{_EN_ADV}(?P<neg>)know\s+how\s+to\s+(?P<x>{_E}+)", re.I)

# Plans: a clause with a time that is not over, and (zh) a word that makes it something to do.
_ZH_PLAN_WORDS = (
    "要 还得 得去 需要 打算 计划 准备 将 必须 安排 约了 约好 预约 开会 会议 交 提交 出差 去 回"
    " 参加 考试 面试 飞 出发 截止 到期 时间是 日期是 定在 定于 举行 举办 召开 搬家 办理 上课"
    " 值班 加班 体检 复查 看病 看医生 聚餐 聚会 旅行 旅游 汇报 演讲 答辩 发布 上线 部署 评审"
    " 结婚 婚礼 报名 缴费 还款 付款 订 开学 放假 请假 休假 出国 回国 拜访 约会 截稿 见面 见客户"
    " 做完 完成 搞定 弄完 写完 发给 发送"
).split()
_ZH_PLAN_MARK = re.compile("|".join(sorted(_ZH_PLAN_WORDS, key=len, reverse=True)))
# An English plan has the speaker (or "we", "let's") as its subject, or says what is due.
_EN_PLAN_WORDS = ("i ", "i'", "we ", "we'", "let's", "let us", "due", "deadline")
_ZH_NOT_PLAN = re.compile(
    r"取消|推迟|延期|改期|不去了|不来了|天气|下雨|下雪|降温|升温|刮风|台风|气温|温度|雾霾|晴|阴天|生日快乐|快乐"
    r"|和你|跟你|向你|给你|请教|聊聊|谈谈|聊一聊|谈一谈|聊一下|谈一下|分享"
)
_ZH_ROUTINE = re.compile(r"每周|每天|每个|每次|每月|每年|平时|经常|常常|通常|一般|总是|有时")
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
    rf"^(?:我们|咱们|我|{_ZH_ADV}|要|得|需要|打算|计划|准备|想|将|会|必须|还要|还得|就要|应该|记得|一起"
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
    {"feeling", "being", "doing", "thinking", "wondering", "hoping", "trying", "having", "getting",
     "going", "struggling", "looking", "working", "considering", "finding", "starting"}
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

# --- the extractor ---------------------------------------------------------------------------


@dataclass(slots=True)
class _Hit:
    """One claim found in a sentence, before it becomes a draft."""

    predicate: str
    value: str
    at: int  # where in the sentence it was found (its clause is quoted for long sentences)
    polarity: int = 1
    qualifiers: tuple[str, ...] = ()
    scope: ClaimScope = "long_term"
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    confidence: float = 0.8


class _Sentence:
    """A sentence of a user piece, with the time expressions in it (computed when asked)."""

    __slots__ = ("_times", "anchor", "hits", "lang", "low", "norm", "seen", "start", "text", "used")

    def __init__(
        self, text: str, start: int, anchor: datetime, seen: dict[str, str]
    ) -> None:
        self.text = text
        #: values claimed earlier in the window (normalised) -> their slot, for corrections
        self.seen = seen
        # English rules read a copy with straight apostrophes, and gates a lowercase one (both
        # the same length as the text: offsets hold).
        self.norm = text.replace("’", "'") if "’" in text else text
        self.lang: Language = "zh" if _CJK.search(text) else "en"
        self.low = self.norm if self.lang == "zh" else self.norm.lower()
        self.start = start
        self.anchor = anchor
        self._times: dict[Prefer | None, list[TimeRef]] = {}
        #: claims this sentence has given so far; spans of time expressions a claim used
        self.hits = 0
        self.used: set[tuple[int, int]] = set()

    @property
    def cue(self) -> bool:
        """Whether the sentence says it corrects something (其实, actually)."""
        return bool((_ZH_CUE if self.lang == "zh" else _EN_CUE).search(self.text))

    def times(self, prefer: Prefer | None) -> list[TimeRef]:
        found = self._times.get(prefer)
        if found is None:
            found = self._times[prefer] = find_all(self.text, self.anchor, prefer=prefer)
        return found

    def clause(self, at: int) -> tuple[int, int]:
        """The bounds of the clause around position ``at``."""
        start, end = 0, len(self.text)
        for m in _CLAUSE_SEP.finditer(self.text):
            if m.end() <= at:
                start = m.end()
            elif m.start() >= at:
                end = m.start()
                break
        return start, end

    def time_in(self, lo: int, hi: int, prefer: Prefer | None) -> TimeRef | None:
        return next((t for t in self.times(prefer) if lo <= t.span[0] < hi), None)


_Rule = Callable[[_Sentence], list[_Hit]]
_ZH_WORK_GATE = (
    "工作", "上班", "任职", "就职", "供职", "实习", "打工", "上学", "读书", "念书", "读研", "读博",
    "大学", "团队", "组", "部", "工作室",
)
_QUOTE_MAX_CHARS = 120
_VALUE_MAX_CHARS: dict[Language, int] = {"zh": 24, "en": 60}
_EVIDENCE_MAX = 3


class RulesExtractor:
    """The rules extractor over a given lexicon (``extract`` uses the built-in one)."""

    def __init__(self, lexicon: Lexicon) -> None:
        self.lexicon = lexicon
        #: the extractor's name: ``rules-v2``, with the lexicon's digest when it is not built-in
        self.name = NAME if lexicon.sources[1:] == () else f"{NAME}+{lexicon.digest}"
        zh_verbs = _alternation(lexicon.habit_verbs("zh"))
        en_verbs = _alternation(lexicon.habit_verbs("en"))
        gerunds = _alternation(lexicon.gerunds())
        langs = _alternation(dict.fromkeys(lexicon.values_of("reply_language"), ""))
        self._zh_habit = re.compile(
            rf"{_ZH_SELF}(?P<adv>{_ZH_ADV}*){_ZH_SINCE}{_ZH_NEG}?{_ZH_ADV}*(?P<v>{zh_verbs})"
            rf"(?P<x>{_V}{{1,20}})"
        )
        self._en_habit = re.compile(
            rf"{_EN_I}\s+{_EN_ADV}(?:{_EN_NEG}{_EN_ADV})?(?P<v>{en_verbs})\s+(?P<x>{_E}+)", re.I
        )
        self._en_habit_change = re.compile(
            rf"{_EN_I}(?:'ve|\s+have)?\s+(?:just\s+|recently\s+|finally\s+)?(?P<chg>stopped|quit"
            rf"|started|begun|began|gave up|given up)\s+(?P<v>{gerunds})\s+(?P<x>{_E}+)",
            re.I,
        )
        self._zh_reply = re.compile(
            rf"(?P<neg>不要|别|不用)?(?:用|使用|说)(?P<x>{langs})(?:来)?(?:回答|回复|答复|交流|沟通|和我说话"
            r"|跟我说话|跟我说|和我聊|跟我聊|聊天|写|对话)"
        )
        self._en_reply = re.compile(
            r"(?P<neg>\b(?:don't|do not|never|stop)\s+)?\b(?:reply|replying|respond|responding"
            r"|answer|answering|talk|talking|write|writing|speak|speaking|communicate|chat)\s+"
            rf"(?:to me\s+|with me\s+)?in\s+(?P<x>{langs})\b",
            re.I,
        )
        animals = _alternation(lexicon.animals)
        self._zh_pet = re.compile(
            rf"(?<![他她它你])我(?:家)?{_ZH_ADV}*(?:有|养了|养着|养)(?:[一两二三四五六七八九十几]+"
            rf"(?:只|条|个|头|匹))?(?P<x>{animals})(?!粮|砂|窝|毛|屋|笼|食|绳|玩具|盆|厕所|零食|罐头|用品)"
            rf"(?:[，,]?\s*(?:它|他|她)?(?:叫|名叫|名字叫|取名叫)"
            r"(?P<n>[\u4e00-\u9fffA-Za-z]{1,6}))?"
        )
        self._en_pet = re.compile(
            rf"{_EN_I}\s+(?:also\s+)?(?:have|own|got|adopted)\s+(?:a|an|one|two|three|four|\d+)\s+"
            rf"(?:little\s+|new\s+|pet\s+)?(?P<x>{animals})(?:e?s)?\b(?:\s*,?\s*(?:named|called)\s+"
            r"(?P<n>[A-Z][a-z]+))?(?=\s*(?:[,.;!?]|$)|\s+(?:and|who|that|which|at|in|from|since|for"
            r"|too|as well)\b)",
            re.I,
        )
        # Each rule with the words it cannot match without (a substring test is much cheaper
        # than a regex scan); None: always run.
        zh_habit_gate = tuple(lexicon.habit_verbs("zh"))
        en_habit_gate = (*lexicon.habit_verbs("en"), *lexicon.gerunds())
        self._rules: dict[Language, tuple[tuple[_Rule, tuple[str, ...] | None], ...]] = {
            "zh": (
                (self._zh_correction, ("不是",)),
                (self._zh_name, ("叫", "名字", "姓名")),
                (self._zh_attribute, ("我的", "最喜欢的", "最爱的")),
                (self._zh_move, ("搬", "调", "派", "转", "回", "来", "去", "入职", "加入", "跳槽")),
                (self._zh_change, ("换", "改", "切", "转用", "调成", "设", "用回")),
                (self._zh_work, _ZH_WORK_GATE),
                (self._zh_live, ("住", "家在", "定居", "生活在", "常驻", "现居", "在")),
                (self._zh_personal, ("过敏", "有", "养", "我是")),
                (self._zh_identity, ("是", "来自", "出生", "生在", "长在", "老家", "家乡", "当",
                                     "做", "干")),
                (self._zh_age, ("岁",)),
                (self._zh_reply_language, ("回答", "回复", "答复", "交流", "沟通", "说", "聊", "写",
                                           "对话")),
                (self._zh_preference, ("喜欢", "爱", "偏", "钟", "倾向", "讨厌", "厌恶", "反感",
                                       "受不了", "烦", "习惯")),
                (self._zh_dont, ("不要", "别", "不用", "不必", "不需要", "不想要")),
                (self._zh_skill, ("会", "懂", "精通", "擅长", "熟悉", "掌握")),
                (self._zh_habit_rule, zh_habit_gate),
                (self._zh_using, ("在用", "在使用")),
                (self._plan, tuple(_ZH_PLAN_WORDS)),
            ),
            "en": (
                (self._en_correction, ("not ",)),
                (self._en_name, ("name", "call", "go by", "hi", "hello", "hey")),
                (self._en_attribute, ("my ",)),
                (self._en_move, ("mov", "reloc", "joined", "started", "got a job", "accepted")),
                (self._en_change, ("switch", "chang", "migrat", "back to", "over to", "start",
                                   "began", "begun", "begin", "set ", "setting", "turned")),
                (self._en_work, ("work", "intern", "employ", "i'm a", "i am a", "team",
                                 "department", "group", "squad")),
                (self._en_live, ("live", "living", "resid", "based", "settled", "i'm in",
                                 "i am in")),
                (self._en_identity, ("from", "born", "grew up", "raised", "i'm", "i am")),
                (self._en_personal, ("allerg", "have", "own", "got", "adopted")),
                (self._en_age, ("old", "yo", "y/o", "yrs", "turned", "i'm", "i am")),
                (self._en_reply_language, (" in ",)),
                (self._en_preference, ("like", "love", "enjoy", "adore", "prefer", "hate",
                                       "dislike", "detest", "loathe", "stand", "bear", "into",
                                       "fan")),
                (self._en_dont, ("don't", "do not", "never", "from now on", "in the future",
                                 "going forward")),
                (self._en_skill, ("can", "good", "great", "skilled", "proficient", "fluent",
                                  "experienced", "expert", "decent", "know how")),
                (self._en_habit_rule, (*en_habit_gate, "using")),
                (self._plan, _EN_PLAN_WORDS),
            ),
        }

        self._gates = {lang: _gate_index(rules) for lang, rules in self._rules.items()}

    # --- the window loop ---------------------------------------------------------------------

    def extract(self, window: WindowText) -> list[ClaimDraft]:
        """Claims proposed for one window, in reading order (same window, same drafts)."""
        drafts: list[ClaimDraft] = []
        index: dict[tuple[str, str, str, int, tuple[str, ...]], int] = {}
        seen_values: dict[str, str] = {}  # a value said earlier in the window -> its slot
        for piece in window.pieces:
            if piece.role is not Role.USER:
                continue
            for draft in self._piece(piece, seen_values):
                key = (draft.subject, draft.predicate, draft.value, draft.polarity,
                       draft.qualifiers)
                at = index.get(key)
                if at is None:
                    index[key] = len(drafts)
                    drafts.append(draft)
                    continue
                # The same claim again in this window: one draft, one more piece of evidence.
                old = drafts[at]
                span = draft.evidence[0]
                places = {(e.event_id, e.start_char) for e in old.evidence}
                if (span.event_id, span.start_char) not in places:
                    if len(old.evidence) < _EVIDENCE_MAX:
                        evidence = (*old.evidence, span)
                        drafts[at] = old.model_copy(update={"evidence": evidence})
        return drafts

    def _piece(self, piece: WindowPiece, seen_values: dict[str, str]) -> list[ClaimDraft]:
        text = piece.text
        anchor = piece.occurred_at
        if anchor.tzinfo is None:
            anchor = anchor.replace(tzinfo=UTC)
        out: list[ClaimDraft] = []
        noted: list[tuple[int, int]] = []
        for pattern, word in _NOTE_PATTERNS:
            if word not in text and word not in text.lower():
                continue
            for m in pattern.finditer(text):
                draft = _note(piece, m)
                if draft is not None:
                    out.append(draft)
                    noted.append((m.start(), m.end()))
        for start, end in _sentences(text):
            if any(s < end and start < e for s, e in noted):
                continue  # a memory request is taken as said, not read again
            sent = _Sentence(text[start:end], start, anchor, seen_values)
            if _skipped(sent):
                continue
            slots: set[str] = set()
            gates, by_word = self._gates[sent.lang]
            enabled = {i for word in _gate_words(gates, sent.low) for i in by_word[word]}
            for i, (rule, gate) in enumerate(self._rules[sent.lang]):
                if gate is not None and i not in enabled:
                    continue
                for hit in rule(sent):
                    if hit.predicate in slots:
                        continue
                    draft = self._draft(piece, sent, hit)
                    if draft is not None:
                        slots.add(hit.predicate)
                        sent.hits += 1
                        seen_values[normalize(draft.value)] = draft.predicate
                        out.append(draft)
        return out

    def _draft(self, piece: WindowPiece, sent: _Sentence, hit: _Hit) -> ClaimDraft | None:
        lex = self.lexicon
        value = hit.value.strip()
        if not value or lex.is_stop_value(value, hit.predicate):
            return None
        longest = _VALUE_MAX_CHARS[sent.lang] * (2 if hit.predicate == "plan" else 1)
        if len(value) > longest:
            return None  # a long "value" is a clause, not a crisp fact
        text = lex.text_for(hit.predicate, value, language=sent.lang, polarity=hit.polarity)
        lo, hi = 0, len(sent.text)
        if hi > _QUOTE_MAX_CHARS:
            lo, hi = sent.clause(hit.at)
        raw = sent.text[lo:hi]
        quote = raw.strip()
        if not quote:
            return None
        start = piece.start_char + sent.start + lo + (len(raw) - len(raw.lstrip()))
        confidence = min(0.95, hit.confidence + (0.05 if sent.cue else 0.0))
        return ClaimDraft(
            subject="user",
            predicate=hit.predicate,
            value=value,
            text=text,
            language=language_of(text),
            polarity=1 if hit.polarity > 0 else -1,
            qualifiers=hit.qualifiers,
            scope=hit.scope,
            importance=lex.importance(hit.predicate),
            confidence=confidence,
            valid_from=hit.valid_from,
            valid_to=hit.valid_to,
            evidence=(
                EvidenceSpan(
                    event_id=piece.event_id,
                    quote=quote,
                    start_char=start,
                    end_char=start + len(quote),
                ),
            ),
        )

    # --- helpers shared by the rules ---------------------------------------------------------

    def _value(self, value: str, predicate: str) -> str:
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

    def _subject_ok(self, sent: _Sentence, lo: int, at: int) -> bool:
        """Whether the clause's subject before ``at`` is the speaker (or is left out)."""
        pattern = _ZH_SUBJECT if sent.lang == "zh" else _EN_SUBJECT
        subjects = pattern.findall(sent.norm, lo, at)
        return not subjects or subjects[-1].lower() in _SELF_WORDS

    def _self_said(self, sent: _Sentence, m: re.Match[str], *, at_start: bool = False) -> bool:
        """A Chinese match with 我, or a clause after one that has it (the subject dropped)."""
        if m.group(0).lstrip().startswith("我"):
            return True
        if "我" in sent.text[: m.start()]:
            return self._subject_ok(sent, 0, m.start())
        return at_start and m.start() == 0

    def _temporal(self, sent: _Sentence, at: int) -> tuple[tuple[str, ...], ClaimScope]:
        lo, hi = sent.clause(at)
        if sent.lang == "zh":
            found = _ZH_TEMP.search(sent.text, lo, hi)
            return (("暂时",), "short_term") if found else ((), "long_term")
        found = _EN_TEMP.search(sent.norm, lo, hi)
        return (("temporarily",), "short_term") if found else ((), "long_term")

    def _prefer(self, sent: _Sentence, lo: int, hi: int) -> Prefer:
        pattern = _ZH_FUTURE if sent.lang == "zh" else _EN_FUTURE
        return "future" if pattern.search(sent.norm, lo, hi) else "past"

    def _when(self, sent: _Sentence, at: int, *, since_only: bool = False) -> TimeRef | None:
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
        if since_only and not _marks_start(sent, ref):
            return None
        sent.used.add(ref.span)
        return ref

    def _cut_time(self, sent: _Sentence, start: int, value: str) -> str:
        """``value`` (found at ``start``) cut before a time expression inside it."""
        for ref in sent.times(None):
            if start <= ref.span[0] < start + len(value):
                return value[: ref.span[0] - start]
        return value

    def _location(self, sent: _Sentence, m: re.Match[str], raw: str, group: str) -> str | None:
        return self.lexicon.place(self._clean_place(sent, m.start(group), raw))

    def _clean_place(self, sent: _Sentence, start: int, raw: str) -> str:
        value = self._cut_time(sent, start, raw)
        if sent.lang == "en":
            return _clean_en(value)
        if value.startswith("的"):  # 我住的那个小区叫龙湖小区 / 我住的龙湖小区
            named = _ZH_NAMED.search(value)
            value = value[named.end() :] if named else value[1:]
        cut = _ZH_PLACE_CUT.search(value)
        return _clean_zh(value[: cut.start()] if cut and cut.start() > 0 else value)

    def _correction_slot(self, sent: _Sentence, pre: str, old: str, new: str) -> str | None:
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

    def _org_hits(self, sent: _Sentence, at: int, org: str, *, school: bool = False) -> list[_Hit]:
        """Hits for an organisation or place named as where the user works or studies."""
        lex = self.lexicon
        org = _clean(org, sent.lang)
        if not org or lex.is_stop_value(org):
            return []
        if sent.lang == "zh" and "的" in org:  # 杭州的一家公司 / 阿里的支付团队
            head, _, tail = org.rpartition("的")
            return self._org_hits(sent, at, head) + self._org_hits(sent, at, tail, school=school)
        place = lex.place(org)
        if place is not None:
            return [_Hit("location", place, at, confidence=0.85)]
        team = (_ZH_TEAM if sent.lang == "zh" else _EN_TEAM).search(org)
        if team:
            return [_Hit("team", org, at, confidence=0.8)] if len(org) > len(team[0]) + 1 else []
        if org in _ZH_VAGUE_ORG or len(org) > (15 if sent.lang == "zh" else 40):
            return []
        if sent.lang == "en" and _EN_VAGUE_ORG.match(org):
            return []
        if sent.lang == "zh" and _ZH_NOT_ORG.search(org):
            return []
        return [_Hit("school" if school else "employer", org, at, confidence=0.85)]

    # --- Chinese rules ------------------------------------------------------------------------

    def _zh_correction(self, sent: _Sentence) -> list[_Hit]:
        out = []
        for m in _ZH_CORRECTION.finditer(sent.text):
            lo, _ = sent.clause(m.start())
            if not self._subject_ok(sent, lo, m.start()):
                continue
            old = _ZH_CORRECTION_LEAD.sub("", _clean_zh(m["old"]))
            new = _ZH_CORRECTION_LEAD.sub("", _clean_zh(m["new"]))
            predicate = self._correction_slot(sent, sent.text[: m.start()], old, new)
            if predicate and new and new != old:
                out.append(_Hit(predicate, self._value(new, predicate), m.start(), confidence=0.85))
        return out

    def _zh_name(self, sent: _Sentence) -> list[_Hit]:
        m = _ZH_NAME.search(sent.text)
        if m is None:
            return []
        name = m["x"].strip()
        if _CJK.search(name):
            if not 1 <= len(name) <= 4 or _ZH_NOT_NAME.search(name):
                return []
        elif len(name.split()) > 3:
            return []
        return [_Hit("name", name, m.start(), confidence=0.9)]

    def _zh_attribute(self, sent: _Sentence) -> list[_Hit]:
        out = []
        for m in _ZH_FAVORITE.finditer(sent.text):
            predicate = self.lexicon.favorite_predicate(m["a"]) or "likes"
            value = _clean_zh(m["x"])
            out.append(_Hit(predicate, value, m.start(), -1 if m["neg"] else 1, confidence=0.85))
        for m in _ZH_ATTRIBUTE.finditer(sent.text):
            attribute = self.lexicon.attribute_predicate(m["a"])
            if attribute is None:
                continue
            value = _ZH_TRAIL.sub("", m["x"].strip())
            attribute, value = self._attribute_value(attribute, value)
            out.append(_Hit(attribute, value, m.start(), -1 if m["neg"] else 1, confidence=0.85))
        return out

    def _attribute_value(self, attribute: str, value: str) -> tuple[str, str]:
        """Check a "my X is Y" value against what X must hold: a phone number has digits
        ("我的手机是iPhone" names the phone the user uses), an email an @, a city a place."""
        if _DESCRIPTION.match(value):
            return attribute, ""  # "my team is like a family", "我的工作很稳定": a description
        if attribute == "phone" and not _PHONE.search(value):
            return "uses", value
        if attribute == "email" and "@" not in value:
            return attribute, ""
        lang: Language = "zh" if _CJK.search(value) else "en"
        if attribute == "occupation" and not self.lexicon.is_occupation(_clean(value, lang)):
            return attribute, ""
        if attribute == "location":
            return attribute, self.lexicon.place(_clean(value, lang)) or ""
        return attribute, self._value(value, attribute)

    def _zh_move(self, sent: _Sentence) -> list[_Hit]:
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
                    hits = [_Hit("location", place, m.start(), confidence=0.85)]
                elif kind == "join":
                    value = self._cut_time(sent, m.start("x"), m["x"])
                    hits = self._org_hits(sent, m.start(), value)
                else:
                    continue
                out.extend(self._changed(sent, m.start(), hits))
        return out

    def _changed(self, sent: _Sentence, at: int, hits: list[_Hit]) -> list[_Hit]:
        """Hits of a change: its time as valid_from, 暂时/temporarily as a qualifier."""
        ref = self._when(sent, at)
        qualifiers, scope = self._temporal(sent, at)
        for hit in hits:
            hit.qualifiers, hit.scope = qualifiers, scope
            if ref is not None:
                hit.valid_from = ref.start
        return hits

    def _zh_change(self, sent: _Sentence) -> list[_Hit]:
        out = []
        for m in _ZH_CHANGE.finditer(sent.text):
            lo, _ = sent.clause(m.start())
            if not self._subject_ok(sent, lo, m.start()):
                continue
            value = _clean_zh(self._cut_time(sent, m.start("x"), m["x"]))
            predicate = self._change_slot(m["obj"] or m["src"], value)
            if predicate is None:
                continue
            hit = _Hit(predicate, self._value(value, predicate), m.start(), confidence=0.8)
            out.extend(self._changed(sent, m.start(), [hit]))
        return out

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

    def _zh_work(self, sent: _Sentence) -> list[_Hit]:
        out = []
        for m in _ZH_WORK.finditer(sent.text):
            if self._self_said(sent, m, at_start=True):
                school = m["v"] in _ZH_SCHOOL_VERBS
                hits = self._org_hits(sent, m.start(), m["x"], school=school)
                out.extend(self._since(sent, m.start(), hits))
        for m in _ZH_TEAM_RULE.finditer(sent.text):
            if self._self_said(sent, m, at_start=True):
                out.append(_Hit("team", _clean_zh(m["x"]), m.start(), confidence=0.8))
        return out

    def _since(self, sent: _Sentence, at: int, hits: list[_Hit]) -> list[_Hit]:
        ref = self._when(sent, at, since_only=True)
        if ref is not None:
            for hit in hits:
                hit.valid_from = ref.start
        return hits

    def _zh_live(self, sent: _Sentence) -> list[_Hit]:
        out = []
        for m in _ZH_LIVE.finditer(sent.text):
            if not self._self_said(sent, m, at_start=True):
                continue
            place = self._location(sent, m, m["x"], "x")
            if place is not None:
                out.extend(self._since(sent, m.start(), [_Hit("location", place, m.start())]))
                continue
            home = self.lexicon.home(self._clean_place(sent, m.start("x"), m["x"]))
            if home is not None:
                out.append(_Hit("home", home, m.start()))
        for m in _ZH_AT_PLACE.finditer(sent.text):  # 我(现在)在北京: where the user is
            if self._self_said(sent, m, at_start=True):
                place = self.lexicon.place(_clean_zh(m["x"]))
                if place is not None:
                    out.append(_Hit("location", place, m.start(), confidence=0.7))
        return out

    def _zh_identity(self, sent: _Sentence) -> list[_Hit]:
        lex = self.lexicon
        out = []
        for m in _ZH_FROM.finditer(sent.text):
            place = self._location(sent, m, m["x"], "x")
            if place is not None:
                out.append(_Hit("hometown", place, m.start(), confidence=0.85))
        for m in _ZH_I_AM.finditer(sent.text):
            if not self._self_said(sent, m):
                continue
            value = _clean_zh(m["x"])
            polarity = -1 if m["neg"] else 1
            if value.endswith("人") and lex.place(value[:-1]):
                out.append(_Hit("hometown", lex.place(value[:-1]) or "", m.start(), polarity))
                continue
            slot = lex.slot_of_value(value)
            if slot is not None:  # 我是素食主义者 -> diet
                out.append(_Hit(slot, lex.canonical_value(value, slot), m.start(), polarity))
                continue
            value = _ZH_DOING.sub("", value)
            head, _, title = value.rpartition("的")
            if lex.is_occupation(title):
                out.append(_Hit("occupation", title, m.start(), polarity, confidence=0.85))
                if head and polarity > 0:
                    out.extend(self._org_hits(sent, m.start(), head))
        for m in _ZH_JOB.finditer(sent.text):
            value = _clean_zh(_ZH_DURATION.sub("", m["x"]))
            if lex.is_occupation(value):
                out.append(_Hit("occupation", value, m.start(), confidence=0.8))
        return out

    def _zh_personal(self, sent: _Sentence) -> list[_Hit]:
        """Allergies (我对花生过敏) and pets, with their names (我养了一只猫叫咪咪)."""
        out = []
        for m in _ZH_ALLERGY.finditer(sent.text):
            value = _clean_zh(m["x"] or m["y"])
            if value and not _ZH_PERSON.search(value):
                out.append(_Hit("allergy", value, m.start(), -1 if m["neg"] else 1, confidence=0.9))
        for m in self._zh_pet.finditer(sent.text):
            value = f"{m['x']}（{m['n']}）" if m["n"] else m["x"]
            out.append(_Hit("pets", value, m.start(), confidence=0.85))
        return out

    def _zh_using(self, sent: _Sentence) -> list[_Hit]:
        out = []
        for m in _ZH_USING.finditer(sent.text):
            value = _clean_zh(_ZH_USE_CUT.split(m["x"], maxsplit=1)[0])
            if value and not _ZH_BAD_LEAD.match(value) and not _ZH_PERSON.search(value):
                predicate, value = self._slot("uses", value, "zh")
                hit = _Hit(predicate, value, m.start(), confidence=0.75)
                out.extend(self._changed(sent, m.start(), [hit]) if _ZH_TEMP.search(sent.text)
                           else [hit])
        return out

    def _zh_age(self, sent: _Sentence) -> list[_Hit]:
        m = _ZH_AGE.search(sent.text)
        age = cn_number(m["n"]) if m else None
        if m is None or age is None or not 0 < age < 120:
            return []
        return [_Hit("age", str(age), m.start(), confidence=0.85)]

    def _zh_reply_language(self, sent: _Sentence) -> list[_Hit]:
        m = self._zh_reply.search(sent.text)
        if m is None:
            return []
        value = self._value(m["x"], "reply_language")
        return [_Hit("reply_language", value, m.start(), -1 if m["neg"] else 1)]

    def _zh_preference(self, sent: _Sentence) -> list[_Hit]:
        out = []
        for m in _ZH_PREFERENCE.finditer(sent.text):
            if not self._self_said(sent, m) or m["x"].startswith("的"):
                continue
            verb, adverbs = m["v"], (m["adv"] or "") + (m["adv2"] or "")
            negative = verb in _ZH_DISLIKE
            if negative and m["neg"]:
                continue  # "不讨厌": neither a like nor a dislike
            polarity = -1 if negative or m["neg"] else 1
            value = _clean_zh(m["x"])
            if verb.startswith("习惯"):
                predicate, value = self._habit_of(value)
            elif verb in _ZH_PREFER or "更" in adverbs:
                predicate = "prefers"
            else:
                predicate = "likes"
            if value and not _ZH_BAD_LEAD.match(value) and not _ZH_PERSON.search(value):
                predicate, value = self._slot(predicate, value, "zh")
                hit = _Hit(predicate, value, m.start(), polarity)
                out.extend(self._since(sent, m.start(), [hit]))
        return out

    def _habit_of(self, value: str) -> tuple[str, str]:
        """"习惯用Vim" → (uses, Vim); otherwise (habit, the value)."""
        for verb, predicate in self.lexicon.habit_verbs("zh").items():
            if value.startswith(verb) and len(value) > len(verb):
                return predicate, value[len(verb) :]
        return "habit", value

    def _zh_dont(self, sent: _Sentence) -> list[_Hit]:
        if sent.hits:
            return []
        for pattern in (_ZH_DONT_STANDING, _ZH_DONT_AGAIN, _ZH_DONT_SELF):
            m = pattern.search(sent.text)
            if m is not None and (pattern is not _ZH_DONT_SELF or self._self_said(sent, m)):
                value = _clean_zh(m["x"])
                if value and not _ZH_BAD_LEAD.match(value):
                    predicate, value = self._slot("prefers", value, "zh")
                    return [_Hit(predicate, value, m.start(), -1, confidence=0.75)]
        return []

    def _zh_skill(self, sent: _Sentence) -> list[_Hit]:
        m = _ZH_SKILL.search(sent.text)
        if m is None:
            return []
        value = _clean_zh(m["x"])
        if m["v"] == "会" and not _ZH_SKILL_VERB.match(value):
            return []
        polarity = -1 if m["neg"] else 1
        spoken = _ZH_SPEAK.match(value)
        if spoken and len(value) > spoken.end():
            return [_Hit("speaks", value[spoken.end() :], m.start(), polarity, confidence=0.8)]
        return [_Hit("skill", value, m.start(), polarity, confidence=0.75)] if value else []

    def _zh_habit_rule(self, sent: _Sentence) -> list[_Hit]:
        out = []
        verbs = self.lexicon.habit_verbs("zh")
        for m in self._zh_habit.finditer(sent.text):
            if not self._self_said(sent, m):
                continue
            predicate, raw = verbs[m["v"]], m["x"]
            if raw.startswith("的"):
                which = _ZH_WHICH_IS.match(raw)
                raw = raw[which.end() :] if which else raw[1:]
            if raw.startswith("了"):
                if predicate != "pets":
                    continue  # 我吃了一个苹果: something that happened, not a habit
                raw = raw[1:]
            if _ZH_BAD_LEAD.match(raw):
                continue
            clause_end = _ZH_CUT.search(raw)
            head = raw[: clause_end.start()] if clause_end else raw
            if not m["neg"] and head.rstrip().endswith("了") and predicate != "pets":
                if not _ZH_HABITUAL.search(m["adv"] or ""):
                    continue  # 我吃饭了: done, not a habit
            cut = _ZH_USE_CUT.search(raw)  # 用VS Code写代码, 骑车上班: the object only
            raw = raw[: cut.start()] if cut else raw
            value = _clean_zh(raw)
            if value and not _ZH_PERSON.search(value):
                predicate, value = self._slot(predicate, value, "zh")
                polarity = -1 if m["neg"] else 1
                hit = _Hit(predicate, value, m.start(), polarity, confidence=0.75)
                hit.qualifiers, hit.scope = self._temporal(sent, m.start())
                out.extend(self._since(sent, m.start(), [hit]))
        return out

    # --- English rules ------------------------------------------------------------------------

    def _en_correction(self, sent: _Sentence) -> list[_Hit]:
        out = []
        for pattern in (_EN_NOT_BUT, _EN_NEW_NOT_OLD):
            for m in pattern.finditer(sent.norm):
                old, new = _clean_en(m["old"]), _clean_en(m["new"])
                if len(new.split()) > 4 or len(old.split()) > 4:
                    continue
                predicate = self._correction_slot(sent, sent.norm[: m.start()], old, new)
                if predicate and new and new.lower() != old.lower():
                    value = self._value(new, predicate)
                    out.append(_Hit(predicate, value, m.start(), confidence=0.85))
        return out

    def _en_name(self, sent: _Sentence) -> list[_Hit]:
        m = _EN_NAME.search(sent.norm)
        if m is None:
            return []
        name = next(g for g in m.groups() if g)
        if name.lower() in _EN_NOT_NAME:
            return []
        return [_Hit("name", name, m.start(), confidence=0.9)]

    def _en_attribute(self, sent: _Sentence) -> list[_Hit]:
        out = []
        for m in _EN_FAVORITE.finditer(sent.norm):
            predicate = self.lexicon.favorite_predicate(m["a"]) or "likes"
            out.append(_Hit(predicate, _clean_en(m["x"]), m.start(), -1 if m["neg"] else 1,
                            confidence=0.85))
        for m in _EN_ATTRIBUTE.finditer(sent.norm):
            attribute = self.lexicon.attribute_predicate(m["a"])
            if attribute is None or m["a"].lower().startswith("favo"):
                continue
            if m["is"] == "'s" and not _NAMED_VALUE.match(m["x"]):
                continue  # "my team's needs": a possessive, not "my team is"
            value = _EN_TRAIL.sub("", m["x"].strip()).strip(" .!,")
            attribute, value = self._attribute_value(attribute, value)
            out.append(_Hit(attribute, value, m.start(), -1 if m["neg"] else 1, confidence=0.85))
        return out

    def _en_move(self, sent: _Sentence) -> list[_Hit]:
        out = []
        for m in _EN_MOVE.finditer(sent.norm):
            lo, _ = sent.clause(m.start())
            if not self._subject_ok(sent, lo, m.start()):
                continue
            value = _clean_en(self._cut_time(sent, m.start("x"), m["x"]))
            place = self.lexicon.place(value)
            if place is not None:
                hits = [_Hit("location", place, m.start(), confidence=0.85)]
            elif _EN_TEAM.search(value):
                hits = [_Hit("team", value, m.start(), confidence=0.8)]
            else:
                continue
            out.extend(self._changed(sent, m.start(), hits))
        for m in _EN_JOIN.finditer(sent.norm):
            value = _clean_en(self._cut_time(sent, m.start("x"), m["x"]))
            if m["v"].lower() == "joined" and not (_PROPER.match(value) or value.endswith(" team")):
                continue  # "joined a gym", "joined a writers group": not where one works
            out.extend(self._changed(sent, m.start(), self._org_hits(sent, m.start(), value)))
        return out

    def _en_change(self, sent: _Sentence) -> list[_Hit]:
        out = []
        for pattern in (_EN_SET, _EN_CHANGE, _EN_START_USING):
            for m in pattern.finditer(sent.norm):
                lo, _ = sent.clause(m.start())
                if not self._subject_ok(sent, lo, m.start()):
                    continue
                value = _EN_USE_CUT.sub("", self._cut_time(sent, m.start("x"), m["x"]))
                value = _clean_en(value)
                owner = m["attr"] if pattern is _EN_SET else None
                predicate = self._change_slot(owner, value)
                if predicate is None:
                    continue
                hit = _Hit(predicate, self._value(value, predicate), m.start(), confidence=0.8)
                out.extend(self._changed(sent, m.start(), [hit]))
        return out

    def _en_work(self, sent: _Sentence) -> list[_Hit]:
        lex = self.lexicon
        out = []
        for m in _EN_WORK.finditer(sent.norm):
            raw, _, title = self._cut_time(sent, m.start("x"), m["x"]).partition(" as ")
            title = _clean_en(title)
            if title and lex.is_occupation(title):  # "I work for Microsoft as a data scientist"
                out.append(_Hit("occupation", title.lower(), m.start(), confidence=0.85))
            value = _clean_en(raw)
            if m["p"].lower() == "in" and lex.place(value) is None:
                words = value.lower().split()
                if words and (lex.is_industry(value) or lex.is_industry(words[-1])):
                    out.append(_Hit("industry", value.lower(), m.start(), confidence=0.75))
                    continue
                if not _PROPER.match(value):
                    continue  # "I work in the city of Irvine": neither an industry nor a name
            out.extend(self._since(sent, m.start(), self._org_hits(sent, m.start(), value)))
        for pattern in (_EN_JOB, _EN_WORK_AS):
            for m in pattern.finditer(sent.norm):
                title = _clean_en(m["x"])
                if not lex.is_occupation(title):
                    continue
                polarity = -1 if m.groupdict().get("neg") else 1
                out.append(_Hit("occupation", title.lower(), m.start(), polarity, confidence=0.85))
                if m["org"] and polarity > 0:
                    out.extend(self._org_hits(sent, m.start(), m["org"]))
        for m in _EN_TEAM_RULE.finditer(sent.norm):
            out.append(_Hit("team", _clean_en(m["x"]), m.start(), confidence=0.8))
        return out

    def _en_live(self, sent: _Sentence) -> list[_Hit]:
        out = []
        for m in _EN_IN_PLACE.finditer(sent.norm):  # "I'm in LA": where the user is
            place = self.lexicon.place(_clean_en(m["x"]))
            if place is not None:
                out.append(_Hit("location", place, m.start(), confidence=0.7))
        for m in _EN_LIVE.finditer(sent.norm):
            value = _clean_en(self._cut_time(sent, m.start("x"), m["x"]))
            place = self.lexicon.place(value) or (value if _PROPER.match(value) else None)
            if place is not None:
                out.extend(self._since(sent, m.start(), [_Hit("location", place, m.start())]))
        return out

    def _en_identity(self, sent: _Sentence) -> list[_Hit]:
        out = []
        for m in _EN_I_AM.finditer(sent.norm):  # "I'm vegetarian": a value the lexicon knows
            slot = self.lexicon.slot_of_value(m["x"])
            if slot is not None:
                value = self.lexicon.canonical_value(m["x"], slot)
                out.append(_Hit(slot, value, m.start(), -1 if m["neg"] else 1, confidence=0.85))
        for m in _EN_FROM.finditer(sent.norm):
            value = _clean_en(m["x"] or m["x2"])
            place = self.lexicon.place(value) or (value if _PROPER.match(value) else None)
            if place is not None:
                out.append(_Hit("hometown", place, m.start(), confidence=0.85))
        return out

    def _en_personal(self, sent: _Sentence) -> list[_Hit]:
        """Allergies ("I'm allergic to peanuts") and pets ("I have a dog named Max")."""
        out = []
        for m in _EN_ALLERGY.finditer(sent.norm):
            value = _clean_en(m["x"] or m["y"])
            if value and not _EN_BAD_LEAD.match(value):
                out.append(_Hit("allergy", value, m.start(), -1 if m["neg"] else 1, confidence=0.9))
        for m in self._en_pet.finditer(sent.norm):
            animal = m["x"].lower()
            value = f"{animal} ({m['n']})" if m["n"] else animal
            out.append(_Hit("pets", value, m.start(), confidence=0.85))
        return out

    def _en_age(self, sent: _Sentence) -> list[_Hit]:
        m = _EN_AGE.search(sent.norm)
        age = int(m["n"] or m["n2"]) if m else 0
        return [_Hit("age", str(age), m.start(), confidence=0.85)] if m and 0 < age < 120 else []

    def _en_reply_language(self, sent: _Sentence) -> list[_Hit]:
        m = self._en_reply.search(sent.norm)
        if m is None:
            return []
        value = self._value(m["x"], "reply_language")
        return [_Hit("reply_language", value, m.start(), -1 if m["neg"] else 1)]

    def _en_preference(self, sent: _Sentence) -> list[_Hit]:
        out = []
        for pattern in (_EN_PREFERENCE, _EN_FAN):
            for m in pattern.finditer(sent.norm):
                if _EN_RELATIVE.search(sent.norm, 0, m.start()):
                    continue
                verb = (m.groupdict().get("v") or "like").lower()
                negative = verb in _EN_DISLIKE
                if negative and m["neg"]:
                    continue
                value = _clean_en(self._cut_time(sent, m.start("x"), m["x"]))
                if not value or _EN_BAD_LEAD.match(value) or _EN_PRONOUN.search(value):
                    continue
                predicate = "prefers" if verb == "prefer" else "likes"
                predicate, value = self._slot(predicate, value, "en")
                polarity = -1 if negative or m["neg"] else 1
                out.append(_Hit(predicate, value, m.start(), polarity))
        return out

    def _en_dont(self, sent: _Sentence) -> list[_Hit]:
        if sent.hits:
            return []
        for pattern in (_EN_DONT_AGAIN, _EN_STANDING):
            m = pattern.search(sent.norm)
            if m is None:
                continue
            value = _clean_en(m["x"])
            if value and not _EN_BAD_LEAD.match(value):
                predicate, value = self._slot("prefers", value, "en")
                polarity = -1 if m["neg"] else 1
                return [_Hit(predicate, value, m.start(), polarity, confidence=0.75)]
        return []

    def _en_skill(self, sent: _Sentence) -> list[_Hit]:
        for pattern in (_EN_CAN, _EN_GOOD_AT, _EN_KNOW_HOW):
            m = pattern.search(sent.norm)
            if m is None:
                continue
            polarity = -1 if m["neg"] else 1
            verb = (m.groupdict().get("v") or "").lower()
            value = _clean_en(m["x"])
            if verb in ("speak", "fluent") and value:
                return [_Hit("speaks", value, m.start(), polarity, confidence=0.8)]
            if pattern is _EN_CAN:
                value = f"{verb} {value}".strip()
            if value and not _EN_BAD_LEAD.match(value):
                return [_Hit("skill", value, m.start(), polarity, confidence=0.75)]
        return []

    def _en_habit_rule(self, sent: _Sentence) -> list[_Hit]:
        out = []
        verbs, gerunds = self.lexicon.habit_verbs("en"), self.lexicon.gerunds()
        for pattern in (self._en_habit, self._en_habit_change, _EN_USING):
            for m in pattern.finditer(sent.norm):
                if _EN_RELATIVE.search(sent.norm, 0, m.start()):
                    continue
                if pattern is self._en_habit and any(
                    not _marks_start(sent, t) for t in sent.times(None)
                ):
                    continue  # "today I read an article": something that happened
                verb = " ".join(m["v"].lower().split())
                if pattern is self._en_habit:
                    predicate, polarity = verbs[verb], -1 if m["neg"] else 1
                elif pattern is _EN_USING:
                    predicate, polarity = "uses", 1
                else:
                    predicate = gerunds[verb]
                    polarity = 1 if m["chg"].lower().startswith(("start", "beg")) else -1
                value = self._cut_time(sent, m.start("x"), m["x"])
                if predicate == "uses":
                    value = _EN_USE_CUT.sub("", value)
                value = _clean_en(value)
                if not value or _EN_BAD_LEAD.match(value) or _EN_PRONOUN.search(value):
                    continue
                predicate, value = self._slot(predicate, value, "en")
                hits = [_Hit(predicate, value, m.start(), polarity, confidence=0.75)]
                hits[0].qualifiers, hits[0].scope = self._temporal(sent, m.start())
                if pattern is not self._en_habit_change:
                    out.extend(self._since(sent, m.start(), hits))
                else:  # "I stopped drinking coffee last month": the change's own time
                    out.extend(self._changed(sent, m.start(), hits))
        return out

    # --- plans (both languages) ---------------------------------------------------------------

    def _plan(self, sent: _Sentence) -> list[_Hit]:
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
                _Hit(
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

    def _zh_plan(self, sent: _Sentence, ref: TimeRef) -> tuple[str, bool] | None:
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
        action = _ZH_TRAIL.sub("", action).strip()
        if not action or action in _ZH_PLAN_STOP or _CJK.search(action) is None:
            return None
        return action, deadline

    def _en_plan(self, sent: _Sentence, ref: TimeRef) -> tuple[str, bool] | None:
        lo, hi = sent.clause(ref.span[0])
        before = sent.norm[lo : ref.span[0]]
        after = sent.norm[ref.span[1] : hi]
        deadline = bool(_EN_DEADLINE.match(ref.expression) or _EN_DUE_END.search(before))
        if _EN_RECURRING.search(sent.low, lo, hi):
            return None  # "every Monday": a routine, not a plan
        text = " ".join(f"{before} {after}".split()).strip(" ,.;:!")
        due = _EN_DUE.match(text)
        if due:
            return f"{_clean_en(due['x'])} due", True
        named = _EN_DEADLINE_IS.match(text)
        if named:
            return " ".join(filter(None, (_clean_en(named["x"] or ""), "deadline"))), True
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
        if _EN_CHAT.match(rest) or _EN_CHAT_ANY.search(rest) or (
            _is_today(sent, ref) and not modal
        ):
            return None  # "today I want to talk about ...", "I have good news today"
        action = _clean_en(rest)
        if not action or action.lower() in _EN_PLAN_STOP:
            return None
        return action, deadline


@lru_cache(maxsize=1)
def _default() -> RulesExtractor:
    return RulesExtractor(default_lexicon())


def extract(window: WindowText) -> list[ClaimDraft]:
    """Claims proposed for one window by the rules over the built-in lexicon."""
    return _default().extract(window)


# --- module helpers ----------------------------------------------------------------------------


def _alternation(words: Mapping[str, str] | Iterable[str]) -> str:
    """A regex alternation of ``words``, longest first (so "使用" wins over "用")."""
    escaped = sorted({re.escape(w) for w in words}, key=len, reverse=True)
    return "|".join(escaped) if escaped else "(?!)"


def _gate_index(
    rules: tuple[tuple[_Rule, tuple[str, ...] | None], ...],
) -> tuple[re.Pattern[str], dict[str, frozenset[int]]]:
    """One regex finding every gate word, and which rules each found word enables. A found
    word enables the rules of every gate word inside it: "started" also opens "start"."""
    words = {w for _, gate in rules for w in gate or ()}
    by_word = {
        word: frozenset(
            i for i, (_, gate) in enumerate(rules) if any(g in word for g in gate or ())
        )
        for word in words
    }
    return re.compile(trie_pattern(words)), by_word


def _gate_words(pattern: re.Pattern[str], text: str) -> set[str]:
    """Every gate word in ``text``, overlapping ones too ("i'm allergic": "i'm a", "allerg")."""
    found = set()
    m = pattern.search(text)
    while m is not None:
        found.add(m.group(0))
        m = pattern.search(text, m.start() + 1)
    return found


def _sentences(text: str) -> list[tuple[int, int]]:
    """The sentence spans of ``text`` (terminal punctuation included, blanks trimmed)."""
    out: list[tuple[int, int]] = []
    start = 0
    for m in _SENTENCE_END.finditer(text):
        _add_span(out, text, start, m.end())
        start = m.end()
    _add_span(out, text, start, len(text))
    return out


def _add_span(out: list[tuple[int, int]], text: str, start: int, end: int) -> None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if end > start:
        out.append((start, end))


def _skipped(sent: _Sentence) -> bool:
    """Questions, hypotheticals and reported speech say nothing about the speaker."""
    text, low = sent.norm, sent.low
    tail = text.rstrip()[-4:]
    if len(text.strip()) < 2:
        return True
    if sent.lang == "zh":
        return bool(
            _ZH_QUESTION_TAIL.search(tail)
            or _ZH_QUESTION.search(text)
            or _ZH_UNREAL.search(text)
            or (any(w in text for w in _ZH_REPORTED_GATE) and _ZH_REPORTED.search(text))
        )
    return bool(
        _EN_QUESTION_TAIL.search(tail)
        or _EN_QUESTION_START.match(low)
        or not _EN_UNREAL_WORDS.isdisjoint(_EN_WORD.findall(low))
        or any(p in low for p in _EN_UNREAL_PHRASES)
        or (any(w in low for w in _EN_REPORTED_GATE) and _EN_REPORTED.search(low))
    )


def _is_today(sent: _Sentence, ref: TimeRef) -> bool:
    """Whether ``ref`` is the speaker's whole day ("today", "tonight"), with no hour."""
    return ref.granularity == "day" and ref.start.date() == sent.anchor.date()


def _marks_start(sent: _Sentence, ref: TimeRef) -> bool:
    """Whether ``ref`` says when something began: 从5月开始 / 5月起 / since May."""
    before, after = sent.norm[: ref.span[0]], sent.norm[ref.span[1] :]
    if sent.lang == "zh":
        return bool(_ZH_SINCE_AFTER.match(after) or _ZH_SINCE_BEFORE.search(before))
    return bool(_EN_SINCE.match(ref.expression) or _EN_SINCE_BEFORE.search(before))


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


def _note(piece: WindowPiece, m: re.Match[str]) -> ClaimDraft | None:
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
