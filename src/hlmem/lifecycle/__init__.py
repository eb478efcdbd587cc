"""Changing one's mind and showing why: corrections and explanations.

A user's correction of a claim (``correct``) and ``hlmem explain``'s view of a claim: clocks,
evidence, admission, merges, the supersession chain and model calls (``explain``).
"""

from __future__ import annotations

from hlmem.lifecycle.correct import Correction, correction_draft, event_fields, load_target, submit
from hlmem.lifecycle.explain import ClaimExplanation, explain_claim, render

__all__ = [
    "ClaimExplanation",
    "Correction",
    "correction_draft",
    "event_fields",
    "explain_claim",
    "load_target",
    "render",
    "submit",
]
