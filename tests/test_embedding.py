"""The local embedder: shape, determinism across processes and batches, similarity that means
something, and the vectorised features checked against a plain-Python reference."""

from __future__ import annotations

import hashlib
import math
import os
import subprocess
import sys
from collections import Counter
from itertools import pairwise
from typing import Any

import numpy as np
import pytest

from hlmem.lang import DEFAULT_DIM, MODEL_ID, LocalEmbedder, cosine, model_version, normalize
from hlmem.lang import embedding as emb

# (stored claim, a paraphrase or a question about it): each question must find its own claim
# among all the others.
ZH_PAIRS = [
    ("我主要用深色模式", "我平时偏好深色模式的界面"),
    ("我的猫叫小白", "我的猫叫什么名字？"),
    ("我在杭州工作", "我现在在杭州上班"),
    ("下周三去上海出差", "我下周三要去上海出差开会"),
    ("生产数据库是 db-prod-2", "生产环境的数据库叫什么"),
    ("我对花生过敏", "我花生过敏，不能吃花生"),
    ("部署 v1.2 到测试环境", "把v1.2部署到测试环境"),
    ("我女儿今年五岁了", "女儿几岁了"),
    ("最近眼睛不舒服，暂时换成浅色模式", "我现在用浅色模式"),
    ("我喜欢喝美式咖啡，不加糖", "我喜欢什么咖啡"),
]
EN_PAIRS = [
    ("I mostly use dark mode", "The user prefers dark mode in the editor"),
    ("My cat is called Snowball", "What is my cat's name?"),
    ("I work in Hangzhou", "Where do I work?"),
    ("The prod DB is db-prod-2", "Which database is production?"),
    ("I'm allergic to peanuts", "peanut allergy"),
    ("Deploy v1.2 to staging on Friday", "deploying version 1.2 to staging"),
    ("My daughter turned five this year", "How old is my daughter?"),
    ("I switched to light mode because of eye strain", "light mode preference"),
    ("I like black coffee without sugar", "What coffee do I like?"),
    ("Our team meeting moved to Tuesdays at 10am", "When is the team meeting?"),
]
# The one question whose claim ranks second, and the claim ranked first: it shares 7 of the
# question's 8 characters, in order, and differs in one (深 for 浅). Features version 1 ranked
# the right claim first through jieba's word bigram "浅色 模式"; character features alone need
# a character weight so low to do it (0.35 instead of 1.2) that the triples below lose more.
RANKED_SECOND = {"我现在用浅色模式": "我主要用深色模式"}


@pytest.fixture(scope="module")
def embedder() -> LocalEmbedder:
    return LocalEmbedder()


def test_shape_dtype_and_unit_norm(embedder: LocalEmbedder) -> None:
    vectors = embedder.embed(["我的猫叫小白", "The prod DB is db-prod-2", "混合 mixed 文本 text"])
    assert vectors.shape == (3, DEFAULT_DIM)
    assert vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert embedder.embed([]).shape == (0, DEFAULT_DIM)
    assert LocalEmbedder(dim=64).embed(["x y z"]).shape == (1, 64)
    with pytest.raises(ValueError, match="dim"):
        LocalEmbedder(dim=4)


def test_texts_without_features_give_the_zero_vector(embedder: LocalEmbedder) -> None:
    for text in ("", "   ", "的", "!?", "the of and"):
        assert not embedder.embed_one(text).any(), text
    assert cosine(embedder.embed_one(""), embedder.embed_one("猫")) == 0.0


def test_identity_metadata() -> None:
    embedder = LocalEmbedder()
    assert embedder.model_id == MODEL_ID == "hlmem-local-hash"
    assert embedder.model_version == model_version(DEFAULT_DIM)
    assert len(embedder.model_version) == 12
    assert model_version(DEFAULT_DIM) != model_version(256)
    assert embedder.model_version != "4eb2f715e3eb"  # features version 1 (jieba), 384 dims


def test_equal_up_to_width_case_and_spacing(embedder: LocalEmbedder) -> None:
    a, b = embedder.embed(["Deploy  V1.2 to Staging", "deploy v1.2 to staging"])
    assert np.array_equal(a, b)
    a, b = embedder.embed(["ＡＢＣ１２３ 记住", "abc123 记住"])
    assert np.array_equal(a, b)


@pytest.mark.parametrize(
    "text", ["ＡＢＣ１２３，记住！", "ﬁle ① ㈱ 﨑 ｶﾞ ²", "Straße　ＤＢ－ＰＲＯＤ＿2", "plain ascii"]
)
def test_folding_is_nfkc_and_casefold(text: str) -> None:
    assert " ".join(emb._fold(text).split()) == normalize(text)


@pytest.mark.parametrize("pairs", [ZH_PAIRS, EN_PAIRS], ids=["zh", "en"])
def test_paraphrases_score_higher_than_unrelated_texts(
    embedder: LocalEmbedder, pairs: list[tuple[str, str]]
) -> None:
    claims = embedder.embed([a for a, _ in pairs])
    questions = embedder.embed([b for _, b in pairs])
    scores = questions @ claims.T
    for i, (claim, question) in enumerate(pairs):
        above = [pairs[j][0] for j in np.flatnonzero(scores[i] > scores[i, i])]
        expected = [RANKED_SECOND[question]] if question in RANKED_SECOND else []
        assert above == expected, (question, claim, scores[i].round(2))
    related = np.diag(scores).mean()
    unrelated = (scores.sum() - np.trace(scores)) / (scores.size - len(pairs))
    assert related > 0.3 and abs(unrelated) < 0.05, (related, unrelated)


def test_overlap_orders_similarity(embedder: LocalEmbedder) -> None:
    base, close, far = embedder.embed(
        ["部署 v1.2 到测试环境", "部署 v1.3 到测试环境", "我的猫叫小白"]
    )
    assert cosine(base, close) > 0.6 > 0.1 > cosine(base, far)
    base, close, far = embedder.embed(
        ["deploy v1.2 to staging", "deploy v1.3 to staging", "my cat is called Snowball"]
    )
    assert cosine(base, close) > 0.6 > 0.1 > cosine(base, far)


_SCRIPT = """
import hashlib, sys
from hlmem.lang.embedding import LocalEmbedder
texts = sys.stdin.read().split("\\n")
print(hashlib.sha256(LocalEmbedder().embed(texts).tobytes()).hexdigest())
"""


def test_vectors_are_identical_across_processes(embedder: LocalEmbedder) -> None:
    texts = [a for a, _ in ZH_PAIRS + EN_PAIRS]
    # Python's str hash() differs between this process and one with another seed; ours must not.
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    proc = subprocess.run(
        [sys.executable, "-c", _SCRIPT],
        input="\n".join(texts),
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=True,
    )
    here = hashlib.sha256(embedder.embed(texts).tobytes()).hexdigest()
    assert proc.stdout.strip() == here


@pytest.mark.parametrize("language", ["zh", "en"])
def test_ranks_relevant_above_irrelevant_at_least_as_often_as_v1(
    embedder: LocalEmbedder, language: str
) -> None:
    triples = _triples(TRIPLES[language])
    query, relevant, irrelevant = (
        embedder.embed(list(texts)) for texts in zip(*triples, strict=True)
    )
    wins = int(((query * relevant).sum(axis=1) > (query * irrelevant).sum(axis=1)).sum())
    assert len(triples) >= 140
    assert wins >= V1_TRIPLE_WINS[language], (wins, len(triples))


def test_a_vector_does_not_depend_on_its_batch(embedder: LocalEmbedder) -> None:
    texts = [text for pair in ZH_PAIRS + EN_PAIRS for text in pair]
    # more texts than one chunk holds, and one text longer than a chunk's characters
    batch = [*texts * 8, "deploy " * 50_000, *texts]
    vectors = embedder.embed(iter(batch))
    assert vectors.shape == (len(batch), DEFAULT_DIM)
    for i in (0, 7, 255, 256, 319, 320, len(batch) - 1):
        assert np.array_equal(vectors[i], embedder.embed_one(batch[i])), i


EDGE_TEXTS = [
    "db-prod-2 部署 v1.2，user_id 是空的",
    "I'm at Caroline's; e-mail li@example.com",
    "ｶﾀｶﾅ 한국어 Ελληνικά 😀 𠀀 \x01 tab\tand\nnewline",
    "a b c x ab abc",
    "的了吗 我你他",
    "重要 " * 40 + "important " * 2000,
]


def test_vectorised_features_match_a_plain_python_reference(embedder: LocalEmbedder) -> None:
    texts = [text for pair in ZH_PAIRS + EN_PAIRS for text in pair] + EDGE_TEXTS
    for dim in (DEFAULT_DIM, 64):
        got = LocalEmbedder(dim).embed(texts)
        want = np.array([_reference_vector(text, dim) for text in texts])
        assert np.allclose(got, want, atol=1e-6), np.abs(got - want).max(axis=1)


_M64 = (1 << 64) - 1


def _poly(text: str) -> int:
    return sum(ord(ch) * pow(emb._BASE, j, 1 << 64) for j, ch in enumerate(text)) & _M64


def _fmix(h: int) -> int:
    for factor in emb._MIX:
        h ^= h >> 33
        h = (h * factor) & _M64
    return h ^ (h >> 33)


def _reference_vector(text: str, dim: int) -> np.ndarray[Any, np.dtype[np.float32]]:
    """The embedder's vector, one feature at a time, in plain Python."""
    counts: Counter[tuple[str, str, int]] = Counter()
    words = emb._segment(text).split(" ")
    latin = [w for w in words if w and not emb._CJK_RUN.fullmatch(w) and w[0] != "\x01"]
    for word in filter(None, words):
        if emb._CJK_RUN.fullmatch(word):
            counts.update(("cjk1", "cjk1", ord(ch)) for ch in word if ch not in emb._STOP_CHARS)
            counts.update(("cjk", "cjk", _poly(word[i : i + 2])) for i in range(len(word) - 1))
        else:
            counts["word", "word", _poly(word)] += 1
    counts.update(("bigram", "bigram", _poly(f"{a} {b}")) for a, b in pairwise(latin))
    for word in latin:
        marked = f" {word} "
        for n in emb._LATIN_NGRAMS:
            grams = (marked[i : i + n] for i in range(len(marked) - n + 1))
            counts.update(("latin", f"latin{n}", _poly(gram)) for gram in grams)
    # a term is what the sort key sees: the family and the top bits of the salted, mixed hash
    terms: Counter[tuple[str, int]] = Counter()
    for (family, salt, h), tf in counts.items():
        terms[family, _fmix(h ^ emb._SALT[salt]) >> (64 - emb._HASH_BITS)] += tf
    out = np.zeros(dim)
    for family, weight in emb._WEIGHTS.items():
        items = [
            (bits, 1 + math.log(min(tf, emb._TF_CAP)))
            for (f, bits), tf in terms.items()
            if f == family
        ]
        norm = math.sqrt(sum(w * w for _, w in items))
        for bits, w in items:
            sign = 1.0 if bits >> 32 & 1 else -1.0
            out[((bits & 0xFFFFFFFF) * dim) >> 32] += sign * w * weight / norm
    norm = float(np.linalg.norm(out))
    return (out / norm if norm else out).astype(np.float32)


# --- retrieval triples ------------------------------------------------------------------------

# How many triples the jieba-based embedder of features version 1 ranked right (the relevant
# text above the irrelevant one): the vectorised embedder must do at least as well.
V1_TRIPLE_WINS = {"zh": 126, "en": 133}


def _triples(block: str) -> list[tuple[str, str, str]]:
    out = []
    for line in block.strip().splitlines():
        query, relevant, irrelevant = (part.strip() for part in line.split(" | "))
        out.append((query, relevant, irrelevant))
    return out


# "query | relevant | irrelevant": a question or a paraphrase, the stored text it is about, and
# another stored text, often one that shares words with the query.
ZH_TRIPLES = """
我住在北京 | 北京是我住的地方 | 我喜欢咖啡
我的猫叫什么名字 | 我家的猫叫小白 | 我的车是白色的
我在哪里上班 | 我在杭州的一家公司工作 | 我在北京读的大学
我对什么过敏 | 我对花生过敏，不能吃花生 | 我对历史很感兴趣
我女儿几岁了 | 我女儿今年五岁 | 我的车已经开了五年
我喜欢喝什么咖啡 | 我爱喝不加糖的美式咖啡 | 我每天早上喝一杯绿茶
生产数据库叫什么 | 生产数据库是 db-prod-2 | 预发环境的域名是 staging.example.com
下周出差去哪里 | 下周三要去上海出差 | 下周三之前要交季度报告
我妻子的生日是哪天 | 我老婆的生日是三月八号 | 我儿子三月一号开学
周会几点开 | 团队周会改到每周二上午十点 | 每周二晚上我去健身房
我平时用什么编辑器写代码 | 我写代码一直用 vim | 我的手机是华为的
我是什么血型 | 我的血型是O型 | 我的星座是天秤座
我养了什么宠物 | 我家养了一只金毛犬 | 我阳台上种了一盆绿萝
我最喜欢什么运动 | 我最喜欢打羽毛球 | 我最喜欢的颜色是蓝色
我哥哥做什么工作 | 我哥哥在深圳当程序员 | 我妹妹在深圳读高中
我晚上几点睡觉 | 我一般晚上十一点上床睡觉 | 我早上七点起床跑步
我不吃什么 | 我不吃香菜 | 我不喜欢看恐怖片
我开什么车 | 我开的是一辆特斯拉 | 我坐地铁上班
我的手机号是多少 | 我的手机号码是13812345678 | 我的工号是 A1024
我在学什么语言 | 我最近在学日语 | 我最近在看一部美剧
我爸爸身体怎么样 | 我爸爸上个月做了心脏手术，正在恢复 | 我父亲喜欢钓鱼
我喜欢什么音乐 | 我喜欢听爵士乐 | 我喜欢吃四川火锅
我的体重是多少 | 我现在体重七十公斤 | 我的身高是一米七五
公司年会在哪天 | 公司年会定在一月二十号 | 公司的新办公室在望京
我用的是什么操作系统 | 我的电脑装的是 Ubuntu 22.04 系统 | 我的路由器是小米的
项目的截止日期是什么时候 | 这个项目必须在六月底之前上线 | 这个项目的负责人是老王
我毕业于哪所大学 | 我是浙江大学毕业的 | 我在浙江出生长大
我的孩子在哪里上学 | 我儿子在实验小学读二年级 | 我儿子喜欢踢足球
我喜欢什么季节 | 我最喜欢秋天这个季节 | 我最喜欢的水果是苹果
我家离公司多远 | 从我家到公司开车要四十分钟 | 我家附近新开了一家超市
我在减肥吗 | 我正在减肥，晚上不吃主食 | 我正在装修新房子
我周末一般做什么 | 我周末通常去爬山 | 我工作日都在加班
我的房租多少钱 | 我每个月房租五千块 | 我每个月给父母打两千块
我喜欢看什么书 | 我喜欢读科幻小说，尤其是刘慈欣的书 | 我喜欢看纪录片
我的领导是谁 | 我的直属领导是张经理 | 我的邻居是一位退休老师
我会弹什么乐器 | 我会弹钢琴，学了十年 | 我会做红烧肉
我戴眼镜吗 | 我近视六百度，一直戴眼镜 | 我从来不戴手表
我喜欢猫还是狗 | 比起猫我更喜欢狗 | 我更喜欢喝茶
哪个接口老是超时 | 订单查询接口经常超时 | 用户注册接口昨天上线了
线上服务器的 IP 是多少 | 线上服务器的 IP 是 10.0.3.17 | 办公室的 WiFi 密码是 hello123
我用什么浏览器 | 我一直用 Firefox 浏览器 | 我用 Outlook 收邮件
我周几休息 | 我每周三和周日休息 | 周三晚上有部门聚餐
我女儿叫什么名字 | 我女儿叫朵朵 | 我女儿喜欢画画
我最喜欢哪部电影 | 我最喜欢的电影是《星际穿越》 | 我最喜欢的游戏是塞尔达
我在哪个城市出生 | 我出生在成都 | 我在成都只待过两天
下次同学聚会在哪 | 下次同学聚会定在西湖边的餐厅 | 下次体检要空腹
我每天喝多少水 | 我每天喝两升水 | 我每天走一万步
我过敏的时候吃什么药 | 我过敏时吃氯雷他定 | 我感冒的时候喜欢喝姜汤
我最喜欢哪家餐厅 | 我最喜欢楼下那家兰州拉面馆 | 我最喜欢的城市是大理
我周一要做什么 | 周一上午要给客户做产品演示 | 周五下午要去银行办卡
我的银行卡丢了吗 | 我上周把招商银行卡弄丢了，已经挂失 | 我上周去银行存了钱
我能吃辣吗 | 我特别能吃辣 | 我特别喜欢旅游
我的护照什么时候过期 | 我的护照明年五月到期 | 我的驾照是去年考的
我的猫几岁了 | 我家猫今年三岁了 | 我的狗叫旺财
我最近在忙什么项目 | 最近在忙支付系统重构的项目 | 最近在看一本关于历史的书
我什么时候去医院复查 | 下周五要去医院复查膝盖 | 下周五公司组织团建
我喜欢喝什么茶 | 我喜欢喝普洱茶 | 我喜欢吃牛排
我太太做什么工作 | 我太太是一名中学老师 | 我太太喜欢养花
v1.2 要部署到哪个环境 | 把 v1.2 部署到测试环境 | 把会议纪要发给大家
我的邮箱地址是什么 | 我的工作邮箱是 li@example.com | 我的微信号是 lixiaoming
我每天几点到公司 | 我每天早上九点到公司 | 我每天晚上十点遛狗
我想去哪里旅游 | 我一直想去冰岛旅游看极光 | 我去年去了泰国
我的车停在哪 | 我的车停在地下二层B区 | 我的自行车坏了
我喜欢什么颜色 | 我最喜欢蓝色 | 我最喜欢吃饺子
数据库密码多久换一次 | 数据库密码每九十天轮换一次 | 数据库备份每天凌晨两点执行
我的家庭医生是谁 | 我的家庭医生是刘医生 | 我的健身教练姓刘
我租的房子在哪 | 我租的房子在朝阳区 | 我买的基金亏了
我喜欢早上还是晚上工作 | 我早上效率最高，喜欢上午工作 | 我晚上喜欢看球赛
我会说几种语言 | 我会说中文、英文和一点法语 | 我会游泳和滑雪
我的狗叫什么 | 我家狗狗叫旺财 | 我家猫咪很怕生
我的生日是哪天 | 我的生日是十月十二号 | 我十月要搬家
我抽烟吗 | 我已经戒烟三年了 | 我已经结婚三年了
这周末带孩子去哪 | 这周六带孩子去动物园 | 这周六要加班
我对什么药过敏 | 我对青霉素这种药过敏 | 我对这份工作很满意
我喜欢吃什么水果 | 我最爱吃的水果是芒果 | 我最爱看足球比赛
我用什么耳机 | 我用索尼的降噪耳机 | 我用苹果的笔记本
我家有几口人 | 我家一共四口人 | 我家住在四楼
我每月的生活费预算 | 我每个月的生活费控制在三千以内 | 我每个月去一次理发店
我的理想工作是什么 | 我希望以后的工作是当一名建筑师 | 我以后想养一只猫
团队用什么沟通工具 | 我们团队用飞书沟通 | 我们团队有八个人
代码放在哪个仓库 | 代码都在公司的 GitLab 仓库上 | 文档都在共享盘里
我的键盘是什么轴 | 我的机械键盘用的是茶轴 | 我的显示器是二十七寸
我喜欢在哪喝咖啡 | 我常去公司楼下的星巴克喝咖啡 | 我常去小区门口的菜市场
我女儿对什么过敏 | 我女儿对牛奶过敏 | 我女儿下个月过生日
我支持哪个球队 | 我是湖人队的球迷 | 我是学计算机的
我的车是什么颜色 | 我的车是黑色的 | 我的包是黑色的
我什么时候请假 | 我下周一到周三请假回老家 | 我下周一要去面试
我住几楼 | 我住在十八楼 | 我十八岁那年去了北京
我有孩子吗 | 我有一个儿子一个女儿 | 我有一个很好的朋友叫小李
我喜欢吃甜的吗 | 我不太爱吃甜食 | 我不太喜欢下雨天
我用什么记笔记 | 我用 Obsidian 记笔记 | 我用 Excel 做预算
我买了什么股票 | 我买了一些腾讯的股票 | 我买了一台新电脑
我的宠物生病了吗 | 我家的狗最近生病了，在宠物医院 | 我最近感冒了
我爸妈住在哪里 | 我爸妈住在老家长沙 | 我在长沙吃过臭豆腐
我喜欢什么花 | 我喜欢向日葵这种花 | 我喜欢周杰伦的歌
我跑过马拉松吗 | 我去年跑完了第一个全程马拉松 | 我去年考了驾照
我们公司在哪 | 我们公司在上海浦东张江 | 我们学校在上海松江
我一般怎么去上班 | 我每天骑电动车去上班 | 我每天中午吃食堂
我最怕什么 | 我最怕蛇 | 我最爱吃虾
我最近在玩什么游戏 | 我最近迷上了玩《原神》这个游戏 | 我最近开始学做饭
我的工资多少 | 我现在月薪两万，工资还行 | 我现在每天坐地铁
我的牙齿怎么了 | 我上周拔了一颗智齿，牙齿还疼 | 我上周去看了演唱会
我想要什么样的房子 | 我想要一个带院子的房子 | 我想要一辆电动车
我在哪儿健身 | 我在小区旁边的健身房锻炼身体 | 我在网上买菜
我会开车吗 | 我有驾照，但是很少开车 | 我有两个孩子
我对工作满意吗 | 我对现在的工作不太满意，想跳槽 | 我对猫毛过敏
小李是谁 | 小李是我大学室友，现在在广州 | 小王是我同事
登录页面的 bug 是谁修的 | 登录页面的 bug 是小张修的 | 登录页面的设计是小美做的
我最近睡得好吗 | 我最近失眠，经常睡不着 | 我最近胃口很好
我有什么爱好 | 我的爱好是摄影和徒步 | 我的专业是会计
我会做饭吗 | 我会做几道家常菜 | 我会说粤语
我家的地址是什么 | 我家住在海淀区中关村南大街5号 | 我公司在海淀区
我喜欢什么类型的电影 | 我喜欢看悬疑类型的电影 | 我喜欢读诗歌
我爸今年多大 | 我爸今年六十五岁 | 我爸喜欢下象棋
我们用的是哪个云服务 | 我们的服务都部署在阿里云上 | 我们的办公室在杭州
我什么时候开始工作的 | 我是二零一八年开始工作的 | 我是二零一八年结婚的
我需要每天吃药吗 | 我每天早上要吃一片降压药 | 我每天早上要喝咖啡
我明天要去北京开会 | 明天我得去北京参加一个会议 | 我明天要去超市买菜
我儿子考上了清华 | 我儿子被清华大学录取了 | 我儿子学会了骑自行车
我换了新工作 | 我最近跳槽到了一家新公司工作 | 我最近换了新手机
我把烟戒了 | 我已经不抽烟了 | 我已经不玩游戏了
我搬到上海了 | 我上个月从北京搬到了上海 | 我上个月去上海玩了一趟
我在准备考研 | 我正在复习准备考研究生 | 我正在准备婚礼
我的电脑坏了 | 我的笔记本电脑开不了机，坏了 | 我的电脑是去年买的
我妈妈住院了 | 我妈妈生病住进了医院 | 我妈妈喜欢跳广场舞
我想学游泳 | 我打算报一个游泳班 | 我想买一台相机
我每天跑步五公里 | 我坚持每天跑五公里 | 我每天通勤五公里
我们下个月结婚 | 我和女朋友打算下个月结婚办婚礼 | 我们下个月要交房租
会议改到了明天下午 | 原定的会议推迟到明天下午开 | 明天下午要去接孩子
这周的周报还没写 | 我还没有写本周的周报 | 这周的天气很冷
服务器磁盘快满了 | 线上服务器的磁盘空间快不够了 | 线上服务器的内存是64G
接口返回的 user_id 是空的 | 接口的 user_id 字段有时候返回空值 | user_id 是用户的唯一标识
我不喜欢开会 | 我很讨厌开各种会 | 我不喜欢吃香菜
我每年体检一次 | 我每年都会去做一次体检 | 我每年都去一次海边
我女儿在学钢琴 | 我女儿每周六去上钢琴课 | 我女儿每周六去奶奶家
后端是用什么语言写的 | 后端代码是用 Python 写的 | 前端用的是 React
我的航班号是多少 | 我坐 MU5101 航班，航班号记一下 | 我的座位号是 12A
我把密码改了 | 我刚刚修改了登录密码 | 我刚刚修改了简历
我要给客户回邮件 | 我得回复客户的邮件 | 我得去取快递
我最近压力很大 | 最近工作压力特别大 | 最近工作不太忙
我有高血压 | 医生说我血压偏高 | 医生说我需要多运动
这个季度的预算不够用了 | 本季度预算超支了 | 本季度招了三个新人
"""
EN_TRIPLES = """
Where do I live? | I live in Boston | I like coffee
What is my cat's name? | My cat is called Snowball | My car is white
Where do I work? | I work at a startup in Hangzhou | I went to college in Beijing
What am I allergic to? | I'm allergic to peanuts | I'm interested in history
How old is my daughter? | My daughter turned five this year | My car is five years old
What coffee do I like? | I drink black coffee without sugar | I drink green tea every morning
Which database is production? | The prod DB is db-prod-2 | The staging site is staging.example.com
Where am I travelling next week? | Next Wednesday I travel to Shanghai for work | The quarterly report is due next Wednesday
When is my wife's birthday? | My wife's birthday is March 8 | My son starts school in March
When is the team meeting? | Our team meeting moved to Tuesdays at 10am | I go to the gym on Tuesday evenings
Which editor do I use? | I write code in the vim editor | My phone is a Pixel
What's my blood type? | My blood type is O positive | My star sign is Libra
What pet do I have? | Our pet is a golden retriever | I keep a pot of basil on the balcony
What sport do I like most? | Badminton is my favourite sport | Blue is my favourite colour
What does my brother do? | My brother is a programmer in Shenzhen | My sister studies in Shenzhen
When do I go to bed? | I usually go to bed around 11pm | I get up at 7am to run
What food do I avoid? | I never eat cilantro | I never watch horror movies
What car do I drive? | I drive a Tesla Model 3 | I take the subway to work
What language am I learning? | I'm learning Japanese these days | I'm watching an American series these days
How is my father's health? | My father had heart surgery last month and is recovering | My dad loves fishing
What music do I like? | I love listening to jazz music | I love Sichuan hotpot
How much do I weigh? | I weigh 70 kg now | I am 175 cm tall
When is the company party? | The annual company party is on January 20 | The new office is in Wangjing
Which OS do I use? | My laptop runs Ubuntu 22.04 | My router is a Netgear
When is the project deadline? | The project must ship before the end of June | Lao Wang leads the project
Which university did I graduate from? | I graduated from Zhejiang University | I grew up in Zhejiang
Where does my son go to school? | My son is in second grade at the local primary school | My son likes playing football
What season do I like? | Autumn is my favourite season | Apples are my favourite fruit
How long is my commute to the office? | It takes 40 minutes to drive from home to the office | A new supermarket opened near my home
Am I on a diet? | I'm on a diet and skip carbs at dinner | I'm renovating my new apartment
What do I do on weekends? | On weekends I usually go hiking | I work overtime on weekdays
How much is my rent? | My rent is 5000 per month | I send my parents 2000 every month
What books do I like? | I enjoy science fiction books, especially Liu Cixin | I enjoy documentaries
Who is my manager? | My direct manager is Mr Zhang | My neighbour is a retired teacher
What instrument do I play? | I have played the piano for ten years | I can cook braised pork
Do I wear glasses? | I'm short-sighted and wear glasses | I never wear a watch
Do I prefer cats or dogs? | I prefer dogs to cats | I prefer tea
Which endpoint keeps timing out? | The order query endpoint often times out | The signup endpoint shipped yesterday
What is the server's IP? | The production server IP is 10.0.3.17 | The office wifi password is hello123
Which browser do I use? | I always use the Firefox browser | I read email in Outlook
Which days am I off? | I'm off on Wednesdays and Sundays | There's a team dinner on Wednesday night
What is my daughter's name? | My daughter is called Lily | My daughter loves drawing
What's my favourite movie? | My favourite movie is Interstellar | My favourite game is Zelda
Where was I born? | I was born in Chengdu | I only spent two days in Chengdu
Where is the next class reunion? | The next class reunion is at a restaurant by West Lake | The next checkup requires fasting
How much water do I drink? | I drink two litres of water a day | I walk ten thousand steps a day
Which allergy medicine do I take? | I take loratadine for my allergies | I drink ginger tea when I have a cold
What's my favourite restaurant? | My favourite restaurant is the noodle shop downstairs | My favourite city is Dali
What do I have on Monday? | Monday morning I demo the product to a client | Friday afternoon I go to the bank
Did I lose my bank card? | I lost my bank card last week and reported it | I deposited cash at the bank last week
Do I like spicy food? | I can eat really spicy food | I really like travelling
When does my passport expire? | My passport expires next May | I got my driving licence last year
How old is my cat? | My cat is three years old | My dog is called Max
What project am I busy with? | I'm busy refactoring the payment system | I'm reading a history book
When is my hospital follow-up? | Next Friday I have a knee follow-up at the hospital | Next Friday the company has a team outing
What tea do I like? | I like pu-erh tea | I like steak
What does my wife do? | My wife is a high school teacher | My wife likes gardening
Where should v1.2 be deployed? | Deploy v1.2 to staging | Send the meeting notes to everyone
What's my email address? | My work email is li@example.com | My WeChat id is lixiaoming
When do I get to the office? | I arrive at the office at 9am every day | I walk the dog at 10pm every day
Where do I want to travel? | I have always wanted to travel to Iceland to see the northern lights | Last year I went to Thailand
Where is my car parked? | My car is parked on level B2, zone B | My bike is broken
What is my favourite colour? | Blue is my favourite colour | Dumplings are my favourite food
How often is the database password rotated? | The database password rotates every 90 days | The database backup runs at 2am daily
Who is my family doctor? | My family doctor is Dr Liu | My personal trainer is called Liu
Where is my rented flat? | My rented flat is in Chaoyang district | My fund lost money
When do I work best? | I'm most productive in the morning and like to work before lunch | I watch football in the evening
Which languages do I speak? | I speak Chinese, English and a little French | I can swim and ski
What's my dog's name? | Our dog is called Max | Our cat is shy
When is my birthday? | My birthday is October 12 | I'm moving house in October
Do I smoke? | I quit smoking three years ago | I got married three years ago
Where am I taking the kids this weekend? | This Saturday I'm taking the kids to the zoo | This Saturday I have to work
Which drug am I allergic to? | I'm allergic to the drug penicillin | I'm happy with this job
What fruit do I like? | Mango is my favourite fruit | Football is my favourite sport to watch
Which headphones do I use? | I use Sony noise-cancelling headphones | I use an Apple laptop
How many people are in my family? | There are four people in my family | My family lives on the fourth floor
What's my monthly budget? | I keep my monthly living costs under 3000 | I get a haircut once a month
What is my dream job? | My dream job is to become an architect | One day I want to adopt a cat
Which chat tool does the team use? | Our team chats on Slack | Our team has eight people
Where is the code hosted? | All the code is hosted on the company GitLab | The docs are on the shared drive
What switches does my keyboard have? | My mechanical keyboard uses brown switches | My monitor is 27 inches
Where do I like to get coffee? | I often get coffee at the Starbucks downstairs | I often shop at the market by my building
What is my daughter allergic to? | My daughter is allergic to milk | My daughter's birthday is next month
Which team do I support? | I'm a Lakers fan and support them every season | I studied computer science
What colour is my car? | My car is black | My bag is black
When am I taking leave? | I'm taking leave Monday to Wednesday next week to visit my hometown | I have a job interview next Monday
Which floor do I live on? | I live on the 18th floor | I moved to Beijing when I was 18
Do I have children? | I have two children, a son and a daughter | I have a good friend called Li
Do I like sweets? | I don't really like sweets or desserts | I don't like rainy days
What do I take notes in? | I take notes in Obsidian | I do my budget in Excel
What stocks do I own? | I own some Tencent stock | I bought a new computer
Is my pet sick? | Our dog has been sick and is at the pet hospital | I've had a cold recently
Where do my parents live? | My parents live in my hometown, Changsha | I tried stinky tofu in Changsha
What flowers do I like? | Sunflowers are the flowers I love | I love Jay Chou's songs
Did I run a marathon? | Last year I ran my first full marathon | Last year I got my driving licence
Where is my company? | Our company is in Zhangjiang, Pudong | Our school is in Songjiang
How do I commute to work? | I ride an e-bike to work every day | I eat in the canteen every day
What am I most afraid of? | I'm terrified of snakes, they are my biggest fear | I absolutely love shrimp
What game am I playing? | I've been playing the game Genshin Impact lately | I've started learning to cook lately
What is my salary? | My salary is 20k a month now | I take the subway every day now
What happened to my tooth? | I had a wisdom tooth pulled last week | I went to a concert last week
What kind of house do I want? | I want a house with a garden | I want an electric car
Can I drive? | I have a driving licence but rarely drive | I have two kids
Am I happy at work? | I'm not happy with my current job and want to switch | I'm allergic to cat hair
Who is Li? | Li was my college roommate and now lives in Guangzhou | Wang is my colleague
Who fixed the login bug? | Zhang fixed the login page bug | Mei designed the login page
How have I been sleeping? | I have insomnia lately and can't sleep | My appetite is good lately
What are my hobbies? | My hobbies are photography and hiking | I majored in accounting
Can I cook? | I can cook a few home-style dishes | I can speak Cantonese
What's my home address? | My home is at 5 Zhongguancun South Street, Haidian | My company is in Haidian
What kind of films do I like? | I like mystery films | I like reading poetry
How old is my dad? | My dad is 65 years old this year | My dad likes playing chess
Which cloud provider do we use? | All our services are deployed on the AWS cloud | Our office is in Hangzhou
When did I start working? | I started working in 2018 | I got married in 2018
Do I take medication daily? | I take a blood pressure pill every morning | I drink coffee every morning
I'm flying to Beijing tomorrow for a meeting | Tomorrow I have to attend a meeting in Beijing | Tomorrow I need to buy groceries
My son got into MIT | MIT admitted my son | My son learned to ride a bike
I changed jobs | I recently moved to a new job at another company | I recently got a new phone
I quit smoking | I no longer smoke | I no longer play video games
I moved to Shanghai | Last month I moved from Beijing to Shanghai | Last month I visited Shanghai
I'm preparing for grad school exams | I'm studying for the graduate school entrance exam | I'm preparing for my wedding
My laptop broke | My laptop is broken and won't turn on | I bought my laptop last year
My mother is in hospital | My mother got sick and was admitted to hospital | My mom loves square dancing
I want to learn to swim | I plan to sign up for swimming lessons | I want to buy a camera
I run five kilometres every day | Every day I go for a five kilometre run | My commute is five kilometres
We're getting married next month | My girlfriend and I are getting married next month | Next month's rent is due
The meeting moved to tomorrow afternoon | The meeting was postponed to tomorrow afternoon | I have to pick up the kids tomorrow afternoon
I haven't written this week's report | This week's status report is still not written | The weather is cold this week
The server disk is almost full | Disk space on the production server is running out | The production server has 64 GB of memory
The API returns an empty user_id | The user_id field is sometimes empty in the API response | user_id uniquely identifies a user
I hate meetings | I really dislike all these meetings | I dislike cilantro
I get a checkup every year | Every year I have a full medical checkup | Every year I go to the beach
My daughter takes piano lessons | My daughter has piano lessons every Saturday | My daughter visits her grandma every Saturday
What language is the backend written in? | The backend is written in Python | The frontend uses React
What's my flight number? | My flight number is MU5101 | My seat is 12A
I changed my password | I just changed my login password | I just updated my resume
I need to reply to the client | I have to answer the client's email | I have to pick up a parcel
I've been under a lot of stress | Work has been very stressful lately | Work has been quiet lately
I have high blood pressure | The doctor says my blood pressure is high | The doctor says I should exercise more
We're over budget this quarter | This quarter's budget has been overspent | We hired three people this quarter
"""  # noqa: E501
TRIPLES = {"zh": ZH_TRIPLES, "en": EN_TRIPLES}
