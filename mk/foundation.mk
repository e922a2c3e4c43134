# Build foundation: Debian packages, the venv, pgvector built without AVX-512, a private PostgreSQL root and
# cluster. Every step is idempotent: stamps keyed on its inputs make re-runs skip work.
PGROOT ?= $(BUILD)/pgroot
PGVECTOR_SO := $(PGROOT)/usr/lib/postgresql/15/lib/vector.so
export RAGFR_PGROOT := $(PGROOT)

.PHONY: setup setup-apt setup-venv pgroot db db-stop db-status avx512-scan test-build

setup: setup-apt setup-venv pgroot ## install apt packages, the venv, and build pgvector into .build/pgroot

setup-apt: ## apt prerequisites (bookworm; qemu-user from bookworm-backports; trixie deb-src for pgvector)
	bash scripts/setup-apt.sh

setup-venv: ## .venv with torch CPU + ragfr[local,rerank,k8s,dev] (skips when pyproject.toml is unchanged)
	bash scripts/setup-venv.sh

pgroot: setup-apt ## fetch+verify pgvector 0.8.0, build with OPTFLAGS="", scan for AVX-512, private PG root
	bash scripts/pgroot.sh

db: setup ## start the private cluster, create+migrate database ragfr; last line DATABASE_URL=...
	bash scripts/db.sh

db-stop: ## stop the private cluster
	bash scripts/pg.sh stop

db-status: ## print DATABASE_URL of the running private cluster (exit 3 when stopped)
	bash scripts/pg.sh status

avx512-scan: pgroot ## list AVX-512 instructions per function in the built vector.so
	$(PY) -m ragfr_tools.build.avx512_scan --verbose --allowlist images/ragdb/avx512-allowlist.txt $(PGVECTOR_SO)

test-build: setup ## only the build-foundation tests (scanner, negative controls, emulated old CPU, ragdb image); make test runs them too
	$(VENV)/bin/pytest -q tests/tools/build

.PHONY: image image-local image-smoke bench-pgvector-flags
IMAGE_BASE ?=
image: ## build the ragdb image with podman (IMAGE_BASE=... to override the official postgres:15-bookworm base)
	bash scripts/build-image.sh $(if $(IMAGE_BASE),--base $(IMAGE_BASE))

image-local: setup-apt ## build the ragdb image on a Debian 12 base made here with debootstrap (no registry)
	bash scripts/build-image.sh --local-base

image-smoke: setup-apt ## build (local base) and smoke-test the ragdb image, natively and on an emulated CPU without AVX-512
	tag="$$(bash scripts/build-image.sh --local-base | tail -1)"; \
	bash scripts/image-smoke.sh "$$tag" && bash scripts/image-smoke.sh "$$tag" --old-cpu

bench-pgvector-flags: setup ## HNSW build/query time + AVX-512 counts per pgvector flag set -> .build/bench/pgvector-flags.json
	$(PY) -m ragfr_tools.bench.pgvector_flags
