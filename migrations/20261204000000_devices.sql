-- Remote approvals (`reins serve`): the devices paired with this data dir and the one-time pairing
-- codes offered to them. Only SHA-256 hashes of codes and tokens are kept: a copy of the database
-- lets nobody in.
CREATE TABLE pairings (
    id            TEXT PRIMARY KEY,
    code_sha256   TEXT NOT NULL UNIQUE,
    name          TEXT NOT NULL,          -- the name the device gets
    created_at    INTEGER NOT NULL,
    expires_at    INTEGER NOT NULL,
    used_at       INTEGER,                -- set once, when a device exchanged the code
    device_id     TEXT
);

CREATE TABLE devices (
    id            TEXT PRIMARY KEY,
    name          TEXT NOT NULL,
    token_sha256  TEXT NOT NULL UNIQUE,
    created_at    INTEGER NOT NULL,
    last_used_at  INTEGER,
    revoked_at    INTEGER
);
