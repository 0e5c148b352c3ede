#!/usr/bin/env bash
# Storage: SQLite one-row-per-commit ceiling vs group commit through Db::write.
# Figures go to docs/performance.md ("Storage"). Extra arguments go to store_bench
# (--seconds S, --threads 4,16,64, --dir DIR: put DIR on the disk you deploy on).
set -euo pipefail
cd "$(dirname "$0")/.."
exec "${BUILD_DIR:-build}/bench/store_bench" "$@"
