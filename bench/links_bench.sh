#!/usr/bin/env bash
# Payment-links benchmark, SQLite in a temp dir, wrk with keep-alive, in one run of one server:
#  - paying a link (POST /pay/{shortCode}/pay: attempt + use, collection created and pushed to the
#    sandbox operator) against POST /collection/intent (a collection created only);
#  - the public page GET /pay/{shortCode} against GET /healthz.
# Every request carries a fresh transaction_uuid; the pay rate limits are off here.
# The sandbox operator answers OPERATOR_DELAY_MS after each payment (default 10 minutes, after the
# measurement): the pay route is measured for what it does itself, as the intent route is. With
# OPERATOR_DELAY_MS=1500 (the server's default) the operator's outcomes (a completion unit and its
# ledger journal per payment) land inside the measured window and compete for the same writer.
#
#   bench/links_bench.sh
#   CONNECTIONS=32 DURATION=10 ROUNDS=2 bench/links_bench.sh
#   OPERATOR_DELAY_MS=1500 bench/links_bench.sh
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-1}
OPERATOR_DELAY_MS=${OPERATOR_DELAY_MS:-600000}
source bench/lib.sh

{ echo "$LUA_UUID"; cat <<'LUA'
function init(args)
  token = os.getenv("BENCH_TOKEN")
  kind = os.getenv("BENCH_KIND")
  math.randomseed(os.time() + math.floor(os.clock() * 1e6) + (args[1] and #args[1] or 0))
end
-- push: intent, then execute of the reference it returned (two calls per pushed collection).
local refs = {}
pushed = 0  -- a global: done() reads it from every thread
local execute_path = nil
function request()
  local headers = {["content-type"] = "application/json"}
  local body
  if kind == "push" and #refs > 0 then
    headers["x-sp-auth-token"] = "Bearer " .. token
    execute_path = execute_path or wrk.path:gsub("intent$", "execute")
    return wrk.format("POST", execute_path, headers, '{"transaction_reference":"' .. table.remove(refs) .. '"}')
  end
  if kind == "intent" or kind == "push" then
    headers["x-sp-auth-token"] = "Bearer " .. token
    body = '{"amount":5000,"currency":"XAF","transaction_uuid":"' .. uuid() ..
           '","provider":"MTN_MOMO_CMR","channel":"PROVIDER","customer_wallet":"237690000000"}'
  else
    body = '{"customer_phone":"237690000000","transaction_uuid":"' .. uuid() .. '","provider":"MTN_MOMO_CMR"}'
  end
  return wrk.format("POST", wrk.path, headers, body)
end
if os.getenv("BENCH_KIND") == "push" then
  local threads = {}
  function setup(thread) table.insert(threads, thread) end
  function response(status, headers, body)
    if body:find('"status":"INITIATED"', 1, true) then
      local ref = body:match('"transaction_reference":"([^"]+)"')
      if ref then table.insert(refs, ref) end
    elseif body:find('"status":"PENDING"', 1, true) then
      pushed = pushed + 1
    end
  end
  function done(summary, latency, requests)
    local n = 0
    for _, t in ipairs(threads) do n = n + t:get("pushed") end
    io.write(string.format("Pushed/sec: %.2f\n", n / (summary.duration / 1e6)))
  end
end
LUA
} >"$TMP/pay.lua"

drive() { wrk_run "$@"; }

port=$(free_port)
demo="$TMP/demo.json"
SIKA_SECRET_KEY=bench-secret-key-0123456789abcdef0123 \
  "$SIKA" serve --listen "127.0.0.1:$port" --db "sqlite://$TMP/sika.db" --public-url "http://127.0.0.1:$port" \
  --demo "$demo" --set log.access=false --set log.level=warn --set webhooks.enabled=false \
  --set links.pay_per_address_per_minute=0 --set links.pay_per_link_per_minute=0 \
  --set links.page_views_per_address_per_minute=0 --set payments.sandbox_delay_ms="$OPERATOR_DELAY_MS" \
  >"$TMP/sika.log" 2>&1 &
PIDS+=($!)
wait_ready "$port" "$demo"
base=$(demo_value "$demo" base_url)
export BENCH_TOKEN=$(merchant_token "$demo" "payments")
read -r open_code page_url < <(python3 -c 'import json,sys; l=[x for x in json.load(open(sys.argv[1]))["payment_links"] if x["kind"]=="fixed"][0]; print(l["short_code"], l["payment_url"])' "$demo")
echo "backend=sqlite connections=$CONNECTIONS wrk_threads=$THREADS duration=${DURATION}s operator_delay_ms=$OPERATOR_DELAY_MS"
printf "%-6s %-28s %12s %10s  %s\n" round route "req/s" "p99" errors
for r in $(seq 1 "$ROUNDS"); do
  # Pages first: the payments leave the sandbox operator's callbacks running behind them.
  read -r h_rps h_p99 h_err <<<"$(drive "http://127.0.0.1:$port/healthz" "")"
  read -r g_rps g_p99 g_err <<<"$(drive "$page_url" "")"
  read -r i_rps i_p99 i_err <<<"$(BENCH_KIND=intent drive "$base/collection/intent" "$TMP/pay.lua")"
  read -r p_rps p_p99 p_err <<<"$(BENCH_KIND=pay drive "$base/pay/$open_code/pay" "$TMP/pay.lua")"
  BENCH_KIND=push drive "$base/collection/intent" "$TMP/pay.lua" >/dev/null
  x_rps=$(awk '/^Pushed\/sec/ {print $2}' "$TMP/wrk.txt" | tail -1)
  printf "%-6s %-28s %12s %10s  %s\n" "$r" "POST /collection/intent" "$i_rps" "$i_p99" "$i_err"
  printf "%-6s %-28s %12s %10s  %s\n" "$r" "POST /pay/{code}/pay" "$p_rps" "$p_p99" "$p_err"
  printf "%-6s %-28s %12s %10s  %s\n" "$r" "GET /healthz" "$h_rps" "$h_p99" "$h_err"
  printf "%-6s %-28s %12s %10s  %s\n" "$r" "GET /pay/{code} (page)" "$g_rps" "$g_p99" "$g_err"
  printf "%-6s %-28s %12s\n" "$r" "intent + execute (pushed/s)" "$x_rps"
  python3 -c 'import sys; i,p,x=map(float,sys.argv[1:]); print(f"       pay / intent: {p/i:.2f}   pay / (intent + execute): {p/x:.2f}")' \
    "$i_rps" "$p_rps" "$x_rps"
done
