"""Neal's (2000) Algorithm 8 label sweep for non-conjugate partition mixtures.

The model: a partition c of n items with an exchangeable prior (code, params of
:mod:`pymc_partitions.priors`), one parameter phi_b per block drawn iid from a base measure G0, and
items independent given them, y_i ~ f(. | phi_{c_i}). Algorithm 8 updates c_i given everything
else, with phi integrated over new blocks by *auxiliary* parameters: item i, taken out of its
block, may join an occupied block b with weight join(|b|) f(y_i | phi_b), or one of m auxiliary
parameters psi_1..psi_m, fresh iid draws from G0, with weight new(K) / m * f(y_i | psi_j); when i
was alone in its block, its own phi is psi_1 (Neal's rule) and only psi_2..psi_m are fresh. Here
join / new are the prior's sequential weights (:func:`~pymc_partitions.priors.log_join_weight`,
:func:`~pymc_partitions.priors.log_new_weight`): |b| + ... for CRP, Pitman-Yor and the finite
Dirichlet alike, so the same sweep serves every prior.

The kernel knows nothing of the likelihood: it is given the log-likelihood of every item under
every occupied slot (``L``, n x capacity) and under its own m auxiliaries (``Laux``, n x m). When
an item opens a block with a fresh auxiliary, the compiled loop stops and returns to Python with
the item, the auxiliary chosen and the slot it now occupies; the caller (``open_block``) stores
that auxiliary's parameter in the slot and returns the slot's column of ``L`` (every item's
log-likelihood under it), and the loop resumes at the next item: Python runs once per new block,
not per item. The auxiliaries of different items must be independent draws (an auxiliary taken
by one item must not be offered again to another): the caller's job, see
:mod:`pymc_partitions.pymc.nonconjugate`.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from .._numeric import check_uniforms, draw_log_weights
from ..partition import index_array
from ..priors import log_join_weight, log_new_weight
from .gibbs import check_prior

__all__ = ["algorithm8_sweep", "trusted_sweep"]

#: kernel return codes
_DONE, _OPENED, _FULL = 0, 1, 2


class NonFiniteLogLikelihood(ValueError):
    """An item's log-likelihood is NaN or +inf (the likelihood the caller evaluates is not a density there). A
    ValueError."""


@numba.njit(cache=True, error_model="numpy")
def _visit(t0, order, uniforms, slot_of, sizes, free, n_free, n_blocks, L, Laux, prior_code, prior_params,
           logw, index):
    """Algorithm 8 updates at visits t0, t0+1, ... of ``order``. Returns (code, visit, aux, slot,
    n_free, n_blocks): ``_DONE`` at the end; ``_OPENED`` after item ``order[visit]`` opened a block
    in ``slot`` with its fresh auxiliary ``aux`` (the caller fills the slot's column of ``L``);
    ``_FULL`` before changing anything when a new block needs a slot and none is free."""
    cap = sizes.shape[0]
    m = Laux.shape[1]
    log_m = math.log(m)
    for t in range(t0, order.shape[0]):
        i = order[t]
        s = slot_of[i]
        alone = sizes[s] == 1
        sizes[s] -= 1
        others = n_blocks - 1 if alone else n_blocks
        count = 0
        for b in range(cap):
            if sizes[b] > 0:
                logw[count] = log_join_weight(prior_code, prior_params, sizes[b]) + L[i, b]
                index[count] = b
                count += 1
        w_new = log_new_weight(prior_code, prior_params, others) - log_m
        for j in range(m):
            logw[count + j] = w_new + (L[i, s] if (alone and j == 0) else Laux[i, j])
        chosen = draw_log_weights(logw, count + m, uniforms[t])
        if chosen < count:
            b = index[chosen]
            sizes[b] += 1
            slot_of[i] = b
            if alone:
                free[n_free] = s
                n_free += 1
                n_blocks -= 1
            continue
        if alone and chosen == count:  # its own parameter: the state does not change
            sizes[s] += 1
            continue
        aux = chosen - count
        if alone:  # a fresh parameter for the same block: reuse its slot
            sizes[s] = 1
            return _OPENED, t, aux, s, n_free, n_blocks
        if n_free == 0:
            sizes[s] += 1
            return _FULL, t, aux, -1, n_free, n_blocks
        n_free -= 1
        f = free[n_free]
        sizes[f] = 1
        slot_of[i] = f
        return _OPENED, t, aux, f, n_free, n_blocks + 1
    return _DONE, order.shape[0], -1, -1, n_free, n_blocks


def algorithm8_sweep(slot_of, L, Laux, order, uniforms, prior_code, prior_params, open_block):
    """One Algorithm 8 sweep over ``order``; returns (slot of each item, ``L``).

    Parameters
    ----------
    slot_of : (n,) integers in [0, capacity)
        The slot (column of ``L``) of each item's block; several items share a slot iff they share
        a block.
    L : (n, capacity) float
        ``L[i, s]``: log-likelihood of item i under the parameter of occupied slot s (free slots'
        columns are ignored).
    Laux : (n, m) float, m >= 1
        Log-likelihoods of item i under its own m fresh auxiliary parameters (independent draws
        from the base measure, never offered to another item).
    order, uniforms : (T,) visiting order (items) and one uniform in [0, 1) per visit.
    prior_code, prior_params : the partition prior (``priors``).
    open_block : callable ``(item, aux, slot) -> (n,) column``
        Called when ``item`` opens a block with its auxiliary ``aux`` in ``slot``: the caller stores
        that auxiliary's parameter in ``slot`` (growing its table when ``slot`` is beyond it) and
        returns every item's log-likelihood under it.

    The returned ``L`` is a new array when the table had to grow (its capacity doubles). Every
    argument is checked here, so the compiled loop never indexes out of bounds.
    """
    owner = "algorithm8_sweep"
    L = np.ascontiguousarray(L, dtype=np.float64)
    Laux = np.ascontiguousarray(Laux, dtype=np.float64)
    if L.ndim != 2 or L.shape[1] < 1:
        raise ValueError(f"{owner}: L must be (n, capacity) with capacity >= 1, got shape {L.shape}")
    n, cap = L.shape
    if Laux.ndim != 2 or Laux.shape[0] != n or Laux.shape[1] < 1:
        raise ValueError(f"{owner}: Laux must be (n={n}, m) with m >= 1, got shape {Laux.shape}")
    slot_of = index_array(slot_of, cap, name="slot_of", owner=owner).astype(np.int64).copy()
    if slot_of.shape != (n,):
        raise ValueError(f"{owner}: slot_of must have length n={n}, got shape {slot_of.shape}")
    order = index_array(order, n, name="order", owner=owner).astype(np.int64)
    if order.ndim != 1:
        raise ValueError(f"{owner}: order must be one-dimensional, got shape {order.shape}")
    uniforms = check_uniforms(uniforms, order.shape, owner)
    code, params = check_prior(n, prior_code, prior_params, owner)
    if not callable(open_block):
        raise TypeError(f"{owner}: open_block must be callable, got {open_block!r}")
    return trusted_sweep(slot_of, L, Laux, order, uniforms, code, params, open_block)


def trusted_sweep(slot_of, L, Laux, order, uniforms, prior_code, prior_params, open_block):
    """:func:`algorithm8_sweep` for arguments already known valid: ``slot_of`` an int64 array of the n items'
    slots (overwritten), ``L`` and ``Laux`` C-contiguous float64, ``order`` int64 indices of items, ``uniforms`` in
    [0, 1) of the same length, the prior's parameters valid. ``NonConjugateGibbs`` builds them so and calls this
    every draw, where the full checks cost more than the sweep. ``L`` and ``Laux`` are still checked for NaN and
    +inf (the user's likelihood fills them), and so is every column ``open_block`` returns."""
    owner = "algorithm8_sweep"
    if not ((L < np.inf).all() and (Laux < np.inf).all()):  # (False for NaN too)
        raise NonFiniteLogLikelihood(f"{owner}: L and Laux must not hold NaN or +inf")
    n = L.shape[0]
    cap = L.shape[1]
    sizes = np.bincount(slot_of, minlength=cap).astype(np.int64)
    n_blocks = int(np.count_nonzero(sizes))
    free = np.flatnonzero(sizes == 0)[::-1].astype(np.int64)  # lowest slots first off the stack
    free = np.concatenate([free, np.empty(n, np.int64)])
    n_free = cap - n_blocks
    m = Laux.shape[1]
    t = 0
    while True:
        logw = np.empty(sizes.shape[0] + m)
        index = np.empty(sizes.shape[0], np.int64)
        code_, t, aux, slot, n_free, n_blocks = _visit(t, order, uniforms, slot_of, sizes, free, n_free, n_blocks, L,
                                                       Laux, prior_code, prior_params, logw, index)
        if code_ == _DONE:
            return slot_of, L
        if code_ == _FULL:
            cap = sizes.shape[0]
            L = np.concatenate([L, np.zeros((n, cap))], axis=1)
            sizes = np.concatenate([sizes, np.zeros(cap, np.int64)])
            free = np.concatenate([np.arange(2 * cap - 1, cap - 1, -1, dtype=np.int64), np.empty(n, np.int64)])
            n_free = cap
            continue
        column = np.asarray(open_block(int(order[t]), int(aux), int(slot)), dtype=np.float64)
        if column.shape != (n,):
            raise ValueError(f"{owner}: open_block must return n={n} log-likelihoods, got shape {column.shape}")
        if not (column < np.inf).all():
            raise NonFiniteLogLikelihood(f"{owner}: open_block must return log-likelihoods without NaN or +inf")
        L[:, slot] = column
        t += 1
