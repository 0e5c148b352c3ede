#!/usr/bin/env python3
"""Lists the functions of src/ longer than a limit (lines from the signature's opening brace to
its closing one). Functions are found by their braces at namespace or class level, so lambdas
count inside the function that holds them. Usage: scripts/function-sizes.py [--max N] [--check]
[--allow FILE]. --check exits 1 when a function not listed in the allow file is over the limit."""
import argparse
import pathlib
import re
import sys

# The tree in the current folder when it has a src/ (a worktree), else the one holding this script.
ROOT = pathlib.Path.cwd() if (pathlib.Path.cwd() / "src").is_dir() else pathlib.Path(__file__).resolve().parent.parent


def strip(text):
    """Blanks comments, string and character literals (keeping newlines)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i)); i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j])); i = j
        elif text.startswith('R"', i):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            end = text.find(")" + m.group(1) + '"', i) if m else -1
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j])); i = j
        elif c == "'" and i > 0 and text[i - 1].isalnum() and i + 1 < n and text[i + 1].isalnum():
            out.append(c); i += 1  # a digit separator (60'000), not a character literal
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(re.sub(r"[^\n]", " ", text[i:j + 1])); i = j + 1
        else:
            out.append(c); i += 1
    return "".join(out)


SCOPE = re.compile(r"\b(namespace|class|struct|union|enum)\b[^;(){}]*$")


def functions(path):
    text = strip(path.read_text())
    stack = []  # per open brace: ("scope"|"func"|"other", start line, name)
    last = 0
    for i, c in enumerate(text):
        if c == "{":
            head = text[last:i]
            line = text.count("\n", 0, i) + 1
            outer_is_scope = all(k == "scope" for k, _, _ in stack)
            if SCOPE.search(head.strip()) or head.strip().startswith("extern"):
                stack.append(("scope", line, ""))
            elif outer_is_scope and ")" in head and not head.rstrip().endswith("="):
                name = re.findall(r"([A-Za-z_][\w:~<>]*)\s*\(", head)
                stack.append(("func", line, name[0] if name else "?"))
            else:
                stack.append(("other", line, ""))
            last = i + 1
        elif c == "}":
            if stack:
                kind, start, name = stack.pop()
                if kind == "func":
                    yield name, start, text.count("\n", 0, i) + 1
            last = i + 1
        elif c == ";":
            last = i + 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--max", type=int, default=80)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--allow", default=str(ROOT / "scripts" / "function-sizes.allow"))
    args = ap.parse_args()
    allow = set()
    p = pathlib.Path(args.allow)
    if p.exists():
        allow = {l.split("#")[0].strip() for l in p.read_text().splitlines() if l.split("#")[0].strip()}
    over = []
    for f in sorted((ROOT / "src").rglob("*.cpp")):
        for name, a, b in functions(f):
            if b - a + 1 > args.max:
                over.append((b - a + 1, f"{f.relative_to(ROOT)}:{a}", name))
    bad = [o for o in over if f"{o[1].split(':')[0]} {o[2]}" not in allow]
    for size, where, name in sorted(over, reverse=True):
        mark = "" if f"{where.split(':')[0]} {name}" in allow else "  (over the limit)" if args.check else ""
        print(f"{size:5d}  {where}  {name}{mark}")
    print(f"{len(over)} functions over {args.max} lines")
    if args.check and bad:
        print(f"{len(bad)} not in {args.allow}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
