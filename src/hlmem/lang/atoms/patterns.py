"""Data of the protected-atom rules: the word lists, lexicons and compiled patterns.

Units, currencies, Chinese numerals, month and weekday names, relative dates, negation cues,
surnames, titles, relations, known names, stop and filler words, and the regular expressions
built from them, compiled once at import. The code that applies them (in a fixed order,
earlier families masking later ones) is :mod:`hlmem.lang.atoms.spans` (the atoms' spans),
:mod:`hlmem.lang.atoms.words` (negations and names) and :mod:`hlmem.lang.atoms.analysis` (the
analysis that joins them). Public names are read there; underscored ones only build the patterns
here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import NamedTuple

# --- word lists ------------------------------------------------------------------------------


def _set(words: str) -> frozenset[str]:
    return frozenset(words.split())


def _table(spec: str, *, canon_too: bool = False) -> dict[str, str]:
    """ "canon=alias,alias word ..." as ``{alias: canon, word: word}``; "_" is a space."""
    out: dict[str, str] = {}
    for entry in re.sub(r",\s+", ",", spec).split():
        canon, _, aliases = entry.partition("=")
        canon = canon.replace("_", " ")
        for alias in aliases.split(",") if aliases else []:
            out[alias.replace("_", " ")] = canon
        if canon_too or not aliases:
            out[canon] = canon
    return out


# Units: Chinese and English sizes share a canonical name; currencies become prefixes.
UNITS_ZH = _table("""¥=元,块,块钱,人民币 $=美元,美金 €=欧元 £=英镑 h=小时,钟头 min=分钟 s=秒
    ms=毫秒 kg=公斤,千克 g=克 t=吨 m=米 cm=厘米 mm=毫米 km=公里,千米 l=升 ml=毫升 ㎡=平米,平方米
    day=天 week=周,星期 年 个 只 件 次 回 遍 趟 斤 岁 人 位 名 本 张 台 条 杯 瓶 碗 盒 箱 包
    袋 层 楼 度 倍 页 行 份 套 部 辆 间 家 节 课 场 篇 首 句 字 项 步 种 类 级 座 栋 户 口 头 双
    对 支 根 片 颗 粒 亩 核 线程 成 折 毛 角""", canon_too=True)  # fmt: skip
UNITS_EN = _table("""kg=kilogram,kilograms,kilo,kilos g=gram,grams mg lb=lbs,pound,pounds
    km=kilometer,kilometers,kilometre,kilometres m=meter,meters,metre,metres cm mm
    mi=mile,miles ml l=liter,liters,litre,litres gb mb kb tb gib mib ms=millisecond,milliseconds
    s=sec,secs,second,seconds min=mins,minute,minutes h=hr,hrs,hour,hours day=days
    week=weeks,wk,wks month=months year=years,yr,yrs %=percent,pct $=dollar,dollars,bucks
    €=euro,euros ¥=yuan £ x=times k people=persons,person user=users item=items core=cores
    thread=threads ghz mhz hz px pt gbps mbps qps rps token=tokens""", canon_too=True)  # fmt: skip
CURRENCY = _table("¥=￥,rmb,cny $=usd €=eur £=gbp", canon_too=True)
MULTIPLIERS = {"万": 10**4, "千": 1000, "百": 100, "亿": 10**8, "thousand": 1000,
               "million": 10**6, "billion": 10**9}  # fmt: skip
NUM_ZH = "零〇一二两三四五六七八九十百千万亿"
DIGIT_ZH = {c: int(d) for c, d in zip("零〇一二两三四五六七八九", "001223456789", strict=True)}
SMALL_UNIT_ZH = {"十": 10, "百": 100, "千": 1000}
BIG_UNIT_ZH = {"万": 10**4, "亿": 10**8}
ONES = {w: i for i, w in enumerate("one two three four five six seven eight nine".split(), 1)}
EN_NUMBERS = {w: i for i, w in enumerate("""two three four five six seven eight nine ten
    eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen""".split(), 2)
} | {w: 10 * i for i, w in enumerate("twenty thirty forty fifty sixty seventy eighty ninety"
                                     .split(), 2)}  # fmt: skip
EN_ORDINALS = {w: i for i, w in enumerate("""first second third fourth fifth sixth seventh
    eighth ninth tenth eleventh twelfth""".split(), 1)}  # fmt: skip
MONTHS = {name: i % 12 + 1 for i, name in enumerate("""January February March April May June
    July August September October November December Jan Feb Mar Apr May Jun Jul Aug Sep Oct
    Nov Dec""".split())} | {"Sept": 9}  # fmt: skip
WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
WEEKDAY_ZH = dict(
    zip("一二三四五六日天七1234567", [0, 1, 2, 3, 4, 5, 6, 6, 6, *range(7)], strict=True)
)
WEEK_PREFIX_ZH = {"上": "last", "下": "next", "这": "this", "本": "this", "每": "every", "": ""}
# Parts of the day, and the meridiem they give a clock time ("a", "p", "n" for noon).
PODS_ZH = _table("a=上午,早上,早晨,清晨,凌晨,半夜 n=中午 p=下午,傍晚,晚上,夜里")
POD_CANON = _table("""morning=上午,早上,早晨,清晨,mornings early_morning=凌晨 midnight=半夜
    noon=中午 afternoon=下午,afternoons evening=傍晚,晚上,evenings night=夜里,nights""")
RELATIVE = _table("""today=今天,今日 tomorrow=明天,明日 +2d=后天 +3d=大后天 yesterday=昨天,昨日
    -2d=前天 -3d=大前天 tonight=今晚 tomorrow_night=明晚 last_night=昨晚 this_morning=今早
    tomorrow_morning=明早 this_week=本周,这周,这个星期,这星期 next_week=下周,下个星期,下星期,下礼拜
    last_week=上周,上个星期,上星期,上礼拜 weekend=周末,weekends weekdays=工作日,every_weekday
    this_month=本月,这个月 next_month=下个月,下月 last_month=上个月,上月 this_year=今年
    next_year=明年 last_year=去年 -2y=前年 +2y=后年 daily=每天,每日,天天,every_day
    nightly=每晚,every_night weekly=每周,每星期,每个星期,every_week monthly=每月,每个月,every_month
    yearly=每年,every_year,annually month_end=月底 month_start=月初 year_end=年底
    year_start=年初""")  # fmt: skip
_RELATIVE_EN = r"""day\s+after\s+tomorrow|day\s+before\s+yesterday|today|tomorrow|yesterday
    |tonight|(?:this|next|last)\s+(?:week|month|year|weekend|morning|afternoon|evening)
    |every\s+(?:day|week|month|year|morning|evening|night|weekday|weekend)|daily|weekly
    |monthly|yearly|annually|nightly|weekends?|weekdays""".replace("\n    ", "")
_TLDS = "com|org|net|io|dev|ai|cn|app|co|edu|gov|me|info|xyz|tech|cloud|sh|so|ly|us|uk|de|jp"
NEGATIONS_ZH = _table("""不要 不用 不必 不能 不会 不再 没=没有 不 别 未 无 非 莫 勿 甭 禁止 禁用
    停止 停用 取消 关闭=关掉""", canon_too=True)  # fmt: skip
# Words that hold a negation character without negating anything ("非常", "未来", "别人").
_NEGATION_EXCEPTIONS_ZH = _set("""不过 不断 不少 不错 不久 不仅 不但 不管 不论 不得不 差不多
    了不起 对不起 不好意思 要不然 要不 不然 非常 非得 非要 除非 无论 无数 无比 无限 无线 无聊
    无人机 未来 别人 别的 别处 别墅 区别 特别 分别 级别 类别 性别 告别 识别 辨别 差别 个别 鉴别
    派别 别名 别针 莫斯科 莫名 没收 淹没 埋没 出没 非洲 南非 无锡""")  # fmt: skip
NEGATIVE_WORDS_EN = {
    form: base
    for base in _set(
        "disable disallow dislike disagree uninstall unsubscribe forbid prohibit avoid"
    )
    for form in (base, base + "s", base + ("d" if base.endswith("e") else "ed"))
} | _table("forbid=forbidden unable unset")
SURNAMES = """王 李 张 刘 陈 杨 黄 赵 吴 徐 孙 马 朱 胡 郭 何 高 林 罗 郑 梁 谢 宋 唐 许 韩 冯
    邓 曹 彭 曾 肖 董 袁 潘 蒋 蔡 余 杜 叶 魏 吕 丁 任 沈 姚 卢 姜 崔 钟 谭 陆 汪 范 廖 贾 夏 韦
    付 邹 孟 熊 秦 邱 尹 薛 闫 雷 侯 史 陶 黎 贺 顾 郝 龚 邵 钱 严 覃 武 戴 莫 汤""".split()
_TITLES_ZH = (
    "老师|先生|女士|小姐|总(?![结共计是体数额监部])|经理|医生|大夫|教授|同学|师傅|主任|律师|博士"
)
KNOWN_ZH = _table("""org=阿里巴巴,阿里,腾讯,百度,华为,字节跳动,京东,美团,网易,微软,谷歌,亚马逊,
    滴滴,拼多多,快手,特斯拉,英伟达,苹果公司,蚂蚁集团 product=微信,支付宝,钉钉,飞书,淘宝,抖音
    place=北京,上海,广州,深圳,杭州,南京,成都,武汉,西安,重庆,天津,苏州,香港,台湾,澳门,中国,美国,
    日本,英国,德国,法国,韩国,新加坡,加拿大,澳大利亚,印度,欧洲,东京,伦敦,巴黎,纽约""")  # fmt: skip
ORG_SUFFIXES_ZH = _set("公司 集团 银行 大学 学院 医院 研究院 研究所 实验室 委员会 协会 基金会 科技")
PLACE_SUFFIXES_ZH = tuple("省市县区镇村路街州岛湾港")
PROPER_FLAGS = _table("person=nr,nrfg,nrt place=ns org=nt other=nz")
_RELATIONS_ZH = _set("""妈妈 母亲 老妈 我妈 爸爸 父亲 老爸 我爸 老婆 妻子 太太 媳妇 老公 丈夫 儿子
    女儿 孩子 宝宝 哥哥 姐姐 弟弟 妹妹 爷爷 奶奶 外公 外婆 姥姥 姥爷 男朋友 女朋友 男友 女友 朋友
    同事 老板 领导 上司 室友 邻居 客户 家人 舅舅 阿姨 叔叔 婶婶 岳父 岳母 公公 婆婆""")  # fmt: skip
_RELATIONS_EN = _set("""mom mum mother dad father parent wife husband son daughter kid child
    children brother sister grandma grandpa grandmother grandfather friend girlfriend boyfriend
    colleague coworker boss manager roommate neighbor neighbour partner client customer uncle
    aunt cousin family""")  # fmt: skip
KNOWN_ORGS = _set("""google microsoft apple amazon meta facebook openai anthropic alibaba tencent
    baidu huawei bytedance github gitlab ibm intel nvidia amd netflix tesla twitter uber airbnb
    stripe oracle salesforce adobe cisco samsung sony deepmind mozilla cloudflare xiaomi spotify
    shopify""")  # fmt: skip
KNOWN_PRODUCTS = _set("""python java javascript typescript rust golang ruby kotlin swift linux
    windows macos ios android ubuntu debian docker kubernetes postgresql postgres mysql sqlite
    redis kafka nginx react vue django flask fastapi pytorch tensorflow numpy pandas slack jira
    notion chrome firefox safari excel iphone ipad macbook vscode vim emacs neovim git chatgpt
    claude wechat alipay dingtalk feishu""")  # fmt: skip
KNOWN_PLACES = _set("""london paris tokyo beijing shanghai shenzhen hangzhou guangzhou berlin
    singapore seattle boston chicago china japan usa uk germany france canada india australia
    korea taiwan europe asia america""") | {"new york", "san francisco", "hong kong"}  # fmt: skip
ORG_SUFFIXES_EN = _set("""inc corp corporation ltd llc gmbh co company university college bank
    group foundation labs lab institute technologies systems hospital school team""")  # fmt: skip
PLACE_SUFFIXES_EN = _set("""city street st road rd avenue ave county province state park lake
    river mountain island bay""")  # fmt: skip
NAME_CONNECTORS = _set("of de van von der del la le da &")
# Capitalised words that are never names (also: Latin words of a Chinese text not worth
# guarding as terms).
STOP_EN = _set("""i a an the this that these those my our your his her their its we you he she
    it they me us them please also and but or so if when then there here do does did don is are
    was were be been have has had will would can could should may might must let lets remember
    note ok okay yes no not hi hey hello thanks thank what which who whom whose where why how all
    any some every each both either neither none good bad first last next more most less least
    many much very just only even still yet already always never sometimes often usually today
    tomorrow yesterday tonight mr mrs ms dr prof on in at to of for from with by as about after
    before nobody nothing everyone everybody someone somebody anyone anybody""")  # fmt: skip
SUBJECT_VERBS = _set("""is was has had will would can could should does did may might must and
    said told asked went got met made took gave left came saw knew thought found bought wrote
    sent kept felt paid""")  # fmt: skip
SPEAKER_SUBJECTS = _set("user 用户 我 me i myself self speaker 本人 自己 我自己") | {"the user"}
FILLER_ZH = _set("了 的 地 得 吧 呢 啊 呀 嘛 哦 哈 啦 喔 噢 咯 么 我 把 也 就 请")
# jieba POS flags of words that never carry the fact: punctuation, prepositions (在, 把, 对),
# the particles 的/了/地/得 (not 着/过: "去过" is not "去"), modal particles, interjections.
FILLER_FLAGS = _set("x p uj ul ud uv y e")
FILLER_EN = _set("please kindly just that the a an i me my really actually basically so ok "
                 "okay um uh well")  # fmt: skip
CONJUNCTIONS = _set("和 与 及 跟 或 或者 以及 、 and or")


# --- patterns (compiled once) -----------------------------------------------------------------


def _alt(words: Iterable[str]) -> str:
    return "|".join(re.escape(w) for w in sorted(words, key=lambda w: (-len(w), w)))


class RunScan(NamedTuple):
    """A pattern kept as its alternatives, for a scan linear in the text
    (:func:`hlmem.lang.atoms.spans.scan`). ``only[i]`` matches exactly what alternative ``i`` of the
    whole pattern matches, with the same groups (the others are disabled by ``(?!)``);
    ``runs[i]`` is, for an alternative that reads a run of characters from each of its starts,
    a pattern finding those starts and one matching the run from a start: if the alternative
    fails at a start, it fails at every start inside that run (the run ends where the
    alternative's next required character, which the run cannot hold, must stand)."""

    only: tuple[re.Pattern[str], ...]
    runs: Mapping[int, tuple[re.Pattern[str], re.Pattern[str]]]


def _alternatives(
    parts: list[str], flags: int, runs: Mapping[int, tuple[str, str]]
) -> tuple[re.Pattern[str], RunScan]:
    """The pattern of ``parts`` joined as alternatives, and its :class:`RunScan`."""
    only = tuple(
        re.compile("|".join(p if j == i else "(?!)" + p for j, p in enumerate(parts)), flags)
        for i in range(len(parts))
    )
    compiled = {i: (re.compile(a, flags), re.compile(b, flags)) for i, (a, b) in runs.items()}
    return re.compile("|".join(parts), flags), RunScan(only, compiled)


_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
CJK_RUN = re.compile(f"[{_CJK}]+")
_A = re.ASCII  # \w, \b and \d of Latin text only: CJK characters are not "word" here
_I = re.IGNORECASE | _A
_SUFFIX_V = r"(?:[-.]?(?:alpha|beta|rc|a|b|dev|post)\d*)?"
_END = r"(?!\w|\.\w)"  # a sentence's closing full stop may follow, a further dot-part not

RE_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+", _A)
RE_URL = re.compile(
    r"(?:(?:https?|ftp|file|ssh|git)://|www\.)[^\s<>\"'“”‘’「」『』，。；！？、）)\]" + _CJK + "]+"
    rf"|(?<![\w.\-/@])[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9-]+)*\.(?:{_TLDS})"
    r"(?![\w-])(?:/[^\s，。；！？、）)]*)?",
    _I,
)
RE_HANDLE = re.compile(r"(?<![\w@])@[A-Za-z0-9_][\w.-]*", _A)
_PATH_RUN = (r"(?<![\w/.])[\w.-]", r"[\w.-]+")  # a word (with dots and hyphens) before a "/"
RE_PATH, PATH_SCAN = _alternatives(
    [
        r"(?<![\w/.:~])(?:~|\.{1,2})?(?:/[\w.@+-]+)+/?",
        r"(?<!\w)[A-Za-z]:\\[^\s，。；]+",
        r"(?<![\w/.])[\w.-]+/[\w.-]+(?:/[\w.-]+)+/?",
        r"(?<![\w/.])[\w.-]+/[\w-]+\.[A-Za-z0-9]{1,6}(?![\w/])",
    ],
    _A,
    {2: _PATH_RUN, 3: _PATH_RUN},
)
RE_IP = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?::\d{1,5})?(?!\w|\.\d)", _A)
_DAY_ZH = r"\d{1,2}|[一二三]?十[一二三四五六七八九]?|[一二三四五六七八九]"
_MON_ZH = r"\d{1,2}|十[一二]?|[一二三四五六七八九]"
RE_DATE_ISO = re.compile(r"(?<![\w.])(\d{4})([-/.])(\d{1,2})(?:\2(\d{1,2}))?(?!\w|\.\d|-\d)", _A)
RE_DATE_US = re.compile(r"(?<![\w/])(\d{1,2})/(\d{1,2})/(\d{4})(?![\w/])", _A)
RE_DATE_ZH = re.compile(
    rf"(?:(\d{{4}}|\d{{2}}|[〇零一二三四五六七八九]{{2,4}})\s?年\s?)?({_MON_ZH})\s?月份?"
    rf"(?:\s?({_DAY_ZH})\s?[日号號])?"
    r"|(\d{4}|[〇零一二三四五六七八九]{4})\s?年(?![代级])"
    rf"|(?<![\d月第])({_DAY_ZH})\s?[号號](?![楼线码])",
    _A,
)
# Month names: any case next to a day or year, capitalised when alone ("march on", "May I").
_MON_EN = _alt(MONTHS)
RE_DATE_EN = re.compile(
    rf"\b(?:(?P<m1>(?i:{_MON_EN}))\.?\s+(?P<d1>\d{{1,2}})(?:st|nd|rd|th)?\b"
    rf"(?:,?\s+(?P<y1>\d{{4}}))?"
    rf"|(?P<d2>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<m2>(?i:{_MON_EN}))\b\.?"
    rf"(?:,?\s+(?P<y2>\d{{4}}))?"
    rf"|(?P<m3>(?i:{_MON_EN}))\.?,?\s+(?P<y3>\d{{4}})"
    rf"|(?!May\b)(?P<m4>{_MON_EN})\b)",
    _A,
)
_POD_ZH = _alt(PODS_ZH)
_NUM_CLOCK = "[零〇一二两三四五六七八九十]{1,3}"
RE_TIME = re.compile(
    rf"(?P<pod>{_POD_ZH})?\s*(?P<h>\d{{1,2}}|{_NUM_CLOCK})\s?(?:点|點|时|時)"
    rf"(?P<tail>钟|整|半|一刻|三刻|过?(?:\d{{1,2}}|{_NUM_CLOCK})分?)?"
    rf"|(?P<pod2>{_POD_ZH})?\s*(?<![\d:.])(?P<h2>[01]?\d|2[0-3]):(?P<m2>[0-5]\d)(?![\d:])"
    r"(?:\s*(?P<ap2>[ap]\.?m\.?)(?![a-z]))?"
    r"|\b(?P<h3>1[0-2]|0?\d)(?:\s*o'clock)?\s*(?P<ap3>[ap]\.?m\.?)(?![a-z])"
    r"|\b(?P<h4>1[0-2]|0?\d)\s*o'clock\b"
    r"|\b(?P<word>noon|midnight)\b",
    _I,
)
RE_POD = re.compile(rf"{_POD_ZH}|\b(?:morning|afternoon|evening|night)s?\b", _I)
RE_WEEKDAY = re.compile(
    r"(?P<pre>上个?|下个?|这个?|本|每个?)?(?:周|星期|礼拜|禮拜)(?P<d>[一二三四五六日天七1-7])"
    r"(?![次遍回趟个年])"
    r"|(?i:\b(?:(?P<pre2>next|last|this|every|on)\s+)?(?P<d2>monday|tuesday|wednesday"
    r"|thursday|friday|saturday|sunday)(?P<pl>s)?\b)"
    r"|\b(?P<d3>Tues|Tue|Wed|Thurs|Thur|Thu|Fri)\b\.?",
    _A,
)
RE_RELATIVE = re.compile(
    rf"{_alt(w for w in RELATIVE if CJK_RUN.match(w))}|\b(?:{_RELATIVE_EN})\b", _I
)
RE_VERSION, VERSION_SCAN = _alternatives(
    [
        rf"(?<![\w.])v(?:er(?:sion)?\.?\s?)?\d+(?:\.\d+)*{_SUFFIX_V}{_END}",
        rf"(?<![\w.])\d+\.\d+\.\d+(?:\.\d+)*{_SUFFIX_V}{_END}",
        rf"(?P<pre>\b[A-Za-z][A-Za-z+#]*\s?|版本\s?)(?P<x>\d+\.\d+){_SUFFIX_V}{_END}",
        r"(?<![\w.])(?P<x2>\d+\.\d+)(?=\s?版)",
    ],
    _I,
    {2: (r"\b[A-Za-z]|版本", r"[A-Za-z][A-Za-z+#]*")},  # a name ("Python", "c++") before x.y
)
RE_V_PREFIX = re.compile(r"^v(?:er(?:sion)?\.?\s?)?")
# The words before a bare "x.y" that make it a version (besides a capitalised name).
VERSION_NAMES = KNOWN_PRODUCTS | {"version", "ver", "版本"}
_ZH_UNIT_RE = _alt(UNITS_ZH)
_EN_UNIT_RE = _alt(UNITS_EN)
RE_NUMBER = re.compile(
    r"(?P<cur>[¥￥$€£]|\b(?:rmb|cny|usd|eur|gbp)\b)?\s?"
    r"(?:(?<![A-Za-z0-9_.])(?<![A-Za-z0-9]-)(?P<d>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
    r"(?P<mul>\s?(?:万|千|百|亿|thousand\b|million\b|billion\b))?"
    rf"|百分之(?P<pct>\d+(?:\.\d+)?|[{NUM_ZH}]+)"
    rf"|第\s?(?P<ord>\d+|[{NUM_ZH}]+)"
    rf"|(?<![{NUM_ZH}])(?!万一)(?P<zh>[{NUM_ZH}]+)(?=\s?(?:{_ZH_UNIT_RE}))"
    rf"|(?<![{NUM_ZH}])(?!万一)(?P<zh2>[{NUM_ZH}]*[一二两三四五六七八九][十百千万亿][{NUM_ZH}]*)"
    rf"|\b(?P<en>(?:{_alt(EN_NUMBERS)})(?:-(?:{_alt(ONES)}))?)\b"
    rf"|(?<=\bthe )(?P<eno>{_alt(EN_ORDINALS)})\b"
    r"|\b(?P<dord>\d+)(?:st|nd|rd|th)\b)"
    rf"(?P<unit>\s?(?:{_ZH_UNIT_RE})|\s?(?:{_EN_UNIT_RE})(?![a-z]))?"
    r"(?![A-Za-z0-9])",
    _I,
)
RE_IDENT, IDENT_SCAN = _alternatives(
    [
        r"(?<![\w.-])--[a-z][\w-]*[a-z0-9]",  # CLI flags
        r"\b[A-Za-z_][A-Za-z0-9]*_[A-Za-z0-9_]*(?:\(\))?",  # snake_case, CONSTANT_CASE
        r"\b[a-z]+(?:[A-Z][a-z0-9]+)+\b(?:\(\))?",  # camelCase
        r"\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)+\b",  # PascalCase
        r"\b[A-Za-z_]\w+(?:\.[A-Za-z_]\w*)+(?:\(\))?",  # dotted.names, file.ext
        r"\b[A-Za-z_]\w*\(\)",  # call()
        r"\b[a-z][a-z0-9]*(?:-[a-z0-9]+)*-\d[a-z0-9-]*\b",  # db-prod-2, gpt-4o
        r"\b[a-z][a-z0-9.-]*:\d{2,5}\b",  # host:port
        r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b",  # commit hashes
    ],
    _A,
    # the hyphenated name before "-2", the host before ":8080"
    {6: (r"\b[a-z]", r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*"), 7: (r"\b[a-z]", r"[a-z][a-z0-9.-]*")},
)
RE_QUOTE = re.compile(
    r"\"([^\"\n]{1,200})\"|“([^”\n]{1,200})”|「([^」\n]{1,200})」|『([^』\n]{1,200})』"
    r"|《([^》\n]{1,200})》|‘([^’\n]{1,200})’|`([^`\n]{1,200})`"
    r"|(?<![\w'])'([^'\n]{1,200}?)'(?!\w)",
    _A,
)
RE_NEG_SKIP = re.compile(_alt(_NEGATION_EXCEPTIONS_ZH))
RE_NEG_ZH = re.compile(_alt(NEGATIONS_ZH))
RE_NEG_EN = re.compile(
    r"\b(?:no\s+longer|not|no|never|none|nothing|nobody|neither|nor|without"
    rf"|stop(?:s|ped|ping)?|{_alt(NEGATIVE_WORDS_EN)})\b",
    _I,
)
RE_NOT = re.compile(r"\b(?:(ca|wo|sha)|(\w+))n['’]t\b", _I)
RE_CANNOT = re.compile(r"\bcannot\b", _I)
RE_CONTRACTION = re.compile(r"\b(I|you|we|they|he|she|it|that|there)['’](m|re|ve|ll|d)\b", _I)
EXPANSIONS = {"ca": "can", "wo": "will", "sha": "shall", "m": "am", "re": "are", "ve": "have",
              "ll": "will", "d": "would"}  # fmt: skip

RE_TOKEN = re.compile(
    rf"(?P<cjk>[{_CJK}]+)|(?P<lat>[^\W_{_CJK}]+(?:[-'’][^\W_{_CJK}]+)*)|(?P<conj>、)"
    r"|(?P<punct>[，,。.！!？?；;：:()（）【】\[\]{}\"“”「」『』‘’`\n|])"
)
RE_LATIN = re.compile(r"[0-9a-z\u00c0-\u024f]+")
RE_CAP = re.compile(
    r"(?<![\w@#/.$'’-])(?:[A-Z][a-z0-9]*(?:[A-Z][a-z0-9]*)*|[a-z]{1,3}[A-Z][A-Za-z0-9]*)"
    r"(?:-[A-Z][a-z0-9]+)?(?![\w@/])",
    _A,
)
SENTENCE_STARTERS = frozenset('.!?。！？;；:："“「(（')  # what may precede a sentence
RE_NEXT_WORD = re.compile(r"\s+([a-z]+)", _A)
RE_CN_NAME = re.compile(
    rf"(?P<known>{_alt(KNOWN_ZH)})"
    rf"|(?P<person>[老小](?:{'|'.join(SURNAMES)})|(?:{'|'.join(SURNAMES)})(?:{_TITLES_ZH}))"
)
RE_RELATION = re.compile(rf"{_alt(_RELATIONS_ZH)}|\b(?:{_alt(_RELATIONS_EN)})s?\b", _I)
RE_FILLER_ZH = re.compile(r"一下|麻烦你?|帮忙|^请(?![假客教求])")
