"""The local embedder: shape, determinism across processes, and similarity that means something."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys

import numpy as np
import pytest

from hlmem.embedding import DEFAULT_DIM, MODEL_ID, LocalEmbedder, cosine, model_version

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


def test_equal_up_to_width_case_and_spacing(embedder: LocalEmbedder) -> None:
    a, b = embedder.embed(["Deploy  V1.2 to Staging", "deploy v1.2 to staging"])
    assert np.array_equal(a, b)
    a, b = embedder.embed(["ＡＢＣ１２３ 记住", "abc123 记住"])
    assert np.array_equal(a, b)


@pytest.mark.parametrize("pairs", [ZH_PAIRS, EN_PAIRS], ids=["zh", "en"])
def test_paraphrases_score_higher_than_unrelated_texts(
    embedder: LocalEmbedder, pairs: list[tuple[str, str]]
) -> None:
    claims = embedder.embed([a for a, _ in pairs])
    questions = embedder.embed([b for _, b in pairs])
    scores = questions @ claims.T
    for i, (claim, question) in enumerate(pairs):
        others = np.delete(scores[i], i)
        assert scores[i, i] > others.max(), (question, claim, scores[i].round(2))
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
from hlmem.embedding import LocalEmbedder
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
