-- Jobs that wait for a provider (outage.py, stages/base.py, ops.py).
--
-- A job waits for the provider of its last ledger row (the call that was refused or failed);
-- a job with no ledger row of its own (a batched call) waits for any provider. Deferred jobs are
-- todo with a future run_after and a last_error of the refusal; parked ones have status parked
-- and a last_error starting with ProviderOutage.

-- name: defer_job
-- (run_after, last_error, detail, now, id, owner): back to todo without using an attempt (the
-- claim counted one): a refusal is not an attempt.
UPDATE jobs SET status = 'todo', owner = NULL, lease_until = NULL, run_after = ?,
                attempts = max(attempts - 1, 0), last_error = ?, detail = ?, updated_at = ?
WHERE id = ? AND status = 'doing' AND owner = ?;

-- name: park_job_unattempted
-- (last_error, detail, now, id, owner): parked, and the refused attempt does not count.
UPDATE jobs SET status = 'parked', owner = NULL, lease_until = NULL,
                attempts = max(attempts - 1, 0), last_error = ?, detail = ?, updated_at = ?
WHERE id = ? AND status = 'doing' AND owner = ?;

-- name: wake_deferred_jobs
-- Jobs the breaker of :provider refused: ready now (the breaker lets a probe through, or the
-- provider is back).
UPDATE jobs SET run_after = :now, updated_at = :now
WHERE id IN (
    SELECT j.id FROM jobs j
    WHERE j.status = 'todo' AND j.run_after > :now AND j.last_error LIKE 'CircuitOpen%'
      AND coalesce((SELECT c.provider FROM provider_calls c WHERE c.job_id = j.id
                    ORDER BY c.id DESC LIMIT 1), :provider) = :provider
    ORDER BY j.priority DESC, j.id
    LIMIT :limit
);

-- name: park_deferred_jobs
-- :provider has been down for gateway.outage_park_s: the jobs it refused stop waiting in todo.
UPDATE jobs SET status = 'parked', last_error = :error, updated_at = :now
WHERE id IN (
    SELECT j.id FROM jobs j
    WHERE j.status = 'todo'
      AND (j.last_error LIKE 'CircuitOpen%' OR j.last_error LIKE 'RateLimited%')
      AND coalesce((SELECT c.provider FROM provider_calls c WHERE c.job_id = j.id
                    ORDER BY c.id DESC LIMIT 1), :provider) = :provider
);

-- name: resume_outage_jobs
-- Jobs parked for an outage of :provider: ready now, their attempts as they were.
UPDATE jobs SET status = 'todo', run_after = 0, owner = NULL, lease_until = NULL,
                updated_at = :now
WHERE id IN (
    SELECT j.id FROM jobs j
    WHERE j.status = 'parked' AND j.last_error LIKE 'ProviderOutage%'
      AND coalesce((SELECT c.provider FROM provider_calls c WHERE c.job_id = j.id
                    ORDER BY c.id DESC LIMIT 1), :provider) = :provider
    ORDER BY j.priority DESC, j.id
    LIMIT :limit
);

-- name: outage_parked_by_provider
-- (provider or '', jobs, the oldest parking's updated_at) of the jobs parked for an outage.
SELECT coalesce(provider, '') AS provider, count(*) AS n, min(updated_at) AS since
FROM (
    SELECT j.updated_at,
           (SELECT c.provider FROM provider_calls c WHERE c.job_id = j.id
            ORDER BY c.id DESC LIMIT 1) AS provider
    FROM jobs j
    WHERE j.status = 'parked' AND j.last_error LIKE 'ProviderOutage%'
)
GROUP BY 1
ORDER BY 1;

-- name: ended_jobs_since
-- (status, reason, jobs) of the jobs that failed since ? and of every parked job: reason
-- budget, outage or other.
SELECT status,
       CASE WHEN last_error LIKE 'BudgetExceeded%' THEN 'budget'
            WHEN last_error LIKE 'ProviderOutage%' THEN 'outage'
            ELSE 'other' END AS reason,
       count(*) AS n
FROM jobs
WHERE status = 'parked' OR (status = 'failed' AND updated_at >= ?)
GROUP BY 1, 2;

-- name: parked_job_reasons
-- (kind, reason, jobs) of every parked job.
SELECT kind,
       CASE WHEN last_error LIKE 'BudgetExceeded%' THEN 'budget'
            WHEN last_error LIKE 'ProviderOutage%' THEN 'outage'
            ELSE 'other' END AS reason,
       count(*) AS n
FROM jobs
WHERE status = 'parked'
GROUP BY 1, 2;
