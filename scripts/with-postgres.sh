#!/usr/bin/env bash
# Runs a command against a throwaway PostgreSQL server:
#   scripts/with-postgres.sh CMD [ARGS...]
# Starts a fresh cluster (Debian's postgresql package) in a temporary directory, listening on
# 127.0.0.1 at a free port with trust authentication and without fsync (SIKA_PG_FSYNC=on keeps
# it), exports
#   SIKA_TEST_PG_DSN=postgres://postgres@127.0.0.1:PORT/postgres
# runs the command, then stops the server and deletes the directory, whatever happened.
# Exits with the command's status. Any cluster already running (e.g. Debian's on 5432) is ignored.
set -euo pipefail

if [ $# -lt 1 ]; then
  echo "usage: $0 CMD [ARGS...]" >&2
  exit 2
fi

pg_bin=${SIKA_PG_BIN:-}
if [ -z "$pg_bin" ]; then
  for candidate in /usr/lib/postgresql/15/bin /usr/lib/postgresql/*/bin; do
    if [ -x "$candidate/initdb" ] && [ -x "$candidate/pg_ctl" ]; then
      pg_bin=$candidate
      break
    fi
  done
fi
if [ -z "$pg_bin" ] || [ ! -x "$pg_bin/initdb" ]; then
  echo "with-postgres: PostgreSQL server binaries not found (apt-get install postgresql, or set SIKA_PG_BIN)" >&2
  exit 2
fi

# initdb and postgres refuse to run as root: run them as the postgres OS user then.
as_owner=()
if [ "$(id -u)" = 0 ]; then
  if ! id postgres >/dev/null 2>&1; then
    echo "with-postgres: running as root but there is no 'postgres' OS user" >&2
    exit 2
  fi
  as_owner=(runuser -u postgres --)
fi

tmp=$(mktemp -d "${SIKA_PG_TMPDIR:-/tmp}/sika-pg.XXXXXX")
data="$tmp/data"
sock="$tmp/sock"
log="$tmp/postgres.log"
mkdir -p "$sock"
if [ "$(id -u)" = 0 ]; then
  chown -R postgres:postgres "$tmp"
fi
chmod 700 "$tmp"

started=0
cleanup() {
  if [ "$started" = 1 ]; then
    "${as_owner[@]}" "$pg_bin/pg_ctl" -D "$data" -m immediate -w stop >/dev/null 2>&1 || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

"${as_owner[@]}" "$pg_bin/initdb" -D "$data" -U postgres --auth=trust --encoding=UTF8 --no-locale --no-sync \
  >"$tmp/initdb.log" 2>&1 || {
  cat "$tmp/initdb.log" >&2
  echo "with-postgres: initdb failed" >&2
  exit 1
}

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# A throwaway server need not survive a power cut: without fsync the PostgreSQL tests run about
# five times faster here. SIKA_PG_FSYNC=on keeps PostgreSQL's durable defaults (for benchmarks).
durability="-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
if [ "${SIKA_PG_FSYNC:-off}" = on ]; then
  durability=""
fi

# A random free port; another process may take it first, so a failed start tries again.
port=
for _ in 1 2 3 4 5 6 7 8; do
  candidate=$((20000 + RANDOM % 40000))
  port_in_use "$candidate" && continue
  if "${as_owner[@]}" "$pg_bin/pg_ctl" -D "$data" -l "$log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $candidate -k $sock -c max_connections=300 $durability" start >/dev/null 2>&1; then
    port=$candidate
    started=1
    break
  fi
done
if [ -z "$port" ]; then
  cat "$log" >&2 2>/dev/null || true
  echo "with-postgres: could not start PostgreSQL" >&2
  exit 1
fi

export SIKA_TEST_PG_DSN="postgres://postgres@127.0.0.1:$port/postgres"
echo "with-postgres: PostgreSQL $("$pg_bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$port" >&2

set +e
"$@"
status=$?
set -e
exit "$status"
