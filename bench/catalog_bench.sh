#!/usr/bin/env bash
# Catalog benchmark: GET /country/list and GET /pricing-rule/fees with a valid JWT of the first
# demo merchant, against GET /healthz in the same run (same server, same wrk settings), driven by
# wrk with keep-alive. SQLite in a temp dir (the catalog is served from memory, so the backend
# only matters for the token checks); PostgreSQL too when SIKA_TEST_PG_DSN is set.
#
#   bench/catalog_bench.sh
#   TOKEN_CACHE=0 bench/catalog_bench.sh          # verify every token's signature (no cache)
#   BUILD=build-rel CONNECTIONS=64 THREADS=2 DURATION=10 bench/catalog_bench.sh
#
# TOKEN_CACHE is identity.token_cache_seconds (default here 30, the documented revocation bound a
# busy deployment would run with); the access log is off.
set -euo pipefail
cd "$(dirname "$0")/.."

TOKEN_CACHE=${TOKEN_CACHE:-30}
ROUNDS=${ROUNDS:-2}

source bench/lib.sh

cat >"$TMP/auth.lua" <<'EOF'
function init(args) token = os.getenv("BENCH_TOKEN") end
function request()
  return wrk.format("GET", wrk.path, {["x-sp-auth-token"] = "Bearer " .. token, ["accept-language"] = "fr"})
end
EOF

# Prints "REQ_PER_SEC P99 ERRORS" for one wrk run.
drive() { wrk_run "$1" "$TMP/auth.lua"; }

run_backend() {
  local backend=$1 dsn=$2 port demo base token
  serve_demo "$backend" "$dsn" --set log.access=false --set identity.token_cache_seconds="$TOKEN_CACHE" \
    --set log.level=warn --set payments.enabled=false --set webhooks.enabled=false
  port=$SERVE_PORT
  demo=$SERVE_DEMO
  base=$(demo_value "$demo" base_url)
  token=$(merchant_token "$demo" "payments countries")
  export BENCH_TOKEN=$token
  local fees="$base/pricing-rule/fees?country=CMR&operation=COLLECTION"
  # Sanity: each URL answers 200 with this token before measuring.
  for u in "http://127.0.0.1:$port/healthz" "$base/country/list" "$fees"; do
    code=$(curl -s -o /dev/null -w '%{http_code}' -H "x-sp-auth-token: Bearer $token" "$u")
    [[ "$code" == 200 ]] || { echo "$u answered $code"; cat "$TMP/serve-$backend.log"; exit 1; }
  done
  echo "backend=$backend connections=$CONNECTIONS wrk_threads=$THREADS duration=${DURATION}s token_cache=${TOKEN_CACHE}s"
  printf "%-8s %-22s %12s %10s  %s\n" round route "req/s" "p99" errors
  local r
  for r in $(seq 1 "$ROUNDS"); do
    # Interleaved, so that drift of this shared machine hits every route alike.
    read -r h_rps h_p99 h_err <<<"$(drive "http://127.0.0.1:$port/healthz")"
    read -r c_rps c_p99 c_err <<<"$(drive "$base/country/list")"
    read -r f_rps f_p99 f_err <<<"$(drive "$fees")"
    printf "%-8s %-22s %12s %10s  %s\n" "$r" "/healthz" "$h_rps" "$h_p99" "$h_err"
    printf "%-8s %-22s %12s %10s  %s\n" "$r" "/country/list" "$c_rps" "$c_p99" "$c_err"
    printf "%-8s %-22s %12s %10s  %s\n" "$r" "/pricing-rule/fees" "$f_rps" "$f_p99" "$f_err"
    python3 -c 'import sys; h,c,f=map(float,sys.argv[1:]); print(f"         ratio to /healthz: country/list {c/h:.0%}, pricing-rule/fees {f/h:.0%}")' \
      "$h_rps" "$c_rps" "$f_rps"
  done
  kill "${PIDS[-1]}" 2>/dev/null || true
  wait "${PIDS[-1]}" 2>/dev/null || true
}

run_backend sqlite "sqlite://$TMP/sika.db"
if [[ -n "${SIKA_TEST_PG_DSN:-}" ]]; then
  pg_database "sika_catalog_bench_$$"
  run_backend postgres "$PG_DSN"
fi
