-- What a review becomes when nobody decided it in time: 'pause' keeps it open with no deadline
-- (the run waits, and goes on once it is decided), 'deny' expires it. Reviews opened before this
-- were opened under the old rule, which denied. `paused_at` is when a review timed out and paused.
ALTER TABLE approvals ADD COLUMN on_timeout TEXT NOT NULL DEFAULT 'deny';
ALTER TABLE approvals ADD COLUMN paused_at BIGINT;
