# Open WebUI: its own venv (the real open-webui 0.12.4), the local stack (make up / make down), its tests.
OWUI_VENV := $(ROOT)/.venv-owui
OWUI_STATE := $(STATE)/owui
export OWUI_VENV

.PHONY: owui-venv up down test-owui

owui-venv: ## .venv-owui: CPU torch + open-webui[postgres]==0.12.4 + ragfr's extra packages (cached by a stamp)
	bash scripts/setup-owui.sh

up: setup ## local stack: private PostgreSQL, patched Open WebUI on http://127.0.0.1:8080, Ollama or the e5 test double
	bash scripts/up.sh

down: ## stop what `make up` started (Open WebUI, the test double) and the private PostgreSQL
	@for name in open-webui double; do \
	  pidfile="$(OWUI_STATE)/$$name.pid"; \
	  if [[ -f "$$pidfile" ]] && kill -0 "$$(cat "$$pidfile")" 2>/dev/null; then \
	    kill "$$(cat "$$pidfile")" && echo "down: stopped $$name (pid $$(cat "$$pidfile"))"; \
	  fi; \
	  rm -f "$$pidfile"; \
	done
	bash scripts/pg.sh stop

test-owui: setup owui-venv ## Open WebUI tests: patcher, real 0.12.4 code paths, end to end server (about 3 min)
	$(VENV)/bin/pytest -q tests/owui

.PHONY: owui-init-image
owui-init-image: owui-venv ## build the owui-init image (OWUI_INIT_BASE=localhost/ragfr-bookworm-minbase:1 offline) and smoke-test it
	tag="$$(bash images/owui-init/build.sh $(if $(OWUI_INIT_BASE),--base $(OWUI_INIT_BASE)) | tail -1)"; \
	bash images/owui-init/smoke.sh "$$tag"

.PHONY: load
LOAD_ARGS ?=
load: setup owui-venv ## a team at once: `make up`, then N concurrent analysts through Open WebUI's API -> docs/bench/load.json (about 20 min)
	bash scripts/up.sh
	OMP_NUM_THREADS=2 $(PY) -m ragfr_tools.load --out docs/bench/load.json $(LOAD_ARGS)
