"""Small compiled numerical helpers shared by the priors and the samplers."""

import math

import numba
import numpy as np


@numba.njit(cache=True, error_model="numpy")
def draw_log_weights(logw, count, u):
    """Index j < count drawn with probability proportional to exp(logw[j]), by inverting the CDF
    at the uniform ``u``. ``logw`` is overwritten with the unnormalised weights."""
    top = -np.inf
    for j in range(count):
        if logw[j] > top:
            top = logw[j]
    total = 0.0
    for j in range(count):
        d = logw[j] - top
        # below e^-37 a weight is under one rounding unit of the total (>= 1): skip the exp
        logw[j] = math.exp(d) if d > -37.0 else 0.0
        total += logw[j]
    target = u * total
    acc = 0.0
    for j in range(count):
        acc += logw[j]
        if target < acc:
            return j
    # rounding ran past the end: take the last index with positive weight
    j = count - 1
    while logw[j] == 0.0:
        j -= 1
    return j


@numba.njit(cache=True, error_model="numpy")
def inverse_cdf(p, count, u):
    """Index j < count drawn with the normalised probabilities ``p[:count]``, by inverting the CDF
    at ``u``."""
    acc = 0.0
    for j in range(count):
        acc += p[j]
        if u < acc:
            return j
    j = count - 1  # rounding ran past the end: the last index with positive mass
    while p[j] == 0.0:
        j -= 1
    return j
