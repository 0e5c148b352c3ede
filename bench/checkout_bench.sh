#!/usr/bin/env bash
# Hosted checkout benchmark, SQLite in a temp dir, wrk with keep-alive, in one run of one server:
#  - opening a session (POST {checkout_url} as JSON with the merchant API key, a new orderId per
#    request) against POST /collection/intent (a collection created, JWT from the same merchant);
#  - the customer's page GET {checkout_url}/session/{reference} against GET /healthz.
#
#   bench/checkout_bench.sh
#   CONNECTIONS=32 DURATION=10 ROUNDS=2 bench/checkout_bench.sh
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-1}
source bench/lib.sh

{ echo "$LUA_UUID"; cat <<'LUA'
function init(args)
  token = os.getenv("BENCH_TOKEN")
  key = os.getenv("BENCH_API_KEY")
  kind = os.getenv("BENCH_KIND")
  math.randomseed(os.time() + math.floor(os.clock() * 1e6) + (args[1] and #args[1] or 0))
end
function request()
  local headers = {["content-type"] = "application/json"}
  local body
  if kind == "intent" then
    headers["x-sp-auth-token"] = "Bearer " .. token
    body = '{"amount":5000,"currency":"XAF","transaction_uuid":"' .. uuid() ..
           '","provider":"MTN_MOMO_CMR","channel":"PROVIDER","customer_wallet":"237690000000"}'
  else
    body = '{"apiKey":"' .. key .. '","amount":5000,"currency":"XAF","orderId":"' .. uuid() ..
           '","description":"2 T-shirts","shopName":"Boutique Akwa","successUrl":"https://shop.example/ok",' ..
           '"failureUrl":"https://shop.example/ko","customer":{"phone":"237690000000"}}'
  end
  return wrk.format("POST", wrk.path, headers, body)
end
LUA
} >"$TMP/post.lua"

port=$(free_port)
demo="$TMP/demo.json"
SIKA_SECRET_KEY=bench-secret-key-0123456789abcdef0123 \
  "$SIKA" serve --listen "127.0.0.1:$port" --db "sqlite://$TMP/sika.db" --public-url "http://127.0.0.1:$port" \
  --demo "$demo" --set log.access=false --set log.level=warn --set webhooks.enabled=false \
  >"$TMP/sika.log" 2>&1 &
PIDS+=($!)
wait_ready "$port" "$demo"
base=$(demo_value "$demo" base_url)
checkout=$(demo_value "$demo" checkout_url)
export BENCH_TOKEN=$(merchant_token "$demo" "payments")
export BENCH_API_KEY=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["merchants"][0]["api_key"])' "$demo")
page_url=$(curl -fsS "$checkout" -H 'content-type: application/json' -d "{\"apiKey\":\"$BENCH_API_KEY\",\"amount\":5000,
  \"currency\":\"XAF\",\"orderId\":\"bench-page\",\"description\":\"2 T-shirts\",\"shopName\":\"Boutique Akwa\",
  \"successUrl\":\"https://shop.example/ok\",\"failureUrl\":\"https://shop.example/ko\"}" |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["page_url"])')
echo "backend=sqlite connections=$CONNECTIONS wrk_threads=$THREADS duration=${DURATION}s"
printf "%-6s %-34s %12s %10s  %s\n" round route "req/s" "p99" errors
for r in $(seq 1 "$ROUNDS"); do
  read -r h_rps h_p99 h_err <<<"$(wrk_run "http://127.0.0.1:$port/healthz" "")"
  read -r g_rps g_p99 g_err <<<"$(wrk_run "$page_url" "")"
  read -r i_rps i_p99 i_err <<<"$(BENCH_KIND=intent wrk_run "$base/collection/intent" "$TMP/post.lua")"
  read -r s_rps s_p99 s_err <<<"$(BENCH_KIND=session wrk_run "$checkout" "$TMP/post.lua")"
  printf "%-6s %-34s %12s %10s  %s\n" "$r" "POST /collection/intent" "$i_rps" "$i_p99" "$i_err"
  printf "%-6s %-34s %12s %10s  %s\n" "$r" "POST {checkout_url} (session)" "$s_rps" "$s_p99" "$s_err"
  printf "%-6s %-34s %12s %10s  %s\n" "$r" "GET /healthz" "$h_rps" "$h_p99" "$h_err"
  printf "%-6s %-34s %12s %10s  %s\n" "$r" "GET /session/{reference} (page)" "$g_rps" "$g_p99" "$g_err"
  python3 -c 'import sys; i,s=map(float,sys.argv[1:]); print(f"       session / intent: {s/i:.2f}")' "$i_rps" "$s_rps"
done
