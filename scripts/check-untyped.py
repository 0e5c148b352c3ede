#!/usr/bin/env python3
"""Fails when code outside src/core/ builds an untyped problem (reason::untyped, Reason::text).

A field problem is a typed reason with fr/en texts (core/reason.hpp, core/i18n.cpp); only core's
FieldErrors::add_error carries a details text that arrived without a reason.
Usage: scripts/check-untyped.py [root]
"""
import pathlib
import re
import sys

PATTERN = re.compile(r"reason::untyped\s*\(|Reason::text\b")
# Files still carrying an untyped text, each to get its reason; a file leaves the list when it does,
# and no file joins it.
ALLOWED: set[str] = set()


def main() -> int:
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
    found = []
    for path in sorted((root / "src").rglob("*")):
        if path.suffix not in (".cpp", ".hpp") or (root / "src" / "core") in path.parents:
            continue
        if str(path.relative_to(root)) in ALLOWED:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if PATTERN.search(line):
                found.append(f"{path.relative_to(root)}:{number}: {line.strip()}")
    for f in found:
        print(f"untyped problem (name a reason in core/reason.hpp): {f}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
