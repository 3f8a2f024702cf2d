-- When a blob was last stored (ms). Retention removes an unreferenced blob only once it is older
-- than its grace period: a blob stored just before the row that refers to it commits is not taken
-- away in between. In team mode every blob lives in this table (no shared filesystem is assumed).
-- Older rows have 0: committed with what refers to them, so they need no grace.
ALTER TABLE blobs ADD COLUMN stored_ms BIGINT NOT NULL DEFAULT 0;
