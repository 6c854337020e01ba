"""Dirichlet-process mixture of the galaxy velocities (Roeder 1990), sampled with ``pm.sample``.

Model (velocities in 1000 km/s):

    alpha         ~ Gamma(1, 1)                      updated by pmp.EscobarWest (automatic; O(1) per draw)
    z | alpha     ~ CRP(alpha)                       updated by pmp.GibbsSplitMerge (automatic)
    mu_b          ~ Normal(20, 10)                   one mean per cluster, integrated out
    y_i | z, mu   ~ Normal(mu_{z_i}, 1)

The prior on the cluster means (20 +- 10) covers the observed range (9.2 to 34.3); a
within-cluster standard deviation of 1 (1000 km/s) is about the width of the main
galaxy groups. Run: ``python examples/demo.py``.
"""

import time

import numpy as np
import pymc as pm

import pymc_partitions as pmp


def main(draws=500, tune=200, chains=2, seed=1):
    y = pmp.datasets.load_galaxies() / 1000.0  # 82 velocities, in 1000 km/s

    with pm.Model():
        alpha = pm.Gamma("alpha", alpha=1.0, beta=1.0)
        z = pmp.Partition("z", pmp.CRP(alpha), n=len(y))
        pmp.NormalNormal("y", partition=z, mu0=20.0, sigma0=10.0, sigma=1.0, observed=y)

        start = time.perf_counter()
        idata = pm.sample(
            draws=draws,
            tune=tune,
            chains=chains,
            cores=1,  # 2 chains of 82 items: quicker in one process than in two
            random_seed=seed,
            progressbar=False,
        )  # steps: z GibbsSplitMerge, alpha EscobarWest (automatic)
        elapsed = time.perf_counter() - start

    sampling = float(pmp.posterior_dataset(idata, "posterior").attrs["sampling_time"])  # PyMC's "took"
    k = pmp.posterior_dataset(idata)["z_n_clusters"].values.ravel()
    alpha_draws = pmp.posterior_dataset(idata, "posterior")["alpha"].values.ravel()

    print(f"Galaxies DPMM: n = {len(y)}, {chains} chains x {draws} draws (+{tune} tuning)")
    print("Posterior of the number of clusters K:")
    print("    K   P(K | y)")
    values, counts = np.unique(k, return_counts=True)
    for v, c in zip(values, counts):
        print(f"  {v:3d}   {c / k.size:.3f}")
    print(f"Posterior mean of K: {k.mean():.2f}")
    print(f"Posterior mean of alpha: {alpha_draws.mean():.3f}")
    print(f"Wall time of pm.sample: {elapsed:.1f} s, of which drawing the chains {sampling:.1f} s "
          "(PyMC's 'took ... seconds').")
    print(f"The other {max(elapsed - sampling, 0.0):.1f} s are set-up: on a first (cold) run mostly one-time "
          "compilation of the numba kernels and PyTensor functions, which are cached on disk for the next "
          "(warm) runs.")
    print(pmp.summary(idata, kind="diagnostics"))


if __name__ == "__main__":
    main()
