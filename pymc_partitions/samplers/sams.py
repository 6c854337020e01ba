"""Sequentially-allocated merge-split (SAMS; Dahl 2003), a Metropolis-Hastings split-merge move.

Two distinct items i, j are drawn uniformly. If they share a block S, the move proposes a split:
S_i = {i}, S_j = {j}, and the other items of S, in uniformly random order, join S_i or S_j with
probability proportional to (prior join weight of the block's size) x (predictive of the item
given the block). If they are in different blocks, it proposes their merge, and the proposal
probability of the reverse split is computed by forcing the same sequential allocation onto the
current two blocks (same order). The acceptance ratio is pi(proposed)/pi(current) times the
ratio of proposal probabilities; the prior part is built from the priors' sequential weights
(ratios of ``priors.log_eppf_sizes``), counting the blocks outside S.

As for the other kernels, a move is a deterministic function of (state, random numbers)
(:func:`sams_random_numbers`), and the seed 003 baseline for PGSM.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from .._numeric import draw_log_weights, draw_seed, keyed_bits, keyed_uniform, stream_key
from ..families.kernels import FamilyPack, pack_init, pack_log_marginal, pack_log_preds, pack_update
from ..partition import canonicalize_into
from ..priors import log_join_weight, log_new_weight

__all__ = ["sams_move", "sams_random_numbers", "SAMSKernel"]

ORDER, ALLOCATION, ACCEPTANCE = 0, 1, 2  # streams of a move's seed


@numba.njit(cache=True, error_model="numpy")
def _sams_core(labels, pair, seed, prior_code, prior_params,
               codes, dims, data_off, stat_off, hyper_off, hyper, data, width, out, info):
    """One SAMS move; writes canonical labels into ``out`` and [proposed split (1) or merge (0),
    accepted, log acceptance ratio, |S_i|, |S_j|] into ``info``."""
    n = labels.shape[0]
    canon = np.empty(n, np.int64)
    k = canonicalize_into(labels, canon)
    i = pair[0]
    j = pair[1]
    bi = canon[i]
    bj = canon[j]
    same = bi == bj
    k_out = k - 1 if same else k - 2
    stats = np.empty((4, width))  # S_i, S_j, merged block, empty block
    for r in range(4):
        pack_init(codes, dims, stat_off, hyper_off, hyper, stats, r)
    scratch = np.empty(max(1, data.shape[1]))
    pack_update(codes, dims, data_off, stat_off, hyper_off, hyper, stats, 0, data, i, 1.0, scratch)
    pack_update(codes, dims, data_off, stat_off, hyper_off, hyper, stats, 1, data, j, 1.0, scratch)
    pack_update(codes, dims, data_off, stat_off, hyper_off, hyper, stats, 2, data, i, 1.0, scratch)
    pack_update(codes, dims, data_off, stat_off, hyper_off, hyper, stats, 2, data, j, 1.0, scratch)
    side = np.full(n, -1, np.int64)
    side[i] = 0
    side[j] = 1
    size = np.ones(2, np.int64)
    rows = np.arange(2)
    lw = np.empty(2)
    lq = 0.0  # log probability of the split allocation
    # the other items of S_i u S_j, in the order of their random keys (stream ORDER of the seed)
    rest = np.empty(n, np.int64)
    m = 0
    for q in range(n):
        if q != i and q != j and (canon[q] == bi or canon[q] == bj):
            rest[m] = q
            m += 1
    order_key = stream_key(seed, ORDER)
    keys = np.empty(m, np.uint64)
    for s in range(m):
        keys[s] = keyed_bits(order_key, rest[s])
    rank = np.argsort(keys)
    alloc_key = stream_key(seed, ALLOCATION)
    for t in range(m):
        q = rest[rank[t]]
        lw[0] = log_join_weight(prior_code, prior_params, size[0])
        lw[1] = log_join_weight(prior_code, prior_params, size[1])
        pack_log_preds(codes, dims, data_off, stat_off, hyper_off, hyper, stats, rows, 2, data, q, scratch, lw)
        top = max(lw[0], lw[1])
        lse = top + math.log(math.exp(lw[0] - top) + math.exp(lw[1] - top))
        if same and lse == -np.inf:  # neither side can take q: the split is impossible (rejected below)
            c = 0
            lq = -np.inf
        elif same:
            c0 = lw[0]
            c1 = lw[1]
            c = draw_log_weights(lw, 2, keyed_uniform(alloc_key, t))
            lq += (c0 if c == 0 else c1) - lse
        else:
            c = 0 if canon[q] == bi else 1
            lq += lw[c] - lse
        side[q] = c
        size[c] += 1
        pack_update(codes, dims, data_off, stat_off, hyper_off, hyper, stats, c, data, q, 1.0, scratch)
        pack_update(codes, dims, data_off, stat_off, hyper_off, hyper, stats, 2, data, q, 1.0, scratch)
    # log pi(split) - log pi(merge): sequential prior weights from the state without S, then marginals
    d = log_new_weight(prior_code, prior_params, k_out + 1)
    for m in range(1, size[0]):
        d += log_join_weight(prior_code, prior_params, m)
    for m in range(1, size[1]):
        d += log_join_weight(prior_code, prior_params, m)
    for m in range(1, size[0] + size[1]):
        d -= log_join_weight(prior_code, prior_params, m)
    d += pack_log_marginal(codes, dims, stat_off, hyper_off, hyper, stats, 0)
    d += pack_log_marginal(codes, dims, stat_off, hyper_off, hyper, stats, 1)
    d -= pack_log_marginal(codes, dims, stat_off, hyper_off, hyper, stats, 2)
    log_ratio = d - lq if same else lq - d
    accept = math.log(keyed_uniform(stream_key(seed, ACCEPTANCE), 0)) < log_ratio
    tmp = np.empty(n, np.int64)
    for q in range(n):
        tmp[q] = canon[q]
    if accept:
        for q in range(n):
            if side[q] >= 0:
                tmp[q] = k + (side[q] if same else 0)
    canonicalize_into(tmp, out)
    info[0] = 1.0 if same else 0.0
    info[1] = 1.0 if accept else 0.0
    info[2] = log_ratio
    info[3] = size[0]
    info[4] = size[1]


def sams_random_numbers(rng: np.random.Generator, n: int):
    """(pair of distinct items, 64-bit seed). The seed's counter-based uniforms
    (:mod:`pymc_partitions._numeric`) order the other items, allocate them and accept or reject."""
    pair = rng.choice(n, size=2, replace=False).astype(np.int64)
    return pair, draw_seed(rng)


def sams_move(labels, pack: FamilyPack, prior_code: int, prior_params, randomness):
    """One SAMS move; returns (canonical labels, info) with info ``move`` ("split" or "merge"
    proposed), ``accepted``, ``log_ratio`` (log acceptance ratio) and ``sizes`` (|S_i|, |S_j|
    of the split side)."""
    labels = np.ascontiguousarray(labels, dtype=np.int64)
    n = labels.shape[0]
    pair, seed = randomness
    pair = np.ascontiguousarray(pair, np.int64)
    if pair.shape != (2,) or pair[0] == pair[1]:
        raise ValueError("need two distinct items")
    out = np.empty(n, np.int64)
    info = np.empty(5)
    _sams_core(labels, pair, np.uint64(seed), int(prior_code), np.asarray(prior_params, np.float64),
               pack.codes, pack.dims, pack.data_off, pack.stat_off, pack.hyper_off, pack.hyper, pack.data, pack.width,
               out, info)
    return out, {"move": "split" if info[0] else "merge", "accepted": bool(info[1]), "log_ratio": float(info[2]),
                 "sizes": (int(info[3]), int(info[4]))}


class SAMSKernel:
    """A SAMS move with its random numbers drawn from a numpy Generator."""

    def __init__(self, pack: FamilyPack, prior_code: int, prior_params):
        self.pack = pack
        self.prior_code = int(prior_code)
        self.prior_params = np.asarray(prior_params, np.float64)

    def random_numbers(self, rng: np.random.Generator, n: int):
        return sams_random_numbers(rng, n)

    def move(self, labels, randomness):
        return sams_move(labels, self.pack, self.prior_code, self.prior_params, randomness)

    def step(self, labels, rng: np.random.Generator):
        """One move: (canonical labels, info)."""
        return self.move(labels, self.random_numbers(rng, len(labels)))
