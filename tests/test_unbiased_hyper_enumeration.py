"""Unbiased estimates with random hyperparameters (issue 22): the average of many pairs' estimates
against the exact posterior, enumerated over partitions and integrated over the hyperparameter by
quadrature; power checks (wrong couplings fail); each chain's marginal kernel unchanged."""

import math

import numpy as np
import pymc as pm
import pytest
from scipy import integrate, special, stats

import pymc_partitions as pmp
from enumeration import exact_posterior
from pymc_partitions.coupling.functions import n_clusters
from pymc_partitions.coupling.hyper import (HyperSweeps, HyperUnbiasedJob, coupled_escobar_west,
                                            coupled_random_walk)
from pymc_partitions.partition import enumerate_partitions
from pymc_partitions.pymc.terms import PartitionTerms
from pymc_partitions.pymc.unbiased_hyper import PyMCHyperModel
from pymc_partitions.samplers.concentration import escobar_west_log
from pymc_partitions.samplers.gibbs import log_joint

Y = np.array([-1.2, -0.9, -1.1, 1.0, 1.3, 0.8])
N = len(Y)
A, B = 1.0, 1.0  # alpha ~ Gamma(A, rate B): the README's prior


def alpha_model():
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", A, B)
        z = pmp.Partition("z", pmp.CRP(alpha), n=N)
        pmp.NormalNormal("y", partition=z, mu0=0.0, sigma0=2.0, sigma=1.0, observed=Y)
    return model


def sigma_model():
    with pm.Model() as model:
        sigma = pm.HalfNormal("sigma", 1.0)
        z = pmp.Partition("z", pmp.CRP(1.0), n=N)
        pmp.NormalNormal("y", partition=z, mu0=0.0, sigma0=2.0, sigma=sigma, observed=Y)
    return model


def exact_alpha():
    """(E[K | y], E[alpha | y]): partitions enumerated, alpha integrated by quadrature. The
    package's log joint at alpha = 1 gives likelihood x EPPF(1); the CRP's EPPF ratio
    alpha^K Gamma(alpha) / Gamma(alpha + n) / (1 / n!) is written out here."""
    model = alpha_model()
    terms = PartitionTerms(model, "z")
    _, pack = terms.kernel_inputs(model.initial_point())
    parts, post1 = exact_posterior(N, lambda p: log_joint(p, pack, terms.prior_code, np.array([1.0, 0.0, 0.0])))
    K = parts.max(axis=1) + 1

    def weight(a, k):  # Gamma(A, B) density x EPPF(a) / EPPF(1)
        return stats.gamma.pdf(a, A, scale=1 / B) * math.exp(
            k * math.log(a) + special.gammaln(a) - special.gammaln(a + N) + special.gammaln(1 + N))

    z_k = np.array([integrate.quad(weight, 0, np.inf, args=(k,))[0] for k in range(1, N + 1)])
    m_k = np.array([integrate.quad(lambda a, k: a * weight(a, k), 0, np.inf, args=(k,))[0] for k in range(1, N + 1)])
    w = post1 * z_k[K - 1]
    return float(w @ K / w.sum()), float(post1 @ m_k[K - 1] / w.sum())


def log_marginal_block(y, sigma, sigma0=2.0, mu0=0.0):
    """log N(y; mu0 1, sigma^2 I + sigma0^2 1 1^T), written out (not the package's kernel)."""
    m = len(y)
    ybar = y.mean()
    ss = ((y - ybar) ** 2).sum()
    v = sigma ** 2 + m * sigma0 ** 2
    return (-0.5 * m * math.log(2 * math.pi) - (m - 1) * math.log(sigma) - 0.5 * math.log(v)
            - ss / (2 * sigma ** 2) - m * (ybar - mu0) ** 2 / (2 * v))


def exact_sigma():
    """(E[K | y], E[sigma | y]) with sigma ~ HalfNormal(1), CRP(1): enumerated and by quadrature."""
    parts = enumerate_partitions(N)
    K = parts.max(axis=1) + 1
    log_eppf = np.array([sum(special.gammaln(np.bincount(p)[np.bincount(p) > 0])) for p in parts]) \
        - special.gammaln(1 + N)  # CRP(1): prod (n_j - 1)! / n!

    def log_f(s):
        return (stats.halfnorm.logpdf(s) + log_eppf
                + np.array([sum(log_marginal_block(Y[p == b], s) for b in range(p.max() + 1)) for p in parts]))

    shift = log_f(1.0).max()
    z = integrate.quad(lambda s: np.exp(log_f(s) - shift).sum(), 0, np.inf, limit=200)[0]
    ek = integrate.quad(lambda s: np.exp(log_f(s) - shift) @ K, 0, np.inf, limit=200)[0] / z
    es = integrate.quad(lambda s: s * np.exp(log_f(s) - shift).sum(), 0, np.inf, limit=200)[0] / z
    return ek, es


def test_written_out_marginal_matches_the_package():
    """The quadrature oracle's likelihood is the model's (at sigma = 1)."""
    model = sigma_model()
    terms = PartitionTerms(model, "z")
    params, pack = terms.kernel_inputs(model.initial_point())
    assert params[0] == 1.0
    point = model.initial_point()
    assert float(point["sigma_log__"]) == 0.0
    for p in enumerate_partitions(N)[::17]:
        ours = sum(log_marginal_block(Y[p == b], 1.0) for b in range(p.max() + 1))
        eppf = sum(special.gammaln(np.bincount(p)[np.bincount(p) > 0])) - special.gammaln(1 + N)
        assert log_joint(p, pack, terms.prior_code, params) == pytest.approx(ours + eppf, rel=1e-10)


def summary(result):
    return pmp.summarize_unbiased(result)


def test_random_alpha_estimates_match_quadrature():
    """The README's prior alpha ~ Gamma(1, 1): E[K | y] and E[alpha | y] within 3 SE of the exact values."""
    ek, ea = exact_alpha()
    result = pmp.sample_unbiased(alpha_model(), n_pairs=2000, k=4, m=12, cores=1, random_seed=3,
                                 progressbar=False)
    s = summary(result)
    assert bool(result["meeting"]["met"].all())
    assert abs(s.loc["n_clusters", "mean"] - ek) < 3 * s.loc["n_clusters", "se"]
    assert abs(s.loc["alpha", "mean"] - ea) < 3 * s.loc["alpha", "se"]
    assert s.loc["alpha", "se"] < 0.05 and s.loc["n_clusters", "se"] < 0.05  # (precise enough to mean something)


def test_random_likelihood_scale_matches_quadrature():
    """NormalNormal's sigma ~ HalfNormal(1) (random-walk Metropolis, coupled by reflection)."""
    ek, es = exact_sigma()
    # (its meeting times have a longer tail than alpha's, 99% quantile ~50: k above it, so the
    # estimates' tails stay light)
    result = pmp.sample_unbiased(sigma_model(), n_pairs=250, k=50, m=100, cores=1, random_seed=4,
                                 progressbar=False, hyper_scale=1.0)
    s = summary(result)
    assert bool(result["meeting"]["met"].all())
    assert abs(s.loc["n_clusters", "mean"] - ek) < 3 * s.loc["n_clusters", "se"]
    assert abs(s.loc["sigma", "mean"] - es) < 3 * s.loc["sigma", "se"]
    assert s.loc["sigma", "se"] < 0.05


class _MetOnHyperparameters(HyperSweeps):
    """Wrong: the pair counts as met as soon as the hyperparameters agree, whatever the partitions."""

    @staticmethod
    def same(x, y):
        return x.log_alpha == y.log_alpha and np.array_equal(x.theta, y.theta)


class _WrongJob(HyperUnbiasedJob):
    def kernel(self):
        return _MetOnHyperparameters(self.hyper_model, self.coupling, self.eps, self.hyper_scale, self.pgsm)


def _estimates(job_class, pairs, seed):
    """Pairs of the sigma model from one block (both chains at sigma = 1), k = 0, m = 2."""
    model = sigma_model()
    terms = PartitionTerms(model, "z")
    prior_params, pack = terms.kernel_inputs(model.initial_point())
    hyper = PyMCHyperModel(model, model["z"], terms, [model["sigma"]])
    job = job_class(pack, terms.prior_code, prior_params, lambda labels, params: [n_clusters(labels), params["sigma"]],
                    0, 2, init="one_block", hyper_model=hyper, hyper_scale=1.0)
    return np.array([job.run(s).estimate for s in np.random.SeedSequence(seed).spawn(pairs)])


def test_power_hyperparameters_declared_met_before_the_partitions_fail():
    """From one block with k = 0, m = 2 the bias correction carries much of the estimate: the
    correct coupling stays within 3 SE of (E[K | y], E[sigma | y]); one that counts the pair as met
    once sigma agrees (e.g. when chain x's first Metropolis step is refused, both are still at
    the start) is far off."""
    exact = exact_sigma()
    for job_class, ok in ((HyperUnbiasedJob, True), (_WrongJob, False)):
        est = _estimates(job_class, 800, 11)
        mean, se = est.mean(axis=0), est.std(axis=0, ddof=1) / math.sqrt(len(est))
        z = np.abs(mean - exact) / se
        assert (z.max() < 3) == ok, (job_class.__name__, mean, se, exact)
        if not ok:
            assert z.max() > 5  # (not a near miss)


def _ks_same(a, b):
    return stats.ks_2samp(a, b).pvalue


def test_escobar_west_coupling_has_the_single_chain_marginals():
    """Both outputs of the coupled Escobar-West draw follow the package's single-chain draw
    (:func:`escobar_west_log`) from their own (alpha, K); equal inputs give equal outputs; a
    coupling that gives chain y chain x's block count fails the same test."""
    rng = np.random.default_rng(0)
    draws = 4000
    lx, kx, ly, ky = math.log(0.4), 2, math.log(2.5), 4
    pairs = np.array([coupled_escobar_west(lx, kx, ly, ky, N, A, B, rng) for _ in range(draws)])
    single_x = [escobar_west_log(lx, kx, N, A, B, rng) for _ in range(draws)]
    single_y = [escobar_west_log(ly, ky, N, A, B, rng) for _ in range(draws)]
    assert _ks_same(pairs[:, 0], single_x) > 1e-3
    assert _ks_same(pairs[:, 1], single_y) > 1e-3
    assert 0.0 < np.mean(pairs[:, 0] == pairs[:, 1]) < 1.0  # they can meet before K agrees, not always
    same = np.array([coupled_escobar_west(lx, 3, lx, 3, N, A, B, rng) for _ in range(200)])
    assert np.array_equal(same[:, 0], same[:, 1])
    wrong = np.array([coupled_escobar_west(lx, kx, ly, kx, N, A, B, rng)[1] for _ in range(draws)])
    assert _ks_same(wrong, single_y) < 1e-3


def test_random_walk_coupling_has_the_single_chain_marginals():
    """Reflection-maximal proposals with a shared accept uniform: each chain is the plain
    random-walk Metropolis step; dropping the reflection (proposing y + scale xi when the common
    point is refused) breaks chain y's marginal and fails the same test."""
    rng = np.random.default_rng(1)
    logd = lambda t: -0.5 * float(t @ t)  # noqa: E731
    x0, y0, scale, draws = np.array([0.3, -0.2]), np.array([1.1, 0.4]), 0.8, 6000
    out = [coupled_random_walk(x0, logd, y0, logd, scale, rng) for _ in range(draws)]
    single = [coupled_random_walk(y0, logd, None, None, scale, rng)[0] for _ in range(draws)]
    ys, ss = np.array([o[1] for o in out]), np.array(single)
    for j in range(2):
        assert _ks_same(ys[:, j], ss[:, j]) > 1e-3
    assert 0.05 < np.mean([np.array_equal(o[0], o[1]) for o in out]) < 1.0
    same = [coupled_random_walk(x0, logd, x0.copy(), logd, scale, rng) for _ in range(100)]
    assert all(np.array_equal(a, b) for a, b, _, _ in same)

    def without_reflection(x, y):  # the wrong coupling
        xi = rng.standard_normal(2)
        px = x + scale * xi
        z = (x - y) / scale
        py = px if math.log(rng.random()) <= 0.5 * (xi @ xi - (xi + z) @ (xi + z)) else y + scale * xi
        return py if math.log(rng.random()) < logd(py) - logd(y) else y

    wrong = np.array([without_reflection(x0, y0) for _ in range(draws)])
    assert min(_ks_same(wrong[:, j], ss[:, j]) for j in range(2)) < 1e-3


class _SweptAtChainXsValues(HyperSweeps):
    """Wrong: both chains' partitions swept at chain x's hyperparameters (the kernels before
    they took per-chain values)."""

    def coupled_sweep(self, x, y, inter, randomness):
        r, rng = randomness
        x.gibbs.coupled_sweep(x.chain, y.chain, x.gibbs.intersections(x.chain, y.chain), r)
        self._hyper_steps(x, y, rng)


def _one_iteration_laws(kernel_class, which, reps=1500, pgsm=None, coupling="ot"):
    """(K, hyperparameter) of chain y after one coupled iteration from two different states, and
    after one single-chain iteration from y's state (``pgsm``: the kernel's PGSM moves;
    ``coupling``: of the Gibbs sweep)."""
    model = sigma_model() if which == "sigma" else alpha_model()
    terms = PartitionTerms(model, "z")
    hyper = PyMCHyperModel(model, model["z"], terms, [model[which]])
    kernel = kernel_class(hyper, coupling, 0.0, 0.6, pgsm=pgsm)
    rng = np.random.default_rng(5)
    lx, ly = np.zeros(N, np.int64), np.array([0, 1, 2, 0, 1, 2])
    vx, vy = (-0.5, 0.4) if which == "sigma" else (-3.0, 1.5)

    def fresh(labels, value):
        s = kernel.start(labels)
        if which == "sigma":
            kernel._refresh(s, np.array([value]), None)
        else:
            kernel._refresh(s, s.theta, value)
        return s

    def read(s):
        return s.chain.n_active, s.theta[0] if which == "sigma" else s.log_alpha

    coupled, single = [], []
    for _ in range(reps):
        x, y = fresh(lx, vx), fresh(ly, vy)
        kernel.coupled_sweep(x, y, None, kernel.random_numbers(rng))
        coupled.append(read(y))
        s = fresh(ly, vy)
        kernel.sweep(s, kernel.random_numbers(rng))
        single.append(read(s))
    return np.array(coupled), np.array(single)


def _same_law(coupled, single):
    table = np.array([[np.sum(c[:, 0] == k) for k in range(1, N + 1)] for c in (coupled, single)])
    table = table[:, table.sum(axis=0) > 0]
    return min(stats.chi2_contingency(table)[1], _ks_same(coupled[:, 1], single[:, 1]))


@pytest.mark.parametrize("coupling", ["ot", "aligned"])
@pytest.mark.parametrize("which", ["sigma", "alpha"])
def test_a_coupled_iteration_leaves_each_chains_kernel_unchanged(which, coupling):
    """One whole coupled iteration (sweep at each chain's own hyperparameters, then the
    hyperparameter steps) from two different states: chain y's (K, hyperparameter) has the law
    of the single-chain iteration from y's state (chi-square on K, KS on the hyperparameter)."""
    assert _same_law(*_one_iteration_laws(HyperSweeps, which, coupling=coupling)) > 1e-3


@pytest.mark.parametrize("coupling", ["ot", "aligned"])
def test_power_a_sweep_at_the_other_chains_alpha_fails(coupling):
    """Sweeping chain y at chain x's alpha (e^-3 against y's e^1.5) changes y's law: detected."""
    assert _same_law(*_one_iteration_laws(_SweptAtChainXsValues, "alpha", coupling=coupling)) < 1e-3
