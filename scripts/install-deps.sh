#!/usr/bin/env bash
# Installs what building and running sika needs on Debian 12 (run as root).
# With --test also what the test suite needs: PostgreSQL, Node.js + npm, Chromium, wrk, and clang
# with its runtime libraries (libFuzzer, ASan, UBSan) for the fuzz harnesses.
set -euo pipefail
want_test=0
[[ "${1:-}" == "--test" ]] && want_test=1

packages=(build-essential cmake ninja-build ccache pkg-config git
  libboost1.81-dev libboost-json1.81-dev libboost-url1.81-dev
  libssl-dev libsqlite3-dev libpq-dev libsodium-dev libspdlog-dev libcli11-dev libtomlplusplus-dev
  libqrencode-dev zlib1g-dev libhowardhinnant-date-dev tzdata
  libgtest-dev libgmock-dev libbenchmark-dev ca-certificates sqlite3 jq curl)
if (( want_test )); then
  packages+=(postgresql postgresql-client chromium wrk python3 procps clang-format clang libclang-rt-14-dev)
  command -v node >/dev/null 2>&1 || packages+=(nodejs)
  command -v npm >/dev/null 2>&1 || packages+=(npm)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if (( ${#missing[@]} )); then
  echo "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
