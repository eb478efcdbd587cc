-- Maintenance, the pipeline's "sleep" (hlmem.stages.maintenance): lifecycle columns on claims,
-- the scheduler's durable state, and the indexes that keep every bounded tick from scanning
-- whole tables.

-- When `activation` was last evaluated (a recall touch, positive feedback, a decay write);
-- NULL until then: decay counts from created_at (or recorded_at). The stored value decays
-- lazily: activation * 0.5 ^ (days since activation_at / half-life of scope and importance).
ALTER TABLE claims ADD COLUMN activation_at TEXT;

-- Archived claims (status 'archived', which leaves current recall; history keeps them with
-- their evidence): when, and why. 'expired': a plan or short-term claim past its valid_to plus
-- grace (TTL); 'silent': long unaccessed, activation decayed below the archive threshold.
ALTER TABLE claims ADD COLUMN archived_at TEXT;
ALTER TABLE claims ADD COLUMN archive_reason TEXT
    CHECK (archive_reason IS NULL OR archive_reason IN ('expired', 'silent'));

-- TTL candidates of one scope, oldest valid_to first.
CREATE INDEX claims_ttl ON claims (scope, valid_to)
    WHERE status = 'active' AND valid_to IS NOT NULL;

-- Durable state of maintenance, one row per name:
--   'schedule'    marked_at = when the last pass ended (the next is due interval_s later)
--   'vector_log'  cursor = the vector_deletions seq logged when marked_at was written; rows up
--                 to it are pruned once vector_log_keep_days have passed since
-- Times are the (injectable) clock's ISO text. Cursors of a pass in progress travel in its
-- job's payload instead (MaintenanceTick), so a crash resumes the pass where it was.
CREATE TABLE maintenance_state (
    name       TEXT PRIMARY KEY,
    cursor     INTEGER NOT NULL DEFAULT 0,
    marked_at  TEXT NOT NULL
) WITHOUT ROWID;

-- Job hygiene: the oldest done jobs first, without reading the live ones.
CREATE INDEX jobs_done_age ON jobs (updated_at) WHERE status = 'done';

-- Observations waiting to be re-derived, in rowid order (the tick's cursor).
CREATE INDEX observations_stale ON observations (needs_recompute) WHERE needs_recompute = 1;
