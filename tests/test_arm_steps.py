"""pmp.ARM (a population step) and pmp.SplitMerge through pm.sample: every chain's draws against
the exact posterior (n = 6-7, 4 chains) with the wrong-posterior power check; a broken ARM ratio
is caught at this level too; the alternating roles stay consistent across chains, across the
tuning / draw boundary and with cores > 1 (identical draws); sampler statistics; clear errors."""

import numpy as np
import pymc as pm
import pytest

import pymc_partitions as pmp
from enumeration import check_against, exact_posterior
from pymc_partitions.pymc.compat import posterior_dataset
from pymc_partitions.samplers import arm
from test_pymc_sampling import _scaled, add_likelihood, likelihood_only

QUIET = dict(progressbar=False, compute_convergence_checks=False)


def check_every_chain(model, prior, idata, n):
    like = likelihood_only(model)
    parts, exact = exact_posterior(n, lambda p: like(p) + prior.log_eppf(p))
    _, wrong = exact_posterior(n, lambda p: like(p) + type(prior)(**_scaled(prior)).log_eppf(p))
    z = posterior_dataset(idata)["z"].values
    for chain in z:
        check_against(parts, exact, chain, [chain.max(axis=1)], wrong=wrong)


def arm_model(prior, family, n, steps, draws, seed, **kwargs):
    with pm.Model() as model:
        z = pmp.Partition("z", prior, n=n)
        add_likelihood(family, z, n)
        idata = pm.sample(draws=draws, tune=kwargs.pop("tune", 100), chains=kwargs.pop("chains", 4), cores=1,
                          step=steps(z), random_seed=seed, initvals={"z": np.zeros(n, int)}, **QUIET, **kwargs)
    return model, idata


def test_arm_with_gibbs_matches_enumeration_and_a_broken_ratio_does_not(monkeypatch):
    """Four ARM moves per active draw (two per draw on average) against one Gibbs sweep: a wrong
    acceptance ratio shows (the reverse probability left out: the check fails)."""
    n, prior = 6, pmp.CRP(1.2)

    def steps(z):
        return [pmp.CollapsedGibbs([z]), pmp.ARM([z], moves=4)]

    model, idata = arm_model(prior, "bb", n, steps, 3000, seed=3)
    stats = posterior_dataset(idata, "sample_stats")
    assert stats["arm_accepted"].values.sum() > 4000
    check_every_chain(model, prior, idata, n)
    monkeypatch.setattr(arm, "_log_ratio", lambda lpx, lpy, lf, lr: (lpy - lpx) - lf if lr > -np.inf else -np.inf)
    model, idata = arm_model(prior, "bb", n, steps, 3000, seed=3)
    with pytest.raises(AssertionError, match="TV|number of clusters"):
        check_every_chain(model, prior, idata, n)


def test_arm_frozen_mode_with_gibbs_matches_enumeration():
    n, prior = 7, pmp.PitmanYor(0.5, 0.3)
    model, idata = arm_model(prior, "diag", n, lambda z: [pmp.CollapsedGibbs([z]), pmp.ARM([z], mode="frozen",
                                                                                           moves=2)], 2500, seed=4)
    stats = posterior_dataset(idata, "sample_stats")
    assert stats["arm_active"].values.all() and stats["arm_accepted"].values.sum() > 1000
    check_every_chain(model, prior, idata, n)


def test_arm_with_the_default_gibbs_split_merge_from_dispersed_starts_matches_enumeration():
    """The composition docs/steps.md recommends since GibbsSplitMerge became the default:
    step=[GibbsSplitMerge, ARM], every chain from its own dispersed start (no initvals)."""
    n, prior = 6, pmp.CRP(0.8)
    with pm.Model() as model:
        z = pmp.Partition("z", prior, n=n)
        add_likelihood("bb", z, n)
        idata = pm.sample(draws=2500, tune=100, chains=4, cores=1, random_seed=11,
                          step=[pmp.GibbsSplitMerge([z]), pmp.ARM([z])], **QUIET)
    stats = posterior_dataset(idata, "sample_stats")
    assert "sweeps" in stats and stats["arm_accepted"].values.sum() > 300
    check_every_chain(model, prior, idata, n)


def test_arm_alone_gets_no_default_sweep_step():
    """Naming ARM in step= covers the partition: pm.sample adds no GibbsSplitMerge (docs/steps.md)."""
    with pm.Model():
        z = pmp.Partition("z", pmp.CRP(1.0), n=6)
        add_likelihood("bb", z, 6)
        idata = pm.sample(draws=5, tune=0, chains=3, cores=1, random_seed=1, step=[pmp.ARM([z])], **QUIET)
    stats = posterior_dataset(idata, "sample_stats")
    assert "arm_active" in stats and "sweeps" not in stats and "n_clusters" not in stats


@pytest.mark.parametrize("with_gibbs", [False, True], ids=["alone", "with-gibbs"])
def test_split_merge_matches_enumeration(with_gibbs):
    n, prior = 6, pmp.FiniteDirichlet(0.7, 3)

    def steps(z):
        sm = [pmp.SplitMerge([z], intermediate_scans=3, moves=2)]
        return [pmp.CollapsedGibbs([z])] + sm if with_gibbs else sm

    model, idata = arm_model(prior, "niw" if with_gibbs else "bb", n, steps, 3000, seed=5)
    stats = posterior_dataset(idata, "sample_stats")
    assert stats["sm_splits"].values.sum() > 100 and stats["sm_merges"].values.sum() > 100
    check_every_chain(model, prior, idata, n)


def y_two_groups(n=24):
    rng = np.random.default_rng(0)
    return np.r_[rng.normal(size=n // 2), rng.normal(size=n // 2) + 5.0]


def sample_roles(chains, tune, draws, cores, mode="alternating", moves=2):
    y = y_two_groups()
    with pm.Model():
        z = pmp.Partition("z", pmp.CRP(1.0), n=len(y))
        pmp.NormalNormal("y", partition=z, mu0=2.5, sigma0=5.0, sigma=1.0, observed=y)
        return pm.sample(draws=draws, tune=tune, chains=chains, cores=cores, random_seed=11, discard_tuned_samples=False,
                         step=[pmp.CollapsedGibbs([z]), pmp.ARM([z], mode=mode, moves=moves)], **QUIET)


def warmup_and_draws(idata, group):
    """A variable over all iterations (warm-up, then kept draws), (chains, iterations)."""
    if group == "posterior":
        name, var = "posterior", "z"
    else:
        name, var = "sample_stats", group
    return np.concatenate([posterior_dataset(idata, f"warmup_{name}")[var].values,
                           posterior_dataset(idata, name)[var].values], axis=1)


@pytest.mark.parametrize("chains", [3, 4, 5])
def test_alternating_roles_are_consistent_across_chains_and_the_tuning_boundary(chains):
    tune, draws = 7, 12  # an odd number of tuning draws: the roles carry on across the boundary
    idata = sample_roles(chains, tune, draws, cores=1)
    active = warmup_and_draws(idata, "arm_active")
    ref_a, ref_b = warmup_and_draws(idata, "arm_ref_a"), warmup_and_draws(idata, "arm_ref_b")
    skipped = warmup_and_draws(idata, "arm_skipped")
    synthetic = warmup_and_draws(idata, "arm_synthetic")
    moved = warmup_and_draws(idata, "arm_splits_proposed") + warmup_and_draws(idata, "arm_merges_proposed")
    for t in range(tune + draws):
        roles, passive = arm.alternating_roles(chains, t)
        assert set(np.flatnonzero(active[:, t])) == set(roles)
        for c in roles:
            assert moved[c, t] + skipped[c, t] == 2
            if moved[c, t]:  # (a synthetic second reference comes from the first reference's chain)
                assert ref_a[c, t] in passive and ref_b[c, t] in passive
                assert ref_a[c, t] != ref_b[c, t] or synthetic[c, t] > 0
        for c in passive:
            assert moved[c, t] == 0 and ref_a[c, t] == -1


def test_parallel_population_gives_identical_draws(monkeypatch):
    """cores=2: PyMC runs one process per chain and sends the population every draw; the roles
    come from each chain's own draw counter, and the draws equal the single-process ones."""
    from pymc.sampling import population  # noqa: PLC0415

    steppers = []
    init = population.PopulationStepper.__init__

    def recording_init(self, *args, **kwargs):
        init(self, *args, **kwargs)
        steppers.append(self.is_parallelized)

    monkeypatch.setattr(population.PopulationStepper, "__init__", recording_init)
    one = sample_roles(4, 5, 10, cores=1)
    two = sample_roles(4, 5, 10, cores=2)
    assert steppers == [False, True]  # the second run really had a process per chain
    for group in ("posterior", "arm_active", "arm_ref_a", "arm_accepted", "arm_log_ratio"):
        a, b = warmup_and_draws(one, group), warmup_and_draws(two, group)
        assert np.array_equal(a, b, equal_nan=group == "arm_log_ratio"), group


def test_frozen_and_paper_modes_record_their_references():
    frozen = sample_roles(4, 6, 8, cores=1, mode="frozen", moves=1)
    active = warmup_and_draws(frozen, "arm_active")
    assert active.all()  # every chain, every draw
    refs = warmup_and_draws(frozen, "arm_ref_a")
    assert ((refs >= 0) | (warmup_and_draws(frozen, "arm_skipped") == 1)).all() and refs.max() <= 3
    paper = sample_roles(4, 6, 8, cores=1, mode="paper", moves=1)
    made = warmup_and_draws(paper, "arm_skipped") == 0
    chains = np.arange(4)[:, None] * np.ones((1, made.shape[1]), int)
    assert (warmup_and_draws(paper, "arm_ref_a")[made] == chains[made]).all()  # one reference: the chain's own


def test_clear_errors():
    y = y_two_groups(8)
    with pm.Model():
        z = pmp.Partition("z", pmp.CRP(1.0), n=8)
        pmp.NormalNormal("y", partition=z, mu0=2.5, sigma0=5.0, sigma=1.0, observed=y)
        for chains in (1, 2):
            with pytest.raises(ValueError, match="needs at least 3 chains"):
                pm.sample(draws=5, tune=2, chains=chains, cores=1, step=[pmp.ARM([z])], **QUIET)
        with pytest.raises(ValueError, match="tune >= 1"):
            pm.sample(draws=5, tune=0, chains=3, cores=1, step=[pmp.ARM([z], mode="frozen")], **QUIET)
        for kwargs, match in [(dict(mode="window"), "mode"), (dict(moves=0), "moves"), (dict(moves=1.5), "moves"),
                              (dict(pool_draws=0), "pool_draws"), (dict(synthetic=2.0), "ARM: synthetic must be a finite number >= 0.0 and <= 1.0"),
                              (dict(synthetic_scans=-1), "ARM: synthetic_scans"), (dict(focus=-1.0), r"ARM: focus")]:
            with pytest.raises(ValueError, match=match):
                pmp.ARM([z], **kwargs)
        with pytest.raises(TypeError, match="pool_draws"):
            pmp.ARM([z], pool_draws="many")
        with pytest.raises(TypeError, match="focus must be a number"):
            pmp.ARM([z], focus="pair")
        with pytest.raises(RuntimeError, match="population step"):
            pmp.ARM([z]).step({"z": np.zeros(8, np.int64)})
        for kwargs, match in [(dict(intermediate_scans=-1), "intermediate_scans"), (dict(moves=0), "moves")]:
            with pytest.raises(ValueError, match=match):
                pmp.SplitMerge([z], **kwargs)
