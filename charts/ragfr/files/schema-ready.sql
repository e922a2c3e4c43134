-- True once the ragfr migrations have run for this release's embedding space:
-- a migration is recorded (the required version, when one is configured) and the one-row
-- ragfr_embedding_space has the dimension Open WebUI will create its vectors with.
SELECT EXISTS (SELECT 1 FROM ragfr_schema_migrations
                WHERE :'required_version' = '' OR version::text = :'required_version')
   AND EXISTS (SELECT 1 FROM ragfr_embedding_space WHERE dims = :dims);
