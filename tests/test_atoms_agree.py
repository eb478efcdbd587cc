"""``atoms.agree`` is ``not atoms.disagreements`` (the dedup stage's fast path relies on it).

Every labelled pair of ``atom_pairs`` (zh and en), each also reversed, with equal and different
subjects and polarities, and every text against every other of a sample: the boolean answer
must be exactly whether the reasons are empty.
"""

from __future__ import annotations

import itertools

from atom_pairs import MUST_MERGE, MUST_NOT_MERGE

from hlmem.lang.atoms import analysis as atoms

PAIRS = [(a, b) for a, b, _ in MUST_NOT_MERGE] + list(MUST_MERGE)
SUBJECTS = [("", ""), ("user", "用户"), ("Alice", "alice"), ("Alice", "Bob"), ("老王", "")]


def check(a_text: str, b_text: str, a_subject: str, b_subject: str, a_pol: int, b_pol: int) -> bool:
    a = atoms.atoms_of(a_text, subject=a_subject, polarity=a_pol)
    b = atoms.atoms_of(b_text, subject=b_subject, polarity=b_pol)
    agreed = atoms.agree(a, b)
    assert agreed == (not atoms.disagreements(a, b)), (a_text, b_text, a_subject, b_subject)
    assert agreed == atoms.agree(b, a)
    return agreed


def test_agree_is_no_disagreement_on_the_labelled_pairs() -> None:
    verdicts = []
    for (a, b), (sa, sb), (pa, pb) in itertools.product(PAIRS, SUBJECTS, [(1, 1), (1, -1)]):
        verdicts.append(check(a, b, sa, sb, pa, pb))
        check(b, a, sb, sa, pb, pa)
    assert any(verdicts) and not all(verdicts)  # both answers occur


def test_agree_is_no_disagreement_across_texts() -> None:
    texts = sorted({t for pair in PAIRS for t in pair})[::3]
    assert len(texts) > 40 and any("\u4e00" <= c <= "\u9fff" for t in texts for c in t)
    for a, b in itertools.combinations(texts, 2):
        check(a, b, "user", "user", 1, 1)


def test_same_fact_merges_exactly_when_atoms_agree_and_texts_are_alike() -> None:
    merged = []
    for a, b in PAIRS:
        merge, score, _ = atoms.same_fact(a, b)
        assert score == atoms.similarity(a, b)
        agreed = atoms.agree(atoms.atoms_of(a), atoms.atoms_of(b))
        assert merge == (agreed and score >= atoms.SIMILARITY_THRESHOLD), (a, b)
        merged.append(merge)
    assert any(merged) and not all(merged)
