-- The audit log can be queried by run, approval and kind on a million events (a time filter
-- reads backwards by seq, which follows time, so it needs no index of its own).
-- step_seq and approval_id name what an event is about; like every column they are in the hashed
-- canonical form (when set), so they cannot be changed without breaking the chain.
ALTER TABLE audit_events ADD COLUMN step_seq INTEGER;
ALTER TABLE audit_events ADD COLUMN approval_id TEXT;
DROP INDEX audit_by_run;
CREATE INDEX audit_by_run_seq ON audit_events (run_id, seq);
CREATE INDEX audit_by_kind_seq ON audit_events (kind, seq);
CREATE INDEX audit_by_approval ON audit_events (approval_id) WHERE approval_id IS NOT NULL;
