-- Large values are compressed with LZ4 instead of PostgreSQL's default pglz: about three times
-- faster to compress a checkpoint (the durable step pays for it on every commit) and smaller
-- too. Only values written from now on use it; older ones stay readable as they are. A server
-- built without LZ4 keeps pglz, and this migration changes nothing there.
DO $$
BEGIN
    ALTER TABLE checkpoints ALTER COLUMN payload SET COMPRESSION lz4;
    ALTER TABLE blobs ALTER COLUMN bytes SET COMPRESSION lz4;
    ALTER TABLE steps ALTER COLUMN action SET COMPRESSION lz4;
    ALTER TABLE steps ALTER COLUMN result SET COMPRESSION lz4;
    ALTER TABLE intents ALTER COLUMN action SET COMPRESSION lz4;
    ALTER TABLE agent_history ALTER COLUMN entry SET COMPRESSION lz4;
    ALTER TABLE context_manifests ALTER COLUMN manifest SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN
    RAISE NOTICE 'this server has no LZ4; large values stay compressed with pglz';
END
$$;
