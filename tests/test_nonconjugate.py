"""Non-conjugate partition mixtures written in plain PyMC (pymc/nonconjugate.py): the step
reproduces the exact posterior of a conjugate model written through the non-conjugate path
(enumeration, every prior kind), the cluster mean's law (KS), pm.sample assigns it, and every
model it cannot sample is refused with a clear error."""

import numpy as np
import pymc as pm
import pytest
from scipy import stats

import pymc_partitions as pmp
from enumeration import check_against, ess, exact_posterior, frequencies, total_variation, tv_tolerance
from pymc_partitions.families import kernels
from pymc_partitions.families.kernels import FamilyPack
from pymc_partitions.pymc.compat import posterior_dataset, setup_chain
from pymc_partitions.samplers.gibbs import log_joint

Y = np.array([-2.1, -1.6, -1.9, 1.8, 2.3, 0.4])
SIGMA0 = 2.0
PRIORS = {"crp": pmp.CRP(1.2), "finite_dirichlet": pmp.FiniteDirichlet(0.7, 3), "pitman_yor": pmp.PitmanYor(0.5, 0.3)}


def exact(prior, sigma0=SIGMA0, y=Y):
    pack = FamilyPack.build([(kernels.DIAG_NORMAL, y[:, None], kernels.diag_normal_hyper([0.0], [sigma0], [1.0], 1))])
    return exact_posterior(len(y), lambda p: log_joint(p, pack, prior.code, prior.kernel_params()))


def normal_model(prior, sigma0=SIGMA0, y=Y):
    n = len(y)
    slots = prior.k if isinstance(prior, pmp.FiniteDirichlet) else n
    with pm.Model() as model:
        z = pmp.Partition("z", prior, n=n)
        mu = pm.Normal("mu", 0.0, sigma0, shape=slots)
        pm.Normal("y", mu=mu[z], sigma=1.0, observed=y)
    return model


def drive(model, draws, seed, burn=300, **kwargs):
    """The step alone, driven by hand: (labels per kept draw, mean of item 0's cluster)."""
    step = pmp.NonConjugateGibbs([model["z"]], model=model, **kwargs)
    setup_chain(step, seed)
    point = model.initial_point(0)
    labels = np.empty((draws, len(Y)), np.int64)
    mean0 = np.empty(draws)
    moved = 0
    for t in range(burn + draws):
        if t == burn:
            step.stop_tuning()
        point, stats = step.step(point)
        moved += stats[0]["splits"] + stats[0]["merges"]
        if t >= burn:
            labels[t - burn] = point["z"]
            mean0[t - burn] = point["mu"][point["z"][0]]
    assert (moved > 0) == bool(step.split_merge)  # the proposals ran and were accepted
    return labels, mean0


@pytest.mark.parametrize("prior_name, split_merge", [("crp", 0), ("finite_dirichlet", 0), ("pitman_yor", 0),
                                                     ("crp", 3), ("finite_dirichlet", 3)])
def test_step_matches_enumeration(prior_name, split_merge):
    """TV at the iid floor (effective draws) against the collapsed NormalNormal's exact posterior;
    with power against the posterior of a base measure three times wider. With and without the
    split-merge proposals (samplers/slot_split_merge.py; alone on the labels in
    tests/test_slot_split_merge.py)."""
    prior = PRIORS[prior_name]
    parts, p = exact(prior)
    _, wrong = exact(prior, sigma0=3 * SIGMA0)
    samples, _ = drive(normal_model(prior), 4000, seed=2, split_merge=split_merge)
    k = samples.max(axis=1).astype(float)
    together = (samples[:, 0] == samples[:, 1]).astype(float)
    tv, tol = check_against(parts, p, samples, [k, together], wrong=wrong)
    assert tv < tol


def test_step_cluster_mean_matches_exact_law_and_wrong_base_is_detected():
    """KS of the mean of item 0's cluster against its exact law (a mixture over partitions of
    conjugate posteriors); the same step on a model with a wrong base measure fails the partition
    check at the same number of draws (power)."""
    prior = PRIORS["crp"]
    parts, p = exact(prior)
    samples, mean0 = drive(normal_model(prior), 3000, seed=4)
    comps = []
    for part, w in zip(parts, p):
        b = part == part[0]
        var = 1.0 / (1.0 / SIGMA0**2 + b.sum())
        comps.append((w, var * Y[b].sum(), np.sqrt(var)))
    cdf = lambda x: sum(w * stats.norm.cdf(x, m, s) for w, m, s in comps)  # noqa: E731
    thin = max(1, int(np.ceil(len(mean0) / ess(mean0))))
    assert stats.kstest(mean0[::thin], cdf).pvalue > 1e-3
    wrong_samples, _ = drive(normal_model(prior, sigma0=3 * SIGMA0), 3000, seed=4)
    k = wrong_samples.max(axis=1).astype(float)
    n_eff = min(len(k), ess(k))
    assert total_variation(frequencies(parts, wrong_samples), p) > tv_tolerance(p, n_eff, 2.0)


def test_pm_sample_assigns_the_step_with_nuts_and_escobar_west_on_the_others():
    """The issue's model, as written, with a shared random nu and a random alpha: pm.sample with
    no step= blocks the partition with its slots (NonConjugateGibbs), NUTS on nu, EscobarWest on alpha."""
    rng = np.random.default_rng(0)
    y = np.r_[rng.normal(-4, 0.7, 15), rng.normal(4, 0.7, 15)]
    n = len(y)
    with pm.Model():
        alpha = pm.Gamma("alpha", 2.0, 2.0)
        z = pmp.Partition("z", pmp.CRP(alpha), n=n)
        mu = pm.Normal("mu", 0.0, 5.0, shape=n)
        sigma = pm.HalfNormal("sigma", 1.0, shape=n)
        nu = pm.Gamma("nu", 4.0, 1.0)
        pm.StudentT("y", nu=nu, mu=mu[z], sigma=sigma[z], observed=y)
        result = pm.sample(draws=150, tune=150, chains=1, random_seed=3, progressbar=False,
                           compute_convergence_checks=False)
    st = posterior_dataset(result, "sample_stats")
    post = posterior_dataset(result)
    assert "slot_accept" in st and "step_size" in st  # NonConjugateGibbs and NUTS both ran
    assert 0.05 < float(st["slot_accept"].mean()) < 0.95
    k = post["z"].values.max(axis=-1) + 1
    assert np.mean(k == 2) > 0.5  # two well-separated groups
    z = post["z"].values[0, -1]
    mus = post["mu"].values[0, -1]
    assert np.all(np.sort(mus[[z[0], z[-1]]]) == pytest.approx([-4, 4], abs=1.0))
    assert float(post["alpha"].std()) > 0 and float(post["nu"].std()) > 0


def test_explicit_steps_win_and_collapsed_steps_refuse_the_model():
    model = normal_model(PRIORS["crp"])
    with model:
        result = pm.sample(draws=20, tune=20, chains=1, random_seed=1, progressbar=False,
                           compute_convergence_checks=False, step=pmp.NonConjugateGibbs([model["z"]], m=1))
    assert "slot_accept" in posterior_dataset(result, "sample_stats")
    for cls in (pmp.CollapsedGibbs, pmp.GibbsSplitMerge, pmp.SAMS):
        with pytest.raises(ValueError, match="NonConjugateGibbs"):
            cls([model["z"]], model=model)
    with model, pytest.raises(ValueError, match="slot variable.*'mu'.*NonConjugateGibbs"):
        pm.sample(draws=5, tune=5, chains=1, progressbar=False, step=pm.Metropolis([model["mu"]]))


def test_step_arguments_are_checked():
    model = normal_model(PRIORS["crp"])
    z = model["z"]
    for kwargs, word in [({"m": 0}, "m"), ({"m": 1.5}, "m"), ({"m": 10**9}, "m"), ({"slot_steps": -1}, "slot_steps"),
                         ({"scale": 0.0}, "scale"), ({"scale": np.inf}, "scale"), ({"scale": "a"}, "scale"),
                         ({"split_merge": -1}, "split_merge"), ({"split_merge": 2.5}, "split_merge"),
                         ({"split_merge": True}, "split_merge"), ({"split_merge": 10**9}, "split_merge"),
                         ({"split_merge": "3"}, "split_merge")]:
        with pytest.raises((ValueError, TypeError), match=word):
            pmp.NonConjugateGibbs([z], model=model, **kwargs)
    with pytest.raises(ValueError, match="one partition"):
        pmp.NonConjugateGibbs([model["mu"]], model=model)


def _refused(build, match):
    with pm.Model() as model:
        build()
    with pytest.raises(ValueError, match=match):
        pmp.NonConjugateGibbs([model["z"]], model=model)
    with model, pytest.raises(ValueError, match=match):  # pm.sample's assignment refuses it the same way
        pm.sample(draws=5, tune=5, chains=1, progressbar=False, compute_convergence_checks=False)


def test_hostile_models_are_refused():
    n = 6

    def wrong_length():
        z = pmp.Partition("z", pmp.CRP(1.0), n=n)
        mu = pm.Normal("mu", 0, 1, shape=n - 1)
        pm.Normal("y", mu[z], 1.0, observed=Y)
    _refused(wrong_length, r"'mu'.*first axis.*n=6")

    def wrong_length_fd():
        z = pmp.Partition("z", pmp.FiniteDirichlet(1.0, 3), n=n)
        mu = pm.Normal("mu", 0, 1, shape=n)
        pm.Normal("y", mu[z], 1.0, observed=Y)
    _refused(wrong_length_fd, r"'mu'.*k=3")

    def no_slots():
        z = pmp.Partition("z", pmp.CRP(1.0), n=n)
        pm.Normal("y", z * 1.0, 1.0, observed=Y)
    _refused(no_slots, r"'y'.*other than as the index")

    def fixed_means_indexed():
        z = pmp.Partition("z", pmp.CRP(1.0), n=n)
        pm.Normal("y", pm.math.constant(np.zeros(n))[z], 1.0, observed=Y)
    _refused(fixed_means_indexed, r"'y'.*indexes no free variable")

    def slot_used_directly():
        z = pmp.Partition("z", pmp.CRP(1.0), n=n)
        mu = pm.Normal("mu", 0, 1, shape=n)
        pm.Normal("y", mu[z] + mu.sum(), 1.0, observed=Y)
    _refused(slot_used_directly, r"'mu'.*both indexed")

    def slot_depends_on_z():
        z = pmp.Partition("z", pmp.CRP(1.0), n=n)
        mu = pm.Normal("mu", z.sum() * 0.0, 1, shape=n)
        pm.Normal("y", mu[z], 1.0, observed=Y)
    _refused(slot_depends_on_z, r"'mu'.*depends on the partition")

    def not_identical():
        z = pmp.Partition("z", pmp.CRP(1.0), n=n)
        mu = pm.Normal("mu", np.arange(n, dtype=float), 1, shape=n)
        pm.Normal("y", mu[z], 1.0, observed=Y)
    _refused(not_identical, r"'mu'.*varies along its slot axis")

    def nan_observed():
        z = pmp.Partition("z", pmp.CRP(1.0), n=n)
        mu = pm.Normal("mu", 0, 1, shape=n)
        pm.Normal("y", mu[z], 1.0, observed=np.r_[Y[:-1], np.nan])
    _refused(nan_observed, r"NaN")

    def mixed_with_collapsed():
        z = pmp.Partition("z", pmp.CRP(1.0), n=n)
        mu = pm.Normal("mu", 0, 1, shape=n)
        pm.Normal("y", mu[z], 1.0, observed=Y)
        pmp.NormalNormal("w", partition=z, mu0=0.0, sigma0=1.0, sigma=1.0, observed=Y)
    _refused(mixed_with_collapsed, r"both collapsed likelihoods")

    def potential_on_z():
        z = pmp.Partition("z", pmp.CRP(1.0), n=n)
        mu = pm.Normal("mu", 0, 1, shape=n)
        pm.Normal("y", mu[z], 1.0, observed=Y)
        pm.Potential("pot", z.sum() * 0.0)
    _refused(potential_on_z, r"'pot' depends on the partition")

    def other_use_of_slots():
        z = pmp.Partition("z", pmp.CRP(1.0), n=n)
        mu = pm.Normal("mu", 0, 1, shape=n)
        pm.Normal("y", mu[z], 1.0, observed=Y)
        pm.Normal("w", mu.sum(), 1.0, observed=1.0)
    _refused(other_use_of_slots, r"'w' depends on the slot variable")

    def not_elementwise():
        z = pmp.Partition("z", pmp.CRP(1.0), n=n)
        mu = pm.Normal("mu", 0, 1, shape=n)
        pm.Normal("y", mu[z][::-1].cumsum(), 1.0, observed=Y)
    _refused(not_elementwise, r"not elementwise")

    def scalar_slot():
        z = pmp.Partition("z", pmp.CRP(1.0), n=n)
        mu = pm.Normal("mu", 0, 1)
        pm.Normal("y", pm.math.stack([mu] * n)[z], 1.0, observed=Y)
    _refused(scalar_slot, r"'mu'.*scalar")


def test_vector_slots_and_a_hierarchical_base_measure():
    """Slots of shape (S, 2) with an MvNormal-free diagonal likelihood, and a base measure whose mean
    is itself a free variable (sampled by NUTS): the step runs and keeps every slot finite."""
    rng = np.random.default_rng(1)
    y = np.r_[rng.normal(-3, 0.5, (8, 2)), rng.normal(3, 0.5, (8, 2))]
    n = len(y)
    with pm.Model() as model:
        m0 = pm.Normal("m0", 0.0, 2.0)
        z = pmp.Partition("z", pmp.FiniteDirichlet(1.0, 5), n=n)
        mu = pm.Normal("mu", m0, 3.0, shape=(5, 2))
        pm.Normal("y", mu[z], 0.5, observed=y)
        result = pm.sample(draws=60, tune=60, chains=1, random_seed=2, progressbar=False,
                           compute_convergence_checks=False)
    post = posterior_dataset(result)
    assert np.isfinite(post["mu"].values).all()
    for z in post["z"].values[0, 30:]:  # the two groups, 12 sds apart, never share a cluster
        assert not set(z[:8]) & set(z[8:])
