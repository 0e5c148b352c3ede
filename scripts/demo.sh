#!/usr/bin/env bash
# One command: install what is missing, build, and run `sika serve` on SQLite under ./data
# with the demo world. Credentials are written to ./data/demo.json and printed.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh sika
mkdir -p data
exec build/sika serve --db "sqlite://./data/sika.db" --demo ./data/demo.json "$@"
