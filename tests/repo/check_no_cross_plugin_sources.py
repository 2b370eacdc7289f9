#!/usr/bin/env python3
"""Fails when a plugin reaches into another plugin's folder.

Every plugin folder plugins/<kind>/<name>/ builds from its own files, the SDK
(core/include/iomimic) and the internal libraries of plugins/lib, which it
links as CMake targets. This check reads each plugin's CMakeLists.txt (comments
stripped) and its C++ sources and reports:

  - a path that leaves the plugin folder: a "../" or "/.." segment, or
    ${CMAKE_CURRENT_SOURCE_DIR}/.. (sources, include directories, variables);
  - a path naming another plugin's folder (plugins/<kind>/<other>/...);
  - an #include that climbs out of the folder ("../...").

Usage: check_no_cross_plugin_sources.py --source <repository root>
"""

import argparse
import pathlib
import re
import sys

KINDS = ("format", "storage")
UP = re.compile(r"(^|[\s\"'/;(])\.\.(/|$|[\s\"')])")
OTHER = re.compile(r"plugins/(format|storage)/([A-Za-z0-9_]+)")
INCLUDE_UP = re.compile(r'^\s*#\s*include\s*"\.\./', re.M)


def strip_cmake_comments(text):
    out = []
    for line in text.splitlines():
        # A '#' outside a quoted string starts a comment.
        quoted = False
        cut = len(line)
        for i, c in enumerate(line):
            if c == '"':
                quoted = not quoted
            elif c == "#" and not quoted:
                cut = i
                break
        out.append(line[:cut])
    return out


def check_plugin(folder, kind, name):
    problems = []
    cmake = folder / "CMakeLists.txt"
    if cmake.exists():
        for number, line in enumerate(strip_cmake_comments(cmake.read_text()), 1):
            if UP.search(line) or "CMAKE_CURRENT_SOURCE_DIR}/.." in line:
                problems.append("%s:%d: path leaves the plugin folder: %s" %
                                (cmake, number, line.strip()))
            for other_kind, other in OTHER.findall(line):
                if (other_kind, other) != (kind, name):
                    problems.append("%s:%d: names plugin folder %s/%s: %s" %
                                    (cmake, number, other_kind, other, line.strip()))
    for source in sorted(folder.rglob("*")):
        if source.suffix not in (".cpp", ".cc", ".h", ".hpp"):
            continue
        text = source.read_text(errors="replace")
        for match in INCLUDE_UP.finditer(text):
            number = text.count("\n", 0, match.start()) + 1
            problems.append("%s:%d: #include climbs out of the plugin folder" % (source, number))
    return problems


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--source", required=True, help="repository root")
    args = parser.parse_args()
    root = pathlib.Path(args.source)
    plugins = [(root / "plugins" / kind / d.name, kind, d.name)
               for kind in KINDS if (root / "plugins" / kind).is_dir()
               for d in sorted((root / "plugins" / kind).iterdir()) if d.is_dir()]
    if not plugins:
        print("no plugin folders under %s/plugins" % root)
        return 1
    problems = []
    for folder, kind, name in plugins:
        problems += check_plugin(folder, kind, name)
    if problems:
        print("plugins must link shared code as CMake targets (plugins/lib, the SDK), "
              "not compile or include files of other folders:")
        for p in problems:
            print("  " + p)
        return 1
    print("%d plugin folders checked: none reaches into another folder" % len(plugins))
    return 0


if __name__ == "__main__":
    sys.exit(main())
