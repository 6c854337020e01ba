"""The infinite relational model (Kemp et al. 2006) on Zachary's karate club, sampled with ``pm.sample``.

Model (seed 004, Sec. 3.2):

    z               ~ CRP(1)                       a partition of the 34 members
    theta_kl        ~ Beta(1, 1)                   one edge probability per pair of blocks, integrated out
    A_ij | z, theta ~ Bernoulli(theta_{z_i z_j})   every pair of members, friends or not

Steps: collapsed Gibbs sweeps and adaptive reconfiguration moves (ARM, a population step
across the chains). The point estimate (SALSO, variation of information) is compared with the
two factions the club split into (Zachary 1977) by the adjusted Rand index; the co-clustering
matrix is saved as ``karate_coclustering.png``. Run: ``python examples/karate_irm.py``.
"""

import sys
import time

import numpy as np
import pymc as pm

import pymc_partitions as pmp
from pymc_partitions.partition import contingency


def adjusted_rand(a, b):
    table = contingency(a, b).astype(float)
    comb = lambda v: float(np.sum(v * (v - 1.0) / 2.0))  # noqa: E731
    index, rows, cols = comb(table), comb(table.sum(axis=1)), comb(table.sum(axis=0))
    expected = rows * cols / comb(np.array([float(len(a))]))
    return (index - expected) / (0.5 * (rows + cols) - expected)


def main(draws=300, tune=100, chains=4, seed=1, picture="karate_coclustering.png"):
    edges = pmp.datasets.load_karate()  # 78 friendships among 34 members
    factions = pmp.datasets.load_karate_factions()
    start = time.perf_counter()
    with pm.Model():
        z = pmp.Partition("z", pmp.CRP(1.0), n=34)
        pmp.BetaBernoulliNetwork("A", partition=z, a=1.0, b=1.0, observed=edges)
        idata = pm.sample(draws=draws, tune=tune, chains=chains, cores=1, random_seed=seed,
                          step=[pmp.CollapsedGibbs([z]), pmp.ARM([z])], progressbar=False,
                          compute_convergence_checks=False)
    seconds = time.perf_counter() - start
    k = pmp.posterior_dataset(idata, "sample_stats")["n_clusters"].values.ravel()
    estimate = pmp.point_estimate(idata, random_seed=seed)
    ari = adjusted_rand(estimate.labels, factions)
    print(f"{chains} chains x {draws} draws (Gibbs + ARM), wall time {seconds:.1f} s")
    print("posterior number of clusters:", {int(v): round(float(np.mean(k == v)), 3) for v in np.unique(k)})
    print(f"point estimate: {estimate.n_clusters} clusters, sizes {np.bincount(estimate.labels).tolist()}")
    for b in range(estimate.n_clusters):
        members = np.flatnonzero(estimate.labels == b)
        print(f"  cluster {b}: {members.tolist()} (Officer's faction: {int(factions[members].sum())}/{len(members)})")
    print(f"adjusted Rand index to the two factions: {ari:.3f}")
    if picture:
        import matplotlib  # noqa: PLC0415

        matplotlib.use("Agg")
        ax = pmp.plot_coclustering(idata, estimate)
        ax.set_title("Karate club: posterior co-clustering (IRM)")
        ax.figure.savefig(picture, dpi=100, bbox_inches="tight")
        print(f"saved {picture}")
    return estimate, ari


if __name__ == "__main__":
    main(draws=100 if "--quick" in sys.argv else 300)
