#!/usr/bin/env python3
"""Python references for `posfuse-bench filters` (Benchmarks/posfuse-bench/FilterBench.swift).

EKF: FilterPy's KalmanFilter (predict + update per step) on the same constant-velocity model
(state [E, N, vE, vN], dt = 1, Q = q [[dt^4/4, dt^3/2],[dt^3/2, dt^2]] (x) I2, q = 0.5,
H = [I2 0], R = 9 I2) and the same seeded measurements (SplitMix64 + Box-Muller, seed 42).
Particle filter: the same SIR algorithm vectorised in numpy (CV prediction with sampled
piecewise-constant-acceleration noise, Gaussian position likelihood in log space, N_eff,
systematic resampling below N/2). Prints one JSON object: median ns per step / per particle-step.

Usage: filters_python.py [--ekf-steps N] [--particles N] [--pf-steps N] [--repeats R]
"""
import argparse
import json
import math
import time

import numpy as np
from filterpy.kalman import KalmanFilter

M64 = (1 << 64) - 1


def splitmix_gaussians(seed, count):
    state = seed
    def uniform():
        nonlocal state
        state = (state + 0x9E3779B97F4A7C15) & M64
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        return ((z ^ (z >> 31)) >> 11) * 2.0 ** -53
    out = []
    for _ in range(count):
        u1, u2 = max(uniform(), 1e-300), uniform()
        out.append(math.sqrt(-2 * math.log(u1)) * math.cos(2 * math.pi * u2))
    return out


def measurements(n, sigma=3.0):
    g = splitmix_gaussians(42, 2 * n)
    return [np.array([1.2 * k + sigma * g[2 * k], 0.5 * k + sigma * g[2 * k + 1]]) for k in range(n)]


def model(q=0.5, dt=1.0):
    F = np.array([[1, 0, dt, 0], [0, 1, 0, dt], [0, 0, 1, 0], [0, 0, 0, 1]], float)
    a, b, c = q * dt ** 4 / 4, q * dt ** 3 / 2, q * dt ** 2
    Q = np.array([[a, 0, b, 0], [0, a, 0, b], [b, 0, c, 0], [0, b, 0, c]], float)
    return F, Q


def bench_filterpy(steps, repeats):
    F, Q = model()
    zs = measurements(steps)
    times = []
    for _ in range(repeats):
        kf = KalmanFilter(dim_x=4, dim_z=2)
        kf.F, kf.Q = F, Q
        kf.H = np.array([[1, 0, 0, 0], [0, 1, 0, 0]], float)
        kf.R = 9.0 * np.eye(2)
        kf.x = np.zeros(4)
        kf.P = np.diag([100.0, 100.0, 10.0, 10.0])
        t0 = time.perf_counter()
        for z in zs:
            kf.predict()
            kf.update(z)
        times.append((time.perf_counter() - t0) / steps * 1e9)
    return float(np.median(times))


def bench_numpy_pf(n, steps, repeats, q=0.5, dt=1.0, r=9.0):
    zs = measurements(steps)
    times = []
    for rep in range(repeats):
        rng = np.random.default_rng(7 + rep)
        x = rng.normal([0, 0, 1.2, 0.5], [3, 3, 1, 1], size=(n, 4))
        lw = np.zeros(n)
        sa = math.sqrt(q) * dt
        sp = 0.5 * dt * sa
        t0 = time.perf_counter()
        for z in zs:
            a = rng.standard_normal((n, 2))
            x[:, 0:2] += x[:, 2:4] * dt + sp * a
            x[:, 2:4] += sa * a
            d = x[:, 0:2] - z
            lw = lw - 0.5 * (d[:, 0] ** 2 + d[:, 1] ** 2) / r
            lw -= lw.max()
            w = np.exp(lw)
            w /= w.sum()
            if 1.0 / np.sum(w * w) < n / 2:
                positions = (rng.random() + np.arange(n)) / n
                idx = np.searchsorted(np.cumsum(w), positions)
                np.minimum(idx, n - 1, out=idx)
                x = x[idx]
                lw = np.zeros(n)
        times.append((time.perf_counter() - t0) / (steps * n) * 1e9)
    return float(np.median(times))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ekf-steps", type=int, default=20000)
    p.add_argument("--particles", type=int, default=100000)
    p.add_argument("--pf-steps", type=int, default=20)
    p.add_argument("--repeats", type=int, default=5)
    a = p.parse_args()
    print(json.dumps({"filterpy_ekf_ns": bench_filterpy(a.ekf_steps, a.repeats),
                      "numpy_pf_ns": bench_numpy_pf(a.particles, a.pf_steps, max(3, a.repeats // 2))}))


if __name__ == "__main__":
    main()
