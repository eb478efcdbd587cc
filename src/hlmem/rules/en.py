"""The English rules: one method per rule family, each gated by the words it needs.

Identity, work and home ("my name is", "I work at", "I live in"), moves and changes ("moved
to", "switched to"), preferences and habits ("I prefer", "I don't drink coffee"; negation is
polarity, never another predicate), personal facts (age, allergies, pets, skills, the reply
language) and standing instructions ("from now on"). Rules read ``Sentence.norm`` (straight
apostrophes) and gates read ``Sentence.low``. Plans with a date are in ``plans``; the helpers
all rule families share are in ``base``.
"""

from __future__ import annotations

import re

from hlmem.lang import Lexicon
from hlmem.rules.base import EN_TEAM, RuleSet, RuleTable, alternation
from hlmem.rules.sentence import Hit, Sentence, marks_start
from hlmem.rules.values import EN_TRAIL, clean_en

_E = r"(?:[^,;!?\n.]|\.(?!\s|$))"  # a character inside one English clause
# Pattern fragments: adverbs between "I" and the verb, a negation, the speaker.
_EN_ADV = (
    r"(?:(?:really|also|still|now|currently|usually|mostly|mainly|generally|normally|typically"
    r"|always|often|only|just|actually|definitely|totally|absolutely|kind of|kinda|sort of"
    r"|pretty much|primarily|basically|personally|honestly|even|all|especially|genuinely|do"
    r"|truly|already|mostly|simply|strongly|much|much rather|rather|by far)\s+)*"
)
_EN_NEG = r"(?P<neg>(?:don't|dont|do not|no longer|never|can't|cannot|can not)\s+)"
_EN_I = r"(?:(?<![\w'])[Ii])"

_EN_BAD_LEAD = re.compile(
    r"^(?:with|for|to|at|in|on|by|from|about|it\b|this\b|that\b|your\b|you\b|a bit\b|them\b"
    r"|how\b|the way\b|way\b|when\b|what\b|is\b|are\b|was\b|being\b|the thought\b|thought\b"
    r"|my\b|our\b|his\b|her\b|their\b|like\b|so\b|very\b|pretty\b|quite\b|not\b|too\b"
    # reactions to a suggestion: "I like the idea of ...", "I like the sound of ..."
    r"|idea\b|ideas\b|sound of|suggestion|reminder|recommendation|tips?\b|approach|options?\b"
    r"|look of|concept|along\b|around\b|through\b|its\b)",
    re.I,
)
_EN_USE_CUT = re.compile(
    r"\s+(?:to|for|when|at|in order to|as|on|with|in|because|since|and|but|so|that|which|who)\s.*$",
    re.I,
)
_EN_PRONOUN = re.compile(r"\b(?:them|it|him|her|you|these|those|there)\b", re.I)

_EN_NOT_BUT = re.compile(
    rf"\bnot\s+(?P<old>{_E}{{1,40}}?)\s*,?\s+but\s+(?P<new>{_E}{{1,40}})", re.I
)
_EN_NEW_NOT_OLD = re.compile(
    r"(?:\b(?:it's|it is|that's|that is|i meant|i mean|actually|sorry)[,\s]+|^)"
    rf"(?P<new>[\w' -]{{1,40}}?)\s*,\s*not\s+(?P<old>{_E}{{1,40}})",
    re.I,
)
_EN_NAME = re.compile(
    r"\b(?i:my\s+name(?:'s|\s+is))\s+(?P<a>[A-Za-z][\w'-]*(?:\s+[A-Z][\w'-]*){0,2})"
    r"|(?<![\w'])(?i:i)(?:'m|\s+am)\s+(?i:called)\s+(?P<b>[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*){0,2})"
    r"|(?:^|[,;]\s*|\b(?i:please|just|you can|can)\s+)(?i:call me)\s+(?P<c>[A-Z][\w'-]*)"
    r"|(?<![\w'])(?i:i)\s+(?i:go by)\s+(?P<d>[A-Z][\w'-]*)"
    r"|^(?i:hi|hello|hey)[,!]?\s+(?i:i)(?:'m|\s+am)\s+(?P<e>[A-Z][a-z]+)\s*(?=[,.!]|$)"
)
_EN_NOT_NAME = frozenset({"not", "sorry", "fine", "good", "back", "here", "ready", "done", "just"})
_EN_FAVORITE = re.compile(
    rf"\bmy\s+(?:all[- ]time\s+)?favou?rite\s+(?P<a>[a-z][a-z ]{{1,25}}?)\s+(?:is|are|'s)\s+"
    rf"(?P<neg>not\s+)?(?P<x>{_E}+)",
    re.I,
)
_EN_ATTRIBUTE = re.compile(
    rf"\bmy\s+(?P<a>[a-z][a-z -]{{1,25}}?)(?P<is>\s+is|'s)\s+(?P<neg>not\s+)?(?P<x>{_E}+)",
    re.I,
)
_NAMED_VALUE = re.compile(r"[A-Z0-9]|\S*@")
_EN_MOVE = re.compile(
    rf"\b(?P<v>moved|relocated|moving|relocating|move|relocate)\s+(?:back\s+|over\s+|out\s+"
    rf"|away\s+)?to\s+(?P<x>{_E}+)",
    re.I,
)
_EN_JOIN = re.compile(
    rf"{_EN_I}(?:'ve|\s+have)?\s+(?:just\s+|recently\s+|finally\s+)?(?P<v>joined|started at"
    r"|started working at|started working for|got a job at|got a job with|accepted an offer"
    rf" from|accepted a job at)\s+(?P<x>{_E}+)",
    re.I,
)
_EN_SET = re.compile(
    r"\b(?:changed|switched|set|changing|switching|setting|turned)\s+(?:the|my)\s+"
    rf"(?P<attr>[a-z][a-z ]{{1,20}}?)\s+(?:to|into)\s+(?P<x>{_E}+)",
    re.I,
)
_EN_CHANGE = re.compile(
    r"\b(?:switched back|switching back|changed back|switched|switching|switch|changed|changing"
    r"|change|migrated|migrating|migrate|moved over"
    rf"|moving over|gone over|went over)\s+(?:over\s+|back\s+)?to\s+(?P<x>{_E}+)",
    re.I,
)
_EN_START_USING = re.compile(
    rf"\b(?:started|start|starting|began|begun|begin)\s+(?:using|to use)\s+(?P<x>{_E}+)", re.I
)
_EN_WORK = re.compile(
    rf"{_EN_I}(?:'m|\s+am|'ve\s+been|\s+have\s+been)?\s+{_EN_ADV}(?:work|working|employed"
    rf"|interning|intern)\s+(?P<p>at|for|in)\s+(?P<x>{_E}+)",
    re.I,
)
_EN_JOB_END = r"\s*(?=$|[,.;!?]|\s+(?:and|but|so|who|which|since|now|these days|here)\b)"
_EN_JOB = re.compile(
    rf"{_EN_I}(?:'m|\s+am)\s+{_EN_ADV}(?P<neg>not\s+)?(?:a|an)\s+(?P<x>[a-z][\w -]{{1,40}}?)"
    rf"(?:\s+(?P<p>at|for|in|with)\s+(?P<org>{_E}+?))?{_EN_JOB_END}",
    re.I,
)
_EN_WORK_AS = re.compile(
    rf"{_EN_I}\s+{_EN_ADV}work(?:ing)?\s+as\s+(?:a\s+|an\s+)?(?P<x>[a-z][\w -]{{1,40}}?)"
    rf"(?:\s+(?P<p>at|for|in|with)\s+(?P<org>{_E}+?))?{_EN_JOB_END}",
    re.I,
)
_EN_TEAM_RULE = re.compile(
    rf"{_EN_I}(?:'m|\s+am)\s+{_EN_ADV}(?:on|in|part of|with)\s+(?:the\s+)?(?P<x>[\w -]{{1,30}}?"
    r"\s+(?:team|department|group|squad))\b",
    re.I,
)
_EN_LIVE = re.compile(
    rf"{_EN_I}(?:'m|\s+am|'ve\s+been|\s+have\s+been)?\s+{_EN_ADV}(?:live|living|reside|residing"
    rf"|based|settled)\s+(?:in|out of)\s+(?P<x>{_E}+)",
    re.I,
)
_EN_IN_PLACE = re.compile(
    rf"{_EN_I}(?:'m|\s+am)\s+(?:currently\s+|now\s+|still\s+)?in\s+(?P<x>[A-Z][\w .'-]{{1,30}}?)"
    r"(?=\s*(?:[,.;!]|$))"
)
_PROPER = re.compile(r"^[A-Z][\w'.-]*(?:\s+[A-Z][\w'.-]*){0,3}$")
_EN_I_AM = re.compile(
    rf"{_EN_I}(?:'m|\s+am)\s+{_EN_ADV}(?P<neg>not\s+)?(?:an?\s+)?(?P<x>[a-z][\w-]*(?:\s+[a-z][\w-]*)?)"
    r"(?=\s*(?:[,.;!]|$))",
    re.I,
)
_EN_ALLERGY = re.compile(
    rf"{_EN_I}(?:'m|\s+am)\s+{_EN_ADV}(?P<neg>not\s+)?(?:very\s+|severely\s+|mildly\s+)?"
    rf"allergic\s+to\s+(?P<x>{_E}+)|{_EN_I}\s+have\s+(?:a|an)\s+(?:severe\s+|mild\s+)?"
    r"(?P<y>[\w -]{2,30}?)\s+allergy",
    re.I,
)
_EN_USING = re.compile(rf"{_EN_I}(?:'m|\s+am)\s+{_EN_ADV}(?P<v>using)\s+(?P<x>{_E}+)", re.I)
_EN_FROM = re.compile(
    rf"{_EN_I}(?:'m|\s+am)\s+(?:originally\s+|actually\s+)?from\s+(?P<x>{_E}+)"
    rf"|{_EN_I}\s+(?:was\s+born|grew\s+up|was\s+raised)\s+in\s+(?P<x2>{_E}+)",
    re.I,
)
_EN_AGE = re.compile(
    r"(?<![\w'])[Ii](?:'m|\s+am)\s+(?P<n>\d{1,3})(?:\s+years?\s+old|\s*(?:yo|y/o|yrs old)\b"
    r"|(?=\s*(?:now|this year)?\s*(?:[.,!;]|$)))|(?<![\w'])[Ii]\s+(?:just\s+)?turned\s+"
    r"(?P<n2>\d{1,3})\b"
)
_EN_PREFERENCE = re.compile(
    rf"{_EN_I}\s+{_EN_ADV}(?:{_EN_NEG}{_EN_ADV})?(?P<v>like|love|enjoy|adore|prefer|hate|dislike"
    rf"|detest|loathe|can't stand|cannot stand|can't bear)\s+(?P<x>{_E}+)",
    re.I,
)
_EN_FAN = re.compile(
    rf"{_EN_I}(?:'m|\s+am)\s+{_EN_ADV}(?P<neg>not\s+)?{_EN_ADV}(?:into|(?:a\s+)?(?:big\s+|huge\s+"
    rf"|massive\s+)?fan\s+of)\s+(?P<x>{_E}+)",
    re.I,
)
# "what I read", "as I like": the speaker inside a relative clause.
_EN_RELATIVE = re.compile(
    r"\b(?:what|that|which|who|whom|where|when|how|why|as|if|whether|than|because|whatever"
    r"|how much|how many)\s*$",
    re.I,
)
_EN_DISLIKE = frozenset(
    {"hate", "dislike", "detest", "loathe", "can't stand", "cannot stand", "can't bear"}
)
_EN_DONT_AGAIN = re.compile(
    rf"(?:^|\bplease\s+)(?P<neg>don't|do not|never)\s+(?P<x>{_E}+?)\s+(?:again|anymore|any more"
    r"|from now on|in the future)\b",
    re.I,
)
_EN_STANDING = re.compile(
    r"\b(?:from now on|in the future|going forward)\s*,?\s*(?:please\s+)?"
    rf"(?P<neg>(?:don't|do not|never|stop)\s+)?(?P<x>{_E}{{3,}})",
    re.I,
)
_EN_CAN = re.compile(
    rf"{_EN_I}\s+{_EN_ADV}(?:can|(?P<neg>can't|cannot|can not))\s+(?:also\s+)?(?P<v>speak|play"
    rf"|cook|swim|drive|code|program|sing|dance|ski|snowboard|surf|paint|draw|knit|sew)\b\s*"
    rf"(?P<x>{_E}*)",
    re.I,
)
_EN_GOOD_AT = re.compile(
    rf"{_EN_I}(?:'m|\s+am)\s+{_EN_ADV}(?P<neg>not\s+)?{_EN_ADV}(?P<v>good|great|skilled|proficient"
    rf"|fluent|experienced|an expert|expert|decent)\s+(?:at|in|with)\s+(?P<x>{_E}+)",
    re.I,
)
_EN_KNOW_HOW = re.compile(rf"{_EN_I}\s+{_EN_ADV}(?P<neg>)know\s+how\s+to\s+(?P<x>{_E}+)", re.I)


class EnRules(RuleSet):
    """The English rules over one lexicon, as a table in priority order (``rules``)."""

    def __init__(self, lexicon: Lexicon) -> None:
        super().__init__(lexicon)
        en_verbs = alternation(lexicon.habit_verbs("en"))
        gerunds = alternation(lexicon.gerunds())
        langs = alternation(dict.fromkeys(lexicon.values_of("reply_language"), ""))
        animals = alternation(lexicon.animals)
        self._habit_re = re.compile(
            rf"{_EN_I}\s+{_EN_ADV}(?:{_EN_NEG}{_EN_ADV})?(?P<v>{en_verbs})\s+(?P<x>{_E}+)", re.I
        )
        self._habit_change_re = re.compile(
            rf"{_EN_I}(?:'ve|\s+have)?\s+(?:just\s+|recently\s+|finally\s+)?(?P<chg>stopped|quit"
            rf"|started|begun|began|gave up|given up)\s+(?P<v>{gerunds})\s+(?P<x>{_E}+)",
            re.I,
        )
        self._reply_re = re.compile(
            r"(?P<neg>\b(?:don't|do not|never|stop)\s+)?\b(?:reply|replying|respond|responding"
            r"|answer|answering|talk|talking|write|writing|speak|speaking|communicate|chat)\s+"
            rf"(?:to me\s+|with me\s+)?in\s+(?P<x>{langs})\b",
            re.I,
        )
        self._pet_re = re.compile(
            rf"{_EN_I}\s+(?:also\s+)?(?:have|own|got|adopted)\s+(?:a|an|one|two|three|four|\d+)\s+"
            rf"(?:little\s+|new\s+|pet\s+)?(?P<x>{animals})(?:e?s)?\b(?:\s*,?\s*(?:named|called)\s+"
            r"(?P<n>[A-Z][a-z]+))?(?=\s*(?:[,.;!?]|$)|\s+(?:and|who|that|which|at|in|from|since|for"
            r"|too|as well)\b)",
            re.I,
        )
        # Each rule with the words it cannot match without (a substring test is much cheaper
        # than a regex scan), matched on the lowercase sentence. The extractor appends the plan
        # rule.
        habit_gate = (*lexicon.habit_verbs("en"), *lexicon.gerunds(), "using")
        # fmt: off
        self.rules: RuleTable = (
            (self._correction, ("not ",)),
            (self._name, ("name", "call", "go by", "hi", "hello", "hey")),
            (self._attribute, ("my ",)),
            (self._move, ("mov", "reloc", "joined", "started", "got a job", "accepted")),
            (self._change, ("switch", "chang", "migrat", "back to", "over to", "start",
                            "began", "begun", "begin", "set ", "setting", "turned")),
            (self._work, ("work", "intern", "employ", "i'm a", "i am a", "team",
                          "department", "group", "squad")),
            (self._live, ("live", "living", "resid", "based", "settled", "i'm in", "i am in")),
            (self._identity, ("from", "born", "grew up", "raised", "i'm", "i am")),
            (self._personal, ("allerg", "have", "own", "got", "adopted")),
            (self._age, ("old", "yo", "y/o", "yrs", "turned", "i'm", "i am")),
            (self._reply_language, (" in ",)),
            (self._preference, ("like", "love", "enjoy", "adore", "prefer", "hate", "dislike",
                                "detest", "loathe", "stand", "bear", "into", "fan")),
            (self._dont, ("don't", "do not", "never", "from now on", "in the future",
                          "going forward")),
            (self._skill, ("can", "good", "great", "skilled", "proficient", "fluent",
                           "experienced", "expert", "decent", "know how")),
            (self._habit, habit_gate),
        )
        # fmt: on

    def _correction(self, sent: Sentence) -> list[Hit]:
        out = []
        for pattern in (_EN_NOT_BUT, _EN_NEW_NOT_OLD):
            for m in pattern.finditer(sent.norm):
                old, new = clean_en(m["old"]), clean_en(m["new"])
                if len(new.split()) > 4 or len(old.split()) > 4:
                    continue
                predicate = self._correction_slot(sent, sent.norm[: m.start()], old, new)
                if predicate and new and new.lower() != old.lower():
                    value = self._value(new, predicate)
                    out.append(Hit(predicate, value, m.start(), confidence=0.85))
        return out

    def _name(self, sent: Sentence) -> list[Hit]:
        m = _EN_NAME.search(sent.norm)
        if m is None:
            return []
        name = next(g for g in m.groups() if g)
        if name.lower() in _EN_NOT_NAME:
            return []
        return [Hit("name", name, m.start(), confidence=0.9)]

    def _attribute(self, sent: Sentence) -> list[Hit]:
        out = []
        for m in _EN_FAVORITE.finditer(sent.norm):
            predicate = self.lexicon.favorite_predicate(m["a"]) or "likes"
            out.append(
                Hit(predicate, clean_en(m["x"]), m.start(), -1 if m["neg"] else 1, confidence=0.85)
            )
        for m in _EN_ATTRIBUTE.finditer(sent.norm):
            attribute = self.lexicon.attribute_predicate(m["a"])
            if attribute is None or m["a"].lower().startswith("favo"):
                continue
            if m["is"] == "'s" and not _NAMED_VALUE.match(m["x"]):
                continue  # "my team's needs": a possessive, not "my team is"
            value = EN_TRAIL.sub("", m["x"].strip()).strip(" .!,")
            attribute, value = self._attribute_value(attribute, value)
            out.append(Hit(attribute, value, m.start(), -1 if m["neg"] else 1, confidence=0.85))
        return out

    def _move(self, sent: Sentence) -> list[Hit]:
        out = []
        for m in _EN_MOVE.finditer(sent.norm):
            lo, _ = sent.clause(m.start())
            if not self._subject_ok(sent, lo, m.start()):
                continue
            value = clean_en(self._cut_time(sent, m.start("x"), m["x"]))
            place = self.lexicon.place(value)
            if place is not None:
                hits = [Hit("location", place, m.start(), confidence=0.85)]
            elif EN_TEAM.search(value):
                hits = [Hit("team", value, m.start(), confidence=0.8)]
            else:
                continue
            out.extend(self._changed(sent, m.start(), hits))
        for m in _EN_JOIN.finditer(sent.norm):
            value = clean_en(self._cut_time(sent, m.start("x"), m["x"]))
            if m["v"].lower() == "joined" and not (_PROPER.match(value) or value.endswith(" team")):
                continue  # "joined a gym", "joined a writers group": not where one works
            out.extend(self._changed(sent, m.start(), self._org_hits(sent, m.start(), value)))
        return out

    def _change(self, sent: Sentence) -> list[Hit]:
        out = []
        for pattern in (_EN_SET, _EN_CHANGE, _EN_START_USING):
            for m in pattern.finditer(sent.norm):
                lo, _ = sent.clause(m.start())
                if not self._subject_ok(sent, lo, m.start()):
                    continue
                value = _EN_USE_CUT.sub("", self._cut_time(sent, m.start("x"), m["x"]))
                value = clean_en(value)
                owner = m["attr"] if pattern is _EN_SET else None
                predicate = self._change_slot(owner, value)
                if predicate is None:
                    continue
                hit = Hit(predicate, self._value(value, predicate), m.start(), confidence=0.8)
                out.extend(self._changed(sent, m.start(), [hit]))
        return out

    def _work(self, sent: Sentence) -> list[Hit]:
        lex = self.lexicon
        out = []
        for m in _EN_WORK.finditer(sent.norm):
            raw, _, title = self._cut_time(sent, m.start("x"), m["x"]).partition(" as ")
            title = clean_en(title)
            if title and lex.is_occupation(title):  # "I work for Microsoft as a data scientist"
                out.append(Hit("occupation", title.lower(), m.start(), confidence=0.85))
            value = clean_en(raw)
            if m["p"].lower() == "in" and lex.place(value) is None:
                words = value.lower().split()
                if words and (lex.is_industry(value) or lex.is_industry(words[-1])):
                    out.append(Hit("industry", value.lower(), m.start(), confidence=0.75))
                    continue
                if not _PROPER.match(value):
                    continue  # "I work in the city of Irvine": neither an industry nor a name
            out.extend(self._since(sent, m.start(), self._org_hits(sent, m.start(), value)))
        for pattern in (_EN_JOB, _EN_WORK_AS):
            for m in pattern.finditer(sent.norm):
                title = clean_en(m["x"])
                if not lex.is_occupation(title):
                    continue
                polarity = -1 if m.groupdict().get("neg") else 1
                out.append(Hit("occupation", title.lower(), m.start(), polarity, confidence=0.85))
                if m["org"] and polarity > 0:
                    out.extend(self._org_hits(sent, m.start(), m["org"]))
        for m in _EN_TEAM_RULE.finditer(sent.norm):
            out.append(Hit("team", clean_en(m["x"]), m.start(), confidence=0.8))
        return out

    def _live(self, sent: Sentence) -> list[Hit]:
        out = []
        for m in _EN_IN_PLACE.finditer(sent.norm):  # "I'm in LA": where the user is
            place = self.lexicon.place(clean_en(m["x"]))
            if place is not None:
                out.append(Hit("location", place, m.start(), confidence=0.7))
        for m in _EN_LIVE.finditer(sent.norm):
            value = clean_en(self._cut_time(sent, m.start("x"), m["x"]))
            place = self.lexicon.place(value) or (value if _PROPER.match(value) else None)
            if place is not None:
                out.extend(self._since(sent, m.start(), [Hit("location", place, m.start())]))
        return out

    def _identity(self, sent: Sentence) -> list[Hit]:
        out = []
        for m in _EN_I_AM.finditer(sent.norm):  # "I'm vegetarian": a value the lexicon knows
            slot = self.lexicon.slot_of_value(m["x"])
            if slot is not None:
                value = self.lexicon.canonical_value(m["x"], slot)
                out.append(Hit(slot, value, m.start(), -1 if m["neg"] else 1, confidence=0.85))
        for m in _EN_FROM.finditer(sent.norm):
            value = clean_en(m["x"] or m["x2"])
            place = self.lexicon.place(value) or (value if _PROPER.match(value) else None)
            if place is not None:
                out.append(Hit("hometown", place, m.start(), confidence=0.85))
        return out

    def _personal(self, sent: Sentence) -> list[Hit]:
        """Allergies ("I'm allergic to peanuts") and pets ("I have a dog named Max")."""
        out = []
        for m in _EN_ALLERGY.finditer(sent.norm):
            value = clean_en(m["x"] or m["y"])
            if value and not _EN_BAD_LEAD.match(value):
                out.append(Hit("allergy", value, m.start(), -1 if m["neg"] else 1, confidence=0.9))
        for m in self._pet_re.finditer(sent.norm):
            animal = m["x"].lower()
            value = f"{animal} ({m['n']})" if m["n"] else animal
            out.append(Hit("pets", value, m.start(), confidence=0.85))
        return out

    def _age(self, sent: Sentence) -> list[Hit]:
        m = _EN_AGE.search(sent.norm)
        age = int(m["n"] or m["n2"]) if m else 0
        return [Hit("age", str(age), m.start(), confidence=0.85)] if m and 0 < age < 120 else []

    def _reply_language(self, sent: Sentence) -> list[Hit]:
        m = self._reply_re.search(sent.norm)
        if m is None:
            return []
        value = self._value(m["x"], "reply_language")
        return [Hit("reply_language", value, m.start(), -1 if m["neg"] else 1)]

    def _preference(self, sent: Sentence) -> list[Hit]:
        out = []
        for pattern in (_EN_PREFERENCE, _EN_FAN):
            for m in pattern.finditer(sent.norm):
                if _EN_RELATIVE.search(sent.norm, 0, m.start()):
                    continue
                verb = (m.groupdict().get("v") or "like").lower()
                negative = verb in _EN_DISLIKE
                if negative and m["neg"]:
                    continue
                value = clean_en(self._cut_time(sent, m.start("x"), m["x"]))
                if not value or _EN_BAD_LEAD.match(value) or _EN_PRONOUN.search(value):
                    continue
                predicate = "prefers" if verb == "prefer" else "likes"
                predicate, value = self._slot(predicate, value, "en")
                polarity = -1 if negative or m["neg"] else 1
                out.append(Hit(predicate, value, m.start(), polarity))
        return out

    def _dont(self, sent: Sentence) -> list[Hit]:
        if sent.hits:
            return []
        for pattern in (_EN_DONT_AGAIN, _EN_STANDING):
            m = pattern.search(sent.norm)
            if m is None:
                continue
            value = clean_en(m["x"])
            if value and not _EN_BAD_LEAD.match(value):
                predicate, value = self._slot("prefers", value, "en")
                polarity = -1 if m["neg"] else 1
                return [Hit(predicate, value, m.start(), polarity, confidence=0.75)]
        return []

    def _skill(self, sent: Sentence) -> list[Hit]:
        for pattern in (_EN_CAN, _EN_GOOD_AT, _EN_KNOW_HOW):
            m = pattern.search(sent.norm)
            if m is None:
                continue
            polarity = -1 if m["neg"] else 1
            verb = (m.groupdict().get("v") or "").lower()
            value = clean_en(m["x"])
            if verb in ("speak", "fluent") and value:
                return [Hit("speaks", value, m.start(), polarity, confidence=0.8)]
            if pattern is _EN_CAN:
                value = f"{verb} {value}".strip()
            if value and not _EN_BAD_LEAD.match(value):
                return [Hit("skill", value, m.start(), polarity, confidence=0.75)]
        return []

    def _habit(self, sent: Sentence) -> list[Hit]:
        out = []
        verbs, gerunds = self.lexicon.habit_verbs("en"), self.lexicon.gerunds()
        for pattern in (self._habit_re, self._habit_change_re, _EN_USING):
            for m in pattern.finditer(sent.norm):
                if _EN_RELATIVE.search(sent.norm, 0, m.start()):
                    continue
                if pattern is self._habit_re and any(
                    not marks_start(sent, t) for t in sent.times(None)
                ):
                    continue  # "today I read an article": something that happened
                verb = " ".join(m["v"].lower().split())
                if pattern is self._habit_re:
                    predicate, polarity = verbs[verb], -1 if m["neg"] else 1
                elif pattern is _EN_USING:
                    predicate, polarity = "uses", 1
                else:
                    predicate = gerunds[verb]
                    polarity = 1 if m["chg"].lower().startswith(("start", "beg")) else -1
                value = self._cut_time(sent, m.start("x"), m["x"])
                if predicate == "uses":
                    value = _EN_USE_CUT.sub("", value)
                value = clean_en(value)
                if not value or _EN_BAD_LEAD.match(value) or _EN_PRONOUN.search(value):
                    continue
                predicate, value = self._slot(predicate, value, "en")
                hits = [Hit(predicate, value, m.start(), polarity, confidence=0.75)]
                hits[0].qualifiers, hits[0].scope = self._temporal(sent, m.start())
                if pattern is not self._habit_change_re:
                    out.extend(self._since(sent, m.start(), hits))
                else:  # "I stopped drinking coffee last month": the change's own time
                    out.extend(self._changed(sent, m.start(), hits))
        return out
