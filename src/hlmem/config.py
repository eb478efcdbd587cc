"""Configuration: frozen pydantic models and ``load_config``.

Precedence, lowest first: the model defaults (documented one by one in ``config/default.toml``,
which a test keeps identical to them) -> a TOML file (``config/local.toml`` or ``--config``) ->
``HLMEM_<SECTION>__<KEY>`` environment variables -> explicit overrides (CLI flags, API
arguments). This module is the only reader of ``os.environ``, and only when ``load_config`` is
called: nothing is read at import. Every model forbids unknown keys, so a misspelt setting is an
error, not a silent default.
"""

from __future__ import annotations

import math
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    model_validator,
)

from hlmem.errors import ConfigError

ENV_PREFIX = "HLMEM_"


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class StoreConfig(_Section):
    sqlite_module: Literal["auto", "sqlean", "stdlib"] = "auto"
    load_vec: bool = True
    busy_timeout_ms: int = Field(10_000, ge=0)
    iter_chunk_size: int = Field(256, ge=1)
    # WAL frames (pages) after which the writer restarts the WAL (hlmem.store.wal.Checkpointer)
    wal_restart_frames: int = Field(4096, ge=1)


class IngestConfig(_Section):
    default_namespace: str = Field("default", min_length=1, max_length=200)
    max_content_chars: int = Field(1_000_000, ge=1)
    max_metadata_bytes: int = Field(65_536, ge=2)
    group_commit_max_rows: int = Field(2_000, ge=1)
    pending_max_submissions: int = Field(10_000, ge=1)
    backlog_high_water_jobs: int = Field(50_000, ge=1)
    backlog_low_water_jobs: int = Field(40_000, ge=0)
    backlog_refresh_s: float = Field(0.1, gt=0)
    # Where group commits run: aiosqlite's writer thread, or a writer child process with its own
    # GIL (hlmem.pipeline.writer) so SQLite work never contends with the event loop.
    writer: Literal["thread", "process"] = "thread"

    @model_validator(mode="after")
    def _water_marks(self) -> IngestConfig:
        if self.backlog_low_water_jobs > self.backlog_high_water_jobs:
            raise ValueError("backlog_low_water_jobs must not exceed backlog_high_water_jobs")
        return self


class WindowerConfig(_Section):
    max_events: int = Field(5, ge=1)
    max_age_s: float = Field(120.0, gt=0)
    chunk_chars: int = Field(2_000, ge=50)
    sweep_interval_s: float = Field(1.0, gt=0)
    # Windows of one namespace closed in one batch share an extractor job, up to this many
    # (the rules extractor); with a model extractor each window is a job of its own.
    windows_per_job: int = Field(16, ge=1)


class StageConfig(_Section):
    workers: int = Field(1, ge=1)
    batch_size: int = Field(64, ge=1)
    buffer_batches: int = Field(2, ge=1)
    max_attempts: int = Field(5, ge=1)
    retry_base_s: float = Field(0.5, ge=0)
    retry_max_s: float = Field(60.0, ge=0)
    downstream_high_water_jobs: int = Field(20_000, ge=1)


class PipelineConfig(_Section):
    poll_interval_s: float = Field(0.2, gt=0)
    lease_s: float = Field(60.0, gt=0)
    shutdown_grace_s: float = Field(10.0, ge=0)
    recovery_interval_s: float = Field(15.0, gt=0)
    drain_poll_s: float = Field(0.02, gt=0)
    # "auto": a CPU helper child process (hlmem.pipeline.offload) computes the extractor's rules and
    # full-text bodies, local embeddings and admission's gate, of batches at least this big,
    # once bursts have brought offload_start_after_texts texts (sustained volume); "off": never.
    offload: Literal["auto", "off"] = "auto"
    offload_min_windows: int = Field(16, ge=1)
    offload_min_texts: int = Field(64, ge=1)
    offload_min_candidates: int = Field(16, ge=1)
    offload_start_after_texts: int = Field(2_000, ge=0)
    windower: StageConfig = StageConfig(workers=1, batch_size=4, buffer_batches=2)
    extractor: StageConfig = StageConfig(workers=2, batch_size=32, buffer_batches=2)
    admission: StageConfig = StageConfig(workers=1, batch_size=64, buffer_batches=2)
    # One dedup and one conflict worker per process: each batch's decisions see the previous
    # batch's claims (other processes are covered by a re-check inside the transaction).
    dedup: StageConfig = StageConfig(workers=1, batch_size=64, buffer_batches=2)
    conflict: StageConfig = StageConfig(workers=1, batch_size=64, buffer_batches=2)
    embedder: StageConfig = StageConfig(workers=1, batch_size=16, buffer_batches=2)
    # One maintenance tick at a time (its jobs share one dedup key anyway).
    maintenance: StageConfig = StageConfig(workers=1, batch_size=1, buffer_batches=1)


class ExtractorConfig(_Section):
    # "rules": the built-in deterministic extractor; "model": one structured chat call per
    # window through the gateway, to providers[provider] with this model.
    kind: Literal["rules", "model"] = "rules"
    provider: str = ""
    model: str = ""
    max_tokens: int = Field(1024, ge=16)
    temperature: float = Field(0.0, ge=0, le=2)
    # Repair calls after an answer that does not parse; still bad, that is one attempt of the
    # job, dead-lettered after pipeline.extractor.max_attempts of them.
    repair_attempts: int = Field(1, ge=0)
    # Extra slot lexicons (TOML) that extend or override the built-in config/lexicon.toml.
    lexicon_paths: list[str] = []

    @model_validator(mode="after")
    def _model_named(self) -> ExtractorConfig:
        if self.kind == "model" and not (self.provider and self.model):
            raise ValueError('extractor.kind = "model" needs extractor.provider and .model')
        return self


class AdmissionConfig(_Section):
    # enforce: events from untrusted sources are stored but never extracted; observe: they
    # are extracted, and what enforce would have blocked is recorded; off: no source check.
    mode: Literal["enforce", "observe", "off"] = "enforce"
    untrusted_origins: list[str] = ["external_web", "tool", "system"]
    untrusted_session_kinds: list[str] = ["cron", "heartbeat", "subagent"]


class DedupConfig(_Section):
    # Claims with every protected atom equal merge when their similarity reaches this.
    similarity_threshold: float = Field(0.78, gt=0, le=1)
    # Existing claims of the same slot compared with each new claim (newest first).
    candidates_max: int = Field(200, ge=1)
    # Optional model audit of the grey zone [audit_low, similarity_threshold): off by default.
    audit: bool = False
    audit_provider: str = ""
    audit_model: str = ""
    audit_low: float = Field(0.6, ge=0, le=1)

    @model_validator(mode="after")
    def _audit_named(self) -> DedupConfig:
        if self.audit and not (self.audit_provider and self.audit_model):
            raise ValueError("dedup.audit = true needs dedup.audit_provider and .audit_model")
        if self.audit_low > self.similarity_threshold:
            raise ValueError("dedup.audit_low must not exceed dedup.similarity_threshold")
        return self


#: the embedders that run in this process (no provider, no network)
IN_PROCESS_EMBEDDERS = frozenset({"local", "e5"})
#: multilingual-e5-small's dimensions (hlmem.lang.e5, which config may not import)
E5_DIMENSIONS = 384
#: how a replaced boolean setting may be spelt (in TOML or in the environment)
_BOOLS = {"true": True, "1": True, "false": False, "0": False}


class EmbedderConfig(_Section):
    # "local": the built-in hashed n-gram embedder (no model, no network); "e5":
    # multilingual-e5-small in process (the e5 extra; 384 dimensions, no network); otherwise
    # the name of a provider in [providers] with an embeddings endpoint, and its model.
    provider: str = "local"
    model: str = "hlmem-local-hash"
    dim: int = Field(384, ge=16)
    # Texts (claims, events) embedded per call, and events per embedder job.
    batch_size: int = Field(32, ge=1)
    # Which raw events get a vector besides the claims, so that recall's vector channel covers
    # them (each is a paid input with a remote provider, and costs CPU with e5): "all";
    # "uncovered", the events no claim rests on (a claim's vector finds those, and recall
    # shows its evidence); "none". An event's first event_max_chars characters are embedded.
    events: Literal["all", "uncovered", "none"] = "all"
    event_max_chars: int = Field(2000, ge=16)
    # e5: OpenMP threads per embedding call (0: the engine's default, every core).
    threads: int = Field(1, ge=0)
    # How often claims without a vector of the configured model are looked for (model change).
    backfill_interval_s: float = Field(30.0, gt=0)
    # For a provider's model trained with prefixes (e5 behind an OpenAI-compatible server:
    # "query: " and "passage: "): put before a question and before every stored text.
    query_prefix: str = ""
    passage_prefix: str = ""

    @model_validator(mode="before")
    @classmethod
    def _embed_events(cls, data: Any) -> Any:
        # embed_events, the bool that came before events, is read as events "all" or "none"
        if not (isinstance(data, Mapping) and "embed_events" in data):
            return data
        data = dict(data)
        flag = str(data.pop("embed_events")).lower()
        if "events" in data:
            raise ValueError("embedder.embed_events is replaced by embedder.events: give one")
        if flag not in _BOOLS:
            raise ValueError(f"embedder.embed_events must be true or false, not {flag!r}")
        data["events"] = "all" if _BOOLS[flag] else "none"
        return data

    @model_validator(mode="after")
    def _remote_model(self) -> EmbedderConfig:
        if self.provider == "e5":
            if self.dim != E5_DIMENSIONS:
                raise ValueError(f"embedder.dim must be {E5_DIMENSIONS} for provider 'e5'")
        elif self.provider != "local" and not self.model:
            raise ValueError("embedder.model is required for a provider other than local")
        return self

    @property
    def in_process(self) -> bool:
        """Whether vectors are computed in this process (local or e5), not by a provider."""
        return self.provider in IN_PROCESS_EMBEDDERS


#: wire-format presets of providers.py; a provider may also name an allowlisted plugin
BUILTIN_PRESETS = ("openai", "dashscope", "zhipu", "sim")


class ProviderConfig(_Section):
    """One model provider (``[providers.NAME]``): where it is, its key's variable, its limits."""

    preset: str = "openai"
    base_url: str = ""
    api_key_env: str = ""
    # Filled by load_config from the variable named in api_key_env; never read from a file.
    api_key: SecretStr | None = Field(None, exclude=True, repr=False)
    timeout_s: float = Field(60.0, gt=0)
    connect_timeout_s: float = Field(5.0, gt=0)
    max_retries: int = Field(4, ge=0)
    retry_base_s: float = Field(0.5, ge=0)
    retry_max_s: float = Field(30.0, ge=0)
    requests_per_minute: float = Field(60.0, gt=0)
    tokens_per_minute: float = Field(100_000.0, gt=0)
    max_concurrency: int = Field(4, ge=1)
    breaker_failures: int = Field(5, ge=1)
    breaker_cooldown_s: float = Field(30.0, ge=0)


class PriceConfig(_Section):
    """Price of one ``provider/model`` (``[prices."PROVIDER/MODEL"]``), per 1,000 tokens."""

    input_per_1k: float | None = Field(None, ge=0)
    output_per_1k: float | None = Field(None, ge=0)
    currency: str = Field("USD", min_length=1)
    free: bool = False

    @model_validator(mode="after")
    def _complete(self) -> PriceConfig:
        if not self.free and (self.input_per_1k is None or self.output_per_1k is None):
            raise ValueError("a price needs input_per_1k and output_per_1k (or free = true)")
        return self


class NamespaceBudgetConfig(_Section):
    daily_limit: float = Field(math.inf, ge=0)
    monthly_limit: float = Field(math.inf, ge=0)


class BudgetConfig(_Section):
    currency: str = Field("USD", min_length=1)
    daily_limit: float = Field(math.inf, ge=0)
    monthly_limit: float = Field(math.inf, ge=0)
    namespace_daily_limit: float = Field(math.inf, ge=0)
    namespace_monthly_limit: float = Field(math.inf, ge=0)
    namespaces: dict[str, NamespaceBudgetConfig] = {}
    resume_interval_s: float = Field(30.0, gt=0)
    reservation_ttl_s: float = Field(3600.0, gt=0)


class GatewayConfig(_Section):
    # A provider that has failed (5xx, timeouts, 429s, an open breaker) for this long without a
    # success parks its jobs (status parked, reason ProviderOutage): drain stops waiting for
    # them, and they resume by themselves once a probe call succeeds. Shorter trouble only
    # delays jobs. Seconds of the injectable clock.
    outage_park_s: float = Field(300.0, gt=0)
    # How often the gateway looks whether a failing provider may take a probe call, or is back.
    probe_interval_s: float = Field(1.0, gt=0)


class PluginsConfig(_Section):
    allowlist: list[str] = []


class ForgetConfig(_Section):
    # forget(query=...): of what recall returns for the query (claims, and events with the
    # claims resting on them), only the items that match it pass (hlmem.claims.forget_match): they
    # hold at least this fraction of the query's content terms (1.0: every one) ...
    query_min_term_coverage: float = Field(1.0, gt=0, le=1)
    # ... or their vector's cosine with the query's (local embedder) is at least this ...
    query_min_similarity: float = Field(0.85, gt=0, le=1)
    # ... and of those, the items scoring at least this fraction of the best one's score are
    # forgotten (1.0: the best and its ties) ...
    query_relative_score: float = Field(0.8, gt=0, le=1)
    # ... and at most this many per call (claims folded into a chosen one go with it).
    query_max_items: int = Field(5, ge=1)


class RecallConfig(_Section):
    # The longest query recall accepts (characters); a longer one is refused with InputError.
    max_query_chars: int = Field(10_000, ge=1)
    # Candidates each channel contributes before fusion.
    fts_candidates: int = Field(50, ge=1)
    vector_candidates: int = Field(50, ge=1)
    # The most rows one full-text search ranks with bm25 (hlmem.index.fts.fts_search_terms): terms
    # too common to rank only fill the list after the rarer terms' items, newest first.
    fts_rank_rows: int = Field(500, ge=1)
    # Vector hits less similar than this (cosine) are noise, not candidates; raw events (long,
    # unedited turns) need a closer match than claims (short normalised statements).
    min_vector_score: float = Field(0.15, ge=-1, le=1)
    min_event_vector_score: float = Field(0.45, ge=-1, le=1)
    # Each model spreads its cosines its own way: [claim floor, event floor] by model id (e5
    # in process: "multilingual-e5-small"; a provider's: "provider/model"). A model not
    # listed takes the two floors above (measured for the local embedder).
    vector_floors: dict[str, tuple[float, float]] = Field(
        default_factory=lambda: {"multilingual-e5-small": (0.2, 0.2)}
    )
    # How the channels' hits become one score. "scores": each channel's own relevance, made
    # comparable (full text: bm25 over the best hit's; vectors: the cosine above the model's
    # floor, over the room above it), weighted by channel and summed; "rrf": reciprocal rank
    # fusion, sum over channels of 1 / (rrf_k + rank), which keeps only the order of each.
    fusion: Literal["scores", "rrf"] = "scores"
    rrf_k: float = Field(60.0, gt=0)
    # The weights of "scores" fusion: full text, vectors, each expansion query's hits (both
    # channels), and the entity constraint's "prefer" bonus.
    fts_weight: float = Field(1.0, ge=0)
    vector_weight: float = Field(0.5, ge=0)
    expansion_weight: float = Field(0.5, ge=0)
    entity_weight: float = Field(0.2, ge=0)
    # Slot questions ("我住在哪？", "what's my name?", hlmem.recall.slots): the claims of the
    # speaker's slots the question names join the candidates with this relevance weight
    # (0: off), at most slot_candidates of them, newest first.
    slot_weight: float = Field(1.0, ge=0)
    slot_candidates: int = Field(20, ge=1)
    # Context: the turns said just before and after each of the best context_seeds events
    # (same session) join the candidates, with context_weight times that event's score (added
    # to their own): an answer is often the turn after the one that matches the question.
    # Only turns of these roles gain: what the user said holds the user's facts, and an
    # assistant's long reply that matches a question often follows the turn that answers it.
    context_weight: float = Field(0.25, ge=0)
    context_seeds: int = Field(10, ge=0)
    context_roles: list[Literal["user", "assistant", "system", "tool"]] = ["user"]
    # An assistant's turn ranks at this fraction of its score, unless the query asks what the
    # assistant said ("you recommended", "你推荐过": then its turns rank as the user's and gain
    # context too): memory is of what the user said, and an assistant's reply repeats the
    # question's words around the user's own.
    assistant_weight: float = Field(0.8, ge=0, le=1)
    # Feedback: the feedback_terms rarest words of the best feedback_seeds full-text hits that
    # the query lacks are searched too, their hits weighted by feedback_weight: "who works in
    # Qingdao" finds "my colleague works in Qingdao", then what else is said of the colleague.
    feedback_weight: float = Field(0.3, ge=0)
    feedback_seeds: int = Field(2, ge=0)
    feedback_terms: int = Field(8, ge=0)
    # A raw event said after the period a query names ("last year") is often a later retelling
    # of what happened then: kept, its score multiplied by this (0: dropped in effect).
    after_period_weight: float = Field(0.5, ge=0, le=1)
    # "numpy": exact scan of an in-memory matrix; "sqlite-vec": scan in SQLite (no RAM copy);
    # "ann": numpy plus an HNSW graph (usearch, int8) per namespace partition of at least
    # ann_min_vectors dense vectors, its candidates re-scored exactly (hlmem.index.ann);
    # "auto": ann for dense vectors (a model's) in partitions that large when usearch is
    # installed and the graphs fit too, else numpy while the vectors fit in numpy_max_mib,
    # else sqlite-vec (when loaded).
    vector_backend: Literal["auto", "numpy", "sqlite-vec", "ann"] = "auto"
    # With a provider embedder the question is embedded through the gateway: a call that has
    # not answered by then is given up and recall runs on full text (its result says so).
    query_embed_timeout_s: float = Field(2.0, gt=0)
    # The in-memory index's budget, rows and graphs: 4.7 GiB of rows and 1.8 GiB of graphs
    # for a million claims of 384-dim dense vectors with their 1.8M events (measured 6.5 GiB).
    numpy_max_mib: float = Field(8192.0, ge=0)
    # A partition (namespace, owner kind) of fewer vectors is scanned exactly (under 1 ms for
    # 10k dense vectors of 384 here); larger ones get a graph, built in the background.
    ann_min_vectors: int = Field(20_000, ge=1)
    # Candidates a graph proposes for exact re-scoring (at least two per hit asked for): 100
    # kept recall@10 at 0.938 at 1M claims, 200 at 0.986 (bench/results/2026-12-02-ann.md).
    ann_candidates: int = Field(200, ge=1)
    # Keep each graph in a file beside the database (<db>.ann/), loaded at the next open.
    ann_save: bool = True
    # Threads a graph build uses (one leaves a core to recall while a large store is indexed).
    ann_build_threads: int = Field(1, ge=1)
    # enforce: a query naming a known entity recalls only memories about it; prefer: those rank
    # first; off: no constraint.
    entity_constraint: Literal["enforce", "prefer", "off"] = "enforce"
    # Ranking: the fused score times (1 + the weighted sum of these signals, each in 0..1).
    weight_importance: float = Field(0.3, ge=0)
    weight_recency: float = Field(0.2, ge=0)
    weight_activation: float = Field(0.1, ge=0)
    weight_utility: float = Field(0.3, ge=0)
    recency_half_life_days: float = Field(30.0, gt=0)
    # Whether a recall raises the activation of what it returns (hlmem.recall.touches). Off
    # for an evaluation, where one question's recall must not change another's ranking.
    record_activation: bool = True
    # The context packet: its token budget, and the longest evidence quote it shows.
    budget_tokens: int = Field(2000, ge=50)
    quote_chars: int = Field(80, ge=10)
    # A result is "supported" (RecallResult.answerability) when it holds a current claim of
    # the slot the question names, or when one of its first three items holds at least this
    # share of the question's search terms (calibrated on the dev data, where the fused score
    # told answerable from unanswerable questions no better than chance:
    # bench/results/2026-12-02-answerability.md); otherwise "low_confidence".
    supported_coverage: float = Field(0.5, ge=0, le=1)
    # Echo suppression: with Memory.recall(session_id=...), what that session said within
    # this many seconds before the question (its events, and claims resting only on them) is
    # not handed back as a memory of it (0: off).
    echo_window_s: float = Field(600.0, ge=0)
    # Freshness: a claim of a volatile slot (the lexicon's volatile = true: a plan, a status)
    # whose latest evidence is older than this many days says "as of <date>" in the packet.
    freshness_days: float = Field(30.0, gt=0)
    # A claim item shows this many of its evidence links at most: the first and the latest
    # (its evidence_total says how many there are; Memory.explain lists them all).
    evidence_per_item: int = Field(5, ge=1)
    # Extra jieba user dictionaries (one word per line: word [freq] [tag]).
    user_dict_paths: list[str] = []
    # Optional reranker (hlmem.recall.rerank): a provider in [providers] with a rerank endpoint, its
    # model, and how many of the best fused items it reorders ("": no reranker).
    rerank_provider: str = ""
    rerank_model: str = ""
    rerank_candidates: int = Field(20, ge=1)
    # Optional query expansion (hlmem.recall.expansion): a provider in [providers] with a chat
    # endpoint and its model write up to expand_queries other queries for a question, searched
    # beside it; a call that fails or takes longer than expand_timeout_s leaves the plain
    # recall ("": off).
    expand_provider: str = ""
    expand_model: str = ""
    expand_queries: int = Field(2, ge=1, le=2)
    expand_timeout_s: float = Field(2.0, gt=0)

    @model_validator(mode="after")
    def _rerank_model(self) -> RecallConfig:
        if self.rerank_provider and not self.rerank_model:
            raise ValueError("recall.rerank_model is required with recall.rerank_provider")
        if self.expand_provider and not self.expand_model:
            raise ValueError("recall.expand_model is required with recall.expand_provider")
        return self


class ScopeDays(_Section):
    """A number of days per claim scope (``inf``: never); subclasses set the defaults."""

    long_term: float = Field(math.inf, gt=0)
    short_term: float = Field(math.inf, gt=0)
    plan: float = Field(math.inf, gt=0)

    def of(self, scope: str) -> float:
        """The value for ``scope``; an unknown scope counts as long_term."""
        value: float = getattr(self, scope, self.long_term)
        return value


class TtlGraceDays(ScopeDays):
    long_term: float = Field(math.inf, gt=0)
    short_term: float = Field(7.0, gt=0)
    plan: float = Field(1.0, gt=0)


class HalfLifeDays(ScopeDays):
    long_term: float = Field(90.0, gt=0)
    short_term: float = Field(14.0, gt=0)
    plan: float = Field(7.0, gt=0)


class MaintenanceConfig(_Section):
    # Periodic passes in the pipeline (inline and `hlmem worker`); `mem.maintain()` and
    # `hlmem maintain` run a pass whatever this says.
    enabled: bool = True
    # Time from the end of one pass to the start of the next (the injectable clock's time).
    interval_s: float = Field(3600.0, gt=0)
    # Bound of one tick (one short writer transaction): rows each task handles at most.
    max_items_per_task: int = Field(500, ge=1)
    # Wall-clock pause between two ticks of one pass, leaving the writer to ingestion.
    pause_between_ticks_s: float = Field(0.5, ge=0)
    # TTL: an active claim of this scope expires (status archived, reason "expired") once
    # valid_to + grace * (1 + ttl_importance_factor * importance) has passed.
    ttl_grace_days: TtlGraceDays = TtlGraceDays()
    ttl_importance_factor: float = Field(1.0, ge=0)
    # Activation halves every half_life * (1 + half_life_importance_factor * importance) days
    # since it was last evaluated; it never changes confidence.
    half_life_days: HalfLifeDays = HalfLifeDays()
    half_life_importance_factor: float = Field(1.0, ge=0)
    # What a recall that returns a claim, and positive feedback on it, add to its activation.
    access_boost: float = Field(0.1, ge=0)
    feedback_boost: float = Field(0.5, ge=0)
    activation_cap: float = Field(5.0, gt=0)
    # Recall's boosts are written together (one transaction for many recalls), at most this
    # long after the first one waiting, or at once when access_flush_claims claims wait.
    access_flush_s: float = Field(1.0, ge=0)
    access_flush_claims: int = Field(1000, ge=1)
    # Archive: active claims not accessed for archive_silent_days whose activation has decayed
    # to archive_max_activation or below; importance at or above archive_keep_importance is
    # never archived for silence.
    archive_silent_days: float = Field(180.0, ge=0)
    archive_max_activation: float = Field(0.2, ge=0)
    archive_keep_importance: float = Field(0.9, ge=0)
    # Job hygiene: done jobs are deleted this long after they finished (failed and parked
    # jobs are kept); logged vector deletions are pruned this long after they were logged.
    done_jobs_keep_days: float = Field(7.0, ge=0)
    vector_log_keep_days: float = Field(1.0, ge=0)


class Config(_Section):
    store: StoreConfig = StoreConfig()
    ingest: IngestConfig = IngestConfig()
    windower: WindowerConfig = WindowerConfig()
    pipeline: PipelineConfig = PipelineConfig()
    extractor: ExtractorConfig = ExtractorConfig()
    admission: AdmissionConfig = AdmissionConfig()
    dedup: DedupConfig = DedupConfig()
    embedder: EmbedderConfig = EmbedderConfig()
    recall: RecallConfig = RecallConfig()
    forget: ForgetConfig = ForgetConfig()
    maintenance: MaintenanceConfig = MaintenanceConfig()
    providers: dict[str, ProviderConfig] = {}
    prices: dict[str, PriceConfig] = {}
    budget: BudgetConfig = BudgetConfig()
    gateway: GatewayConfig = GatewayConfig()
    plugins: PluginsConfig = PluginsConfig()

    def calls_models(self) -> bool:
        """Whether any stage or recall calls a model with this configuration (then a gateway
        is opened)."""
        return (
            self.extractor.kind == "model"
            or not self.embedder.in_process
            or self.dedup.audit
            or bool(self.recall.rerank_provider)
            or bool(self.recall.expand_provider)
        )

    @model_validator(mode="after")
    def _providers_and_prices(self) -> Config:
        for name, provider in self.providers.items():
            if provider.preset not in BUILTIN_PRESETS and provider.preset not in (
                self.plugins.allowlist
            ):
                raise ValueError(
                    f"providers.{name}.preset {provider.preset!r} is neither one of "
                    f"{list(BUILTIN_PRESETS)} nor a plugin named in plugins.allowlist"
                )
        extractor, dedup, embedder = self.extractor, self.dedup, self.embedder
        named = {
            "extractor.provider": extractor.provider if extractor.kind == "model" else "",
            "dedup.audit_provider": dedup.audit_provider if dedup.audit else "",
            "embedder.provider": "" if embedder.in_process else embedder.provider,
            "recall.rerank_provider": self.recall.rerank_provider,
            "recall.expand_provider": self.recall.expand_provider,
        }
        for field, name in named.items():
            if name and name not in self.providers:
                raise ValueError(
                    f"{field} {name!r} is not a configured provider "
                    f"(providers: {sorted(self.providers)})"
                )
        for key, price in self.prices.items():
            provider_name, _, model = key.partition("/")
            if not provider_name or not model:
                raise ValueError(f'prices."{key}": the key must be "PROVIDER/MODEL"')
            if not price.free and price.currency != self.budget.currency:
                raise ValueError(
                    f'prices."{key}" is in {price.currency} but budget.currency is '
                    f"{self.budget.currency}: give every price in the budget's currency"
                )
        return self


def load_config(
    path: str | Path | None = None,
    *,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Config:
    """Build a :class:`Config` from a TOML file, ``HLMEM_*`` variables and overrides.

    ``env`` defaults to ``os.environ``; pass ``{}`` to ignore the environment. Environment keys
    name a section path with double underscores: ``HLMEM_WINDOWER__MAX_EVENTS=8`` or
    ``HLMEM_PIPELINE__EXTRACTOR__WORKERS=4``; values are parsed as TOML scalars.
    ``overrides`` is a nested mapping with the same shape as the file.

    :raises ConfigError: unreadable file, bad TOML, unknown key or invalid value.
    """
    data: dict[str, Any] = {}
    if path is not None:
        try:
            data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"cannot read config {path}: {exc}") from exc
    environ = os.environ if env is None else env
    for key, raw in environ.items():
        if not key.startswith(ENV_PREFIX) or "__" not in key:
            continue
        parts = [p.lower() for p in key[len(ENV_PREFIX) :].split("__")]
        _merge(data, _nest(parts, _parse_scalar(raw)))
    if overrides:
        _merge(data, dict(overrides))
    providers = data.get("providers")
    for name, section in (providers if isinstance(providers, dict) else {}).items():
        if isinstance(section, Mapping) and "api_key" in section:
            raise ConfigError(
                f"providers.{name}.api_key: never write a key into the configuration; "
                "put it in an environment variable and name that variable in api_key_env"
            )
    try:
        cfg = Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"invalid configuration: {exc}") from exc
    return _with_api_keys(cfg, environ)


def _with_api_keys(cfg: Config, environ: Mapping[str, str]) -> Config:
    """Read each provider's key from the variable its ``api_key_env`` names (if it is set)."""
    keyed = {
        name: p.model_copy(update={"api_key": SecretStr(environ[p.api_key_env])})
        for name, p in cfg.providers.items()
        if p.api_key_env and environ.get(p.api_key_env)
    }
    if not keyed:
        return cfg
    return cfg.model_copy(update={"providers": {**cfg.providers, **keyed}})


def _parse_scalar(raw: str) -> Any:
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw


def _nest(parts: list[str], value: Any) -> dict[str, Any]:
    out: dict[str, Any] = {parts[-1]: value}
    for part in reversed(parts[:-1]):
        out = {part: out}
    return out


def _merge(base: dict[str, Any], extra: Mapping[str, Any]) -> None:
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(base.get(key), dict):
            _merge(base[key], value)
        else:
            base[key] = dict(value) if isinstance(value, Mapping) else value


def env_default(name: str) -> str | None:
    """The ``HLMEM_<NAME>`` environment value for a CLI option, if set (read at call time)."""
    return os.environ.get(ENV_PREFIX + name)
