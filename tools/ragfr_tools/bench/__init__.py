"""Benchmarks of ragfr's retrieval core (`make bench`, `python -m ragfr_tools.bench --help`).

corpus   synthetic corpus: PIAF French texts, random unit vectors, exact selectivity classes
store    cached, bulk-loaded benchmark databases (one per corpus parameter hash)
queries  PIAF questions with query vectors near stored rows
latency  ragfr arms / hybrid / filtered hybrid vs Open WebUI's native and legacy paths, interleaved
owui     Open WebUI 0.12.4's retrieval statements, reproduced for timing (credited there)
recall   HNSW recall@10 vs exact search per ef_search
lexrank  BM25 vs ts_rank_cd ranking cost on the same candidates
explain  EXPLAIN ANALYZE of the statements the real search runs
report   Markdown tables from the JSON result
"""
