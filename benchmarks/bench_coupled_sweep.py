#!/usr/bin/env python
"""CPU time of one OT-coupled Gibbs sweep (two chains) against one single-chain sweep (issue 22).

    python benchmarks/bench_coupled_sweep.py            # 2 pairs x 20 timed sweeps per data set
    python benchmarks/bench_coupled_sweep.py --quick    # 1 pair x 8 sweeps

Data (both with conjugate Normal likelihoods, CRP prior):
  * gene: ``pmp.datasets.load_gene()`` (n = 200, D = 50), CRP(1), sigma0 = 0.5, sigma = 1.3;
  * 2-D mixture: seed 000 App. B.1's generator at n = 10^4 (4 components, Dirichlet(0.2)
    weights, means ~ N(0, 2.5 I), noise 2 I), CRP(0.2), sigma0 = sqrt(2.5), sigma = sqrt(2).
Each pair starts from two independent prior draws and runs a few coupled sweeps untimed, so the
timed sweeps are the costly phase (two different partitions, not yet met). For every timed
coupled sweep the single-chain figure is the mean of one single-chain sweep of each chain's
state before it, with the same random numbers (so 2.0 is the floor: the coupled sweep updates
two chains). Times are process_time (CPU) summed over the timed sweeps, in this process, after
warm-up; the ratio is coupled / single. Prints a table; never fails.
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np

import pymc as pm

import pymc_partitions as pmp
from pymc_partitions.coupling.sweep import GibbsSweeps
from pymc_partitions.pymc.terms import PartitionTerms
from pymc_partitions.priors import sample_sequential


def mixture_2d(n, seed=0, k=4):
    """Seed 000 App. B.1: means ~ N(0, 2.5 I), weights ~ Dir(0.2), points ~ N(mean, 2 I)."""
    rng = np.random.default_rng(seed)
    means = rng.normal(0.0, np.sqrt(2.5), size=(k, 2))
    weights = rng.dirichlet(np.full(k, 0.2))
    z = rng.choice(k, size=n, p=weights)
    return means[z] + rng.normal(0.0, np.sqrt(2.0), size=(n, 2))


def kernels(coupling="ot"):
    """{name: GibbsSweeps} for the two data sets."""
    out = {}
    g = pmp.datasets.load_gene()
    y = mixture_2d(10_000)
    for name, data, alpha, sigma0, sigma in (("gene", g, 1.0, 0.5, 1.3),
                                             ("2-D mixture n=1e4", y, 0.2, np.sqrt(2.5), np.sqrt(2.0))):
        with pm.Model() as model:
            z = pmp.Partition("z", pmp.CRP(alpha), n=len(data))
            pmp.NormalNormal("y", partition=z, mu0=0.0, sigma0=sigma0, sigma=sigma, observed=data)
        terms = PartitionTerms(model, "z")
        params, fam = terms.kernel_inputs(model.initial_point())
        out[name] = (GibbsSweeps(fam, terms.prior_code, params, coupling=coupling), terms.prior_code, params)
    return out


def measure(kernel, prior_code, params, pairs, sweeps, burn=3, seed=0):
    """(coupled CPU s, single CPU s, timed sweeps, K range): sums over the timed sweeps."""
    rng = np.random.default_rng(seed)
    n = kernel.n
    coupled = single = 0.0
    count = 0
    ks = []
    for _ in range(pairs):
        x = kernel.start(sample_sequential(prior_code, params, rng.random(n)))
        y = kernel.start(sample_sequential(prior_code, params, rng.random(n)))
        inter = kernel.intersections(x, y)
        for t in range(burn + sweeps):
            if np.array_equal(x.labels(), y.labels()):
                break
            r = kernel.random_numbers(rng)
            lx, ly = x.labels(), y.labels()
            c0 = time.process_time()
            inter = kernel.coupled_sweep(x, y, inter, r)
            c1 = time.process_time()
            if t < burn:
                continue
            sx, sy = kernel.start(lx), kernel.start(ly)
            c2 = time.process_time()
            kernel.sweep(sx, r)
            kernel.sweep(sy, r)
            c3 = time.process_time()
            coupled += c1 - c0
            single += (c3 - c2) / 2
            count += 1
            ks.append(max(x.n_active, y.n_active))
    return coupled, single, count, (min(ks), max(ks)) if ks else (0, 0)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    pairs, sweeps = (1, 8) if args.quick else (2, 20)
    print(f"# bench_coupled_sweep{' --quick' if args.quick else ''}: Python {platform.python_version()}, "
          f"pymc {pm.__version__}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}")
    ks = kernels()
    for kernel, code, params in ks.values():  # warm up the compiled code
        measure(kernel, code, params, 1, 1, burn=0)
    print("\n| data | n | OT-coupled sweep (CPU) | single sweep (CPU) | coupled / single | K range | timed sweeps |")
    print("|---|---|---|---|---|---|---|")
    for name, (kernel, code, params) in ks.items():
        c, s, count, (k0, k1) = measure(kernel, code, params, pairs, sweeps)
        if count == 0:
            print(f"| {name} | {kernel.n} | - | - | (met before timing) | - | 0 |")
            continue
        print(f"| {name} | {kernel.n} | {c / count * 1e3:.3f} ms | {s / count * 1e3:.3f} ms | {c / s:.2f} | "
              f"{k0}-{k1} | {count} |", flush=True)
    print(f"\nload at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
