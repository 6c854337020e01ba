#!/usr/bin/env python
"""Cost of a collapsed Gibbs sweep of the regression family against NormalNormal at the same n.

    python benchmarks/bench_regression.py            # n = 10^4 (about a minute)
    python benchmarks/bench_regression.py --quick    # n = 2000

Synthetic clusters of regressions: 10 clusters of equal size, covariates N(0, 1) plus an intercept
(p = 2, 5, 10 coefficients), responses from each cluster's line with noise sd 0.3; the sweep starts
from the true labels after two burn-in sweeps. Baselines on the same labels: NormalNormal with
D = 2 (the package's reference sweep) and with D = p + 1 (the same data columns). CPU seconds
(``time.process_time``) per sweep of ``GibbsKernel.step`` (random numbers included), median over
repeats after warm-up (numba compilation excluded); ratios against NormalNormal D = 2 measured in
the same process. Prints the load average; measures, never fails.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from pymc_partitions.families import kernels as K
from pymc_partitions.priors import CRP
from pymc_partitions.samplers.gibbs import GibbsKernel

N_CLUSTERS = 10


def synthetic(n, p, seed=0):
    rng = np.random.default_rng(seed)
    labels = np.arange(n) % N_CLUSTERS
    X = np.column_stack([np.ones(n), rng.standard_normal((n, p - 1))])
    beta = rng.normal(0.0, 3.0, (N_CLUSTERS, p))
    y = np.einsum("np,np->n", X, beta[labels]) + 0.3 * rng.standard_normal(n)
    return labels, X, y


def per_sweep(kernel, labels, reps, seed=1):
    rng = np.random.default_rng(seed)
    for _ in range(2):
        labels = kernel.step(labels, rng)[0]
    times = []
    for _ in range(reps):
        t = time.process_time()
        labels = kernel.step(labels, rng)[0]
        times.append(time.process_time() - t)
    return float(np.median(times)), int(labels.max()) + 1


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    n, reps = (2000, 9) if args.quick else (10_000, 15)
    prior = CRP(1.0)
    print(f"load average at start: {os.getloadavg()[0]:.2f}; n = {n}, {N_CLUSTERS} true clusters, {reps} sweeps each")
    rows = []
    base = None
    for p in (2, 5, 10):
        labels, X, y = synthetic(n, p)
        lr = K.FamilyPack.build([(K.LINEAR_REGRESSION, np.c_[X, y], K.linear_regression_hyper(0.0, 10.0, 2.0, 0.1, p))])
        cases = [("NormalNormal", 2, np.c_[X[:, 1:2] if p > 1 else X, y][:, :2]),
                 ("NormalNormal", p + 1, np.c_[X, y]), ("NormalLinearRegression", p, None)]
        for name, dim, data in cases:
            if name == "NormalNormal" and dim == 2 and base is not None:
                continue
            if name == "NormalNormal":
                pack = K.FamilyPack.build([(K.DIAG_NORMAL, data, K.diag_normal_hyper(0.0, 5.0, 1.0, dim))])
            else:
                pack = lr
            kernel = GibbsKernel(pack, prior.code, prior.kernel_params())
            kernel.step(labels.copy(), np.random.default_rng(0))  # compile
            sec, k = per_sweep(kernel, labels.copy(), reps)
            if base is None:
                base = sec
            rows.append((name, "p" if name.endswith("Regression") else "D", dim, sec, sec / base, k))
    print(f"{'family':<24}{'size':>8}{'ms / sweep (CPU)':>18}{'vs NormalNormal D=2':>22}{'clusters':>10}")
    for name, what, dim, sec, ratio, k in rows:
        print(f"{name:<24}{what + '=' + str(dim):>8}{1e3 * sec:>18.2f}{ratio:>22.2f}{k:>10}")
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
