"""Collapsed Gibbs sampler on partitions (Neal 2000, Algorithm 3), as one compiled sweep.

The kernel knows nothing of PyMC. It takes a partition (labels), the packed conjugate families
(:class:`~pymc_partitions.families.kernels.FamilyPack`), a prior (``code``, ``params`` from
:mod:`pymc_partitions.priors`) and the random numbers of the sweep (a visiting order and one
uniform per visit), and returns the new partition in canonical labels. Passing the random
numbers in makes the kernel a deterministic function of (state, randomness): the coupling
engine relies on that.

Inside the sweep, blocks live in *slots* of a statistics table; the table grows by doubling,
so memory is O(K (D + W)) and never O(n^2).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from .. import _checks
from .._numeric import check_uniforms, draw_log_weights, draw_seed, keyed_sweep_numbers, runtime_int
from ..families.kernels import (FamilyPack, check_pack, has_network, pack_init, pack_log_marginal, pack_log_preds,
                                pack_update, refuse_network)
from ..partition import as_labels, canonicalize_dense_into, index_array
from ..priors import (FINITE_DIRICHLET, PITMAN_YOR, UNIFORM_LABELS, log_eppf_sizes, log_join_weight, log_new_weight,
                      valid_parameters)
from .network import _network_gibbs_sweeps, network_offsets
from .slots import _build, _grow, _join_weights, _remove

__all__ = ["gibbs_sweeps", "log_joint", "GibbsKernel", "check_model", "check_prior"]

_ALPHA_MAX = 1e290  # lgamma(alpha + n) and its like stay finite (lgamma overflows near 2.5e305)


def check_model(pack, prior_code, prior_params, owner: str, *, network: bool = False) -> tuple[int, np.ndarray]:
    """(prior code, prior params as float64 [alpha, discount, k]) after checking them and the pack's
    layout: what every kernel entry point does before it calls compiled code. Packs with a network
    likelihood (``NETWORK``) are refused unless the caller adds its block-pair terms (``network``)."""
    check_pack(pack, owner)
    if not network:
        refuse_network(pack, owner)
    return check_prior(pack.data.shape[0], prior_code, prior_params, owner)


def check_prior(n, prior_code, prior_params, owner: str) -> tuple[int, np.ndarray]:
    """(prior code, prior params as float64 [alpha, discount, k]) after checking them for a partition of
    ``n`` items."""
    code = prior_code if type(prior_code) is int and 0 <= prior_code <= 2 else \
        _checks.integer("prior_code", prior_code, low=0, high=2, owner=owner)  # (the common case first: fast)
    try:
        params = np.array(prior_params, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise TypeError(f"{owner}: prior_params must be numbers [alpha, discount, k], got {prior_params!r}") from None
    values = params.tolist()
    if len(values) != 3 or not all(map(math.isfinite, values)):
        raise ValueError(f"{owner}: prior_params must be three finite numbers [alpha, discount, k], "
                         f"got {prior_params!r}")
    alpha, discount, k = values
    if code == PITMAN_YOR:  # (alpha = 0 with discount 0: the limit of an alpha that underflowed; valid_parameters)
        ok = valid_parameters(code, alpha, discount) and alpha + n <= _ALPHA_MAX
        what = "Pitman-Yor: need 0 <= discount < 1 and -discount < alpha <= 1e290"  # (or their float limits)
    else:
        ok = k >= 1 and k == math.floor(k) and (code == UNIFORM_LABELS or valid_parameters(code, alpha, discount)
                                                and k * alpha + n <= _ALPHA_MAX)
        what = ("finite Dirichlet: need alpha > 0, k a positive integer and k alpha <= 1e290"
                if code == FINITE_DIRICHLET else "uniform labels: need k a positive integer")
    if not ok:
        raise ValueError(f"{owner}: invalid prior parameters [alpha, discount, k] = {params.tolist()} ({what})")
    return code, params


@numba.njit(cache=True, error_model="numpy")
def _log_conditional(i, stats, active, n_active, join_w, logw, prior_code, prior_params,
                     codes, dims, data_off, stat_off, hyper_off, hyper, data, empty, scratch, first_row, new_lp):
    """Unnormalised log Gibbs conditional of item ``i`` (already removed): ``logw[j]`` for joining
    block ``active[j]``, ``j < n_active``, and ``logw[n_active]`` for opening a new block."""
    for j in range(n_active):
        logw[j] = join_w[active[j]]
    pack_log_preds(codes, dims, data_off, stat_off, hyper_off, hyper, stats, active, n_active, data, i, scratch, logw)
    w = log_new_weight(prior_code, prior_params, n_active)
    if w > -np.inf:
        new_lp[0] = w
        pack_log_preds(codes, dims, data_off, stat_off, hyper_off, hyper, empty, first_row, runtime_int(1), data, i, scratch,
                           new_lp)
        w = new_lp[0]
    logw[n_active] = w


@numba.njit(cache=True, error_model="numpy")
def _assign(i, chosen, slot_of, sizes, stats, active, n_active, join_w, prior_code, prior_params,
            codes, dims, data_off, stat_off, hyper_off, hyper, data, empty, scratch):
    """Put item ``i`` in block ``active[chosen]``, or in a fresh slot when ``chosen == n_active``;
    returns the new number of active slots."""
    if chosen == n_active:
        s = active[n_active]
        n_active += 1
        for c in range(stats.shape[1]):  # (a loop: see _grow)
            stats[s, c] = empty[0, c]
    else:
        s = active[chosen]
    pack_update(codes, dims, data_off, stat_off, hyper_off, hyper, stats, s, data, i, 1.0, scratch)
    sizes[s] += 1
    join_w[s] = log_join_weight(prior_code, prior_params, sizes[s])
    slot_of[i] = s
    return n_active


@numba.njit(cache=True, error_model="numpy", _nrt=False)
def _visit(t0, slot_of, sizes, stats, active, join_w, logw, n_active, order, uniforms, prior_code, prior_params,
           codes, dims, data_off, stat_off, hyper_off, hyper, data, empty, scratch, first_row, new_lp):
    """Gibbs updates at visits t0, t0+1, ... of ``order``; stops early, before changing anything,
    when a new block might be needed and the slot table is full. Returns (next visit, n_active).

    No array is reassigned here: that keeps numba's reference counting out of the inner loop.
    The body is :func:`_remove` (inlined by numba: ``inline="always"``, no call), then
    :func:`_log_conditional` and :func:`_assign` written out: calling them costs ~90 ns each per
    point (2026-11-23: 6.6 ms against 4.0 ms per sweep at n = 1e4, D = 2).
    ``tests/test_coupled_gibbs.py`` checks that the two forms give the same chain.
    Compiled without numba's runtime (``_nrt=False``: it allocates nothing), so that no reference
    counting of the inlined ``_remove``'s arrays runs per item (see families/kernels.py on ``_nrt``).
    """
    cap = sizes.shape[0]
    for t in range(t0, order.shape[0]):
        i = order[t]
        if n_active == cap and sizes[slot_of[i]] > 1:
            return t, n_active
        n_active = _remove(i, slot_of, sizes, stats, active, n_active, join_w, prior_code, prior_params,
                           codes, dims, data_off, stat_off, hyper_off, hyper, data, scratch)
        for j in range(n_active):
            logw[j] = join_w[active[j]]
        pack_log_preds(codes, dims, data_off, stat_off, hyper_off, hyper, stats, active, n_active, data, i, scratch, logw)
        w = log_new_weight(prior_code, prior_params, n_active)
        if w > -np.inf:
            new_lp[0] = w
            pack_log_preds(codes, dims, data_off, stat_off, hyper_off, hyper, empty, first_row, runtime_int(1), data, i, scratch,
                           new_lp)
            w = new_lp[0]
        logw[n_active] = w
        chosen = draw_log_weights(logw, n_active + 1, uniforms[t])
        if chosen == n_active:
            s = active[n_active]
            n_active += 1
            for c in range(stats.shape[1]):  # (a loop: see _grow)
                stats[s, c] = empty[0, c]
        else:
            s = active[chosen]
        pack_update(codes, dims, data_off, stat_off, hyper_off, hyper, stats, s, data, i, 1.0, scratch)
        sizes[s] += 1
        join_w[s] = log_join_weight(prior_code, prior_params, sizes[s])
        slot_of[i] = s
    return order.shape[0], n_active


@numba.njit(cache=True, error_model="numpy")
def _sweep(slot_of, sizes, stats, active, n_active, order, uniforms, prior_code, prior_params,
           codes, dims, data_off, stat_off, hyper_off, hyper, data, empty, scratch):
    """One Gibbs sweep in visiting ``order``. ``active[:n_active]`` are the occupied slots and
    ``active[n_active:]`` the free ones; the table doubles when full. The prior's log join weight
    of each slot is cached and refreshed only when the slot's size changes."""
    t = runtime_int(0)  # not the literal 0: numba would compile _visit once more for it (3-5 s)
    first_row = np.zeros(1, np.int64)  # the one block of the ``empty`` table
    new_lp = np.empty(1)
    while True:
        cap = sizes.shape[0]
        join_w = _join_weights(sizes, active, n_active, prior_code, prior_params)
        logw = np.empty(cap + 1)
        t, n_active = _visit(t, slot_of, sizes, stats, active, join_w, logw, n_active, order, uniforms,
                             prior_code, prior_params, codes, dims, data_off, stat_off, hyper_off, hyper, data,
                             empty, scratch, first_row, new_lp)
        if t == order.shape[0]:
            return sizes, stats, active, n_active
        sizes, stats, active = _grow(sizes, stats, active)


@numba.njit(cache=True, error_model="numpy")
def _log_joint(sizes, stats, active, n_active, prior_code, prior_params, codes, dims, stat_off, hyper_off, hyper):
    occupied = np.empty(n_active, np.int64)
    out = 0.0
    for j in range(n_active):
        b = active[j]
        occupied[j] = sizes[b]
        out += pack_log_marginal(codes, dims, stat_off, hyper_off, hyper, stats, b)
    return out + log_eppf_sizes(prior_code, prior_params, occupied)


@numba.njit(cache=True, error_model="numpy")
def _gibbs_sweeps(labels, orders, uniforms, prior_code, prior_params,
                  codes, dims, data_off, stat_off, hyper_off, hyper, data, width):
    scratch = np.empty(max(1, data.shape[1]))
    slot_of, sizes, stats, active, n_active = _build(
        labels, codes, dims, data_off, stat_off, hyper_off, hyper, data, width, scratch
    )
    empty = np.empty((1, width))
    pack_init(codes, dims, stat_off, hyper_off, hyper, empty, runtime_int(0))
    for sweep in range(orders.shape[0]):
        sizes, stats, active, n_active = _sweep(
            slot_of, sizes, stats, active, n_active, orders[sweep], uniforms[sweep], prior_code, prior_params,
            codes, dims, data_off, stat_off, hyper_off, hyper, data, empty, scratch,
        )
    lj = _log_joint(sizes, stats, active, n_active, prior_code, prior_params, codes, dims, stat_off, hyper_off, hyper)
    out = np.empty(slot_of.shape[0], np.int64)
    canonicalize_dense_into(slot_of, sizes.shape[0], out)  # slots lie in [0, capacity)
    return out, lj


def gibbs_sweeps(labels, pack: FamilyPack, prior_code: int, prior_params, orders, uniforms):
    """Run ``len(orders)`` collapsed Gibbs sweeps; returns (canonical labels, log joint).

    ``orders[s]`` is the visiting order of sweep ``s`` (any sequence of item indices, usually a
    permutation) and ``uniforms[s, t]`` in [0, 1) drives the draw at visit ``t``. The log joint is
    log p(partition) + sum over blocks of the log marginal likelihood, at the returned state.

    Every argument is checked first (labels: n integers in [0, n); orders: (sweeps, visits)
    integers in [0, n); uniforms: the same shape, in [0, 1)), so the compiled sweep never indexes
    out of bounds. Packs with network likelihoods (``NETWORK``) run the sweep of
    :mod:`.network`, which adds their block-pair terms. ``ValueError`` if a draw meets a NaN or +inf log weight, or no possible option
    (a current state of probability 0).
    """
    code, params = check_model(pack, prior_code, prior_params, "gibbs_sweeps", network=True)
    n = pack.data.shape[0]
    labels = as_labels(labels, n, owner="gibbs_sweeps")
    orders = np.atleast_2d(index_array(orders, n, name="orders", owner="gibbs_sweeps"))
    if orders.ndim != 2:
        raise ValueError(f"gibbs_sweeps: orders must be (sweeps, visits), got shape {orders.shape}")
    uniforms = check_uniforms(np.atleast_2d(np.asarray(uniforms, dtype=np.float64)), orders.shape, "gibbs_sweeps")
    if has_network(pack):  # block-pair terms: the sweep of samplers/network.py
        return _network_gibbs_sweeps(
            labels, orders, uniforms, code, params, pack.codes, pack.dims, pack.data_off, pack.stat_off,
            pack.hyper_off, pack.hyper, pack.data, pack.width, network_offsets(pack),
        )
    return _gibbs_sweeps(
        labels, orders, uniforms, code, params,
        pack.codes, pack.dims, pack.data_off, pack.stat_off, pack.hyper_off, pack.hyper, pack.data, pack.width,
    )


def log_joint(labels, pack: FamilyPack, prior_code: int, prior_params) -> float:
    """log p(partition) + collapsed log likelihood of the data, computed from sufficient statistics."""
    no_sweep = np.zeros((0, 0), np.int64)
    return float(gibbs_sweeps(labels, pack, prior_code, prior_params, no_sweep, no_sweep.astype(float))[1])


class GibbsKernel:
    """A collapsed Gibbs transition with its own random numbers drawn from a numpy Generator.

    Parameters
    ----------
    pack : FamilyPack
        The data and conjugate likelihoods.
    prior_code, prior_params :
        From a prior object (``prior.code``, ``prior.kernel_params()``).
    sweeps : int
        Sweeps per call to :meth:`step`.
    """

    def __init__(self, pack: FamilyPack, prior_code: int, prior_params, sweeps: int = 1):
        self.prior_code, self.prior_params = check_model(pack, prior_code, prior_params, "GibbsKernel", network=True)
        self.pack = pack
        self.sweeps = _checks.integer("sweeps", sweeps, low=1, owner="GibbsKernel")

    def random_numbers(self, rng: np.random.Generator, n: int):
        """The randomness of one call: visiting orders (random scan) and uniforms, from one seed
        drawn from ``rng`` (:func:`~pymc_partitions._numeric.keyed_sweep_numbers`)."""
        return keyed_sweep_numbers(n, self.sweeps, 0, draw_seed(rng))[:2]

    def step(self, labels, rng: np.random.Generator):
        """One call: returns (canonical labels, log joint)."""
        orders, uniforms = self.random_numbers(rng, len(labels))
        return gibbs_sweeps(labels, self.pack, self.prior_code, self.prior_params, orders, uniforms)
