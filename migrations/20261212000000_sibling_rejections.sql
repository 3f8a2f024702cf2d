-- A rejection that also refused the calls the agent queued after it in the same turn: how many
-- (0: only the card's own call was rejected).
ALTER TABLE approvals ADD COLUMN siblings_rejected INTEGER NOT NULL DEFAULT 0;
