#!/usr/bin/python3
"""docs/manifest.md is what `iomimic config --keys` prints from the key table
(core/src/config/key_table.h): a key added to the table without regenerating
the docs fails here. Regenerate with:

  build/bin/iomimic config --keys > docs/manifest.md
"""
import argparse
import difflib
import os
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iomimic", required=True)
    ap.add_argument("--source", required=True)
    a = ap.parse_args()
    generated = subprocess.run([a.iomimic, "config", "--keys"], check=True, capture_output=True,
                               text=True).stdout
    path = os.path.join(a.source, "docs", "manifest.md")
    with open(path) as f:
        recorded = f.read()
    if generated == recorded:
        return 0
    diff = difflib.unified_diff(recorded.splitlines(), generated.splitlines(), "docs/manifest.md",
                                "iomimic config --keys", lineterm="", n=1)
    print("docs/manifest.md is stale; regenerate it with "
          "'build/bin/iomimic config --keys > docs/manifest.md':")
    print("\n".join(list(diff)[:40]))
    return 1


if __name__ == "__main__":
    sys.exit(main())
