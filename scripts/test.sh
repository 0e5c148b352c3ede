#!/usr/bin/env bash
# One command: install what is missing, build everything, and run every test: unit and HTTP
# tests (CTest) and the black-box Node tests, against SQLite and a throwaway PostgreSQL.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --test
scripts/build.sh
(cd tests/e2e && npm ci --no-audit --no-fund --loglevel=error)
scripts/with-postgres.sh scripts/run-tests.sh
