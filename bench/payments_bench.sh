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

cat >"$TMP/intent.lua" <<'EOF'
-- A new transaction per request: a random v4 UUID (per-thread seed) for transaction_uuid.
-- The main state is seeded from the clock: with wrk's fixed default seed, a second run against
-- the same server would replay the first run's UUIDs (idempotent answers, not new intents).
local counter = 0
math.randomseed(os.time())
function setup(thread) thread:set("seed", math.random(1, 2^30)) end
function init(args)
  math.randomseed(seed or os.time())
  token = os.getenv("BENCH_TOKEN")
end
local function uuid()
  return string.format("%08x-%04x-4%03x-%04x-%012x", math.random(0, 0xffffffff), math.random(0, 0xffff),
    math.random(0, 0xfff), 0x8000 + math.random(0, 0x3fff), math.random(0, 0xffffffffffff))
end
function request()
  counter = counter + 1
  local body = string.format('{"amount":%d,"currency":"XAF","transaction_uuid":"%s","provider":"MTN_MOMO_CMR",' ..
    '"channel":"PROVIDER","customer_wallet":"2376%08d","description":"bench","metadata":{"n":%d}}',
    1000 + counter % 5000, uuid(), counter % 100000000, counter)
  return wrk.format("POST", wrk.path, {["content-type"] = "application/json", ["x-sp-auth-token"] = "Bearer " .. token}, body)
end
EOF

cat >"$TMP/status.lua" <<'EOF'
-- Reads random transactions among those created before the run.
function init(args)
  token = os.getenv("BENCH_TOKEN")
  refs = {}
  for line in io.lines(os.getenv("BENCH_REFS")) do refs[#refs + 1] = line end
end
function request()
  local body = '{"transaction_reference":"' .. refs[math.random(1, #refs)] .. '"}'
  return wrk.format("POST", wrk.path, {["content-type"] = "application/json", ["x-sp-auth-token"] = "Bearer " .. token}, body)
end
EOF

# Prints "REQ_PER_SEC P99 ERRORS" for one wrk run.
drive() {
  local url=$1 script=$2 out
  out=$(wrk -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" --latency -s "$script" "$url")
  echo "$out" >>"$TMP/wrk.txt"
  local rps p99 errors
  rps=$(awk '/^Requests\/sec/ {print $2}' <<<"$out")
  p99=$(awk '$1=="99%" {print $2}' <<<"$out")
  errors=$(grep -E "Non-2xx|Socket errors" <<<"$out" | tr '\n' ' ' || true)
  echo "$rps $p99 ${errors:-none}"
}

run_backend() {
  local backend=$1 dsn=$2 port demo base token
  port=$(free_port)
  demo="$TMP/demo-$backend.json"
  SIKA_SECRET_KEY=bench-secret-key-0123456789abcdef0123 \
    "$SIKA" serve --listen "127.0.0.1:$port" --db "$dsn" --public-url "http://127.0.0.1:$port" --demo "$demo" \
    --set log.access=false --set identity.token_cache_seconds=30 --set log.level=warn \
    >"$TMP/sika-$backend.log" 2>&1 &
  PIDS+=($!)
  wait_ready "$port" "$demo"
  base=$(demo_value "$demo" base_url)
  token=$(merchant_token "$demo" "payments")
  export BENCH_TOKEN=$token BENCH_REFS="$TMP/refs-$backend.txt"
  python3 - "$base" "$token" "$STATUS_REFS" >"$BENCH_REFS" <<'EOF'
import json, sys, uuid, urllib.request
base, token, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
for i in range(n):
    body = json.dumps({"amount": 1000 + i, "currency": "XAF", "transaction_uuid": str(uuid.uuid4()), "provider": "MTN_MOMO_CMR",
                       "channel": "PROVIDER", "customer_wallet": "237690000000"}).encode()
    req = urllib.request.Request(base + "/collection/intent", body,
                                 {"content-type": "application/json", "x-sp-auth-token": "Bearer " + token})
    print(json.load(urllib.request.urlopen(req))["data"]["transaction_reference"])
EOF
  wrk -t1 -c4 -d1s -s "$TMP/intent.lua" "$base/collection/intent" >/dev/null  # warm-up
  read -r I_RPS I_P99 I_ERR <<<"$(drive "$base/collection/intent" "$TMP/intent.lua")"
  read -r S_RPS S_P99 S_ERR <<<"$(drive "$base/collection/status" "$TMP/status.lua")"
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
  DROP_DB="sika_bench_$$"
  psql "$SIKA_TEST_PG_DSN" -q -c "CREATE DATABASE $DROP_DB"
  PG_DSN=$(python3 -c 'import sys,urllib.parse as u; p=u.urlparse(sys.argv[1]); print(p._replace(path="/"+sys.argv[2]).geturl())' "$SIKA_TEST_PG_DSN" "$DROP_DB")
  run_backend postgres "$PG_DSN"
fi
