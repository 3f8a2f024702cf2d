-- Each event's MAC (N13): HMAC-SHA256 of its hash under the audit key in the OS keyring of the
-- machine that wrote it, as "<key id>:<hex>". NULL where no keyring could be reached, and on
-- events written before this version. Not part of the hash, so the chain reads as it did.
ALTER TABLE audit_events ADD COLUMN mac TEXT;
