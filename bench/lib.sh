# Shared by the bench/*_bench.sh scripts (sourced): defaults, tool checks, a temp dir removed on
# exit with the servers started into PIDS and the PostgreSQL database named in DROP_DB.
BUILD=${BUILD:-build}
SIKA=${SIKA_BIN:-$BUILD/sika}
CONNECTIONS=${CONNECTIONS:-64}
THREADS=${THREADS:-2}
DURATION=${DURATION:-10}

[[ -x "$SIKA" ]] || { echo "missing $SIKA: build it first (ninja -C $BUILD sika)"; exit 1; }
command -v wrk >/dev/null || { echo "wrk is not installed (apt-get install wrk)"; exit 1; }
ulimit -n 8192 2>/dev/null || true

TMP=$(mktemp -d)
PIDS=()
DROP_DB=""
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [[ -n "$DROP_DB" ]]; then psql "$SIKA_TEST_PG_DSN" -q -c "DROP DATABASE IF EXISTS $DROP_DB WITH (FORCE)" || true; fi
  rm -rf "$TMP"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }

# wait_ready PORT DEMO_FILE: waits (up to 30 s) until the server answers /readyz and wrote its demo file.
wait_ready() {
  for _ in $(seq 1 300); do
    [[ -s "$2" ]] && curl -fsS -o /dev/null "http://127.0.0.1:$1/readyz" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "sika on port $1 did not become ready" >&2
  return 1
}

# serve_demo NAME DSN [ARGS...]: starts `sika serve` with the demo world on DSN and a free port (its
# log $TMP/serve-NAME.log, its demo file $TMP/demo-NAME.json, its pid appended to PIDS) and waits
# until it is ready; sets SERVE_PORT and SERVE_DEMO.
serve_demo() {
  local name=$1 dsn=$2
  shift 2
  SERVE_PORT=$(free_port)
  SERVE_DEMO="$TMP/demo-$name.json"
  SIKA_SECRET_KEY=bench-secret-key-0123456789abcdef0123 \
    "$SIKA" serve --listen "127.0.0.1:$SERVE_PORT" --db "$dsn" --public-url "http://127.0.0.1:$SERVE_PORT" \
    --demo "$SERVE_DEMO" "$@" >"$TMP/serve-$name.log" 2>&1 &
  PIDS+=($!)
  wait_ready "$SERVE_PORT" "$SERVE_DEMO"
}

# pg_database NAME: creates the PostgreSQL database NAME beside SIKA_TEST_PG_DSN's, dropped on exit
# (DROP_DB), and sets PG_DSN to its DSN.
pg_database() {
  DROP_DB=$1
  psql "$SIKA_TEST_PG_DSN" -q -c "CREATE DATABASE $DROP_DB"
  PG_DSN=$(python3 -c 'import sys,urllib.parse as u; p=u.urlparse(sys.argv[1]); print(p._replace(path="/"+sys.argv[2]).geturl())' \
    "$SIKA_TEST_PG_DSN" "$DROP_DB")
}

# demo_value DEMO_FILE KEY: a top-level string of the demo JSON.
demo_value() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }

# merchant_token DEMO_FILE SCOPE: a client_credentials access token of the first demo merchant.
merchant_token() {
  python3 - "$1" "$(demo_value "$1" auth_url)" "$2" <<'PY'
import json, sys, urllib.request
d = json.load(open(sys.argv[1])); m = d["merchants"][0]
body = json.dumps({"grant_type": "client_credentials", "client_id": m["client_id"], "client_secret": m["client_secret"],
                   "scope": sys.argv[3]}).encode()
req = urllib.request.Request(sys.argv[2] + "/oauth/v2/token", body, {"content-type": "application/json"})
print(json.load(urllib.request.urlopen(req))["access_token"])
PY
}

# wrk_run URL [LUA_SCRIPT]: one wrk run with THREADS, CONNECTIONS and DURATION (its output
# appended to $TMP/wrk.txt); prints "REQ_PER_SEC P99 ERRORS".
wrk_run() {
  local url=$1 script=${2:-} out rps p99 errors
  if [[ -n "$script" ]]; then
    out=$(wrk -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" --latency -s "$script" "$url")
  else
    out=$(wrk -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" --latency "$url")
  fi
  echo "$out" >>"$TMP/wrk.txt"
  rps=$(awk '/^Requests\/sec/ {print $2}' <<<"$out")
  p99=$(awk '$1=="99%" {print $2}' <<<"$out")
  errors=$(grep -E "Non-2xx|Socket errors" <<<"$out" | tr '\n' ' ' || true)
  echo "$rps $p99 ${errors:-none}"
}

# A Lua function uuid() (a random version-4 UUID) for wrk scripts that send a fresh key per request.
LUA_UUID='local charset = "0123456789abcdef"
local function uuid()
  local t = {}
  for i = 1, 32 do local r = math.random(1, 16); t[i] = charset:sub(r, r) end
  local s = table.concat(t)
  return s:sub(1, 8) .. "-" .. s:sub(9, 12) .. "-4" .. s:sub(14, 16) .. "-a" .. s:sub(18, 20) .. "-" .. s:sub(21, 32)
end'

# write_collection_lua: writes $TMP/intent.lua (POST /collection/intent, a new transaction per
# request) and $TMP/status.lua (POST /collection/status of the references listed in BENCH_REFS),
# both authenticated with BENCH_TOKEN.
write_collection_lua() {
  cat >"$TMP/intent.lua" <<'LUA'
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
LUA
  cat >"$TMP/status.lua" <<'LUA'
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
LUA
}

# collection_refs BASE TOKEN N: creates N collections through BASE/collection/intent and prints
# their references, one a line.
collection_refs() {
  python3 - "$1" "$2" "$3" <<'PY'
import json, sys, uuid, urllib.request
base, token, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
for i in range(n):
    body = json.dumps({"amount": 1000 + i, "currency": "XAF", "transaction_uuid": str(uuid.uuid4()), "provider": "MTN_MOMO_CMR",
                       "channel": "PROVIDER", "customer_wallet": "237690000000"}).encode()
    req = urllib.request.Request(base + "/collection/intent", body,
                                 {"content-type": "application/json", "x-sp-auth-token": "Bearer " + token})
    print(json.load(urllib.request.urlopen(req))["data"]["transaction_reference"])
PY
}
