#!/usr/bin/env bash
# The whole setup, idempotent and cached (make setup): the Python venv, the Docker engine, the images,
# and with --browser Debian's chromium for the report's browser test (--browser-only: just that).
# A second run does no real work.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

usage() { echo "usage: $0 [--browser | --browser-only]  (or KAFKA_CHAOS_SETUP_BROWSER=1)" >&2; exit 2; }
browser=${KAFKA_CHAOS_SETUP_BROWSER:-0} main=1
case ${1:-} in
  "") ;;
  --browser) browser=1 ;;
  --browser-only) browser=1 main=0 ;;
  *) usage ;;
esac

python_venv() {
  local stamp=.venv/.kafka-chaos-pyproject.sha256 want
  step "python venv (.venv, pip install -e '.[dev]')"
  want=$(sha256sum pyproject.toml | cut -d' ' -f1)
  if [[ -x .venv/bin/python && $(cat "$stamp" 2>/dev/null) == "$want" ]]; then
    step_done "up to date"; return
  fi
  if [[ ! -x .venv/bin/python ]]; then
    if ! python3 -m venv .venv 2>/dev/null; then  # Debian keeps ensurepip in python3-venv
      rm -rf .venv
      apt_install python3-venv
      run_logged venv python3 -m venv .venv
    fi
  fi
  log "pip install -e '.[dev]' (a few minutes the first time: pyspark is a large sdist)"
  run_logged pip .venv/bin/python -m pip install -e '.[dev]'
  echo "$want" >"$stamp"
  step_done "installed"
}

spark_class_archive() {
  local out
  step "Spark class-data archive (a faster cold analysis; about a minute to build, once)"
  if out=$(.venv/bin/python -m analysis.jvm_archive 2>&1); then
    step_done "${out%%:*}"
  else  # the analysis works without it, only slower to start
    log "WARNING: no class-data archive: ${out##*$'\n'}"
    step_done "skipped"
  fi
}

install_chromium() {
  step "chromium (for the report's browser test)"
  if command -v chromium >/dev/null; then step_done "present"; return; fi
  apt_install chromium
  step_done "installed"
}

ACTIONLINT_VERSION=v1.7.12
# actionlint checks .github/workflows/ (tests/test_workflows.py), which cannot run here; a Go module, built once
# into the cache. Without Go the workflow test is skipped, nothing else needs it.
install_actionlint() {
  local bin=$CACHE_DIR/bin/actionlint
  step "actionlint $ACTIONLINT_VERSION (checks the GitHub workflows)"
  if [[ $("$bin" -version 2>/dev/null | head -1) == "$ACTIONLINT_VERSION" ]]; then step_done "present"; return; fi
  if ! command -v go >/dev/null; then step_done "skipped: no Go toolchain"; return; fi
  run_logged actionlint env GOBIN="$CACHE_DIR/bin" go install "github.com/rhysd/actionlint/cmd/actionlint@$ACTIONLINT_VERSION"
  step_done "installed in $CACHE_DIR/bin"
}

install_compose() {
  step "docker-compose (compose.yaml, and the external-cluster test that brings it up)"
  if command -v docker-compose >/dev/null; then step_done "present"; return; fi
  if [[ $(id -u) != 0 ]]; then step_done "missing, and not root: the compose test will be skipped"; return; fi
  apt_install docker-compose
  step_done "installed"
}

java_member_program() {
  step "the Java member programs (workloads/java: many consumers a JVM; workloads/streams: the Kafka Streams member), built with Maven once per source"
  command -v mvn >/dev/null || apt_install maven
  local jars
  jars=$(.venv/bin/python -m workloads.java_build) || die "the Java member programs did not build (see above)"
  step_done "$(echo "$jars" | sed "s|$HOME/||" | paste -sd ' ')"
}

if ((main)); then
  python_venv
  java_member_program
  spark_class_archive
  LOG_TAG=setup "$ROOT/scripts/docker-engine.sh"
  install_compose
  install_actionlint
  LOG_TAG=setup "$ROOT/scripts/build-images.sh"
fi
if ((browser)); then install_chromium; fi
log "setup complete in $(secs_since "$SCRIPT_T0") s"
