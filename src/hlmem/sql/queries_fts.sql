-- Named queries of the full-text channel of recall (hlmem.fts; tables: migration 0004).
-- Only recall_docs is written: its triggers keep the recall_fts index in step.

-- name: fts_insert
-- (kind, item_id, namespace, body): hlmem.fts.fts_row. A replay of the same row changes
-- nothing; a new body or namespace replaces the old one.
INSERT INTO recall_docs (kind, item_id, namespace, body) VALUES (?, ?, ?, ?)
ON CONFLICT (kind, item_id) DO UPDATE
SET namespace = excluded.namespace, body = excluded.body
WHERE namespace IS NOT excluded.namespace OR body IS NOT excluded.body;

-- name: fts_delete
-- (kind, item_id): forget, or an item that must leave full-text recall.
DELETE FROM recall_docs WHERE kind = ? AND item_id = ?;

-- name: fts_search
-- :scoped and :wide are built by hlmem.fts: the quoted terms, with and without the namespace
-- token. The token is used when the namespace holds at most 1/8 of the rows (migration 0004
-- explains why). The CROSS JOIN keeps recall_fts the outer loop; ORDER BY rank (bm25, set in
-- the migration; negative, lower is better) is sorted inside FTS5.
SELECT d.kind, d.item_id, f.rank
FROM recall_fts(
    CASE WHEN 8 * coalesce((SELECT docs FROM recall_namespaces WHERE namespace = :namespace), 0)
              <= (SELECT coalesce(sum(docs), 0) FROM recall_namespaces)
         THEN :scoped ELSE :wide END
) AS f
CROSS JOIN recall_docs AS d ON d.id = f.rowid
WHERE d.namespace = :namespace AND (:kind IS NULL OR d.kind = :kind)
ORDER BY f.rank
LIMIT :limit;

-- name: fts_unindexed_claims
-- Claims after rowid :after without a full-text row (backfill), forgotten ones excepted.
SELECT c.rowid, c.id, c.namespace, c.text FROM claims c
WHERE c.rowid > :after AND c.status != 'forgotten'
  AND NOT EXISTS (SELECT 1 FROM recall_docs d WHERE d.kind = 'claim' AND d.item_id = c.id)
ORDER BY c.rowid
LIMIT :limit;

-- name: fts_unindexed_events
SELECT e.seq, e.id, e.namespace, e.content FROM events e
WHERE e.seq > :after
  AND NOT EXISTS (SELECT 1 FROM recall_docs d WHERE d.kind = 'event' AND d.item_id = e.id)
ORDER BY e.seq
LIMIT :limit;
