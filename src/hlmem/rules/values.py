"""Value cleanup: cut a matched span down to a short, canonical value.

A rule's capture group runs to the end of its clause; these helpers cut it at the next clause
("因为…", "because …"), strip leading articles, measure words and fillers ("一个", "the") and
trailing particles and adverbs ("了", "吧", "now"), so the same fact said twice gives the same
value. They are pure string functions: no lexicon, no state.
"""

from __future__ import annotations

import re

from hlmem.lang import Language

ZH_TRAIL = re.compile(
    r"(?:了|啦|吧|的|呢|哦|喔|噢|呀|啊|嘛|哈|哇|咯|罢了|而已|哈哈|等等|等|~|～|\s|[“”\"'。！!？?…])+$"
)
_ZH_LEAD = re.compile(
    r"^(?:的是|是|于|一下|这个|那个|这家|那家|这款|那款|[一两几]?(?:个|家|只|条|位|名|台|辆|部|本|杯|款|种)|一些|一点|点儿|很多|各种|所有"
    r"|这种|那种|[“\"'])+"
)
ZH_CUT = re.compile(
    r"而不是|而非|胜过|多过|多于|超过|因为|但是|不过|可是|所以|然后|而且|并且|以及|，|。|的时候|之后|以后"
    r"|(?<=..)(?:感觉|觉得|真心|真的|挺好|不错|好用|效果)"
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
EN_TRAIL = re.compile(
    r"[\s\"'”’)]+$|\s+(?:on|at|by|in|to|with|for|from|of|and|or|about|around|roughly|nearly|almost"
    r"|over|some)$",
    re.I,
)

# "用的手机是华为Mate60", "喜欢用的是X": the thing itself comes after 是.
ZH_WHICH_IS = re.compile(r"^[^是的，,]{0,3}的[^是，,]{0,8}?是")
_ZH_FILLER = re.compile(r"(?<=.)(?:这个|那个|这家|那家|这款|那款|这台|那台)(?=.)")


def clean_zh(value: str) -> str:
    """A Chinese value without a "的…是" lead-in, fillers, a following clause or particles."""
    which = ZH_WHICH_IS.match(value)
    if which and which.end() < len(value):
        value = value[which.end() :]
    value = _ZH_FILLER.sub("", value)
    cut = ZH_CUT.search(value)
    if cut and cut.start() > 0:
        value = value[: cut.start()]
    value = _ZH_LEAD.sub("", value.strip())
    return ZH_TRAIL.sub("", value).strip()


def clean_en(value: str) -> str:
    """An English value without a following clause, leading articles or trailing words."""
    value = _EN_CUT.sub("", value.strip())
    value = _EN_LEAD.sub("", value)
    for _ in range(3):
        value = EN_TRAIL.sub("", value).strip(" ,.;:!?\"'")
    return value


def clean(value: str, lang: Language) -> str:
    """``value`` cleaned by the rules of ``lang``."""
    return clean_zh(value) if lang == "zh" else clean_en(value)
