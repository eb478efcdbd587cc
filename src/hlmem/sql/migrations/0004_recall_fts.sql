-- 0004: the full-text channel of recall (DESIGN.md §5), over claims and raw events.
--
-- FTS5 cannot cut Chinese into words, so hlmem.segment does it in Python and `body` holds
-- space-separated tokens ("界面 主题 界面主题 用 深色 模式 深色模式"). The tokenizer then only
-- splits on spaces and punctuation, folds case and diacritics and stems English (porter);
-- '.' is a token character so that versions stay whole ("v1.2"): hlmem.segment never leaves
-- a '.' in a body except inside a number.
--
-- recall_docs is the FTS5 external-content table: one row per indexed item, the only table
-- written to (hlmem.fts: fts_insert / fts_delete); its triggers keep recall_fts in step in
-- the same transaction. It gives the unique (kind, item_id) key that makes a delete (forget)
-- an index lookup and a replayed insert a no-op, and it keeps `body` as stored, which FTS5
-- needs to delete a row (re-segmenting after a dictionary change would give other tokens).
-- No foreign keys: one table serves claims and events; forget deletes rows explicitly.
--
-- Namespaces: a namespace must never see another's rows, and a small namespace in a big file
-- should not pay for the others. `ns` holds one token per namespace, 'ns' || hex(namespace) ||
-- '0' (hex keeps it one token whatever the name; the final digit keeps porter off it); it is
-- a virtual generated column, so it costs no space and FTS5's 'rebuild' and 'integrity-check'
-- can read it; bm25 weighs it 0. Matching `ns : "<token>" AND body : (...)` makes FTS5 score
-- only the namespace's rows, but walks the token's whole doclist: measured at 100k rows, it
-- saves 50-130 ms on common terms for a namespace holding 1/40 of the rows, and costs 4-10 ms
-- on rare terms for one holding half of them. So the search scopes by token only when the
-- namespace holds at most 1/8 of the rows (recall_namespaces keeps the counts, by trigger);
-- otherwise it matches the body alone and filters while joining. Either way the join checks
-- recall_docs.namespace itself.
CREATE TABLE recall_docs (
    id         INTEGER PRIMARY KEY,  -- the rowid in recall_fts
    kind       TEXT NOT NULL CHECK (kind IN ('claim', 'event')),
    item_id    TEXT NOT NULL,
    namespace  TEXT NOT NULL,
    body       TEXT NOT NULL,
    ns         TEXT GENERATED ALWAYS AS ('ns' || hex(namespace) || '0') VIRTUAL,
    UNIQUE (kind, item_id)
);

CREATE TABLE recall_namespaces (
    namespace  TEXT PRIMARY KEY,
    docs       INTEGER NOT NULL
) WITHOUT ROWID;

CREATE VIRTUAL TABLE recall_fts USING fts5(
    body, ns,
    content = 'recall_docs', content_rowid = 'id',
    tokenize = "porter unicode61 remove_diacritics 2 tokenchars '.'"
);

-- The persistent rank function: ORDER BY rank lets FTS5 sort inside the virtual table.
INSERT INTO recall_fts (recall_fts, rank) VALUES ('rank', 'bm25(1.0, 0.0)');

CREATE TRIGGER recall_docs_insert AFTER INSERT ON recall_docs
BEGIN
    INSERT INTO recall_fts (rowid, body, ns) VALUES (NEW.id, NEW.body, NEW.ns);
    INSERT INTO recall_namespaces (namespace, docs) VALUES (NEW.namespace, 1)
    ON CONFLICT (namespace) DO UPDATE SET docs = docs + 1;
END;

CREATE TRIGGER recall_docs_delete AFTER DELETE ON recall_docs
BEGIN
    INSERT INTO recall_fts (recall_fts, rowid, body, ns) VALUES ('delete', OLD.id, OLD.body, OLD.ns);
    UPDATE recall_namespaces SET docs = docs - 1 WHERE namespace = OLD.namespace;
    DELETE FROM recall_namespaces WHERE namespace = OLD.namespace AND docs <= 0;
END;

CREATE TRIGGER recall_docs_update AFTER UPDATE ON recall_docs
BEGIN
    INSERT INTO recall_fts (recall_fts, rowid, body, ns) VALUES ('delete', OLD.id, OLD.body, OLD.ns);
    INSERT INTO recall_fts (rowid, body, ns) VALUES (NEW.id, NEW.body, NEW.ns);
END;

CREATE TRIGGER recall_docs_move AFTER UPDATE OF namespace ON recall_docs
WHEN OLD.namespace IS NOT NEW.namespace
BEGIN
    UPDATE recall_namespaces SET docs = docs - 1 WHERE namespace = OLD.namespace;
    DELETE FROM recall_namespaces WHERE namespace = OLD.namespace AND docs <= 0;
    INSERT INTO recall_namespaces (namespace, docs) VALUES (NEW.namespace, 1)
    ON CONFLICT (namespace) DO UPDATE SET docs = docs + 1;
END;
