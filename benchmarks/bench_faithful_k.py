"""What keeps the ESS of K short on Old Faithful, and what bounds the gene target (issue 20).

``--only overhead``: the gene data (n = 200, D = 50; NormalNormal(mu0 = 0, sigma0 = 0.5,
sigma = 1.3); CRP(1), ``bench_mixing.py``'s gene model). CPU seconds per iteration of
``pm.sample`` (4 chains x (1000 + 1000), ``cores=1``, the clock of ``bench_mixing.py``: first to
last draw) with (a) ``pmp.CollapsedGibbs`` and (b) a step that returns its point unchanged (PyMC's
loop, trace and callback alone), against (c) one collapsed Gibbs sweep through
``GibbsKernel.step`` (Python call and random numbers included) and (d) one sweep inside a
compiled call of 1000 sweeps (``gibbs_sweeps``, random numbers drawn beforehand, not timed).

``--only diagnose``: long chains on Old Faithful (both columns standardised;
NormalInverseWishart(mu0 = 0, kappa0 = 0.1, nu0 = 4, scale0 = I); CRP(alpha = 0.33), alpha fixed
at its posterior median) of Gibbs sweeps alone and of (one SAMS move, one sweep): per sweep the
labels; printed: K's law and ESS, the lengths of K = 2 and K >= 3 spells and the integrated
autocorrelation time they imply (alternating renewal process), where the third cluster lives
(its centroid, the items most often outside the two largest clusters), how a long-lived third
cluster is born and dies (its size over the first and last sweeps of a spell), how its members
change from sweep to sweep, and where its items go when it dies.

Run: ``python benchmarks/bench_faithful_k.py`` (about 2 minutes); ``--only diagnose --sweeps 20000``.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
import warnings

import arviz as az
import numpy as np
import pymc as pm

import pymc_partitions as pmp
from pymc_partitions.families.kernels import DIAG_NORMAL, NIW, FamilyPack, diag_normal_hyper, niw_hyper
from pymc_partitions.samplers.gibbs import GibbsKernel, gibbs_sweeps
from pymc_partitions.samplers.gibbs_sams import GibbsSAMSKernel

ALPHA = 0.33  # Old Faithful's posterior median of alpha under Gamma(1, 1)


def load_avg():
    return " ".join(open("/proc/loadavg").read().split()[:3]) if os.path.exists("/proc/loadavg") else "n/a"


# ----------------------------------------------------------------------------- PyMC's per-draw overhead


class Unchanged(pmp.CollapsedGibbs):
    """A partition step that returns its point unchanged (same stats as ``pmp.CollapsedGibbs``): what
    pm.sample costs per iteration around a step."""

    def step(self, point):
        labels = self.terms.labels(point)
        return point, [{"n_clusters": int(labels.max()) + 1, "log_joint": 0.0}]


class Clock:
    """``pm.sample`` callback: CPU seconds from the first to the last draw (as bench_mixing.DrawClock)."""

    first = last = None
    calls = 0

    def __call__(self, trace=None, draw=None, **_):
        now = time.process_time()
        self.first = now if self.first is None else self.first
        self.last = now
        self.calls += 1


def overhead():
    y = pmp.datasets.load_gene()
    n = len(y)
    with pm.Model() as model:
        z = pmp.Partition("z", pmp.CRP(1.0), n=n)
        pmp.NormalNormal("y", partition=z, mu0=0.0, sigma0=0.5, sigma=1.3, observed=y)
    rows = []
    for label, make in [("pm.sample, pmp.GibbsSplitMerge (the default)", lambda: [pmp.GibbsSplitMerge([z])]),
                        ("pm.sample, pmp.CollapsedGibbs", lambda: [pmp.CollapsedGibbs([z])]),
                        ("pm.sample, a step returning its point", lambda: [Unchanged([z])])]:
        for rep in range(2):  # the first run warms caches; the second is timed
            clock = Clock()
            with model, warnings.catch_warnings():
                warnings.simplefilter("ignore")
                pm.sample(draws=1000, tune=1000, chains=4, cores=1, step=make(), random_seed=1, progressbar=False,
                          compute_convergence_checks=False, callback=clock, initvals={"z": np.zeros(n, np.int64)})
        rows.append((f"{label} ({clock.calls} callbacks, {clock.last - clock.first:.2f} s from first to last)",
                     (clock.last - clock.first) / (clock.calls - 1)))
    pack = FamilyPack.build([(DIAG_NORMAL, y, diag_normal_hyper(0.0, 0.5, 1.3, y.shape[1]))])
    kernel = GibbsKernel(pack, 0, np.array([1.0, 0.0, 0.0]))
    rng = np.random.default_rng(0)
    labels = kernel.step(np.zeros(n, np.int64), rng)[0]
    start = time.process_time()
    for _ in range(8000):
        labels = kernel.step(labels, rng)[0]
    rows.append(("GibbsKernel.step (Python call + random numbers)", (time.process_time() - start) / 8000))
    orders = np.stack([rng.permutation(n) for _ in range(1000)])
    uniforms = rng.random((1000, n))
    gibbs_sweeps(labels, pack, 0, np.array([1.0, 0.0, 0.0]), orders[:2], uniforms[:2])
    start = time.process_time()
    for _ in range(8):
        gibbs_sweeps(labels, pack, 0, np.array([1.0, 0.0, 0.0]), orders, uniforms)
    rows.append(("one sweep inside gibbs_sweeps(1000 sweeps)", (time.process_time() - start) / 8000))
    print("\ngene (n = 200, D = 50), CPU ms per iteration:\n")
    print("| what | CPU ms per iteration |\n|---|---|")
    for label, sec in rows:
        print(f"| {label} | {1000 * sec:.3f} |")


# ----------------------------------------------------------------------------- Old Faithful diagnosis


def faithful():
    y = pmp.datasets.load_faithful()
    ys = (y - y.mean(0)) / y.std(0)
    return y, FamilyPack.build([(NIW, ys, niw_hyper([0.0, 0.0], 0.1, 4.0, np.eye(2), 2, len(ys)))])


def chains(pack, n, moves, sweeps, seed=100):
    """Labels (4, sweeps, n) of 4 chains of (moves SAMS moves, one sweep) at alpha = ALPHA, after 200 burn-in."""
    kernel = GibbsSAMSKernel(pack, 0, np.array([ALPHA, 0.0, 0.0]), reps=1, moves=moves)
    kernel.step(np.zeros(n, np.int64), np.random.default_rng(0))
    out = np.empty((4, sweeps, n), np.int16)
    cpu = 0.0
    for c in range(4):
        rng = np.random.default_rng(seed + c)
        labels = rng.integers(0, 5, n)
        for _ in range(200):
            labels = kernel.step(labels, rng)[0]
        start = time.process_time()
        for r in range(sweeps):
            labels = kernel.step(labels, rng)[0]
            out[c, r] = labels
        cpu += time.process_time() - start
    return out, cpu


def spells(mask):
    """(chain, start, end) of the complete runs of True (neither cut by the chain's start nor end)."""
    out = []
    for c in range(mask.shape[0]):
        step = np.diff(np.r_[0, mask[c].astype(np.int8), 0])
        for a, b in zip(np.where(step == 1)[0], np.where(step == -1)[0]):
            if a > 0 and b < mask.shape[1]:
                out.append((c, a, b))
    return out


def minor_mask(labels):
    """Items outside the two largest blocks."""
    sizes = np.bincount(labels)
    return ~np.isin(labels, np.argsort(-sizes)[:2])


def diagnose(labels, cpu, y):
    C, S, n = labels.shape
    K = labels.max(2) + 1
    law = np.bincount(K.ravel(), minlength=6)[2:6] / K.size
    ess = float(az.ess(K.astype(float), method="bulk"))
    print(f"CPU {cpu:.2f} s for {C} x {S} repetitions; P(K = 2, 3, 4, 5) = {np.round(law, 3)}; ESS of K {ess:.0f} "
          f"({1000 * ess / (C * S):.1f} per 1000 repetitions, {ess / cpu:.0f} per CPU s); integrated autocorrelation "
          f"time of K {C * S / ess:.1f} repetitions")
    on, off = spells(K >= 3), spells(K == 2)
    l1 = np.array([b - a for _, a, b in on], float)
    l0 = np.array([b - a for _, a, b in off], float)
    m1, m0 = l1.mean(), l0.mean()
    renewal = (m0**2 * l1.var() + m1**2 * l0.var()) / ((m0 + m1) * m1 * m0)
    geometric = (2 - 1 / m0 - 1 / m1) / (1 / m0 + 1 / m1)
    tau_ind = C * S / float(az.ess((K >= 3).astype(float), method="bulk"))
    print(f"K >= 3 spells: {len(l1)}, length mean {m1:.1f} sd {l1.std():.1f} median {np.median(l1):.0f} "
          f"10/90 % {np.percentile(l1, 10):.0f}/{np.percentile(l1, 90):.0f} max {l1.max():.0f}; one repetition long: "
          f"{np.mean(l1 == 1):.2f}")
    print(f"K = 2 spells: {len(l0)}, length mean {m0:.1f} sd {l0.std():.1f} median {np.median(l0):.0f} "
          f"10/90 % {np.percentile(l0, 10):.0f}/{np.percentile(l0, 90):.0f} max {l0.max():.0f}")
    print(f"autocorrelation time of 1(K >= 3): measured {tau_ind:.1f}; alternating renewal process from the spell "
          f"lengths {renewal:.1f}; geometric spells of the same means {geometric:.1f}")
    shares = [l1[l1 >= t].sum() / l1.sum() for t in (10, 20, 50, 100)]
    print(f"share of K >= 3 time in spells of >= 10/20/50/100 repetitions: {np.round(shares, 2)} "
          f"(that many spells: {[int((l1 >= t).sum()) for t in (10, 20, 50, 100)]}); share of sum(length^2) from "
          f">= 20: {(l1[l1 >= 20] ** 2).sum() / (l1 ** 2).sum():.2f}")
    # where: the minor items and the third block's centroid
    freq = np.zeros(n)
    third = []
    for c in range(C):
        for r in range(S):
            lab = labels[c, r]
            m = minor_mask(lab)
            freq += m
            if K[c, r] >= 3:
                sizes = np.bincount(lab)
                b = np.argsort(-sizes)[2]
                third.append((sizes[b], *y[lab == b].mean(0)))
    freq /= C * S
    third = np.array(third)
    sizes = third[:, 0].astype(int)
    print(f"third block's size given K >= 3: 10/25/50/75/90 % {np.percentile(sizes, [10, 25, 50, 75, 90])}; "
          f"P(size <= 3) {np.mean(sizes <= 3):.2f}; P(1), P(2) {np.mean(sizes == 1):.2f}, {np.mean(sizes == 2):.2f}")
    lab = labels[0, -1]
    big = np.argsort(-np.bincount(lab))[:2]
    top2 = np.array([np.sort(np.bincount(labels[c, r]))[::-1][:2] for c in range(C) for r in range(S)])
    print(f"the two largest blocks (last draw of chain 0): centroids (eruptions min, waiting min) "
          f"{np.round(y[lab == big[0]].mean(0), 2)} and {np.round(y[lab == big[1]].mean(0), 2)}; their sizes over all "
          f"repetitions: median {np.median(top2, 0)}, 10-90 % {np.percentile(top2[:, 0], [10, 90])} and "
          f"{np.percentile(top2[:, 1], [10, 90])}")
    print(f"items outside the two largest blocks in >= 20 % / >= 5 % of repetitions: {int(np.sum(freq >= 0.2))} / "
          f"{int(np.sum(freq >= 0.05))}; the 12 most often (share, eruptions, waiting):")
    for i in np.argsort(-freq)[:12]:
        print(f"  item {i:3d}: {freq[i]:.2f}  ({y[i, 0]:.2f}, {y[i, 1]:.0f})")
    e_bins, w_bins = [1.5, 2.5, 3.0, 3.5, 4.0, 4.5, 5.5], [40, 55, 65, 70, 75, 80, 100]
    H = np.histogram2d(third[:, 1], third[:, 2], [e_bins, w_bins])[0] / len(third)
    print("\nthird block's centroid, share of K >= 3 repetitions (rows eruptions min, columns waiting min):\n")
    print("| eruptions \\ waiting | " + " | ".join(f"{a}-{b}" for a, b in zip(w_bins, w_bins[1:])) + " |")
    print("|---" * len(w_bins) + "|")
    for i in range(len(e_bins) - 1):
        print(f"| {e_bins[i]}-{e_bins[i + 1]} | " + " | ".join(f"{v:.3f}" for v in H[i]) + " |")
    # long spells: birth, death, membership turnover, where the items go
    start, end, jac, mid, fate = [], [], [], [], np.zeros(3)
    for c, a, b in on:
        if b - a < 20:
            continue
        tot = np.array([minor_mask(labels[c, r]).sum() for r in range(a, b)])
        start.append(tot[:8])
        end.append(tot[-8:])
        for r in range(a + 1, b):
            p, q = minor_mask(labels[c, r - 1]), minor_mask(labels[c, r])
            jac.append((p & q).sum() / max((p | q).sum(), 1))
        m = minor_mask(labels[c, (a + b) // 2])
        mid.append((*y[m].mean(0), m.sum()))
        gone = np.zeros(n, bool)
        for r in range(max(a, b - 5), b):
            gone |= minor_mask(labels[c, r])
        after = labels[c, b]
        sizes = np.bincount(after)
        short = np.argmin([y[after == k, 0].mean() for k in range(len(sizes))])
        fate += [np.sum(gone & (after == short)), np.sum(gone & (after != short)), 0]
    start, end, mid = np.array(start), np.array(end), np.array(mid)
    print(f"\n{len(start)} spells of >= 20 repetitions. Items outside the two largest blocks, over the first 8 "
          "repetitions of a spell (median; 25 %, 75 %):")
    print(f"  {np.median(start, 0)}; {np.percentile(start, 25, 0)}, {np.percentile(start, 75, 0)}")
    print("over its last 8 repetitions:")
    print(f"  {np.median(end, 0)}; {np.percentile(end, 25, 0)}, {np.percentile(end, 75, 0)}")
    print(f"  first repetition: size 1/2/3/4/5+ in {np.round(np.bincount(np.minimum(start[:, 0], 5))[1:] / len(start), 2)}; "
          f"last: {np.round(np.bincount(np.minimum(end[:, -1], 5))[1:] / len(end), 2)}")
    print(f"membership from one repetition to the next inside these spells (Jaccard): median {np.median(jac):.2f}, "
          f"10 % {np.percentile(jac, 10):.2f}")
    print(f"centroid at mid-spell: median ({np.median(mid[:, 0]):.2f}, {np.median(mid[:, 1]):.1f}), 10-90 % "
          f"eruptions {np.percentile(mid[:, 0], 10):.2f}-{np.percentile(mid[:, 0], 90):.2f}, waiting "
          f"{np.percentile(mid[:, 1], 10):.1f}-{np.percentile(mid[:, 1], 90):.1f}; size median {np.median(mid[:, 2]):.0f}")
    sets, count = {}, 0
    for c in range(C):
        for r in np.where(K[c] == 3)[0]:
            lab = labels[c, r]
            sizes = np.bincount(lab)
            b = int(np.argmin(sizes))
            if 10 <= sizes[b] <= 15:
                key = frozenset(np.where(lab == b)[0].tolist())
                sets[key] = sets.get(key, 0) + 1
                count += 1
    if count:
        print(f"K = 3 repetitions with a third block of 10-15 items: {count}; distinct member sets {len(sets)}; the most "
              f"frequent set in {max(sets.values()) / count:.4f} of them")
    print(f"where the items of its last 5 repetitions are after it dies: short-eruption block {fate[0] / fate[:2].sum():.2f}, "
          f"long-eruption block {fate[1] / fate[:2].sum():.2f}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="overhead,diagnose")
    parser.add_argument("--sweeps", type=int, default=20000, help="repetitions per chain of --only diagnose")
    args = parser.parse_args(argv)
    print(f"bench_faithful_k: Python {platform.python_version()}, PyMC {pm.__version__}, load average {load_avg()}")
    if "overhead" in args.only:
        overhead()
    if "diagnose" in args.only:
        y, pack = faithful()
        for moves in (0, 1):
            print(f"\n## Old Faithful, alpha = {ALPHA} fixed, {'Gibbs sweeps alone' if moves == 0 else 'one SAMS move + one sweep'}\n")
            labels, cpu = chains(pack, len(y), moves, args.sweeps)
            diagnose(labels, cpu, y)
    print(f"\nload average at end {load_avg()}")


if __name__ == "__main__":
    main()
