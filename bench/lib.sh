# Shared by the bench/*_bench.sh scripts (sourced): defaults, tool checks, a temp dir removed on
# exit with the servers started into PIDS and the PostgreSQL database named in DROP_DB.
BUILD=${BUILD:-build}
SIKA=${SIKA_BIN:-$BUILD/sika}
CONNECTIONS=${CONNECTIONS:-64}
THREADS=${THREADS:-2}
DURATION=${DURATION:-10}

[[ -x "$SIKA" ]] || { echo "missing $SIKA: build it first (ninja -C $BUILD sika)"; exit 1; }
command -v wrk >/dev/null || { echo "wrk is not installed (apt-get install wrk)"; exit 1; }
ulimit -n 8192 2>/dev/null || true

TMP=$(mktemp -d)
PIDS=()
DROP_DB=""
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [[ -n "$DROP_DB" ]]; then psql "$SIKA_TEST_PG_DSN" -q -c "DROP DATABASE IF EXISTS $DROP_DB WITH (FORCE)" || true; fi
  rm -rf "$TMP"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
