#!/usr/bin/env python
"""Cost of a collapsed Gibbs sweep of the regression family against NormalNormal at the same n; and
(``--mixing``) ESS per CPU second of the collapsed family against the same model through the
non-conjugate path on the ethanol data (issue 21's target: >= 5x).

    python benchmarks/bench_regression.py            # n = 10^4 (about a minute)
    python benchmarks/bench_regression.py --quick    # n = 2000
    python benchmarks/bench_regression.py --mixing   # ethanol, collapsed vs slots (about a minute)

Synthetic clusters of regressions: 10 clusters of equal size, covariates N(0, 1) plus an intercept
(p = 2, 5, 10 coefficients), responses from each cluster's line with noise sd 0.3; the sweep starts
from the true labels after two burn-in sweeps. Baselines on the same labels: NormalNormal with
D = 2 (the package's reference sweep) and with D = p + 1 (the same data columns). CPU seconds
(``time.process_time``) per sweep of ``GibbsKernel.step`` (random numbers included), median over
repeats after warm-up (numba compilation excluded); ratios against NormalNormal D = 2 measured in
the same process. Prints the load average; measures, never fails.

``--mixing``: the ethanol clusters of regressions of ``examples/ethanol_regressions.py`` (E on
centred NOx with an intercept, CRP(1), sigma_b^2 ~ InvGamma(2, 0.01), beta_b | sigma_b^2 ~
N([mean E, 0], sigma_b^2 diag(400, 100))) fitted twice by a plain ``pm.sample`` (steps assigned by
PyMC and the package), 2 chains of 2000 draws after 300 tuning draws, ``cores=1``, after a warm-up
run (caches filled): once with ``pmp.NormalLinearRegression`` (beta and sigma integrated out), once
as a slot model through ``pmp.NonConjugateGibbs`` with the same prior
(``sigma2 = pm.InverseGamma("sigma2", 2, 0.01, shape=n)``, ``beta = pm.Normal("beta", mu0,
sqrt(sigma2[:, None] cov0), shape=(n, 2))``, ``pm.Normal("E", (X * beta[z]).sum(-1),
sqrt(sigma2[z]))``; ``--noncentred``: ``b = pm.Normal("b", 0, 1, shape=(n, 2))`` and
``beta[z] = mu0 + sqrt(sigma2[z] cov0) * b[z]``, the same prior). CPU = ``time.process_time`` of the whole ``pm.sample`` call (both chains).
Label-invariant quantities computed from the labels of every draw of both runs: K, the largest
cluster's share, and the log joint of the partition with beta and sigma integrated out, log p(z) +
log p(y | z) (the collapsed family's, from its kernel). ESS: ArviZ bulk ESS over both chains.
Agreement: z = difference of means / sqrt(mcse_1^2 + mcse_2^2).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from pymc_partitions.families import kernels as K
from pymc_partitions.priors import CRP
from pymc_partitions.samplers.gibbs import GibbsKernel

N_CLUSTERS = 10


def synthetic(n, p, seed=0):
    rng = np.random.default_rng(seed)
    labels = np.arange(n) % N_CLUSTERS
    X = np.column_stack([np.ones(n), rng.standard_normal((n, p - 1))])
    beta = rng.normal(0.0, 3.0, (N_CLUSTERS, p))
    y = np.einsum("np,np->n", X, beta[labels]) + 0.3 * rng.standard_normal(n)
    return labels, X, y


def per_sweep(kernel, labels, reps, seed=1):
    rng = np.random.default_rng(seed)
    for _ in range(2):
        labels = kernel.step(labels, rng)[0]
    times = []
    for _ in range(reps):
        t = time.process_time()
        labels = kernel.step(labels, rng)[0]
        times.append(time.process_time() - t)
    return float(np.median(times)), int(labels.max()) + 1


def ethanol_models(noncentred=False):
    """(collapsed model, slot model) of the ethanol clusters of regressions, the same prior."""
    import pymc as pm
    import pytensor.tensor as pt

    import pymc_partitions as pmp

    data = pmp.datasets.load_ethanol()
    nox, e = data[:, 0], data[:, 2]
    n = len(e)
    X = np.column_stack([np.ones(n), nox - nox.mean()])
    mu0, cov0, a0, b0 = np.array([e.mean(), 0.0]), np.array([400.0, 100.0]), 2.0, 0.01
    with pm.Model() as collapsed:
        z = pmp.Partition("z", pmp.CRP(1.0), n=n)
        pmp.NormalLinearRegression("E", partition=z, X=X, mu0=mu0, cov0=cov0, a0=a0, b0=b0, observed=e)
    with pm.Model() as slots:
        z = pmp.Partition("z", pmp.CRP(1.0), n=n)
        sigma2 = pm.InverseGamma("sigma2", a0, b0, shape=n)
        if noncentred:
            b = pm.Normal("b", 0.0, 1.0, shape=(n, 2))
            coef = mu0 + pt.sqrt(sigma2[z][:, None] * cov0) * b[z]  # beta_b | sigma2_b ~ N(mu0, sigma2_b cov0)
        else:
            coef = pm.Normal("beta", mu0, pt.sqrt(sigma2[:, None] * cov0), shape=(n, 2))[z]
        pm.Normal("E", (X * coef).sum(-1), pt.sqrt(sigma2[z]), observed=e)
    return collapsed, slots


def mixing(draws=2000, tune=300, chains=2, seed=1, noncentred=False):
    import arviz as az
    import pymc as pm

    from pymc_partitions.pymc.compat import posterior_dataset
    from pymc_partitions.pymc.terms import PartitionTerms
    from pymc_partitions.samplers.gibbs import log_joint

    collapsed, slots = ethanol_models(noncentred)
    terms = PartitionTerms(collapsed, "z")
    prior_params, pack = terms.kernel_inputs(collapsed.initial_point(0))

    def ess_mcse(values):
        mean_ess = float(np.asarray(az.ess(values, method="mean")))
        return float(np.asarray(az.ess(values))), float(values.std() / np.sqrt(mean_ess))

    results = {}
    for name, model in (("NormalLinearRegression (collapsed)", collapsed), (f"slots{' (non-centred)' if noncentred else ''} + NonConjugateGibbs", slots)):
        with model:
            pm.sample(draws=20, tune=20, chains=1, cores=1, random_seed=seed, progressbar=False,
                      compute_convergence_checks=False)  # warm-up: numba and PyTensor caches
            cpu = time.process_time()
            idata = pm.sample(draws=draws, tune=tune, chains=chains, cores=1, random_seed=seed, progressbar=False,
                              compute_convergence_checks=False)
            cpu = time.process_time() - cpu
        labels = posterior_dataset(idata)["z"].values.astype(np.int64)  # (chain, draw, n)
        n = labels.shape[-1]
        quantities = {
            "K": (labels.max(axis=-1) + 1).astype(float),
            "largest share": np.array([[np.bincount(z).max() / n for z in chain] for chain in labels]),
            "log p(z, y)": np.array([[log_joint(z, pack, terms.prior_code, prior_params) for z in chain]
                                     for chain in labels]),
        }
        results[name] = (cpu, quantities)
    (name_a, (cpu_a, qa)), (name_b, (cpu_b, qb)) = results.items()
    print(f"ethanol (n = 88), {chains} chains x {draws} draws (tune {tune}), cores=1; CPU = process_time of "
          f"pm.sample; load average {os.getloadavg()[0]:.2f}")
    print(f"{name_a}: {cpu_a:.1f} s CPU;  {name_b}: {cpu_b:.1f} s CPU")
    print(f"{'quantity':<16}{'mean coll.':>12}{'mean slots':>12}{'z':>7}{'ESS coll.':>11}{'ESS slots':>11}"
          f"{'ESS/s coll.':>13}{'ESS/s slots':>13}{'ratio':>8}")
    for key in qa:
        ea, ma = ess_mcse(qa[key])
        eb, mb = ess_mcse(qb[key])
        z = (qa[key].mean() - qb[key].mean()) / np.hypot(ma, mb)
        print(f"{key:<16}{qa[key].mean():>12.3f}{qb[key].mean():>12.3f}{z:>7.2f}{ea:>11.0f}{eb:>11.0f}"
              f"{ea / cpu_a:>13.1f}{eb / cpu_b:>13.1f}{(ea / cpu_a) / (eb / cpu_b):>8.1f}")
    ka, kb = qa["K"].ravel(), qb["K"].ravel()
    support = np.arange(1, int(max(ka.max(), kb.max())) + 1)
    print("P(K = k) collapsed/slots: " + "  ".join(f"{v}: {np.mean(ka == v):.2f}/{np.mean(kb == v):.2f}"
                                                  for v in support if np.mean(ka == v) + np.mean(kb == v) > 0.005))
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--mixing", action="store_true", help="ESS per CPU second, collapsed vs slots (ethanol)")
    parser.add_argument("--noncentred", action="store_true", help="--mixing: the slot model's beta non-centred")
    args = parser.parse_args()
    if args.mixing:
        mixing(draws=500 if args.quick else 2000, noncentred=args.noncentred)
        return
    n, reps = (2000, 9) if args.quick else (10_000, 15)
    prior = CRP(1.0)
    print(f"load average at start: {os.getloadavg()[0]:.2f}; n = {n}, {N_CLUSTERS} true clusters, {reps} sweeps each")
    rows = []
    base = None
    for p in (2, 5, 10):
        labels, X, y = synthetic(n, p)
        lr = K.FamilyPack.build([(K.LINEAR_REGRESSION, np.c_[X, y], K.linear_regression_hyper(0.0, 10.0, 2.0, 0.1, p))])
        cases = [("NormalNormal", 2, np.c_[X[:, 1:2] if p > 1 else X, y][:, :2]),
                 ("NormalNormal", p + 1, np.c_[X, y]), ("NormalLinearRegression", p, None)]
        for name, dim, data in cases:
            if name == "NormalNormal" and dim == 2 and base is not None:
                continue
            if name == "NormalNormal":
                pack = K.FamilyPack.build([(K.DIAG_NORMAL, data, K.diag_normal_hyper(0.0, 5.0, 1.0, dim))])
            else:
                pack = lr
            kernel = GibbsKernel(pack, prior.code, prior.kernel_params())
            kernel.step(labels.copy(), np.random.default_rng(0))  # compile
            sec, k = per_sweep(kernel, labels.copy(), reps)
            if base is None:
                base = sec
            rows.append((name, "p" if name.endswith("Regression") else "D", dim, sec, sec / base, k))
    print(f"{'family':<24}{'size':>8}{'ms / sweep (CPU)':>18}{'vs NormalNormal D=2':>22}{'clusters':>10}")
    for name, what, dim, sec, ratio, k in rows:
        print(f"{name:<24}{what + '=' + str(dim):>8}{1e3 * sec:>18.2f}{ratio:>22.2f}{k:>10}")
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
