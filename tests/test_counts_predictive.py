"""The numpy forms of the count and categorical families (conditional posteriors, collapsed
predictives, parameter draws, prior draws) agree with the compiled kernels and with the conjugate
formulas; predictive probabilities sum to one; bad points are refused."""

import numpy as np
import pytest

from pymc_partitions.families import draws, kernels
from pymc_partitions.families.predictive import DirichletCategoricalFamily, GammaPoissonFamily, replicate
from test_predictive_families import _kernel_log_preds


def _gp(rng, dim, n=11):
    x = rng.poisson(rng.uniform(0.5, 8.0, dim), size=(n, dim)).astype(float)
    alpha, beta = rng.uniform(0.3, 3, dim), rng.uniform(0.2, 2, dim)
    new = rng.poisson(3.0, size=(6, dim)).astype(float)
    return GammaPoissonFamily(alpha, beta, dim), (kernels.GAMMA_POISSON, x, kernels.gamma_poisson_hyper(alpha, beta, dim)), x, new, new


def _dc(rng, n_cat, n=11):
    cats = np.column_stack([rng.integers(0, c, n) for c in n_cat]).astype(float)
    a = rng.uniform(0.3, 3, (len(n_cat), max(n_cat)))
    new = np.column_stack([rng.integers(0, c, 6) for c in n_cat]).astype(float)
    part = (kernels.DIRICHLET_CATEGORICAL, kernels.dirichlet_categorical_data(cats, n_cat),
            kernels.dirichlet_categorical_hyper(a, n_cat))
    return (DirichletCategoricalFamily(a, n_cat, len(n_cat)), part, cats, new,
            kernels.dirichlet_categorical_data(new, n_cat))


CASES = [("gp", 1), ("gp", 3), ("dc", [4]), ("dc", [3, 2, 5])]


def _make(case, rng):
    kind, arg = case
    return _gp(rng, arg) if kind == "gp" else _dc(rng, arg)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_log_predictive_equals_the_kernels(case):
    rng = np.random.default_rng(0)
    for _ in range(4):
        fam, part, x, new, new_kernel = _make(case, rng)
        labels = rng.integers(0, 4, x.shape[0])
        canon, want = _kernel_log_preds(part, labels, new_kernel)
        got = fam.log_predictive(fam.posterior(canon, canon.max() + 1, x), new)
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


def test_predictive_probabilities_sum_to_one():
    rng = np.random.default_rng(1)
    fam, _, x, _, _ = _gp(rng, 1)
    post = fam.posterior(np.zeros(x.shape[0], np.int64), 1, x)
    grid = np.arange(400.0)[:, None]
    np.testing.assert_allclose(np.exp(fam.log_predictive(post, grid)).sum(axis=0), 1.0, rtol=1e-9)
    fam, _, x, _, _ = _dc(rng, [3, 2])
    post = fam.posterior(np.arange(x.shape[0]) % 2, 2, x)
    grid = np.array([[i, j] for i in range(3) for j in range(2)], float)
    np.testing.assert_allclose(np.exp(fam.log_predictive(post, grid)).sum(axis=0), 1.0, rtol=1e-12)


def test_parameter_draws_have_the_conjugate_posterior_moments():
    rng = np.random.default_rng(2)
    fam, _, x, _, _ = _gp(rng, 2)
    labels = np.arange(x.shape[0]) % 3
    post = fam.posterior(labels, 3, x)
    rates = np.array([fam.draw(post, rng)["rate"] for _ in range(4000)])
    shape = fam.alpha + np.array([x[labels == b].sum(axis=0) for b in range(3)])
    rate = fam.beta + np.bincount(labels)[:, None]
    np.testing.assert_allclose(rates.mean(axis=0), shape / rate, rtol=0.05)
    np.testing.assert_allclose(rates.var(axis=0), shape / rate**2, rtol=0.15)
    np.testing.assert_allclose(fam.posterior_mean(post)["rate"], shape / rate)
    fam, _, x, _, _ = _dc(rng, [3, 2])
    post = fam.posterior(labels, 3, x)
    p = np.array([fam.draw(post, rng)["p"] for _ in range(4000)])
    conc = post.conc[:3]
    np.testing.assert_allclose(p.mean(axis=0), conc / conc.sum(axis=2, keepdims=True), atol=0.02)
    assert np.all(p[:, :, 1, 2] == 0.0)  # the second variable has 2 categories
    np.testing.assert_allclose(p.sum(axis=3), 1.0)


def test_replicates_and_prior_draws():
    rng = np.random.default_rng(3)
    fam, _, x, _, _ = _gp(rng, 2)
    labels = np.arange(x.shape[0]) % 2
    rep, params = replicate(fam, labels, x, rng)
    assert rep.shape == x.shape and np.all(rep == np.round(rep)) and np.all(rep >= 0)
    # prior draws: one item per block, so y ~ NegBin(alpha, beta / (beta + 1)): mean alpha / beta
    y = draws.draw_gamma_poisson(np.arange(20000), [2.0, 0.5], [0.5, 2.0], rng)
    np.testing.assert_allclose(y.mean(axis=0), [4.0, 0.25], rtol=0.05)
    np.testing.assert_allclose(y.var(axis=0), [4.0 + 4.0 / 0.5, 0.25 + 0.25 / 2.0], rtol=0.08)
    c = draws.draw_dirichlet_categorical(np.arange(20000), [[1.0, 2.0, 3.0], [1.0, 1.0, 9.0]], [3, 2], rng)
    np.testing.assert_allclose(np.bincount(c[:, 0].astype(int)) / 20000, [1 / 6, 2 / 6, 3 / 6], atol=0.015)
    np.testing.assert_allclose(np.bincount(c[:, 1].astype(int)) / 20000, [0.5, 0.5], atol=0.015)
    # one block: items share the probabilities (exchangeable, positively associated)
    c = draws.draw_dirichlet_categorical(np.zeros(2, int), 0.2, [2], rng)
    assert c.shape == (2, 1)


def test_bad_hyperparameters_and_points_are_refused():
    with pytest.raises(ValueError, match="alpha"):
        GammaPoissonFamily(0.0, 1.0, 2)
    with pytest.raises(ValueError, match="beta"):
        GammaPoissonFamily(1.0, [1.0, np.nan], 2)
    fam = GammaPoissonFamily(1.0, 1.0, 1)
    post = fam.posterior(np.zeros(3, np.int64), 1, np.array([[1.0], [2.0], [0.0]]))
    for bad in ([[0.5]], [[-1.0]], [[np.nan]]):
        with pytest.raises(ValueError, match="points"):
            fam.log_predictive(post, np.array(bad))
    with pytest.raises(ValueError, match="data"):
        fam.posterior(np.zeros(2, np.int64), 1, np.array([[1.5], [0.0]]))
    with pytest.raises(ValueError, match="a must be positive"):
        DirichletCategoricalFamily([1.0, 0.0], [2], 1)
    with pytest.raises(ValueError, match="n_categories"):
        DirichletCategoricalFamily(1.0, [0], 1)
    fam = DirichletCategoricalFamily(1.0, [3, 2], 2)
    post = fam.posterior(np.zeros(2, np.int64), 1, np.array([[0, 1], [2, 0]]))
    for bad in ([[0, 2]], [[3, 0]], [[-1, 0]], [[0.5, 0]]):
        with pytest.raises(ValueError, match="points"):
            fam.log_predictive(post, np.array(bad, float))


# ---- through the PyMC layer: pmp.predictive_density / pmp.join_probabilities against enumeration

@pytest.mark.parametrize("prior_name", ["crp", "py", "fd"])
@pytest.mark.parametrize("family", ["gp", "dc", "both"])
def test_predictive_density_and_join_probabilities_are_the_enumerated_ones(family, prior_name):
    """Exact posterior weights over every partition of n = 6 items: the predictive probability of a
    new item's counts / categories and its join probabilities equal those of all partitions of
    n + 1 items (to 1e-10)."""
    import pymc as pm  # noqa: PLC0415

    import pymc_partitions as pmp  # noqa: PLC0415
    from models import categories, counts  # noqa: PLC0415
    from test_predictive import PRIORS, Exact, draws_result  # noqa: PLC0415

    prior, n = PRIORS[prior_name], 6
    cats, n_cat = categories(n)
    with pm.Model() as model:
        z = pmp.Partition("z", prior, n=n)
        if family in ("gp", "both"):
            pmp.GammaPoisson("y", partition=z, alpha=[2.0, 0.5], beta=[0.5, 1.5], observed=counts(n))
        if family in ("dc", "both"):
            pmp.DirichletCategorical("c", partition=z, a=[[0.5, 1.0, 2.0], [1.0, 0.3, 1.0]], n_categories=n_cat,
                                     observed=cats)
    exact = Exact(model, prior.log_eppf)
    parts, lj = exact.posterior()
    new_y = np.array([[0.0, 2.0], [7.0, 1.0], [3.0, 0.0]])
    new_c = np.array([[2, 0], [0, 1], [1, 1]], float)
    x, per_point = {}, [[] for _ in range(3)]
    for name, pts in [("y", new_y), ("c", new_c)]:
        if name in model.named_vars:
            x[name] = pts
            for j in range(3):
                per_point[j].append(pts[j])
    got = pmp.predictive_density(draws_result(parts), x, model, weights=np.exp(lj - lj.max())[None])
    want = np.exp([exact.log_predictive(p) for p in per_point])
    np.testing.assert_allclose(got["density"].values, want, rtol=1e-10)
    clustering = np.array([4, 4, 1, 4, 1, 7])
    join = pmp.join_probabilities(clustering, x, model)
    want = np.array([exact.join(np.array([0, 0, 1, 0, 1, 2]), p) for p in per_point])
    np.testing.assert_allclose(join.values, want, rtol=1e-10, atol=1e-300)
