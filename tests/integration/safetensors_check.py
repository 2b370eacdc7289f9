#!/usr/bin/python3
"""A safetensors reader written from the format's specification (Hugging
Face's safetensors README, "Format"), used to check the files iomimic's
model-loading workflow writes (docs/model-loading.md): Debian has no
safetensors package.

A file is an 8-byte little-endian unsigned header size N, N bytes of UTF-8
JSON (an object: "__metadata__" string map, then per tensor "dtype",
"shape", "data_offsets" [begin, end) relative to the byte after the
header), then the byte buffer. The spec requires the offsets to cover the
buffer without holes or overlap and the JSON to start with '{'; files the
library writes pad the header with spaces to a multiple of 8.

  safetensors_check.py FILE...   # prints each file's tensors and bytes
"""
import json
import struct
import sys

DTYPE_BYTES = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "I16": 2, "U16": 2,
               "F16": 2, "BF16": 2, "I32": 4, "U32": 4, "F32": 4, "F64": 8, "I64": 8, "U64": 8}


class Invalid(Exception):
    pass


def read_header(path):
    """(header dict, data offset, file size); Invalid on any breach."""
    with open(path, "rb") as f:
        first = f.read(8)
        if len(first) != 8:
            raise Invalid("%s: shorter than 8 bytes" % path)
        (n,) = struct.unpack("<Q", first)
        text = f.read(n)
        f.seek(0, 2)
        size = f.tell()
    if len(text) != n:
        raise Invalid("%s: header of %d bytes past the end" % (path, n))
    if not text.startswith(b"{"):
        raise Invalid("%s: header does not start with '{'" % path)
    header = json.loads(text.decode("utf-8"))
    return header, 8 + n, size


def check_file(path):
    """The tensors of `path` as {name: (dtype, shape, begin, end)}."""
    header, data, size = read_header(path)
    if data % 8:
        raise Invalid("%s: data starts at %d, not 8-byte aligned" % (path, data))
    tensors = {}
    for name, t in header.items():
        if name == "__metadata__":
            if not all(isinstance(v, str) for v in t.values()):
                raise Invalid("%s: __metadata__ values must be strings" % path)
            continue
        begin, end = t["data_offsets"]
        count = 1
        for d in t["shape"]:
            count *= d
        if end - begin != count * DTYPE_BYTES[t["dtype"]]:
            raise Invalid("%s: %s: %d bytes for shape %r %s" % (path, name, end - begin,
                                                                   t["shape"], t["dtype"]))
        tensors[name] = (t["dtype"], tuple(t["shape"]), begin, end)
    at = 0
    for name, (_, _, begin, end) in sorted(tensors.items(), key=lambda kv: kv[1][2]):
        if begin != at:
            raise Invalid("%s: %s starts at %d, the buffer so far ends at %d" % (path, name,
                                                                                 begin, at))
        at = end
    if data + at != size:
        raise Invalid("%s: tensors end at %d, the file has %d bytes" % (path, data + at, size))
    return tensors


def main():
    for path in sys.argv[1:]:
        tensors = check_file(path)
        print("%s: %d tensors, %d bytes" % (path, len(tensors),
                                            sum(e - b for _, _, b, e in tensors.values())))


if __name__ == "__main__":
    main()
