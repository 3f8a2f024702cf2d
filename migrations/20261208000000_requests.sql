-- What an agent running outside Reins asks of its run (a Claude Code hook's tool call, what it
-- did, the session's end): kept until whoever drives the run hands it to the agent as its next
-- move, then marked taken, with the step that decided it.
CREATE TABLE requests (
    id         TEXT PRIMARY KEY NOT NULL,
    run_id     TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    body       TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    taken_at   INTEGER,
    step_seq   INTEGER
);
CREATE INDEX requests_open ON requests (run_id, taken_at, created_at);
