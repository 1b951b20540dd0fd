# kafka-chaos: `make` alone lists the targets.
SHELL := /bin/bash
.DEFAULT_GOAL := help
LABEL := org.kafka-chaos.project=kafka-chaos

.PHONY: help setup setup-browser engine images spark-image demo test nightly clean

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

spark-image: ## build kafka-chaos/spark (the venv's Spark, for `kafka-chaos spark-cluster`); on demand, not in setup
	@scripts/build-images.sh spark

demo: setup ## run the default scenario
	.venv/bin/kafka-chaos run scenarios/default.yaml

test: setup setup-browser ## run the test suite (unit, analysis, real-cluster and browser tests), the slow families left out
	KAFKA_CHAOS_FAMILIES=.test-results/families.json KAFKA_CHAOS_REQUIRE_ALL_FAMILIES=1 \
	  .venv/bin/python -m pytest -q -rsx --durations=40 -m "not slow" --junitxml=.test-results/junit.xml

NIGHTLY_DIR ?= nightly
NIGHT := $(NIGHTLY_DIR)/$(shell date -u +%Y%m%d-%H%M)

ZOO_REPEAT ?= 3
# A selection, for a night that does not fit (or to try one part): FAMILY is a pytest -k expression over the slow
# families ("all", or "none" to run none), BUGS the zoo bugs ("all", "none", or names as `kafka-chaos zoo --list`
# gives them), ZOO_DIR another zoo folder (e.g. a copy with a planted regression).
FAMILY ?= all
BUGS ?= all
ZOO_DIR ?= scenarios/zoo

nightly: setup setup-browser ## the slow families, the matrix and the bug zoo, then the verdict (summary.md): green when nothing changed, red naming what did
	@mkdir -p $(NIGHT); : > $(NIGHT)/exit-codes; echo "$(NIGHT)" > $(NIGHTLY_DIR)/latest; \
	if [[ "$(FAMILY)" != none ]]; then \
	  select=(); if [[ "$(FAMILY)" != all ]]; then select=(-k "$(FAMILY)"); fi; \
	  KAFKA_CHAOS_FAMILIES=$(NIGHT)/families.json KAFKA_CHAOS_FAMILIES_SELECTION="$(FAMILY)" \
	  .venv/bin/python -m pytest -q -rs --durations=25 -m slow "$${select[@]}" --keep-runs $(NIGHT)/runs \
	    --junitxml=$(NIGHT)/junit.xml; echo "pytest $$?" >> $(NIGHT)/exit-codes; \
	fi; \
	if [[ "$(BUGS)" != none ]]; then \
	  bugs=(); if [[ "$(BUGS)" != all ]]; then bugs=($(BUGS)); fi; \
	  .venv/bin/kafka-chaos zoo "$${bugs[@]}" --dir $(ZOO_DIR) --repeat $(ZOO_REPEAT) --runs-dir $(NIGHT)/zoo --out $(NIGHT); \
	  echo "zoo $$?" >> $(NIGHT)/exit-codes; \
	fi; \
	matrix=$$(ls -d $(NIGHT)/runs/test_matrix_*/*/ 2>/dev/null); \
	if [[ -n $$matrix ]]; then .venv/bin/kafka-chaos compare $$matrix --out $(NIGHT) || true; fi; \
	.venv/bin/kafka-chaos trend $(NIGHTLY_DIR) --out $(NIGHTLY_DIR)/trend.html || echo "trend $$?" >> $(NIGHT)/exit-codes; \
	.venv/bin/kafka-chaos gate $(NIGHT) --trend $(NIGHTLY_DIR)/trend.json; status=$$?; \
	if [[ -n "$${GITHUB_STEP_SUMMARY:-}" ]]; then cat $(NIGHT)/summary.md >> "$$GITHUB_STEP_SUMMARY"; fi; \
	echo "nightly: $(NIGHT) (summary.md, junit.xml, zoo.md, compare.md), trend: $(NIGHTLY_DIR)/trend.html"; exit $$status

clean: ## remove containers and networks labelled org.kafka-chaos.project=kafka-chaos (images stay)
	@if ! docker info >/dev/null 2>&1; then echo "[clean] no Docker engine answers: nothing to do"; exit 0; fi; \
	c=$$(docker ps -aq --filter label=$(LABEL)); n=$$(docker network ls -q --filter label=$(LABEL)); \
	if [[ -n $$c ]]; then docker rm -f -v $$c >/dev/null; fi; \
	if [[ -n $$n ]]; then docker network rm $$n >/dev/null; fi; \
	echo "[clean] removed $$(wc -w <<<"$$c") container(s), $$(wc -w <<<"$$n") network(s)"
