"""The atom scan as it was before it was made linear: the oracle of ``test_atom_scan.py``.

Verbatim copies of ``hlmem.lang.atoms.spans.find_spans`` (with its ``_scan`` and ``overlaps``,
which compared each match with every span found before it: quadratic in a long text) and of
``hlmem.lang.atoms.words._english_entities`` (which copied the text before and after each name),
from the commit before the change. The canonical forms they call are unchanged and are read
from the package. Nothing here is used by hlmem itself.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from hlmem.lang import normalize
from hlmem.lang.atoms import Entity, Span
from hlmem.lang.atoms import patterns as atom_rules
from hlmem.lang.atoms import spans as atom_spans
from hlmem.lang.atoms import words as atom_words


def overlaps(spans: list[Span], start: int, end: int) -> bool:
    """Whether ``[start, end)`` overlaps one of ``spans``."""
    return any(s.start < end and start < s.end for s in spans)


def _scan(
    pattern: re.Pattern[str],
    text: str,
    spans: list[Span],
    family: str,
    canon_of: Callable[[re.Match[str]], str],
) -> None:
    for m in pattern.finditer(text):
        group = "x" if m.groupdict().get("x") else "x2" if m.groupdict().get("x2") else 0
        start, end = m.span(group)
        while start < end and text[start] == " ":
            start += 1
        while end > start and text[end - 1] == " ":
            end -= 1
        if start < end and not overlaps(spans, start, end):
            canon = canon_of(m)
            if canon:
                spans.append(Span(start, end, family, canon))


def find_spans(text: str) -> tuple[list[Span], str]:
    """Every atom span of ``text`` in order, and the text with the hiding spans blanked.

    A span hides later families' matches and is blanked for word and name extraction, except
    code identifiers and quotes, whose words still count as words and names.
    """
    spans: list[Span] = []
    _scan(atom_rules.RE_EMAIL, text, spans, "identifiers", lambda m: m.group(0).casefold())
    _scan(atom_rules.RE_URL, text, spans, "paths", atom_spans._canon_url)
    _scan(
        atom_rules.RE_HANDLE,
        text,
        spans,
        "identifiers",
        lambda m: m.group(0).rstrip(".").casefold(),
    )
    _scan(atom_rules.RE_DATE_ISO, text, spans, "dates", atom_spans._canon_date_iso)
    _scan(
        atom_rules.RE_DATE_US,
        text,
        spans,
        "dates",
        lambda m: "/".join(str(int(g)) for g in m.groups()),
    )
    _scan(atom_rules.RE_PATH, text, spans, "paths", atom_spans._canon_path)
    _scan(atom_rules.RE_IP, text, spans, "identifiers", lambda m: m.group(0))
    _scan(atom_rules.RE_DATE_ZH, text, spans, "dates", atom_spans._canon_date_zh)
    _scan(atom_rules.RE_DATE_EN, text, spans, "dates", atom_spans._canon_date_en)
    _scan(atom_rules.RE_WEEKDAY, text, spans, "weekdays", atom_spans._canon_weekday)
    _scan(atom_rules.RE_TIME, text, spans, "times", atom_spans._canon_time)
    _scan(atom_rules.RE_RELATIVE, text, spans, "dates", atom_spans._canon_relative)
    _scan(atom_rules.RE_POD, text, spans, "times", atom_spans._canon_pod)
    _scan(atom_rules.RE_VERSION, text, spans, "versions", atom_spans._canon_version)
    _scan(atom_rules.RE_NUMBER, text, spans, "numbers", atom_spans._canon_number)
    hiding = list(spans)
    chars = list(text)
    for s in hiding:
        chars[s.start : s.end] = " " * (s.end - s.start)
    for m in atom_rules.RE_IDENT.finditer(text):
        if not overlaps(hiding, m.start(), m.end()):
            spans.append(Span(m.start(), m.end(), "identifiers", m.group(0).casefold()))
    for m in atom_rules.RE_QUOTE.finditer(text):
        inner = normalize(next(g for g in m.groups() if g is not None))
        if inner and not overlaps(hiding, m.start() + 1, m.end() - 1):
            spans.append(Span(m.start(), m.end(), "quotes", inner))
    spans.sort()
    return spans, "".join(chars)


def _english_entities(masked: str) -> list[Entity]:
    """Runs of capitalised words; a sentence's first word is strong only with evidence."""
    out: list[Entity] = []
    caps = list(atom_rules.RE_CAP.finditer(masked))
    i = 0
    while i < len(caps):
        run = [caps[i]]
        while i + 1 < len(caps):
            between = masked[run[-1].end() : caps[i + 1].start()]
            if between != " " and between.strip().lower() not in atom_rules.NAME_CONNECTORS:
                break
            run.append(caps[i + 1])
            i += 1
        i += 1
        while run and run[0].group(0).lower() in atom_rules.STOP_EN:
            run.pop(0)  # "The Google team", "Mr Smith"
        if not run:
            continue
        start, end = run[0].start(), run[-1].end()
        name = masked[start:end]
        kind = atom_words._english_kind(name)
        before = masked[:start].rstrip()
        initial = not before or before[-1] in atom_rules.SENTENCE_STARTERS
        strong = not initial or len(run) > 1 or kind != "person" or _subject_like(masked[end:])
        out.append(Entity(start, name, kind, strong))
    return out


def _subject_like(after: str) -> bool:
    """What follows a capitalised first word: "Alice likes", "Bob's", "Carol is", "Dave 喜欢"."""
    if after.startswith(("'s", "’s")) or atom_rules.CJK_RUN.match(after.lstrip()):
        return True
    m = atom_rules.RE_NEXT_WORD.match(after)
    if m is None:
        return False
    word = m.group(1)
    if word in atom_rules.SUBJECT_VERBS:
        return True
    return len(word) > 3 and (word.endswith("ed") or (word.endswith("s") and word[-2] not in "su"))
