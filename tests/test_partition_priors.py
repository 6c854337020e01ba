"""Partition utilities and priors: enumeration, Mirkin distance, EPPFs, sequential weights, draws."""

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from scipy import stats

import pymc_partitions as pmp
from pymc_partitions.partition import (
    bell_number, block_sizes, canonicalize, contingency, enumerate_partitions, is_canonical, mirkin_distance,
)
from pymc_partitions.priors import log_join_weight, log_new_weight

PRIORS = [pmp.CRP(1.3), pmp.CRP(0.2), pmp.PitmanYor(0.7, 0.4), pmp.PitmanYor(-0.3, 0.5), pmp.FiniteDirichlet(0.8, 3),
          pmp.FiniteDirichlet(2.0, 10)]


def test_canonicalize_and_sizes():
    assert canonicalize([5, 5, 2, 7, 2]).tolist() == [0, 0, 1, 2, 1]
    assert canonicalize([-1, 3, -1]).tolist() == [0, 1, 0]
    assert is_canonical([0, 1, 0, 2]) and not is_canonical([1, 0])
    assert block_sizes([3, 3, 1, 3]).tolist() == [3, 1]
    with pytest.raises(ValueError):
        canonicalize([0.5, 1])


@pytest.mark.parametrize("n", range(1, 9))
def test_enumeration_counts_and_uniqueness(n):
    parts = enumerate_partitions(n)
    assert len(parts) == bell_number(n)
    assert len({tuple(p) for p in parts.tolist()}) == len(parts)
    assert all(is_canonical(p) for p in parts[:: max(1, len(parts) // 50)])


def test_bell_numbers():
    assert [bell_number(n) for n in range(9)] == [1, 1, 2, 5, 15, 52, 203, 877, 4140]
    with pytest.raises(ValueError):
        enumerate_partitions(11)


def test_mirkin_is_squared_distance_of_coclustering_matrices():
    rng = np.random.default_rng(0)
    for _ in range(50):
        n = rng.integers(1, 30)
        a, b = rng.integers(0, 4, n), rng.integers(0, 6, n)
        adj = lambda x: (x[:, None] == x[None, :]).astype(int)  # noqa: E731
        assert mirkin_distance(a, b) == ((adj(a) - adj(b)) ** 2).sum()
        c = contingency(a, b)
        assert c.sum() == n and c.shape == (len(set(a)), len(set(b)))


@pytest.mark.parametrize("prior", PRIORS, ids=repr)
@pytest.mark.parametrize("n", [1, 2, 5, 7])
def test_eppf_sums_to_one(prior, n):
    total = np.exp([prior.log_eppf(p) for p in enumerate_partitions(n)]).sum()
    assert total == pytest.approx(1.0, abs=1e-10)


@pytest.mark.parametrize("prior", PRIORS, ids=repr)
def test_sequential_weights_are_eppf_ratios(prior):
    """p(z_n joins b | z_1..n-1) from the weights equals the EPPF ratio."""
    params = prior.kernel_params()
    for p in enumerate_partitions(5):
        head = p[:-1]
        if prior.log_eppf(head) == -np.inf:
            continue  # more than k blocks already
        sizes = np.bincount(head)
        k = len(sizes)
        logw = [log_join_weight(prior.code, params, s) for s in sizes] + [log_new_weight(prior.code, params, k)]
        w = np.exp(logw) / np.exp(logw).sum()
        ratio = np.exp(prior.log_eppf(p) - prior.log_eppf(head))
        assert w[p[-1]] == pytest.approx(ratio, rel=1e-10)


@pytest.mark.parametrize("prior", PRIORS, ids=repr)
def test_prior_draws_match_eppf_chi_square(prior):
    n, draws = 5, 20000
    parts = enumerate_partitions(n)
    index = {tuple(p): i for i, p in enumerate(parts.tolist())}
    rng = np.random.default_rng(1)
    counts = np.zeros(len(parts))
    for _ in range(draws):
        counts[index[tuple(prior.sample(n, rng))]] += 1
    expected = draws * np.exp([prior.log_eppf(p) for p in parts])
    keep = expected > 5
    chi2 = (((counts - expected) ** 2 / expected)[keep]).sum()
    assert stats.chi2.sf(chi2, keep.sum() - 1) > 1e-3
    # and the wrong law (seed 003's finite-Dirichlet prior without k!/(k-K)!) is rejected
    if isinstance(prior, pmp.FiniteDirichlet):
        from scipy.special import gammaln  # noqa: PLC0415

        kk = np.array([p.max() + 1 for p in parts])
        factor = np.exp(gammaln(prior.k + 1) - gammaln(np.maximum(prior.k - kk, 0) + 1))
        wrong = np.exp([prior.log_eppf(p) for p in parts]) / factor
        wrong = draws * wrong / wrong.sum()
        chi2_wrong = (((counts - wrong) ** 2 / wrong)[keep]).sum()
        assert stats.chi2.sf(chi2_wrong, keep.sum() - 1) < 1e-6


@pytest.mark.parametrize("prior", PRIORS, ids=repr)
def test_symbolic_eppf_equals_numpy_and_gradient(prior):
    n = 7
    sizes_t = pt.lvector("sizes")
    alpha = pt.dscalar("alpha")
    discount = pt.dscalar("discount")
    out = prior.symbolic_log_eppf(sizes_t, n, alpha, discount)
    f = pytensor.function([sizes_t, alpha, discount], [out, pytensor.grad(out, alpha)], on_unused_input="ignore")
    rng = np.random.default_rng(2)
    for p in enumerate_partitions(n)[rng.choice(877, 30)]:
        if isinstance(prior, pmp.FiniteDirichlet) and p.max() + 1 > prior.k:
            continue
        sizes = np.bincount(p, minlength=n)
        val, grad = f(sizes, prior.alpha, prior.discount)
        assert val == pytest.approx(prior.log_eppf(p), rel=1e-10)
        h = 1e-6
        fd = (prior.log_eppf(p, alpha=prior.alpha + h) - prior.log_eppf(p, alpha=prior.alpha - h)) / (2 * h)
        assert grad == pytest.approx(fd, rel=1e-5, abs=1e-7)


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: pmp.CRP(0.0), "alpha must be > 0, got alpha=0.0"),
        (lambda: pmp.CRP(-1), "alpha"),
        (lambda: pmp.CRP(np.nan), "alpha must be finite"),
        (lambda: pmp.PitmanYor(1.0, 1.0), "discount must be in \\[0, 1\\), got discount=1.0"),
        (lambda: pmp.PitmanYor(1.0, -0.1), "discount"),
        (lambda: pmp.PitmanYor(-0.5, 0.3), "alpha must be > -discount"),
        (lambda: pmp.FiniteDirichlet(1.0, 0), "k must be a positive integer, got k=0"),
        (lambda: pmp.FiniteDirichlet(1.0, 2.5), "k must be a positive integer"),
        (lambda: pmp.FiniteDirichlet(0.0, 3), "alpha must be > 0"),
    ],
)
def test_invalid_prior_parameters_raise(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_finite_dirichlet_never_exceeds_k_blocks():
    prior = pmp.FiniteDirichlet(5.0, 2)
    assert all(prior.sample(20, rng=s).max() < 2 for s in range(20))
    assert prior.log_eppf([0, 1, 2]) == -np.inf
