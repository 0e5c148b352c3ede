#!/usr/bin/env bash
# Configures and builds into ./build (Ninja, ccache). Extra arguments are ninja targets.
set -euo pipefail
cd "$(dirname "$0")/.."
export CCACHE_DIR="${CCACHE_DIR:-$HOME/.ccache}"
export CCACHE_BASEDIR="$PWD"
if [[ ! -f build/build.ninja ]]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
fi
jobs="${SIKA_BUILD_JOBS:-$(nproc)}"
ninja -C build -j "$jobs" "$@"
