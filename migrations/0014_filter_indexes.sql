-- ragfr 0014: the declared filters that get their own HNSW graph (partial indexes).
--
-- Why: pgvector applies a WHERE clause after the graph walk, so a filter passing 10 % of the rows makes the
-- walk visit about ten times the candidates of an unfiltered one (~500 for 50 rows: 40 ms against 8 ms at
-- 100k chunks, docs/benchmarks.md). A partial HNSW index `... WHERE vmetadata @> '{"type": "contrat"}'`
-- holds only the passing rows: its walk visits no row the filter rejects. PostgreSQL uses it by itself for
-- any query whose predicate implies the index's (ragfr.retrieval.filters writes that containment test in
-- front of every equality condition), and the vector arm's cost rule sizes the walk by it.
--
-- An operator declares the filters that are frequent and selective (`ragfr filter-index add type=contrat`,
-- docs/runbooks/filter-indexes.md); each row here is one `key = value` equality. The index itself is
-- built CONCURRENTLY outside any transaction (ragfr.db.filter_indexes), so this table is the declaration
-- and the catalog says whether its index exists and is valid. The index name is derived from the pair
-- (ragfr.db.filter_indexes.index_name) and stored so that the catalog can be joined without recomputing it.

CREATE TABLE ragfr_filter_index (
    key text NOT NULL CHECK (length(key) BETWEEN 1 AND 128),
    value text NOT NULL CHECK (length(value) BETWEEN 1 AND 1024),
    index_name text NOT NULL UNIQUE CHECK (index_name ~ '^idx_document_chunk_vector_f_[0-9a-f]{12}$'),
    declared_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (key, value)
);
