-- Named queries of the full-text channel of recall (hlmem.index.fts; tables: migration 0004).
-- Only recall_docs is written: its triggers keep the recall_fts index in step.

-- name: fts_insert
-- (kind, item_id, namespace, body): hlmem.index.fts.fts_row. A replay of the same row changes
-- nothing; a new body or namespace replaces the old one.
INSERT INTO recall_docs (kind, item_id, namespace, body) VALUES (?, ?, ?, ?)
ON CONFLICT (kind, item_id) DO UPDATE
SET namespace = excluded.namespace, body = excluded.body
WHERE namespace IS NOT excluded.namespace OR body IS NOT excluded.body;

-- name: fts_delete
-- (kind, item_id): forget, or an item that must leave full-text recall.
DELETE FROM recall_docs WHERE kind = ? AND item_id = ?;

-- name: fts_count_terms
-- The first step of one full-text search (hlmem.index.fts.fts_search_terms says why and how): each
-- term's rows counted up to :cap (a doclist walk that stops there, no bm25), with whether the
-- namespace's token narrows the search. :terms is a JSON array of quoted terms; :token the
-- namespace-token MATCH string, used when the namespace holds at most 1/8 of the rows
-- (migration 0004 explains why); :cap = rank_rows + 1. Rows (position, count, scoped).
WITH scope AS MATERIALIZED (
    SELECT 8 * coalesce((SELECT docs FROM recall_namespaces WHERE namespace = :namespace), 0)
           <= (SELECT coalesce(sum(docs), 0) FROM recall_namespaces) AS scoped
)
SELECT j.key,
       (SELECT count(*) FROM (
            SELECT 1 FROM recall_fts
            WHERE recall_fts MATCH CASE WHEN scope.scoped
                                        THEN :token || ' AND body : (' || j.value || ')'
                                        ELSE 'body : (' || j.value || ')' END
            LIMIT :cap)) AS n,
       scope.scoped
FROM json_each(:terms) AS j, scope;

-- name: fts_held_here
-- Whether an item of :namespace is among the first :cap rows matching :match: for a term
-- counted over every namespace (fts_count_terms unscoped), whether this namespace holds it.
SELECT EXISTS (
    SELECT 1 FROM (SELECT rowid AS rid FROM recall_fts WHERE recall_fts MATCH :match LIMIT :cap) AS f
    CROSS JOIN recall_docs AS d ON d.id = f.rid
    WHERE d.namespace = :namespace
) AS held;

-- name: fts_version
-- The version of the full-text index: FTS5's structure record, rewritten by every committed
-- change to the index (hlmem.index.fts.TermCounts remembers term counts while it stays the same).
SELECT block FROM recall_fts_data WHERE id = 10;

-- name: fts_ranked
-- Tier 1 of a full-text search: the namespace's items matching :match (the terms rare enough
-- to rank), ranked with bm25 (equal scores in rowid order, as FTS5 itself sorts them; the
-- CROSS JOIN keeps recall_fts the outer loop). :allow NULL or a JSON array of the item ids to
-- keep; :kind NULL or the one kind to keep.
SELECT d.kind, d.item_id, f.rank
FROM recall_fts(:match) AS f
CROSS JOIN recall_docs AS d ON d.id = f.rowid
WHERE d.namespace = :namespace AND (:kind IS NULL OR d.kind = :kind)
  AND (:allow IS NULL OR d.item_id IN (SELECT value FROM json_each(:allow)))
ORDER BY f.rank, f.rowid
LIMIT :limit;

-- name: fts_ranked_top
-- Tier 1's first :n rows by bm25 (equal scores in rowid order) from the full-text index alone,
-- without joining recall_docs (hlmem.index.fts._ranked_rows joins only these, with fts_docs).
SELECT rowid, rank FROM recall_fts(:match) ORDER BY rank, rowid LIMIT :n;

-- name: fts_docs
-- Of the recall_fts rows :ids (JSON array of rowids), those of :namespace (and :kind, and
-- :allow as in fts_ranked), with their kind and item id: rows [rowid, kind, item_id].
SELECT d.id, d.kind, d.item_id FROM recall_docs AS d
WHERE d.id IN (SELECT value FROM json_each(:ids)) AND d.namespace = :namespace
  AND (:kind IS NULL OR d.kind = :kind)
  AND (:allow IS NULL OR d.item_id IN (SELECT value FROM json_each(:allow)));

-- name: fts_newest
-- Tier 2: the newest items of the namespace matching :match (any term), unranked: FTS5 walks
-- its doclists backwards and stops at the limit. Packed (SyncReader.fetch_packed): rows
-- [kind, item_id, rowid], to be sorted by rowid, newest first.
SELECT json_group_array(json_array(kind, item_id, rid)) FROM (
    SELECT d.kind, d.item_id, f.rowid AS rid
    FROM recall_fts(:match) AS f
    CROSS JOIN recall_docs AS d ON d.id = f.rowid
    WHERE d.namespace = :namespace AND (:kind IS NULL OR d.kind = :kind)
    ORDER BY f.rowid DESC
    LIMIT :limit
);

-- name: fts_match_ids
-- The newest :limit items of the namespace whose body has every term (:match, quoted terms
-- joined by AND), unranked: recall's entity constraint wants what mentions a name, not how
-- well, and FTS5 walks the doclist backwards and stops at the limit (no bm25, no count).
-- :token and the scope as in fts_count_terms. Packed (SyncReader.fetch_packed): rows
-- [kind, item_id, rowid], to be sorted by rowid, newest first.
WITH scope AS MATERIALIZED (
    SELECT 8 * coalesce((SELECT docs FROM recall_namespaces WHERE namespace = :namespace), 0)
           <= (SELECT coalesce(sum(docs), 0) FROM recall_namespaces) AS scoped
)
SELECT json_group_array(json_array(kind, item_id, rid)) FROM (
    SELECT d.kind, d.item_id, f.rowid AS rid
    FROM recall_fts((SELECT CASE WHEN scoped THEN :token || ' AND ' ELSE '' END
                            || 'body : (' || :match || ')' FROM scope)) AS f
    CROSS JOIN recall_docs AS d ON d.id = f.rowid
    WHERE d.namespace = :namespace
    ORDER BY f.rowid DESC
    LIMIT :limit
);

-- name: fts_unindexed_claims
-- Claims after rowid :after without a full-text row (backfill), forgotten ones excepted, with
-- the value and predicate their search text adds (hlmem.index.fts.claim_search_text).
SELECT c.rowid, c.id, c.namespace, c.text, c.value, c.predicate FROM claims c
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
