-- Named queries of the secrets task of maintenance (hlmem.claims.secret_scan): walks over events,
-- claims and jobs after a cursor, and the rewrites of what was derived with a secret in it.
-- Loaded beside queries.sql by hlmem.store.db.

-- name: secrets_scan_events
-- Events after seq :after, with their full-text body (NULL: not indexed yet).
SELECT e.seq, e.id, e.content, d.body
FROM events e
LEFT JOIN recall_docs d ON d.kind = 'event' AND d.item_id = e.id
WHERE e.seq > :after
ORDER BY e.seq
LIMIT :limit;

-- name: secrets_scan_claims
-- Claims after rowid :after, with the fields a secret may be in.
SELECT c.rowid, c.id, c.subject, c.predicate, c.value, c.text, c.qualifiers
FROM claims c
WHERE c.rowid > :after
ORDER BY c.rowid
LIMIT :limit;

-- name: secrets_scan_jobs
-- Jobs after id :after, whatever their status, with what may quote a text.
SELECT id, payload, detail, last_error
FROM jobs
WHERE id > :after
ORDER BY id
LIMIT :limit;

-- name: secrets_rewrite_event_body
-- (body, event id): an event's full-text row without its secrets; none is created.
UPDATE recall_docs SET body = ? WHERE kind = 'event' AND item_id = ?;

-- name: secrets_rewrite_job
-- (payload, detail, last_error, id, and the three as read): a job without the secrets it held,
-- unless it changed since it was read.
UPDATE jobs SET payload = ?, detail = ?, last_error = ?
WHERE id = ? AND payload IS ? AND detail IS ? AND last_error IS ?;

-- name: secrets_scan_quotes
-- The evidence quotes of the given claims (JSON array of ids): (claim id, event id, quote).
SELECT claim_id, event_id, quote FROM evidence
WHERE claim_id IN (SELECT value FROM json_each(?));

-- name: secrets_rewrite_claim
-- (subject, predicate, value, text, qualifiers, id, and the value and text as read): a claim
-- stored with a secret in it, redacted where it stands, unless it changed since it was read.
UPDATE claims SET subject = ?, predicate = ?, value = ?, text = ?, qualifiers = ?
WHERE id = ? AND value IS ? AND text IS ?;

-- name: secrets_rewrite_quote
-- (quote, claim id, event id, the quote as read): an evidence quote without its secret.
UPDATE evidence SET quote = ? WHERE claim_id = ? AND event_id = ? AND quote IS ?;
