#!/usr/bin/python3
"""Interoperability test of the tiff format plugin, run by ctest (interop.tiff).

Usage: tiff_interop.py --iomimic BIN --source REPO --work EMPTY_DIR

DLIO has no tiff format and no workload uses one, so this runs the image
harness (image_interop_harness.py: DLIO's default workload, names, sizes as
DLIO's png/jpeg generators draw them, the determinism of generate, PIL's
read requests during `iomimic run`) with format tiff, and checks the tiff
specifics with Debian's tifffile, PIL and numpy:

* each file is an uncompressed little-endian TIFF that tifffile.imread
  reads as a uint8 array and PIL as mode 'L';
* the pixels are uniform noise and tifffile and PIL agree on them (the
  plugin's unit tests compare pixels exactly);
* a float32 dataset with the plugin option compression=deflate reads back
  as float32 deflate-compressed images of the same sizes;
* a file whose header points past its end makes `iomimic run` fail with a
  message that names the file and the offset.

Exit status 0 and "PASS" on success; "FAIL: <reason>" otherwise.
"""

import os
import struct
import sys

import numpy as np
import tifffile
from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import image_interop_harness as h  # noqa: E402


def check_image(path, d1, d2, dtype="uint8", compression=1):
    with tifffile.TiffFile(path) as tif:
        if tif.byteorder != "<" or tif.is_bigtiff or len(tif.pages) != 1:
            h.fail("%s: expected one little-endian classic TIFF image" % path)
        page = tif.pages[0]
        if int(page.compression) != compression:
            h.fail("%s: compression %s, expected %d" % (path, page.compression, compression))
        if int(page.photometric) != 1 or page.samplesperpixel != 1:
            h.fail("%s: expected one MinIsBlack sample per pixel" % path)
        a = tif.asarray()
    if a.dtype != np.dtype(dtype) or a.shape != (d1, d2):
        h.fail("%s: tifffile reads %s %s, expected %s %s" % (path, a.dtype, a.shape, dtype, (d1, d2)))
    if dtype == "uint8":
        with Image.open(path) as im:
            h.check_pil_greyscale(im, path, "TIFF", d1, d2)
            if np.asarray(im).tobytes() != a.tobytes():
                h.fail("%s: PIL and tifffile read different pixels" % path)
    return a


def damage(path):
    """Points the header's first directory offset past the end of the file."""
    with open(path, "r+b") as f:
        f.seek(4)
        f.write(struct.pack("<I", 0x7FFFFFF0))


def tiff_checks(d):
    # Other element types and compression: float32, deflate (tag value 8).
    floats = os.path.join(h.ARGS.work, "floats")
    extra = ["++workload.dataset.record_element_type=float32",
             "++workload.dataset.options.compression=deflate"]
    h.run([h.ARGS.iomimic, "generate", h.workload()] + h.overrides(floats, d.out, extra))
    float_files = h.dataset_files(floats)
    for i, path in sorted(float_files.items()):
        check_image(path, *d.dims[i], dtype="float32", compression=8)
    h.check_run(floats, d.out, float_files, extra)
    print("checked %d float32 deflate tiff files with tifffile" % len(float_files), flush=True)

    # A broken header is an error naming the file and the offset (4, where
    # the first directory offset is stored).
    victim = d.files[0]
    damage(victim)
    h.expect_failure(d.data, d.out, victim, "tiff file", 4)
    d.restore()


if __name__ == "__main__":
    h.main("tiff", check_image, ((118, 137), (65, 83), True), tiff_checks,
           checked="tifffile and PIL")
