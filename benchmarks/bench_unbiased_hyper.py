"""Meeting times of coupled chains with random hyperparameters (issue 22, first target).

    python benchmarks/bench_unbiased_hyper.py            # 200 pairs per model (sigma: 60)
    python benchmarks/bench_unbiased_hyper.py --quick    # 40 pairs per model (sigma: 15)

Gene data (``pmp.datasets.load_gene()``, n = 200, D = 50; the model of bench_coupling.py:
NormalNormal with sigma0 = 0.5, sigma = 1.3), OT coupling, ``init="one_block"`` (seed 000's
start), k = m = 0 (only the meeting matters), one process. Three models:

* alpha fixed at 1 (the baseline);
* alpha ~ Gamma(1, 1) (prior mean 1; the coupled Escobar-West step);
* alpha fixed at 1 and sigma ~ LogNormal(log 1.3, 0.2) (the coupled random-walk Metropolis step,
  ``hyper_scale`` 0.02 on log sigma: its posterior sd there is about 0.01).

Prints the meeting-time median, 90 % and 99 % quantiles and maximum (iterations) and the CPU
seconds per pair (process_time, this process), and the ratio of the medians to the baseline's
(target: random alpha within 2x).
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np
import pymc as pm

import pymc_partitions as pmp


def models():
    g = pmp.datasets.load_gene()
    with pm.Model() as fixed:
        z = pmp.Partition("z", pmp.CRP(1.0), n=len(g))
        pmp.NormalNormal("y", partition=z, mu0=0.0, sigma0=0.5, sigma=1.3, observed=g)
    with pm.Model() as random_alpha:
        alpha = pm.Gamma("alpha", 1.0, 1.0)
        z = pmp.Partition("z", pmp.CRP(alpha), n=len(g))
        pmp.NormalNormal("y", partition=z, mu0=0.0, sigma0=0.5, sigma=1.3, observed=g)
    with pm.Model() as random_sigma:
        sigma = pm.LogNormal("sigma", np.log(1.3), 0.2)
        z = pmp.Partition("z", pmp.CRP(1.0), n=len(g))
        pmp.NormalNormal("y", partition=z, mu0=0.0, sigma0=0.5, sigma=sigma, observed=g)
    return {"alpha fixed": fixed, "alpha ~ Gamma(1, 1)": random_alpha, "sigma ~ LogNormal": random_sigma}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    pairs = 40 if args.quick else 200
    print(f"gene data, OT coupling, init one_block, k = m = 0, 1 process; pymc {pm.__version__}, "
          f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}")
    base = None
    for name, model in models().items():
        n_pairs = max(10, pairs * 3 // 10) if "sigma" in name else pairs
        # warm-up (compilation) outside the clock
        pmp.sample_unbiased(model, h=pmp.h.n_clusters, n_pairs=1, k=0, m=0, cores=1, init="one_block",
                            random_seed=99, progressbar=False, hyper_scale=0.02)
        c0 = time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = pmp.sample_unbiased(model, h=pmp.h.n_clusters, n_pairs=n_pairs, k=0, m=0, cores=1,
                                         init="one_block", random_seed=args.seed, progressbar=False,
                                         hyper_scale=0.02, max_iter=5000)
        cpu = time.process_time() - c0
        tau = result["meeting"]["tau"].values
        met = tau >= 0
        q = np.quantile(tau[met], [0.5, 0.9, 0.99]) if met.any() else [np.nan] * 3
        base = q[0] if base is None else base
        print(f"{name:22s} pairs {n_pairs:4d} met {met.sum():4d}  tau median {q[0]:6.1f}  90% {q[1]:6.1f}  "
              f"99% {q[2]:6.1f}  max {tau.max():5d}  CPU/pair {cpu / n_pairs:7.3f} s  median / fixed "
              f"{q[0] / base:5.2f}")
    print(f"load at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
