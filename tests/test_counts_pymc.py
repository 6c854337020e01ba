"""pmp.GammaPoisson and pmp.DirichletCategorical in PyMC: pm.sample (GibbsSplitMerge assigned
automatically; with PGSM, SAMS, SplitMerge, ARM) reproduces the exact posterior by enumeration for
every prior, and rejects the posterior of a perturbed prior and of a perturbed likelihood (power);
random hyperparameters (NUTS) give the exact marginal; the PyMC logp equals the kernels' log joint;
bad arguments and data are refused by name; prior and posterior predictive draws work."""

import math

import numpy as np
import pymc as pm
import pytest
from scipy import integrate, stats

import pymc_partitions as pmp
from enumeration import check_against, exact_posterior, frequencies, total_variation, tv_tolerance
from limits import CHILD_PYTHON_TIMEOUT
from models import categories, counts
from pymc_partitions.partition import enumerate_partitions
from pymc_partitions.pymc.compat import posterior_dataset
from pymc_partitions.pymc.terms import PartitionTerms
from pymc_partitions.samplers.gibbs import log_joint
from test_pymc_sampling import SAMPLE, _scaled, likelihood_only, samples_of

GP = dict(alpha=[2.0, 0.5], beta=[0.5, 1.5])
DC = dict(a=[[0.5, 1.0, 2.0], [1.0, 0.3, 1.0]])


def add_likelihood(family, z, n, scale=1.0):
    """``scale`` perturbs the likelihood (a wrong model the test must be able to reject)."""
    if family == "gp":
        pmp.GammaPoisson("y", partition=z, alpha=GP["alpha"], beta=np.multiply(GP["beta"], scale), observed=counts(n))
    else:
        cats, n_cat = categories(n)
        pmp.DirichletCategorical("y", partition=z, a=np.multiply(DC["a"], scale), n_categories=n_cat, observed=cats)


def _wrong_likelihood(prior, family, n):
    with pm.Model() as wrong_model:
        add_likelihood(family, pmp.Partition("z", prior, n=n), n, scale=4.0)
    like = likelihood_only(wrong_model)
    return exact_posterior(n, lambda p: like(p) + prior.log_eppf(p))[1]


def _check(model, idata, prior, family, n, extra_traces=()):
    like = likelihood_only(model)
    parts, exact = exact_posterior(n, lambda p: like(p) + prior.log_eppf(p))
    _, wrong_prior = exact_posterior(n, lambda p: like(p) + type(prior)(**_scaled(prior)).log_eppf(p))
    zs, lj, k = samples_of(idata)
    tv, tol = check_against(parts, exact, zs, [lj, k, *extra_traces], wrong=wrong_prior)
    tv_wrong = total_variation(frequencies(parts, zs), _wrong_likelihood(prior, family, n))
    assert tv_wrong > tol, f"no power against a wrong likelihood: TV {tv_wrong:.4f} < {tol:.4f}"


@pytest.mark.parametrize("prior,family", [
    (pmp.CRP(1.2), "gp"), (pmp.PitmanYor(0.5, 0.3), "gp"), (pmp.FiniteDirichlet(0.7, 3), "gp"),
    (pmp.CRP(0.6), "dc"), (pmp.PitmanYor(1.0, 0.5), "dc"), (pmp.FiniteDirichlet(1.5, 4), "dc"),
], ids=["crp-gp", "py-gp", "fd-gp", "crp-dc", "py-dc", "fd-dc"])
def test_pm_sample_matches_enumeration(prior, family):
    n = 6
    with pm.Model() as model:
        add_likelihood(family, pmp.Partition("z", prior, n=n), n)
        idata = pm.sample(draws=8000, random_seed=11, **SAMPLE)  # GibbsSplitMerge assigned automatically
    _check(model, idata, prior, family, n)


@pytest.mark.parametrize("moves,family", [("pgsm", "gp"), ("sams", "dc"), ("split_merge", "gp"), ("arm", "dc")])
def test_split_merge_steps_with_gibbs_match_enumeration(moves, family):
    n, prior = 6, pmp.PitmanYor(0.8, 0.2)
    with pm.Model() as model:
        z = pmp.Partition("z", prior, n=n)
        add_likelihood(family, z, n)
        move = {"pgsm": lambda: pmp.PGSM([z]), "sams": lambda: pmp.SAMS([z]),
                "split_merge": lambda: pmp.SplitMerge([z]), "arm": lambda: pmp.ARM([z])}[moves]()
        kw = dict(SAMPLE, chains=3) if moves == "arm" else SAMPLE
        idata = pm.sample(draws=3000 if moves == "arm" else 6000, step=[pmp.CollapsedGibbs([z]), move],
                          random_seed=5, **kw)
    _check(model, idata, prior, family, n)


def test_random_likelihood_hyperparameter_matches_enumeration():
    """beta ~ Gamma(3, 2) sampled by NUTS with the partition by Gibbs: the partition's marginal is
    the enumerated posterior with beta integrated out numerically."""
    n, prior = 5, pmp.CRP(1.0)
    x = counts(n)[:, :1]
    with pm.Model() as model:
        beta = pm.Gamma("beta", 3.0, 2.0)
        z = pmp.Partition("z", prior, n=n)
        pmp.GammaPoisson("y", partition=z, alpha=2.0, beta=beta, observed=x)
        idata = pm.sample(draws=6000, random_seed=3, **SAMPLE)
    terms = PartitionTerms(model, model["z"])
    point = model.initial_point()

    def like(p, b):
        point["beta_log__"] = np.log(b)
        params, pack = terms.kernel_inputs(point)
        return log_joint(p, pack, terms.prior_code, params) - prior.log_eppf(p)

    def marginal(p):
        val, _ = integrate.quad(lambda b: np.exp(like(p, b)) * stats.gamma.pdf(b, 3.0, scale=0.5), 0, np.inf,
                                epsrel=1e-10, limit=200)
        return np.log(val) + prior.log_eppf(p)

    parts, exact = exact_posterior(n, marginal)
    _, wrong = exact_posterior(n, lambda p: like(p, 1.5) + prior.log_eppf(p))  # beta fixed at its prior mean
    zs, lj, k = samples_of(idata)
    check_against(parts, exact, zs, [lj, k, posterior_dataset(idata)["beta"].values.ravel()], wrong=wrong)


def test_random_dirichlet_concentration_matches_enumeration():
    """a ~ Gamma(2, 2) (a scalar concentration, sampled by NUTS) with the partition by Gibbs: the
    partition's marginal is the enumerated posterior with a integrated out numerically; a read at a
    wrong value (a = 0.2) is rejected (a fixed at its prior mean is too close to tell at n = 5)."""
    n, prior = 5, pmp.CRP(1.0)
    cats, n_cat = categories(n)
    with pm.Model() as model:
        a = pm.Gamma("a", 2.0, 2.0)
        z = pmp.Partition("z", prior, n=n)
        pmp.DirichletCategorical("c", partition=z, a=a, n_categories=n_cat, observed=cats)
        idata = pm.sample(draws=6000, random_seed=4, **SAMPLE)
    terms = PartitionTerms(model, model["z"])
    point = model.initial_point()

    def like(p, a):
        point["a_log__"] = np.log(a)
        params, pack = terms.kernel_inputs(point)
        return log_joint(p, pack, terms.prior_code, params) - prior.log_eppf(p)

    def marginal(p):
        val, _ = integrate.quad(lambda a: np.exp(like(p, a)) * stats.gamma.pdf(a, 2.0, scale=0.5), 0, np.inf,
                                epsrel=1e-10, limit=200)
        return np.log(val) + prior.log_eppf(p)

    parts, exact = exact_posterior(n, marginal)
    _, wrong = exact_posterior(n, lambda p: like(p, 0.2) + prior.log_eppf(p))
    zs, lj, k = samples_of(idata)
    check_against(parts, exact, zs, [lj, k, posterior_dataset(idata)["a"].values.ravel()], wrong=wrong)


@pytest.mark.parametrize("family", ["gp", "dc", "both"])
def test_pymc_logp_equals_kernel_log_joint(family):
    rng = np.random.default_rng(3)
    n = 12
    cats, n_cat = categories(n)
    with pm.Model() as model:
        z = pmp.Partition("z", pmp.CRP(pm.Gamma("alpha", 2.0, 1.0)), n=n)
        if family in ("gp", "both"):
            pmp.GammaPoisson("y", partition=z, alpha=pm.Gamma("sh", 2.0, 1.0), beta=[0.5, 2.0], observed=counts(n))
        if family in ("dc", "both"):
            a = pm.Exponential("a", 1.0, shape=3)
            pmp.DirichletCategorical("c", partition=z, a=a, n_categories=n_cat, observed=cats)
    logp = model.compile_logp(vars=[model["z"]] + model.observed_RVs, jacobian=False)
    terms = PartitionTerms(model, model["z"])
    point = model.initial_point()
    for _ in range(6):
        for name in point:
            if name != "z":
                point[name] = point[name] + rng.normal(size=np.shape(point[name])) * 0.3
        point["z"] = rng.integers(0, 4, n)
        params, pack = terms.kernel_inputs(point)
        assert logp(point) == pytest.approx(log_joint(point["z"], pack, terms.prior_code, params), rel=1e-9)


def test_bad_arguments_and_data_are_refused_by_name():
    y = counts(6)
    cats, n_cat = categories(6)
    with pm.Model():
        z = pmp.Partition("z", pmp.CRP(1.0), n=6)
        for bad, err, match in [(y - 0.5, ValueError, "'y'.*non-negative integers"), (-y, ValueError, "non-negative"),
                                (np.where(y > 2, np.nan, y), ValueError, "'y'.*NaN"), (y[:5], ValueError, "rows"),
                                ("abc", TypeError, "numeric")]:
            with pytest.raises(err, match=match):
                pmp.GammaPoisson("y", partition=z, observed=bad)
        for kw, match in [(dict(alpha=0.0), "alpha"), (dict(beta=[1.0, -1.0]), "beta"), (dict(beta=[1.0] * 3), "beta"),
                          (dict(alpha=np.inf), "alpha")]:
            with pytest.raises(ValueError, match=match):
                pmp.GammaPoisson("y", partition=z, observed=y, **kw)
        with pytest.raises(TypeError, match="partition"):
            pmp.GammaPoisson("y", partition=np.zeros(6), observed=y)
        with pytest.raises(TypeError, match="observed"):
            pmp.GammaPoisson("y", partition=z)
        for bad, match in [(cats + 0.5, "integers"), (cats - 1, "non-negative|out of range"),
                           (np.where(cats > 1, np.nan, cats), "NaN")]:
            with pytest.raises(ValueError, match=f"'c'.*({match})"):
                pmp.DirichletCategorical("c", partition=z, observed=bad)
        with pytest.raises(ValueError, match="'c'.*out of range"):
            pmp.DirichletCategorical("c", partition=z, n_categories=[2, 2], observed=cats)
        for kw, err, match in [(dict(n_categories=2.5), TypeError, "n_categories"),
                               (dict(n_categories="3"), TypeError, "n_categories"),
                               (dict(n_categories=[3, 2, 2]), ValueError, "n_categories"),
                               (dict(n_categories=0), ValueError, "n_categories"),
                               (dict(a=[1.0, 0.0, 1.0]), ValueError, "'c'.*a must be positive"),
                               (dict(a=[1.0, 1.0]), ValueError, "'c'.*a must be")]:
            with pytest.raises(err, match=match):
                pmp.DirichletCategorical("c", partition=z, observed=cats, **kw)
        # a zero concentration past a column's C is unused, so allowed
        pmp.DirichletCategorical("c", partition=z, a=[[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]], n_categories=n_cat,
                                 observed=cats)


def test_hostile_data_and_hyperparameters():
    """Values numpy would silently convert or drop are refused by name: infinite, complex, strings,
    masked (missing) entries, no columns, booleans as hyperparameters, category numbers whose one-hot
    form would not fit in memory. Boolean data are 0/1 and give the same model as integers."""
    y = counts(6)
    cats, n_cat = categories(6)
    with pm.Model():
        z = pmp.Partition("z", pmp.CRP(1.0), n=6)
        for bad, err, match in [(np.where(y > 2, np.inf, y), ValueError, "'y'.*infinite"),
                                (np.where(y > 2, -np.inf, y), ValueError, "'y'.*infinite"),
                                (y.astype(complex), TypeError, "'y'.*real numbers"),
                                (y.astype(str), TypeError, "'y'.*numeric"),
                                (np.array([[1, "2"]] * 6, dtype=object), TypeError, "'y'.*numeric"),
                                (np.ma.masked_array(y, mask=y > 2), ValueError, "'y'.*masked"),
                                (y[:, :0], ValueError, "'y'.*no columns")]:
            with pytest.raises(err, match=match):
                pmp.GammaPoisson("y", partition=z, observed=bad)
        for kw, err, match in [(dict(alpha=True), TypeError, "alpha.*boolean"), (dict(beta="2"), TypeError, "beta"),
                               (dict(alpha=1 + 1j), TypeError, "alpha.*real")]:
            with pytest.raises(err, match=match):
                pmp.GammaPoisson("y", partition=z, observed=y, **kw)
        for bad, err, match in [(np.where(cats > 1, np.inf, cats), ValueError, "'c'.*infinite"),
                                (cats.astype(complex), TypeError, "'c'.*real numbers"),
                                (np.ma.masked_array(cats, mask=cats > 1), ValueError, "'c'.*masked"),
                                (cats[:, :0], ValueError, "'c'.*no columns"),
                                (cats * 10**12, ValueError, "'c'.*one-hot")]:
            with pytest.raises(err, match=match):
                pmp.DirichletCategorical("c", partition=z, observed=bad)
        with pytest.raises(ValueError, match="'c'.*one-hot"):
            pmp.DirichletCategorical("c", partition=z, n_categories=10**9, observed=cats)
        with pytest.raises(TypeError, match="'c'.*a must be a number"):
            pmp.DirichletCategorical("c", partition=z, a=True, n_categories=n_cat, observed=cats)
        pmp.GammaPoisson("unmasked", partition=z, observed=np.ma.masked_array(y))  # nothing masked: fine
    logps = []
    for data in (y > 1, (y > 1).astype(int)):
        with pm.Model() as model:
            z = pmp.Partition("z", pmp.CRP(1.0), n=6)
            pmp.GammaPoisson("y", partition=z, observed=data)
            pmp.DirichletCategorical("c", partition=z, observed=data)
        logps.append(model.compile_logp()({"z": np.array([0, 0, 1, 1, 2, 0])}))
    assert np.isfinite(logps[0]) and logps[0] == pytest.approx(logps[1], rel=1e-12)


def test_set_data_with_bad_counts_is_refused_by_the_step():
    y = counts(6)
    with pm.Model() as model:
        data = pm.Data("data", y)
        z = pmp.Partition("z", pmp.CRP(1.0), n=6)
        pmp.GammaPoisson("y", partition=z, observed=data)
        pm.set_data({"data": y + 1})
        pm.sample(draws=5, tune=0, chains=1, progressbar=False, compute_convergence_checks=False)
        pm.set_data({"data": y + 0.5})
        assert model.compile_logp()(model.initial_point()) == -np.inf
        with pytest.raises(ValueError, match="'y'.*non-negative integers"):
            pm.sample(draws=5, tune=0, chains=1, progressbar=False, compute_convergence_checks=False)


def test_set_data_with_bad_categories_is_refused_by_the_step():
    cats, n_cat = categories(6)
    with pm.Model() as model:
        data = pm.Data("data", cats)
        z = pmp.Partition("z", pmp.CRP(1.0), n=6)
        pmp.DirichletCategorical("c", partition=z, n_categories=n_cat, observed=data)
        pm.sample(draws=5, tune=0, chains=1, progressbar=False, compute_convergence_checks=False)
        for bad in (cats + [[0, 1]], cats - 1):
            pm.set_data({"data": bad})
            assert model.compile_logp()(model.initial_point()) == -np.inf
            with pytest.raises(ValueError, match="'c'.*out of range"):
                pm.sample(draws=5, tune=0, chains=1, progressbar=False, compute_convergence_checks=False)


def test_prior_and_posterior_predictive_draws():
    n = 5
    cats, n_cat = categories(n)
    with pm.Model() as model:
        z = pmp.Partition("z", pmp.CRP(1.0), n=n)
        pmp.GammaPoisson("y", partition=z, alpha=3.0, beta=0.5, observed=counts(n))
        pmp.DirichletCategorical("c", partition=z, a=1.0, n_categories=n_cat, observed=cats)
        prior = pm.sample_prior_predictive(draws=3000, random_seed=1)
        idata = pm.sample(draws=200, tune=50, random_seed=2, **{k: v for k, v in SAMPLE.items() if k != "tune"})
        ppc = pm.sample_posterior_predictive(idata, random_seed=3, progressbar=False)
    ys = posterior_dataset(prior, "prior_predictive")["y"].values
    assert ys.dtype.kind == "i" and ys.shape[-2:] == (n, 2)
    np.testing.assert_allclose(ys.mean(), 6.0, rtol=0.08)  # E[y] = alpha / beta
    cs = posterior_dataset(prior, "prior_predictive")["c"].values
    assert cs.min() == 0 and np.all(cs.max(axis=(0, 1, 2)) == n_cat - 1)
    rep = posterior_dataset(ppc, "posterior_predictive")
    assert rep["y"].dtype.kind == "i" and rep["c"].shape[-2:] == (n, 2)
    ours = pmp.sample_posterior_predictive(idata, model, random_seed=0)
    assert posterior_dataset(ours, "posterior_predictive")["y"].dtype.kind == "i"
    params = pmp.cluster_parameters(idata, model, random_seed=0)
    assert set(params.data_vars) == {"cluster_size", "y_rate", "c_p"}
    assert params["c_p"].dims[-2:] == ("c_dim", "c_category")


@pytest.mark.parametrize("family,coupling", [("gp", "ot"), ("dc", "maximal")])
def test_sample_unbiased_matches_enumeration(family, coupling):
    n, prior = 7, pmp.CRP(1.2)
    with pm.Model() as model:
        add_likelihood(family, pmp.Partition("z", prior, n=n), n)
    like = likelihood_only(model)
    parts, post = exact_posterior(n, lambda p: like(p) + prior.log_eppf(p))
    result = pmp.sample_unbiased(model, h={"k": pmp.h.n_clusters}, n_pairs=600, k=1, m=4, coupling=coupling,
                                 cores=1, random_seed=3, progressbar=False, init="singletons")
    row = pmp.summarize_unbiased(result).loc["k"]
    assert abs(row["mean"] - post @ (parts.max(axis=1) + 1)) < 4 * row["se"]


def test_sunspot_example():
    """examples/sunspots.py: the model on synthetic counts; the whole script when statsmodels (its
    optional data source) is installed."""
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415
    from pathlib import Path  # noqa: PLC0415

    root = Path(__file__).resolve().parents[1]
    sys.path.insert(0, str(root / "examples"))
    try:
        import sunspots  # noqa: PLC0415
    finally:
        sys.path.pop(0)
    y = np.random.default_rng(0).poisson(np.repeat([10.0, 60.0, 140.0], 20))
    idata = sunspots.fit(sunspots.build_model(y), draws=100, tune=20)
    k = posterior_dataset(idata, "sample_stats")["n_clusters"].values
    assert 2 <= np.median(k) <= 6
    try:
        import statsmodels  # noqa: F401, PLC0415
    except ImportError:
        return
    proc = subprocess.run([sys.executable, str(root / "examples" / "sunspots.py"), "--draws", "200"], cwd=root,
                          capture_output=True, text=True, timeout=CHILD_PYTHON_TIMEOUT, env=_env_with(root))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "posterior of the number of clusters K" in proc.stdout and "fitted density" in proc.stdout


def _env_with(root):
    import os  # noqa: PLC0415

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(root)] + [p for p in [env.get("PYTHONPATH")] if p])
    return env


def _gamma_poisson_reference(y, labels, alpha=1.0, beta=1.0, crp_alpha=1.0):
    """log p(labels) + log p(y | labels) for a CRP prior and a one-column GammaPoisson, in Python
    floats from ``math.lgamma`` (independent of the package and of PyTensor)."""
    y = [int(v) for v in np.ravel(y)]
    blocks = {}
    for item, label in enumerate(labels):
        blocks.setdefault(int(label), []).append(y[item])
    n = len(y)
    out = len(blocks) * math.log(crp_alpha) + math.lgamma(crp_alpha) - math.lgamma(crp_alpha + n)
    for block in blocks.values():
        s, m = sum(block), len(block)
        out += math.lgamma(m)  # the EPPF's (m - 1)!
        out += alpha * math.log(beta) - math.lgamma(alpha) + math.lgamma(alpha + s) - (alpha + s) * math.log(beta + m)
        out -= sum(math.lgamma(v + 1) for v in block)
    return out


@pytest.mark.parametrize("big", [5_000_000_000, 3_000_000_000, 2**31, 10**14])
def test_counts_of_2_to_the_31_and_more_are_kept_exactly(big):
    """PyMC stores signed integer data as int32 (2^31 and more wrapped modulo 2^32): the logp, the
    Gibbs log joint, the step's statistics and the observed_data group all use the true counts."""
    y = np.array([big, big, 3, 4, 5])
    with pm.Model() as model:
        z = pmp.Partition("z", pmp.CRP(1.0), n=5)
        pmp.GammaPoisson("y", partition=z, observed=y)
    logp = model.compile_logp()
    terms = PartitionTerms(model, model["z"])
    for labels in ([0, 0, 1, 1, 1], [0, 1, 2, 2, 2], [0, 0, 0, 0, 0]):
        exact = _gamma_poisson_reference(y, labels)
        assert logp({"z": np.array(labels)}) == pytest.approx(exact, rel=1e-12, abs=1e-6)
        params, pack = terms.kernel_inputs(model.initial_point())
        assert log_joint(np.array(labels), pack, terms.prior_code, params) == pytest.approx(exact, rel=1e-12, abs=1e-6)
    with model:
        idata = pm.sample(draws=5, tune=0, chains=1, random_seed=1, progressbar=False, compute_convergence_checks=False)
    np.testing.assert_array_equal(posterior_dataset(idata, "observed_data")["y"].values.ravel(), y)
    zs = posterior_dataset(idata)["z"].values[0]
    lj = posterior_dataset(idata, "sample_stats")["log_joint"].values[0]
    for labels, value in zip(zs, lj):
        assert value == pytest.approx(_gamma_poisson_reference(y, labels), rel=1e-12, abs=1e-6)


def test_integer_data_of_every_family_reach_the_model_unchanged():
    """Counts, categories, 0/1 data and edge lists all go to PyMC as uint64 (which its conversion
    of observed data leaves alone); should a PyMC convert them otherwise, the model refuses to be
    built instead of holding other numbers."""
    import pymc.model.core as core  # noqa: PLC0415

    cats, n_cat = categories(6)
    with pm.Model():
        z = pmp.Partition("z", pmp.CRP(1.0), n=6)
        made = [pmp.GammaPoisson("y", partition=z, observed=counts(6) * 10**9),
                pmp.DirichletCategorical("c", partition=z, n_categories=n_cat, observed=cats),
                pmp.BetaBernoulli("b", partition=z, observed=cats[:, 1]),
                pmp.BetaBernoulliNetwork("A", partition=z, observed=np.array([[0, 1], [2, 5]]))]
    for rv, given in zip(made, (counts(6) * 10**9, cats, cats[:, 1:], [[0, 1], [2, 5]])):
        stored = rv.tag.observations.data
        assert stored.dtype == np.int64
        np.testing.assert_array_equal(stored, given)

    original = core.convert_observed_data

    def wrapping(data):  # what PyMC does to signed integers, applied to unsigned ones as well
        out = original(data)
        return out.astype(np.int32) if getattr(out, "dtype", None) == np.uint64 else out

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(core, "convert_observed_data", wrapping)
        with pm.Model():
            z = pmp.Partition("z", pmp.CRP(1.0), n=5)
            pmp.GammaPoisson("small", partition=z, observed=[1, 2, 3, 4, 5])  # same values in int32: accepted
            with pytest.raises(NotImplementedError, match="'y'.*stored the observed integers differently"):
                pmp.GammaPoisson("y", partition=z, observed=[5_000_000_000, 1, 2, 3, 4])


def test_counts_beyond_2_to_the_52_and_wrapped_pm_data_are_refused_clearly():
    with pm.Model():
        z = pmp.Partition("z", pmp.CRP(1.0), n=5)
        for big in (np.array([2**63 + 10, 3, 4, 5, 6], np.uint64), np.array([2.0**53, 3, 4, 5, 6]),
                    np.array([2**52 + 1, 3, 4, 5, 6])):
            with pytest.raises(ValueError, match=r"'y': observed counts must be at most 2\^52"):
                pmp.GammaPoisson("y", partition=z, observed=big)
        pmp.GammaPoisson("ok", partition=z, observed=np.array([2**51, 3, 4, 5, 6]))
        data = pm.Data("d", np.array([3_000_000_000, 3, 4, 5, 6]))  # PyMC wraps it to a negative int32
        with pytest.raises(ValueError, match="'y': observed counts must be non-negative.*pm.Data.*float64"):
            pmp.GammaPoisson("y", partition=z, observed=data)
        floats = pm.Data("f", np.array([3e9, 3, 4, 5, 6]))  # the documented remedy: exact
        pmp.GammaPoisson("y", partition=z, observed=floats)
    with pytest.raises(ValueError, match=r"GAMMA_POISSON: counts must be at most 2\^52"):
        from pymc_partitions.families import kernels  # noqa: PLC0415

        kernels.FamilyPack.build([(kernels.GAMMA_POISSON, np.array([[2.0**63], [1.0]]),
                                   kernels.gamma_poisson_hyper(1.0, 1.0, 1))])
