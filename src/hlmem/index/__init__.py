"""The two search channels, written by the stages and read by recall.

Full text over jieba-segmented bodies (``fts``) and vectors: the exact numpy scan or sqlite-vec
over float32 rows of one model (``vectors``, ``vector_rows``), with HNSW graphs proposing the
candidates of large partitions of dense vectors (``ann``).
"""

from __future__ import annotations

from hlmem.index.ann import AnnParams
from hlmem.index.embedders import in_process_embedder
from hlmem.index.fts import (
    FTS_DELETE,
    FTS_INSERT,
    FTS_MIGRATION,
    FtsHit,
    FtsItem,
    TermCounts,
    claim_search_text,
    fts_backfill,
    fts_key,
    fts_row,
    fts_search,
    fts_search_sync,
    fts_search_terms,
    index_after_migration,
    match_ids,
    match_ids_sync,
    rare_terms_sync,
)
from hlmem.index.vector_rows import Prefilter, VectorHit, earliest_ties, top_rows
from hlmem.index.vectors import Backend, VectorIndex, choose_backend, model_identity, numpy_bytes

__all__ = [
    "FTS_DELETE",
    "FTS_INSERT",
    "FTS_MIGRATION",
    "AnnParams",
    "Backend",
    "FtsHit",
    "FtsItem",
    "Prefilter",
    "TermCounts",
    "VectorHit",
    "VectorIndex",
    "choose_backend",
    "claim_search_text",
    "earliest_ties",
    "fts_backfill",
    "fts_key",
    "fts_row",
    "fts_search",
    "fts_search_sync",
    "fts_search_terms",
    "in_process_embedder",
    "index_after_migration",
    "match_ids",
    "match_ids_sync",
    "model_identity",
    "numpy_bytes",
    "rare_terms_sync",
    "top_rows",
]
