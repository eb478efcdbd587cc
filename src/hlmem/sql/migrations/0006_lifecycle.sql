-- 0006: explicit forget (hlmem.forget): tombstones that stop every way back in.
--
-- Keys of the tombstones a forget writes (never content): event = event id; content =
-- namespace ':' event content hash; claim = claim id (and the keys of candidates merged into
-- it); slot = namespace ':' claim content hash (slots.tombstone_key); session = namespace
-- char(31) session id. A forget writes its tombstones first, then deletes, in one transaction.
--
-- The triggers below are the last line: whatever path a row takes (a replayed event id, the
-- same content under a new id, an old session's history re-imported, a stage that prepared its
-- rows before the forget committed and writes them after), a forgotten item does not come back.
-- RAISE(IGNORE) drops only the offending row; the rest of a multi-row INSERT goes on.

-- How often each tombstone stopped a forgotten event coming back in (counted by the trigger
-- below), for stats.
ALTER TABLE tombstones ADD COLUMN blocked INTEGER NOT NULL DEFAULT 0;

-- The content hash of the candidate merged into a claim (dedup; NULL before 0006 and for a
-- restatement, whose hash is the claim's own): a forget tombstones every wording it merged.
ALTER TABLE claim_merges ADD COLUMN source_hash TEXT;

CREATE INDEX admission_claim_key ON admission_decisions (claim_key) WHERE claim_key IS NOT NULL;

-- An event whose id was forgotten, whose content was forgotten in its namespace, or which
-- belongs to a forgotten session and happened before that forget (a replay of its history;
-- the session's new events are welcome) is dropped silently and counted: a sender replaying
-- after a crash gets its ids back as for duplicates, and nothing is stored. A new id dropped
-- so gets its own event tombstone: it was forgotten on arrival (and is refused the same way
-- when sent again).
CREATE TRIGGER events_drop_forgotten BEFORE INSERT ON events
WHEN EXISTS (
    SELECT 1 FROM tombstones
    WHERE (kind = 'event' AND key = NEW.id)
       OR (kind = 'content' AND key = NEW.namespace || ':' || NEW.content_hash)
       OR (kind = 'session' AND key = NEW.namespace || char(31) || NEW.session_id
           AND NEW.occurred_at <= created_at)
)
BEGIN
    UPDATE tombstones SET blocked = blocked + 1
    WHERE (kind = 'event' AND key = NEW.id)
       OR (kind = 'content' AND key = NEW.namespace || ':' || NEW.content_hash)
       OR (kind = 'session' AND key = NEW.namespace || char(31) || NEW.session_id
           AND NEW.occurred_at <= created_at);
    INSERT OR IGNORE INTO tombstones (kind, key, namespace, reason, created_at)
    VALUES ('event', NEW.id, NEW.namespace, 'dropped on arrival: forgotten content or session',
            NEW.recorded_at);
    SELECT RAISE(IGNORE);
END;

-- A full-text row or a vector of a forgotten claim or event (prepared before the forget,
-- written after it) is never stored.
CREATE TRIGGER recall_docs_drop_forgotten BEFORE INSERT ON recall_docs
WHEN EXISTS (SELECT 1 FROM tombstones WHERE kind = NEW.kind AND key = NEW.item_id)
BEGIN
    SELECT RAISE(IGNORE);
END;

CREATE TRIGGER vectors_drop_forgotten BEFORE INSERT ON vectors
WHEN EXISTS (SELECT 1 FROM tombstones WHERE kind = NEW.owner_kind AND key = NEW.owner_id)
BEGIN
    SELECT RAISE(IGNORE);
END;

-- Forget deletes claims physically (DESIGN.md §6): 'forgotten' stays in the status CHECK of
-- older files but is never stored; a forgotten claim's id lives on only in its tombstone.
CREATE TRIGGER claims_insert_not_forgotten BEFORE INSERT ON claims
WHEN NEW.status = 'forgotten'
BEGIN
    SELECT RAISE(ABORT, 'forget deletes claims: the status forgotten is never stored');
END;

CREATE TRIGGER claims_update_not_forgotten BEFORE UPDATE OF status ON claims
WHEN NEW.status = 'forgotten'
BEGIN
    SELECT RAISE(ABORT, 'forget deletes claims: the status forgotten is never stored');
END;
