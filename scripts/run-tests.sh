#!/usr/bin/env bash
# Runs every test against an already built tree: the format check, the function sizes
# (scripts/function-sizes.py), clang's thread-safety analysis (scripts/check-thread-safety.py), no
# untyped field problem outside core and no message text in an error's details outside the paths
# scripts/check-untyped.py still exempts,
# CTest, the Node tests, then the fuzz harnesses for SIKA_FUZZ_SECONDS each (default 30; they build
# themselves with clang). scripts/with-postgres.sh provides SIKA_TEST_PG_DSN so that every storage
# test also runs on PostgreSQL.
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
scripts/check-format.sh || status=1
# Functions over 80 lines that are not in scripts/function-sizes.allow (the list is shown only then).
sizes=$(scripts/function-sizes.py --check 2>&1) || { echo "$sizes"; status=1; }
scripts/check-thread-safety.py || status=1
# Field problems and error details are typed reasons outside core (scripts/check-untyped.py).
scripts/check-untyped.py || status=1
ctest --test-dir build --output-on-failure -j "$(nproc)" || status=1
(cd tests/e2e && node --test ./*.test.mjs) || status=1
scripts/fuzz.sh "${SIKA_FUZZ_SECONDS:-30}" || status=1
if (( status )); then echo "tests FAILED"; else echo "all tests passed"; fi
exit $status
