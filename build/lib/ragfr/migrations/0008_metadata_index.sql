-- ragfr 0008: an index for equality filters on chunk metadata.
--
-- Hard filters such as `type=contrat` or `year=2024` (ragfr search --filter, Open WebUI's `filter`) compile
-- to `vmetadata ->> key = value`. No index serves that for arbitrary keys, so every filtered query
-- scanned the collection's rows: 79-97 ms p50 at 100k chunks for 0.1-10 % filters (docs/benchmarks.md).
-- ragfr.retrieval.filters now adds a containment test that this index answers, `vmetadata @> {key: value}`,
-- in front of the unchanged `->>` test, so results stay exactly the same.
-- Built in the migration's transaction: writes to document_chunk wait for it. A GIN index over small
-- jsonb values takes seconds per 100k rows.

CREATE INDEX IF NOT EXISTS idx_document_chunk_vmetadata ON document_chunk USING gin (vmetadata jsonb_path_ops);
