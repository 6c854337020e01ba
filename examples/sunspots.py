"""The PyMC gallery's Poisson Dirichlet-process mixture of yearly sunspot counts, with pmp.GammaPoisson.

The gallery (pymc-examples, "Dirichlet process mixtures for density estimation") writes the model
with a truncated stick-breaking prior (K = 50 components) and samples it with NUTS:

    alpha ~ Gamma(1, 1),  beta_k ~ Beta(1, alpha),  w = stick_breaking(beta),
    lambda_k ~ Gamma(300, 2),  y_i ~ sum_k w_k Poisson(lambda_k).

Here the same model is a partition of the years with a CRP(alpha) prior and a collapsed
Gamma(300, 2)-Poisson likelihood (the rates integrated out), sampled by collapsed Gibbs sweeps and
the Escobar-West update of alpha. No truncation.

Data: the yearly sunspot numbers 1700-2008 shipped with statsmodels (``statsmodels`` is an
optional dependency of this example only), rounded to integer counts (the series has one decimal
from 1749 on).

    pip install -e ".[examples]"; PYTHONPATH=$PWD python examples/sunspots.py [--draws 2000] [--plot sunspots.png]
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def load_sunspots() -> np.ndarray:
    """Yearly sunspot numbers 1700-2008 from statsmodels' datasets, rounded to integers."""
    try:
        import statsmodels.api as sm
    except ImportError:  # pragma: no cover - depends on the environment
        raise SystemExit("this example reads the data from statsmodels: pip install statsmodels") from None
    values = sm.datasets.sunspots.load_pandas().data["SUNACTIVITY"].to_numpy()
    return np.rint(values).astype(np.int64)


def build_model(y):
    import pymc as pm

    import pymc_partitions as pmp

    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 1.0, 1.0)
        z = pmp.Partition("z", pmp.CRP(alpha), n=len(y))
        pmp.GammaPoisson("sunspots", partition=z, alpha=300.0, beta=2.0, observed=y)
    return model


def fit(model, draws=2000, tune=500, chains=2, seed=1):
    import pymc as pm

    with model:  # pm.sample assigns GibbsSplitMerge to z and EscobarWest to alpha
        return pm.sample(draws=draws, tune=tune, chains=chains, cores=1, random_seed=seed, progressbar=False)


def main(argv=None):
    import pymc_partitions as pmp

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=2000)
    parser.add_argument("--plot", default=None, help="save the fitted density here (needs matplotlib)")
    args = parser.parse_args(argv)

    y = load_sunspots()
    model = build_model(y)
    start = time.perf_counter()
    idata = fit(model, draws=args.draws)
    seconds = time.perf_counter() - start
    k = pmp.posterior_dataset(idata, "sample_stats")["n_clusters"].values.ravel()
    alpha = pmp.posterior_dataset(idata)["alpha"].values.ravel()
    print(f"{len(y)} years, {k.size} draws in {seconds:.1f} s")
    values, counts = np.unique(k, return_counts=True)
    print("posterior of the number of clusters K:",
          ", ".join(f"{v}: {c / k.size:.3f}" for v, c in zip(values, counts) if c / k.size >= 0.01))
    print(f"alpha: mean {alpha.mean():.2f}, 90% interval [{np.quantile(alpha, 0.05):.2f}, "
          f"{np.quantile(alpha, 0.95):.2f}]")

    grid = np.arange(250)
    dens = pmp.predictive_density(idata, grid, model, draws=500)
    mode = int(grid[np.argmax(dens["density"].values)])
    print(f"fitted density of the yearly count: mode {mode}, P(count <= 20) = "
          f"{dens['density'].values[:21].sum():.3f}, P(count >= 100) = {dens['density'].values[100:].sum():.3f}")
    # the fitted rate density: rates of a random year's cluster (each cluster's rate drawn from its
    # conditional posterior Gamma(300 + sum, 2 + size), weighted by the cluster's size)
    params = pmp.cluster_parameters(idata, model, draws=250, random_seed=0)
    rates = params["sunspots_rate"].values[..., 0].ravel()
    sizes = params["cluster_size"].values.ravel().astype(float)
    keep = sizes > 0
    rates, weights = rates[keep], sizes[keep] / sizes[keep].sum()
    order = np.argsort(rates)
    cdf = np.cumsum(weights[order])
    q = [float(rates[order][np.searchsorted(cdf, p)]) for p in (0.05, 0.25, 0.5, 0.75, 0.95)]
    print("rate of a year's cluster: quantiles 5/25/50/75/95%:", ", ".join(f"{v:.1f}" for v in q))
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, (ax, ax_rate) = plt.subplots(1, 2, figsize=(12, 4.5))
        ax.hist(y, bins=40, density=True, alpha=0.5, lw=0, label="yearly sunspot counts")
        ax.fill_between(grid, dens["lower"], dens["upper"], color="gray", alpha=0.45, label="90% band")
        ax.plot(grid, dens["density"], c="k", label="posterior expected density")
        ax.set_xlabel("Yearly sunspot count")
        ax.set_yticklabels([])
        ax.legend()
        ax_rate.hist(rates, bins=np.arange(0, 200, 2), weights=weights, color="C1", lw=0)
        ax_rate.set_xlabel("Poisson rate of a year's cluster (posterior, size-weighted)")
        ax_rate.set_yticklabels([])
        fig.savefig(args.plot, dpi=90, bbox_inches="tight")
        print("saved", args.plot)
    return idata


if __name__ == "__main__":
    main()
