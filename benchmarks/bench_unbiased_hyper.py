"""Meeting times of coupled chains with random hyperparameters (issue 22, first target).

    python benchmarks/bench_unbiased_hyper.py            # 200 pairs per model (sigma: 60)
    python benchmarks/bench_unbiased_hyper.py --quick    # 40 pairs per model (sigma: 15)
    python benchmarks/bench_unbiased_hyper.py --pgsm 0 1 --models alpha --pairs 100
        # the alpha models, each with pgsm=None (0) and pgsm=1, 100 pairs each

Gene data (``pmp.datasets.load_gene()``, n = 200, D = 50; the model of bench_coupling.py:
NormalNormal with sigma0 = 0.5, sigma = 1.3), OT coupling, ``init="one_block"`` (seed 000's
start), k = m = 0 (only the meeting matters), one process. Three models:

* alpha fixed at 1 (the baseline);
* alpha ~ Gamma(1, 1) (prior mean 1; the coupled Escobar-West step);
* alpha fixed at 1 and sigma ~ LogNormal(log 1.3, 0.2) (the coupled random-walk Metropolis step,
  ``hyper_scale`` 0.02 on log sigma: its posterior sd there is about 0.01).

``--k-m K M``: also estimate the largest cluster's share with that k and m (the default 0 0
measures the meeting only) and print the estimates' SD and the inefficiency SD^2 x CPU per pair.
``--pgsm K ...``: run each model with K PGSM moves per iteration (``sample_unbiased(pgsm=K)``;
0 means pgsm=None, the default), one row per model and K. ``--models``: which models (``alpha``:
the first two; ``gamma``: the second; ``sigma``: the third; default all). ``--pairs``: pairs per model (the sigma model
runs 30 % of them).

Prints the meeting-time median, 90 % and 99 % quantiles and maximum (iterations), the CPU
seconds per pair and per iteration (process_time, this process; the iterations of chain X), and
the ratio of the medians to the first row's with the same K (target: random alpha within 2x).
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
    parser.add_argument("--pairs", type=int, default=None, help="pairs per model (default 200, --quick 40)")
    parser.add_argument("--pgsm", type=int, nargs="+", default=[0], help="PGSM moves per iteration (0: none)")
    parser.add_argument("--models", choices=["all", "alpha", "gamma", "sigma"], default="all")
    parser.add_argument("--k-m", type=int, nargs=2, metavar=("K", "M"), default=(0, 0),
                        help="k and m of the estimates of the largest share (default 0 0: meeting only)")
    args = parser.parse_args()
    pairs = args.pairs if args.pairs is not None else (40 if args.quick else 200)
    print(f"gene data, OT coupling, init one_block, k = {args.k_m[0]}, m = {args.k_m[1]}, 1 process; "
          f"pymc {pm.__version__}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}")
    picks = {"all": ("fixed", "Gamma", "sigma"), "alpha": ("fixed", "Gamma"), "gamma": ("Gamma",), "sigma": ("sigma",)}
    chosen = {name: model for name, model in models().items() if any(p in name for p in picks[args.models])}
    k, m = args.k_m
    for moves in args.pgsm:
        pgsm = moves or None
        base = None
        for name, model in chosen.items():
            n_pairs = max(10, pairs * 3 // 10) if "sigma" in name else pairs
            # warm-up (compilation) outside the clock
            pmp.sample_unbiased(model, h=pmp.h.n_clusters, n_pairs=1, k=0, m=0, cores=1, init="one_block",
                                random_seed=99, progressbar=False, hyper_scale=0.02, pgsm=pgsm)
            c0 = time.process_time()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                result = pmp.sample_unbiased(model, h={"share": pmp.h.largest_proportion}, n_pairs=n_pairs, k=k,
                                             m=m, cores=1, init="one_block", random_seed=args.seed,
                                             progressbar=False, hyper_scale=0.02, max_iter=max(5000, m), pgsm=pgsm)
            cpu = time.process_time() - c0
            tau = result["meeting"]["tau"].values
            iterations = int(result["meeting"]["iterations"].values.sum())
            met = tau >= 0
            q = np.quantile(tau[met], [0.5, 0.9, 0.99]) if met.any() else [np.nan] * 3
            base = q[0] if base is None else base
            print(f"{name:22s} pgsm {moves}  pairs {n_pairs:4d} met {met.sum():4d}  tau median {q[0]:6.1f}  "
                  f"90% {q[1]:6.1f}  99% {q[2]:6.1f}  max {tau.max():5d}  CPU/pair {cpu / n_pairs:7.3f} s  "
                  f"CPU/iteration {1e3 * cpu / max(iterations, 1):6.2f} ms  median / first row {q[0] / base:5.2f}")
            if m > 0:
                est = result["unbiased"]["share"].values
                sd = float(np.std(est[np.isfinite(est)], ddof=1))
                print(f"{'':22s} k {k} m {m}: share mean {np.nanmean(est):.5f}  SD {sd:.5f}  range "
                      f"[{np.nanmin(est):.4f}, {np.nanmax(est):.4f}]  SD^2 x CPU/pair {sd ** 2 * cpu / n_pairs:.3g}")
    print(f"load at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
