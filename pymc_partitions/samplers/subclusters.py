"""Collapsed Gibbs sweeps composed with sub-cluster split-merge moves, in one compiled loop.

The collapsed, exact counterpart of Chang & Fisher's (NeurIPS 2013) sub-cluster splits: a split
proposes to cut a cluster along a 2-way *sub-clustering* of its items that is already good
(built with the data), not along a one-pass allocation. Chang & Fisher keep the sub-clusters as
state from draw to draw; here they are rebuilt at each move, because keeping them cannot be made
exact in a collapsed sampler at no extra cost (why, below).

A move, for two distinct items i, j (drawn independently of the state) and S = the items of the
blocks of i and j other than i, j:

1. Sub-clusters (the launch state): S in a uniformly random order, each item joins i's side or
   j's side with probability proportional to (prior join weight of the side's size) x
   (predictive of the item given the side) -- the sequential allocation of SAMS (Dahl 2003) --,
   then ``scans`` restricted Gibbs scans over S in the same order (each item taken out of its side
   and put back on one of the two sides with the same weights): a collapsed Gibbs sampler of the
   two-sub-cluster model of S, i.e. the sub-cluster sampler of Chang & Fisher run ``scans`` times.
2. If i and j share a block (a split): one more restricted scan from the launch state gives the
   proposed split; T(split | z) is the product of that final scan's probabilities; the merge back
   has probability 1.
3. Else (a merge): the proposal merges the two blocks; T(z | merged) is the probability that the
   final scan from the same launch state gives z's two blocks (the scan forced onto them).
4. Accept with pi(z*) T(z | z*) / (pi(z) T(z* | z)).

Why it is exact. The launch state (step 1) is a function of S, i, j, the data and the move's
random numbers only: it does not look at how z divides S, so a split and the merge that reverses
it compute the same launch state. For a fixed launch state the final scan is a proposal kernel
between the merged state and its splits whose probabilities are computed exactly, and steps 2-4
are the Metropolis-Hastings kernel of that proposal; the launch's random numbers are an
auxiliary index drawn independently of the state, so the move -- a mixture of MH kernels over
that index, and over the pair -- is reversible for the posterior (the argument of Jain & Neal
2004, Sec. 3, whose random launch this replaces by a sequential one). A Gibbs sweep is exact, so
is the composition (``tests/test_subclusters_enumeration.py``: enumeration at n = 6-7, with a
power check against a wrong acceptance ratio and a launch that depends on the current split).

Why the sub-clusters are not kept from draw to draw. Keeping them exactly means an extended
target pi(z) q(s | z) over partitions and sub-labels s, with q(s | z) a law of the sub-labels of
each cluster that a move can evaluate, normalising constant included, because a split or a Gibbs
move changes the clusters that q conditions on. The informative q -- the posterior of the
two-sub-cluster model of the cluster -- has a normaliser that sums over 2^|c| sub-labellings; a q
that can be evaluated (a sequential allocation, independent coins) is a law that can also be
drawn afresh, and at stationarity kept sub-labels are distributed as such a fresh draw, so
keeping them buys nothing; and sub-labels with a law independent of z (kept under any update
that preserves it) are, at stationarity, independent of z: uninformative. Rebuilding the
sub-clusters per move, as above, gets the informative launch at the price of ``scans`` + 2 passes
over the two blocks per move, paid for by a better split proposal.

Random numbers: per sweep a visiting order and one uniform per visit (as :func:`.gibbs.gibbs_sweeps`);
per move a pair and a 64-bit seed whose counter-based streams ORDER, LAUNCH, SCANS, FINAL and
ACCEPTANCE give the order, the sequential allocation, the intermediate scans, the final scan and
the acceptance uniform.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from .. import _checks
from .._numeric import draw_log_weights, keyed_uniform, runtime_int, stream_key
from ..families.kernels import FamilyPack, merge_work_size, pack_init, pack_log_preds, pack_update
from ..partition import as_labels, canonicalize_dense_into
from ..priors import log_join_weight
from .gibbs import _build, _grow, _log_joint, _sweep
from .gibbs_sams import GibbsSAMSKernel, _accept_split_merge, _check_sweeps

__all__ = ["gibbs_subcluster_sweeps", "GibbsSubClusterKernel"]

ORDER, LAUNCH, SCANS, FINAL, ACCEPTANCE = 0, 1, 2, 3, 4  # streams of a move's seed
#: ``counts`` of a call: [proposed splits, accepted splits, accepted merges]
PROPOSED_SPLITS, SPLITS, MERGES = 0, 1, 2


@numba.njit(cache=True, error_model="numpy")
def _side_weights(h, size_a, size_b, rows, lw, prior_code, prior_params, codes, dims, data_off, stat_off, hyper_off,
                  hyper, stats, data, scratch):
    """``lw[0:2]``: the restricted log weights of item ``h`` for the two sides; returns their log
    normaliser (-inf if neither side can take it)."""
    lw[0] = log_join_weight(prior_code, prior_params, size_a)
    lw[1] = log_join_weight(prior_code, prior_params, size_b)
    pack_log_preds(codes, dims, data_off, stat_off, hyper_off, hyper, stats, rows, runtime_int(2), data, h, scratch, lw)
    top = max(lw[0], lw[1])
    lse = top if top == -np.inf else top + math.log(math.exp(lw[0] - top) + math.exp(lw[1] - top))
    if lse != lse or lse == np.inf:
        raise ValueError("SubClusterSplitMerge: a log weight is NaN or +inf: non-finite statistics or parameters")
    return lse


@numba.njit(cache=True, error_model="numpy")
def _subcluster_on_slots(i, j, seed, scans, slot_of, sizes, stats, active, n_active, prior_code, prior_params,
                         codes, dims, data_off, stat_off, hyper_off, hyper, data, rest, side, members, rows, lw, pick,
                         scratch, work, counts):
    """One sub-cluster split-merge move on the slot table; returns the new number of active slots.
    Needs three free slots (``active[n_active:n_active + 3]``, scratch rows; the caller grows the
    table first)."""
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
    for t in range(m - 1, 0, -1):  # a uniformly random order (Fisher-Yates)
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
    # 1. the launch state: a sequential allocation of S (which never looks at how z divides S) ...
    launch_key = stream_key(seed, runtime_int(LAUNCH))
    for t in range(m):
        h = rest[t]
        lse = _side_weights(h, size_a, size_b, rows, lw, prior_code, prior_params, codes, dims, data_off, stat_off,
                            hyper_off, hyper, stats, data, scratch)
        c = 0  # neither side can take h: side 0 (a function of S and the seed, as the rest of the launch)
        if lse != -np.inf:
            c = draw_log_weights(lw, runtime_int(2), keyed_uniform(launch_key, t))
        side[t] = c
        if c == 0:
            size_a += 1
        else:
            size_b += 1
        pack_update(codes, dims, data_off, stat_off, hyper_off, hyper, stats, rows[c], data, h, 1.0, scratch)
    # ... then ``scans`` restricted Gibbs scans, and the final scan (drawn for a split, forced for a merge)
    scan_key = stream_key(seed, runtime_int(SCANS))
    final_key = stream_key(seed, runtime_int(FINAL))
    lq = 0.0  # log T(split | merged) of the final scan
    for scan in range(scans + 1):
        final = scan == scans
        for t in range(m):
            h = rest[t]
            c = side[t]
            pack_update(codes, dims, data_off, stat_off, hyper_off, hyper, stats, rows[c], data, h, -1.0, scratch)
            if c == 0:
                size_a -= 1
            else:
                size_b -= 1
            lse = _side_weights(h, size_a, size_b, rows, lw, prior_code, prior_params, codes, dims, data_off,
                                stat_off, hyper_off, hyper, stats, data, scratch)
            if final and not same:  # forced onto z's two blocks
                c = 0 if slot_of[h] == bi else 1
                lq += lw[c] - lse
            elif lse != -np.inf:
                pick[0] = lw[0]
                pick[1] = lw[1]
                key, index = (final_key, t) if final else (scan_key, scan * n + t)
                c = draw_log_weights(pick, runtime_int(2), keyed_uniform(key, index))
                if final:
                    lq += lw[c] - lse
            elif final:  # a split: neither side can take h, the proposal is impossible (rejected)
                lq = -np.inf
            # (an intermediate scan where neither side can take h leaves it where it was)
            side[t] = c
            if c == 0:
                size_a += 1
            else:
                size_b += 1
            pack_update(codes, dims, data_off, stat_off, hyper_off, hyper, stats, rows[c], data, h, 1.0, scratch)
            if lq == -np.inf:
                break
        if lq == -np.inf:
            break
    log_u = math.log(keyed_uniform(stream_key(seed, runtime_int(ACCEPTANCE)), runtime_int(0)))
    return _accept_split_merge(same, lq, j, log_u, slot_of, sizes, stats, active, n_active, bi, bj, row_a, row_b,
                               row_m, size_a, size_b, rest, side, m, members, n_j, prior_code, prior_params,
                               codes, dims, stat_off, hyper_off, hyper, work, counts)


@numba.njit(cache=True, error_model="numpy")
def _gibbs_subcluster_core(labels, orders, uniforms, pairs, seeds, scans, prior_code, prior_params,
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
    pick = np.empty(2)
    work = np.empty(work_size)
    for r in range(orders.shape[0]):
        for q in range(pairs.shape[1]):
            while n_active + 3 > sizes.shape[0]:
                sizes, stats, active = _grow(sizes, stats, active)
            n_active = _subcluster_on_slots(pairs[r, q, 0], pairs[r, q, 1], seeds[r, q], scans, slot_of, sizes, stats,
                                            active, n_active, prior_code, prior_params, codes, dims, data_off,
                                            stat_off, hyper_off, hyper, data, rest, side, members, rows, lw, pick,
                                            scratch, work, counts)
        sizes, stats, active, n_active = _sweep(
            slot_of, sizes, stats, active, n_active, orders[r], uniforms[r], prior_code, prior_params,
            codes, dims, data_off, stat_off, hyper_off, hyper, data, empty, scratch,
        )
    lj = _log_joint(sizes, stats, active, n_active, prior_code, prior_params, codes, dims, stat_off, hyper_off, hyper)
    out = np.empty(n, np.int64)
    canonicalize_dense_into(slot_of, sizes.shape[0], out)  # slots lie in [0, capacity)
    return out, lj


def _scans(scans, owner):
    return _checks.integer("scans", scans, low=0, high=1000, owner=owner)


def gibbs_subcluster_sweeps(labels, pack: FamilyPack, prior_code: int, prior_params, orders, uniforms, pairs, seeds,
                            scans: int = 1):
    """Run ``len(orders)`` repetitions of (``pairs.shape[1]`` sub-cluster split-merge moves, one
    collapsed Gibbs sweep); returns (canonical labels, log joint, counts) with counts = [proposed
    splits, accepted splits, accepted merges] over all the moves.

    ``orders[r]`` / ``uniforms[r]`` drive the sweep of repetition ``r`` (as
    :func:`~pymc_partitions.samplers.gibbs.gibbs_sweeps`); ``pairs[r, q]`` (two distinct items) and
    ``seeds[r, q]`` (a 64-bit seed) the q-th move before it; ``scans`` (>= 0) restricted Gibbs
    scans refine each move's sub-clusters after their sequential allocation (the module's
    docstring). Every argument is checked first, so the compiled loop never indexes out of
    bounds. Network likelihoods are refused (use ``pmp.SplitMerge`` or ``pmp.ARM``). ``ValueError``
    if a draw meets a NaN or +inf log weight.

    Examples
    --------
    >>> import numpy as np
    >>> from pymc_partitions.families.kernels import FamilyPack, DIAG_NORMAL, diag_normal_hyper
    >>> from pymc_partitions.priors import CRP
    >>> y = np.r_[np.zeros(5), np.ones(5) * 6.0][:, None]
    >>> pack = FamilyPack.build([(DIAG_NORMAL, y, diag_normal_hyper(3.0, 4.0, 1.0, 1))])
    >>> kernel = GibbsSubClusterKernel(pack, CRP(1.0).code, CRP(1.0).kernel_params(), reps=3, moves=2)
    >>> labels, log_joint, counts = kernel.step(np.zeros(10, int), np.random.default_rng(0))
    >>> labels.tolist()
    [0, 0, 0, 0, 0, 1, 1, 1, 1, 1]
    """
    owner = "gibbs_subcluster_sweeps"
    return _run(*_check_sweeps(owner, labels, pack, prior_code, prior_params, orders, uniforms, pairs, seeds),
                _scans(scans, owner))


def _run(labels, pack, code, params, orders, uniforms, pairs, seeds, scans):
    counts = np.zeros(3, np.int64)
    out, lj = _gibbs_subcluster_core(labels, orders, uniforms, pairs, seeds, scans, code, params,
                                     pack.codes, pack.dims, pack.data_off, pack.stat_off, pack.hyper_off, pack.hyper,
                                     pack.data, pack.width, merge_work_size(pack.codes, pack.dims), counts)
    return out, float(lj), counts


class GibbsSubClusterKernel(GibbsSAMSKernel):
    """:func:`gibbs_subcluster_sweeps` with its random numbers drawn from a numpy Generator (the
    same numbers as :class:`~pymc_partitions.samplers.gibbs_sams.GibbsSAMSKernel`).

    Parameters
    ----------
    pack, prior_code, prior_params :
        The likelihoods and the prior (``prior.code``, ``prior.kernel_params()``).
    reps : int, default 1
        Repetitions (moves, then a sweep) per call to :meth:`step`.
    moves : int, default 1
        Sub-cluster split-merge moves before each sweep (0: Gibbs sweeps alone).
    scans : int, default 1
        Restricted Gibbs scans that refine each move's sub-clusters.
    """

    def __init__(self, pack: FamilyPack, prior_code: int, prior_params, reps: int = 1, moves: int = 1,
                 scans: int = 1):
        super().__init__(pack, prior_code, prior_params, reps, moves)
        self.scans = _scans(scans, "GibbsSubClusterKernel")

    def step(self, labels, rng: np.random.Generator):
        """One call: (canonical labels, log joint, counts)."""
        labels = as_labels(labels, self.pack.data.shape[0], owner="GibbsSubClusterKernel")
        orders, uniforms, pairs, seeds = self.random_numbers(rng, labels.shape[0])
        return _run(labels, self.pack, self.prior_code, self.prior_params, orders, uniforms, pairs, seeds, self.scans)
