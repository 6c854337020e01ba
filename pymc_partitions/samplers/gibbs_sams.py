"""Collapsed Gibbs sweeps composed with SAMS split-merge moves, in one compiled loop.

One call runs ``reps`` repetitions of (``moves`` SAMS moves, then one collapsed Gibbs sweep) on
the sweep's own slot table (:mod:`.gibbs`): the block statistics are built once per call, not
once per kernel, and a move costs the allocation of the items of its one or two blocks, not a
pass over the data. It is what ``pm.sample`` runs on a partition by default
(:class:`pymc_partitions.GibbsSplitMerge`).

A SAMS move (Dahl 2003; the law of :mod:`.sams`): two distinct items i, j. If they share a block
S, propose to split it: S_i = {i}, S_j = {j}, the other items of S in uniformly random order join
S_i or S_j with probability proportional to (prior join weight of the side's size) x (predictive
of the item given the side); otherwise propose to merge their blocks, and the probability of the
reverse split is that of the same sequential allocation forced onto the two blocks. Accept with
pi(proposed) q(current | proposed) / (pi(current) q(proposed | current)). Each move is an exact
Metropolis-Hastings kernel for the pair, the pair is drawn independently of the state, and a
Gibbs sweep is exact: the composition leaves the posterior invariant
(``tests/test_gibbs_sams_enumeration.py``).

Random numbers: per sweep a visiting order and one uniform per visit (as :func:`.gibbs.gibbs_sweeps`);
per move a pair and a 64-bit seed whose counter-based streams ORDER, ALLOCATION and ACCEPTANCE
give the allocation order (Fisher-Yates), the split draws and the acceptance uniform. The visiting
order and allocation order differ from :mod:`.sams`'s (an argsort of hashed keys, whose numba sort
costs seconds of compilation); the law of a move is the same.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from .. import _checks
from .._numeric import (check_uniforms, draw_log_weights, draw_seed, keyed_sweep_numbers, keyed_uniform, runtime_int,
                        stream_key)
from ..families.kernels import (FamilyPack, merge_work_size, pack_init, pack_log_marginal, pack_log_preds,
                                pack_merge, pack_update)
from ..partition import as_labels, canonicalize_dense_into, index_array
from ..priors import log_join_set_weight, log_join_weight, log_new_weight
from .gibbs import _build, _grow, _log_joint, _sweep, check_model
from .slots import _free_slot

__all__ = ["gibbs_sams_sweeps", "GibbsSAMSKernel"]

ORDER, ALLOCATION, ACCEPTANCE = 0, 1, 2  # streams of a move's seed
#: ``counts`` of a call: [proposed splits, accepted splits, accepted merges]
PROPOSED_SPLITS, SPLITS, MERGES = 0, 1, 2


@numba.njit(cache=True, error_model="numpy")
def _copy_row(stats, src, dst):
    for c in range(stats.shape[1]):  # (a loop: see gibbs._grow)
        stats[dst, c] = stats[src, c]


@numba.njit(cache=True, error_model="numpy")
def _sams_on_slots(i, j, seed, slot_of, sizes, stats, active, n_active, prior_code, prior_params,
                   codes, dims, data_off, stat_off, hyper_off, hyper, data, rest, side, members, rows, lw, scratch,
                   work, counts):
    """One SAMS move on the slot table; returns the new number of active slots. Needs three free
    slots (``active[n_active:n_active + 3]``, scratch rows; the caller grows the table first)."""
    n = slot_of.shape[0]
    bi = slot_of[i]
    bj = slot_of[j]
    same = bi == bj
    row_a = active[n_active]  # i's side
    row_b = active[n_active + 1]  # j's side
    row_m = active[n_active + 2]  # the union of two blocks (merge proposals)
    m = runtime_int(0)
    n_j = runtime_int(0)
    for h in range(n):
        s = slot_of[h]
        if s == bi or s == bj:
            if h != i and h != j:
                rest[m] = h
                m += 1
            if s == bj and not same:
                members[n_j] = h
                n_j += 1
    order_key = stream_key(seed, runtime_int(ORDER))
    for t in range(m - 1, 0, -1):  # a uniformly random allocation order (Fisher-Yates)
        u = min(int(keyed_uniform(order_key, t) * (t + 1)), t)
        tmp = rest[t]
        rest[t] = rest[u]
        rest[u] = tmp
    pack_init(codes, dims, stat_off, hyper_off, hyper, stats, row_a)
    pack_init(codes, dims, stat_off, hyper_off, hyper, stats, row_b)
    pack_update(codes, dims, data_off, stat_off, hyper_off, hyper, stats, row_a, data, i, 1.0, scratch)
    pack_update(codes, dims, data_off, stat_off, hyper_off, hyper, stats, row_b, data, j, 1.0, scratch)
    size_a = runtime_int(1)
    size_b = runtime_int(1)
    rows[0] = row_a
    rows[1] = row_b
    alloc_key = stream_key(seed, runtime_int(ALLOCATION))
    lq = 0.0  # log probability of the split allocation
    for t in range(m):
        h = rest[t]
        lw[0] = log_join_weight(prior_code, prior_params, size_a)
        lw[1] = log_join_weight(prior_code, prior_params, size_b)
        pack_log_preds(codes, dims, data_off, stat_off, hyper_off, hyper, stats, rows, runtime_int(2), data, h, scratch,
                       lw)
        top = max(lw[0], lw[1])
        lse = top if top == -np.inf else top + math.log(math.exp(lw[0] - top) + math.exp(lw[1] - top))
        if lse != lse or lse == np.inf:
            raise ValueError("GibbsSplitMerge: a log weight is NaN or +inf: non-finite statistics or parameters")
        if same:
            if lse == -np.inf:  # neither side can take h: the split is impossible (rejected)
                lq = -np.inf
                break
            w0 = lw[0]
            w1 = lw[1]
            c = draw_log_weights(lw, runtime_int(2), keyed_uniform(alloc_key, t))  # (overwrites lw)
            lq += (w0 if c == 0 else w1) - lse
        else:
            c = 0 if slot_of[h] == bi else 1
            lq += lw[c] - lse
        side[t] = c
        if c == 0:
            size_a += 1
        else:
            size_b += 1
        pack_update(codes, dims, data_off, stat_off, hyper_off, hyper, stats, rows[c], data, h, 1.0, scratch)
    log_u = math.log(keyed_uniform(stream_key(seed, runtime_int(ACCEPTANCE)), runtime_int(0)))
    return _accept_split_merge(same, lq, j, log_u, slot_of, sizes, stats, active, n_active, bi, bj, row_a, row_b,
                               row_m, size_a, size_b, rest, side, m, members, n_j, prior_code, prior_params,
                               codes, dims, stat_off, hyper_off, hyper, work, counts)


@numba.njit(cache=True, error_model="numpy")
def _accept_split_merge(same, lq, j, log_u, slot_of, sizes, stats, active, n_active, bi, bj, row_a, row_b, row_m,
                        size_a, size_b, rest, side, m, members, n_j, prior_code, prior_params,
                        codes, dims, stat_off, hyper_off, hyper, work, counts):
    """The Metropolis-Hastings test of a split (of block ``bi`` into rows ``row_a`` / ``row_b``, the
    items ``rest[:m]`` on ``side``, ``lq`` the log probability of proposing it) or of a merge (of
    ``bj``'s ``members[:n_j]`` into ``bi``, ``lq`` the log probability of the reverse split), with
    ``log_u`` the log of the move's own acceptance uniform, and its commit when accepted; returns
    the new number of active slots. Shared by the SAMS launch of this module and the sub-cluster
    launch of :mod:`.subclusters`, which differ only in how they propose."""
    k_out = n_active - 1 if same else n_active - 2
    if lq == -np.inf:  # a split the final scan cannot make, or a merge whose reverse split it cannot
        log_ratio = -np.inf
    else:
        if same:
            size_a_final, size_b_final, merged = size_a, size_b, bi
        else:
            size_a_final, size_b_final, merged = sizes[bi], sizes[bj], row_m
            _copy_row(stats, bi, row_m)
            pack_merge(codes, dims, stat_off, hyper_off, hyper, stats, row_m, bj, members, runtime_int(0), n_j, work)
        d = log_new_weight(prior_code, prior_params, k_out + 1)
        d += log_join_set_weight(prior_code, prior_params, 1, size_a_final - 1)
        d += log_join_set_weight(prior_code, prior_params, 1, size_b_final - 1)
        d -= log_join_set_weight(prior_code, prior_params, 1, size_a_final + size_b_final - 1)
        if same:
            d += pack_log_marginal(codes, dims, stat_off, hyper_off, hyper, stats, row_a)
            d += pack_log_marginal(codes, dims, stat_off, hyper_off, hyper, stats, row_b)
        else:
            d += pack_log_marginal(codes, dims, stat_off, hyper_off, hyper, stats, bi)
            d += pack_log_marginal(codes, dims, stat_off, hyper_off, hyper, stats, bj)
        d -= pack_log_marginal(codes, dims, stat_off, hyper_off, hyper, stats, merged)
        log_ratio = _log_ratio(same, d, lq)
    if same:
        counts[PROPOSED_SPLITS] += 1
    if not log_u < log_ratio:
        return n_active
    if same:  # i's side keeps bi, j's side opens the next free slot (row_a, free again once copied)
        _copy_row(stats, row_a, bi)
        _copy_row(stats, row_b, row_a)
        for t in range(m):
            if side[t] == 1:
                slot_of[rest[t]] = row_a
        slot_of[j] = row_a
        sizes[bi] = size_a
        sizes[row_a] = size_b
        counts[SPLITS] += 1
        return n_active + 1
    _copy_row(stats, row_m, bi)
    for t in range(n_j):
        slot_of[members[t]] = bi
    sizes[bi] += sizes[bj]
    sizes[bj] = 0
    counts[MERGES] += 1
    return _free_slot(bj, active, n_active)


@numba.njit(cache=True, error_model="numpy")
def _log_ratio(split, log_pi_split_over_merged, log_q_split):
    """log acceptance ratio of a split (pi(split)/pi(merged)/q(split)) or of a merge (its inverse)."""
    if split:
        return log_pi_split_over_merged - log_q_split
    return log_q_split - log_pi_split_over_merged


@numba.njit(cache=True, error_model="numpy")
def _gibbs_sams_core(labels, orders, uniforms, pairs, seeds, prior_code, prior_params,
                     codes, dims, data_off, stat_off, hyper_off, hyper, data, width, work_size, counts):
    n = labels.shape[0]
    scratch = np.empty(max(1, data.shape[1]))
    slot_of, sizes, stats, active, n_active = _build(
        labels, codes, dims, data_off, stat_off, hyper_off, hyper, data, width, scratch
    )
    empty = np.empty((1, width))
    pack_init(codes, dims, stat_off, hyper_off, hyper, empty, runtime_int(0))
    rest = np.empty(n, np.int64)
    side = np.empty(n, np.int64)
    members = np.empty(n, np.int64)
    rows = np.empty(2, np.int64)
    lw = np.empty(2)
    work = np.empty(work_size)
    for r in range(orders.shape[0]):
        for q in range(pairs.shape[1]):
            while n_active + 3 > sizes.shape[0]:
                sizes, stats, active = _grow(sizes, stats, active)
            n_active = _sams_on_slots(pairs[r, q, 0], pairs[r, q, 1], seeds[r, q], slot_of, sizes, stats, active,
                                      n_active, prior_code, prior_params, codes, dims, data_off, stat_off, hyper_off,
                                      hyper, data, rest, side, members, rows, lw, scratch, work, counts)
        sizes, stats, active, n_active = _sweep(
            slot_of, sizes, stats, active, n_active, orders[r], uniforms[r], prior_code, prior_params,
            codes, dims, data_off, stat_off, hyper_off, hyper, data, empty, scratch,
        )
    lj = _log_joint(sizes, stats, active, n_active, prior_code, prior_params, codes, dims, stat_off, hyper_off, hyper)
    out = np.empty(n, np.int64)
    canonicalize_dense_into(slot_of, sizes.shape[0], out)  # slots lie in [0, capacity)
    return out, lj


def _check_pairs(pairs, reps, n, owner):
    pairs = index_array(pairs, n, name="pairs", owner=owner)
    if pairs.ndim != 3 or pairs.shape[0] != reps or pairs.shape[2] != 2:
        raise ValueError(f"{owner}: pairs must have shape (repetitions, moves, 2) = ({reps}, moves, 2), got "
                         f"{pairs.shape}")
    if pairs.size and np.any(pairs[..., 0] == pairs[..., 1]):
        raise ValueError(f"{owner}: every pair must hold two distinct items")
    return pairs


def _check_seeds(seeds, shape, owner):
    arr = np.asarray(seeds)
    if arr.shape != shape:
        raise ValueError(f"{owner}: seeds must have shape {shape} (one per move), got {arr.shape}")
    if arr.dtype != np.uint64:
        if arr.size and not (np.issubdtype(arr.dtype, np.integer) and arr.min() >= 0):
            raise TypeError(f"{owner}: seeds must be non-negative integers (64-bit), got dtype {arr.dtype}")
        arr = arr.astype(np.uint64)
    return np.ascontiguousarray(arr)


def gibbs_sams_sweeps(labels, pack: FamilyPack, prior_code: int, prior_params, orders, uniforms, pairs, seeds):
    """Run ``len(orders)`` repetitions of (``pairs.shape[1]`` SAMS moves, one collapsed Gibbs sweep);
    returns (canonical labels, log joint, counts) with counts = [proposed splits, accepted splits,
    accepted merges] over all the moves.

    ``orders[r]`` / ``uniforms[r]`` drive the sweep of repetition ``r`` (as
    :func:`~pymc_partitions.samplers.gibbs.gibbs_sweeps`); ``pairs[r, q]`` (two distinct items) and
    ``seeds[r, q]`` (a 64-bit seed) the q-th move before it. Every argument is checked first, so the
    compiled loop never indexes out of bounds. Network likelihoods are refused (their block-pair
    terms are not in these moves: use ``pmp.SplitMerge`` or ``pmp.ARM``). ``ValueError`` if a draw
    meets a NaN or +inf log weight.

    Examples
    --------
    >>> import numpy as np
    >>> from pymc_partitions.families.kernels import FamilyPack, DIAG_NORMAL, diag_normal_hyper
    >>> from pymc_partitions.priors import CRP
    >>> y = np.r_[np.zeros(5), np.ones(5) * 6.0][:, None]
    >>> pack = FamilyPack.build([(DIAG_NORMAL, y, diag_normal_hyper(3.0, 4.0, 1.0, 1))])
    >>> kernel = GibbsSAMSKernel(pack, CRP(1.0).code, CRP(1.0).kernel_params(), reps=3, moves=2)
    >>> labels, log_joint, counts = kernel.step(np.zeros(10, int), np.random.default_rng(0))
    >>> labels.tolist()
    [0, 0, 0, 0, 0, 1, 1, 1, 1, 1]
    """
    return _run(*_check_sweeps("gibbs_sams_sweeps", labels, pack, prior_code, prior_params, orders, uniforms,
                               pairs, seeds))


def _check_sweeps(owner, labels, pack, prior_code, prior_params, orders, uniforms, pairs, seeds):
    """The arguments of a sweeps-with-moves function (this module's and :mod:`.subclusters`'),
    checked: (labels, pack, code, params, orders, uniforms, pairs, seeds)."""
    code, params = check_model(pack, prior_code, prior_params, owner)
    n = pack.data.shape[0]
    labels = as_labels(labels, n, owner=owner)
    orders = np.atleast_2d(index_array(orders, n, name="orders", owner=owner))
    if orders.ndim != 2:
        raise ValueError(f"{owner}: orders must be (repetitions, visits), got shape {orders.shape}")
    uniforms = check_uniforms(np.atleast_2d(np.asarray(uniforms, dtype=np.float64)), orders.shape, owner)
    pairs = _check_pairs(pairs, orders.shape[0], n, owner)
    seeds = _check_seeds(seeds, pairs.shape[:2], owner)
    return labels, pack, code, params, orders, uniforms, pairs, seeds


def _run(labels, pack, code, params, orders, uniforms, pairs, seeds):
    counts = np.zeros(3, np.int64)
    out, lj = _gibbs_sams_core(labels, orders, uniforms, pairs, seeds, code, params,
                               pack.codes, pack.dims, pack.data_off, pack.stat_off, pack.hyper_off, pack.hyper, pack.data,
                               pack.width, merge_work_size(pack.codes, pack.dims), counts)
    return out, float(lj), counts


class GibbsSAMSKernel:
    """:func:`gibbs_sams_sweeps` with its random numbers drawn from a numpy Generator.

    Parameters
    ----------
    pack, prior_code, prior_params :
        The likelihoods and the prior (``prior.code``, ``prior.kernel_params()``).
    reps : int, default 1
        Repetitions (moves, then a sweep) per call to :meth:`step`.
    moves : int, default 1
        SAMS moves before each sweep (0: Gibbs sweeps alone).
    """

    def __init__(self, pack: FamilyPack, prior_code: int, prior_params, reps: int = 1, moves: int = 1):
        owner = type(self).__name__
        self.prior_code, self.prior_params = check_model(pack, prior_code, prior_params, owner)
        self.pack = pack
        self.reps = _checks.integer("reps", reps, low=1, owner=owner)
        self.moves = _checks.integer("moves", moves, low=0, owner=owner)
        if self.moves and pack.data.shape[0] < 2:
            raise ValueError(f"{owner}: a split-merge move needs at least two items (pass moves=0)")

    def random_numbers(self, rng: np.random.Generator, n: int):
        """(orders, uniforms, pairs, seeds) of one call, from one seed drawn from ``rng``
        (:func:`~pymc_partitions._numeric.keyed_sweep_numbers`)."""
        return keyed_sweep_numbers(n, self.reps, self.moves, draw_seed(rng))

    def step(self, labels, rng: np.random.Generator):
        """One call: (canonical labels, log joint, counts)."""
        labels = as_labels(labels, self.pack.data.shape[0], owner="GibbsSAMSKernel")
        orders, uniforms, pairs, seeds = self.random_numbers(rng, labels.shape[0])
        return _run(labels, self.pack, self.prior_code, self.prior_params, orders, uniforms, pairs, seeds)
