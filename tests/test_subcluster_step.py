"""pmp.SubClusterSplitMerge: never assigned automatically; exact against enumeration through
pm.sample (with a random CRP alpha updated by EscobarWest beside it); its statistics are named
``sub_*`` (``sm_*`` on a network, where its moves are Jain-Neal's); bad arguments refused."""

import numpy as np
import pymc as pm
import pytest
from pymc.sampling.mcmc import assign_step_methods

import pymc_partitions as pmp
from enumeration import check_against, exact_posterior
from models import gamma_mixed_log_eppf
from pymc_partitions.pymc.compat import posterior_dataset
from test_gibbs_split_merge_step import QUIET, galaxy_model
from test_pymc_sampling import add_likelihood, likelihood_only


def test_not_assigned_automatically():
    _, selected = assign_step_methods(galaxy_model())
    assert "SubClusterSplitMerge" not in {cls.__name__ for cls in selected}


@pytest.mark.parametrize("prior,family,n,scans", [(pmp.PitmanYor(0.5, 0.3), "diag", 6, 2),
                                                  (pmp.FiniteDirichlet(0.7, 3), "bb", 7, 0)], ids=["py-diag", "fd-bb"])
def test_matches_enumeration(prior, family, n, scans):
    with pm.Model() as model:
        z = pmp.Partition("z", prior, n=n)
        add_likelihood(family, z, n)
        idata = pm.sample(draws=3000, tune=300, chains=2, cores=1, random_seed=7,
                          step=[pmp.SubClusterSplitMerge([z], scans=scans)], **QUIET)
    like = likelihood_only(model)
    parts, exact = exact_posterior(n, lambda p: like(p) + prior.log_eppf(p))
    wrong_prior = type(prior)(*(2.5 * prior.alpha, *([prior.discount] if isinstance(prior, pmp.PitmanYor) else []),
                                *([prior.k] if isinstance(prior, pmp.FiniteDirichlet) else [])))
    _, wrong = exact_posterior(n, lambda p: like(p) + wrong_prior.log_eppf(p))
    stats = posterior_dataset(idata, "sample_stats")
    assert stats["sub_splits"].values.sum() > 100 and stats["sub_merges"].values.sum() > 100
    assert "sams_splits" not in stats
    z = posterior_dataset(idata)["z"].values.reshape(-1, n)
    check_against(parts, exact, z, [stats["log_joint"].values.ravel(), z.max(axis=1)], wrong=wrong)


def test_with_a_random_alpha_matches_enumeration():
    """The setting of the mixing suite: alpha ~ Gamma(1, 1) updated by EscobarWest (assigned), the
    partition by this step; the partition's marginal law is the Gamma-mixed CRP's."""
    n = 7
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 1.0, 1.0)
        z = pmp.Partition("z", pmp.CRP(alpha), n=n)
        add_likelihood("niw", z, n)
        idata = pm.sample(draws=3000, tune=300, chains=2, cores=1, random_seed=5,
                          step=[pmp.SubClusterSplitMerge([z])], **QUIET)
    like = likelihood_only(model)
    log_prior = gamma_mixed_log_eppf(pmp.CRP, 1.0, 1.0)
    wrong_prior = gamma_mixed_log_eppf(pmp.CRP, 4.0, 1.0)
    parts, exact = exact_posterior(n, lambda p: like(p) + log_prior(p))
    _, wrong = exact_posterior(n, lambda p: like(p) + wrong_prior(p))
    stats = posterior_dataset(idata, "sample_stats")
    z = posterior_dataset(idata)["z"].values.reshape(-1, n)
    check_against(parts, exact, z, [stats["log_joint"].values.ravel(), z.max(axis=1)], wrong=wrong)


def test_on_a_network_the_moves_are_jain_neal():
    edges = np.array([[0, 1], [1, 2], [3, 4]])
    with pm.Model():
        z = pmp.Partition("z", pmp.CRP(1.0), n=5)
        pmp.BetaBernoulliNetwork("A", partition=z, a=1.0, b=1.0, observed=edges)
        idata = pm.sample(draws=30, tune=30, chains=1, random_seed=1, step=[pmp.SubClusterSplitMerge([z])], **QUIET)
    stats = posterior_dataset(idata, "sample_stats")
    assert "sm_splits" in stats and "sub_splits" not in stats


def test_bad_arguments_are_refused():
    with galaxy_model() as model:
        z = model["z"]
        for bad, err in ((-1, ValueError), (1.5, ValueError), ("1", TypeError), (None, TypeError)):
            with pytest.raises(err, match="SubClusterSplitMerge: scans"):
                pmp.SubClusterSplitMerge([z], scans=bad)
        with pytest.raises(ValueError, match="sweeps must be a positive integer or 'auto'"):
            pmp.SubClusterSplitMerge([z], sweeps="fast")
        with pytest.raises(ValueError, match="moves"):
            pmp.SubClusterSplitMerge([z], moves=-1)
        assert pmp.SubClusterSplitMerge([z], scans=3, sweeps=2).scans == 3
