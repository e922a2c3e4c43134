-- ragdb smoke: runs in a fresh cluster; every check raises on failure (psql ON_ERROR_STOP).
CREATE EXTENSION vector;
CREATE EXTENSION unaccent;
DO $$ BEGIN
  ASSERT (SELECT extversion FROM pg_extension WHERE extname = 'vector') = '0.8.0', 'pgvector is not 0.8.0';
END $$;
SELECT setseed(0.5) \gset
CREATE TABLE items (id int PRIMARY KEY, category int, embedding vector(1024));
INSERT INTO items
  SELECT g, g % 10, array(SELECT random() * 2 - 1 + 0 * g FROM generate_series(1, 1024))::vector
  FROM generate_series(1, 150) g;
-- Every operator on realistic 1024-dim data; checked against identities that hold whatever the SIMD path.
DO $$
DECLARE q vector := (SELECT embedding FROM items WHERE id = 1);
BEGIN
  ASSERT (SELECT embedding <-> q FROM items WHERE id = 1) = 0, 'l2 self-distance';
  ASSERT (SELECT abs(embedding <=> q) < 1e-6 FROM items WHERE id = 1), 'cosine self-distance';
  ASSERT (SELECT abs((embedding <#> q) - (embedding <#> embedding)) < 1e-2 FROM items WHERE id = 1), 'inner product';
  -- <#> is the NEGATIVE inner product: |a-b|^2 = -(a<#>a) - (b<#>b) + 2(a<#>b).
  ASSERT (SELECT bool_and(abs((embedding <-> q) ^ 2 + (embedding <#> embedding) + (q <#> q) - 2 * (embedding <#> q)) < 1e-1)
          FROM items), 'l2 vs inner product';
  ASSERT (SELECT bool_and((embedding <+> q) >= (embedding <-> q) - 1e-3) FROM items), 'l1 >= l2';
  ASSERT (SELECT bool_and(abs((embedding::halfvec <=> q::halfvec) - (embedding <=> q)) < 1e-2) FROM items), 'halfvec';
  ASSERT (SELECT bool_and(abs((embedding::halfvec <-> q::halfvec) - (embedding <-> q)) < 5e-2) FROM items), 'halfvec l2';
  ASSERT (SELECT binary_quantize(embedding)::bit(1024) <~> binary_quantize(q)::bit(1024) FROM items WHERE id = 1) = 0,
         'hamming self';
  ASSERT (SELECT bool_and((binary_quantize(embedding)::bit(1024) <%> binary_quantize(q)::bit(1024)) BETWEEN 0 AND 1)
          FROM items), 'jaccard range';
  ASSERT (SELECT bool_and(abs((embedding::sparsevec <-> q::sparsevec) - (embedding <-> q)) < 1e-3) FROM items),
         'sparsevec';
END $$;
CREATE INDEX idx_items_hnsw ON items USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64);
SET enable_seqscan = off;
SET hnsw.ef_search = 10;
SET hnsw.iterative_scan = relaxed_order;
DO $$
DECLARE q vector := (SELECT embedding FROM items WHERE id = 7);
BEGIN
  ASSERT (SELECT id FROM items ORDER BY embedding <=> q LIMIT 1) = 7, 'HNSW nearest neighbour of a stored vector';
  ASSERT (SELECT count(*) FROM (SELECT id FROM items WHERE category = 3 ORDER BY embedding <=> q LIMIT 10) s) = 10,
         'filtered iterative scan returns 10 rows';
END $$;
