# Embedding-model migration (issue 6): its tests and its benchmark, against the private cluster.
.PHONY: test-embmigrate bench-embmigrate

test-embmigrate: setup ## embedding-migration tests (real PostgreSQL + offline models; kill -9 resume tests are slow)
	$(VENV)/bin/pytest -q tests/embmigrate

bench-embmigrate: setup ## migration overhead vs raw embedding, search p95 during migration -> .build/bench/embmigrate.json
	dsn="$$(bash scripts/pg.sh start | sed -n 's/^DATABASE_URL=//p' | tail -n 1)"; \
	OMP_NUM_THREADS=2 $(PY) -m ragfr_tools.bench.embmigrate --dsn "$$dsn" --out $(BUILD)/bench/embmigrate.json
