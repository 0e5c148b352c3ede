#!/usr/bin/env bash
# Payments benchmark: POST /collection/intent (a new transaction per request, durable) and
# POST /collection/status against `sika serve` with the demo world, driven by wrk (keep-alive,
# a valid JWT of the first demo merchant). SQLite in a temp dir always; PostgreSQL too when
# SIKA_TEST_PG_DSN is set (e.g. run under scripts/with-postgres.sh):
#
#   bench/payments_bench.sh
#   scripts/with-postgres.sh bench/payments_bench.sh
#   BUILD=build-rel CONNECTIONS=64 THREADS=2 DURATION=10 bench/payments_bench.sh
#
# The token cache of the identity service is on (identity.token_cache_seconds=30, the documented
# revocation bound), as a deployment with this load would run it; the access log is off.
set -euo pipefail
cd "$(dirname "$0")/.."

STATUS_REFS=${STATUS_REFS:-500}

source bench/lib.sh

write_collection_lua

run_backend() {
  local backend=$1 dsn=$2 port demo base token
  serve_demo "$backend" "$dsn" --set log.access=false --set identity.token_cache_seconds=30 --set log.level=warn
  port=$SERVE_PORT
  demo=$SERVE_DEMO
  base=$(demo_value "$demo" base_url)
  token=$(merchant_token "$demo" "payments")
  export BENCH_TOKEN=$token BENCH_REFS="$TMP/refs-$backend.txt"
  collection_refs "$base" "$token" "$STATUS_REFS" >"$BENCH_REFS"
  wrk -t1 -c4 -d1s -s "$TMP/intent.lua" "$base/collection/intent" >/dev/null  # warm-up
  read -r I_RPS I_P99 I_ERR <<<"$(wrk_run "$base/collection/intent" "$TMP/intent.lua")"
  read -r S_RPS S_P99 S_ERR <<<"$(wrk_run "$base/collection/status" "$TMP/status.lua")"
  # The same server's /healthz in the same run: the floor of this machine at this moment.
  local h_out h_rps
  h_out=$(wrk -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" "http://127.0.0.1:$port/healthz")
  h_rps=$(awk '/^Requests\/sec/ {print $2}' <<<"$h_out")
  local count
  count=$(curl -fsS -o /dev/null -w '%{http_code}' -X POST -H "content-type: application/json" \
    -H "x-sp-auth-token: Bearer $token" -d "{\"transaction_reference\":\"$(head -1 "$BENCH_REFS")\"}" "$base/collection/status")
  printf "%-9s %-22s %12s %10s  %s\n" "$backend" "POST /collection/intent" "$I_RPS" "$I_P99" "errors: $I_ERR"
  printf "%-9s %-22s %12s %10s  %s\n" "$backend" "POST /collection/status" "$S_RPS" "$S_P99" "errors: $S_ERR (check: $count)"
  printf "%-9s %-22s %12s %10s  %s\n" "$backend" "GET /healthz" "$h_rps" "" "(same server, same run)"
  kill "${PIDS[-1]}" 2>/dev/null || true
  wait "${PIDS[-1]}" 2>/dev/null || true
}

echo "connections $CONNECTIONS, wrk threads $THREADS, ${DURATION}s per run, $(nproc) cores"
printf "%-9s %-22s %12s %10s\n" backend route "req/s" "p99"
run_backend sqlite "sqlite://$TMP/sika.db"
if [[ -n "${SIKA_TEST_PG_DSN:-}" ]]; then
  pg_database "sika_bench_$$"
  run_backend postgres "$PG_DSN"
fi
