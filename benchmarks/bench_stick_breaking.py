#!/usr/bin/env python
"""Non-conjugate partition mixtures against PyMC's truncated stick-breaking NUTS model (issue 21's
first target: ESS per CPU second of K and of the density at 5 points >= 50x, posteriors agree).

    PYTHONPATH=$PWD python benchmarks/bench_stick_breaking.py --quick     # a few minutes
    PYTHONPATH=$PWD python benchmarks/bench_stick_breaking.py             # longer NUTS runs
    PYTHONPATH=$PWD python benchmarks/bench_stick_breaking.py --only galaxies --nuts-draws 200

Two data sets, standardised (each column to mean 0, sd 1), the same prior and likelihood in both
models:

* Galaxies (n = 82): Student-t clusters with nu = 4, mu_b ~ Normal(0, 2), sigma_b ~ HalfNormal(0.5).
* Old Faithful (n = 272, D = 2): Normal clusters of unknown diagonal variance, mu_b ~ Normal(0, 2)
  and sigma_b ~ InverseGamma(3, 1) per coordinate (mean 0.5). Not HalfNormal(0.5): the data hold ties
  (51 distinct waiting times among 272, up to 15 equal), and a cluster of two tied items has a
  likelihood ~ 1/sigma in that coordinate after integrating its mean, so with a prior density positive at
  sigma = 0 the posterior is improper (a sampler that explores well drifts to sigma -> 0: the slice
  update did, K 10-12 and log joint +12000); InverseGamma vanishes faster than any power at 0.
* alpha ~ Gamma(1, 1) (the gallery's), a Dirichlet process with concentration alpha.

The package: the slot model of issue 21 (``z = pmp.Partition("z", pmp.CRP(alpha), n=n)``,
``mu``/``sigma`` with one slot per item, ``pm.StudentT("y", 4, mu[z], sigma[z], observed=y)``)
sampled by a plain ``pm.sample`` (it assigns NonConjugateGibbs to [z, mu, sigma] and EscobarWest
to alpha). PyMC: the gallery's truncated stick-breaking model ("Dirichlet process mixtures for
density estimation"): T = 30 components, ``beta ~ Beta(1, alpha)``, weights
``beta_k prod_{j<k} (1 - beta_j)`` with the last weight closing the stick (so they sum to one:
the Ishwaran-James truncation; the gallery drops the remainder), component parameters from the
same base measure, ``pm.Mixture`` of StudentT components on the galaxies and the marginalised
``logsumexp`` (a Potential) for Old Faithful's 2-D diagonal Normals (``pm.Mixture`` would mix the
two coordinates independently); NUTS with PyMC's defaults (the gallery's ``init="advi"`` and
higher ``target_accept`` were not used: they only add cost).

Both run ``chains`` chains with ``cores=1`` (sequentially in this process) after a short warm-up
run (numba / PyTensor caches filled); CPU seconds are ``time.process_time`` of the whole timed
``pm.sample`` call (all chains, tuning and step construction included). ESS is ArviZ's bulk ESS
over all chains. Quantities, defined on both models:

* K: ours, the partition's number of blocks; stick-breaking, per draw every item's component is
  drawn from its conditional given (w, mu, sigma) and the occupied components are counted (the
  same posterior quantity by data augmentation; post-processing cost reported separately).
* density(x) at 5 points: ours, the predictive density of a new item given the draw,
  sum_b n_b / (n + alpha) f(x | phi_b) + alpha / (n + alpha) g0(x), g0 the base measure's prior
  predictive (by Monte Carlo with 2 x 10^5 fixed draws, the same for every draw); stick-breaking,
  sum_k w_k f(x | phi_k). Both have the posterior predictive density as their mean.

Agreement: for each density point and for the mean of K, z = difference / sqrt(mcse_1^2 +
mcse_2^2) (MCSE of the mean: sd / sqrt(ArviZ's mean ESS)); the K distributions are printed side by side with their
total-variation distance. Prints; never fails.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

POINTS = {
    # galaxies: velocities in 1000 km/s, standardised at run time
    "galaxies": np.array([10.0, 16.5, 20.0, 23.0, 33.0]),
    # faithful: (eruption minutes, waiting minutes), standardised at run time
    "faithful": np.array([[2.0, 55.0], [4.4, 80.0], [3.0, 70.0], [4.0, 65.0], [1.8, 80.0]]),
}
MU_SD, SIGMA_SD, NU, TRUNCATION = 2.0, 0.5, 4.0, 30
#: Faithful's sigma prior, InverseGamma(shape, scale) (see the module docstring: HalfNormal is improper there)
SIGMA_IG = (3.0, 1.0)


def sigma_prior(name, shape, dims=None):
    """The clusters' sigma (inside a model): HalfNormal(0.5) on the galaxies, InverseGamma(3, 1) on Faithful."""
    import pymc as pm

    kwargs = {"dims": dims} if dims is not None else {"shape": shape}
    if name == "galaxies":
        return pm.HalfNormal("sigma", SIGMA_SD, **kwargs)
    return pm.InverseGamma("sigma", *SIGMA_IG, **kwargs)


def load(name):
    import pymc_partitions as pmp

    if name == "galaxies":
        raw = pmp.datasets.load_galaxies() / 1000.0
    else:
        raw = pmp.datasets.load_faithful()
    mean, sd = raw.mean(axis=0), raw.std(axis=0)
    return (raw - mean) / sd, (POINTS[name] - mean) / sd


def log_f(name, x, mu, sigma):
    """Log-likelihood of x under component(s) (mu, sigma), broadcasting; faithful sums the last axis."""
    from scipy import stats

    if name == "galaxies":
        return stats.t.logpdf(x, NU, loc=mu, scale=sigma)
    return stats.norm.logpdf(x, loc=mu, scale=sigma).sum(axis=-1)


def g0_density(name, points, draws=200_000, seed=12345):
    """The base measure's prior predictive density at ``points`` (fixed Monte Carlo sample)."""
    rng = np.random.default_rng(seed)
    shape = (draws,) if name == "galaxies" else (draws, 2)
    mu = rng.normal(0.0, MU_SD, shape)
    if name == "galaxies":
        sigma = np.abs(rng.normal(0.0, SIGMA_SD, shape))
    else:  # InverseGamma(a, b) = b / Gamma(a, 1)
        sigma = SIGMA_IG[1] / rng.gamma(SIGMA_IG[0], 1.0, shape)
    return np.array([np.exp(log_f(name, x, mu, sigma)).mean() for x in points])


def timed(fn):
    cpu, wall = time.process_time(), time.perf_counter()
    out = fn()
    return out, time.process_time() - cpu, time.perf_counter() - wall


def ess_mcse(values):
    """(bulk ESS, MCSE of the mean = sd / sqrt(mean ESS)) of a (chain, draw) array."""
    import arviz as az

    values = np.asarray(values, float)
    mean_ess = float(np.asarray(az.ess(values, method="mean")))
    return float(np.asarray(az.ess(values))), float(values.std() / np.sqrt(mean_ess))


def posterior(idata, group="posterior"):
    from pymc_partitions.pymc.compat import posterior_dataset

    return posterior_dataset(idata, group)


def ours(name, y, points, draws, tune, chains, seed, step_kwargs=None):
    import pymc as pm

    import pymc_partitions as pmp

    n = len(y)
    shape = n if name == "galaxies" else (n, 2)
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 1.0, 1.0)
        z = pmp.Partition("z", pmp.CRP(alpha), n=n)
        mu = pm.Normal("mu", 0.0, MU_SD, shape=shape)
        sigma = sigma_prior(name, shape)
        if name == "galaxies":
            pm.StudentT("y", nu=NU, mu=mu[z], sigma=sigma[z], observed=y)
        else:
            pm.Normal("y", mu=mu[z], sigma=sigma[z], observed=y)

    def run(d, t, c):
        with model:
            step = None if step_kwargs is None else pmp.NonConjugateGibbs([model["z"]], **step_kwargs)
            return pm.sample(draws=d, tune=t, chains=c, cores=1, random_seed=seed, progressbar=False,
                             compute_convergence_checks=False, step=step)

    run(20, 20, 1)  # warm-up: numba and PyTensor caches
    idata, cpu, wall = timed(lambda: run(draws, tune, chains))
    start = time.process_time()
    post = posterior(idata)
    labels = post["z"].values.astype(np.int64)  # (chain, draw, n)
    mus, sigmas, alphas = post["mu"].values, post["sigma"].values, post["alpha"].values
    k = labels.max(axis=-1) + 1
    g0 = g0_density(name, points)
    density = np.empty(k.shape + (len(points),))
    for c in range(k.shape[0]):
        for d in range(k.shape[1]):
            K = k[c, d]
            sizes = np.bincount(labels[c, d], minlength=K)
            a = alphas[c, d]
            comp = np.exp(log_f(name, points[:, None], mus[c, d, None, :K], sigmas[c, d, None, :K]))  # (points, K)
            density[c, d] = (comp @ sizes + a * g0) / (n + a)
    share = np.stack([np.bincount(row, minlength=n).max(axis=-1) for row in labels.reshape(-1, n)])
    share = share.reshape(k.shape) / n
    extra = time.process_time() - start
    joint = log_joint(model, post, k.shape, k)
    return dict(cpu=cpu, wall=wall, k=k, density=density, extra=extra, alpha=alphas, share=share, joint=joint)


def log_joint(model, post, shape, k, slots=("mu", "sigma")):
    """The log joint density of the partition, alpha, the occupied slots and the data at every draw (no
    Jacobian; the unused slots, fresh base-measure draws each draw, are left out: they are noise)."""
    import pytensor
    import pytensor.tensor as pt

    terms = model.logp(jacobian=False, sum=False)
    names = [rv.name for rv in model.basic_RVs]
    fn = pytensor.function(model.value_vars, terms, on_unused_input="ignore")

    def logp(point, K):
        total = 0.0
        for name, t in zip(names, fn(**point)):
            total += float(np.sum(t[:K]) if name in slots else np.sum(t))
        return total

    forward = {}
    for rv in model.free_RVs:
        tr = model.rvs_to_transforms.get(rv)
        if tr is not None:  # the value scale from the recorded (constrained) draws; these models' transforms are fixed
            x = pt.tensor(dtype=rv.dtype, shape=(None,) * rv.ndim)
            forward[rv.name] = pytensor.function([x], tr.forward(x, *rv.owner.inputs), on_unused_input="ignore")
    joint = np.empty(shape)
    for c in range(shape[0]):
        for d in range(shape[1]):
            K = k[c, d]
            point = {}
            for rv in model.free_RVs:
                x = np.asarray(post[rv.name].values[c, d])
                point[model.rvs_to_values[rv].name] = forward[rv.name](x) if rv.name in forward else x
            joint[c, d] = logp(point, K)
    return joint


def stick_breaking(name, y, points, draws, tune, chains, seed, T=TRUNCATION):
    import pymc as pm
    import pytensor.tensor as pt

    n = len(y)

    def weights(beta):  # the gallery's stick_breaking, with the last weight closing the stick
        remaining = pt.concatenate([[1.0], pt.extra_ops.cumprod(1.0 - beta)])
        return pt.concatenate([beta, [1.0]]) * remaining

    with pm.Model(coords={"component": np.arange(T), "stick": np.arange(T - 1)}) as model:
        alpha = pm.Gamma("alpha", 1.0, 1.0)
        beta = pm.Beta("beta", 1.0, alpha, dims="stick")
        w = pm.Deterministic("w", weights(beta), dims="component")
        if name == "galaxies":
            mu = pm.Normal("mu", 0.0, MU_SD, dims="component")
            sigma = sigma_prior(name, None, dims="component")
            pm.Mixture("y", w, pm.StudentT.dist(nu=NU, mu=mu, sigma=sigma), observed=y)
        else:
            mu = pm.Normal("mu", 0.0, MU_SD, shape=(T, 2))
            sigma = sigma_prior(name, (T, 2))
            comp = pm.logp(pm.Normal.dist(mu[None], sigma[None]), y[:, None, :]).sum(-1)  # (n, T)
            pm.Potential("y", pm.math.logsumexp(pt.log(w)[None] + comp, axis=1).sum())

    def run(d, t, c):
        with model:
            return pm.sample(draws=d, tune=t, chains=c, cores=1, random_seed=seed, progressbar=False,
                             compute_convergence_checks=False)

    run(5, 5, 1)  # warm-up: PyTensor compilation
    idata, cpu, wall = timed(lambda: run(draws, tune, chains))
    start = time.process_time()
    post = posterior(idata)
    w_, mu_, sigma_ = post["w"].values, post["mu"].values, post["sigma"].values  # (c, d, T[, 2])
    rng = np.random.default_rng(seed)
    C, D = w_.shape[:2]
    k = np.empty((C, D), np.int64)
    density = np.empty((C, D, len(points)))
    for c in range(C):
        for d in range(D):
            lw = np.log(np.maximum(w_[c, d], 1e-300))
            if name == "galaxies":
                ll = log_f(name, y[:, None], mu_[c, d][None], sigma_[c, d][None])  # (n, T)
                dens = np.exp(log_f(name, points[:, None], mu_[c, d][None], sigma_[c, d][None]))
            else:
                ll = log_f(name, y[:, None, :], mu_[c, d][None], sigma_[c, d][None])
                dens = np.exp(log_f(name, points[:, None, :], mu_[c, d][None], sigma_[c, d][None]))
            logits = lw[None] + ll
            prob = np.exp(logits - logits.max(axis=1, keepdims=True))
            prob /= prob.sum(axis=1, keepdims=True)
            comp = (rng.random((n, 1)) > np.cumsum(prob, axis=1)).sum(axis=1)
            k[c, d] = np.unique(comp).size
            density[c, d] = dens @ w_[c, d]
    extra = time.process_time() - start
    stats = posterior(idata, "sample_stats")
    divergences = int(np.asarray(stats["diverging"].values).sum())
    tail = float(np.mean(w_[..., -1]))
    return dict(cpu=cpu, wall=wall, k=k, density=density, extra=extra, alpha=post["alpha"].values,
                divergences=divergences, tail=tail)


def quantities(res):
    out = {"K": res["k"]}
    for j in range(res["density"].shape[-1]):
        out[f"density(x{j + 1})"] = res["density"][..., j]
    return out


def compare(name, raw_points, a, b, chains, draws, nuts_chains, nuts_draws, config):
    print(f"\n== {name}: ours ({config}) {chains} x {draws} draws, NUTS {nuts_chains} x {nuts_draws} draws ==")
    print(f"ours: pm.sample {a['cpu']:.1f} s CPU ({a['wall']:.1f} s wall), derived quantities {a['extra']:.2f} s; "
          f"alpha mean {a['alpha'].mean():.2f}")
    print(f"NUTS: pm.sample {b['cpu']:.1f} s CPU ({b['wall']:.1f} s wall), derived quantities {b['extra']:.2f} s; "
          f"alpha mean {b['alpha'].mean():.2f}; {b['divergences']} divergences; mean weight of the last "
          f"component {b['tail']:.1e}")
    print(f"{'quantity':<14}{'point':>14}{'ours mean':>11}{'NUTS mean':>11}{'z':>7}"
          f"{'ESS ours':>10}{'ESS NUTS':>10}{'ESS/s ours':>12}{'ESS/s NUTS':>12}{'ratio':>9}")
    qa, qb = quantities(a), quantities(b)
    ratios, zs = [], []
    for j, key in enumerate(qa):
        ea, ma = ess_mcse(qa[key])
        eb, mb = ess_mcse(qb[key])
        z = (qa[key].mean() - qb[key].mean()) / np.hypot(ma, mb)
        ra, rb = ea / a["cpu"], eb / b["cpu"]
        ratios.append(ra / rb)
        zs.append(z)
        where = "" if key == "K" else np.array2string(np.atleast_1d(raw_points[j - 1]), precision=1)
        fmt = ".2f" if key == "K" else ".4f"
        print(f"{key:<14}{where:>14}{qa[key].mean():>11{fmt}}{qb[key].mean():>11{fmt}}{z:>7.2f}"
              f"{ea:>10.0f}{eb:>10.0f}{ra:>12.1f}{rb:>12.2f}{ra / rb:>9.0f}")
    ka, kb = a["k"].ravel(), b["k"].ravel()
    support = np.arange(1, max(ka.max(), kb.max()) + 1)
    pa = np.array([np.mean(ka == v) for v in support])
    pb = np.array([np.mean(kb == v) for v in support])
    print("P(K = k):  " + "  ".join(f"{v}: {x:.2f}/{y:.2f}" for v, x, y in zip(support, pa, pb) if x + y > 0.005)
          + "   (ours/NUTS)")
    print(f"TV distance of the K distributions {0.5 * np.abs(pa - pb).sum():.3f}; "
          f"smallest ESS/s ratio {min(ratios):.0f}x; largest |z| {max(abs(v) for v in zs):.2f}")
    return ratios, zs


def step_kwargs(config):
    """None for 'default' (pm.sample assigns the steps), else NonConjugateGibbs keywords from 'a=1:b=2'."""
    if config == "default":
        return None
    return {k: _parse(v) for k, v in (item.split("=") for item in config.split(":"))}


def _parse(text):
    """A keyword value from the command line: True/False, an integer, a float, else the string."""
    if text in ("True", "False"):
        return text == "True"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="short NUTS runs (a few minutes in all)")
    parser.add_argument("--only", default="galaxies,faithful")
    parser.add_argument("--chains", type=int, default=2)
    parser.add_argument("--draws", type=int, default=None, help="ours (default 2000, --quick 1000)")
    parser.add_argument("--tune", type=int, default=500)
    parser.add_argument("--nuts-draws", type=int, default=None, help="default 400 (--quick 100)")
    parser.add_argument("--nuts-tune", type=int, default=None, help="default 400 (--quick 100)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--configs", default="default",
                        help="ours: 'default' (plain pm.sample) or NonConjugateGibbs keywords, e.g. "
                             "'default,slot_steps=10:m=5' (each compared with the same NUTS run)")
    args = parser.parse_args(argv)
    draws = args.draws or (1000 if args.quick else 2000)
    nuts_draws = args.nuts_draws or (100 if args.quick else 400)
    nuts_tune = args.nuts_tune or (100 if args.quick else 400)
    print(f"Python {sys.version.split()[0]}; load average {os.getloadavg()[0]:.2f}; CPU = process_time of "
          f"pm.sample (cores=1, all chains); T = {TRUNCATION}")
    for name in args.only.split(","):
        y, points = load(name)
        mine = {config: ours(name, y, points, draws, args.tune, args.chains, args.seed, step_kwargs(config))
                for config in args.configs.split(",")}
        b = stick_breaking(name, y, points, nuts_draws, nuts_tune, args.chains, args.seed)
        for config, a in mine.items():
            compare(name, POINTS[name], a, b, args.chains, draws, args.chains, nuts_draws, config)
    print(f"\nload average at end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
