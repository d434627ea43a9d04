#!/usr/bin/env python3
"""Reference TDoA solve for `posfuse-bench tdoa`: scipy.optimize.least_squares (method "lm",
analytic Jacobian) on the whitened range-difference residuals L^-1 (m(p) - rho), with
Q_rho = sigma^2 (I + 11^T), 2-D with a known phone height — the same model, layout and noise
level as Benchmarks/posfuse-bench/TDoABench.swift. Started from the beacon centroid (scipy has
no closed form). Prints the median microseconds per solve over timed batches, and the RMSE.

Usage: tdoa_scipy.py --beacons M [--repeats R] [--batch N]
"""
import argparse
import time

import numpy as np
from scipy.optimize import least_squares

LAYOUT = np.array([
    [0.3, 0.3, 2.9], [19.7, 0.3, 2.3], [19.7, 11.7, 2.8], [0.3, 11.7, 2.1],
    [10, 0.3, 2.6], [10, 11.7, 1.9], [10, 6, 3.0], [5, 6, 2.4],
])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--beacons", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--batch", type=int, default=200)
    a = ap.parse_args()
    m, h, sigma = a.beacons, 1.2, 0.01
    b = LAYOUT[:m]
    rng = np.random.default_rng(1000 + m)
    problems = []
    for _ in range(256):
        p = np.array([2 + 16 * rng.random(), 2 + 8 * rng.random(), h])
        r = np.linalg.norm(b - p, axis=1) + sigma * rng.standard_normal(m)
        problems.append((p[:2], r[1:] - r[0]))
    q = sigma ** 2 * (np.eye(m - 1) + np.ones((m - 1, m - 1)))
    linv = np.linalg.inv(np.linalg.cholesky(q))
    x0 = b[:, :2].mean(axis=0)

    def fun(x, rho):
        d = b - np.array([x[0], x[1], h])
        r = np.sqrt((d * d).sum(axis=1))
        return linv @ ((r[1:] - r[0]) - rho)

    def jac(x, rho):
        u = np.array([x[0], x[1], h]) - b
        r = np.sqrt((u * u).sum(axis=1))
        g = u[:, :2] / r[:, None]
        return linv @ (g[1:] - g[0])

    per, se = [], []
    for rep in range(a.repeats + 1):
        t0 = time.perf_counter()
        for i in range(a.batch):
            truth, rho = problems[i % 256]
            s = least_squares(fun, x0, jac=jac, method="lm", args=(rho,), xtol=1e-10)
            if rep == 0:
                se.append(((s.x - truth) ** 2).sum())
        if rep > 0:
            per.append((time.perf_counter() - t0) / a.batch * 1e6)
    print(f"{np.median(per):.1f} (scipy {__import__('scipy').__version__}, rmse {np.sqrt(np.mean(se)) * 1000:.1f} mm)")


if __name__ == "__main__":
    main()
