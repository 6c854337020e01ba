#!/usr/bin/env python
"""Seed 000 Fig. 2B at reduced scale: parallelism vs accuracy of single-chain and coupled-chain
estimates of E[share of the largest cluster | gene data] at a fixed CPU budget per process.

    python benchmarks/bench_parallel_accuracy.py                  # 200 processes x 0.5 CPU s each
    python benchmarks/bench_parallel_accuracy.py --processes 1000 --budget 2 --truth-sweeps 1000000  # fuller
    python benchmarks/bench_parallel_accuracy.py --budget 0.1     # a harder, shorter budget
    python benchmarks/bench_parallel_accuracy.py --truth 0.32074 0.00005   # skip the long chains
    python benchmarks/bench_parallel_accuracy.py --pgsm 1 ...     # + 1 CRN-coupled PGSM move per iteration
    python benchmarks/bench_parallel_accuracy.py --pgsm 1 --single-pgsm 0 1 ...   # both single-chain variants
    python benchmarks/bench_parallel_accuracy.py --pgsm 1 --pairs-only 2000 --wall-limit 1800 ...  # pairs alone: tail
    python benchmarks/bench_parallel_accuracy.py --coupling aligned --lag 200 --k-m 100 1000 --budget 0.16 ...  # lagged pairs

Model: the gene data (``pmp.datasets.load_gene()``, n = 200, D = 50), CRP(1), NormalNormal with
mu0 = 0, sigma0 = 0.5, sigma = 1.3 (as ``bench_coupling.py``); h(z) = size of the largest block / n.
``--data faithful``: Old Faithful, both columns standardised, NIW(0, 0.1, 4, I), CRP(0.33).

``--lag L`` (default 1): the coupled chains run L iterations apart (Jacob et al. 2020). With L at
least the single chain's relaxation time from ``--init``, the bias correction of a pair is about
minus the relaxation excess of its lagging chain, a systematic term with a light tail, instead of
a sum of differences between two chains that are in different states (lag 1).
``--single-burn`` sets the single chains' burn-in (default: k, the coupled chains' burn-in).

Each simulated "process" gets ``--budget`` CPU seconds (``time.process_time`` inside a worker, so a
busy machine slows the run but does not shorten a process's work) for each estimator:

* single chain: Gibbs sweeps (+ ``--single-pgsm`` PGSM moves per iteration; by default as many
  as the coupled chains' ``--pgsm``) from ``--init`` (default one block, as seed 000's runs) until
  the budget is spent; the ergodic average of h over sweeps k .. end (the same burn-in k as the
  coupled chains). ``--single-pgsm 0 1`` runs both variants in every process (a budget each) and
  reports each against the same coupled estimates;
* coupled chains: OT-coupled pairs (``coupling.parallel.UnbiasedJob``, the same starts, lag 1)
  giving H_{k:m} (``coupling.unbiased.run_pair``, the machinery of ``pmp.sample_unbiased``), as
  many as the budget allows; a pair still running when the budget ends is discarded, except the
  first, which always completes (Glynn & Heidelberger 1990: averaging only completed attempts with
  at least one forced has a bias exponentially small in budget / attempt time); the process
  reports the mean of its pairs.

k and m come from a pilot of ``--pilot`` pairs: ``suggest_k_m(tau, quantile=0.99, multiple=10)`` (the
package's defaults, Jacob et al. 2020's advice; change with ``--quantile``, ``--multiple``).
Ground truth: ``--truth-chains`` single chains of ``--truth-sweeps`` sweeps (burn-in 1000) from
``--init``; its standard error the larger of the batch means' (50 batches per chain) and the chain means'.

Aggregation over M processes (as the figure): the mean of the first M processes' estimates, its
error against the ground truth and +-2 SE (the SD across all processes / sqrt M). Then, from all
processes, each estimator's bias (mean - truth) and variance per process, the predicted RMSE
sqrt(bias^2 + var / M) (coupled: sqrt(var / M), they are unbiased; their measured bias is the
check) and the crossover M* = (var_c - var_s) / bias_s^2 beyond which coupled chains win, with the
number of pairs that M* processes run. The processes run in batches on ``--workers`` worker
processes (2 cores here). Then, for disjoint blocks of M processes, the RMSE against the truth of
the single-chain average and of all the block's pairs aggregated by the plain mean, the median of
means (``pmp.summarize_unbiased(estimator="median_of_means")``'s aggregator, min(24, pairs // 2)
groups) and 1% / 5% trimmed means, with their mean errors (biases); and per pair the SD, CPU and
inefficiency SD^2 x CPU. Per single-chain variant it also states the number of pairs needed to
match the single chains' error at equal total compute: the pairs that M* processes run (M* = 1
when the coupled variance per process is not larger), with a bootstrap interval of the variance
ratio over the processes.

``--pairs-only N``: no single chains and no budget, N pairs of coupled chains alone (seeds
(seed, 5, i), distinct from the processes' pairs; k, m from the
pilot as above), stopped early after ``--wall-limit`` seconds of wall time (the pairs done so far
are reported): the tail of the pair estimates (quantiles, the largest |estimate - truth|, meeting
times after k), their mean against the truth, SD, CPU per pair and the inefficiency SD^2 x CPU;
``--save FILE.npz`` keeps the estimates, meeting times and CPU seconds. Prints tables; never fails.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import dataclasses
import os
import platform
import time

import numpy as np

import pymc_partitions as pmp
from pymc_partitions.coupling.parallel import UnbiasedJob
from pymc_partitions.coupling.aggregate import median_of_means, trimmed_mean
from pymc_partitions.coupling.split_merge import pgsm_settings
from pymc_partitions.coupling.unbiased import PairStopped, suggest_k_m

MS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000)


def largest_share(labels):
    return np.array([np.bincount(labels).max() / labels.shape[0]])


def model_inputs(data="gene"):
    """(pack, prior code, prior params) of the ``data`` model, built from the PyMC model: the gene
    data with seed 000's NormalNormal, or Old Faithful (both columns standardised) with
    ``bench_faithful_k.py``'s NIW(mu0 = 0, kappa0 = 0.1, nu0 = 4, scale0 = I) and CRP(0.33)."""
    import pymc as pm

    from pymc_partitions.pymc.terms import PartitionTerms

    with pm.Model() as model:
        if data == "gene":
            g = pmp.datasets.load_gene()
            z = pmp.Partition("z", pmp.CRP(1.0), n=len(g))
            pmp.NormalNormal("y", partition=z, mu0=0.0, sigma0=0.5, sigma=1.3, observed=g)
        else:
            y = pmp.datasets.load_faithful()
            y = (y - y.mean(0)) / y.std(0)
            z = pmp.Partition("z", pmp.CRP(0.33), n=len(y))
            pmp.NormalInverseWishart("y", partition=z, mu0=0.0, kappa0=0.1, nu0=4.0, scale0=np.eye(2), observed=y)
    terms = PartitionTerms(model, "z")
    params, fam = terms.kernel_inputs(model.initial_point())
    return fam, terms.prior_code, params


_JOB = None
_SINGLES = ()  # one job per single-chain variant (its pgsm setting gives the single chain's kernel)


def _init(job, singles=()):
    global _JOB, _SINGLES
    _JOB, _SINGLES = job, tuple(singles)
    job.warm_up()
    for single in _SINGLES:
        single.warm_up()
    job.run(np.random.SeedSequence(12345))  # (loads every compiled function a pair uses, before any clock)


def single_chain(job, rng, budget, k):
    """(ergodic average of h over sweeps k.., sweeps run) within ``budget`` CPU seconds."""
    kernel = job.kernel()
    x = kernel.start(job.initial_labels(rng))
    deadline = time.process_time() + budget
    total, count, t = 0.0, 0, 0
    while time.process_time() < deadline or t <= k:  # at least k sweeps + 1 (else there is no average)
        kernel.sweep(x, kernel.random_numbers(rng))
        t += 1
        if t >= k:
            total += job.h(x.labels())[0]
            count += 1
    return total / count, t


def coupled_chains(job, seed, budget):
    """(mean of the pairs' H_{k:m}, pairs completed, pairs that did not meet, the pairs' H_{k:m}, their
    meeting times) within ``budget`` CPU s."""
    deadline = time.process_time() + budget
    estimates, unmet, taus = [], 0, []
    root = np.random.SeedSequence(seed)
    for j in range(1_000_000):
        if j > 0 and time.process_time() >= deadline:
            break
        s = root.spawn(1)[0]  # (one at a time: spawning many up front costs CPU seconds)
        stop = None if j == 0 else (lambda: "budget" if time.process_time() >= deadline else None)
        try:
            r = job.run(s, should_stop=stop)
        except PairStopped:
            break
        if r.met:
            estimates.append(float(r.estimate[0]))
            taus.append(r.tau)
        else:
            unmet += 1
    return (float(np.mean(estimates)) if estimates else np.nan), len(estimates), unmet, estimates, taus


def one_process(args):
    """([(single-chain average, iterations, CPU s) per single-chain variant], coupled mean, pairs,
    unmet, coupled CPU s, the pairs' estimates, the pairs' meeting times)."""
    seed, budget, burn = args
    job = _JOB
    singles = []
    for i, single in enumerate(_SINGLES):
        rng = np.random.default_rng([seed, 0] if i == 0 else [seed, 0, i])
        c0 = time.process_time()
        s, sweeps = single_chain(single, rng, budget, burn)
        singles.append((s, sweeps, time.process_time() - c0))
    c1 = time.process_time()
    c, pairs, unmet, estimates, taus = coupled_chains(job, [seed, 1], budget)
    c2 = time.process_time()
    return singles, c, pairs, unmet, c2 - c1, estimates, taus


def one_pair(seed):
    """(H_{k:m} or NaN, tau, CPU s) of one pair run to the end."""
    c0 = time.process_time()
    r = _JOB.run(np.random.SeedSequence(seed))
    return (float(r.estimate[0]) if r.met else np.nan), (r.tau if r.met else -1), time.process_time() - c0


def truth_chain(args):
    seed, sweeps = args
    job = _JOB
    rng = np.random.default_rng([seed, 7])
    kernel = job.kernel()
    x = kernel.start(job.initial_labels(rng))
    hs = np.empty(sweeps)
    for t in range(1000 + sweeps):
        kernel.sweep(x, kernel.random_numbers(rng))
        if t >= 1000:
            hs[t - 1000] = job.h(x.labels())[0]
    return hs


def pilot_taus(args):
    seed, count = args
    job = _JOB
    out = []
    for s in np.random.SeedSequence([seed, 3]).spawn(count):
        r = job.run(s)
        out.append(r.tau if r.met else -1)
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--processes", type=int, default=200)
    parser.add_argument("--budget", type=float, default=0.5, help="CPU seconds per process and estimator")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--pilot", type=int, default=100)
    parser.add_argument("--truth-chains", type=int, default=4)
    parser.add_argument("--truth-sweeps", type=int, default=250_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--truth", type=float, nargs=2, metavar=("VALUE", "SE"),
                        help="a ground truth computed before (skips the long chains)")
    parser.add_argument("--data", default="gene", choices=["gene", "faithful"],
                        help="gene: seed 000's model; faithful: Old Faithful standardised, NIW, CRP(0.33)")
    parser.add_argument("--init", default="one_block", choices=["one_block", "prior", "singletons"],
                        help="start of every chain (seed 000's runs: one block)")
    parser.add_argument("--lag", type=int, default=1,
                        help="lag of the coupled chains (Y runs this many iterations behind X); >= the single "
                             "chain's relaxation time from --init makes the bias correction a systematic term")
    parser.add_argument("--coupling", default="ot", choices=["ot", "aligned"],
                        help="coupling of the Gibbs sweeps (the runs before 2026-11-26 13:00 used ot; "
                             "pmp.sample_unbiased's default is aligned)")
    parser.add_argument("--single-burn", type=int, metavar="SWEEPS",
                        help="burn-in of the single chains (default: k, the coupled chains' burn-in)")
    parser.add_argument("--quantile", type=float, default=0.99, help="k = this quantile of the pilot's meeting times")
    parser.add_argument("--multiple", type=int, default=10, help="m = multiple * k")
    parser.add_argument("--pgsm", type=int, default=0, help="PGSM moves per iteration (CRN-coupled; 0: Gibbs only)")
    parser.add_argument("--single-pgsm", type=int, nargs="+", metavar="MOVES",
                        help="PGSM moves per iteration of the single chains, one variant per value, each with its "
                             "own budget in every process (default: as --pgsm)")
    parser.add_argument("--k-m", type=int, nargs=2, metavar=("K", "M"), help="k and m given (skips the pilot)")
    parser.add_argument("--pairs-only", type=int, metavar="N",
                        help="run N coupled pairs alone (no single chains, no budget) and report their tail")
    parser.add_argument("--wall-limit", type=float, default=float("inf"),
                        help="--pairs-only: submit no pair after this many wall seconds")
    parser.add_argument("--save", help="--pairs-only: save the estimates, meeting times and CPU to this .npz")
    args = parser.parse_args()
    if any(v < 0 for v in [args.pgsm, *(args.single_pgsm or [])]):
        parser.error("--pgsm and --single-pgsm take numbers of moves >= 0")
    if args.pairs_only is not None and args.pairs_only < 1:
        parser.error("--pairs-only takes a number of pairs >= 1")
    if not args.wall_limit > 0:
        parser.error("--wall-limit takes a number of seconds > 0")
    if args.lag < 1:
        parser.error("--lag takes a number of iterations >= 1")
    if args.single_burn is not None and args.single_burn < 0:
        parser.error("--single-burn takes a number of sweeps >= 0")
    singles_pgsm = args.single_pgsm if args.single_pgsm is not None else [args.pgsm]
    what = (f"{args.pairs_only} pairs alone (wall limit {args.wall_limit} s)" if args.pairs_only else
            f"{args.processes} processes x {args.budget} CPU s per estimator, single chains pgsm {singles_pgsm}")
    print(f"# bench_parallel_accuracy: Python {platform.python_version()}, {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.2f}; {what}, data {args.data}, init {args.init}, coupled pgsm {args.pgsm}, "
          f"coupling {args.coupling}, lag {args.lag}, {args.workers} workers", flush=True)
    fam, code, params = model_inputs(args.data)
    n = fam.data.shape[0]
    base = dict(pack=fam, prior_code=code, prior_params=params, h=largest_share, coupling=args.coupling, init=args.init, lag=args.lag,
                pgsm=pgsm_settings(args.pgsm or None, n))
    w0 = time.perf_counter()
    if args.k_m is not None:
        k, m = args.k_m
        print(f"\nk = {k}, m = {m} (given with --k-m)", flush=True)
    else:
        with cf.ProcessPoolExecutor(args.workers, initializer=_init,
                                    initargs=(UnbiasedJob(**base, k=0, m=0, max_iter=5000),)) as pool:
            per = -(-args.pilot // args.workers)
            taus = np.concatenate([np.asarray(t) for t in pool.map(
                pilot_taus, [(args.seed + w, per) for w in range(args.workers)])])
        k, m = suggest_k_m(taus, quantile=args.quantile, multiple=args.multiple)
        met = taus[taus >= 0]
        print(f"\npilot: {taus.size} pairs, meeting times median {np.median(met):.0f}, "
              f"90% {np.quantile(met, 0.9):.0f}, max {met.max()}, unmet {np.sum(taus < 0)}; k = {k}, m = {m}",
              flush=True)
    job = UnbiasedJob(**base, k=k, m=m, max_iter=max(5000, 20 * m))
    burn = k if args.single_burn is None else args.single_burn
    print(f"single chains' burn-in: {burn} sweeps" + (" (= k)" if args.single_burn is None else ""), flush=True)
    if args.pairs_only:
        pairs_only(job, args, k)
        return
    singles = [dataclasses.replace(job, pgsm=pgsm_settings(v or None, n)) for v in singles_pgsm]
    with cf.ProcessPoolExecutor(args.workers, initializer=_init, initargs=(job, singles)) as pool:
        c0 = time.perf_counter()
        if args.truth is not None:
            truth, truth_se = args.truth
            print(f"ground truth: {truth:.5f} +- {truth_se:.5f} (given with --truth)")
        else:
            chains = list(pool.map(truth_chain, [(args.seed + 1000 + c, args.truth_sweeps)
                                                 for c in range(args.truth_chains)]))
            means = np.array([h.mean() for h in chains])
            batch = np.concatenate([h[: h.size // 50 * 50].reshape(50, -1).mean(axis=1) for h in chains])
            truth = float(means.mean())  # SE: the larger of batch means' and the chain means' (their spread)
            truth_se = float(max(batch.std(ddof=1) / np.sqrt(batch.size), means.std(ddof=1) / np.sqrt(means.size)))
            print(f"ground truth: {truth:.5f} +- {truth_se:.5f} (SE; {args.truth_chains} chains x "
                  f"{args.truth_sweeps} sweeps after 1000, chain means {np.round(means, 5).tolist()}; "
                  f"{time.perf_counter() - c0:.0f} s wall; the coupled chains' kernel)",
                  flush=True)
        rows = list(pool.map(one_process, [(args.seed + 10_000 + r, args.budget, burn) for r in range(args.processes)],
                             chunksize=1))
    wall = time.perf_counter() - w0
    per_process = [r[5] for r in rows]
    taus = np.concatenate([np.asarray(r[6], float) for r in rows])
    print(f"meeting times of the pairs: median {np.median(taus):.0f}, 99% {np.quantile(taus, 0.99):.0f}, max "
          f"{taus.max():.0f}; met after k + lag (a bias correction): {np.mean(taus > k + args.lag):.1%}")
    c, pairs, unmet, c_cpu = (np.array(v, float) for v in zip(*(r[1:5] for r in rows)))
    ok = np.isfinite(c)
    print(f"\nper process: coupled {np.mean(pairs):.1f} pairs (min {pairs.min():.0f}, max {pairs.max():.0f}) in "
          f"{np.mean(c_cpu):.2f} CPU s; pairs not met {unmet.sum():.0f}; processes without a met pair {np.sum(~ok)}; "
          f"wall {wall:.0f} s", flush=True)
    c = c[ok]
    bias_c, var_c = c.mean() - truth, c.var(ddof=1)
    print(f"coupled: bias {bias_c:+.5f} (+- {2 * np.sqrt(var_c / c.size):.5f}), SD per process {np.sqrt(var_c):.5f}")
    qs = np.quantile(c, [0.0, 0.01, 0.5, 0.99, 1.0])
    print(f"coupled estimates per process: min / 1% / median / 99% / max = {' / '.join(f'{v:.4f}' for v in qs)}; "
          f"SD without the 1% farthest from the median: "
          f"{np.std(c[np.argsort(np.abs(c - np.median(c)))[: int(0.99 * c.size)]], ddof=1):.5f}")
    cpu = np.concatenate([[c_cpu[r] / max(1, len(e))] * len(e) for r, e in enumerate(per_process)])
    every = np.concatenate([np.asarray(e, float) for e in per_process])
    print(f"per pair: {every.size} pairs, min {every.min():.5f}, max {every.max():.5f}, largest |estimate - truth| "
          f"{np.abs(every - truth).max():.5f}, SD {every.std(ddof=1):.5f}, CPU {cpu.mean():.4f} s (process CPU / its "
          f"pairs), inefficiency SD^2 x CPU {every.var(ddof=1) * cpu.mean():.3g}; per process: var x coupled CPU "
          f"{var_c * np.mean(c_cpu):.3g}")
    for v, column in zip(singles_pgsm, range(len(singles_pgsm))):
        s, sweeps, s_cpu = (np.array(x, float) for x in zip(*(r[0][column] for r in rows)))
        single_report(f"single chain, Gibbs + {v} PGSM move(s) per iteration" if v else "single chain, Gibbs only",
                      s, sweeps, s_cpu, c, c_cpu, pairs, truth, truth_se, per_process)
    print(f"\nload at the end {os.getloadavg()[0]:.2f}; process CPU of this run (parent) {time.process_time():.1f} s")


def single_report(name, s, sweeps, s_cpu, c, c_cpu, pairs, truth, truth_se, per_process):
    """The figure's table, the crossover and the robust table of one single-chain variant against the
    coupled estimates (``c``: the processes' means of their pairs)."""
    print(f"\n## {name}: {np.mean(sweeps):.0f} iterations per process in {np.mean(s_cpu):.2f} CPU s "
          f"(coupled / single CPU per process {np.mean(c_cpu) / np.mean(s_cpu):.2f})")
    bias_s, var_s, var_c = s.mean() - truth, s.var(ddof=1), c.var(ddof=1)
    print(f"single: bias {bias_s:+.5f} (+- {2 * np.sqrt(var_s / s.size):.5f}), SD per process {np.sqrt(var_s):.5f}, "
          f"var x CPU {var_s * np.mean(s_cpu):.3g}")
    print("\n| M | single: error | single: +-2 SE | single covers truth | coupled: error | coupled: +-2 SE | "
          "coupled covers truth | predicted RMSE single | predicted RMSE coupled |")
    print("|---|---|---|---|---|---|---|---|---|")
    for M in MS:
        if M <= min(s.size, c.size):
            es, ec = s[:M].mean() - truth, c[:M].mean() - truth
            ses, sec = (np.sqrt(var_s / M), np.sqrt(var_c / M)) if M > 1 else (np.sqrt(var_s), np.sqrt(var_c))
            obs = (f"{es:+.5f} | {2 * ses:.5f} | {'yes' if abs(es) <= 2 * ses else 'NO'} | {ec:+.5f} | {2 * sec:.5f} | "
                   f"{'yes' if abs(ec) <= 2 * sec else 'NO'}")
        else:
            obs = "- | - | - | - | - | -"
        print(f"| {M} | {obs} | {np.sqrt(bias_s ** 2 + var_s / M):.5f} | {np.sqrt(var_c / M):.5f} |")
    gap = bias_s ** 2  # the coupled estimates are unbiased (their bias above is the check)
    se_bias = np.sqrt(var_s / s.size + truth_se ** 2)
    verdict = "significant" if abs(bias_s) > 2 * se_bias else "NOT significant at 2 SE: the crossover is not measured"
    print(f"\nsingle-chain bias {bias_s:+.5f}, SE {se_bias:.5f} (processes and ground truth): {verdict}")
    boot = np.random.default_rng(0)
    ratios, crossings = [], []
    for _ in range(2000):  # processes resampled in pairs (the same process ran both estimators)
        i = boot.integers(0, min(s.size, c.size), min(s.size, c.size))
        ratios.append(c[i].var(ddof=1) / s[i].var(ddof=1))
        crossings.append(max(1.0, (c[i].var(ddof=1) - s[i].var(ddof=1)) / (s[i].mean() - truth) ** 2))
    lo, hi = np.quantile(ratios, [0.025, 0.975])
    cross_lo, cross_hi = np.quantile(crossings, [0.025, 0.975])
    print(f"variance per process, coupled / single: {var_c / var_s:.3g} (bootstrap 95%: {lo:.3g} - {hi:.3g})")
    per = np.mean(pairs)
    print(f"crossover M* = max(1, (var_c - var_s) / bias_s^2), bootstrap 95% over processes (truth fixed): "
          f"{cross_lo:.0f} - {cross_hi:.0f} processes, i.e. {cross_lo * per:.0f} - {cross_hi * per:.0f} pairs")
    if var_c <= var_s:
        print(f"coupled chains win at every M (their variance per process is not larger): pairs needed to match the "
              f"single chains' error at equal compute = the pairs of M = 1 process, {per:.1f}")
    elif gap > 0:
        cross = (var_c - var_s) / gap
        print(f"crossover (predicted RMSE): coupled chains win from M* = {cross:.0f} processes, i.e. "
              f"{cross * per:.0f} pairs ({per:.1f} per process)"
              + ("" if abs(bias_s) > 2 * se_bias else " -- resting on an insignificant bias, not a result"))
    else:
        print("no crossover: the single chains show no bias")
    rmse = robust_table(per_process, s, truth)
    below = [M for M, (rs, rc) in rmse.items() if rc < rs]
    since = next((M for M in rmse if all(rmse[M2][1] < rmse[M2][0] for M2 in rmse if M2 >= M)), None)
    print(f"\nobserved (blocks above): the coupled mean's RMSE is below the single chains' at M = {below}; "
          + (f"at every M from {since} processes ({since * per:.0f} pairs) on" if since else "not at the largest M"))


def pairs_only(job, args, k):
    """N pairs alone, 2 * workers in flight, none submitted after the wall limit; the tail reported."""
    truth = args.truth[0] if args.truth is not None else np.nan
    w0 = time.perf_counter()
    est, tau, cpu = [], [], []
    with cf.ProcessPoolExecutor(args.workers, initializer=_init, initargs=(job,)) as pool:
        pending, nxt = set(), 0
        while pending or nxt < args.pairs_only:
            while (nxt < args.pairs_only and len(pending) < 2 * args.workers
                   and time.perf_counter() - w0 < args.wall_limit):
                pending.add(pool.submit(one_pair, [args.seed, 5, nxt]))
                nxt += 1
            if not pending:
                break
            done, pending = cf.wait(pending, return_when=cf.FIRST_COMPLETED)
            for f in done:
                e, t, c = f.result()
                est.append(e), tau.append(t), cpu.append(c)
            if len(est) % 100 == 0 and done:
                print(f"  {len(est)} pairs, {time.perf_counter() - w0:.0f} s wall", flush=True)
    est, tau, cpu = np.array(est), np.array(tau), np.array(cpu)
    if args.save:
        np.savez(args.save, estimates=est, tau=tau, cpu=cpu, k=k, m=job.m, truth=truth)
    met = np.isfinite(est)
    e = est[met]
    print(f"\n{est.size} pairs of {args.pairs_only} ({time.perf_counter() - w0:.0f} s wall), not met {np.sum(~met)}; "
          f"k = {k}, m = {job.m}; meeting times median {np.median(tau[met]):.0f}, 99% {np.quantile(tau[met], 0.99):.0f}, "
          f"max {tau[met].max()}; met after k: {np.sum(tau[met] > k)} pairs ({np.mean(tau[met] > k):.2%})")
    qs = [0.0, 0.001, 0.01, 0.05, 0.5, 0.95, 0.99, 0.999, 1.0]
    print("\n| " + " | ".join(f"q {q:g}" for q in qs) + " | largest abs(estimate - truth) |")
    print("|" + "---|" * (len(qs) + 1))
    print("| " + " | ".join(f"{v:.5f}" for v in np.quantile(e, qs)) + f" | {np.abs(e - truth).max():.5f} |")
    late = e[tau[met] > k]
    print(f"\nestimates of the pairs met after k: {np.round(np.sort(late), 5).tolist()[:20]}")
    sd = e.std(ddof=1)
    print(f"mean {e.mean():.5f} (+- {2 * sd / np.sqrt(e.size):.5f}), error against the truth {e.mean() - truth:+.5f}; "
          f"SD per pair {sd:.5f} (without the 1% farthest from the median "
          f"{np.std(e[np.argsort(np.abs(e - np.median(e)))[: int(0.99 * e.size)]], ddof=1):.5f}); CPU per pair "
          f"{cpu.mean():.4f} s (median {np.median(cpu):.4f}); inefficiency SD^2 x CPU {sd ** 2 * cpu.mean():.3g}")
    print(f"load at the end {os.getloadavg()[0]:.2f}")


def _aggregates(estimates, k_groups):
    """{name: value} of the plain mean, median of means and trimmed means of one block's pair estimates."""
    x = np.asarray(estimates, float)
    out = {"mean": x.mean()}
    groups = min(k_groups, x.size // 2)
    out["MoM"] = median_of_means(x, groups).estimate if groups >= 3 else np.nan
    for trim in (0.01, 0.05):
        out[f"trim {trim:g}"] = trimmed_mean(x, trim).estimate if x.size >= 2 else np.nan
    return out


def robust_table(per_process, s, truth, k_groups=24):
    """RMSE against the truth over disjoint blocks of M processes (all their pairs aggregated), for the
    single-chain average and each aggregator of the coupled pairs; the mean error (bias) too."""
    total = len(per_process)
    print(f"\nerror vs number of pairs: disjoint blocks of M processes, RMSE (and mean error) over the blocks; "
          f"MoM with min({k_groups}, pairs // 2) groups (not computed below 3)")
    names = ["mean", "MoM", "trim 0.01", "trim 0.05"]
    rmse = {}  # M -> (single RMSE, coupled mean RMSE)
    print("\n| M | blocks | pairs per block | single: RMSE (mean err) | " +
          " | ".join(f"coupled {n}: RMSE (mean err)" for n in names) + " |")
    print("|---|---|---|---|" + "---|" * len(names))
    for M in MS:
        blocks = total // M
        if blocks < 2 and M != total:
            continue
        if blocks < 1:
            break
        single = np.array([s[b * M:(b + 1) * M].mean() - truth for b in range(blocks)])
        errs = {n: [] for n in names}
        npairs = []
        for b in range(blocks):
            x = np.concatenate([np.asarray(e, float) for e in per_process[b * M:(b + 1) * M]])
            npairs.append(x.size)
            for n, v in _aggregates(x, k_groups).items():
                errs[n].append(v - truth)
        cells = []
        for n in names:
            e = np.asarray(errs[n])
            cells.append("-" if np.isnan(e).any() else f"{np.sqrt(np.mean(e ** 2)):.5f} ({e.mean():+.5f})")
        print(f"| {M} | {blocks} | {np.mean(npairs):.1f} | {np.sqrt(np.mean(single ** 2)):.5f} ({single.mean():+.5f}) | "
              + " | ".join(cells) + " |", flush=True)
        rmse[M] = (np.sqrt(np.mean(single ** 2)), np.sqrt(np.mean(np.asarray(errs["mean"]) ** 2)))
    return rmse


if __name__ == "__main__":
    main()
