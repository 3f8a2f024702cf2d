-- Where each OpenTelemetry export stands in the audit log (see the SQLite migration of the same name).
CREATE TABLE telemetry_cursors (
    destination   TEXT PRIMARY KEY NOT NULL,
    seq           BIGINT NOT NULL DEFAULT 0,
    spans         BIGINT NOT NULL DEFAULT 0,
    holder        TEXT,
    lease_until   BIGINT NOT NULL DEFAULT 0,
    last_error    TEXT,
    last_error_at BIGINT,
    updated_at    BIGINT NOT NULL
);
