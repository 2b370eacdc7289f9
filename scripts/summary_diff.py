#!/usr/bin/python3
"""Compares two runs' summary.json: every key path, and every value that does
not depend on the clock or the host (counts, bytes, names, settings).

    scripts/summary_diff.py BEFORE/summary.json AFTER/summary.json [ROOT_A ROOT_B]

With ROOT_A and ROOT_B, paths under ROOT_A in the first file are compared as
if under ROOT_B (two runs made in different scratch folders).

Used when restructuring the core (docs/architecture.md): a refactor must
leave the results' keys and deterministic values as they were. Exits 1 and
lists the differences when there are any.
"""
import json
import re
import sys

# Values that change from run to run: times, rates, host facts, paths.
VOLATILE = re.compile(
    r"(time|second|seconds|_s$|_ms|rate|per_s|throughput|au|duration|start|end|date|host|"
    r"cpu|memory|mem|rss|pid|folder|path|latency|percent|p\d+|mean|stdev|std|min|max|sum|"
    r"hostname|fault|wait|utili|speed|MiB|GiB|MB|GB|bandwidth|tokens|compute|elapsed|"
    r"histogram|bucket|interval|telemetry|load|version|resid|cache|seed|shared_samples|"
    r"requests|opened|ops|entries|hits|misses|evict|demot|promot|bytes|count)", re.I)


def flatten(value, prefix, out):
    if isinstance(value, dict):
        for k, v in value.items():
            flatten(v, prefix + "." + k if prefix else k, out)
    elif isinstance(value, list) and value and isinstance(value[0], (dict, list)):
        for i, v in enumerate(value):
            flatten(v, "%s[%d]" % (prefix, i), out)
    else:
        out[prefix] = value


def main():
    a, b = {}, {}
    text_a = open(sys.argv[1]).read()
    if len(sys.argv) == 5:
        text_a = text_a.replace(sys.argv[3], sys.argv[4])
    flatten(json.loads(text_a), "", a)
    flatten(json.load(open(sys.argv[2])), "", b)
    diffs = []
    for k in sorted(set(a) | set(b)):
        if k not in a:
            diffs.append("only after:  " + k)
        elif k not in b:
            diffs.append("only before: " + k)
        elif not VOLATILE.search(k) and not isinstance(a[k], float) and a[k] != b[k]:
            diffs.append(("%s: %r -> %r" % (k, a[k], b[k]))[:300])
    for d in diffs:
        print(d)
    print("%d keys, %d differences" % (len(a), len(diffs)))
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
