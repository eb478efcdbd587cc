from __future__ import annotations

from datetime import UTC, datetime

import pytest

from hlmem.messages import Role, WindowPiece, WindowText
from hlmem.rules import extract


def values(text: str, role: Role = Role.USER) -> list[str]:
    piece = WindowPiece(
        event_id="e", chunk_no=0, chunk_count=1, start_char=0, end_char=len(text),
        role=role, text=text, occurred_at=datetime(2026, 1, 1, tzinfo=UTC),
    )
    window = WindowText(window_id="w", namespace="n", session_id="s", pieces=(piece,))
    return [d.value for d in extract(window)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("记住：我的猫叫小白", ["我的猫叫小白"]),
        ("好的。记住一下，明天开会", ["明天开会"]),
        ("麻烦记住我住在杭州", ["我住在杭州"]),
        ("Oh, and remember that the prod DB is db-prod-2. Thanks!", ["the prod DB is db-prod-2"]),
        ("Can you remember that I like tea?", ["I like tea"]),
        ("ok. remember: deploy on friday", ["deploy on friday"]),
    ],
)
def test_requests_to_remember_become_claims(text: str, expected: list[str]) -> None:
    assert values(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "我记住了，谢谢",
        "nothing to remember here, just chatting",
        "I can't remember the name",
        "do you remember me?",
    ],
)
def test_the_word_alone_is_not_a_request(text: str) -> None:
    assert values(text) == []


def test_only_the_users_own_words_count() -> None:
    assert values("Remember that I can only see this chat.", Role.ASSISTANT) == []
    assert values("记住：这是工具输出", Role.TOOL) == []
