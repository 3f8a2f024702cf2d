-- What a run may spend before it pauses and asks (`budget::Budget` as JSON), set when it is
-- created and raised when a person allows more. A run without a row has no budget.
CREATE TABLE budgets (
    run_id TEXT PRIMARY KEY NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    limits TEXT NOT NULL
);
-- What an external agent reported it spent, per source (an ACP session, a Claude Code process):
-- the latest of its running totals, so a report heard twice counts once.
CREATE TABLE agent_usage (
    run_id      TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    source      TEXT NOT NULL,
    tokens      INTEGER NOT NULL,
    cost_micros INTEGER,
    PRIMARY KEY (run_id, source)
);
