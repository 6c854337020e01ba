"""Helpers shared by the compiled Metropolis-Hastings moves (ARM, Jain-Neal split-merge): choosing
among log weights with a counter-based uniform, the acceptance test, checked seed arguments."""

from __future__ import annotations

import math

import numba
import numpy as np

from .. import _checks
from ..partition import canonicalize_into


@numba.njit(cache=True, error_model="numpy", inline="always")
def _log_normaliser(w, count):
    """log sum exp(w[:count]); -inf if every entry is -inf (legitimate: a dead end). Raises
    ``ValueError`` on a NaN or +inf entry."""
    top = -np.inf
    for q in range(count):
        if w[q] > top:
            top = w[q]
    if top == -np.inf:
        for q in range(count):
            if w[q] != w[q]:
                raise ValueError("a log weight is NaN or +inf: non-finite statistics or parameters")
        return top
    s = 0.0
    for q in range(count):
        s += math.exp(w[q] - top)
    if s != s or top == np.inf:
        raise ValueError("a log weight is NaN or +inf: non-finite statistics or parameters")
    return top + math.log(s)


@numba.njit(cache=True, error_model="numpy", inline="always")
def _pick(w, count, u, lse):
    """Index drawn with probabilities exp(w - lse) by inverting the CDF at ``u``."""
    acc = 0.0
    for q in range(count):
        acc += math.exp(w[q] - lse)
        if u < acc:
            return q
    q = count - 1  # rounding ran past the end: the last possible option
    while q > 0 and w[q] == -np.inf:
        q -= 1
    return q


def _named_seed(value, name, owner):
    """A 64-bit seed argument other than ``seed`` (``order_seed``, ``launch_seed``), checked and named."""
    if type(value) is np.uint64:
        return value
    return np.uint64(_checks.integer(name, value, low=0, high=2**64 - 1, owner=owner))


def _canonical(labels):
    out = np.empty(labels.shape[0], np.int64)
    canonicalize_into(labels, out)
    return out


def _metropolis(labels, proposal, log_ratio, u):
    """The Metropolis-Hastings test of a move (ARM, Jain-Neal) with its acceptance uniform ``u``:
    (canonical labels after the move, accepted). A NaN ratio rejects."""
    accepted = bool((math.log(u) if u > 0.0 else -math.inf) < log_ratio)
    return (proposal.copy() if accepted else _canonical(labels)), accepted
