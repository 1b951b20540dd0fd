# Sourced by the scripts in scripts/: paths, versions.env, progress lines, one clear error.
# shellcheck shell=bash disable=SC2034  # the variables here are used by the scripts that source this

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE_DIR=${XDG_CACHE_HOME:-$HOME/.cache}/kafka-chaos
LOG_DIR=$CACHE_DIR/logs
LOG_TAG=${LOG_TAG:-setup}
PROJECT_LABEL=org.kafka-chaos.project=kafka-chaos
INPUTS_LABEL=org.kafka-chaos.inputs-sha256
export PATH=$PATH:/usr/local/go/bin
mkdir -p "$LOG_DIR"

now_ms() { local t=${EPOCHREALTIME/./}; echo $((t / 1000)); }
secs_since() { local d=$(($(now_ms) - $1)); printf '%d.%d' $((d / 1000)) $((d % 1000 / 100)); }
SCRIPT_T0=$(now_ms)
STEP=""

log() { printf '[%s] %s\n' "$LOG_TAG" "$*" >&2; }
die() {
  printf '[%s] ERROR: %s\n' "$LOG_TAG" "$*" >&2
  STEP=""  # the message above says it all
  exit 1
}
# At exit: run the ON_EXIT commands (clean-ups), and on a failure (set -e) say which step failed.
ON_EXIT=()
_on_exit() {
  local rc=$? cmd
  for cmd in "${ON_EXIT[@]}"; do eval "$cmd" || true; done
  if ((rc)) && [[ -n $STEP ]]; then
    printf '[%s] ERROR: step "%s" failed (exit %d); see the output above\n' "$LOG_TAG" "$STEP" "$rc" >&2
  fi
}
trap _on_exit EXIT

# step "name" ... step_done ["result"]: one line when a step starts, one with its elapsed seconds.
step() { STEP=$1; STEP_T0=$(now_ms); log "$STEP ..."; }
step_done() { log "$STEP: ${1:-done} ($(secs_since "$STEP_T0") s)"; STEP=""; }

# run_logged NAME CMD...: run CMD with its output in $LOG_DIR/NAME.log; on failure show its tail and stop.
run_logged() {
  local name=$1; shift
  if ! "$@" >"$LOG_DIR/$name.log" 2>&1; then
    tail -n 30 "$LOG_DIR/$name.log" | sed 's/^/    | /' >&2
    die "'$*' failed; full output in $LOG_DIR/$name.log"
  fi
}

# versions.env: KEY=VALUE lines, values taken literally; a non-empty environment variable of the same name wins.
load_versions() {
  local line key
  while IFS= read -r line || [[ -n $line ]]; do
    [[ $line =~ ^[[:space:]]*(#|$) ]] && continue
    [[ $line =~ ^([A-Za-z_][A-Za-z0-9_]*)=(.*)$ ]] || die "versions.env: cannot parse line: $line"
    key=${BASH_REMATCH[1]}
    if [[ -z ${!key:-} ]]; then export "$key=${BASH_REMATCH[2]}"; else export "${key?}"; fi
  done <"$ROOT/versions.env"
}

# The Debian mirror debootstrap uses: DEBIAN_MIRROR if set, else the one this machine's own apt
# sources use for $DEBIAN_SUITE (deb822 .sources files or sources.list lines). No host name is
# written into the project.
debian_mirror() {
  local suite=${1:?suite} uri
  if [[ -n ${DEBIAN_MIRROR:-} ]]; then echo "$DEBIAN_MIRROR"; return; fi
  uri=$(awk -v suite="$suite" '
    /^[[:space:]]*$/ { if (uris != "" && ok) { print uris; exit } uris = ""; ok = 0; next }
    /^URIs:/ { uris = $2 }
    /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == suite) ok = 1 }
    /^Enabled:[[:space:]]*no/ { uris = "" }
    END { if (uris != "" && ok) print uris }' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n 1)
  if [[ -z $uri && -f /etc/apt/sources.list ]]; then
    uri=$(awk -v suite="$suite" '$1 == "deb" { for (i = 2; i < NF; i++) if ($i !~ /^\[/ && $(i + 1) == suite) { print $i; exit } }' \
      /etc/apt/sources.list)
  fi
  [[ -n $uri ]] || die "no Debian mirror for $suite in this machine's apt sources (/etc/apt/sources.list*); set DEBIAN_MIRROR"
  echo "${uri%/}"
}

APT_UPDATED=""
apt_install() {
  [[ $(id -u) == 0 ]] || die "need to install $* with apt-get, but not root"
  export DEBIAN_FRONTEND=noninteractive
  if [[ -z $APT_UPDATED ]]; then run_logged apt-update apt-get update; APT_UPDATED=1; fi
  run_logged apt-install apt-get install -y "$@"
}

docker_answers() { docker info >/dev/null 2>&1; }
