#!/usr/bin/env python3
"""Reference fingerprint matching for `posfuse-bench fingerprint`: the same model as
FingerprintEstimator (Gaussian RSS likelihood, APs heard on one side only censored at the other
side's threshold by their profile likelihood, delta = 0, posterior mean over all points),
vectorised with numpy over the points. Reads the map, the scans and posfuse's fixes from the
JSON file the benchmark writes; prints the median microseconds per scan and the largest
distance between its fixes and posfuse's.

Usage: fingerprint_numpy.py FILE [--repeats R]
"""
import argparse
import json
import time

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--repeats", type=int, default=9)
    a = ap.parse_args()
    d = json.load(open(a.file))
    t, sigma = d["threshold"], d["sigma"]
    col = {b: j for j, b in enumerate(d["bssids"])}
    pts = np.array(d["points"], dtype=float)
    f = np.array([[np.nan if v is None else v for v in row] for row in d["rss"]], dtype=float)
    miss = np.where(np.isnan(f), 0.0, np.maximum(0.0, f - t)) ** 2      # survey-only terms, all columns
    total = miss.sum(axis=1)
    scans = []
    for s in d["scans"]:
        h = [(col[b], v) for b, v in s.items() if b in col]
        scans.append((np.array([j for j, _ in h], dtype=int), np.array([v for _, v in h], dtype=float)))
    k = 1.0 / (2 * sigma * sigma)
    q2 = (d["spacing"] ** 2) / 12

    def estimate(cols, s):
        fh = f[:, cols]
        r = np.where(np.isnan(fh), np.maximum(0.0, s - t), s - fh)
        q = (r * r).sum(axis=1) + total - miss[:, cols].sum(axis=1)
        ll = -k * q
        w = np.exp(ll - ll.max())
        m = w @ pts / w.sum()
        dd = pts - m
        cov = (w[:, None, None] * dd[:, :, None] * dd[:, None, :]).sum(axis=0) / w.sum() + q2 * np.eye(2)
        return m, cov

    ours = [None if x is None else np.array(x) for x in d["fixes"]]
    diff = 0.0
    for (cols, s), o in zip(scans, ours):
        if len(cols) < 3 or o is None:
            continue
        m, _ = estimate(cols, s)
        diff = max(diff, float(np.linalg.norm(m - o)))
    per = []
    for r in range(a.repeats + 1):
        t0 = time.perf_counter()
        for cols, s in scans:
            if len(cols) >= 3:
                estimate(cols, s)
        dt = (time.perf_counter() - t0) / len(scans) * 1e6
        if r > 0:
            per.append(dt)
    per.sort()
    print(f"{per[len(per) // 2]:.1f} | {diff:.2e}")


if __name__ == "__main__":
    main()
