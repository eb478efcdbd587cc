-- 0002: provider gateway (gateway.py, budget.py, ops.py).

-- The ledger also keeps the worst-case cost each call reserved (for a refused call: what it
-- asked for, which tells when its parked job may resume) and how many 429s the call met.
ALTER TABLE provider_calls ADD COLUMN reserved REAL NOT NULL DEFAULT 0;
ALTER TABLE provider_calls ADD COLUMN rate_limited INTEGER NOT NULL DEFAULT 0;
CREATE INDEX provider_calls_job ON provider_calls (job_id) WHERE job_id IS NOT NULL;

-- A reservation knows which call it is for, so that recovery can leave a ledger row for a call
-- whose process died between reserve and settle.
ALTER TABLE budget_reservations ADD COLUMN stage TEXT NOT NULL DEFAULT '';
ALTER TABLE budget_reservations ADD COLUMN call_kind TEXT NOT NULL DEFAULT 'chat';
ALTER TABLE budget_reservations ADD COLUMN job_id INTEGER;

-- Running sums of held + settled cost per budget period, kept in the same transactions as the
-- reservations, so a reserve checks its limits by primary key instead of summing a month of
-- rows. period: 'D2026-01-31' (UTC day) or 'M2026-01' (UTC month); namespace '' = all.
CREATE TABLE budget_usage (
    period     TEXT NOT NULL,
    namespace  TEXT NOT NULL,
    amount     REAL NOT NULL DEFAULT 0,
    PRIMARY KEY (period, namespace)
) WITHOUT ROWID;
