#!/usr/bin/env python3
"""The I/O floor of a report refiner in Python: parse every report line with json.loads and
write a minimal output Feature with json.dumps (no estimation at all). The reference column of
`posfuse-bench refine`. Prints one JSON line: {"impl", "events", "seconds", "peak_rss_mib"}.

Usage: refine_python.py REPORTS.jsonl
"""
import json
import resource
import sys
import time


def run(path):
    n = 0
    out = 0
    with open(path, "rb") as f:
        for line in f:
            if not line.strip():
                continue
            n += 1
            try:
                r = json.loads(line)
                feature = {"type": "Feature", "geometry": {"type": "Point", "coordinates": [r["lon"], r["lat"]]},
                           "properties": {"id": r.get("id"), "status": "reported", "evidence_events": len(r.get("evidence", []))}}
            except (ValueError, KeyError, TypeError) as e:
                feature = {"type": "Feature", "geometry": None, "properties": {"status": "error", "error": str(e)}}
            out += len(json.dumps(feature, sort_keys=True))
    return n, out


t0 = time.perf_counter()
n, out = run(sys.argv[1])
dt = time.perf_counter() - t0
assert out > 0
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"impl": "python json I/O", "events": n, "seconds": dt, "peak_rss_mib": rss}))
