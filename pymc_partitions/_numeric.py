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


# Counter-based uniforms. A move that needs many random numbers takes one 64-bit seed; the number
# for (stream, index) is SplitMix64's output at position ``index`` of the sequence started at a
# key derived from (seed, stream). Computing it costs a few integer operations, so a move draws
# only the numbers it uses (not n x N up front), in any order, and two chains given the same seed
# see the same number at the same (stream, index): the common random numbers of a coupling.
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def draw_seed(rng: np.random.Generator) -> np.uint64:
    """A 64-bit seed for the counter-based uniforms, from a numpy Generator."""
    return np.uint64(rng.integers(0, 2**64, dtype=np.uint64))


@numba.njit(cache=True)
def mix64(z):
    """SplitMix64's output function (a bijection of uint64 with full avalanche)."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@numba.njit(cache=True)
def stream_key(seed, stream):
    """The key of stream ``stream`` (a small int) of ``seed`` (uint64)."""
    return mix64(seed ^ mix64(np.uint64(stream + 1) * _GOLDEN))


@numba.njit(cache=True)
def keyed_bits(key, index):
    """64 random bits at position ``index`` of the stream with key ``key``."""
    return mix64(key + np.uint64(index + 1) * _GOLDEN)


@numba.njit(cache=True)
def keyed_uniform(key, index):
    """A uniform on [0, 1) (53 bits) at position ``index`` of the stream with key ``key``."""
    return float(keyed_bits(key, index) >> np.uint64(11)) * (1.0 / 9007199254740992.0)
