"""Collapsed Gibbs sweeps when the pack holds network likelihoods (``kernels.NETWORK``).

The sweep of :mod:`.gibbs` with the block-pair terms of the collapsed Bernoulli blockmodel added
(:mod:`pymc_partitions.families.network`). Besides the slot table of per-block statistics it keeps,
per network family, a matrix ``E`` of edge counts between slots, growing with the table, and the
caches of the section "cached node moves" below (memory O(edges + K^2)). Visiting node i:

1. its out/in-neighbour counts per slot, from its adjacency list: O(degree);
2. take it out: its block's statistics, and ``E`` through its neighbours' slots: O(degree);
3. the log conditional: joining block s changes every pair term (s, t), but the change a node
   without edges would cause is cached per block, so what is computed per move is the pairs with
   the block r it left (O(K)) and, for each of the T blocks its neighbours are in, a correction
   per candidate (O(K T)); a new block costs O(K + T). The other families add their cached
   predictives as in :mod:`.gibbs`;
4. put it in the chosen block: O(degree), and when it changed blocks, the caches' rows and
   columns of the two blocks: O(K).

So a node move costs O(degree + K T) with T <= min(degree, K) the blocks its neighbours are in
(O(degree + K^2) when every candidate recomputed every pair, as :func:`net_log_weights` still
does for the tests and benchmarks). The same random numbers drive the same draws as
:func:`.gibbs.gibbs_sweeps` (a visiting order and one uniform per visit), and other families in the
pack (a Normal likelihood on the same partition, say) are handled exactly as there.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from .._numeric import draw_log_weights
from ..families.kernels import NETWORK, pack_init, pack_log_marginal, pack_log_preds, pack_update
from ..families.network import (edge_gain, edge_gain_factor, net_add_node, net_clear_counts, net_join_logw,
                                net_log_likelihood, net_node_counts, size_gain)
from ..partition import canonicalize_into
from ..priors import log_eppf_sizes, log_join_weight, log_new_weight
from .slots import _build, _grow, _join_weights, _remove

__all__ = ["network_offsets", "net_take_out", "net_log_weights", "net_cache_build", "net_cached_weights",
           "net_cache_commit", "net_put_in", "net_sweep"]


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
    to ``new_lp[0]`` for opening a new block. O(K^2): the reference of :func:`net_cached_weights`,
    which the sweeps use (``cached=False`` selects this one in :func:`net_sweep_cached`)."""
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


# ----------------------------------------------------------------------------- cached node moves
#
# Node i (taken out of its slot r) joining block s changes the pair term of every block pair (s, t).
# Write g(e, N) = log B(a + e, b + N - e) - log B(a, b) and split the change into the part a node
# *without* edges would cause and the part due to i's edges:
#
#   delta_s = D[s] + sum over the slots t touched by i's neighbours of corr(s, t),
#   D[s]    = Q[s] + sum_{t != s} P[s, t],
#   P[s, t] = g(E_st, (m_s + 1) m_t) - g(E_st, m_s m_t)      (+ the same with E_ts when directed),
#   Q[s]    = the within-block term's change (m_s pairs more, 2 m_s when directed),
#   corr    = g(E_st + out_t, (m_s + 1) m_t) - g(E_st, (m_s + 1) m_t)   (+ in-edges when directed).
#
# P, D depend only on E and the sizes, so they are cached for the current state (all nodes placed)
# and a node move updates only what the move changes: the terms of the rows and columns of the two
# slots whose size and edge counts change. The log conditional of node i then costs O(K) for the
# slot it left (the pairs (u, r) and (r, u) with r's size one less) plus O(K) per slot touched by its
# neighbours; when the node stays in its slot nothing is updated, when it moves the two slots'
# rows and columns are refreshed, O(K). The new-block weight sums cached per-slot terms (O(K)
# additions) plus one term per touched slot. The caches are rebuilt from scratch at the start of every sweep (O(K^2)), which
# bounds the floating drift of the running sums D to one sweep's updates.
#
# Layout: P[f] (cap x cap), and V[f] with rows D, H (the new-block terms g(0, m_t), doubled when
# directed), PCOL / PROW (P[u, r] / P[r, u] after the current node left slot r) and SCALAR
# ([D[r], H[r]] after it left). Invariant: P[f, u, v] = 0 when slot u or v is empty.

V_D, V_H, V_PCOL, V_PROW, V_SCALAR = 0, 1, 2, 3, 4


@numba.njit(cache=True, error_model="numpy", inline="always")
def _p_term(Ef, s, t, ms, mt, a, b, directed):
    """P[s, t] (see above) for block sizes ms, mt."""
    if directed:
        return size_gain(Ef[s, t], ms * mt, mt, a, b) + size_gain(Ef[t, s], ms * mt, mt, a, b)
    return size_gain(Ef[s, t], ms * mt, mt, a, b)


@numba.njit(cache=True, error_model="numpy", inline="always")
def _p_both(Ef, u, v, mu, mv, a, b, directed):
    """(P[u, v], P[v, u]) together: both change the pair term(s) of (u, v) at mu mv node pairs,
    whose lgammas they share (6 lgammas instead of 8 undirected, 11 instead of 16 directed) when
    both blocks have more than 8 nodes (else the product form of ``size_gain`` is cheaper)."""
    if mu <= 8.0 or mv <= 8.0:
        return _p_term(Ef, u, v, mu, mv, a, b, directed), _p_term(Ef, v, u, mv, mu, a, b, directed)
    n0 = mu * mv
    y0 = a + b + n0
    lab = math.lgamma(y0)
    x = b + (n0 - Ef[u, v])
    lx = math.lgamma(x)
    puv = math.lgamma(x + mv) - lx
    pvu = math.lgamma(x + mu) - lx
    if directed:
        x = b + (n0 - Ef[v, u])
        lx = math.lgamma(x)
        puv += math.lgamma(x + mv) - lx
        pvu += math.lgamma(x + mu) - lx
        return puv - 2.0 * (math.lgamma(y0 + mv) - lab), pvu - 2.0 * (math.lgamma(y0 + mu) - lab)
    return puv - (math.lgamma(y0 + mv) - lab), pvu - (math.lgamma(y0 + mu) - lab)


@numba.njit(cache=True, error_model="numpy", inline="always")
def _q_term(Ef, s, ms, a, b, directed):
    """Q[s]: the within-block term of slot s gaining a node without edges."""
    if directed:
        return size_gain(Ef[s, s], ms * (ms - 1.0), 2.0 * ms, a, b)
    return size_gain(0.5 * Ef[s, s], 0.5 * ms * (ms - 1.0), ms, a, b)


@numba.njit(cache=True, error_model="numpy", inline="always")
def _h_term(mt, a, b, directed):
    """g(0, m_t) (twice when directed): a new block's pairs with slot t when the node has no edges."""
    h = size_gain(0.0, 0.0, mt, a, b)
    return 2.0 * h if directed else h


@numba.njit(cache=True, error_model="numpy")
def net_cache_build(E, net_ho, hyper, sizes, active, n_active):
    """The caches (P, V) of the state (occupied slots ``active[:n_active]``), from scratch: O(K^2)."""
    nf = net_ho.shape[0]
    cap = sizes.shape[0]
    P = np.zeros((nf, cap, cap))
    V = np.zeros((nf, 5, max(cap, 2)))
    for f in range(nf):
        ho = net_ho[f]
        a = hyper[ho]
        b = hyper[ho + 1]
        directed = hyper[ho + 2] > 0.5
        Ef = E[f]
        for j in range(n_active):
            s = active[j]
            ms = float(sizes[s])
            V[f, V_H, s] = _h_term(ms, a, b, directed)
            d = 0.0
            for q in range(n_active):
                t = active[q]
                if t != s:
                    p = _p_term(Ef, s, t, ms, float(sizes[t]), a, b, directed)
                    P[f, s, t] = p
                    d += p
            V[f, V_D, s] = d + _q_term(Ef, s, ms, a, b, directed)
    return P, V


@numba.njit(cache=True, error_model="numpy")
def net_cache_grow(P, V, cap):
    """The caches for a slot table grown to ``cap`` slots (the new slots empty)."""
    P2 = np.zeros((P.shape[0], cap, cap))
    V2 = np.zeros((V.shape[0], V.shape[1], max(cap, 2)))
    old = P.shape[1]
    P2[:, :old, :old] = P
    V2[:, :, :V.shape[2]] = V
    return P2, V2


@numba.njit(cache=True, error_model="numpy")
def net_cached_weights(E, net_ho, hyper, sizes, active, n_active, r, out, inn, touched, counts, P, V, logw, new_lp):
    """:func:`net_log_weights` from the caches: node i has left slot ``r`` (:func:`net_take_out`,
    then its size and ``active``); the caches still describe the state before. Adds the block-pair
    terms to ``logw[j]`` (joining ``active[j]``) and ``new_lp[0]`` (a new block), and keeps the
    values of slot r's row and column after the removal for :func:`net_cache_commit`.
    O(K (1 + touched slots)) per network family."""
    for f in range(net_ho.shape[0]):
        ho = net_ho[f]
        a = hyper[ho]
        b = hyper[ho + 1]
        directed = hyper[ho + 2] > 0.5
        Ef = E[f]
        Pf = P[f]
        D = V[f, V_D]
        H = V[f, V_H]
        pcol = V[f, V_PCOL]
        prow = V[f, V_PROW]
        mr = float(sizes[r])
        z = 0.0
        jr = -1
        dr = 0.0
        hr = 0.0
        if mr > 0.0:  # r still occupied: P[u, r] and P[r, u] with r one node smaller
            for j in range(n_active):
                u = active[j]
                if u == r:
                    jr = j
                    continue
                z += H[u]
                pc, pr = _p_both(Ef, u, r, float(sizes[u]), mr, a, b, directed)
                pcol[u] = pc
                prow[u] = pr
                dr += pr
                logw[j] += D[u] - Pf[u, r] + pc
            dr += _q_term(Ef, r, mr, a, b, directed)
            hr = _h_term(mr, a, b, directed)
            logw[jr] += dr
            z += hr
        else:  # r emptied: its pair terms are gone
            for j in range(n_active):
                u = active[j]
                z += H[u]
                pcol[u] = 0.0
                logw[j] += D[u] - Pf[u, r]
        V[f, V_SCALAR, 0] = dr
        V[f, V_SCALAR, 1] = hr
        of = out[f]
        nf_ = inn[f]
        tf = touched[f]
        nt = counts[f]
        for q in range(nt):  # the new block's pairs with the slots of i's neighbours (each listed once)
            t = tf[q]
            mt = float(sizes[t])
            z += edge_gain(0.0, of[t], mt, a, b)
            if directed:
                z += edge_gain(0.0, nf_[t], mt, a, b)
        new_lp[0] += z
        if nt == 0:
            continue
        for j in range(n_active):  # joining s: the corrections for i's edges, one log per candidate
            s = active[j]
            ms = float(sizes[s])
            prod = 1.0
            acc = 0.0
            for q in range(nt):
                t = tf[q]
                ot = of[t]
                if s == t:
                    if directed:
                        x, y = edge_gain_factor(Ef[s, s], ot + nf_[t], (ms + 1.0) * ms, a, b)
                    else:
                        x, y = edge_gain_factor(0.5 * Ef[s, s], ot, 0.5 * (ms + 1.0) * ms, a, b)
                    prod *= x
                    acc += y
                else:
                    pairs = (ms + 1.0) * float(sizes[t])
                    if directed:
                        x, y = edge_gain_factor(Ef[s, t], ot, pairs, a, b)
                        prod *= x
                        acc += y
                        x, y = edge_gain_factor(Ef[t, s], nf_[t], pairs, a, b)
                    else:
                        x, y = edge_gain_factor(Ef[t, s], ot, pairs, a, b)
                    prod *= x
                    acc += y
                if not 1e-100 < prod < 1e100:  # (factors are within [1e-100, 1e100]: no overflow)
                    acc += math.log(prod)
                    prod = 1.0
            logw[j] += acc + math.log(prod)


@numba.njit(cache=True, error_model="numpy")
def net_cache_commit(E, net_ho, hyper, sizes, active, n_active, r, s, P, V):
    """Bring the caches to the state after node i left slot ``r`` (values kept by
    :func:`net_cached_weights`) and joined slot ``s`` (E, sizes and ``active`` updated, e.g. by
    :func:`net_put_in`): nothing when s == r, else slot r's and slot s's rows and columns, O(K)."""
    if s == r:
        return
    cap = sizes.shape[0]
    for f in range(net_ho.shape[0]):
        ho = net_ho[f]
        a = hyper[ho]
        b = hyper[ho + 1]
        directed = hyper[ho + 2] > 0.5
        Ef = E[f]
        Pf = P[f]
        D = V[f, V_D]
        H = V[f, V_H]
        pcol = V[f, V_PCOL]
        prow = V[f, V_PROW]
        s_new = sizes[s] == 1  # s was empty: not a candidate, its PCOL / PROW entries are stale
        # 1. node i out of r (s's row and column are recomputed in 2.)
        for j in range(n_active):
            u = active[j]
            if u == r or u == s:
                continue
            D[u] += pcol[u] - Pf[u, r]
            Pf[u, r] = pcol[u]
        if sizes[r] > 0:
            for j in range(n_active):
                u = active[j]
                if u != r and not (u == s and s_new):
                    Pf[r, u] = prow[u]
            D[r] = V[f, V_SCALAR, 0]
            H[r] = V[f, V_SCALAR, 1]
        else:
            for u in range(cap):
                Pf[u, r] = 0.0
                Pf[r, u] = 0.0
            D[r] = 0.0
            H[r] = 0.0
        # 2. node i into s
        ms = float(sizes[s])
        ds = 0.0
        for j in range(n_active):
            u = active[j]
            if u == s:
                continue
            pn, pr = _p_both(Ef, u, s, float(sizes[u]), ms, a, b, directed)
            D[u] += pn - Pf[u, s]
            Pf[u, s] = pn
            Pf[s, u] = pr
            ds += pr
        D[s] = ds + _q_term(Ef, s, ms, a, b, directed)
        H[s] = _h_term(ms, a, b, directed)


@numba.njit(cache=True, error_model="numpy", _nrt=False)  # no refcounts: see families/kernels.py
def _net_visit(t0, slot_of, sizes, stats, active, join_w, logw, n_active, order, uniforms, prior_code, prior_params,
               codes, dims, data_off, stat_off, hyper_off, hyper, data, empty, scratch, first_row, new_lp,
               net_ho, E, out, inn, touched, P, V, cached, counts):
    """:func:`.gibbs._visit` with the network terms, from the caches (P, V) when ``cached`` (else
    by :func:`net_log_weights`, O(K^2): the reference); stops (before changing anything) when a
    new block might be needed and the slot table is full. Returns (next visit, n_active)."""
    cap = sizes.shape[0]
    n = slot_of.shape[0]
    for t in range(t0, order.shape[0]):
        i = order[t]
        if n_active == cap and sizes[slot_of[i]] > 1:
            return t, n_active
        r = slot_of[i]
        net_take_out(E, net_ho, hyper, n, slot_of, i, out, inn, touched, counts)
        n_active = _remove(i, slot_of, sizes, stats, active, n_active, join_w, prior_code, prior_params,
                           codes, dims, data_off, stat_off, hyper_off, hyper, data, scratch)
        for j in range(n_active):
            logw[j] = join_w[active[j]]
        pack_log_preds(codes, dims, data_off, stat_off, hyper_off, hyper, stats, active, n_active, data, i, scratch, logw)
        w = log_new_weight(prior_code, prior_params, n_active)
        new_lp[0] = 0.0
        if w > -np.inf:
            new_lp[0] = w
            pack_log_preds(codes, dims, data_off, stat_off, hyper_off, hyper, empty, first_row, 1, data, i, scratch, new_lp)
        if cached:
            net_cached_weights(E, net_ho, hyper, sizes, active, n_active, r, out, inn, touched, counts, P, V, logw,
                               new_lp)
        else:
            net_log_weights(E, net_ho, hyper, sizes, active, n_active, out, inn, logw, new_lp)
        logw[n_active] = new_lp[0] if w > -np.inf else w
        chosen = draw_log_weights(logw, n_active + 1, uniforms[t])
        if chosen == n_active:
            s = active[n_active]
            n_active += 1
            for c in range(stats.shape[1]):
                stats[s, c] = empty[0, c]
        else:
            s = active[chosen]
        pack_update(codes, dims, data_off, stat_off, hyper_off, hyper, stats, s, data, i, 1.0, scratch)
        sizes[s] += 1
        join_w[s] = log_join_weight(prior_code, prior_params, sizes[s])
        slot_of[i] = s
        net_put_in(E, net_ho, hyper, n, slot_of, i, out, inn, touched, counts)
        if cached:
            net_cache_commit(E, net_ho, hyper, sizes, active, n_active, r, s, P, V)
    return order.shape[0], n_active


@numba.njit(cache=True, error_model="numpy")
def net_workspace(nf, cap, n):
    """(out, inn, touched) for :func:`net_take_out` with a slot table of ``cap`` slots."""
    return np.zeros((nf, cap)), np.zeros((nf, cap)), np.zeros((nf, 2 * n), np.int64)


@numba.njit(cache=True, error_model="numpy")
def net_sweep_cached(slot_of, sizes, stats, active, n_active, E, order, uniforms, prior_code, prior_params,
                     codes, dims, data_off, stat_off, hyper_off, hyper, data, empty, scratch, net_ho, cached):
    """:func:`net_sweep`, also returning the caches (P, V) at the end (built at the start: O(K^2)).
    ``cached=False`` runs the O(K^2)-per-move reference instead (the caches are then not updated)."""
    n = slot_of.shape[0]
    nf = net_ho.shape[0]
    first_row = np.zeros(1, np.int64)
    new_lp = np.empty(1)
    out, inn, touched = net_workspace(nf, sizes.shape[0], n)
    P, V = net_cache_build(E, net_ho, hyper, sizes, active, n_active)
    counts = np.zeros(nf, np.int64)  # (allocated here: _net_visit runs without numba's runtime)
    t = 0
    while True:
        cap = sizes.shape[0]
        join_w = _join_weights(sizes, active, n_active, prior_code, prior_params)
        logw = np.empty(cap + 1)
        t, n_active = _net_visit(t, slot_of, sizes, stats, active, join_w, logw, n_active, order, uniforms,
                                 prior_code, prior_params, codes, dims, data_off, stat_off, hyper_off, hyper, data,
                                 empty, scratch, first_row, new_lp, net_ho, E, out, inn, touched, P, V, cached,
                                 counts)
        if t == order.shape[0]:
            return sizes, stats, active, n_active, E, P, V
        sizes, stats, active = _grow(sizes, stats, active)
        E = net_grow(E, sizes.shape[0])
        P, V = net_cache_grow(P, V, sizes.shape[0])
        out, inn, touched = net_workspace(nf, sizes.shape[0], n)


@numba.njit(cache=True, error_model="numpy")
def net_sweep(slot_of, sizes, stats, active, n_active, E, order, uniforms, prior_code, prior_params,
              codes, dims, data_off, stat_off, hyper_off, hyper, data, empty, scratch, net_ho):
    """One network Gibbs sweep of a persistent slot table (and its edge counts ``E``) in visiting
    ``order``; the tables double when full. Returns (sizes, stats, active, n_active, E)."""
    sizes, stats, active, n_active, E, _, _ = net_sweep_cached(
        slot_of, sizes, stats, active, n_active, E, order, uniforms, prior_code, prior_params,
        codes, dims, data_off, stat_off, hyper_off, hyper, data, empty, scratch, net_ho, True)
    return sizes, stats, active, n_active, E


@numba.njit(cache=True, error_model="numpy")
def _network_gibbs_sweeps(labels, orders, uniforms, prior_code, prior_params,
                          codes, dims, data_off, stat_off, hyper_off, hyper, data, width, net_ho, cached=True):
    """:func:`.gibbs.gibbs_sweeps` for packs with network families (checked arguments); ``cached=False``
    computes every log conditional by the O(K^2) reference :func:`net_log_weights` (tests, benchmarks)."""
    n = labels.shape[0]
    scratch = np.empty(max(1, data.shape[1]))
    slot_of, sizes, stats, active, n_active = _build(
        labels, codes, dims, data_off, stat_off, hyper_off, hyper, data, width, scratch
    )
    empty = np.empty((1, width))
    pack_init(codes, dims, stat_off, hyper_off, hyper, empty, 0)
    E = net_build(slot_of, sizes.shape[0], net_ho, hyper, n)
    for sweep in range(orders.shape[0]):
        sizes, stats, active, n_active, E, _, _ = net_sweep_cached(
            slot_of, sizes, stats, active, n_active, E, orders[sweep], uniforms[sweep], prior_code, prior_params,
            codes, dims, data_off, stat_off, hyper_off, hyper, data, empty, scratch, net_ho, cached)
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
