-- The ledger says which token counts the provider reported and which hlmem estimated.
--
-- A call is settled with the usage the provider reported (in its answer, even an answer whose
-- content does not parse, or in an error's body). When it reported none, the gateway settles
-- an estimate (the prompt it estimated before sending, the completion from the size of what
-- arrived, at most max_tokens) and marks the row, so that `hlmem ops report` can show what was
-- paid as the provider counts it apart from what hlmem guessed.
ALTER TABLE provider_calls ADD COLUMN usage_estimated INTEGER NOT NULL DEFAULT 0;
