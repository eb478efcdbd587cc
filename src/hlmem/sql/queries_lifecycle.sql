-- Named queries of the lifecycle: explicit forget (hlmem.claims.forgetting, and the admission stage for
-- in-conversation requests), user corrections (hlmem.lifecycle.correct, the conflict stage) and explain
-- (hlmem.lifecycle.explain). Tables and triggers: migrations 0001 and 0006. Lists travel as JSON arrays.

-- --- forget: what to delete ---------------------------------------------------------------------

-- name: forget_claim_rows
SELECT id, namespace, status, content_hash, superseded_by, valid_from, recorded_at, text
FROM claims WHERE id IN (SELECT value FROM json_each(?));

-- name: forget_claims_of_events
-- Every claim (any status, pending too) resting on one of the events.
SELECT DISTINCT claim_id FROM evidence WHERE event_id IN (SELECT value FROM json_each(?));

-- name: forget_claims_of_hashes
-- Live (pending or active) claims holding one of the (namespace, content hash) pairs.
SELECT c.id FROM claims c
JOIN json_each(?) j ON c.namespace = json_extract(j.value, '$[0]')
                   AND c.content_hash = json_extract(j.value, '$[1]')
WHERE c.status IN ('pending', 'active');

-- name: forget_session_events
SELECT id FROM events WHERE namespace = ? AND session_id = ? ORDER BY seq;

-- name: forget_evidence_events
SELECT DISTINCT event_id FROM evidence WHERE claim_id IN (SELECT value FROM json_each(?));

-- name: forget_events_still_needed
-- Events of :events that a claim outside :claims rests on.
SELECT DISTINCT event_id FROM evidence
WHERE event_id IN (SELECT value FROM json_each(:events))
  AND claim_id NOT IN (SELECT value FROM json_each(:claims));

-- name: forget_events_in_flight
-- Events of :events that unfinished pipeline work still reads: a windower, admission or dedup
-- job not done (other than :exclude_jobs, the caller's own) naming the event, or a window of
-- the event that is open or not yet extracted. Their claims may not exist yet.
SELECT e.value AS event_id FROM json_each(:events) e
WHERE EXISTS (SELECT 1 FROM jobs j
              WHERE j.status IN ('todo', 'doing', 'failed', 'parked')
                AND j.kind IN ('windower', 'admission', 'dedup')
                AND j.id NOT IN (SELECT value FROM json_each(:exclude_jobs))
                AND instr(j.payload, json_quote(e.value)) > 0)
   OR EXISTS (SELECT 1 FROM window_items wi JOIN windows w ON w.id = wi.window_id
              WHERE wi.event_id = e.value
                AND (w.status = 'open'
                     OR NOT EXISTS (SELECT 1 FROM extractions x WHERE x.window_id = w.id)));

-- name: forget_event_rows
SELECT id, namespace, session_id, content_hash, content FROM events
WHERE id IN (SELECT value FROM json_each(?));

-- name: forget_merge_sources
SELECT claim_id, source_key, source_hash FROM claim_merges
WHERE claim_id IN (SELECT value FROM json_each(?));

-- name: forget_counts
-- What a forget of :claims and :events deletes besides the rows themselves.
SELECT
    (SELECT count(*) FROM vectors
     WHERE (owner_kind = 'claim' AND owner_id IN (SELECT value FROM json_each(:claims)))
        OR (owner_kind = 'event' AND owner_id IN (SELECT value FROM json_each(:events))))
        AS vectors,
    (SELECT count(*) FROM recall_docs
     WHERE (kind = 'claim' AND item_id IN (SELECT value FROM json_each(:claims)))
        OR (kind = 'event' AND item_id IN (SELECT value FROM json_each(:events))))
        AS fts_rows,
    (SELECT count(*) FROM evidence
     WHERE claim_id IN (SELECT value FROM json_each(:claims))
        OR event_id IN (SELECT value FROM json_each(:events))) AS evidence_links,
    (SELECT count(DISTINCT observation_id) FROM observation_sources
     WHERE claim_id IN (SELECT value FROM json_each(:claims))) AS observations_invalidated;

-- name: insert_tombstone
INSERT OR IGNORE INTO tombstones (kind, key, namespace, reason, created_at)
VALUES (?, ?, ?, ?, ?);

-- --- forget: keeping supersession chains coherent ------------------------------------------

-- name: forget_predecessors
-- The claims that the given claims superseded, with the reason and their clocks.
SELECT s.old_claim_id, s.new_claim_id, s.reason, c.status, c.valid_from, c.valid_to,
       c.recorded_at
FROM supersessions s JOIN claims c ON c.id = s.old_claim_id
WHERE s.new_claim_id IN (SELECT value FROM json_each(?));

-- name: forget_relink
UPDATE claims SET superseded_by = :new WHERE id = :old AND status = 'superseded';

-- name: forget_reinstate
-- A retracted successor is gone: its predecessor is believed again, valid again from where the
-- successor had cut it (a valid end it had of its own is kept).
UPDATE claims SET status = 'active', superseded_by = NULL, retracted_at = NULL,
                  valid_to = CASE WHEN valid_to = :cut THEN NULL ELSE valid_to END
WHERE id = :id AND status = 'superseded';

-- --- forget: the cascade -------------------------------------------------------------------------

-- name: forget_claim_entities
SELECT DISTINCT entity_id FROM claim_entities WHERE claim_id IN (SELECT value FROM json_each(?));

-- name: forget_delete_claims
-- Evidence, entity links, merges, supersessions and observation sources go with them
-- (ON DELETE CASCADE); superseded_by pointing at them becomes NULL.
DELETE FROM claims WHERE id IN (SELECT value FROM json_each(?));

-- name: forget_delete_orphan_entities
DELETE FROM entities
WHERE id IN (SELECT value FROM json_each(?))
  AND NOT EXISTS (SELECT 1 FROM claim_entities ce WHERE ce.entity_id = entities.id);

-- name: forget_delete_events
-- Only events with an `event` tombstone may go (trigger events_delete_needs_tombstone).
DELETE FROM events WHERE id IN (SELECT value FROM json_each(?));

-- name: forget_delete_decisions
DELETE FROM admission_decisions
WHERE claim_key IN (SELECT value FROM json_each(:keys))
   OR (claim_key IS NULL AND event_id IN (SELECT value FROM json_each(:events)));

-- name: forget_delete_done_jobs
-- Finished admission and dedup jobs carry candidate drafts (text, values, quotes): those naming
-- a forgotten claim key or event go. :needles are the keys and ids as JSON strings.
DELETE FROM jobs
WHERE status = 'done' AND kind IN ('admission', 'dedup')
  AND EXISTS (SELECT 1 FROM json_each(:needles) n WHERE instr(jobs.payload, n.value) > 0);

-- name: forget_delete_empty_session
DELETE FROM sessions
WHERE namespace = ? AND session_id = ?
  AND NOT EXISTS (SELECT 1 FROM events e
                  WHERE e.namespace = sessions.namespace AND e.session_id = sessions.session_id);

-- name: forget_tombstone_counts
SELECT kind, count(*) AS n, coalesce(sum(blocked), 0) AS blocked FROM tombstones GROUP BY kind;

-- name: forget_tombstone_of
SELECT kind, created_at, reason FROM tombstones WHERE kind = ? AND key = ?;

-- name: forget_blocking_events
-- For each event [id, namespace, session_id, content_hash, occurred_at] of ?, the oldest
-- tombstone that drops it on arrival (the tests of trigger events_drop_forgotten, 0006): the
-- forget that stopped it, not the event tombstone the trigger adds. (event id, kind, created_at,
-- reason); events no tombstone drops are not listed.
SELECT json_extract(j.value, '$[0]') AS event_id, t.kind, t.created_at, t.reason,
       min(t.id) AS tombstone_id
FROM json_each(?) j
JOIN tombstones t
  ON (t.kind = 'event' AND t.key = json_extract(j.value, '$[0]'))
  OR (t.kind = 'content'
      AND t.key = json_extract(j.value, '$[1]') || ':' || json_extract(j.value, '$[3]'))
  OR (t.kind = 'session'
      AND t.key = json_extract(j.value, '$[1]') || char(31) || json_extract(j.value, '$[2]')
      AND json_extract(j.value, '$[4]') <= t.created_at)
GROUP BY j.key;

-- name: forget_explain_arrival
-- The event tombstone the trigger gave an event dropped on arrival: say which forget stopped it
-- and when (its time becomes that forget's).
UPDATE tombstones SET reason = ?, created_at = ?
WHERE kind = 'event' AND key = ? AND reason = 'dropped on arrival: forgotten content or session';

-- name: forget_event_tombstones
-- The event tombstones of the given event ids (Memory.blocked).
SELECT key, created_at, reason FROM tombstones
WHERE kind = 'event' AND key IN (SELECT value FROM json_each(?));

-- name: forget_blocking_fact
-- The tombstones that stop a remembered fact, oldest first: those that would drop its event
-- (as events_drop_forgotten tests :id, :namespace, :hash, :session, :occurred) and those of its
-- candidate key (:claim) and slot key (:slot), which admission and dedup test.
SELECT id, kind, created_at FROM tombstones
WHERE (kind = 'event' AND key = :id)
   OR (kind = 'content' AND key = :namespace || ':' || :hash)
   OR (kind = 'session' AND key = :namespace || char(31) || :session
       AND :occurred <= created_at)
   OR (kind = 'claim' AND key = :claim)
   OR (kind = 'slot' AND key = :slot)
ORDER BY id;

-- name: forget_lift_tombstone
-- remember(override_forget=True): the user teaches a forgotten fact again.
DELETE FROM tombstones WHERE id = ? AND kind IN ('content', 'slot');

-- name: forget_item_vectors
-- The stored vectors of the recalled :items ([kind, id] pairs) made by the :model / :version
-- embedder (forget by query's vector floor).
SELECT v.owner_kind, v.owner_id, v.vector FROM vectors v
JOIN json_each(:items) j ON v.owner_kind = json_extract(j.value, '$[0]')
                        AND v.owner_id = json_extract(j.value, '$[1]')
WHERE v.model_id = :model AND v.model_version = :version;

-- --- in-conversation forget requests (stages/admission.py) --------------------------------------

-- name: forget_request_event
SELECT seq, namespace, session_id, role, origin_class, session_kind FROM events WHERE id = ?;

-- name: forget_user_events_before
-- The session's user events before seq ?, newest first.
SELECT id, content FROM events
WHERE namespace = ? AND session_id = ? AND seq < ? AND role = 'user'
ORDER BY seq DESC
LIMIT ?;

-- name: forget_admitted_keys
SELECT claim_key FROM admission_decisions
WHERE event_id = ? AND claim_key IS NOT NULL AND decision = 'admit';

-- name: forget_scrub_job
-- A job's payload without the text of what a forget request retracted (admission).
UPDATE jobs SET payload = ? WHERE id = ?;

-- name: forget_unsettled_keys
-- Admitted candidate keys still on their way: no placed claim, no merge, no tombstone yet.
SELECT k.value FROM json_each(?) k
WHERE NOT EXISTS (SELECT 1 FROM claims c WHERE c.id = k.value AND c.status != 'pending')
  AND NOT EXISTS (SELECT 1 FROM claim_merges m WHERE m.source_key = k.value)
  AND NOT EXISTS (SELECT 1 FROM tombstones t WHERE t.kind = 'claim' AND t.key = k.value);

-- --- dedup and admission: what a forget stopped ----------------------------------------------

-- name: tombstoned_any
-- Which of the [kind, key] pairs (claim, slot, event) a forget has tombstoned.
SELECT t.kind, t.key FROM tombstones t
JOIN json_each(?) j ON t.kind = json_extract(j.value, '$[0]')
                   AND t.key = json_extract(j.value, '$[1]');

-- name: insert_merge_hashed
-- dedup's merge, with the merged candidate's content hash (a forget tombstones it too).
INSERT OR IGNORE INTO claim_merges (claim_id, source_key, stage, similarity, reason, created_at,
                                    source_hash)
VALUES (?, ?, ?, ?, ?, ?, ?);

-- --- user corrections (hlmem.lifecycle.correct, stages/conflict.py) ------------------------------------

-- name: correction_target
-- The claim a user correction replaces, named in its event's metadata by hlmem.lifecycle.correct.
SELECT json_extract(e.metadata, '$.correct.claim_id') AS claim_id
FROM evidence ev JOIN events e ON e.id = ev.event_id
WHERE ev.claim_id = ? AND json_extract(e.metadata, '$.correct.claim_id') IS NOT NULL
LIMIT 1;

-- --- explain (hlmem.lifecycle.explain) ---------------------------------------------------------------------

-- name: explain_claim
SELECT id, namespace, subject, predicate, value, text, status, language, importance,
       confidence, valid_from, valid_to, recorded_at, polarity, qualifiers, scope,
       retracted_at, superseded_by, activation, access_count, last_accessed_at, utility,
       extractor, window_id, source, created_at
FROM claims WHERE id = ?;

-- name: explain_evidence
SELECT ev.event_id, ev.quote, ev.start_char, ev.end_char, e.role, e.origin_class,
       e.session_kind, e.session_id, e.occurred_at, e.recorded_at
FROM evidence ev JOIN events e ON e.id = ev.event_id
WHERE ev.claim_id = ?
ORDER BY e.seq;

-- name: explain_decisions
-- Admission decisions about the claim's candidates (:keys) and its events' sources (:events).
SELECT event_id, claim_key, mode, decision, rule, created_at FROM admission_decisions
WHERE claim_key IN (SELECT value FROM json_each(:keys))
   OR (claim_key IS NULL AND event_id IN (SELECT value FROM json_each(:events)))
ORDER BY id;

-- name: explain_merges
SELECT source_key, stage, similarity, reason, created_at FROM claim_merges
WHERE claim_id = ? ORDER BY created_at, source_key;

-- name: explain_chain_back
-- The supersessions leading to a claim, nearest first: what it replaced, and so on back.
WITH RECURSIVE back(id, depth) AS (
    SELECT :id, 0
    UNION
    SELECT s.old_claim_id, b.depth + 1 FROM supersessions s JOIN back b ON s.new_claim_id = b.id
    WHERE b.depth < 64
)
SELECT s.old_claim_id, s.new_claim_id, s.reason, s.created_at, b.depth
FROM back b JOIN supersessions s ON s.new_claim_id = b.id
ORDER BY b.depth, s.created_at, s.old_claim_id;

-- name: explain_chain_forward
-- The supersessions after a claim, nearest first: what replaced it, and so on forward.
WITH RECURSIVE fwd(id, depth) AS (
    SELECT :id, 0
    UNION
    SELECT s.new_claim_id, f.depth + 1 FROM supersessions s JOIN fwd f ON s.old_claim_id = f.id
    WHERE f.depth < 64
)
SELECT s.old_claim_id, s.new_claim_id, s.reason, s.created_at, f.depth
FROM fwd f JOIN supersessions s ON s.old_claim_id = f.id
ORDER BY f.depth, s.created_at, s.new_claim_id;

-- name: explain_briefs
SELECT id, predicate, value, text, status, polarity, qualifiers, valid_from, valid_to,
       recorded_at, retracted_at
FROM claims WHERE id IN (SELECT value FROM json_each(?));

-- name: explain_entities
SELECT en.name, en.kind FROM claim_entities ce JOIN entities en ON en.id = ce.entity_id
WHERE ce.claim_id = ? ORDER BY en.name;

-- name: explain_calls
-- The model calls that produced a claim: the extraction calls of the windows of its evidence
-- events (extractions.job_id) and the embedding calls of embedder jobs naming it (:needle).
SELECT pc.id, pc.stage, pc.provider, pc.model, pc.call_kind, pc.job_id, pc.prompt_tokens,
       pc.completion_tokens, pc.cost, pc.currency, pc.latency_ms, pc.outcome, pc.error_class,
       pc.retries, pc.created_at
FROM provider_calls pc
WHERE pc.job_id IN (
    SELECT x.job_id FROM extractions x
    WHERE x.job_id IS NOT NULL
      AND (x.window_id = :window
           OR x.window_id IN (SELECT wi.window_id FROM window_items wi
                              WHERE wi.event_id IN (SELECT value FROM json_each(:events))))
    UNION
    SELECT j.id FROM jobs j WHERE j.kind = 'embedder' AND instr(j.payload, :needle) > 0
)
ORDER BY pc.id;
