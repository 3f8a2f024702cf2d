-- Long-term profile memory: facts the user controls, every version kept with where it came from,
-- and an agent's proposals that wait for the user. Values live only in memory_versions and
-- memory_suggestions, so deleting a fact or a suggestion removes its value from the database
-- (the connection runs with secure_delete; the WAL is checkpointed after a delete).
CREATE TABLE memory_facts (
    id         TEXT PRIMARY KEY NOT NULL,
    category   TEXT NOT NULL,
    key        TEXT NOT NULL,
    version    INTEGER NOT NULL,          -- the current version
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    UNIQUE (category, key)
);

CREATE TABLE memory_versions (
    fact_id     TEXT NOT NULL REFERENCES memory_facts (id) ON DELETE CASCADE,
    version     INTEGER NOT NULL,
    value       TEXT NOT NULL,
    confidence  REAL NOT NULL,
    origin      TEXT NOT NULL,            -- user | agent
    run_id      TEXT,
    step_seq    INTEGER,
    source_text TEXT,                     -- the words it came from
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (fact_id, version)
);

CREATE TABLE memory_suggestions (
    id          TEXT PRIMARY KEY NOT NULL,
    category    TEXT NOT NULL,
    key         TEXT NOT NULL,
    value       TEXT NOT NULL,
    confidence  REAL NOT NULL,
    run_id      TEXT,
    step_seq    INTEGER,
    source_text TEXT,
    reason      TEXT NOT NULL,            -- why it was not stored directly
    created_at  INTEGER NOT NULL
);

-- User settings (memory on/off, threshold, categories, …): JSON values.
CREATE TABLE settings (
    key        TEXT PRIMARY KEY NOT NULL,
    value      TEXT NOT NULL,
    updated_at INTEGER NOT NULL
);
