-- Review checkpoints and grants: what a person was asked, what they saw, what they decided, and the
-- standing permissions their decisions created.

CREATE TABLE approvals (
    id             TEXT PRIMARY KEY NOT NULL,   -- UUIDv7
    run_id         TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    step_seq       INTEGER NOT NULL,
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
    created_at     INTEGER NOT NULL,
    expires_at     INTEGER NOT NULL,
    decided_at     INTEGER,
    decided_by     TEXT,
    note           TEXT,                        -- the reject reason, or a note with the approval
    scope          TEXT,                        -- once | run | workspace | always
    edited_action  TEXT,                        -- the action as the person edited it (what runs)
    edited_hash    TEXT,
    edited_preview TEXT,
    superseded_by  TEXT,                        -- the approval that replaced this one
    stale_reason   TEXT                         -- why it was superseded
);
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
    uses         INTEGER NOT NULL DEFAULT 0,
    last_used_at INTEGER,
    created_at   INTEGER NOT NULL,
    revoked_at   INTEGER
);
CREATE INDEX grants_live ON grants (tool, revoked_at);
