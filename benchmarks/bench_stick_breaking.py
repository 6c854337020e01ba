#!/usr/bin/env python
"""Non-conjugate partition mixtures against PyMC's truncated stick-breaking NUTS model (issue 21's
first target: ESS per CPU second of K and of the density at 5 points >= 50x, posteriors agree).

    PYTHONPATH=$PWD python benchmarks/bench_stick_breaking.py --quick     # a few minutes
    PYTHONPATH=$PWD python benchmarks/bench_stick_breaking.py             # longer NUTS runs
    PYTHONPATH=$PWD python benchmarks/bench_stick_breaking.py --only galaxies --nuts-draws 200
    # settling agreement: long runs saved, then compared together (benchmarks/README.md)
    PYTHONPATH=$PWD python benchmarks/bench_stick_breaking.py --only faithful --sides gibbs --chains 4 \
        --gibbs-draws 15000 --save runs/
    PYTHONPATH=$PWD python benchmarks/bench_stick_breaking.py --only faithful --sides none --load runs/a.npz,runs/b.npz

Two data sets, standardised (each column to mean 0, sd 1), the same prior and likelihood in both
models:

* Galaxies (n = 82): Student-t clusters with nu = 4, mu_b ~ Normal(0, 2), sigma_b ~ HalfNormal(0.5).
* Old Faithful (n = 272, D = 2): Normal clusters of unknown diagonal variance, mu_b ~ Normal(0, 2)
  and sigma_b ~ InverseGamma(3, 1) per coordinate (mean 0.5). Not HalfNormal(0.5): the data hold ties
  (51 distinct waiting times among 272, up to 15 equal), and a cluster of two tied items has a
  likelihood ~ 1/sigma in that coordinate after integrating its mean, so with a prior density positive at
  sigma = 0 the posterior is improper (a sampler that explores well drifts to sigma -> 0: the slice
  update did, K 10-12 and log joint +12000); InverseGamma vanishes faster than any power at 0.
  ``--faithful-prior variance``: the conventional prior on the variance instead, sigma_b^2 ~
  InverseGamma(3, 0.5) per coordinate (``sigma = pm.math.sqrt(sigma2)``; run labels get ``+var``).
  ``--faithful-prior gallery``: the PyMC gallery's prior per coordinate, tau_b ~ Gamma(1, 1), lambda_b ~
  Gamma(10, 1), mu_b ~ Normal(0, precision lambda_b tau_b) and the items' precision lambda_b tau_b too
  (``+gal``). ``--faithful-prior kappa``: the same priors but the items' precision tau_b alone, so lambda_b
  (a random kappa of a Normal-gamma prior) is a slot variable only the means' prior reads (``+kap``).
  ``benchmarks/reference_gallery.py`` is an independent collapsed sampler of both.
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
two coordinates independently); NUTS with ``target_accept=0.95`` and 1000 tuning draws by default
(``--target-accept``, ``--nuts-tune``): with PyMC's defaults (0.8) and 400 tuning draws its K on
Faithful was off (mean 4.16 against the exact samplers' 4.52-4.62; benchmarks/README.md), at 0.95 it
agrees. The gallery's ``init="advi"`` is not used.

A third opinion, ``--sides gibbs``: Ishwaran & James's (2001) blocked Gibbs sampler of the same
truncated model in numpy (:func:`blocked_gibbs`: labels, sticks and alpha by their exact conditionals,
cluster parameters by slice sampling), cheap and free of NUTS's tuning and divergences; ``--prior-k``
simulates K's prior under both models (CRP and truncated stick-breaking) and ``--check-gibbs`` runs the
reference sampler without the likelihood against that prior.

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
total-variation distance; with more runs (several ``--configs``, ``--sides``, ``--load``) a table of all of
them (K's mean, R-hat, ESS, per-chain means and distribution, the densities) and z for every pair. Prints;
never fails.
"""

from __future__ import annotations

import argparse
import math
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
#: with ``--faithful-prior variance``: the clusters' variance sigma^2 ~ InverseGamma(shape, scale) instead
VARIANCE_IG = (3.0, 0.5)
#: with ``--faithful-prior gallery`` or ``kappa``: the PyMC gallery's priors per coordinate, tau ~ Gamma(1, 1),
#: lambda ~ Gamma(10, 1) and mu ~ Normal(0, precision lambda * tau) (shape, rate); the items' precision is
#: lambda * tau (gallery) or tau (kappa)
GALLERY_TAU, GALLERY_LAMBDA = (1.0, 1.0), (10.0, 1.0)
#: "sigma" (sigma ~ InverseGamma(3, 1)), "variance" (sigma^2 ~ InverseGamma(3, 0.5)), "gallery" or "kappa"; set by
#: ``--faithful-prior``
FAITHFUL_PRIOR = "sigma"


def gallery_prior(name):
    """Whether data set ``name``'s clusters carry the gallery's priors (``--faithful-prior gallery`` or ``kappa``)."""
    return name == "faithful" and FAITHFUL_PRIOR in ("gallery", "kappa")


def cluster_parameters(name, shape, dims=None):
    """The clusters' (mu, sigma) inside a model: mu ~ Normal(0, 2) and :func:`sigma_prior`, or the gallery's
    precision-scaled priors (recorded as tau and lambda_; sigma = (lambda tau)^-1/2, or tau^-1/2 under kappa)."""
    import pymc as pm

    kwargs = {"dims": dims} if dims is not None else {"shape": shape}
    if gallery_prior(name):
        tau = pm.Gamma("tau", alpha=GALLERY_TAU[0], beta=GALLERY_TAU[1], **kwargs)
        lam = pm.Gamma("lambda_", alpha=GALLERY_LAMBDA[0], beta=GALLERY_LAMBDA[1], **kwargs)
        precision = lam * tau if FAITHFUL_PRIOR == "gallery" else tau
        return pm.Normal("mu", 0.0, tau=lam * tau, **kwargs), 1.0 / pm.math.sqrt(precision)
    return pm.Normal("mu", 0.0, MU_SD, **kwargs), sigma_prior(name, shape, dims)


def variance_prior(name):
    """Whether data set ``name``'s clusters carry the variance prior (``--faithful-prior variance``)."""
    return name == "faithful" and FAITHFUL_PRIOR == "variance"


def sigma_prior(name, shape, dims=None):
    """The clusters' sigma (inside a model): HalfNormal(0.5) on the galaxies, InverseGamma(3, 1) on Faithful, or
    with ``--faithful-prior variance`` the square root of sigma2 ~ InverseGamma(3, 0.5) there."""
    import pymc as pm

    kwargs = {"dims": dims} if dims is not None else {"shape": shape}
    if name == "galaxies":
        return pm.HalfNormal("sigma", SIGMA_SD, **kwargs)
    if variance_prior(name):
        return pm.math.sqrt(pm.InverseGamma("sigma2", *VARIANCE_IG, **kwargs))
    return pm.InverseGamma("sigma", *SIGMA_IG, **kwargs)


def sigma_draws(post):
    """The recorded clusters' sigma: ``sigma``, the square root of ``sigma2`` under the variance prior, or
    (lambda tau)^-1/2 under the gallery's (tau^-1/2 under kappa)."""
    if "tau" in post:
        precision = post["tau"].values * (post["lambda_"].values if FAITHFUL_PRIOR == "gallery" else 1.0)
        return 1.0 / np.sqrt(precision)
    return np.sqrt(post["sigma2"].values) if "sigma2" in post else post["sigma"].values


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
    if gallery_prior(name):  # numpy's gamma takes (shape, scale)
        tau = rng.gamma(GALLERY_TAU[0], 1.0 / GALLERY_TAU[1], shape)
        lam = rng.gamma(GALLERY_LAMBDA[0], 1.0 / GALLERY_LAMBDA[1], shape)
        mu = rng.normal(0.0, 1.0, shape) / np.sqrt(lam * tau)
        sigma = 1.0 / np.sqrt(lam * tau if FAITHFUL_PRIOR == "gallery" else tau)
    elif name == "galaxies":
        sigma = np.abs(rng.normal(0.0, SIGMA_SD, shape))
    elif variance_prior(name):
        sigma = np.sqrt(VARIANCE_IG[1] / rng.gamma(VARIANCE_IG[0], 1.0, shape))
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


def slot_model(name, y):
    """The package's model of data set ``name`` (standardised ``y``): a CRP partition with one slot of
    (mu, sigma) per item, Student-t (galaxies) or diagonal Normal (Faithful) clusters; see the module docstring."""
    import pymc as pm

    import pymc_partitions as pmp

    n = len(y)
    shape = n if name == "galaxies" else (n, 2)
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 1.0, 1.0)
        z = pmp.Partition("z", pmp.CRP(alpha), n=n)
        mu, sigma = cluster_parameters(name, shape)
        if name == "galaxies":
            pm.StudentT("y", nu=NU, mu=mu[z], sigma=sigma[z], observed=y)
        else:
            pm.Normal("y", mu=mu[z], sigma=sigma[z], observed=y)
    return model


def ours(name, y, points, draws, tune, chains, seed, step_kwargs=None, starts="dispersed"):
    import pymc as pm

    import pymc_partitions as pmp

    n = len(y)
    model = slot_model(name, y)

    def run(d, t, c):
        with model:
            step = None if step_kwargs is None else pmp.NonConjugateGibbs([model["z"]], **step_kwargs)
            return pm.sample(draws=d, tune=t, chains=c, cores=1, random_seed=seed, progressbar=False,
                             compute_convergence_checks=False, step=step, initvals=initial_partitions(n, c, starts))

    run(20, 20, 1)  # warm-up: numba and PyTensor caches
    idata, cpu, wall = timed(lambda: run(draws, tune, chains))
    start = time.process_time()
    post = posterior(idata)
    labels = post["z"].values.astype(np.int64)  # (chain, draw, n)
    mus, sigmas, alphas = post["mu"].values, sigma_draws(post), post["alpha"].values
    k = 1 + (np.diff(np.sort(labels, axis=-1), axis=-1) != 0).sum(axis=-1)  # distinct labels
    if not np.array_equal(k, labels.max(axis=-1) + 1):
        print("WARNING: the recorded labels are not canonical (K counted as distinct labels)")
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


def initial_partitions(n, chains, starts):
    """``pm.sample``'s initvals: None for "dispersed" (the Partition's default, its own random 32-label
    partition per chain), or for "mixed" the chains from one block, n singletons and dispersed in turn."""
    if starts == "dispersed":
        return None
    cycle = [{"z": np.zeros(n, np.int64)}, {"z": np.arange(n, dtype=np.int64)}, {}]
    return [cycle[c % 3] for c in range(chains)]


def log_joint(model, post, shape, k, slots=("mu", "sigma", "sigma2", "tau", "lambda_")):
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


def stick_breaking(name, y, points, draws, tune, chains, seed, T=TRUNCATION, target_accept=None):
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
            mu, sigma = cluster_parameters(name, (T, 2))
            comp = pm.logp(pm.Normal.dist(mu[None], sigma[None]), y[:, None, :]).sum(-1)  # (n, T)
            pm.Potential("y", pm.math.logsumexp(pt.log(w)[None] + comp, axis=1).sum())

    def run(d, t, c):
        kwargs = {} if target_accept is None else {"target_accept": target_accept}
        with model:
            return pm.sample(draws=d, tune=t, chains=c, cores=1, random_seed=seed, progressbar=False,
                             compute_convergence_checks=False, **kwargs)

    run(5, 5, 1)  # warm-up: PyTensor compilation
    idata, cpu, wall = timed(lambda: run(draws, tune, chains))
    start = time.process_time()
    post = posterior(idata)
    w_, mu_, sigma_ = post["w"].values, post["mu"].values, sigma_draws(post)  # (c, d, T[, 2])
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


def prior_k(n, draws, seed, T=TRUNCATION):
    """K's prior at n items, alpha ~ Gamma(1, 1): the DP's (CRP: K = sum_i Bernoulli(alpha / (alpha + i - 1)))
    against the truncated stick-breaking model's (T - 1 Beta(1, alpha) sticks, the last weight closing the
    stick, n labels drawn from the weights and the occupied components counted), both exact simulations."""
    rng = np.random.default_rng(seed)
    alpha = rng.gamma(1.0, 1.0, draws)
    i = np.arange(n)
    crp = np.zeros(draws, np.int64)
    for lo in range(0, draws, 10_000):
        a = alpha[lo:lo + 10_000, None]
        crp[lo:lo + 10_000] = (rng.random((a.shape[0], n)) < a / (a + i)).sum(axis=1)
    beta = rng.beta(1.0, np.repeat(alpha[:, None], T - 1, axis=1))
    w = np.concatenate([beta, np.ones((draws, 1))], axis=1) * np.concatenate(
        [np.ones((draws, 1)), np.cumprod(1.0 - beta, axis=1)], axis=1)
    w /= w.sum(axis=1, keepdims=True)  # rounding only
    sb = (rng.multinomial(n, w) > 0).sum(axis=1)
    support = np.arange(1, max(crp.max(), sb.max()) + 1)
    pa = np.array([np.mean(crp == v) for v in support])
    pb = np.array([np.mean(sb == v) for v in support])
    print(f"\nK's prior at n = {n}, alpha ~ Gamma(1, 1), {draws} draws each: CRP mean {crp.mean():.3f} +- "
          f"{crp.std() / np.sqrt(draws):.3f}, truncated stick-breaking (T = {T}) {sb.mean():.3f} +- "
          f"{sb.std() / np.sqrt(draws):.3f}; TV {0.5 * np.abs(pa - pb).sum():.4f}; mean weight of component T "
          f"{w[:, -1].mean():.1e}")
    print("   P(K = k) CRP/SB: " + "  ".join(f"{v}: {x:.3f}/{y:.3f}" for v, x, y in zip(support, pa, pb) if v <= 12))
    return crp, sb


def _logf_coord(name, y, mu, sigma):
    """Per coordinate log-likelihood, elementwise (the models' f is the product over coordinates)."""
    r = (y - mu) / sigma
    if name == "galaxies":
        c = math.lgamma((NU + 1) / 2) - math.lgamma(NU / 2) - 0.5 * math.log(NU * math.pi)
        return c - np.log(sigma) - (NU + 1) / 2 * np.log1p(r * r / NU)
    return -0.5 * math.log(2 * math.pi) - np.log(sigma) - 0.5 * r * r


def _log_prior_sigma(name, sigma):
    """The clusters' scale prior's log density (up to a constant)."""
    if name == "galaxies":
        return -0.5 * (sigma / SIGMA_SD) ** 2
    if variance_prior(name):  # sigma^2 ~ InverseGamma(a, b), as a density of sigma
        a, b = VARIANCE_IG
        return -(2 * a + 1) * np.log(sigma) - b / sigma ** 2
    a, b = SIGMA_IG
    return -(a + 1) * np.log(sigma) - b / sigma


def _draw_sigma(name, rng, shape):
    if name == "galaxies":
        return np.abs(rng.normal(0.0, SIGMA_SD, shape))
    if variance_prior(name):
        return np.sqrt(VARIANCE_IG[1] / rng.gamma(VARIANCE_IG[0], 1.0, shape))
    return SIGMA_IG[1] / rng.gamma(SIGMA_IG[0], 1.0, shape)


def _slice(x, logp, width, rng, max_out=32):
    """One slice-sampling update (Neal 2003: stepping out with the budget ``max_out`` split at random between
    the two ends, then shrinkage) of every element of ``x`` at once; ``logp(x)`` returns the elements'
    independent log densities."""
    threshold = logp(x) - rng.exponential(size=x.shape)
    left = x - width * rng.random(x.shape)
    right = left + width
    steps_left = np.floor(max_out * rng.random(x.shape))
    steps_right = max_out - 1 - steps_left
    while True:
        out = (steps_left > 0) & (logp(left) > threshold)
        if not out.any():
            break
        left = np.where(out, left - width, left)
        steps_left = np.where(out, steps_left - 1, 0)
    while True:
        out = (steps_right > 0) & (logp(right) > threshold)
        if not out.any():
            break
        right = np.where(out, right + width, right)
        steps_right = np.where(out, steps_right - 1, 0)
    new = x.copy()
    pending = np.ones(x.shape, bool)
    while pending.any():
        proposal = np.where(pending, left + rng.random(x.shape) * (right - left), new)
        ok = pending & (logp(proposal) > threshold)
        new = np.where(ok, proposal, new)
        pending &= ~ok
        below = pending & (proposal < x)
        left = np.where(below, proposal, left)
        right = np.where(pending & ~below, proposal, right)
    return new


def blocked_gibbs(name, y, points, draws, burn, chains, seed, T=TRUNCATION, power=1.0):
    """A reference sampler of the truncated stick-breaking model (the NUTS model's posterior), numpy only:
    Ishwaran & James's (2001) blocked Gibbs with data augmentation. Per iteration: every item's component
    given (w, mu, sigma) (categorical); the sticks given the labels, beta_k ~ Beta(1 + n_k, alpha +
    sum_{j>k} n_j); alpha given the sticks, Gamma(T, 1 - sum log(1 - beta_k)) (conjugate to Gamma(1, 1));
    the empty components' (mu, sigma) from the base measure; every occupied component's mu and log sigma
    (each coordinate) by a slice update given its items. K = occupied components of the labels. ``power``
    multiplies the log-likelihood: 0 samples the prior (its check against :func:`prior_k`). Not written for
    the gallery's prior."""
    if gallery_prior(name):
        raise SystemExit("--sides gibbs: not written for the gallery's priors (benchmarks/reference_gallery.py is)")
    rng = np.random.default_rng([seed, 2001])
    yy = y.reshape(len(y), -1)
    n, D = yy.shape
    k_out = np.empty((chains, draws), np.int64)
    alpha_out = np.empty((chains, draws))
    density = np.empty((chains, draws, len(points)))
    pts = points.reshape(len(points), -1)
    cpu = time.process_time()
    for c in range(chains):
        alpha = rng.gamma(1.0, 1.0)
        beta = rng.beta(1.0, alpha, T - 1)
        mu = rng.normal(0.0, MU_SD, (T, D))
        sigma = _draw_sigma(name, rng, (T, D))
        for it in range(burn + draws):
            w = np.append(beta, 1.0) * np.concatenate([[1.0], np.cumprod(1.0 - beta)])
            ll = power * _logf_coord(name, yy[:, None, :], mu[None], sigma[None]).sum(-1)
            ll += np.log(np.maximum(w, 1e-300))
            prob = np.exp(ll - ll.max(axis=1, keepdims=True))
            cum = np.cumsum(prob, axis=1)
            z = (rng.random((n, 1)) * cum[:, -1:] > cum).sum(axis=1)
            counts = np.bincount(z, minlength=T)
            after = counts[::-1].cumsum()[::-1]  # items in components >= k
            beta = rng.beta(1.0 + counts[:-1], alpha + after[1:])
            beta = np.minimum(beta, 1.0 - 1e-16)
            alpha = rng.gamma(T, 1.0 / (1.0 - np.log1p(-beta).sum()))
            empty = counts == 0
            mu[empty] = rng.normal(0.0, MU_SD, (int(empty.sum()), D))
            sigma[empty] = _draw_sigma(name, rng, (int(empty.sum()), D))
            occ = np.flatnonzero(~empty)

            def comp_ll(m, s):  # (len(occ), D): each occupied component's log-likelihood per coordinate
                full_m, full_s = mu.copy(), sigma.copy()
                full_m[occ], full_s[occ] = m, s
                terms = power * _logf_coord(name, yy, full_m[z], full_s[z])
                return np.stack([np.bincount(z, weights=terms[:, d], minlength=T)[occ] for d in range(D)], axis=1)

            width = 1.0 / np.sqrt(counts[occ])[:, None] * np.ones((1, D))
            mu[occ] = _slice(mu[occ], lambda m: comp_ll(m, sigma[occ]) - 0.5 * (m / MU_SD) ** 2, width, rng)
            log_s = _slice(np.log(sigma[occ]),
                           lambda ls: comp_ll(mu[occ], np.exp(ls)) + _log_prior_sigma(name, np.exp(ls)) + ls,
                           width, rng)
            sigma[occ] = np.exp(log_s)
            if it >= burn:
                d = it - burn
                k_out[c, d] = occ.size
                alpha_out[c, d] = alpha
                w = np.append(beta, 1.0) * np.concatenate([[1.0], np.cumprod(1.0 - beta)])
                dens = np.exp(_logf_coord(name, pts[:, None, :], mu[None], sigma[None]).sum(-1))  # (points, T)
                density[c, d] = dens @ w
    cpu = time.process_time() - cpu
    return dict(cpu=cpu, wall=cpu, k=k_out, density=density, extra=0.0, alpha=alpha_out)


def check_reference(name, y, points, prior, draws, burn, chains, seed):
    """:func:`blocked_gibbs` without the likelihood against ``prior``, K's truncated stick-breaking prior drawn
    by :func:`prior_k`: the reference sampler's label, stick and alpha updates must reproduce it."""
    check = blocked_gibbs(name, y, points, draws, burn, chains, seed, power=0.0)
    k = check["k"]
    ess, mcse = ess_mcse(k)
    prior_mcse = prior.std() / np.sqrt(prior.size)
    print(f"reference Gibbs without the likelihood, {chains} x {draws} draws: K mean {k.mean():.3f} +- {mcse:.3f} "
          f"(ESS {ess:.0f}) against the prior's {prior.mean():.3f} +- {prior_mcse:.3f}; "
          f"z {(k.mean() - prior.mean()) / np.hypot(mcse, prior_mcse):+.2f}")
    print("   P(K = k) Gibbs/prior: " + "  ".join(f"{v}: {np.mean(k == v):.3f}/{np.mean(prior == v):.3f}"
                                                  for v in range(1, 13)))


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


def agreement(name, raw_points, runs):
    """Every run side by side: K's mean, R-hat, ESS and distribution, the densities' means, each with its
    MCSE; then z of K's mean and of P(K = k) for every pair of runs (z = difference / sqrt(mcse_1^2 + mcse_2^2),
    mcse = sd / sqrt(mean ESS))."""
    import arviz as az

    if not runs:
        return
    print(f"\n== {name}: agreement of {len(runs)} runs ==")
    kmax = max(int(r["k"].max()) for r in runs.values())
    support = np.arange(1, kmax + 1)
    stats = {}
    for run, res in runs.items():
        k = np.asarray(res["k"], float)
        ess, mcse = ess_mcse(k)
        rhat = float(np.asarray(az.rhat(k))) if k.shape[0] > 1 else float("nan")
        probs = [(np.mean(k == v), ess_mcse(k == v)[1]) for v in support]
        dens = [(res["density"][..., j].mean(), ess_mcse(res["density"][..., j])[1])
                for j in range(res["density"].shape[-1])]
        stats[run] = dict(mean=k.mean(), mcse=mcse, probs=probs, dens=dens)
        extra = f"; {int(res['divergences'])} divergences" if "divergences" in res else ""
        print(f"{run}: {k.shape[0]} x {k.shape[1]} draws, {float(res['cpu']):.0f} s CPU; K mean {k.mean():.3f} +- "
              f"{mcse:.3f} (R-hat {rhat:.3f}, bulk ESS {ess:.0f}); alpha mean {np.mean(res['alpha']):.3f}{extra}")
        print("   K mean per chain: " + " ".join(f"{v:.2f}" for v in k.mean(axis=1)))
        print("   P(K = k): " + "  ".join(f"{v}: {p:.3f}+-{e:.3f}" for v, (p, e) in zip(support, probs) if p > 0.002))
        print("   density: " + "  ".join(f"{np.array2string(np.atleast_1d(x), precision=1)} {m:.4f}+-{e:.4f}"
                                         for x, (m, e) in zip(raw_points, dens)))
    names = list(runs)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            sa, sb = stats[a], stats[b]
            zk = (sa["mean"] - sb["mean"]) / np.hypot(sa["mcse"], sb["mcse"])
            zp = [(pa - pb) / max(np.hypot(ea, eb), 1e-12) for (pa, ea), (pb, eb) in zip(sa["probs"], sb["probs"])]
            zd = [(ma - mb) / np.hypot(ea, eb) for (ma, ea), (mb, eb) in zip(sa["dens"], sb["dens"])]
            print(f"{a} vs {b}: z of K mean {zk:+.2f}; of P(K = k) " +
                  " ".join(f"{v}:{z:+.1f}" for v, z, (pa, _), (pb, _) in zip(support, zp, sa["probs"], sb["probs"])
                           if pa + pb > 0.004) +
                  "; of densities " + " ".join(f"{z:+.1f}" for z in zd))


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


def save(path, res):
    """One run's draws and costs (the arrays of ``res``, scalars as 0-d arrays) to ``path`` (.npz)."""
    np.savez_compressed(path, **{key: np.asarray(v) for key, v in res.items()})


def restore(path):
    """A run saved by :func:`save`, as the dict the comparisons take (scalars back to floats)."""
    with np.load(path) as data:
        return {key: (data[key].item() if data[key].ndim == 0 else data[key]) for key in data.files}


def pool(a, b):
    """Two runs of one sampler (different seeds) as one: chains side by side, CPU and divergences added."""
    out = {key: np.concatenate([a[key], b[key]]) for key in ("k", "density", "alpha")}
    for key in ("cpu", "wall", "extra", "divergences"):
        if key in a:
            out[key] = a[key] + b[key]
    if "tail" in a:
        out["tail"] = (a["tail"] + b["tail"]) / 2
    return out


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="short NUTS runs (a few minutes in all)")
    parser.add_argument("--only", default="galaxies,faithful")
    parser.add_argument("--chains", type=int, default=2)
    parser.add_argument("--draws", type=int, default=None, help="ours (default 2000, --quick 1000)")
    parser.add_argument("--tune", type=int, default=500)
    parser.add_argument("--nuts-chains", type=int, default=None, help="default --chains")
    parser.add_argument("--nuts-draws", type=int, default=None, help="default 400 (--quick 100)")
    parser.add_argument("--nuts-tune", type=int, default=None, help="default 1000 (--quick 100)")
    parser.add_argument("--target-accept", type=float, default=0.95,
                        help="NUTS's (default 0.95: at PyMC's 0.8 its K on Faithful was off)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--configs", default="default",
                        help="ours: 'default' (plain pm.sample) or NonConjugateGibbs keywords, e.g. "
                             "'default,slot_steps=10:m=5' (each compared with the same NUTS run)")
    parser.add_argument("--starts", choices=("dispersed", "mixed"), default="dispersed",
                        help="ours: every chain from its own random partition (the default), or 'mixed': one "
                             "block, n singletons, random, in turn")
    parser.add_argument("--sides", default="ours,nuts",
                        help="which samplers to run: any of ours, nuts, gibbs (the reference blocked Gibbs "
                             "sampler of the truncated model, numpy)")
    parser.add_argument("--gibbs-draws", type=int, default=20000)
    parser.add_argument("--gibbs-burn", type=int, default=2000)
    parser.add_argument("--check-gibbs", action="store_true",
                        help="run the reference Gibbs sampler without the likelihood (its K must follow --prior-k's "
                             "stick-breaking prior) and print the comparison")
    parser.add_argument("--save", default=None, help="directory: write each run's draws as <data>_<run>-seed<seed>.npz")
    parser.add_argument("--load", default=None,
                        help="comma-separated .npz files written by --save: compared with this invocation's runs as if "
                             "run here (the chains of one run's files with different seeds pooled)")
    parser.add_argument("--faithful-prior", choices=("sigma", "variance", "gallery", "kappa"), default="sigma",
                        help="Faithful's clusters: sigma ~ InverseGamma(3, 1) per coordinate (the default), the "
                             "variance sigma^2 ~ InverseGamma(3, 0.5) (run labels get '+var'), the gallery's "
                             "tau ~ Gamma(1, 1), lambda ~ Gamma(10, 1), mu ~ Normal(0, precision lambda tau), items' "
                             "precision lambda tau ('+gal'), or the same with the items' precision tau ('+kap')")
    parser.add_argument("--prior-k", type=int, default=0, metavar="DRAWS",
                        help="also simulate K's prior under both models (CRP and truncated stick-breaking, "
                             "alpha ~ Gamma(1, 1), each data set's n) with this many draws")
    args = parser.parse_args(argv)
    global FAITHFUL_PRIOR
    FAITHFUL_PRIOR = args.faithful_prior
    draws = args.draws or (1000 if args.quick else 2000)
    nuts_draws = args.nuts_draws or (100 if args.quick else 400)
    nuts_tune = args.nuts_tune or (100 if args.quick else 1000)
    nuts_chains = args.nuts_chains or args.chains
    sides = args.sides.split(",")
    print(f"Python {sys.version.split()[0]}; load average {os.getloadavg()[0]:.2f}; CPU = process_time of "
          f"pm.sample (cores=1, all chains); T = {TRUNCATION}")
    loaded = {}
    for path in (args.load.split(",") if args.load else []):
        data, _, run = os.path.basename(path)[: -len(".npz")].partition("_")
        run = run.split("-seed")[0]  # runs of one sampler with different seeds: their chains pooled
        res = restore(path)
        runs = loaded.setdefault(data, {})
        runs[run] = pool(runs[run], res) if run in runs else res
    for name in args.only.split(","):
        y, points = load(name)
        if args.prior_k:
            _, sb = prior_k(len(y), args.prior_k, args.seed)
            if args.check_gibbs:
                check_reference(name, y, points, sb, args.gibbs_draws, args.gibbs_burn, args.chains, args.seed)
        runs = dict(loaded.get(name, {}))
        tag = {"variance": "+var", "gallery": "+gal", "kappa": "+kap"}.get(FAITHFUL_PRIOR, "") if name == "faithful" else ""
        if "ours" in sides:
            for config in args.configs.split(","):
                runs[f"ours-{config}{tag}"] = ours(name, y, points, draws, args.tune, args.chains, args.seed,
                                              step_kwargs(config), args.starts)
        if "nuts" in sides:
            label = ("nuts" if args.target_accept is None else f"nuts-ta{args.target_accept:g}") + tag
            runs[label] = stick_breaking(name, y, points, nuts_draws, nuts_tune, nuts_chains, args.seed,
                                         target_accept=args.target_accept)
        if "gibbs" in sides:
            runs["gibbs" + tag] = blocked_gibbs(name, y, points, args.gibbs_draws, args.gibbs_burn, args.chains,
                                          args.seed)
        if args.save:
            os.makedirs(args.save, exist_ok=True)
            for run, res in runs.items():
                if run not in loaded.get(name, {}):
                    save(os.path.join(args.save, f"{name}_{run}-seed{args.seed}.npz"), res)
        agreement(name, POINTS[name], runs)
        nuts_runs = [r for r in runs if r.startswith("nuts")]
        for run in runs:
            if run.startswith("ours") and nuts_runs:
                a, b = runs[run], runs[nuts_runs[-1]]
                compare(name, POINTS[name], a, b, a["k"].shape[0], a["k"].shape[1], b["k"].shape[0],
                        b["k"].shape[1], run)
    print(f"\nload average at end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
