# Retrieval-core benchmark (issue 3, item 12). NOT part of `make test`: it measures, it does not gate.
# Corpus databases (ragfr_bench_* in the private cluster) are cached by a hash of their generator
# parameters and the schema, so only the first run pays the loads and HNSW builds (~20 min for all four).
# Two vector geometries (tools/ragfr_tools/bench/corpus.py): `lowrank` (low intrinsic dimension, like real
# embeddings) gets every measurement; `uniform` (the worst case for HNSW) gets the recall table only.
BENCH_SIZES ?= 10000,100000
BENCH_QUERIES ?= 200
BENCH_UNIFORM_QUERIES ?= 100
BENCH_OUT ?= docs/bench
BENCH_ARGS ?=

.PHONY: bench bench-report

bench: setup ## retrieval core vs stock Open WebUI: latency, filtered top-k, HNSW recall@10 at 10k/100k -> docs/bench/*.json
	@dsn="$$(bash scripts/pg.sh start | sed -n 's/^DATABASE_URL=//p' | tail -n 1)"; started=$$(date +%s); \
	OMP_NUM_THREADS=1 $(PY) -m ragfr_tools.bench --dsn "$$dsn" --geometry lowrank --sizes $(BENCH_SIZES) \
	  --queries $(BENCH_QUERIES) --recall-queries $(BENCH_QUERIES) $(BENCH_ARGS) \
	  --out $(BENCH_OUT)/retrieval-core-lowrank.json; \
	OMP_NUM_THREADS=1 $(PY) -m ragfr_tools.bench --dsn "$$dsn" --geometry uniform --sizes $(BENCH_SIZES) \
	  --recall-queries $(BENCH_UNIFORM_QUERIES) --skip latency --skip legacy --skip lexrank --skip explain \
	  $(BENCH_ARGS) --out $(BENCH_OUT)/retrieval-core-uniform.json; \
	echo "bench: wall time $$(( $$(date +%s) - started )) s; tables again: make bench-report"

bench-report: ## print the Markdown tables of the last `make bench` (docs/bench/retrieval-core-*.json)
	@for f in $(BENCH_OUT)/retrieval-core-*.json; do echo "## $$f"; $(PY) -m ragfr_tools.bench.report "$$f"; done

# Scale benchmark (issue 16): 300k and 1M chunks, cold and warm, shared_buffers 256MB and 2GB, on the
# harness's own cluster (.state/pg-scale: it restarts it). Hours at 1M on 2 cores; ~10-12 GB of disk at 1M.
SCALE_SIZES ?= 300000,1000000
SCALE_ARGS ?=
comma := ,
.PHONY: bench-scale
bench-scale: setup ## footprint, build time, cold/warm latency and recall at 300k/1M chunks -> docs/bench/scale-*.json
	OMP_NUM_THREADS=1 $(PY) -m ragfr_tools.bench.scale --sizes $(SCALE_SIZES) $(SCALE_ARGS) \
	  --out $(BENCH_OUT)/scale-$(subst $(comma),-,$(SCALE_SIZES)).json
