-- ragfr 0016: a large knowledge base gets an HNSW graph of its own (issue 39).
--
-- Why: every collection's vectors share idx_document_chunk_vector. A walk of that graph for one collection
-- depends on every other collection's rows: measured, another team's upload changed 6.9 % of a knowledge
-- base's top 10s although nothing in it changed. A collection of at most `collection_exact_rows` chunks is
-- scored exactly (ragfr.retrieval.semantic) and needs no graph. A larger one gets a partial index
-- `... WHERE collection_name = '<name>'`: its walk reads that collection's rows only, so what other
-- collections hold or receive never changes its answers.
--
-- These graphs are declared like the filter indexes of 0014 (same table, same concurrent build, same copy by
-- an embedding migration) but by `ragfr filter-index sync` itself, from the collections' row counts
-- (ragfr_collection_stats), never by an operator: `on_collection` marks them, and `key` is then the
-- column's name, `collection_name`. The primary key takes the flag so that a metadata filter on a key
-- that happens to be called collection_name stays a different declaration.

ALTER TABLE ragfr_filter_index ADD COLUMN on_collection boolean NOT NULL DEFAULT false;
ALTER TABLE ragfr_filter_index DROP CONSTRAINT ragfr_filter_index_pkey;
ALTER TABLE ragfr_filter_index ADD PRIMARY KEY (on_collection, key, value);
ALTER TABLE ragfr_filter_index ADD CONSTRAINT ragfr_filter_index_collection_key
    CHECK (NOT on_collection OR key = 'collection_name');
