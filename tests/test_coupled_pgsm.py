"""Coupled Gibbs sweeps with CRN-coupled PGSM moves (GibbsPGSM): the coupling contract, each
chain's exact posterior (enumeration), and unbiased estimates at n = 7."""

import numpy as np
import pytest

from enumeration import check_against, exact_posterior
from models import PRIORS, pack
from pymc_partitions.coupling.functions import largest_proportion, n_clusters
from pymc_partitions.coupling.parallel import UnbiasedJob
from pymc_partitions.coupling.split_merge import GibbsPGSM, pgsm_settings
from pymc_partitions.coupling.sweep import GibbsSweeps
from pymc_partitions.partition import mirkin_distance
from pymc_partitions.priors import CRP, FiniteDirichlet, PitmanYor
from pymc_partitions.samplers.gibbs import log_joint
from pymc_partitions.samplers.pgsm import PGSMKernel
from test_unbiased import check_estimates_match_enumeration


def kernel(prior_name, family, n, coupling="ot", eps=0.0, **pgsm):
    prior = PRIORS[prior_name]
    fam = pack(family, n)
    return GibbsPGSM(GibbsSweeps(fam, prior.code, prior.kernel_params(), coupling, eps), **pgsm)


def relabel(labels, rng):
    """The same partition with its blocks numbered in a random order (another slot layout)."""
    return rng.permutation(labels.max() + 1)[labels]


@pytest.mark.parametrize("coupling", ["ot", "maximal", "crn", "aligned"])
def test_equal_partitions_stay_equal_and_the_moves_are_deterministic(coupling):
    n = 40
    kern = kernel("crp", "diag", n, coupling, moves=3, num_particles=8)
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 4, n)
    x, y = kern.start(labels), kern.start(relabel(labels, rng))
    inter = kern.intersections(x, y)
    changed = 0
    for _ in range(40):
        r = kern.random_numbers(rng)
        before = x.labels()
        after_gibbs = kern.start(before)
        kern.gibbs.sweep(after_gibbs, r[0])
        inter = kern.coupled_sweep(x, y, inter, r)
        assert np.array_equal(x.labels(), y.labels())
        assert np.array_equal(inter, kern.intersections(x, y))
        # same states + same randomness -> same outputs (the states are rebuilt from canonical labels)
        x2, y2 = kern.start(before), kern.start(before)
        kern.coupled_sweep(x2, y2, kern.intersections(x2, y2), r)
        assert np.array_equal(x2.labels(), x.labels()) and np.array_equal(y2.labels(), x.labels())
        # the PGSM moves do change states (the test has power)
        changed += not np.array_equal(after_gibbs.labels(), x.labels())
    assert changed >= 5, "the PGSM moves never changed the state: the test has no power"


def test_single_chain_iteration_is_the_gibbs_sweep_then_the_moves():
    """What each chain of a coupled pair does, and what a chain advanced alone does: the Gibbs
    sweep with the iteration's first random numbers, then the PGSM moves with the rest."""
    n = 30
    kern = kernel("pitman_yor", "multi", n, "crn", moves=2, num_particles=6, annealed=False)
    prior = PRIORS["pitman_yor"]
    moves = PGSMKernel(pack("multi", n), prior.code, prior.kernel_params(), 6, annealed=False)
    rng = np.random.default_rng(1)
    labels = rng.integers(0, 3, n)
    for _ in range(20):
        r = kern.random_numbers(rng)
        alone, x, y = kern.start(labels), kern.start(labels), kern.start(labels)
        kern.sweep(alone, r)
        kern.coupled_sweep(x, y, kern.intersections(x, y), r)
        by_hand = kern.start(labels)
        kern.gibbs.sweep(by_hand, r[0])
        expected = by_hand.labels()
        for move in r[1]:
            expected = moves.move(expected, move)[0]
        for state in (alone, x, y):
            assert np.array_equal(state.labels(), expected)
        labels = expected


def test_pairs_meet_and_stay_met_and_the_table_tracks_them():
    n = 60
    kern = kernel("crp", "diag", n, "ot", moves=2, num_particles=10)
    rng = np.random.default_rng(2)
    x, y = kern.start(np.zeros(n, np.int64)), kern.start(np.arange(n))
    inter = kern.intersections(x, y)
    met_at = None
    for t in range(300):
        inter = kern.coupled_sweep(x, y, inter, kern.random_numbers(rng))
        assert kern.distance(x, y, inter) == mirkin_distance(x.labels(), y.labels())
        equal = np.array_equal(x.labels(), y.labels())
        if met_at is None and equal:
            met_at = t
        assert met_at is None or equal, f"met at {met_at}, apart again at {t}"
    assert met_at is not None and met_at < 250


def perturbed(prior):
    """A visibly different prior of the same kind: the posterior a wrong kernel might target."""
    if isinstance(prior, FiniteDirichlet):
        return FiniteDirichlet(prior.alpha * 4, prior.k + 1)
    if isinstance(prior, PitmanYor):
        return PitmanYor(prior.alpha * 4, prior.discount)
    return CRP(prior.alpha * 4)


@pytest.mark.parametrize("prior_name,family,coupling,pgsm", [
    ("crp", "niw", "ot", dict(moves=3, num_particles=8)),
    ("finite_dirichlet", "bb", "maximal", dict(moves=2, num_particles=5, num_anchors=3, annealed=False)),
])
def test_each_coupled_chain_keeps_the_exact_posterior(prior_name, family, coupling, pgsm):
    """eps > 0 splits met chains now and then, so both the met and the apart regimes are sampled."""
    n = 6
    prior = PRIORS[prior_name]
    kern = kernel(prior_name, family, n, coupling, eps=0.2, **pgsm)
    fam = kern.gibbs.pack
    parts, exact = exact_posterior(n, lambda p: log_joint(p, fam, prior.code, prior.kernel_params()))
    w = perturbed(prior)
    _, wrong = exact_posterior(n, lambda p: log_joint(p, fam, w.code, w.kernel_params()))
    rng = np.random.default_rng(5)
    x, y = kern.start(np.zeros(n, np.int64)), kern.start(np.arange(n))
    inter = kern.intersections(x, y)
    steps = 8000
    xs = np.empty((steps, n), np.int64)
    ys = np.empty((steps, n), np.int64)
    met = 0
    for t in range(steps):
        inter = kern.coupled_sweep(x, y, inter, kern.random_numbers(rng))
        xs[t], ys[t] = x.labels(), y.labels()
        met += np.array_equal(xs[t], ys[t])
    assert 0.05 * steps < met < 0.95 * steps, f"met in {met} of {steps} iterations: one regime is not tested"
    for samples in (xs, ys):
        s = samples[100:]
        check_against(parts, exact, s, [s.max(axis=1), s[:, 0] == s[:, -1]], wrong=wrong)


def both(labels):
    return np.array([n_clusters(labels), largest_proportion(labels)])


@pytest.mark.parametrize("coupling,lag,k,m,prior_name,family,pgsm", [
    ("ot", 1, 1, 3, "crp", "diag", dict(moves=1)),
    ("ot", 2, 1, 4, "pitman_yor", "niw", dict(moves=3, num_particles=5, annealed=False)),
    ("maximal", 1, 1, 1, "finite_dirichlet", "bb", dict(moves=2, num_anchors=3, resample_threshold=0.8)),
])
def test_average_of_estimates_matches_the_enumerated_expectation(coupling, lag, k, m, prior_name, family, pgsm):
    n = 7
    prior = PRIORS[prior_name]
    fam = pack(family, n)
    job = UnbiasedJob(fam, prior.code, prior.kernel_params(), both, k, m, lag, 1000, coupling, 0.0, "singletons",
                      pgsm=pgsm_settings(pgsm))
    check_estimates_match_enumeration(job, n)


def test_settings_and_clear_errors():
    assert pgsm_settings(None) is None
    assert pgsm_settings(4) == dict(moves=4, num_particles=20, resample_threshold=0.5, num_anchors=2, annealed=True,
                                    anchor_proposal="uniform")
    assert pgsm_settings({"num_particles": 7})["moves"] == 1
    with pytest.raises(ValueError, match="anchor_proposal='uniform'"):
        pgsm_settings({"anchor_proposal": "cluster"})
    with pytest.raises(ValueError, match="anchor_proposal='uniform'"):
        kernel("crp", "diag", 6, anchor_proposal="threshold")
    with pytest.raises(ValueError, match="unknown PGSM setting"):
        pgsm_settings({"particles": 10})
    with pytest.raises(ValueError, match="moves must be an integer >= 1"):
        pgsm_settings(0)
    with pytest.raises(ValueError, match="num_particles must be an integer >= 2"):
        pgsm_settings({"num_particles": 1})
    with pytest.raises(ValueError, match="num_particles must be an integer, got 1.5"):
        pgsm_settings({"num_particles": 1.5})
    with pytest.raises(ValueError, match="exceeds the number of items"):
        pgsm_settings({"num_anchors": 7}, n=6)
    with pytest.raises(ValueError, match="resample_threshold"):
        pgsm_settings({"resample_threshold": 2.0})
    with pytest.raises(TypeError, match="annealed must be True or False"):
        pgsm_settings({"annealed": "yes"})
    with pytest.raises(TypeError, match="pgsm must be None"):
        pgsm_settings(True)
    with pytest.raises(TypeError, match="pgsm must be None"):
        pgsm_settings("5")
