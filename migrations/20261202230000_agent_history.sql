-- An agent's append-only history (an LLM agent's conversation and the steps it saw done), entry by
-- entry, written once with the checkpoint that first covers it. A checkpoint holds how many entries
-- it stands on and a digest chained over them, instead of the whole history in every checkpoint.
-- A run resumed from an older checkpoint writes its next entries over the ones after it.
CREATE TABLE agent_history (
    run_id TEXT NOT NULL REFERENCES runs(id),
    idx    INTEGER NOT NULL,          -- from 0, in the order the agent made them
    entry  TEXT NOT NULL,             -- JSON, secrets sealed
    PRIMARY KEY (run_id, idx)
) WITHOUT ROWID;

-- The highest checkpoint of a run whose checksum a resume verified, and that checksum: the next
-- resume verifies only the checkpoints after it (`reins doctor` still verifies all).
CREATE TABLE checkpoint_verified (
    run_id  TEXT PRIMARY KEY REFERENCES runs(id),
    through INTEGER NOT NULL,
    sha256  TEXT NOT NULL
) WITHOUT ROWID;
