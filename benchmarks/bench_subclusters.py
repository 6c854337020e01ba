"""Kernel-level screen of the sub-cluster split-merge moves (``samplers/subclusters.py``) against
SAMS moves and Gibbs sweeps alone, without PyMC: what limits the ESS of the number of clusters K
on Old Faithful (issue 20's setting)?

Old Faithful, both columns standardised; NormalInverseWishart(mu0 = 0, kappa0 = 0.1, nu0 = 4,
scale0 = I); CRP(alpha) with alpha either fixed at 1 or ~ Gamma(1, 1) updated after every
repetition by one Escobar-West draw (``samplers/concentration.py``). Each configuration is one
repetition of (``moves`` moves, one Gibbs sweep) per call; 4 chains from random 5-block labels,
200 repetitions of burn-in, then ``--reps`` timed repetitions (``time.process_time``, the
Escobar-West draws and the Python call included, the same for every configuration). Printed:
CPU seconds, bulk ESS of K and of the log joint (ArviZ, over the 4 chains), their rates per CPU
second and per 1000 repetitions, R-hat of K, accepted splits and merges.

Run: ``python benchmarks/bench_subclusters.py`` (about 2 minutes on an idle core);
``--alpha fixed`` or ``--alpha gamma`` for one setting only.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import time

import arviz as az
import numpy as np

import pymc_partitions as pmp
from pymc_partitions.families.kernels import NIW, FamilyPack, niw_hyper
from pymc_partitions.samplers.concentration import escobar_west_log
from pymc_partitions.samplers.gibbs_sams import GibbsSAMSKernel
from pymc_partitions.samplers.subclusters import GibbsSubClusterKernel

CONFIGS = [("gibbs", GibbsSAMSKernel, dict(moves=0)), ("sams x1", GibbsSAMSKernel, dict(moves=1)),
           ("sams x3", GibbsSAMSKernel, dict(moves=3)), ("sub scans=0 x1", GibbsSubClusterKernel, dict(moves=1, scans=0)),
           ("sub scans=1 x1", GibbsSubClusterKernel, dict(moves=1, scans=1)),
           ("sub scans=1 x3", GibbsSubClusterKernel, dict(moves=3, scans=1)),
           ("sub scans=3 x1", GibbsSubClusterKernel, dict(moves=1, scans=3))]


def faithful_pack():
    y = pmp.datasets.load_faithful()
    y = (y - y.mean(0)) / y.std(0)
    return FamilyPack.build([(NIW, y, niw_hyper([0.0, 0.0], 0.1, 4.0, np.eye(2), 2, len(y)))]), len(y)


def run(kernel, n, reps, random_alpha):
    k_trace, lj_trace = np.empty((4, reps)), np.empty((4, reps))
    cpu, counts = 0.0, np.zeros(3, np.int64)
    for c in range(4):
        rng = np.random.default_rng(c + 10)
        labels, log_alpha = rng.integers(0, 5, n), 0.0
        for r in range(200 + reps):
            if r == 200:
                start = time.process_time()
            kernel.prior_params = np.array([math.exp(log_alpha), 0.0, 0.0])
            labels, lj, cnt = kernel.step(labels, rng)
            if random_alpha:
                log_alpha = escobar_west_log(log_alpha, int(labels.max()) + 1, n, 1.0, 1.0, rng)
            if r >= 200:
                k_trace[c, r - 200], lj_trace[c, r - 200] = labels.max() + 1, lj
                counts += cnt
        cpu += time.process_time() - start
    return cpu, float(az.ess(k_trace)), float(az.ess(lj_trace)), float(az.rhat(k_trace)), counts


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=3000, help="timed repetitions per chain")
    parser.add_argument("--alpha", choices=["fixed", "gamma", "both"], default="both")
    args = parser.parse_args(argv)
    pack, n = faithful_pack()
    load = " ".join(open("/proc/loadavg").read().split()[:3]) if os.path.exists("/proc/loadavg") else "n/a"
    print(f"bench_subclusters: Python {platform.python_version()}, load average {load}; Old Faithful (n = {n}), "
          f"4 chains x {args.reps} repetitions")
    for setting in (["fixed", "gamma"] if args.alpha == "both" else [args.alpha]):
        print(f"\nalpha {'fixed at 1' if setting == 'fixed' else '~ Gamma(1, 1), Escobar-West each repetition'}:\n")
        print("| configuration | CPU s | K: ESS / per s / per 1000 reps | log joint: ESS / per s | R-hat K | "
              "accepted splits / merges |")
        print("|---|---|---|---|---|---|")
        for name, cls, kwargs in CONFIGS:
            kernel = cls(pack, 0, np.array([1.0, 0.0, 0.0]), reps=1, **kwargs)  # prior code 0: CRP
            kernel.step(np.zeros(n, np.int64), np.random.default_rng(0))  # compile outside the clock
            cpu, ess_k, ess_lj, rhat_k, counts = run(kernel, n, args.reps, setting == "gamma")
            print(f"| {name} | {cpu:.2f} | {ess_k:.0f} / {ess_k / cpu:.0f} / {1000 * ess_k / (4 * args.reps):.0f} | "
                  f"{ess_lj:.0f} / {ess_lj / cpu:.0f} | {rhat_k:.3f} | {counts[1]} / {counts[2]} |", flush=True)
    load = " ".join(open("/proc/loadavg").read().split()[:3]) if os.path.exists("/proc/loadavg") else "n/a"
    print(f"\nload average at end {load}")


if __name__ == "__main__":
    main()
