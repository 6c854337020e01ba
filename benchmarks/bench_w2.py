#!/usr/bin/env python
"""Wasserstein ground costs and plug-in W2: seconds per cost matrix and per exact solve.

    python benchmarks/bench_w2.py            # full run (~1 min here)
    python benchmarks/bench_w2.py --quick    # fewer repeats, no n = 2000 solves (~20 s)

1. ``mirkin_cost_matrix`` (diagnostics/partition_cost.py) between two samples of 500 partitions of
   n = 1000 items (target <= 1 s), and the symmetric case ``mirkin_cost_matrix(a)``. The draws are
   realistic posterior-like samples: perturbations of one CRP(alpha = 4) partition (~20 blocks),
   each draw reassigning 2-20 % of the items CRP-style (to the block of a random item, or rarely
   to a new block). Also with the items sorted by block (long runs of one contingency cell, the
   worst case for the counting loop) and the plug-in W2^2 between the two partition samples.
2. Plug-in W2^2 between two equal-weight samples of n points in R^d (cost matrix + exact solve),
   n = 1000 and 2000, d = 2 and 50 (target n = 1000, d = 50 <= 0.2 s), with
   ``diagnostics.wasserstein.plugin_w2`` and ``squared_euclidean`` if that module exists, and
   with ``ot.emd2(a, b, M, numItermax=10**7)`` directly for reference.

Everything runs in one process after warm-up calls, so numba compilation is excluded (the first
call, which loads or compiles the cached kernels, is reported separately). Times are wall-clock
medians over repeats with [min, max]; the cost kernels use all cores. Prints markdown tables;
never fails.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
import traceback

import numpy as np

# measure the code next to this script, not whichever copy of the package is installed
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

TARGET_COST = 1.0  # s, 500 x 500 draws at n = 1000
TARGET_W2 = 0.2  # s, plug-in W2^2 at n = 1000, d = 50


def machine_info():
    import numba  # noqa: PLC0415

    cpu = platform.processor() or "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        load = "?"
    try:
        import ot  # noqa: PLC0415

        pot = ot.__version__
    except ImportError:
        pot = "not installed"
    print("## Machine\n")
    print(f"- python {platform.python_version()} ({platform.platform()})")
    print(f"- CPU: {cpu}; {os.cpu_count()} cores; numba threads: {numba.get_num_threads()}")
    print(f"- load average (1, 5, 15 min): {load}")
    print(f"- numpy {np.__version__}, numba {numba.__version__}, POT {pot}")
    print()


def timed(fn, repeats):
    """(median, min, max) wall seconds of ``fn()`` over ``repeats`` calls, and the last result."""
    times = []
    out = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times)), min(times), max(times), out


def fmt(s):
    return f"{s * 1e3:.1f} ms" if s < 1 else f"{s:.2f} s"


def fmt_row(med, lo, hi):
    return f"{fmt(med)} [{fmt(lo)}, {fmt(hi)}]"


def crp(n, alpha, rng):
    """One CRP(alpha) partition of n items (canonical labels)."""
    labels = np.empty(n, np.int64)
    sizes = []
    for i in range(n):
        w = np.array(sizes + [alpha], float)
        k = int(rng.choice(len(w), p=w / w.sum()))
        if k == len(sizes):
            sizes.append(0)
        sizes[k] += 1
        labels[i] = k
    return labels


def perturbed_draws(base, r, alpha, rng):
    """r draws near ``base``: each reassigns a fraction U(0.02, 0.2) of its items, to the block of
    a uniformly random item (size-biased, as in a CRP) or, with probability alpha / (n + alpha),
    to a new block."""
    from pymc_partitions.partition import canonicalize  # noqa: PLC0415

    n = base.shape[0]
    out = np.empty((r, n), np.int64)
    for s in range(r):
        z = base.copy()
        moved = np.nonzero(rng.random(n) < rng.uniform(0.02, 0.2))[0]
        new = z[rng.integers(0, n, moved.size)]
        fresh = rng.random(moved.size) < alpha / (n + alpha)
        new[fresh] = z.max() + 1 + np.arange(fresh.sum())
        z[moved] = new
        out[s] = canonicalize(z)
    return out


def bench_partitions(quick):
    from pymc_partitions.diagnostics.partition_cost import mirkin_cost_matrix  # noqa: PLC0415
    from pymc_partitions.partition import mirkin_distance  # noqa: PLC0415

    rng = np.random.default_rng(20261123)
    n, r, alpha = 1000, 500, 4.0
    base = crp(n, alpha, rng)
    a = perturbed_draws(base, r, alpha, rng)
    b = perturbed_draws(base, r, alpha, rng)
    ks = np.array([np.unique(x).size for x in np.vstack([a, b])])
    repeats = 3 if quick else 7

    t0 = time.perf_counter()
    mirkin_cost_matrix(a[:3], b[:2])
    mirkin_cost_matrix(a[:3])
    first = time.perf_counter() - t0
    check = mirkin_cost_matrix(a[:20], b[:20])
    ok = all(check[i, j] == mirkin_distance(a[i], b[j]) for i in range(20) for j in range(20))

    order = np.argsort(base, kind="stable")  # items sorted by base block: long runs of one cell
    cases = [
        (f"`mirkin_cost_matrix(a, b)`, {r} x {r}", lambda: mirkin_cost_matrix(a, b), r * r),
        (f"`mirkin_cost_matrix(a)`, {r} draws (symmetric)", lambda: mirkin_cost_matrix(a), r * (r - 1) // 2),
        (f"`mirkin_cost_matrix(a, b)`, {r} x {r}, items sorted by block",
         lambda: mirkin_cost_matrix(a[:, order], b[:, order]), r * r),
    ]
    print(f"## 1. Partition cost matrix (n = {n}, K = {ks.min()}..{ks.max()} blocks, median {np.median(ks):.0f})\n")
    print(f"First call (load or compile the cached kernels): {fmt(first)}. "
          f"Agrees with `partition.mirkin_distance` on 400 pairs: {ok}.\n")
    print("| case | pairs | median [min, max] | per pair | target |")
    print("|---|---:|---|---:|---|")
    for name, fn, pairs in cases:
        med, lo, hi, _ = timed(fn, repeats)
        target = ""
        if name == cases[0][0]:
            target = f"<= {fmt(TARGET_COST)}: {'met' if med <= TARGET_COST else 'MISSED'}"
        print(f"| {name} | {pairs} | {fmt_row(med, lo, hi)} | {med / pairs * 1e9:.0f} ns | {target} |")

    try:
        from pymc_partitions.diagnostics.wasserstein import plugin_w2  # noqa: PLC0415
    except ImportError:
        plugin_w2 = None
    if plugin_w2 is not None:
        def w2_partitions():
            return plugin_w2(mirkin_cost_matrix(a, b))

        med, lo, hi, val = timed(w2_partitions, repeats)
        print(f"| `plugin_w2(mirkin_cost_matrix(a, b))` (cost + exact solve) | {r * r} | {fmt_row(med, lo, hi)} | "
              f"{med / (r * r) * 1e9:.0f} ns | value {_scalar(val):.4g} |")
    print()


def _scalar(val):
    """W2^2 from plugin_w2's return value (a number, or a tuple / object that starts with it)."""
    for attr in ("w2", "value", "estimate"):
        if hasattr(val, attr):
            return float(getattr(val, attr))
    if isinstance(val, tuple):
        return float(val[0])
    return float(val)


def bench_plugin_w2(quick):
    import ot  # noqa: PLC0415

    try:
        from pymc_partitions.diagnostics.wasserstein import plugin_w2, squared_euclidean  # noqa: PLC0415
    except ImportError as err:
        plugin_w2 = squared_euclidean = None
        missing = err
    sizes = [(1000, 2), (1000, 50)] + ([] if quick else [(2000, 2), (2000, 50)])
    repeats = 3 if quick else 5
    rng = np.random.default_rng(7)

    print("## 2. Plug-in W2^2 between two equal-weight samples (cost matrix + exact solve)\n")
    if plugin_w2 is None:
        print(f"wasserstein module not available yet ({missing}); timing `ot.emd2` only.\n")
    print("| n | d | method | median [min, max] | W2^2 | target |")
    print("|---:|---:|---|---|---:|---|")
    for n, d in sizes:
        x = rng.normal(size=(n, d))
        y = rng.normal(loc=0.5, size=(n, d))
        w = np.full(n, 1.0 / n)

        def direct():
            m = ot.dist(x, y, metric="sqeuclidean")
            return ot.emd2(w, w, m, numItermax=10**7)

        direct()
        med, lo, hi, val = timed(direct, repeats)
        print(f"| {n} | {d} | `ot.emd2(..., numItermax=10**7)` on `ot.dist` | {fmt_row(med, lo, hi)} | "
              f"{float(val):.4g} | |")
        if plugin_w2 is None:
            continue

        def ours():
            return plugin_w2(squared_euclidean(x, y))

        try:
            ours()
            med, lo, hi, val = timed(ours, repeats)
        except Exception as err:  # noqa: BLE001 - a benchmark reports, never fails
            print(f"| {n} | {d} | `plugin_w2(squared_euclidean(x, y))` | failed: {type(err).__name__}: {err} | | |")
            continue
        target = ""
        if (n, d) == (1000, 50):
            target = f"<= {fmt(TARGET_W2)}: {'met' if med <= TARGET_W2 else 'MISSED'}"
        print(f"| {n} | {d} | `plugin_w2(squared_euclidean(x, y))` | {fmt_row(med, lo, hi)} | "
              f"{_scalar(val):.4g} | {target} |")
    print()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats, no n = 2000 solves")
    args = parser.parse_args()
    t0 = time.perf_counter()
    try:
        machine_info()
    except Exception:  # noqa: BLE001
        traceback.print_exc(file=sys.stdout)
    for section in (bench_partitions, bench_plugin_w2):
        try:
            section(args.quick)
        except Exception:  # noqa: BLE001 - a benchmark reports, never fails
            print(f"\n{section.__name__} failed:\n```")
            traceback.print_exc(file=sys.stdout)
            print("```\n")
    print(f"Total wall time: {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
