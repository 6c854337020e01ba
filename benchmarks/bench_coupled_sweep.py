#!/usr/bin/env python
"""CPU time of one coupled Gibbs sweep (two chains) against one single-chain sweep, and the
meeting times and CPU to meet of the couplings (issue 22).

    python benchmarks/bench_coupled_sweep.py            # 2 pairs x 20 timed sweeps per data set and coupling
    python benchmarks/bench_coupled_sweep.py --quick    # 1 pair x 8 sweeps
    python benchmarks/bench_coupled_sweep.py --meet 100 # also: meeting times of 100 pairs per data, start, coupling

Data (both with conjugate Normal likelihoods, CRP prior):
  * gene: ``pmp.datasets.load_gene()`` (n = 200, D = 50), CRP(1), sigma0 = 0.5, sigma = 1.3;
  * 2-D mixture: seed 000 App. B.1's generator at n = 10^4 (4 components, Dirichlet(0.2)
    weights, means ~ N(0, 2.5 I), noise 2 I), CRP(0.2), sigma0 = sqrt(2.5), sigma = sqrt(2).
Each pair starts from two independent prior draws and runs a few coupled sweeps untimed, so the
timed sweeps are the costly phase (two different partitions, not yet met). For every timed
coupled sweep the single-chain figure is the mean of one single-chain sweep of each chain's
state before it, with the same random numbers (so 2.0 is the floor: the coupled sweep updates
two chains). Times are process_time (CPU) summed over the timed sweeps, in this process, after
warm-up; the ratio is coupled / single, for each coupling in ``--couplings`` (default: "ot" and
"aligned").

``--meet P``: P pairs per data set, start and coupling, lag 1 (chain x takes one single sweep
first, as ``sample_unbiased`` does), coupled sweeps until the partitions are equal (cap
``--cap`` sweeps: a pair still apart counts as not met). Starts: two independent prior draws
("prior"), or both chains in one block ("one block"). Pair j of every coupling uses the same
starts and random stream. The 2-D mixture is drawn at n = ``--meet-n`` (default 1000) here: at
n = 10^4 a hundred pairs per coupling take too long on a shared machine. Prints the quantiles of
the meeting times and of the CPU seconds to meet per pair (process_time, this process). Prints
tables; never fails.
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


def kernels(coupling="ot", n_2d=10_000):
    """{name: (GibbsSweeps, prior code, prior params)} for the two data sets."""
    out = {}
    g = pmp.datasets.load_gene()
    y = mixture_2d(n_2d)
    for name, data, alpha, sigma0, sigma in (("gene", g, 1.0, 0.5, 1.3),
                                             ("2-D mixture", y, 0.2, np.sqrt(2.5), np.sqrt(2.0))):
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


def meet(kernel, prior_code, params, start, pairs, cap, seed=1):
    """(meeting times, CPU seconds per pair): lag-1 pairs run until their partitions are equal
    (a pair not met after ``cap`` coupled sweeps gets tau = inf)."""
    taus, cpus = [], []
    for j in range(pairs):
        rng = np.random.default_rng([seed, j])
        n = kernel.n
        if start == "prior":
            x0 = sample_sequential(prior_code, params, rng.random(n))
            y0 = sample_sequential(prior_code, params, rng.random(n))
        else:
            x0 = y0 = np.zeros(n, np.int64)
        c0 = time.process_time()
        x, y = kernel.start(x0), kernel.start(y0)
        kernel.sweep(x, kernel.random_numbers(rng))
        inter = kernel.intersections(x, y)
        tau = np.inf
        for t in range(1, cap + 1):
            inter = kernel.coupled_sweep(x, y, inter, kernel.random_numbers(rng))
            if kernel.distance(x, y, inter) == 0:
                tau = t
                break
        cpus.append(time.process_time() - c0)
        taus.append(tau)
    return np.array(taus), np.array(cpus)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--couplings", nargs="+", default=["ot", "aligned"])
    parser.add_argument("--no-sweep", action="store_true", help="skip the per-sweep cost table")
    parser.add_argument("--meet", type=int, default=0, metavar="PAIRS")
    parser.add_argument("--meet-n", type=int, default=1000)
    parser.add_argument("--cap", type=int, default=5000)
    args = parser.parse_args()
    pairs, sweeps = (1, 8) if args.quick else (2, 20)
    print(f"# bench_coupled_sweep{' --quick' if args.quick else ''}: Python {platform.python_version()}, "
          f"pymc {pm.__version__}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}")
    if not args.no_sweep:
        print("\n| data | n | coupling | coupled sweep (CPU) | single sweep (CPU) | coupled / single | K range "
              "| timed sweeps |")
        print("|---|---|---|---|---|---|---|---|")
        for coupling in args.couplings:
            ks = kernels(coupling)
            for kernel, code, params in ks.values():  # warm up the compiled code
                measure(kernel, code, params, 1, 1, burn=0)
            for name, (kernel, code, params) in ks.items():
                c, s, count, (k0, k1) = measure(kernel, code, params, pairs, sweeps)
                if count == 0:
                    print(f"| {name} | {kernel.n} | {coupling} | - | - | (met before timing) | - | 0 |")
                    continue
                print(f"| {name} | {kernel.n} | {coupling} | {c / count * 1e3:.3f} ms | {s / count * 1e3:.3f} ms | "
                      f"{c / s:.2f} | {k0}-{k1} | {count} |", flush=True)
    if args.meet:
        print(f"\nMeeting times, {args.meet} lag-1 pairs per row (cap {args.cap} sweeps):\n")
        print("| data | n | start | coupling | tau 50/90/99% | max | met | CPU s to meet 50/90/99% "
              "| CPU s per pair (mean) |")
        print("|---|---|---|---|---|---|---|---|---|")
        for start in ("prior", "one block"):
            for coupling in args.couplings:
                ks = kernels(coupling, n_2d=args.meet_n)
                for kernel, code, params in ks.values():
                    measure(kernel, code, params, 1, 1, burn=0)
                for name, (kernel, code, params) in ks.items():
                    taus, cpus = meet(kernel, code, params, start, args.meet, args.cap)
                    met = np.isfinite(taus)
                    # (with pairs not met: order statistics, inf where more than 50/10/1% did not meet)
                    q = np.quantile(taus, [0.5, 0.9, 0.99], method="linear" if met.all() else "higher")
                    c = np.quantile(cpus, [0.5, 0.9, 0.99])
                    print(f"| {name} | {kernel.n} | {start} | {coupling} | {q[0]:.0f}/{q[1]:.0f}/{q[2]:.0f} | "
                          f"{taus.max():.0f} | {met.mean():.0%} | {c[0]:.3f} / {c[1]:.3f} / {c[2]:.3f} | "
                          f"{cpus.mean():.3f} |", flush=True)
    print(f"\nload at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
