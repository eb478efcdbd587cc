-- Named queries of `hlmem loadtest` (loadtest.py): cheap reads sampled while a load runs, and
-- the totals its report is checked against. Reads only.

-- name: loadtest_job_depth
-- Jobs and the items they carry (events, windows, claims) by stage and status.
SELECT kind, status, count(*) AS jobs, coalesce(sum(size), 0) AS items FROM jobs
GROUP BY kind, status;

-- name: loadtest_ledger_totals
-- Every provider call so far: ok / error / refused calls, tokens, cost, retries and 429s.
SELECT coalesce(sum(outcome = 'ok'), 0) AS ok, coalesce(sum(outcome = 'error'), 0) AS errors,
       coalesce(sum(outcome = 'refused'), 0) AS refused,
       coalesce(sum(prompt_tokens), 0) AS prompt_tokens,
       coalesce(sum(completion_tokens), 0) AS completion_tokens,
       coalesce(sum(cost), 0.0) AS cost, coalesce(sum(retries), 0) AS retries,
       coalesce(sum(rate_limited), 0) AS rate_limited
FROM provider_calls;

-- name: loadtest_ledger_by_stage
-- The same per (stage, call kind), with the error classes seen.
SELECT stage, call_kind, count(*) AS calls, coalesce(sum(outcome = 'ok'), 0) AS ok,
       coalesce(sum(outcome = 'error'), 0) AS errors,
       coalesce(sum(outcome = 'refused'), 0) AS refused,
       coalesce(sum(prompt_tokens), 0) AS prompt_tokens,
       coalesce(sum(completion_tokens), 0) AS completion_tokens,
       coalesce(sum(cost), 0.0) AS cost, coalesce(sum(retries), 0) AS retries,
       coalesce(sum(rate_limited), 0) AS rate_limited,
       group_concat(DISTINCT error_class) AS error_classes
FROM provider_calls GROUP BY stage, call_kind ORDER BY stage, call_kind;

-- name: loadtest_visible_events
-- Of the given event ids (a JSON array), those that are the evidence of a claim recall can see
-- (placed by the conflict stage: anything but pending; superseded and archived ones were
-- visible before they were replaced).
SELECT DISTINCT ev.event_id
FROM evidence ev JOIN claims c ON c.id = ev.claim_id
WHERE ev.event_id IN (SELECT value FROM json_each(?)) AND c.status <> 'pending';

-- name: loadtest_windows
-- Windows by status and close reason.
SELECT status, coalesce(close_reason, '') AS reason, count(*) AS n FROM windows GROUP BY 1, 2;

-- name: loadtest_extractions
-- Extracted windows by extractor ("model:M", "rules-...", "skipped:nothing-to-extract"), with
-- the claims they proposed.
SELECT extractor, count(*) AS n, coalesce(sum(claim_count), 0) AS claims FROM extractions
GROUP BY extractor;

-- name: loadtest_events_by_origin
SELECT origin_class, count(*) AS n FROM events GROUP BY origin_class;

-- name: loadtest_extracted_by_origin
-- Events whose window went through the extractor (extracted or skipped), by origin class.
SELECT e.origin_class, count(DISTINCT e.id) AS n
FROM events e
JOIN window_items wi ON wi.event_id = e.id
JOIN extractions x ON x.window_id = wi.window_id
GROUP BY e.origin_class;

-- name: loadtest_claims_by_origin
-- Claims (any status) by the origin class of the events they rest on.
SELECT e.origin_class, count(DISTINCT ev.claim_id) AS n
FROM evidence ev JOIN events e ON e.id = ev.event_id
GROUP BY e.origin_class;

-- name: loadtest_source_decisions
-- Source admission decisions per origin class of the event: admit / block / would_block.
SELECT e.origin_class, d.decision, count(*) AS n
FROM admission_decisions d JOIN events e ON e.id = d.event_id
WHERE d.claim_key IS NULL
GROUP BY 1, 2;
