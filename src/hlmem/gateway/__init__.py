"""Every model call and what it costs.

The :class:`Gateway` (``client``: rate limits, concurrency, retries, the only module that imports
httpx), provider presets, request building and answer parsing (``providers``), budget
reservation and settlement (``budget``), the circuit breaker and outage parking (``outage``),
the extraction and audit prompts (``prompts``) and the operations report (``ops``).
"""

from __future__ import annotations

from hlmem.gateway.budget import Attempts, Budget, CallInfo, Tokens
from hlmem.gateway.client import Gateway, redact
from hlmem.gateway.ops import (
    WorkSummary,
    ops_report,
    parse_since,
    percentile,
    render,
    unfinished_work,
)
from hlmem.gateway.prompts import (
    EXTRACTION_PROMPT_ID,
    answer_for,
    audit_request,
    is_audit,
    is_extraction,
    parse_answer,
    parse_audit,
    parse_extraction,
    read_audit,
    read_window,
    read_window_lines,
    render_extraction,
)
from hlmem.gateway.providers import (
    PRESETS,
    ChatMessage,
    ChatRequest,
    EmbedRequest,
    RerankRequest,
    build_chat,
    build_embed,
    build_rerank,
    estimate_chat_tokens,
    estimate_tokens,
    load_plugin_presets,
    parse_chat,
    parse_embed,
    parse_rerank,
    preset,
    retry_after_s,
)

__all__ = [
    "EXTRACTION_PROMPT_ID",
    "PRESETS",
    "Attempts",
    "Budget",
    "CallInfo",
    "ChatMessage",
    "ChatRequest",
    "EmbedRequest",
    "Gateway",
    "RerankRequest",
    "Tokens",
    "WorkSummary",
    "answer_for",
    "audit_request",
    "build_chat",
    "build_embed",
    "build_rerank",
    "estimate_chat_tokens",
    "estimate_tokens",
    "is_audit",
    "is_extraction",
    "load_plugin_presets",
    "ops_report",
    "parse_answer",
    "parse_audit",
    "parse_chat",
    "parse_embed",
    "parse_extraction",
    "parse_rerank",
    "parse_since",
    "percentile",
    "preset",
    "read_audit",
    "read_window",
    "read_window_lines",
    "redact",
    "render",
    "render_extraction",
    "retry_after_s",
    "unfinished_work",
]
