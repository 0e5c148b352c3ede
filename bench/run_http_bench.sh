#!/usr/bin/env bash
# HTTP benchmark: `sika serve` (SQLite in a temp dir) against bare_beast, a minimal Beast server
# answering the very bytes of sika's /healthz. Both are driven by wrk with keep-alive, the same
# connections and threads, for DURATION seconds each; then idle RSS and RSS with 1,000 open
# keep-alive connections are read from /proc/PID/status. sika is measured as configured by
# default (access log on, one JSON line per request to stdout, here a file) and with
# log.access=false, to show what the access log costs.
#
#   bench/run_http_bench.sh            # uses build/sika and build/bench/bare_beast
#   BUILD=build-rel CONNECTIONS=64 THREADS=2 DURATION=10 IO_THREADS=2 bench/run_http_bench.sh
#
# Everything listens on 127.0.0.1 and stops by itself.
set -euo pipefail
cd "$(dirname "$0")/.."

BARE=${BARE_BIN:-${BUILD:-build}/bench/bare_beast}
CONNECTIONS=${CONNECTIONS:-50}
IO_THREADS=${IO_THREADS:-2}
HOLD=${HOLD:-1000}

source bench/lib.sh
[[ -x "$BARE" ]] || { echo "missing $BARE: build it first (ninja -C $BUILD bare_beast)"; exit 1; }
ulimit -n 8192 2>/dev/null || ulimit -n "$(ulimit -Hn)" || true  # HOLD connections at once

wait_up() {
  for _ in $(seq 1 300); do
    curl -fsS -o /dev/null "http://127.0.0.1:$1/healthz" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "server on port $1 did not come up"; return 1
}
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
# Prints "REQ_PER_SEC P99" for one wrk run.
drive() {
  local out
  out=$(wrk -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" --latency "http://127.0.0.1:$1/healthz")
  echo "$out" > "$TMP/wrk-$1.txt"
  local rps p99 errors
  rps=$(awk '/^Requests\/sec/ {print $2}' <<<"$out")
  p99=$(awk '$1=="99%" {print $2}' <<<"$out")
  errors=$(grep -E "Non-2xx|Socket errors" <<<"$out" | tr '\n' ' ' || true)
  echo "$rps $p99 ${errors:-}"
}
# Opens $HOLD keep-alive connections, makes one request on each, holds them, prints VmRSS (kB).
rss_with_connections() {
  python3 - "$1" "$2" "$HOLD" <<'EOF'
import socket, sys, time
port, pid, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
req = b"GET /healthz HTTP/1.1\r\nHost: bench\r\n\r\n"
socks = []
for _ in range(n):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(req)
    socks.append(s)
for s in socks:
    data = b""
    while b"\r\n\r\n" not in data:
        data += s.recv(4096)
time.sleep(0.5)
with open(f"/proc/{pid}/status") as f:
    print(next(l.split()[1] for l in f if l.startswith("VmRSS")))
for s in socks:
    s.close()
EOF
}

SIKA_PORT=$(free_port)
QUIET_PORT=$(free_port)
BARE_PORT=$(free_port)

start_sika() {  # PORT NAME [--set KEY=VALUE ...]
  local port=$1 name=$2
  shift 2
  mkdir -p "$TMP/$name"
  SIKA_SECRET_KEY=${SIKA_SECRET_KEY:-bench-secret-key-0123456789abcdef0123} \
    "$SIKA" serve --listen "127.0.0.1:$port" --db "sqlite://$TMP/$name/sika.db" \
    --set "http.io_threads=$IO_THREADS" "$@" >"$TMP/$name/sika.log" 2>&1 &
  PIDS+=($!)
}
start_sika "$SIKA_PORT" sika
SIKA_PID=${PIDS[-1]}
start_sika "$QUIET_PORT" quiet --set log.access=false
QUIET_PID=${PIDS[-1]}
wait_up "$SIKA_PORT"
wait_up "$QUIET_PORT"

# Capture sika's /healthz response; bare_beast answers the same status line, headers and body
# (Date and X-Request-Id are produced per request by both).
curl -fsS -D "$TMP/headers" -o "$TMP/body" "http://127.0.0.1:$SIKA_PORT/healthz"
HEADER_ARGS=()
while IFS= read -r line; do
  line=${line%$'\r'}
  [[ -z "$line" || "$line" == HTTP/* ]] && continue
  name=${line%%:*}
  case "${name,,}" in date|x-request-id|content-length|connection|keep-alive) continue ;; esac
  HEADER_ARGS+=("$line")
done <"$TMP/headers"

"$BARE" "$BARE_PORT" "$IO_THREADS" "$TMP/body" "${HEADER_ARGS[@]}" >"$TMP/bare.log" 2>&1 &
BARE_PID=$!
PIDS+=("$BARE_PID")
wait_up "$BARE_PORT"

normalize() { curl -fsS -i "http://127.0.0.1:$1/healthz" | tr -d '\r' | sed -E 's/^(Date|X-Request-Id): .*/\1: */I' | sort; }
if ! diff <(normalize "$SIKA_PORT") <(normalize "$BARE_PORT") >"$TMP/diff"; then
  echo "warning: responses differ:"; cat "$TMP/diff"
fi
echo "response: $(wc -c <"$TMP/body") body bytes, $(curl -fsS -i "http://127.0.0.1:$SIKA_PORT/healthz" | wc -c) bytes in all"

SIKA_IDLE=$(rss_kb "$SIKA_PID")
QUIET_IDLE=$(rss_kb "$QUIET_PID")
BARE_IDLE=$(rss_kb "$BARE_PID")

# Warm-up, then the measured runs (bare first, then sika, on a quiet machine each time).
wrk -t1 -c4 -d1s "http://127.0.0.1:$BARE_PORT/healthz" >/dev/null
wrk -t1 -c4 -d1s "http://127.0.0.1:$SIKA_PORT/healthz" >/dev/null
wrk -t1 -c4 -d1s "http://127.0.0.1:$QUIET_PORT/healthz" >/dev/null
read -r BARE_RPS BARE_P99 BARE_ERR <<<"$(drive "$BARE_PORT")"
read -r SIKA_RPS SIKA_P99 SIKA_ERR <<<"$(drive "$SIKA_PORT")"
read -r QUIET_RPS QUIET_P99 QUIET_ERR <<<"$(drive "$QUIET_PORT")"

SIKA_HELD=$(rss_with_connections "$SIKA_PORT" "$SIKA_PID")
QUIET_HELD=$(rss_with_connections "$QUIET_PORT" "$QUIET_PID")
BARE_HELD=$(rss_with_connections "$BARE_PORT" "$BARE_PID")

echo
echo "wrk -t$THREADS -c$CONNECTIONS -d${DURATION}s, keep-alive, GET /healthz; $IO_THREADS I/O threads each; $(nproc) cores shared with wrk"
printf "%-24s %12s %10s %12s %20s\n" server "req/s" "p99" "idle RSS" "RSS $HOLD conns"
printf "%-24s %12s %10s %9s kB %17s kB\n" "sika serve" "$SIKA_RPS" "$SIKA_P99" "$SIKA_IDLE" "$SIKA_HELD"
printf "%-24s %12s %10s %9s kB %17s kB\n" "sika serve, no access log" "$QUIET_RPS" "$QUIET_P99" "$QUIET_IDLE" "$QUIET_HELD"
printf "%-24s %12s %10s %9s kB %17s kB\n" "bare_beast" "$BARE_RPS" "$BARE_P99" "$BARE_IDLE" "$BARE_HELD"
[[ -n "${SIKA_ERR// }" ]] && echo "sika wrk errors: $SIKA_ERR"
[[ -n "${QUIET_ERR// }" ]] && echo "sika (no access log) wrk errors: $QUIET_ERR"
[[ -n "${BARE_ERR// }" ]] && echo "bare wrk errors: $BARE_ERR"
exit 0
