# Retrieval quality: the CI gate on the golden set + a fixed PIAF subset, and the full PIAF evaluation.
# Everything runs in its own database of the private cluster, whose embedding space is the offline e5 model.
EVAL_DB ?= ragfr_eval_e5
EVAL_EMBEDDER ?= local:multilingual-e5-small
EVAL_DIMS ?= 384
EVAL_OUT ?= $(STATE)/eval
PIAF_SRC ?= $(abspath $(ROOT)/../shared/datasets/piaf/piaf-v1.1.json)
# CI subset: 40 whole PIAF articles (119 paragraphs, 595 questions), chosen once with seed 7. Changing
# these changes the suite: re-baseline on purpose (make eval-baseline) in the same commit.
PIAF_CI_ARTICLES ?= 40
PIAF_CI_SEED ?= 7
# Full run: a documented random sample of the 7,569 questions (empty = all of them) over all 1,518 paragraphs.
PIAF_FULL_QUERIES ?=
PIAF_FULL_SEED ?= 1
EVAL := $(VENV)/bin/ragfr eval --embedder $(EVAL_EMBEDDER)
export OMP_NUM_THREADS ?= 2

.PHONY: eval-gate eval-full eval-baseline eval-db eval-data

eval-db: setup
	@mkdir -p $(EVAL_OUT)
	@RAGFR_DB=$(EVAL_DB) bash scripts/db.sh --dims $(EVAL_DIMS) --embedding-model $(EVAL_EMBEDDER) \
	  | tail -1 | sed 's/^DATABASE_URL=//' > $(EVAL_OUT)/dsn

eval-data: setup
	@if [[ -f "$(PIAF_SRC)" ]]; then \
	  $(VENV)/bin/ragfr datasets piaf "$(PIAF_SRC)" $(BUILD)/eval/piaf-ci --articles $(PIAF_CI_ARTICLES) --seed $(PIAF_CI_SEED); \
	else echo "eval: PIAF not found at $(PIAF_SRC): the PIAF suites are SKIPPED (see ../shared/datasets/piaf/README.md)"; fi

eval-gate: eval-db eval-data ## CI gate: recall@10 and nDCG@10 vs eval/baselines.json on the golden set + PIAF CI subset
	@rc=0; dsn=$$(cat $(EVAL_OUT)/dsn); \
	$(EVAL) --dsn "$$dsn" --dataset eval/golden --out $(EVAL_OUT)/golden.per-query.jsonl \
	  --baseline eval/baselines.json --suite golden || rc=1; \
	if [[ -d $(BUILD)/eval/piaf-ci ]]; then \
	  $(EVAL) --dsn "$$dsn" --dataset $(BUILD)/eval/piaf-ci --out $(EVAL_OUT)/piaf-ci.per-query.jsonl \
	    --baseline eval/baselines.json --suite piaf-ci || rc=1; \
	fi; \
	if [[ $$rc != 0 ]]; then echo "eval-gate: FAILED (per-query results in $(EVAL_OUT))"; fi; exit $$rc

eval-baseline: eval-db eval-data ## rewrite eval/baselines.json from a fresh run (ON PURPOSE only; commit with a reason)
	@dsn=$$(cat $(EVAL_OUT)/dsn); \
	$(EVAL) --dsn "$$dsn" --dataset eval/golden --out $(EVAL_OUT)/golden.per-query.jsonl \
	  --baseline eval/baselines.json --suite golden --update-baseline; \
	$(EVAL) --dsn "$$dsn" --dataset $(BUILD)/eval/piaf-ci --out $(EVAL_OUT)/piaf-ci.per-query.jsonl \
	  --baseline eval/baselines.json --suite piaf-ci --update-baseline

eval-full: eval-db ## full PIAF (1,518 paragraphs; all 7,569 questions or PIAF_FULL_QUERIES) + golden, JSON in .state/eval (~30 min)
	@test -f "$(PIAF_SRC)" || { echo "eval-full: PIAF not found at $(PIAF_SRC)"; exit 2; }
	$(VENV)/bin/ragfr datasets piaf "$(PIAF_SRC)" $(BUILD)/eval/piaf
	@dsn=$$(cat $(EVAL_OUT)/dsn); \
	$(EVAL) --dsn "$$dsn" --dataset eval/golden --json --out $(EVAL_OUT)/golden-full.per-query.jsonl \
	  > $(EVAL_OUT)/golden-full.json; \
	$(EVAL) --dsn "$$dsn" --dataset $(BUILD)/eval/piaf --json --out $(EVAL_OUT)/piaf-full.per-query.jsonl \
	  $(if $(PIAF_FULL_QUERIES),--limit-queries $(PIAF_FULL_QUERIES) --seed $(PIAF_FULL_SEED)) > $(EVAL_OUT)/piaf-full.json; \
	echo "eval-full: results in $(EVAL_OUT)/golden-full.json and $(EVAL_OUT)/piaf-full.json"
