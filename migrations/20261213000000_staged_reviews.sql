-- A staged command's card: the result as the journal will apply it (JSON: the files with their
-- hashes as staged and the blobs of their new bytes, the staging's words). NULL: not staged.
ALTER TABLE approvals ADD COLUMN staged TEXT;
