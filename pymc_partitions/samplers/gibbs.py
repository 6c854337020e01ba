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

from ..families.kernels import FamilyPack, pack_init, pack_log_marginal, pack_log_pred, pack_update
from ..priors import log_eppf_sizes, log_join_weight, log_new_weight

__all__ = ["gibbs_sweeps", "log_joint", "GibbsKernel"]


@numba.njit(cache=True)
def _build(labels, codes, dims, data_off, stat_off, hyper_off, hyper, data, width, scratch):
    """Slot table from labels: returns (slot labels, sizes, stats, active slots, n_active)."""
    n = labels.shape[0]
    canon = np.empty(n, np.int64)
    lo = labels.min()
    seen = np.full(labels.max() - lo + 1, -1, np.int64)
    k = 0
    for i in range(n):
        j = labels[i] - lo
        if seen[j] < 0:
            seen[j] = k
            k += 1
        canon[i] = seen[j]
    cap = min(n + 1, max(2 * k + 8, 16))
    sizes = np.zeros(cap, np.int64)
    stats = np.empty((cap, width))
    for s in range(k):
        pack_init(codes, dims, stat_off, hyper_off, hyper, stats[s])
    for i in range(n):
        s = canon[i]
        sizes[s] += 1
        pack_update(codes, dims, data_off, stat_off, hyper_off, hyper, stats[s], data[i], 1.0, scratch)
    active = np.arange(cap)
    return canon, sizes, stats, active, k


@numba.njit(cache=True)
def _grow(sizes, stats, active):
    cap = sizes.shape[0]
    new_cap = 2 * cap
    sizes2 = np.zeros(new_cap, np.int64)
    sizes2[:cap] = sizes
    stats2 = np.empty((new_cap, stats.shape[1]))
    stats2[:cap] = stats
    active2 = np.arange(new_cap)
    active2[:cap] = active
    return sizes2, stats2, active2


@numba.njit(cache=True)
def _sweep(slot_of, sizes, stats, active, n_active, order, uniforms, prior_code, prior_params,
           codes, dims, data_off, stat_off, hyper_off, hyper, data, empty_row, scratch, logw):
    """One Gibbs sweep in visiting ``order``. ``active[:n_active]`` are the occupied slots and
    ``active[n_active:]`` the free ones; ``pos`` is rebuilt here (slot -> index in active)."""
    cap = sizes.shape[0]
    pos = np.empty(cap, np.int64)
    for j in range(cap):
        pos[active[j]] = j
    for t in range(order.shape[0]):
        i = order[t]
        x = data[i]
        s = slot_of[i]
        sizes[s] -= 1
        if sizes[s] == 0:
            # free slot s: swap it to the end of the active part
            j = pos[s]
            last = active[n_active - 1]
            active[j] = last
            pos[last] = j
            active[n_active - 1] = s
            pos[s] = n_active - 1
            n_active -= 1
        else:
            pack_update(codes, dims, data_off, stat_off, hyper_off, hyper, stats[s], x, -1.0, scratch)
        if logw.shape[0] < n_active + 1:
            logw = np.empty(2 * (n_active + 1))
        top = -np.inf
        for j in range(n_active):
            b = active[j]
            w = log_join_weight(prior_code, prior_params, sizes[b]) + pack_log_pred(
                codes, dims, data_off, stat_off, hyper_off, hyper, stats[b], x, scratch
            )
            logw[j] = w
            if w > top:
                top = w
        w = log_new_weight(prior_code, prior_params, n_active)
        if w > -np.inf:
            w += pack_log_pred(codes, dims, data_off, stat_off, hyper_off, hyper, empty_row, x, scratch)
        logw[n_active] = w
        if w > top:
            top = w
        total = 0.0
        for j in range(n_active + 1):
            logw[j] = math.exp(logw[j] - top)
            total += logw[j]
        target = uniforms[t] * total
        chosen = n_active
        acc = 0.0
        for j in range(n_active + 1):
            acc += logw[j]
            if target < acc:
                chosen = j
                break
        if chosen == n_active and logw[n_active] == 0.0:
            chosen = n_active - 1  # rounding past the end when a new block is impossible
        if chosen == n_active:
            if n_active == cap:
                sizes, stats, active = _grow(sizes, stats, active)
                cap = sizes.shape[0]
                pos2 = np.empty(cap, np.int64)
                pos2[: pos.shape[0]] = pos
                for j in range(pos.shape[0], cap):
                    pos2[active[j]] = j
                pos = pos2
            s = active[n_active]
            n_active += 1
            stats[s, :] = empty_row
        else:
            s = active[chosen]
        pack_update(codes, dims, data_off, stat_off, hyper_off, hyper, stats[s], x, 1.0, scratch)
        sizes[s] += 1
        slot_of[i] = s
    return sizes, stats, active, n_active


@numba.njit(cache=True)
def _log_joint(sizes, stats, active, n_active, prior_code, prior_params, codes, dims, stat_off, hyper_off, hyper):
    occupied = np.empty(n_active, np.int64)
    out = 0.0
    for j in range(n_active):
        b = active[j]
        occupied[j] = sizes[b]
        out += pack_log_marginal(codes, dims, stat_off, hyper_off, hyper, stats[b])
    return out + log_eppf_sizes(prior_code, prior_params, occupied)


@numba.njit(cache=True)
def _gibbs_sweeps(labels, orders, uniforms, prior_code, prior_params,
                  codes, dims, data_off, stat_off, hyper_off, hyper, data, width):
    scratch = np.empty(max(1, data.shape[1]))
    slot_of, sizes, stats, active, n_active = _build(
        labels, codes, dims, data_off, stat_off, hyper_off, hyper, data, width, scratch
    )
    empty_row = np.empty(width)
    pack_init(codes, dims, stat_off, hyper_off, hyper, empty_row)
    logw = np.empty(2 * n_active + 16)
    for sweep in range(orders.shape[0]):
        sizes, stats, active, n_active = _sweep(
            slot_of, sizes, stats, active, n_active, orders[sweep], uniforms[sweep], prior_code, prior_params,
            codes, dims, data_off, stat_off, hyper_off, hyper, data, empty_row, scratch, logw,
        )
    lj = _log_joint(sizes, stats, active, n_active, prior_code, prior_params, codes, dims, stat_off, hyper_off, hyper)
    # canonical relabelling of the slots
    out = np.empty(slot_of.shape[0], np.int64)
    new = np.full(sizes.shape[0], -1, np.int64)
    k = 0
    for i in range(slot_of.shape[0]):
        s = slot_of[i]
        if new[s] < 0:
            new[s] = k
            k += 1
        out[i] = new[s]
    return out, lj


def gibbs_sweeps(labels, pack: FamilyPack, prior_code: int, prior_params, orders, uniforms):
    """Run ``len(orders)`` collapsed Gibbs sweeps; returns (canonical labels, log joint).

    ``orders[s]`` is the visiting order of sweep ``s`` (any sequence of item indices, usually a
    permutation) and ``uniforms[s, t]`` in [0, 1) drives the draw at visit ``t``. The log joint is
    log p(partition) + sum over blocks of the log marginal likelihood, at the returned state.
    """
    labels = np.ascontiguousarray(labels, dtype=np.int64)
    orders = np.atleast_2d(np.ascontiguousarray(orders, dtype=np.int64))
    uniforms = np.atleast_2d(np.ascontiguousarray(uniforms, dtype=np.float64))
    return _gibbs_sweeps(
        labels, orders, uniforms, int(prior_code), np.asarray(prior_params, np.float64),
        pack.codes, pack.dims, pack.data_off, pack.stat_off, pack.hyper_off, pack.hyper, pack.data, pack.width,
    )


def log_joint(labels, pack: FamilyPack, prior_code: int, prior_params) -> float:
    """log p(partition) + collapsed log likelihood of the data, computed from sufficient statistics."""
    empty = np.zeros((0, len(labels)), np.int64)
    return float(gibbs_sweeps(labels, pack, prior_code, prior_params, empty, empty.astype(float))[1])


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
        self.pack = pack
        self.prior_code = int(prior_code)
        self.prior_params = np.asarray(prior_params, np.float64)
        self.sweeps = int(sweeps)

    def random_numbers(self, rng: np.random.Generator, n: int):
        """The randomness of one call: visiting orders (random scan) and uniforms."""
        orders = np.stack([rng.permutation(n) for _ in range(self.sweeps)])
        return orders, rng.random((self.sweeps, n))

    def step(self, labels, rng: np.random.Generator):
        """One call: returns (canonical labels, log joint)."""
        orders, uniforms = self.random_numbers(rng, len(labels))
        return gibbs_sweeps(labels, self.pack, self.prior_code, self.prior_params, orders, uniforms)
