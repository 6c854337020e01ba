"""Hostile inputs to the ARM and Jain-Neal kernels and the pair selection: every argument refused
with a message naming it (never an out-of-bounds index in compiled code); NaN / +inf log weights
raise; -inf weights are legitimate (finite Dirichlet with every component used, hard graph
constraints, where a draw may find no possible option: the move is then rejected)."""

import numpy as np
import pytest

from enumeration import check_against
from models import PRIORS, pack
from pymc_partitions.colouring import greedy_colouring, is_proper
from pymc_partitions.families.kernels import NETWORK, FamilyPack
from pymc_partitions.families.network import as_edges, network_hyper
from pymc_partitions.samplers import arm as arm_kernel
from pymc_partitions.samplers.arm import ARMKernel, ReferencePool, alternating_roles, arm_log_proposal, arm_move
from pymc_partitions.samplers.arm import arm_select_pair
from pymc_partitions.samplers.gibbs import GibbsKernel
from pymc_partitions.samplers.jain_neal import JainNealKernel, jain_neal_log_proposal, jain_neal_move

N = 8
PRIOR = PRIORS["crp"]
FAM = pack("diag", N)
ZA = np.array([0, 0, 0, 1, 1, 2, 2, 2])
ZB = np.array([0, 1, 0, 1, 1, 2, 3, 2])  # 0, 1 together in ZA, apart in ZB
GOOD = dict(labels=np.zeros(N, int), pack=FAM, prior_code=PRIOR.code, prior_params=PRIOR.kernel_params(),
            references=(ZA, ZB), pair=(0, 1), seed=3)


@pytest.mark.parametrize("change,exc,match", [
    (dict(labels=np.zeros(N - 1, int)), ValueError, "arm_move: labels must have length 8, got 7"),
    (dict(labels=np.full(N, N)), ValueError, r"labels must lie in \[0, 8\)"),
    (dict(labels=np.full(N, 0.5)), ValueError, "labels must be integers"),
    (dict(labels=np.array(["a"] * N)), TypeError, "labels must be integers"),
    (dict(references=ZA), TypeError, "references must be a pair"),
    (dict(references=(ZA, ZB[:-1])), ValueError, r"references\[1\] must have length 8"),
    (dict(references=(ZA + 8, ZB)), ValueError, r"references\[0\] must lie in \[0, 8\)"),
    (dict(pair=(0, 0)), ValueError, "two distinct items"),
    (dict(pair=(0, 8)), ValueError, "two distinct items"),
    (dict(pair=(0, 1, 2)), ValueError, "pair must be two integer items"),
    (dict(pair=(0.0, 1.0)), ValueError, "pair must be two integer items"),
    (dict(pair=(1, 3)), ValueError, r"together in references\[0\] and apart in references\[1\]"),
    (dict(pair=(0, 2)), ValueError, "together in references"),  # together in both
    (dict(seed=-1), ValueError, "seed must be an integer >= 0"),
    (dict(seed=2**64), ValueError, "seed must be an integer"),
    (dict(seed=1.5), ValueError, "seed must be an integer"),
    (dict(seed="1"), TypeError, "seed must be an integer"),
    (dict(pack="pack"), TypeError, "pack must be a FamilyPack"),
    (dict(prior_params=[np.nan, 0.0, 0.0]), ValueError, "prior_params must be three finite numbers"),
    (dict(prior_code=7), ValueError, "prior_code"),
])
def test_arm_move_refuses_bad_arguments(change, exc, match):
    kwargs = {**GOOD, **change}
    with pytest.raises(exc, match=match):
        arm_move(**kwargs)


def test_other_entry_points_refuse_bad_arguments():
    args = (FAM, PRIOR.code, PRIOR.kernel_params(), (ZA, ZB), (0, 1), 3)
    with pytest.raises(ValueError, match="order_seed must be an integer"):
        arm_move(np.zeros(N, int), *args, order_seed=-2)
    with pytest.raises(ValueError, match="propose must have length 8"):
        arm_move(np.zeros(N, int), *args, propose=np.zeros(3, int))
    with pytest.raises(ValueError, match=r"proposal must lie in \[0, 8\)"):
        arm_log_proposal(np.zeros(N, int), np.full(N, 9), *args)
    with pytest.raises(ValueError, match=r"references\[1\] must have length 8"):
        arm_select_pair((ZA, ZB[:3]), 1)
    with pytest.raises(TypeError, match="references must be a pair"):
        arm_select_pair(ZA, 1)
    assert arm_select_pair((np.zeros(1, int), np.zeros(1, int)), 1) is None
    kernel = ARMKernel(None, PRIOR.code, PRIOR.kernel_params())
    with pytest.raises(RuntimeError, match="no model yet"):
        kernel.move(np.zeros(N, int), (ZA, ZB), 1)
    kernel.set_model(FAM, PRIOR.kernel_params())
    with pytest.raises(ValueError, match=r"references\[0\] must lie in \[0, 8\)"):
        kernel.move(np.zeros(N, int), (ZA - 1, ZB), 1)
    for kwargs, exc, match in [(dict(synthetic=1.5), ValueError, "synthetic must be a finite number >= 0.0 and <= 1.0"),
                               (dict(synthetic=np.nan), ValueError, "synthetic must be a finite number"),
                               (dict(synthetic="often"), TypeError, "synthetic must be a number"),
                               (dict(synthetic_scans=-1), ValueError, "synthetic_scans must be an integer >= 0"),
                               (dict(synthetic_scans=2.5), ValueError, "synthetic_scans must be an integer"),
                               (dict(focus=-0.1), ValueError, "focus must be a finite number >= 0.0 and <= 1.0"),
                               (dict(focus=True), TypeError, "focus must be a number")]:
        with pytest.raises(exc, match=match):
            ARMKernel(FAM, PRIOR.code, PRIOR.kernel_params(), **kwargs)
    with pytest.raises(TypeError):
        ARMKernel(FAM, PRIOR.code, PRIOR.kernel_params(), 0.5)  # the options are keywords
    with pytest.raises(ValueError, match="mode must be one of"):
        ReferencePool("alternating")
    with pytest.raises(ValueError, match="n_chains must be an integer >= 3"):
        alternating_roles(2, 0)
    jn = (np.zeros(N, int), FAM, PRIOR.code, PRIOR.kernel_params())
    for kwargs, exc, match in [(dict(randomness=((0, 0), 1)), ValueError, "distinct"),
                               (dict(randomness=((0, 1), -1)), ValueError, "seed"),
                               (dict(randomness=((0, 1), 1), intermediate_scans=-1), ValueError, "intermediate_scans"),
                               (dict(randomness=((0, 1), 1), intermediate_scans=1.5), ValueError, "intermediate_scans"),
                               (dict(randomness=((0, 1), 1), launch_seed=2**64), ValueError, "launch_seed must be an integer"),
                               (dict(randomness=((0, 1), 1), propose=np.zeros(2, int)), ValueError, "propose")]:
        with pytest.raises(exc, match=match):
            jain_neal_move(*jn, **kwargs)
    with pytest.raises(ValueError, match="at least two items"):
        JainNealKernel(pack("diag", 1), PRIOR.code, PRIOR.kernel_params())
    assert jain_neal_log_proposal(np.zeros(N, int), np.arange(N), FAM, PRIOR.code, PRIOR.kernel_params(),
                                  ((0, 1), 2)) == -np.inf


def poisoned(fam):
    """A pack whose hyper vector was changed after build (bypassing its checks): sigma^2 = NaN."""
    hyper = fam.hyper.copy()
    hyper[:] = np.nan
    return fam._replace(hyper=hyper)


def test_nan_log_weights_raise():
    bad = poisoned(FAM)
    match = r"log weight is NaN or \+inf"
    with pytest.raises(ValueError, match=match):
        arm_move(np.zeros(N, int), bad, PRIOR.code, PRIOR.kernel_params(), (ZA, ZB), (0, 1), 3)
    with pytest.raises(ValueError, match=match):
        jain_neal_move(np.zeros(N, int), bad, PRIOR.code, PRIOR.kernel_params(), ((0, 1), 3))


def test_finite_dirichlet_with_every_component_used():
    """k = 3 components all used: opening a block has weight -inf, and the moves still run."""
    prior = PRIORS["finite_dirichlet"]
    kernel = ARMKernel(FAM, prior.code, prior.kernel_params())
    rng = np.random.default_rng(0)
    labels = np.arange(N) % 3
    for _ in range(200):
        labels, info = kernel.step(labels, (rng.integers(0, 3, N), rng.integers(0, 3, N)), rng)
        assert labels.max() < 3
        assert info["skipped"] or np.isfinite(info["log_forward"])


def test_uniform_colourings_with_arm_and_jain_neal():
    """A hard constraint (log predictive -inf for a neighbour in the block): dead ends are rejected,
    the chains stay proper and sample the uniform colourings (enumeration, n = 7)."""
    from test_colouring import cycle_with_chord, exact  # noqa: PLC0415

    a = cycle_with_chord()
    fam, prior, parts, post = exact(a, 4)
    _, _, _, wrong = exact(a, 5)
    proper = parts[post > 0]
    rng = np.random.default_rng(1)
    pool = proper[rng.choice(len(proper), 10, replace=False)]
    gibbs = GibbsKernel(fam, prior.code, prior.kernel_params())
    arm = ARMKernel(fam, prior.code, prior.kernel_params())
    jn = JainNealKernel(fam, prior.code, prior.kernel_params(), intermediate_scans=2)
    labels = greedy_colouring(a)
    samples = np.empty((10000, len(a)), np.int64)
    dead = 0
    for t in range(len(samples)):
        labels = gibbs.step(labels, rng)[0]
        i, j = rng.choice(len(pool), 2, replace=False)
        labels, info = arm.step(labels, (pool[i], pool[j]), rng)
        dead += info["dead_end"]
        assert is_proper(a, labels)
        labels, info = jn.step(labels, rng)
        assert is_proper(a, labels)
        samples[t] = labels
    assert dead > 0  # the constraint does stop some proposals
    check_against(parts, post, samples[200:], [samples[200:].max(axis=1), samples[200:, 0] == samples[200:, 2]],
                  wrong=wrong)


def test_a_wrongly_built_pack_is_refused():
    fam = FAM._replace(width=1)
    with pytest.raises(ValueError, match="layout is inconsistent"):
        arm_move(np.zeros(N, int), fam, PRIOR.code, PRIOR.kernel_params(), (ZA, ZB), (0, 1), 3)
    assert isinstance(FAM, FamilyPack)


def sparse_network(n, degree, seed):
    """A pack with one random sparse undirected graph on n nodes (about ``degree`` edges a node)."""
    rng = np.random.default_rng(seed)
    e = rng.integers(0, n, (degree * n // 2, 2))
    e = np.unique(np.sort(e[e[:, 0] != e[:, 1]], axis=1), axis=0)
    return FamilyPack.build([(NETWORK, np.zeros((n, 1)), network_hyper(1.0, 1.0, as_edges(e, n), n, False))])


@pytest.mark.parametrize("launch", ["split", "merge"])
def test_network_path_memory_does_not_grow_with_u(launch):
    """n = 20000 nodes, U = all of them, with refinement blocks of thousands moved as units: the
    path's edge-count matrix holds at most K + max(E_ROOM, 2 K_U) rows (a few), where one row per
    statistics row (about 3n: 10^10 bytes here) was allocated before; the move runs both ways in
    well under a second."""
    n = 20000
    fam = sparse_network(n, 6, 0)
    prior = PRIORS["crp"]
    halves = (np.arange(n) >= n // 2).astype(np.int64)
    x = np.zeros(n, np.int64) if launch == "split" else halves
    za, zb = np.zeros(n, np.int64), np.arange(n) % 5  # items 0 and n - 1: together in za, apart in zb
    seed = np.uint64(11)
    new, info = arm_move(x, fam, prior.code, prior.kernel_params(), (za, zb), (0, n - 1), seed)
    assert info["move"] == launch and info["u_size"] == n and info["refinement_blocks"] == (3 if launch == "split" else 8)
    assert info["proposal"] is not None
    perm, rank = arm_kernel._order(n, seed)
    for start, target in [(x, None), (info["proposal"], x)]:  # the drawn path, and the forced path back
        end, rec = arm_kernel._path_record(start, fam, prior.code, prior.kernel_params(), za, zb, 0, n - 1, perm,
                                           rank, seed, target)
        assert rec[arm_kernel.R_STATUS] == arm_kernel.OK and rec[arm_kernel.R_USIZE] == n
        if target is None:
            np.testing.assert_array_equal(end, info["proposal"])
        k, k_end, rows = rec[arm_kernel.R_KSTART], rec[arm_kernel.R_KEND], rec[arm_kernel.R_EROWS]
        assert k + 2 <= rows <= k + max(arm_kernel.E_ROOM, 2 * k_end) and rows < 40
