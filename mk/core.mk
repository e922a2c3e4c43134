# The test entry point: everything from nothing, then every test, then the private cluster is stopped.
.PHONY: test lint
test: ## set up everything from nothing (apt, venv, pgvector, private PostgreSQL) and run all tests
	bash scripts/test.sh

lint: setup ## ruff + mypy
	$(VENV)/bin/ruff check src tools tests patches
	$(VENV)/bin/mypy

.PHONY: run
run: ## THE main job: deploy to the current kube context, or (no cluster configured) the local stack
	bash scripts/run.sh
