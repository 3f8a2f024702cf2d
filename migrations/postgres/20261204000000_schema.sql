-- Reins' schema on PostgreSQL (team mode), as the SQLite migrations up to 20261204000000 leave it:
-- the same tables, columns and indexes, so one set of queries serves both. Times are Unix
-- milliseconds (BIGINT), ids are UUIDv7 text, JSON columns hold canonical JSON text, and small
-- blobs (pre-images, large checkpoints) live in `blobs`, so no shared filesystem is assumed.
-- From here on, a migration added for SQLite gets its PostgreSQL twin under the same version.

CREATE TABLE runs (
    id            TEXT PRIMARY KEY NOT NULL,
    name          TEXT NOT NULL,
    goal          TEXT NOT NULL,
    workspace     TEXT NOT NULL,
    agent_kind    TEXT NOT NULL,
    compat        TEXT NOT NULL,          -- JSON: agent kind/version, spec hash, tool schema hash, checkpoint schema version
    state         TEXT NOT NULL,
    state_version BIGINT NOT NULL DEFAULT 0,
    fence         BIGINT NOT NULL DEFAULT 0,
    owner         TEXT,
    lease_until   BIGINT,
    last_error    TEXT,
    created_at    BIGINT NOT NULL,
    updated_at    BIGINT NOT NULL
, not_before BIGINT);
CREATE INDEX runs_by_state ON runs (state);
CREATE TABLE attempts (
    run_id     TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    n          BIGINT NOT NULL,
    worker     TEXT NOT NULL,
    fence      BIGINT NOT NULL,
    started_at BIGINT NOT NULL,
    ended_at   BIGINT,
    outcome    TEXT, recovery TEXT,
    PRIMARY KEY (run_id, n)
);
CREATE TABLE steps (
    run_id      TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq         BIGINT NOT NULL,
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
    started_at  BIGINT NOT NULL,
    ended_at    BIGINT,
    tokens_in   BIGINT,
    tokens_out  BIGINT,
    cost_micros BIGINT,
    PRIMARY KEY (run_id, seq)
);
CREATE TABLE checkpoints (
    run_id         TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq            BIGINT NOT NULL,      -- the run's logical clock
    level          TEXT NOT NULL,         -- task | step | tool | review | snapshot | rollback
    schema_version BIGINT NOT NULL,
    payload        BYTEA,                  -- canonical bytes, or NULL when stored in the blob store
    blob           TEXT,                  -- sha256 of the payload blob when it is over the inline limit
    size           BIGINT NOT NULL,
    sha256         TEXT NOT NULL,
    created_at     BIGINT NOT NULL,
    UNIQUE (run_id, seq),
    CHECK ((payload IS NULL) <> (blob IS NULL))
);
CREATE TABLE checkpoint_damage (
    run_id      TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq         BIGINT NOT NULL,
    kind        TEXT NOT NULL,            -- gap | checksum | unreadable
    detected_at BIGINT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
CREATE TABLE intents (
    id           TEXT NOT NULL,           -- UUIDv7, for people and the audit log
    run_id       TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    step_seq     BIGINT NOT NULL,
    tool         TEXT NOT NULL,
    action       TEXT NOT NULL,
    action_hash  TEXT NOT NULL,
    effect_class TEXT NOT NULL,           -- pure | idempotent | at_most_once
    status       TEXT NOT NULL,           -- pending | confirmed | business_failed | unknown | skipped
    pre_images   TEXT NOT NULL,           -- JSON [{path, sha256|null}]
    post_images  TEXT NOT NULL,
    result       TEXT,                    -- pending: what the agent will be told once confirmed; settled: the outcome
    settled_by   TEXT,                    -- how a pending intent was settled after a restart
    fence        BIGINT NOT NULL,
    created_at   BIGINT NOT NULL,
    settled_at   BIGINT,
    PRIMARY KEY (run_id, step_seq),       -- one effect per step; the key also serves lookups by run
    FOREIGN KEY (run_id, step_seq) REFERENCES steps (run_id, seq)
);
CREATE TABLE blobs (
    sha256 TEXT PRIMARY KEY NOT NULL,
    size   BIGINT NOT NULL,
    bytes  BYTEA NOT NULL
);
CREATE TABLE audit_events (
    seq       BIGINT PRIMARY KEY NOT NULL,
    at        BIGINT NOT NULL,
    actor     TEXT NOT NULL,              -- user | agent | harness | system
    kind      TEXT NOT NULL,
    run_id    TEXT,
    payload   TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    hash      TEXT NOT NULL
, step_seq BIGINT, approval_id TEXT);
CREATE TABLE retries (
    run_id   TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    n        BIGINT NOT NULL,
    at       BIGINT NOT NULL,
    class    TEXT NOT NULL,               -- transient | worker_lost
    error    TEXT NOT NULL,
    delay_ms BIGINT NOT NULL,            -- the backoff before the next attempt
    PRIMARY KEY (run_id, n)
);
CREATE TABLE checkpoint_pruned (
    run_id  TEXT PRIMARY KEY NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    through BIGINT NOT NULL,
    at      BIGINT NOT NULL
);
CREATE TABLE processes (
    run_id     TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    step_seq   BIGINT NOT NULL,
    pid        BIGINT NOT NULL,
    start_time BIGINT NOT NULL,          -- clock ticks since boot (/proc/PID/stat field 22)
    pgid       BIGINT NOT NULL,
    command    TEXT NOT NULL,
    started_at BIGINT NOT NULL,
    ended_at   BIGINT,
    outcome    TEXT,
    PRIMARY KEY (run_id, step_seq, pid)
);
CREATE TABLE approvals (
    id             TEXT PRIMARY KEY NOT NULL,   -- UUIDv7
    run_id         TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    step_seq       BIGINT NOT NULL,
    tool           TEXT NOT NULL,
    action         TEXT NOT NULL,               -- canonical JSON of the proposed action
    action_hash    TEXT NOT NULL,               -- sha256 of `action`: what an approval binds to
    risk           TEXT NOT NULL,               -- low | medium | high
    reasons        TEXT NOT NULL,               -- JSON array of plain-language reasons
    segments       TEXT,                        -- JSON: a shell command's classified parts
    preview        TEXT NOT NULL,               -- the diff, parsed command or request the person sees
    preview_sha256 TEXT NOT NULL,
    pre_images     TEXT NOT NULL,               -- JSON [{path, sha256|null}] the preview was made from
    context        TEXT NOT NULL,               -- JSON context summary: goal, progress, why, what was read
    policy         TEXT NOT NULL,               -- the policy version that asked
    status         TEXT NOT NULL,               -- pending | approved | rejected | expired | superseded
    created_at     BIGINT NOT NULL,
    expires_at     BIGINT NOT NULL,
    decided_at     BIGINT,
    decided_by     TEXT,
    note           TEXT,                        -- the reject reason, or a note with the approval
    scope          TEXT,                        -- once | run | workspace | always
    edited_action  TEXT,                        -- the action as the person edited it (what runs)
    edited_hash    TEXT,
    edited_preview TEXT,
    superseded_by  TEXT,                        -- the approval that replaced this one
    stale_reason   TEXT                         -- why it was superseded
, edited_risk TEXT, edited_reasons TEXT);
CREATE INDEX approvals_by_status ON approvals (status, expires_at);
CREATE INDEX approvals_by_step ON approvals (run_id, step_seq);
CREATE TABLE grants (
    id           TEXT PRIMARY KEY NOT NULL,
    scope        TEXT NOT NULL,                 -- run | workspace | always
    run_id       TEXT,                          -- scope run
    workspace    TEXT,                          -- scope workspace
    tool         TEXT NOT NULL,
    matcher      TEXT NOT NULL,                 -- exact | prefix | glob
    pattern      TEXT NOT NULL,                 -- action hash | JSON argv prefix | path glob
    origin       TEXT NOT NULL REFERENCES approvals (id),
    uses         BIGINT NOT NULL DEFAULT 0,
    last_used_at BIGINT,
    created_at   BIGINT NOT NULL,
    revoked_at   BIGINT
, risk TEXT, options TEXT);
CREATE INDEX grants_live ON grants (tool, revoked_at);
CREATE INDEX audit_by_run_seq ON audit_events (run_id, seq);
CREATE INDEX audit_by_kind_seq ON audit_events (kind, seq);
CREATE INDEX audit_by_approval ON audit_events (approval_id) WHERE approval_id IS NOT NULL;
CREATE TABLE memory_facts (
    id         TEXT PRIMARY KEY NOT NULL,
    category   TEXT NOT NULL,
    key        TEXT NOT NULL,
    version    BIGINT NOT NULL,          -- the current version
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    UNIQUE (category, key)
);
CREATE TABLE memory_versions (
    fact_id     TEXT NOT NULL REFERENCES memory_facts (id) ON DELETE CASCADE,
    version     BIGINT NOT NULL,
    value       TEXT NOT NULL,
    confidence  DOUBLE PRECISION NOT NULL,
    origin      TEXT NOT NULL,            -- user | agent
    run_id      TEXT,
    step_seq    BIGINT,
    source_text TEXT,                     -- the words it came from
    created_at  BIGINT NOT NULL,
    PRIMARY KEY (fact_id, version)
);
CREATE TABLE memory_suggestions (
    id          TEXT PRIMARY KEY NOT NULL,
    category    TEXT NOT NULL,
    key         TEXT NOT NULL,
    value       TEXT NOT NULL,
    confidence  DOUBLE PRECISION NOT NULL,
    run_id      TEXT,
    step_seq    BIGINT,
    source_text TEXT,
    reason      TEXT NOT NULL,            -- why it was not stored directly
    created_at  BIGINT NOT NULL
);
CREATE TABLE settings (
    key        TEXT PRIMARY KEY NOT NULL,
    value      TEXT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE TABLE context_manifests (
    run_id      TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    step_seq    BIGINT NOT NULL,
    model       TEXT NOT NULL,
    manifest    TEXT NOT NULL,            -- JSON: budget, every candidate, its tokens, fate and why
    facts_used  TEXT NOT NULL,            -- JSON array of profile fact ids
    created_at  BIGINT NOT NULL,
    PRIMARY KEY (run_id, step_seq)
);
CREATE TABLE agent_history (
    run_id TEXT NOT NULL REFERENCES runs(id),
    idx    BIGINT NOT NULL,          -- from 0, in the order the agent made them
    entry  TEXT NOT NULL,             -- JSON, secrets sealed
    PRIMARY KEY (run_id, idx)
);
CREATE TABLE checkpoint_verified (
    run_id  TEXT PRIMARY KEY REFERENCES runs(id),
    through BIGINT NOT NULL,
    sha256  TEXT NOT NULL
);
CREATE TABLE run_specs (
    run_id TEXT PRIMARY KEY NOT NULL REFERENCES runs (id),
    spec   TEXT NOT NULL                  -- start-over is always possible; secrets sealed
);
CREATE TABLE pairings (
    id            TEXT PRIMARY KEY,
    code_sha256   TEXT NOT NULL UNIQUE,
    name          TEXT NOT NULL,          -- the name the device gets
    created_at    BIGINT NOT NULL,
    expires_at    BIGINT NOT NULL,
    used_at       BIGINT,                -- set once, when a device exchanged the code
    device_id     TEXT
);
CREATE TABLE devices (
    id            TEXT PRIMARY KEY,
    name          TEXT NOT NULL,
    token_sha256  TEXT NOT NULL UNIQUE,
    created_at    BIGINT NOT NULL,
    last_used_at  BIGINT,
    revoked_at    BIGINT
);
