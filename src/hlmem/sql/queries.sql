-- Named queries, loaded once by store.py. Each block starts with `-- name: verb_noun`.
-- Parameters are always bound; lists travel as one JSON array read with json_each.
-- A single-row INSERT ... VALUES (?, ...) also gets a JSON-array form for many rows
-- (hlmem.store.db.json_rows_form): executemany runs it once over all rows.

-- name: existing_event_ids
SELECT id FROM events WHERE id IN (SELECT value FROM json_each(?));

-- name: any_line_event_id
-- An event named by a JSONL line's position (ids jl_<line hash>_<line number>: hlmem.memory.jsonl).
SELECT 1 FROM events WHERE id >= 'jl_' AND id < 'jl`' LIMIT 1;

-- name: line_event_ids
-- Per prefix jl_<line hash>_ of the JSON array, the first event whose id starts with it.
SELECT p.value AS prefix,
       (SELECT e.id FROM events AS e WHERE e.id >= p.value AND e.id < p.value || '~'
        ORDER BY e.id LIMIT 1) AS event_id
FROM json_each(?) AS p;

-- name: insert_event
INSERT INTO events (id, namespace, session_id, role, content, content_hash, occurred_at,
                    recorded_at, origin_class, session_kind, metadata)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?);

-- name: insert_session
INSERT INTO sessions (namespace, session_id, session_kind, started_at)
VALUES (?, ?, ?, ?)
ON CONFLICT (namespace, session_id) DO NOTHING;

-- name: end_session
UPDATE sessions SET ended_at = ? WHERE namespace = ? AND session_id = ? AND ended_at IS NULL;

-- name: insert_job
-- A live job with the same dedup_key makes this a no-op; ON CONFLICT (not OR IGNORE, which would
-- also skip a row that breaks the CHECK on kind without a word) covers only that.
INSERT INTO jobs (kind, payload, size, priority, run_after, dedup_key, namespace,
                  created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT DO NOTHING;

-- name: count_backlog
SELECT coalesce(sum(size), 0) AS backlog FROM jobs WHERE status IN ('todo', 'doing');

-- name: count_backlog_to_claims
-- What ingestion's backpressure counts: the jobs on the way from an event to its claims.
-- Embedding (vectors come a little later) and maintenance never hold back ingestion.
SELECT coalesce(sum(size), 0) AS backlog FROM jobs
WHERE status IN ('todo', 'doing') AND kind NOT IN ('embedder', 'maintenance');

-- name: count_backlog_kind
SELECT coalesce(sum(size), 0) FROM jobs WHERE kind = ? AND status IN ('todo', 'doing');

-- name: claim_jobs
UPDATE jobs
SET status = 'doing', owner = :owner, lease_until = :lease_until,
    attempts = attempts + 1, updated_at = :now
WHERE id IN (
    SELECT id FROM jobs
    WHERE kind = :kind AND status = 'todo' AND run_after <= :now
    ORDER BY priority DESC, id
    LIMIT :limit
)
RETURNING id, kind, payload, attempts;

-- name: complete_jobs
-- (now, job ids as a JSON array, owner): one statement for the batch. The jobs are found by
-- id: `+status` and `+owner` keep SQLite off jobs_doing, whose walk would read every job this
-- process holds (all stages' leased batches, hundreds at a burst) to complete a few.
UPDATE jobs SET status = 'done', owner = NULL, lease_until = NULL, updated_at = ?
WHERE id IN (SELECT value FROM json_each(?)) AND +status = 'doing' AND +owner = ?;

-- name: retry_job
UPDATE jobs SET status = 'todo', owner = NULL, lease_until = NULL, run_after = ?,
                last_error = ?, detail = ?, updated_at = ?
WHERE id = ? AND status = 'doing' AND owner = ?;

-- name: end_job
UPDATE jobs SET status = ?, owner = NULL, lease_until = NULL, last_error = ?, detail = ?,
                updated_at = ?
WHERE id = ? AND status = 'doing' AND owner = ?;

-- name: release_jobs
-- (now, job ids as a JSON array, owner); found by id, as in complete_jobs
UPDATE jobs SET status = 'todo', owner = NULL, lease_until = NULL,
                attempts = max(attempts - 1, 0), updated_at = ?
WHERE id IN (SELECT value FROM json_each(?)) AND +status = 'doing' AND +owner = ?;

-- name: renew_leases
UPDATE jobs SET lease_until = ? WHERE owner = ? AND status = 'doing';

-- name: recover_expired_leases
UPDATE jobs SET status = 'todo', owner = NULL, lease_until = NULL, updated_at = ?
WHERE status = 'doing' AND lease_until < ?;

-- name: doing_owners
SELECT DISTINCT owner FROM jobs WHERE status = 'doing' AND owner IS NOT NULL;

-- name: recover_owner
UPDATE jobs SET status = 'todo', owner = NULL, lease_until = NULL, updated_at = ?
WHERE status = 'doing' AND owner = ?;

-- name: job_counts
SELECT kind, status, count(*) AS n, min(created_at) AS oldest FROM jobs GROUP BY kind, status;

-- name: list_jobs
SELECT id, kind, status, attempts, run_after, last_error, created_at, updated_at, payload,
       detail
FROM jobs
WHERE (:status IS NULL OR status = :status) AND (:kind IS NULL OR kind = :kind)
ORDER BY id DESC
LIMIT :limit;

-- name: retry_ended_jobs
UPDATE jobs SET status = 'todo', attempts = 0, run_after = 0, owner = NULL, updated_at = :now
WHERE status IN ('failed', 'parked')
  AND (:kind IS NULL OR kind = :kind)
  AND (:id IS NULL OR id = :id);

-- name: purge_done_jobs
DELETE FROM jobs WHERE status = 'done' AND updated_at < ?;

-- name: events_for_windowing
SELECT id, namespace, session_id, recorded_at, length(content) AS n_chars
FROM events WHERE id IN (SELECT value FROM json_each(?));

-- name: event_contents
SELECT id, content FROM events WHERE id IN (SELECT value FROM json_each(?));

-- name: windowed_pieces
SELECT event_id, chunk_no FROM window_items
WHERE event_id IN (SELECT value FROM json_each(?));

-- name: open_windows_for_keys
SELECT id, namespace, session_id, session_key, opened_at, item_count FROM windows
WHERE status = 'open' AND session_key IN (SELECT value FROM json_each(?));

-- name: open_windows_in_scope
SELECT id, namespace, session_id, session_key, opened_at, item_count FROM windows
WHERE status = 'open'
  AND (:namespace IS NULL OR namespace = :namespace)
  AND (:session_id IS NULL OR session_id = :session_id);

-- name: open_windows_due
SELECT id, namespace, session_id, session_key, opened_at, item_count FROM windows
WHERE status = 'open' AND opened_at <= ?;

-- name: insert_window
INSERT OR IGNORE INTO windows (id, namespace, session_id, session_key, status, opened_at,
                               closed_at, close_reason, item_count)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?);

-- name: update_windows
-- One JSON array of [item_count, status, closed_at, close_reason, id] rows: one statement.
UPDATE windows
SET item_count = json_extract(j.value, '$[0]'), status = json_extract(j.value, '$[1]'),
    closed_at = json_extract(j.value, '$[2]'), close_reason = json_extract(j.value, '$[3]')
FROM json_each(?) AS j
WHERE windows.id = json_extract(j.value, '$[4]');

-- name: insert_window_item
INSERT OR IGNORE INTO window_items (window_id, pos, event_id, chunk_no, chunk_count,
                                    start_char, end_char)
VALUES (?, ?, ?, ?, ?, ?, ?);

-- name: window_pieces
SELECT wi.window_id, w.namespace, w.session_id, wi.event_id, wi.chunk_no, wi.chunk_count,
       wi.start_char, wi.end_char, e.role, e.occurred_at,
       substr(e.content, wi.start_char + 1, wi.end_char - wi.start_char) AS text,
       e.recorded_at, e.origin_class, e.session_kind
FROM window_items wi
JOIN windows w ON w.id = wi.window_id
JOIN events e ON e.id = wi.event_id
WHERE wi.window_id IN (SELECT value FROM json_each(?))
ORDER BY wi.window_id, wi.pos;

-- name: existing_extractions
SELECT window_id FROM extractions WHERE window_id IN (SELECT value FROM json_each(?));

-- name: insert_extraction
INSERT OR IGNORE INTO extractions (window_id, extractor, model, claim_count, job_id, created_at)
VALUES (?, ?, ?, ?, ?, ?);

-- name: insert_pending_claim
-- Dedup's new claims: pending (invisible) until the conflict stage places them.
INSERT OR IGNORE INTO claims (id, namespace, subject, predicate, value, text, qualifiers,
                              polarity, scope, importance, confidence, language, content_hash,
                              slot_key, value_key, status, valid_from, valid_to, recorded_at,
                              extractor, window_id, source, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?);

-- name: insert_evidence
INSERT OR IGNORE INTO evidence (claim_id, event_id, quote, start_char, end_char)
VALUES (?, ?, ?, ?, ?);

-- name: count_events
SELECT count(*) FROM events;

-- name: count_sessions
SELECT count(*) FROM sessions;

-- name: admission_counts
-- Admission decisions by level (event: provenance; claim: the gate) and outcome.
SELECT CASE WHEN claim_key IS NULL THEN 'event' ELSE 'claim' END AS level, decision,
       count(*) AS n
FROM admission_decisions GROUP BY 1, 2;

-- name: claim_counts
SELECT status, count(*) AS n FROM claims GROUP BY status;

-- name: window_counts
SELECT status, count(*) AS n FROM windows GROUP BY status;

-- name: count_extractions
SELECT count(*) FROM extractions;

-- name: count_evidence
SELECT count(*) FROM evidence;

-- name: select_claims
-- Claims of a namespace by belief: :view 'current' (active), 'history' (active, superseded
-- and archived); :as_of = believed at that recorded time; :valid_at = true at that valid time.
SELECT id, namespace, subject, predicate, value, text, status, language, importance,
       confidence, valid_from, valid_to, recorded_at, polarity, qualifiers, scope,
       retracted_at, superseded_by
FROM claims
WHERE namespace = :namespace
  AND (CASE WHEN :view = 'current' THEN status = 'active'
            ELSE status IN ('active', 'superseded', 'archived') END)
  AND (:subject IS NULL OR subject = :subject)
  AND (:predicate IS NULL OR predicate = :predicate)
  AND (:as_of IS NULL OR (recorded_at <= :as_of
                          AND (retracted_at IS NULL OR retracted_at > :as_of)))
  AND (:valid_at IS NULL OR ((valid_from IS NULL OR valid_from <= :valid_at)
                             AND (valid_to IS NULL OR valid_to > :valid_at)))
ORDER BY recorded_at DESC, id
LIMIT :limit;

-- name: supersessions_of
SELECT old_claim_id, new_claim_id, reason, created_at FROM supersessions
WHERE old_claim_id IN (SELECT value FROM json_each(?))
   OR new_claim_id IN (SELECT value FROM json_each(?))
ORDER BY created_at;

-- name: evidence_for_claims
SELECT claim_id, event_id, quote, start_char, end_char FROM evidence
WHERE claim_id IN (SELECT value FROM json_each(?))
ORDER BY claim_id, event_id;

-- --- provider gateway: budget reservations, usage sums and the ledger (budget.py) -----------

-- name: budget_usage_rows
SELECT period, namespace, amount FROM budget_usage
WHERE period IN (SELECT value FROM json_each(:periods))
  AND namespace IN (SELECT value FROM json_each(:namespaces));

-- name: add_budget_usage
INSERT INTO budget_usage (period, namespace, amount) VALUES (?, ?, ?)
ON CONFLICT (period, namespace) DO UPDATE SET amount = amount + excluded.amount;

-- name: insert_reservation
INSERT INTO budget_reservations (namespace, provider, model, amount, status, owner, created_at,
                                 stage, call_kind, job_id)
VALUES (?, ?, ?, ?, 'held', ?, ?, ?, ?, ?)
RETURNING id;

-- name: get_reservation
SELECT status, amount, created_at, namespace FROM budget_reservations WHERE id = ?;

-- name: end_reservation
UPDATE budget_reservations SET status = ?, amount = ?, call_id = ?, settled_at = ? WHERE id = ?;

-- name: held_reservations
SELECT id, owner, created_at, namespace, provider, model, amount, stage, call_kind, job_id
FROM budget_reservations WHERE status = 'held';

-- name: insert_provider_call
INSERT INTO provider_calls (stage, provider, model, call_kind, namespace, job_id, prompt_tokens,
                            completion_tokens, cost, currency, latency_ms, outcome, error_class,
                            retries, rate_limited, reserved, created_at, usage_estimated)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
RETURNING id;

-- name: budget_parked_jobs
-- Jobs parked by BudgetExceeded, with the namespace and worst-case cost of their last refusal.
SELECT j.id,
       CASE WHEN c.id IS NULL THEN j.namespace ELSE c.namespace END AS namespace,
       coalesce(c.reserved, 0) AS needed
FROM jobs j
LEFT JOIN provider_calls c ON c.id = (
    SELECT max(id) FROM provider_calls WHERE job_id = j.id AND outcome = 'refused'
)
WHERE j.status = 'parked' AND j.last_error LIKE 'BudgetExceeded%'
ORDER BY j.priority DESC, j.id;

-- name: resume_parked_job
-- The refused attempt does not count: nothing was sent.
UPDATE jobs SET status = 'todo', run_after = 0, owner = NULL, lease_until = NULL,
                attempts = max(attempts - 1, 0), updated_at = ?
WHERE id = ? AND status = 'parked';

-- --- ops report (ops.py) ---------------------------------------------------------------------

-- name: ledger_since
SELECT stage, provider, model, outcome, error_class, prompt_tokens, completion_tokens, cost,
       currency, latency_ms, retries, rate_limited, usage_estimated
FROM provider_calls WHERE created_at >= ?;

-- name: count_events_since
SELECT count(*) FROM events WHERE recorded_at >= ?;

-- name: count_claims_since
-- Claims written since: a replayed log's claims are recorded at their old telling times.
SELECT count(*) FROM claims WHERE coalesce(created_at, recorded_at) >= ?;

-- name: budget_usage_periods
SELECT period, namespace, amount FROM budget_usage
WHERE period IN (SELECT value FROM json_each(?))
ORDER BY period, namespace;

-- --- write-path cognition: admission, dedup, conflict, embedder (stages/) ------------------

-- name: insert_admission_decision
INSERT INTO admission_decisions (event_id, claim_key, mode, decision, rule, created_at)
VALUES (?, ?, ?, ?, ?, ?);

-- name: tombstoned_keys
-- Which of the given claim keys and slot-value keys a forget has tombstoned.
SELECT key FROM tombstones
WHERE (kind = 'claim' OR kind = 'slot') AND key IN (SELECT value FROM json_each(?));

-- name: claims_by_hash
-- Live (pending or active) claims with one of the given (namespace, content hash) keys.
SELECT c.id, c.namespace, c.content_hash, c.subject, c.text, c.polarity, c.rowid
FROM claims c
JOIN json_each(?) j ON c.namespace = json_extract(j.value, '$[0]')
                   AND c.content_hash = json_extract(j.value, '$[1]')
WHERE c.status IN ('pending', 'active');

-- name: slot_candidates
-- The newest live claims of one slot, for similarity dedup.
SELECT id, subject, text, polarity, rowid FROM claims
WHERE namespace = ? AND slot_key = ? AND status IN ('pending', 'active')
ORDER BY rowid DESC
LIMIT ?;

-- name: max_claim_rowid
SELECT coalesce(max(rowid), 0) FROM claims;

-- name: slot_claims_since
-- Live claims of the given slots written after a snapshot (another process's dedup).
SELECT id, namespace, slot_key, content_hash, subject, text, polarity, rowid FROM claims
WHERE rowid > ? AND status IN ('pending', 'active')
  AND slot_key IN (SELECT value FROM json_each(?));

-- name: insert_merge
INSERT OR IGNORE INTO claim_merges (claim_id, source_key, stage, similarity, reason, created_at)
VALUES (?, ?, ?, ?, ?, ?);

-- name: upsert_entity
INSERT INTO entities (id, namespace, name, normalized, kind, created_at)
VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (namespace, normalized, kind) DO NOTHING;

-- name: insert_claim_entity
INSERT OR IGNORE INTO claim_entities (claim_id, entity_id) VALUES (?, ?);

-- name: claim_for_conflict
SELECT id, namespace, subject, predicate, value, qualifiers, polarity, slot_key, value_key,
       status, valid_from, valid_to, recorded_at, extractor
FROM claims WHERE id = ?;

-- name: slot_timeline
-- A slot's believed claims (active or superseded), for the conflict stage: all values, or
-- one value_key (multi-valued slots).
SELECT id, value, qualifiers, polarity, status, valid_from, valid_to, recorded_at, value_key
FROM claims
WHERE namespace = :namespace AND slot_key = :slot_key AND id != :id
  AND status IN ('active', 'superseded')
  AND (:value_key IS NULL OR value_key = :value_key)
ORDER BY coalesce(valid_from, recorded_at), recorded_at;

-- name: activate_claim
UPDATE claims SET status = 'active' WHERE id = ? AND status = 'pending';

-- name: supersede_claim
-- ``old`` leaves current belief: replaced by ``new`` from recorded time ``at``; its valid
-- time ends where the new claim's begins (unless it already ended earlier).
UPDATE claims SET status = 'superseded', superseded_by = :new, retracted_at = :at,
                  valid_to = CASE WHEN valid_to IS NULL OR valid_to > :valid_end
                                  THEN :valid_end ELSE valid_to END
WHERE id = :old;

-- name: end_valid_time
UPDATE claims SET valid_to = :valid_end
WHERE id = :id AND (valid_to IS NULL OR valid_to > :valid_end);

-- name: insert_supersession
INSERT OR IGNORE INTO supersessions (old_claim_id, new_claim_id, reason, created_at)
VALUES (?, ?, ?, ?);

-- name: move_evidence
-- A restatement the conflict stage folds into the claim it repeats.
INSERT OR IGNORE INTO evidence (claim_id, event_id, quote, start_char, end_char)
SELECT :target, event_id, quote, start_char, end_char FROM evidence WHERE claim_id = :source;

-- name: delete_pending_claim
DELETE FROM claims WHERE id = ? AND status = 'pending';

-- name: invalidate_observations
UPDATE observations SET needs_recompute = 1, updated_at = :now
WHERE id IN (SELECT observation_id FROM observation_sources WHERE claim_id = :claim_id);

-- name: claims_to_embed
-- The texts of the given claims that lack a vector of this model and version. Archived claims
-- and duplicates merged away by maintenance have none (claims_embeddable).
SELECT c.id, c.text FROM claims c
WHERE c.id IN (SELECT value FROM json_each(:ids))
  AND c.status IN ('active', 'superseded')
  AND NOT EXISTS (SELECT 1 FROM vectors v
                  WHERE v.owner_kind = 'claim' AND v.owner_id = c.id
                    AND v.model_id = :model AND v.model_version = :version)
  AND NOT EXISTS (SELECT 1 FROM claim_merges m
                  WHERE m.source_key = c.id AND m.stage = 'maintenance');

-- name: claims_lacking_vectors
SELECT c.id, c.text FROM claims c
WHERE c.status IN ('active', 'superseded')
  AND NOT EXISTS (SELECT 1 FROM vectors v
                  WHERE v.owner_kind = 'claim' AND v.owner_id = c.id
                    AND v.model_id = :model AND v.model_version = :version)
  AND NOT EXISTS (SELECT 1 FROM claim_merges m
                  WHERE m.source_key = c.id AND m.stage = 'maintenance')
LIMIT :limit;

-- name: claims_embeddable
-- Of the given claims, those that may hold a vector, re-checked inside the embedder's
-- transaction: one archived or merged since it was read must not get one back.
SELECT c.id FROM claims c
WHERE c.id IN (SELECT value FROM json_each(?))
  AND c.status IN ('active', 'superseded')
  AND NOT EXISTS (SELECT 1 FROM claim_merges m
                  WHERE m.source_key = c.id AND m.stage = 'maintenance');

-- name: events_to_embed
-- The texts (their first :max_chars characters) and namespaces of the given events that lack
-- a vector of this model and version; with :uncovered = 1 (embedder.events = "uncovered"),
-- only those no live claim rests on (a claim's vector finds the others; an archived claim
-- has none, so its events count as uncovered).
SELECT e.id, substr(e.content, 1, :max_chars) AS text, e.namespace FROM events e
WHERE e.id IN (SELECT value FROM json_each(:ids))
  AND NOT EXISTS (SELECT 1 FROM vectors v
                  WHERE v.owner_kind = 'event' AND v.owner_id = e.id
                    AND v.model_id = :model AND v.model_version = :version)
  AND (:uncovered = 0
       OR NOT EXISTS (SELECT 1 FROM evidence ev JOIN claims c ON c.id = ev.claim_id
                      WHERE ev.event_id = e.id
                        AND c.status IN ('pending', 'active', 'superseded')));

-- name: events_lacking_vectors
-- Events a window has indexed (so they are recallable) without a vector of this model;
-- :uncovered as in events_to_embed.
SELECT e.id, substr(e.content, 1, :max_chars) AS text, e.namespace FROM events e
WHERE EXISTS (SELECT 1 FROM recall_docs d WHERE d.kind = 'event' AND d.item_id = e.id)
  AND NOT EXISTS (SELECT 1 FROM vectors v
                  WHERE v.owner_kind = 'event' AND v.owner_id = e.id
                    AND v.model_id = :model AND v.model_version = :version)
  AND (:uncovered = 0
       OR NOT EXISTS (SELECT 1 FROM evidence ev JOIN claims c ON c.id = ev.claim_id
                      WHERE ev.event_id = e.id
                        AND c.status IN ('pending', 'active', 'superseded')))
LIMIT :limit;

-- name: events_present
-- Of the given event ids, those still stored (a forget may have deleted one since).
SELECT id FROM events WHERE id IN (SELECT value FROM json_each(?));

-- name: vector_upsert_packed
-- vector_upsert (queries_vectors.sql) for a batch in one statement (one GIL release, not one
-- per row): :rows is a JSON array of [owner_kind, owner_id, namespace, model_id,
-- model_version, dim, created_at, offset], :vectors the float32 bytes of every vector back to
-- back; a row's vector is the dim * 4 bytes at its offset.
INSERT OR REPLACE INTO vectors (owner_kind, owner_id, namespace, model_id, model_version, dim,
                                vector, created_at)
SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]'),
       json_extract(value, '$[3]'), json_extract(value, '$[4]'), json_extract(value, '$[5]'),
       substr(:vectors, json_extract(value, '$[7]') + 1, json_extract(value, '$[5]') * 4),
       json_extract(value, '$[6]')
FROM json_each(:rows)
ORDER BY key;


-- name: bench_extraction_ledger
-- The extractor's successful calls: count, tokens and cost (bench/extraction_cost.py).
SELECT count(*), sum(prompt_tokens), sum(completion_tokens), sum(cost)
FROM provider_calls WHERE stage = 'extractor' AND outcome = 'ok';

-- name: bench_extraction_by_close_reason
-- Per window close reason (size = a full window at steady load; session_end / flush / age =
-- a session's tail): windows, events, extractor calls and their tokens.
WITH calls AS (
    SELECT json_extract(j.payload, '$.window_id') AS window_id, count(*) AS n,
           sum(pc.prompt_tokens) AS prompt, sum(pc.completion_tokens) AS completion
    FROM provider_calls pc JOIN jobs j ON j.id = pc.job_id
    WHERE pc.stage = 'extractor' AND pc.outcome = 'ok'
    GROUP BY 1
), events AS (
    SELECT window_id, count(DISTINCT event_id) AS n FROM window_items GROUP BY window_id
)
SELECT w.close_reason, count(*), sum(e.n), coalesce(sum(c.n), 0), coalesce(sum(c.prompt), 0),
       coalesce(sum(c.completion), 0)
FROM windows w JOIN events e ON e.window_id = w.id LEFT JOIN calls c ON c.window_id = w.id
WHERE w.status = 'closed'
GROUP BY w.close_reason;

-- name: select_events
-- A namespace's events in insertion order (one session, or all), newest last.
SELECT id, namespace, session_id, role, content, content_hash, occurred_at, recorded_at,
       origin_class, session_kind, metadata
FROM events
WHERE namespace = :namespace AND (:session_id IS NULL OR session_id = :session_id)
ORDER BY seq DESC
LIMIT :limit;
