-- Team mode: the machine (host name) a run was started on. With its workspace path it says which
-- workers can carry the run out: the same machine, or one that declares it reaches that workspace.
-- Older runs have none and stay claimable by any worker of the database.
ALTER TABLE runs ADD COLUMN machine TEXT;
