# Kubernetes: the Helm chart (charts/ragfr), its offline tests, and the deployment into a real cluster.
RELEASE ?= ragfr
NAMESPACE ?= ragfr
EXAMPLE ?= default
export RELEASE NAMESPACE

.PHONY: deploy chart-test chart-golden chart-render chart-docs restore-job

deploy: ## helm upgrade --install charts/ragfr into the current kube context (RELEASE, NAMESPACE, VALUES=files)
	bash scripts/deploy.sh

chart-test: ## offline chart tests: render, lint, kubernetes-validate 1.29-1.33, invariants, golden snapshots
	$(VENV)/bin/pytest -q tests/chart

chart-golden: ## re-render tests/chart/golden after a chart change; review `git diff` before committing
	RAGFR_UPDATE_GOLDEN=1 $(VENV)/bin/pytest -q tests/chart/test_render.py -k golden
	git diff --stat -- tests/chart/golden

chart-docs: ## regenerate charts/ragfr/README.md (what `helm show readme` prints) from values.schema.json + values.yaml
	$(PY) -m ragfr_tools.chartdocs

chart-render: ## print the manifests (like `helm template`, no cluster) of VALUES=files (yours, layered like helm -f), else of charts/ragfr/examples/$(EXAMPLE).yaml
	@$(PY) -m ragfr_tools.chart_render $(RELEASE) $(NAMESPACE) $(or $(VALUES),charts/ragfr/examples/$(EXAMPLE).yaml)

restore-job: ## print the Job restoring backup set SET=<stamp> into the release of VALUES=files (| kubectl apply -f -; docs/runbooks/restore.md)
	@$(PY) -m ragfr_tools.restore_job $(RELEASE) $(NAMESPACE) "$(SET)" $(VALUES)
