"""Moving the stored corpus to another embedding model in place, without downtime or data loss.

The chunk text is already in `document_chunk`: it is re-embedded into a shadow column, indexed,
verified, and swapped in with one transaction (docs/runbooks/embedding-migration.md). Modules:
`names` (every identifier), `catalog` (what the database has), `state` (the phase row), `lock`
(one migrator at a time), `backfill` (checkpointed re-embedding), `indexing`, `verify`, `swap`
(the atomic renames), `labels` (the model named in vmetadata, after a switch or rollback),
`runner` (the commands), `plan` (dry-run), `stop` (signals honoured at the next
safe point), `progress` (a bar on a terminal, plain lines elsewhere), `faults` (test kill points) and
`k8s` (the same steps as a Kubernetes Job, and Open WebUI's configuration at the switch).
"""
