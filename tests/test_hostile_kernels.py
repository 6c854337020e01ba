"""Hostile inputs to the compiled kernels: refused with a clear message, never an out-of-bounds
read or write, never a silent arbitrary answer.

Regression tests of the hardening issue: huge data (y * 1e200), sigma = 1e-200 and sigma0 = 1e200
used to give K = 1 with log_joint 0 or NaN; NaN data and all-impossible log weights made the draws
walk below index 0. Each test checks the message, so that it fails without the fix (a crash, a
silent answer or another error). ``tests/test_boundscheck.py`` runs this file with
``NUMBA_BOUNDSCHECK=1``.
"""

import math

import numpy as np
import pytest

from pymc_partitions._numeric import NoPositiveOption, draw_log_weights, inverse_cdf, relative_weights
from pymc_partitions.colouring import colouring_target, greedy_colouring, is_proper
from pymc_partitions.coupling.draws import draw_maximal, probabilities
from pymc_partitions.coupling.split_merge import GibbsPGSM, pgsm_settings
from pymc_partitions.coupling.sweep import GibbsSweeps
from pymc_partitions.coupling.transport import make_workspace, transport_plan_info, transport_plan_pot
from pymc_partitions.families import kernels as K
from pymc_partitions.families.kernels import FamilyPack, check_representable
from pymc_partitions.families.transforms import whiten_full_normal
from pymc_partitions.partition import bell_number, canonicalize, canonicalize_into, enumerate_partitions
from pymc_partitions.partition import mirkin_distance
from pymc_partitions.priors import CRP, UniformLabels
from pymc_partitions.samplers.concentration import escobar_west, escobar_west_log
from pymc_partitions.samplers.gibbs import GibbsKernel, gibbs_sweeps, log_joint
from pymc_partitions.samplers.pgsm import (InformedAnchors, PGSMKernel, _exp_weights, conditional_path, pgsm_move,
                                           pgsm_random_numbers)
from pymc_partitions.samplers.gibbs_sams import GibbsSAMSKernel
from pymc_partitions.samplers.sams import SAMSKernel, sams_move

PRIOR = CRP(1.0)
N = 12


def data(n=N, dim=2, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, dim)) + 3.0 * (np.arange(n) % 2)[:, None]


def diag_part(y, mu0=0.0, sigma0=3.0, sigma=1.0):
    return (K.DIAG_NORMAL, y, K.diag_normal_hyper(mu0, sigma0, sigma, y.shape[1]))


def diag_pack(n=N):
    return FamilyPack.build([diag_part(data(n))])


def sweep_randomness(n, sweeps=2, seed=0):
    rng = np.random.default_rng(seed)
    return np.stack([rng.permutation(n) for _ in range(sweeps)]), rng.random((sweeps, n))


def run_gibbs(pack, labels=None):
    n = pack.data.shape[0]
    labels = np.zeros(n, np.int64) if labels is None else labels
    return gibbs_sweeps(labels, pack, PRIOR.code, PRIOR.kernel_params(), *sweep_randomness(n))


# ----------------------------------------------------------------------------- unrepresentable inputs


@pytest.mark.parametrize("part, match", [
    (diag_part(data() * 1e200), r"DIAG_NORMAL: \(2 \(sum of \|y\| .*exceeds 1e\+300.*rescale the data"),
    (diag_part(data(), sigma=1e-200), r"sigma\^2 = 0 is not a positive number above 1e-300.*increase sigma"),
    (diag_part(data(), sigma0=1e200), r"sigma0\^2 = inf exceeds 1e\+300.*decrease sigma0"),
    (diag_part(data() * 1e120, sigma=1e-100), r"/ sigma\^2 over the dimensions = .* exceeds.*increase sigma"),
    (diag_part(data(), sigma0=1e149), r"sigma0\^2 \(sum of \|y\| .*decrease sigma0"),
    (diag_part(data() * np.nan), "DIAG_NORMAL: data contain NaN or infinite values"),
    ((K.NIW, data(), K.niw_hyper(0.0, 1.0, 4.0, 1e-300 * np.eye(2), 2, N)), "NIW: .*scale0"),
    ((K.NIW, data() * 1e160, K.niw_hyper(0.0, 1.0, 4.0, np.eye(2), 2, N)), r"NIW: .*scatter matrix.*rescale the data"),
    ((K.NIW, data(), K.niw_hyper(0.0, 1.0, 4.0, np.eye(2), 2, N - 1)), r"its table must cover blocks of up to n = 12"),
    ((K.NIW, data(), K.niw_hyper(0.0, 1.0, 1e300, np.eye(2), 2, N)), r"NIW: .*(table|nu0)"),
    ((K.BETA_BERNOULLI, (data() > 1).astype(float), K.beta_bernoulli_hyper(1e308, 1.0, 2)),
     r"BETA_BERNOULLI: .*lgamma.*decrease a and b"),
    ((K.BETA_BERNOULLI, data(), K.beta_bernoulli_hyper(1.0, 1.0, 2)), "BETA_BERNOULLI data must be 0/1"),
    ((K.DIAG_NORMAL, data(), np.ones(5)), r"DIAG_NORMAL: the hyper vector must have length 13 for D = 2"),
    ((K.GRAPH, np.ones((N, 3)), np.zeros(0)), "GRAPH: data must be the n x n adjacency matrix"),
    ((K.GRAPH, 2 * np.eye(N), np.zeros(0)), "GRAPH: the adjacency matrix must hold 0/1 entries"),
    ((99, data(), np.zeros(3)), "unknown family code 99"),  # (7 is LINEAR_REGRESSION)
])
def test_unrepresentable_inputs_are_refused_at_build(part, match):
    with pytest.raises(ValueError, match=match):
        check_representable(*part)
    with pytest.raises(ValueError, match="FamilyPack.build: part 0: .*" + match.split(": ", 1)[-1]):
        FamilyPack.build([part])


def test_full_covariance_normal_is_checked_through_the_whitening():
    y = data() * 1e200
    cov = np.array([[1.0, 0.3], [0.3, 2.0]])
    y2, mu2, s02, jac = whiten_full_normal(y, 0.0, 4.0 * cov, cov)
    with pytest.raises(ValueError, match="rescale the data"):
        FamilyPack.build([(K.DIAG_NORMAL, y2, K.diag_normal_hyper(mu2, s02, 1.0, 2, jac))])
    y2, mu2, s02, jac = whiten_full_normal(data(), 0.0, np.diag([4.0, 0.0]), cov)  # singular cov0: sigma0' = 0
    with pytest.raises(ValueError, match=r"sigma0\^2 = 0 is not a positive number"):
        FamilyPack.build([(K.DIAG_NORMAL, y2, K.diag_normal_hyper(mu2, s02, 1.0, 2, jac))])


def test_build_checks_rows_and_types():
    with pytest.raises(ValueError, match="same number of rows"):
        FamilyPack.build([diag_part(data(N)), diag_part(data(N + 1))])
    with pytest.raises(ValueError, match="FamilyPack.build: n must be an integer >= 1, got 0"):
        FamilyPack.build([], n=0)
    with pytest.raises(TypeError, match=r"part 0 must be a \(code, data, hyper\) triple"):
        FamilyPack.build([(K.DIAG_NORMAL, data())])
    with pytest.raises(TypeError, match="data and hyper must be numeric arrays"):
        check_representable(K.DIAG_NORMAL, np.array([["a", "b"]]), np.zeros(13))
    with pytest.raises(ValueError, match=r"data must be \(n, D\) with n, D >= 1"):
        check_representable(K.DIAG_NORMAL, np.zeros((3, 2, 2)), np.zeros(13))


def test_a_hand_made_pack_with_an_inconsistent_layout_is_refused():
    pack = diag_pack()
    bad = pack._replace(dims=pack.dims + 5)  # would read past the data and hyper columns
    with pytest.raises(ValueError, match="gibbs_sweeps: the FamilyPack's layout is inconsistent"):
        run_gibbs(bad)
    with pytest.raises(TypeError, match="GibbsKernel: pack must be a FamilyPack"):
        GibbsKernel(tuple(pack), PRIOR.code, PRIOR.kernel_params())


def test_legitimate_extremes_still_work():
    """Large but representable scales are fine, and give the same posterior as the rescaled data:
    the log joint of a fixed partition differs by the Jacobian n D log(scale)."""
    y = data()
    labels = np.arange(N) % 3
    for scale in (1e50, 1e-12):
        unit = FamilyPack.build([diag_part(y, sigma0=3.0, sigma=1.0)])
        big = FamilyPack.build([diag_part(y * scale, sigma0=3.0 * scale, sigma=scale)])
        want = log_joint(labels, unit, PRIOR.code, PRIOR.kernel_params()) - N * 2 * math.log(scale)
        assert log_joint(labels, big, PRIOR.code, PRIOR.kernel_params()) == pytest.approx(want, rel=1e-9)
    # D = 50 at sigma = 1e-12: a product of 16 half-precisions (5e23 each) overflows; the kernels
    # then sum one logarithm per dimension and a Gibbs sweep runs on finite weights
    y50 = np.random.default_rng(1).normal(size=(N, 50))
    unit = FamilyPack.build([diag_part(y50)])
    tiny = FamilyPack.build([diag_part(y50 * 1e-12, sigma0=3e-12, sigma=1e-12)])
    new, lj = run_gibbs(tiny, labels)
    ref = log_joint(new, unit, PRIOR.code, PRIOR.kernel_params()) - N * 50 * math.log(1e-12)
    assert math.isfinite(lj) and lj == pytest.approx(ref, rel=1e-9)
    niw = FamilyPack.build([(K.NIW, y50 * 1e-12, K.niw_hyper(0.0, 1.0, 60.0, 1e-24 * np.eye(50), 50, N))])
    assert math.isfinite(run_gibbs(niw, labels)[1])


# ----------------------------------------------------------------------------- the draws


def test_draws_refuse_nan_and_plus_inf_log_weights():
    for bad in (np.nan, np.inf):
        for draw in (lambda w: draw_log_weights(w, 3, 0.5), lambda w: probabilities(w, 3, np.empty(3)),
                     lambda w: relative_weights(w, 3, w)):
            with pytest.raises(ValueError, match=r"a log weight is NaN or \+inf"):
                draw(np.array([0.0, bad, -1.0]))
        with pytest.raises(ValueError, match=r"PGSM: a log weight is NaN or \+inf"):
            _exp_weights(np.array([0.0, bad, -1.0]), 3)
    with pytest.raises(ValueError, match=r"PGSM: a log weight is NaN or \+inf"):
        _exp_weights(np.array([-np.inf, np.nan]), 2)


def test_no_possible_option_raises_instead_of_reading_index_minus_one():
    with pytest.raises(NoPositiveOption, match="no option has positive probability"):  # (a ValueError)
        draw_log_weights(np.full(3, -np.inf), 3, 0.5)
    with pytest.raises(ValueError, match="no option has positive probability"):
        probabilities(np.full(3, -np.inf), 3, np.empty(3))
    for p in (np.zeros(3), np.array([0.0, np.nan, 0.0])):
        with pytest.raises(ValueError, match="(no option has positive probability|a probability is NaN)"):
            inverse_cdf(p, 3, 0.5)
    with pytest.raises(ValueError, match="count exceeds the length"):
        draw_log_weights(np.zeros(2), 5, 0.5)
    with pytest.raises(ValueError, match="draw_maximal: an array is shorter than its count"):
        draw_maximal(np.ones(4) / 4, 4, np.ones(4) / 4, 4, 0.9, 0.5, 0.5, np.empty(2))


def test_minus_inf_stays_a_legitimate_weight():
    w = np.array([-np.inf, 0.0, -np.inf, math.log(3.0)])
    assert draw_log_weights(w.copy(), 4, 0.2) == 1 and draw_log_weights(w.copy(), 4, 0.3) == 3
    p = np.empty(4)
    probabilities(w, 4, p)
    assert p.tolist() == [0.0, 0.25, 0.0, 0.75]
    x = np.full(3, -np.inf)
    assert _exp_weights(x, 3) == (-np.inf, 0.0) and x.tolist() == [0.0, 0.0, 0.0]  # a dead particle


def test_transport_refuses_nan_masses_and_non_finite_costs():
    rows, cols, mass = (np.empty(6, np.int64), np.empty(6, np.int64), np.empty(6))
    iw, fw = make_workspace(3, 3)
    a = np.array([0.2, 0.3, 0.5])
    cost = np.arange(9.0).reshape(3, 3)
    assert transport_plan_info(np.array([0.2, np.nan, 0.5]), 3, a, 3, cost, rows, cols, mass, iw, fw)[::2] == (0, 2)
    for bad in (np.nan, np.inf):
        c = cost.copy()
        c[1, 2] = bad
        assert transport_plan_info(a, 3, a, 3, c, rows, cols, mass, iw, fw)[::2] == (0, 5)
    assert transport_plan_info(a, -1, a, 3, cost, rows, cols, mass, iw, fw)[::2] == (0, 4)
    with pytest.raises(ValueError, match="transport_plan_pot: a must be a non-empty vector of finite masses"):
        transport_plan_pot([np.nan, 1.0], [0.5, 0.5], np.zeros((2, 2)))
    with pytest.raises(ValueError, match="transport_plan_pot: costs must be finite"):
        transport_plan_pot([0.5, 0.5], [0.5, 0.5], [[0.0, np.inf], [1.0, 0.0]])


# ----------------------------------------------------------------------------- non-finite weights in a sweep


def poisoned_pack():
    """A pack whose hyper vector was changed after build (bypassing its checks): sigma^2 = NaN."""
    pack = diag_pack()
    hyper = pack.hyper.copy()
    hyper[2 * 2:3 * 2] = np.nan
    hyper[4 * 2 + 1:5 * 2 + 1] = np.nan
    return pack._replace(hyper=hyper)


def test_nan_log_weights_inside_every_kernel_raise():
    pack = poisoned_pack()
    labels = np.arange(N) % 3
    match = r"log weight is NaN or \+inf"
    with pytest.raises(ValueError, match=match):
        run_gibbs(pack, labels)
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match=match):
        pgsm_move(labels, pack, PRIOR.code, PRIOR.kernel_params(), pgsm_random_numbers(rng, N), num_particles=4)
    with pytest.raises(ValueError, match=match):
        for _ in range(20):  # a merge proposal may not draw: loop until a split draws
            SAMSKernel(pack, PRIOR.code, PRIOR.kernel_params()).step(np.zeros(N, np.int64), rng)
    for moves in (0, 3):  # the sweep, and a split move before it
        with pytest.raises(ValueError, match=match):
            GibbsSAMSKernel(pack, PRIOR.code, PRIOR.kernel_params(), moves=moves).step(np.zeros(N, np.int64), rng)
    kernel = GibbsSweeps(pack, PRIOR.code, PRIOR.kernel_params(), "ot")
    x, y = kernel.start(labels), kernel.start(np.zeros(N, np.int64))
    with pytest.raises(ValueError, match=match):
        kernel.coupled_sweep(x, y, kernel.intersections(x, y), kernel.random_numbers(rng))


def test_a_state_of_probability_zero_raises_in_gibbs():
    """A triangle cannot be 2-coloured: from [0, 1, 2] no item has a possible block."""
    triangle = np.ones((3, 3), int) - np.eye(3, dtype=int)
    pack, prior = colouring_target(triangle, 2)
    with pytest.raises(ValueError, match="no option has positive probability.*probability 0"):
        gibbs_sweeps(np.arange(3), pack, prior.code, prior.kernel_params(), [[0, 1, 2]], [[0.5, 0.5, 0.5]])


def test_colourings_still_sample_with_minus_inf_weights():
    cycle = np.roll(np.eye(6, dtype=int), 1, axis=1)
    cycle = cycle + cycle.T
    pack, prior = colouring_target(cycle, 3)
    labels = greedy_colouring(cycle)
    rng = np.random.default_rng(0)
    for _ in range(50):
        o, u = sweep_randomness(6, 1, int(rng.integers(1 << 30)))
        labels, lj = gibbs_sweeps(labels, pack, prior.code, prior.kernel_params(), o, u)
        assert is_proper(cycle, labels) and np.isfinite(lj)


# ----------------------------------------------------------------------------- every wrapper's arguments


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(labels=np.zeros(N - 1, int)), ValueError, "gibbs_sweeps: labels must have length 12, got 11"),
    (dict(labels=np.full(N, N)), ValueError, r"gibbs_sweeps: labels must lie in \[0, 12\), got \[12, 12\]"),
    (dict(labels=np.full(N, -1)), ValueError, r"labels must lie in \[0, 12\)"),
    (dict(labels=np.full(N, 0.5)), ValueError, "labels must be integers, got non-integral values"),
    (dict(labels=np.array(["a"] * N)), TypeError, "labels must be integers, got dtype"),
    (dict(orders=np.full((2, N), N)), ValueError, r"orders must lie in \[0, 12\)"),
    (dict(orders=np.full((2, N), 0.5)), ValueError, "orders must be integers"),
    (dict(orders=np.zeros((2, 2, N), int)), ValueError, r"orders must be \(sweeps, visits\)"),
    (dict(uniforms=np.full((2, N), 1.0)), ValueError, r"uniforms must lie in \[0, 1\)"),
    (dict(uniforms=np.full((2, N), np.nan)), ValueError, r"uniforms must lie in \[0, 1\)"),
    (dict(uniforms=np.zeros((2, N - 1))), ValueError, r"uniforms must have shape \(2, 12\)"),
    (dict(prior_code=7), ValueError, "gibbs_sweeps: prior_code must be an integer >= 0 and <= 2"),
    (dict(prior_params=[1.0, 0.0]), ValueError, "prior_params must be three finite numbers"),
    (dict(prior_params=[np.nan, 0.0, 0.0]), ValueError, "prior_params must be three finite numbers"),
    (dict(prior_params=[-1.0, 0.0, 0.0]), ValueError, r"invalid prior parameters .*Pitman-Yor"),
    (dict(prior_params=[1e300, 0.0, 0.0]), ValueError, r"invalid prior parameters .*Pitman-Yor"),
    (dict(prior_code=1, prior_params=[1.0, 0.0, 2.5]), ValueError, r"invalid prior parameters .*finite Dirichlet"),
    (dict(pack=None), TypeError, "gibbs_sweeps: pack must be a FamilyPack"),
])
def test_gibbs_sweeps_arguments(kwargs, exc, match):
    orders, uniforms = sweep_randomness(N)
    args = dict(labels=np.zeros(N, int), pack=diag_pack(), prior_code=PRIOR.code, prior_params=PRIOR.kernel_params(),
                orders=orders, uniforms=uniforms)
    args.update(kwargs)
    with pytest.raises(exc, match=match):
        gibbs_sweeps(**args)


def test_log_joint_and_gibbs_kernel_arguments():
    pack = diag_pack()
    with pytest.raises(ValueError, match=r"labels must lie in \[0, 12\)"):
        log_joint(np.r_[np.zeros(N - 1, int), 10**15], pack, PRIOR.code, PRIOR.kernel_params())
    for sweeps, exc in ((0, ValueError), (1.5, ValueError), (True, TypeError), ("2", TypeError)):
        with pytest.raises(exc, match="GibbsKernel: sweeps must be an integer"):
            GibbsKernel(pack, PRIOR.code, PRIOR.kernel_params(), sweeps=sweeps)
    assert GibbsKernel(pack, PRIOR.code, PRIOR.kernel_params(), sweeps=2.0).sweeps == 2


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(num_particles=2.5), ValueError, "PGSMKernel: num_particles must be an integer, got 2.5"),
    (dict(num_particles=1), ValueError, "num_particles must be an integer >= 2"),
    (dict(num_particles=True), TypeError, "num_particles must be an integer"),
    (dict(annealed="no"), TypeError, "PGSMKernel: annealed must be True or False, got 'no'"),
    (dict(annealed=0), TypeError, "annealed must be True or False"),
    (dict(num_anchors=1), ValueError, "num_anchors must be an integer >= 2"),
    (dict(num_anchors=N + 1), ValueError, r"num_anchors \(13\) exceeds the number of items \(12\)"),
    (dict(resample_threshold=1.5), ValueError, "resample_threshold must be a finite number >= 0.0 and <= 1.0"),
    (dict(resample_threshold="0.5"), TypeError, "resample_threshold must be a number"),
    (dict(anchor_proposal="nearest"), ValueError, "anchor_proposal must be one of"),
    (dict(threshold=0.0), ValueError, "threshold must be a finite number > 0.0 and < 1.0"),
    (dict(adapt_iterations=-1), ValueError, "adapt_iterations must be an integer >= 0"),
    (dict(adapt_iterations=2.5), ValueError, "adapt_iterations must be an integer"),
    (dict(prior_params=[-1e-9, 0.0, 0.0]), ValueError, "PGSMKernel: invalid prior parameters"),
])
def test_pgsm_kernel_settings(kwargs, exc, match):
    args = dict(pack=diag_pack(), prior_code=PRIOR.code, prior_params=PRIOR.kernel_params())
    args.update(kwargs)
    with pytest.raises(exc, match=match):
        PGSMKernel(**args)


def test_pgsm_move_arguments():
    pack = diag_pack()
    labels = np.zeros(N, np.int64)
    args = (pack, PRIOR.code, PRIOR.kernel_params())
    seed = np.uint64(5)
    for anchors, match in (([0, N], "anchors must be distinct items of 0..11"), ([3, 3], "distinct"),
                           ([-1, 2], "distinct"), ([0, 1, 2], "need num_anchors >= 2 anchors")):
        with pytest.raises(ValueError, match=match):
            pgsm_move(labels, *args, (np.array(anchors), seed))
        with pytest.raises(ValueError, match=match):
            PGSMKernel(*args).move(labels, (np.array(anchors), seed))
    with pytest.raises(ValueError, match="pgsm_move: seed must be an integer >= 0"):
        pgsm_move(labels, *args, (np.array([0, 1]), -1))
    with pytest.raises(ValueError, match="pgsm_move: seed must be an integer, got 1.5"):
        pgsm_move(labels, *args, (np.array([0, 1]), 1.5))
    with pytest.raises(TypeError, match=r"randomness must be \(anchors, seed\)"):
        pgsm_move(labels, *args, 5)
    with pytest.raises(ValueError, match=r"pgsm_move: labels must lie in \[0, 12\)"):
        pgsm_move(np.full(N, 10**15), *args, (np.array([0, 1]), seed))
    with pytest.raises(TypeError, match="pgsm_move: annealed must be True or False"):
        pgsm_move(labels, *args, (np.array([0, 1]), seed), annealed="no")
    with pytest.raises(ValueError, match="pgsm_random_numbers: n must be an integer >= 3"):
        pgsm_random_numbers(np.random.default_rng(0), 2, num_anchors=3)
    with pytest.raises(ValueError, match="conditional_path: anchors must be distinct items of 0..11"):
        conditional_path(labels, [0, 99], 5)
    with pytest.raises(RuntimeError, match="no model yet"):
        PGSMKernel(None, PRIOR.code, np.zeros(3)).move(labels, (np.array([0, 1]), seed))
    with pytest.raises(ValueError, match=r"InformedAnchors: the reference clustering must lie in \[0, 12\)"):
        InformedAnchors(*args, np.full(N, 10**15))
    with pytest.raises(ValueError, match="InformedAnchors.draw: n must be 12"):
        InformedAnchors(*args, np.arange(N) % 2).draw(N + 5, np.full(6, 0.5))


def test_sams_arguments():
    pack = diag_pack()
    labels = np.zeros(N, np.int64)
    args = (pack, PRIOR.code, PRIOR.kernel_params())
    for pair in ([0, N + 3], [2, 2], [-1, 0], [0, 1, 2]):  # [0, N + 3] was read out of bounds
        with pytest.raises(ValueError, match="need two distinct items of 0..11"):
            sams_move(labels, *args, (np.array(pair), 1))
        with pytest.raises(ValueError, match="need two distinct items of 0..11"):
            SAMSKernel(*args).move(labels, (np.array(pair), 1))
    with pytest.raises(ValueError, match=r"SAMSKernel: labels must lie in \[0, 12\)"):
        SAMSKernel(*args).move(np.full(N, N), (np.array([0, 1]), 1))
    with pytest.raises(ValueError, match="sams_random_numbers: n must be an integer >= 2"):
        SAMSKernel(*args).random_numbers(np.random.default_rng(0), 1)


def test_coupled_sweep_arguments():
    pack = diag_pack()
    args = (pack, PRIOR.code, PRIOR.kernel_params())
    with pytest.raises(ValueError, match="GibbsSweeps: coupling must be one of"):
        GibbsSweeps(*args, coupling="OT")
    with pytest.raises(ValueError, match="GibbsSweeps: eps must be a finite number >= 0.0 and <= 1.0"):
        GibbsSweeps(*args, eps=np.nan)
    kernel = GibbsSweeps(*args)
    with pytest.raises(ValueError, match=r"GibbsSweeps.start: labels must lie in \[0, 12\)"):
        kernel.start(np.r_[np.zeros(N - 1, int), 10**15])
    x, y = kernel.start(np.zeros(N, int)), kernel.start(np.arange(N))
    order, uniforms = kernel.random_numbers(np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"GibbsSweeps.sweep: order must lie in \[0, 12\)"):
        kernel.sweep(x, (order + 1, uniforms))
    with pytest.raises(ValueError, match=r"uniforms must have shape \(12, 4\)"):
        kernel.sweep(x, (order, uniforms[:, :2]))
    other = GibbsSweeps(diag_pack(N + 1), PRIOR.code, PRIOR.kernel_params())
    with pytest.raises(ValueError, match="the state must be a ChainState made by this kernel's start"):
        kernel.sweep(other.start(np.zeros(N + 1, int)), (order, uniforms))
    with pytest.raises(ValueError, match="inter must be the int64 intersection table"):
        kernel.coupled_sweep(x, y, np.zeros((2, 2), np.int64), (order, uniforms))
    with pytest.raises(ValueError, match="GibbsSweeps.distance: need two chain states"):
        kernel.distance(x, y, np.zeros((1, 1), np.int64))
    with pytest.raises(TypeError, match="GibbsPGSM: gibbs must be a GibbsSweeps"):
        GibbsPGSM(pack)
    with pytest.raises(TypeError, match="pgsm: annealed must be True or False, got 'no'"):
        pgsm_settings({"annealed": "no"})
    with pytest.raises(ValueError, match="pgsm: resample_threshold must be a finite number"):
        pgsm_settings({"resample_threshold": np.nan})


def test_partition_functions():
    assert canonicalize([0, 10**15]).tolist() == [0, 1]  # no 10^15-entry table
    assert canonicalize([5, -(2**63), 2**63 - 1, 5]).tolist() == [0, 1, 2, 0]
    out = np.empty(3, np.int64)
    assert canonicalize_into(np.array([2**63 - 1, -(2**63), 2**63 - 1]), out) == 2 and out.tolist() == [0, 1, 0]
    big = np.random.default_rng(0).permutation(10**5) * 10**9
    assert np.array_equal(canonicalize(big), np.arange(10**5))
    assert canonicalize([3.0, 1.0, 3.0]).tolist() == [0, 1, 0]
    with pytest.raises(ValueError, match="labels must be integers, got non-integral values"):
        canonicalize([0.5])
    with pytest.raises(ValueError, match="labels must be integers"):
        canonicalize([np.nan, 0])
    with pytest.raises(ValueError, match="labels must be integers"):
        canonicalize([1e300])
    with pytest.raises(ValueError, match="labels must be a 1-d vector"):
        canonicalize(np.zeros((2, 2), int))
    n = 10**5  # the dense contingency table would be n x n (80 GB)
    assert mirkin_distance(np.arange(n), np.arange(n)[::-1]) == 0
    assert mirkin_distance(np.arange(6), np.zeros(6, int)) == 30
    with pytest.raises(ValueError, match="bell_number: n must be an integer >= 0"):
        bell_number(-1)
    with pytest.raises(ValueError, match="n must be a positive integer, got True"):
        enumerate_partitions(True)


def test_colouring_and_concentration_arguments():
    cycle = np.roll(np.eye(5, dtype=int), 1, axis=1)
    cycle = cycle + cycle.T
    with pytest.raises(TypeError, match="adjacency must be a numeric 0/1 matrix"):
        colouring_target(np.full((3, 3), "0"), 3)
    with pytest.raises(ValueError, match="adjacency must hold 0/1 entries"):
        colouring_target(np.full((3, 3), np.nan), 3)
    with pytest.raises(ValueError, match="positive integer"):
        colouring_target(cycle, 2.5)
    with pytest.raises(ValueError, match="is_proper: labels must have length 5, got 4"):
        is_proper(cycle, [0, 1, 0, 1])
    with pytest.raises(ValueError, match="greedy_colouring: order must be integers"):
        greedy_colouring(cycle, order=np.arange(5) + 0.5)
    with pytest.raises(ValueError, match="order must be a permutation of the vertices"):
        greedy_colouring(cycle, order=[0, 0, 1, 2, 3])
    assert isinstance(UniformLabels(3), UniformLabels)
    rng = np.random.default_rng(0)
    for args, match in (((-1.0, 2, 10, 1.0, 1.0), "alpha must be a finite number >= 0"),
                        ((np.inf, 2, 10, 1.0, 1.0), "alpha must be a finite number >= 0"),
                        ((1.0, 11, 10, 1.0, 1.0), "n_clusters must be an integer >= 1 and <= 10"),
                        ((1.0, 2, 10, 1.0, -1.0), "rate must be a finite number > 0"),
                        ((1.0, 2, 2.5, 1.0, 1.0), "n must be an integer")):
        with pytest.raises(ValueError, match="escobar_west: " + match):
            escobar_west(*args, rng)
    with pytest.raises(TypeError, match="escobar_west: rng must be a numpy Generator"):
        escobar_west(1.0, 2, 10, 1.0, 1.0, 0)
    for bad, err in ((np.nan, ValueError), (np.inf, ValueError), (710.0, ValueError), ("1.0", TypeError),
                     (True, TypeError)):
        with pytest.raises(err, match="escobar_west: log_alpha must be a (finite )?number"):
            escobar_west_log(bad, 2, 10, 1.0, 1.0, rng)
    assert escobar_west(0.0, 1, 10, 1.0, 1.0, rng) > 0.0  # alpha = 0 (an underflow) is its limit
    assert np.isfinite(escobar_west_log(-np.inf, 1, 10, 1e-3, 1e-3, rng))
