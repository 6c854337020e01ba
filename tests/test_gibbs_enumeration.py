"""The collapsed Gibbs kernel reproduces the exact posterior over all partitions (n = 6-8)."""

import math

import numpy as np
import pytest

from enumeration import check_against, ess, exact_posterior
from models import PRIORS, gamma_alpha_law, pack
from pymc_partitions.priors import CRP, PitmanYor, FiniteDirichlet
from pymc_partitions.samplers.concentration import escobar_west_log
from pymc_partitions.samplers.gibbs import GibbsKernel, log_joint

FAMILIES = ["diag", "full", "niw", "bb", "multi"]
CASES = [(prior, fam, 6 + (i + j) % 3) for i, prior in enumerate(PRIORS) for j, fam in enumerate(FAMILIES)]


def perturbed(prior):
    """A visibly different prior of the same kind: the posterior a wrong kernel might target."""
    if isinstance(prior, FiniteDirichlet):
        return FiniteDirichlet(prior.alpha * 4, prior.k + 1)
    if isinstance(prior, PitmanYor):
        return PitmanYor(prior.alpha * 4, prior.discount)
    return CRP(prior.alpha * 4)


def run_chain(kernel, labels, n_steps, seed):
    rng = np.random.default_rng(seed)
    out = np.empty((n_steps, len(labels)), np.int64)
    lj = np.empty(n_steps)
    for t in range(n_steps):
        labels, lj[t] = kernel.step(labels, rng)
        out[t] = labels
    return out, lj


@pytest.mark.parametrize("prior_name,family,n", CASES)
def test_gibbs_matches_enumeration(prior_name, family, n):
    prior = PRIORS[prior_name]
    fam = pack(family, n)
    parts, exact = exact_posterior(n, lambda p: log_joint(p, fam, prior.code, prior.kernel_params()))
    wrong_prior = perturbed(prior)
    _, wrong = exact_posterior(n, lambda p: log_joint(p, fam, wrong_prior.code, wrong_prior.kernel_params()))
    kernel = GibbsKernel(fam, prior.code, prior.kernel_params())
    samples, lj = run_chain(kernel, np.zeros(n, np.int64), 20000, seed=n)
    k = samples.max(axis=1)
    check_against(parts, exact, samples[500:], [lj[500:], k[500:]], wrong=wrong)


def test_log_joint_is_prior_times_marginal():
    prior = PRIORS["crp"]
    fam = pack("diag", 6)
    labels = np.array([0, 0, 1, 0, 2, 1])
    full = log_joint(labels, fam, prior.code, prior.kernel_params())
    from pymc_partitions.priors import log_eppf_sizes  # noqa: PLC0415

    no_data = log_joint(labels, fam._replace(codes=fam.codes[:0]), prior.code, prior.kernel_params())
    assert no_data == pytest.approx(prior.log_eppf(labels))
    assert full < no_data  # the data term is a log density of continuous data here, negative
    assert log_eppf_sizes(prior.code, prior.kernel_params(), np.array([3, 2, 1])) == pytest.approx(no_data)


@pytest.mark.parametrize("shape,rate,family", [(2.0, 1.0, "diag"), (1e-3, 1e-3, "bb"), (1e-3, 1e-3, "diag")])
def test_gibbs_with_random_alpha_escobar_west_matches_enumeration(shape, rate, family):
    """Gibbs sweeps alternated with the Escobar-West alpha update (in log space): the partition's
    marginal is the exact posterior with alpha ~ Gamma(shape, rate) integrated out, and log alpha
    has its exact law, deep tail included. With the vague Gamma(1e-3, 1e-3) and the "bb" data
    (one cluster with probability 0.98) alpha is below 1e-308 in about half the draws: the old
    alpha-space update crashed there (math domain error)."""
    n = 7 if shape > 1 else 6
    fam = pack(family, n)
    log_prior, log_cdf = gamma_alpha_law(CRP, shape, rate, n)
    unit = CRP(1.0)
    like = lambda p: log_joint(p, fam, unit.code, unit.kernel_params()) - unit.log_eppf(p)  # noqa: E731
    parts, exact = exact_posterior(n, lambda p: like(p) + log_prior(p))
    _, wrong = exact_posterior(n, lambda p: like(p) + CRP(shape / rate).log_eppf(p))  # alpha at its prior mean
    rng = np.random.default_rng(5)
    labels, log_alpha = np.zeros(n, np.int64), 0.0
    samples, lj, log_alphas = [], [], []
    for _ in range(30000):
        kernel = GibbsKernel(fam, unit.code, np.array([math.exp(log_alpha), 0.0, 0.0]))
        labels, l = kernel.step(labels, rng)
        log_alpha = escobar_west_log(log_alpha, labels.max() + 1, n, shape, rate, rng)
        samples.append(labels)
        lj.append(l)
        log_alphas.append(log_alpha)
    samples, log_alphas = np.array(samples)[500:], np.array(log_alphas)[500:]
    ks = samples.max(axis=1)
    check_against(parts, exact, samples, [np.array(lj)[500:], ks], wrong=wrong)
    for t in (-3000.0, -1000.0, -300.0, -30.0, -3.0, 0.0, 2.0):
        p = float(np.sum(exact * np.exp([log_cdf(t, labels) for labels in parts])))
        below = (log_alphas <= t).astype(float)
        n_eff = min(ess(below), ess(ks)) if 0 < below.mean() < 1 else len(below)
        se = math.sqrt(max(p * (1 - p), 1e-4) / n_eff)
        assert abs(below.mean() - p) < 4.5 * se, (t, below.mean(), p, n_eff)
    if shape < 1 and family == "bb":
        assert (log_alphas < -745).mean() > 0.3  # the regime where exp(log alpha) underflows is exercised
