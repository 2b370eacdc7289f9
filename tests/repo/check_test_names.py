#!/usr/bin/env python3
"""Fails when a doctest TEST_CASE name holds a semicolon.

doctest_discover_tests registers one ctest test per test case, and CMake
splits a name at ";" like any list: the halves become two ctest tests whose
filters match no test case, so they run nothing and pass. Such a test could
never fail under ctest.

Usage: check_test_names.py --source <repository root>
"""

import argparse
import pathlib
import re
import sys

NAME = re.compile(r'\bTEST_CASE(?:_FIXTURE)?\s*\(\s*(?:\w+\s*,\s*)?"((?:[^"\\]|\\.)*)"')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    root = pathlib.Path(ap.parse_args().source)
    bad = []
    for folder in ("core", "plugins", "tests", "examples"):
        for path in sorted((root / folder).rglob("*")):
            if path.suffix not in (".cpp", ".h") or not path.is_file():
                continue
            text = path.read_text(errors="replace")
            for m in NAME.finditer(text):
                if ";" in m.group(1):
                    line = text.count("\n", 0, m.start()) + 1
                    bad.append("%s:%d: TEST_CASE name with ';' (ctest splits it and runs "
                               "nothing): %s" % (path.relative_to(root), line, m.group(1)))
    for b in bad:
        print(b)
    if bad:
        return 1
    print("ok: no TEST_CASE name holds ';'")
    return 0


if __name__ == "__main__":
    sys.exit(main())
