"""pmp.NormalLinearRegression in PyMC models: logp against the scipy oracle, pm.sample against
enumeration (fixed and random hyperparameters), forward draws, pm.Data and hostile arguments."""

import numpy as np
import pymc as pm
import pytest
from scipy import stats
from scipy.special import gammaln

import pymc_partitions as pmp
from enumeration import check_against, exact_posterior
from models import LR_COV0, LR_MU0, regressions
from reference_families import ref_log_marginal_linear_regression, ref_total
from pymc_partitions.pymc.compat import posterior_dataset
from pymc_partitions.pymc.terms import PartitionTerms

SAMPLE = dict(tune=200, chains=1, cores=1, progressbar=False, compute_convergence_checks=False)
A0, B0 = 2.0, 1.5


def _model(n=6, prior=None, b0=B0, X=None, y=None):
    Xd, yd = regressions(n)
    X = Xd if X is None else X
    y = yd if y is None else y
    with pm.Model() as model:
        z = pmp.Partition("z", prior or pmp.CRP(1.2), n=n)
        b0 = b0(model) if callable(b0) else b0
        pmp.NormalLinearRegression("y", partition=z, X=X, mu0=LR_MU0, cov0=LR_COV0, a0=A0, b0=b0, observed=y)
    return model


def _reference(n, b0=B0):
    X, y = regressions(n)
    return lambda p: ref_total(p, np.c_[X, y], lambda Z: ref_log_marginal_linear_regression(
        Z[:, :2], Z[:, 2], LR_MU0, LR_COV0, A0, b0))


def _draws(idata):
    post = posterior_dataset(idata)
    st = posterior_dataset(idata, "sample_stats")
    return post["z"].values.reshape(-1, post["z"].shape[-1]), st["log_joint"].values.ravel(), \
        st["n_clusters"].values.ravel()


def test_model_logp_equals_prior_plus_the_oracle():
    n = 7
    model = _model(n)
    logp = model.compile_logp()
    ref = _reference(n)
    rng = np.random.default_rng(0)
    for _ in range(6):
        labels = rng.integers(0, 4, n)
        canon = np.unique(labels, return_inverse=True)[1]
        assert logp({"z": labels}) == pytest.approx(ref(labels) + pmp.CRP(1.2).log_eppf(canon), rel=1e-8)


@pytest.mark.parametrize("prior", [pmp.CRP(1.2), pmp.FiniteDirichlet(0.7, 3)], ids=["crp", "fd"])
def test_pm_sample_default_step_matches_enumeration(prior):
    """pm.sample assigns GibbsSplitMerge; its draws follow the exact posterior computed from the
    scipy oracle (not from the kernels)."""
    n = 6
    model = _model(n, prior)
    with model:
        idata = pm.sample(draws=6000, random_seed=3, **SAMPLE)
    ref = _reference(n)
    parts, exact = exact_posterior(n, lambda p: ref(p) + prior.log_eppf(p))
    wrong_b0 = _reference(n, b0=4 * B0)  # a visibly different likelihood
    _, wrong = exact_posterior(n, lambda p: wrong_b0(p) + prior.log_eppf(p))
    zs, lj, k = _draws(idata)
    check_against(parts, exact, zs, [lj, k], wrong=wrong)


def _b0_integrated(n, shape, rate):
    """labels -> log of p(y | labels) with b0 ~ Gamma(shape, rate) integrated out on a fine grid in
    log b0 (closed-form block marginals: each is c_b + a0 log b0 - a_b log(b0 + Q_b / 2))."""
    X, y = regressions(n)
    prec0 = np.linalg.inv(LR_COV0)
    t = np.linspace(np.log(1e-4), np.log(60.0), 6001)
    b = np.exp(t)
    log_w = stats.gamma.logpdf(b, shape, scale=1.0 / rate) + t  # db = b dt

    def log_lik(labels):
        total = np.zeros_like(b)
        for k in np.unique(labels):
            Xb, yb = X[labels == k], y[labels == k]
            prec = prec0 + Xb.T @ Xb
            mean = np.linalg.solve(prec, prec0 @ LR_MU0 + Xb.T @ yb)
            q = yb @ yb + LR_MU0 @ prec0 @ LR_MU0 - mean @ prec @ mean
            a = A0 + 0.5 * yb.size
            total += (-0.5 * yb.size * np.log(2 * np.pi) + 0.5 * np.linalg.slogdet(prec0)[1]
                      - 0.5 * np.linalg.slogdet(prec)[1] + A0 * np.log(b) - a * np.log(b + 0.5 * q)
                      + gammaln(a) - gammaln(A0))
        f = total + log_w
        top = f.max()
        return top + np.log(np.trapezoid(np.exp(f - top), t))

    return log_lik


def test_random_b0_sampled_with_the_partition_matches_enumeration():
    """b0 a PyMC random variable (sampled by PyMC's own step beside GibbsSplitMerge): the partition's
    marginal is the exact posterior with b0 integrated out."""
    n = 6
    model = _model(n, b0=lambda m: pm.Gamma("b0", 2.0, 1.0))
    with model:
        idata = pm.sample(draws=3000, random_seed=5, **SAMPLE)
    like = _b0_integrated(n, 2.0, 1.0)
    prior = pmp.CRP(1.2)
    parts, exact = exact_posterior(n, lambda p: like(p) + prior.log_eppf(p))
    zs, lj, k = _draws(idata)
    b0 = posterior_dataset(idata)["b0"].values.ravel()
    check_against(parts, exact, zs, [k, b0])


def test_forward_draws_prior_and_posterior_predictive():
    n = 40
    rng = np.random.default_rng(1)
    x = rng.uniform(-2, 2, n)
    group = np.arange(n) % 2
    y = np.where(group == 1, 1.0 + 2.0 * x, -1.0 - x) + 0.2 * rng.standard_normal(n)
    X = np.c_[np.ones(n), x]
    with pm.Model() as model:
        z = pmp.Partition("z", pmp.CRP(1.0), n=n)
        pmp.NormalLinearRegression("y", partition=z, X=X, mu0=0.0, cov0=4.0, a0=2.0, b0=0.1, observed=y)
        idata = pm.sample(draws=200, tune=200, chains=1, random_seed=2, progressbar=False,
                          compute_convergence_checks=False)
        prior = pm.sample_prior_predictive(50, random_seed=3)
        pp = pm.sample_posterior_predictive(idata, random_seed=4, progressbar=False)
    prior_y = posterior_dataset(prior, "prior_predictive")["y"].values
    assert prior_y.shape[-2:] == (n, 1) and np.all(np.isfinite(prior_y))
    rep = posterior_dataset(pp, "posterior_predictive")["y"].values.reshape(-1, n)
    assert rep.shape[0] == 200
    # replicates are drawn given the data (cluster lines from their posterior): they track y closely;
    # prior draws of the lines would not
    resid = rep - y[None, :]
    assert np.sqrt(np.mean(resid**2)) < 0.6
    assert abs(np.mean(resid)) < 0.1
    with model:
        pm.compute_log_likelihood(idata, progressbar=False)
    ll = posterior_dataset(idata, "log_likelihood")["y"].values
    assert ll.shape[-1] in (n, 1) and np.all(np.isfinite(ll))


def test_pm_data_design_is_read_again_after_set_data():
    """X as pm.Data: the steps read its new value after pm.set_data (not the value at construction),
    and a NaN there is refused naming X."""
    n = 6
    Xv, y = regressions(n)
    with pm.Model() as model:
        X = pm.Data("X", Xv)
        z = pmp.Partition("z", pmp.CRP(1.2), n=n)
        pmp.NormalLinearRegression("y", partition=z, X=X, mu0=LR_MU0, cov0=LR_COV0, a0=A0, b0=B0, observed=y)
    terms = PartitionTerms(model, model["z"])
    point = model.initial_point()
    _, pack = terms.kernel_inputs(point)
    assert np.array_equal(pack.data[:, :2], Xv)
    with model:
        pm.set_data({"X": 2.0 * Xv})
    _, pack = terms.kernel_inputs(point)
    assert np.array_equal(pack.data[:, :2], 2.0 * Xv)
    bad = Xv.copy()
    bad[1, 1] = np.nan
    with model:
        pm.set_data({"X": bad})
    with pytest.raises(ValueError, match="X.*NaN"):
        terms.kernel_inputs(point)


def test_hostile_arguments_are_refused_by_name():
    n = 6
    X, y = regressions(n)

    def build(**kw):
        args = dict(X=X, mu0=0.0, cov0=1.0, a0=1.0, b0=1.0, observed=y)
        args.update(kw)
        with pm.Model():
            z = pmp.Partition("z", pmp.CRP(1.0), n=n)
            pmp.NormalLinearRegression("y", partition=z, **args)

    bad_x = X.copy()
    bad_x[2, 1] = np.inf
    cases = [
        (dict(X=None), TypeError, "X="),
        (dict(X=bad_x), ValueError, "X contains 1 NaN or infinite"),
        (dict(X=X[:5]), ValueError, "X has 5 rows but there are n=6"),
        (dict(X=X[:, 1]), ValueError, "X must be a 2-d"),
        (dict(X=np.zeros((n, 0))), ValueError, "X must be a 2-d"),
        (dict(X=X.astype(str)), TypeError, "X must be numeric"),
        (dict(cov0=np.array([[1.0, 2.0], [2.0, 1.0]])), ValueError, "cov0 must be positive definite"),
        (dict(cov0=np.array([[1.0, 0.5], [0.0, 1.0]])), ValueError, "cov0 must be a finite symmetric"),
        (dict(cov0=-1.0), ValueError, "cov0 must be positive"),
        (dict(cov0=np.eye(3)), ValueError, "cov0 must be a 2x2"),
        (dict(mu0=[1.0, 2.0, 3.0]), ValueError, "mu0 must be a scalar or have length D=2"),
        (dict(a0=0.0), ValueError, "a0 must be a finite scalar > 0"),
        (dict(b0=-1.0), ValueError, "b0 must be a finite scalar > 0"),
        (dict(b0=np.nan), ValueError, "b0 must be a finite scalar > 0"),
        (dict(observed=np.c_[y, y]), ValueError, "observed must be the n=6 responses"),
        (dict(observed=np.r_[y[:5], np.nan]), ValueError, "observed contains 1 NaN"),
        (dict(observed=None), TypeError, "needs observed data"),
        (dict(X=X * 1e160), ValueError, "exceeds"),
    ]
    for kw, err, match in cases:
        with pytest.raises(err, match=match):
            build(**kw)
    with pytest.raises(TypeError, match="X must be data"):
        with pm.Model():
            z = pmp.Partition("z", pmp.CRP(1.0), n=n)
            pmp.NormalLinearRegression("y", partition=z, X=pm.Normal("X", shape=(n, 2)), observed=y)


def test_predictive_density_and_join_probabilities_take_rows_of_covariates_and_response():
    n = 6
    model = _model(n)
    with model:
        idata = pm.sample(draws=30, tune=10, random_seed=1, **{k: v for k, v in SAMPLE.items() if k != "tune"})
    X, y = regressions(n)
    rows = np.c_[X[:2], y[:2]]
    dens = pmp.predictive_density(idata, rows, model=model)["density"].values
    assert dens.shape == (2,) and np.all(dens > 0)
    probs = pmp.join_probabilities(idata, rows, model=model)
    np.testing.assert_allclose(probs.values.sum(axis=1), 1.0)
    with pytest.raises(ValueError, match=r"shape \(G, 3\) \(a new item of a regression is the row \[x_1"):
        pmp.predictive_density(idata, y[:2], model=model)
    params = pmp.cluster_parameters(idata, model, draws=3, random_seed=0)
    assert params["y_beta"].shape[-1] == 2 and "y_sigma" in params


def test_logp_with_random_hyperparameters_equals_the_kernels():
    """mu0, cov0 (a diagonal), a0 and b0 PyMC variables: the model's logp at random points equals the
    kernels' log joint built from the step's view of the same point (PartitionTerms)."""
    from pymc_partitions.samplers.gibbs import log_joint

    n = 8
    X, y = regressions(n)
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 2.0, 1.0)
        z = pmp.Partition("z", pmp.CRP(alpha), n=n)
        mu0 = pm.Normal("mu0", 0.0, 1.0, shape=2)
        cov0 = pm.HalfNormal("cov0", 2.0, shape=2)
        a0 = pm.Gamma("a0", 3.0, 1.0)
        b0 = pm.HalfNormal("b0", 2.0)
        pmp.NormalLinearRegression("y", partition=z, X=X, mu0=mu0, cov0=cov0, a0=a0, b0=b0, observed=y)
    logp = model.compile_logp(vars=[model["z"]] + model.observed_RVs, jacobian=False)
    terms = PartitionTerms(model, model["z"])
    point = model.initial_point()
    rng = np.random.default_rng(4)
    for _ in range(5):
        for name in point:
            if name != "z":
                point[name] = point[name] + rng.normal(size=np.shape(point[name])) * 0.3
        point["z"] = rng.integers(0, 4, n)
        params, pack = terms.kernel_inputs(point)
        assert logp(point) == pytest.approx(log_joint(point["z"], pack, terms.prior_code, params), rel=1e-9)


@pytest.mark.parametrize("steps", ["pgsm", "sams", "split_merge"])
def test_every_partition_step_matches_enumeration_through_pm_sample(steps):
    """CollapsedGibbs with each split-merge step on the regression likelihood: the exact posterior
    (scipy oracle) at n = 6. (ARM's moves are checked against enumeration on the kernel,
    tests/test_linear_regression_kernels.py: its population step through pm.sample takes minutes.)"""
    n = 6
    model = _model(n)
    z = model["z"]
    with model:
        make = {"pgsm": pmp.PGSM, "sams": pmp.SAMS, "split_merge": pmp.SplitMerge}[steps]
        idata = pm.sample(draws=4000, step=[pmp.CollapsedGibbs([z]), make([z])], random_seed=9, **SAMPLE)
    ref = _reference(n)
    prior = pmp.CRP(1.2)
    parts, exact = exact_posterior(n, lambda p: ref(p) + prior.log_eppf(p))
    zs, lj, k = _draws(idata)
    check_against(parts, exact, zs, [lj, k])


def test_sample_unbiased_on_a_regression():
    """Coupled chains meet on the regression likelihood, and the unbiased estimate of the expected
    number of clusters agrees with enumeration."""
    n = 6
    model = _model(n)
    ref = _reference(n)
    prior = pmp.CRP(1.2)
    parts, exact = exact_posterior(n, lambda p: ref(p) + prior.log_eppf(p))
    truth = float(np.sum(exact * np.array([len(np.unique(p)) for p in parts])))
    est = pmp.sample_unbiased(model, h={"k": pmp.h.n_clusters}, n_pairs=300, random_seed=1, progressbar=False, cores=1)
    row = pmp.summarize_unbiased(est).loc["k"]
    assert row["n_met"] == 300
    assert abs(row["mean"] - truth) < 4.5 * row["se"]
