-- One row per model call: what went into its context and why (`reins show RUN --context`).
-- Facts are named by id only: deleting a fact leaves no trace of its value here.
CREATE TABLE context_manifests (
    run_id      TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    step_seq    INTEGER NOT NULL,
    model       TEXT NOT NULL,
    manifest    TEXT NOT NULL,            -- JSON: budget, every candidate, its tokens, fate and why
    facts_used  TEXT NOT NULL,            -- JSON array of profile fact ids
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (run_id, step_seq)
);
