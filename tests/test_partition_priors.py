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
        (lambda: pmp.FiniteDirichlet(1.0, 2**63), r"k must be at most 2\^63 - 1.*pmp.CRP\(k \* alpha\)"),
        (lambda: pmp.priors.UniformLabels(10**30), r"k must be at most 2\^63 - 1"),
    ],
)
def test_invalid_prior_parameters_raise(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_finite_dirichlet_never_exceeds_k_blocks():
    prior = pmp.FiniteDirichlet(5.0, 2)
    assert all(prior.sample(20, rng=s).max() < 2 for s in range(20))
    assert prior.log_eppf([0, 1, 2]) == -np.inf


def _exact_log_eppf(prior, labels, k=None):
    """log EPPF in exact rational arithmetic (fractions), then one log of each big integer: the
    product forms of the EPPFs, independent of lgamma and of the package's formulas."""
    from fractions import Fraction  # noqa: PLC0415
    import math  # noqa: PLC0415

    sizes = [int(s) for s in np.bincount(labels) if s > 0]
    n, n_blocks = sum(sizes), len(sizes)
    alpha, d = Fraction(prior.alpha), Fraction(prior.discount)
    p = Fraction(1)
    if isinstance(prior, pmp.FiniteDirichlet):
        k = prior.k
        for j in range(n_blocks):
            p *= k - j
        for i in range(n):
            p /= k * alpha + i
        for s in sizes:
            for i in range(s):
                p *= alpha + i
    else:
        for i in range(1, n_blocks):
            p *= alpha + i * d
        for i in range(1, n):
            p /= alpha + i
        for s in sizes:
            for i in range(1, s):
                p *= i - d
    return math.log(p.numerator) - math.log(p.denominator)


LABELS = [np.array([0, 0, 1, 2, 2, 2, 1, 2, 0]), np.arange(9), np.zeros(9, np.int64),  # (one n: one logp compiled)
          np.array([0, 1, 0, 1, 2, 3, 3, 0, 4])]


@pytest.mark.parametrize("prior", [pmp.FiniteDirichlet(a, k) for a in (0.5, 1e-3, 7.0)
                                   for k in (3, 10**6, 10**15, 10**18, 2**63 - 1)]
                         + [pmp.CRP(1e15), pmp.CRP(3e18), pmp.PitmanYor(1e16, 0.3), pmp.CRP(2.5e-300)], ids=repr)
def test_log_eppf_is_exact_for_large_k_and_alpha(prior):
    """No cancellation: at k = 1e15 the old lgamma differences were off by 4.5 (exact -99.81 for
    blocks of 2, 1 and 3 items, alpha 0.5), at k = 1e18 by 120; CRP / Pitman-Yor with a huge alpha alike. The
    numpy EPPF, the PyTensor logp of a Partition and the set weights agree with exact rational
    arithmetic."""
    import pymc as pm  # noqa: PLC0415

    with pm.Model() as model:
        pmp.Partition("z", prior, n=9, invariants=False)
    logp = model.compile_logp()
    for labels in LABELS:
        if isinstance(prior, pmp.FiniteDirichlet) and labels.max() >= prior.k:
            continue
        exact = _exact_log_eppf(prior, labels)
        assert prior.log_eppf(labels) == pytest.approx(exact, rel=1e-13, abs=1e-11)
        assert logp({"z": labels}) == pytest.approx(exact, rel=1e-13, abs=1e-11)
    # 3 items joining a block of 2 together: the product of the join weights (2 + a)(3 + a)(4 + a),
    # a = alpha (finite Dirichlet) or -discount (Pitman-Yor)
    from fractions import Fraction  # noqa: PLC0415
    import math  # noqa: PLC0415

    from pymc_partitions.priors import log_join_set_weight  # noqa: PLC0415

    a = Fraction(prior.alpha) if isinstance(prior, pmp.FiniteDirichlet) else -Fraction(prior.discount)
    product = (2 + a) * (3 + a) * (4 + a)
    exact = math.log(product.numerator) - math.log(product.denominator)
    assert log_join_set_weight(prior.code, prior.kernel_params(), 2, 3) == pytest.approx(exact, rel=1e-13, abs=1e-12)


@pytest.mark.parametrize("theta", [0.3, 1.2, 20.0])
def test_finite_dirichlet_tends_to_the_crp(theta):
    """FiniteDirichlet(theta / k, k) -> CRP(theta) as k grows, within O(K^2 / k) in log
    probability, on to k = 1e18 (where the old formula returned noise)."""
    for labels in LABELS:
        crp = pmp.CRP(theta).log_eppf(labels)
        n_blocks = labels.max() + 1
        for k in (10**3, 10**6, 10**9, 10**12, 10**15, 10**18):
            gap = abs(pmp.FiniteDirichlet(theta / k, k).log_eppf(labels) - crp)
            assert gap <= 2.0 * (n_blocks**2 + labels.size**2 / max(theta, 1.0) + theta * labels.size) / k + 1e-13


@pytest.mark.parametrize("prior", [pmp.FiniteDirichlet(0.5, 10**18), pmp.PitmanYor(2e3, 0.2), pmp.CRP(5e3)],
                         ids=repr)
def test_symbolic_eppf_gradient_in_the_series_branch(prior):
    """The PyTensor EPPF's gradient in alpha where the rising factorials use Stirling's series."""
    sizes_t = pt.lvector("sizes")
    alpha = pt.dscalar("alpha")
    out = prior.symbolic_log_eppf(sizes_t, 9, alpha, prior.discount)
    f = pytensor.function([sizes_t, alpha], [out, pytensor.grad(out, alpha)])
    for labels in LABELS[2:]:
        val, grad = f(np.bincount(labels, minlength=9), prior.alpha)
        assert np.isfinite(val) and np.isfinite(grad)
        h = prior.alpha * 1e-6
        fd = (prior.log_eppf(labels, alpha=prior.alpha + h) - prior.log_eppf(labels, alpha=prior.alpha - h)) / (2 * h)
        assert grad == pytest.approx(fd, rel=1e-5, abs=1e-9 / prior.alpha)


def test_parameters_rounded_to_their_boundary_give_the_limit_law():
    """alpha = 0, what a positive random alpha underflows to, gives the one-block law (log EPPF 0
    for one block, -inf otherwise) in numpy and PyTensor, rather than NaN; a Pitman-Yor discount
    rounded up to 1 the all-singletons law."""
    from pymc_partitions.priors import FINITE_DIRICHLET, PITMAN_YOR, log_eppf_sizes, valid_parameters  # noqa: PLC0415

    for code, k in ((PITMAN_YOR, 0), (FINITE_DIRICHLET, 5)):
        params = np.array([0.0, 0.0, k])
        assert log_eppf_sizes(code, params, np.array([6])) == 0.0
        assert log_eppf_sizes(code, params, np.array([4, 2])) == -np.inf
        assert valid_parameters(code, 0.0, 0.0) and not valid_parameters(code, -1e-300, 0.0)
        sizes_t = pt.lvector("sizes")
        alpha = pt.dscalar("alpha")
        out = pmp.priors.symbolic_log_eppf(code, sizes_t, 6, alpha, 0.0, k)
        f = pytensor.function([sizes_t, alpha], out)
        assert f(np.r_[6, np.zeros(5, np.int64)], 0.0) == 0.0
        assert f(np.r_[4, 2, np.zeros(4, np.int64)], 0.0) == -np.inf
    assert not valid_parameters(PITMAN_YOR, 0.0, 1.5) and not valid_parameters(PITMAN_YOR, -0.3, 0.3)
    # a discount rounded up to 1 (from within 1e-16 of it): the all-singletons limit
    assert valid_parameters(PITMAN_YOR, 0.5, 1.0)
    assert log_eppf_sizes(PITMAN_YOR, np.array([0.5, 1.0, 0.0]), np.ones(6, np.int64)) == pytest.approx(0.0, abs=1e-14)
    assert log_eppf_sizes(PITMAN_YOR, np.array([0.5, 1.0, 0.0]), np.array([2, 1, 1, 1, 1])) == -np.inf
    f = pytensor.function([sizes_t, alpha], pmp.priors.symbolic_log_eppf(PITMAN_YOR, sizes_t, 6, alpha, 1.0, 0))
    assert f(np.ones(6, np.int64), 0.5) == pytest.approx(0.0, abs=1e-14) and f(np.r_[2, 1, 1, 1, 1, 0], 0.5) == -np.inf
    assert valid_parameters(PITMAN_YOR, -0.2, 0.3) and not valid_parameters(FINITE_DIRICHLET, np.nan, 0.0)
