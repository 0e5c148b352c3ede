#!/usr/bin/env bash
# Runs every benchmark against build/ (build it first: scripts/build.sh). Each script prints its
# figures; docs/performance.md records them with the command.
set -uo pipefail
cd "$(dirname "$0")/.."
for b in bench/*_bench.sh; do
  [[ -x "$b" ]] || continue
  echo "== $b"
  "$b" || echo "$b failed"
done
