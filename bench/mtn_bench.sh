#!/usr/bin/env bash
# MTN MoMo benchmark (docs/performance.md, "Collections through an operator"): `sika serve` on
# SQLite with the mtn_momo connector pointed at the MTN double (tests/e2e/doubles/mtn_momo.mjs, a
# separate Node process), the live demo merchant's token, wrk with keep-alive. In one run:
#   1. POST /collection/intent alone: the reference rate and p99;
#   2. whole collections: each wrk connection creates an intent and executes it; the connector sends
#      requesttopay, the double calls back, the callback is verified by a status query, the
#      collection is COMPLETED and its event is written to the outbox. The rate is the collections
#      COMPLETED per second, from the first intent to the last completion;
#   3. POST /collection/intent again while whole collections run beside it (half the connections
#      each): its p99 under outbound traffic; then beside whole collections at a steady PACE per
#      second, and alone on the same connections: its p99 both ways;
#   4. recovery: RECOVERY_PAYMENTS collections whose callbacks are lost (the double sends none), at
#      the double's limit of 10 status queries per second (the connector's default): the time until
#      every one is final, and the most status queries the double saw in any second.
#   5. slow (only when PHASES names it): intents beside executions to an operator that answers in
#      SLOW_MS (the slow() function below).
#
#   bench/mtn_bench.sh
#   DURATION=10 CONNECTIONS=64 RECOVERY_PAYMENTS=1000 bench/mtn_bench.sh
#   PHASES=recovery bench/mtn_bench.sh
#   OPERATOR=wave PHASES=throughput bench/mtn_bench.sh     # through the Wave double (WAVE_CIV, XOF)
#   OPERATOR=airtel PHASES=throughput bench/mtn_bench.sh   # through the Airtel double (AIRTEL_MONEY_GAB)
#   OPERATOR=orange PHASES=throughput bench/mtn_bench.sh   # through the Orange double, Cameroon push
#   PROFILE=/tmp/whole.perf PHASES=throughput bench/mtn_bench.sh  # perf record -g of sika during whole collections
#   PACE=100 PACE_CONNECTIONS=4 bench/mtn_bench.sh   # the steady pace of the "beside" run (collections/s)
#   PHASES=slow bench/mtn_bench.sh                    # intents beside collections to an operator answering in 2 s
#   SLOW_PG=1 PHASES=slow scripts/with-postgres.sh bench/mtn_bench.sh   # the same on PostgreSQL
#   SIKA_ARGS="--set payments.operator_request_threads=127" PHASES=slow …  # sika's own settings
# (the recovery phase is MTN's: its 10 status queries per second are the published limit.)
set -euo pipefail
cd "$(dirname "$0")/.."

RECOVERY_PAYMENTS=${RECOVERY_PAYMENTS:-1000}
OPERATOR=${OPERATOR:-mtn}
case "$OPERATOR" in
  mtn) DOUBLE=mtn_momo CONNECTOR=mtn_momo PROVIDER=MTN_MOMO_CMR CURRENCY=XAF WALLET='23767%04d100' ;;
  wave) DOUBLE=wave CONNECTOR=wave PROVIDER=WAVE_CIV CURRENCY=XOF WALLET='22507%05d100' ;;
  airtel) DOUBLE=airtel_money CONNECTOR=airtel_money PROVIDER=AIRTEL_MONEY_GAB CURRENCY=XAF WALLET='24174%03d100' ;;
  orange) DOUBLE=orange_money CONNECTOR=orange_money_cm PROVIDER=ORANGE_MONEY_CMR CURRENCY=XAF WALLET='23769%04d100' ;;
  *) echo "OPERATOR must be mtn, wave, airtel or orange" >&2; exit 2 ;;
esac
export BENCH_PROVIDER=$PROVIDER BENCH_CURRENCY=$CURRENCY BENCH_WALLET=$WALLET
PHASES=${PHASES:-throughput,recovery}
source bench/lib.sh
export BENCH_ERRORS="$TMP/errors.txt"

# start_double STATUS_RPS: starts the operator's double; sets DOUBLE_URL, CONTROL_URL (and
# DOUBLE_KEY, the Airtel double's PIN key).
start_double() {
  local out="$TMP/double-$1.out"
  node "tests/e2e/doubles/$DOUBLE.mjs" --status-rps="$1" --rps="$1" >"$out" 2>"$TMP/double-$1.err" &
  PIDS+=($!)
  DOUBLE_PID=$!
  for _ in $(seq 1 100); do [[ -s "$out" ]] && break; sleep 0.05; done
  first() { python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline()).get(sys.argv[2], ""))' "$out" "$1"; }
  DOUBLE_URL="http://127.0.0.1:$(first api)"
  CONTROL_URL="http://127.0.0.1:$(first control)"
  DOUBLE_KEY=$(first public_key)
}

# The connector's configuration for the operator: --set arguments and credentials in the environment.
connector_config() {
  local rate=$1
  case "$OPERATOR" in
    mtn)
      CONNECTOR_ENV=(SIKA_CONNECTORS_MTN_MOMO_COLLECTION_SUBSCRIPTION_KEY=collection-subscription-key
        SIKA_CONNECTORS_MTN_MOMO_COLLECTION_API_USER=a5b2c3d4-0000-4000-8000-00000000c011
        SIKA_CONNECTORS_MTN_MOMO_COLLECTION_API_KEY=collection-api-key
        SIKA_CONNECTORS_MTN_MOMO_DISBURSEMENT_SUBSCRIPTION_KEY=disbursement-subscription-key
        SIKA_CONNECTORS_MTN_MOMO_DISBURSEMENT_API_USER=a5b2c3d4-0000-4000-8000-00000000d150
        SIKA_CONNECTORS_MTN_MOMO_DISBURSEMENT_API_KEY=disbursement-api-key)
      CONNECTOR_ARGS=(--set connectors.mtn_momo.kind=mtn_momo --set "connectors.mtn_momo.base_url=$DOUBLE_URL"
        --set connectors.mtn_momo.target_environment=mtncameroon
        --set "connectors.mtn_momo.status_queries_per_second=$rate") ;;
    wave)
      CONNECTOR_ENV=(SIKA_CONNECTORS_WAVE_API_KEY=wave_ci_prod_test-key SIKA_CONNECTORS_WAVE_WEBHOOK_SECRET=wave_ci_WHS_test-secret)
      CONNECTOR_ARGS=(--set connectors.wave.kind=wave --set "connectors.wave.base_url=$DOUBLE_URL"
        --set "connectors.wave.status_queries_per_second=$rate") ;;
    airtel)
      CONNECTOR_ENV=(SIKA_CONNECTORS_AIRTEL_MONEY_CLIENT_ID=airtel-client-id
        SIKA_CONNECTORS_AIRTEL_MONEY_CLIENT_SECRET=airtel-client-secret SIKA_CONNECTORS_AIRTEL_MONEY_PIN=4321
        "SIKA_CONNECTORS_AIRTEL_MONEY_PUBLIC_KEY=$DOUBLE_KEY")
      CONNECTOR_ARGS=(--set connectors.airtel_money.kind=airtel_money --set "connectors.airtel_money.base_url=$DOUBLE_URL"
        --set connectors.airtel_money.country=GA --set connectors.airtel_money.currency=XAF
        --set "connectors.airtel_money.status_queries_per_second=$rate") ;;
    orange)  # the Cameroon push flow (the redirect flow waits for a customer on Orange's page)
      CONNECTOR_ENV=(SIKA_CONNECTORS_ORANGE_MONEY_CM_CLIENT_ID=orange-client-id
        SIKA_CONNECTORS_ORANGE_MONEY_CM_CLIENT_SECRET=orange-client-secret SIKA_CONNECTORS_ORANGE_MONEY_CM_PIN=2580
        SIKA_CONNECTORS_ORANGE_MONEY_CM_X_AUTH_TOKEN=orange-x-auth-token)
      CONNECTOR_ARGS=(--set connectors.orange_money_cm.kind=orange_money --set "connectors.orange_money_cm.base_url=$DOUBLE_URL"
        --set connectors.orange_money_cm.country=cm --set connectors.orange_money_cm.flow=push
        --set connectors.orange_money_cm.channel_msisdn=699000001
        --set "connectors.orange_money_cm.status_queries_per_second=$rate") ;;
  esac
}

# start_sika NAME STATUS_PER_SECOND [DSN]: sika on a fresh SQLite database (or DSN) with the connector; sets
# BASE, TOKEN, DB and PORT.
start_sika() {
  PORT=$(free_port)
  local demo="$TMP/demo-$1.json"
  DB="$TMP/$1.db"
  local dsn="sqlite://$DB"
  [[ -n "${3:-}" ]] && dsn=$3
  connector_config "$2"
  env SIKA_SECRET_KEY=bench-secret-key-0123456789abcdef0123 "${CONNECTOR_ENV[@]}" \
    "$SIKA" serve --listen "127.0.0.1:$PORT" --db "$dsn" --public-url "http://127.0.0.1:$PORT" --demo "$demo" \
    --set log.access=false --set identity.token_cache_seconds=30 --set log.level=warn "${CONNECTOR_ARGS[@]}" ${SIKA_ARGS:-} \
    >"$TMP/sika-$1.log" 2>&1 &
  PIDS+=($!)
  SIKA_PID=$!
  wait_ready "$PORT" "$demo"
  BASE=$(demo_value "$demo" base_url)
  TOKEN=$(python3 - "$demo" "$CONNECTOR" <<'PY'
import json, sys, urllib.request
d = json.load(open(sys.argv[1])); m = [l for l in d["live_merchants"] if l["connector"] == sys.argv[2]][0]
body = json.dumps({"grant_type": "client_credentials", "client_id": m["client_id"], "client_secret": m["client_secret"],
                   "scope": "payments"}).encode()
req = urllib.request.Request(d["auth_url"] + "/oauth/v2/token", body, {"content-type": "application/json"})
print(json.load(urllib.request.urlopen(req))["access_token"])
PY
)
  export BENCH_TOKEN=$TOKEN
  # Where the operator calls back when it is not told per request (Wave's webhook, Airtel's portal).
  curl -fsS -X POST "$CONTROL_URL/behaviour" \
    -d "{\"webhook_url\":\"$BASE/operator/callback/$CONNECTOR\",\"callback_url\":\"$BASE/operator/callback/$CONNECTOR\"}" >/dev/null
}

cat >"$TMP/intent.lua" <<EOF
$LUA_UUID
local counter = 0
math.randomseed(os.time())
function init(args)
  math.randomseed(seed or os.time()); token = os.getenv("BENCH_TOKEN")
  provider = os.getenv("BENCH_PROVIDER"); currency = os.getenv("BENCH_CURRENCY"); wallet_format = os.getenv("BENCH_WALLET")
end
function request()
  counter = counter + 1
  local body = string.format('{"amount":%d,"currency":"%s","transaction_uuid":"%s","provider":"%s",' ..
    '"customer_wallet":"' .. wallet_format .. '","description":"bench"}', 1000 + counter % 5000, currency, uuid(),
    provider, counter % 1000)
  return wrk.format("POST", "/api/collection/intent",
    {["content-type"] = "application/json", ["authorization"] = "Bearer " .. token}, body)
end
-- Non-2xx answers by status and code, written to BENCH_ERRORS (appended) when the run ends.
local threads = {}
function setup(thread) thread:set("seed", math.random(1, 2^30)); table.insert(threads, thread) end
function response(status, headers, body)
  if status >= 300 then
    local code = body:match('"message":"([^"]+)"') or "?"
    local key = status .. " " .. code
    errs = errs or {}
    errs[key] = (errs[key] or 0) + 1
  end
end
function done(summary, latency, requests)
  local out = io.open(os.getenv("BENCH_ERRORS") or "/dev/null", "a")
  for _, t in ipairs(threads) do
    local e = t:get("errs")
    if e then for k, v in pairs(e) do out:write(k .. " " .. v .. "\n") end end
  end
  out:close()
end
EOF

# Whole collections: intent, then execute of the reference it answered, on each connection.
cat >"$TMP/collect.lua" <<EOF
$LUA_UUID
local counter = 0
-- The references of answered intents not executed yet: one Lua state serves every connection of a
-- wrk thread, so they queue here and the thread's next request executes the oldest.
local pending = {}
math.randomseed(os.time() + 7919)  -- not the intent script's seeds: it runs beside it
function setup(thread) thread:set("seed", math.random(1, 2^30)) end
function init(args)
  math.randomseed(seed or os.time()); token = os.getenv("BENCH_TOKEN")
  provider = os.getenv("BENCH_PROVIDER"); currency = os.getenv("BENCH_CURRENCY"); wallet_format = os.getenv("BENCH_WALLET")
end
function request()
  local headers = {["content-type"] = "application/json", ["authorization"] = "Bearer " .. token}
  if #pending > 0 then
    local body = '{"transaction_reference":"' .. table.remove(pending, 1) .. '"}'
    return wrk.format("POST", "/api/collection/execute", headers, body)
  end
  counter = counter + 1
  local body = string.format('{"amount":%d,"currency":"%s","transaction_uuid":"%s","provider":"%s",' ..
    '"customer_wallet":"' .. wallet_format .. '","description":"whole"}', 1000 + counter % 5000, currency, uuid(),
    provider, counter % 1000)
  return wrk.format("POST", "/api/collection/intent", headers, body)
end
function response(status, headers, body)
  local ref = body:match('"transaction_reference":"([^"]+)"')
  if ref and body:find('"INITIATED"') then table.insert(pending, ref) end
end
EOF

# The same whole collections at a steady pace: each of PACE_CONNECTIONS connections waits between
# its requests so that together they make PACE collections per second (two requests each).
sed -e "s/^function request()/function delay() return $((1000 * ${PACE_CONNECTIONS:-4} / (2 * ${PACE:-100}))) end\nfunction request()/" \
  -e 's/"description":"whole"/"description":"paced"/' "$TMP/collect.lua" >"$TMP/paced.lua"

# metric NAME: the value of a counter on sika's /metrics (loopback peers are admitted).
metric() { curl -fsS "http://127.0.0.1:$PORT/metrics" | awk -v n="$1" '$1 == n {print $2}'; }

sql() { sqlite3 -cmd '.timeout 5000' "$DB" "$1"; }

# cpu_ms PID: the CPU time (user + system) the process has used, in ms.
cpu_ms() { awk -v hz="$(getconf CLK_TCK)" '{print int(($14 + $15) * 1000 / hz)}' "/proc/$1/stat"; }

# wait_final DESCRIPTION TIMEOUT_S: waits until no collection of that description is PENDING.
wait_final() {
  for _ in $(seq 1 $(($2 * 10))); do
    [[ "$(sql "SELECT COUNT(*) FROM pay_transactions WHERE description = '$1' AND status = 'PENDING'")" == 0 ]] && return 0
    sleep 0.1
  done
  echo "collections '$1' still PENDING after $2 s" >&2
}

throughput() {
  start_double 1000000
  start_sika throughput 0
  wrk -t1 -c4 -d1s -s "$TMP/intent.lua" "$BASE/collection/intent" >/dev/null  # warm-up
  local intent_sika_cpu
  intent_sika_cpu=$(cpu_ms "$SIKA_PID")
  read -r I_RPS I_P99 I_ERR <<<"$(wrk_run "$BASE/collection/intent" "$TMP/intent.lua")"
  intent_sika_cpu=$(($(cpu_ms "$SIKA_PID") - intent_sika_cpu))
  local start_ms done_ms completed executed
  local units0 commits0
  units0=$(metric sika_db_write_units_total); commits0=$(metric sika_db_commits_total)
  local sika_cpu0 double_cpu0
  sika_cpu0=$(cpu_ms "$SIKA_PID"); double_cpu0=$(cpu_ms "$DOUBLE_PID")
  start_ms=$(date +%s%3N)
  [[ -n "${PROFILE:-}" ]] && { perf record -q -F ${PROFILE_HZ:-499} ${PROFILE_GRAPH:--g} -p "$SIKA_PID" -o "$PROFILE" -- sleep "$DURATION" 2>/dev/null & }
  read -r C_RPS C_P99 C_ERR <<<"$(wrk_run "$BASE/collection/intent" "$TMP/collect.lua")"
  wait_final whole 120
  local sika_cpu double_cpu
  sika_cpu=$(($(cpu_ms "$SIKA_PID") - sika_cpu0)); double_cpu=$(($(cpu_ms "$DOUBLE_PID") - double_cpu0))
  completed=$(sql "SELECT COUNT(*) FROM pay_transactions WHERE description = 'whole' AND status = 'COMPLETED'")
  executed=$(sql "SELECT COUNT(*) FROM pay_transactions WHERE description = 'whole' AND status <> 'INITIATED'")
  done_ms=$(sql "SELECT MAX(updated_at) FROM pay_transactions WHERE description = 'whole' AND status = 'COMPLETED'")
  local per_units per_commits
  per_units=$(python3 -c "print(round(($(metric sika_db_write_units_total) - $units0) / max(1, $completed), 2))")
  per_commits=$(python3 -c "print(round(($(metric sika_db_commits_total) - $commits0) / max(1, $completed), 2))")
  local busy outcomes
  busy=$(metric sika_payments_operator_busy_total)
  outcomes=$(sql "SELECT outcome || ' ' || COUNT(*) FROM pay_callbacks GROUP BY outcome" | tr '\n' ' ')
  local left
  left=$(sql "SELECT COUNT(*) FROM pay_transactions WHERE description = 'whole' AND status = 'INITIATED'")
  local events
  events=$(sql "SELECT COUNT(*) FROM events WHERE event_type = 'transaction.status_changed' AND subject IN (SELECT reference FROM pay_transactions WHERE description = 'whole' AND status = 'COMPLETED')")
  local e2e ratio
  e2e=$(python3 -c "print(round($completed * 1000 / max(1, $done_ms - $start_ms), 1))")
  ratio=$(python3 -c "print(round($e2e / $I_RPS, 2))")
  # Intents beside whole collections: half the connections each, the same duration.
  local half=$((CONNECTIONS / 2))
  wrk -t1 -c"$half" -d"${DURATION}s" -s "$TMP/collect.lua" "$BASE/collection/intent" >/dev/null &
  local bg=$!
  read -r B_RPS B_P99 B_ERR <<<"$(CONNECTIONS=$half THREADS=1 wrk_run "$BASE/collection/intent" "$TMP/intent.lua")"
  wait "$bg" || true
  # Intents beside whole collections at a steady PACE (an operator account's pace, not the
  # machine's limit), then intents alone again on the same connections: the p99 both ways.
  wrk -t1 -c"${PACE_CONNECTIONS:-4}" -d"${DURATION}s" -s "$TMP/paced.lua" "$BASE/collection/intent" >/dev/null &
  bg=$!
  read -r P_RPS P_P99 P_ERR <<<"$(CONNECTIONS=$half THREADS=1 wrk_run "$BASE/collection/intent" "$TMP/intent.lua")"
  wait "$bg" || true
  wait_final paced 60
  local paced
  paced=$(sql "SELECT COUNT(*) FROM pay_transactions WHERE description = 'paced' AND status = 'COMPLETED'")
  read -r H_RPS H_P99 H_ERR <<<"$(CONNECTIONS=$half THREADS=1 wrk_run "$BASE/collection/intent" "$TMP/intent.lua")"
  printf "%-44s %10s %10s  %s\n" "POST /collection/intent alone" "$I_RPS" "$I_P99" "errors: $I_ERR"
  printf "%-44s %10s %10s  %s\n" "whole collections (COMPLETED per second)" "$e2e" "" \
    "$completed COMPLETED of $executed executed; ratio to intents $ratio; status events $events; write units $per_units and commits $per_commits per collection; answered at once, every request thread allowed to wait on the operator waiting: $busy; callbacks by outcome: $outcomes; intents never executed: $left"
  python3 - "$intent_sika_cpu" "$I_RPS" "$DURATION" "$sika_cpu" "$double_cpu" "$completed" <<'PY'
import sys
ic, rps, d, sc, dc, n = (float(x) for x in sys.argv[1:])
per_intent = ic * 1000 / max(1, rps * d)
print("CPU per intent alone: sika %.0f us; per whole collection: sika %.0f us (%.1f intents), the double %.0f us (%.1f intents)"
      % (per_intent, sc * 1000 / max(1, n), sc * 1000 / max(1, n) / per_intent, dc * 1000 / max(1, n), dc * 1000 / max(1, n) / per_intent))
PY
  printf "%-44s %10s %10s  %s\n" "POST /collection/intent beside collections" "$B_RPS" "$B_P99" "errors: $B_ERR"
  printf "%-44s %10s %10s  %s\n" "POST /collection/intent alone, $half conn." "$H_RPS" "$H_P99" "errors: $H_ERR"
  printf "%-44s %10s %10s  %s\n" "... beside ${PACE:-100} collections/s" "$P_RPS" "$P_P99" \
    "errors: $P_ERR; $paced paced collections COMPLETED ($(python3 -c "print(round($paced / $DURATION, 1))")/s)"
  [[ -s "$BENCH_ERRORS" ]] && { echo "non-2xx answers to intents (status, code, count):"; sort "$BENCH_ERRORS" | awk '{a[$1" "$2]+=$3} END {for (k in a) print "  " k, a[k]}'; }
  curl -fsS "$CONTROL_URL/stats" | python3 -c 'import json,sys; print("double:", json.dumps(json.load(sys.stdin))[:400])'
}

recovery() {
  start_double 10
  start_sika recovery 10
  curl -fsS -X POST "$CONTROL_URL/behaviour" -d '{"callbacks":"none","settle_ms":0}' >/dev/null
  local first_ms last_ms
  first_ms=$(date +%s%3N)
  python3 - "$BASE" "$TOKEN" "$RECOVERY_PAYMENTS" <<'PY'
import json, sys, uuid, urllib.request
from concurrent.futures import ThreadPoolExecutor
base, token, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
def post(path, body):
    req = urllib.request.Request(base + path, json.dumps(body).encode(),
                                 {"content-type": "application/json", "authorization": "Bearer " + token})
    return json.load(urllib.request.urlopen(req))
def one(i):
    ref = post("/collection/intent", {"amount": 1000 + i, "currency": "XAF", "transaction_uuid": str(uuid.uuid4()),
               "provider": "MTN_MOMO_CMR", "customer_wallet": "23767%04d%s" % (i % 10000, "455" if i % 4 == 0 else "100"),
               "description": "lost"})["data"]["transaction_reference"]
    post("/collection/execute", {"transaction_reference": ref})
with ThreadPoolExecutor(16) as pool: list(pool.map(one, range(n)))
PY
  last_ms=$(date +%s%3N)
  wait_final lost 600
  local end_ms
  end_ms=$(date +%s%3N)
  local final
  final=$(sql "SELECT status || ' ' || COUNT(*) FROM pay_transactions WHERE description = 'lost' GROUP BY status" | tr '\n' ' ')
  printf "recovery: %d collections submitted in %.1f s, all final %.1f s after the first submission (%s)\n" \
    "$RECOVERY_PAYMENTS" "$(python3 -c "print(($last_ms - $first_ms) / 1000)")" \
    "$(python3 -c "print(($end_ms - $first_ms) / 1000)")" "$final"
  curl -fsS "$CONTROL_URL/stats" | python3 -c 'import json,sys; s=json.load(sys.stdin); print("double: status queries", s["status_queries"], "most in one second", s["status_max_per_second"], "refused 429", s["rejected_429"], "callbacks", s["callbacks_sent"])'
}

# A slow operator (docs/payments.md, "A slow operator"): POST /collection/intent alone, then beside
# SLOW_CONNECTIONS connections executing collections while the double answers every call in
# SLOW_MS: the intent's rate and p99 both ways, and how many requests were answered at once because
# every request thread allowed to wait on the operator was waiting. On PostgreSQL with SLOW_PG=1
# (under scripts/with-postgres.sh), where intents need a request thread too.
slow() {
  start_double 1000000
  local dsn=""
  if [[ "${SLOW_PG:-0}" == 1 ]]; then
    pg_database "sika_mtn_slow_$$"
    dsn=$PG_DSN
  fi
  start_sika slow 0 "$dsn"
  local half=$((CONNECTIONS / 2))
  wrk -t1 -c4 -d1s -s "$TMP/collect.lua" "$BASE/collection/intent" >/dev/null  # warm-up, the token
  read -r A_RPS A_P99 A_ERR <<<"$(CONNECTIONS=$half THREADS=1 wrk_run "$BASE/collection/intent" "$TMP/intent.lua")"
  curl -fsS -X POST "$CONTROL_URL/behaviour" -d "{\"latency_ms\":${SLOW_MS:-2000}}" >/dev/null
  wrk -t1 -c"${SLOW_CONNECTIONS:-128}" -d"${DURATION}s" -s "$TMP/collect.lua" "$BASE/collection/intent" >/dev/null &
  local bg=$!
  sleep 1
  read -r S_RPS S_P99 S_ERR <<<"$(CONNECTIONS=$half THREADS=1 wrk_run "$BASE/collection/intent" "$TMP/intent.lua")"
  local waiting busy
  waiting=$(metric sika_payments_operator_request_threads)
  wait "$bg" || true
  busy=$(metric sika_payments_operator_busy_total)
  curl -fsS -X POST "$CONTROL_URL/behaviour" -d '{"latency_ms":0}' >/dev/null
  printf "%-44s %10s %10s  %s\n" "POST /collection/intent alone, $half conn." "$A_RPS" "$A_P99" "errors: $A_ERR"
  printf "%-44s %10s %10s  %s\n" "... beside a slow operator (${SLOW_MS:-2000} ms)" "$S_RPS" "$S_P99" \
    "errors: $S_ERR; ${SLOW_CONNECTIONS:-128} connections executing; request threads waiting on it: $waiting; answered at once: $busy"
  curl -fsS "$CONTROL_URL/stats" | python3 -c 'import json,sys; s=json.load(sys.stdin); print("double: initiations", s["initiations"])'
}

echo "operator $OPERATOR ($PROVIDER), connections $CONNECTIONS, wrk threads $THREADS, ${DURATION}s per run, $(nproc) cores"
[[ ",$PHASES," == *,throughput,* ]] && throughput
[[ ",$PHASES," == *,recovery,* && "$OPERATOR" == mtn ]] && recovery
[[ ",$PHASES," == *,slow,* ]] && slow
exit 0
