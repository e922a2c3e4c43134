# ragfr — the two commands an operator needs are `make up` (or `make deploy` on a cluster) and `make test`.
# Each concern keeps its targets in mk/<concern>.mk; this file only wires them together.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
ROOT := $(CURDIR)
VENV := $(ROOT)/.venv
PY := $(VENV)/bin/python
BUILD := $(ROOT)/.build
STATE := $(ROOT)/.state
export ROOT VENV PY BUILD STATE

include $(sort $(wildcard mk/*.mk))

.PHONY: help
help: ## list targets
	@grep -hE '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | sort | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'
