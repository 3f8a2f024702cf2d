-- Where each OpenTelemetry export stands in the audit log. Spans are built from committed events,
-- so an export follows the log with a cursor of its own: `seq` is the last event whose spans the
-- collector took. One process at a time exports to a destination (`holder` until `lease_until`),
-- so a span is sent once however many workers and apps share the database. Bookkeeping only:
-- nothing here is a decision, so it is not audited.
CREATE TABLE telemetry_cursors (
    destination   TEXT PRIMARY KEY NOT NULL,  -- the traces endpoint, without credentials
    seq           INTEGER NOT NULL DEFAULT 0,
    spans         INTEGER NOT NULL DEFAULT 0, -- spans the collector took, in all
    holder        TEXT,
    lease_until   INTEGER NOT NULL DEFAULT 0,
    last_error    TEXT,
    last_error_at INTEGER,
    updated_at    INTEGER NOT NULL
);
