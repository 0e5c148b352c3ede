#!/usr/bin/env bash
# One command: install what is missing, build everything, and run every test: unit and HTTP
# tests (CTest) and the black-box Node tests, against SQLite and a throwaway PostgreSQL.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --test
scripts/build.sh
(cd tests/e2e && npm ci --no-audit --no-fund --loglevel=error)
# The PostgreSQL tests fail rather than skip if the throwaway server did not provide a DSN.
export SIKA_REQUIRE_PG=1
scripts/with-postgres.sh scripts/run-tests.sh
