"""Particle Gibbs Split-Merge reproduces the exact posterior over all partitions (n = 6-8), alone and
mixed with collapsed Gibbs sweeps; its conditional path encodes the current state (App. C); and a
move is a deterministic function of (state, random numbers)."""

import numpy as np
import pytest

from enumeration import check_against, exact_posterior
from models import PRIORS, pack
from pymc_partitions.partition import canonicalize, enumerate_partitions
from pymc_partitions.priors import CRP, FiniteDirichlet, PitmanYor
from pymc_partitions.samplers.gibbs import GibbsKernel, log_joint
from pymc_partitions.samplers.pgsm import (
    InformedAnchors,
    PGSMKernel,
    conditional_path,
    order_keys,
    pgsm_move,
    pgsm_random_numbers,
)


def perturbed(prior):
    """A visibly different prior of the same kind: the posterior a wrong kernel might target."""
    if isinstance(prior, FiniteDirichlet):
        return FiniteDirichlet(prior.alpha * 4, prior.k + 1)
    if isinstance(prior, PitmanYor):
        return PitmanYor(prior.alpha * 4, prior.discount)
    return CRP(prior.alpha * 4)


def posteriors(prior, fam, n):
    parts, exact = exact_posterior(n, lambda p: log_joint(p, fam, prior.code, prior.kernel_params()))
    w = perturbed(prior)
    _, wrong = exact_posterior(n, lambda p: log_joint(p, fam, w.code, w.kernel_params()))
    return parts, exact, wrong


def run(kernels, n, n_steps, seed):
    """Chain of ``n_steps`` iterations, each applying every kernel once in turn; returns the
    labels after each iteration and the number of clusters."""
    rng = np.random.default_rng(seed)
    labels = np.zeros(n, np.int64)
    out = np.empty((n_steps, n), np.int64)
    for t in range(n_steps):
        for kernel in kernels:
            labels = kernel.step(labels, rng)[0]
        out[t] = labels
    return out, out.max(axis=1)


FAMILIES = ["diag", "bb"]
ALONE = [(p, f, a, 6 + (i + j) % 2) for i, p in enumerate(PRIORS) for j, f in enumerate(FAMILIES) for a in (True, False)]


@pytest.mark.parametrize("prior_name,family,annealed,n", ALONE)
def test_pgsm_alone_matches_enumeration(prior_name, family, annealed, n):
    """PGSM alone is irreducible here (any two blocks can merge, any block can split in two)."""
    prior = PRIORS[prior_name]
    fam = pack(family, n)
    parts, exact, wrong = posteriors(prior, fam, n)
    kernel = PGSMKernel(fam, prior.code, prior.kernel_params(), num_particles=10, annealed=annealed)
    samples, k = run([kernel], n, 30000, seed=n + 10 * annealed)
    check_against(parts, exact, samples[500:], [k[500:]], wrong=wrong)


MIXED = [(p, f, 6 + (i + j) % 3) for i, p in enumerate(PRIORS) for j, f in enumerate(["niw", "multi"])]


@pytest.mark.parametrize("prior_name,family,n", MIXED)
def test_pgsm_with_gibbs_matches_enumeration(prior_name, family, n):
    prior = PRIORS[prior_name]
    fam = pack(family, n)
    parts, exact, wrong = posteriors(prior, fam, n)
    kernels = [GibbsKernel(fam, prior.code, prior.kernel_params()),
               PGSMKernel(fam, prior.code, prior.kernel_params(), num_particles=10, resample_threshold=0.7)]
    samples, k = run(kernels, n, 12000, seed=3 * n)
    check_against(parts, exact, samples[300:], [k[300:]], wrong=wrong)


@pytest.mark.parametrize("prior_name,num_anchors", [("finite_dirichlet", 3), ("crp", 3)])
def test_pgsm_more_anchors_matches_enumeration(prior_name, num_anchors):
    """|s| = 3 (App. D): a move may split one block while merging two others."""
    n = 6
    prior = PRIORS[prior_name]
    fam = pack("diag", n)
    parts, exact, wrong = posteriors(prior, fam, n)
    kernel = PGSMKernel(fam, prior.code, prior.kernel_params(), num_particles=10, num_anchors=num_anchors)
    samples, k = run([kernel], n, 20000, seed=7)
    check_against(parts, exact, samples[500:], [k[500:]], wrong=wrong)


def test_few_particles_plain_and_always_resampling():
    """N = 2 and resampling at every step (beta = 1) are still exact (Prop. 2 holds for N >= 2)."""
    n = 6
    prior = PRIORS["crp"]
    fam = pack("diag", n)
    parts, exact, wrong = posteriors(prior, fam, n)
    kernel = PGSMKernel(fam, prior.code, prior.kernel_params(), num_particles=2, resample_threshold=1.0,
                        annealed=False)
    samples, k = run([kernel], n, 30000, seed=11)
    check_against(parts, exact, samples[500:], [k[500:]], wrong=wrong)


@pytest.mark.parametrize("prior_name,kind", [("crp", "cluster"), ("finite_dirichlet", "cluster"),
                                             ("crp", "threshold"), ("pitman_yor", "threshold")])
def test_informed_anchors_from_a_fixed_reference_match_enumeration(prior_name, kind):
    """App. F's proposals built from a fixed reference clustering. The cluster-informed one gives
    every pair positive probability (PGSM alone); the threshold-informed one here only pairs within
    a reference block, which leaves PGSM alone reducible, so it runs with Gibbs sweeps."""
    n = 6
    prior = PRIORS[prior_name]
    fam = pack("diag", n)
    parts, exact, wrong = posteriors(prior, fam, n)
    anchors = InformedAnchors(fam, prior.code, prior.kernel_params(), np.arange(n) % 2, kind=kind)
    kernels = [PGSMKernel(fam, prior.code, prior.kernel_params(), num_particles=10, anchor_proposal=anchors)]
    if kind == "threshold":
        kernels.insert(0, GibbsKernel(fam, prior.code, prior.kernel_params()))
    samples, k = run(kernels, n, 20000, seed=1)
    check_against(parts, exact, samples[500:], [k[500:]], wrong=wrong)


@pytest.mark.parametrize("prior_name,kind", [("crp", "cluster"), ("pitman_yor", "cluster"), ("crp", "threshold"),
                                             ("finite_dirichlet", "threshold")])
def test_adapted_informed_anchors_match_enumeration_once_frozen(prior_name, kind):
    """The informed proposals as the kernel adapts them (rebuilt on the state whenever the number of
    blocks breaks its record, for the first 300 moves, from all-singletons and from one block):
    after adaptation stops the chain has the exact posterior. PGSM and Gibbs alternate (the
    threshold proposal alone may pair only within reference blocks)."""
    n = 6
    prior = PRIORS[prior_name]
    fam = pack("bb" if kind == "threshold" else "diag", n)
    parts, exact, wrong = posteriors(prior, fam, n)
    for start in (np.arange(n), np.zeros(n, np.int64)):
        pgsm = PGSMKernel(fam, prior.code, prior.kernel_params(), num_particles=8, anchor_proposal=kind,
                          adapt_iterations=300)
        gibbs = GibbsKernel(fam, prior.code, prior.kernel_params())
        rng = np.random.default_rng(5)
        labels, rebuilt, last = start, 0, None
        for _ in range(300):
            labels = gibbs.step(pgsm.step(labels, rng)[0], rng)[0]
            rebuilt += pgsm.anchors is not last
            last = pgsm.anchors
        assert not pgsm.adapting and 1 <= rebuilt <= n and pgsm.record == max(labels.max() + 1, pgsm.record)
        samples = np.empty((12000, n), np.int64)
        for t in range(len(samples)):
            labels = gibbs.step(pgsm.step(labels, rng)[0], rng)[0]
            samples[t] = labels
        assert pgsm.anchors is last  # frozen
        check_against(parts, exact, samples, [samples.max(axis=1)], wrong=wrong)


def test_adaptation_counts_and_stops():
    n = 8
    prior = PRIORS["crp"]
    fam = pack("diag", n)
    kernel = PGSMKernel(fam, prior.code, prior.kernel_params(), anchor_proposal="cluster", adapt_iterations=3)
    assert kernel.adapting
    with pytest.raises(RuntimeError, match="no reference"):
        kernel.random_numbers(np.random.default_rng(0), n)
    kernel.adapt(np.zeros(n, np.int64))
    first = kernel.anchors
    kernel.adapt(np.zeros(n, np.int64))  # no new record: kept
    assert kernel.anchors is first and kernel.record == 1
    kernel.adapt(np.arange(n) % 3)  # record broken: rebuilt
    assert kernel.anchors is not first and kernel.record == 3 and not kernel.adapting
    frozen = kernel.anchors
    kernel.adapt(np.arange(n))
    assert kernel.anchors is frozen
    k2 = PGSMKernel(fam, prior.code, prior.kernel_params(), anchor_proposal="threshold", adapt_iterations=100)
    k2.step(np.zeros(n, np.int64), np.random.default_rng(0))
    k2.stop_adapting()
    assert not k2.adapting
    assert not PGSMKernel(fam, prior.code, prior.kernel_params()).adapting  # uniform anchors never adapt
    for bad, match in [(dict(anchor_proposal="smart"), "anchor_proposal"),
                       (dict(anchor_proposal="cluster", num_anchors=3), "two anchors"),
                       (dict(num_particles=1), "num_particles"), (dict(resample_threshold=1.5), "resample_threshold"),
                       (dict(threshold=0.0), "threshold"), (dict(adapt_iterations=-1), "adapt_iterations")]:
        with pytest.raises(ValueError, match=match):
            PGSMKernel(fam, prior.code, prior.kernel_params(), **bad)


def test_informed_anchors_from_the_current_state_are_biased():
    """Why the reference is fixed: Algorithm 4 scored on the *current* clustering makes h depend on
    the state, which App. A's argument does not allow; the chain then misses the posterior."""
    n = 6
    prior = PRIORS["crp"]
    fam = pack("diag", n)
    parts, exact, _ = posteriors(prior, fam, n)
    rng = np.random.default_rng(3)
    labels = np.zeros(n, np.int64)
    samples = np.empty((20000, n), np.int64)
    for t in range(len(samples)):
        anchors = InformedAnchors(fam, prior.code, prior.kernel_params(), labels, kind="cluster")
        labels = PGSMKernel(fam, prior.code, prior.kernel_params(), num_particles=10,
                            anchor_proposal=anchors).step(labels, rng)[0]
        samples[t] = labels
    with pytest.raises(AssertionError, match="TV"):
        check_against(parts, exact, samples[500:], [samples[500:].max(axis=1)])


@pytest.mark.parametrize("annealed,num_anchors", [(True, 2), (False, 2), (True, 3)])
def test_pgsm_samples_uniform_colourings(annealed, num_anchors):
    """A hard constraint (log predictive -inf for a neighbour in the block) and the uniform-labels
    prior: particles die, weights are -inf; with Gibbs sweeps the chain is exact."""
    from test_colouring import cycle_with_chord, exact  # noqa: PLC0415
    from pymc_partitions.colouring import greedy_colouring, is_proper  # noqa: PLC0415

    a = cycle_with_chord()
    fam, prior, parts, post = exact(a, 4)
    _, _, _, wrong = exact(a, 5)
    kernels = [PGSMKernel(fam, prior.code, prior.kernel_params(), num_particles=10, annealed=annealed,
                          num_anchors=num_anchors), GibbsKernel(fam, prior.code, prior.kernel_params())]
    rng = np.random.default_rng(0)
    labels = greedy_colouring(a)
    samples = np.empty((15000, len(a)), np.int64)
    for t in range(len(samples)):
        labels = kernels[0].step(labels, rng)[0]
        assert is_proper(a, labels)
        labels = kernels[1].step(labels, rng)[0]
        samples[t] = labels
    check_against(parts, post, samples[200:], [samples[200:].max(axis=1), samples[200:, 0] == samples[200:, 2]],
                  wrong=wrong)


def restricted(labels, items):
    """The clustering of ``items`` induced by ``labels``, as a set of frozensets."""
    blocks = {}
    for i in items:
        blocks.setdefault(labels[i], set()).add(int(i))
    return {frozenset(b) for b in blocks.values()}


@pytest.mark.parametrize("num_anchors", [2, 3])
def test_conditional_path_bijection(num_anchors):
    """App. C: the conditional path of a state is a valid particle and maps back to the state's
    restricted clustering; and every valid particle is the conditional path of the clustering it
    encodes (so the map is a bijection between valid particles and restricted clusterings)."""
    rng = np.random.default_rng(0)
    n = 7
    parts = enumerate_partitions(n)
    for _ in range(300):
        labels = parts[rng.integers(len(parts))]
        anchors, seed = pgsm_random_numbers(rng, n, num_anchors)
        sigma, path = conditional_path(labels, anchors, seed)
        closure = [i for i in range(n) if labels[i] in set(labels[anchors])]
        assert sorted(sigma) == closure and list(sigma[:num_anchors]) == list(anchors)
        # sigma's non-anchors are in the order of their random keys
        assert np.all(np.diff(order_keys(seed, sigma[num_anchors:]).astype(float)) > 0)
        # valid particle: anchors open blocks in order, the others join open blocks
        opened = 0
        for t, d in enumerate(path):
            assert 0 <= d <= opened if t < num_anchors else 0 <= d < opened
            opened = max(opened, d + 1)
        # phi(path) is the current restricted clustering
        decoded = dict(zip(sigma, path))
        assert restricted(decoded, sigma) == restricted(labels, sigma)
        # the other direction: a random valid particle, decoded, has itself as conditional path
        new, opened = np.empty(len(sigma), np.int64), 0
        for t in range(len(sigma)):
            new[t] = rng.integers(opened + 1) if t < num_anchors else rng.integers(opened)
            opened = max(opened, new[t] + 1)
        other = labels.copy()
        other[sigma] = labels.max() + 1 + new
        sigma2, path2 = conditional_path(canonicalize(other), anchors, seed)
        assert np.array_equal(sigma2, sigma) and np.array_equal(path2, new)


def test_move_is_deterministic_in_its_random_numbers():
    n = 8
    prior = PRIORS["pitman_yor"]
    fam = pack("diag", n)
    rng = np.random.default_rng(1)
    for annealed in (True, False):
        kernel = PGSMKernel(fam, prior.code, prior.kernel_params(), annealed=annealed)
        labels = np.zeros(n, np.int64)
        for _ in range(200):
            rn = kernel.random_numbers(rng, n)
            a, info_a = kernel.move(labels, rn)
            b, info_b = pgsm_move(labels.copy(), fam, prior.code, prior.kernel_params(), (rn[0].copy(), int(rn[1])),
                                  annealed=annealed)
            assert np.array_equal(a, b) and info_a["move"] == info_b["move"] and info_a["ess"] == info_b["ess"]
            assert np.array_equal(a, canonicalize(a))
            labels = a
    # and through step(): the same seed gives the same chain
    for anchors in ("uniform", InformedAnchors(fam, prior.code, prior.kernel_params(), np.arange(n) % 3)):
        kernel = PGSMKernel(fam, prior.code, prior.kernel_params(), anchor_proposal=anchors)
        chains = [run([kernel], n, 50, seed=4)[0] for _ in range(2)]
        assert np.array_equal(*chains)


def test_info_records_the_move():
    """The record matches the states before and after; blocks outside the closure never change."""
    n = 8
    prior = PRIORS["crp"]
    fam = pack("diag", n)
    kernel = PGSMKernel(fam, prior.code, prior.kernel_params())
    rng = np.random.default_rng(2)
    labels = np.zeros(n, np.int64)
    seen = set()
    early = 0
    for _ in range(400):
        rn = kernel.random_numbers(rng, n)
        new, info = kernel.move(labels, rn)
        seen.add(info["move"])
        sigma, path = conditional_path(labels, *rn)
        assert info["closure_size"] == len(sigma)
        assert np.array_equal(info["sizes_before"], np.bincount(path))
        assert np.array_equal(info["sizes_after"], np.bincount(conditional_path(new, *rn)[1]))
        assert 0.0 < info["ess"] <= 1.0 + 1e-12 and info["n_resamplings"] >= 0
        before, after = len(info["sizes_before"]), len(info["sizes_after"])
        assert info["move"] == ("keep" if np.array_equal(new, labels) else
                                "split" if after > before else "merge" if after < before else "reallocate")
        if info["early_exit"]:
            early += 1
            assert after == 1
        outside = [i for i in range(n) if i not in set(sigma)]
        assert restricted(labels, outside) == restricted(new, outside)
        assert set(np.unique(new[outside])).isdisjoint(new[sigma])
        labels = new
    assert {"split", "merge", "keep", "reallocate"} <= seen and early > 0


def test_bad_randomness_is_refused():
    n = 6
    prior = PRIORS["crp"]
    fam = pack("diag", n)
    rn = pgsm_random_numbers(np.random.default_rng(0), n)
    labels = np.zeros(n, np.int64)
    with pytest.raises(ValueError, match="num_particles"):
        pgsm_move(labels, fam, prior.code, prior.kernel_params(), rn, num_particles=1)
    with pytest.raises(ValueError, match="anchors"):
        pgsm_move(labels, fam, prior.code, prior.kernel_params(), rn, num_particles=5, num_anchors=3)
    with pytest.raises(ValueError, match="distinct"):
        pgsm_move(labels, fam, prior.code, prior.kernel_params(), (np.array([1, 1]), rn[1]), num_particles=5)
    with pytest.raises(ValueError, match="distinct"):
        pgsm_move(labels, fam, prior.code, prior.kernel_params(), (np.array([0, n]), rn[1]), num_particles=5)
    with pytest.raises(ValueError, match="two anchors"):
        PGSMKernel(fam, prior.code, prior.kernel_params(), num_anchors=3,
                   anchor_proposal=InformedAnchors(fam, prior.code, prior.kernel_params(), labels))
