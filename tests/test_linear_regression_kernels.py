"""The LINEAR_REGRESSION family (clusters of regressions, Normal-inverse-Gamma prior): compiled
statistics against the independent scipy oracle, and every sampler kernel against enumeration."""

import numpy as np
import pytest

from enumeration import check_against
from models import LR_COV0, LR_MU0, PRIORS, pack, regressions
from reference_families import (ref_log_marginal_linear_regression, ref_log_predictive_linear_regression,
                                ref_total)
from pymc_partitions.families import kernels as K
from pymc_partitions.samplers.arm import ARMKernel
from pymc_partitions.samplers.gibbs import GibbsKernel, log_joint
from pymc_partitions.samplers.gibbs_sams import GibbsSAMSKernel
from pymc_partitions.samplers.jain_neal import JainNealKernel
from pymc_partitions.samplers.pgsm import PGSMKernel
from pymc_partitions.samplers.sams import SAMSKernel
from test_pgsm_enumeration import posteriors, run

A0, B0 = 2.0, 1.5


def _setup(n=7, p=3, seed=1):
    rng = np.random.default_rng(seed)
    X = np.c_[np.ones(n), rng.normal(size=(n, p - 1))]
    y = X @ rng.normal(size=p) + rng.normal(size=n)
    mu0 = rng.normal(size=p)
    a = rng.normal(size=(p, p))
    cov0 = a @ a.T + 0.5 * np.eye(p)
    hyper = dict(mu0=mu0, cov0=cov0, a0=1.7, b0=0.9)
    pk = K.FamilyPack.build([(K.LINEAR_REGRESSION, np.c_[X, y], K.linear_regression_hyper(**hyper, p=p))])
    return X, y, hyper, pk


def _table(pk, rows):
    st = np.zeros((rows, pk.width))
    for b in range(rows):
        K.pack_init(pk.codes, pk.dims, pk.stat_off, pk.hyper_off, pk.hyper, st, b)
    return st


def _update(pk, st, b, i, sign, scratch):
    K.pack_update(pk.codes, pk.dims, pk.data_off, pk.stat_off, pk.hyper_off, pk.hyper, st, b, pk.data, i, sign, scratch)


def _marginal(pk, st, b):
    return K.pack_log_marginal(pk.codes, pk.dims, pk.stat_off, pk.hyper_off, pk.hyper, st, b)


@pytest.mark.parametrize("p", [1, 3])
def test_add_remove_marginal_and_predictive_match_the_oracle(p):
    """A random walk of additions and removals: after every step the block's log marginal equals
    the multivariate Student t of its responses, and every item's log predictive equals the scipy
    Student t of the posterior (the empty block: the prior predictive)."""
    X, y, hyper, pk = _setup(n=7, p=p, seed=p)
    st = _table(pk, 2)
    scratch = np.zeros(pk.data.shape[1])
    rng = np.random.default_rng(0)
    members = set()
    for _ in range(40):
        i = int(rng.integers(7))
        sign = -1.0 if i in members else 1.0
        _update(pk, st, 0, i, sign, scratch)
        members.symmetric_difference_update({i})
        idx = sorted(members)
        assert _marginal(pk, st, 0) == pytest.approx(
            ref_log_marginal_linear_regression(X[idx], y[idx], **hyper), rel=1e-9, abs=1e-9)
        out = np.zeros(2)
        j = int(rng.integers(7))
        K.pack_log_preds(pk.codes, pk.dims, pk.data_off, pk.stat_off, pk.hyper_off, pk.hyper, st, np.array([0, 1]), 2,
                         pk.data, j, scratch, out)
        assert out[0] == pytest.approx(ref_log_predictive_linear_regression(X[idx], y[idx], X[j], y[j], **hyper),
                                       rel=1e-9, abs=1e-9)
        assert out[1] == pytest.approx(ref_log_marginal_linear_regression(X[[j]], y[[j]], **hyper), rel=1e-9)
    for i in sorted(members):  # emptied: exactly the empty block's statistics again
        _update(pk, st, 0, i, -1.0, scratch)
    assert np.array_equal(st[0], st[1])
    assert _marginal(pk, st, 0) == 0.0


def test_set_statistics_and_merge_match_the_oracle():
    X, y, hyper, pk = _setup(n=7, p=3, seed=4)
    st = _table(pk, 3)
    scratch = np.zeros(pk.data.shape[1])
    items = np.array([5, 1, 3, 0, 6, 2], np.int64)
    K.pack_set_stats(pk.codes, pk.dims, pk.data_off, pk.stat_off, pk.hyper_off, pk.hyper, st, 0, pk.data, items, 0, 3,
                     scratch)
    K.pack_set_stats(pk.codes, pk.dims, pk.data_off, pk.stat_off, pk.hyper_off, pk.hyper, st, 1, pk.data, items, 3, 3,
                     scratch)
    a, b = items[:3], items[3:]
    assert _marginal(pk, st, 0) == pytest.approx(ref_log_marginal_linear_regression(X[a], y[a], **hyper), rel=1e-10)
    work = np.zeros(K.merge_work_size(pk.codes, pk.dims))
    K.pack_merge(pk.codes, pk.dims, pk.stat_off, pk.hyper_off, pk.hyper, st, 0, 1, items, 3, 3, work)
    assert _marginal(pk, st, 0) == pytest.approx(ref_log_marginal_linear_regression(X[items], y[items], **hyper),
                                                 rel=1e-10)
    K.pack_merge(pk.codes, pk.dims, pk.stat_off, pk.hyper_off, pk.hyper, st, 0, 2, items, 0, 0, work)  # empty src
    assert _marginal(pk, st, 0) == pytest.approx(ref_log_marginal_linear_regression(X[items], y[items], **hyper),
                                                 rel=1e-10)
    K.pack_merge(pk.codes, pk.dims, pk.stat_off, pk.hyper_off, pk.hyper, st, 2, 0, items, 0, 6, work)  # empty dst
    assert np.array_equal(st[2], st[0])


def test_log_joint_is_prior_times_the_oracle():
    n = 7
    fam = pack("lr", n)
    X, y = regressions(n)
    prior = PRIORS["crp"]
    rng = np.random.default_rng(3)
    for _ in range(5):
        labels = rng.integers(0, 3, n)
        ref = ref_total(labels, np.c_[X, y], lambda Z: ref_log_marginal_linear_regression(
            Z[:, :2], Z[:, 2], LR_MU0, LR_COV0, A0, B0))
        assert log_joint(labels, fam, prior.code, prior.kernel_params()) == pytest.approx(
            ref + prior.log_eppf(labels), rel=1e-10)


def test_hostile_hyper_vectors_are_refused():
    X, y, hyper, pk = _setup(n=5, p=2)
    data = np.c_[X, y]
    good = K.linear_regression_hyper(**hyper, p=2)
    for bad, match in [(good[:-1], "length"), (np.r_[good[:-4], -1.0, good[-3:]], "a0"),
                       (np.r_[good[:-3], 0.0, good[-2:]], "b0"), (np.where(np.arange(good.size) == 0, np.nan, good),
                                                                   "finite")]:
        with pytest.raises(ValueError, match=match):
            K.FamilyPack.build([(K.LINEAR_REGRESSION, data, bad)])
    with pytest.raises(ValueError, match="NaN"):
        K.FamilyPack.build([(K.LINEAR_REGRESSION, np.where(data == data[2, 1], np.inf, data), good)])
    with pytest.raises(ValueError, match="exceeds"):
        K.FamilyPack.build([(K.LINEAR_REGRESSION, data * 1e160, good)])
    with pytest.raises(ValueError, match="at least one covariate"):
        K.FamilyPack.build([(K.LINEAR_REGRESSION, y[:, None], np.r_[1.0, 1.0, 0.0, 0.0])])


# ----------------------------------------------------------------------------- samplers against enumeration

N = 7


def _check(kernels, prior_name, steps, seed, n=N):
    prior = PRIORS[prior_name]
    fam = pack("lr", n)
    parts, exact, wrong = posteriors(prior, fam, n)
    samples, k = run(kernels(fam, prior), n, steps, seed)
    check_against(parts, exact, samples[500:], [k[500:]], wrong=wrong)


@pytest.mark.parametrize("prior_name", list(PRIORS))
def test_gibbs_matches_enumeration(prior_name):
    _check(lambda fam, pr: [GibbsKernel(fam, pr.code, pr.kernel_params())], prior_name, 20000, 1)


@pytest.mark.parametrize("prior_name", ["crp", "finite_dirichlet"])
def test_gibbs_split_merge_default_matches_enumeration(prior_name):
    """The default step of pm.sample (Gibbs sweeps with SAMS split-merge moves)."""
    prior = PRIORS[prior_name]
    fam = pack("lr", N)
    parts, exact, wrong = posteriors(prior, fam, N)
    kernel = GibbsSAMSKernel(fam, prior.code, prior.kernel_params(), reps=2, moves=2)
    rng = np.random.default_rng(2)
    labels = np.zeros(N, np.int64)
    out = np.empty((8000, N), np.int64)
    for t in range(8000):
        labels = kernel.step(labels, rng)[0]
        out[t] = labels
    check_against(parts, exact, out[200:], [out[200:].max(axis=1)], wrong=wrong)


def test_pgsm_matches_enumeration():
    _check(lambda fam, pr: [PGSMKernel(fam, pr.code, pr.kernel_params(), num_particles=10)], "pitman_yor", 30000, 3,
           n=6)


def test_sams_matches_enumeration():
    _check(lambda fam, pr: [SAMSKernel(fam, pr.code, pr.kernel_params())], "crp", 40000, 4, n=6)


def test_jain_neal_matches_enumeration():
    _check(lambda fam, pr: [JainNealKernel(fam, pr.code, pr.kernel_params(), intermediate_scans=2)], "crp", 30000, 5,
           n=6)


def test_arm_with_gibbs_matches_enumeration():
    """ARM's moves use the union statistics (family_merge) of refinement blocks."""
    n = 6
    prior = PRIORS["crp"]
    fam = pack("lr", n)
    parts, exact, wrong = posteriors(prior, fam, n)
    pool = parts[np.random.default_rng(0).choice(len(parts), 12, replace=False)]
    rng = np.random.default_rng(6)
    gibbs = GibbsKernel(fam, prior.code, prior.kernel_params())
    arm = ARMKernel(fam, prior.code, prior.kernel_params(), synthetic=0.0, focus=0.0)
    labels = np.zeros(n, np.int64)
    out = np.empty((8000, n), np.int64)
    accepted = 0
    for t in range(8000):
        labels = gibbs.step(labels, rng)[0]
        for _ in range(3):
            a, b = rng.choice(len(pool), 2, replace=False)
            labels, info = arm.step(labels, (pool[a], pool[b]), rng)
            accepted += info["accepted"]
        out[t] = labels
    assert accepted > 1000
    check_against(parts, exact, out[200:], [out[200:].max(axis=1)], wrong=wrong)


# ----------------------------------------------------------------------------- the numpy family (predictive, draws)


def test_family_log_predictive_equals_the_oracle_and_the_kernels():
    from pymc_partitions.families.predictive import NormalLinearRegressionFamily

    X, y, hyper, pk = _setup(n=8, p=3, seed=7)
    fam = NormalLinearRegressionFamily(X, **hyper)
    labels = np.array([0, 0, 1, 0, 1, 2, 2, 1])
    post = fam.posterior(labels, 3, y)
    rng = np.random.default_rng(8)
    points = np.c_[np.ones(5), rng.normal(size=(5, 2)), rng.normal(size=5)]
    got = fam.log_predictive(post, points)
    for g, pt in enumerate(points):
        for k in range(4):  # k = 3: the empty block (prior predictive)
            ref = ref_log_predictive_linear_regression(X[labels == k], y[labels == k], pt[:3], pt[3], **hyper)
            assert got[g, k] == pytest.approx(ref, rel=1e-10)
    # the compiled kernels' predictive of the same points
    st = _table(pk, 4)
    scratch = np.zeros(4)
    for i, b in enumerate(labels):
        _update(pk, st, b, i, 1.0, scratch)
    x_pts = np.ascontiguousarray(points)
    for g in range(5):
        out = np.zeros(4)
        K.pack_log_preds(pk.codes, pk.dims, pk.data_off, pk.stat_off, pk.hyper_off, pk.hyper, st, np.arange(4), 4,
                         x_pts, g, scratch, out)
        np.testing.assert_allclose(out, got[g], rtol=1e-10)
    with pytest.raises(ValueError, match=r"rows \[x \(p=3 covariates\), y\]"):
        fam.log_predictive(post, points[:, 1:])


def test_family_draws_have_the_conjugate_moments():
    """sigma^2 | data ~ InvGamma(a, b) (KS), beta | data has mean m and covariance b / (a - 1) Lam^{-1}."""
    from scipy import stats

    from pymc_partitions.families.predictive import NormalLinearRegressionFamily

    X, y, hyper, _ = _setup(n=9, p=2, seed=9)
    fam = NormalLinearRegressionFamily(X, **hyper)
    labels = np.array([0, 0, 0, 0, 1, 1, 1, 1, 1])
    post = fam.posterior(labels, 2, y)
    rng = np.random.default_rng(10)
    draws = [fam.draw(post, rng) for _ in range(20000)]
    beta = np.array([d["beta"] for d in draws])
    sigma = np.array([d["sigma"] for d in draws])
    for b in range(2):
        assert stats.kstest(sigma[:, b] ** 2, stats.invgamma(post.a[b], scale=post.b[b]).cdf).pvalue > 1e-3
        cov = post.b[b] / (post.a[b] - 1.0) * np.linalg.inv(post.prec[b])
        z = (beta[:, b].mean(axis=0) - post.mean[b]) / np.sqrt(np.diag(cov) / len(draws))
        assert np.abs(z).max() < 4.5
        np.testing.assert_allclose(np.cov(beta[:, b].T), cov, rtol=0.08, atol=0.02 * np.abs(cov).max())
    rep = fam.replicate(draws[0], labels, rng)
    assert rep.shape == (9, 1)
