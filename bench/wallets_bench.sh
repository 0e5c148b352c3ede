#!/usr/bin/env bash
# Wallet link API benchmark, SQLite in a temp dir, wrk with keep-alive:
#  - GET /api/agent/link/new (the demo partner and its linked demo user: the idempotent answer)
#    on a server with the per-address limiter (wallets.link_api_per_hour high enough never to
#    refuse) against the same request on a server without it (link_api_per_hour=0: the limiter
#    stores nothing);
#  - POST /api/agent/link/charge: wallet payments through the demo link (1 XAF each, a fresh
#    transaction_uuid per request; the consent's limits raised so that none is refused), on the
#    server with the limiter and on the one without (where the route answers from the I/O
#    thread), then `sika admin check-ledger` on both databases.
#
#   bench/wallets_bench.sh
#   CONNECTIONS=32 DURATION=10 ROUNDS=2 bench/wallets_bench.sh
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-1}
source bench/lib.sh
export SIKA_SECRET_KEY=bench-secret-key-0123456789abcdef0123

{ echo "$LUA_UUID"; cat <<'LUA'
function init(args)
  key = os.getenv("BENCH_KEY")
  apikey = os.getenv("BENCH_APIKEY")
  kind = os.getenv("BENCH_KIND")
  math.randomseed(os.time() + math.floor(os.clock() * 1e6))
end
function request()
  local headers = {["content-type"] = "application/json", ["x-api-key"] = key}
  if kind == "charge" then
    return wrk.format("POST", wrk.path, headers,
      '{"apikey":"' .. apikey .. '","amount":1,"transaction_uuid":"' .. uuid() .. '"}')
  end
  return wrk.format("GET", wrk.path .. "?email=demo.wallet%40example.com&phone=690000100&phoneCountry=%2B237", headers)
end
LUA
} >"$TMP/agent.lua"

drive() { wrk_run "$1" "$TMP/agent.lua"; }

# start NAME PER_HOUR: a server on its own database; sets PORT. Not run in a command substitution:
# the server must be started by this shell, so that its pid reaches PIDS and the exit trap stops it.
start() {
  local demo=$TMP/$1/demo.json
  PORT=$(free_port)
  mkdir -p "$TMP/$1"
  "$SIKA" serve --listen "127.0.0.1:$PORT" --db "sqlite://$TMP/$1/sika.db" --public-url "http://127.0.0.1:$PORT" \
    --demo "$demo" --set log.access=false --set log.level=warn --set webhooks.enabled=false \
    --set wallets.link_api_per_hour="$2" --set wallets.link_per_payment=1000000 \
    --set wallets.link_per_period=1000000000000 >"$TMP/$1/sika.log" 2>&1 &
  PIDS+=($!)
  wait_ready "$PORT" "$demo"
}

start limited 1000000000000
with_port=$PORT
start unlimited 0
without_port=$PORT
demo="$TMP/limited/demo.json"
export BENCH_KEY=$(demo_value "$demo" link_api_key)
export BENCH_APIKEY=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["wallet_link"]["apikey"])' "$demo")
BENCH_KEY_UNLIMITED=$(demo_value "$TMP/unlimited/demo.json" link_api_key)
BENCH_APIKEY_UNLIMITED=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["wallet_link"]["apikey"])' "$TMP/unlimited/demo.json")
# The CPU a server spends per charge (user + system of the whole process, over one wrk run, per
# collection written): a figure that a machine shared with other work disturbs less than req/s.
ticks() { awk '{print $14 + $15}' "/proc/$(pgrep -f -- "--db sqlite://$TMP/$1/sika.db" | head -1)/stat"; }
collections() {
  python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT COUNT(*) FROM pay_transactions").fetchone()[0])' "$TMP/$1/sika.db"
}
mark() { read -r MARK_TICKS MARK_ROWS <<<"$(ticks "$1") $(collections "$1")"; }
cpu_per_charge() {
  python3 -c 'import sys; t,r,hz=map(int,sys.argv[1:]); print(f"{t*1e6/hz/max(r,1):.0f} us CPU/charge")' \
    "$(($(ticks "$1") - MARK_TICKS))" "$(($(collections "$1") - MARK_ROWS))" "$(getconf CLK_TCK)"
}
echo "backend=sqlite connections=$CONNECTIONS wrk_threads=$THREADS duration=${DURATION}s load=$(cut -d' ' -f1-3 /proc/loadavg)"
printf "%-6s %-36s %12s %10s  %s\n" round route "req/s" "p99" errors
for r in $(seq 1 "$ROUNDS"); do
  # The order alternates from round to round, so that a load that changes during the run
  # (a shared machine) weighs on both sides alike.
  without() { read -r n_rps n_p99 n_err <<<"$(BENCH_KEY=$BENCH_KEY_UNLIMITED BENCH_KIND=new drive "http://127.0.0.1:$without_port/link/api/agent/link/new")"; }
  with() { read -r l_rps l_p99 l_err <<<"$(BENCH_KIND=new drive "http://127.0.0.1:$with_port/link/api/agent/link/new")"; }
  if (( r % 2 )); then without; with; else with; without; fi
  printf "%-6s %-36s %12s %10s  %s\n" "$r" "GET link/new, no limiter" "$n_rps" "$n_p99" "$n_err"
  printf "%-6s %-36s %12s %10s  %s\n" "$r" "GET link/new, limiter" "$l_rps" "$l_p99" "$l_err"
  python3 -c 'import sys; n,l=map(float,sys.argv[1:]); print(f"       limiter cost per request: {(n/l-1)*100:+.1f} %")' "$n_rps" "$l_rps"
  mark limited
  read -r c_rps c_p99 c_err <<<"$(BENCH_KIND=charge drive "http://127.0.0.1:$with_port/link/api/agent/link/charge")"
  printf "%-6s %-36s %12s %10s  %s  %s\n" "$r" "POST link/charge (1 XAF, COMPLETED)" "$c_rps" "$c_p99" "$c_err" "$(cpu_per_charge limited)"
  mark unlimited
  read -r u_rps u_p99 u_err <<<"$(BENCH_KEY=$BENCH_KEY_UNLIMITED BENCH_APIKEY=$BENCH_APIKEY_UNLIMITED BENCH_KIND=charge drive "http://127.0.0.1:$without_port/link/api/agent/link/charge")"
  printf "%-6s %-36s %12s %10s  %s  %s\n" "$r" "POST link/charge, no limiter" "$u_rps" "$u_p99" "$u_err" "$(cpu_per_charge unlimited)"
done
"$SIKA" admin check-ledger --db "sqlite://$TMP/limited/sika.db" | tail -1
"$SIKA" admin check-ledger --db "sqlite://$TMP/unlimited/sika.db" | tail -1
