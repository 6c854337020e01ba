"""Replicated data: pm.sample_posterior_predictive (through guards.guard_forward_sampling) and
pmp.sample_posterior_predictive draw from the exact posterior predictive at n = 7 (a distributional
test on iid draws from the exact posterior, which the former prior-drawn replicates fail), the
prior predictive is unchanged, the replicates are drawn given the data at sampling time (whatever
pm.set_data did since), a forward draw leaves the model as it was, and the guard is fail-safe."""

import numpy as np
import pymc as pm
import pymc.sampling.forward as forward
import pytest
from scipy import stats

import pymc_partitions as pmp
from models import COV, COV0, data
from pymc_partitions.pymc import compat, guards
from pymc_partitions.pymc.compat import PYMC_MAJOR, posterior_dataset
from test_predictive import Exact, draws_result
from test_pymc_sampling import add_likelihood

N = 7
DRAWS = 4000
QUIET = dict(progressbar=False)


def _replicate_law(family, yb, dim=0):
    """The law of coordinate ``dim`` of a replicate of an item of the block with data ``yb``
    (textbook conjugate formulas, written out here independently of the package)."""
    m = len(yb)
    if family == "diag":  # mu0 = [0.5, 0], sigma0 = [2, 1.5], sigma = [1, 0.8] (add_likelihood)
        mu0, s0, s = [0.5, 0.0][dim], [2.0, 1.5][dim], [1.0, 0.8][dim]
        var = 1.0 / (1.0 / s0**2 + m / s**2)
        return stats.norm(var * (mu0 / s0**2 + yb[:, dim].sum() / s**2), np.sqrt(var + s**2))
    if family == "full":  # mu0 = 0, cov0 = COV0, cov = COV
        p0, p = np.linalg.inv(COV0), np.linalg.inv(COV)
        c = np.linalg.inv(p0 + m * p)
        mean = c @ (p @ yb.sum(axis=0))
        return stats.norm(mean[dim], np.sqrt((c + COV)[dim, dim]))
    if family == "niw":  # mu0 = 0, kappa0 = 0.5, nu0 = 4, scale0 = I: multivariate t, its marginal
        kappa, nu = 0.5 + m, 4.0 + m
        total = yb.sum(axis=0)
        scale = np.eye(2) + yb.T @ yb - np.outer(total, total) / kappa
        df = nu - 1.0
        return stats.t(df, (total / kappa)[dim], np.sqrt(scale[dim, dim] * (kappa + 1.0) / (kappa * df)))
    a, b = 0.5, [1.0, 2.0, 0.7][dim]  # bb: P(one)
    return (a + yb[:, dim].sum()) / (a + b + m)


def _exact_iid_draws(model, family, seed=0, size=DRAWS):
    """(iid draws from the exact posterior of the partition, the exact law of item 0's replicate)."""
    prior = pmp.CRP(1.2)
    exact = Exact(model, prior.log_eppf)
    parts, lj = exact.posterior()
    p = np.exp(lj - lj.max())
    p /= p.sum()
    draws = parts[np.random.default_rng(seed).choice(len(parts), size=size, p=p)]
    y = exact.data[0]
    laws = [_replicate_law(family, y[part == part[0]]) for part in parts]
    return draws, p, laws


def _model(family):
    with pm.Model() as model:
        z = pmp.Partition("z", pmp.CRP(1.2), n=N)
        add_likelihood(family, z, N)
    return model


def _pvalue(family, samples, p, laws):
    if family == "bb":
        p_one = float(np.dot(p, laws))
        return stats.binomtest(int(samples.sum()), samples.size, p_one).pvalue
    return stats.kstest(samples, lambda t: sum(pi * law.cdf(t) for pi, law in zip(p, laws))).pvalue


def _item0(pp):
    return posterior_dataset(pp, "posterior_predictive")["y"].values[0, :, 0, 0]


@pytest.fixture
def prior_drawn(monkeypatch):
    """PyMC's own forward sampling, unwrapped: the former (prior-drawn) behaviour."""
    monkeypatch.setattr(forward, "compile_forward_sampling_function",
                        forward.compile_forward_sampling_function.__wrapped__)


@pytest.mark.parametrize("family", ["diag", "full", "niw", "bb"])
def test_replicates_follow_the_exact_posterior_predictive(family):
    model = _model(family)
    draws, p, laws = _exact_iid_draws(model, family)
    result = draws_result(draws)
    with model:
        pp = pm.sample_posterior_predictive(result, random_seed=1, **QUIET)
    assert _pvalue(family, _item0(pp), p, laws) > 1e-3
    ours = pmp.sample_posterior_predictive(result, model, random_seed=2)
    assert _pvalue(family, _item0(ours), p, laws) > 1e-3
    assert posterior_dataset(ours, "posterior_predictive")["y"].shape == (1, DRAWS, N, 3 if family == "bb" else 2)


@pytest.mark.parametrize("family", ["diag", "full", "niw", "bb"])
def test_the_former_prior_drawn_replicates_fail_the_test(family, prior_drawn):
    model = _model(family)
    draws, p, laws = _exact_iid_draws(model, family)
    with model:
        pp = pm.sample_posterior_predictive(draws_result(draws), random_seed=1, **QUIET)
    assert _pvalue(family, _item0(pp), p, laws) < 1e-6


def test_random_sigma_replicates_use_each_draws_sigma():
    """sigma ~ HalfNormal: iid (partition, sigma) draws from the exact posterior on a grid of sigma."""
    y = data(N)[0][:, 0]
    with pm.Model() as model:
        sigma = pm.HalfNormal("sigma", 1.5)
        z = pmp.Partition("z", pmp.CRP(1.2), n=N)
        pmp.NormalNormal("y", partition=z, mu0=0.5, sigma0=2.0, sigma=sigma, observed=y)
    nodes = np.linspace(0.3, 2.5, 12)
    blocks, lws, laws = [], [], []
    for s in nodes:
        exact = Exact(model, pmp.CRP(1.2).log_eppf, [np.asarray(1.2), np.asarray(0.0), np.array([0.5]),
                                                     np.array([2.0]), np.array([s])])
        parts, lj = exact.posterior()
        blocks.append(parts)
        lws.append(lj + stats.halfnorm.logpdf(s, scale=1.5))
        for part in parts:
            yb = y[part == part[0]]
            var = 1.0 / (1.0 / 4.0 + len(yb) / s**2)
            laws.append(stats.norm(var * (0.5 / 4.0 + yb.sum() / s**2), np.sqrt(var + s**2)))
    lw = np.concatenate(lws)
    p = np.exp(lw - lw.max())
    p /= p.sum()
    pick = np.random.default_rng(3).choice(p.size, size=DRAWS, p=p)
    draws = np.concatenate(blocks)[pick]
    result = draws_result(draws, sigma=np.repeat(nodes, len(blocks[0]))[pick])
    keep = p > 1e-12
    with model:
        pp = pm.sample_posterior_predictive(result, random_seed=4, **QUIET)
    assert _pvalue("diag", _item0(pp), p[keep], np.asarray(laws, dtype=object)[keep]) > 1e-3
    ours = pmp.sample_posterior_predictive(result, model, random_seed=5)
    assert _pvalue("diag", _item0(ours), p[keep], np.asarray(laws, dtype=object)[keep]) > 1e-3


def test_prior_predictive_is_unchanged(monkeypatch):
    model = _model("diag")
    with model:
        guarded = pm.sample_prior_predictive(draws=2000, random_seed=7)
    monkeypatch.setattr(forward, "compile_forward_sampling_function",
                        forward.compile_forward_sampling_function.__wrapped__)
    with model:
        plain = pm.sample_prior_predictive(draws=2000, random_seed=7)
    for group, name in [("prior", "z"), ("prior_predictive", "y")]:
        np.testing.assert_array_equal(posterior_dataset(guarded, group)[name].values,
                                      posterior_dataset(plain, group)[name].values)
    y0 = posterior_dataset(guarded, "prior_predictive")["y"].values.reshape(-1, N, 2)[:, 0, 0]
    assert stats.kstest(y0, stats.norm(0.5, np.sqrt(4.0 + 1.0)).cdf).pvalue > 1e-3  # N(mu0, sigma0^2 + sigma^2)


def _volatile_partition_kwargs(model):
    """Arguments under which PyMC draws the trace's partition anew (PyMC 5: a given ancestor;
    PyMC 6: a volatile variable)."""
    if PYMC_MAJOR >= 6:
        return {"volatile_vars": {model["z"]}}
    return {"givens_dict": {model["alpha"]: np.asarray(2.0)}}


def _has_replicate(fn):
    # by name: PyTensor 3 wraps each random variable in a RandomVariableWithCoreShape op
    return any("posterior_replicate" in str(node.op) for node in fn.maker.fgraph.apply_nodes)


def test_a_partition_drawn_anew_keeps_the_prior_draw():
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 1.0, 1.0)
        z = pmp.Partition("z", pmp.CRP(alpha), n=N)
        y = pmp.NormalNormal("y", partition=z, sigma0=2.0, sigma=1.0, observed=data(N)[0])
    given, resampled = forward.compile_forward_sampling_function([y], [z, alpha], basic_rvs=model.basic_RVs)
    assert _has_replicate(given) and resampled == {y}
    anew, resampled = forward.compile_forward_sampling_function(
        [y], [z, alpha], basic_rvs=model.basic_RVs, **_volatile_partition_kwargs(model))
    assert not _has_replicate(anew) and z in resampled and y in resampled
    prior, resampled = forward.compile_forward_sampling_function([y], [], basic_rvs=model.basic_RVs)
    assert not _has_replicate(prior) and {y, z, alpha} <= resampled


def _data_model(shape, fitted):
    """The diag model with its observations in a pm.Data "d" of ``shape`` ("1-D": (N,), "2-D": (N, 2))
    and sigma in a pm.Data "s"; the hyperparameters of _replicate_law("diag") (dimension 0 in 1-D)."""
    with pm.Model() as model:
        d = pm.Data("d", fitted[:, 0] if shape == "1-D" else fitted)
        if shape == "1-D":
            s = pm.Data("s", 1.0)
            z = pmp.Partition("z", pmp.CRP(1.2), n=N)
            pmp.NormalNormal("y", partition=z, mu0=0.5, sigma0=2.0, sigma=s, observed=d)
        else:
            s = pm.Data("s", np.array([1.0, 0.8]))
            z = pmp.Partition("z", pmp.CRP(1.2), n=N)
            pmp.NormalNormal("y", partition=z, mu0=[0.5, 0.0], sigma0=[2.0, 1.5], sigma=s, observed=d)
    return model


def _model_state(model):
    """What a forward draw must leave as it found it (the initial point seeded: partitions start
    from a random dispersed partition)."""
    point = model.initial_point(0)
    return ([rv.name for rv in model.free_RVs], [rv.name for rv in model.observed_RVs],
            [rv.name for rv in model.basic_RVs], sorted(model.named_vars), float(model.compile_logp()(point)))


def _still_works(model, state):
    assert _model_state(model) == state
    with model:
        pm.sample(draws=3, tune=0, chains=1, random_seed=0, compute_convergence_checks=False, **QUIET)


@pytest.mark.parametrize("shape", ["1-D", "2-D"])
def test_replicates_are_drawn_given_the_data_at_sampling_time(shape):
    """A collapsed likelihood observed through pm.Data, 1-D or (N, 2) (whose values at sampling time
    PyMC records only in observed_data): pm.sample_posterior_predictive of the whole result follows
    the exact posterior predictive given the data the posterior was fitted to, before and after
    pm.set_data changed the data and the data-valued sigma (same shapes); the model is left as it was."""
    fitted = data(N)[0]
    model = _data_model(shape, fitted)
    draws, p, laws = _exact_iid_draws(model, "diag")
    with model:  # the groups PyMC writes, with iid draws from the exact posterior as the posterior
        idata = pm.sample(draws=3, tune=0, chains=1, random_seed=0, compute_convergence_checks=False, **QUIET)
    result = compat.add_groups(idata, {"posterior": posterior_dataset(draws_result(draws))}, overwrite=True)
    if shape == "2-D":
        assert "d" not in compat.group_names(result) or "d" not in posterior_dataset(result, "constant_data")
    for values, sigma in [(None, None), (fitted + 10.0, 3.0)]:
        if values is not None:
            pm.set_data({"d": values[:, 0] if shape == "1-D" else values,
                         "s": sigma if shape == "1-D" else np.full(2, sigma)}, model=model)
        state = _model_state(model)
        with model:
            pp = pm.sample_posterior_predictive(result, random_seed=1, **QUIET)
        assert _pvalue("diag", _item0(pp), p, laws) > 1e-3
        _still_works(model, state)
        ours = pmp.sample_posterior_predictive(result, model, random_seed=2)
        assert _pvalue("diag", _item0(ours), p, laws) > 1e-3


def test_data_whose_value_at_sampling_time_is_unknown_are_refused_and_the_model_kept():
    """A bare posterior records no data; a result without its constant_data records no sigma: refused,
    naming the remedy, and the model is left as it was (PyMC 5.28 itself appends the observed variable
    to model.observed_RVs once more on every call with an observed_data group: undone)."""
    fitted = data(N)[0]
    model = _data_model("2-D", fitted)
    state = _model_state(model)
    with model:
        idata = pm.sample(draws=20, tune=0, chains=1, random_seed=0, compute_convergence_checks=False, **QUIET)
    with model, pytest.raises(ValueError, match=r"'y' depends on the data \['d', 's'\].*does not record.*"
                                                r"pmp.sample_posterior_predictive"):
        pm.sample_posterior_predictive(posterior_dataset(idata), random_seed=0, **QUIET)
    _still_works(model, state)
    no_constant = compat.new_result({g: posterior_dataset(idata, g) for g in ("posterior", "observed_data")})
    with model, pytest.raises(ValueError, match=r"'y' depends on the data \['s'\]"):
        pm.sample_posterior_predictive(no_constant, random_seed=0, **QUIET)
    _still_works(model, state)
    with model:
        pm.sample_posterior_predictive(idata, random_seed=0, **QUIET)
    _still_works(model, state)


def test_a_plain_pymc_model_is_left_as_it_was():
    with pm.Model() as model:
        mu = pm.Normal("mu")
        pm.Normal("x", mu, 1.0, observed=np.zeros(3))
        idata = pm.sample(draws=20, tune=0, chains=1, random_seed=0, compute_convergence_checks=False, **QUIET)
    state = _model_state(model)
    with model:
        pm.sample_posterior_predictive(idata, random_seed=0, **QUIET)
    _still_works(model, state)
    assert pm.sample_posterior_predictive.__wrapped__.__name__ == "sample_posterior_predictive"


def test_the_guard_is_fail_safe(monkeypatch):
    """A PyMC whose forward sampling cannot be hooked: nothing is wrapped and forward draws of
    collapsed likelihoods are refused (never a prior-drawn replicate passed off as posterior)."""
    monkeypatch.setattr(compat, "_FORWARD_STATE", {"guarded": False})

    def other(outs, vars_in_trace=None):  # a renamed first parameter
        raise AssertionError("not to be called")

    monkeypatch.setattr(forward, "compile_forward_sampling_function", other)
    assert guards.guard_forward_sampling() is False
    assert forward.compile_forward_sampling_function is other and not compat.forward_sampling_guarded()
    model = _model("diag")
    with model, pytest.raises(NotImplementedError, match="pmp.sample_posterior_predictive"):
        pm.draw(model["y"], random_seed=0)


def test_the_guard_is_idempotent():
    wrapped = forward.compile_forward_sampling_function
    assert guards.guard_forward_sampling() is True
    assert forward.compile_forward_sampling_function is wrapped and wrapped._pmp_guard


def test_extend_and_var_names():
    model = _model("multi")
    draws, _, _ = _exact_iid_draws(model, "diag", size=20)
    result = draws_result(draws)
    out = pmp.sample_posterior_predictive(result, model, var_names="b", random_seed=0, draws=5)
    group = posterior_dataset(out, "posterior_predictive")
    assert list(group.data_vars) == ["b"] and group["b"].dtype == np.int64 and group["b"].shape == (1, 5, N, 3)
    extended = pmp.sample_posterior_predictive(result, model, random_seed=0, extend_inferencedata=True)
    assert {"posterior", "posterior_predictive"} <= set(compat.group_names(extended))
    with pm.Model():  # the same model through PyMC, both likelihoods
        z = pmp.Partition("z", pmp.CRP(1.2), n=N)
        add_likelihood("multi", z, N)
        pp = pm.sample_posterior_predictive(result, random_seed=0, **QUIET)
    assert set(posterior_dataset(pp, "posterior_predictive").data_vars) == {"y", "b"}


def test_variables_downstream_of_a_likelihood():
    """A deterministic of the replicated data is recomputed from them; a random variable that
    depends on a collapsed likelihood cannot be redrawn consistently: refused."""
    with pm.Model() as model:
        z = pmp.Partition("z", pmp.CRP(1.0), n=N)
        y = pmp.NormalNormal("y", partition=z, sigma0=2.0, sigma=1.0, observed=data(N)[0])
        total = pm.Deterministic("total", y.sum())
        w = pm.Normal("w", y.sum(), 1.0)
    fn, _ = forward.compile_forward_sampling_function([total], [z], basic_rvs=model.basic_RVs)
    assert _has_replicate(fn)
    with pytest.raises(NotImplementedError, match="depends on the collapsed likelihood"):
        forward.compile_forward_sampling_function([w], [z], basic_rvs=model.basic_RVs)


@pytest.mark.parametrize("unguarded", [False, True])
def test_a_known_partition_replicates_given_its_labels(unguarded, monkeypatch):
    """Partition(..., observed=labels): the replicates of a collapsed likelihood are drawn given the
    known labels and the data (PyMC alone redrew the labels from the prior and the cluster
    parameters with them: replicates near the prior mean, the guard's absence fails the test)."""
    labels = np.array([0, 0, 1, 1, 1, 2, 2])
    with pm.Model():
        alpha = pm.Gamma("alpha", 2.0, 1.0)  # a free variable, for a trace to replicate from
        z = pmp.Partition("z", pmp.CRP(alpha), n=N, observed=labels)
        add_likelihood("diag", z, N)
        idata = pm.sample(draws=2000, tune=300, chains=1, random_seed=3, compute_convergence_checks=False, **QUIET)
        if unguarded:
            monkeypatch.setattr(forward, "compile_forward_sampling_function",
                                forward.compile_forward_sampling_function.__wrapped__)
        pp = pm.sample_posterior_predictive(idata, random_seed=4, **QUIET)
    y = data(N)[0]
    replicates = posterior_dataset(pp, "posterior_predictive")["y"].values[0]
    for item in (0, 3):
        law = _replicate_law("diag", y[labels == labels[item]])
        pvalue = stats.kstest(replicates[:, item, 0], law.cdf).pvalue
        assert (pvalue < 1e-6) if unguarded else (pvalue > 1e-3), (item, pvalue)


@pytest.mark.parametrize("unguarded", [False, True])
def test_a_known_partition_of_a_slot_model_replicates_given_its_labels(unguarded, monkeypatch):
    """The same for a likelihood with slot parameters, mu[z]: each item's replicate under its own
    cluster's posterior mean (PyMC alone redrew z, so items took other clusters' slots)."""
    labels = np.array([0, 0, 0, 1, 1, 1, 2])
    y = np.array([-4.0, -4.2, -3.9, 4.0, 4.1, 3.8, 0.3])
    with pm.Model():
        z = pmp.Partition("z", pmp.CRP(1.0), n=N, observed=labels)
        mu = pm.Normal("mu", 0.0, 5.0, shape=N)
        pm.Normal("y", mu=mu[z], sigma=1.0, observed=y)
        idata = pm.sample(draws=1000, tune=500, chains=2, random_seed=3, compute_convergence_checks=False, **QUIET)
        if unguarded:
            monkeypatch.setattr(forward, "compile_forward_sampling_function",
                                forward.compile_forward_sampling_function.__wrapped__)
        pp = pm.sample_posterior_predictive(idata, random_seed=4, **QUIET)
    replicates = posterior_dataset(pp, "posterior_predictive")["y"].values.reshape(-1, N)
    for item in (1, 4, 6):
        block = y[labels == labels[item]]
        var = 1.0 / (1.0 / 25.0 + len(block))  # mu_k | data: Normal(var * sum(block), var)
        law = stats.norm(var * block.sum(), np.sqrt(var + 1.0))
        pvalue = stats.kstest(replicates[:, item], law.cdf).pvalue
        assert (pvalue < 1e-6) if unguarded else (pvalue > 1e-3), (item, pvalue)


def test_a_variable_drawn_given_a_known_partition_is_refused():
    """A random variable of the trace computed from a known partition: PyMC redraws the partition,
    and with it that variable from its prior instead of reading its posterior draws (silently)."""
    import pytensor.tensor as pt

    labels = np.array([0, 0, 0, 1, 1, 1, 2])
    with pm.Model():
        z = pmp.Partition("z", pmp.CRP(1.0), n=N, observed=labels)
        w = pm.Normal("w", mu=pt.sum(z) * 0.1, sigma=10.0)
        pm.Normal("y", mu=w, sigma=1.0, observed=np.arange(N, dtype=float))
        idata = pm.sample(draws=50, tune=50, chains=1, random_seed=3, compute_convergence_checks=False, **QUIET)
        with pytest.raises(NotImplementedError, match=r"\['w'\] depend on the known partition\(s\) \['z'\]"):
            pm.sample_posterior_predictive(idata, random_seed=4, **QUIET)
