-- Token counts of an LLM run's earlier turns (see the SQLite migration of the same name).
CREATE TABLE token_counts (
    run_id  TEXT NOT NULL REFERENCES runs(id),
    counter TEXT NOT NULL,
    sha256  TEXT NOT NULL,
    tokens  BIGINT NOT NULL,
    PRIMARY KEY (run_id, counter, sha256)
);
