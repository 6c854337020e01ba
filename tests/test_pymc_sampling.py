"""pm.sample with the package's steps reproduces exact posteriors (n = 6-7), composes with other
steps, is reproducible, runs on several cores, and is assigned automatically."""

import numpy as np
import pymc as pm
import pytest
from scipy import stats

import pymc_partitions as pmp
from enumeration import check_against, ess, exact_posterior
from models import COV, COV0, data, gamma_alpha_law, gamma_mixed_log_eppf, mixed_log_eppf
from pymc_partitions.pymc.compat import PYMC_MAJOR
from pymc_partitions.pymc.compat import posterior_dataset
from pymc_partitions.pymc.terms import PartitionTerms
from pymc_partitions.samplers.gibbs import log_joint

SAMPLE = dict(tune=200, chains=1, cores=1, progressbar=False, compute_convergence_checks=False)


def add_likelihood(family, z, n):
    y, b = data(n)
    if family == "diag":
        pmp.NormalNormal("y", partition=z, mu0=[0.5, 0.0], sigma0=[2.0, 1.5], sigma=[1.0, 0.8], observed=y)
    elif family == "full":
        pmp.NormalNormal("y", partition=z, mu0=0.0, cov0=COV0, cov=COV, observed=y)
    elif family == "niw":
        pmp.NormalInverseWishart("y", partition=z, mu0=0.0, kappa0=0.5, nu0=4.0, scale0=np.eye(2), observed=y)
    elif family == "bb":
        pmp.BetaBernoulli("y", partition=z, a=0.5, b=[1.0, 2.0, 0.7], observed=b)
    else:
        add_likelihood("diag", z, n)
        pmp.BetaBernoulli("b", partition=z, a=1.0, b=1.0, observed=b)


def likelihood_only(model):
    """labels -> collapsed log likelihood of ``model`` (fixed likelihood hyperparameters)."""
    terms = PartitionTerms(model, model["z"])
    unit = pmp.CRP(1.0)
    _, pack = terms.kernel_inputs(model.initial_point())
    return lambda p: log_joint(p, pack, unit.code, unit.kernel_params()) - unit.log_eppf(p)


def samples_of(idata):
    post = posterior_dataset(idata)
    stats_ = posterior_dataset(idata, "sample_stats")
    z = post["z"].values.reshape(-1, post["z"].shape[-1])
    return z, stats_["log_joint"].values.ravel(), stats_["n_clusters"].values.ravel()


@pytest.mark.parametrize(
    "prior,family",
    [(pmp.CRP(1.2), "diag"), (pmp.PitmanYor(0.5, 0.3), "niw"), (pmp.FiniteDirichlet(0.7, 3), "bb"),
     (pmp.CRP(0.6), "full"), (pmp.PitmanYor(1.0, 0.5), "multi")],
    ids=["crp-diag", "py-niw", "fd-bb", "crp-full", "py-multi"],
)
def test_pm_sample_matches_enumeration(prior, family):
    n = 6
    with pm.Model() as model:
        z = pmp.Partition("z", prior, n=n)
        add_likelihood(family, z, n)
        idata = pm.sample(draws=8000, random_seed=11, **SAMPLE)  # GibbsSplitMerge assigned automatically
    like = likelihood_only(model)
    parts, exact = exact_posterior(n, lambda p: like(p) + prior.log_eppf(p))
    _, wrong = exact_posterior(n, lambda p: like(p) + type(prior)(**_scaled(prior)).log_eppf(p))
    zs, lj, k = samples_of(idata)
    check_against(parts, exact, zs, [lj, k], wrong=wrong)


def _scaled(prior):
    if isinstance(prior, pmp.FiniteDirichlet):
        return {"alpha": prior.alpha * 4, "k": prior.k + 1}
    if isinstance(prior, pmp.PitmanYor):
        return {"alpha": prior.alpha * 4, "discount": prior.discount}
    return {"alpha": prior.alpha * 4}


def _random_parameter_case(case, family="diag"):
    """(model, exact marginal log prior of the partition, step for the parameter or None)."""
    n = 6
    with pm.Model() as model:
        if case in ("crp-escobar-west", "crp-nuts", "crp-auto"):
            alpha = pm.Gamma("alpha", 2.0, 1.0)
            z = pmp.Partition("z", pmp.CRP(alpha), n=n)
            log_prior = gamma_mixed_log_eppf(pmp.CRP, 2.0, 1.0)
            step = {"crp-escobar-west": pmp.EscobarWest, "crp-nuts": pm.NUTS, "crp-auto": None}[case]
        elif case == "py-discount-slice":
            alpha = pm.Beta("d", 2.0, 3.0)
            z = pmp.Partition("z", pmp.PitmanYor(0.8, alpha), n=n)
            log_prior = mixed_log_eppf(lambda d: pmp.PitmanYor(0.8, d), lambda d: stats.beta.pdf(d, 2.0, 3.0), 0, 1)
            step = pmp.PriorSlice
        else:
            alpha = pm.Gamma("alpha", 2.0, 2.0)
            z = pmp.Partition("z", pmp.FiniteDirichlet(alpha, 3), n=n)
            log_prior = gamma_mixed_log_eppf(lambda a: pmp.FiniteDirichlet(a, 3), 2.0, 2.0)
            step = pmp.PriorSlice
        add_likelihood(family, z, n)
    return model, alpha, log_prior, step


@pytest.mark.parametrize(
    "case,family",
    [("crp-escobar-west", "diag"), ("crp-escobar-west", "niw"), ("py-discount-slice", "bb"),
     ("fd-alpha-slice", "full"), ("fd-alpha-slice", "multi"), ("crp-nuts", "diag")],
)
def test_random_prior_parameter_matches_enumeration(case, family):
    model, param, log_prior, step_cls = _random_parameter_case(case, family)
    draws = 3000 if case == "crp-nuts" else 8000
    with model:
        steps = [pmp.CollapsedGibbs([model["z"]]), step_cls([param])]
        idata = pm.sample(draws=draws, step=steps, random_seed=7, **SAMPLE)
    like = likelihood_only(model)
    parts, exact = exact_posterior(6, lambda p: like(p) + log_prior(p))
    zs, lj, k = samples_of(idata)
    values = posterior_dataset(idata)[param.name].values.ravel()
    check_against(parts, exact, zs, [lj, k, values])


def _vague_model(prior_of, family="bb", n=6):
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 1e-3, 1e-3)
        add_likelihood(family, pmp.Partition("z", prior_of(alpha), n=n), n)
    return model, alpha


def _check_log_alpha_law(log_alphas, parts, exact, log_cdf, ks):
    """The draws of log alpha against P(log alpha <= t | y), thresholds far below log(1e-308) included."""
    for t in (-3000.0, -1000.0, -300.0, -30.0, -3.0, 0.0, 2.0):
        p = float(np.sum(exact * np.exp([log_cdf(t, labels) for labels in parts])))
        below = (log_alphas <= t).astype(float)
        n_eff = min(ess(below), ess(ks)) if 0 < below.mean() < 1 else len(below)
        assert abs(below.mean() - p) < 4.5 * np.sqrt(max(p * (1 - p), 1e-4) / n_eff), (t, below.mean(), p, n_eff)


def test_escobar_west_with_a_vague_gamma_prior_matches_enumeration():
    """alpha ~ Gamma(1e-3, 1e-3), a common vague prior: with one cluster alpha falls below 1e-308 in
    about half the draws, where the step used to crash (math domain error). Drawn in log space, the
    partition and log alpha (the ``log_alpha`` statistic; alpha itself is then 0) follow the exact
    posterior, enumeration and quadrature."""
    model, alpha = _vague_model(pmp.CRP)
    with model:
        idata = pm.sample(draws=6000, step=[pmp.CollapsedGibbs([model["z"]]), pmp.EscobarWest([alpha])],
                          random_seed=7, **SAMPLE)
    like = likelihood_only(model)
    log_prior, log_cdf = gamma_alpha_law(pmp.CRP, 1e-3, 1e-3, 6)
    parts, exact = exact_posterior(6, lambda p: like(p) + log_prior(p))
    zs, lj, k = samples_of(idata)
    check_against(parts, exact, zs, [lj, k])
    stats_ = posterior_dataset(idata, "sample_stats")
    log_alphas = stats_["log_alpha"].values.ravel()
    _check_log_alpha_law(log_alphas, parts, exact, log_cdf, k)
    assert (log_alphas < -745).mean() > 0.3  # the underflow regime is exercised
    np.testing.assert_allclose(posterior_dataset(idata)["alpha"].values.ravel(), np.exp(log_alphas), rtol=1e-14, atol=0)


def test_prior_slice_with_a_vague_gamma_prior():
    """The same class for PriorSlice (a finite Dirichlet's alpha): the EPPF at alpha = 0 (an
    underflow) is its limit, and where PyMC cannot evaluate the prior's log density (PyMC 5's
    pm.Gamma is -inf once alpha underflows) the step stops clearly instead of cutting that mass off;
    PyMC 6 evaluates it in log space, and the law is exact."""
    def prior_of(a):
        return pmp.FiniteDirichlet(a, 3)

    model, alpha = _vague_model(prior_of)
    with model:
        steps = [pmp.CollapsedGibbs([model["z"]]), pmp.PriorSlice([alpha], width=200.0)]
        if PYMC_MAJOR < 6:
            with pytest.raises(ValueError, match="PriorSlice: PyMC 5.* log density of 'alpha_log__' as -inf at the "
                                                 "unconstrained value .*alpha = 0.0.*pmp.EscobarWest"):
                pm.sample(draws=6000, step=steps, random_seed=7, **SAMPLE)
            return
        idata = pm.sample(draws=6000, step=steps, random_seed=7, **SAMPLE)
    like = likelihood_only(model)
    log_prior, log_cdf = gamma_alpha_law(prior_of, 1e-3, 1e-3, 6)
    parts, exact = exact_posterior(6, lambda p: like(p) + log_prior(p))
    zs, lj, k = samples_of(idata)
    check_against(parts, exact, zs, [lj, k])
    log_alphas = posterior_dataset(idata, "sample_stats")["value"].values.ravel()
    _check_log_alpha_law(log_alphas, parts, exact, log_cdf, k)
    assert (log_alphas < -745).mean() > 0.3


def test_automatic_assignment_and_nuts_composition():
    from pymc.sampling.mcmc import assign_step_methods  # noqa: PLC0415

    model, alpha, _, _ = _random_parameter_case("crp-auto")
    _, selected = assign_step_methods(model)
    assert {cls.__name__: [v.name for v in vs] for cls, vs in selected.items()} == {
        "GibbsSplitMerge": ["z"], "EscobarWest": ["alpha_log__"]}


def test_cores_and_seed_reproducibility_and_dtype():
    n = 30
    y = np.r_[np.random.default_rng(0).normal(size=15), np.random.default_rng(1).normal(size=15) + 6]
    with pm.Model():
        alpha = pm.Gamma("alpha", 1.0, 1.0)
        z = pmp.Partition("z", pmp.CRP(alpha), n=n)
        pmp.NormalNormal("y", partition=z, sigma0=5.0, sigma=1.0, observed=y)
        kw = dict(draws=100, tune=20, chains=2, cores=2, progressbar=False, compute_convergence_checks=False)
        a = pm.sample(step=[pmp.EscobarWest([alpha])], random_seed=5, **kw)
        b = pm.sample(step=[pmp.EscobarWest([alpha])], random_seed=5, **kw)
    za, zb = posterior_dataset(a)["z"].values, posterior_dataset(b)["z"].values
    assert np.array_equal(za, zb)
    assert not np.array_equal(za[0], za[1])  # chains differ
    assert za.dtype == np.int64
    # canonical labels: first appearance order
    flat = za.reshape(-1, n)
    assert all(np.array_equal(np.unique(r, return_index=True)[1], np.sort(np.unique(r, return_index=True)[1]))
               and r[0] == 0 for r in flat)
    k = posterior_dataset(a, "sample_stats")["n_clusters"].values
    assert np.array_equal(k, za.max(axis=-1) + 1)
    assert np.mean(k == 2) > 0.5  # two well-separated groups


def test_prior_predictive_partition_matches_eppf():
    n = 4
    prior = pmp.PitmanYor(0.5, 0.4)
    with pm.Model():
        z = pmp.Partition("z", prior, n=n)
        pmp.NormalNormal("y", partition=z, sigma0=2.0, sigma=1.0, observed=np.zeros(n))
        pp = pm.sample_prior_predictive(draws=4000, random_seed=3)
    zs = posterior_dataset(pp, "prior")["z"].values.reshape(-1, n)
    parts, exact = exact_posterior(n, prior.log_eppf)
    from enumeration import frequencies  # noqa: PLC0415

    freq = frequencies(parts, zs)
    chi2 = ((freq - exact) ** 2 / exact).sum() * len(zs)
    assert stats.chi2.sf(chi2, len(parts) - 1) > 1e-3
    ys = posterior_dataset(pp, "prior_predictive")["y"].values
    assert ys.shape[-2:] == (n, 1)


def test_a_known_partition_as_observed_gives_its_hyperparameters_posterior():
    """observed=labels: the partition is data. The posterior of alpha given K blocks of n items,
    and of a collapsed likelihood's sigma given the blocks, against quadrature of densities written
    here (the CRP's EPPF, and per block y ~ MVN(mu0, sigma^2 I + sigma0^2 11')); labels not in
    canonical order are the same partition."""
    from scipy import integrate
    from scipy.special import gammaln

    y = np.array([-4.0, -4.2, 4.0, 4.1, 3.9, -3.8, 0.2, 0.1])
    labels = np.array([2, 2, 0, 0, 0, 2, 1, 1])  # three blocks, not in first-appearance order
    with pm.Model():
        alpha = pm.Gamma("alpha", 2.0, 1.0)
        sigma = pm.HalfNormal("sigma", 2.0)
        z = pmp.Partition("z", pmp.CRP(alpha), n=8, observed=labels)
        pmp.NormalNormal("y", partition=z, mu0=0.0, sigma0=5.0, sigma=sigma, observed=y)
        idata = pm.sample(draws=3000, **{**SAMPLE, "chains": 2, "tune": 500}, random_seed=5)
    post = posterior_dataset(idata)
    assert "z" not in post  # data, not a variable

    def log_alpha(a):
        return stats.gamma.logpdf(a, 2.0) + 3 * np.log(a) + gammaln(a) - gammaln(a + 8)

    def log_sigma(s):
        blocks = [y[labels == k] for k in range(3)]
        return stats.halfnorm.logpdf(s, scale=2.0) + sum(
            stats.multivariate_normal.logpdf(b, np.zeros(len(b)), s ** 2 * np.eye(len(b)) + 25.0) for b in blocks)

    for name, log_density, upper in [("alpha", log_alpha, 60.0), ("sigma", log_sigma, 10.0)]:
        mass = integrate.quad(lambda t: np.exp(log_density(t)), 1e-9, upper, limit=200)[0]
        mean = integrate.quad(lambda t: t * np.exp(log_density(t)), 1e-9, upper, limit=200)[0] / mass
        second = integrate.quad(lambda t: t * t * np.exp(log_density(t)), 1e-9, upper, limit=200)[0] / mass
        draws = post[name].values.ravel()
        se = np.sqrt(second - mean ** 2) / np.sqrt(ess(draws))
        assert abs(draws.mean() - mean) < 4.5 * se, (name, draws.mean(), mean, se)


def test_pymc_graph_transforms_of_a_partition_model():
    """pm.do, pm.observe and model.copy() clone the model's graph, which PyMC refuses for a model
    with registered starting values; the default (dispersed) start is the Partition's support point
    instead, so they work, and the chains they give still start apart. pm.do(alpha=0.6) samples
    the partition's exact posterior under CRP(0.6); pm.observe(z=labels) makes it data."""
    n = 6
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 2.0, 1.0)
        z = pmp.Partition("z", pmp.CRP(alpha), n=n)
        add_likelihood("diag", z, n)
    assert model.copy()["z"].owner.op is z.owner.op
    fixed = pm.do(model, {"alpha": 0.6})
    starts = [fixed.initial_point(random_seed=seed)["z"] for seed in range(4)]
    assert len({tuple(s) for s in starts}) > 1  # each chain its own dispersed start
    with fixed:
        idata = pm.sample(draws=8000, random_seed=3, **SAMPLE)
    like = likelihood_only(fixed)
    parts, exact = exact_posterior(n, lambda p: like(p) + pmp.CRP(0.6).log_eppf(p))
    _, wrong = exact_posterior(n, lambda p: like(p) + pmp.CRP(2.4).log_eppf(p))
    zs, lj, k = samples_of(idata)
    check_against(parts, exact, zs, [lj, k], wrong=wrong)

    known = pm.observe(model, {"z": np.array([0, 0, 1, 1, 1, 2])})
    with known:
        idata = pm.sample(draws=1500, random_seed=4, **{**SAMPLE, "chains": 2})
    assert "z" not in posterior_dataset(idata)
    assert set(posterior_dataset(idata).data_vars) >= {"alpha", "z_n_clusters"}
