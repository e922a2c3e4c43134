# Every image the chart names (ragfr/ragdb, ragfr/ragfr, ragfr/owui-init; ragfr/reranker once `make reranker`
# has trained the French cross-encoder here), tagged with the chart's appVersion: built and smoke-tested here,
# saved for air-gapped sites, pushed to a registry. scripts/images.sh does the work.
DIR ?=
REGISTRY ?=

.PHONY: images images-save images-push cluster-smoke cluster-smoke-upgrade release release-check chart-package chart-push

images: setup owui-venv ## build + smoke-test ragfr/ragdb, ragfr/ragfr, ragfr/owui-init:<appVersion> (+ ragfr/reranker when trained); prints references and image IDs
	bash scripts/images.sh build

images-save: ## OCI archives of the images (+ ragfr/reranker when built) and of the upstream images VALUES=files render (IMAGES_UPSTREAM=0: ragfr only) + SHA256SUMS in DIR (k3s ctr images import)
	@test -n "$(DIR)" || { echo "images-save: set DIR=<folder>"; exit 2; }
	bash scripts/images.sh save "$(DIR)" $(VALUES)

images-push: ## push the images (+ ragfr/reranker when built) to REGISTRY=host:port (= the chart's global.imageRegistry); prints digests
	@test -n "$(REGISTRY)" || { echo "images-push: set REGISTRY=host:port (the value of global.imageRegistry)"; exit 2; }
	bash scripts/images.sh push "$(REGISTRY)"

cluster-smoke: ## run the rendered default chart's workloads with podman in Kubernetes order (needs `make images`)
	$(PY) -m ragfr_tools.kubesim.smoke --example default

cluster-smoke-upgrade: ## install the previous release (the commit before the newest migration, its own images) with podman, write a knowledge base, upgrade to this checkout: the new migration applied, nothing lost (needs `make images`)
	$(PY) -m ragfr_tools.kubesim.upgrade

release: ## bump charts/ragfr/Chart.yaml version + appVersion (= every ragfr image tag) to VERSION=x.y.z and record what ships in charts/ragfr/release.json; then write its CHANGELOG.md section
	@test -n "$(VERSION)" || { echo "release: set VERSION=x.y.z (newer than the chart's version)"; exit 2; }
	$(PY) -m ragfr_tools.release bump "$(VERSION)"

release-check: ## fail when what ships changed since the chart version was recorded (tests/packaging/test_release.py runs it)
	$(PY) -m ragfr_tools.release check

chart-package: ## the chart as ragfr-<version>.tgz in DIR (helm package; refuses an unrecorded release)
	@test -n "$(DIR)" || { echo "chart-package: set DIR=<folder>"; exit 2; }
	$(PY) -m ragfr_tools.release package "$(DIR)"

chart-push: ## push the chart to REGISTRY=host:port as oci://REGISTRY/charts/ragfr:<version> (CHART_PUSH_FLAGS=--plain-http for an HTTP registry); prints its digest
	@test -n "$(REGISTRY)" || { echo "chart-push: set REGISTRY=host:port (the operator's registry)"; exit 2; }
	$(PY) -m ragfr_tools.release push "$(REGISTRY)" $(CHART_PUSH_FLAGS)
