"""The keys that place a claim: its slot, its value, its content hash, its tombstone key.

A slot is (namespace, subject, predicate). The speaker is one subject however it is written
("user", "用户", "我", "I"). ``claim_hash`` is what the dedup funnel's first step compares: two
drafts with the same subject, predicate, value, polarity and qualifiers (after width, case and
space folding) say the same thing.
"""

from __future__ import annotations

from hlmem.lang import content_hash, derived_id, normalize
from hlmem.messages import ClaimDraft

SPEAKER = "user"
_SPEAKER_NAMES = frozenset({"user", "用户", "我", "i", "me", "the user", "speaker"})


def subject_key(subject: str) -> str:
    """The subject as slots compare it: the speaker's many names fold to ``user``."""
    s = normalize(subject)
    return SPEAKER if s in _SPEAKER_NAMES else s


def slot_key(namespace: str, subject: str, predicate: str) -> str:
    return derived_id("slot", namespace, subject_key(subject), normalize(predicate))


def value_key(value: str) -> str:
    return content_hash(value)


def claim_hash(draft: ClaimDraft) -> str:
    quals = "\x1e".join(sorted(normalize(q) for q in draft.qualifiers))
    return content_hash(
        "\x1f".join(
            (subject_key(draft.subject), draft.predicate, draft.value, str(draft.polarity), quals)
        )
    )


def tombstone_key(namespace: str, draft: ClaimDraft) -> str:
    """The key a forgotten claim's slot tombstone holds (kind ``slot``): no content, a hash."""
    return f"{namespace}:{claim_hash(draft)}"
