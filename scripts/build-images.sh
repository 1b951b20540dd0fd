#!/usr/bin/env bash
# Build the project's images locally: base (debootstrap), kafka (official jars via Maven) and toxiproxy
# (go install). An image named outside the kafka-chaos/ prefix is pulled instead. Each built image carries
# a label with the hash of its inputs; an image whose label matches is kept as it is.
# `build-images.sh kafka` with KAFKA_VERSION and KAFKA_CHAOS_KAFKA_IMAGE in the environment builds the
# brokers of another Kafka release (what a scenario's cluster.kafka_version asks for).
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/lib.sh"
load_versions
cd "$ROOT"
docker_answers || die "no Docker engine answers: run 'make engine' (scripts/docker-engine.sh) first"

BUILD_DIR=$CACHE_DIR/build
mkdir -p "$BUILD_DIR" "$CACHE_DIR/base"

is_local() { [[ $1 == kafka-chaos/* ]]; }
label_of() { docker image inspect -f "{{index .Config.Labels \"$INPUTS_LABEL\"}}" "$1" 2>/dev/null || true; }
image_id() { docker image inspect -f '{{.Id}}' "$1" 2>/dev/null || true; }
# drop_old OLD_ID NAME: remove the image NAME pointed to before a rebuild, unless something still uses it
drop_old() { if [[ -n $1 && $1 != "$(image_id "$2")" ]]; then docker rmi "$1" >/dev/null 2>&1 || true; fi; }

# inputs_hash WORD... -- PATH...: a short sha256 of the words and of the files under PATHs (in the repo).
inputs_hash() {
  local words=()
  while [[ $1 != -- ]]; do words+=("$1"); shift; done
  shift
  { printf '%s\n' "${words[@]}"; find "$@" -type f -print0 | sort -z | xargs -0 sha256sum; } |
    sha256sum | cut -c1-16
}

pull() {
  if docker image inspect "$1" >/dev/null 2>&1; then step_done "present"; return; fi
  log "pulling $1"
  run_logged "pull" docker pull "$1"
  step_done "pulled"
}

# docker_build NAME HASH CONTEXT [ARG...]: the legacy builder, with the project's labels and the base image.
docker_build() {
  local old; old=$(image_id "$1")
  log "docker build -t $1"
  run_logged "build-${1//[\/:]/-}" env DOCKER_BUILDKIT=0 docker build \
    --build-arg BASE_IMAGE="$KAFKA_CHAOS_BASE_IMAGE" --build-arg JAVA_PACKAGE="$JAVA_PACKAGE" "${@:4}" \
    --label "$PROJECT_LABEL" --label "$INPUTS_LABEL=$2" -t "$1" "$3"
  drop_old "$old" "$1"
}

umount_and_remove() {  # debootstrap may leave /proc etc. mounted in its target if it fails
  umount -R "$1/proc" "$1/sys" "$1/dev/pts" 2>/dev/null || true
  rm -rf --one-file-system "$1"
}

base_image() {
  local img=$KAFKA_CHAOS_BASE_IMAGE h tarball dir old
  step "image $img"
  if ! is_local "$img"; then pull "$img"; return; fi
  local mirror
  mirror=$(debian_mirror "$DEBIAN_SUITE")
  h=$(inputs_hash "$DEBIAN_SUITE" "$mirror" -- images/base)
  if [[ $(label_of "$img") == "$h" ]]; then step_done "up to date"; return; fi
  tarball=$CACHE_DIR/base/rootfs-$DEBIAN_SUITE-$h.tar
  if [[ ! -f $tarball ]]; then
    [[ $(id -u) == 0 ]] || die "debootstrap needs root (or set KAFKA_CHAOS_BASE_IMAGE to a pullable image)"
    command -v debootstrap >/dev/null || apt_install debootstrap
    dir=$(mktemp -d "$CACHE_DIR/base/rootfs.XXXXXX")
    ON_EXIT+=("umount_and_remove '$dir'")
    log "debootstrap --variant=minbase $DEBIAN_SUITE (about a minute; cached as $tarball)"
    run_logged debootstrap debootstrap --variant=minbase \
      --include="$(grep -v '^#' images/base/packages | paste -sd,)" "$DEBIAN_SUITE" "$dir" "$mirror"
    run_logged customize bash images/base/customize.sh "$dir" "$DEBIAN_SUITE" "$mirror"
    tar --numeric-owner --exclude='./dev/*' --exclude='./proc/*' --exclude='./sys/*' \
      -C "$dir" -cf "$tarball.part" .
    find "$CACHE_DIR/base" -maxdepth 1 -name "rootfs-$DEBIAN_SUITE-*.tar" -delete
    mv "$tarball.part" "$tarball"
    umount_and_remove "$dir"
  fi
  log "docker import $img"
  old=$(image_id "$img")
  run_logged import docker import \
    -c "LABEL $PROJECT_LABEL" -c "LABEL $INPUTS_LABEL=$h" \
    -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' -c 'ENV LANG=C.UTF-8' \
    -c 'CMD ["/bin/bash"]' "$tarball" "$img"
  drop_old "$old" "$img"
  step_done "built"
}

kafka_image() {
  local img=$KAFKA_CHAOS_KAFKA_IMAGE h jars_key ctx=$BUILD_DIR/kafka-$KAFKA_VERSION
  step "image $img"
  if ! is_local "$img"; then pull "$img"; return; fi
  h=$(inputs_hash "$(image_id "$KAFKA_CHAOS_BASE_IMAGE")" "$KAFKA_VERSION" "$SCALA_BINARY_VERSION" \
    "$LOG4J_VERSION" "$JAVA_PACKAGE" -- images/kafka)
  if [[ $(label_of "$img") == "$h" ]]; then step_done "up to date"; return; fi
  # the jars: resolved on the host (~/.m2 caches the downloads), kept while the pom and versions hold
  jars_key=$(inputs_hash "$KAFKA_VERSION" "$SCALA_BINARY_VERSION" "$LOG4J_VERSION" -- images/kafka/pom.xml)
  if [[ $(cat "$ctx/libs.inputs" 2>/dev/null) != "$jars_key" ]]; then
    command -v mvn >/dev/null || apt_install maven
    log "resolving Kafka $KAFKA_VERSION + log4j $LOG4J_VERSION jars with Maven"
    rm -rf "$ctx" && mkdir -p "$ctx"
    ON_EXIT+=("[[ -f '$ctx/libs.inputs' ]] || rm -rf '$ctx'")  # a release Maven lacks leaves nothing behind
    cp images/kafka/pom.xml "$ctx/"
    run_logged maven mvn -B -q -f "$ctx/pom.xml" -Dkafka.version="$KAFKA_VERSION" \
      -Dscala.binary.version="$SCALA_BINARY_VERSION" -Dlog4j.version="$LOG4J_VERSION" \
      dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$ctx/libs"
    echo "$jars_key" >"$ctx/libs.inputs"
  fi
  rm -rf "${ctx:?}/bin" "$ctx/config" && cp -r images/kafka/Dockerfile images/kafka/bin images/kafka/config "$ctx/"
  printf '%s\n' pom.xml libs.inputs >"$ctx/.dockerignore"
  docker_build "$img" "$h" "$ctx"
  step_done "built"
}

toxiproxy_image() {
  local img=$KAFKA_CHAOS_TOXIPROXY_IMAGE h v=$TOXIPROXY_VERSION ctx=$BUILD_DIR/toxiproxy-$TOXIPROXY_VERSION
  local mod=github.com/Shopify/toxiproxy/v2
  step "image $img"
  if ! is_local "$img"; then pull "$img"; return; fi
  h=$(inputs_hash "$(image_id "$KAFKA_CHAOS_BASE_IMAGE")" "$v" -- images/toxiproxy/Dockerfile)
  if [[ $(label_of "$img") == "$h" ]]; then step_done "up to date"; return; fi
  if [[ ! -x $ctx/toxiproxy || ! -x $ctx/toxiproxy-cli ]]; then
    command -v go >/dev/null || die "Go >= 1.23 is needed to build Toxiproxy (not on PATH nor in /usr/local/go/bin)"
    log "go install $mod/cmd/{server,cli}@v$v (static)"
    rm -rf "$ctx" && mkdir -p "$ctx/gobin"
    run_logged go-install env CGO_ENABLED=0 GOBIN="$ctx/gobin" go install -trimpath \
      -ldflags="-s -w -X $mod.Version=$v" "$mod/cmd/server@v$v" "$mod/cmd/cli@v$v"
    mv "$ctx/gobin/server" "$ctx/toxiproxy" && mv "$ctx/gobin/cli" "$ctx/toxiproxy-cli" && rmdir "$ctx/gobin"
  fi
  cp images/toxiproxy/Dockerfile "$ctx/"
  docker_build "$img" "$h" "$ctx"
  step_done "built"
}

# Spark for a standalone analysis cluster (harness/cluster/spark.py), on demand only (`make spark-image`, or the
# harness when a cluster is asked for): the venv's pyspark distribution (jars, bin, sbin, python/lib) and the
# libraries the analysis runs on executors, hard-linked into the build context from the venv, so that Spark's
# version is the venv's pyspark and nothing but Debian packages is downloaded. The inputs hash names versions,
# not file contents: hashing the 900 MB would cost seconds on every call.
SPARK_PYTHON=${KAFKA_CHAOS_VENV_PYTHON:-$ROOT/.venv/bin/python}
SPARK_EXECUTOR_LIBS=(numpy pyarrow pandas xxhash)
spark_image() {
  local img site pyspark_version minor h ctx dists=()
  [[ -x $SPARK_PYTHON ]] || die "no venv at $SPARK_PYTHON: run 'make setup' first"
  read -r site pyspark_version minor < <("$SPARK_PYTHON" -c 'import sys, sysconfig, pyspark
print(sysconfig.get_paths()["purelib"], pyspark.__version__, "%d.%d" % sys.version_info[:2])')
  img=${KAFKA_CHAOS_SPARK_IMAGE:-kafka-chaos/spark:$pyspark_version}
  step "image $img"
  if ! is_local "$img"; then pull "$img"; return; fi
  mapfile -t dists < <("$SPARK_PYTHON" images/spark/site_packages.py "${SPARK_EXECUTOR_LIBS[@]}")
  h=$(inputs_hash "$(image_id "$KAFKA_CHAOS_BASE_IMAGE")" "$JAVA_PACKAGE" "$pyspark_version" "$minor" "${dists[@]}" \
    -- images/spark)
  if [[ $(label_of "$img") == "$h" ]]; then step_done "up to date"; return; fi
  ctx=$BUILD_DIR/spark-$pyspark_version
  rm -rf "$ctx" && mkdir -p "$ctx/spark/python" "$ctx/site-packages"
  log "linking Spark $pyspark_version and ${SPARK_EXECUTOR_LIBS[*]} from the venv into the build context"
  cp -al "$site/pyspark/bin" "$site/pyspark/sbin" "$site/pyspark/jars" "$ctx/spark/" 2>/dev/null ||
    cp -a "$site/pyspark/bin" "$site/pyspark/sbin" "$site/pyspark/jars" "$ctx/spark/"
  cp -a "$site/pyspark/python/lib" "$ctx/spark/python/"
  (cd "$site" && tar --exclude=__pycache__ -cf - "${dists[@]}") | tar -C "$ctx/site-packages" -xf -
  cp images/spark/Dockerfile "$ctx/"
  docker_build "$img" "$h" "$ctx" --build-arg PYTHON_MINOR="$minor"
  rm -rf "$ctx"  # hard links or copies of the venv: the image holds them now
  step_done "built"
}

# Arguments: which images (kafka, toxiproxy, spark); none: kafka and toxiproxy. The base image is built only
# when needed.
wanted=("$@")
[[ ${#wanted[@]} -gt 0 ]] || wanted=(kafka toxiproxy)
for name in "${wanted[@]}"; do
  [[ $name == kafka || $name == toxiproxy || $name == spark ]] || die "unknown image '$name' (kafka, toxiproxy or spark)"
done
wants() { [[ " ${wanted[*]} " == *" $1 "* ]]; }
if { wants kafka && is_local "$KAFKA_CHAOS_KAFKA_IMAGE"; } || { wants toxiproxy && is_local "$KAFKA_CHAOS_TOXIPROXY_IMAGE"; } ||
  { wants spark && is_local "${KAFKA_CHAOS_SPARK_IMAGE:-kafka-chaos/spark}"; }; then
  base_image
fi
if wants kafka; then kafka_image; fi
if wants toxiproxy; then toxiproxy_image; fi
if wants spark; then spark_image; fi
