#!/usr/bin/env bash
# Identity benchmarks, all driven by wrk with keep-alive on 127.0.0.1, stopping by themselves:
#  1. POST {auth_url}/oauth/v2/token (client_credentials, form body) against `sika serve` on SQLite
#     (the demo client: five fields; a strict client: the access token alone, as oidc-provider answers)
#     and against npm oidc-provider (ES256 JWT access tokens through a resource indicator, one
#     node:cluster worker per core) in the same run with the same wrk settings; rounds alternate.
#  2. JWT verification overhead: identity_auth_bench serves the same cheap GET bare and behind
#     identity::Service::authenticate (as gateway routes are), with and without a SQLite read.
#  3. POST /oauth/v2/revoke of distinct access tokens: one durable one-row write per request.
#
#   bench/identity_token_bench.sh                      # uses build/sika, build/bench/identity_auth_bench
#   BUILD=build-rel DURATION=10 CONNECTIONS=64 ROUNDS=3 bench/identity_token_bench.sh
#   OP_WORKERS=1 bench/identity_token_bench.sh         # oidc-provider as one process (default: one per core)
set -euo pipefail
cd "$(dirname "$0")/.."

AUTH_BENCH=${AUTH_BENCH_BIN:-${BUILD:-build}/bench/identity_auth_bench}
ROUNDS=${ROUNDS:-2}
REVOKE_TOKENS=${REVOKE_TOKENS:-30000}

source bench/lib.sh
[[ -x "$AUTH_BENCH" ]] || { echo "missing $AUTH_BENCH: build it first (ninja -C $BUILD identity_auth_bench)"; exit 1; }
command -v node >/dev/null || { echo "node is not installed"; exit 1; }
if [[ ! -d bench/oidc-provider/node_modules/oidc-provider ]]; then
  (cd bench/oidc-provider && npm install --no-audit --no-fund >/dev/null 2>&1) ||
    { echo "npm install in bench/oidc-provider failed"; exit 1; }
fi

wait_for() {  # URL [method]
  for _ in $(seq 1 300); do
    code=$(curl -s -o /dev/null -w '%{http_code}' -X "${2:-GET}" "$1" 2>/dev/null || true)
    [[ "$code" != "000" ]] && return 0
    sleep 0.1
  done
  echo "$1 did not come up"; return 1
}
# drive NAME URL [LUA] [HEADER]: prints "RPS P99 NON2XX" and keeps wrk's output.
drive() {
  local name=$1 url=$2 lua=${3:-} header=${4:-} out args=()
  [[ -n "$lua" ]] && args+=(-s "$lua")
  [[ -n "$header" ]] && args+=(-H "$header")
  out=$(wrk -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" --latency "${args[@]}" "$url")
  echo "$out" >> "$TMP/wrk-$name.txt"
  local rps p99 non2xx
  rps=$(awk '/^Requests\/sec/ {print $2}' <<<"$out")
  p99=$(awk '$1=="99%" {print $2}' <<<"$out")
  non2xx=$(awk '/Non-2xx/ {print $4}' <<<"$out")
  echo "$rps $p99 ${non2xx:-0}"
}
post_lua() {  # FILE BODY
  cat > "$1" <<EOF
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"
wrk.body = "$2"
EOF
}

echo "machine: $(nproc) cores, $(uname -r); wrk -t$THREADS -c$CONNECTIONS -d${DURATION}s, $ROUNDS rounds"

# ---- 1. client_credentials: sika vs oidc-provider ----------------------------------------------
SIKA_PORT=$(free_port)
SIKA_SECRET_KEY=identity-bench-secret-key-0123456789abcdef SIKA_LOG_ACCESS=false \
  "$SIKA" serve --listen "127.0.0.1:$SIKA_PORT" --db "sqlite://$TMP/sika/sika.db" \
  --public-url "http://127.0.0.1:$SIKA_PORT" --demo "$TMP/demo.json" --set log.access=false \
  > "$TMP/sika.log" 2>&1 &
PIDS+=($!)
SIKA_PID=$!
for _ in $(seq 1 300); do [[ -s "$TMP/demo.json" ]] && break; sleep 0.1; done
[[ -s "$TMP/demo.json" ]] || { echo "sika did not start:"; cat "$TMP/sika.log"; exit 1; }
read -r AUTH_URL CLIENT_ID CLIENT_SECRET < <(python3 -c '
import json,sys; d=json.load(open(sys.argv[1])); m=d["merchants"][0]
print(d["auth_url"], m["client_id"], m["client_secret"])' "$TMP/demo.json")
post_lua "$TMP/sika.lua" "grant_type=client_credentials&client_id=$CLIENT_ID&client_secret=$CLIENT_SECRET&scope=payments"
# A client with the strict RFC 6749 4.4.3 answer: the access token alone, as oidc-provider answers.
read -r STRICT_ID STRICT_SECRET < <(SIKA_SECRET_KEY=identity-bench-secret-key-0123456789abcdef \
  "$SIKA" admin --db "sqlite://$TMP/sika/sika.db" create-client --name "Strict bench" --merchant MCH-CM-0001 \
  --scopes payments --strict-client-credentials --json |
  python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["client_id"], d["client_secret"])')
post_lua "$TMP/strict.lua" "grant_type=client_credentials&client_id=$STRICT_ID&client_secret=$STRICT_SECRET&scope=payments"
curl -fsS -X POST "$AUTH_URL/oauth/v2/token" -H 'content-type: application/x-www-form-urlencoded' \
  --data "grant_type=client_credentials&client_id=$STRICT_ID&client_secret=$STRICT_SECRET&scope=payments" |
  python3 -c 'import json,sys; d=json.load(sys.stdin); assert "access_token" in d and "id_token" not in d and "refresh_token" not in d, d' ||
  { echo "the strict client does not answer the access token alone"; exit 1; }
curl -fsS -X POST "$AUTH_URL/oauth/v2/token" -H 'content-type: application/x-www-form-urlencoded' \
  --data "grant_type=client_credentials&client_id=$CLIENT_ID&client_secret=$CLIENT_SECRET&scope=payments" >/dev/null

OP_PORT=$(free_port)
WORKERS=${OP_WORKERS:-$(nproc)} node bench/oidc-provider/server.mjs "$OP_PORT" > "$TMP/oidc-provider.log" 2>&1 &
PIDS+=($!)
wait_for "http://127.0.0.1:$OP_PORT/.well-known/openid-configuration"
OP_BODY="grant_type=client_credentials&client_id=bench-client&client_secret=bench-secret-0123456789abcdef0123456789abcdef&scope=payments"
post_lua "$TMP/op.lua" "$OP_BODY"
curl -fsS -X POST "http://127.0.0.1:$OP_PORT/token" --data "$OP_BODY" | grep -q '"access_token":"eyJ' ||
  { echo "oidc-provider does not issue JWTs"; exit 1; }

echo
echo "== client_credentials tokens/s (POST /oauth/v2/token)"
printf '%-16s %-6s %12s %10s %8s\n' server round tokens/s p99 non-2xx
for r in $(seq 1 "$ROUNDS"); do
  read -r rps p99 bad < <(drive sika "$AUTH_URL/oauth/v2/token" "$TMP/sika.lua")
  printf '%-16s %-6s %12s %10s %8s\n' sika "$r" "$rps" "$p99" "$bad"
  echo "sika $rps $p99" >> "$TMP/cc.txt"
  read -r rps p99 bad < <(drive sika-strict "$AUTH_URL/oauth/v2/token" "$TMP/strict.lua")
  printf '%-16s %-6s %12s %10s %8s\n' sika-strict "$r" "$rps" "$p99" "$bad"
  echo "strict $rps $p99" >> "$TMP/cc.txt"
  read -r rps p99 bad < <(drive oidc-provider "http://127.0.0.1:$OP_PORT/token" "$TMP/op.lua")
  printf '%-16s %-6s %12s %10s %8s\n' oidc-provider "$r" "$rps" "$p99" "$bad"
  echo "op $rps $p99" >> "$TMP/cc.txt"
done
python3 - "$TMP/cc.txt" <<'EOF'
import sys, statistics
rows = [l.split() for l in open(sys.argv[1])]
s = statistics.median(float(r[1]) for r in rows if r[0] == "sika")
t = statistics.median(float(r[1]) for r in rows if r[0] == "strict")
o = statistics.median(float(r[1]) for r in rows if r[0] == "op")
print(f"median: sika {s:,.0f} tokens/s (five fields, two signatures), oidc-provider {o:,.0f} tokens/s, ratio {s/o:.1f}x")
print(f"median: sika {t:,.0f} tokens/s (strict client: the access token alone, as oidc-provider), ratio {t/o:.1f}x")
EOF
kill "${PIDS[-1]}" 2>/dev/null || true   # oidc-provider: free the cores for the next parts

# ---- 3. revocation: one durable write per request ------------------------------------------------
echo
echo "== revocation (POST /oauth/v2/revoke, distinct access tokens, one durable row each)"
python3 - "$AUTH_URL" "$CLIENT_ID" "$CLIENT_SECRET" "$REVOKE_TOKENS" "$TMP/tokens.txt" <<'EOF'
import http.client, json, sys, urllib.parse
url, cid, secret, n, out = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
u = urllib.parse.urlparse(url)
conn = http.client.HTTPConnection(u.hostname, u.port)
body = urllib.parse.urlencode({"grant_type": "client_credentials", "client_id": cid, "client_secret": secret})
with open(out, "w") as f:
    for _ in range(n):
        conn.request("POST", u.path + "/oauth/v2/token", body, {"Content-Type": "application/x-www-form-urlencoded"})
        f.write(json.loads(conn.getresponse().read())["access_token"] + "\n")
EOF
cat > "$TMP/revoke.lua" <<EOF
local tokens = {}
for line in io.lines("$TMP/tokens.txt") do tokens[#tokens + 1] = line end
local counter = 0
local prefix = "client_id=$CLIENT_ID&client_secret=$CLIENT_SECRET&token_type_hint=access_token&token="
function setup(thread)
  counter = counter + 1
  thread:set("offset", counter)
end
function init(args)
  i = offset
end
function request()
  i = i + $THREADS
  local t = tokens[(i % #tokens) + 1]
  return wrk.format("POST", nil, {["Content-Type"] = "application/x-www-form-urlencoded"}, prefix .. t)
end
EOF
REVOKE_DURATION=$(( DURATION < 5 ? DURATION : 5 ))
out=$(wrk -t"$THREADS" -c"$CONNECTIONS" -d"${REVOKE_DURATION}s" --latency -s "$TMP/revoke.lua" "$AUTH_URL/oauth/v2/revoke")
echo "$out" > "$TMP/wrk-revoke.txt"
rps=$(awk '/^Requests\/sec/ {print $2}' <<<"$out"); p99=$(awk '$1=="99%" {print $2}' <<<"$out")
revoked=$(python3 -c '
import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("select count(*) from oauth_revoked_tokens").fetchone()[0])' "$TMP/sika/sika.db")
echo "revocations/s $rps  p99 $p99  (rows in the denylist: $revoked of $REVOKE_TOKENS distinct tokens)"
kill "$SIKA_PID" 2>/dev/null || true

# ---- 2. JWT verification overhead -----------------------------------------------------------------
# Mode 0: the denylist is looked up on every request (default; revocation refused at once everywhere).
# Mode 1: identity.token_cache_seconds=1 (the lookup runs once a second per token and process).
for MODE in 0 1; do
  AB_PORT=$(free_port)
  mkdir -p "$TMP/auth$MODE"
  "$AUTH_BENCH" "$AB_PORT" "$TMP/auth$MODE" "$MODE" > "$TMP/auth$MODE.log" 2>&1 &
  PIDS+=($!)
  AB_PID=$!
  for _ in $(seq 1 300); do grep -q READY "$TMP/auth$MODE.log" 2>/dev/null && break; sleep 0.1; done
  TOKEN=$(awk '/^TOKEN/ {print $2}' "$TMP/auth$MODE.log")
  [[ -n "$TOKEN" ]] || { echo "identity_auth_bench did not start:"; cat "$TMP/auth$MODE.log"; exit 1; }
  BASE="http://127.0.0.1:$AB_PORT/api"
  [[ $(curl -s -o /dev/null -w '%{http_code}' -H "x-sp-auth-token: Bearer $TOKEN" "$BASE/authed-db") == 200 ]] ||
    { echo "authenticated GET refused"; exit 1; }
  [[ $(curl -s -o /dev/null -w '%{http_code}' "$BASE/authed-db") == 401 ]] || { echo "unauthenticated GET accepted"; exit 1; }

  echo
  echo "== JWT verification overhead (GET, x-sp-auth-token: Bearer <ES256 JWT>), token_cache_seconds=$MODE"
  printf '%-22s %-6s %12s %10s %8s\n' route round req/s p99 non-2xx
  : > "$TMP/auth.txt"
  for r in $(seq 1 "$ROUNDS"); do
    for route in plain-db authed-db plain authed; do
      hdr=""
      [[ $route == authed* ]] && hdr="x-sp-auth-token: Bearer $TOKEN"
      read -r rps p99 bad < <(drive "$route-$MODE" "$BASE/$route" "" "$hdr")
      printf '%-22s %-6s %12s %10s %8s\n' "$route" "$r" "$rps" "$p99" "$bad"
      echo "$route $rps" >> "$TMP/auth.txt"
    done
  done
  python3 - "$TMP/auth.txt" <<'EOF'
import sys, statistics
rows = {}
for l in open(sys.argv[1]):
    k, v = l.split(); rows.setdefault(k, []).append(float(v))
m = {k: statistics.median(v) for k, v in rows.items()}
for plain, authed in (("plain-db", "authed-db"), ("plain", "authed")):
    cost = (1 / m[authed] - 1 / m[plain]) / (1 / m[plain]) * 100
    print(f"median {plain}: {m[plain]:,.0f} req/s, {authed}: {m[authed]:,.0f} req/s -> verification adds {cost:.1f}% per request")
EOF
  kill "$AB_PID" 2>/dev/null || true
done
