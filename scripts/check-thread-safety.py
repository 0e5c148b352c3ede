#!/usr/bin/env python3
"""Clang's thread-safety analysis over the sources that declare or touch shared state: every
translation unit of src/ that includes core/thread_annotations.hpp, or a header of src/ that
includes it, is parsed with -fsyntax-only -Wthread-safety -Werror=thread-safety, using
the flags of the main build's compile_commands.json with clang++ in place of the compiler.
A member marked GUARDED_BY(mu_) touched without mu_ held is an error.

usage: check-thread-safety.py [BUILD_DIR] [FILE.cpp ...]     exits 1 on any finding
  BUILD_DIR defaults to build/ (configured by scripts/build.sh); CLANGXX picks the compiler
  (default clang++-14, else clang++).
"""
import concurrent.futures
import json
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys

ANNOTATIONS = '#include "core/thread_annotations.hpp"'
INCLUDE = re.compile(r'^#include "([^"]+)"', re.M)
# The analysis only, as errors; the build's own warnings are g++'s business.
CHECK_FLAGS = ["-fsyntax-only", "-Wthread-safety", "-Werror=thread-safety", "-Wno-unknown-warning-option"]


def compiler() -> str:
    for name in [os.environ.get("CLANGXX", ""), "clang++-14", "clang++"]:
        if name and shutil.which(name):
            return name
    sys.exit("check-thread-safety: no clang++ found (install clang-14)")


def annotated(cpp: pathlib.Path, src: pathlib.Path) -> bool:
    """The file, or a header of src/ it includes directly, declares annotated state."""
    text = cpp.read_text(errors="replace")
    if ANNOTATIONS in text:
        return True
    for include in INCLUDE.findall(text):
        header = src / include
        if header.exists() and ANNOTATIONS in header.read_text(errors="replace"):
            return True
    return False


def clang_args(entry: dict, cxx: str) -> list[str]:
    args = entry["arguments"] if "arguments" in entry else shlex.split(entry["command"])
    out, skip = [cxx], False
    for a in args[1:]:
        if skip:
            skip = False
        elif a in ("-o", "-MF", "-MT", "-MQ"):
            skip = True
        elif a in ("-c", "-MD", "-MMD") or (a.startswith("-W") and not a.startswith("-Wl,")):
            continue
        else:
            out.append(a)
    return out + CHECK_FLAGS


def run(job):
    cpp, args, cwd = job
    p = subprocess.run(args, cwd=cwd, capture_output=True, text=True)
    return cpp, p.returncode, p.stderr


def main() -> int:
    root = pathlib.Path(__file__).resolve().parent.parent
    argv = sys.argv[1:]
    build = pathlib.Path(argv.pop(0)) if argv and not argv[0].endswith(".cpp") else root / "build"
    db = build / "compile_commands.json"
    if not db.exists():
        sys.exit(f"check-thread-safety: {db} missing (run scripts/build.sh first)")
    wanted = {str((root / a).resolve()) if not os.path.isabs(a) else a for a in argv}
    cxx = compiler()
    jobs, seen = [], set()
    for entry in json.loads(db.read_text()):
        cpp = pathlib.Path(entry["file"]).resolve()
        if str(cpp) in seen or not cpp.is_relative_to(root / "src"):
            continue
        if (wanted and str(cpp) not in wanted) or (not wanted and not annotated(cpp, root / "src")):
            continue
        seen.add(str(cpp))
        jobs.append((cpp, clang_args(entry, cxx), entry.get("directory", str(build))))
    if not jobs:
        sys.exit("check-thread-safety: no translation unit to check")
    failed = []
    workers = int(os.environ.get("SIKA_BUILD_JOBS", os.cpu_count() or 1))
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        for cpp, rc, err in pool.map(run, jobs):
            if rc != 0:
                failed.append(cpp)
                sys.stderr.write(err)
    name = cxx + " -Wthread-safety"
    if failed:
        print(f"thread safety FAILED ({name}): " + " ".join(str(f.relative_to(root)) for f in failed), file=sys.stderr)
        return 1
    print(f"thread safety: {len(jobs)} translation units clean ({name})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
