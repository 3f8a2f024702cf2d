-- Token counts of an LLM run's earlier turns, by the counter that made them and the SHA-256 of what
-- was counted: a run resumed in a new process finds them here instead of counting its whole
-- conversation again before its first model call. Written with the model call that first counted
-- them; a count is a pure function of its text and counter, so a row is never changed.
CREATE TABLE token_counts (
    run_id  TEXT NOT NULL REFERENCES runs(id),
    counter TEXT NOT NULL,
    sha256  TEXT NOT NULL,
    tokens  INTEGER NOT NULL,
    PRIMARY KEY (run_id, counter, sha256)
) WITHOUT ROWID;
