"""Jain & Neal's (2004) restricted-Gibbs split-merge move, as one compiled Metropolis-Hastings move.

Seed 004's Algorithm 1, the split-merge most papers compare against. Two distinct items i, j;
S = (z_i ∪ z_j) \\ {i, j}.

1. Launch state: i and j in blocks of their own, each item of S put with i or j uniformly at
   random, then ``L`` intermediate restricted Gibbs scans over S (each item, in a random order,
   removed and put with i or j with probability ∝ prior join weight × predictive).
2. If z_i = z_j (a split): one more restricted scan from the launch state gives the proposal;
   T(split | z) is the product of that scan's probabilities, and the merge back has probability 1.
3. Else (a merge): the proposal merges the two blocks; T(z | merge) is the probability that one
   restricted scan from the launch state gives z's two blocks (the forced scan).
4. Accept with pi(z*) T(z | z*) / (pi(z) T(z* | z)).

The launch state depends on S, the data and its random numbers only (not on how z splits S),
so a split and the merge it reverses share it: for a fixed launch the move is an exact MH
kernel, and the launch's randomness (the order, the random split, the intermediate scans) is
the auxiliary index of the move (their Sec. 3). Everything is drawn from one 64-bit seed's
counter-based uniforms: streams ORDER, LAUNCH and SCANS (the index phi; ``launch_seed`` may
replace the seed for them), FINAL (one uniform per item of the final scan) and ACCEPTANCE.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from .. import _checks
from .._numeric import draw_seed, keyed_uniform, runtime_int, stream_key
from ..families.kernels import FamilyPack, pack_init, pack_log_marginal, pack_log_preds, pack_update
from ..partition import as_labels, canonicalize_into
from ..priors import log_join_set_weight, log_join_weight, log_new_weight
from ..families.network import net_add_node, net_clear_counts, net_join_logw, net_node_counts
from ._mh import _log_normaliser, _metropolis, _named_seed, _pick
from .gibbs import check_model
from .network import net_fill, net_total, network_offsets
from .sams import _pair

__all__ = ["jain_neal_move", "jain_neal_log_proposal", "JainNealKernel"]

ORDER, LAUNCH, SCANS, FINAL, ACCEPTANCE = 0, 1, 2, 3, 4  # streams of a move's seed
OK, DEAD_END, UNREACHABLE = 0, 1, 2
# record: [split proposed, log pi(split) - log pi(merged), log T of the final scan (forward for a
# split, reverse for a merge), |S_i|, |S_j| of the split side, status]
RECORD = 6


@numba.njit(cache=True, error_model="numpy")
def _restricted(h, side, size, stats, rows, logw, prior_code, prior_params, codes, dims, data_off, stat_off,
                hyper_off, hyper, data, scratch):
    """Take ``h`` out of its side; ``logw[0:2]`` = its restricted Gibbs weights for the two sides
    (rows ``rows[0:2]``); returns their log normaliser."""
    s = side[h]
    size[s] -= 1
    pack_update(codes, dims, data_off, stat_off, hyper_off, hyper, stats, s, data, h, -1.0, scratch)
    logw[0] = log_join_weight(prior_code, prior_params, size[0])
    logw[1] = log_join_weight(prior_code, prior_params, size[1])
    pack_log_preds(codes, dims, data_off, stat_off, hyper_off, hyper, stats, rows, runtime_int(2), data, h, scratch, logw)
    return _log_normaliser(logw, 2)


@numba.njit(cache=True, error_model="numpy")
def _jn_core(x, i, j, scans, order_key, launch_key, scan_key, final_key, propose, has_propose,
             prior_code, prior_params, codes, dims, data_off, stat_off, hyper_off, hyper, data, width, out, res,
             net_ho, with_ratio=True):
    """One proposal; writes it (canonical labels) into ``out`` and the record into ``res``; ``out``
    is ``x`` canonicalised when no proposal is made (a dead end, or a forced proposal the move
    cannot make). ``with_ratio`` False: the proposal only (log pi(split) - log pi(merged) is not
    computed, ``res[1]`` is NaN).

    Network families (hyper offsets ``net_ho``): nodes sit in rows ``slot`` -- x's other blocks
    (their labels), side 0 and side 1 (rows k, k + 1) -- with edge counts ``E`` between rows, and
    each restricted weight adds the change of all block-pair terms (O(degree + k) per item)."""
    n = x.shape[0]
    cx = np.empty(n, np.int64)
    k = canonicalize_into(x, cx)
    bi = cx[i]
    bj = cx[j]
    same = bi == bj
    k_out = k - 1 if same else k - 2
    for c in range(RECORD):
        res[c] = 0.0
    res[0] = 1.0 if same else 0.0
    rest = np.empty(n, np.int64)
    ns = 0
    for h in range(n):
        if h != i and h != j and (cx[h] == bi or cx[h] == bj):
            rest[ns] = h
            ns += 1
    for t in range(ns - 1, 0, -1):  # a random visiting order (Fisher-Yates)
        s = min(int(keyed_uniform(order_key, t) * (t + 1)), t)
        tmp = rest[t]
        rest[t] = rest[s]
        rest[s] = tmp
    stats = np.empty((3, width))
    for r in range(3):
        pack_init(codes, dims, stat_off, hyper_off, hyper, stats, r)
    scratch = np.empty(max(1, data.shape[1]))
    side = np.full(n, -1, np.int64)
    size = np.zeros(2, np.int64)
    rows = np.arange(2)
    logw = np.empty(2)
    side[i] = 0
    side[j] = 1
    for h in (i, j):
        pack_update(codes, dims, data_off, stat_off, hyper_off, hyper, stats, side[h], data, h, 1.0, scratch)
        size[side[h]] += 1
    for t in range(ns):  # the random launch split
        h = rest[t]
        side[h] = 0 if keyed_uniform(launch_key, h) < 0.5 else 1
        pack_update(codes, dims, data_off, stat_off, hyper_off, hyper, stats, side[h], data, h, 1.0, scratch)
        size[side[h]] += 1
    nf = net_ho.shape[0]
    nrows = k + 2
    slot = np.empty(n, np.int64)
    for h in range(n):
        slot[h] = k + side[h] if side[h] >= 0 else cx[h]
    rsize = np.zeros(nrows, np.int64)
    for h in range(n):
        rsize[slot[h]] += 1
    all_rows = np.arange(nrows)
    sides = np.arange(k, k + 2)
    E = np.zeros((nf, nrows if nf > 0 else 0, nrows if nf > 0 else 0))
    nout = np.zeros((nf, nrows))
    ninn = np.zeros((nf, nrows))
    ntouch = np.zeros((nf, 2 * n + 1), np.int64)
    nw1 = np.empty(1)
    if nf > 0:
        net_fill(E, net_ho, hyper, n, slot)
    for scan in range(scans + 1):  # L intermediate scans, then the final one
        final = scan == scans
        for t in range(ns):
            h = rest[t]
            lse = _restricted(h, side, size, stats, rows, logw, prior_code, prior_params, codes, dims, data_off,
                              stat_off, hyper_off, hyper, data, scratch)
            if nf > 0:  # the block-pair terms, against every row
                rsize[slot[h]] -= 1
                for f in range(nf):
                    ntouch[f, 2 * n] = net_node_counts(hyper, net_ho[f], n, slot, h, nout[f], ninn[f], ntouch[f], 0)
                    net_add_node(E, f, hyper, net_ho[f], n, slot, h, slot[h], -1.0)
                    net_join_logw(E, f, hyper, net_ho[f], rsize, all_rows, nrows, sides, 2, nout[f], ninn[f], 1.0, 0.0,
                                  logw, nw1)
                lse = _log_normaliser(logw, 2)
            if final and (has_propose or not same):  # forced: to the proposal's or to x's split
                if not same:
                    o = 0 if cx[h] == bi else 1
                else:
                    o = 0 if propose[h] == propose[i] else (1 if propose[h] == propose[j] else -1)
                if o < 0 or logw[o] == -np.inf:
                    res[5] = UNREACHABLE
                    res[1] = -np.inf
                    res[2] = -np.inf
                    canonicalize_into(x, out)
                    return
            elif lse == -np.inf:
                res[5] = DEAD_END
                res[1] = -np.inf
                res[2] = -np.inf
                canonicalize_into(x, out)
                return
            else:
                key = final_key if final else scan_key
                o = _pick(logw, 2, keyed_uniform(key, scan * n + h if not final else h), lse)
            if final:
                res[2] += logw[o] - lse
            side[h] = o
            size[o] += 1
            pack_update(codes, dims, data_off, stat_off, hyper_off, hyper, stats, o, data, h, 1.0, scratch)
            if nf > 0:
                slot[h] = k + o
                rsize[k + o] += 1
                for f in range(nf):
                    net_add_node(E, f, hyper, net_ho[f], n, slot, h, k + o, 1.0)
                    net_clear_counts(nout[f], ninn[f], ntouch[f], ntouch[f, 2 * n])
    d = np.nan
    if with_ratio:  # log pi(split) - log pi(merged), from the split's two blocks
        for r in range(2):
            for h in range(n):
                if side[h] == r:
                    pack_update(codes, dims, data_off, stat_off, hyper_off, hyper, stats, 2, data, h, 1.0, scratch)
        d = log_new_weight(prior_code, prior_params, k_out + 1)
        d += log_join_set_weight(prior_code, prior_params, 1, size[0] - 1)
        d += log_join_set_weight(prior_code, prior_params, 1, size[1] - 1)
        d -= log_join_set_weight(prior_code, prior_params, 1, size[0] + size[1] - 1)
        d += pack_log_marginal(codes, dims, stat_off, hyper_off, hyper, stats, 0)
        d += pack_log_marginal(codes, dims, stat_off, hyper_off, hyper, stats, 1)
        d -= pack_log_marginal(codes, dims, stat_off, hyper_off, hyper, stats, 2)
        if nf > 0:  # the split's block-pair terms (E is up to date) minus the merged state's
            d += net_total(E, net_ho, hyper, rsize, all_rows, nrows)
            for h in range(n):
                if slot[h] == k + 1:
                    slot[h] = k
            rsize[k] += rsize[k + 1]
            rsize[k + 1] = 0
            net_fill(E, net_ho, hyper, n, slot)
            d -= net_total(E, net_ho, hyper, rsize, all_rows, nrows)
    res[3] = size[0]
    res[4] = size[1]
    tmp_labels = np.empty(n, np.int64)
    for h in range(n):
        tmp_labels[h] = cx[h]
    for h in range(n):
        if side[h] >= 0:
            tmp_labels[h] = k + (side[h] if same else 0)
    proposal = np.empty(n, np.int64)
    canonicalize_into(tmp_labels, proposal)
    if has_propose:
        target = np.empty(n, np.int64)
        canonicalize_into(propose, target)
        for h in range(n):
            if proposal[h] != target[h]:
                res[5] = UNREACHABLE
                res[1] = -np.inf
                res[2] = -np.inf
                canonicalize_into(x, out)
                return
    res[1] = d
    for h in range(n):
        out[h] = proposal[h]
    res[5] = OK


def _log_ratio(split, log_pi_split_over_merged, log_final_scan):
    """Eq. 8 for the two directions: a split, pi(split)/pi(x) / T(split | x) (the merge back is
    certain); a merge, pi(merged)/pi(x) * T(x | merged)."""
    d = log_pi_split_over_merged
    if split:
        return d - log_final_scan if d > -math.inf else -math.inf
    return log_final_scan - d if log_final_scan > -math.inf else -math.inf


def _keys(seed, launch_seed):
    phi = seed if launch_seed is None else launch_seed
    return (np.uint64(stream_key(phi, ORDER)), np.uint64(stream_key(phi, LAUNCH)), np.uint64(stream_key(phi, SCANS)),
            np.uint64(stream_key(seed, FINAL)), float(keyed_uniform(np.uint64(stream_key(seed, ACCEPTANCE)), 0)))


def _run(labels, pack, prior_code, prior_params, pair, seed, scans, launch_seed, propose):
    n = labels.shape[0]
    out = np.empty(n, np.int64)
    res = np.empty(RECORD)
    order_key, launch_key, scan_key, final_key, accept_u = _keys(seed, launch_seed)
    _jn_core(labels, int(pair[0]), int(pair[1]), scans, order_key, launch_key, scan_key, final_key,
             propose if propose is not None else labels, propose is not None, prior_code, prior_params,
             pack.codes, pack.dims, pack.data_off, pack.stat_off, pack.hyper_off, pack.hyper, pack.data, pack.width,
             out, res, network_offsets(pack))
    status = int(res[5])
    split = bool(res[0])
    log_ratio = _log_ratio(split, float(res[1]), float(res[2])) if status == OK else -math.inf
    state, accepted = _metropolis(labels, out, log_ratio, accept_u)  # (no proposal: log ratio -inf, rejected)
    info = {"move": "split" if split else "merge", "accepted": accepted, "log_ratio": log_ratio,
            "log_final_scan": float(res[2]), "sizes": (int(res[3]), int(res[4])), "dead_end": status == DEAD_END,
            "proposal_possible": status == OK, "proposal": out if status == OK else None}
    return state, info


def _proposal(labels, pack, prior_code, prior_params, i, j, seed, scans):
    """The move's proposal alone (checked arguments; never accepted or rejected): canonical labels,
    or None at a dead end. A merge proposal is the two blocks joined, with no scan (the scans
    only serve its reverse probability); a split runs the launch and the final scan, without
    the ratio. ARM uses it as a *synthetic reference* (``ARMKernel(synthetic=...)``)."""
    n = labels.shape[0]
    out = np.empty(n, np.int64)
    if labels[i] != labels[j]:
        merged = np.where(labels == labels[j], labels[i], labels)
        canonicalize_into(merged, out)
        return out
    res = np.empty(RECORD)
    order_key, launch_key, scan_key, final_key, _ = _keys(seed, None)
    _jn_core(labels, i, j, scans, order_key, launch_key, scan_key, final_key, labels, False, prior_code, prior_params,
             pack.codes, pack.dims, pack.data_off, pack.stat_off, pack.hyper_off, pack.hyper, pack.data, pack.width,
             out, res, network_offsets(pack), False)
    return out if int(res[5]) == OK else None


def _scans(intermediate_scans, owner):
    return _checks.integer("intermediate_scans", intermediate_scans, low=0, owner=owner)


def jain_neal_move(labels, pack: FamilyPack, prior_code: int, prior_params, randomness, intermediate_scans=5, *,
                   launch_seed=None, propose=None):
    """One Jain-Neal split-merge move; returns (canonical labels, info).

    Parameters
    ----------
    labels : (n,) ints in [0, n)
    pack, prior_code, prior_params :
        The likelihoods and the prior (``prior.code``, ``prior.kernel_params()``).
    randomness : (pair, seed)
        Two distinct items and a 64-bit seed (:func:`pymc_partitions.samplers.sams.sams_random_numbers`
        draws them).
    intermediate_scans : int, default 5
        L, the restricted Gibbs scans that form the launch state (seed 004 uses 5).
    launch_seed : int, optional
        Take the launch (order, random split, intermediate scans) from this seed instead: a fixed
        launch with a varying final scan, for tests of the proposal law.
    propose : labels, optional
        Force the final scan to this partition (tests): info["log_ratio"] is its MH log ratio.

    info: ``move`` ("split" or "merge" proposed), ``accepted``, ``log_ratio``, ``log_final_scan``
    (log probability of the final restricted scan: T(split | z) for a split, T(z | merge) for a
    merge), ``sizes`` (the split side's two block sizes), ``dead_end`` (no side possible for some
    item: rejected), ``proposal_possible``, ``proposal`` (the proposed partition, None if none).

    Examples
    --------
    >>> import numpy as np
    >>> from pymc_partitions.families.kernels import FamilyPack, DIAG_NORMAL, diag_normal_hyper
    >>> from pymc_partitions.priors import CRP
    >>> y = np.r_[np.zeros(5), np.ones(5) * 6.0][:, None]
    >>> pack = FamilyPack.build([(DIAG_NORMAL, y, diag_normal_hyper(3.0, 4.0, 1.0, 1))])
    >>> prior = CRP(1.0)
    >>> new, info = jain_neal_move(np.zeros(10, int), pack, prior.code, prior.kernel_params(), ((0, 9), 7))
    >>> info["move"], info["accepted"], new.tolist()
    ('split', True, [0, 0, 0, 0, 0, 1, 1, 1, 1, 1])
    """
    owner = "jain_neal_move"
    prior_code, prior_params = check_model(pack, prior_code, prior_params, owner, network=True)
    labels = as_labels(labels, pack.data.shape[0], owner=owner)
    pair, seed = _pair(randomness, labels.shape[0], owner)
    scans = _scans(intermediate_scans, owner)
    if launch_seed is not None:
        launch_seed = _named_seed(launch_seed, "launch_seed", owner)
    if propose is not None:
        propose = as_labels(propose, labels.shape[0], name="propose", owner=owner)
    return _run(labels, pack, prior_code, prior_params, pair, seed, scans, launch_seed, propose)


def jain_neal_log_proposal(labels, proposal, pack: FamilyPack, prior_code: int, prior_params, randomness,
                           intermediate_scans=5, *, launch_seed=None) -> float:
    """log T(proposal | labels) of the move with this pair and launch: the final scan's forced
    probability for a split, 0 for the merge, -inf for a partition the move cannot propose."""
    _, info = jain_neal_move(labels, pack, prior_code, prior_params, randomness, intermediate_scans,
                             launch_seed=launch_seed, propose=proposal)
    if not info["proposal_possible"]:
        return -math.inf
    return info["log_final_scan"] if info["move"] == "split" else 0.0


class JainNealKernel:
    """Jain-Neal split-merge moves with their random numbers drawn from a numpy Generator.

    Examples
    --------
    >>> import numpy as np
    >>> from pymc_partitions.families.kernels import FamilyPack, DIAG_NORMAL, diag_normal_hyper
    >>> from pymc_partitions.priors import CRP
    >>> y = np.r_[np.zeros(5), np.ones(5) * 6.0][:, None]
    >>> pack = FamilyPack.build([(DIAG_NORMAL, y, diag_normal_hyper(3.0, 4.0, 1.0, 1))])
    >>> kernel = JainNealKernel(pack, CRP(1.0).code, CRP(1.0).kernel_params(), intermediate_scans=3)
    >>> labels, info = kernel.step(np.zeros(10, int), np.random.default_rng(0))
    >>> info["move"] in ("split", "merge")
    True
    """

    def __init__(self, pack: FamilyPack, prior_code: int, prior_params, intermediate_scans=5):
        self.prior_code, self.prior_params = check_model(pack, prior_code, prior_params, "JainNealKernel", network=True)
        if pack.data.shape[0] < 2:
            raise ValueError("JainNealKernel: a split-merge move needs at least two items")
        self.pack = pack
        self.intermediate_scans = _scans(intermediate_scans, "JainNealKernel")

    def random_numbers(self, rng: np.random.Generator, n: int):
        """(pair of distinct items, 64-bit seed)."""
        return rng.choice(n, size=2, replace=False).astype(np.int64), draw_seed(rng)

    def move(self, labels, randomness):
        labels = as_labels(labels, self.pack.data.shape[0], owner="JainNealKernel")
        pair, seed = _pair(randomness, labels.shape[0], "JainNealKernel")
        return _run(labels, self.pack, self.prior_code, self.prior_params, pair, seed, self.intermediate_scans, None,
                    None)

    def step(self, labels, rng: np.random.Generator):
        """One move: (canonical labels, info)."""
        return self.move(labels, self.random_numbers(rng, len(labels)))

    def propose(self, labels, randomness):
        """The move's proposal from ``labels`` with ``randomness`` (pair, seed), never accepted or
        rejected: canonical labels, or None at a dead end (no side possible for some item). A
        merge is the two blocks joined (no scans). ARM's synthetic references are these."""
        labels = as_labels(labels, self.pack.data.shape[0], owner="JainNealKernel")
        pair, seed = _pair(randomness, labels.shape[0], "JainNealKernel")
        return _proposal(labels, self.pack, self.prior_code, self.prior_params, int(pair[0]), int(pair[1]), seed,
                         self.intermediate_scans)
