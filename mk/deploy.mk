# Kubernetes: the Helm chart (charts/ragfr), its offline tests, and the deployment into a real cluster.
RELEASE ?= ragfr
NAMESPACE ?= ragfr
EXAMPLE ?= default
export RELEASE NAMESPACE

.PHONY: deploy chart-test chart-golden chart-render chart-docs

deploy: ## helm upgrade --install charts/ragfr into the current kube context (RELEASE, NAMESPACE, VALUES=files)
	bash scripts/deploy.sh

chart-test: ## offline chart tests: render, lint, kubernetes-validate 1.29-1.33, invariants, golden snapshots
	$(VENV)/bin/pytest -q tests/chart

chart-golden: ## re-render tests/chart/golden after a chart change; review `git diff` before committing
	RAGFR_UPDATE_GOLDEN=1 $(VENV)/bin/pytest -q tests/chart/test_render.py -k golden
	git diff --stat -- tests/chart/golden

chart-docs: ## regenerate charts/ragfr/README.md (what `helm show readme` prints) from values.schema.json + values.yaml
	$(PY) -m ragfr_tools.chartdocs

chart-render: ## print the manifests of charts/ragfr/examples/$(EXAMPLE).yaml (like `helm template`, no cluster)
	@$(PY) -c 'import sys, yaml, helm_python as h; v = yaml.safe_load(open(sys.argv[1])) or {}; \
	out = h.Chart.load("charts/ragfr").render(v, name=sys.argv[2], namespace=sys.argv[3]); \
	print("\n---\n".join(t for k, t in sorted(out.items()) if not k.endswith("NOTES.txt") and t.strip()))' \
	charts/ragfr/examples/$(EXAMPLE).yaml $(RELEASE) $(NAMESPACE)
