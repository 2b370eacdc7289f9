#!/usr/bin/python3
"""Interoperability test of the png format plugin, run by ctest (interop.png).

Usage: png_interop.py --iomimic BIN --source REPO --work EMPTY_DIR

No shipped DLIO workload uses png (DLIO's resnet50 image workloads are jpeg
or tfrecord), so this runs the image harness (image_interop_harness.py:
DLIO's default workload, names, sizes, the determinism of generate, PIL's
read requests during `iomimic run`) with format png, and checks the png
specifics with Debian's PIL and numpy:

* each file is a valid PNG (PIL's verify checks every chunk CRC), mode 'L',
  of the size DLIO draws;
* the pixels are uniform noise (the plugin's unit tests compare pixels
  exactly);
* a file with a damaged chunk CRC makes `iomimic run` fail with a message
  that names the file and the offset.

Exit status 0 and "PASS" on success; "FAIL: <reason>" otherwise.
"""

import os
import struct
import sys

import numpy as np
from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import image_interop_harness as h  # noqa: E402


def check_image(path, d1, d2):
    with Image.open(path) as im:
        im.verify()  # chunk CRCs, structure
    with Image.open(path) as im:
        h.check_pil_greyscale(im, path, "PNG", d1, d2)
        a = np.asarray(im)
    h.check_greyscale_array(a, path, d1, d2)
    return a


def damage(path):
    """Flips a bit of the first IDAT chunk's CRC; returns the chunk's offset."""
    with open(path, "rb") as f:
        b = bytearray(f.read())
    pos = 8
    while pos + 12 <= len(b):
        length, kind = struct.unpack(">I4s", bytes(b[pos:pos + 8]))
        if kind == b"IDAT":
            b[pos + 8 + length] ^= 0x10
            with open(path, "wb") as f:
                f.write(b)
            return pos
        pos += 12 + length
    h.fail("%s has no IDAT chunk" % path)


def png_checks(d):
    """A damaged chunk is an error naming the file and the chunk's offset."""
    victim = d.files[0]
    offset = damage(victim)
    h.expect_failure(d.data, d.out, victim, "corrupt png", offset)
    d.restore()


if __name__ == "__main__":
    h.main("png", check_image, ((118, 137), (65, 83), True), png_checks)
