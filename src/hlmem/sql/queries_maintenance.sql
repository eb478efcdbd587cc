-- Named queries of the claim lifecycle (hlmem.claims.activation) and the maintenance stage
-- (hlmem.stages.maintenance; tables and columns: migration 0007). Every write is bounded by
-- :limit or by the ids it is given, so one tick is one short transaction.

-- --- activation (recall touch, feedback) ------------------------------------------------------

-- name: lifecycle_activation_rows
-- The stored activation of the given claims and when it was evaluated (never: when stored).
SELECT id, activation, coalesce(activation_at, created_at, recorded_at) AS since, scope,
       importance
FROM claims
WHERE id IN (SELECT value FROM json_each(?)) AND status != 'forgotten';

-- name: lifecycle_touch
-- (activation, activation_at, accesses to add, last_accessed_at, id)
UPDATE claims SET activation = ?, activation_at = ?, access_count = access_count + ?,
                  last_accessed_at = ?
WHERE id = ?;

-- --- durable state --------------------------------------------------------------------------

-- name: maintenance_state_get
SELECT cursor, marked_at FROM maintenance_state WHERE name = ?;

-- name: maintenance_state_set
-- (name, cursor, marked_at)
INSERT INTO maintenance_state (name, cursor, marked_at) VALUES (?, ?, ?)
ON CONFLICT (name) DO UPDATE SET cursor = excluded.cursor, marked_at = excluded.marked_at;

-- --- TTL ------------------------------------------------------------------------------------

-- name: maintenance_expire_claims
-- Active claims of one scope whose valid_to + grace * (1 + factor * importance) is past: out of
-- current recall (archived, reason 'expired'), oldest first. :latest (now - grace) bounds the
-- index range; the exact test per row is the julianday comparison.
UPDATE claims SET status = 'archived', archived_at = :now, archive_reason = 'expired'
WHERE id IN (
    SELECT id FROM claims
    WHERE scope = :scope AND status = 'active' AND valid_to IS NOT NULL
      AND valid_to <= :latest
      AND julianday(valid_to) + :grace_days * (1 + :factor * importance) <= julianday(:now)
    ORDER BY valid_to
    LIMIT :limit
)
RETURNING id;

-- name: maintenance_drop_claim_vectors
-- Archived or merged claims lose their vectors; the deletions are logged for the indexes.
DELETE FROM vectors
WHERE owner_kind = 'claim' AND owner_id IN (SELECT value FROM json_each(?));

-- name: maintenance_invalidate_observations
UPDATE observations SET needs_recompute = 1, updated_at = :now
WHERE id IN (SELECT observation_id FROM observation_sources
             WHERE claim_id IN (SELECT value FROM json_each(:ids)));

-- --- decay and archive ----------------------------------------------------------------------

-- name: maintenance_lifecycle_window
-- The next active claims after rowid :after, with their activation's reference time and their
-- last access (never: when stored).
SELECT rowid, id, scope, importance, activation,
       coalesce(activation_at, created_at, recorded_at) AS since,
       coalesce(last_accessed_at, created_at, recorded_at) AS last_access
FROM claims
WHERE rowid > :after AND status = 'active'
ORDER BY rowid
LIMIT :limit;

-- name: maintenance_archive_claim
-- (archived_at, activation, activation_at, id): long silent and low activation.
UPDATE claims SET status = 'archived', archived_at = ?, archive_reason = 'silent',
                  activation = ?, activation_at = ?
WHERE id = ? AND status = 'active';

-- name: maintenance_write_activation
-- (activation, activation_at, id): the decayed value written down; confidence untouched.
UPDATE claims SET activation = ?, activation_at = ? WHERE id = ? AND status = 'active';

-- --- dedup convergence ----------------------------------------------------------------------

-- name: maintenance_dedup_window
SELECT rowid, id, namespace, slot_key, subject, text, polarity, content_hash
FROM claims
WHERE rowid > :after AND status = 'active'
ORDER BY rowid
LIMIT :limit;

-- name: maintenance_slot_elders
-- Active claims of one slot stored before rowid :before, newest first.
SELECT rowid, id, subject, text, polarity, content_hash
FROM claims
WHERE namespace = :namespace AND slot_key = :slot_key AND status = 'active' AND rowid < :before
ORDER BY rowid DESC
LIMIT :limit;

-- name: maintenance_merge_rows
-- Both sides of planned merges, re-read inside the transaction: only still-active ones merge.
SELECT id, activation, coalesce(activation_at, created_at, recorded_at) AS since, scope,
       importance, access_count, last_accessed_at, utility
FROM claims
WHERE id IN (SELECT value FROM json_each(?)) AND status = 'active';

-- name: maintenance_copy_entities
INSERT OR IGNORE INTO claim_entities (claim_id, entity_id)
SELECT :target, entity_id FROM claim_entities WHERE claim_id = :source;

-- name: maintenance_copy_merges
-- What had merged into the merged claim is recorded on its survivor too (explain).
INSERT OR IGNORE INTO claim_merges (claim_id, source_key, stage, similarity, reason, created_at)
SELECT :target, source_key, stage, similarity, reason, created_at
FROM claim_merges WHERE claim_id = :source;

-- name: maintenance_record_merge
-- (survivor, merged claim id, similarity, reason, created_at)
INSERT OR IGNORE INTO claim_merges (claim_id, source_key, stage, similarity, reason, created_at)
VALUES (?, ?, 'maintenance', ?, ?, ?);

-- name: maintenance_merge_claim
-- The newer duplicate leaves belief: superseded by the older claim it repeats, from :now.
-- Its valid time is left as it was (it is the same fact, not a replaced one).
UPDATE claims SET status = 'superseded', superseded_by = :target, retracted_at = :now
WHERE id = :source AND status = 'active';

-- name: maintenance_absorb
-- (activation, activation_at, access_count, last_accessed_at, utility, id): the survivor
-- carries the use of both.
UPDATE claims SET activation = ?, activation_at = ?, access_count = ?, last_accessed_at = ?,
                  utility = ?
WHERE id = ?;

-- --- re-derivation --------------------------------------------------------------------------

-- name: maintenance_reindex_window
-- Claims that recall can show (history included), not merged away by maintenance, after rowid
-- :after, with their current full-text body (NULL: missing).
SELECT c.rowid, c.id, c.namespace, c.text, c.value, c.predicate, d.body
FROM claims c
LEFT JOIN recall_docs d ON d.kind = 'claim' AND d.item_id = c.id
WHERE c.rowid > :after AND c.status IN ('active', 'superseded', 'archived')
  AND NOT EXISTS (SELECT 1 FROM claim_merges m
                  WHERE m.source_key = c.id AND m.stage = 'maintenance')
ORDER BY c.rowid
LIMIT :limit;

-- name: maintenance_reindexable
-- Of the given claims, those still eligible for a full-text row (re-checked in the transaction).
SELECT c.id FROM claims c
WHERE c.id IN (SELECT value FROM json_each(?))
  AND c.status IN ('active', 'superseded', 'archived')
  AND NOT EXISTS (SELECT 1 FROM claim_merges m
                  WHERE m.source_key = c.id AND m.stage = 'maintenance');

-- name: maintenance_stale_observations
-- Flagged observations after rowid :after, with how many of their source claims are active.
SELECT o.rowid, o.id,
       (SELECT count(*) FROM observation_sources s JOIN claims c ON c.id = s.claim_id
        WHERE s.observation_id = o.id AND c.status = 'active') AS live
FROM observations o
WHERE o.needs_recompute = 1 AND o.rowid > :after AND o.status = 'active'
ORDER BY o.rowid
LIMIT :limit;

-- name: maintenance_archive_observations
-- Flagged observations none of whose sources is active any more: nothing left to derive from.
UPDATE observations SET status = 'archived', needs_recompute = 0, updated_at = :now
WHERE id IN (SELECT value FROM json_each(:ids)) AND needs_recompute = 1;

-- --- hygiene --------------------------------------------------------------------------------

-- name: maintenance_purge_done_jobs
-- Done jobs finished before :before (wall-clock seconds), oldest first; failed and parked jobs
-- are never deleted here.
DELETE FROM jobs WHERE id IN (
    SELECT id FROM jobs WHERE status = 'done' AND updated_at < :before
    ORDER BY updated_at
    LIMIT :limit
);

-- name: maintenance_vector_log_head
SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'vector_deletions'), 0) AS head;

-- name: maintenance_prune_vector_log
DELETE FROM vector_deletions WHERE seq IN (
    SELECT seq FROM vector_deletions WHERE seq <= :upto ORDER BY seq LIMIT :limit
);
