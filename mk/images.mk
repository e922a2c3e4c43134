# Every image the chart names (ragfr/ragdb, ragfr/ragfr, ragfr/owui-init; ragfr/reranker once `make reranker`
# has trained the French cross-encoder here), tagged with the chart's appVersion: built and smoke-tested here,
# saved for air-gapped sites, pushed to a registry. scripts/images.sh does the work.
DIR ?=
REGISTRY ?=

.PHONY: images images-save images-push cluster-smoke

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
