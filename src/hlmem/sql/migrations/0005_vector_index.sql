-- 0005: vectors that an in-memory index can follow incrementally (vector_index.py).
--
-- The table gets a change sequence: `seq` is an AUTOINCREMENT rowid, so it is never reused, and
-- a vector that changes is moved to a new row (vector_upsert is INSERT OR REPLACE; an in-place
-- UPDATE is turned into delete + insert by a trigger). "Rows with seq > the last one I saw"
-- is then every row written since, whichever query wrote it. Deletions leave a row in
-- vector_deletions (a trigger), which an index reads the same way. `namespace` lets a search
-- filter without a join; a writer that leaves it NULL gets the owner's (a trigger), and a row
-- whose owner is unknown keeps NULL and is never found by a namespace search.
-- Nothing references vectors and vectors references nothing, so foreign keys may stay on.

ALTER TABLE vectors RENAME TO vectors_old;

CREATE TABLE vectors (
    seq            INTEGER PRIMARY KEY AUTOINCREMENT,
    owner_kind     TEXT NOT NULL CHECK (owner_kind IN ('claim', 'event', 'observation')),
    owner_id       TEXT NOT NULL,
    namespace      TEXT,
    model_id       TEXT NOT NULL,
    model_version  TEXT NOT NULL,
    dim            INTEGER NOT NULL,
    vector         BLOB NOT NULL,
    created_at     TEXT NOT NULL,
    UNIQUE (owner_kind, owner_id, model_id)
);

INSERT INTO vectors (owner_kind, owner_id, namespace, model_id, model_version, dim, vector,
                     created_at)
SELECT v.owner_kind, v.owner_id,
       CASE v.owner_kind
           WHEN 'claim' THEN (SELECT c.namespace FROM claims c WHERE c.id = v.owner_id)
           WHEN 'event' THEN (SELECT e.namespace FROM events e WHERE e.id = v.owner_id)
           ELSE (SELECT o.namespace FROM observations o WHERE o.id = v.owner_id)
       END,
       v.model_id, v.model_version, v.dim, v.vector, v.created_at
FROM vectors_old v
ORDER BY v.created_at, v.owner_kind, v.owner_id;

DROP TABLE vectors_old;

-- The sqlite-vec scan and counts: one model version, one namespace, some owner kinds.
CREATE INDEX vectors_scope ON vectors (model_id, model_version, namespace, owner_kind);

-- What an index must forget: one row per deleted vector row. `vector_seq` is the seq of the row
-- that went away (an index drops its copy only if it holds that very seq). Pruned by seq
-- (vector_deletions_prune); an index that finds rows pruned before it read them reloads.
CREATE TABLE vector_deletions (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    vector_seq  INTEGER NOT NULL,
    owner_kind  TEXT NOT NULL,
    owner_id    TEXT NOT NULL,
    model_id    TEXT NOT NULL
);

CREATE TRIGGER vectors_log_delete AFTER DELETE ON vectors
BEGIN
    INSERT INTO vector_deletions (vector_seq, owner_kind, owner_id, model_id)
    VALUES (OLD.seq, OLD.owner_kind, OLD.owner_id, OLD.model_id);
END;

-- An UPDATE would change a vector under the same seq, unseen by every index: move the row to a
-- new seq instead (the DELETE is logged like any other). namespace is not watched: the fill
-- trigger below sets it, and an owner never changes namespace.
CREATE TRIGGER vectors_update_moves
AFTER UPDATE OF owner_kind, owner_id, model_id, model_version, dim, vector ON vectors
BEGIN
    DELETE FROM vectors WHERE seq = NEW.seq;
    INSERT INTO vectors (owner_kind, owner_id, namespace, model_id, model_version, dim, vector,
                         created_at)
    VALUES (NEW.owner_kind, NEW.owner_id, NEW.namespace, NEW.model_id, NEW.model_version,
            NEW.dim, NEW.vector, NEW.created_at);
END;

-- A writer that does not know the namespace (queries.sql upsert_vector) leaves it NULL.
CREATE TRIGGER vectors_fill_namespace AFTER INSERT ON vectors WHEN NEW.namespace IS NULL
BEGIN
    UPDATE vectors SET namespace = CASE NEW.owner_kind
        WHEN 'claim' THEN (SELECT c.namespace FROM claims c WHERE c.id = NEW.owner_id)
        WHEN 'event' THEN (SELECT e.namespace FROM events e WHERE e.id = NEW.owner_id)
        ELSE (SELECT o.namespace FROM observations o WHERE o.id = NEW.owner_id)
    END
    WHERE seq = NEW.seq;
END;
