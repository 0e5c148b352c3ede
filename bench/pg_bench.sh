#!/usr/bin/env bash
# PostgreSQL against itself, in one run: pgbench's single-row insert (the reference), then
# `POST /collection/intent` and `POST /collection/status` of `sika serve` on the same server, and
# the ratios. Run it under scripts/with-postgres.sh (SIKA_PG_FSYNC=on keeps fsync):
#
#   scripts/with-postgres.sh bench/pg_bench.sh
#   SIKA_PG_FSYNC=on scripts/with-postgres.sh bench/pg_bench.sh
#   NODES=3 scripts/with-postgres.sh bench/pg_bench.sh     # also three nodes on one database
#
# The reference: 64 pgbench clients (CONNECTIONS), each transaction one
# `INSERT ... ON CONFLICT DO NOTHING RETURNING id` into a table with a primary key and two unique
# indexes, prepared statements (-M prepared). sika: wrk with CONNECTIONS connections on one node;
# with NODES=N, N sika processes on one database and N wrk processes splitting the connections.
# EMBEDDED=1 (the default) first runs the same node on a SQLite file, the embedded path PostgreSQL
# must equal, and prints each PostgreSQL figure's ratio to it too (EMBEDDED=0 skips it).
# PROFILE=1 also records the server's statement times (pg_stat_statements-like figures from
# log_min_duration_statement are too costly: the summary comes from pg_stat_database).
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
[[ -n "${SIKA_TEST_PG_DSN:-}" ]] || { echo "run under scripts/with-postgres.sh"; exit 1; }
NODES=${NODES:-1}
STATUS_REFS=${STATUS_REFS:-500}
PG_BIN=$(dirname "$(command -v pgbench 2>/dev/null || ls /usr/lib/postgresql/*/bin/pgbench | head -1)")

pg_database "sika_pgbench_$$"
fsync=$(psql "$PG_DSN" -Atc "SHOW fsync")

# --- the reference -------------------------------------------------------------------------------
psql "$PG_DSN" -q <<'SQL'
CREATE TABLE bench_ref (id BIGSERIAL PRIMARY KEY, a TEXT NOT NULL UNIQUE, b TEXT NOT NULL UNIQUE, amount BIGINT NOT NULL,
                        created_at BIGINT NOT NULL);
SQL
cat >"$TMP/ref.sql" <<'EOF2'
\set r random(1, 9000000000000000000)
\set amount 1000 + :r % 5000
INSERT INTO bench_ref (a, b, amount, created_at) VALUES ('a' || :r, 'b' || :r, :amount, 1700000000000) ON CONFLICT DO NOTHING RETURNING id;
EOF2
ref_out=$("$PG_BIN/pgbench" -n -M prepared -c "$CONNECTIONS" -j "$THREADS" -T "$DURATION" -f "$TMP/ref.sql" \
  "$PG_DSN" 2>&1 || true)
echo "$ref_out" >"$TMP/pgbench.txt"
REF_TPS=$(awk '/^tps = / {print $3; exit}' <<<"$ref_out")
REF_LAT=$(awk '/^latency average/ {print $4; exit}' <<<"$ref_out")

# --- sika ----------------------------------------------------------------------------------------
write_collection_lua

SECRET=bench-secret-key-0123456789abcdef0123
start_node() {  # start_node N [extra --set ...]: starts node N on a free port, set in NODE_PORT
  local n=$1 port
  shift
  port=$(free_port)
  NODE_PORT=$port
  # Nodes behind one load balancer share one public URL (the tokens' issuer and audience).
  [[ "$n" == 1 ]] && PUBLIC_URL="http://127.0.0.1:$port"
  local demo_args=()
  [[ "$n" == 1 ]] && demo_args=(--demo "$TMP/demo.json")
  SIKA_SECRET_KEY=$SECRET "$SIKA" serve --listen "127.0.0.1:$port" --db "$DB" --public-url "$PUBLIC_URL" \
    "${demo_args[@]}" --set log.access=false --set identity.token_cache_seconds=30 --set log.level=warn "$@" \
    >"$TMP/sika-$n.log" 2>&1 &
  PIDS+=($!)
}

# drive_all SCRIPT PATH PORT...: one wrk per node, splitting CONNECTIONS; prints "RPS P99 ERRORS"
# (P99 the worst node's, RPS the sum) and, on stderr, each node's share.
drive_all() {
  local script=$1 path=$2
  shift 2
  local n=$# per=$((CONNECTIONS / $#)) i=0 port
  local threads=$((THREADS > per ? per : THREADS))
  local wrks=()
  for port in "$@"; do
    i=$((i + 1))
    wrk -t"$threads" -c"$per" -d"${DURATION}s" --latency -s "$script" "http://127.0.0.1:$port/api$path" \
      >"$TMP/wrk-$i.txt" 2>&1 &
    wrks+=($!)
  done
  for p in "${wrks[@]}"; do wait "$p" || true; done
  python3 - "$TMP" "$n" <<'PY'
import re, sys
tmp, n = sys.argv[1], int(sys.argv[2])
total, p99s, errs, shares = 0.0, [], [], []
def ms(v):
    m = re.match(r"([\d.]+)(us|ms|s)", v); x = float(m.group(1))
    return x / 1000 if m.group(2) == "us" else x * 1000 if m.group(2) == "s" else x
for i in range(1, n + 1):
    t = open(f"{tmp}/wrk-{i}.txt").read()
    open(f"{tmp}/wrk.txt", "a").write(t)
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", t).group(1)); total += rps; shares.append(rps)
    p99s.append(ms(re.search(r"^\s+99%\s+(\S+)", t, re.M).group(1)))
    for m in re.finditer(r"(Non-2xx or 3xx responses: \d+|Socket errors: .*)", t): errs.append(m.group(1))
print(f"{total:.0f} {max(p99s):.1f}ms {'/'.join(f'{s:.0f}' for s in shares)} {';'.join(errs).replace(' ', '_') or 'none'}")
PY
}

run_sika() {  # run_sika NODES: on $DB (PostgreSQL, or the SQLite file of the embedded reference)
  local nodes=$1 ports=() port
  rm -f "$TMP/demo.json"
  start_node 1 "${NODE_SETS[@]}"
  port=$NODE_PORT
  wait_ready "$port" "$TMP/demo.json"
  ports+=("$port")
  for n in $(seq 2 "$nodes"); do
    start_node "$n" --set migrate=false "${NODE_SETS[@]}"
    ports+=("$NODE_PORT")
  done
  for port in "${ports[@]}"; do
    for _ in $(seq 1 300); do curl -fsS -o /dev/null "http://127.0.0.1:$port/readyz" 2>/dev/null && break; sleep 0.1; done
  done
  local base token
  base=$(demo_value "$TMP/demo.json" base_url)
  token=$(merchant_token "$TMP/demo.json" "payments")
  export BENCH_TOKEN=$token BENCH_REFS="$TMP/refs-${DB%%:*}.txt"
  if [[ ! -s "$BENCH_REFS" ]]; then
    collection_refs "$base" "$token" "$STATUS_REFS" >"$BENCH_REFS"
  fi
  wrk -t1 -c4 -d1s -s "$TMP/intent.lua" "$base/collection/intent" >/dev/null  # warm-up
  # Fresh planner statistics, as autovacuum keeps them on a server in service: the rows written
  # just now are all one merchant's, and with statistics taken before them the plan of the
  # transaction_uuid lookup walks that merchant's whole (merchant_id, environment, id) index.
  [[ "$DB" == "$PG_DSN" ]] && psql "$PG_DSN" -qc "ANALYZE"
  if [[ -n "${PERF:-}" ]]; then  # a CPU profile of the first node during the intent run
    (sleep 1; perf record -q -g -p "${PIDS[0]}" -o "$TMP/perf.data" -- sleep $((DURATION / 2)) >/dev/null 2>&1) &
  fi
  read -r I_RPS I_P99 I_SPLIT I_ERR <<<"$(drive_all "$TMP/intent.lua" /collection/intent "${ports[@]}")"
  if [[ -n "${PERF:-}" ]]; then
    perf report -i "$TMP/perf.data" --no-children --sort dso,sym --stdio 2>/dev/null | grep -E "^ +[0-9]" | head -25 >"$TMP/perf.txt" || true
    cp "$TMP/perf.txt" "${PERF}"
  fi
  curl -fsS "http://127.0.0.1:${ports[0]}/metrics" 2>/dev/null | grep -E "^sika_db_(write_units|commits|retries|reconnects)" | tr '\n' ' ' >&2 || true; echo >&2
  read -r S_RPS S_P99 S_SPLIT S_ERR <<<"$(drive_all "$TMP/status.lua" /collection/status "${ports[@]}")"
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  PIDS=()
  ratio() { python3 -c "print(f'{float(\"$1\") / float(\"$2\"):.2f}x')"; }
  if [[ "$DB" != "$PG_DSN" ]]; then  # the embedded reference: its rates are what PostgreSQL is compared with
    SQLITE_I=$I_RPS SQLITE_S=$S_RPS
    printf "%-33s %10s %8s  %-8s %s\n" "sika on SQLite: intent" "$I_RPS" "$I_P99" "$(ratio "$I_RPS" "$REF_TPS")" "errors: $I_ERR"
    printf "%-33s %10s %8s  %-8s %s\n" "sika on SQLite: status" "$S_RPS" "$S_P99" "$(ratio "$S_RPS" "$REF_TPS")" "errors: $S_ERR"
    return
  fi
  local vs_i="" vs_s=""
  [[ -n "${SQLITE_I:-}" ]] && vs_i="$(ratio "$I_RPS" "$SQLITE_I") of SQLite; " vs_s="$(ratio "$S_RPS" "$SQLITE_S") of SQLite; "
  printf "%-33s %10s %8s  %-8s %s\n" "sika $nodes node(s): intent" "$I_RPS" "$I_P99" "$(ratio "$I_RPS" "$REF_TPS")" \
    "${vs_i}split $I_SPLIT; errors: $I_ERR"
  printf "%-33s %10s %8s  %-8s %s\n" "sika $nodes node(s): status" "$S_RPS" "$S_P99" "$(ratio "$S_RPS" "$REF_TPS")" \
    "${vs_s}split $S_SPLIT; errors: $S_ERR"
}

NODE_SETS=()
[[ -n "${POOL:-}" ]] && NODE_SETS+=(--set "db_pool_size=$POOL")
echo "PostgreSQL fsync=$fsync, $CONNECTIONS connections, ${DURATION}s per run, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
printf "%-33s %10s %8s  %s\n" "what" "per s" "p99" "ratio to pgbench"
printf "%-33s %10s %8s  %s\n" "pgbench INSERT ON CONFLICT" "$REF_TPS" "avg ${REF_LAT}ms" "1.00x"
if [[ "${EMBEDDED:-1}" == 1 ]]; then  # the same node on a SQLite file, the same minute
  DB="sqlite://$TMP/embedded.db"
  run_sika 1
fi
DB=$PG_DSN
run_sika 1
if [[ "$NODES" -gt 1 ]]; then run_sika "$NODES"; fi
[[ -n "${KEEP:-}" ]] && cp -r "$TMP" /tmp/pgbench-keep
echo "load at the end $(cut -d' ' -f1-3 /proc/loadavg)"
if [[ -n "${PROFILE:-}" ]]; then
  psql "$PG_DSN" -Atc "SELECT xact_commit, xact_rollback, deadlocks FROM pg_stat_database WHERE datname = current_database()" \
    | sed 's/^/pg_stat_database commits|rollbacks|deadlocks: /'
fi
