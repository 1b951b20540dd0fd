# kafka-chaos: `make` alone lists the targets.
SHELL := /bin/bash
.DEFAULT_GOAL := help
LABEL := org.kafka-chaos.project=kafka-chaos

.PHONY: help setup setup-browser engine images demo test nightly clean

help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-z-]+:.*## / {printf "  make %-14s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

setup: ## venv + Docker engine + images; idempotent and cached (a second run takes seconds)
	@scripts/setup.sh

setup-browser: ## install Debian's chromium for the report's browser test, if it is missing
	@scripts/setup.sh --browser-only

engine: ## make sure a Docker engine answers (installs and starts dockerd as root if needed)
	@scripts/docker-engine.sh

images: ## build the kafka-chaos/* images (or pull the ones named elsewhere in versions.env)
	@scripts/build-images.sh

demo: setup ## run the default scenario
	.venv/bin/kafka-chaos run scenarios/default.yaml

test: setup setup-browser ## run the test suite (unit, analysis, real-cluster and browser tests), the slow families left out
	.venv/bin/python -m pytest -q --durations=15 -m "not slow"

NIGHTLY_DIR ?= nightly
NIGHT := $(NIGHTLY_DIR)/$(shell date -u +%Y%m%d-%H%M)

ZOO_REPEAT ?= 3

nightly: setup setup-browser ## the slow families, the assignor x membership x protocol matrix and the bug zoo; compare, zoo tables and trend page under nightly/
	@mkdir -p $(NIGHT); status=0; \
	.venv/bin/python -m pytest -q --durations=25 -m slow --keep-runs $(NIGHT)/runs --junitxml=$(NIGHT)/junit.xml || status=$$?; \
	.venv/bin/kafka-chaos zoo --repeat $(ZOO_REPEAT) --runs-dir $(NIGHT)/zoo --out $(NIGHT) || status=$$?; \
	matrix=$$(ls -d $(NIGHT)/runs/test_matrix_*/*/ 2>/dev/null); \
	if [[ -n $$matrix ]]; then .venv/bin/kafka-chaos compare $$matrix --out $(NIGHT) || true; fi; \
	.venv/bin/kafka-chaos trend $(NIGHTLY_DIR) --out $(NIGHTLY_DIR)/trend.html || true; \
	echo "nightly: $(NIGHT) (junit.xml, compare.md, zoo.md), trend: $(NIGHTLY_DIR)/trend.html"; exit $$status

clean: ## remove containers and networks labelled org.kafka-chaos.project=kafka-chaos (images stay)
	@if ! docker info >/dev/null 2>&1; then echo "[clean] no Docker engine answers: nothing to do"; exit 0; fi; \
	c=$$(docker ps -aq --filter label=$(LABEL)); n=$$(docker network ls -q --filter label=$(LABEL)); \
	if [[ -n $$c ]]; then docker rm -f -v $$c >/dev/null; fi; \
	if [[ -n $$n ]]; then docker network rm $$n >/dev/null; fi; \
	echo "[clean] removed $$(wc -w <<<"$$c") container(s), $$(wc -w <<<"$$n") network(s)"
