"""Time expressions in Chinese and English: found, merged and resolved against a reference.

``words`` holds the word tables and patterns, ``calendar`` what a match means (calendar
arithmetic, one handler per kind), ``parse`` the scan, :func:`find_all` and :func:`resolve`.
"""

from __future__ import annotations

from hlmem.lang.timeexpr.calendar import Prefer
from hlmem.lang.timeexpr.parse import TimeRef, find_all, resolve
from hlmem.lang.timeexpr.words import cn_number, trie_pattern

__all__ = [
    "Prefer",
    "TimeRef",
    "cn_number",
    "find_all",
    "resolve",
    "trie_pattern",
]
