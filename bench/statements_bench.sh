#!/usr/bin/env bash
# Statements benchmark: N movements (default 1,000,000) on one merchant's XAF account within one
# month, on SQLite in a temp dir, and its statement streamed as CSV (GET /statements?format=csv).
# The database is seeded once by a first `sika serve` (migrations, demo world), then N completed
# collections, their COLLECTION journals and their two entries each are inserted with one SQL
# statement per table (what a month of collections would have left), the account's balance set to
# their sum, and `sika serve` is started again. Reported: rows/s of the download (curl to
# /dev/null, the rows counted), the server's resident memory before, sampled during (its maximum)
# and its peak (VmHWM) before and after: flat memory means "during" stays near "before" whatever N.
#
#   bench/statements_bench.sh
#   N=200000 bench/statements_bench.sh
set -euo pipefail
cd "$(dirname "$0")/.."

N=${N:-1000000}
source bench/lib.sh
command -v sqlite3 >/dev/null || { echo "sqlite3 is not installed"; exit 1; }

db="$TMP/sika.db"
dsn="sqlite://$db"
sql() { sqlite3 -separator ' ' -cmd ".timeout 10000" "$db" "$@"; }
args=(--set log.access=false)
port=""
pid=""
start() {
  serve_demo "$1" "$dsn" "${args[@]}"
  port=$SERVE_PORT
  pid=${PIDS[-1]}
}

start seed
kill "$pid"; wait "$pid" 2>/dev/null || true
# March 2026 in Douala (UTC+1): from 2026-02-28T23:00Z, one movement every ~2.6 s.
month_start=1772319600000
step=$((31 * 86400000 / N))
t0=$(date +%s.%N)
sql <<SQL
PRAGMA journal_mode = WAL;
BEGIN;
INSERT OR IGNORE INTO ledger_accounts (owner, environment, currency, kind, may_go_negative, balance, created_at)
SELECT 'merchant:' || id, 'sandbox', 'XAF', 'available', 0, 0, $month_start FROM merchants WHERE matricule = 'MCH-CM-0001';
INSERT OR IGNORE INTO ledger_accounts (owner, environment, currency, kind, may_go_negative, balance, created_at)
VALUES ('operator:MTN_MOMO_CMR', 'sandbox', 'XAF', 'clearing', 1, 0, $month_start);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $N)
INSERT INTO pay_transactions (reference, merchant_id, environment, operation, transaction_uuid, request_hash,
  invoice_reference, provider_reference, status, channel, service_code, country, connector, customer_wallet, amount,
  currency, fee, required_total, confirmation_method, confirmation_url, settlement_mode, split_reference, split_status,
  description, metadata, needs_otp, operator_reference, expires_at, created_at, updated_at)
SELECT 'TX-BENCH' || i, (SELECT id FROM merchants WHERE matricule = 'MCH-CM-0001'), 'sandbox', 'COLLECTION',
  'bench-uuid-' || i, 'h', 'INV-' || i, 'PRV-BENCH' || i, 'COMPLETED', 'PROVIDER', 'MTN_MOMO_CMR', 'CMR', 'sandbox',
  '237670000000', 1000, 'XAF', 0, 1000, 'NONE', '', 'DIRECT', '', '', 'bench', '{}', 0, 'OP-' || i,
  $month_start + i * $step, $month_start + i * $step, $month_start + i * $step FROM n;
INSERT INTO ledger_journals (transaction_id, kind, environment, currency, memo, created_at)
SELECT id, 'COLLECTION', 'sandbox', 'XAF', 'collection ' || reference, created_at FROM pay_transactions
WHERE reference LIKE 'TX-BENCH%';
INSERT INTO ledger_entries (journal_id, account_id, debit, credit, created_at)
SELECT j.id, (SELECT id FROM ledger_accounts WHERE owner = 'operator:MTN_MOMO_CMR' AND environment = 'sandbox'
  AND currency = 'XAF' AND kind = 'clearing'), 1000, 0, j.created_at FROM ledger_journals j WHERE j.memo LIKE 'collection TX-BENCH%';
INSERT INTO ledger_entries (journal_id, account_id, debit, credit, created_at)
SELECT j.id, (SELECT a.id FROM ledger_accounts a JOIN merchants m ON a.owner = 'merchant:' || m.id
  WHERE m.matricule = 'MCH-CM-0001' AND a.environment = 'sandbox' AND a.currency = 'XAF' AND a.kind = 'available'),
  0, 1000, j.created_at FROM ledger_journals j WHERE j.memo LIKE 'collection TX-BENCH%';
UPDATE ledger_accounts SET balance = balance + 1000 * $N WHERE kind = 'available' AND currency = 'XAF'
  AND environment = 'sandbox' AND owner = (SELECT 'merchant:' || id FROM merchants WHERE matricule = 'MCH-CM-0001');
UPDATE ledger_accounts SET balance = balance - 1000 * $N WHERE owner = 'operator:MTN_MOMO_CMR'
  AND environment = 'sandbox' AND currency = 'XAF' AND kind = 'clearing';
COMMIT;
SQL
echo "seeded $N movements in $(python3 -c "import time; print(f'{time.time() - $t0:.0f}')")s"

start run
token=$(merchant_token "$TMP/demo-run.json" payments)
rss() { awk -v k="$1:" '$1 == k {print $2}' "/proc/$pid/status"; }
before=$(rss VmRSS)
hwm_before=$(rss VmHWM)
url="http://127.0.0.1:$port/api/statements?currency=XAF&from=2026-03-01&to=2026-03-31&format=csv"
max_during=$before
(while kill -0 "$pid" 2>/dev/null; do rss VmRSS; sleep 0.05; done) >"$TMP/rss.txt" &
sampler=$!
t0=$(date +%s.%N)
rows=$(curl -fsS -H "x-sp-auth-token: Bearer $token" "$url" | wc -l)
elapsed=$(python3 -c "import time; print(f'{time.time() - $t0:.2f}')")
kill "$sampler" 2>/dev/null || true
max_during=$(sort -n "$TMP/rss.txt" | tail -1)
echo "statements: $N movements of one merchant in one month, SQLite, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "  CSV: $((rows - 1)) rows in ${elapsed}s = $(python3 -c "print(round(($rows - 1) / $elapsed))") rows/s"
echo "  server RSS: before ${before} kB, during at most ${max_during} kB; peak (VmHWM) ${hwm_before} kB before the download, $(rss VmHWM) kB after"
