"""Small models shared by the tests: data, priors and likelihood families at n <= 8."""

from __future__ import annotations

import numpy as np
from scipy import integrate, stats

from pymc_partitions.families import kernels
from pymc_partitions.families.kernels import FamilyPack
from pymc_partitions.families.network import as_edges, network_hyper
from pymc_partitions.families.transforms import whiten_full_normal
from pymc_partitions.priors import CRP, FiniteDirichlet, PitmanYor

PRIORS = {
    "crp": CRP(1.2),
    "pitman_yor": PitmanYor(0.5, 0.3),
    "finite_dirichlet": FiniteDirichlet(0.7, 3),
}

COV = np.array([[1.0, 0.3], [0.3, 0.8]])
COV0 = np.array([[4.0, -0.5], [-0.5, 2.0]])


def data(n, seed=0):
    """Two loose groups in 2-d, and binary features loosely tied to them."""
    rng = np.random.default_rng(seed)
    group = np.arange(n) % 2
    y = rng.normal(size=(n, 2)) + np.where(group[:, None] == 1, 2.0, -1.0)
    b = (rng.random((n, 3)) < np.where(group[:, None] == 1, 0.8, 0.3)).astype(float)
    return y, b


def counts(n, seed=0):
    """(n, 2) counts loosely tied to the two groups of :func:`data`."""
    rng = np.random.default_rng(seed + 100)
    group = np.arange(n) % 2
    return rng.poisson(np.where(group[:, None] == 1, [6.0, 1.0], [1.0, 3.0])).astype(float)


def categories(n, seed=0):
    """((n, 2) integer categories, their numbers of categories (3, 2)), loosely tied to the groups."""
    rng = np.random.default_rng(seed + 200)
    group = np.arange(n) % 2
    c0 = np.where(group == 1, rng.choice(3, n, p=[0.7, 0.2, 0.1]), rng.choice(3, n, p=[0.1, 0.3, 0.6]))
    c1 = np.where(group == 1, rng.random(n) < 0.8, rng.random(n) < 0.3).astype(int)
    return np.c_[c0, c1], np.array([3, 2])


LR_MU0 = np.array([0.5, -0.2])
LR_COV0 = np.array([[2.0, 0.3], [0.3, 1.0]])


def regressions(n, seed=0):
    """(design (n, 2) with an intercept, responses (n,)): two lines tied to the groups of :func:`data`."""
    rng = np.random.default_rng(seed + 300)
    group = np.arange(n) % 2
    x = rng.uniform(-2.0, 2.0, n)
    X = np.c_[np.ones(n), x]
    y = np.where(group == 1, 1.0 + 2.0 * x, -1.0 - 1.0 * x) + 0.7 * rng.standard_normal(n)
    return X, y


def family_parts(family, n, seed=0):
    """Kernel parts ``[(code, data, hyper)]`` and the matching PyMC likelihood arguments."""
    y, b = data(n, seed)
    if family == "diag":
        return [(kernels.DIAG_NORMAL, y, kernels.diag_normal_hyper([0.5, 0.0], [2.0, 1.5], [1.0, 0.8], 2))]
    if family == "full":
        y2, mu2, sigma0_2, jac = whiten_full_normal(y, np.zeros(2), COV0, COV)
        return [(kernels.DIAG_NORMAL, y2, kernels.diag_normal_hyper(mu2, sigma0_2, 1.0, 2, jac))]
    if family == "niw":
        return [(kernels.NIW, y, kernels.niw_hyper([0.0, 0.0], 0.5, 4.0, np.eye(2), 2, n))]
    if family == "bb":
        return [(kernels.BETA_BERNOULLI, b, kernels.beta_bernoulli_hyper(0.5, [1.0, 2.0, 0.7], 3))]
    if family == "gp":
        return [(kernels.GAMMA_POISSON, counts(n, seed), kernels.gamma_poisson_hyper([2.0, 0.5], [0.5, 1.5], 2))]
    if family == "dc":
        cats, n_cat = categories(n, seed)
        return [(kernels.DIRICHLET_CATEGORICAL, kernels.dirichlet_categorical_data(cats, n_cat),
                 kernels.dirichlet_categorical_hyper([[0.5, 1.0, 2.0], [1.0, 0.3, 0.0]], n_cat))]
    if family == "lr":  # clusters of regressions on an intercept and one covariate
        X, yr = regressions(n, seed)
        return [(kernels.LINEAR_REGRESSION, np.c_[X, yr], kernels.linear_regression_hyper(LR_MU0, LR_COV0, 2.0, 1.5, 2))]
    if family == "multi":
        return family_parts("diag", n, seed) + family_parts("bb", n, seed)
    if family in ("net", "netdir"):
        directed = family == "netdir"
        return [(kernels.NETWORK, np.zeros((n, 1)), network_hyper(0.6, 1.4, graph(n, directed, seed), n, directed))]
    if family == "netmix":  # a network and a Normal likelihood on one partition
        return family_parts("net", n, seed) + family_parts("diag", n, seed)
    raise ValueError(family)


NETWORK_FAMILIES = ["net", "netdir", "netmix"]


def graph(n, directed=False, seed=0):
    """Canonical edge list of a small two-community graph (dense inside the groups of ``data``)."""
    rng = np.random.default_rng(seed + 100)
    group = np.arange(n) % 2
    p = np.where(group[:, None] == group[None, :], 0.75, 0.2)
    a = (rng.random((n, n)) < p).astype(int)
    np.fill_diagonal(a, 0)
    if not directed:
        a = np.triu(a, 1)
        a = a + a.T
    return as_edges(a, n, directed=directed)


def pack(family, n, seed=0):
    return FamilyPack.build(family_parts(family, n, seed))


def mixed_log_eppf(make_prior, pdf, lo=0.0, hi=np.inf):
    """log p(partition) with a prior parameter integrated out numerically against ``pdf``.

    ``make_prior(value)`` builds the prior at a parameter value. Returns a function labels -> log
    prior; integrates once per multiset of block sizes.
    """
    cache = {}

    def log_prior(labels):
        counts = np.bincount(labels)
        sizes = tuple(sorted(counts[counts > 0]))
        if sizes not in cache:
            canon = np.repeat(np.arange(len(sizes)), sizes)

            def integrand(v):
                return np.exp(make_prior(v).log_eppf(canon)) * pdf(v)

            val, _ = integrate.quad(integrand, lo, hi, limit=200, epsabs=0, epsrel=1e-10)
            with np.errstate(divide="ignore"):
                cache[sizes] = np.log(val)  # -inf: impossible under the prior
        return cache[sizes]

    return log_prior


def gamma_mixed_log_eppf(make_prior, shape, rate):
    """:func:`mixed_log_eppf` for a Gamma(shape, rate) prior on alpha."""
    return mixed_log_eppf(make_prior, lambda a: stats.gamma.pdf(a, shape, scale=1.0 / rate))


def gamma_alpha_law(make_prior, shape, rate, n):
    """A prior's alpha ~ Gamma(shape, rate) integrated out, exactly for every shape > 0 (vague
    priors such as Gamma(1e-3, 1e-3) included, whose density is singular at 0), for CRP and finite
    Dirichlet priors (``make_prior(alpha)``).

    Returns ``(log_prior, log_cdf)``: ``log_prior(labels)`` is log p(partition) and
    ``log_cdf(t, labels)`` is log P(log alpha <= t | partition). With K blocks the EPPF is
    ``alpha^(K-1) g(alpha)``, g smooth and positive at 0, so alpha's conditional density is
    ``alpha^(shape + K - 2) g(alpha) exp(-rate alpha)``: the singular power is integrated exactly by
    quad's algebraic weight on [0, 1], the rest plainly. For t <= -30, ``int_0^{e^t}`` is
    ``g(0) e^{t (shape + K - 1)} / (shape + K - 1)`` to a relative 1e-13 (g is flat there), so the
    deep tail (alpha far below 1e-308) is exact in log space too.
    """
    from math import lgamma, log

    cache = {}

    def law(labels):
        counts = np.bincount(labels)
        sizes = tuple(sorted(counts[counts > 0]))
        if sizes not in cache:
            canon = np.repeat(np.arange(len(sizes)), sizes)
            k = len(sizes)
            power = shape + k - 2.0

            def g(x):  # EPPF / alpha^(K-1), times the Gamma density's exp(-rate x); smooth, so g(0) = g(1e-300)
                x = max(x, 1e-300)
                return np.exp(make_prior(x).log_eppf(canon) - (k - 1) * np.log(x) - rate * x)

            def mass(upper):
                opts = dict(epsabs=0, epsrel=1e-12, limit=200)
                if upper <= 1.0:
                    return integrate.quad(g, 0.0, upper, weight="alg", wvar=(power, 0.0), **opts)[0]
                return (integrate.quad(g, 0.0, 1.0, weight="alg", wvar=(power, 0.0), **opts)[0]
                        + integrate.quad(lambda x: x**power * g(x), 1.0, upper, **opts)[0])

            total = mass(np.inf)
            if total == 0.0:  # impossible under the prior (a finite Dirichlet's K > k)
                cache[sizes] = (-np.inf, None, 0.0, -np.inf, 1.0)
                return cache[sizes]
            cache[sizes] = (shape * log(rate) - lgamma(shape) + log(total), mass, total,
                            log(g(1e-300)) - log(total), shape + k - 1.0)
        return cache[sizes]

    def log_prior(labels):
        return law(labels)[0]

    def log_cdf(t, labels):
        _, mass, total, log_g0, e = law(labels)
        if total == 0.0:
            return -np.inf
        if t <= -30.0:
            return log_g0 + e * t - log(e)
        return log(mass(np.exp(t))) - log(total)

    return log_prior, log_cdf
