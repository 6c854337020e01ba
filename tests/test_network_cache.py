"""The cached node moves of the network Gibbs sweep (samplers/network.py): the per-block sums kept
across moves equal a fresh computation, the cached log conditionals equal the O(K^2) reference
(same random numbers, same chain), and the pair-term primitives equal log Beta differences."""

import math

import numpy as np
import pytest

from models import PRIORS, family_parts
from pymc_partitions.families import kernels
from pymc_partitions.families.kernels import FamilyPack, pack_init
from pymc_partitions.families.network import as_edges, edge_gain, network_hyper, size_gain
from pymc_partitions.priors import CRP
from pymc_partitions.samplers.gibbs import _build
from pymc_partitions.samplers.network import (V_D, V_H, _network_gibbs_sweeps, net_build, net_cache_build,
                                              net_sweep_cached, network_offsets)


def random_graph(n, directed, seed, k=6, p_in=0.3, p_out=0.03):
    """A planted-partition graph on n nodes (k groups), dense enough that nodes touch many blocks."""
    rng = np.random.default_rng(seed)
    g = rng.integers(0, k, n)
    a = (rng.random((n, n)) < np.where(g[:, None] == g[None, :], p_in, p_out)).astype(int)
    np.fill_diagonal(a, 0)
    a[:, :5] = a[:5, :] = 0  # isolated nodes: no touched slot
    if directed:
        a[5, :] = 0  # a node with in-edges only, another with out-edges only
        a[:, 6] = 0
    else:
        a = np.triu(a, 1)
        a = a + a.T
    return as_edges(a, n, directed=directed)


def network_pack(n, kinds, seed=0):
    """A pack with one network family per entry of ``kinds`` ("net" / "netdir"; "diag" adds a Normal)."""
    parts = []
    for q, kind in enumerate(kinds):
        if kind == "diag":
            parts += family_parts("diag", n, seed)
            continue
        directed = kind == "netdir"
        a, b = (0.6, 1.4) if q % 2 == 0 else (2.5, 0.3)
        edges = random_graph(n, directed, seed + 10 * q)
        parts.append((kernels.NETWORK, np.zeros((n, 1)), network_hyper(a, b, edges, n, directed)))
    return FamilyPack.build(parts)


def pack_args(pk, prior):
    return (prior.code, np.asarray(prior.kernel_params(), np.float64), pk.codes, pk.dims, pk.data_off, pk.stat_off,
            pk.hyper_off, pk.hyper, pk.data)


KINDS = [("net",), ("netdir",), ("net", "netdir", "diag")]


@pytest.mark.parametrize("kinds", KINDS, ids=["undirected", "directed", "two-networks+normal"])
def test_cached_sums_match_a_fresh_computation_after_sweeps(kinds):
    """After each sweep (hundreds of moves from 10 blocks, the slot table growing) the cached
    P and per-block sums D, H equal a rebuild from the final state to 1e-9, and P is exactly 0 in
    the rows and columns of empty slots."""
    n = 400
    pk = network_pack(n, kinds)
    prior = CRP(3.0)
    args = pack_args(pk, prior)
    net_ho = network_offsets(pk)
    scratch = np.empty(max(1, pk.data.shape[1]))
    labels = np.random.default_rng(0).integers(0, 10, n)
    slot_of, sizes, stats, active, k = _build(labels, pk.codes, pk.dims, pk.data_off, pk.stat_off,
                                              pk.hyper_off, pk.hyper, pk.data, pk.width, scratch)
    sizes, stats, active = sizes[:k].copy(), stats[:k].copy(), active[:k].copy()  # a full table: it must grow
    empty = np.empty((1, pk.width))
    pack_init(pk.codes, pk.dims, pk.stat_off, pk.hyper_off, pk.hyper, empty, 0)
    E = net_build(slot_of, sizes.shape[0], net_ho, pk.hyper, n)
    rng = np.random.default_rng(1)
    seen_k = []
    for _ in range(5):
        sizes, stats, active, k, E, P, V = net_sweep_cached(slot_of, sizes, stats, active, k, E, rng.permutation(n),
                                                            rng.random(n), *args, empty, scratch, net_ho, True)
        seen_k.append(k)
        assert np.array_equal(E, net_build(slot_of, sizes.shape[0], net_ho, pk.hyper, n))
        P0, V0 = net_cache_build(E, net_ho, pk.hyper, sizes, active, k)
        occ = active[:k]
        for f in range(net_ho.shape[0]):
            assert np.max(np.abs(P[f][np.ix_(occ, occ)] - P0[f][np.ix_(occ, occ)])) < 1e-9
            assert np.max(np.abs(V[f, V_D, occ] - V0[f, V_D, occ])) < 1e-9
            assert np.max(np.abs(V[f, V_H, occ] - V0[f, V_H, occ])) < 1e-9
            free = np.setdiff1d(np.arange(sizes.shape[0]), occ)
            assert not P[f][free].any() and not P[f][:, free].any()
    assert sizes.shape[0] > 10 and min(seen_k) >= 3, (seen_k, sizes.shape)


@pytest.mark.parametrize("prior_name", list(PRIORS))
@pytest.mark.parametrize("kinds", KINDS, ids=["undirected", "directed", "two-networks+normal"])
def test_cached_sweeps_equal_the_reference_sweeps(kinds, prior_name):
    """Same random numbers, same chain: the cached log conditionals and the O(K^2) reference differ
    by rounding only, so both draw the same partitions (from many blocks, with emptied and new
    blocks; the finite Dirichlet also with its block limit reached)."""
    n = 120
    pk = network_pack(n, kinds, seed=3)
    prior = PRIORS[prior_name]
    args = pack_args(pk, prior) + (pk.width, network_offsets(pk))
    rng = np.random.default_rng(2)
    for start in (rng.integers(0, 12, n), np.zeros(n, np.int64), np.arange(n)):
        if prior_name == "finite_dirichlet":
            start = start % 3
        orders = np.stack([rng.permutation(n) for _ in range(6)])
        uniforms = rng.random(orders.shape)
        fast = _network_gibbs_sweeps(start, orders, uniforms, *args, True)
        slow = _network_gibbs_sweeps(start, orders, uniforms, *args, False)
        assert np.array_equal(fast[0], slow[0])
        assert fast[1] == pytest.approx(slow[1], abs=1e-8)


@pytest.mark.parametrize("a,b", [(0.6, 1.4), (1e-200, 3.0), (5.0, 1e-200), (1e6, 1e6), (1e-3, 1e150)])
def test_pair_term_primitives_match_log_beta(a, b):
    """size_gain and edge_gain (products of ratios for small increments, lgamma otherwise) equal
    differences of log Beta functions, also for extreme a, b where the products leave their range."""
    def g(e, m):  # log B(a + e, b + m - e) - log B(a, b) (scipy's betaln is inf at b = 1e-200)
        return (math.lgamma(a + e) + math.lgamma(b + (m - e)) - math.lgamma(a + b + m)
                - math.lgamma(a) - math.lgamma(b) + math.lgamma(a + b))

    rng = np.random.default_rng(0)
    for _ in range(300):
        pairs = float(rng.choice([0, 1, 5, 40, 10 ** 6, 3 * 10 ** 9]))
        e = float(rng.integers(0, pairs + 1)) if pairs < 1e6 else float(rng.integers(0, 1000))
        d = float(rng.choice([0, 1, 2, 7, 8, 9, 50, 10 ** 5]))
        # lgamma near x = pairs is exact to ~1e-16 x log x: at 3e9 pairs that is ~1e-5 for either side
        tol = 1e-8 * (1 + abs(g(e, pairs))) + 1e-14 * (pairs + d) * np.log(pairs + d + 2)
        want = g(e, pairs + d) - g(e, pairs)
        assert size_gain(e, pairs, d, a, b) == pytest.approx(want, rel=1e-9, abs=tol)
        c = float(min(rng.choice([0, 1, 2, 4, 5, 30]), pairs - e))
        want = g(e + c, pairs) - g(e, pairs)
        assert edge_gain(e, c, pairs, a, b) == pytest.approx(want, rel=1e-9, abs=tol)
