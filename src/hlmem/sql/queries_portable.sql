-- Named queries of export / import (hlmem.portable.reader) and backup / restore (hlmem.portable.backups).
-- Loaded beside queries.sql by hlmem.store.db. The export reads run on a connection of their own,
-- inside one read transaction (one snapshot), in pages keyed by rowid: :after, :limit.
-- :ns is a namespace, or NULL for every namespace.

-- --- export ----------------------------------------------------------------------------------

-- name: export_namespaces
SELECT DISTINCT namespace FROM events WHERE :ns IS NULL OR namespace = :ns
UNION
SELECT DISTINCT namespace FROM claims
WHERE status != 'pending' AND (:ns IS NULL OR namespace = :ns)
ORDER BY 1;

-- name: export_counts
-- What the export will hold, read in its snapshot: the header records it, and import checks
-- that the file holds exactly that much (a truncated file is refused).
SELECT
    (SELECT count(*) FROM tombstones WHERE :ns IS NULL OR namespace = :ns) AS tombstone,
    (SELECT count(*) FROM sessions WHERE :ns IS NULL OR namespace = :ns) AS session,
    (SELECT count(*) FROM events WHERE :ns IS NULL OR namespace = :ns) AS event,
    (SELECT count(*) FROM claims WHERE status != 'pending' AND (:ns IS NULL OR namespace = :ns))
        AS claim,
    (SELECT count(*) FROM supersessions s
     JOIN claims o ON o.id = s.old_claim_id JOIN claims n ON n.id = s.new_claim_id
     WHERE o.status != 'pending' AND n.status != 'pending'
       AND (:ns IS NULL OR o.namespace = :ns)) AS supersession,
    (SELECT count(*) FROM claim_merges m JOIN claims c ON c.id = m.claim_id
     WHERE c.status != 'pending' AND (:ns IS NULL OR c.namespace = :ns)) AS merge,
    (SELECT count(*) FROM admission_decisions a JOIN events e ON e.id = a.event_id
     WHERE :ns IS NULL OR e.namespace = :ns) AS admission,
    (SELECT count(*) FROM vectors v
     WHERE v.model_id = :model AND v.model_version = :version AND v.dim = :dim
       AND (:ns IS NULL OR v.namespace = :ns)
       AND (v.owner_kind = 'event' OR EXISTS (SELECT 1 FROM claims c
            WHERE v.owner_kind = 'claim' AND c.id = v.owner_id AND c.status != 'pending')))
        AS vector;

-- name: export_tombstones
SELECT id, kind, key, namespace, reason, created_at, blocked FROM tombstones
WHERE id > :after AND (:ns IS NULL OR namespace = :ns)
ORDER BY id LIMIT :limit;

-- name: export_sessions
-- Paged by the primary key (the table has no rowid): :a, :b = the last row's key.
SELECT namespace, session_id, session_kind, started_at, ended_at FROM sessions
WHERE (namespace, session_id) > (:a, :b) AND (:ns IS NULL OR namespace = :ns)
ORDER BY namespace, session_id LIMIT :limit;

-- name: export_events
SELECT seq, id, namespace, session_id, role, content, content_hash, occurred_at, recorded_at,
       origin_class, session_kind, metadata
FROM events
WHERE seq > :after AND (:ns IS NULL OR namespace = :ns)
ORDER BY seq LIMIT :limit;

-- name: export_claims
-- Placed claims (a pending claim is still on its way through the pipeline: not a belief yet).
SELECT rowid, id, namespace, subject, predicate, value, text, qualifiers, polarity, scope,
       importance, confidence, language, content_hash, slot_key, value_key, status, valid_from,
       valid_to, recorded_at, retracted_at, superseded_by, activation, access_count,
       last_accessed_at, utility, extractor, window_id, source, created_at, activation_at,
       archived_at, archive_reason
FROM claims
WHERE rowid > :after AND status != 'pending' AND (:ns IS NULL OR namespace = :ns)
ORDER BY rowid LIMIT :limit;

-- name: export_claim_evidence
SELECT claim_id, event_id, quote, start_char, end_char FROM evidence
WHERE claim_id IN (SELECT value FROM json_each(?))
ORDER BY claim_id, event_id;

-- name: export_claim_entities
SELECT ce.claim_id, e.name, e.kind FROM claim_entities ce JOIN entities e ON e.id = ce.entity_id
WHERE ce.claim_id IN (SELECT value FROM json_each(?))
ORDER BY ce.claim_id, e.normalized, e.kind;

-- name: export_supersessions
-- Paged by the primary key (the table has no rowid): :a, :b = the last row's key.
SELECT s.old_claim_id, s.new_claim_id, s.reason, s.created_at FROM supersessions s
JOIN claims o ON o.id = s.old_claim_id JOIN claims n ON n.id = s.new_claim_id
WHERE (s.old_claim_id, s.new_claim_id) > (:a, :b)
  AND o.status != 'pending' AND n.status != 'pending'
  AND (:ns IS NULL OR o.namespace = :ns)
ORDER BY s.old_claim_id, s.new_claim_id LIMIT :limit;

-- name: export_merges
-- Paged by the primary key (the table has no rowid): :a, :b = the last row's key.
SELECT m.claim_id, m.source_key, m.stage, m.similarity, m.reason, m.created_at, m.source_hash
FROM claim_merges m JOIN claims c ON c.id = m.claim_id
WHERE (m.claim_id, m.source_key) > (:a, :b) AND c.status != 'pending'
  AND (:ns IS NULL OR c.namespace = :ns)
ORDER BY m.claim_id, m.source_key LIMIT :limit;

-- name: export_admission
SELECT a.id, a.event_id, a.claim_key, a.mode, a.decision, a.rule, a.created_at
FROM admission_decisions a JOIN events e ON e.id = a.event_id
WHERE a.id > :after AND (:ns IS NULL OR e.namespace = :ns)
ORDER BY a.id LIMIT :limit;

-- name: export_vectors
-- The vectors of one model version (the configured embedder's: the others are stale).
SELECT v.seq, v.owner_kind, v.owner_id, v.namespace, v.model_id, v.model_version, v.dim,
       v.vector, v.created_at
FROM vectors v
WHERE v.seq > :after AND v.model_id = :model AND v.model_version = :version AND v.dim = :dim
  AND (:ns IS NULL OR v.namespace = :ns)
  AND (v.owner_kind = 'event' OR EXISTS (SELECT 1 FROM claims c
       WHERE v.owner_kind = 'claim' AND c.id = v.owner_id AND c.status != 'pending'))
ORDER BY v.seq LIMIT :limit;

-- --- import ----------------------------------------------------------------------------------

-- name: import_tombstone
-- A tombstone as exported (its original time: a session tombstone compares event times with
-- it); one the store has already is left as it is.
INSERT OR IGNORE INTO tombstones (kind, key, namespace, reason, created_at, blocked)
VALUES (?, ?, ?, ?, ?, ?);

-- name: import_session
INSERT INTO sessions (namespace, session_id, session_kind, started_at, ended_at)
VALUES (?, ?, ?, ?, ?)
ON CONFLICT (namespace, session_id) DO UPDATE
SET ended_at = coalesce(sessions.ended_at, excluded.ended_at);

-- name: import_claim
-- A claim as exported, with every field; superseded_by is set once the whole chain is in
-- (import_claim_successor).
INSERT OR IGNORE INTO claims (id, namespace, subject, predicate, value, text, qualifiers,
                              polarity, scope, importance, confidence, language, content_hash,
                              slot_key, value_key, status, valid_from, valid_to, recorded_at,
                              retracted_at, activation, access_count, last_accessed_at,
                              utility, extractor, window_id, source, created_at, activation_at,
                              archived_at, archive_reason)
VALUES (:id, :namespace, :subject, :predicate, :value, :text, :qualifiers, :polarity, :scope,
        :importance, :confidence, :language, :content_hash, :slot_key, :value_key, :status,
        :valid_from, :valid_to, :recorded_at, :retracted_at, :activation, :access_count,
        :last_accessed_at, :utility, :extractor, :window_id, :source, :created_at,
        :activation_at, :archived_at, :archive_reason);

-- name: import_claim_successor
UPDATE claims SET superseded_by = ? WHERE id = ? AND superseded_by IS NULL;

-- name: import_known_claims
-- Which of the given ids are claims already, or were merged into one by an earlier import
-- (claim id, the claim holding it).
SELECT id, id AS held_by FROM claims WHERE id IN (SELECT value FROM json_each(:ids))
UNION ALL
SELECT source_key, claim_id FROM claim_merges
WHERE stage = 'import' AND source_key IN (SELECT value FROM json_each(:ids));

-- name: import_same_hash
-- Claims that were in the store before the import began (rowid <= :snapshot) with one of the
-- given [namespace, content hash] keys: exact duplicates. Live claims first.
SELECT c.id, c.namespace, c.content_hash, c.status FROM claims c
JOIN json_each(:keys) j ON c.namespace = json_extract(j.value, '$[0]')
                       AND c.content_hash = json_extract(j.value, '$[1]')
WHERE c.rowid <= :snapshot AND c.status != 'pending'
ORDER BY c.status != 'active', c.rowid;

-- name: import_slot_live
-- The live claims of one slot from before the import began (rowid <= :snapshot), newest first:
-- similarity dedup compares with them, and an imported current claim that meets one goes to
-- the conflict stage.
SELECT id, subject, text, polarity FROM claims
WHERE namespace = :namespace AND slot_key = :slot_key AND status IN ('pending', 'active')
  AND rowid <= :snapshot
ORDER BY rowid DESC
LIMIT :limit;

-- name: import_event_tombstoned
-- Which of the given event ids a forget has tombstoned.
SELECT key FROM tombstones WHERE kind = 'event' AND key IN (SELECT value FROM json_each(?));

-- --- restore ---------------------------------------------------------------------------------

-- name: restore_tombstones
SELECT id, kind, key, namespace, reason, created_at, blocked FROM tombstones ORDER BY id;

-- name: restore_missing
-- Which of the given [kind, key] pairs the (restored) store has no tombstone for.
SELECT json_extract(j.value, '$[0]') AS kind, json_extract(j.value, '$[1]') AS key
FROM json_each(?) j
WHERE NOT EXISTS (SELECT 1 FROM tombstones t
                  WHERE t.kind = json_extract(j.value, '$[0]')
                    AND t.key = json_extract(j.value, '$[1]'));

-- name: restore_content_events
-- Events with one of the given [namespace, content hash] keys (a content tombstone's events):
-- one scan of the events (no index by content hash: migration 0008 says why).
SELECT e.id FROM events e
WHERE (e.namespace, e.content_hash) IN (
    SELECT json_extract(j.value, '$[0]'), json_extract(j.value, '$[1]') FROM json_each(?) j);

-- name: import_known_sessions
-- Which of the given [namespace, session id] pairs are sessions already.
SELECT s.namespace, s.session_id FROM sessions s
JOIN json_each(?) j ON s.namespace = json_extract(j.value, '$[0]')
                   AND s.session_id = json_extract(j.value, '$[1]');

-- name: vector_owners_present
-- Which of the given [owner kind, owner id, model id] triples hold a vector.
SELECT v.owner_kind, v.owner_id FROM vectors v
JOIN json_each(?) j ON v.owner_kind = json_extract(j.value, '$[0]')
                   AND v.owner_id = json_extract(j.value, '$[1]')
                   AND v.model_id = json_extract(j.value, '$[2]');

-- --- backup ----------------------------------------------------------------------------------

-- name: backup_is_hlmem
SELECT count(*) AS present FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations';

-- name: backup_has_tombstones
SELECT count(*) AS present FROM sqlite_master WHERE type = 'table' AND name = 'tombstones';

-- name: backup_snapshot
-- What a backup holds, read in its snapshot: the highest tombstone id, events, claims.
SELECT (SELECT coalesce(max(id), 0) FROM tombstones) AS tombstone_max_id,
       (SELECT count(*) FROM events) AS events, (SELECT count(*) FROM claims) AS claims;
