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

from .. import _checks
from .._numeric import check_seed, draw_log_weights, draw_seed, keyed_bits, keyed_uniform, runtime_int, stream_key
from ..families.kernels import FamilyPack, pack_init, pack_log_marginal, pack_log_preds, pack_update
from ..partition import as_labels, canonicalize_into, integer_labels
from ..priors import log_join_weight, log_new_weight
from .gibbs import check_model

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
        pack_log_preds(codes, dims, data_off, stat_off, hyper_off, hyper, stats, rows, runtime_int(2), data, q, scratch, lw)
        top = max(lw[0], lw[1])
        if top == -np.inf:  # (-inf - -inf would make a NaN)
            lse = -np.inf
        else:
            lse = top + math.log(math.exp(lw[0] - top) + math.exp(lw[1] - top))
        if lse != lse or lse == np.inf:  # NaN or +inf: a log weight is NaN or +inf
            raise ValueError("SAMS: a log weight is NaN or +inf: non-finite statistics or parameters")
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
    if same and lq == -np.inf:
        log_ratio = -np.inf  # an impossible split (not the NaN of -inf - -inf): rejected
    else:
        log_ratio = d - lq if same else lq - d  # NaN only if both states have probability 0: rejected
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
    n = _checks.integer("n", n, low=2, owner="sams_random_numbers")
    pair = rng.choice(n, size=2, replace=False).astype(np.int64)
    return pair, draw_seed(rng)


def _pair(randomness, n, owner):
    """(pair as int64, seed as uint64), checked: two distinct items of 0..n-1 and a 64-bit seed."""
    try:
        pair, seed = randomness
    except (TypeError, ValueError):
        raise TypeError(f"{owner}: randomness must be (pair, seed), got {randomness!r}") from None
    pair = integer_labels(pair, name="pair", owner=owner)
    items = pair.tolist()
    if len(items) != 2 or items[0] == items[1] or min(items) < 0 or max(items) >= n:
        raise ValueError(f"{owner}: need two distinct items of 0..{n - 1}, got {pair}")
    return pair, check_seed(seed, owner)


def _move(labels, pack, prior_code, prior_params, pair, seed):
    out = np.empty(labels.shape[0], np.int64)
    info = np.empty(5)
    _sams_core(labels, pair, seed, prior_code, prior_params,
               pack.codes, pack.dims, pack.data_off, pack.stat_off, pack.hyper_off, pack.hyper, pack.data, pack.width,
               out, info)
    return out, {"move": "split" if info[0] else "merge", "accepted": bool(info[1]), "log_ratio": float(info[2]),
                 "sizes": (int(info[3]), int(info[4]))}


def sams_move(labels, pack: FamilyPack, prior_code: int, prior_params, randomness):
    """One SAMS move; returns (canonical labels, info) with info ``move`` ("split" or "merge"
    proposed), ``accepted``, ``log_ratio`` (log acceptance ratio) and ``sizes`` (|S_i|, |S_j|
    of the split side). Every argument is checked first (labels: n integers in [0, n); the pair:
    two distinct items); ``ValueError`` if a log weight is NaN or +inf."""
    prior_code, prior_params = check_model(pack, prior_code, prior_params, "sams_move")
    labels = as_labels(labels, pack.data.shape[0], owner="sams_move")
    pair, seed = _pair(randomness, labels.shape[0], "sams_move")
    return _move(labels, pack, prior_code, prior_params, pair, seed)


class SAMSKernel:
    """A SAMS move with its random numbers drawn from a numpy Generator."""

    def __init__(self, pack: FamilyPack, prior_code: int, prior_params):
        self.prior_code, self.prior_params = check_model(pack, prior_code, prior_params, "SAMSKernel")
        if pack.data.shape[0] < 2:
            raise ValueError("SAMSKernel: a split-merge move needs at least two items")
        self.pack = pack

    def random_numbers(self, rng: np.random.Generator, n: int):
        return sams_random_numbers(rng, n)

    def move(self, labels, randomness):
        labels = as_labels(labels, self.pack.data.shape[0], owner="SAMSKernel")
        pair, seed = _pair(randomness, labels.shape[0], "SAMSKernel")
        return _move(labels, self.pack, self.prior_code, self.prior_params, pair, seed)

    def step(self, labels, rng: np.random.Generator):
        """One move: (canonical labels, info)."""
        return self.move(labels, self.random_numbers(rng, len(labels)))
