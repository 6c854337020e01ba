"""pmp.PGSM and pmp.SAMS through pm.sample: exact posteriors by enumeration (n = 6), alone and
interleaved with Gibbs sweeps and hyperparameter steps; adaptation of the informed anchor
proposals during tuning only; sampler statistics; parallel chains; clear errors."""

import numpy as np
import pymc as pm
import pytest

import pymc_partitions as pmp
from enumeration import check_against, exact_posterior
from models import gamma_mixed_log_eppf
from pymc_partitions.pymc.compat import posterior_dataset
from test_pymc_sampling import SAMPLE, _scaled, add_likelihood, likelihood_only

N = 6


def partitions_and_k(idata):
    z = posterior_dataset(idata)["z"].values.reshape(-1, N)
    return z, z.max(axis=1) + 1


def check(model, prior, idata):
    like = likelihood_only(model)
    parts, exact = exact_posterior(N, lambda p: like(p) + prior.log_eppf(p))
    _, wrong = exact_posterior(N, lambda p: like(p) + type(prior)(**_scaled(prior)).log_eppf(p))
    zs, k = partitions_and_k(idata)
    check_against(parts, exact, zs, [k], wrong=wrong)


CASES = [
    ("pgsm-crp-diag", pmp.CRP(1.2), "diag", lambda z: [pmp.PGSM([z], num_particles=5)]),
    ("pgsm-plain-py-niw", pmp.PitmanYor(0.5, 0.3), "niw", lambda z: [pmp.PGSM([z], num_particles=5, annealed=False)]),
    ("pgsm-3-anchors-fd-bb", pmp.FiniteDirichlet(0.7, 3), "bb",
     lambda z: [pmp.PGSM([z], num_particles=5, num_anchors=3)]),
    ("gibbs+pgsm-fd-diag", pmp.FiniteDirichlet(0.7, 3), "diag",
     lambda z: [pmp.CollapsedGibbs([z]), pmp.PGSM([z], num_particles=4, moves=2)]),
    ("gibbs+pgsm-cluster-crp-bb", pmp.CRP(1.0), "bb",
     lambda z: [pmp.CollapsedGibbs([z]), pmp.PGSM([z], num_particles=4, anchor_proposal="cluster")]),
    ("gibbs+pgsm-threshold-py-diag", pmp.PitmanYor(1.0, 0.4), "diag",
     lambda z: [pmp.CollapsedGibbs([z]), pmp.PGSM([z], num_particles=4, anchor_proposal="threshold")]),
    ("sams-crp-diag", pmp.CRP(1.2), "diag", lambda z: [pmp.SAMS([z], moves=2)]),
    ("gibbs+sams-py-bb", pmp.PitmanYor(0.5, 0.3), "bb", lambda z: [pmp.CollapsedGibbs([z]), pmp.SAMS([z])]),
]


@pytest.mark.parametrize("name,prior,family,steps", CASES, ids=[c[0] for c in CASES])
def test_split_merge_steps_match_enumeration(name, prior, family, steps):
    with pm.Model() as model:
        z = pmp.Partition("z", prior, n=N)
        add_likelihood(family, z, N)
        idata = pm.sample(draws=8000, step=steps(z), random_seed=3, initvals={"z": np.zeros(N, int)}, **SAMPLE)
    check(model, prior, idata)


def test_pgsm_with_a_random_concentration_matches_enumeration():
    """alpha moves between PGSM moves (EscobarWest): the kernel follows the current prior."""
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 2.0, 1.0)
        z = pmp.Partition("z", pmp.CRP(alpha), n=N)
        add_likelihood("diag", z, N)
        idata = pm.sample(draws=8000, step=[pmp.PGSM([z], num_particles=5), pmp.EscobarWest([alpha])],
                          random_seed=4, **SAMPLE)
    like = likelihood_only(model)
    parts, exact = exact_posterior(N, lambda p: like(p) + gamma_mixed_log_eppf(pmp.CRP, 2.0, 1.0)(p))
    zs, k = partitions_and_k(idata)
    check_against(parts, exact, zs, [k, posterior_dataset(idata)["alpha"].values.ravel()])


def two_groups(n=40):
    rng = np.random.default_rng(0)
    return np.r_[rng.normal(size=n // 2), rng.normal(size=n // 2) + 8.0]


def test_pgsm_splits_one_block_and_records_its_moves():
    """PGSM alone, from one block holding two groups 8 sd apart, splits it; the statistics agree
    with each other."""
    y = two_groups()
    n = len(y)
    with pm.Model():
        z = pmp.Partition("z", pmp.CRP(0.1), n=n)
        pmp.NormalNormal("y", partition=z, mu0=4.0, sigma0=10.0, sigma=1.0, observed=y)
        mixed = pm.sample(step=[pmp.PGSM([z])], draws=30, tune=0, chains=1, progressbar=False,
                          compute_convergence_checks=False, random_seed=2, initvals={"z": np.zeros(n, int)})
    stats = posterior_dataset(mixed, "sample_stats")
    z = posterior_dataset(mixed)["z"].values[0]
    assert np.array_equal(z[-1], np.repeat([0, 1], n // 2)) and stats["pgsm_splits"].values.sum() >= 1
    for name in ("pgsm_merges", "pgsm_changes", "pgsm_resamplings", "pgsm_closure_size", "pgsm_ess",
                 "pgsm_early_exit", "pgsm_size_before_0", "pgsm_size_before_1", "pgsm_size_after_0",
                 "pgsm_size_after_1"):
        assert name in stats
    s = {k: stats[k].values.ravel() for k in stats.data_vars}
    assert np.all(s["pgsm_changes"] >= s["pgsm_splits"] + s["pgsm_merges"])
    for when in ("before", "after"):
        assert np.array_equal(s[f"pgsm_size_{when}_0"] + s[f"pgsm_size_{when}_1"], s["pgsm_closure_size"])
    assert np.all((0 < s["pgsm_ess"]) & (s["pgsm_ess"] <= 1 + 1e-12))
    first_split = np.argmax(s["pgsm_splits"] > 0)
    assert s["pgsm_size_before_1"][first_split] == 0 and s["pgsm_size_after_1"][first_split] > 0


def test_informed_anchors_adapt_during_tuning_only():
    y = two_groups(30)
    with pm.Model():
        z = pmp.Partition("z", pmp.CRP(1.0), n=30)
        pmp.NormalNormal("y", partition=z, mu0=4.0, sigma0=10.0, sigma=1.0, observed=y)
        step = pmp.PGSM([z], anchor_proposal="cluster")
        pm.sample(draws=20, tune=15, chains=1, step=[pmp.CollapsedGibbs([z]), step], progressbar=False,
                  compute_convergence_checks=False, random_seed=1, initvals={"z": np.zeros(30, int)})
        assert not step.kernel.adapting and step.kernel.adapted == 15 and step.kernel.record >= 2
        capped = pmp.PGSM([z], anchor_proposal="threshold", adapt_iterations=3)
        pm.sample(draws=5, tune=10, chains=1, step=[capped], progressbar=False, compute_convergence_checks=False,
                  random_seed=1)
        assert capped.kernel.adapted == 3


def test_parallel_chains_are_reproducible():
    y = two_groups(30)
    kw = dict(draws=40, tune=10, chains=2, cores=2, progressbar=False, compute_convergence_checks=False)
    with pm.Model():
        z = pmp.Partition("z", pmp.CRP(1.0), n=30)
        pmp.NormalNormal("y", partition=z, mu0=4.0, sigma0=10.0, sigma=1.0, observed=y)
        runs = [pm.sample(step=[pmp.CollapsedGibbs([z]), pmp.PGSM([z], anchor_proposal="cluster"), pmp.SAMS([z])],
                          random_seed=9, **kw) for _ in range(2)]
    a, b = (posterior_dataset(r)["z"].values for r in runs)
    assert np.array_equal(a, b) and not np.array_equal(a[0], a[1])


@pytest.mark.parametrize("kwargs,match", [
    (dict(num_particles=1), "num_particles"), (dict(resample_threshold=2.0), "resample_threshold"),
    (dict(anchor_proposal="nearest"), "anchor_proposal"), (dict(anchor_proposal="cluster", num_anchors=3), "two"),
    (dict(moves=0), "moves"), (dict(moves=1.5), "moves"), (dict(adapt_iterations=-1), "adapt_iterations"),
])
def test_bad_settings_are_refused(kwargs, match):
    with pm.Model():
        z = pmp.Partition("z", pmp.CRP(1.0), n=5)
        pmp.NormalNormal("y", partition=z, sigma0=2.0, sigma=1.0, observed=np.arange(5.0))
        with pytest.raises(ValueError, match=match):
            pmp.PGSM([z], **kwargs)
        with pytest.raises(ValueError, match="moves"):
            pmp.SAMS([z], moves=0)
