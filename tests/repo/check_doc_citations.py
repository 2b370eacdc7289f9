#!/usr/bin/env python3
"""Fails when code or tests cite documents that are not in the repository.

Comments and test names cite the project's own documentation
(docs/dlio-compat.md §N.M, README.md, docs/*.md). This check reads every text
file under core/ (the SDK included), plugins/, tests/, examples/ and cmake/ and
reports:

  - a citation of the notes kept outside the repository: a path through a
    "reference" folder or a "shared" folder beside the checkout;
  - a Markdown file name (x.md, a/b.md) that names no file of the repository;
  - a "docs/dlio-compat.md §N.M" citation of a section the document lacks.

Usage: check_doc_citations.py --source <repository root>
"""

import argparse
import os
import pathlib
import re
import sys

FOLDERS = ("core", "plugins", "tests", "examples", "cmake")
SUFFIXES = {".cpp", ".cc", ".h", ".hpp", ".py", ".txt", ".cmake", ".in", ".sh", ".md", ".yaml",
            ".yml", ".proto"}
# Spelled in pieces so that this file does not match itself.
OUTSIDE = [re.compile(p) for p in (r"\b" + "reference" + r"/", r"\.\./" + "shared",
                                   r"\b" + "shared" + r"/" + "reference")]
MARKDOWN = re.compile(r"(?<![\w./-])((?:[\w.-]+/)*[\w.-]+\.md)\b")
SECTION = re.compile(r"docs/dlio-compat\.md\s+((?:§\s*\d+(?:\.\d+)?(?:,\s*|/|\s+and\s+)?)+)")
SECTION_NUMBER = re.compile(r"§\s*(\d+(?:\.\d+)?)")


def sections(document):
    found = set()
    for line in document.read_text().splitlines():
        m = re.match(r"#{2,4}\s+(\d+(?:\.\d+)?)\.?\s", line)
        if m:
            found.add(m.group(1))
    return found


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--source", required=True, help="repository root")
    args = parser.parse_args()
    root = pathlib.Path(args.source).resolve()
    compat = root / "docs" / "dlio-compat.md"
    known_sections = sections(compat) if compat.exists() else set()
    markdown_files = {p.relative_to(root).as_posix() for p in root.rglob("*.md")
                      if "build" not in p.relative_to(root).parts[:1]}
    markdown_names = {os.path.basename(p) for p in markdown_files}
    this_file = pathlib.Path(__file__).resolve()

    problems = []
    checked = 0
    for folder in FOLDERS:
        base = root / folder
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*")):
            if not path.is_file() or path.suffix not in SUFFIXES or path.resolve() == this_file:
                continue
            checked += 1
            text = path.read_text(errors="replace")
            where = path.relative_to(root).as_posix()
            for number, line in enumerate(text.splitlines(), 1):
                for pattern in OUTSIDE:
                    if pattern.search(line):
                        problems.append("%s:%d: cites a document outside the repository: %s" %
                                        (where, number, line.strip()))
                for name in MARKDOWN.findall(line):
                    relative = (path.parent / name).resolve()
                    if (name in markdown_files or relative.exists() or
                            ("/" not in name and name in markdown_names)):
                        continue
                    problems.append("%s:%d: cites %s, which is not in the repository" %
                                    (where, number, name))
                for group in SECTION.findall(line):
                    for section in SECTION_NUMBER.findall(group):
                        if section not in known_sections:
                            problems.append("%s:%d: docs/dlio-compat.md has no section §%s" %
                                            (where, number, section))
    if problems:
        print("code and tests must cite documents of the repository (docs/, README.md):")
        for p in problems:
            print("  " + p)
        return 1
    print("%d files checked: every cited document is in the repository" % checked)
    return 0


if __name__ == "__main__":
    sys.exit(main())
