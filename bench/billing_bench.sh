#!/usr/bin/env bash
# Billing benchmark: N subscriptions (default 100,000), consented, all due at the same instant, on
# SQLite in a temp dir. The database is seeded once by a first `sika serve` (migrations, demo
# world), then N subscriptions whose cycle 1 is due and their N `billing.charge` jobs are inserted
# with one SQL statement each (what a day of subscribe requests and consents would have left), and
# `sika serve` is started again: the figure is the time from its start until every cycle 1 has its
# payment row and its collection pushed to the sandbox operator (PENDING at the operator), and the
# count of collections, which must be exactly N. The operator's answers are delayed past the run
# (payments.sandbox_delay_ms) so the figure is the engine's, not the callbacks'.
#
# NODES=3 (with SIKA_TEST_PG_DSN set, e.g. under scripts/with-postgres.sh): the same run on
# PostgreSQL with NODES `sika serve` processes on one fresh database, all billing at once; the
# counts of cycle-1 payments and collections must each be exactly N (no cycle charged twice by two
# nodes, none skipped).
#
# READS=1: instead, N subscriptions (default 1,000,000) stored for one merchant, and wrk on the
# list (GET /merchand/billing/subscriptions, a page of 25 with its total) and the detail of one
# subscription, DURATION seconds each.
#
#   bench/billing_bench.sh
#   N=20000 WORKERS=32 bench/billing_bench.sh
#   READS=1 bench/billing_bench.sh
#   NODES=3 scripts/with-postgres.sh bench/billing_bench.sh
set -euo pipefail
cd "$(dirname "$0")/.."

READS=${READS:-0}
if [[ "$READS" == 1 ]]; then N=${N:-1000000}; else N=${N:-100000}; fi
WORKERS=${WORKERS:-32}
LIMIT_S=${LIMIT_S:-600}
NODES=${NODES:-1}
source bench/lib.sh
command -v sqlite3 >/dev/null || { echo "sqlite3 is not installed"; exit 1; }

db="$TMP/sika.db"
dsn="sqlite://$db"
backend=SQLite
# sql STATEMENTS: runs SQL on the bench's database (stdin when no argument).
sql() { sqlite3 -separator ' ' -cmd ".timeout 10000" "$db" "$@"; }
if [[ "$NODES" -gt 1 ]]; then
  [[ -n "${SIKA_TEST_PG_DSN:-}" ]] || { echo "NODES>1 needs PostgreSQL: run under scripts/with-postgres.sh"; exit 1; }
  pg_database "sika_billing_bench_$$"
  dsn=$PG_DSN
  backend="PostgreSQL, $NODES nodes"
  sql() { if [[ $# -gt 0 ]]; then psql "$dsn" -qAt -F ' ' -c "$1"; else psql "$dsn" -q -v ON_ERROR_STOP=1 >/dev/null; fi; }
fi
args=(--set log.access=false --set "jobs.workers=$WORKERS" --set jobs.poll_interval_ms=50
  --set payments.sandbox_delay_ms=900000 --set payments.pending_ttl_ms=3600000 --set payments.intent_ttl_ms=3600000)
port=""
start() {
  serve_demo "$1" "$dsn" "${args[@]}"
  port=$SERVE_PORT
}

start seed
kill "${PIDS[-1]}"; wait "${PIDS[-1]}" 2>/dev/null || true
now=$(($(date +%s) * 1000))
anchor=$((now - 40 * 86400000))  # monthly, started 40 days ago: cycle 1 is due
sql <<SQL
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $N)
INSERT INTO bil_subscriptions (reference, uuid, merchant_id, environment, user_tier, request_hash, customer_email,
  amount, currency, frequency, time_zone, description, metadata, status, anchor_at, next_cycle, next_payment_at,
  payer_provider, payer_wallet, subscribed_at, last_payment_at, created_at, updated_at)
SELECT 'SUB-BENCH' || i, 'bench-' || i, (SELECT id FROM merchants WHERE matricule = 'MCH-CM-0001'), 'sandbox', 1, 'h',
  'bench' || i || '@example.com', 1000, 'XAF', 'MONTHLY', 'Africa/Douala', 'Bench plan', '{}', 'ACTIVE', $anchor, 1,
  $((anchor + 31 * 86400000)), 'MTN_MOMO_CMR', '237690000000', $anchor, $anchor, $anchor, $anchor FROM n;
INSERT INTO bil_counts (merchant_id, environment, status, shard, n)
SELECT merchant_id, environment, status, 0, COUNT(*) FROM bil_subscriptions WHERE reference LIKE 'SUB-BENCH%'
GROUP BY merchant_id, environment, status
ON CONFLICT (merchant_id, environment, status, shard) DO UPDATE SET n = bil_counts.n + excluded.n;
INSERT INTO jobs (queue, job_key, payload, state, run_at, max_attempts, created_at, updated_at)
SELECT 'billing.charge', reference || ':1:e0', '{"subscription_id":' || id || ',"cycle":1,"epoch":0}', 'pending',
  $now - 1000, 10, $now, $now FROM bil_subscriptions WHERE reference LIKE 'SUB-BENCH%';
SQL

if [[ "$READS" == 1 ]]; then
  sql "UPDATE jobs SET state = 'done' WHERE queue = 'billing.charge'"  # stored, not billed
  start reads
  token=$(merchant_token "$TMP/demo-reads.json" payments)
  base="http://127.0.0.1:$port/api/merchand/billing/subscriptions"
  echo "billing reads: $N subscriptions stored for one merchant, SQLite, $(nproc) cores, ${DURATION}s each"
  for target in "$base?limit=25" "$base?status=ACTIVE&limit=25" "$base/detail/SUB-BENCH$((N / 2))"; do
    out=$(wrk -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" --latency -H "x-sp-auth-token: Bearer $token" "$target")
    echo "  ${target#http://127.0.0.1:$port/api}: $(awk '/^Requests\/sec/ {print $2}' <<<"$out") req/s, p99 $(awk '$1=="99%" {print $2}' <<<"$out") $(grep -E 'Non-2xx|Socket errors' <<<"$out" | tr '\n' ' ' || true)"
  done
  exit 0
fi

t0=$(date +%s.%N)
for node in $(seq 1 "$NODES"); do start "run$node"; done
done_count=0
while :; do
  done_count=$(sql "SELECT COUNT(*) FROM pay_transactions WHERE status <> 'INITIATED' AND metadata LIKE '%SUB-BENCH%'")
  elapsed=$(python3 -c "import time; print(f'{time.time() - $t0:.1f}')")
  [[ "$done_count" -ge "$N" ]] && break
  if python3 -c "import sys; sys.exit(0 if $elapsed > $LIMIT_S else 1)"; then echo "stopped after ${LIMIT_S}s"; break; fi
  sleep 1
done
read -r payments collections <<<"$(sql \
  "SELECT (SELECT COUNT(*) FROM bil_payments WHERE cycle = 1), (SELECT COUNT(*) FROM pay_transactions WHERE metadata LIKE '%SUB-BENCH%')")"
echo "billing: $N subscriptions due at once, $backend, jobs.workers=$WORKERS per node, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "  pushed $done_count of $N in ${elapsed}s (from the process start; $(python3 -c "print(round($done_count / max($elapsed, 0.1)))") cycles/s)"
echo "  cycle-1 payments $payments, collections $collections (must both be $N)"
