#!/usr/bin/python3
"""Interoperability test of the jpeg format plugin, run by ctest (interop.jpeg).

Usage: jpeg_interop.py --iomimic BIN --source REPO --work EMPTY_DIR

No workload shipped in workloads/ uses jpeg (DLIO's resnet50 configs there
are tfrecord; the traced jpeg runs of docs/dlio-compat.md §2.4 used a
resnet50_small variant), so this runs the image harness
(image_interop_harness.py: DLIO's default workload, names, sizes, the
determinism of generate, PIL's read requests during `iomimic run`) with
format jpeg, and checks the jpeg specifics with Debian's PIL and numpy:

* each file is a baseline JFIF JPEG that PIL decodes, mode 'L', with the
  quantisation tables of PIL's default quality 75, of the size DLIO draws;
* the decoded pixels look like (JPEG-smoothed) uniform noise (the plugin's
  unit tests check that PIL writes the same bytes for the same pixels and
  decodes the same pixels as iomimic);
* a file with a damaged marker, and a truncated file, make `iomimic run`
  fail with a message that names the file and the offset.

Exit status 0 and "PASS" on success; "FAIL: <reason>" otherwise.
"""

import io
import os
import sys

import numpy as np
from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import image_interop_harness as h  # noqa: E402


def pil_tables():
    """The quantisation tables PIL writes by default (quality 75)."""
    buf = io.BytesIO()
    Image.fromarray(np.zeros((8, 8), dtype=np.uint8)).save(buf, format="JPEG")
    with Image.open(buf) as im:
        return im.quantization


def check_image(path, d1, d2, tables):
    with Image.open(path) as im:
        h.check_pil_greyscale(im, path, "JPEG", d1, d2)
        if "jfif" not in im.info or im.info.get("progressive") or im.info.get("progression"):
            h.fail("%s: not a baseline JFIF file: %s" % (path, im.info))
        if im.quantization != tables:
            h.fail("%s: quantisation tables differ from PIL's quality 75" % path)
        a = np.asarray(im)
    h.check_greyscale_array(a, path, d1, d2)
    with open(path, "rb") as f:
        b = f.read()
    if b[:3] != b"\xff\xd8\xff" or b[-2:] != b"\xff\xd9":
        h.fail("%s: does not start with SOI and end with EOI" % path)
    return a


def damage_marker(path):
    """Turns the DQT marker into an unknown one; returns where libjpeg stops."""
    with open(path, "rb") as f:
        b = bytearray(f.read())
    at = b.find(b"\xff\xdb")
    if at < 0:
        h.fail("%s has no DQT marker" % path)
    b[at + 1] = 0x02
    with open(path, "wb") as f:
        f.write(b)
    return at + 2  # libjpeg has read the marker


def truncate(path, keep):
    with open(path, "rb") as f:
        b = f.read()
    with open(path, "wb") as f:
        f.write(b[:keep])
    return keep


def jpeg_checks(d):
    """A damaged marker, or a file cut short, is an error naming the file and
    the offset."""
    victim = d.files[0]
    offset = damage_marker(victim)
    h.expect_failure(d.data, d.out, victim, "corrupt jpeg (libjpeg: Unsupported marker type 0x02)",
                     offset)
    d.restore()
    size = truncate(victim, len(d.before[0]) - 100)
    h.expect_failure(d.data, d.out, victim, "truncated jpeg file", size)
    d.restore()


if __name__ == "__main__":
    tables = pil_tables()
    # Quality 75 smooths noise but keeps its mean and most of its spread.
    h.main("jpeg", lambda path, d1, d2: check_image(path, d1, d2, tables),
           ((115, 140), (45, 85), False), jpeg_checks)
