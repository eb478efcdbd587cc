"""What a claim may become, shared by several layers.

The admission gate (``gate``: source provenance, the worth-extracting check, the per-claim gate
and the redacted draft), the keys that place a claim (``slots``), activation and its decay
(``activation``), the forget cascade and its tombstones (``forget``, with the relevance floor
of a query forget in ``forget_match``), and the maintenance task that takes secrets out of what
an older version derived (``secret_scan``).

Its names are imported on first use (PEP 562): the CPU helper child (``python -m
hlmem.pipeline.offload``) imports the gate and must not load the forget cascade, whose store it
never uses.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hlmem.claims.activation import boost_sync
    from hlmem.claims.admission_rules import (
        DEFAULT_UNTRUSTED_ORIGINS,
        DEFAULT_UNTRUSTED_SESSION_KINDS,
        GATE_PASSED,
        MODES,
        Decision,
        SourcePolicy,
        claim_secret,
        gate,
        redacted_draft,
        source_decision,
        untrusted_rule,
        window_worth_extracting,
        worth_extracting,
    )
    from hlmem.claims.forgetting import (
        RELINK_REASON,
        SESSION_SEP,
        Blocked,
        ForgetBy,
        ForgetPlan,
        ForgetResult,
        apply_forget,
        blocked,
        blocked_reason,
        forget,
    )
    from hlmem.claims.secret_scan import state_name
    from hlmem.claims.slots import (
        SPEAKER,
        claim_hash,
        slot_key,
        subject_key,
        tombstone_key,
        value_key,
    )

#: public name -> the module of this package that defines it
_LAZY = {
    "boost_sync": "activation",
    "DEFAULT_UNTRUSTED_ORIGINS": "admission_rules",
    "DEFAULT_UNTRUSTED_SESSION_KINDS": "admission_rules",
    "Decision": "admission_rules",
    "GATE_PASSED": "admission_rules",
    "MODES": "admission_rules",
    "SourcePolicy": "admission_rules",
    "claim_secret": "admission_rules",
    "gate": "admission_rules",
    "redacted_draft": "admission_rules",
    "source_decision": "admission_rules",
    "untrusted_rule": "admission_rules",
    "window_worth_extracting": "admission_rules",
    "worth_extracting": "admission_rules",
    "Blocked": "forgetting",
    "ForgetBy": "forgetting",
    "ForgetPlan": "forgetting",
    "ForgetResult": "forgetting",
    "RELINK_REASON": "forgetting",
    "SESSION_SEP": "forgetting",
    "apply_forget": "forgetting",
    "blocked": "forgetting",
    "blocked_reason": "forgetting",
    "forget": "forgetting",
    "state_name": "secret_scan",
    "SPEAKER": "slots",
    "claim_hash": "slots",
    "slot_key": "slots",
    "subject_key": "slots",
    "tombstone_key": "slots",
    "value_key": "slots",
}

__all__ = [
    "DEFAULT_UNTRUSTED_ORIGINS",
    "DEFAULT_UNTRUSTED_SESSION_KINDS",
    "GATE_PASSED",
    "MODES",
    "RELINK_REASON",
    "SESSION_SEP",
    "SPEAKER",
    "Blocked",
    "Decision",
    "ForgetBy",
    "ForgetPlan",
    "ForgetResult",
    "SourcePolicy",
    "apply_forget",
    "blocked",
    "blocked_reason",
    "boost_sync",
    "claim_hash",
    "claim_secret",
    "forget",
    "gate",
    "redacted_draft",
    "slot_key",
    "source_decision",
    "state_name",
    "subject_key",
    "tombstone_key",
    "untrusted_rule",
    "value_key",
    "window_worth_extracting",
    "worth_extracting",
]


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    globals()[name] = value
    return value
