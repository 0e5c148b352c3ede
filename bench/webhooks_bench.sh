#!/usr/bin/env bash
# Webhooks: deliveries/s to local receivers with every attempt recorded durably (SQLite, WAL,
# synchronous=FULL), and the same with one more endpoint that never answers.
# Figures go to docs/performance.md ("Webhooks"). Extra arguments go to webhooks_bench
# (--events N per endpoint, --threads, --per-endpoint, --dir DIR: the database's disk).
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${BUILD_DIR:-build}/bench/webhooks_bench"
ports_file=$(mktemp)
node bench/webhooks_receiver.mjs --ports "${RECEIVER_PORTS:-4}" >"$ports_file" &
receiver=$!
trap 'kill $receiver 2>/dev/null || true; rm -f "$ports_file"' EXIT
for _ in $(seq 50); do [[ -s "$ports_file" ]] && break; sleep 0.1; done
line=$(head -1 "$ports_file")
ports=$(node -e "const j=JSON.parse(process.argv[1]); console.log(j.ports.join(','))" "$line")
hang=$(node -e "console.log(JSON.parse(process.argv[1]).hang)" "$line")
"$bin" --ports "$ports" --hang "$hang" "$@"
