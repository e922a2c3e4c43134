# Embedding-model migration (issue 6): its tests and its benchmark, against the private cluster.
.PHONY: test-embmigrate bench-embmigrate

test-embmigrate: setup ## embedding-migration tests (real PostgreSQL + offline models; kill -9 resume tests are slow)
	$(VENV)/bin/pytest -q tests/embmigrate

SWITCH_ROWS ?= 100000

bench-embmigrate: setup ## migration overhead, search p95 during migration, reader wait at the switch (SWITCH_ROWS) -> .build/bench/
	dsn="$$(bash scripts/pg.sh start | sed -n 's/^DATABASE_URL=//p' | tail -n 1)"; \
	OMP_NUM_THREADS=2 $(PY) -m ragfr_tools.bench.embmigrate --dsn "$$dsn" --out $(BUILD)/bench/embmigrate.json && \
	OMP_NUM_THREADS=1 $(PY) -m ragfr_tools.bench.switch_wait --dsn "$$dsn" --rows $(SWITCH_ROWS) \
	  --out $(BUILD)/bench/switch-wait.json
