"""Collapsed Gibbs sweeps when the pack holds network likelihoods (``kernels.NETWORK``).

The sweep of :mod:`.gibbs` with the block-pair terms of the collapsed Bernoulli blockmodel added
(:mod:`pymc_partitions.families.network`). Besides the slot table of per-block statistics it keeps,
per network family, a matrix ``E`` of edge counts between slots, growing with the table (memory
O(edges + K^2)). Visiting node i:

1. its out/in-neighbour counts per slot, from its adjacency list: O(degree);
2. take it out: its block's statistics, and ``E`` through its neighbours' slots: O(degree);
3. the log conditional of joining block s changes every pair (s, t): O(K) per candidate, so
   O(K^2) over the candidates (O(K) for a new block); the other families add their cached
   predictives as in :mod:`.gibbs`;
4. put it in the chosen block: O(degree).

So a node move costs O(degree + K^2). The same random numbers drive the same draws as
:func:`.gibbs.gibbs_sweeps` (a visiting order and one uniform per visit), and other families in the
pack (a Normal likelihood on the same partition, say) are handled exactly as there.
"""

from __future__ import annotations

import numba
import numpy as np

from .._numeric import draw_log_weights
from ..families.kernels import NETWORK, pack_init, pack_log_marginal, pack_log_preds, pack_update
from ..families.network import net_add_node, net_clear_counts, net_join_logw, net_log_likelihood, net_node_counts
from ..partition import canonicalize_into
from ..priors import log_eppf_sizes, log_join_weight, log_new_weight
from .gibbs import _build, _grow, _join_weights

__all__ = ["network_offsets", "net_take_out", "net_log_weights", "net_put_in", "net_sweep"]


def network_offsets(pack) -> np.ndarray:
    """Hyper offsets of the pack's NETWORK families (int64)."""
    codes = np.asarray(pack.codes)
    return np.asarray(pack.hyper_off, np.int64)[codes == NETWORK].copy()


@numba.njit(cache=True, error_model="numpy")
def net_build(slot_of, cap, net_ho, hyper, n):
    """Edge counts between slots for every network family: E[f, s, t] = ordered pairs (i in s,
    j in t) with an edge i -> j (both orientations for an undirected graph)."""
    E = np.zeros((net_ho.shape[0], cap, cap))
    net_fill(E, net_ho, hyper, n, slot_of)
    return E


@numba.njit(cache=True, error_model="numpy")
def net_fill(E, net_ho, hyper, n, slot_of):
    """E <- the edge counts between the slots of ``slot_of`` (nodes with a negative slot left out)."""
    E[:] = 0.0
    for f in range(net_ho.shape[0]):
        ho = net_ho[f]
        ip = ho + 4
        ix = ip + n + 1
        for i in range(n):
            s = slot_of[i]
            if s < 0:
                continue
            for t in range(int(hyper[ip + i]), int(hyper[ip + i + 1])):
                r = slot_of[int(hyper[ix + t])]
                if r >= 0:
                    E[f, s, r] += 1.0


@numba.njit(cache=True, error_model="numpy")
def net_set_counts(hp, ho, n, slot_of, members, start, count, unit, a, out, inn, touched):
    """Edges of the set ``members[start:start + count]`` (all with a negative slot; ``unit[h] == a``
    marks them) to each slot, into ``out``/``inn`` (touched slots listed as in
    :func:`~pymc_partitions.families.network.net_node_counts`): returns (count touched, ordered
    pairs inside the set with an edge). O(sum of the members' degrees)."""
    c = 0
    internal = 0.0
    ip = ho + 4
    ix = ip + n + 1
    for q in range(start, start + count):
        h = members[q]
        c = net_node_counts(hp, ho, n, slot_of, h, out, inn, touched, c)
        for t in range(int(hp[ip + h]), int(hp[ip + h + 1])):
            g = int(hp[ix + t])
            if slot_of[g] < 0 and unit[g] == a:
                internal += 1.0
    return c, internal


@numba.njit(cache=True, error_model="numpy")
def net_grow(E, cap):
    E2 = np.zeros((E.shape[0], cap, cap))
    old = E.shape[1]
    E2[:, :old, :old] = E
    return E2


@numba.njit(cache=True, error_model="numpy")
def net_total(E, net_ho, hyper, sizes, slots, n_slots):
    out = 0.0
    for f in range(net_ho.shape[0]):
        out += net_log_likelihood(E, f, hyper, net_ho[f], sizes, slots, n_slots)
    return out


@numba.njit(cache=True, error_model="numpy")
def net_take_out(E, net_ho, hyper, n, slot_of, i, out, inn, touched, counts):
    """First step of moving node i (still in its slot): its out/in-neighbour counts per slot into
    ``out[f]``/``inn[f]`` (slots listed in ``touched[f][:counts[f]]``) and its pairs taken out of
    ``E``, for every network family f: O(degree)."""
    s = slot_of[i]
    for f in range(net_ho.shape[0]):
        counts[f] = net_node_counts(hyper, net_ho[f], n, slot_of, i, out[f], inn[f], touched[f], 0)
        net_add_node(E, f, hyper, net_ho[f], n, slot_of, i, s, -1.0)


@numba.njit(cache=True, error_model="numpy")
def net_log_weights(E, net_ho, hyper, sizes, active, n_active, out, inn, logw, new_lp):
    """The block-pair terms of node i's log Gibbs conditional (i taken out by :func:`net_take_out`
    and out of ``sizes``): added to ``logw[j]`` for joining block ``active[j]``, j < n_active, and
    to ``new_lp[0]`` for opening a new block. O(K^2). The single-chain sweep and the coupled
    sweeps of :mod:`pymc_partitions.coupling.sweep` both call it."""
    for f in range(net_ho.shape[0]):
        net_join_logw(E, f, hyper, net_ho[f], sizes, active, n_active, active, n_active, out[f], inn[f], 1.0, 0.0,
                      logw, new_lp)


@numba.njit(cache=True, error_model="numpy")
def net_put_in(E, net_ho, hyper, n, slot_of, i, out, inn, touched, counts):
    """Last step of moving node i (``slot_of[i]`` its new slot): its pairs into ``E`` and the
    counts of :func:`net_take_out` cleared. O(degree)."""
    s = slot_of[i]
    for f in range(net_ho.shape[0]):
        net_add_node(E, f, hyper, net_ho[f], n, slot_of, i, s, 1.0)
        net_clear_counts(out[f], inn[f], touched[f], counts[f])


@numba.njit(cache=True, error_model="numpy")
def _net_visit(t0, slot_of, sizes, stats, active, join_w, logw, n_active, order, uniforms, prior_code, prior_params,
               codes, dims, data_off, stat_off, hyper_off, hyper, data, empty, scratch, first_row, new_lp,
               net_ho, E, out, inn, touched):
    """:func:`.gibbs._visit` with the network terms; stops (before changing anything) when a new
    block might be needed and the slot table is full. Returns (next visit, n_active)."""
    cap = sizes.shape[0]
    n = slot_of.shape[0]
    counts = np.zeros(net_ho.shape[0], np.int64)
    for t in range(t0, order.shape[0]):
        i = order[t]
        if n_active == cap and sizes[slot_of[i]] > 1:
            return t, n_active
        s = slot_of[i]
        net_take_out(E, net_ho, hyper, n, slot_of, i, out, inn, touched, counts)
        sizes[s] -= 1
        if sizes[s] > 0:
            pack_update(codes, dims, data_off, stat_off, hyper_off, hyper, stats, s, data, i, -1.0, scratch)
            join_w[s] = log_join_weight(prior_code, prior_params, sizes[s])
        else:
            j = 0
            while active[j] != s:
                j += 1
            for jj in range(j, n_active - 1):
                active[jj] = active[jj + 1]
            active[n_active - 1] = s
            n_active -= 1
        for j in range(n_active):
            logw[j] = join_w[active[j]]
        pack_log_preds(codes, dims, data_off, stat_off, hyper_off, hyper, stats, active, n_active, data, i, scratch, logw)
        w = log_new_weight(prior_code, prior_params, n_active)
        new_lp[0] = 0.0
        if w > -np.inf:
            new_lp[0] = w
            pack_log_preds(codes, dims, data_off, stat_off, hyper_off, hyper, empty, first_row, 1, data, i, scratch, new_lp)
        net_log_weights(E, net_ho, hyper, sizes, active, n_active, out, inn, logw, new_lp)
        logw[n_active] = new_lp[0] if w > -np.inf else w
        chosen = draw_log_weights(logw, n_active + 1, uniforms[t])
        if chosen == n_active:
            s = active[n_active]
            n_active += 1
            stats[s, :] = empty[0]
        else:
            s = active[chosen]
        pack_update(codes, dims, data_off, stat_off, hyper_off, hyper, stats, s, data, i, 1.0, scratch)
        sizes[s] += 1
        join_w[s] = log_join_weight(prior_code, prior_params, sizes[s])
        slot_of[i] = s
        net_put_in(E, net_ho, hyper, n, slot_of, i, out, inn, touched, counts)
    return order.shape[0], n_active


@numba.njit(cache=True, error_model="numpy")
def net_workspace(nf, cap, n):
    """(out, inn, touched) for :func:`net_take_out` with a slot table of ``cap`` slots."""
    return np.zeros((nf, cap)), np.zeros((nf, cap)), np.zeros((nf, 2 * n), np.int64)


@numba.njit(cache=True, error_model="numpy")
def net_sweep(slot_of, sizes, stats, active, n_active, E, order, uniforms, prior_code, prior_params,
              codes, dims, data_off, stat_off, hyper_off, hyper, data, empty, scratch, net_ho):
    """One network Gibbs sweep of a persistent slot table (and its edge counts ``E``) in visiting
    ``order``; the tables double when full. Returns (sizes, stats, active, n_active, E)."""
    n = slot_of.shape[0]
    nf = net_ho.shape[0]
    first_row = np.zeros(1, np.int64)
    new_lp = np.empty(1)
    out, inn, touched = net_workspace(nf, sizes.shape[0], n)
    t = 0
    while True:
        cap = sizes.shape[0]
        join_w = _join_weights(sizes, active, n_active, prior_code, prior_params)
        logw = np.empty(cap + 1)
        t, n_active = _net_visit(t, slot_of, sizes, stats, active, join_w, logw, n_active, order, uniforms,
                                 prior_code, prior_params, codes, dims, data_off, stat_off, hyper_off, hyper, data,
                                 empty, scratch, first_row, new_lp, net_ho, E, out, inn, touched)
        if t == order.shape[0]:
            return sizes, stats, active, n_active, E
        sizes, stats, active = _grow(sizes, stats, active)
        E = net_grow(E, sizes.shape[0])
        out, inn, touched = net_workspace(nf, sizes.shape[0], n)


@numba.njit(cache=True, error_model="numpy")
def _network_gibbs_sweeps(labels, orders, uniforms, prior_code, prior_params,
                          codes, dims, data_off, stat_off, hyper_off, hyper, data, width, net_ho):
    n = labels.shape[0]
    scratch = np.empty(max(1, data.shape[1]))
    slot_of, sizes, stats, active, n_active = _build(
        labels, codes, dims, data_off, stat_off, hyper_off, hyper, data, width, scratch
    )
    empty = np.empty((1, width))
    pack_init(codes, dims, stat_off, hyper_off, hyper, empty, 0)
    E = net_build(slot_of, sizes.shape[0], net_ho, hyper, n)
    for sweep in range(orders.shape[0]):
        sizes, stats, active, n_active, E = net_sweep(slot_of, sizes, stats, active, n_active, E, orders[sweep],
                                                      uniforms[sweep], prior_code, prior_params, codes, dims,
                                                      data_off, stat_off, hyper_off, hyper, data, empty, scratch,
                                                      net_ho)
    occupied = np.empty(n_active, np.int64)
    lj = 0.0
    for j in range(n_active):
        b = active[j]
        occupied[j] = sizes[b]
        lj += pack_log_marginal(codes, dims, stat_off, hyper_off, hyper, stats, b)
    lj += net_total(E, net_ho, hyper, sizes, active, n_active) + log_eppf_sizes(prior_code, prior_params, occupied)
    res = np.empty(n, np.int64)
    canonicalize_into(slot_of, res)
    return res, lj
