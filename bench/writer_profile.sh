#!/usr/bin/env bash
# Where a write-heavy route spends its time, on SQLite: one server, wrk on the route for
# ROUNDS runs of DURATION seconds on one growing database, then for each run the rate, each
# thread's CPU seconds (from /proc/PID/task/*/stat: the busiest is the writer), the group
# commits' mean batch and the checkpoints (from /metrics). With PERF=FILE the last run is also
# recorded with `perf record -g` into FILE (per thread: `perf report -i FILE --tid TID`).
#
#   bench/writer_profile.sh charge          # POST /api/agent/link/charge (the demo link, 1 XAF)
#   bench/writer_profile.sh intent          # POST /collection/intent (as payments_bench.sh)
#   CONNECTIONS=128 ROUNDS=5 bench/writer_profile.sh charge
#   PERF=/tmp/writer.perf bench/writer_profile.sh intent
set -euo pipefail
cd "$(dirname "$0")/.."

ROUTE=${1:-charge}
ROUNDS=${ROUNDS:-2}
DURATION=${DURATION:-8}
source bench/lib.sh
export SIKA_SECRET_KEY=bench-secret-key-0123456789abcdef0123

port=$(free_port)
demo=$TMP/demo.json
"$SIKA" serve --listen "127.0.0.1:$port" --db "sqlite://$TMP/sika.db" --public-url "http://127.0.0.1:$port" \
  --demo "$demo" --set log.access=false --set log.level=warn --set webhooks.enabled=false \
  --set identity.token_cache_seconds=30 --set wallets.link_per_payment=1000000 \
  --set wallets.link_per_period=1000000000000 --set wallets.link_api_per_hour=1000000000000 \
  >"$TMP/sika.log" 2>&1 &
PIDS+=($!)
pid=$!
wait_ready "$port" "$demo"

case "$ROUTE" in
  charge)
    url="http://127.0.0.1:$port/link/api/agent/link/charge"
    export BENCH_KEY BENCH_APIKEY
    BENCH_KEY=$(demo_value "$demo" link_api_key)
    BENCH_APIKEY=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["wallet_link"]["apikey"])' "$demo")
    { echo "$LUA_UUID"; cat <<'LUA'
function init(args)
  key = os.getenv("BENCH_KEY")
  apikey = os.getenv("BENCH_APIKEY")
  math.randomseed(os.time() + math.floor(os.clock() * 1e6))
end
function request()
  return wrk.format("POST", wrk.path, {["content-type"] = "application/json", ["x-api-key"] = key},
    '{"apikey":"' .. apikey .. '","amount":1,"transaction_uuid":"' .. uuid() .. '"}')
end
LUA
    } >"$TMP/route.lua"
    ;;
  intent)
    url="$(demo_value "$demo" base_url)/collection/intent"
    export BENCH_TOKEN
    BENCH_TOKEN=$(merchant_token "$demo" payments)
    # The request script of payments_bench.sh, so that both measure the same requests.
    sed -n '/^cat >"$TMP\/intent.lua" <<.EOF.$/,/^EOF$/p' bench/payments_bench.sh | sed '1d;$d' >"$TMP/route.lua"
    ;;
  *) echo "usage: $0 charge|intent" >&2; exit 2 ;;
esac

threads() { for t in /proc/"$pid"/task/*; do echo "$(basename "$t") $(awk '{print $14 + $15}' "$t/stat")"; done; }
metric() { curl -fsS "http://127.0.0.1:$port/metrics" | awk -v m="$1" '$1 == m {print $2}'; }

echo "route=$ROUTE connections=$CONNECTIONS duration=${DURATION}s load=$(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq 1 "$ROUNDS"); do
  before=$(threads)
  sum0=$(metric sika_db_commit_batch_units_sum) n0=$(metric sika_db_commit_batch_units_count)
  ck0=$(metric 'sika_db_checkpoints_total{thread="checkpointer"}') wk0=$(metric 'sika_db_checkpoints_total{thread="writer"}')
  perf_pid=""
  if [[ -n "${PERF:-}" && $r == "$ROUNDS" ]]; then
    perf record -F 2000 -g --call-graph dwarf,16384 -p "$pid" -o "$PERF" -- sleep "$((DURATION - 2))" >/dev/null 2>&1 &
    perf_pid=$!
  fi
  read -r rps p99 errors <<<"$(wrk_run "$url" "$TMP/route.lua")"
  [[ -n "$perf_pid" ]] && { wait "$perf_pid" 2>/dev/null || true; }
  after=$(threads)
  sum1=$(metric sika_db_commit_batch_units_sum) n1=$(metric sika_db_commit_batch_units_count)
  ck1=$(metric 'sika_db_checkpoints_total{thread="checkpointer"}') wk1=$(metric 'sika_db_checkpoints_total{thread="writer"}')
  python3 - "$r" "$rps" "$p99" "$errors" "$(getconf CLK_TCK)" "$DURATION" \
    "$sum0" "$n0" "$sum1" "$n1" "$ck0" "$ck1" "$wk0" "$wk1" "$before" "$after" <<'PY'
import sys
r, rps, p99, errors, hz, duration = sys.argv[1:7]
sum0, n0, sum1, n1, ck0, ck1, wk0, wk1 = (float(x or 0) for x in sys.argv[7:15])
before = dict(l.split() for l in sys.argv[15].splitlines())
after = dict(l.split() for l in sys.argv[16].splitlines())
busy = sorted(((int(after[t]) - int(before.get(t, 0))) / int(hz), t) for t in after)[::-1][:5]
units, commits = sum1 - sum0, n1 - n0
print(f"run {r}: {rps} req/s, p99 {p99}, errors: {errors}")
print("  busiest threads (CPU s over the run): " + ", ".join(f"{t} {s:.2f}" for s, t in busy))
print(f"  commits {commits:.0f}, mean batch {units / max(commits, 1):.1f} units; "
      f"checkpoints: checkpointer {ck1 - ck0:.0f}, writer {wk1 - wk0:.0f}")
PY
done
if [[ -n "${PERF:-}" ]]; then echo "perf data: $PERF"; fi
