"""Statistics of sets and unions of blocks (``pack_set_stats``, ``pack_merge``), and the prior's
weights for a set joining a block or opening one (``log_join_set_weight``, ``log_new_set_weight``):
the merged statistics equal those built item by item, and the weights equal EPPF ratios."""

import numpy as np
import pytest

from models import PRIORS
from pymc_partitions.families import kernels as K
from pymc_partitions.families.kernels import FamilyPack, merge_work_size, pack_init, pack_log_marginal, pack_merge
from pymc_partitions.families.kernels import pack_set_stats, pack_update
from pymc_partitions.priors import UniformLabels, log_eppf_sizes, log_join_set_weight, log_join_weight
from pymc_partitions.priors import log_new_set_weight, log_new_weight


def packs(n, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.normal(size=(n, 3)) * 2.0 + 5.0  # off-centre: the NIW union must not lose digits
    b = (rng.random((n, 4)) < 0.4).astype(float)
    adj = np.triu((rng.random((n, n)) < 0.3).astype(float), 1)
    adj = adj + adj.T
    a = rng.normal(size=(3, 3))
    return {
        "diag": FamilyPack.build([(K.DIAG_NORMAL, y, K.diag_normal_hyper([0.5, 0.0, 1.0], 2.0, [1.0, 0.8, 1.3], 3))]),
        "niw": FamilyPack.build([(K.NIW, y, K.niw_hyper([1.0, -1.0, 0.0], 0.5, 5.0, a @ a.T + np.eye(3), 3, n))]),
        "bb": FamilyPack.build([(K.BETA_BERNOULLI, b, K.beta_bernoulli_hyper(0.5, [1.0, 2.0, 0.7, 3.0], 4))]),
        "graph": FamilyPack.build([(K.GRAPH, adj, np.zeros(0))]),
        "lr": FamilyPack.build([(K.LINEAR_REGRESSION, np.c_[np.ones(n), y],
                                 K.linear_regression_hyper([1.0, 0.0, 0.5], a @ a.T + np.eye(3), 2.0, 1.5, 3))]),
        "multi": FamilyPack.build([(K.DIAG_NORMAL, y, K.diag_normal_hyper(0.0, 2.0, 1.0, 3)),
                                   (K.NIW, y[:, :2], K.niw_hyper(0.0, 1.0, 4.0, np.eye(2), 2, n)),
                                   (K.BETA_BERNOULLI, b, K.beta_bernoulli_hyper(1.0, 1.0, 4))]),
    }


def args(p):
    return p.codes, p.dims, p.stat_off, p.hyper_off, p.hyper


def build_one_by_one(p, items):
    st = np.empty((1, p.width))
    pack_init(*args(p), st, 0)
    scratch = np.empty(max(1, p.data.shape[1]))
    for i in items:
        pack_update(p.codes, p.dims, p.data_off, p.stat_off, p.hyper_off, p.hyper, st, 0, p.data, i, 1.0, scratch)
    return st[0]


@pytest.mark.parametrize("family", ["diag", "niw", "bb", "graph", "multi", "lr"])
def test_merge_equals_item_by_item(family):
    n = 30
    p = packs(n)[family]
    rng = np.random.default_rng(1)
    scratch = np.empty(max(1, p.data.shape[1]))
    work = np.empty(merge_work_size(p.codes, p.dims))
    for _ in range(40):
        perm = rng.permutation(n)
        na, nb = rng.integers(0, 12, 2)
        a, b = perm[:na], perm[na:na + nb]
        st = np.empty((3, p.width))
        pack_set_stats(p.codes, p.dims, p.data_off, p.stat_off, p.hyper_off, p.hyper, st, 0, p.data, perm, 0, na,
                       scratch)
        pack_set_stats(p.codes, p.dims, p.data_off, p.stat_off, p.hyper_off, p.hyper, st, 1, p.data, perm, na, nb,
                       scratch)
        np.testing.assert_allclose(st[0], build_one_by_one(p, a), rtol=1e-10, atol=1e-10)
        pack_merge(*args(p), st, 0, 1, perm, na, nb, work)
        want = build_one_by_one(p, np.r_[a, b])
        np.testing.assert_allclose(st[0], want, rtol=1e-9, atol=1e-9)
        got_lm = pack_log_marginal(*args(p), st, 0)
        st[2] = want
        assert got_lm == pytest.approx(pack_log_marginal(*args(p), st, 2), rel=1e-11, abs=1e-11)
        if family in ("bb", "graph"):  # sums of 0/1: exact
            np.testing.assert_array_equal(st[1], build_one_by_one(p, b))


def test_merge_into_and_of_an_empty_block():
    p = packs(10)["niw"]
    work = np.empty(merge_work_size(p.codes, p.dims))
    scratch = np.empty(3)
    items = np.arange(10)
    st = np.empty((2, p.width))
    pack_init(*args(p), st, 0)
    pack_set_stats(p.codes, p.dims, p.data_off, p.stat_off, p.hyper_off, p.hyper, st, 1, p.data, items, 0, 4, scratch)
    pack_merge(*args(p), st, 0, 1, items, 0, 4, work)  # empty destination: a copy
    np.testing.assert_array_equal(st[0], st[1])
    pack_init(*args(p), st, 1)
    before = st[0].copy()
    pack_merge(*args(p), st, 0, 1, items, 4, 0, work)  # empty source: nothing changes
    np.testing.assert_array_equal(st[0], before)
    assert merge_work_size(p.codes, p.dims) == 15 and merge_work_size([K.DIAG_NORMAL], [5]) == 1


@pytest.mark.parametrize("name", [*PRIORS, "uniform"])
def test_set_weights_are_eppf_ratios(name):
    """Candidates for a set of s items over one fixed state: joining block b (size m_b) or opening a
    block. Their EPPF differences equal the differences of the set weights."""
    prior = UniformLabels(5) if name == "uniform" else PRIORS[name]
    code, params = prior.code, prior.kernel_params()
    for sizes in ([3], [2, 1], [4, 1, 2], [1, 1]):
        sizes = np.array(sizes, np.int64)
        for s in (1, 2, 4):
            joined = []
            for b in range(len(sizes)):
                grown = sizes.copy()
                grown[b] += s
                joined.append(log_eppf_sizes(code, params, grown))
                assert log_join_set_weight(code, params, sizes[b], s) == pytest.approx(
                    sum(log_join_weight(code, params, sizes[b] + t) for t in range(s)), rel=1e-12, abs=1e-12)
            new = log_eppf_sizes(code, params, np.r_[sizes, s])
            w_join = [log_join_set_weight(code, params, m, s) for m in sizes]
            w_new = log_new_set_weight(code, params, len(sizes), s)
            for b in range(len(sizes)):
                assert joined[b] - joined[0] == pytest.approx(w_join[b] - w_join[0], abs=1e-12)
                if np.isfinite(new):
                    assert new - joined[b] == pytest.approx(w_new - w_join[b], abs=1e-12)
                else:  # a finite prior with every label used: the new block is impossible
                    assert w_new == -np.inf
            assert log_join_set_weight(code, params, 3, 0) == 0.0
            assert log_new_set_weight(code, params, len(sizes), 1) == log_new_weight(code, params, len(sizes))
