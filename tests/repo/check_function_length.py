#!/usr/bin/env python3
"""Fails when a function in core/ or plugins/ (tests left out) is too long.

A function that does not fit on a screen is a sequence of steps that wants
names (docs/contributing.md, "Size"). This check reads every .cpp and .h
under core/ and plugins/ except tests (*_test.cpp, testing/ folders,
*_test_*.h) and reports each function body longer than --max lines
(default 120), counted from the line of its opening brace to the line of its
closing brace.

It is a lexer, not a compiler: it strips comments, string and character
literals (raw strings included), then walks the braces. A brace opens a
function body when the text before it, back to the previous ';', '{' or '}',
ends in a parameter list (a ')' possibly followed by qualifiers, a trailing
return type or a member-initialiser list) and it is not already inside a
function. Namespaces, classes, enums and initialisers are scopes it looks
through; lambdas and blocks inside a function count toward that function.

Usage: check_function_length.py --source <repository root> [--max 120] [--list N]
"""

import argparse
import pathlib
import re
import sys

ROOTS = ("core", "plugins")
SUFFIXES = (".cpp", ".h", ".cc", ".hpp")


def is_test_file(rel):
    parts = rel.parts
    name = rel.name
    return (name.endswith("_test.cpp") or "_test_" in name or name.endswith("_test_util.h")
            or "testing" in parts or "fuzz" in parts)


def strip_code(text):
    """Blanks comments and literals, keeping newlines so line numbers hold."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif c == "R" and text.startswith('"', i + 1) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^()\\ ]{0,16})\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            end = ")" + m.group(1) + '"'
            j = text.find(end, i + m.end())
            j = n if j < 0 else j + len(end)
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j
        elif c in "\"'":
            # A digit separator (1'000) is not a character literal.
            if c == "'" and i > 0 and text[i - 1].isalnum() and i + 1 < n and text[i + 1].isalnum() \
                    and re.match(r"[0-9a-fA-F]", text[i - 1]):
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
        elif c == "#" and (i == 0 or text[i - 1] == "\n"):
            # A preprocessor line (with continuations) holds no body.
            j = i
            while True:
                k = text.find("\n", j)
                if k < 0:
                    k = n
                    break
                if text[k - 1] != "\\":
                    break
                j = k + 1
            out.append("\n" * text.count("\n", i, k))
            i = k
        else:
            out.append(c)
            i += 1
    return "".join(out)


SIGNATURE_END = re.compile(
    r"\)\s*(const|noexcept|override|final|mutable|volatile|&|&&|\s|->\s*[\w:<>,\s\*&]+|"
    r"noexcept\s*\([^)]*\))*$")


def opens_function(prefix):
    p = prefix.strip()
    if not p or re.match(r"^(namespace|class|struct|union|enum)\b", p) or \
            re.search(r"\b(namespace|class|struct|union|enum)\b[^()]*$", p):
        return False
    if p.endswith("=") or p.endswith(",") or p.endswith("(") or p.endswith("return"):
        return False
    # A constructor's member-initialiser list: ") : a_(x), b_{y}".
    if re.search(r"\)\s*:\s*[\w:]+\s*[({]", p):
        return True
    if re.search(r"\b(if|for|while|switch|catch)\s*\(", p) and not re.search(r"\w+\s*\([^()]*\)\s*$", p.split("(")[0] + "()"):
        pass
    return bool(SIGNATURE_END.search(p))


def functions(text):
    """Yields (name, first line, last line) of each outermost function body."""
    code = strip_code(text)
    line = 1
    depth_stack = []  # kinds: 'scope' or 'func'
    segment_start = 0
    func_start = None
    func_name = ""
    for i, c in enumerate(code):
        if c == "\n":
            line += 1
        elif c in ";":
            if not any(k == "func" for k in depth_stack):
                segment_start = i + 1
        elif c == "{":
            in_func = any(k == "func" for k in depth_stack)
            if in_func:
                depth_stack.append("block")
            else:
                prefix = code[segment_start:i]
                if opens_function(prefix):
                    depth_stack.append("func")
                    func_start = line
                    m = re.findall(r"([~\w:]+)\s*\(", prefix)
                    func_name = m[0] if m else "?"
                    if func_name in ("IOMIMIC_DEFINE_FORMAT_PLUGIN", "IOMIMIC_DEFINE_STORAGE_PLUGIN") and len(m) > 1:
                        func_name = m[0] + " factory"
                else:
                    depth_stack.append("scope")
                segment_start = i + 1
        elif c == "}":
            if not depth_stack:
                continue
            kind = depth_stack.pop()
            if kind == "func":
                yield func_name, func_start, line
            if not any(k == "func" for k in depth_stack):
                segment_start = i + 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    ap.add_argument("--max", type=int, default=120)
    ap.add_argument("--list", type=int, default=0, help="print the N longest functions")
    args = ap.parse_args()
    root = pathlib.Path(args.source)
    found = []
    for top in ROOTS:
        for path in sorted((root / top).rglob("*")):
            rel = path.relative_to(root)
            if path.suffix not in SUFFIXES or not path.is_file() or is_test_file(rel):
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            for name, first, last in functions(text):
                found.append((last - first + 1, str(rel), first, name))
    found.sort(reverse=True)
    for n, rel, first, name in found[: args.list]:
        print(f"{n:5d} {rel}:{first} {name}")
    over = [f for f in found if f[0] > args.max]
    for n, rel, first, name in over:
        print(f"{rel}:{first}: {name} is {n} lines (at most {args.max}): split it into named steps",
              file=sys.stderr)
    if over:
        print(f"{len(over)} function(s) over {args.max} lines", file=sys.stderr)
        return 1
    print(f"ok: {len(found)} functions, none over {args.max} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
