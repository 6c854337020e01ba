"""Gibbs sweeps composed with sub-cluster split-merge moves (samplers/subclusters.py) reproduce
the exact posterior (n = 6-7): composed, and the moves alone, with and without intermediate scans;
an acceptance ratio without its proposal term and a launch state that copies the current split
(wrong variants) and a perturbed prior are rejected (power). Deterministic in its random numbers;
edge cases stay in bounds (``tests/test_boundscheck.py`` runs this file with
``NUMBA_BOUNDSCHECK=1``); hostile arguments refused."""

import numpy as np
import pytest

from enumeration import check_against
from models import PRIORS, pack
from pymc_partitions.families.kernels import FamilyPack
from pymc_partitions.samplers import gibbs_sams, subclusters
from pymc_partitions.samplers.subclusters import GibbsSubClusterKernel, gibbs_subcluster_sweeps
from test_pgsm_enumeration import posteriors

NO_SWEEP = np.zeros((1, 0), np.int64)


def chain(kernel, n, steps, seed):
    rng = np.random.default_rng(seed)
    labels = np.zeros(n, np.int64)
    out = np.empty((steps, n), np.int64)
    counts = np.zeros(3, np.int64)
    for t in range(steps):
        labels, _, c = kernel.step(labels, rng)
        counts += c
        out[t] = labels
    return out, counts


@pytest.mark.parametrize("prior_name,family,n,scans", [("crp", "niw", 7, 1), ("pitman_yor", "diag", 6, 2),
                                                       ("finite_dirichlet", "bb", 7, 0)])
def test_gibbs_with_subcluster_moves_matches_enumeration(prior_name, family, n, scans):
    prior = PRIORS[prior_name]
    fam = pack(family, n)
    parts, exact, wrong = posteriors(prior, fam, n)
    kernel = GibbsSubClusterKernel(fam, prior.code, prior.kernel_params(), reps=2, moves=2, scans=scans)
    samples, counts = chain(kernel, n, 8000, seed=n)
    assert counts[1] > 500 and counts[2] > 500  # splits and merges accepted
    check_against(parts, exact, samples[200:], [samples[200:].max(axis=1)], wrong=wrong)


def moves_only(fam, prior, n, steps, seed, scans=1):
    """A chain of sub-cluster moves alone (sweeps of no visits), pairs uniform."""
    rng = np.random.default_rng(seed)
    labels = np.zeros(n, np.int64)
    out = np.empty((steps, n), np.int64)
    for t in range(steps):
        i = int(rng.integers(n))
        j = int(rng.integers(n - 1))
        j += j >= i
        seeds = rng.integers(0, 2**64, size=(1, 1), dtype=np.uint64)
        labels, _, _ = gibbs_subcluster_sweeps(labels, fam, prior.code, prior.kernel_params(), NO_SWEEP,
                                               NO_SWEEP * 0.0, np.array([[[i, j]]]), seeds, scans=scans)
        out[t] = labels
    return out


@pytest.mark.parametrize("prior_name", list(PRIORS))
def test_subcluster_moves_alone_match_enumeration(prior_name):
    n, prior = 6, PRIORS[prior_name]
    fam = pack("diag", n)
    parts, exact, wrong = posteriors(prior, fam, n)
    samples = moves_only(fam, prior, n, 15000, seed=1, scans=2)
    check_against(parts, exact, samples[300:], [samples[300:].max(axis=1)], wrong=wrong)


def uncompiled_moves(monkeypatch, log_ratio=None):
    """Run the kernel's moves as Python (numba's ``py_func``), optionally with another acceptance
    ratio: the compiled callers would not see a patched ``_log_ratio``."""
    monkeypatch.setattr(subclusters, "_gibbs_subcluster_core", subclusters._gibbs_subcluster_core.py_func)
    monkeypatch.setattr(subclusters, "_subcluster_on_slots", subclusters._subcluster_on_slots.py_func)
    monkeypatch.setattr(subclusters, "_side_weights", subclusters._side_weights.py_func)
    # the acceptance test and commit shared with gibbs_sams run there, with gibbs_sams' globals
    monkeypatch.setattr(subclusters, "_accept_split_merge", gibbs_sams._accept_split_merge.py_func)
    key = subclusters.stream_key  # returns a Python int, which numba would read as int64
    for module in (subclusters, gibbs_sams):
        monkeypatch.setattr(module, "runtime_int", int)  # a numba intrinsic
        monkeypatch.setattr(module, "stream_key", lambda seed, stream: np.uint64(key(seed, stream)))
    if log_ratio is not None:
        monkeypatch.setattr(gibbs_sams, "_log_ratio", log_ratio)


def test_the_uncompiled_moves_are_the_same_kernel(monkeypatch):
    """The harness of the power tests: the Python form gives the compiled form's chain exactly."""
    n, prior = 6, PRIORS["pitman_yor"]
    fam = pack("diag", n)
    compiled = moves_only(fam, prior, n, 300, seed=4)
    uncompiled_moves(monkeypatch)
    assert np.array_equal(moves_only(fam, prior, n, 300, seed=4), compiled)


def test_an_acceptance_ratio_without_the_proposal_term_is_caught(monkeypatch):
    """Power against a wrong acceptance ratio: pi(proposed) / pi(current) alone (the final scan's
    probability dropped) is far from the posterior, and the enumeration check says so."""
    n, prior = 6, PRIORS["crp"]
    fam = pack("diag", n)
    parts, exact, _ = posteriors(prior, fam, n)
    uncompiled_moves(monkeypatch, lambda split, log_pi_ratio, log_q: log_pi_ratio if split else -log_pi_ratio)
    samples = moves_only(fam, prior, n, 15000, seed=1)
    with pytest.raises(AssertionError, match="TV|number of clusters"):
        check_against(parts, exact, samples[300:], [samples[300:].max(axis=1)])


def test_a_launch_that_copies_the_current_split_is_caught(monkeypatch):
    """Power against the trap of kept sub-clusters: if a merge's launch state is z's own split
    (what a sub-clustering carried along with the clusters would give), the forced final scan
    is too likely, merges are accepted too often, and the check fails. Made by passing a draw
    function that, for a merge, puts each item on its current block's side (two loose groups in
    2-d under the NIW likelihood: the current split and a sequential launch differ often)."""
    n, prior = 7, PRIORS["crp"]
    fam = pack("niw", n)
    parts, exact, _ = posteriors(prior, fam, n)
    uncompiled_moves(monkeypatch)
    state = {}
    real_on_slots = subclusters._subcluster_on_slots

    def spy(i, j, seed, scans, slot_of, *rest):
        state["slot_of"], state["bi"], state["rest"] = slot_of, slot_of[i], rest[13]
        state["same"] = slot_of[i] == slot_of[j]
        state["t"] = 0
        return real_on_slots(i, j, seed, scans, slot_of, *rest)

    real_draw = subclusters.draw_log_weights

    def copying_draw(lw, count, u):  # the launch's draws (the first m calls of a move)
        t = state["t"]
        state["t"] += 1
        if not state["same"]:
            h = state["rest"][t]
            return 0 if state["slot_of"][h] == state["bi"] else 1
        return real_draw(lw, count, u)

    monkeypatch.setattr(subclusters, "_subcluster_on_slots", spy)
    monkeypatch.setattr(subclusters, "draw_log_weights", copying_draw)
    samples = moves_only(fam, prior, n, 40000, seed=1, scans=0)
    with pytest.raises(AssertionError, match="TV|number of clusters"):
        check_against(parts, exact, samples[300:], [samples[300:].max(axis=1)])


def test_edge_cases_stay_in_bounds():
    """Two and three items, every start, many moves per sweep (the slot table grows from its
    smallest size), all-singleton and one-block starts at n = 12: valid canonical partitions."""
    from pymc_partitions.partition import enumerate_partitions  # noqa: PLC0415

    rng = np.random.default_rng(5)
    for n in (2, 3):
        fam, prior = pack("diag", n), PRIORS["finite_dirichlet"]
        kernel = GibbsSubClusterKernel(fam, prior.code, prior.kernel_params(), reps=3, moves=7, scans=2)
        for start in enumerate_partitions(n):
            for _ in range(20):
                labels, lj, _ = kernel.step(start, rng)
                assert np.isfinite(lj) and labels[0] == 0 and labels.max() < n
    fam = pack("bb", 12)
    for prior in PRIORS.values():
        kernel = GibbsSubClusterKernel(fam, prior.code, prior.kernel_params(), reps=2, moves=30, scans=1)
        for start in (np.zeros(12, np.int64), np.arange(12)):
            labels = start
            for _ in range(10):
                labels = kernel.step(labels, rng)[0]
                assert labels[0] == 0 and np.all(np.diff(np.maximum.accumulate(labels)) <= 1)


def test_gibbs_with_subcluster_moves_samples_uniform_colourings():
    """A hard constraint (GRAPH family): no move ever puts neighbours together, and the dead ends
    (an item neither side can take) are rejected, not forced."""
    from test_colouring import cycle_with_chord, exact  # noqa: PLC0415
    from pymc_partitions.colouring import greedy_colouring, is_proper  # noqa: PLC0415

    a = cycle_with_chord()
    fam, prior, parts, post = exact(a, 4)
    _, _, _, wrong = exact(a, 5)
    kernel = GibbsSubClusterKernel(fam, prior.code, prior.kernel_params(), reps=1, moves=3, scans=1)
    rng = np.random.default_rng(0)
    labels = greedy_colouring(a)
    samples = np.empty((10000, len(a)), np.int64)
    for t in range(len(samples)):
        labels = kernel.step(labels, rng)[0]
        assert is_proper(a, labels)
        samples[t] = labels
    check_against(parts, post, samples[200:], [samples[200:].max(axis=1), samples[200:, 0] == samples[200:, 2]],
                  wrong=wrong)


def test_deterministic_in_its_random_numbers_and_the_table_grows():
    """Same random numbers, same result; from one block at n = 40 the moves split into many blocks
    (more than the initial slot table holds)."""
    from pymc_partitions.families.kernels import DIAG_NORMAL, diag_normal_hyper  # noqa: PLC0415
    from pymc_partitions.priors import CRP  # noqa: PLC0415

    y = np.r_[np.arange(40.0) * 10.0][:, None]
    fam = FamilyPack.build([(DIAG_NORMAL, y, diag_normal_hyper(200.0, 300.0, 1.0, 1))])
    prior = CRP(1.0)
    kernel = GibbsSubClusterKernel(fam, prior.code, prior.kernel_params(), reps=1, moves=20, scans=1)
    rng = np.random.default_rng(3)
    labels = np.zeros(40, np.int64)
    for _ in range(30):
        numbers = kernel.random_numbers(rng, 40)
        a = gibbs_subcluster_sweeps(labels, fam, prior.code, prior.kernel_params(), *numbers, scans=1)
        b = gibbs_subcluster_sweeps(labels.copy(), fam, prior.code, prior.kernel_params(), *numbers, scans=1)
        assert np.array_equal(a[0], b[0]) and a[1] == b[1] and np.array_equal(a[2], b[2])
        labels = a[0]
    assert labels.max() + 1 > 20  # 40 far-apart points: most are alone


def test_hostile_arguments_are_refused():
    n, prior = 6, PRIORS["crp"]
    fam = pack("diag", n)
    p = prior.kernel_params()
    order, u = np.arange(n)[None], np.full((1, n), 0.5)
    seeds = np.zeros((1, 1), np.uint64)
    pair = np.array([[[0, 1]]])
    with pytest.raises(ValueError, match="two distinct items"):
        gibbs_subcluster_sweeps(np.zeros(n, int), fam, prior.code, p, order, u, np.array([[[2, 2]]]), seeds)
    with pytest.raises(ValueError, match="pairs"):
        gibbs_subcluster_sweeps(np.zeros(n, int), fam, prior.code, p, order, u, np.array([[[0, n]]]), seeds)
    with pytest.raises(ValueError, match="seeds must have shape"):
        gibbs_subcluster_sweeps(np.zeros(n, int), fam, prior.code, p, order, u, pair, np.zeros(2, np.uint64))
    with pytest.raises(ValueError, match="uniforms"):
        gibbs_subcluster_sweeps(np.zeros(n, int), fam, prior.code, p, order, u + 1.0, pair, seeds)
    for bad, err in ((-1, ValueError), (1.5, ValueError), ("1", TypeError), (True, TypeError), (10**6, ValueError)):
        with pytest.raises(err, match="scans"):
            gibbs_subcluster_sweeps(np.zeros(n, int), fam, prior.code, p, order, u, pair, seeds, scans=bad)
        with pytest.raises(err, match="GibbsSubClusterKernel: scans"):
            GibbsSubClusterKernel(fam, prior.code, p, scans=bad)
    with pytest.raises(ValueError, match="GibbsSubClusterKernel: reps"):
        GibbsSubClusterKernel(fam, prior.code, p, reps=0)
    with pytest.raises(ValueError, match="GibbsSubClusterKernel: moves"):
        GibbsSubClusterKernel(fam, prior.code, p, moves=-1)
    with pytest.raises(ValueError, match="two items"):
        GibbsSubClusterKernel(pack("diag", 1), prior.code, p)
    from pymc_partitions.families.kernels import NETWORK  # noqa: PLC0415
    from pymc_partitions.families.network import as_edges, network_hyper  # noqa: PLC0415

    edges = as_edges(np.array([[0, 1], [2, 3]]), 4)
    network = FamilyPack.build([(NETWORK, np.zeros((4, 1)), network_hyper(1.0, 1.0, edges, 4, False))])
    with pytest.raises(NotImplementedError, match="network"):
        GibbsSubClusterKernel(network, prior.code, p)
