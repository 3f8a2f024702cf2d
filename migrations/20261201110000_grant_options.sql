-- A pattern grant for a command covers no option the approved command did not have: the grant keeps
-- that command's options (the words after the prefix that start with `-`), and a later command may
-- vary only its operands. NULL: made before this, so it covers commands with no further options.
ALTER TABLE grants ADD COLUMN options TEXT;           -- JSON array of option words
