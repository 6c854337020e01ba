"""Benchmarks of the predictive functions (prints a table; never fails: tests assert, this measures).

    python benchmarks/bench_predictive.py           # n = 10^4, 500 draws (~1 min on 2 shared cores)
    python benchmarks/bench_predictive.py --quick   # n = 2000

Draws are real posterior draws: collapsed Gibbs sweeps of the package's kernel on a DPMM (CRP(1),
NormalNormal, D = 2) of a mixture of 10 overlapping Gaussian clusters (``bench_summaries.
gibbs_draws``: ~12 clusters per draw), stored as a ``pm.sample``-type result (one chain) of the
matching PyMC model. Timed, after a warm-up call each (numba compiled and cached):

1. ``pmp.predictive_density`` at 200 points (2-d), NormalNormal and, on the same draws, a
   Normal-inverse-Wishart model (Student-t predictives), and with a random alpha (a draw per
   posterior draw: the hyperparameters are evaluated per draw);
2. replicated data: ``pm.sample_posterior_predictive`` (PyMC's loop over draws, one compiled call
   each) and ``pmp.sample_posterior_predictive`` (a numpy loop over draws);
3. ``pmp.cluster_parameters`` and ``pmp.join_probabilities`` (200 points, a given clustering).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import pymc as pm  # noqa: E402
import xarray as xr  # noqa: E402

import pymc_partitions as pmp  # noqa: E402
from bench_summaries import gibbs_draws, load, timed  # noqa: E402
from pymc_partitions.pymc.compat import new_result  # noqa: E402


def data_of(n: int, k: int = 10, spread: float = 4.0, seed: int = 0) -> np.ndarray:
    """The data gibbs_draws clusters (same seed, same draws of the generator)."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=spread, size=(k, 2))
    truth = rng.integers(0, k, n)
    return centres[truth] + rng.normal(size=(n, 2))


def models(y):
    n = len(y)
    with pm.Model() as diag:
        z = pmp.Partition("z", pmp.CRP(1.0), n=n)
        pmp.NormalNormal("y", partition=z, mu0=0.0, sigma0=4.0, sigma=1.0, observed=y)
    with pm.Model() as niw:
        z = pmp.Partition("z", pmp.CRP(1.0), n=n)
        pmp.NormalInverseWishart("y", partition=z, mu0=0.0, kappa0=0.1, nu0=4.0, scale0=np.eye(2), observed=y)
    with pm.Model() as random_alpha:
        alpha = pm.Gamma("alpha", 1.0, 1.0)
        z = pmp.Partition("z", pmp.CRP(alpha), n=n)
        pmp.NormalNormal("y", partition=z, mu0=0.0, sigma0=4.0, sigma=1.0, observed=y)
    return diag, niw, random_alpha


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    n, draws, points = (2000, 500, 200) if args.quick else (10_000, 500, 200)
    print(f"# Predictive functions: n = {n}, {draws} draws, {points} points; load {load()}")
    t0 = time.perf_counter()
    z, _ = gibbs_draws(n, draws)
    y = data_of(n)
    print(f"(posterior draws: {time.perf_counter() - t0:.1f} s; clusters per draw: median "
          f"{int(np.median(z.max(axis=1) + 1))})")
    alpha = np.random.default_rng(1).gamma(2.0, 0.5, size=draws)
    result = new_result({
        "posterior": xr.Dataset({"z": (("chain", "draw", "z_dim_0"), z[None]), "alpha": (("chain", "draw"), alpha[None])}),
        "observed_data": xr.Dataset({"y": (("y_dim_0", "y_dim_1"), y)}),
    })
    diag, niw, random_alpha = models(y)
    rng = np.random.default_rng(2)
    x = rng.normal(scale=4.0, size=(points, 2))
    warm = new_result({"posterior": xr.Dataset({"z": (("chain", "draw", "z_dim_0"), z[None, :2])})})

    print("\n| what | wall | CPU | per draw |")
    print("|---|---|---|---|")

    def row(label, fn, per=draws):
        _, wall, cpu = timed(fn, repeats=3)
        print(f"| {label} | {wall:.2f} s | {cpu:.2f} s | {1e3 * wall / per:.2f} ms |")

    for label, model in [("NormalNormal", diag), ("NIW", niw), ("NormalNormal, random alpha", random_alpha)]:
        pmp.predictive_density(result, x, model, draws=2)  # warm-up
        row(f"`pmp.predictive_density`, {label}, {points} points", lambda m=model: pmp.predictive_density(result, x, m))
    with diag:
        pm.sample_posterior_predictive(warm, progressbar=False)
        row("`pm.sample_posterior_predictive` (NormalNormal)",
            lambda: pm.sample_posterior_predictive(result, progressbar=False, random_seed=0))
    pmp.sample_posterior_predictive(warm, diag, random_seed=0)
    row("`pmp.sample_posterior_predictive` (NormalNormal)",
        lambda: pmp.sample_posterior_predictive(result, diag, random_seed=0))
    pmp.sample_posterior_predictive(warm, niw, random_seed=0)
    row("`pmp.sample_posterior_predictive` (NIW)", lambda: pmp.sample_posterior_predictive(result, niw, random_seed=0))
    pmp.cluster_parameters(warm, niw, random_seed=0)
    row("`pmp.cluster_parameters` (NIW: means and covariances)",
        lambda: pmp.cluster_parameters(result, niw, random_seed=0))
    clustering = z[-1]
    row(f"`pmp.join_probabilities`, given clustering, {points} points, fixed hyperparameters",
        lambda: pmp.join_probabilities(clustering, x, diag), per=1)
    row(f"`pmp.join_probabilities`, given clustering, {points} points, random alpha ({draws} draws)",
        lambda: pmp.join_probabilities(result, x, random_alpha, labels=clustering))


if __name__ == "__main__":
    main()
