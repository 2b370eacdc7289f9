#!/usr/bin/python3
"""The core's floors (docs/architecture.md): each folder of core/src includes
only headers of the folders its floor may use. The workflows (train/,
kvcache/, and any added to WORKFLOWS) stand side by side: neither includes
the other, and nothing below them (output/, session/, the base folders)
includes either. Unit tests beside the code (*_test.cpp) may include what
they test against; every other file is checked, headers and sources.

Exits 1 and lists each include that breaks a rule, with file:line.
"""
import argparse
import os
import re
import sys
import tempfile

# The workflows: siblings on the session, listed by run/ only.
WORKFLOWS = {"train", "kvcache", "metadata", "modelload", "apptrace"}
BASE = {"cluster", "config", "metrics", "plan", "plugin"}

# What each folder of core/src may include besides itself and the SDK
# (core/include/iomimic). A folder missing here is refused until it is given
# a floor, so a new folder is placed on purpose.
ALLOWED = {
    "cluster": set(),
    "config": set(),
    "metrics": {"cluster", "config"},
    "plan": {"config"},
    "plugin": {"config"},
    "session": BASE,
    "output": BASE | {"session"},
    "train": BASE | {"session", "output"},
    "kvcache": BASE | {"session", "output"},
    "metadata": BASE | {"session", "output"},
    "modelload": BASE | {"session", "output"},
    "apptrace": BASE | {"session", "output"},
    "analysis": BASE | {"output"},
    "run": BASE | {"session", "output", "analysis"} | WORKFLOWS,
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_0-9]+)/[^"]+"')


def check(source):
    root = os.path.join(source, "core", "src")
    problems = []
    for folder in sorted(os.listdir(root)):
        path = os.path.join(root, folder)
        if not os.path.isdir(path):
            continue
        sources = [n for _, _, fs in os.walk(path) for n in fs if n.endswith((".h", ".cpp"))]
        if sources and all(n.endswith("_test.cpp") for n in sources):
            continue  # tests only
        if folder not in ALLOWED:
            problems.append("core/src/%s/: a folder with no floor (add it to docs/architecture.md "
                            "and tests/repo/check_floors.py)" % folder)
            continue
        for dirpath, _, files in os.walk(path):
            for name in sorted(files):
                if not name.endswith((".h", ".cpp")) or name.endswith("_test.cpp"):
                    continue
                file = os.path.join(dirpath, name)
                rel = os.path.relpath(file, source)
                with open(file, encoding="utf-8") as f:
                    for number, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        target = m.group(1)
                        if target in (folder, "iomimic"):
                            continue
                        if target in ALLOWED[folder]:
                            continue
                        why = ("one workflow includes another" if folder in WORKFLOWS and
                               target in WORKFLOWS else "%s/ is above %s/" % (target, folder)
                               if target in ALLOWED else "%s/ is no folder of core/src" % target)
                        problems.append("%s:%d: includes %s/ (%s)" % (rel, number, target, why))
    return problems


def self_test():
    """The checker fails on the includes it exists to refuse."""
    cases = {
        "core/src/output/model.h": '#include "train/trainer.h"\n',
        "core/src/session/session.h": '#include "kvcache/engine.h"\n',
        "core/src/kvcache/engine.h": '#include "train/loader.h"\n',
        "core/src/train/loader.h": '#include "run/run.h"\n',
        "core/src/newfolder/x.h": "",
        "core/src/train/ok_test.cpp": '#include "kvcache/engine.h"\n',
        "core/src/run/run.cpp": '#include "train/trainer.h"\n#include "kvcache/engine.h"\n',
    }
    with tempfile.TemporaryDirectory() as tmp:
        for rel, text in cases.items():
            os.makedirs(os.path.dirname(os.path.join(tmp, rel)), exist_ok=True)
            with open(os.path.join(tmp, rel), "w") as f:
                f.write(text)
        found = "\n".join(check(tmp))
    expected = ["output/model.h:1: includes train/", "session/session.h:1: includes kvcache/",
                "kvcache/engine.h:1: includes train/ (one workflow includes another)",
                "train/loader.h:1: includes run/", "core/src/newfolder/: a folder with no floor"]
    missing = [e for e in expected if e not in found]
    unexpected = [w for w in ("ok_test.cpp", "run/run.cpp") if w in found]
    if missing or unexpected:
        print("self-test failed: missing %s, unexpected %s\n%s" % (missing, unexpected, found))
        return False
    return True


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--source", required=True)
    args = parser.parse_args()
    if not self_test():
        return 1
    problems = check(args.source)
    if problems:
        print("includes that break the core's floors (docs/architecture.md):")
        for p in problems:
            print("  " + p)
        return 1
    print("core/src: every include respects its floor (%d folders)" % len(ALLOWED))
    return 0


if __name__ == "__main__":
    sys.exit(main())
