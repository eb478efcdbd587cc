"""Secret detection and redaction: every family found, ordinary text left alone, idempotence.

Every secret below is fake and assembled at run time, so that no scanner flags the repository.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from secret_phrasings import LEAKS, SAFE

from hlmem.lang import (
    SECRET_KINDS,
    cn_id_valid,
    find_secrets,
    luhn_valid,
    redact,
    scrub,
    secret_kind,
)

ALNUM = "aB3dE5fG7hJ9kL1mN2pQ4rS6tU8vW0xY"
HEX40 = "4a7b9c2d1e8f3a6b5c4d7e9f0a1b2c3d4e5f6a7b"


def fake_cn_id(base17: str) -> str:
    """An 18-character ID with its check character, computed here (ISO 7064 MOD 11-2)."""
    weights = [2 ** (17 - i) % 11 for i in range(17)]
    total = sum(int(d) * w for d, w in zip(base17, weights, strict=True))
    return base17 + "10X98765432"[total % 11]


CN_ID = fake_cn_id("330106" + "19900307" + "123")

# (text before, the secret, text after, kind): only the middle part may go.
SECRETS = [
    ("my key is ", "sk-" + "proj-" + ALNUM + ALNUM[:16], " ok", "openai_key"),
    ("旧的 key：", "sk-" + ALNUM + ALNUM[:16], "，已作废", "openai_key"),
    ("", "sk-" + "ant-api03-" + ALNUM * 2, "", "anthropic_key"),
    ("AWS id ", "AKIA" + "Q7W3E5R9T1Y2U4I6", ".", "aws_access_key"),
    ("aws_secret_access_key = ", (ALNUM + "Zx9/Yw8+Vu7T")[:40], "\n", "aws_secret_key"),
    ("export GH=", "ghp_" + (ALNUM * 2)[:36], "", "github_token"),
    ("", "gho_" + (ALNUM * 2)[:36], " is the oauth one", "github_token"),
    ("令牌 ", "github_pat_" + ALNUM[:22] + "_" + ALNUM * 2, "", "github_token"),
    ("slack: ", "xoxb-" + "1234567890-1234567890123-" + ALNUM[:24], "", "slack_token"),
    ("maps ", "AIza" + (ALNUM * 2)[:35], " restricted", "google_api_key"),
    ("stripe ", "sk_" + "live_" + ALNUM[:24], "", "stripe_key"),
    ("api_key=", "k3y" + ALNUM[:13], "&x=1", "credential"),
    ('{"client_secret": "', "Zx9" + ALNUM[:20], '"}', "credential"),
    ("token: ", "7f3a9c2e4b1d8f6a", "", "credential"),
    ("我的 API 密钥是 ", "Xk29fPq8Lm3Nz7Rt5Vw1", "，别外传", "credential"),
    ("Authorization: Bearer ", ALNUM + ALNUM[:8], "", "bearer_token"),
    (
        "jwt ",
        "eyJ" + "hbGciOiJIUzI1NiJ9" + ".eyJ" + "zdWIiOiIxMjM0NTY3ODkwIn0." + ALNUM,
        " expired",
        "jwt",
    ),
    (
        "key:\n",
        "-----BEGIN " + "RSA PRIVATE KEY-----\nMIIE" + ALNUM + "\n-----END RSA PRIVATE KEY-----",
        "\nthanks",
        "private_key",
    ),
    ("我的密码是", "abc12345", "，别忘了", "password"),
    ("wifi密码：", "Hunter2!", "", "password"),
    ("口令为 ", "zx81-qq", "。", "password"),
    ("邮箱密码改成了", "Qwerty_2024", "", "password"),
    ("my password is ", "hunter2", ".", "password"),
    ("pwd: ", "s3cr3t", "", "password"),
    ("passcode: ", "9981", "", "password"),
    ('{"password": "', "Pa55word", '"}', "password"),
    ("the password for my gmail account is ", "Tr0ub4dor&3", " ok", "password"),
    ("DB_PASSWORD=", "x9Kq2mZ", "", "password"),
    ("银行卡PIN码是 ", "4321", "", "password"),
    ("clone https://alice:", "s3cretpw", "@github.com/x/y.git", "url_password"),
    ("redis://:", "r3d1spw", "@cache:6379/0", "url_password"),
    ("card ", "4111 1111 1111 1111", " exp 12/29", "card_number"),
    ("卡号", "5555-5555-5555-4444", "。", "card_number"),
    ("amex ", "3782 822463 10005", "", "card_number"),
    ("用这张卡", "6200000000000005", "付款", "card_number"),
    ("身份证号 ", CN_ID, " 谢谢", "cn_id_number"),
    ("deploy token ", HEX40, " (rotate monthly)", "high_entropy"),
    ("staging key ", "Xk29fPq8Lm3Nz7Rt5Vw1Yb6Hj4", "", "high_entropy"),
]


@pytest.mark.parametrize(("before", "secret", "after", "kind"), SECRETS)
def test_each_secret_family_is_found_and_redacted(
    before: str, secret: str, after: str, kind: str
) -> None:
    text = before + secret + after
    assert find_secrets(text) == [(len(before), len(before) + len(secret), kind)]
    assert redact(text) == f"{before}[REDACTED:{kind}]{after}"
    assert redact(redact(text)) == redact(text)
    assert kind in SECRET_KINDS


def test_several_secrets_in_one_text_keep_everything_between_them() -> None:
    key = "sk-" + ALNUM + ALNUM[:16]
    text = f"记住：key {key}，密码是abc12345，卡号 4111111111111111。其余照旧"
    assert redact(text) == (
        "记住：key [REDACTED:openai_key]，密码是[REDACTED:password]，"
        "卡号 [REDACTED:card_number]。其余照旧"
    )
    assert [k for _, _, k in find_secrets(text)] == ["openai_key", "password", "card_number"]


def test_overlapping_detectors_give_one_span_named_by_the_more_specific() -> None:
    key = "sk-" + ALNUM + ALNUM[:16]
    assert redact(f"api_key={key}") == "api_key=[REDACTED:openai_key]"
    jwt = "eyJ" + "hbGciOiJIUzI1NiJ9" + ".eyJ" + "zdWIiOiIxMjM0NTY3ODkwIn0." + ALNUM
    assert redact(f"Authorization: Bearer {jwt}") == "Authorization: Bearer [REDACTED:jwt]"


def test_secrets_glued_together_are_all_redacted() -> None:
    google = "AIza" + (ALNUM * 2)[:35]
    pem = "-----BEGIN " + "PRIVATE KEY-----\nMIIE" + ALNUM + "\n-----END PRIVATE KEY-----"
    once = redact(google + pem)
    assert once == "[REDACTED:google_api_key][REDACTED:private_key]"
    assert redact(once) == once


@pytest.mark.parametrize(
    "number",
    [
        "4111111111111111",  # Visa
        "5555555555554444",  # Mastercard
        "2223003122003222",  # Mastercard 2-series
        "378282246310005",  # Amex
        "6011111111111117",  # Discover
        "3530111333300000",  # JCB
        "6200000000000005",  # UnionPay
    ],
)
def test_luhn_valid_test_cards(number: str) -> None:
    assert luhn_valid(number)
    assert find_secrets(f"card {number} ok") == [(5, 5 + len(number), "card_number")]


@pytest.mark.parametrize("number", ["4111111111111112", "5555555555554445", "378282246310006"])
def test_luhn_invalid_numbers_are_not_cards(number: str) -> None:
    assert not luhn_valid(number)
    assert find_secrets(f"card {number}") == []


def test_chinese_id_checksum() -> None:
    assert cn_id_valid(CN_ID)
    assert cn_id_valid(CN_ID[:-1] + CN_ID[-1].lower())
    wrong = CN_ID[:-1] + ("0" if CN_ID[-1] != "0" else "1")
    assert not cn_id_valid(wrong)
    assert not cn_id_valid(CN_ID[:-1])
    assert find_secrets(f"身份证 {wrong}") == []


@pytest.mark.parametrize(
    "text",
    [
        "version 1.2.3 released; Python 3.11.7, 2.0.0-rc.1",
        "2024-05-01 12:30:45, 2024年5月1日, 05/01/2024",
        "call 13800138000 or +86 138 0013 8000 or (555) 123-4567 or 400-820-8820",
        "订单号 202405201234567890 已发货",
        "order #4111111111111111 shipped",  # Luhn-valid, but named as an order
        "IMEI 356938035643809, SKU 6011111111111117",
        "tracking 1Z999AA10123456784",
        "timestamp 1700000000000 ms",
        "ISBN 978-3-16-148410-0",
        f"commit {HEX40} fixed the bug",
        "merged 4a7b9c2 into main",
        "request 123e4567-e89b-12d3-a456-426614174000 failed",
        "see https://example.com/path?q=1&page=2 and http://localhost:8080/api",
        "mail me at alice@example.com",
        "price ¥12,999.00, $1,299.99, € 4.111,00",
        "my password manager is 1Password",
        "1Password is great",
        "密码错误",
        "密码是什么？忘了密码怎么办",
        "password is incorrect; the password is at least 12 characters",
        "reset your password: see the settings page",
        "max_tokens=4096, input tokens: 123456789",
        "primary key: user_id_12345",
        "the key is to practice daily; the secret is patience",
        "I use scikit-learn and sk-learn-plugin-for-something",
        "token_url=https://auth.example.com/token",
        "api_key=<your-api-key>, token: ${TOKEN}, password: ********",
        "monkey keyboard turkey, ping 8.8.8.8",
        "我主要用深色模式，最近眼睛不舒服，暂时换成浅色模式。",
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert find_secrets(text) == []
    assert redact(text) == text


def test_redaction_never_raises() -> None:
    for text in ["", "\ud800 password: abc123", "\x00" * 10, "密码是" * 5000, "4" * 10_000]:
        assert isinstance(redact(text), str)
    assert redact("İ password: abc12345 ok") == "İ password: [REDACTED:password] ok"


FRAGMENTS = [
    "密码是abc12345", "password: hunter22", "root pw ", "Tr0ub4dor&10", " is my wifi password",
    "支付密码 654321", "my login is alice / ", "验证码", "都是 ", "和QQ密码", "用户名 ", "pin ",
    "sk-" + ALNUM + ALNUM[:16], "4111 1111 1111 1111",
    CN_ID, "api_key=k3y" + ALNUM[:13], "https://u:pw123456@h", "token", "密钥", "好的", "，",
    " ", "\n", "v1.2.3", "13800138000", HEX40, "[REDACTED:x]", "deploy", "我喜欢深色模式",
]  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=12)), max_size=12))
def test_redaction_is_idempotent_and_spans_are_ordered(parts: list[str]) -> None:
    text = "".join(parts)
    spans = find_secrets(text)
    assert all(0 <= s < e <= len(text) for s, e, _ in spans)
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans))
    once = redact(text)
    assert redact(once) == once


# --- credentials said in words (hlmem.lang.credentials): the phrasings table
# -----------------------


@pytest.mark.parametrize(("text", "secrets"), LEAKS, ids=[t for t, _ in LEAKS])
def test_a_credential_is_found_whatever_the_phrasing(text: str, secrets: tuple[str, ...]) -> None:
    shown = redact(text)
    for secret in secrets:
        assert secret not in shown
    kinds = {kind for _, _, kind in find_secrets(text)}
    assert kinds <= {"password", "verification_code"} and kinds
    # only the secrets go: the text around them stays as it was
    rest = text
    for secret in secrets:
        rest = rest.replace(secret, "\x00")
    assert [p for p in rest.split("\x00")] == _between_markers(shown)


def _between_markers(shown: str) -> list[str]:
    import re

    return re.split(r"\[REDACTED:[a-z_]+\]", shown)


@pytest.mark.parametrize(("text", "value"), SAFE, ids=[t for t, _ in SAFE])
def test_talking_about_a_password_is_no_secret(text: str, value: str | None) -> None:
    assert find_secrets(text) == []
    assert redact(text) == text == scrub(text)


def test_a_login_pair_loses_its_password_and_keeps_its_user_name() -> None:
    assert redact("my login is alice / Tr0ub4dor&9") == "my login is alice / [REDACTED:password]"
    assert redact("登录账号 lisi / Lisi#8899") == "登录账号 lisi / [REDACTED:password]"
    assert redact("my login is alice") == "my login is alice"


def test_a_verification_code_has_its_own_kind() -> None:
    assert redact("验证码 482913") == "验证码 [REDACTED:verification_code]"
    assert secret_kind("your verification code is 482913") == "verification_code"
    assert secret_kind("[REDACTED:verification_code] was sent") == "verification_code"
    assert secret_kind("我喜欢喝咖啡") is None


def test_scrub_leaves_no_marker_for_an_index_to_match() -> None:
    text = "my wifi password is hunter2abc, the code is in the drawer"
    assert redact(text) == "my wifi password is [REDACTED:password], the code is in the drawer"
    assert scrub(text) == "my wifi password is  , the code is in the drawer"
    assert "REDACTED" not in scrub("[REDACTED:password] typed by hand")


def _calls(fn: Callable[[], object]) -> int:
    """Python and C function calls made by ``fn``: a count, not a clock."""
    n = 0

    def count(frame: object, event: str, arg: object) -> None:
        nonlocal n
        if event in ("call", "c_call"):
            n += 1

    sys.setprofile(count)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return n


@pytest.mark.parametrize(
    "unit",
    [
        "密码是", "pw:", "password ", "pin 1234 ", "Tr0ub4dor&1 is my password ", "密码我",
        "login alice/Tr0ub4dor&9 ", "verification code ", "account ", 'password "', "支付密码 ",
    ],
)  # fmt: skip
def test_redaction_work_grows_linearly_with_the_text(unit: str) -> None:
    # bench/redaction.py times the same inputs; here the calls are counted, which a slow
    # machine cannot change: ten times the text, at most about ten times the calls.
    small, large = ((unit * (n // len(unit) + 1))[:n] for n in (5_000, 50_000))
    ratio = _calls(lambda: redact(large)) / _calls(lambda: redact(small))
    assert ratio < 11.5
