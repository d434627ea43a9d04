#!/usr/bin/env python3
"""Plain Python reader of a posfuse trace (format v1) with the standard json module.

The reference for the reader benchmark (issue 2): parse every line with json.loads,
dispatch on "type" and pull out the fields an estimator would use, like TraceReader
does when it builds a TraceEvent. Prints one JSON line:
{"impl", "events", "seconds", "peak_rss_mib"}.

Usage: reader_python.py TRACE.jsonl
"""
import json
import resource
import sys
import time


def read(path):
    n = 0
    checksum = 0.0
    with open(path, "rb") as f:
        header = json.loads(f.readline())
        assert header["type"] == "header" and header["version"] == 1
        for line in f:
            if not line.strip():
                continue
            o = json.loads(line)
            t = o["t"]
            typ = o["type"]
            if typ in ("acc", "gyro", "mag"):
                ev = (t, typ, o["x"], o["y"], o["z"])
            elif typ == "gnss":
                ev = (t, typ, o["lat"], o["lon"], o.get("alt"), o["acc"], o.get("vacc"))
            elif typ == "gt":
                ev = (t, typ, o.get("lat"), o.get("lon"), o.get("h"), o.get("kind"))
            else:
                ev = (t, typ, o)
            checksum += ev[0]
            n += 1
    return n, checksum


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(64)
    t0 = time.perf_counter()
    n, _ = read(sys.argv[1])
    dt = time.perf_counter() - t0
    rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    if sys.platform == "darwin":
        rss_kib /= 1024
    impl = "python %d.%d json" % sys.version_info[:2]
    print(json.dumps({"impl": impl, "events": n, "seconds": dt, "peak_rss_mib": rss_kib / 1024}))


if __name__ == "__main__":
    main()
