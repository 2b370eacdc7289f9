#!/usr/bin/env python3
"""Fails when the plugin SDK's binary layout changes without an ABI bump.

A plugin built against one SDK is loaded by an iomimic built against another
only when both say the same IOMIMIC_PLUGIN_ABI_VERSION (core/include/iomimic/
plugin.h; docs/plugins.md, "ABI"). That number has to change whenever a class
that crosses the boundary changes its layout: a field added, moved or
resized, a virtual function added, removed or reordered. This check makes the
machine remember it instead of the author.

It compiles a probe with clang (the SDK is header-only) that needs the layout
of every type in BOUNDARY and the virtual table of every polymorphic one, and
asks clang to print them (-fdump-record-layouts, -fdump-vtable-layouts). From
that it keeps, per type: size and alignment, each base and direct field with
its offset and type, and the virtual-table slots in order. The result is
compared with the recording, tests/repo/abi_layout.txt, which names the ABI
version it was recorded under:

  - same layout: pass;
  - another layout, same ABI version: FAIL (bump the version);
  - another layout, bumped version: FAIL until recorded again with
    --update, so that the recording always describes the current version;
  - --update refuses to record another layout under the same version.

It also fails when an SDK header defines a class or struct that is in
neither BOUNDARY nor HEADER_ONLY below, so a new type is classified on
purpose rather than forgotten.

Usage: check_abi_layout.py --source ROOT [--clang clang++] [--update]
Exits 77 (skipped) when clang is not installed.
"""

import argparse
import difflib
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

# Types whose objects or layouts cross the plugin boundary: passed between
# the core and a plugin by pointer or reference, returned by value, or read
# from the descriptor. (type, constructor arguments for the probe's derived
# class when the type is polymorphic and has no default constructor)
BOUNDARY = [
    ("iomimic::Status", None),
    ("iomimic::Result<std::uint64_t>", None),
    ("iomimic::Result<std::unique_ptr<iomimic::File>>", None),
    ("iomimic::Result<std::unique_ptr<iomimic::FileReader>>", None),
    ("iomimic::Result<iomimic::SampleView>", None),
    ("iomimic::Result<iomimic::FileInfo>", None),
    ("iomimic::Result<iomimic::PayloadLayout>", None),
    ("iomimic::Result<iomimic::Buffer>", None),
    ("iomimic::Result<std::vector<iomimic::ByteRange>>", None),
    ("iomimic::Buffer", None),
    ("iomimic::ElementType", None),
    ("iomimic::FileSpec", None),
    ("iomimic::FormatTraits", None),
    ("iomimic::ReaderOptions", None),
    ("iomimic::SampleView", None),
    ("iomimic::ByteRange", None),
    ("iomimic::PayloadLayout", None),
    ("iomimic::FileReader", ""),
    ("iomimic::Format", ""),
    ("iomimic::OpenOptions", None),
    ("iomimic::ReadRequest", None),
    ("iomimic::StorageStatistic", None),
    ("iomimic::FileInfo", None),
    ("iomimic::StorageCapabilities", None),
    ("iomimic::File", ""),
    ("iomimic::Storage", ""),
    ("iomimic::PluginOptions", None),
    ("iomimic::PluginContext", None),
    ("iomimic::ContentOptions", None),
    ("IomimicOptionSpec", None),
    ("IomimicPluginDescriptor", None),
]

# Types of the SDK's headers that never cross the boundary: helpers compiled
# into the plugin (or the core) on one side only.
HEADER_ONLY = {
    "FileSystemStorage",  # a base for POSIX-like back ends, inside the plugin
    "ForwardingFile",  # decorator bases, inside the plugin
    "ForwardingStorage",
    "DecoratorFile",
    "PosixTransfer",  # iomimic/posix_io.h: the pread/pwrite loops of POSIX back ends
    "PreadEnd",
    "ImageInfo",  # iomimic/image_codec.h and image_format.h: the image shell, compiled
    "ImageGeometry",  # into each image plugin with its codec
    "SpecRules",
    "ChunkedWriter",
    "ImageCodec",
    "ImageReader",
    "ImageFormat",
    "Xoshiro256",  # random streams, used inside one side
    "ContentStream",
    "Key",  # ContentStream::Key
    "Entry",  # a local table row inside ElementType::FromName
    "NpyLayout",  # iomimic/npy.h: the encoder's sizes, inside one function call
}

PLUGIN_H = "core/include/iomimic/plugin.h"
RECORDING = "tests/repo/abi_layout.txt"


def abi_version(root):
    text = (root / PLUGIN_H).read_text()
    m = re.search(r"#define\s+IOMIMIC_PLUGIN_ABI_VERSION\s+(\d+)", text)
    if not m:
        sys.exit(f"{PLUGIN_H}: no IOMIMIC_PLUGIN_ABI_VERSION")
    return int(m.group(1))


def sdk_headers(root):
    inc = root / "core/include/iomimic"
    return sorted(p for p in inc.rglob("*.h") if "testing" not in p.relative_to(inc).parts)


def unclassified_types(root):
    known = {t.split("<")[0].split("::")[-1] for t, _ in BOUNDARY} | HEADER_ONLY
    found = []
    for path in sdk_headers(root):
        text = re.sub(r"//[^\n]*", "", path.read_text())
        for m in re.finditer(
                r"(?<!enum )\b(?:class|struct)\s+(?:\[\[\w+\]\]\s+)?(\w+)\s*(?:final\s*)?[:{]",
                text):
            if m.group(1) not in known:
                found.append(f"{path.relative_to(root)}: {m.group(1)}")
    return found


def enums(root):
    """Each SDK enum as its declaration's text (names, explicit values and
    underlying type in order), since their values cross the boundary too."""
    out = []
    for path in sdk_headers(root):
        text = re.sub(r"//[^\n]*", "", path.read_text())
        for m in re.finditer(r"\benum\s+(?:class\s+)?(\w+)\s*(:\s*[\w:]+)?\s*\{([^}]*)\}", text):
            body = re.sub(r"\s+", " ", ", ".join(e.strip() for e in m.group(3).split(",")
                                                  if e.strip()))
            base = " " + m.group(2).replace(" ", "") if m.group(2) else ""
            out.append(f"enum {m.group(1)}{base} {{ {body} }}")
    return out


def probe_source(root):
    lines = [f'#include "{p.relative_to(root / "core/include")}"' for p in sdk_headers(root)]
    lines += ["#include <cstdint>", "#include <memory>", "namespace abi_probe {"]
    for i, (name, ctor) in enumerate(BOUNDARY):
        lines.append(f"static_assert(sizeof({name}) > 0);")
        if ctor is not None:
            # An out-of-line constructor of a derived class emits the base's
            # virtual table, which makes clang lay it out and print it.
            lines.append(f"struct P{i} : {name} {{ P{i}(); }};")
            lines.append(f"P{i}::P{i}() : {name}({ctor}) {{}}")
    lines.append("}  // namespace abi_probe")
    return "\n".join(lines) + "\n"


def canonical_name(name):
    """One spelling for a type whether written here or printed by clang."""
    name = re.sub(r"\b(class|struct|union)\s+", "", name)
    name = name.replace("std::uint64_t", "unsigned long")
    return re.sub(r"\s+", "", name)


def parse_records(text, wanted):
    out = {}
    for block in text.split("*** Dumping AST Record Layout")[1:]:
        rows = [l for l in block.splitlines() if l.strip()]
        if not rows:
            continue
        m = re.match(r"\s*\d+\s*\|\s*(?:class|struct|union)\s+(.+)$", rows[0])
        if not m or canonical_name(m.group(1)) not in wanted:
            continue
        record = canonical_name(m.group(1))
        kept = []
        for row in rows[1:]:
            m = re.match(r"\s*(\d*)\s*\|( *)(.*)$", row)
            if not m:
                continue
            depth = len(m.group(2)) // 2
            body = m.group(3).strip()
            if body.startswith("[sizeof="):
                size = re.search(r"sizeof=(\d+)", body).group(1)
                align = re.search(r"align=(\d+)", body).group(1)
                kept.append(f"  sizeof {size} align {align}")
                break
            if depth == 1:
                kept.append(f"  {m.group(1):>4} {body}")
        out[record] = kept
    return out


def parse_vtables(text, wanted):
    out = {}
    for m in re.finditer(r"Vtable for '([^']+)' \((\d+) entries\)\.\n(.*?)(?:\n\n|\Z)", text,
                         re.S):
        name = canonical_name(m.group(1))
        if name not in wanted or name in out:
            continue
        slots = []
        for row in m.group(3).splitlines():
            s = re.match(r"\s*(\d+)\s*\|\s*(.+)$", row)
            if s:
                slots.append(f"  vtable {s.group(1):>3} {s.group(2).strip()}")
        out[name] = slots
    return out


def layout(root, clang):
    wanted = {canonical_name(n) for n, _ in BOUNDARY}
    with tempfile.TemporaryDirectory() as tmp:
        src = pathlib.Path(tmp) / "abi_probe.cpp"
        src.write_text(probe_source(root))
        p = subprocess.run([clang, "-std=c++20", "-I", str(root / "core/include"), "-c", "-o",
                            os.devnull, "-Xclang", "-fdump-record-layouts", "-Xclang",
                            "-fdump-vtable-layouts", str(src)], capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit("the ABI probe does not compile:\n" + p.stderr[-4000:])
    records = parse_records(p.stdout, wanted)
    vtables = parse_vtables(p.stdout, wanted)
    lines = []
    for name, ctor in BOUNDARY:
        key = canonical_name(name)
        if key not in records:
            sys.exit(f"clang printed no layout for {name}")
        if ctor is not None and key not in vtables:
            sys.exit(f"clang printed no virtual table for {name}")
        lines.append(name)
        lines += records[key] + vtables.get(key, [])
    return lines + enums(root)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    ap.add_argument("--clang", default="clang++")
    ap.add_argument("--update", action="store_true", help="record the current layout")
    args = ap.parse_args()
    root = pathlib.Path(args.source).resolve()
    if shutil.which(args.clang) is None:
        print(f"SKIP: {args.clang} not found (scripts/deps.sh --test installs clang)")
        return 77
    stray = unclassified_types(root)
    if stray:
        print("SDK types neither in BOUNDARY nor HEADER_ONLY of "
              "tests/repo/check_abi_layout.py (say which they are):\n  " + "\n  ".join(stray),
              file=sys.stderr)
        return 1
    version = abi_version(root)
    current = layout(root, args.clang)
    recording = root / RECORDING
    recorded_version, recorded = None, []
    if recording.exists():
        rows = recording.read_text().splitlines()
        m = re.match(r"# abi_version (\d+)", rows[0]) if rows else None
        recorded_version = int(m.group(1)) if m else None
        recorded = [r for r in rows if not r.startswith("#")]
    if args.update:
        if recorded and recorded != current and recorded_version == version:
            print(f"the layout changed but IOMIMIC_PLUGIN_ABI_VERSION is still {version}: bump it "
                  f"in {PLUGIN_H} first", file=sys.stderr)
            return 1
        recording.write_text(f"# abi_version {version}\n"
                             "# Written by tests/repo/check_abi_layout.py --update; do not edit.\n"
                             + "\n".join(current) + "\n")
        print(f"recorded {len(BOUNDARY)} types under ABI version {version} in {RECORDING}")
        return 0
    if current == recorded and version == recorded_version:
        print(f"ok: {len(BOUNDARY)} types, layout as recorded for ABI version {version}")
        return 0
    diff = "\n".join(difflib.unified_diff(recorded, current, RECORDING, "SDK headers", lineterm="",
                                          n=1))
    if current == recorded:
        print(f"IOMIMIC_PLUGIN_ABI_VERSION is {version} but {RECORDING} was recorded under "
              f"{recorded_version}: record it again with --update", file=sys.stderr)
    elif version == recorded_version:
        print(f"the SDK's binary layout changed without an ABI bump (IOMIMIC_PLUGIN_ABI_VERSION is "
              f"still {version}): bump it in {PLUGIN_H}, then run "
              f"tests/repo/check_abi_layout.py --source . --update\n{diff}", file=sys.stderr)
    else:
        print(f"the layout changed and the ABI version went from {recorded_version} to {version}: "
              f"record it with tests/repo/check_abi_layout.py --source . --update\n{diff}",
              file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
