-- hlmem: foreign_keys=off
-- 0003: write-path cognition (admission, dedup, conflict, embedder).
-- The claims table is rebuilt (SQLite cannot change a CHECK constraint in place) with the
-- SQLite-documented procedure: foreign keys off for this migration only, new table, copy,
-- drop, rename, indexes; the runner checks `PRAGMA foreign_key_check` before committing.

-- A claim is 'pending' from dedup until the conflict stage has placed it on its slot's
-- timeline: invisible to recall until its whole chain is committed (DESIGN.md §3, invariant 5).
-- source: 'extraction' (a window) or 'remember' (a structured write). value_key: the value
-- normalised, so a slot's timeline can be grouped by value for multi-valued slots.
CREATE TABLE claims_new (
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
);
INSERT INTO claims_new (id, namespace, subject, predicate, value, text, qualifiers, polarity,
                        scope, importance, confidence, language, content_hash, slot_key,
                        status, valid_from, valid_to, recorded_at, retracted_at, superseded_by,
                        activation, access_count, last_accessed_at, utility, extractor,
                        window_id, created_at)
SELECT id, namespace, subject, predicate, value, text, qualifiers, polarity, scope, importance,
       confidence, language, content_hash, slot_key, status, valid_from, valid_to, recorded_at,
       retracted_at, superseded_by, activation, access_count, last_accessed_at, utility,
       extractor, window_id, recorded_at
FROM claims;
DROP TABLE claims;
ALTER TABLE claims_new RENAME TO claims;
CREATE INDEX claims_slot ON claims (namespace, slot_key, status);
CREATE INDEX claims_status ON claims (namespace, status, recorded_at);
CREATE INDEX claims_hash ON claims (namespace, content_hash);
CREATE INDEX claims_window ON claims (window_id) WHERE window_id IS NOT NULL;

-- A dead-lettered job keeps what explains it (a model's raw answer), shown by `jobs list`.
ALTER TABLE jobs ADD COLUMN detail TEXT;

-- Merges may join evidence from claims that were themselves pending; the source key names
-- the candidate claim that was folded in.
CREATE INDEX claim_merges_source ON claim_merges (source_key);
