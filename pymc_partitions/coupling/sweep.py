"""Coupled collapsed Gibbs sweeps on partitions (seed 000, Algorithm 1), compiled.

Two chains visit the same items in the same order. At each item both chains take it out of its
block and compute their Gibbs conditionals over (existing blocks + a new block); one coupled draw
(:mod:`~pymc_partitions.coupling.draws`) then places the item in both. Each chain on its own is
exactly the single-chain kernel of :mod:`pymc_partitions.samplers.gibbs`.

For the optimal transport coupling the cost of sending the item to block A of chain x and block B
of chain y is the increase of the Mirkin distance, 2 (|A| + |B| - 2 |A ∩ B|) (seed 000, eq. 8; the
factor 2 is dropped, it does not change the plan). The table of intersection sizes |A ∩ B| is kept
up to date item by item, so the cost matrix costs O(K^2) per item and never O(n). The aligned
coupling reads that table once per sweep instead, to pair the two chains' blocks by overlap
(:func:`_align`), and then couples each item's draws under the pairing in O(K) with no solve.

Network likelihoods (``kernels.NETWORK``, :class:`pmp.BetaBernoulliNetwork`) are not separable
over blocks: each chain then also keeps its matrix of edge counts between slots, and its log
conditional gets the block-pair terms from the functions the single-chain network sweep uses
(:func:`~pymc_partitions.samplers.network.net_take_out`, ``net_cached_weights``, ``net_put_in``,
``net_cache_commit``; the caches rebuilt at the start of every coupled sweep), so
each chain is still exactly the single-chain kernel and the couplings act on the two conditionals
as for any other family. For packs without a network family those calls do nothing.

Random numbers: a visiting order and ``UNIFORMS_PER_VISIT`` uniforms per visit. Identical states
with identical random numbers give identical outputs (the coupling contract of
:mod:`pymc_partitions.coupling.kernels`).
"""

from __future__ import annotations

import numba
import numpy as np

from .. import _checks
from .._numeric import check_uniforms, runtime_int
from ..families.kernels import FamilyPack, has_network, pack_init, pack_log_preds, pack_update
from ..partition import as_labels, canonicalize_into, index_array
from ..priors import log_join_weight, log_new_weight
from ..samplers.gibbs import _build, _grow, _join_weights, _remove, _sweep, check_model
from ..samplers.network import (net_build, net_cache_build, net_cache_commit, net_cache_grow, net_cached_weights,
                                net_grow, net_put_in, net_sweep, net_take_out, net_workspace, network_offsets)
from .draws import draw_aligned, draw_crn, draw_independent, draw_maximal, draw_ot_metric, probabilities
from .transport import make_workspace

__all__ = ["COUPLINGS", "UNIFORMS_PER_VISIT", "ChainState", "GibbsSweeps"]

OT, MAXIMAL, CRN, INDEPENDENT, ALIGNED = 0, 1, 2, 3, 4
COUPLINGS = {"ot": OT, "maximal": MAXIMAL, "crn": CRN, "independent": INDEPENDENT, "aligned": ALIGNED}
UNIFORMS_PER_VISIT = 4  # [mix with independent?, draw, residual draw x, residual draw y]


@numba.njit(cache=True, error_model="numpy")
def _support(p, count, index, mass):
    """The entries of ``p[:count]`` with positive mass: their indices and masses; returns how many."""
    m = 0
    for j in range(count):
        if p[j] > 0.0:
            index[m] = j
            mass[m] = p[j]
            m += 1
    return m


@numba.njit(cache=True, error_model="numpy")
def _coupled_draw(method, eps, lw_x, nx, size_x, act_x, lw_y, ny, size_y, act_y, inter, u,
                  p, q, ix, iy, pc, qc, cost, rows, cols, mass, iwork, fwork):
    """Indices (into the candidates of each chain) of one coupled draw; see the module docstring.
    (The aligned coupling is drawn in :func:`_coupled_visit` itself: this call's many arguments
    cost more than that whole draw.)"""
    probabilities(lw_x, nx + 1, p)
    probabilities(lw_y, ny + 1, q)
    if u[0] < eps or method == INDEPENDENT:
        return draw_independent(p, nx + 1, q, ny + 1, u[1], u[2])
    if method == CRN:
        return draw_crn(p, nx + 1, q, ny + 1, u[1])
    if method == MAXIMAL:
        return draw_maximal(p, nx + 1, q, ny + 1, u[1], u[2], u[3], pc)
    # optimal transport on the candidates with positive mass
    mx = _support(p, nx + 1, ix, pc)
    my = _support(q, ny + 1, iy, qc)
    for a in range(mx):
        ja = ix[a]
        sa = act_x[ja]
        size_a = size_x[sa] if ja < nx else 0
        for b in range(my):
            jb = iy[b]
            sb = act_y[jb]
            size_b = size_y[sb] if jb < ny else 0
            shared = inter[sa, sb] if (ja < nx and jb < ny) else 0
            cost[a, b] = size_a + size_b - 2 * shared
    # (the Mirkin increase is the metric |A Δ B| between the blocks as sets, the new block being
    # the empty set: p and q, no longer needed, are the solver's residual work arrays)
    a, b = draw_ot_metric(pc, mx, qc, my, cost, u[1], rows, cols, mass, p, q, iwork, fwork)
    return ix[a], iy[b]


@numba.njit(cache=True, error_model="numpy")
def _add_network_terms(E, net_ho, hyper, sizes, active, n_active, r, out, inn, touched, counts, P, V, logw, new_lp):
    """The block-pair terms added to a conditional of :func:`.gibbs._log_conditional` (whose
    new-block entry ``logw[n_active]`` already holds the prior weight and other families), for the
    node that left slot ``r``."""
    new_lp[0] = logw[n_active]
    net_cached_weights(E, net_ho, hyper, sizes, active, n_active, r, out, inn, touched, counts, P, V, logw, new_lp)
    logw[n_active] = new_lp[0]


@numba.njit(cache=True, error_model="numpy", _nrt=False)  # no refcounts: see families/kernels.py
def _coupled_visit(t0, method, eps, order, uniforms,
                   slot_x, size_x, stat_x, act_x, jw_x, lw_x, nx,
                   slot_y, size_y, stat_y, act_y, jw_y, lw_y, ny, inter,
                   prior_code, prior_params, codes, dims, data_off, stat_off, hyper_off, hyper, data,
                   empty, prior_params_y, hyper_y, data_y, empty_y, scratch, first_row, new_lp,
                   p, q, ix, iy, pc, qc, cost, rows, cols, mass, iwork, fwork,
                   net_ho, E_x, out_x, inn_x, touched_x, P_x, V_x, E_y, out_y, inn_y, touched_y, P_y, V_y,
                   cnt_x, cnt_y, match_x, match_y, pos_y):
    """Coupled updates at visits t0, t0+1, ...; chain y uses its own ``prior_params_y``,
    ``hyper_y``, ``data_y``, ``empty_y``. Stops before changing anything when a chain might
    need a new block and its slot table is full. Returns (next visit, nx, ny).

    For the aligned coupling ``match_x`` / ``match_y`` pair slots of the two chains (-1: none,
    see :func:`_align`): a pair is dropped when either block empties, and two new blocks opened
    at the same item are paired."""
    n = slot_x.shape[0]
    net = net_ho.shape[0] > 0  # (the calls below cost ~0.1 µs each even when they do nothing)
    one = runtime_int(1)
    for t in range(t0, order.shape[0]):
        i = order[t]
        sx = slot_x[i]
        sy = slot_y[i]
        if (nx == size_x.shape[0] and size_x[sx] > 1) or (ny == size_y.shape[0] and size_y[sy] > 1):
            return t, nx, ny
        inter[sx, sy] -= 1
        if net:
            net_take_out(E_x, net_ho, hyper, n, slot_x, i, out_x, inn_x, touched_x, cnt_x)
            net_take_out(E_y, net_ho, hyper_y, n, slot_y, i, out_y, inn_y, touched_y, cnt_y)
        nx = _remove(i, slot_x, size_x, stat_x, act_x, nx, jw_x, prior_code, prior_params,
                     codes, dims, data_off, stat_off, hyper_off, hyper, data, scratch)
        ny = _remove(i, slot_y, size_y, stat_y, act_y, ny, jw_y, prior_code, prior_params_y,
                     codes, dims, data_off, stat_off, hyper_off, hyper_y, data_y, scratch)
        if method == ALIGNED:
            if size_x[sx] == 0 and match_x[sx] >= 0:
                match_y[match_x[sx]] = -1
                match_x[sx] = -1
            if size_y[sy] == 0 and match_y[sy] >= 0:
                match_x[match_y[sy]] = -1
                match_y[sy] = -1
        # (gibbs._log_conditional written out for each chain: a call costs ~90 ns per item)
        for j in range(nx):
            lw_x[j] = jw_x[act_x[j]]
        pack_log_preds(codes, dims, data_off, stat_off, hyper_off, hyper, stat_x, act_x, nx, data, i, scratch, lw_x)
        w = log_new_weight(prior_code, prior_params, nx)
        if w > -np.inf:
            new_lp[0] = w
            pack_log_preds(codes, dims, data_off, stat_off, hyper_off, hyper, empty, first_row, one, data, i,
                           scratch, new_lp)
            w = new_lp[0]
        lw_x[nx] = w
        for j in range(ny):
            lw_y[j] = jw_y[act_y[j]]
        pack_log_preds(codes, dims, data_off, stat_off, hyper_off, hyper_y, stat_y, act_y, ny, data_y, i, scratch,
                       lw_y)
        w = log_new_weight(prior_code, prior_params_y, ny)
        if w > -np.inf:
            new_lp[0] = w
            pack_log_preds(codes, dims, data_off, stat_off, hyper_off, hyper_y, empty_y, first_row, one, data_y, i,
                           scratch, new_lp)
            w = new_lp[0]
        lw_y[ny] = w
        if net:
            _add_network_terms(E_x, net_ho, hyper, size_x, act_x, nx, sx, out_x, inn_x, touched_x, cnt_x, P_x, V_x,
                               lw_x, new_lp)
            _add_network_terms(E_y, net_ho, hyper_y, size_y, act_y, ny, sy, out_y, inn_y, touched_y, cnt_y, P_y, V_y,
                               lw_y, new_lp)
        u = uniforms[t]
        if method == ALIGNED and u[0] >= eps:  # each block with its partner of the other chain (_align), new with new
            probabilities(lw_x, nx + 1, p)
            probabilities(lw_y, ny + 1, q)
            for b in range(ny):
                pos_y[act_y[b]] = b
            for a in range(nx):
                m = match_x[act_x[a]]
                ix[a] = pos_y[m] if m >= 0 else -1
            ix[nx] = ny
            cx, cy = draw_aligned(p, nx + 1, q, ny + 1, ix, u[1], u[2], u[3], pc, qc)
        else:
            cx, cy = _coupled_draw(method, eps, lw_x, nx, size_x, act_x, lw_y, ny, size_y, act_y, inter, u,
                                   p, q, ix, iy, pc, qc, cost, rows, cols, mass, iwork, fwork)
        if method == ALIGNED and cx == nx and cy == ny:  # two new blocks: paired
            match_x[act_x[nx]] = act_y[ny]
            match_y[act_y[ny]] = act_x[nx]
        # (gibbs._assign written out for each chain)
        if cx == nx:
            s = act_x[nx]
            nx += 1
            for c in range(stat_x.shape[1]):
                stat_x[s, c] = empty[0, c]
        else:
            s = act_x[cx]
        pack_update(codes, dims, data_off, stat_off, hyper_off, hyper, stat_x, s, data, i, 1.0, scratch)
        size_x[s] += 1
        jw_x[s] = log_join_weight(prior_code, prior_params, size_x[s])
        slot_x[i] = s
        if cy == ny:
            s = act_y[ny]
            ny += 1
            for c in range(stat_y.shape[1]):
                stat_y[s, c] = empty_y[0, c]
        else:
            s = act_y[cy]
        pack_update(codes, dims, data_off, stat_off, hyper_off, hyper_y, stat_y, s, data_y, i, 1.0, scratch)
        size_y[s] += 1
        jw_y[s] = log_join_weight(prior_code, prior_params_y, size_y[s])
        slot_y[i] = s
        inter[slot_x[i], slot_y[i]] += 1
        if net:
            net_put_in(E_x, net_ho, hyper, n, slot_x, i, out_x, inn_x, touched_x, cnt_x)
            net_put_in(E_y, net_ho, hyper_y, n, slot_y, i, out_y, inn_y, touched_y, cnt_y)
            net_cache_commit(E_x, net_ho, hyper, size_x, act_x, nx, sx, slot_x[i], P_x, V_x)
            net_cache_commit(E_y, net_ho, hyper_y, size_y, act_y, ny, sy, slot_y[i], P_y, V_y)
    return order.shape[0], nx, ny


@numba.njit(cache=True, error_model="numpy")
def _align(inter, act_x, nx, act_y, ny, match_x, match_y):
    """Pair blocks of the two chains by overlap, greedily: repeatedly the pair of unpaired blocks
    with the largest |A ∩ B| > 0 (ties: the first in the active orders). Identical blocks are
    always paired (their overlap is the largest of their row and column). ``match_x[slot]`` is the
    paired slot of chain y, or -1 (likewise ``match_y``); O(K^2 log K), once per coupled sweep."""
    cells = nx * ny
    top = 0
    for a in range(nx):
        for b in range(ny):
            top = max(top, inter[act_x[a], act_y[b]])
    keys = np.empty(cells, np.int64)
    m = 0
    for a in range(nx):
        for b in range(ny):
            c = inter[act_x[a], act_y[b]]
            if c > 0:  # sorted ascending: the largest overlap first, then the first (a, b)
                keys[m] = (top - c) * cells + a * ny + b
                m += 1
    keys = np.sort(keys[:m])
    for e in range(m):
        ab = keys[e] % cells
        a = ab // ny
        b = ab % ny
        sa = act_x[a]
        sb = act_y[b]
        if match_x[sa] < 0 and match_y[sb] < 0:
            match_x[sa] = sb
            match_y[sb] = sa


@numba.njit(cache=True, error_model="numpy")
def _grow_table(inter, rows, cols):
    out = np.zeros((rows, cols), np.int64)
    out[: inter.shape[0], : inter.shape[1]] = inter
    return out


@numba.njit(cache=True, error_model="numpy")
def _coupled_sweep(method, eps, order, uniforms, slot_x, size_x, stat_x, act_x, nx, slot_y, size_y, stat_y, act_y, ny,
                   inter, prior_code, prior_params, codes, dims, data_off, stat_off, hyper_off, hyper, data, empty,
                   scratch, net_ho, E_x, E_y, prior_params_y, hyper_y, data_y, empty_y):
    """One coupled sweep; returns the (possibly grown) tables of both chains (with their edge
    counts ``E_x``, ``E_y`` of the network families, (0, cap, cap) when there are none) and their
    intersections. Chain y uses its own ``prior_params_y``, ``hyper_y``, ``data_y`` and ``empty_y``
    (the same as chain x's when the hyperparameters are fixed)."""
    first_row = np.zeros(1, np.int64)
    new_lp = np.empty(1)
    n = slot_x.shape[0]
    nf = net_ho.shape[0]
    t = runtime_int(0)  # not the literal 0 (one more compilation of _coupled_visit)
    P_x, V_x = net_cache_build(E_x, net_ho, hyper, size_x, act_x, nx)  # (the network caches, fresh every sweep)
    P_y, V_y = net_cache_build(E_y, net_ho, hyper_y, size_y, act_y, ny)
    cnt_x = np.zeros(nf, np.int64)  # (allocated here: _coupled_visit runs without numba's runtime)
    cnt_y = np.zeros(nf, np.int64)
    while True:
        cx = size_x.shape[0]
        cy = size_y.shape[0]
        if E_x.shape[1] != cx:
            E_x = net_grow(E_x, cx)
            P_x, V_x = net_cache_grow(P_x, V_x, cx)
        if E_y.shape[1] != cy:
            E_y = net_grow(E_y, cy)
            P_y, V_y = net_cache_grow(P_y, V_y, cy)
        out_x, inn_x, touched_x = net_workspace(nf, cx, n)
        out_y, inn_y, touched_y = net_workspace(nf, cy, n)
        c = max(cx, cy) + 1
        jw_x = _join_weights(size_x, act_x, nx, prior_code, prior_params)
        jw_y = _join_weights(size_y, act_y, ny, prior_code, prior_params_y)
        lw_x = np.empty(cx + 1)
        lw_y = np.empty(cy + 1)
        p = np.empty(c)
        q = np.empty(c)
        ix = np.empty(c, np.int64)
        iy = np.empty(c, np.int64)
        pc = np.empty(c)
        qc = np.empty(c)
        cost = np.empty((cx + 1, cy + 1))
        rows = np.empty(2 * (cx + cy + 2), np.int64)  # (draws.metric_plan: shared cells + the solver's)
        cols = np.empty(2 * (cx + cy + 2), np.int64)
        mass = np.empty(2 * (cx + cy + 2))
        iwork, fwork = make_workspace(cx + 1, cy + 1)
        match_x = np.full(cx, -1, np.int64)
        match_y = np.full(cy, -1, np.int64)
        pos_y = np.empty(cy, np.int64)
        if method == ALIGNED:
            _align(inter, act_x, nx, act_y, ny, match_x, match_y)
        t, nx, ny = _coupled_visit(t, method, eps, order, uniforms,
                                   slot_x, size_x, stat_x, act_x, jw_x, lw_x, nx,
                                   slot_y, size_y, stat_y, act_y, jw_y, lw_y, ny, inter,
                                   prior_code, prior_params, codes, dims, data_off, stat_off, hyper_off, hyper, data,
                                   empty, prior_params_y, hyper_y, data_y, empty_y, scratch, first_row, new_lp,
                                   p, q, ix, iy, pc, qc, cost, rows, cols, mass,
                                   iwork, fwork, net_ho, E_x, out_x, inn_x, touched_x, P_x, V_x, E_y, out_y, inn_y,
                                   touched_y, P_y, V_y, cnt_x, cnt_y, match_x, match_y, pos_y)
        if t == order.shape[0]:
            return size_x, stat_x, act_x, nx, E_x, size_y, stat_y, act_y, ny, E_y, inter
        if nx == cx:
            size_x, stat_x, act_x = _grow(size_x, stat_x, act_x)
        if ny == cy:
            size_y, stat_y, act_y = _grow(size_y, stat_y, act_y)
        inter = _grow_table(inter, size_x.shape[0], size_y.shape[0])


@numba.njit(cache=True, error_model="numpy")
def _intersections(slot_x, cap_x, slot_y, cap_y):
    inter = np.zeros((cap_x, cap_y), np.int64)
    for i in range(slot_x.shape[0]):
        inter[slot_x[i], slot_y[i]] += 1
    return inter


@numba.njit(cache=True, error_model="numpy")
def _mirkin(size_x, act_x, nx, size_y, act_y, ny, inter):
    """Mirkin distance sum |A|^2 + sum |B|^2 - 2 sum |A ∩ B|^2 from the tables, O(K^2)."""
    out = 0
    for j in range(nx):
        out += size_x[act_x[j]] ** 2
    for j in range(ny):
        out += size_y[act_y[j]] ** 2
    for a in range(nx):
        for b in range(ny):
            out -= 2 * inter[act_x[a], act_y[b]] ** 2
    return out


class ChainState:
    """One chain of a coupled run: labels held as slots of a sufficient-statistics table, kept
    between sweeps so a sweep never rebuilds it. ``E``: edge counts between slots of each network
    family, shape (families, cap, cap) (no families: (0, cap, cap))."""

    __slots__ = ("slot_of", "sizes", "stats", "active", "n_active", "E")

    def __init__(self, slot_of, sizes, stats, active, n_active, E):
        self.slot_of, self.sizes, self.stats, self.active, self.n_active = slot_of, sizes, stats, active, n_active
        self.E = E

    def labels(self) -> np.ndarray:
        """Canonical labels (first-appearance order)."""
        out = np.empty(self.slot_of.shape[0], np.int64)
        canonicalize_into(self.slot_of, out)
        return out


class GibbsSweeps:
    """Single and coupled collapsed Gibbs sweeps for one model, on persistent chain states.

    Parameters
    ----------
    pack : FamilyPack
        Data and conjugate likelihoods.
    prior_code, prior_params :
        From a prior object (``prior.code``, ``prior.kernel_params()``).
    coupling : {"ot", "maximal", "crn", "independent", "aligned"}
        How the two chains' draws are coupled at each item (see :mod:`.draws`). ``"aligned"``:
        at the start of every coupled sweep the blocks of the two chains are paired greedily by
        overlap (:func:`_align`; identical blocks always pair), and each item's two draws come
        from the maximal coupling of the two conditionals under that pairing, the new blocks
        paired (:func:`.draws.draw_aligned`): O(K) per item instead of a transport solve; the
        pairing is updated within the sweep (a pair is dropped when a block empties, two
        blocks opened by the same item pair).
    eps : float
        Probability of using the independent coupling instead at each item (0 to 1). The seed
        authors' later code uses 1e-5; it guards against couplings that lock into a bad pattern.
    """

    def __init__(self, pack: FamilyPack, prior_code: int, prior_params, coupling: str = "ot", eps: float = 0.0):
        owner = "GibbsSweeps"
        self.coupling = _checks.choice("coupling", coupling, sorted(COUPLINGS), owner=owner)
        self.eps = _checks.probability("eps", eps, owner=owner)
        self.prior_code, self.prior_params = check_model(pack, prior_code, prior_params, owner, network=True)
        self.pack = pack
        self.network = has_network(pack)
        self._net_ho = network_offsets(pack)
        self.n = pack.data.shape[0]
        self._scratch = np.empty(max(1, pack.data.shape[1]))
        self._empty = np.empty((1, pack.width))
        pack_init(pack.codes, pack.dims, pack.stat_off, pack.hyper_off, pack.hyper, self._empty, 0)

    def _pack_args(self):
        p = self.pack
        return (self.prior_code, self.prior_params, p.codes, p.dims, p.data_off, p.stat_off, p.hyper_off, p.hyper,
                p.data)

    # -- randomness: everything a sweep needs, drawn up front (the coupling contract)
    def random_numbers(self, rng: np.random.Generator):
        """(visiting order, uniforms (n, UNIFORMS_PER_VISIT)) of one sweep. A single-chain sweep
        uses the second column, so a chain advanced alone or coupled consumes the same stream."""
        return rng.permutation(self.n), rng.random((self.n, UNIFORMS_PER_VISIT))

    def start(self, labels) -> ChainState:
        """A chain state from labels (n integers in [0, n))."""
        labels = as_labels(labels, self.n, owner="GibbsSweeps.start")
        p = self.pack
        slot_of, sizes, stats, active, k = _build(labels, p.codes, p.dims, p.data_off, p.stat_off, p.hyper_off,
                                                  p.hyper, p.data, p.width, self._scratch)
        E = net_build(slot_of, sizes.shape[0], self._net_ho, p.hyper, self.n)
        return ChainState(slot_of, sizes, stats, active, k, E)

    def _randomness(self, randomness, owner):
        """(order, uniforms) checked: n' item indices in [0, n) and (n', UNIFORMS_PER_VISIT) uniforms in [0, 1)."""
        try:
            order, uniforms = randomness
        except (TypeError, ValueError):
            raise TypeError(f"{owner}: randomness must be (order, uniforms), got {type(randomness).__name__}") from None
        order = index_array(order, self.n, name="order", owner=owner)
        if order.ndim != 1:
            raise ValueError(f"{owner}: order must be a vector of item indices, got shape {order.shape}")
        return order, check_uniforms(uniforms, (order.shape[0], UNIFORMS_PER_VISIT), owner)

    def _state(self, state, owner):
        """Raise unless ``state`` is a chain state of this kernel's model (made by :meth:`start`)."""
        ok = (isinstance(state, ChainState) and state.slot_of.shape == (self.n,) and state.stats.ndim == 2
              and state.stats.shape[1] == self.pack.width and state.sizes.shape[0] == state.stats.shape[0]
              == state.active.shape[0] and 0 <= state.n_active <= state.sizes.shape[0]
              and isinstance(state.E, np.ndarray) and state.E.ndim == 3
              and state.E.shape[0] == self._net_ho.shape[0]
              and (not self.network or state.E.shape[1:] == (state.sizes.shape[0],) * 2))
        if not ok:
            raise ValueError(f"{owner}: the state must be a ChainState made by this kernel's start()")

    def sweep(self, state: ChainState, randomness) -> None:
        """One single-chain sweep, in place."""
        self._state(state, "GibbsSweeps.sweep")
        order, uniforms = self._randomness(randomness, "GibbsSweeps.sweep")
        if self.network:
            state.sizes, state.stats, state.active, state.n_active, state.E = net_sweep(
                state.slot_of, state.sizes, state.stats, state.active, state.n_active, state.E, order,
                np.ascontiguousarray(uniforms[:, 1]), *self._pack_args(), self._empty, self._scratch, self._net_ho,
            )
            return
        state.sizes, state.stats, state.active, state.n_active = _sweep(
            state.slot_of, state.sizes, state.stats, state.active, state.n_active, order,
            np.ascontiguousarray(uniforms[:, 1]), *self._pack_args(), self._empty, self._scratch,
        )

    def intersections(self, x: ChainState, y: ChainState) -> np.ndarray:
        """Table of |A ∩ B| over the slots of the two chains."""
        self._state(x, "GibbsSweeps.intersections")
        self._state(y, "GibbsSweeps.intersections")
        return _intersections(x.slot_of, x.sizes.shape[0], y.slot_of, y.sizes.shape[0])

    def coupled_sweep(self, x: ChainState, y: ChainState, inter: np.ndarray, randomness,
                      other: GibbsSweeps | None = None) -> np.ndarray:
        """One coupled sweep of both chains, in place; returns the (possibly grown) intersection table.

        ``other``: the kernel of chain y when its hyperparameters differ from this kernel's (the
        same model at other values of alpha, discount or the likelihoods' hyperparameters, see
        :meth:`compatible`); each chain is then exactly the single-chain sweep at its own values.
        Default: this kernel for both chains."""
        owner = "GibbsSweeps.coupled_sweep"
        if other is None:
            other = self
        elif not self.compatible(other):
            raise ValueError(f"{owner}: other must be a GibbsSweeps of the same model structure (families, data "
                             "shape, prior, coupling) at other hyperparameter values")
        self._state(x, owner)
        other._state(y, owner)
        inter = np.asarray(inter)
        if inter.dtype != np.int64 or inter.shape != (x.sizes.shape[0], y.sizes.shape[0]):
            raise ValueError(f"{owner}: inter must be the int64 intersection table of the two states "
                             "(GibbsSweeps.intersections)")
        order, uniforms = self._randomness(randomness, owner)
        (x.sizes, x.stats, x.active, x.n_active, x.E, y.sizes, y.stats, y.active, y.n_active, y.E,
         inter) = _coupled_sweep(
            COUPLINGS[self.coupling], self.eps, order, uniforms,
            x.slot_of, x.sizes, x.stats, x.active, x.n_active, y.slot_of, y.sizes, y.stats, y.active, y.n_active,
            inter, *self._pack_args(), self._empty, self._scratch, self._net_ho, x.E, y.E,
            other.prior_params, other.pack.hyper, other.pack.data, other._empty,
        )
        return inter

    def compatible(self, other) -> bool:
        """Whether ``other`` is a kernel of the same model structure (families, their layout, data
        shape, prior and coupling), possibly at other hyperparameter values."""
        if other is self:
            return True
        a, b = self.pack, getattr(other, "pack", None)
        return (isinstance(other, GibbsSweeps) and self.prior_code == other.prior_code
                and self.coupling == other.coupling and self.eps == other.eps and a.width == b.width
                and a.data.shape == b.data.shape and a.hyper.shape == b.hyper.shape
                and all(np.array_equal(getattr(a, f), getattr(b, f))
                        for f in ("codes", "dims", "data_off", "stat_off", "hyper_off")))

    @staticmethod
    def distance(x: ChainState, y: ChainState, inter: np.ndarray) -> int:
        """Mirkin distance between the two chains' partitions (seed 000, eq. 2)."""
        inter = np.asarray(inter)
        ok = (isinstance(x, ChainState) and isinstance(y, ChainState) and x.slot_of.shape == y.slot_of.shape
              and inter.dtype == np.int64 and inter.shape == (x.sizes.shape[0], y.sizes.shape[0])
              and 0 <= x.n_active <= x.active.shape[0] == x.sizes.shape[0]
              and 0 <= y.n_active <= y.active.shape[0] == y.sizes.shape[0])
        if not ok:
            raise ValueError("GibbsSweeps.distance: need two chain states of one kernel and their intersection table")
        return int(_mirkin(x.sizes, x.active, x.n_active, y.sizes, y.active, y.n_active, inter))
