"""Protected atoms: what two claims must agree on before they may be merged.

Subject, numbers with units, versions, dates and times, paths and URLs, negation, quotes and
names are found in a claim's text (``spans``: the scan, in linear time; ``words``: contractions,
negation cues, tagged words and names; ``patterns``: the regular expressions), compared and
scored (``analysis``: :func:`atoms_of`, :func:`same_fact`, :func:`similarity`). Dedup, maintenance's
convergence, import and recall's query understanding use them.
"""

from __future__ import annotations

from hlmem.lang.atoms.analysis import (
    SIMILARITY_THRESHOLD,
    Atoms,
    atoms_of,
    disagreements,
    entities_of,
    same_fact,
    similarity,
)
from hlmem.lang.atoms.patterns import SPEAKER_SUBJECTS
from hlmem.lang.atoms.spans import Span, SpanIndex, zh_number
from hlmem.lang.atoms.words import Entity

__all__ = [
    "SIMILARITY_THRESHOLD",
    "SPEAKER_SUBJECTS",
    "Atoms",
    "Entity",
    "Span",
    "SpanIndex",
    "atoms_of",
    "disagreements",
    "entities_of",
    "same_fact",
    "similarity",
    "zh_number",
]
