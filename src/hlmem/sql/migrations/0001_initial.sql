-- 0001: the whole domain model of DESIGN.md §2.
-- Domain times are fixed-width UTC ISO 8601 text (string order = time order); job times are
-- REAL unix seconds because other processes compare them.

-- Events: immutable raw records. `seq` is the global insertion order; `id` the public key
-- (a caller's idempotency key or one hlmem made).
CREATE TABLE events (
    seq           INTEGER PRIMARY KEY,
    id            TEXT NOT NULL UNIQUE,
    namespace     TEXT NOT NULL,
    session_id    TEXT NOT NULL,
    role          TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'system', 'tool')),
    content       TEXT NOT NULL,
    content_hash  TEXT NOT NULL,
    occurred_at   TEXT NOT NULL,
    recorded_at   TEXT NOT NULL,
    origin_class  TEXT NOT NULL,
    session_kind  TEXT NOT NULL,
    metadata      TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX events_session ON events (namespace, session_id, seq);
CREATE INDEX events_hash ON events (namespace, content_hash);

-- Tombstones: what an explicit forget leaves behind, keys and hashes only, never content.
-- kind: event (key = event id), content (key = namespace:content hash), claim (key = claim id),
-- slot (key = namespace:subject:predicate:value hash).
CREATE TABLE tombstones (
    id          INTEGER PRIMARY KEY,
    kind        TEXT NOT NULL CHECK (kind IN ('event', 'content', 'claim', 'slot', 'session')),
    key         TEXT NOT NULL,
    namespace   TEXT NOT NULL,
    reason      TEXT NOT NULL DEFAULT '',
    created_at  TEXT NOT NULL,
    UNIQUE (kind, key)
);

-- Events are immutable in the database itself: no UPDATE ever, and a DELETE only for an event
-- that a tombstone names (the forget path writes the tombstone first).
CREATE TRIGGER events_no_update BEFORE UPDATE ON events
BEGIN
    SELECT RAISE(ABORT, 'events are immutable');
END;
CREATE TRIGGER events_delete_needs_tombstone BEFORE DELETE ON events
WHEN NOT EXISTS (SELECT 1 FROM tombstones WHERE kind = 'event' AND key = OLD.id)
BEGIN
    SELECT RAISE(ABORT, 'events are immutable: delete only through forget');
END;

CREATE TABLE sessions (
    namespace     TEXT NOT NULL,
    session_id    TEXT NOT NULL,
    session_kind  TEXT NOT NULL,
    started_at    TEXT NOT NULL,
    ended_at      TEXT,
    PRIMARY KEY (namespace, session_id)
) WITHOUT ROWID;

-- Windows: per (namespace, session), at most one open. Items are events or chunks of long
-- events; (event_id, chunk_no) lands in exactly one window.
CREATE TABLE windows (
    id            TEXT PRIMARY KEY,
    namespace     TEXT NOT NULL,
    session_id    TEXT NOT NULL,
    session_key   TEXT NOT NULL,
    status        TEXT NOT NULL CHECK (status IN ('open', 'closed')),
    opened_at     TEXT NOT NULL,
    closed_at     TEXT,
    close_reason  TEXT CHECK (close_reason IN ('size', 'age', 'session_end', 'flush')),
    item_count    INTEGER NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX windows_one_open ON windows (session_key) WHERE status = 'open';
CREATE INDEX windows_open_age ON windows (opened_at) WHERE status = 'open';

CREATE TABLE window_items (
    window_id    TEXT NOT NULL REFERENCES windows (id) ON DELETE CASCADE,
    pos          INTEGER NOT NULL,
    event_id     TEXT NOT NULL REFERENCES events (id) ON DELETE CASCADE,
    chunk_no     INTEGER NOT NULL,
    chunk_count  INTEGER NOT NULL,
    start_char   INTEGER NOT NULL,
    end_char     INTEGER NOT NULL,
    PRIMARY KEY (window_id, pos)
) WITHOUT ROWID;
CREATE UNIQUE INDEX window_items_once ON window_items (event_id, chunk_no);

-- One row per window extracted: the proof that a window was extracted exactly once.
CREATE TABLE extractions (
    window_id    TEXT PRIMARY KEY,
    extractor    TEXT NOT NULL,
    model        TEXT NOT NULL DEFAULT '',
    claim_count  INTEGER NOT NULL,
    job_id       INTEGER,
    created_at   TEXT NOT NULL
);

-- Claims: the smallest fact unit. Two clocks: valid time (valid_from/valid_to: true in the
-- world) and recorded time (recorded_at: learnt; retracted_at: stopped believing).
CREATE TABLE claims (
    id                TEXT PRIMARY KEY,
    namespace         TEXT NOT NULL,
    subject           TEXT NOT NULL,
    predicate         TEXT NOT NULL,
    value             TEXT NOT NULL,
    text              TEXT NOT NULL,
    qualifiers        TEXT NOT NULL DEFAULT '[]',
    polarity          INTEGER NOT NULL DEFAULT 1 CHECK (polarity IN (1, -1)),
    scope             TEXT NOT NULL DEFAULT 'long_term',
    importance        REAL NOT NULL DEFAULT 0.5 CHECK (importance BETWEEN 0 AND 1),
    confidence        REAL NOT NULL DEFAULT 0.8 CHECK (confidence BETWEEN 0 AND 1),
    language          TEXT NOT NULL DEFAULT 'und',
    content_hash      TEXT NOT NULL,
    slot_key          TEXT NOT NULL,
    status            TEXT NOT NULL DEFAULT 'active'
                      CHECK (status IN ('active', 'superseded', 'archived', 'forgotten')),
    valid_from        TEXT,
    valid_to          TEXT,
    recorded_at       TEXT NOT NULL,
    retracted_at      TEXT,
    superseded_by     TEXT REFERENCES claims (id) ON DELETE SET NULL,
    activation        REAL NOT NULL DEFAULT 1.0,
    access_count      INTEGER NOT NULL DEFAULT 0,
    last_accessed_at  TEXT,
    utility           REAL NOT NULL DEFAULT 0.0,
    extractor         TEXT NOT NULL DEFAULT '',
    window_id         TEXT
);
CREATE INDEX claims_slot ON claims (namespace, slot_key, status);
CREATE INDEX claims_status ON claims (namespace, status, recorded_at);
CREATE INDEX claims_hash ON claims (namespace, content_hash);

CREATE TABLE evidence (
    claim_id    TEXT NOT NULL REFERENCES claims (id) ON DELETE CASCADE,
    event_id    TEXT NOT NULL REFERENCES events (id) ON DELETE CASCADE,
    quote       TEXT NOT NULL,
    start_char  INTEGER NOT NULL,
    end_char    INTEGER NOT NULL,
    PRIMARY KEY (claim_id, event_id)
) WITHOUT ROWID;
CREATE INDEX evidence_event ON evidence (event_id);

CREATE TABLE supersessions (
    old_claim_id  TEXT NOT NULL REFERENCES claims (id) ON DELETE CASCADE,
    new_claim_id  TEXT NOT NULL REFERENCES claims (id) ON DELETE CASCADE,
    reason        TEXT NOT NULL,
    created_at    TEXT NOT NULL,
    PRIMARY KEY (old_claim_id, new_claim_id)
) WITHOUT ROWID;
CREATE INDEX supersessions_new ON supersessions (new_claim_id);

-- Dedup merges: evidence that joined an existing claim instead of making a new one.
CREATE TABLE claim_merges (
    claim_id     TEXT NOT NULL REFERENCES claims (id) ON DELETE CASCADE,
    source_key   TEXT NOT NULL,
    stage        TEXT NOT NULL,
    similarity   REAL,
    reason       TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    PRIMARY KEY (claim_id, source_key)
) WITHOUT ROWID;

-- Admission decisions, for explain: per event (source admission) or per claim draft (gate).
CREATE TABLE admission_decisions (
    id          INTEGER PRIMARY KEY,
    event_id    TEXT,
    claim_key   TEXT,
    mode        TEXT NOT NULL CHECK (mode IN ('enforce', 'observe', 'off')),
    decision    TEXT NOT NULL CHECK (decision IN ('admit', 'block', 'would_block')),
    rule        TEXT NOT NULL,
    created_at  TEXT NOT NULL
);
CREATE INDEX admission_event ON admission_decisions (event_id);

CREATE TABLE entities (
    id          TEXT PRIMARY KEY,
    namespace   TEXT NOT NULL,
    name        TEXT NOT NULL,
    normalized  TEXT NOT NULL,
    kind        TEXT NOT NULL DEFAULT 'thing',
    created_at  TEXT NOT NULL,
    UNIQUE (namespace, normalized, kind)
);

CREATE TABLE claim_entities (
    claim_id   TEXT NOT NULL REFERENCES claims (id) ON DELETE CASCADE,
    entity_id  TEXT NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
    PRIMARY KEY (claim_id, entity_id)
) WITHOUT ROWID;
CREATE INDEX claim_entities_entity ON claim_entities (entity_id);

-- Vectors: float32 BLOBs with the model id and a version hash; vectors of different models are
-- never compared.
CREATE TABLE vectors (
    owner_kind     TEXT NOT NULL CHECK (owner_kind IN ('claim', 'event', 'observation')),
    owner_id       TEXT NOT NULL,
    model_id       TEXT NOT NULL,
    model_version  TEXT NOT NULL,
    dim            INTEGER NOT NULL,
    vector         BLOB NOT NULL,
    created_at     TEXT NOT NULL,
    PRIMARY KEY (owner_kind, owner_id, model_id)
) WITHOUT ROWID;

-- Observations and mental models: derived from several claims; needs_recompute is set when an
-- underlying claim is superseded or forgotten.
CREATE TABLE observations (
    id               TEXT PRIMARY KEY,
    namespace        TEXT NOT NULL,
    kind             TEXT NOT NULL CHECK (kind IN ('observation', 'mental_model')),
    text             TEXT NOT NULL,
    status           TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'archived')),
    needs_recompute  INTEGER NOT NULL DEFAULT 0,
    created_at       TEXT NOT NULL,
    updated_at       TEXT NOT NULL
);
CREATE TABLE observation_sources (
    observation_id  TEXT NOT NULL REFERENCES observations (id) ON DELETE CASCADE,
    claim_id        TEXT NOT NULL REFERENCES claims (id) ON DELETE CASCADE,
    PRIMARY KEY (observation_id, claim_id)
) WITHOUT ROWID;

-- Experience channel: Episode -> Trace / Reward -> Policy -> Procedure.
CREATE TABLE episodes (
    id          TEXT PRIMARY KEY,
    namespace   TEXT NOT NULL,
    session_id  TEXT,
    goal        TEXT NOT NULL,
    outcome     TEXT,
    status      TEXT NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'succeeded', 'failed', 'abandoned')),
    started_at  TEXT NOT NULL,
    ended_at    TEXT
);
CREATE TABLE episode_events (
    episode_id  TEXT NOT NULL REFERENCES episodes (id) ON DELETE CASCADE,
    event_id    TEXT NOT NULL REFERENCES events (id) ON DELETE CASCADE,
    PRIMARY KEY (episode_id, event_id)
) WITHOUT ROWID;
CREATE TABLE traces (
    id          TEXT PRIMARY KEY,
    episode_id  TEXT NOT NULL REFERENCES episodes (id) ON DELETE CASCADE,
    step        INTEGER NOT NULL,
    action      TEXT NOT NULL,
    result      TEXT,
    created_at  TEXT NOT NULL,
    UNIQUE (episode_id, step)
);
CREATE TABLE rewards (
    id          TEXT PRIMARY KEY,
    episode_id  TEXT NOT NULL REFERENCES episodes (id) ON DELETE CASCADE,
    trace_id    TEXT REFERENCES traces (id) ON DELETE CASCADE,
    value       REAL NOT NULL,
    feedback    TEXT,
    created_at  TEXT NOT NULL
);
CREATE TABLE policies (
    id          TEXT PRIMARY KEY,
    namespace   TEXT NOT NULL,
    situation   TEXT NOT NULL,
    preference  TEXT NOT NULL,
    support     INTEGER NOT NULL DEFAULT 0,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);
CREATE TABLE procedures (
    id          TEXT PRIMARY KEY,
    namespace   TEXT NOT NULL,
    name        TEXT NOT NULL,
    steps       TEXT NOT NULL DEFAULT '[]',
    status      TEXT NOT NULL DEFAULT 'draft' CHECK (status IN ('draft', 'stable', 'retired')),
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    UNIQUE (namespace, name)
);

-- Durable job table: the truth behind the in-memory queues.
--   todo  -> doing   claim (lease_until, owner set; attempts + 1)
--   doing -> done    complete, in the same transaction as the job's outputs
--   doing -> todo    retry with run_after, or recovery of an expired/dead owner's lease
--   doing -> failed  attempts exhausted or a permanent error (last_error kept)
--   doing -> parked  waiting for an outside change (budget)
--   failed/parked -> todo   `hlmem jobs retry`
CREATE TABLE jobs (
    id           INTEGER PRIMARY KEY,
    kind         TEXT NOT NULL,
    status       TEXT NOT NULL DEFAULT 'todo'
                 CHECK (status IN ('todo', 'doing', 'done', 'failed', 'parked')),
    payload      TEXT NOT NULL,
    size         INTEGER NOT NULL DEFAULT 1,  -- items the job carries (events, claims)
    priority     INTEGER NOT NULL DEFAULT 0,
    attempts     INTEGER NOT NULL DEFAULT 0,
    run_after    REAL NOT NULL DEFAULT 0,
    lease_until  REAL,
    owner        TEXT,
    dedup_key    TEXT,
    namespace    TEXT,
    last_error   TEXT,
    created_at   REAL NOT NULL,
    updated_at   REAL NOT NULL
);
CREATE INDEX jobs_ready ON jobs (kind, priority DESC, id) WHERE status = 'todo';
CREATE INDEX jobs_doing ON jobs (owner, lease_until) WHERE status = 'doing';
CREATE INDEX jobs_status ON jobs (status, kind, size);  -- covers the backlog sums
-- One live job per dedup key: a replayed enqueue of the same work is a no-op.
CREATE UNIQUE INDEX jobs_dedup ON jobs (dedup_key)
    WHERE dedup_key IS NOT NULL AND status IN ('todo', 'doing');

-- Provider gateway: one row per model call, and budget reservations made before each call.
CREATE TABLE provider_calls (
    id                 INTEGER PRIMARY KEY,
    stage              TEXT NOT NULL,
    provider           TEXT NOT NULL,
    model              TEXT NOT NULL,
    call_kind          TEXT NOT NULL CHECK (call_kind IN ('chat', 'embed', 'rerank')),
    namespace          TEXT,
    job_id             INTEGER,
    prompt_tokens      INTEGER NOT NULL DEFAULT 0,
    completion_tokens  INTEGER NOT NULL DEFAULT 0,
    cost               REAL NOT NULL DEFAULT 0,
    currency           TEXT NOT NULL DEFAULT 'USD',
    latency_ms         REAL,
    outcome            TEXT NOT NULL CHECK (outcome IN ('ok', 'error', 'refused')),
    error_class        TEXT,
    retries            INTEGER NOT NULL DEFAULT 0,
    created_at         TEXT NOT NULL
);
CREATE INDEX provider_calls_time ON provider_calls (created_at);
CREATE TABLE budget_reservations (
    id          INTEGER PRIMARY KEY,
    call_id     INTEGER REFERENCES provider_calls (id) ON DELETE SET NULL,
    namespace   TEXT,
    provider    TEXT NOT NULL,
    model       TEXT NOT NULL,
    amount      REAL NOT NULL,
    status      TEXT NOT NULL CHECK (status IN ('held', 'settled', 'released')),
    owner       TEXT,
    created_at  TEXT NOT NULL,
    settled_at  TEXT
);
CREATE INDEX budget_reservations_held ON budget_reservations (status) WHERE status = 'held';
