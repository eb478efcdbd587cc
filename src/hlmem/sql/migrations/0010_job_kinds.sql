-- 0010: a job's kind is one of the stages (hlmem.messages.JobKind mirrors this CHECK).
--
-- A misspelt kind used to be a job that no stage ever claims, which `drain` then waited for
-- until its timeout. SQLite cannot add a CHECK constraint in place, so the table is rebuilt
-- (rename, create, copy, drop, indexes again), keeping every row and id. Nothing references
-- jobs and no trigger reads it, so foreign keys may stay on. Every hlmem release wrote only
-- these kinds; a file holding another kind fails this migration (a CHECK error), which then
-- changes nothing.

ALTER TABLE jobs RENAME TO jobs_old;

-- (the transitions are 0001's)
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

INSERT INTO jobs (id, kind, status, payload, size, priority, attempts, run_after, lease_until,
                  owner, dedup_key, namespace, last_error, created_at, updated_at, detail)
SELECT id, kind, status, payload, size, priority, attempts, run_after, lease_until,
       owner, dedup_key, namespace, last_error, created_at, updated_at, detail
FROM jobs_old;

DROP TABLE jobs_old;

CREATE INDEX jobs_ready ON jobs (kind, priority DESC, id) WHERE status = 'todo';
CREATE INDEX jobs_doing ON jobs (owner, lease_until) WHERE status = 'doing';
CREATE INDEX jobs_status ON jobs (status, kind, size);  -- covers the backlog sums
CREATE INDEX jobs_done_age ON jobs (updated_at) WHERE status = 'done';
-- One live job per dedup key: a replayed enqueue of the same work is a no-op.
CREATE UNIQUE INDEX jobs_dedup ON jobs (dedup_key)
    WHERE dedup_key IS NOT NULL AND status IN ('todo', 'doing');
