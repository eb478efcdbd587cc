"""The deterministic rule-based extractor, the embedded default (no model needed).

It reads a window's pieces and proposes claims with exact evidence spans. Only the user's own
words become claims: an assistant saying "remember" is not the user asking to be remembered.
Each user piece is cut into sentences; questions, hypotheticals ("如果", "if", "would") and
reported speech ("他说", "she said") are skipped whole. Each remaining sentence goes through
rule families in priority order, and yields at most one claim per slot:

- explicit memory requests ("记住：X", "remember that X") → ``note`` (the sentence is then
  taken as said, and no other rule reads it);
- corrections ("不是X而是Y", "not X but Y") → the corrected value, on the slot the earlier
  value had in this window or the lexicon gives it; "其实" / "actually" raise confidence;
- identity, work and home: 我叫 / 我在X工作 / 我住在 / my name is / I work at / I live in;
  a place lands on ``location`` (where the user is based), an organisation on ``employer``;
- moves and changes (搬去 / 换成 / 调到 / moved to / switched to), with the time they name as
  ``valid_from`` and 暂时 / temporarily as a qualifier (scope ``short_term``);
- preferences and habits (我喜欢 / 我不喝咖啡了 / I prefer / I don't drink coffee): negation
  is polarity, never another predicate; habit verbs come from the lexicon;
- plans and deadlines with a date (明天开会 / 下周三之前交 / on Friday) → ``plan``, with the
  resolved date in the value, ``valid_from``/``valid_to`` set and scope ``plan``.
- personal facts: age, birthday, email, phone, diet, allergies, pets, skills and languages,
  the reply language the user asks for, standing instructions ("以后不要…", "from now on").

Values are short and canonical (particles, articles and trailing adverbs stripped, lexicon
spellings applied) so the same fact said twice gives the same (subject, predicate, value).
The claim text is built from the lexicon's templates in the sentence's language. The package
is pure and deterministic (the same window always gives the same drafts) and keeps no state, so
one extractor serves many threads. Speed: every rule names the words it cannot match without,
and runs only on sentences that hold one of them.

Modules, in the order a sentence meets them:

- ``extractor``: ``RulesExtractor`` (the window loop, gating, drafts) and ``extract``;
- ``notes``: explicit memory requests;
- ``sentence``: sentence cutting, the skip filters, ``Sentence`` and ``Hit``;
- ``zh`` and ``en``: the rules of each language; ``plans``: plans and deadlines;
- ``base``: ``RuleSet``, the helpers all rule families share; ``values``: value cleanup;
- ``forget_request``: a user's request to forget what they just said ("忘了我刚才说的").

Only the names below are the package's API; the modules are its internals.
"""

from __future__ import annotations

from hlmem.rules.extractor import NAME, RulesExtractor, extract
from hlmem.rules.forget_request import (
    FORGET_PREDICATE,
    forget_requests,
    is_forget_request,
    request_drafts,
)

__all__ = [
    "FORGET_PREDICATE",
    "NAME",
    "RulesExtractor",
    "extract",
    "forget_requests",
    "is_forget_request",
    "request_drafts",
]
