-- Ingest: events lose their (namespace, content_hash) index.
--
-- A content hash is random, so each event inserted into that index lands on a random leaf
-- page: a group commit of 500 events dirtied ~500 pages, and the index was half of what the
-- ingest writer spent per event (measured: 44 µs of CPU per event with it, 22 without; the
-- COMMIT alone 11 -> 2 µs). Its one reader is restore re-applying content tombstones to a
-- restored copy (restore_content_events), which now scans the events once: restore is rare
-- and offline. Arriving events are checked against content tombstones by the tombstones
-- table's own key (trigger events_drop_forgotten), not through this index.
DROP INDEX events_hash;
