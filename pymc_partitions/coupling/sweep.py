"""Coupled collapsed Gibbs sweeps on partitions (seed 000, Algorithm 1), compiled.

Two chains visit the same items in the same order. At each item both chains take it out of its
block and compute their Gibbs conditionals over (existing blocks + a new block); one coupled draw
(:mod:`~pymc_partitions.coupling.draws`) then places the item in both. Each chain on its own is
exactly the single-chain kernel of :mod:`pymc_partitions.samplers.gibbs`.

For the optimal transport coupling the cost of sending the item to block A of chain x and block B
of chain y is the increase of the Mirkin distance, 2 (|A| + |B| - 2 |A ∩ B|) (seed 000, eq. 8; the
factor 2 is dropped, it does not change the plan). The table of intersection sizes |A ∩ B| is kept
up to date item by item, so the cost matrix costs O(K^2) per item and never O(n).

Random numbers: a visiting order and ``UNIFORMS_PER_VISIT`` uniforms per visit. Identical states
with identical random numbers give identical outputs (the coupling contract of
:mod:`pymc_partitions.coupling.kernels`).
"""

from __future__ import annotations

import numba
import numpy as np

from ..families.kernels import FamilyPack, pack_init
from ..partition import canonicalize_into
from ..samplers.gibbs import _assign, _build, _grow, _join_weights, _log_conditional, _remove, _sweep
from .draws import draw_crn, draw_independent, draw_maximal, draw_ot, probabilities
from .transport import make_workspace

__all__ = ["COUPLINGS", "UNIFORMS_PER_VISIT", "ChainState", "GibbsSweeps"]

OT, MAXIMAL, CRN, INDEPENDENT = 0, 1, 2, 3
COUPLINGS = {"ot": OT, "maximal": MAXIMAL, "crn": CRN, "independent": INDEPENDENT}
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
    """Indices (into the candidates of each chain) of one coupled draw; see the module docstring."""
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
    a, b = draw_ot(pc, mx, qc, my, cost, u[1], u[2], rows, cols, mass, iwork, fwork)
    return ix[a], iy[b]


@numba.njit(cache=True, error_model="numpy")
def _coupled_visit(t0, method, eps, order, uniforms,
                   slot_x, size_x, stat_x, act_x, jw_x, lw_x, nx,
                   slot_y, size_y, stat_y, act_y, jw_y, lw_y, ny, inter,
                   prior_code, prior_params, codes, dims, data_off, stat_off, hyper_off, hyper, data,
                   empty, scratch, first_row, new_lp, p, q, ix, iy, pc, qc, cost, rows, cols, mass, iwork, fwork):
    """Coupled updates at visits t0, t0+1, ...; stops before changing anything when a chain might
    need a new block and its slot table is full. Returns (next visit, nx, ny)."""
    for t in range(t0, order.shape[0]):
        i = order[t]
        sx = slot_x[i]
        sy = slot_y[i]
        if (nx == size_x.shape[0] and size_x[sx] > 1) or (ny == size_y.shape[0] and size_y[sy] > 1):
            return t, nx, ny
        inter[sx, sy] -= 1
        nx = _remove(i, slot_x, size_x, stat_x, act_x, nx, jw_x, prior_code, prior_params,
                     codes, dims, data_off, stat_off, hyper_off, hyper, data, scratch)
        ny = _remove(i, slot_y, size_y, stat_y, act_y, ny, jw_y, prior_code, prior_params,
                     codes, dims, data_off, stat_off, hyper_off, hyper, data, scratch)
        _log_conditional(i, stat_x, act_x, nx, jw_x, lw_x, prior_code, prior_params,
                         codes, dims, data_off, stat_off, hyper_off, hyper, data, empty, scratch, first_row, new_lp)
        _log_conditional(i, stat_y, act_y, ny, jw_y, lw_y, prior_code, prior_params,
                         codes, dims, data_off, stat_off, hyper_off, hyper, data, empty, scratch, first_row, new_lp)
        cx, cy = _coupled_draw(method, eps, lw_x, nx, size_x, act_x, lw_y, ny, size_y, act_y, inter, uniforms[t],
                               p, q, ix, iy, pc, qc, cost, rows, cols, mass, iwork, fwork)
        nx = _assign(i, cx, slot_x, size_x, stat_x, act_x, nx, jw_x, prior_code, prior_params,
                     codes, dims, data_off, stat_off, hyper_off, hyper, data, empty, scratch)
        ny = _assign(i, cy, slot_y, size_y, stat_y, act_y, ny, jw_y, prior_code, prior_params,
                     codes, dims, data_off, stat_off, hyper_off, hyper, data, empty, scratch)
        inter[slot_x[i], slot_y[i]] += 1
    return order.shape[0], nx, ny


@numba.njit(cache=True, error_model="numpy")
def _grow_table(inter, rows, cols):
    out = np.zeros((rows, cols), np.int64)
    out[: inter.shape[0], : inter.shape[1]] = inter
    return out


@numba.njit(cache=True, error_model="numpy")
def _coupled_sweep(method, eps, order, uniforms, slot_x, size_x, stat_x, act_x, nx, slot_y, size_y, stat_y, act_y, ny,
                   inter, prior_code, prior_params, codes, dims, data_off, stat_off, hyper_off, hyper, data, empty,
                   scratch):
    """One coupled sweep; returns the (possibly grown) tables of both chains and their intersections."""
    first_row = np.zeros(1, np.int64)
    new_lp = np.empty(1)
    t = 0
    while True:
        cx = size_x.shape[0]
        cy = size_y.shape[0]
        c = max(cx, cy) + 1
        jw_x = _join_weights(size_x, act_x, nx, prior_code, prior_params)
        jw_y = _join_weights(size_y, act_y, ny, prior_code, prior_params)
        lw_x = np.empty(cx + 1)
        lw_y = np.empty(cy + 1)
        p = np.empty(c)
        q = np.empty(c)
        ix = np.empty(c, np.int64)
        iy = np.empty(c, np.int64)
        pc = np.empty(c)
        qc = np.empty(c)
        cost = np.empty((cx + 1, cy + 1))
        rows = np.empty(cx + cy + 2, np.int64)
        cols = np.empty(cx + cy + 2, np.int64)
        mass = np.empty(cx + cy + 2)
        iwork, fwork = make_workspace(cx + 1, cy + 1)
        t, nx, ny = _coupled_visit(t, method, eps, order, uniforms,
                                   slot_x, size_x, stat_x, act_x, jw_x, lw_x, nx,
                                   slot_y, size_y, stat_y, act_y, jw_y, lw_y, ny, inter,
                                   prior_code, prior_params, codes, dims, data_off, stat_off, hyper_off, hyper, data,
                                   empty, scratch, first_row, new_lp, p, q, ix, iy, pc, qc, cost, rows, cols, mass,
                                   iwork, fwork)
        if t == order.shape[0]:
            return size_x, stat_x, act_x, nx, size_y, stat_y, act_y, ny, inter
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
    between sweeps so a sweep never rebuilds it."""

    __slots__ = ("slot_of", "sizes", "stats", "active", "n_active")

    def __init__(self, slot_of, sizes, stats, active, n_active):
        self.slot_of, self.sizes, self.stats, self.active, self.n_active = slot_of, sizes, stats, active, n_active

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
    coupling : {"ot", "maximal", "crn", "independent"}
        How the two chains' draws are coupled at each item (see :mod:`.draws`).
    eps : float
        Probability of using the independent coupling instead at each item (0 to 1). The seed
        authors' later code uses 1e-5; it guards against couplings that lock into a bad pattern.
    """

    def __init__(self, pack: FamilyPack, prior_code: int, prior_params, coupling: str = "ot", eps: float = 0.0):
        if coupling not in COUPLINGS:
            raise ValueError(f"coupling must be one of {sorted(COUPLINGS)}, got {coupling!r}")
        eps = float(eps)
        if not 0.0 <= eps <= 1.0:
            raise ValueError(f"eps must be in [0, 1], got {eps}")
        self.pack = pack
        self.prior_code = int(prior_code)
        self.prior_params = np.asarray(prior_params, np.float64)
        self.coupling = coupling
        self.eps = eps
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
        labels = np.ascontiguousarray(labels, dtype=np.int64)
        if labels.shape != (self.n,):
            raise ValueError(f"labels must have shape ({self.n},), got {labels.shape}")
        p = self.pack
        slot_of, sizes, stats, active, k = _build(labels, p.codes, p.dims, p.data_off, p.stat_off, p.hyper_off,
                                                  p.hyper, p.data, p.width, self._scratch)
        return ChainState(slot_of, sizes, stats, active, k)

    def sweep(self, state: ChainState, randomness) -> None:
        """One single-chain sweep, in place."""
        order, uniforms = randomness
        state.sizes, state.stats, state.active, state.n_active = _sweep(
            state.slot_of, state.sizes, state.stats, state.active, state.n_active, order,
            np.ascontiguousarray(uniforms[:, 1]), *self._pack_args(), self._empty, self._scratch,
        )

    def intersections(self, x: ChainState, y: ChainState) -> np.ndarray:
        """Table of |A ∩ B| over the slots of the two chains."""
        return _intersections(x.slot_of, x.sizes.shape[0], y.slot_of, y.sizes.shape[0])

    def coupled_sweep(self, x: ChainState, y: ChainState, inter: np.ndarray, randomness) -> np.ndarray:
        """One coupled sweep of both chains, in place; returns the (possibly grown) intersection table."""
        order, uniforms = randomness
        (x.sizes, x.stats, x.active, x.n_active, y.sizes, y.stats, y.active, y.n_active, inter) = _coupled_sweep(
            COUPLINGS[self.coupling], self.eps, order, uniforms,
            x.slot_of, x.sizes, x.stats, x.active, x.n_active, y.slot_of, y.sizes, y.stats, y.active, y.n_active,
            inter, *self._pack_args(), self._empty, self._scratch,
        )
        return inter

    @staticmethod
    def distance(x: ChainState, y: ChainState, inter: np.ndarray) -> int:
        """Mirkin distance between the two chains' partitions (seed 000, eq. 2)."""
        return int(_mirkin(x.sizes, x.active, x.n_active, y.sizes, y.active, y.n_active, inter))
