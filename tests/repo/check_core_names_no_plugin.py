#!/usr/bin/python3
"""The core knows no plugin by name: outside the compatibility table
(core/src/config/dlio_compat.*, and DLIO's key table config/key_table.h with
its vocabulary config/keys.cpp), no file under core/ names an in-tree plugin,
neither in code (a string literal that is a plugin's name or starts with
"<name>.") nor in a comment, the SDK's headers (core/include) included.
Plugin names that are ordinary words (latency, synthetic, mmap, posix, csv)
are checked in code only, and "latency" not even there (a JSON key of its
own), nor in the trace readers' call tables (CALL_TABLES). Unit tests
(*_test.cpp) may name plugins.
"""
import argparse
import os
import re
import sys

COMPAT_TABLE = {
    "core/src/config/dlio_compat.h",
    "core/src/config/dlio_compat.cpp",
    "core/src/config/key_table.h",
    "core/src/config/keys.cpp",
}
ORDINARY_WORDS = {"latency", "synthetic", "mmap", "posix", "csv"}
NOT_IN_STRINGS = {"latency"}
# The trace readers' tables of system and library calls (docs/replay.md),
# where "mmap" is the call a trace names, not the plugin.
CALL_TABLES = {
    "core/src/apptrace/model.cpp",
    "core/src/apptrace/strace_reader.cpp",
    "core/src/apptrace/dftracer_reader.cpp",
}


def plugin_names(source):
    names = set()
    for kind in ("format", "storage"):
        root = os.path.join(source, "plugins", kind)
        for entry in os.listdir(root):
            if os.path.isfile(os.path.join(root, entry, "CMakeLists.txt")):
                names.add(entry)
    return names


def split_code_and_comments(text):
    """Yields (line number, code part, comment part) per line; string
    literals stay in the code part. Good enough for this tree's C++."""
    in_block = False
    for number, line in enumerate(text.splitlines(), 1):
        code, comment, i = [], [], 0
        in_string = False
        while i < len(line):
            ch = line[i]
            if in_block:
                end = line.find("*/", i)
                if end < 0:
                    comment.append(line[i:])
                    break
                comment.append(line[i:end])
                in_block, i = False, end + 2
                continue
            if in_string:
                code.append(ch)
                if ch == "\\" and i + 1 < len(line):
                    code.append(line[i + 1])
                    i += 2
                    continue
                if ch == '"':
                    in_string = False
                i += 1
                continue
            if line.startswith("//", i):
                comment.append(line[i + 2:])
                break
            if line.startswith("/*", i):
                in_block, i = True, i + 2
                continue
            if ch == '"':
                in_string = True
            code.append(ch)
            i += 1
        yield number, "".join(code), " ".join(comment)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", required=True)
    a = ap.parse_args()
    names = plugin_names(a.source)
    if len(names) < 10:
        sys.exit("found only %d plugins under plugins/: wrong --source?" % len(names))
    distinctive = names - ORDINARY_WORDS
    word = re.compile(r"(?<![\w./-])(%s)(?![\w])" % "|".join(sorted(distinctive, key=len,
                                                                         reverse=True)))
    literal = re.compile(r'"((?:[^"\\]|\\.)*)"')
    findings = []
    for top in ("core",):
        for folder, _, files in os.walk(os.path.join(a.source, top)):
            for name in files:
                if not name.endswith((".h", ".cpp")) or name.endswith("_test.cpp"):
                    continue
                path = os.path.join(folder, name)
                rel = os.path.relpath(path, a.source)
                if rel in COMPAT_TABLE:
                    continue
                with open(path, encoding="utf-8") as f:
                    text = f.read()
                for number, code, comment in split_code_and_comments(text):
                    for m in literal.finditer(code):
                        s = m.group(1)
                        skip = NOT_IN_STRINGS | (ORDINARY_WORDS if rel in CALL_TABLES else set())
                        for n in names - skip:
                            if s == n or s.startswith(n + "."):
                                findings.append("%s:%d: string \"%s\" names plugin '%s'" %
                                                (rel, number, s, n))
                    for m in word.finditer(comment):
                        findings.append("%s:%d: comment names plugin '%s'" %
                                        (rel, number, m.group(1)))
    if findings:
        print("the core names plugins outside the compatibility table "
              "(core/src/config/dlio_compat.*):")
        print("\n".join("  " + f for f in findings))
        return 1
    print("core/ names no plugin outside the compatibility table (%d plugins checked)" %
          len(names))
    return 0


if __name__ == "__main__":
    sys.exit(main())
