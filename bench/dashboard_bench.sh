#!/usr/bin/env bash
# Dashboard benchmark, SQLite in a temp dir: a demo merchant with N (default 1,000,000) seeded
# transactions (bench/dashboard_seed.py); a signed-in owner's session; then, one request at a time
# (a person's clicks, not a load test), the latency percentiles and the size of:
#  - the transactions page's first page (GET /dashboard/transactions);
#  - a filtered search (status, operation and channel filters; and searches by the last 3, 4 and 6
#    digits of a phone, read through the index on its last four digits);
#  - the home page (balances and the 14-day chart) and the CSV of one filtered page of results.
#
#   bench/dashboard_bench.sh
#   N=200000 REQUESTS=100 bench/dashboard_bench.sh
set -euo pipefail
cd "$(dirname "$0")/.."

N=${N:-1000000}
REQUESTS=${REQUESTS:-200}
source bench/lib.sh

start_server() {
  port=$(free_port)
  demo="$TMP/demo.json"
  rm -f "$demo"
  SIKA_SECRET_KEY=bench-secret-key-0123456789abcdef0123 \
    "$SIKA" serve --listen "127.0.0.1:$port" --db "sqlite://$TMP/sika.db" --public-url "http://127.0.0.1:$port" \
    --demo "$demo" --set log.access=false --set log.level=warn --set webhooks.enabled=false --set payments.enabled=false \
    >>"$TMP/sika.log" 2>&1 &
  PIDS+=($!)
  wait_ready "$port" "$demo"
}

start_server  # migrates and seeds the demo world
kill "${PIDS[-1]}"; wait "${PIDS[-1]}" 2>/dev/null || true
matricule=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["dashboard"]["merchant"]["merchant"])' "$demo")
python3 bench/dashboard_seed.py "$TMP/sika.db" "$matricule" "$N"
start_server

python3 - "$demo" "$REQUESTS" <<'PY'
import json, re, statistics, sys, time, urllib.parse
import http.client
demo = json.load(open(sys.argv[1])); requests_n = int(sys.argv[2])
dash = urllib.parse.urlparse(demo["dashboard"]["url"])
conn = http.client.HTTPConnection(dash.hostname, dash.port)
cookies = {}

def call(method, url, body=None, headers=None):
    u = urllib.parse.urlparse(url)
    h = {"cookie": "; ".join(f"{k}={v}" for k, v in cookies.items())}
    h.update(headers or {})
    c = http.client.HTTPConnection(u.hostname, u.port)
    c.request(method, u.path + ("?" + u.query if u.query else ""), body, h)
    r = c.getresponse(); data = r.read()
    for k, v in r.getheaders():
        if k.lower() == "set-cookie":
            name, val = v.split(";")[0].split("=", 1)
            cookies[name] = val
    return r.status, dict((k.lower(), v) for k, v in r.getheaders()), data

# Sign in as the owner through the identity service (authorization code + PKCE).
owner = demo["dashboard"]["merchant"]
st, h, _ = call("GET", demo["dashboard"]["url"] + "/login")
st, h, page = call("GET", h["location"])
html = page.decode()
fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', html))
fields.update(email=owner["email"], password=owner["password"], action="approve")
action = re.search(r'<form method="post" action="([^"]+)"', html).group(1)
st, h, _ = call("POST", f"{dash.scheme}://{dash.netloc}{action}", urllib.parse.urlencode(fields),
                {"content-type": "application/x-www-form-urlencoded"})
st, h, _ = call("GET", h["location"])
assert st == 303 and "sika_dsh" in cookies, (st, h)

base = demo["dashboard"]["url"]
conn = http.client.HTTPConnection(dash.hostname, dash.port)  # one keep-alive connection, like a browser
cookie = f"sika_dsh={cookies['sika_dsh']}"

def measure(name, path):
    times, size = [], 0
    for _ in range(requests_n):
        t = time.perf_counter()
        conn.request("GET", dash.path + path, headers={"cookie": cookie})
        r = conn.getresponse(); body = r.read()
        times.append((time.perf_counter() - t) * 1000)
        assert r.status == 200, (path, r.status, body[:300])
        size = len(body)
    times.sort()
    p = lambda q: times[min(len(times) - 1, int(q * len(times)))]
    rows = body.count(b"<tr>") - 1 if path.startswith("/transactions?") or path == "/transactions" else ""
    print(f"{name:<44} p50 {p(.5):7.1f} ms  p95 {p(.95):7.1f} ms  p99 {p(.99):7.1f} ms  {size/1024:6.1f} KB  {rows}")

print(f"requests={requests_n} per page, one at a time on one keep-alive connection")
measure("GET /transactions (first page)", "/transactions")
measure("GET /transactions?status&operation&channel", "/transactions?status=FAILED&operation=COLLECTION&channel=PROVIDER")
measure("GET /transactions?from&to (one week)", "/transactions?from=%s&to=%s" % (
    time.strftime("%Y-%m-%d", time.gmtime(time.time() - 30 * 86400)), time.strftime("%Y-%m-%d", time.gmtime(time.time() - 23 * 86400))))
measure("GET /transactions?q=<reference>", "/transactions?q=TX-BENCH00000500000")
measure("GET /transactions?q=<full phone>", "/transactions?q=237612345678")
measure("GET /transactions?q=<4 last digits>&status", "/transactions?q=1234&status=COMPLETED")
measure("GET /transactions?q=<3 last digits>", "/transactions?q=234")
measure("GET /transactions?q=<6 last digits>", "/transactions?q=345678")
measure("GET / (balances, 14-day chart)", "/")
PY
