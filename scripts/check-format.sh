#!/usr/bin/env bash
# Fails when a tracked C++ file differs from what clang-format (.clang-format) writes.
#   scripts/check-format.sh          check (CI)
#   scripts/check-format.sh --fix    rewrite the files in place
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.cpp' '*.hpp' | grep -v '^tests/e2e/')
if [[ "${1:-}" == "--fix" ]]; then
  clang-format -i "${files[@]}"
  exit 0
fi
if ! clang-format --dry-run --Werror "${files[@]}" 2>/tmp/sika-format.$$; then
  grep -E '^[^ ].*(warning|error):' /tmp/sika-format.$$ | cut -d: -f1 | sort -u | sed 's/^/not formatted: /'
  rm -f /tmp/sika-format.$$
  echo "run scripts/check-format.sh --fix" >&2
  exit 1
fi
rm -f /tmp/sika-format.$$
echo "format: ${#files[@]} files clean"
