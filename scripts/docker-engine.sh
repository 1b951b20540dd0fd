#!/usr/bin/env bash
# Make sure a Docker engine answers. On a machine without one (and as root): install Debian's
# docker.io and start dockerd in the background, detached from this shell.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/lib.sh"

SOCK=unix:///var/run/docker.sock
PIDFILE=/var/run/kafka-chaos-dockerd.pid
DAEMON_LOG=/var/log/kafka-chaos-dockerd.log

step "docker engine"
if docker_answers; then step_done "answers already"; exit 0; fi
[[ $(id -u) == 0 ]] || die "no Docker engine answers and not root: start dockerd yourself or run as root"

if ! command -v dockerd >/dev/null || ! command -v docker >/dev/null; then
  log "installing docker.io and iptables with apt-get"
  apt_install docker.io iptables
fi

if [[ -f $PIDFILE ]] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
  pid=$(cat "$PIDFILE")
  log "our dockerd (pid $pid) is running but does not answer yet; waiting"
else
  log "starting dockerd (log: $DAEMON_LOG)"
  # setsid + nohup: its own session, so it outlives this shell and the terminal (both exec, so $! is dockerd)
  # no userland proxy: the kernel forwards the published ports (127.0.0.1 only) instead of one docker-proxy
  # process a port copying every byte a client sends, a quarter of a core at 200 members (BENCHMARKS.md)
  setsid nohup dockerd --host="$SOCK" --pidfile="$PIDFILE" --data-root=/var/lib/docker \
    --userland-proxy="${KAFKA_CHAOS_USERLAND_PROXY:-false}" \
    </dev/null >>"$DAEMON_LOG" 2>&1 &
  pid=$!
fi

why="did not answer within 60 s"
for _ in $(seq 120); do
  if docker_answers; then step_done "dockerd started (pid $pid)"; exit 0; fi
  if ! kill -0 "$pid" 2>/dev/null; then why="exited"; break; fi
  sleep 0.5
done
tail -n 20 "$DAEMON_LOG" | sed 's/^/    | /' >&2
die "dockerd $why; last lines of $DAEMON_LOG above"
