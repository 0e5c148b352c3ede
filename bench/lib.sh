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
