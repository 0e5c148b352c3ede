#!/usr/bin/env python3
"""Fails when code outside src/core/ refuses a request with words no reason names.

Three checks:
1. An untyped problem (reason::untyped, Reason::text). A field problem is a typed reason with fr/en
   texts (core/reason.hpp, core/i18n.cpp); only core's FieldErrors::add_error carries a details text
   that arrived without a reason.
2. A message text written into an error's details: a JSON object literal such as
   bj::object{{"field", "words with spaces"}} passed to not_found, empty_data, bad_request, conflict,
   forbidden, unauthorized, make_error or field_error. Such a text has no French: name a reason and
   build the error with with_problem(...) or field_error(...) instead. A value without a space (an
   identifier, a code such as "csrf_failed") or a variable is not a text and passes.

   LITERAL_DETAILS_EXEMPT lists the files and folders check 2 does not read yet. It only shrinks: a
   path leaves it once its texts have reasons (the check fails while an entry has nothing left to
   exempt), and no path joins it. They are out of it for now because no page shows their texts:
   - the operators' command line (src/app/admin*), which speaks English by design;
   - texts only API clients read (connectors, API handlers, stores), whose English error.details is
     the contract; they get reasons when a page comes to show them.
   The dashboard and the services whose refusals its pages show (statements, recon) are in scope.
3. A decision on an error's code written as a string (`e.code == "..."`): the codes code decides
   on are named once in core/codes.hpp and compared with `e.is(codes::...)`.
Usage: scripts/check-untyped.py [root]
"""
import pathlib
import re
import sys

PATTERN = re.compile(r"reason::untyped\s*\(|Reason::text\b")
CODE_COMPARED = re.compile(r"\.code\s*[!=]=\s*\"")
# Files still carrying an untyped text, each to get its reason; a file leaves the list when it does,
# and no file joins it.
ALLOWED: set[str] = set()

# Paths (a file, or a folder ending in "/", or a file-name prefix) whose literal details check 2
# does not read yet; see the docstring. Only shrinks.
LITERAL_DETAILS_EXEMPT: tuple[str, ...] = (
    # The command line (English by design).
    "src/app/admin",
    # Texts only API clients read.
    "src/billing/",
    "src/catalog/handlers.cpp",
    "src/http/",
    "src/identity/",
    "src/links/",
    "src/notify/",
    "src/otp/",
    "src/payments/airtel_money.cpp",
    "src/payments/airtel_money_wire.cpp",
    "src/payments/handlers.cpp",
    "src/payments/mtn_momo.cpp",
    "src/payments/mtn_momo_wire.cpp",
    "src/payments/orange_money.cpp",
    "src/payments/queries.cpp",
    "src/payments/recon_format.cpp",
    "src/payments/refund_store.cpp",
    "src/payments/refunds.cpp",
    "src/payments/sandbox.cpp",
    "src/payments/service.cpp",
    "src/payments/store.cpp",
    "src/payments/wave.cpp",
    "src/payments/wave_wire.cpp",
    "src/store/",
    "src/wallets/",
    "src/web/message.cpp",
)

ERROR_CALL = re.compile(
    r"\b(not_found|empty_data|bad_request|conflict|forbidden|unauthorized|make_error|field_error)\s*\("
)
JSON_OBJECT = re.compile(r"\b(?:bj|boost::json|json)::object\s*\{")
# A "key", "text with a space" pair of an object literal (the value's first string literal).
TEXT_PAIR = re.compile(r'\{\s*"[^"\n]*"\s*,\s*"((?:[^"\\\n]|\\.)*)"')


def skip_literal(text: str, i: int) -> int:
    """The index after the string or character literal opening at i."""
    quote = text[i]
    i += 1
    while i < len(text) and text[i] != quote:
        i += 2 if text[i] == "\\" else 1
    return i + 1


def closing(text: str, i: int, open_char: str, close_char: str) -> int:
    """The index of the bracket closing the one just before i (literals skipped)."""
    depth = 1
    while i < len(text):
        c = text[i]
        if c in "\"'":
            i = skip_literal(text, i)
            continue
        if c == open_char:
            depth += 1
        elif c == close_char:
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return len(text)


def literal_details(text: str) -> list[int]:
    """Offsets of message texts written into error details."""
    found = []
    for call in ERROR_CALL.finditer(text):
        args_end = closing(text, call.end(), "(", ")")
        for obj in JSON_OBJECT.finditer(text, call.end(), args_end):
            body = text[obj.end() : closing(text, obj.end(), "{", "}")]
            for pair in TEXT_PAIR.finditer(body):
                if " " in pair.group(1):
                    found.append(obj.end() + pair.start())
    return sorted(set(found))


def exempt(relative: str) -> str | None:
    for entry in LITERAL_DETAILS_EXEMPT:
        if relative.startswith(entry):
            return entry
    return None


def main() -> int:
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
    found = []
    used_exemptions: set[str] = set()
    for path in sorted((root / "src").rglob("*")):
        if path.suffix not in (".cpp", ".hpp") or (root / "src" / "core") in path.parents:
            continue
        relative = str(path.relative_to(root))
        text = path.read_text(encoding="utf-8")
        if relative not in ALLOWED:
            for number, line in enumerate(text.splitlines(), 1):
                if PATTERN.search(line):
                    found.append(f"untyped problem (name a reason in core/reason.hpp): {relative}:{number}: {line.strip()}")
                if CODE_COMPARED.search(line):
                    found.append(f"code compared as a string (name it in core/codes.hpp): {relative}:{number}: {line.strip()}")
        texts = literal_details(text)
        if not texts:
            continue
        if entry := exempt(relative):
            used_exemptions.add(entry)
            continue
        lines = text.splitlines()
        for offset in texts:
            number = text.count("\n", 0, offset) + 1
            found.append(
                f"message text in error details (name a reason in core/reason.hpp, use with_problem or "
                f"field_error): {relative}:{number}: {lines[number - 1].strip()}"
            )
    for entry in LITERAL_DETAILS_EXEMPT:
        if entry not in used_exemptions:
            found.append(f"{entry} has no message text in error details left: remove it from LITERAL_DETAILS_EXEMPT")
    for f in found:
        print(f)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
