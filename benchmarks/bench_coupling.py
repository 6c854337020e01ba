#!/usr/bin/env python
"""Coupled Gibbs chains: meeting times per coupling and seconds per single / coupled sweep.

    python benchmarks/bench_coupling.py            # full run (>= 100 pairs per coupling)
    python benchmarks/bench_coupling.py --quick    # 30 pairs, lower caps
    python benchmarks/bench_coupling.py --pgsm     # only: OT-Gibbs alone vs OT-Gibbs + PGSM, gene data

Reproduces seed 000's comparison on
  (i)  its App. B.1 DPMM setting: n = 150, D = 2, 4 simulated components, alpha = 0.2,
       Sigma0 = 2.5 I, Sigma1 = 2 I (one simulated data set, fixed seed);
  (ii) the gene data shipped as ``pmp.datasets.load_gene()`` (n = 200, D = 50), sigma0 = 0.5,
       sigma = 1.3, alpha = 1.
For each coupling (ot, maximal, crn) it runs pairs with ``pmp.sample_unbiased`` (k = m = 0, so a
pair stops when it meets; max_iter caps the label-based couplings) on all cores and reports the
meeting-time distribution. Sweep times are medians over the sweeps of pairs before they meet
(the realistic, costly phase), measured in this process after warm-up; the single-chain figure
is the same persistent-state sweep on the same states. Prints tables; never fails.

With ``--pgsm`` it instead compares, on the gene data, OT-coupled Gibbs alone with OT-coupled
Gibbs + 1 or 5 CRN-coupled PGSM moves per iteration (20 particles, uniform anchors): meeting
times in iterations *and* in seconds, since an iteration with PGSM moves costs more.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import os
import platform
import time

import numpy as np
import pymc as pm

import pymc_partitions as pmp
from pymc_partitions.coupling.parallel import UnbiasedJob, run_pairs
from pymc_partitions.coupling.split_merge import pgsm_settings
from pymc_partitions.coupling.sweep import GibbsSweeps
from pymc_partitions.pymc.terms import PartitionTerms
from pymc_partitions.priors import sample_sequential

COUPLINGS = ["ot", "maximal", "crn"]
TARGETS = {"B.1 DPMM": 0.6e-3, "gene": 2e-3}  # seconds per OT-coupled sweep


def b1_data(seed=0, n=150, k=4):
    """Seed 000 App. B.1: means ~ N(0, 2.5 I), weights ~ Dir(0.2), points ~ N(mean, 2 I)."""
    rng = np.random.default_rng(seed)
    means = rng.normal(0.0, np.sqrt(2.5), size=(k, 2))
    weights = rng.dirichlet(np.full(k, 0.2))
    z = rng.choice(k, size=n, p=weights)
    return means[z] + rng.normal(0.0, np.sqrt(2.0), size=(n, 2))


def models():
    y = b1_data()
    with pm.Model() as b1:
        z = pmp.Partition("z", pmp.CRP(0.2), n=len(y))
        pmp.NormalNormal("y", partition=z, mu0=0.0, sigma0=np.sqrt(2.5), sigma=np.sqrt(2.0), observed=y)
    g = pmp.datasets.load_gene()
    with pm.Model() as gene:
        z = pmp.Partition("z", pmp.CRP(1.0), n=len(g))
        pmp.NormalNormal("y", partition=z, mu0=0.0, sigma0=0.5, sigma=1.3, observed=g)
    return {"B.1 DPMM": b1, "gene": gene}


def fmt_time(s):
    return f"{s * 1e6:.0f} us" if s < 1e-3 else f"{s * 1e3:.2f} ms"


def sweep_times(model, coupling, pairs, max_sweeps, seed=0):
    """Median seconds per coupled sweep before meeting, and per single sweep on the same states."""
    terms = PartitionTerms(model, "z")
    params, fam = terms.kernel_inputs(model.initial_point())
    kernel = GibbsSweeps(fam, terms.prior_code, params, coupling=coupling)
    rng = np.random.default_rng(seed)
    n = fam.data.shape[0]
    coupled, single, ks = [], [], []
    for _ in range(pairs):
        x = kernel.start(sample_sequential(terms.prior_code, params, rng.random(n)))
        y = kernel.start(sample_sequential(terms.prior_code, params, rng.random(n)))
        inter = kernel.intersections(x, y)
        for _ in range(max_sweeps):
            if np.array_equal(x.labels(), y.labels()):
                break
            r = kernel.random_numbers(rng)
            lx = x.labels()
            t0 = time.perf_counter()
            inter = kernel.coupled_sweep(x, y, inter, r)
            coupled.append(time.perf_counter() - t0)
            ks.append(max(x.n_active, y.n_active))
            s = kernel.start(lx)
            t0 = time.perf_counter()
            kernel.sweep(s, r)
            single.append(time.perf_counter() - t0)
    return np.median(coupled), np.median(single), (min(ks), max(ks)) if ks else (0, 0), len(coupled)


class TimedJob(UnbiasedJob):
    """An UnbiasedJob that also records each pair's CPU seconds (``result.cpu``): on a busy
    machine the workers' wall time overstates the cost."""

    def run(self, seed):
        c0 = time.process_time()
        result = super().run(seed)
        result.cpu = time.process_time() - c0
        return result


def pgsm_comparison(pairs, cap, cores=2):
    """Meeting times on the gene data: OT-Gibbs alone vs OT-Gibbs + PGSM moves (prior-drawn
    starts, k = m = 0 so a pair stops when it meets; the same seeds for every kernel)."""
    model = models()["gene"]
    terms = PartitionTerms(model, "z")
    params, fam = terms.kernel_inputs(model.initial_point())
    kernels = {"OT-Gibbs": None, "OT-Gibbs + 1 PGSM": 1, "OT-Gibbs + 5 PGSM": 5}
    print(f"\n## Gene data: OT-Gibbs alone vs + PGSM moves (20 particles, annealed, uniform anchors), "
          f"{pairs} pairs each, cap {cap}, {cores} worker processes\n")
    print("| kernel | tau 10/25/50/75/90% | max | met | CPU per iteration | CPU s to meet 50/90% | "
          "CPU s (all pairs) | wall s |")
    print("|---|---|---|---|---|---|---|---|")

    def job(moves, max_iter):
        return TimedJob(fam, terms.prior_code, params, n_clusters_h, 0, 0, max_iter=max_iter, coupling="ot",
                        init="prior", pgsm=pgsm_settings(moves))

    with cf.ProcessPoolExecutor(cores) as pool:
        run_pairs(job(5, 20), n_pairs=4 * cores, random_seed=99, executor=pool)  # load compiled code in workers
        for name, moves in kernels.items():
            t0 = time.perf_counter()
            report = run_pairs(job(moves, cap), n_pairs=pairs, random_seed=1, executor=pool)
            wall = time.perf_counter() - t0
            res = [report.results[p] for p in sorted(report.results)]
            met = np.array([r.met for r in res])
            taus = np.array([r.tau if r.met else cap for r in res], float)  # unmet count at the cap: lower bounds
            cpu = np.array([r.cpu for r in res])
            per_iter = cpu.sum() / sum(r.iterations for r in res)
            to_meet = np.where(met, cpu, np.inf)
            s50, s90 = np.quantile(to_meet, [0.5, 0.9], method="higher")

            def fmt(v):
                return f">={cap}" if v >= cap else f"{v:.0f}"

            def fmt_s(v):
                return "not met" if not np.isfinite(v) else f"{v:.2f}"

            qs = np.quantile(taus, [0.1, 0.25, 0.5, 0.75, 0.9])
            print(f"| {name} | {'/'.join(fmt(q) for q in qs)} | {fmt(taus.max())} | {met.mean():.0%} | "
                  f"{fmt_time(per_iter)} | {fmt_s(s50)} / {fmt_s(s90)} | {cpu.sum():.1f} | {wall:.1f} |", flush=True)


def n_clusters_h(labels):
    return np.array([labels.max() + 1.0])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--pgsm", action="store_true", help="only the OT-Gibbs vs OT-Gibbs + PGSM comparison")
    args = parser.parse_args()
    if args.pgsm:
        print(f"# bench_coupling --pgsm{' --quick' if args.quick else ''}: {platform.python_version()}, "
              f"pymc {pm.__version__}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}")
        pgsm_comparison(30 if args.quick else 100, 300 if args.quick else 1000)
        return
    pairs = 30 if args.quick else 100
    caps = {"B.1 DPMM": 300 if args.quick else 1000, "gene": 200 if args.quick else 1000}
    print(f"# bench_coupling ({'quick' if args.quick else 'full'}): {platform.python_version()}, "
          f"pymc {pm.__version__}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}")
    all_models = models()
    # warm up the compiled code
    for model in all_models.values():
        for c in COUPLINGS:
            sweep_times(model, c, 1, 2)

    print("\n## Seconds per sweep (median over sweeps before meeting)\n")
    print("| data | coupling | coupled sweep | single sweep | coupled / single | K range | sweeps | target | status |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, model in all_models.items():
        for c in COUPLINGS:
            coupled, single, ks, count = sweep_times(model, c, 5 if args.quick else 20, 50)
            target = TARGETS[name] if c == "ot" else None
            status = "" if target is None else ("met" if coupled <= target else f"MISSED x{coupled / target:.1f}")
            print(f"| {name} | {c} | {fmt_time(coupled)} | {fmt_time(single)} | {coupled / single:.2f} | "
                  f"{ks[0]}-{ks[1]} | {count} | {fmt_time(target) if target else '-'} | {status} |")

    print(f"\n## Meeting times ({pairs} pairs per coupling, prior-drawn starts, all cores)\n")
    print("| data | coupling | median tau | quartiles | max | met | cap | wall seconds |")
    print("|---|---|---|---|---|---|---|---|")
    for name, model in all_models.items():
        for c in COUPLINGS:
            t0 = time.perf_counter()
            result = pmp.sample_unbiased(model, h=pmp.h.n_clusters, n_pairs=pairs, coupling=c, k=0, m=0,
                                         max_iter=caps[name], random_seed=1, progressbar=False)
            wall = time.perf_counter() - t0
            meeting = result["meeting"]
            tau = meeting["tau"].values
            met = meeting["met"].values
            taus = np.where(met, tau, caps[name])  # unmet pairs count at the cap: quantiles are lower bounds
            q1, med, q3 = np.quantile(taus, [0.25, 0.5, 0.75])

            def fmt(v, cap=caps[name]):
                return f">={cap}" if v >= cap else f"{v:.0f}"

            print(f"| {name} | {c} | {fmt(med)} | {fmt(q1)}-{fmt(q3)} | {fmt(taus.max())} | "
                  f"{met.mean():.0%} | {caps[name]} | {wall:.1f} |")


if __name__ == "__main__":
    import warnings

    warnings.filterwarnings("ignore", message=".*did not meet")
    main()
