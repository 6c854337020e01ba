"""The numpy predictive forms (families/predictive.py) agree with the compiled kernels' log
predictives on random states, their parameter draws have the conjugate posterior's moments, and
the prior's new-item probabilities are the sequential weights."""

import math

import numpy as np
import pytest
from scipy import integrate, stats

from models import COV, COV0
from pymc_partitions.families import kernels
from pymc_partitions.families.kernels import FamilyPack, pack_init, pack_log_preds
from pymc_partitions.families.predictive import (
    BetaBernoulliFamily,
    DiagNormal,
    FullNormal,
    NIWFamily,
    block_moments,
    replicate,
)
from pymc_partitions.families.transforms import full_normal_whitening
from pymc_partitions.partition import canonicalize
from pymc_partitions.priors import CRP, FiniteDirichlet, PitmanYor, new_item_log_probabilities
from pymc_partitions.samplers.gibbs import _build


def _case(family, dim, rng, n=11):
    """(numpy family, kernel part (code, data, hyper), data, new points, new points as the kernel sees them)."""
    y = rng.normal(size=(n, dim)) * 1.5 + 0.7
    new = rng.normal(size=(6, dim)) * 2.0
    if family == "diag":
        mu0, s0, s = rng.normal(size=dim), rng.uniform(0.5, 2, dim), rng.uniform(0.5, 2, dim)
        part = (kernels.DIAG_NORMAL, y, kernels.diag_normal_hyper(mu0, s0, s, dim))
        return DiagNormal(mu0, s0, s, dim), part, y, new, new
    if family == "full":
        a = rng.normal(size=(dim, dim))
        cov0, cov = a @ a.T + np.eye(dim), (COV if dim == 2 else np.diag(rng.uniform(0.5, 2, dim)))
        mu0 = rng.normal(size=dim)
        w = full_normal_whitening(mu0, cov0, cov, dim)
        hyper = kernels.diag_normal_hyper(w.mu0_2, w.sigma0_2, 1.0, dim, w.log_jacobian)
        fam = FullNormal(mu0, cov0, cov, dim)
        return fam, (kernels.DIAG_NORMAL, y @ w.W.T, hyper), y, new, new @ w.W.T  # the kernels' whitened space
    if family == "niw":
        a = rng.normal(size=(dim, dim))
        scale0 = a @ a.T + np.eye(dim)
        mu0, kappa0, nu0 = rng.normal(size=dim), 0.6, dim + 0.7
        return (NIWFamily(mu0, kappa0, nu0, scale0, dim),
                (kernels.NIW, y, kernels.niw_hyper(mu0, kappa0, nu0, scale0, dim, n)), y, new, new)
    yb = (rng.random((n, dim)) < 0.4).astype(float)
    a, b = rng.uniform(0.3, 3, dim), rng.uniform(0.3, 3, dim)
    newb = (rng.random((6, dim)) < 0.5).astype(float)
    part = (kernels.BETA_BERNOULLI, yb, kernels.beta_bernoulli_hyper(a, b, dim))
    return BetaBernoulliFamily(a, b, dim), part, yb, newb, newb


def _kernel_log_preds(part, labels, points):
    """(G, K + 1) log predictives from the compiled kernels' block statistics."""
    pack = FamilyPack.build([part])
    scratch = np.empty(pack.data.shape[1])
    canon, _, st, _, k = _build(labels, pack.codes, pack.dims, pack.data_off, pack.stat_off, pack.hyper_off,
                                pack.hyper, pack.data, pack.width, scratch)
    table = np.vstack([st[:k], np.empty((1, pack.width))])
    pack_init(pack.codes, pack.dims, pack.stat_off, pack.hyper_off, pack.hyper, table, k)
    blocks = np.arange(k + 1)
    out = np.zeros((len(points), k + 1))
    for g in range(len(points)):
        pack_log_preds(pack.codes, pack.dims, pack.data_off, pack.stat_off, pack.hyper_off, pack.hyper, table,
                       blocks, k + 1, np.ascontiguousarray(points), g, scratch, out[g])
    return canon, out


@pytest.mark.parametrize("family", ["diag", "full", "niw", "bb"])
@pytest.mark.parametrize("dim", [1, 2, 3])
def test_log_predictive_equals_the_kernels(family, dim):
    rng = np.random.default_rng(10 * dim + len(family))
    for _ in range(4):
        fam, part, y, new, kernel_new = _case(family, dim, rng)
        labels = rng.integers(0, rng.integers(1, 6), len(y))
        canon, want = _kernel_log_preds(part, labels, kernel_new)
        got = fam.log_predictive(fam.posterior(canon, canon.max() + 1, y), new)
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("family", ["diag", "niw", "bb"])
def test_predictive_densities_are_normalised(family):
    rng = np.random.default_rng(4)
    fam, _, y, _, _ = _case(family, 1 if family != "bb" else 3, rng)
    labels = canonicalize(rng.integers(0, 3, len(y)))
    post = fam.posterior(labels, labels.max() + 1, y)
    if family == "bb":
        cube = np.array(np.meshgrid(*[[0.0, 1.0]] * 3)).reshape(3, -1).T
        np.testing.assert_allclose(np.exp(fam.log_predictive(post, cube)).sum(axis=0), 1.0, rtol=1e-12)
        return
    for b in range(labels.max() + 2):
        total, _ = integrate.quad(lambda t: math.exp(fam.log_predictive(post, np.array([[t]]))[0, b]), -np.inf, np.inf)
        assert total == pytest.approx(1.0, rel=1e-7)


def test_block_moments_and_errors():
    x = np.array([[1.0, 2.0], [3.0, 5.0], [10.0, -1.0]])
    counts, sums, cross = block_moments([0, 0, 1], x, 2, scatter=True)
    np.testing.assert_array_equal(counts, [2, 1])
    np.testing.assert_array_equal(sums, [[4, 7], [10, -1]])
    np.testing.assert_allclose(cross[0], [[2.0, 3.0], [3.0, 4.5]])
    np.testing.assert_array_equal(cross[1], 0.0)
    with pytest.raises(ValueError, match=r"\[0, 2\)"):
        block_moments([0, 2, 1], x, 2)
    with pytest.raises(ValueError, match="need labels"):
        block_moments([0, 1], x, 2)
    with pytest.raises(ValueError, match="positive"):
        DiagNormal(0.0, [1.0, -1.0], 1.0, 2)
    with pytest.raises(ValueError, match="positive definite"):
        NIWFamily(0.0, 1.0, 3.0, [[1.0, 2.0], [2.0, 1.0]], 2)
    with pytest.raises(ValueError, match="nu0"):
        NIWFamily(0.0, 1.0, 0.5, np.eye(2), 2)


LABELS = np.array([0, 0, 1, 0, 2, 1, 1, 1, 2])


def _moment_draws(fam, y, n_draws, seed):
    rng = np.random.default_rng(seed)
    post = fam.posterior(LABELS, 3, y)
    draws = [fam.draw(post, rng) for _ in range(n_draws)]
    return post, {k: np.stack([d[k] for d in draws]) for k in draws[0]}


def _z(sample, mean, axis=0):
    se = sample.std(axis=axis) / math.sqrt(sample.shape[axis])
    return np.abs(sample.mean(axis=axis) - mean) / se


def test_diag_and_full_normal_draws_have_the_conjugate_moments():
    rng = np.random.default_rng(2)
    y = rng.normal(size=(9, 2)) + 1.0
    mu0 = np.array([0.5, -0.5])
    fam = DiagNormal(mu0, [2.0, 1.0], [0.7, 1.2], 2)
    post, d = _moment_draws(fam, y, 20000, 0)
    for b in range(3):
        m, s = (LABELS == b).sum(), y[LABELS == b].sum(axis=0)
        var = 1.0 / (1.0 / np.array([4.0, 1.0]) + m / np.array([0.49, 1.44]))
        mean = var * (mu0 / np.array([4.0, 1.0]) + s / np.array([0.49, 1.44]))
        assert _z(d["mu"][:, b], mean).max() < 4.5
        np.testing.assert_allclose(d["mu"][:, b].var(axis=0), var, rtol=0.05)
    # full covariance: the textbook posterior in the original space, not the whitening
    fam = FullNormal(mu0, COV0, COV, 2)
    post, d = _moment_draws(fam, y, 20000, 1)
    p0, p = np.linalg.inv(COV0), np.linalg.inv(COV)
    for b in range(3):
        m, s = (LABELS == b).sum(), y[LABELS == b].sum(axis=0)
        cov_b = np.linalg.inv(p0 + m * p)
        mean_b = cov_b @ (p0 @ mu0 + p @ s)
        np.testing.assert_allclose(fam.posterior_mean(post)["mu"][b], mean_b, rtol=1e-10)
        np.testing.assert_allclose(fam.posterior_cov(post)[b], cov_b, rtol=1e-10, atol=1e-14)
        assert _z(d["mu"][:, b], mean_b).max() < 4.5
        np.testing.assert_allclose(np.cov(d["mu"][:, b].T), cov_b, rtol=0.06, atol=0.01 * cov_b.max())


def test_niw_draws_have_the_conjugate_moments():
    rng = np.random.default_rng(3)
    y = rng.normal(size=(9, 2)) @ np.array([[1.0, 0.0], [0.6, 0.5]]) + 2.0
    mu0, kappa0, nu0, scale0 = np.array([1.0, 0.0]), 0.5, 5.0, np.array([[1.0, 0.2], [0.2, 0.5]])
    fam = NIWFamily(mu0, kappa0, nu0, scale0, 2)
    post, d = _moment_draws(fam, y, 40000, 2)
    for b in range(3):
        yb = y[LABELS == b]
        m = len(yb)
        kappa, nu = kappa0 + m, nu0 + m
        mu_m = (kappa0 * mu0 + yb.sum(axis=0)) / kappa
        gap = yb.mean(axis=0) - mu0
        s_m = scale0 + (yb - yb.mean(axis=0)).T @ (yb - yb.mean(axis=0)) + kappa0 * m / kappa * np.outer(gap, gap)
        np.testing.assert_allclose(post.scale[b], s_m, rtol=1e-12)
        mean_cov = s_m / (nu - 3.0)  # E[Sigma], InvWishart(nu, S) in D = 2
        np.testing.assert_allclose(d["cov"][:, b].mean(axis=0), mean_cov, rtol=0.03, atol=0.01 * mean_cov.max())
        for i in range(2):  # marginals of an inverse Wishart's diagonal: InvGamma((nu - D + 1) / 2, S_ii / 2)
            ref = stats.invgamma(0.5 * (nu - 1.0), scale=0.5 * s_m[i, i])
            assert stats.kstest(d["cov"][:, b, i, i], ref.cdf).pvalue > 1e-3
        assert _z(d["mu"][:, b], mu_m).max() < 4.5
        np.testing.assert_allclose(np.cov(d["mu"][:, b].T), mean_cov / kappa, rtol=0.05, atol=0.01 * mean_cov.max())


def test_beta_bernoulli_draws_have_the_conjugate_moments():
    rng = np.random.default_rng(4)
    y = (rng.random((9, 3)) < 0.5).astype(float)
    a, b = np.array([0.5, 1.0, 2.0]), np.array([1.0, 3.0, 0.7])
    fam = BetaBernoulliFamily(a, b, 3)
    _, d = _moment_draws(fam, y, 20000, 3)
    for blk in range(3):
        m, ones = (LABELS == blk).sum(), y[LABELS == blk].sum(axis=0)
        ref = stats.beta(a + ones, b + m - ones)
        assert _z(d["theta"][:, blk], ref.mean()).max() < 4.5
        np.testing.assert_allclose(d["theta"][:, blk].var(axis=0), ref.var(), rtol=0.05)


def test_replicate_uses_the_block_parameters():
    rng = np.random.default_rng(5)
    fam = NIWFamily(0.0, 1.0, 4.0, np.eye(2), 2)
    labels = np.repeat([7, 3], 40)  # any labels: canonicalised
    y = rng.normal(scale=0.1, size=(80, 2)) + np.repeat([[0.0, 0.0], [9.0, 9.0]], 40, axis=0)
    rep, params = replicate(fam, labels, y, rng)
    assert rep.shape == (80, 2) and params["mu"].shape == (2, 2) and params["cov"].shape == (2, 2, 2)
    assert np.abs(rep[:40].mean(axis=0)).max() < 0.5 and np.abs(rep[40:].mean(axis=0) - 9.0).max() < 0.5
    assert 0.003 < rep[:40].var(axis=0).min() and rep[:40].var(axis=0).max() < 0.05


@pytest.mark.parametrize("prior", [CRP(1.3), PitmanYor(0.7, 0.4), FiniteDirichlet(0.8, 4)])
def test_new_item_probabilities_are_the_sequential_weights(prior):
    sizes = np.array([3, 1, 2])
    n, k_blocks = sizes.sum(), len(sizes)
    got = np.exp(new_item_log_probabilities(prior.code, prior.kernel_params(), sizes))
    if isinstance(prior, FiniteDirichlet):
        want = np.append(sizes + prior.alpha, (prior.k - k_blocks) * prior.alpha) / (n + prior.k * prior.alpha)
    else:
        d = prior.discount
        want = np.append(sizes - d, prior.alpha + k_blocks * d) / (n + prior.alpha)
    np.testing.assert_allclose(got, want, rtol=1e-13)
    full = FiniteDirichlet(0.8, 3)
    assert np.exp(new_item_log_probabilities(full.code, full.kernel_params(), sizes))[-1] == 0.0
