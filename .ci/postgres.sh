#!/usr/bin/env bash
# Start or stop a private PostgreSQL server on 127.0.0.1 for the tests.
#   .ci/postgres.sh start DIR [PORT]   -> prints the SQLAlchemy URL of the server
#   .ci/postgres.sh stop DIR
# Needs Debian's postgresql package (apt-get install -y postgresql). As root, the server runs
# as the 'postgres' user that the package creates.
set -euo pipefail
action=${1:?start or stop}
dir=${2:?data folder}
port=${3:-55432}
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[ -n "$bin" ] || { echo "postgresql is not installed (apt-get install -y postgresql)" >&2; exit 1; }
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

case "$action" in
start)
  mkdir -p "$dir"
  [ "$(id -u)" = 0 ] && chown postgres "$dir"
  if [ ! -f "$dir/data/PG_VERSION" ]; then
    as_pg "$bin/initdb" -D "$dir/data" -U postgres --auth=trust >"$dir/initdb.log"
  fi
  as_pg "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w \
    -o "-k $dir -h 127.0.0.1 -p $port" start >/dev/null
  echo "postgresql+psycopg://postgres@127.0.0.1:$port/postgres"
  ;;
stop)
  as_pg "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
  ;;
*) echo "usage: $0 start|stop DIR [PORT]" >&2; exit 2 ;;
esac
