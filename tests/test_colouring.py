"""Uniform proper graph colourings as a target on partitions: the target counts colourings
exactly, and the single and coupled Gibbs kernels sample it (enumeration, n = 7)."""

import numpy as np
import pytest
from scipy.special import logsumexp

from enumeration import check_against, exact_posterior
from pymc_partitions.colouring import colouring_target, greedy_colouring, is_proper
from pymc_partitions.coupling.parallel import UnbiasedJob
from pymc_partitions.coupling.sweep import GibbsSweeps
from pymc_partitions.samplers.gibbs import log_joint


def cycle(n):
    a = np.roll(np.eye(n, dtype=int), 1, axis=1)
    return a + a.T


def cycle_with_chord():
    a = cycle(7)
    a[0, 3] = a[3, 0] = 1
    return a


def test_target_counts_the_colourings_of_a_cycle():
    """sum over partitions of the target times q^n is the chromatic polynomial (q-1)^n + (-1)^n (q-1)."""
    n, q = 7, 4
    pack, prior = colouring_target(cycle(n), q)
    from pymc_partitions.partition import enumerate_partitions  # noqa: PLC0415

    lj = [log_joint(p, pack, prior.code, prior.kernel_params()) for p in enumerate_partitions(n)]
    assert np.exp(logsumexp(lj) + n * np.log(q)) == pytest.approx((q - 1) ** n + (-1) ** n * (q - 1))


def exact(adjacency, q):
    pack, prior = colouring_target(adjacency, q)
    parts, post = exact_posterior(len(adjacency), lambda p: log_joint(p, pack, prior.code, prior.kernel_params()))
    assert all(is_proper(adjacency, p) for p in parts[post > 0])
    return pack, prior, parts, post


def test_single_chain_samples_uniform_colourings():
    a = cycle_with_chord()
    pack, prior, parts, post = exact(a, 4)
    _, _, _, wrong = exact(a, 5)  # the law on partitions of uniform 5-colourings differs
    kernel = GibbsSweeps(pack, prior.code, prior.kernel_params())
    rng = np.random.default_rng(0)
    state = kernel.start(greedy_colouring(a))
    samples = np.empty((15000, 7), np.int64)
    for t in range(len(samples)):
        kernel.sweep(state, kernel.random_numbers(rng))
        samples[t] = state.labels()
    check_against(parts, post, samples[100:], [samples[100:].max(axis=1), samples[100:, 0] == samples[100:, 2]],
                  wrong=wrong)


@pytest.mark.parametrize("coupling", ["ot", "maximal", "crn"])
def test_coupled_chains_sample_uniform_colourings(coupling):
    a = cycle_with_chord()
    pack, prior, parts, post = exact(a, 4)
    kernel = GibbsSweeps(pack, prior.code, prior.kernel_params(), coupling=coupling, eps=0.05)
    rng = np.random.default_rng(1)
    x = kernel.start(greedy_colouring(a))
    y = kernel.start(np.array([3, 2, 1, 0, 1, 2, 1]))
    assert is_proper(a, y.labels())
    inter = kernel.intersections(x, y)
    xs = np.empty((12000, 7), np.int64)
    ys = np.empty((12000, 7), np.int64)
    for t in range(len(xs)):
        inter = kernel.coupled_sweep(x, y, inter, kernel.random_numbers(rng))
        xs[t], ys[t] = x.labels(), y.labels()
    for s in (xs[100:], ys[100:]):
        check_against(parts, post, s, [s.max(axis=1), s[:, 0] == s[:, 2]])


def test_ot_coupled_colouring_chains_meet():
    a = cycle_with_chord()
    pack, prior = colouring_target(a, 4)
    job = UnbiasedJob(pack, prior.code, prior.kernel_params(), lambda z: np.array([z.max() + 1.0]), 0, 0,
                      max_iter=500, coupling="ot", init=lambda rng: greedy_colouring(a, order=rng.permutation(7)))
    results = [job.run(s) for s in np.random.SeedSequence(0).spawn(50)]
    assert all(r.met for r in results)
    assert np.mean([r.tau for r in results]) > 1  # the starts differ


def test_bad_graphs_are_clear_errors():
    with pytest.raises(ValueError, match="symmetric"):
        colouring_target(np.triu(cycle(4)), 3)
    with pytest.raises(ValueError, match="zero diagonal"):
        colouring_target(cycle(4) + np.eye(4, dtype=int), 3)
    with pytest.raises(ValueError, match="square"):
        colouring_target(np.zeros((3, 4)), 3)
    with pytest.raises(ValueError, match="positive integer"):
        colouring_target(cycle(4), 0)
