#!/usr/bin/env python
"""Cost of a ``pmp.NonConjugateGibbs`` draw under ``FiniteDirichlet(alpha, k)`` (k slots) against the
same model under ``CRP(alpha)`` (n slots), issue 21: a finite prior's k slots must not make a draw
cost more than the CRP's n slots.

    python benchmarks/bench_nonconjugate_finite.py              # n = 2000, k = 5
    python benchmarks/bench_nonconjugate_finite.py --n 10000

Data: n points in D = 2 around 4 well-separated means; the model is the conjugate one written with
slots, ``mu = pm.Normal("mu", 0, 5, shape=(S, 2))``, ``pm.Normal("y", mu[z], 1.0, observed=y)``, S = n
(CRP) or k (FiniteDirichlet). Both steps start from the true labels after warm-up draws (compilation
excluded) and are timed in CPU seconds (process_time) in the same process, interleaved. Prints a
table; never fails.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import pymc as pm

import pymc_partitions as pmp
from pymc_partitions.pymc.compat import setup_chain


def data(n, k, seed=0):
    rng = np.random.default_rng(seed)
    means = rng.normal(0.0, 6.0, (k, 2))
    labels = np.unique(np.sort(rng.integers(0, k, n)), return_inverse=True)[1]
    return means[labels] + rng.normal(size=(n, 2)), labels


def step_for(prior, slots, y, labels, m):
    n, k = len(y), labels.max() + 1
    with pm.Model() as model:
        z = pmp.Partition("z", prior, n=n)
        mu = pm.Normal("mu", 0.0, 5.0, shape=(slots, 2))
        pm.Normal("y", mu[z], 1.0, observed=y)
    step = pmp.NonConjugateGibbs([model["z"]], model=model, m=m)
    setup_chain(step, 0)
    point = model.initial_point(0)
    point["z"] = labels.astype(point["z"].dtype)
    point["mu"][:k] = np.array([y[labels == b].mean(0) for b in range(k)])
    for _ in range(3):
        point, _ = step.step(point)
    step.stop_tuning()
    return step, point


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--k", type=int, default=5, help="slots of the finite Dirichlet prior")
    parser.add_argument("--m", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    y, labels = data(args.n, 4)
    steps = {"CRP(1.0), n slots": step_for(pmp.CRP(1.0), args.n, y, labels, args.m),
             f"FiniteDirichlet(1.0, {args.k}), {args.k} slots": step_for(pmp.FiniteDirichlet(1.0, args.k), args.k, y,
                                                                         labels, args.m)}
    times = {name: [] for name in steps}
    clusters = {name: [] for name in steps}
    for _ in range(args.repeats):
        for name, (step, point) in steps.items():
            t = time.process_time()
            point, stats = step.step(point)
            times[name].append(time.process_time() - t)
            clusters[name].append(stats[0]["n_clusters"])
            steps[name] = (step, point)
    print(f"n = {args.n}, D = 2, true K = 4, m = {args.m}, repeats = {args.repeats}, "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"{'prior':40s} {'CPU ms / draw (median)':>24s} {'ratio':>8s} {'K (mean)':>9s}")
    base = None
    for name in steps:
        med = np.median(times[name])
        base = med if base is None else base
        print(f"{name:40s} {1e3 * med:24.2f} {med / base:8.2f} {np.mean(clusters[name]):9.1f}")


if __name__ == "__main__":
    main()
