-- Recovery: what each attempt was told on resume, retries under a budget, backoff, and retention.

-- The recovery summary an attempt gave its agent (JSON), when it resumed a run.
ALTER TABLE attempts ADD COLUMN recovery TEXT;

-- A queued run is not claimed before this time (backoff after a transient failure).
ALTER TABLE runs ADD COLUMN not_before INTEGER;

-- Every retry a run used from its budget: transient failures, and workers lost under it.
CREATE TABLE retries (
    run_id   TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    n        INTEGER NOT NULL,
    at       INTEGER NOT NULL,
    class    TEXT NOT NULL,               -- transient | worker_lost
    error    TEXT NOT NULL,
    delay_ms INTEGER NOT NULL,            -- the backoff before the next attempt
    PRIMARY KEY (run_id, n)
);

-- Checkpoints below `through` were removed by retention (`reins gc`): not damage, not a gap.
CREATE TABLE checkpoint_pruned (
    run_id  TEXT PRIMARY KEY NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    through INTEGER NOT NULL,
    at      INTEGER NOT NULL
);

-- Processes a tool started for a run (in their own process group), so that after a crash the
-- next worker can end the orphans before anything runs again. (pid, start_time) names one process.
CREATE TABLE processes (
    run_id     TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    step_seq   INTEGER NOT NULL,
    pid        INTEGER NOT NULL,
    start_time INTEGER NOT NULL,          -- clock ticks since boot (/proc/PID/stat field 22)
    pgid       INTEGER NOT NULL,
    command    TEXT NOT NULL,
    started_at INTEGER NOT NULL,
    ended_at   INTEGER,
    outcome    TEXT,
    PRIMARY KEY (run_id, step_seq, pid)
);
