"""Questions that name a slot of the speaker: "我住在哪？", "what's my name?" → the predicates.

A question about the speaker's own fact often shares no word with the stored value ("我现在住在
哪？" and "用户在佛山"), so recall also asks for the claims of the slot the question names
(channel "slot", :class:`hlmem.recall.recaller.Recaller`). :func:`asked_slots` finds those
predicates two ways, both in Chinese and English, always with the speaker as subject (a
question in the first person; "my son's name" and "我的猫叫什么" name someone else's):

- **the lexicon's nouns**, read at runtime: each predicate's attribute nouns, label and noun
  synonyms, when the question owns or asks for them: "我的X" / "my X", "什么X" / "哪个X" /
  "what X" / "which X" ("我用什么编辑器？" → ``editor`` when the lexicon defines it). A longer
  noun wins over one inside it (饮食习惯 over 饮食); attribute nouns over labels.
- **question words** (:data:`_QUESTIONS`), for questions with no noun: "住在哪" / "where do I
  live" → ``location``; "在哪上班" / "where do I work" → ``work_location``, or ``employer`` and
  ``location`` when the lexicon has no ``work_location``; "叫什么" / "what's my name" →
  ``name``; "多大" / "how old" → ``age``; and a few more. Each names the predicates it prefers,
  in order; the first group the lexicon defines is the one asked.

Generic predicates (``likes``, ``uses``: their claims move to the slot their value names) and
``note`` are never asked for: they hold anything. Pure functions, no I/O.
"""

from __future__ import annotations

import re
from functools import lru_cache

from hlmem.lang import Lexicon, normalize

_FIRST_PERSON = re.compile(r"我|\b(?:i|my|me|mine|i'm|i've)\b", re.IGNORECASE)
#: predicates that hold anything (generic ones too): never asked for by a noun
_NEVER = frozenset({"likes", "prefers", "uses", "note", "habit"})
_KIN_ZH = (
    "儿子|女儿|孩子|小孩|老婆|老公|妻子|丈夫|爱人|对象|男朋友|女朋友|爸爸|妈妈|爸|妈|父亲|母亲|"
    "哥哥|姐姐|弟弟|妹妹|哥|姐|弟|妹|表哥|表姐|表弟|表妹|堂哥|堂姐|同事|老板|领导|上司|朋友|室友|"
    "邻居|猫|狗|宠物狗|宠物猫|爷爷|奶奶|外公|外婆|叔叔|阿姨|舅舅"
)
_KIN_EN = (
    "son|daughter|kids?|child|children|wife|husband|partner|girlfriend|boyfriend|mother|father|"
    "mom|mum|dad|parents?|brother|sister|cousin|boss|manager|colleague|coworker|friend|"
    "roommate|neighbou?r|cat|dog|grandma|grandpa|grandmother|grandfather|uncle|aunt"
)
#: someone else the speaker has ("我的猫叫什么", "我女儿", "my son's name", "my boss"): the
#: question is about them, not about a slot of the speaker
_SOMEONE_ELSE = re.compile(rf"我(?:的)?(?:{_KIN_ZH})|\bmy (?:{_KIN_EN})(?:'s)?\b", re.IGNORECASE)

#: (pattern, preferred predicate groups): the first group whose predicates the lexicon all
#: defines is asked. Patterns see the normalised question (lower case, half-width).
_QUESTIONS: tuple[tuple[re.Pattern[str], tuple[tuple[str, ...], ...]], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), groups)
    for pattern, groups in (
        (
            r"我(?:现在|目前|如今|之前|以前|原来|过去)?(?:是)?(?:在)?哪(?:儿|里)?(?:上班|工作)|"
            r"我(?:现在|目前|之前|以前)?(?:上班|工作)(?:的地方)?(?:在)?(?:哪|什么地方)|"
            r"\bwhere (?:do|did|does) i (?:currently |now )?work\b|\bwhere i work\b|"
            r"\bwhere (?:is|was) my (?:office|work)\b",
            (("work_location",), ("employer", "location")),
        ),
        (
            r"我(?:现在|目前|如今|之前|以前|原来|过去)?(?:是)?(?:住|居住|定居|生活)(?:在)?(?:哪|什么地方)|"
            r"我(?:现在|目前|之前|以前)?(?:的)?家在哪|我(?:现在|目前|之前|以前)?(?:在)?哪(?:儿|里)?住|"
            r"\bwhere (?:do|did|does) i (?:currently |now )?(?:live|stay|reside)\b|"
            r"\bwhere (?:am|was) i (?:currently |now )?(?:based|living|located|staying)\b|"
            r"\bwhere i (?:live|lived)\b|"
            r"\b(?:what|which) (?:city|town|country) (?:do|did|am|was) i (?:live|based|living)\b",
            (("location",),),
        ),
        (
            r"我(?:现在|目前|之前|以前)?(?:是)?在?哪(?:家|个)公司|我(?:现在|之前)?在什么公司|"
            r"我(?:现在|之前)?(?:给|为)谁(?:工作|打工|干活)|"
            r"\bwho (?:do|did) i (?:currently |now )?work for\b|"
            r"\b(?:what|which) company (?:do|did) i work\b",
            (("employer",),),
        ),
        (
            r"我(?:现在|目前|之前|以前)?(?:是)?(?:做|干)什么(?:工作|的|行)|我(?:的)?工作是什么|"
            r"\bwhat (?:do|did) i do for (?:a )?(?:living|work)\b|"
            r"\bwhat (?:is|was) my (?:job|profession|occupation)\b",
            (("occupation",),),
        ),
        (
            r"我(?:现在)?叫什么|我(?:的)?名字|我是谁|"
            r"\bwhat(?:'s| is| was) my (?:full )?name\b|\bwhat am i called\b|\bwho am i\b",
            (("name",),),
        ),
        (
            r"我(?:今年|现在)?(?:多大|几岁|多少岁)|我的?年(?:龄|纪)|\bhow old am i\b",
            (("age",),),
        ),
        (
            r"我(?:是)?(?:什么时候|哪天|哪年)(?:出生|生的|过生日)|我的?生日|"
            r"\bwhen (?:was i born|is my birthday)\b",
            (("birthday",),),
        ),
        (
            r"我(?:的)?(?:老家|家乡)|我(?:是)?(?:哪里|哪儿|什么地方)人|我来自哪|"
            r"\bwhere (?:am i|do i come|i'm|i am) from\b|\bwhere did i grow up\b",
            (("hometown",),),
        ),
    )
)

#: before a noun, these make the question ask for it ("什么编辑器", "哪个城市")
_ZH_ASKS = r"(?:什么|啥|哪个|哪家|哪种|哪款|哪所|哪位)(?:样的)?"
_EN_ASKS = r"\b(?:what|which)(?: kind of| type of| sort of)?"


def asked_slots(text: str, lexicon: Lexicon) -> tuple[str, ...]:
    """The predicates of the speaker's slots that ``text`` asks about, most specific first;
    empty when the question is not about the speaker or names no slot."""
    folded = normalize(text)
    if not _FIRST_PERSON.search(folded) or _SOMEONE_ELSE.search(folded):
        return ()
    found: list[str] = []
    for pattern, groups in _QUESTIONS:
        if pattern.search(folded):
            for group in groups:
                if all(_defines(lexicon, p) for p in group):
                    found.extend(group)
                    break
    nouns = _nouns(lexicon)
    for predicate in _noun_slots(folded, nouns):
        found.append(predicate)
    return tuple(dict.fromkeys(found))


def _defines(lexicon: Lexicon, predicate: str) -> bool:
    """Whether the lexicon defines ``predicate`` under that name (not as another's synonym:
    ``work_location`` folds into ``location`` in a lexicon without it)."""
    return lexicon.canonical_predicate(predicate) == predicate and bool(
        lexicon.predicate(predicate)
    )


def _noun_slots(folded: str, nouns: _Nouns) -> list[str]:
    """The predicates whose nouns the question owns or asks for, longest noun first; a noun
    inside a longer one found is skipped."""
    out: list[str] = []
    taken: list[tuple[int, int]] = []
    for noun, predicate in nouns:
        for match in _noun_pattern(noun).finditer(folded):
            start, end = match.span("noun")
            if any(s < end and start < e for s, e in taken):
                continue
            taken.append((start, end))
            out.append(predicate)
    return out


_Nouns = tuple[tuple[str, str], ...]


@lru_cache(maxsize=8)
def _nouns(lexicon: Lexicon) -> _Nouns:
    """(noun, predicate), longest first: attribute nouns, then labels and noun synonyms where
    no attribute noun already names another predicate."""
    taken: dict[str, str] = {}
    for p in lexicon.predicates():
        if p.generic or p.name in _NEVER:
            continue
        for lang in ("zh", "en"):
            for noun in p.attributes.get(lang, ()):
                taken.setdefault(normalize(noun), p.name)
    for p in lexicon.predicates():
        if p.generic or p.name in _NEVER:
            continue
        more = [*p.label.values(), *(s.replace("_", " ") for s in p.synonyms if "_" not in s)]
        for noun in more:
            taken.setdefault(normalize(noun), p.name)
    return tuple(sorted(taken.items(), key=lambda kv: (-len(kv[0]), kv[0])))


@lru_cache(maxsize=4096)
def _noun_pattern(noun: str) -> re.Pattern[str]:
    """Where the question owns ``noun`` ("我的X", "my X") or asks for it ("什么X", "what X")."""
    word = re.escape(noun)
    if re.search(r"[\u3400-\u9fff]", noun):
        return re.compile(
            rf"(?:我(?:现在|目前|如今|之前|以前|原来)?(?:的)?|{_ZH_ASKS})(?P<noun>{word})"
        )
    return re.compile(
        rf"(?:\bmy (?:current |new |old |previous |former |usual )?|{_EN_ASKS} )"
        rf"(?P<noun>{word})\b(?!'s)"
    )
