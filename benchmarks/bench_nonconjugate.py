#!/usr/bin/env python
"""One Algorithm 8 draw of ``pmp.NonConjugateGibbs`` against one collapsed Gibbs sweep of the same
model size (issue 21's target: <= 5x at n = 10^4, D = 2, K ~ 10, m = 3).

    python benchmarks/bench_nonconjugate.py            # n = 10^4
    python benchmarks/bench_nonconjugate.py --n 2000   # smaller

The non-conjugate model is the conjugate one written with slots: ``mu = pm.Normal("mu", 0, 5,
shape=(n, 2))``, ``pm.Normal("y", mu[z], 1.0, observed=y)``; the collapsed baseline is
``gibbs_sweeps`` on ``pmp.NormalNormal`` data of the same size (what ``pmp.CollapsedGibbs`` runs),
with its random numbers. Both start from the true labels after warm-up draws (compilation
excluded) and are timed in CPU seconds (process_time) in the same process, interleaved. A draw of
the non-conjugate step is: the label sweep (with its K + m log-likelihood evaluations and one per
opened cluster), the relabelling with a fresh base-measure draw of the free slots, and
``slot_steps`` Metropolis updates of the occupied slots (reported for 1, 2 and the default 10). Prints a table;
never fails on a missed target.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import pymc as pm

import pymc_partitions as pmp
from pymc_partitions.pymc.compat import setup_chain
from pymc_partitions.pymc.terms import PartitionTerms
from pymc_partitions.samplers.gibbs import gibbs_sweeps


def data(n, k, seed=0):
    rng = np.random.default_rng(seed)
    means = rng.normal(0.0, 6.0, (k, 2))
    labels = np.sort(rng.integers(0, k, n))
    labels = np.unique(labels, return_inverse=True)[1]  # canonical (sorted, consecutive)
    return means[labels] + rng.normal(size=(n, 2)), labels


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--m", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    n, k = args.n, args.k
    y, labels = data(n, k)

    with pm.Model() as collapsed:
        z = pmp.Partition("z", pmp.CRP(1.0), n=n)
        pmp.NormalNormal("y", partition=z, mu0=0.0, sigma0=5.0, sigma=1.0, observed=y)
    terms = PartitionTerms(collapsed, "z")
    prior_params, pack = terms.kernel_inputs(collapsed.initial_point(0))
    code = terms.prior_code

    with pm.Model() as nonconj:
        z = pmp.Partition("z", pmp.CRP(1.0), n=n)
        mu = pm.Normal("mu", 0.0, 5.0, shape=(n, 2))
        pm.Normal("y", mu[z], 1.0, observed=y)
    steps = {s: pmp.NonConjugateGibbs([nonconj["z"]], model=nonconj, m=args.m, slot_steps=s) for s in (1, 2, 10)}
    rng = np.random.default_rng(1)
    points = {}
    for s, step in steps.items():
        setup_chain(step, s)
        point = nonconj.initial_point(0)
        point["z"] = labels.astype(point["z"].dtype)
        point["mu"][:k] = np.array([y[labels == b].mean(0) for b in range(k)])
        for _ in range(5):
            point, _ = step.step(point)
        step.stop_tuning()
        points[s] = point

    lab = labels.copy()
    for _ in range(3):
        lab, _ = gibbs_sweeps(lab, pack, code, prior_params, rng.permutation(n)[None], rng.random((1, n)))

    times = {"collapsed": [], **{s: [] for s in steps}}
    clusters = {s: [] for s in steps}
    for _ in range(args.repeats):
        t = time.process_time()
        lab, _ = gibbs_sweeps(lab, pack, code, prior_params, rng.permutation(n)[None], rng.random((1, n)))
        times["collapsed"].append(time.process_time() - t)
        for s, step in steps.items():
            t = time.process_time()
            points[s], stats = step.step(points[s])
            times[s].append(time.process_time() - t)
            clusters[s].append(stats[0]["n_clusters"])
    base = np.median(times["collapsed"])
    print(f"n = {n}, D = 2, true K = {k}, m = {args.m}, repeats = {args.repeats}, "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"{'sampler':40s} {'CPU ms / draw (median)':>24s} {'ratio':>8s} {'K (mean)':>9s}")
    print(f"{'collapsed Gibbs sweep (NormalNormal)':40s} {1e3 * base:24.2f} {1.0:8.2f} {lab.max() + 1:9d}")
    for s in steps:
        med = np.median(times[s])
        print(f"{f'NonConjugateGibbs, slot_steps={s}':40s} {1e3 * med:24.2f} {med / base:8.2f} "
              f"{np.mean(clusters[s]):9.1f}")


if __name__ == "__main__":
    main()
