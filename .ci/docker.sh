#!/usr/bin/env bash
# Start or stop a private Docker engine for the tests (no iptables, no bridge: containers
# run with --network=none).
#   .ci/docker.sh start DIR   -> prints the DOCKER_HOST of the engine
#   .ci/docker.sh stop DIR
# Needs Debian's docker.io package (apt-get install -y docker.io) and root.
set -euo pipefail
action=${1:?start or stop}
dir=${2:?state folder}
case "$action" in
start)
  mkdir -p "$dir"
  dockerd --data-root "$dir/data" --exec-root "$dir/exec" -H "unix://$dir/docker.sock" \
    --pidfile "$dir/docker.pid" --iptables=false --ip-forward=false --ip-masq=false \
    --bridge=none >"$dir/dockerd.log" 2>&1 &
  for _ in $(seq 100); do
    docker -H "unix://$dir/docker.sock" version >/dev/null 2>&1 && break
    sleep 0.1
  done
  docker -H "unix://$dir/docker.sock" version >/dev/null || { tail "$dir/dockerd.log" >&2; exit 1; }
  echo "unix://$dir/docker.sock"
  ;;
stop)
  if [ -f "$dir/docker.pid" ]; then
    pid=$(cat "$dir/docker.pid")
    docker -H "unix://$dir/docker.sock" ps -aq 2>/dev/null | xargs -r docker -H "unix://$dir/docker.sock" rm -f >/dev/null 2>&1 || true
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
  ;;
*) echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac
