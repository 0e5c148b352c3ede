#!/usr/bin/env bash
# Builds the libFuzzer harnesses (fuzz/, clang++ with ASan and UBSan, into ./build-fuzz) and runs
# each for SECONDS (default 30) from its seed corpus in fuzz/corpus/<harness>. Exits 1 when a
# harness crashes, leaks or hangs (25 s on one input); the input that did it is kept in
# build-fuzz/artifacts/.
#   scripts/fuzz.sh [SECONDS] [HARNESS...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-30}"
shift || true
harnesses=("$@")
(( ${#harnesses[@]} )) || harnesses=(http_request json_body form_query jwt url_guard)
[[ "$seconds" =~ ^[0-9]+$ ]] || { echo "usage: scripts/fuzz.sh [SECONDS] [HARNESS...]" >&2; exit 2; }

export CCACHE_DIR="${CCACHE_DIR:-$HOME/.ccache}"
export CCACHE_BASEDIR="$PWD"
if [[ ! -f build-fuzz/build.ninja ]]; then
  launcher=()
  command -v ccache >/dev/null 2>&1 && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  CXX=clang++ cmake -S fuzz -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" >/dev/null
fi
if ! ninja -C build-fuzz -j "${SIKA_BUILD_JOBS:-$(nproc)}" >build-fuzz/build.log 2>&1; then
  grep -E 'error|FAILED' build-fuzz/build.log | head -20 >&2
  echo "fuzzing FAILED: the harnesses do not build (build-fuzz/build.log)" >&2
  exit 1
fi

mkdir -p build-fuzz/artifacts
failed=()
for h in "${harnesses[@]}"; do
  # New inputs go to the scratch corpus (first directory); the seeds in the repository stay as they are.
  mkdir -p "build-fuzz/corpus/$h"
  log="build-fuzz/artifacts/$h.log"
  if build-fuzz/"fuzz_$h" -max_total_time="$seconds" -timeout=25 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="build-fuzz/artifacts/$h-" "build-fuzz/corpus/$h" "fuzz/corpus/$h" >"$log" 2>&1; then
    echo "fuzz $h: ok ($(grep -o '^stat::number_of_executed_units: [0-9]*' "$log" | grep -o '[0-9]*$' || echo '?') runs in ${seconds}s)"
  else
    echo "fuzz $h: FAILED; reproduce with: build-fuzz/fuzz_$h <artifact>" >&2
    grep -E '^(==[0-9]+==|SUMMARY|artifact_prefix|Test unit written)|runtime error' "$log" | head -20 >&2 || true
    failed+=("$h")
  fi
done
if (( ${#failed[@]} )); then
  echo "fuzzing FAILED: ${failed[*]} (logs and inputs in build-fuzz/artifacts/)" >&2
  exit 1
fi
