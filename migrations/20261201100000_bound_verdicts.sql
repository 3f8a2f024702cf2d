-- A decision is bound to the verdict it was made on, not only to the action's text: a grant keeps
-- the risk of the action it was made from, and an edited approval the risk and reasons of the edit.
-- An action rated riskier later (a parent directory swapped for a symlink into .git, say) is
-- reviewed again instead of running on the old decision.
ALTER TABLE grants ADD COLUMN risk TEXT;              -- low | medium | high; NULL: made before this
UPDATE grants SET risk = (SELECT a.risk FROM approvals a WHERE a.id = grants.origin);

ALTER TABLE approvals ADD COLUMN edited_risk TEXT;    -- the edit's risk, as the person saw it
ALTER TABLE approvals ADD COLUMN edited_reasons TEXT; -- JSON array: the edit's reasons
