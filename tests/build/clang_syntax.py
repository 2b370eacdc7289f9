#!/usr/bin/python3
"""Checks that sources compile with clang as well as gcc (issue 13, defect 9:
clang 14 refused core/src/plugin/registry.cpp, a structured binding captured
by a lambda). Runs `clang++ -fsyntax-only` on every translation unit of
compile_commands.json whose path matches --include, with the flags the build
uses. Exit 0 when all compile; 77 (skipped) when no clang++ is installed.

Usage: clang_syntax.py --compile-commands build/compile_commands.json
                       --source DIR [--include REGEX] [--clang clang++]
"""

import argparse
import concurrent.futures
import json
import os
import re
import shlex
import shutil
import subprocess
import sys


def command_for(entry, clang):
    args = entry.get("arguments") or shlex.split(entry["command"])
    out = [clang, "-fsyntax-only", "-Wno-unknown-warning-option"]
    skip = False
    for a in args[1:]:
        if skip:
            skip = False
            continue
        if a == "-o":
            skip = True
            continue
        if a == "-c":
            continue
        out.append(a)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--compile-commands", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--include", default=r"/core/(src|app)/.*(?<!_test)\.cpp$")
    ap.add_argument("--clang", default="")
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    clang = a.clang or shutil.which("clang++") or shutil.which("clang++-14")
    if not clang:
        print("SKIP: no clang++ installed")
        return 77
    with open(a.compile_commands) as f:
        entries = json.load(f)
    wanted = re.compile(a.include)
    source = os.path.realpath(a.source)
    todo = {}
    for e in entries:
        path = os.path.realpath(os.path.join(e["directory"], e["file"]))
        if path.startswith(source + os.sep) and wanted.search(path) and path not in todo:
            todo[path] = (e["directory"], command_for(e, clang))
    if not todo:
        print("FAIL: no translation unit matches %r" % a.include)
        return 1

    def compile_one(item):
        path, (directory, cmd) = item
        p = subprocess.run(cmd, cwd=directory, capture_output=True, text=True)
        return path, p.returncode, p.stderr

    failed = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as pool:
        for path, rc, err in pool.map(compile_one, sorted(todo.items())):
            if rc != 0:
                failed += 1
                errors = [l for l in err.splitlines() if "error:" in l]
                print("FAIL: %s:\n  %s" % (path, "\n  ".join(errors[:5])))
    print("%d of %d translation units compile with %s" % (len(todo) - failed, len(todo), clang))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
