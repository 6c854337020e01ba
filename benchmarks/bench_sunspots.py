"""The PyMC gallery's Poisson DP mixture of yearly sunspot counts: pmp.GammaPoisson with collapsed
Gibbs against the gallery's truncated stick-breaking model with NUTS.

Same model and data in both (alpha ~ Gamma(1, 1), rates ~ Gamma(300, 2), Poisson counts; the
statsmodels yearly series 1700-2008 rounded to integers, n = 309); the gallery's settings for NUTS
(K = 50 components, init="advi", tune=5000, target_accept=0.95). Both run 2 chains with cores=1
after a warm-up run (numba and PyTensor compilation excluded). Reported: wall and CPU seconds of
pm.sample, and the effective sample size (ArviZ bulk ESS over both chains) and ESS per CPU second
of the number of clusters K and of the fitted density at a few counts.

* K. Ours: the partition's number of blocks. Stick-breaking: per draw, every year's component is
  drawn from its conditional given (w, lambda), and the occupied components are counted (the
  same posterior quantity, by data augmentation).
* Density at x. Ours: the Rao-Blackwellised predictive density of a new year given each draw's
  partition and alpha (pmp.predictive_density(..., keep_draws=True); its cost is reported
  separately). Stick-breaking: sum_k w_k Poisson(x | lambda_k) per draw. Both have the posterior
  predictive density as their mean.

    PYTHONPATH=$PWD python benchmarks/bench_sunspots.py [--quick]   (needs statsmodels)
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

POINTS = np.array([10, 50, 100, 150])


def timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def ess(values):
    """Bulk ESS of a (chain, draw) array."""
    import arviz as az

    return float(np.asarray(az.ess(np.asarray(values, float)[None] if np.ndim(values) == 1 else np.asarray(values, float))))


def ours(y, draws, tune, seed):
    import pymc as pm

    import pymc_partitions as pmp
    from pymc_partitions.pymc.compat import posterior_dataset
    from sunspots import build_model

    model = build_model(y)

    def run():
        with model:
            return pm.sample(draws=draws, tune=tune, chains=2, cores=1, random_seed=seed, progressbar=False,
                             step=[pmp.EscobarWest([model["alpha"]])], compute_convergence_checks=False)

    with model:  # warm-up: compilation
        pm.sample(draws=20, tune=5, chains=1, cores=1, progressbar=False, step=[pmp.EscobarWest([model["alpha"]])],
                  compute_convergence_checks=False)
    idata, wall, cpu = timed(run)
    k = posterior_dataset(idata, "sample_stats")["n_clusters"].values
    dens, dwall, dcpu = timed(lambda: pmp.predictive_density(idata, POINTS, model, keep_draws=True))
    per_draw = dens["density_draws"].values  # (chain, draw, point)
    return dict(wall=wall, cpu=cpu, k=k, density=per_draw, extra_cpu=dcpu, extra_wall=dwall)


def stick_breaking(y, draws, tune, seed, n_components=50):
    import pymc as pm
    import pytensor.tensor as pt
    from scipy import stats

    def weights(beta):
        return beta * pt.concatenate([[1], pt.extra_ops.cumprod(1 - beta)[:-1]])

    with pm.Model(coords={"component": np.arange(n_components), "obs_id": np.arange(len(y))}) as model:
        alpha = pm.Gamma("alpha", 1.0, 1.0)
        beta = pm.Beta("beta", 1, alpha, dims="component")
        w = pm.Deterministic("w", weights(beta), dims="component")
        lam = pm.Gamma("lambda_", 300.0, 2.0, dims="component")
        pm.Mixture("obs", w, pm.Poisson.dist(lam), observed=y, dims="obs_id")

    def run(d, t, chains, init="advi"):
        with model:
            return pm.sample(draws=d, tune=t, chains=chains, cores=1, init=init, target_accept=0.95,
                             random_seed=seed, progressbar=False, compute_convergence_checks=False)

    run(5, 5, 1, init="adapt_diag")  # warm-up: compilation
    idata, wall, cpu = timed(lambda: run(draws, tune, 2))
    post = idata.posterior if hasattr(idata, "posterior") else idata["posterior"]
    w_draws = np.asarray(post["w"].values)  # (chain, draw, K)
    lam_draws = np.asarray(post["lambda_"].values)
    rng = np.random.default_rng(seed)
    start = time.process_time()
    log_pois = stats.poisson.logpmf(y[None, None, :, None], lam_draws[:, :, None, :])  # (c, d, n, K)
    logits = np.log(np.maximum(w_draws, 1e-300))[:, :, None, :] + log_pois
    logits -= logits.max(axis=-1, keepdims=True)
    prob = np.exp(logits)
    prob /= prob.sum(axis=-1, keepdims=True)
    u = rng.random(prob.shape[:-1])[..., None]
    comp = (u > np.cumsum(prob, axis=-1)).sum(axis=-1)
    k = np.array([[np.unique(comp[c, d]).size for d in range(comp.shape[1])] for c in range(comp.shape[0])])
    density = (w_draws[:, :, None, :] * stats.poisson.pmf(POINTS[None, None, :, None],
                                                          lam_draws[:, :, None, :])).sum(axis=-1)
    extra = time.process_time() - start
    return dict(wall=wall, cpu=cpu, k=k, density=density, extra_cpu=extra, extra_wall=extra)


def report(name, res):
    k_ess = ess(res["k"])
    print(f"\n{name}: pm.sample {res['wall']:.1f} s wall, {res['cpu']:.1f} s CPU; "
          f"K mean {res['k'].mean():.2f} (sd {res['k'].std():.2f}); derived quantities "
          f"{res['extra_cpu']:.2f} s CPU")
    print(f"  {'quantity':<16}{'mean':>10}{'ESS':>9}{'ESS/s (CPU)':>13}")
    print(f"  {'K':<16}{res['k'].mean():>10.3f}{k_ess:>9.0f}{k_ess / res['cpu']:>13.1f}")
    for j, x in enumerate(POINTS):
        values = res["density"][..., j]
        e = ess(values)
        print(f"  {f'density({x})':<16}{values.mean():>10.5f}{e:>9.0f}{e / res['cpu']:>13.1f}")


def main(argv=None):
    from sunspots import load_sunspots

    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer draws, shorter NUTS tuning")
    parser.add_argument("--skip-nuts", action="store_true")
    parser.add_argument("--nuts-draws", type=int, default=None, help="default 1000 (the gallery's)")
    parser.add_argument("--nuts-tune", type=int, default=None, help="default 5000 (the gallery's)")
    args = parser.parse_args(argv)
    y = load_sunspots()
    draws, tune = (500, 200) if args.quick else (2000, 500)
    report(f"pmp.GammaPoisson + CollapsedGibbs + EscobarWest ({draws} draws x 2 chains, tune {tune})",
           ours(y, draws, tune, seed=1))
    if not args.skip_nuts:
        nuts_draws, nuts_tune = (300, 500) if args.quick else (1000, 5000)
        nuts_draws = args.nuts_draws or nuts_draws
        nuts_tune = args.nuts_tune or nuts_tune
        report(f"stick-breaking K = 50, NUTS (init advi, target_accept 0.95; {nuts_draws} draws x 2 chains, tune {nuts_tune})",
               stick_breaking(y, nuts_draws, nuts_tune, seed=1))


if __name__ == "__main__":
    main()
