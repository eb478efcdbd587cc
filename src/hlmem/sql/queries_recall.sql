-- Named queries of recall (hlmem.recall.recaller): candidates' rows, entities, activation, feedback.

-- name: recall_claims
-- The candidate claims' rows (any status; recall filters by mode and time), the fields of
-- hlmem.recall.items.CandidateClaim in its order. The last column (since) is when `activation`
-- was evaluated: recall decays it to now (hlmem.claims.activation). The ids lead:
-- `+namespace` keeps the planner off the namespace indexes, which would scan every claim of
-- the namespace (and did: 46 ms at 10k claims, growing with the namespace) instead of looking
-- up the few ids.
SELECT id, namespace, subject, predicate, value, text, status, qualifiers, polarity,
       importance, confidence, valid_from, valid_to, recorded_at, retracted_at, activation,
       utility, slot_key, value_key, content_hash, scope,
       coalesce(activation_at, created_at, recorded_at) AS since
FROM claims
WHERE id IN (SELECT value FROM json_each(?)) AND +namespace = ?;

-- name: recall_claim_evidence
-- The evidence of the claims shown, packed (SyncReader.fetch_packed): rows [claim_id,
-- event_id, session_id, quote, occurred_at, seq, shown] (hlmem.recall.items.EvidenceLink), to be
-- sorted by claim and seq. Every
-- link comes back (recall folds away the events a shown claim rests on), but only the first
-- and the latest :shown - 1 of each claim with their quote, session and time (shown = 1; the
-- others carry nulls): a claim told hundreds of times would otherwise put every telling into
-- each recall (Memory.explain lists them all).
SELECT json_group_array(json_array(claim_id, event_id,
                                   CASE WHEN shown THEN session_id END,
                                   CASE WHEN shown THEN quote END,
                                   CASE WHEN shown THEN occurred_at END, seq, shown))
FROM (
    SELECT ev.claim_id, ev.event_id, e.session_id, ev.quote, e.occurred_at, e.seq,
           row_number() OVER (PARTITION BY ev.claim_id ORDER BY e.seq) = 1
           OR row_number() OVER (PARTITION BY ev.claim_id ORDER BY e.seq DESC) < :shown
           AS shown
    FROM evidence ev JOIN events e ON e.id = ev.event_id
    WHERE ev.claim_id IN (SELECT value FROM json_each(:claims))
);

-- name: recall_events
-- The candidate events' rows. Looked up by id, like recall_claims (hence `+namespace`). Whether
-- an event's claims are still believed is asked apart (recall_event_claims), and only for the
-- events that could be shown: it walks each event's evidence and claims, which cost as much as
-- the rows themselves. Packed (SyncReader.fetch_packed; every column is text), the fields of
-- hlmem.recall.items.CandidateEvent in its order. The content hash (of the normalised text):
-- events that say the same words fold into one item; then the event's feedback utility
-- (event_feedback; 0 without feedback).
SELECT json_group_array(json_array(e.id, e.session_id, e.role, e.content, e.occurred_at,
                                   e.recorded_at, e.origin_class, e.session_kind,
                                   e.content_hash, coalesce(f.utility, 0.0)))
FROM events e LEFT JOIN event_feedback f ON f.event_id = e.id
WHERE e.id IN (SELECT value FROM json_each(?)) AND +e.namespace = ?;

-- name: recall_event_claims
-- Of the given events (JSON array of ids), how many of their claims are believed now (active)
-- and how many rest on them at all (active, superseded or archived): an event whose claims
-- were all superseded or archived is history. Events no claim rests on have no row. Packed
-- (SyncReader.fetch_packed): rows [event_id, active_claims, claims]
-- (hlmem.recall.items.EventClaims).
SELECT json_group_array(json_array(event_id, active_claims, claims)) FROM (
    SELECT ev.event_id,
           count(CASE WHEN c.status = 'active' THEN 1 END) AS active_claims,
           count(CASE WHEN c.status IN ('active', 'superseded', 'archived') THEN 1 END) AS claims
    FROM evidence ev JOIN claims c ON c.id = ev.claim_id
    WHERE ev.event_id IN (SELECT value FROM json_each(?))
    GROUP BY ev.event_id
);

-- name: recall_known_entities
-- The namespace's entities whose normalized name is in the JSON array of strings: the query's
-- substrings (hlmem.recall.understanding.name_candidates), one index lookup each, instead of every entity of
-- the namespace read and matched in Python (11 ms at 10k claims, growing with the namespace).
SELECT name, kind FROM entities
WHERE namespace = ? AND normalized IN (SELECT value FROM json_each(?));

-- name: recall_entity_claims
-- Claims linked to one of the given entities (normalized names).
SELECT DISTINCT ce.claim_id FROM claim_entities ce JOIN entities en ON en.id = ce.entity_id
WHERE en.namespace = ? AND en.normalized IN (SELECT value FROM json_each(?));

-- name: recall_feedback
-- Feedback on a recalled claim: utility moves toward +1 (useful) or -1 (not useful).
UPDATE claims SET utility = max(-1.0, min(1.0, utility + :delta))
WHERE id = :id AND status != 'forgotten';

-- name: recall_event_neighbours
-- The turns said just before and just after each of the given events (JSON array of ids) in
-- its session: the context recall adds around its best events (Recaller._with_context).
-- Packed (SyncReader.fetch_packed): rows [seed_id, neighbour_id]. One index lookup
-- (events_session) per side and seed.
SELECT json_group_array(json_array(seed, id)) FROM (
    SELECT s.id AS seed,
           (SELECT p.id FROM events p
            WHERE p.namespace = s.namespace AND p.session_id = s.session_id AND p.seq < s.seq
            ORDER BY p.seq DESC LIMIT 1) AS id
    FROM events s WHERE s.id IN (SELECT value FROM json_each(:seeds)) AND +s.namespace = :namespace
    UNION ALL
    SELECT s.id,
           (SELECT n.id FROM events n
            WHERE n.namespace = s.namespace AND n.session_id = s.session_id AND n.seq > s.seq
            ORDER BY n.seq LIMIT 1)
    FROM events s WHERE s.id IN (SELECT value FROM json_each(:seeds)) AND +s.namespace = :namespace
) WHERE id IS NOT NULL;

-- name: recall_slot_claims
-- The claims of the slots a question names (hlmem.recall.slots; JSON array of slot keys),
-- the active ones first, then the newest: one claims_slot index range per slot. Any status
-- recall shows (it filters by mode and time); at most :limit (recall.slot_candidates).
SELECT id FROM claims
WHERE namespace = :namespace AND slot_key IN (SELECT value FROM json_each(:slots))
  AND status IN ('active', 'superseded', 'archived')
ORDER BY status = 'active' DESC, recorded_at DESC, id
LIMIT :limit;

-- name: recall_event_feedback
-- Feedback on a recalled event (Memory.feedback with an event item's feedback_id): its
-- utility moves toward +1 (useful) or -1 (not useful), as a claim's does (recall_feedback).
-- Events are immutable: the utility lives beside them, and goes with them (ON DELETE CASCADE).
INSERT INTO event_feedback (event_id, utility, updated_at)
SELECT id, max(-1.0, min(1.0, :delta)), :now FROM events WHERE id = :id
ON CONFLICT (event_id) DO UPDATE
SET utility = max(-1.0, min(1.0, utility + :delta)), updated_at = :now;
