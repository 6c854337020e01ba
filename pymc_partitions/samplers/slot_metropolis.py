"""The acceptance step of the occupied slots' random-walk Metropolis update (``NonConjugateGibbs``,
``slot_update="metropolis"``), compiled: every slot's proposal is accepted or refused on its own
(slot b's log density depends on slot b only), and the per-step numpy glue (a comparison, a where,
a copy per slot variable) cost more than the compiled log density it surrounds."""

from __future__ import annotations

import numba

__all__ = ["accept_slots", "copy_accepted"]


@numba.njit(cache=True, error_model="numpy")
def accept_slots(new, current, log_u, ok):
    """For the K = ``len(ok)`` occupied slots: ``ok[b] = log_u[b] < new[b] - current[b]`` (a NaN proposal
    compares False: refused) and ``current[b] = new[b]`` where accepted. Returns the number accepted."""
    K = ok.shape[0]
    if new.shape[0] < K or current.shape[0] < K or log_u.shape[0] < K:
        raise ValueError("accept_slots: new, current and log_u need an entry per slot of ok")
    count = 0
    for b in range(K):
        take = log_u[b] < new[b] - current[b]
        ok[b] = take
        if take:
            current[b] = new[b]
            count += 1
    return count


@numba.njit(cache=True, error_model="numpy")
def copy_accepted(slots, proposals, ok):
    """Row b of the (S, d) ``slots`` := row b of ``proposals`` for each b < ``len(ok)`` with ``ok[b]``."""
    K = ok.shape[0]
    if slots.shape[0] < K or proposals.shape[0] < K or proposals.shape[1] != slots.shape[1]:
        raise ValueError("copy_accepted: slots and proposals need the same columns and a row per slot of ok")
    for b in range(K):
        if ok[b]:
            for c in range(slots.shape[1]):
                slots[b, c] = proposals[b, c]
