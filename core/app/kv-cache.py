#!/usr/bin/env python3
"""iomimic's stand-in for MLPerf Storage's KV-cache benchmark script.

mlpstorage runs `python3 <kvcache-bin-path> --model ... --num-users ...
--output FILE` (its benchmarks/kvcache.py); given this file as
--kvcache-bin-path, that command runs iomimic's KV-cache workflow instead:
this script replaces itself with the iomimic binary beside it, started under
the name kv-cache.py, which maps the reference's flags onto the kv_cache
manifest keys (docs/kvcache-reference.md, "mlpstorage and kv-cache.py").
"""
import os
import sys

iomimic = os.path.join(os.path.dirname(os.path.realpath(__file__)), "iomimic")
if not os.access(iomimic, os.X_OK):
    sys.exit("kv-cache.py: %s is missing: this script runs the iomimic binary beside it" % iomimic)
os.execv(iomimic, ["kv-cache.py"] + sys.argv[1:])
