-- Reins core schema: runs and their attempts, steps, checkpoints, the effect journal and the audit chain.
-- Times are Unix milliseconds (INTEGER). Ids are UUIDv7 text. JSON columns hold canonical JSON text.

CREATE TABLE runs (
    id            TEXT PRIMARY KEY NOT NULL,
    name          TEXT NOT NULL,
    goal          TEXT NOT NULL,
    workspace     TEXT NOT NULL,
    agent_kind    TEXT NOT NULL,
    agent_spec    TEXT NOT NULL,          -- the agent's original input (a plan, a prompt): start-over is always possible
    compat        TEXT NOT NULL,          -- JSON: agent kind/version, spec hash, tool schema hash, checkpoint schema version
    state         TEXT NOT NULL,
    state_version INTEGER NOT NULL DEFAULT 0,
    fence         INTEGER NOT NULL DEFAULT 0,
    owner         TEXT,
    lease_until   INTEGER,
    last_error    TEXT,
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL
);
CREATE INDEX runs_by_state ON runs (state);

CREATE TABLE attempts (
    run_id     TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    n          INTEGER NOT NULL,
    worker     TEXT NOT NULL,
    fence      INTEGER NOT NULL,
    started_at INTEGER NOT NULL,
    ended_at   INTEGER,
    outcome    TEXT,
    PRIMARY KEY (run_id, n)
);

CREATE TABLE steps (
    run_id      TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq         INTEGER NOT NULL,
    kind        TEXT NOT NULL,            -- tool_call | model_call | human | summary
    tool        TEXT NOT NULL,
    action      TEXT NOT NULL,            -- canonical JSON of what was proposed
    action_hash TEXT NOT NULL,
    why         TEXT,
    status      TEXT NOT NULL,            -- running | done | failed | invalid | denied | awaiting_review
    risk        TEXT,
    reasons     TEXT,                     -- JSON array of plain-language reasons
    preview     TEXT,
    result      TEXT,
    started_at  INTEGER NOT NULL,
    ended_at    INTEGER,
    tokens_in   INTEGER,
    tokens_out  INTEGER,
    cost_micros INTEGER,
    PRIMARY KEY (run_id, seq)
);

CREATE TABLE checkpoints (
    run_id         TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq            INTEGER NOT NULL,      -- the run's logical clock
    level          TEXT NOT NULL,         -- task | step | tool | review | snapshot | rollback
    schema_version INTEGER NOT NULL,
    payload        BLOB,                  -- canonical bytes, or NULL when stored in the blob store
    blob           TEXT,                  -- sha256 of the payload blob when it is over the inline limit
    size           INTEGER NOT NULL,
    sha256         TEXT NOT NULL,
    created_at     INTEGER NOT NULL,
    UNIQUE (run_id, seq),
    CHECK ((payload IS NULL) <> (blob IS NULL))
);

-- Damage the harness has seen and recovered past: the recovery prefix may step over these seqs.
CREATE TABLE checkpoint_damage (
    run_id      TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq         INTEGER NOT NULL,
    kind        TEXT NOT NULL,            -- gap | checksum | unreadable
    detected_at INTEGER NOT NULL,
    PRIMARY KEY (run_id, seq)
);

CREATE TABLE intents (
    id           TEXT NOT NULL,           -- UUIDv7, for people and the audit log
    run_id       TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    step_seq     INTEGER NOT NULL,
    tool         TEXT NOT NULL,
    action       TEXT NOT NULL,
    action_hash  TEXT NOT NULL,
    effect_class TEXT NOT NULL,           -- pure | idempotent | at_most_once
    status       TEXT NOT NULL,           -- pending | confirmed | business_failed | unknown | skipped
    pre_images   TEXT NOT NULL,           -- JSON [{path, sha256|null}]
    post_images  TEXT NOT NULL,
    result       TEXT,                    -- pending: what the agent will be told once confirmed; settled: the outcome
    settled_by   TEXT,                    -- how a pending intent was settled after a restart
    fence        INTEGER NOT NULL,
    created_at   INTEGER NOT NULL,
    settled_at   INTEGER,
    PRIMARY KEY (run_id, step_seq),       -- one effect per step; the key also serves lookups by run
    FOREIGN KEY (run_id, step_seq) REFERENCES steps (run_id, seq)
) WITHOUT ROWID;

-- Small content-addressed blobs (pre-images up to 1 MiB), written in the same transaction as the
-- intent that needs them. Larger blobs live as files under the data dir's blobs/ folder.
CREATE TABLE blobs (
    sha256 TEXT PRIMARY KEY NOT NULL,
    size   INTEGER NOT NULL,
    bytes  BLOB NOT NULL
);

CREATE TABLE audit_events (
    seq       INTEGER PRIMARY KEY NOT NULL,
    at        INTEGER NOT NULL,
    actor     TEXT NOT NULL,              -- user | agent | harness | system
    kind      TEXT NOT NULL,
    run_id    TEXT,
    payload   TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    hash      TEXT NOT NULL
);
CREATE INDEX audit_by_run ON audit_events (run_id);
