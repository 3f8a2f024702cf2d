-- A run's original input (a plan, a prompt, an agent's command line) in a table of its own. In
-- `runs` it was rewritten with every state change, claim and lease renewal: a plan of a few MB made
-- each of those write a few MB, and each read of the row read them.
CREATE TABLE run_specs (
    run_id TEXT PRIMARY KEY NOT NULL REFERENCES runs (id),
    spec   TEXT NOT NULL                  -- start-over is always possible; secrets sealed
);
INSERT INTO run_specs (run_id, spec) SELECT id, agent_spec FROM runs;
ALTER TABLE runs DROP COLUMN agent_spec;
