-- Named queries of the vector channel (vector_index.py; the embedder stage writes with
-- vector_upsert). Loaded beside queries.sql by hlmem.store.db.

-- name: vector_upsert
-- Write one vector: (owner_kind, owner_id, namespace, model_id, model_version, dim, vector,
-- created_at). REPLACE deletes the row of the same owner and model and inserts a new one, so a
-- changed vector gets a new seq and the next index refresh sees it. A NULL namespace is filled
-- from the owner by a trigger.
INSERT OR REPLACE INTO vectors (owner_kind, owner_id, namespace, model_id, model_version, dim,
                                vector, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?);

-- name: vector_delete_owner
-- Drop every vector of one owner (forget); the deletion is logged for the indexes.
DELETE FROM vectors WHERE owner_kind = ? AND owner_id = ?;

-- name: vector_head
-- The highest seq ever given to a vector row and to a deletion (never reused: AUTOINCREMENT),
-- and the oldest deletion still logged. Cheap: an index compares them with what it has read.
SELECT (SELECT seq FROM sqlite_sequence WHERE name = 'vectors') AS vectors_seq,
       (SELECT seq FROM sqlite_sequence WHERE name = 'vector_deletions') AS deletions_seq,
       (SELECT min(seq) FROM vector_deletions) AS oldest_deletion;

-- name: vector_changes
-- Rows of one model written after seq :after, in seq order. A row of another version (or, which
-- should not happen, another dimension) comes without its vector: it replaced the owner's row
-- of this version, which the index must drop.
SELECT seq, owner_kind, owner_id, namespace,
       CASE WHEN model_version = :version AND dim = :dim THEN vector END AS vector
FROM vectors
WHERE seq > :after AND +model_id = :model
ORDER BY seq
LIMIT :limit;

-- name: vector_deletions_since
-- Deletions of one model's rows logged after seq :after, in seq order.
SELECT seq, vector_seq, owner_kind, owner_id
FROM vector_deletions
WHERE seq > :after AND +model_id = :model
ORDER BY seq
LIMIT :limit;

-- name: vector_deletions_prune
-- Forget logged deletions up to seq :upto. An index that had not read them yet reloads.
DELETE FROM vector_deletions WHERE seq <= :upto;

-- name: vector_counts
-- Rows of one model version per (namespace, owner kind), from the covering index alone (no
-- dim check: that would read every row): the numpy index sizes its partitions with it
-- before a full load.
SELECT namespace, owner_kind, count(*) AS n FROM vectors
WHERE model_id = :model AND model_version = :version
GROUP BY namespace, owner_kind;

-- name: vector_count
SELECT count(*) FROM vectors WHERE model_id = :model AND model_version = :version AND dim = :dim;

-- name: vector_search_vec
-- Exact cosine top-k by sqlite-vec (only where the extension is loaded), over one namespace.
-- A zero vector has no cosine (NULL): it counts as distance 1, like an orthogonal one. :kinds
-- is a JSON array of owner kinds.
SELECT owner_kind, owner_id,
       coalesce(vec_distance_cosine(vector, :query), 1.0) AS distance
FROM vectors
WHERE model_id = :model AND model_version = :version AND dim = :dim
  AND namespace = :namespace
  AND owner_kind IN (SELECT value FROM json_each(:kinds))
ORDER BY distance, seq
LIMIT :k;

-- name: vector_search_vec_allow
-- vector_search_vec among the owner ids of the JSON array :allow only, found through the
-- (owner_kind, owner_id, model_id) index instead of a scan of the namespace.
SELECT owner_kind, owner_id,
       coalesce(vec_distance_cosine(vector, :query), 1.0) AS distance
FROM vectors
WHERE owner_kind IN (SELECT value FROM json_each(:kinds))
  AND owner_id IN (SELECT value FROM json_each(:allow))
  AND model_id = :model AND +model_version = :version AND +dim = :dim
  AND +namespace = :namespace
ORDER BY distance, seq
LIMIT :k;
