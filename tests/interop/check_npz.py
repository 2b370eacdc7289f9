#!/usr/bin/python3
"""Checks that numpy loads the .npz files iomimic wrote, with DLIO's layout.

Usage: check_npz.py <folder> [--dtype uint8] [--samples N] [--shape d1,d2]

Walks <folder> recursively for *.npz and np.load's each one. Every file must
hold the arrays x and y; x has the samples on its last axis, so
x.ndim == len(shape) + 1 and x.shape[-1] == samples, and y has shape
(samples,). Options that are not given are not checked. Prints
"checked N files" and exits 0, or prints what is wrong and exits 1 (also when
no file was found).
"""

import argparse
import os
import sys

import numpy as np


def parse_shape(text):
    try:
        dims = tuple(int(d) for d in text.split(",") if d.strip() != "")
    except ValueError:
        raise argparse.ArgumentTypeError(f"bad shape '{text}' (expected d1,d2,...)")
    if not dims or any(d < 0 for d in dims):
        raise argparse.ArgumentTypeError(f"bad shape '{text}' (expected d1,d2,...)")
    return dims


def check_file(path, args):
    """Returns a list of problems with one file (empty when it is fine)."""
    problems = []
    try:
        with np.load(path) as npz:
            keys = set(npz.files)
            if "x" not in keys or "y" not in keys:
                return [f"keys are {sorted(keys)}, expected x and y"]
            x = npz["x"]
            y = npz["y"]
    except Exception as e:  # any failure to load is a finding, not a crash
        return [f"np.load failed: {type(e).__name__}: {e}"]

    if x.ndim < 1:
        return [f"x is 0-dimensional"]
    samples = x.shape[-1]
    if args.shape is not None:
        if x.ndim != len(args.shape) + 1:
            problems.append(f"x.ndim is {x.ndim}, expected {len(args.shape) + 1} "
                            f"(x.shape {x.shape})")
        elif tuple(x.shape[:-1]) != args.shape:
            problems.append(f"x.shape[:-1] is {tuple(x.shape[:-1])}, expected {args.shape}")
    if args.samples is not None and samples != args.samples:
        problems.append(f"x.shape[-1] (samples) is {samples}, expected {args.samples}")
    if args.dtype is not None and x.dtype != args.dtype:
        problems.append(f"x.dtype is {x.dtype}, expected {args.dtype}")
    expected_samples = args.samples if args.samples is not None else samples
    if y.shape != (expected_samples,):
        problems.append(f"y.shape is {y.shape}, expected ({expected_samples},)")
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder")
    parser.add_argument("--dtype", type=str, default=None, help="numpy dtype of x, e.g. uint8")
    parser.add_argument("--samples", type=int, default=None, help="samples per file")
    parser.add_argument("--shape", type=parse_shape, default=None, help="sample shape d1,d2,...")
    args = parser.parse_args()
    if args.dtype is not None:
        try:
            args.dtype = np.dtype(args.dtype)
        except TypeError:
            parser.error(f"unknown dtype '{args.dtype}'")
    if not os.path.isdir(args.folder):
        print(f"error: {args.folder} is not a folder", file=sys.stderr)
        return 1

    paths = []
    for root, _, files in os.walk(args.folder):
        paths.extend(os.path.join(root, f) for f in files if f.endswith(".npz"))
    paths.sort()

    failed = 0
    for path in paths:
        problems = check_file(path, args)
        if problems:
            failed += 1
            for p in problems:
                print(f"error: {path}: {p}", file=sys.stderr)
    if not paths:
        print(f"error: no .npz files under {args.folder}", file=sys.stderr)
        return 1
    print(f"checked {len(paths)} files")
    if failed:
        print(f"error: {failed} of {len(paths)} files failed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
