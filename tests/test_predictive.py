"""The predictive functions against exact enumeration (n <= 7): the predictive density of a new
point and join probabilities equal the enumerated ones (all partitions of n + 1 items, exact
weights), to 1e-10 with exact posterior weights and within Monte Carlo error from pm.sample draws;
random hyperparameters (alpha, sigma) take each draw's values; cluster-parameter draws have the
conjugate moments given a fixed partition."""

import numpy as np
import pymc as pm
import pytest
import xarray as xr
from scipy import stats
from scipy.special import logsumexp

import pymc_partitions as pmp
from enumeration import ess
from models import COV, COV0, data, gamma_mixed_log_eppf
from pymc_partitions.families.kernels import FamilyPack
from pymc_partitions.partition import enumerate_partitions
from pymc_partitions.pymc.compat import new_result, posterior_dataset
from pymc_partitions.pymc.terms import PartitionTerms
from pymc_partitions.samplers.gibbs import log_joint
from test_pymc_sampling import add_likelihood

UNIT = pmp.CRP(1.0)
PRIORS = {"crp": pmp.CRP(1.3), "py": pmp.PitmanYor(0.6, 0.35), "fd": pmp.FiniteDirichlet(0.8, 3)}
FAMILIES = ["diag", "full", "niw", "bb", "multi"]


class Exact:
    """Exact posterior of a model's partition (fixed hyperparameters, or given values) and the
    exact predictive quantities of one more item, by enumerating all partitions of n and n + 1
    items with the compiled kernels' marginal likelihoods (tested against independent oracles)."""

    def __init__(self, model, log_prior, values=None):
        self.terms = PartitionTerms(model, "z")
        point = model.initial_point()
        vals = self.terms.hyper_values(point) if values is None else values
        _, _, self.hyper = self.terms.split_hyper(vals)
        self.data = [obs.current()[0] for obs in self.terms._data]
        self.ops = self.terms._ops
        self.log_prior = log_prior
        self.n = self.terms.n
        self._packs = {}

    def part(self, f, x):
        return self.ops[f].kernel_part(x, *self.hyper[f])

    def _pack(self, f, point):
        """The kernel pack of likelihood f's data (with the new item's point, if any), built once."""
        key = (f, None if point is None else np.asarray(point, dtype=float).tobytes())
        if key not in self._packs:
            x = self.data[f] if point is None else np.vstack([self.data[f], point[None]])
            self._packs[key] = FamilyPack.build([self.part(f, x)])
        return self._packs[key]

    def log_lik(self, labels, new=None):
        """Collapsed log likelihood; ``new``: per likelihood, the new item's point or None (then
        the likelihood sees the first n items only)."""
        total = 0.0
        for f in range(len(self.data)):
            point = None if new is None else new[f]
            z = labels[: self.n] if point is None else labels
            total += log_joint(z, self._pack(f, point), UNIT.code, UNIT.kernel_params()) - UNIT.log_eppf(z)
        return total

    def posterior(self):
        parts = enumerate_partitions(self.n)
        lj = np.array([self.log_prior(p) + self.log_lik(p) for p in parts])
        return parts, lj

    def log_predictive(self, new):
        """log p(new item's points | data) by enumerating partitions of n + 1 items."""
        _, lj = self.posterior()
        bigger = enumerate_partitions(self.n + 1)
        lj1 = np.array([self.log_prior(p) + self.log_lik(p, new) for p in bigger])
        return logsumexp(lj1) - logsumexp(lj)

    def join(self, labels, new):
        """P(the new item joins block b of ``labels``), b = 0..K (K: a new block), exactly."""
        k = labels.max() + 1
        lj = np.array([self.log_prior(np.append(labels, b)) + self.log_lik(np.append(labels, b), new)
                       for b in range(k + 1)])
        return np.exp(lj - logsumexp(lj))


def _model(family, prior, n=6):
    with pm.Model() as model:
        z = pmp.Partition("z", prior, n=n)
        add_likelihood(family, z, n)
    return model


def _points(family, rng, count=3):
    """New points per likelihood (a list aligned with the model's likelihoods) and the x argument."""
    y = rng.normal(size=(count, 2)) * 1.5 + 0.5
    b = (rng.random((count, 3)) < 0.5).astype(float)
    if family == "bb":
        return [[b[g]] for g in range(count)], b
    if family == "multi":
        return [[y[g], b[g]] for g in range(count)], {"y": y, "b": b}
    return [[y[g]] for g in range(count)], y


def draws_result(parts, **extra):
    """A one-chain result whose posterior holds the partitions ``parts`` as draws of "z" (and the
    per-draw values ``extra`` of other variables)."""
    ds = {"z": (("chain", "draw", "z_dim_0"), np.asarray(parts)[None])}
    ds.update({k: (("chain", "draw"), np.asarray(v)[None]) for k, v in extra.items()})
    return new_result({"posterior": xr.Dataset(ds)})


@pytest.mark.parametrize("prior_name", list(PRIORS))
@pytest.mark.parametrize("family", FAMILIES)
def test_predictive_density_with_exact_weights_is_the_enumerated_predictive(family, prior_name):
    prior = PRIORS[prior_name]
    model = _model(family, prior)
    exact = Exact(model, prior.log_eppf)
    parts, lj = exact.posterior()
    rng = np.random.default_rng(len(family) + 10 * len(prior_name))
    per_point, x = _points(family, rng)
    got = pmp.predictive_density(draws_result(parts), x, model, weights=np.exp(lj - lj.max())[None])
    want = np.exp([exact.log_predictive(p) for p in per_point])
    np.testing.assert_allclose(got["density"].values, want, rtol=1e-10)
    assert np.all(got["lower"].values <= got["upper"].values)
    if family == "multi":  # one likelihood's points alone: the other's features marginalised
        got = pmp.predictive_density(draws_result(parts), {"y": x["y"]}, model, weights=np.exp(lj - lj.max())[None])
        want = np.exp([exact.log_predictive([p[0], None]) for p in per_point])
        np.testing.assert_allclose(got["density"].values, want, rtol=1e-10)


@pytest.mark.parametrize("prior_name", list(PRIORS))
@pytest.mark.parametrize("family", FAMILIES)
def test_join_probabilities_are_the_enumerated_ones(family, prior_name):
    prior = PRIORS[prior_name]
    model = _model(family, prior)
    exact = Exact(model, prior.log_eppf)
    rng = np.random.default_rng(3)
    per_point, x = _points(family, rng)
    clustering = np.array([4, 4, 1, 4, 1, 7])  # canonical: [0, 0, 1, 0, 1, 2]
    got = pmp.join_probabilities(clustering, x, model)
    assert got["cluster"].values.tolist() == [0, 1, 2, -1] and got["cluster_size"].values.tolist() == [3, 2, 1, 0]
    want = np.array([exact.join(np.array([0, 0, 1, 0, 1, 2]), p) for p in per_point])
    np.testing.assert_allclose(got.values, want, rtol=1e-10, atol=1e-300)
    np.testing.assert_allclose(got.values.sum(axis=1), 1.0, rtol=1e-12)


def _grid_posterior(model, values_of, nodes, log_prior_of, log_density):
    """Draws (partition, node) with exact weights on a grid of hyperparameter values: weight =
    quadrature weight x prior density of the node x p(partition | node) x p(data | partition, node)."""
    parts = enumerate_partitions(PartitionTerms(model, "z").n)
    rows, exacts = [], []
    for node, q in nodes:
        exact = Exact(model, log_prior_of(node), values_of(node))
        _, lj = exact.posterior()
        rows.append(lj + np.log(q) + log_density(node))
        exacts.append((exact, np.log(q) + log_density(node)))
    return parts, np.concatenate(rows), exacts


def test_random_alpha_and_sigma_take_each_draws_values():
    """With alpha ~ Gamma and sigma ~ HalfNormal, draws on a grid of (alpha, sigma) with their exact
    weights give the exact predictive of that discrete posterior: the functions read the
    *untransformed* posterior values (alpha, not alpha_log__) and use each draw's own."""
    n = 5
    y, _ = data(n)
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 2.0, 1.0)
        sigma = pm.HalfNormal("sigma", 1.5)
        z = pmp.Partition("z", pmp.CRP(alpha), n=n)
        pmp.NormalNormal("y", partition=z, mu0=0.0, sigma0=2.0, sigma=sigma, observed=y[:, 0])
    a_nodes, s_nodes = np.linspace(0.2, 4.0, 6), np.linspace(0.4, 2.0, 5)
    nodes = [((a, s), 1.0) for a in a_nodes for s in s_nodes]

    def values_of(node):
        a, s = node
        return [np.asarray(a), np.asarray(0.0), np.asarray([0.0]), np.asarray([2.0]), np.asarray([s])]

    def log_density(node):
        return stats.gamma.logpdf(node[0], 2.0) + stats.halfnorm.logpdf(node[1], scale=1.5)

    parts, lw, exacts = _grid_posterior(model, values_of, nodes, lambda node: (lambda p: pmp.CRP(node[0]).log_eppf(p)),
                                        log_density)
    draws = np.concatenate([parts] * len(nodes))
    a_draws = np.repeat([node[0][0] for node in nodes], len(parts))
    s_draws = np.repeat([node[0][1] for node in nodes], len(parts))
    result = draws_result(draws, alpha=a_draws, sigma=s_draws)
    x = np.array([-2.0, 0.3, 1.7])
    got = pmp.predictive_density(result, x, model, weights=np.exp(lw - lw.max())[None])
    total = logsumexp(lw)
    want = []
    for point in x:
        terms = [offset + logsumexp([e.log_prior(p) + e.log_lik(p, [np.array([point])])
                                     for p in enumerate_partitions(n + 1)]) for e, offset in exacts]
        want.append(np.exp(logsumexp(terms) - total))
    np.testing.assert_allclose(got["density"].values, want, rtol=1e-10)
    # transformed values would be wrong: feeding log(alpha) as alpha changes the answer
    wrong = pmp.predictive_density(draws_result(draws, alpha=np.log(a_draws) + 2.0, sigma=s_draws), x, model,
                                   weights=np.exp(lw - lw.max())[None])
    assert np.abs(wrong["density"].values / want - 1.0).max() > 1e-3
    # join probabilities average the per-draw values over the draws' weights
    clustering = np.array([0, 0, 1, 1, 2])
    got = pmp.join_probabilities(result, x, model, labels=clustering, weights=np.exp(lw - lw.max())[None]).values
    w = np.exp(lw - total).reshape(len(nodes), len(parts)).sum(axis=1)
    want = sum(wi * np.array([e.join(clustering, [np.array([p])]) for p in x]) for wi, (e, _) in zip(w, exacts))
    np.testing.assert_allclose(got, want, rtol=1e-10)


def test_predictive_density_from_pm_sample_within_monte_carlo_error():
    """pm.sample (Gibbs + Escobar-West on a Gamma alpha) at n = 7: the Rao-Blackwellised density
    within 4.5 Monte Carlo standard errors (effective sample size of each point's per-draw
    density) of the exact one, alpha integrated out numerically."""
    n = 7
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 2.0, 1.0)
        z = pmp.Partition("z", pmp.CRP(alpha), n=n)
        add_likelihood("niw", z, n)
        idata = pm.sample(draws=3000, tune=200, chains=1, random_seed=4, progressbar=False,
                          step=[pmp.EscobarWest([alpha])], compute_convergence_checks=False)
    exact = Exact(model, gamma_mixed_log_eppf(pmp.CRP, 2.0, 1.0))
    x = np.array([[-1.0, -1.0], [0.5, 0.5], [2.0, 2.5]])
    got = pmp.predictive_density(idata, x, model, keep_draws=True)
    per_draw = got["density_draws"].values.reshape(-1, len(x))
    want = np.exp([exact.log_predictive([p]) for p in x])
    for g in range(len(x)):
        se = per_draw[:, g].std() / np.sqrt(ess(per_draw[:, g]))
        assert abs(got["density"].values[g] - want[g]) < 4.5 * se, (g, got["density"].values[g], want[g], se)
    assert got["density_draws"].dims == ("chain", "draw", "point")


def test_cluster_parameters_have_the_conjugate_moments_given_a_partition():
    n = 6
    y, b = data(n)
    with pm.Model() as model:
        z = pmp.Partition("z", pmp.CRP(1.0), n=n)
        pmp.NormalNormal("y", partition=z, mu0=[0.5, 0.0], sigma0=[2.0, 1.5], sigma=[1.0, 0.8], observed=y)
        pmp.BetaBernoulli("b", partition=z, a=0.5, b=[1.0, 2.0, 0.7], observed=b)
    labels = np.array([0, 0, 1, 1, 1, 2])
    mixed = np.array([0, 1, 1, 1, 1, 1])  # a draw with two clusters: padded with NaN
    draws = np.stack([labels] * 3999 + [mixed])
    out = pmp.cluster_parameters(draws_result(draws), model, random_seed=1)
    assert out["y_mu"].dims == ("chain", "draw", "cluster", "y_dim") and out["b_theta"].shape == (1, 4000, 3, 3)
    assert np.isnan(out["y_mu"].values[0, -1, 2]).all() and out["cluster_size"].values[0, -1].tolist() == [1, 5, 0]
    mu = out["y_mu"].values[0, :-1]
    theta = out["b_theta"].values[0, :-1]
    for blk in range(3):
        m, s = (labels == blk).sum(), y[labels == blk].sum(axis=0)
        var = 1.0 / (1.0 / np.array([4.0, 2.25]) + m / np.array([1.0, 0.64]))
        mean = var * (np.array([0.5, 0.0]) / np.array([4.0, 2.25]) + s / np.array([1.0, 0.64]))
        se = np.sqrt(var / len(mu))
        assert np.all(np.abs(mu[:, blk].mean(axis=0) - mean) < 4.5 * se)
        np.testing.assert_allclose(mu[:, blk].var(axis=0), var, rtol=0.08)
        ones = b[labels == blk].sum(axis=0)
        ref = stats.beta(0.5 + ones, np.array([1.0, 2.0, 0.7]) + m - ones)
        assert np.all(np.abs(theta[:, blk].mean(axis=0) - ref.mean()) < 4.5 * np.sqrt(ref.var() / len(theta)))


def test_cluster_parameters_full_and_niw_dims():
    n = 6
    with pm.Model() as model:
        z = pmp.Partition("z", pmp.CRP(1.0), n=n)
        add_likelihood("niw", z, n)
    draws = np.array([[0, 0, 1, 1, 1, 2], [0, 1, 0, 1, 0, 1]])
    out = pmp.cluster_parameters(draws_result(draws), model, random_seed=0)
    assert out["y_cov"].dims == ("chain", "draw", "cluster", "y_dim", "y_dim_other")
    cov = out["y_cov"].values[0, 0]
    assert np.all(np.linalg.eigvalsh(cov) > 0) and np.isnan(out["y_cov"].values[0, 1, 2]).all()
    with pm.Model() as full:
        z = pmp.Partition("z", pmp.CRP(1.0), n=n)
        pmp.NormalNormal("y", partition=z, mu0=0.0, cov0=COV0, cov=COV, observed=data(n)[0])
    again = pmp.cluster_parameters(draws_result(draws), full, draws=1, random_seed=np.random.default_rng(0))
    assert again["y_mu"].shape == (1, 1, 3, 2) and list(again.data_vars) == ["cluster_size", "y_mu"]


def test_a_known_partition_predicts_given_its_labels():
    """A known partition (observed=labels) was refused by the predictive functions ("a known partition
    is data"). Given its labels in every draw: the predictive density and the join probabilities are
    the CRP(alpha)-weighted mixtures over the known groups and a new one, averaged over alpha's
    posterior draws (computed here with scipy); cluster parameters and replicates are drawn given the
    labels; a slot model of a known partition is refused naming what to use."""
    y = np.array([-2.0, -1.6, 0.1, 1.7, 2.2, 2.0])
    labels = np.array([0, 0, 1, 2, 2, 2])
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 2.0, 1.0)
        z = pmp.Partition("z", pmp.CRP(alpha), n=6, observed=labels)
        pmp.NormalNormal("y", partition=z, mu0=0.0, sigma0=2.0, sigma=0.7, observed=y)
        idata = pm.sample(draws=300, tune=200, chains=2, cores=1, progressbar=False, random_seed=1,
                          compute_convergence_checks=False)
    x = np.array([-2.0, 0.0, 2.0, 6.0])
    alphas = posterior_dataset(idata)["alpha"].values.ravel()
    terms = np.empty((alphas.size, 4, len(x)))  # (draw, group or new, point)
    for j, a in enumerate(alphas):
        for b in range(3):
            yb = y[labels == b]
            precision = 1 / 4.0 + len(yb) / 0.49
            terms[j, b] = len(yb) / (6 + a) * stats.norm.pdf(x, yb.sum() / 0.49 / precision,
                                                              np.sqrt(1 / precision + 0.49))
        terms[j, 3] = a / (6 + a) * stats.norm.pdf(x, 0.0, np.sqrt(4.49))
    density = pmp.predictive_density(idata, x, model)
    np.testing.assert_allclose(density["density"].values, terms.sum(axis=1).mean(axis=0), rtol=1e-10)
    joins = pmp.join_probabilities(idata, x, model)
    np.testing.assert_allclose(joins.values, (terms / terms.sum(axis=1, keepdims=True)).mean(axis=0).T, rtol=1e-10)
    assert joins.attrs["clustering"] == "the known partition" and joins["cluster_size"].values.tolist() == [2, 1, 3, 0]
    params = pmp.cluster_parameters(idata, model, random_seed=0)
    assert params["cluster_size"].values[0, 0].tolist() == [2, 1, 3]
    means = params["y_mu"].values[..., 0].reshape(-1, 3).mean(axis=0)
    want = [(y[labels == b].sum() / 0.49) / (1 / 4.0 + (labels == b).sum() / 0.49) for b in range(3)]
    np.testing.assert_allclose(means, want, atol=0.1)
    replicates = posterior_dataset(pmp.sample_posterior_predictive(idata, model, random_seed=0), "posterior_predictive")
    np.testing.assert_allclose(replicates["y"].values[..., 0].mean(axis=(0, 1)), np.array(want)[labels], atol=0.15)
    for summary in (pmp.point_estimate, pmp.coclustering):  # nothing to estimate: the known labels are the answer
        for model_given in ({}, {"model": model}):
            with pytest.raises(ValueError, match="'z' is known \\(observed=labels\\), so it is data"):
                summary(idata, **model_given)
    with pm.Model() as slots:
        z = pmp.Partition("z", pmp.CRP(1.0), n=6, observed=labels)
        mu = pm.Normal("mu", 0.0, 2.0, shape=6)
        pm.Normal("y", mu[z], 0.7, observed=y)
        slot_idata = pm.sample(draws=20, tune=20, chains=1, progressbar=False, random_seed=1,
                               compute_convergence_checks=False)
    with pytest.raises(ValueError, match="the known partition 'z' has non-conjugate likelihoods.*"
                                         "pm.sample_posterior_predictive"):
        pmp.predictive_density(slot_idata, x, slots)
    with pytest.raises(ValueError, match="the known partition 'z' has non-conjugate likelihoods"):
        pmp.join_probabilities(slot_idata, x, slots)
