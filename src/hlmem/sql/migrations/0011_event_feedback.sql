-- 0013: feedback on recalled events (Memory.feedback with an event item's feedback_id).
--
-- A claim keeps its feedback utility in its own row; an event is immutable, so what recall's
-- feedback says of one lives here, one row per event that was given feedback, and goes when
-- the event goes (a forget deletes the event: ON DELETE CASCADE). Ranking reads it as it
-- reads a claim's utility (recall_events).
CREATE TABLE event_feedback (
    event_id    TEXT PRIMARY KEY REFERENCES events (id) ON DELETE CASCADE,
    utility     REAL NOT NULL DEFAULT 0,
    updated_at  TEXT NOT NULL
);
