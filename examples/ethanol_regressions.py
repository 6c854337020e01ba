"""Clusters of regressions on the ethanol engine data (Brinkman 1981), sampled with ``pm.sample``.

Against the nitric-oxide emission NOx, the equivalence ratio E of 88 engine runs falls on two
branches, a lean and a rich one (Hurn, Justel and Robert 2003). Model:

    z                ~ CRP(1)                                  a partition of the 88 runs
    sigma_b^2        ~ InvGamma(2, 0.01)                       noise variance of cluster b
    beta_b | sigma_b ~ N([mean E, 0], sigma_b^2 diag(400, 100))  intercept and slope of cluster b
    E_i | z, beta    ~ N(beta_b[0] + beta_b[1] (NOx_i - mean NOx), sigma_b^2)

with beta and sigma integrated out (``pmp.NormalLinearRegression``). Prints the posterior number
of clusters, the point estimate's clusters with their lines (posterior means given it), the
predictive density of two new runs and the LOO estimate; saves ``ethanol_regressions.png``.
Run: ``python examples/ethanol_regressions.py`` (``--quick`` for a short run).
"""

import sys

import numpy as np
import pymc as pm

import pymc_partitions as pmp
from pymc_partitions.families.predictive import NormalLinearRegressionFamily


def main(draws=1000, tune=300, chains=2, seed=1, picture="ethanol_regressions.png"):
    data = pmp.datasets.load_ethanol()
    nox, e = data[:, 0], data[:, 2]
    centre = nox.mean()
    X = np.column_stack([np.ones(len(e)), nox - centre])
    hyper = dict(mu0=[e.mean(), 0.0], cov0=[400.0, 100.0], a0=2.0, b0=0.01)
    with pm.Model() as model:
        z = pmp.Partition("z", pmp.CRP(1.0), n=len(e))
        pmp.NormalLinearRegression("E", partition=z, X=X, **hyper, observed=e)
        idata = pm.sample(draws=draws, tune=tune, chains=chains, cores=1, random_seed=seed, progressbar=False,
                          compute_convergence_checks=False, idata_kwargs={"log_likelihood": True})
    k = pmp.posterior_dataset(idata, "sample_stats")["n_clusters"].values.ravel()
    print("posterior number of clusters:", {int(v): round(float(np.mean(k == v)), 3) for v in np.unique(k)})
    estimate = pmp.point_estimate(idata, random_seed=seed)
    family = NormalLinearRegressionFamily(X, **hyper)
    post = family.posterior(estimate.labels, estimate.n_clusters, e)
    lines = family.posterior_mean(post)
    print(f"point estimate: {estimate.n_clusters} clusters, sizes {np.bincount(estimate.labels).tolist()}")
    for b in range(estimate.n_clusters):
        a, slope = lines["beta"][b]
        print(f"  cluster {b}: E = {a - slope * centre:.3f} + {slope:.3f} NOx, noise sd {lines['sigma'][b]:.3f}")
    new = np.array([[1.0, 1.0 - centre, 0.6], [1.0, 1.0 - centre, 1.15]])  # NOx = 1: a lean and a rich run
    density = pmp.predictive_density(idata, new, model=model, draws=200)
    print("predictive density of E at NOx = 1, E = 0.6 and E = 1.15:", density["density"].values.round(3).tolist())
    print(pmp.loo(idata, model=model))
    try:
        import matplotlib  # noqa: PLC0415

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # noqa: PLC0415
    except ImportError:
        return estimate
    fig, ax = plt.subplots(figsize=(5, 4))
    grid = np.linspace(nox.min(), nox.max(), 50)
    for b in range(estimate.n_clusters):
        mine = estimate.labels == b
        ax.scatter(nox[mine], e[mine], s=12, label=f"cluster {b} ({mine.sum()} runs)")
        a, slope = lines["beta"][b]
        ax.plot(grid, a + slope * (grid - centre), lw=1)
    ax.set_xlabel("NOx (µg/J)")
    ax.set_ylabel("equivalence ratio E")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(picture, dpi=100)
    return estimate


if __name__ == "__main__":
    if "--quick" in sys.argv:
        main(draws=200, tune=100, chains=1)
    else:
        main()
