"""Coupled Gibbs sweeps: each chain is exactly the single-chain Gibbs kernel (checked by
enumeration), identical states stay identical, and the intersection bookkeeping is right."""

import itertools

import numpy as np
import pytest

from enumeration import check_against, encode, exact_posterior, frequencies, total_variation, tv_tolerance
from models import PRIORS, pack
from pymc_partitions.coupling.sweep import GibbsSweeps
from pymc_partitions.partition import canonicalize, mirkin_distance
from pymc_partitions.samplers.gibbs import gibbs_sweeps, log_joint

COUPLINGS = ["ot", "maximal", "crn", "independent", "aligned"]


def exact_one_sweep(parts, post, x0, n):
    """Law of the partition after one random-scan Gibbs sweep from ``x0``: the average over all
    visiting orders of the product of the single-site Gibbs kernels."""
    keys = encode(parts)
    index = {k: j for j, k in enumerate(keys)}
    groups = []  # for each item: the group id of every partition (its partition of the others)
    for i in range(n):
        rest = np.array([encode(canonicalize(np.delete(p, i)))[0] for p in parts])
        _, g = np.unique(rest, return_inverse=True)
        groups.append(g)
    start = np.zeros(len(parts))
    start[index[encode(canonicalize(x0))[0]]] = 1.0
    out = np.zeros(len(parts))
    orders = list(itertools.permutations(range(n)))
    for order in orders:
        v = start
        for i in order:
            g = groups[i]
            mass = np.bincount(g, weights=v)
            norm = np.bincount(g, weights=post)
            v = mass[g] * post / norm[g]
        out += v
    return out / len(orders)


@pytest.mark.parametrize("coupling", COUPLINGS)
def test_one_coupled_sweep_has_the_exact_gibbs_transition(coupling):
    n = 5
    prior = PRIORS["crp"]
    fam = pack("diag", n)
    parts, post = exact_posterior(n, lambda p: log_joint(p, fam, prior.code, prior.kernel_params()))
    x0 = np.zeros(n, np.int64)
    y0 = np.array([0, 1, 0, 2, 1])
    exact_x = exact_one_sweep(parts, post, x0, n)
    exact_y = exact_one_sweep(parts, post, y0, n)
    kernel = GibbsSweeps(fam, prior.code, prior.kernel_params(), coupling=coupling)
    rng = np.random.default_rng(3)
    reps = 20000
    xs = np.empty((reps, n), np.int64)
    ys = np.empty((reps, n), np.int64)
    for r in range(reps):
        x, y = kernel.start(x0), kernel.start(y0)
        kernel.coupled_sweep(x, y, kernel.intersections(x, y), kernel.random_numbers(rng))
        xs[r], ys[r] = x.labels(), y.labels()
    for samples, exact, start in [(xs, exact_x, y0), (ys, exact_y, x0)]:
        freq = frequencies(parts, samples)
        tol = tv_tolerance(exact, reps, factor=2.0)
        assert total_variation(freq, exact) < tol
        # power: the law after one sweep from the *other* start is visibly different
        other = exact_one_sweep(parts, post, start, n)
        assert total_variation(freq, other) > tol


@pytest.mark.parametrize("coupling", COUPLINGS)
@pytest.mark.parametrize("prior_name,family", [("crp", "diag"), ("pitman_yor", "niw"), ("finite_dirichlet", "bb")])
def test_coupled_chains_keep_the_exact_posterior(coupling, prior_name, family):
    n = 6
    prior = PRIORS[prior_name]
    fam = pack(family, n)
    parts, post = exact_posterior(n, lambda p: log_joint(p, fam, prior.code, prior.kernel_params()))
    kernel = GibbsSweeps(fam, prior.code, prior.kernel_params(), coupling=coupling, eps=0.01)
    rng = np.random.default_rng(11)
    x, y = kernel.start(np.zeros(n)), kernel.start(np.arange(n))
    inter = kernel.intersections(x, y)
    steps = 12000
    xs = np.empty((steps, n), np.int64)
    ys = np.empty((steps, n), np.int64)
    for t in range(steps):
        inter = kernel.coupled_sweep(x, y, inter, kernel.random_numbers(rng))
        xs[t], ys[t] = x.labels(), y.labels()
    for samples in (xs, ys):
        s = samples[200:]
        check_against(parts, post, s, [s.max(axis=1), s[:, 0] == s[:, -1]])


def test_single_sweep_equals_the_gibbs_kernel_and_crn_on_equal_states_is_faithful():
    """The persistent-state sweep, the one-call kernel and a CRN-coupled sweep of two copies of
    one state give the same chain for the same random numbers (the inline single-chain visit and
    the piecewise coupled visit agree)."""
    n = 40
    prior = PRIORS["pitman_yor"]
    fam = pack("multi", n)
    kernel = GibbsSweeps(fam, prior.code, prior.kernel_params(), coupling="crn")
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 3, n)
    for _ in range(30):
        # a fresh start puts blocks in canonical order, as the one-call kernel does
        x, y, z = kernel.start(labels), kernel.start(labels), kernel.start(labels)
        order, uniforms = kernel.random_numbers(rng)
        labels, _ = gibbs_sweeps(labels, fam, prior.code, prior.kernel_params(), order[None], uniforms[None, :, 1])
        kernel.sweep(x, (order, uniforms))
        kernel.coupled_sweep(y, z, kernel.intersections(y, z), (order, uniforms))
        assert np.array_equal(x.labels(), labels)
        assert np.array_equal(y.labels(), labels)
        assert np.array_equal(z.labels(), labels)


@pytest.mark.parametrize("coupling,relabel", [("ot", False), ("maximal", False), ("ot", True), ("aligned", False),
                                              ("aligned", True)])
def test_equal_partitions_stay_equal(coupling, relabel):
    """Faithfulness for the couplings that match blocks: equal partitions (with different slot
    layouts too for OT and the aligned coupling, which pair blocks by content) remain equal."""
    n = 60
    prior = PRIORS["crp"]
    fam = pack("diag", n)
    kernel = GibbsSweeps(fam, prior.code, prior.kernel_params(), coupling=coupling)
    rng = np.random.default_rng(1)
    labels = rng.integers(0, 4, n)
    x = kernel.start(labels)
    if relabel:  # (start() numbers blocks canonically: a chain run alone for a while numbers them otherwise)
        for _ in range(20):
            kernel.sweep(x, kernel.random_numbers(rng))
        assert not np.array_equal(x.slot_of, canonicalize(x.slot_of))
    y = kernel.start(x.labels())
    inter = kernel.intersections(x, y)
    for _ in range(50):
        inter = kernel.coupled_sweep(x, y, inter, kernel.random_numbers(rng))
        assert np.array_equal(x.labels(), y.labels())


def test_intersection_table_and_distance_track_the_partitions():
    n = 80
    prior = PRIORS["crp"]
    fam = pack("diag", n)
    kernel = GibbsSweeps(fam, prior.code, prior.kernel_params(), coupling="ot", eps=0.2)
    rng = np.random.default_rng(2)
    x, y = kernel.start(np.zeros(n)), kernel.start(np.arange(n))  # y's table must grow
    inter = kernel.intersections(x, y)
    for _ in range(20):
        inter = kernel.coupled_sweep(x, y, inter, kernel.random_numbers(rng))
        assert np.array_equal(inter, kernel.intersections(x, y))
        assert kernel.distance(x, y, inter) == mirkin_distance(x.labels(), y.labels())


def test_bad_settings_are_clear_errors():
    fam = pack("diag", 5)
    with pytest.raises(ValueError, match="coupling must be one of"):
        GibbsSweeps(fam, 0, [1.0, 0.0, 0.0], coupling="optimal")
    with pytest.raises(ValueError, match=r"eps must be a finite number >= 0.0 and <= 1.0"):
        GibbsSweeps(fam, 0, [1.0, 0.0, 0.0], eps=2.0)
    with pytest.raises(ValueError, match="labels must have length 5, got 4"):
        GibbsSweeps(fam, 0, [1.0, 0.0, 0.0]).start(np.zeros(4))


# -- network likelihoods (BetaBernoulliNetwork, kernels.NETWORK): block-pair terms in both chains


@pytest.mark.parametrize("coupling", ["ot", "maximal", "crn", "aligned"])
@pytest.mark.parametrize("prior_name,family,n", [("crp", "net", 6), ("pitman_yor", "netdir", 6),
                                                 ("finite_dirichlet", "netmix", 7)])
def test_coupled_network_chains_keep_the_exact_posterior(coupling, prior_name, family, n):
    """Each chain of a coupled network run, on its own, has the exact posterior (enumeration of
    all partitions of n nodes; the log joint is the single-chain kernel's, itself checked against
    scipy in test_network_enumeration.py), with a power check against the blockmodel without its
    within-block pairs."""
    from test_network_enumeration import wrong_log_joint  # noqa: PLC0415

    prior = PRIORS[prior_name]
    fam = pack(family, n)
    parts, post = exact_posterior(n, lambda p: log_joint(p, fam, prior.code, prior.kernel_params()))
    _, wrong = exact_posterior(n, wrong_log_joint(prior, family, n))
    kernel = GibbsSweeps(fam, prior.code, prior.kernel_params(), coupling=coupling, eps=0.01)
    assert kernel.network
    rng = np.random.default_rng(5)
    x, y = kernel.start(np.zeros(n)), kernel.start(np.arange(n))
    inter = kernel.intersections(x, y)
    steps = 8000
    xs = np.empty((steps, n), np.int64)
    ys = np.empty((steps, n), np.int64)
    for t in range(steps):
        inter = kernel.coupled_sweep(x, y, inter, kernel.random_numbers(rng))
        xs[t], ys[t] = x.labels(), y.labels()
    for samples in (xs, ys):
        s = samples[200:]
        freq = frequencies(parts, s)
        check_against(parts, post, s, [s.max(axis=1), s[:, 0] == s[:, 1]])
        # power: the wrong likelihood's posterior is far outside the tolerance
        assert total_variation(freq, wrong) > 3 * total_variation(freq, post)


@pytest.mark.parametrize("family", ["net", "netdir", "netmix"])
def test_network_single_and_coupled_sweeps_equal_the_network_gibbs_kernel(family):
    """Same random numbers, same chain: the one-call network kernel (gibbs_sweeps), the
    persistent-state sweep and a CRN-coupled sweep of two copies of a state; the edge-count
    matrices stay equal to a rebuild from the labels, also when the slot tables grow."""
    from pymc_partitions.samplers.network import net_build  # noqa: PLC0415

    n = 30
    prior = PRIORS["crp"]
    fam = pack(family, n)
    kernel = GibbsSweeps(fam, prior.code, [3.0, 0.0, 0.0], coupling="crn")
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 3, n)
    for _ in range(20):
        x, y, z = kernel.start(labels), kernel.start(labels), kernel.start(labels)
        order, uniforms = kernel.random_numbers(rng)
        labels, _ = gibbs_sweeps(labels, fam, prior.code, [3.0, 0.0, 0.0], order[None], uniforms[None, :, 1])
        kernel.sweep(x, (order, uniforms))
        kernel.coupled_sweep(y, z, kernel.intersections(y, z), (order, uniforms))
        for state in (x, y, z):
            assert np.array_equal(state.labels(), labels)
            fresh = net_build(state.slot_of, state.sizes.shape[0], kernel._net_ho, fam.hyper, n)
            assert np.array_equal(state.E, fresh)
    # growth: start from one block with a large alpha, chains open many blocks in one sweep
    x, y = kernel.start(np.zeros(n)), kernel.start(np.arange(n))
    inter = kernel.intersections(x, y)
    for _ in range(5):
        inter = kernel.coupled_sweep(x, y, inter, kernel.random_numbers(rng))
        for state in (x, y):
            fresh = net_build(state.slot_of, state.sizes.shape[0], kernel._net_ho, fam.hyper, n)
            assert np.array_equal(state.E, fresh)
        assert np.array_equal(inter, kernel.intersections(x, y))


@pytest.mark.parametrize("coupling", ["ot", "maximal", "crn", "aligned"])
def test_coupled_network_chains_meet(coupling):
    n = 40
    prior = PRIORS["crp"]
    fam = pack("net", n)
    kernel = GibbsSweeps(fam, prior.code, prior.kernel_params(), coupling=coupling)
    rng = np.random.default_rng(4)
    x, y = kernel.start(np.zeros(n)), kernel.start(np.arange(n))
    inter = kernel.intersections(x, y)
    for t in range(500):
        inter = kernel.coupled_sweep(x, y, inter, kernel.random_numbers(rng))
        if kernel.distance(x, y, inter) == 0:
            break
    assert kernel.distance(x, y, inter) == 0, f"{coupling}: no meeting in 500 sweeps"
    if coupling == "crn":  # (CRN matches blocks by slot order: met chains need not stay together)
        return
    for _ in range(5):  # and they stay together
        inter = kernel.coupled_sweep(x, y, inter, kernel.random_numbers(rng))
        assert np.array_equal(x.labels(), y.labels())
