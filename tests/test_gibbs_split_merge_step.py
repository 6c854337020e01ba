"""pmp.GibbsSplitMerge, what pm.sample assigns to a Partition: assigned automatically (explicit
steps still win), exact against enumeration through pm.sample (a network too), its sweeps per draw
chosen at the end of tuning from the chain's autocorrelation and frozen, reproducible on one or
two cores; statistics keep their names; bad arguments refused."""

import numpy as np
import pymc as pm
import pytest
from pymc.sampling.mcmc import assign_step_methods

import pymc_partitions as pmp
from enumeration import check_against, exact_posterior
from pymc_partitions.pymc.compat import posterior_dataset
from test_pymc_sampling import add_likelihood, likelihood_only

QUIET = dict(progressbar=False, compute_convergence_checks=False)
Y = np.r_[np.zeros(20), np.ones(20) * 6.0] + np.random.default_rng(0).normal(size=40) * 0.5


def galaxy_model(n=40, **kwargs):
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 1.0, 1.0)
        z = pmp.Partition("z", pmp.CRP(alpha), n=n, **kwargs)
        pmp.NormalNormal("y", partition=z, mu0=3.0, sigma0=5.0, sigma=1.0, observed=Y[:n])
    return model


def test_assigned_automatically_and_explicit_steps_win():
    model = galaxy_model()
    _, selected = assign_step_methods(model)
    assert {cls.__name__: [v.name for v in vs] for cls, vs in selected.items()} == {
        "GibbsSplitMerge": ["z"], "EscobarWest": ["alpha_log__"]}
    with model:
        idata = pm.sample(draws=20, tune=20, chains=1, random_seed=1, step=[pmp.CollapsedGibbs([model["z"]])],
                          **QUIET)
    stats = posterior_dataset(idata, "sample_stats")
    assert "sweeps" not in stats and "n_clusters" in stats and "log_joint" in stats


def test_statistics_keep_their_names():
    with galaxy_model() as model:
        idata = pm.sample(draws=30, tune=30, chains=1, random_seed=1, **QUIET)
    stats = posterior_dataset(idata, "sample_stats")
    for name in ("n_clusters", "log_joint", "sweeps", "sams_splits", "sams_merges", "sams_proposed_splits"):
        assert name in stats, name
    z = posterior_dataset(idata)["z"].values[0]
    assert np.array_equal(stats["n_clusters"].values[0], z.max(axis=1) + 1)
    assert model is not None


@pytest.mark.parametrize("prior,family,n", [(pmp.CRP(1.2), "niw", 7), (pmp.PitmanYor(0.5, 0.3), "diag", 6),
                                            (pmp.FiniteDirichlet(0.7, 3), "bb", 7)], ids=["crp-niw", "py-diag", "fd-bb"])
def test_default_matches_enumeration(prior, family, n):
    with pm.Model() as model:
        z = pmp.Partition("z", prior, n=n)
        add_likelihood(family, z, n)
        idata = pm.sample(draws=3000, tune=300, chains=2, cores=1, random_seed=7, **QUIET)
    like = likelihood_only(model)
    parts, exact = exact_posterior(n, lambda p: like(p) + prior.log_eppf(p))
    wrong_prior = type(prior)(*(2.5 * prior.alpha, *([prior.discount] if isinstance(prior, pmp.PitmanYor) else []),
                                *([prior.k] if isinstance(prior, pmp.FiniteDirichlet) else [])))
    _, wrong = exact_posterior(n, lambda p: like(p) + wrong_prior.log_eppf(p))
    stats = posterior_dataset(idata, "sample_stats")
    assert stats["sams_splits"].values.sum() > 100 and stats["sams_merges"].values.sum() > 100
    z = posterior_dataset(idata)["z"].values.reshape(-1, n)
    check_against(parts, exact, z, [stats["log_joint"].values.ravel(), z.max(axis=1)], wrong=wrong)


def test_default_on_a_network_matches_enumeration():
    """On a BetaBernoulliNetwork the moves are Jain-Neal's (block-pair terms included)."""
    n = 6
    edges = np.array([[0, 1], [1, 2], [0, 2], [3, 4], [4, 5], [2, 3]])
    prior = pmp.CRP(1.0)
    with pm.Model() as model:
        z = pmp.Partition("z", prior, n=n)
        pmp.BetaBernoulliNetwork("A", partition=z, a=1.0, b=1.0, observed=edges)
        idata = pm.sample(draws=3000, tune=300, chains=2, cores=1, random_seed=3, **QUIET)
    stats = posterior_dataset(idata, "sample_stats")
    assert "sm_splits" in stats and stats["sm_splits"].values.sum() > 100
    logp = model.compile_logp()
    parts, exact = exact_posterior(n, lambda p: float(logp({"z": p})))
    _, wrong = exact_posterior(n, lambda p: float(logp({"z": p})) + pmp.CRP(3.0).log_eppf(p) - prior.log_eppf(p))
    z = posterior_dataset(idata)["z"].values.reshape(-1, n)
    check_against(parts, exact, z, [stats["log_joint"].values.ravel(), z.max(axis=1)], wrong=wrong)


def sweeps_of(idata):
    stats = posterior_dataset(idata, "sample_stats")
    return stats["sweeps"].values


def test_sweeps_per_draw_follow_the_autocorrelation_and_are_frozen_after_tuning():
    """40 points in two groups 6 apart: a sweep barely moves the small clusters' count, so a draw
    does several sweeps; the number is constant over the kept draws of a chain, and 1 during
    tuning (PyMC's discard_tuned_samples=False keeps them)."""
    with galaxy_model():
        idata = pm.sample(draws=100, tune=300, chains=2, cores=1, random_seed=2, discard_tuned_samples=False, **QUIET)
    warm = posterior_dataset(idata, "warmup_sample_stats")["sweeps"].values
    kept = sweeps_of(idata)
    assert (warm == 1).all()
    assert (kept == kept[:, :1]).all()  # frozen per chain
    assert kept.min() >= 1 and kept.max() <= pmp.pymc.steps.MAX_SWEEPS_PER_DRAW
    assert kept.max() > 1


def test_sweeps_fixed_tune_zero_and_caps():
    with galaxy_model() as model:
        z = model["z"]
        fixed = pm.sample(draws=20, tune=30, chains=1, random_seed=1, step=[pmp.GibbsSplitMerge([z], sweeps=3)], **QUIET)
        untuned = pm.sample(draws=20, tune=0, chains=1, random_seed=1, **QUIET)
    assert (sweeps_of(fixed) == 3).all() and (sweeps_of(untuned) == 1).all()
    with pm.Model():
        big = pmp.Partition("z", pmp.CRP(1.0), n=15_000)
        pmp.NormalNormal("y", partition=big, observed=np.zeros(15_000))
        assert pmp.GibbsSplitMerge([big]).max_sweeps == 1  # MAX_VISITS_PER_DRAW / n
        assert pmp.GibbsSplitMerge([big]).moves == 7  # n // 2000


def test_reproducible_and_the_same_on_two_cores():
    def run(cores):
        with galaxy_model():
            return pm.sample(draws=50, tune=100, chains=2, cores=cores, random_seed=11, **QUIET)

    a, b = run(1), run(2)
    assert np.array_equal(posterior_dataset(a)["z"].values, posterior_dataset(b)["z"].values)
    assert np.array_equal(sweeps_of(a), sweeps_of(b))


def test_bad_arguments_are_refused():
    with galaxy_model() as model:
        z = model["z"]
        with pytest.raises(ValueError, match="sweeps must be a positive integer or 'auto'"):
            pmp.GibbsSplitMerge([z], sweeps="fast")
        with pytest.raises(ValueError, match="sweeps"):
            pmp.GibbsSplitMerge([z], sweeps=0)
        with pytest.raises(ValueError, match="moves"):
            pmp.GibbsSplitMerge([z], moves=-1)
        with pytest.raises(ValueError, match="moves must be an integer"):
            pmp.GibbsSplitMerge([z], moves=1.5)
        with pytest.raises(TypeError, match="moves"):
            pmp.GibbsSplitMerge([z], moves="2")
        with pytest.raises(ValueError, match="intermediate_scans"):
            pmp.GibbsSplitMerge([z], intermediate_scans=-2)
    with pm.Model():
        one = pmp.Partition("z", pmp.CRP(1.0), n=1)
        pmp.NormalNormal("y", partition=one, observed=np.zeros(1))
        with pytest.raises(ValueError, match="one item"):
            pmp.GibbsSplitMerge([one])
        assert pmp.GibbsSplitMerge([one], moves=0).moves == 0


def test_every_step_refuses_an_unknown_keyword_and_takes_pymcs_own():
    """A misspelt argument (``swepps=2``) used to vanish into ``**kwargs``; PyMC's own keywords
    (``initial_point``, ``compile_kwargs``, passed when pm.sample builds a step) are still taken."""
    with galaxy_model() as model:
        z, alpha = model["z"], model["alpha"]
        for cls, target in [(pmp.CollapsedGibbs, z), (pmp.PGSM, z), (pmp.SAMS, z), (pmp.SplitMerge, z),
                            (pmp.GibbsSplitMerge, z), (pmp.SubClusterSplitMerge, z), (pmp.ARM, z),
                            (pmp.EscobarWest, alpha), (pmp.PriorSlice, alpha)]:
            with pytest.raises(TypeError, match=rf"{cls.__name__} got unexpected keyword argument\(s\) \['swepps'\]"):
                cls([target], swepps=2)
            cls([target], initial_point=model.initial_point(0), compile_kwargs=None)
        idata = pm.sample(draws=5, tune=5, chains=1, random_seed=1, gibbs_split_merge={"sweeps": 2}, **QUIET)
    assert posterior_dataset(idata)["z"].shape[-1] == 40
