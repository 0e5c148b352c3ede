#!/usr/bin/env bash
# Shared limits: rate-limiter hits (spread and on one key) and OTP verifications per second, on
# SQLite and, when SIKA_TEST_PG_DSN is set (scripts/with-postgres.sh), on PostgreSQL.
# Figures go to docs/performance.md ("Limits and OTP"). Extra arguments go to limits_bench
# (--threads N, --seconds S).
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${BUILD_DIR:-build}/bench/limits_bench"
echo "== sqlite"
"$bin" "$@"
if [[ -n "${SIKA_TEST_PG_DSN:-}" ]]; then
  db="sika_limits_bench_$$"
  psql "$SIKA_TEST_PG_DSN" -q -c "CREATE DATABASE $db"
  trap 'psql "$SIKA_TEST_PG_DSN" -q -c "DROP DATABASE IF EXISTS $db WITH (FORCE)"' EXIT
  echo "== postgres"
  "$bin" --dsn "${SIKA_TEST_PG_DSN%/*}/$db" "$@"
fi
