"""Moving the stored corpus to another embedding model in place, without downtime or data loss.

The chunk text is already in `document_chunk`: it is re-embedded into a shadow column, indexed,
verified, and swapped in with one transaction (docs/runbooks/embedding-migration.md). Modules:
`state` (the phase row; the phases and their moves are one table, ragfr.db.phases), `backfill`
(checkpointed re-embedding), `indexing`, `verify`, `swap` (the atomic renames), `labels` (the model
named in vmetadata, after a switch or rollback), the commands: `runner` (`migrate`: one run object,
its phase steps as methods), `rollback`, `finalize`, `status`, `plan` (dry-run); what they share:
`options` and `settings`, `preflight` (why a run would refuse), `target` (the model, probed),
`session` (the connection, the end lines of a stop), `errors`, `faults` (test kill points); and
`k8s` (the same steps as a Kubernetes Job, and Open WebUI's configuration at the switch).
The identifiers and the catalog reads are ragfr.db's (names, catalog, ddl, index_lock).
"""
