-- Named queries of the windower (hlmem.stages.windower) about its own jobs.

-- name: windower_controls_done_after
-- Flushes and session ends already applied, by any worker, after the windower job with this
-- id was enqueued: a batch holding that job is late, and the events it places must close the
-- windows those controls closed. Control jobs have size 1 (hlmem.memory.facade), so the search seeks
-- on jobs_status (status, kind, size, then the rowid) from the batch's oldest job on.
SELECT id, payload FROM jobs
WHERE status = 'done' AND kind = 'windower' AND size = 1 AND id > ?
  AND json_extract(payload, '$.kind') IN ('flush_requested', 'session_ended')
ORDER BY id;
