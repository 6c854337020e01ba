"""The slot table of a cluster state, shared by the Gibbs, network and coupled sweeps.

Blocks live in *slots* of a statistics table (``sizes``, ``stats``, ``active``: the occupied slots
in order of creation); the table grows by doubling, so memory is O(K (D + W)). These compiled
helpers build the table from labels, grow it, take an item out of its block and compute the
prior's join weights; :mod:`~pymc_partitions.samplers.gibbs` and
:mod:`~pymc_partitions.samplers.network` both build on them (a module below both, so that
neither imports the other).
"""

from __future__ import annotations

import numba
import numpy as np

from ..families.kernels import pack_init, pack_update
from ..partition import canonicalize_dense_into
from ..priors import log_join_weight

__all__ = ["_build", "_grow", "_remove", "_free_slot", "_join_weights"]


@numba.njit(cache=True, error_model="numpy")
def _build(labels, codes, dims, data_off, stat_off, hyper_off, hyper, data, width, scratch):
    """Slot table from labels: returns (slot of each item, sizes, stats, slot order, n_active)."""
    n = labels.shape[0]
    canon = np.empty(n, np.int64)
    k = canonicalize_dense_into(labels, n, canon)  # labels in [0, n): checked by the callers
    cap = min(n + 1, max(2 * k + 8, 16))
    sizes = np.zeros(cap, np.int64)
    stats = np.empty((cap, width))
    for s in range(k):
        pack_init(codes, dims, stat_off, hyper_off, hyper, stats, s)
    for i in range(n):
        s = canon[i]
        sizes[s] += 1
        pack_update(codes, dims, data_off, stat_off, hyper_off, hyper, stats, s, data, i, 1.0, scratch)
    active = np.arange(cap)
    return canon, sizes, stats, active, k


@numba.njit(cache=True, error_model="numpy")
def _grow(sizes, stats, active):
    """Double the slot table (the new slots are free)."""
    cap = sizes.shape[0]
    new_cap = 2 * cap
    sizes2 = np.zeros(new_cap, np.int64)
    stats2 = np.empty((new_cap, stats.shape[1]))
    active2 = np.arange(new_cap)
    for s in range(cap):  # loops, not slice assignments: those compile numba's shape-mismatch error
        sizes2[s] = sizes[s]  # message (string formatting: seconds on a cold cache)
        active2[s] = active[s]
        for c in range(stats.shape[1]):
            stats2[s, c] = stats[s, c]
    return sizes2, stats2, active2


@numba.njit(cache=True, error_model="numpy", inline="always")
def _remove(i, slot_of, sizes, stats, active, n_active, join_w, prior_code, prior_params,
            codes, dims, data_off, stat_off, hyper_off, hyper, data, scratch):
    """Take item ``i`` out of its block; returns the new number of active slots. Inlined where it
    is called (the single-chain, network and coupled sweeps share it at no call cost).

    ``active[:n_active]`` lists the occupied slots in order of creation (what label-based
    couplings match on); an emptied slot moves to the front of the free part."""
    s = slot_of[i]
    sizes[s] -= 1
    if sizes[s] > 0:
        pack_update(codes, dims, data_off, stat_off, hyper_off, hyper, stats, s, data, i, -1.0, scratch)
        join_w[s] = log_join_weight(prior_code, prior_params, sizes[s])
        return n_active
    return _free_slot(s, active, n_active)


@numba.njit(cache=True, error_model="numpy", inline="always")
def _free_slot(s, active, n_active):
    """Take slot ``s`` out of ``active[:n_active]`` (kept in creation order) to the front of the free
    part; returns the new number of active slots."""
    j = 0
    while active[j] != s:
        j += 1
    for jj in range(j, n_active - 1):
        active[jj] = active[jj + 1]
    active[n_active - 1] = s
    return n_active - 1


@numba.njit(cache=True, error_model="numpy")
def _join_weights(sizes, active, n_active, prior_code, prior_params):
    """The prior's log join weight of every occupied slot (0 for free slots)."""
    join_w = np.zeros(sizes.shape[0])
    for j in range(n_active):
        join_w[active[j]] = log_join_weight(prior_code, prior_params, sizes[active[j]])
    return join_w
