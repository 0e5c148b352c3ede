#!/usr/bin/env python3
"""Checks the layering of src/: every library includes only its own headers and those of the
libraries it links (directly or through them), and links point only to libraries listed before
it (downward). The layer map comes from CMake (build/layers.txt, one "name: dep dep" per line,
in the order of SIKA_COMPONENTS).

usage: check-layers.py LAYERS_TXT SRC_DIR      exits 1 and lists every violation
"""
import pathlib
import re
import sys


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    layers_file, src = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    order, direct = [], {}
    for line in layers_file.read_text().splitlines():
        if not line.strip():
            continue
        name, _, deps = line.partition(":")
        order.append(name.strip())
        direct[name.strip()] = deps.split()

    problems = []
    position = {name: i for i, name in enumerate(order)}
    for name in order:
        for dep in direct[name]:
            if dep not in position:
                problems.append(f"{name} links sika_{dep}, which is not a component")
            elif position[dep] >= position[name]:
                problems.append(f"{name} links {dep}, which is not below it (link direction must point down)")

    def closure(name, seen=None):
        seen = set() if seen is None else seen
        for dep in direct.get(name, []):
            if dep not in seen:
                seen.add(dep)
                closure(dep, seen)
        return seen

    include = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/[^"]+"', re.M)
    for name in order:
        allowed = closure(name) | {name}
        folder = src / name
        for path in sorted(list(folder.rglob("*.cpp")) + list(folder.rglob("*.hpp"))):
            for match in include.finditer(path.read_text(errors="replace")):
                target = match.group(1)
                if target in position and target not in allowed:
                    problems.append(f"{path.relative_to(src.parent)} includes {target}/ but sika_{name} "
                                    f"does not link sika_{target}")
    for p in problems:
        print(p)
    print(f"layers: {len(order)} libraries, {len(problems)} violation(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
