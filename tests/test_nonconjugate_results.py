"""Results of non-conjugate partition models (slot parameters, pymc_partitions/pymc/nonconjugate.py):
label-invariant views of the slots (pmp.slot_views, pmp.summary), and the results functions
checked against the collapsed NormalNormal on the same data (the conjugate model written through
the non-conjugate path has the same posterior)."""

import numpy as np
import pymc as pm
import pytest
import xarray as xr

import pymc_partitions as pmp
from pymc_partitions.pymc.compat import new_result, posterior_dataset
from pymc_partitions.results.slots import views_of_slots

Y = np.array([-3.1, -2.8, -3.3, -2.9, 2.7, 3.2, 3.0, 2.9, 3.1, 0.2])
N = len(Y)


def slot_model(y=Y, prior=None, sigma0=3.0, sigma=0.5):
    n = len(y)
    prior = pmp.CRP(1.0) if prior is None else prior
    with pm.Model() as model:
        z = pmp.Partition("z", prior, n=n)
        mu = pm.Normal("mu", 0.0, sigma0, shape=n)
        pm.Normal("y", mu=mu[z], sigma=sigma, observed=y)
    return model


def _fit(model, draws, tune, seed):
    """(model, result) of two chains of plain pm.sample."""
    with model:
        idata = pm.sample(draws=draws, tune=tune, chains=2, cores=1, random_seed=seed, progressbar=False,
                          compute_convergence_checks=False)
    return model, idata


@pytest.fixture(scope="module")
def fitted():
    return _fit(slot_model(), 150, 100, 3)


def _by_hand(labels, slots):
    """Per draw: parameter of each item's cluster, and (size, parameter) of the clusters ranked by
    size (largest first, ties by first item), computed one draw at a time."""
    of_item = slots[labels]
    blocks = list(dict.fromkeys(labels.tolist()))  # first-appearance order
    ranked = sorted(blocks, key=lambda b: -np.sum(labels == b))  # stable: ties keep first appearance
    return of_item, [int(np.sum(labels == b)) for b in ranked], slots[ranked]


def test_slot_views_are_each_items_cluster_parameter_and_the_clusters_ranked_by_size(fitted, tmp_path):
    model, idata = fitted
    out = pmp.slot_views(idata, model)
    views = posterior_dataset(out, "slot_views")
    post = posterior_dataset(idata)
    assert views["mu_of_item"].dims == ("chain", "draw", "item")
    assert views["mu_by_size"].dims == ("chain", "draw", "z_size_rank")
    z, mu = post["z"].values, post["mu"].values
    for c in range(2):
        for d in range(0, 150, 7):
            of_item, sizes, ranked = _by_hand(z[c, d], mu[c, d])
            np.testing.assert_array_equal(views["mu_of_item"].values[c, d], of_item)
            k = len(sizes)
            np.testing.assert_array_equal(views["z_cluster_size"].values[c, d, :k], sizes)
            assert np.all(views["z_cluster_size"].values[c, d, k:] == 0)
            np.testing.assert_array_equal(views["mu_by_size"].values[c, d, :k], ranked)
            assert np.all(np.isnan(views["mu_by_size"].values[c, d, k:]))
    # the largest cluster is one of the two groups of the data, its mean near the group's
    top = views["mu_by_size"].values[..., 0]
    assert np.mean(np.abs(np.abs(top) - 3.0) < 0.6) > 0.9
    # recorded at sampling time: the same views without the model, and after save / load
    again = posterior_dataset(pmp.slot_views(idata), "slot_views")
    xr.testing.assert_equal(again[["mu_of_item", "mu_by_size"]], views[["mu_of_item", "mu_by_size"]])
    pmp.save(out, tmp_path / "views.nc")
    back = posterior_dataset(pmp.load(tmp_path / "views.nc"), "slot_views")
    np.testing.assert_array_equal(back["mu_by_size"].values, views["mu_by_size"].values)


def test_views_do_not_depend_on_the_labelling():
    """Relabelling the partition and permuting the slots with it (the same state) gives the same
    views; vector-valued slots (trailing axes) included; ties ranked by first item."""
    rng = np.random.default_rng(0)
    rows, n, d = 40, 9, 2
    labels = rng.integers(0, 4, size=(rows, n))
    slots = rng.normal(size=(rows, n, d))
    perm = np.array([rng.permutation(n) for _ in range(rows)])  # new label of old label j: perm[r, j]
    relabelled = np.take_along_axis(perm, labels, 1)
    moved = np.empty_like(slots)
    for r in range(rows):
        moved[r, perm[r]] = slots[r]
    a = views_of_slots(labels, slots)
    b = views_of_slots(relabelled, moved)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    of_item, by_size, sizes, k = a
    for r in range(rows):
        expect_item, expect_sizes, expect_ranked = _by_hand(labels[r], slots[r])
        np.testing.assert_array_equal(of_item[r], expect_item)
        np.testing.assert_array_equal(sizes[r, :k[r]], expect_sizes)
        np.testing.assert_array_equal(by_size[r, :k[r]], expect_ranked)
        assert np.all(np.isnan(by_size[r, k[r]:]))


def test_summary_shows_ranked_slot_parameters_not_raw_slots(fitted):
    model, idata = fitted
    for kwargs in ({}, {"model": model}):
        table = pmp.summary(idata, **kwargs)
        rows = [str(i) for i in table.index]
        assert not any(r.startswith("mu[") for r in rows), rows
        assert rows[:3] == ["z_n_clusters", "z_largest_share", "mu_by_size[0]"]
        k_min = int((posterior_dataset(idata)["z"].max("item") + 1).min())
        assert sum(r.startswith("mu_by_size[") for r in rows) == k_min
        views = posterior_dataset(pmp.slot_views(idata, model), "slot_views")
        mean = float(views["mu_by_size"][..., 0].mean())
        assert float(table.loc["mu_by_size[0]", "mean"]) == pytest.approx(mean, abs=0.01)
    inv = posterior_dataset(pmp.label_invariant(idata))
    assert "mu" not in inv and inv["mu_by_size"].dims == ("chain", "draw", "z_size_rank")


def test_slot_views_hostile(fitted):
    model, idata = fitted
    with pytest.raises(TypeError, match="slot_views: expected a pm.sample result"):
        pmp.slot_views(np.zeros((2, 3)))
    with pytest.raises(TypeError, match="var_name"):
        pmp.slot_views(idata, model, var_name=3)
    with pytest.raises(ValueError, match="var_name 'w'"):
        pmp.slot_views(idata, model, var_name="w")
    with pytest.raises(TypeError, match="model must be a pymc.Model"):
        pmp.slot_views(idata, model="m")
    with pytest.raises(TypeError, match="overwrite"):
        pmp.slot_views(idata, model, overwrite="yes")
    out = pmp.slot_views(idata, model)
    with pytest.raises(ValueError, match="already has a 'slot_views' group; pass overwrite=True"):
        pmp.slot_views(out, model)
    pmp.slot_views(out, model, overwrite=True)
    with pm.Model() as collapsed:
        z = pmp.Partition("z", pmp.CRP(1.0), n=N)
        pmp.NormalNormal("y", partition=z, mu0=0.0, sigma0=3.0, sigma=0.5, observed=Y)
    post = posterior_dataset(idata)
    with pytest.raises(ValueError, match="no slot variables.*pass model="):
        pmp.slot_views(new_result({"posterior": post[["z"]]}), collapsed)
    bad = post.drop_vars("mu").assign(mu=(("chain", "draw", "slot"), post["mu"].values[..., :3]))
    with pytest.raises(ValueError, match="labels of 'z' must index the 3 slots of 'mu'"):
        pmp.slot_views(new_result({"posterior": bad}), model)


# --- the results functions on a non-conjugate model, against the exact posterior ------------------
# The conjugate model written through the non-conjugate path (Normal likelihood, known sigma, Normal
# base measure) has the exact posterior of the collapsed NormalNormal, by enumeration.

Y6 = np.array([-2.1, -1.6, -1.9, 1.8, 2.3, 0.4])
SIGMA0, SIGMA = 2.0, 1.0


def exact6(sigma0=SIGMA0):
    from enumeration import exact_posterior
    from pymc_partitions.families import kernels
    from pymc_partitions.families.kernels import FamilyPack
    from pymc_partitions.samplers.gibbs import log_joint

    prior = pmp.CRP(1.2)
    pack = FamilyPack.build([(kernels.DIAG_NORMAL, Y6[:, None],
                              kernels.diag_normal_hyper([0.0], [sigma0], [SIGMA], 1))])
    return exact_posterior(len(Y6), lambda p: log_joint(p, pack, prior.code, prior.kernel_params()))


def slot_model6(sigma0=SIGMA0):
    return slot_model(Y6, pmp.CRP(1.2), sigma0, SIGMA)


def collapsed_model6(sigma0=SIGMA0):
    with pm.Model() as model:
        z = pmp.Partition("z", pmp.CRP(1.2), n=len(Y6))
        pmp.NormalNormal("y", partition=z, mu0=0.0, sigma0=sigma0, sigma=SIGMA, observed=Y6)
    return model


@pytest.fixture(scope="module")
def fitted6():
    return _fit(slot_model6(), 1500, 300, 5)


@pytest.fixture(scope="module")
def collapsed6():
    """(collapsed model, its result): the reference of two tests, sampled once (draws identical to
    sampling it in each; the log-likelihood group is computed after the draws)."""
    model = collapsed_model6()
    with model:
        cidata = pm.sample(draws=1500, tune=200, chains=2, cores=1, random_seed=6, progressbar=False,
                           compute_convergence_checks=False, idata_kwargs={"log_likelihood": True})
    return model, cidata


def _chain_ess(traces):
    """Sum over chains of the effective sample size of a (chains, draws) trace."""
    from enumeration import ess

    return sum(min(len(t), ess(t)) for t in traces)


def _z_scores(estimates, exact, traces):
    """|estimate - exact| / Monte Carlo sd per quantity; traces: (quantities, chains, draws)."""
    out = []
    for est, ex, tr in zip(estimates, exact, traces):
        sd = np.std(tr) / np.sqrt(max(_chain_ess(tr), 1.0))
        out.append(abs(est - ex) / max(sd, 1e-3))
    return np.array(out)


def test_coclustering_point_estimate_and_credible_ball_match_enumeration(fitted6):
    model, idata = fitted6
    parts, p = exact6()
    _, wrong = exact6(sigma0=3 * SIGMA0)
    z = posterior_dataset(idata)["z"].values
    pairs = [(i, j) for i in range(6) for j in range(i + 1, 6)]
    co = pmp.coclustering(idata).values
    traces = [(z[..., i] == z[..., j]).astype(float) for i, j in pairs]
    for exact, ok in ((p, True), (wrong, False)):  # power: the same check rejects a wrong base measure
        c = sum(w * (part[:, None] == part[None, :]) for part, w in zip(parts, exact))
        scores = _z_scores([co[i, j] for i, j in pairs], [c[i, j] for i, j in pairs], traces)
        assert (scores.max() < 4.5) == ok, scores.round(1)
    # the Bayes estimate under VI: the exact minimiser of the expected loss over all 203 partitions
    from pymc_partitions.summaries import expected_loss

    losses = np.array([expected_loss(c, parts, "vi", weights=p) for c in parts])
    best, second = np.sort(losses)[:2]
    assert second - best > 0.05  # a clear optimum (else Monte Carlo error could swap them)
    est = pmp.point_estimate(idata, random_seed=0)
    np.testing.assert_array_equal(est.labels, parts[np.argmin(losses)])
    assert est.expected_loss == pytest.approx(best, abs=0.05)
    # the credible ball: its exact posterior probability is the level, within Monte Carlo error
    ball = pmp.credible_ball(idata, est, level=0.9)
    exact_ball = pmp.credible_ball(parts, est, level=0.9, weights=p)
    inside = np.array([pmp.summaries.partition_loss(est.labels, c, "vi") <= ball.radius + 1e-9 for c in parts])
    draws_inside = np.stack([[[pmp.summaries.partition_loss(est.labels, row, "vi") <= ball.radius + 1e-9
                               for row in ch] for ch in z]]).astype(float)[0]
    assert _z_scores([ball.probability], [p[inside].sum()], [draws_inside])[0] < 4.5
    assert ball.radius == pytest.approx(exact_ball.radius) or abs(p[inside].sum() - 0.9) < 0.03


def _exact_item_means(parts, p):
    """E[mean of item i's cluster | y] for every i (conjugate Normal posterior per block)."""
    out = np.zeros(len(Y6))
    for part, w in zip(parts, p):
        for b in np.unique(part):
            members = part == b
            out[members] += w * Y6[members].sum() / (1.0 / SIGMA0**2 + members.sum() / SIGMA**2) / SIGMA**2
    return out


def test_posterior_predictive_uses_each_items_cluster_parameter(fitted6, collapsed6):
    """pm.sample_posterior_predictive on the slot model: given each draw, y_rep_i ~ N(mu[z_i], sigma)
    (residuals exactly iid N(0, 1); the residual from another slot is not); the replicates' means
    match the exact posterior mean of each item's cluster mean (enumeration) and the collapsed
    model's replicates (pmp.sample_posterior_predictive on NormalNormal)."""
    from scipy import stats

    model, idata = fitted6
    with model:
        pp = pm.sample_posterior_predictive(idata, random_seed=7, progressbar=False)
    rep = posterior_dataset(pp, "posterior_predictive")["y"].values
    post = posterior_dataset(idata)
    z, mu = post["z"].values, post["mu"].values
    own = np.take_along_axis(mu, z, axis=2)
    resid = ((rep - own) / SIGMA).ravel()
    assert stats.kstest(resid, "norm").pvalue > 1e-3
    other = np.take_along_axis(mu, (z + 1) % len(Y6), axis=2)  # power: another slot's parameter
    assert stats.kstest(((rep - other) / SIGMA).ravel(), "norm").pvalue < 1e-6
    parts, p = exact6()
    exact_means = _exact_item_means(parts, p)
    traces = [rep[..., i] for i in range(len(Y6))]
    assert _z_scores(rep.mean(axis=(0, 1)), exact_means, traces).max() < 4.5
    collapsed, cidata = collapsed6
    crep = posterior_dataset(pmp.sample_posterior_predictive(cidata, collapsed, random_seed=8),
                             "posterior_predictive")["y"].values[..., 0]
    se = np.sqrt(np.array([np.var(t) / _chain_ess(t) for t in traces])
                 + np.array([np.var(crep[..., i]) / _chain_ess(crep[..., i]) for i in range(len(Y6))]))
    assert np.max(np.abs(rep.mean(axis=(0, 1)) - crep.mean(axis=(0, 1))) / se) < 4.5


def _exact_loo_term(labels, mu, i, prior):
    """log p(y_i | z_-i, mu of z_-i's clusters) for the slot model: prior-weighted mixture over the
    other items' clusters and a new one (its term in closed form, N(y_i; 0, sqrt(sigma0^2 + sigma^2)))."""
    from scipy import stats

    others = np.delete(labels, i)
    blocks, sizes = np.unique(others, return_counts=True)
    alpha = prior.kernel_params()[0]
    w = np.append(sizes, alpha) / (len(others) + alpha)
    dens = np.append(stats.norm.pdf(Y6[i], mu[blocks], SIGMA), stats.norm.pdf(Y6[i], 0.0, np.hypot(SIGMA0, SIGMA)))
    return float(np.log(w @ dens))


def test_compute_log_likelihood_integrates_each_items_cluster_out(fitted6):
    """pm.compute_log_likelihood on the slot model gives, like for collapsed likelihoods, log p(y_i |
    z_-i, slots of z_-i's clusters, y_-i): checked draw by draw against the closed form (the
    new-cluster term by Monte Carlo: tolerance from its exact variance)."""
    from scipy import stats

    model, idata = fitted6
    with model:
        ll = pm.compute_log_likelihood(idata, extend_inferencedata=False, progressbar=False)
    assert "pointwise_nonconjugate" in ll.attrs
    post = posterior_dataset(idata)
    z, mu = post["z"].values, post["mu"].values
    m = 10_000  # base draws: 200 per posterior draw pooled (the term is the same in every draw), at most 10 000
    prior_pred = stats.norm.pdf(Y6, 0.0, np.hypot(SIGMA0, SIGMA))
    second = stats.norm.pdf(Y6, 0.0, np.sqrt(SIGMA0**2 + SIGMA**2 / 2)) / (2 * np.sqrt(np.pi) * SIGMA)
    rel = np.sqrt((second - prior_pred**2) / m) / prior_pred  # relative sd of the new-cluster term
    for c in range(2):
        for d in range(0, 1500, 97):
            exact = [_exact_loo_term(z[c, d], mu[c, d], i, pmp.CRP(1.2)) for i in range(len(Y6))]
            assert np.all(np.abs(ll["y"].values[c, d] - exact) < 5 * rel + 1e-9)
    # PyMC's own value given the draw's labels and slots is another function
    own = np.take_along_axis(mu, z, axis=2)
    assert not np.allclose(ll["y"].values, stats.norm.logpdf(Y6, own, SIGMA))


def test_loo_matches_the_collapsed_model(fitted6, collapsed6):
    """pmp.loo on the slot model (pointwise values with item i's cluster integrated out) estimates the
    elpd of the collapsed NormalNormal on the same data: within a fraction of its SE, all Pareto k good."""
    model, idata = fitted6
    with model:
        pm.compute_log_likelihood(idata, progressbar=False)
    slot = pmp.loo(idata)
    ref = pmp.loo(collapsed6[1])
    get = (lambda o, k: float(getattr(o, k))) if hasattr(slot, "elpd") else (lambda o, k: float(o[k]))
    elpd, se = ("elpd", "se") if hasattr(slot, "elpd") else ("elpd_loo", "se")
    assert abs(get(slot, elpd) - get(ref, elpd)) < 0.5 * get(ref, se)
    k = np.asarray((slot.pareto_k if hasattr(slot, "elpd") else slot["pareto_k"]).values)
    assert np.all(k < 0.7)


def test_pointwise_log_likelihood_hostile(fitted6):
    model, idata = fitted6
    for bad in (0, 2.5, "x", 10**7):
        with pytest.raises((TypeError, ValueError), match="base_draws"):
            pmp.pointwise_log_likelihood(idata, model, base_draws=bad)
    with pytest.raises((TypeError, ValueError), match="random_seed"):
        pmp.pointwise_log_likelihood(idata, model, random_seed=-3)
    with pytest.raises(ValueError, match="base_draws applies to non-conjugate likelihoods"):
        pmp.pointwise_log_likelihood(idata, collapsed_model6(), base_draws=10)


# --- predictive density --------------------------------------------------------------------------

def _one_draw(labels, mu, extra=None):
    data = {"z": (("chain", "draw", "item"), np.asarray([[labels]])),
            "mu": (("chain", "draw", "mu_dim_0"), np.asarray([[mu]], float))}
    data.update(extra or {})
    return new_result({"posterior": xr.Dataset(data)})


@pytest.mark.parametrize("prior, weights", [(pmp.CRP(1.2), [3, 3, 1.2]),
                                            (pmp.PitmanYor(1.0, 0.4), [3 - 0.4, 3 - 0.4, 1.0 + 2 * 0.4])])
def test_predictive_density_of_one_draw_is_the_prior_weighted_mixture_with_the_base_measure_term(prior, weights):
    """Given one draw (blocks of 3 and 3 at means -2 and 2): sum_b w_b N(x; mu_b, 1) + w_new N(x; 0,
    sqrt(sigma0^2 + 1)), the last term by Monte Carlo (tolerance from its exact variance)."""
    from scipy import stats

    with pm.Model() as model:
        z = pmp.Partition("z", prior, n=6)
        mu = pm.Normal("mu", 0.0, SIGMA0, shape=6)
        pm.Normal("y", mu=mu[z], sigma=SIGMA, observed=Y6)
    x = np.array([-2.0, 0.0, 9.0])
    w = np.asarray(weights) / np.sum(weights)
    prior_pred = stats.norm.pdf(x, 0.0, np.hypot(SIGMA0, SIGMA))
    exact = w[0] * stats.norm.pdf(x, -2, SIGMA) + w[1] * stats.norm.pdf(x, 2, SIGMA) + w[2] * prior_pred
    m = 20_000
    out = pmp.predictive_density(_one_draw([0, 0, 0, 1, 1, 1], [-2.0, 2.0, 50, 50, 50, 50]), x, model,
                                 base_draws=m, random_seed=1)
    # sd of the Monte Carlo average of N(x; theta, 1), theta ~ N(0, sigma0): E[f^2] in closed form
    second = stats.norm.pdf(x, 0.0, np.sqrt(SIGMA0**2 + SIGMA**2 / 2)) / (2 * np.sqrt(np.pi) * SIGMA)
    sd = w[2] * np.sqrt((second - prior_pred**2) / m)
    assert np.all(np.abs(out["density"].values - exact) < 5 * sd + 1e-12)
    assert out.attrs["base_draws"] == m
    # power: the new-cluster term matters at 9 (no block is near): without it the density is ~0
    assert out["density"].values[2] > 0.5 * w[2] * prior_pred[2]


def test_predictive_density_matches_the_exact_collapsed_predictive(fitted6):
    """The slot model's predictive density (Monte Carlo over its posterior and the base measure)
    against the exact one (the collapsed NormalNormal's predictive averaged over the enumerated
    posterior), within Monte Carlo error; the same check rejects a wrong base measure's exact density."""
    model, idata = fitted6
    x = np.array([-3.0, -2.0, -0.5, 0.4, 1.5, 2.0, 4.0])
    out = pmp.predictive_density(idata, x, model, keep_draws=True, random_seed=0)
    draws = out["density_draws"].values
    se = np.array([np.std(draws[..., g]) / np.sqrt(_chain_ess(draws[..., g])) for g in range(x.size)])
    parts, p = exact6()
    as_draws = new_result({"posterior": xr.Dataset({"z": (("chain", "draw", "item"), parts[None])})})
    for sigma0, ok in ((SIGMA0, True), (3 * SIGMA0, False)):
        wparts, wp = exact6(sigma0)
        exact = pmp.predictive_density(as_draws, x, collapsed_model6(sigma0), weights=wp[None])["density"].values
        assert (np.max(np.abs(out["density"].values - exact) / se) < 4.5) == ok
    assert np.all(out["lower"].values <= out["density"].values) and np.all(out["density"].values <= out["upper"])


def test_predictive_density_hostile(fitted6):
    model, idata = fitted6
    for bad in (0, 1.5, "a", 10**7, True):
        with pytest.raises((TypeError, ValueError), match="base_draws"):
            pmp.predictive_density(idata, [0.0], model, base_draws=bad)
    with pytest.raises((TypeError, ValueError), match="random_seed"):
        pmp.predictive_density(idata, [0.0], model, random_seed=-1)
    with pytest.raises(ValueError, match="points for 'y' must have shape"):
        pmp.predictive_density(idata, np.zeros((2, 2)), model)
    with pytest.raises(ValueError, match="NaN"):
        pmp.predictive_density(idata, [np.nan], model)
    with pytest.raises(ValueError, match="x names \\['w'\\], which are not likelihoods of 'z' \\(\\['y'\\]\\)"):
        pmp.predictive_density(idata, {"w": [0.0]}, model)
    with pytest.raises(TypeError, match="points for 'y' must be"):
        pmp.predictive_density(idata, "abc", model)
    a = pmp.predictive_density(idata, {"y": [0.5]}, model, draws=20, random_seed=3)["density"].values
    b = pmp.predictive_density(idata, [0.5], model, draws=20, random_seed=3)["density"].values
    np.testing.assert_array_equal(a, b)
    for bad, word in [(0.0, "level"), (1.5, "level"), (0, "draws"), (-1, "max_bytes"), ("no", "keep_draws")]:
        key = {"level": "level", "draws": "draws", "max_bytes": "max_bytes", "keep_draws": "keep_draws"}[word]
        with pytest.raises((TypeError, ValueError), match=word):
            pmp.predictive_density(idata, [0.0], model, **{key: bad})
    with pytest.raises(MemoryError, match="max_bytes"):
        pmp.predictive_density(idata, np.zeros(10), model, max_bytes=100)
    collapsed = collapsed_model6()
    with pytest.raises(ValueError, match="base_draws and random_seed apply to non-conjugate models"):
        pmp.predictive_density(idata, [0.0], collapsed, base_draws=10)
    x = np.linspace(-1, 1, 6)[:, None] * np.ones((6, 3))
    with pm.Model() as reg:
        z = pmp.Partition("z", pmp.CRP(1.0), n=6)
        beta = pm.Normal("beta", 0.0, 3.0, shape=(6, 3))
        pm.Normal("y", mu=(x * beta[z]).sum(-1), sigma=1.0, observed=Y6)
    post = posterior_dataset(idata)
    fake = new_result({"posterior": xr.Dataset({"z": post["z"], "beta": (("chain", "draw", "b0", "b1"),
                                                                          np.zeros(post["z"].shape + (3,)))})})
    with pytest.raises(ValueError, match="per-item data.*covariates"):
        pmp.predictive_density(fake, [0.0], reg)


def test_collapsed_only_results_refuse_slot_models_saying_what_to_use(fitted):
    """They used to fail with the sampler's message ("this step integrates cluster parameters out")."""
    model, idata = fitted
    calls = {"join_probabilities": lambda: pmp.join_probabilities(idata, [0.0], model),
             "cluster_parameters": lambda: pmp.cluster_parameters(idata, model),
             "sample_posterior_predictive": lambda: pmp.sample_posterior_predictive(idata, model)}
    for owner, call in calls.items():
        with pytest.raises(ValueError, match=f"{owner}: the partition 'z' has non-conjugate likelihoods.*"
                                             "pm.sample_posterior_predictive.*pmp.slot_views"):
            call()


# --- several likelihoods on one partition --------------------------------------------------------
# Two observations per item, y1 ~ N(mu1[z], SIGMA) and y2 ~ N(mu2[z], SIGMA2), independent Normal base
# measures: the conjugate model written as slots, whose exact posterior is that of two collapsed
# NormalNormal likelihoods on one partition (a 2-D diagonal NormalNormal), by enumeration.

W6 = np.array([0.9, 1.4, -1.2, 1.1, -0.8, 0.3])
SIGMA0_2, SIGMA2 = 1.5, 0.7


def exact_two(sigma0=SIGMA0):
    from enumeration import exact_posterior
    from pymc_partitions.families import kernels
    from pymc_partitions.families.kernels import FamilyPack
    from pymc_partitions.samplers.gibbs import log_joint

    prior = pmp.CRP(1.2)
    pack = FamilyPack.build([(kernels.DIAG_NORMAL, np.c_[Y6, W6],
                              kernels.diag_normal_hyper([0.0, 0.0], [sigma0, SIGMA0_2], [SIGMA, SIGMA2], 2))])
    return exact_posterior(len(Y6), lambda p: log_joint(p, pack, prior.code, prior.kernel_params()))


def slot_model_two():
    with pm.Model() as model:
        z = pmp.Partition("z", pmp.CRP(1.2), n=len(Y6))
        mu1 = pm.Normal("mu1", 0.0, SIGMA0, shape=len(Y6))
        mu2 = pm.Normal("mu2", 0.0, SIGMA0_2, shape=len(Y6))
        pm.Normal("y1", mu=mu1[z], sigma=SIGMA, observed=Y6)
        pm.Normal("y2", mu=mu2[z], sigma=SIGMA2, observed=W6)
    return model


def collapsed_model_two(sigma0=SIGMA0):
    with pm.Model() as model:
        z = pmp.Partition("z", pmp.CRP(1.2), n=len(Y6))
        pmp.NormalNormal("y1", partition=z, mu0=0.0, sigma0=sigma0, sigma=SIGMA, observed=Y6)
        pmp.NormalNormal("y2", partition=z, mu0=0.0, sigma0=SIGMA0_2, sigma=SIGMA2, observed=W6)
    return model


@pytest.fixture(scope="module")
def fitted_two():
    return _fit(slot_model_two(), 1200, 300, 11)


def test_two_likelihoods_sample_the_exact_partition_posterior(fitted_two):
    """NonConjugateGibbs on two likelihoods sharing the partition: the co-clustering matches
    enumeration (the power check: the same test rejects a wrong base measure)."""
    _, idata = fitted_two
    parts, p = exact_two()
    _, wrong = exact_two(3 * SIGMA0)
    z = posterior_dataset(idata)["z"].values
    pairs = [(i, j) for i in range(6) for j in range(i + 1, 6)]
    traces = [(z[..., i] == z[..., j]).astype(float) for i, j in pairs]
    for exact, ok in ((p, True), (wrong, False)):
        c = sum(w * (part[:, None] == part[None, :]) for part, w in zip(parts, exact))
        scores = _z_scores([t.mean() for t in traces], [c[i, j] for i, j in pairs], traces)
        assert (scores.max() < 4.5) == ok, scores.round(1)


def test_predictive_density_of_two_likelihoods_is_the_joint_of_an_items_observations(fitted_two):
    """The joint predictive density of a new item's (y1, y2), and with y2 left out the marginal of
    y1, against the exact ones (the collapsed model's averaged over the enumerated posterior), within
    Monte Carlo error; a wrong base measure is rejected by the same check."""
    model, idata = fitted_two
    x1 = np.array([-2.0, -2.0, 2.0, 0.4, 3.0])
    x2 = np.array([1.0, -1.0, -1.0, 0.3, 2.5])
    parts, p = exact_two()
    as_draws = new_result({"posterior": xr.Dataset({"z": (("chain", "draw", "item"), parts[None])})})
    for x in ({"y1": x1, "y2": x2}, {"y1": x1}):
        out = pmp.predictive_density(idata, x, model, keep_draws=True, random_seed=0)
        assert out.attrs["likelihoods"] == list(x) and "x_y1" in out.coords
        draws = out["density_draws"].values
        se = np.array([np.std(draws[..., g]) / np.sqrt(_chain_ess(draws[..., g])) for g in range(x1.size)])
        for sigma0, ok in ((SIGMA0, True), (3 * SIGMA0, False)):
            _, wp = exact_two(sigma0)
            exact = pmp.predictive_density(as_draws, x, collapsed_model_two(sigma0), weights=wp[None])["density"].values
            assert (np.max(np.abs(out["density"].values - exact) / se) < 4.5) == ok, (x.keys(), sigma0)


def _exact_loo_two(labels, mu1, mu2, i):
    """(log p(y1_i | y2_i, z_-i, mu of z_-i's clusters), log p(y1_i, y2_i | ...)) for the two-likelihood
    slot model, the new cluster's terms in closed form."""
    from scipy import stats

    others = np.delete(labels, i)
    blocks, sizes = np.unique(others, return_counts=True)
    w = np.append(sizes, 1.2) / (len(others) + 1.2)
    f1 = np.append(stats.norm.pdf(Y6[i], mu1[blocks], SIGMA), stats.norm.pdf(Y6[i], 0.0, np.hypot(SIGMA0, SIGMA)))
    f2 = np.append(stats.norm.pdf(W6[i], mu2[blocks], SIGMA2), stats.norm.pdf(W6[i], 0.0, np.hypot(SIGMA0_2, SIGMA2)))
    return float(np.log(w @ (f1 * f2)) - np.log(w @ f2)), float(np.log(w @ (f1 * f2)))


def test_compute_log_likelihood_of_two_likelihoods_conditions_on_the_items_other_observation(fitted_two):
    """pm.compute_log_likelihood on two slot likelihoods: under each name, log p(y_f,i | y_g,i, z_-i,
    slots), item i's cluster integrated out (as for collapsed likelihoods), checked draw by draw against
    the closed form (tolerance from the Monte Carlo variance of the new-cluster terms); not the joint,
    not PyMC's own value. pmp.loo of each matches the collapsed model's (enumeration-checked) values."""
    from scipy import stats

    model, idata = fitted_two
    with model:
        ll = pm.compute_log_likelihood(idata, extend_inferencedata=False, progressbar=False)
    assert set(ll.data_vars) == {"y1", "y2"} and "pointwise_nonconjugate" in ll.attrs
    post = posterior_dataset(idata)
    z, mu1, mu2 = post["z"].values, post["mu1"].values, post["mu2"].values
    m = 10_000  # pooled base draws (the new-cluster term is the same in every draw)

    def rel(y, s0, s):  # relative sd of the Monte Carlo average of N(y; theta, s), theta ~ N(0, s0)
        first = stats.norm.pdf(y, 0.0, np.hypot(s0, s))
        second = stats.norm.pdf(y, 0.0, np.sqrt(s0**2 + s**2 / 2)) / (2 * np.sqrt(np.pi) * s)
        return second / first**2

    r1, r2 = rel(Y6, SIGMA0, SIGMA), rel(W6, SIGMA0_2, SIGMA2)
    tol = 5 * (np.sqrt((r1 * r2 - 1) / m) + np.sqrt((r2 - 1) / m)) + 1e-9
    far_from_joint = 0
    for c in range(2):
        for d in range(0, 1200, 97):
            exact = np.array([_exact_loo_two(z[c, d], mu1[c, d], mu2[c, d], i) for i in range(6)])
            assert np.all(np.abs(ll["y1"].values[c, d] - exact[:, 0]) < tol)
            far_from_joint += np.sum(np.abs(ll["y1"].values[c, d] - exact[:, 1]) > 10 * tol)
    assert far_from_joint > 50  # power: the joint (or unconditional) value is another quantity
    own = np.take_along_axis(mu1, z, axis=2)
    assert not np.allclose(ll["y1"].values, stats.norm.logpdf(Y6, own, SIGMA))
    with model:
        pm.compute_log_likelihood(idata, progressbar=False)
    collapsed = collapsed_model_two()
    with collapsed:
        cidata = pm.sample(draws=1200, tune=200, chains=2, cores=1, random_seed=6, progressbar=False,
                           compute_convergence_checks=False, idata_kwargs={"log_likelihood": True})
    # joint=True: log p(y1_i, y2_i | z_-i, slots, y_-i), both observations of item i together
    both = pmp.pointwise_log_likelihood(idata, model, joint=True)
    assert set(both.data_vars) == {"y1", "y2", "z_joint"}
    np.testing.assert_array_equal(both["y1"].values, ll["y1"].values)  # the same seed: the same values
    tol_joint = 5 * np.sqrt((r1 * r2 - 1) / m) + 1e-9
    for c in range(2):
        for d in range(0, 1200, 97):
            exact = np.array([_exact_loo_two(z[c, d], mu1[c, d], mu2[c, d], i)[1] for i in range(6)])
            assert np.all(np.abs(both["z_joint"].values[c, d] - exact) < tol_joint)
    idata["log_likelihood"]["z_joint"] = both["z_joint"]  # (InferenceData and DataTree alike)
    cidata["log_likelihood"]["z_joint"] = pmp.pointwise_log_likelihood(cidata, collapsed, joint=True)["z_joint"]
    for name in ("y1", "y2", "z_joint"):
        slot, ref = pmp.loo(idata, name), pmp.loo(cidata, name)
        get = (lambda o, k: float(getattr(o, k))) if hasattr(slot, "elpd") else (lambda o, k: float(o[k]))
        elpd = "elpd" if hasattr(slot, "elpd") else "elpd_loo"
        assert abs(get(slot, elpd) - get(ref, elpd)) < 0.5 * get(ref, "se"), name
    only = pmp.pointwise_log_likelihood(idata, model, var_names=["y2"])
    assert set(only.data_vars) == {"y2"}
    with pytest.raises(ValueError, match=r"\['nope'\] are not likelihoods of the model's partitions \(those are "
                                         r"\['y1', 'y2'\]\)"):  # (it listed the collapsed ones only: [])
        pmp.pointwise_log_likelihood(idata, model, var_names=["nope"])
    for bad in ("yes", 1, None):
        with pytest.raises(TypeError, match="joint"):
            pmp.pointwise_log_likelihood(idata, model, joint=bad)


def test_predictive_density_of_a_normal_and_a_poisson_likelihood_given_one_draw():
    """y1 ~ N(mu[z], 1), y2 ~ Poisson(exp(lam[z])) given one draw: sum_b w_b N(x1; mu_b, 1)
    Pois(x2; e^lam_b) + w_new N(x1; 0, sqrt(sigma0^2 + 1)) E[Pois(x2; e^lam)], lam ~ N(1, 0.5) (by
    quadrature), the last term by Monte Carlo (tolerance from its exact variance); integer points."""
    from scipy import integrate, stats

    counts = np.array([1, 0, 2, 9, 12, 8])
    with pm.Model() as model:
        z = pmp.Partition("z", pmp.CRP(1.2), n=6)
        mu = pm.Normal("mu", 0.0, SIGMA0, shape=6)
        lam = pm.Normal("lam", 1.0, 0.5, shape=6)
        pm.Normal("y1", mu=mu[z], sigma=1.0, observed=Y6)
        pm.Poisson("y2", pm.math.exp(lam[z]), observed=counts)
    post = {"z": (("chain", "draw", "item"), np.array([[[0, 0, 0, 1, 1, 1]]])),
            "mu": (("chain", "draw", "mu_dim_0"), np.array([[[-2.0, 2.0, 50, 50, 50, 50]]])),
            "lam": (("chain", "draw", "lam_dim_0"), np.array([[[0.0, 2.3, 9, 9, 9, 9]]]))}
    draw = new_result({"posterior": xr.Dataset(post)})
    x1, x2 = np.array([-2.0, 2.0, 0.0, 2.0]), np.array([1, 10, 4, 1])
    w = np.array([3, 3, 1.2]) / 7.2

    def moment(k, power):
        return integrate.quad(lambda l: stats.poisson.pmf(k, np.exp(l)) ** power * stats.norm.pdf(l, 1.0, 0.5),
                              -4, 6)[0]

    new1 = stats.norm.pdf(x1, 0.0, np.hypot(SIGMA0, 1.0))
    new1_sq = stats.norm.pdf(x1, 0.0, np.sqrt(SIGMA0**2 + 0.5)) / (2 * np.sqrt(np.pi))
    new2, new2_sq = np.array([moment(k, 1) for k in x2]), np.array([moment(k, 2) for k in x2])
    exact = (w[0] * stats.norm.pdf(x1, -2, 1) * stats.poisson.pmf(x2, 1.0)
             + w[1] * stats.norm.pdf(x1, 2, 1) * stats.poisson.pmf(x2, np.exp(2.3)) + w[2] * new1 * new2)
    m = 20_000
    out = pmp.predictive_density(draw, {"y1": x1, "y2": x2.astype(float)}, model, base_draws=m, random_seed=2)
    sd = w[2] * np.sqrt((new1_sq * new2_sq - (new1 * new2) ** 2) / m)
    assert np.all(np.abs(out["density"].values - exact) < 5 * sd + 1e-12)
    assert out["density"].values[2] > 0.5 * w[2] * new1[2] * new2[2]  # the new-cluster term matters at (0, 4)
    with pytest.raises(ValueError, match="points for 'y2' must be whole numbers"):
        pmp.predictive_density(draw, {"y1": x1, "y2": x2 + 0.5}, model)
    with pytest.raises(ValueError, match="several likelihoods \\['y1', 'y2'\\]: pass x as a dict"):
        pmp.predictive_density(draw, x1, model)
    with pytest.raises(ValueError, match="x gives 4 points for one likelihood and 2 for 'y2'"):
        pmp.predictive_density(draw, {"y1": x1, "y2": x2[:2]}, model)
    with pytest.raises(ValueError, match="x is an empty dict"):
        pmp.predictive_density(draw, {}, model)
    with pytest.raises(ValueError, match="x names \\['w'\\]"):
        pmp.predictive_density(draw, {"y1": x1, "w": x2}, model)


# --- convergence checks judge the largest cluster's parameter, not the raw slots -----------------

def _switching_result(trapped, seed=0, chains=4, draws=500):
    """Draws of slot_model(): the partition of Y (groups of 6 and 4) in two labellings, A (the large
    group labelled 0) in 90% of chains 0-1's draws and B (labelled 1) in 90% of chains 2-3's, so the
    raw slot mu[0] is the large group's mean in some chains and the small one's in the others (label
    switching); the large group's mean ~ N(3, 0.1) in every chain, or, ``trapped``, N(1, 0.1) in
    chains 2-3 (an unmixed chain)."""
    rng = np.random.default_rng(seed)
    a = np.array([0] * 6 + [1] * 4)
    b = np.array([0] * 4 + [1] * 6)
    z = np.empty((chains, draws, N), np.int64)
    mu = rng.normal(0.0, 3.0, (chains, draws, N))
    for c in range(chains):
        use_a = rng.random(draws) < (0.9 if c < 2 else 0.1)
        big = rng.normal(1.0 if trapped and c >= 2 else 3.0, 0.1, draws)
        small = rng.normal(-3.0, 0.1, draws)
        z[c] = np.where(use_a[:, None], a, b)
        mu[c, :, 0] = np.where(use_a, big, small)
        mu[c, :, 1] = np.where(use_a, small, big)
    post = xr.Dataset({"z": (("chain", "draw", "item"), z), "mu": (("chain", "draw", "mu_dim_0"), mu)},
                      coords={"chain": np.arange(chains), "draw": np.arange(draws)})
    return new_result({"posterior": post}), mu


def test_convergence_checks_judge_the_largest_clusters_parameter_not_the_raw_slots():
    """pm.sample's convergence checks (the guarded run_convergence_checks) and pmp.w2_convergence see
    each slot variable as its largest cluster's parameter (mu_by_size[0]): an R-hat warning for chains
    trapped at different values of it, none for mixed chains whose raw slots switch labels (their raw
    R-hat is large). The checks used to leave the slots out (no warning for the trapped chains)."""
    import arviz as az
    import pymc.sampling.mcmc as mcmc
    from pymc_partitions.results.diagnostics import _plan

    model = slot_model()

    def rhat_warning(result):
        found = [w for w in mcmc.run_convergence_checks(result, model) if "rhat" in w.message]
        return found[0] if found else None

    mixed, raw = _switching_result(trapped=False)
    assert float(az.rhat(xr.Dataset({"m": (("chain", "draw"), raw[..., 0])}))["m"]) > 1.1  # raw slot: switching
    assert rhat_warning(mixed) is None
    trapped, _ = _switching_result(trapped=True)
    warning = rhat_warning(trapped)
    assert warning is not None and float(warning.extra["mu"].max()) > 1.1
    for result, ok in ((mixed, True), (trapped, False)):
        largest = pmp.posterior_dataset(pmp.slot_views(result, model), "slot_views")["mu_by_size"][..., 0].values
        _, stacked, continuous, parts, _ = _plan(posterior_dataset(result), None, None, model, "test")
        assert continuous == ["mu"] and parts == ["z"]
        np.testing.assert_array_equal(stacked[..., 0], largest)
        assert (float(az.rhat(xr.Dataset({"m": (("chain", "draw"), stacked[..., 0])}))["m"]) < 1.01) == ok
