-- PostgreSQL only (team mode): large values there are compressed with LZ4 from this version on.
-- The SQLite file stores values as they are; the version is kept so both schemas count alike.
SELECT 1;
