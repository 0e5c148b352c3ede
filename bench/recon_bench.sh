#!/usr/bin/env bash
# Operator reconciliation benchmark on SQLite: N Sika payments of one connector seeded by direct
# SQL (COMPLETED collections, each with its operator reference), and an operator statement of N
# lines in Sika's normalised format: every 1000th line's amount differs, every 997th line is a
# reference Sika does not know, and every 1009th payment is left out of the statement (missing at
# the operator). Then `sika admin recon import` is timed, and the same file again (idempotent).
#
#   bench/recon_bench.sh              # N=1000000
#   N=100000 bench/recon_bench.sh
set -euo pipefail
cd "$(dirname "$0")/.."

N=${N:-1000000}
BUILD=${BUILD:-build}
SIKA=${SIKA_BIN:-$BUILD/sika}
[[ -x "$SIKA" ]] || { echo "missing $SIKA: build it first (scripts/build.sh sika)"; exit 1; }
command -v sqlite3 >/dev/null || { echo "sqlite3 is not installed"; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
db="$TMP/sika.db"
export SIKA_SECRET_KEY=bench-secret-key-0123456789abcdef0123
args=(--db "sqlite://$db" --set log.level=warn)

"$SIKA" migrate "${args[@]}" >/dev/null
day_ms=$(( ($(date -u +%s) - 5 * 86400) / 86400 * 86400 * 1000 ))  # five days ago, 00:00 UTC
t0=$(date +%s.%N)
sqlite3 "$db" <<SQL
PRAGMA journal_mode = WAL;
INSERT INTO merchants (matricule, name, email, countries, environment, created_at)
  VALUES ('MCH-BENCH', 'Bench', 'b@example.com', 'CMR', 'prod', $day_ms);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $N)
INSERT INTO pay_transactions (reference, merchant_id, environment, operation, transaction_uuid, request_hash,
  invoice_reference, provider_reference, status, channel, service_code, country, connector, customer_wallet, amount,
  currency, fee, required_total, confirmation_method, confirmation_url, settlement_mode, split_reference, split_status,
  description, metadata, needs_otp, operator_reference, submitted_at, expires_at, created_at, updated_at)
SELECT 'TX' || i, 1, 'prod', 'COLLECTION', 'u' || i, 'h', 'inv', 'pr-' || i, 'COMPLETED', 'PROVIDER', 'MTN_MOMO_CMR',
  'CMR', 'bench_op', '237670000001', 1000 + (i % 500), 'XAF', 20, 1020 + (i % 500), 'PUSH', '', 'MERCHANT', '',
  'NONE', 'd', '{}', 0, 'OP' || i, $day_ms + (i * 86400000 / $N), $day_ms + 86400000, $day_ms, $day_ms
FROM n;
SQL
t1=$(date +%s.%N)
# The statement: the day's lines, with their differences.
awk -v n="$N" -v day="$day_ms" 'BEGIN {
  print "#period," strftime("%Y-%m-%dT%H:%M:%SZ", day / 1000, 1) "," strftime("%Y-%m-%dT%H:%M:%SZ", day / 1000 + 86400, 1);
  print "operator_reference,our_reference,type,amount,currency,status,timestamp,fee";
  for (i = 1; i <= n; i++) {
    if (i % 1009 == 0) continue;
    ref = (i % 997 == 0) ? "OPX" i : "OP" i; ours = (i % 997 == 0) ? "" : "pr-" i;
    amount = 1020 + (i % 500); if (i % 1000 == 0) amount += 5;
    t = day / 1000 + int(i * 86400 / n);
    print ref "," ours ",collection," amount ",XAF,succeeded," strftime("%Y-%m-%dT%H:%M:%SZ", t, 1) ",0";
  }
}' >"$TMP/statement.csv"
lines=$(($(wc -l <"$TMP/statement.csv") - 2))
t2=$(date +%s.%N)
"$SIKA" admin recon import "${args[@]}" --connector bench_op --file "$TMP/statement.csv" >"$TMP/report.txt"
t3=$(date +%s.%N)
"$SIKA" admin recon import "${args[@]}" --connector bench_op --file "$TMP/statement.csv" >"$TMP/again.txt"
t4=$(date +%s.%N)
cat "$TMP/report.txt"
grep -q "this file was imported before" "$TMP/again.txt" || { echo "the second import was not the same run"; exit 1; }
python3 - "$N" "$lines" "$t0" "$t1" "$t2" "$t3" "$t4" <<'PY'
import sys
n, lines = int(sys.argv[1]), int(sys.argv[2])
t0, t1, t2, t3, t4 = map(float, sys.argv[3:])
print(f"seeded {n} payments in {t1 - t0:.1f} s; statement of {lines} lines written in {t2 - t1:.1f} s")
print(f"import (parse, {lines} lines, match, items, missing): {t3 - t2:.1f} s "
      f"({lines / (t3 - t2):,.0f} lines/s); the same file again: {t4 - t3:.2f} s")
PY
