-- The schema that all migrations in sql/migrations yield. Generated, and checked by
-- tests/test_store.py; regenerate with: python -m hlmem.store > src/hlmem/sql/schema.sql

CREATE INDEX admission_claim_key ON admission_decisions (claim_key) WHERE claim_key IS NOT NULL;

CREATE INDEX admission_event ON admission_decisions (event_id);

CREATE INDEX budget_reservations_held ON budget_reservations (status) WHERE status = 'held';

CREATE INDEX claim_entities_entity ON claim_entities (entity_id);

CREATE INDEX claim_merges_source ON claim_merges (source_key);

CREATE INDEX claims_hash ON claims (namespace, content_hash);

CREATE INDEX claims_slot ON claims (namespace, slot_key, status);

CREATE INDEX claims_status ON claims (namespace, status, recorded_at);

CREATE INDEX claims_ttl ON claims (scope, valid_to)
    WHERE status = 'active' AND valid_to IS NOT NULL;

CREATE INDEX claims_window ON claims (window_id) WHERE window_id IS NOT NULL;

CREATE INDEX events_session ON events (namespace, session_id, seq);

CREATE INDEX evidence_event ON evidence (event_id);

CREATE UNIQUE INDEX jobs_dedup ON jobs (dedup_key)
    WHERE dedup_key IS NOT NULL AND status IN ('todo', 'doing');

CREATE INDEX jobs_doing ON jobs (owner, lease_until) WHERE status = 'doing';

CREATE INDEX jobs_done_age ON jobs (updated_at) WHERE status = 'done';

CREATE INDEX jobs_ready ON jobs (kind, priority DESC, id) WHERE status = 'todo';

CREATE INDEX jobs_status ON jobs (status, kind, size);

CREATE INDEX observations_stale ON observations (needs_recompute) WHERE needs_recompute = 1;

CREATE INDEX provider_calls_job ON provider_calls (job_id) WHERE job_id IS NOT NULL;

CREATE INDEX provider_calls_time ON provider_calls (created_at);

CREATE INDEX supersessions_new ON supersessions (new_claim_id);

CREATE INDEX vectors_scope ON vectors (model_id, model_version, namespace, owner_kind);

CREATE UNIQUE INDEX window_items_once ON window_items (event_id, chunk_no);

CREATE UNIQUE INDEX windows_one_open ON windows (session_key) WHERE status = 'open';

CREATE INDEX windows_open_age ON windows (opened_at) WHERE status = 'open';

CREATE TABLE admission_decisions (
    id          INTEGER PRIMARY KEY,
    event_id    TEXT,
    claim_key   TEXT,
    mode        TEXT NOT NULL CHECK (mode IN ('enforce', 'observe', 'off')),
    decision    TEXT NOT NULL CHECK (decision IN ('admit', 'block', 'would_block')),
    rule        TEXT NOT NULL,
    created_at  TEXT NOT NULL
);

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
, stage TEXT NOT NULL DEFAULT '', call_kind TEXT NOT NULL DEFAULT 'chat', job_id INTEGER);

CREATE TABLE budget_usage (
    period     TEXT NOT NULL,
    namespace  TEXT NOT NULL,
    amount     REAL NOT NULL DEFAULT 0,
    PRIMARY KEY (period, namespace)
) WITHOUT ROWID;

CREATE TABLE claim_entities (
    claim_id   TEXT NOT NULL REFERENCES claims (id) ON DELETE CASCADE,
    entity_id  TEXT NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
    PRIMARY KEY (claim_id, entity_id)
) WITHOUT ROWID;

CREATE TABLE claim_merges (
    claim_id     TEXT NOT NULL REFERENCES claims (id) ON DELETE CASCADE,
    source_key   TEXT NOT NULL,
    stage        TEXT NOT NULL,
    similarity   REAL,
    reason       TEXT NOT NULL,
    created_at   TEXT NOT NULL, source_hash TEXT,
    PRIMARY KEY (claim_id, source_key)
) WITHOUT ROWID;

CREATE TABLE "claims" (
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
    value_key         TEXT NOT NULL DEFAULT '',
    status            TEXT NOT NULL DEFAULT 'active'
                      CHECK (status IN ('pending', 'active', 'superseded', 'archived',
                                        'forgotten')),
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
    window_id         TEXT,
    source            TEXT NOT NULL DEFAULT 'extraction'
                      CHECK (source IN ('extraction', 'remember', 'import')),
    created_at        TEXT
, activation_at TEXT, archived_at TEXT, archive_reason TEXT
    CHECK (archive_reason IS NULL OR archive_reason IN ('expired', 'silent')));

CREATE TABLE entities (
    id          TEXT PRIMARY KEY,
    namespace   TEXT NOT NULL,
    name        TEXT NOT NULL,
    normalized  TEXT NOT NULL,
    kind        TEXT NOT NULL DEFAULT 'thing',
    created_at  TEXT NOT NULL,
    UNIQUE (namespace, normalized, kind)
);

CREATE TABLE episode_events (
    episode_id  TEXT NOT NULL REFERENCES episodes (id) ON DELETE CASCADE,
    event_id    TEXT NOT NULL REFERENCES events (id) ON DELETE CASCADE,
    PRIMARY KEY (episode_id, event_id)
) WITHOUT ROWID;

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

CREATE TABLE event_feedback (
    event_id    TEXT PRIMARY KEY REFERENCES events (id) ON DELETE CASCADE,
    utility     REAL NOT NULL DEFAULT 0,
    updated_at  TEXT NOT NULL
);

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

CREATE TABLE evidence (
    claim_id    TEXT NOT NULL REFERENCES claims (id) ON DELETE CASCADE,
    event_id    TEXT NOT NULL REFERENCES events (id) ON DELETE CASCADE,
    quote       TEXT NOT NULL,
    start_char  INTEGER NOT NULL,
    end_char    INTEGER NOT NULL,
    PRIMARY KEY (claim_id, event_id)
) WITHOUT ROWID;

CREATE TABLE extractions (
    window_id    TEXT PRIMARY KEY,
    extractor    TEXT NOT NULL,
    model        TEXT NOT NULL DEFAULT '',
    claim_count  INTEGER NOT NULL,
    job_id       INTEGER,
    created_at   TEXT NOT NULL
);

CREATE TABLE jobs (
    id           INTEGER PRIMARY KEY,
    kind         TEXT NOT NULL
                 CHECK (kind IN ('windower', 'extractor', 'admission', 'dedup', 'conflict',
                                 'embedder', 'maintenance')),
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
    updated_at   REAL NOT NULL,
    detail       TEXT  -- what explains a dead letter (a model's raw answer), for `jobs list`
);

CREATE TABLE maintenance_state (
    name       TEXT PRIMARY KEY,
    cursor     INTEGER NOT NULL DEFAULT 0,
    marked_at  TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE observation_sources (
    observation_id  TEXT NOT NULL REFERENCES observations (id) ON DELETE CASCADE,
    claim_id        TEXT NOT NULL REFERENCES claims (id) ON DELETE CASCADE,
    PRIMARY KEY (observation_id, claim_id)
) WITHOUT ROWID;

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
, reserved REAL NOT NULL DEFAULT 0, rate_limited INTEGER NOT NULL DEFAULT 0, usage_estimated INTEGER NOT NULL DEFAULT 0);

CREATE TABLE recall_docs (
    id         INTEGER PRIMARY KEY,  -- the rowid in recall_fts
    kind       TEXT NOT NULL CHECK (kind IN ('claim', 'event')),
    item_id    TEXT NOT NULL,
    namespace  TEXT NOT NULL,
    body       TEXT NOT NULL,
    ns         TEXT GENERATED ALWAYS AS ('ns' || hex(namespace) || '0') VIRTUAL,
    UNIQUE (kind, item_id)
);

CREATE VIRTUAL TABLE recall_fts USING fts5(
    body, ns,
    content = 'recall_docs', content_rowid = 'id',
    tokenize = "porter unicode61 remove_diacritics 2 tokenchars '.'"
);

CREATE TABLE 'recall_fts_config'(k PRIMARY KEY, v) WITHOUT ROWID;

CREATE TABLE 'recall_fts_data'(id INTEGER PRIMARY KEY, block BLOB);

CREATE TABLE 'recall_fts_docsize'(id INTEGER PRIMARY KEY, sz BLOB);

CREATE TABLE 'recall_fts_idx'(segid, term, pgno, PRIMARY KEY(segid, term)) WITHOUT ROWID;

CREATE TABLE recall_namespaces (
    namespace  TEXT PRIMARY KEY,
    docs       INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE rewards (
    id          TEXT PRIMARY KEY,
    episode_id  TEXT NOT NULL REFERENCES episodes (id) ON DELETE CASCADE,
    trace_id    TEXT REFERENCES traces (id) ON DELETE CASCADE,
    value       REAL NOT NULL,
    feedback    TEXT,
    created_at  TEXT NOT NULL
);

CREATE TABLE schema_migrations ( version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL);

CREATE TABLE sessions (
    namespace     TEXT NOT NULL,
    session_id    TEXT NOT NULL,
    session_kind  TEXT NOT NULL,
    started_at    TEXT NOT NULL,
    ended_at      TEXT,
    PRIMARY KEY (namespace, session_id)
) WITHOUT ROWID;

CREATE TABLE supersessions (
    old_claim_id  TEXT NOT NULL REFERENCES claims (id) ON DELETE CASCADE,
    new_claim_id  TEXT NOT NULL REFERENCES claims (id) ON DELETE CASCADE,
    reason        TEXT NOT NULL,
    created_at    TEXT NOT NULL,
    PRIMARY KEY (old_claim_id, new_claim_id)
) WITHOUT ROWID;

CREATE TABLE tombstones (
    id          INTEGER PRIMARY KEY,
    kind        TEXT NOT NULL CHECK (kind IN ('event', 'content', 'claim', 'slot', 'session')),
    key         TEXT NOT NULL,
    namespace   TEXT NOT NULL,
    reason      TEXT NOT NULL DEFAULT '',
    created_at  TEXT NOT NULL, blocked INTEGER NOT NULL DEFAULT 0,
    UNIQUE (kind, key)
);

CREATE TABLE traces (
    id          TEXT PRIMARY KEY,
    episode_id  TEXT NOT NULL REFERENCES episodes (id) ON DELETE CASCADE,
    step        INTEGER NOT NULL,
    action      TEXT NOT NULL,
    result      TEXT,
    created_at  TEXT NOT NULL,
    UNIQUE (episode_id, step)
);

CREATE TABLE vector_deletions (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    vector_seq  INTEGER NOT NULL,
    owner_kind  TEXT NOT NULL,
    owner_id    TEXT NOT NULL,
    model_id    TEXT NOT NULL
);

CREATE TABLE vectors (
    seq            INTEGER PRIMARY KEY AUTOINCREMENT,
    owner_kind     TEXT NOT NULL CHECK (owner_kind IN ('claim', 'event', 'observation')),
    owner_id       TEXT NOT NULL,
    namespace      TEXT,
    model_id       TEXT NOT NULL,
    model_version  TEXT NOT NULL,
    dim            INTEGER NOT NULL,
    vector         BLOB NOT NULL,
    created_at     TEXT NOT NULL,
    UNIQUE (owner_kind, owner_id, model_id)
);

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

CREATE TRIGGER claims_insert_not_forgotten BEFORE INSERT ON claims
WHEN NEW.status = 'forgotten'
BEGIN
    SELECT RAISE(ABORT, 'forget deletes claims: the status forgotten is never stored');
END;

CREATE TRIGGER claims_update_not_forgotten BEFORE UPDATE OF status ON claims
WHEN NEW.status = 'forgotten'
BEGIN
    SELECT RAISE(ABORT, 'forget deletes claims: the status forgotten is never stored');
END;

CREATE TRIGGER events_delete_needs_tombstone BEFORE DELETE ON events
WHEN NOT EXISTS (SELECT 1 FROM tombstones WHERE kind = 'event' AND key = OLD.id)
BEGIN
    SELECT RAISE(ABORT, 'events are immutable: delete only through forget');
END;

CREATE TRIGGER events_drop_forgotten BEFORE INSERT ON events
WHEN EXISTS (
    SELECT 1 FROM tombstones
    WHERE (kind = 'event' AND key = NEW.id)
       OR (kind = 'content' AND key = NEW.namespace || ':' || NEW.content_hash)
       OR (kind = 'session' AND key = NEW.namespace || char(31) || NEW.session_id
           AND NEW.occurred_at <= created_at)
)
BEGIN
    UPDATE tombstones SET blocked = blocked + 1
    WHERE (kind = 'event' AND key = NEW.id)
       OR (kind = 'content' AND key = NEW.namespace || ':' || NEW.content_hash)
       OR (kind = 'session' AND key = NEW.namespace || char(31) || NEW.session_id
           AND NEW.occurred_at <= created_at);
    INSERT OR IGNORE INTO tombstones (kind, key, namespace, reason, created_at)
    VALUES ('event', NEW.id, NEW.namespace, 'dropped on arrival: forgotten content or session',
            NEW.recorded_at);
    SELECT RAISE(IGNORE);
END;

CREATE TRIGGER events_no_update BEFORE UPDATE ON events
BEGIN
    SELECT RAISE(ABORT, 'events are immutable');
END;

CREATE TRIGGER recall_docs_delete AFTER DELETE ON recall_docs
BEGIN
    INSERT INTO recall_fts (recall_fts, rowid, body, ns) VALUES ('delete', OLD.id, OLD.body, OLD.ns);
    UPDATE recall_namespaces SET docs = docs - 1 WHERE namespace = OLD.namespace;
    DELETE FROM recall_namespaces WHERE namespace = OLD.namespace AND docs <= 0;
END;

CREATE TRIGGER recall_docs_drop_forgotten BEFORE INSERT ON recall_docs
WHEN EXISTS (SELECT 1 FROM tombstones WHERE kind = NEW.kind AND key = NEW.item_id)
BEGIN
    SELECT RAISE(IGNORE);
END;

CREATE TRIGGER recall_docs_insert AFTER INSERT ON recall_docs
BEGIN
    INSERT INTO recall_fts (rowid, body, ns) VALUES (NEW.id, NEW.body, NEW.ns);
    INSERT INTO recall_namespaces (namespace, docs) VALUES (NEW.namespace, 1)
    ON CONFLICT (namespace) DO UPDATE SET docs = docs + 1;
END;

CREATE TRIGGER recall_docs_move AFTER UPDATE OF namespace ON recall_docs
WHEN OLD.namespace IS NOT NEW.namespace
BEGIN
    UPDATE recall_namespaces SET docs = docs - 1 WHERE namespace = OLD.namespace;
    DELETE FROM recall_namespaces WHERE namespace = OLD.namespace AND docs <= 0;
    INSERT INTO recall_namespaces (namespace, docs) VALUES (NEW.namespace, 1)
    ON CONFLICT (namespace) DO UPDATE SET docs = docs + 1;
END;

CREATE TRIGGER recall_docs_update AFTER UPDATE ON recall_docs
BEGIN
    INSERT INTO recall_fts (recall_fts, rowid, body, ns) VALUES ('delete', OLD.id, OLD.body, OLD.ns);
    INSERT INTO recall_fts (rowid, body, ns) VALUES (NEW.id, NEW.body, NEW.ns);
END;

CREATE TRIGGER vectors_drop_forgotten BEFORE INSERT ON vectors
WHEN EXISTS (SELECT 1 FROM tombstones WHERE kind = NEW.owner_kind AND key = NEW.owner_id)
BEGIN
    SELECT RAISE(IGNORE);
END;

CREATE TRIGGER vectors_fill_namespace AFTER INSERT ON vectors WHEN NEW.namespace IS NULL
BEGIN
    UPDATE vectors SET namespace = CASE NEW.owner_kind
        WHEN 'claim' THEN (SELECT c.namespace FROM claims c WHERE c.id = NEW.owner_id)
        WHEN 'event' THEN (SELECT e.namespace FROM events e WHERE e.id = NEW.owner_id)
        ELSE (SELECT o.namespace FROM observations o WHERE o.id = NEW.owner_id)
    END
    WHERE seq = NEW.seq;
END;

CREATE TRIGGER vectors_log_delete AFTER DELETE ON vectors
BEGIN
    INSERT INTO vector_deletions (vector_seq, owner_kind, owner_id, model_id)
    VALUES (OLD.seq, OLD.owner_kind, OLD.owner_id, OLD.model_id);
END;

CREATE TRIGGER vectors_update_moves
AFTER UPDATE OF owner_kind, owner_id, model_id, model_version, dim, vector ON vectors
BEGIN
    DELETE FROM vectors WHERE seq = NEW.seq;
    INSERT INTO vectors (owner_kind, owner_id, namespace, model_id, model_version, dim, vector,
                         created_at)
    VALUES (NEW.owner_kind, NEW.owner_id, NEW.namespace, NEW.model_id, NEW.model_version,
            NEW.dim, NEW.vector, NEW.created_at);
END;

