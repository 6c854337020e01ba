"""Small compiled numerical helpers shared by the priors and the samplers."""

import math

import numba
import numpy as np
from numba.core import types
from numba.extending import intrinsic

from . import _checks


class NoPositiveOption(ValueError):
    """A draw in which every option has probability 0 (every log weight -inf): the current state may have
    probability 0 -- for a step over a user's likelihood, an observed value outside its support. A ValueError."""


@intrinsic
def runtime_int(typingctx, x):
    """``x`` as an int64 that numba does not treat as a constant, inside compiled code.

    A compiled function called from another with a literal integer (``f(0)``) is compiled for the
    type ``Literal[int](0)``, and again for ``int64`` when a variable is passed elsewhere: one more
    compilation of it and of every function it calls with that argument (3-5 s for the Gibbs
    sweep). ``np.int64(0)`` is folded back into the literal; ``f(runtime_int(0))`` is not.
    """
    if not isinstance(types.unliteral(x), types.Integer):
        return None

    def codegen(context, builder, signature, args):
        return context.cast(builder, args[0], signature.args[0], types.int64)

    return types.int64(x), codegen


@numba.njit(cache=True, error_model="numpy", inline="always")
def relative_weights(logw, count, out):
    """``out[:count]`` = exp(logw - max), with weights below e^-37 of the largest set to exactly 0
    (below one rounding unit of their total, which is >= 1); returns the total. ``out`` may be
    ``logw``.

    -inf is a legitimate log weight (an impossible option). Raises ``ValueError`` when a log
    weight is NaN or +inf, or when every option is impossible: there is then no law to draw
    from, and no index would be right."""
    if count > logw.shape[0] or count > out.shape[0]:
        raise ValueError("count exceeds the length of the weights")
    top = -np.inf
    for j in range(count):
        if logw[j] > top:
            top = logw[j]
    if top == -np.inf:  # every log weight is -inf or NaN (tests outside the loops: they stay as they were)
        for j in range(count):
            if logw[j] != logw[j]:
                raise ValueError("a log weight is NaN or +inf: non-finite statistics or parameters")
        raise NoPositiveOption("no option has positive probability (every log weight is -inf): the current state "
                               "may have probability 0")
    total = 0.0
    for j in range(count):
        d = logw[j] - top
        # written so that a NaN d (a NaN log weight, or +inf - +inf) gives a NaN total
        out[j] = 0.0 if d <= -37.0 else math.exp(d)
        total += out[j]
    if not total > 0.0:
        raise ValueError("a log weight is NaN or +inf: non-finite statistics or parameters")
    return total


#: From this x on, :func:`log_rising` uses Stirling's series instead of a difference of lgammas.
#: Below it the difference loses at most about eps * lgamma(x + m) (1e-12 at x = 1e3, m small);
#: above it the series' first omitted term, 1 / (1260 x^5), is below 1e-18.
STIRLING_FROM = 1e3


@numba.njit(cache=True, error_model="numpy")
def log_rising(x, m):
    """log of the rising factorial x (x + 1) ... (x + m - 1) = lgamma(x + m) - lgamma(x), for
    x >= 0 and m >= 0, without the cancellation of that difference when x is large.

    ``lgamma(x)`` is about x log x, so the difference of two of them carries an absolute rounding
    error of about 1e-16 x log x: 3.5 at x = 1e15, more than the value itself at x = 1e18 (the
    finite Dirichlet's k alpha, a Pitman-Yor alpha). From :data:`STIRLING_FROM` on, Stirling's
    series is subtracted term by term instead:
    ``m log x + (x + m - 1/2) log1p(m / x) - m + 1/(12 (x + m)) - 1/(12 x) - 1/(360 (x + m)^3) + 1/(360 x^3)``,
    whose error is about 1e-16 times the result. -inf for x = 0 < m (a zero factor), 0 for m = 0."""
    if m == 0:
        return 0.0
    if x == 0.0:
        return -np.inf
    if x < STIRLING_FROM:
        return math.lgamma(x + m) - math.lgamma(x)
    z = x + m
    return (m * math.log(x) + ((z - 0.5) * math.log1p(m / x) - m)
            + (1.0 / z - 1.0 / x) / 12.0 - (1.0 / (z * z * z) - 1.0 / (x * x * x)) / 360.0)


def symbolic_log_rising(x, m):
    """PyTensor :func:`log_rising` (elementwise; x >= 0, m >= 0): the same two branches, each fed
    only the arguments it is accurate and finite for, so that neither value nor gradient of the
    branch not taken is NaN; 0 for m = 0 (also at x = 0, a Pitman-Yor discount of 1)."""
    import pytensor.tensor as pt  # noqa: PLC0415

    x = pt.as_tensor_variable(x).astype("float64")
    m = pt.as_tensor_variable(m).astype("float64")
    small = pt.lt(x, STIRLING_FROM)
    xd = pt.switch(small, x, 1.0)
    direct = pt.gammaln(xd + m) - pt.gammaln(xd)
    xs = pt.switch(small, STIRLING_FROM, x)
    z = xs + m
    series = (m * pt.log(xs) + ((z - 0.5) * pt.log1p(m / xs) - m)
              + (1.0 / z - 1.0 / xs) / 12.0 - (1.0 / (z * z * z) - 1.0 / (xs * xs * xs)) / 360.0)
    return pt.switch(pt.eq(m, 0), 0.0, pt.switch(small, direct, series))


@numba.njit(cache=True, error_model="numpy")
def draw_log_weights(logw, count, u):
    """Index j < count drawn with probability proportional to exp(logw[j]), by inverting the CDF
    at the uniform ``u``. ``logw`` is overwritten with the unnormalised weights. Raises
    ``ValueError`` as :func:`relative_weights` does."""
    target = u * relative_weights(logw, count, logw)
    acc = 0.0
    for j in range(count):
        acc += logw[j]
        if target < acc:
            return j
    j = count - 1  # rounding ran past the end: the last index with positive weight (there is one)
    while j > 0 and logw[j] == 0.0:
        j -= 1
    return j


@numba.njit(cache=True, error_model="numpy")
def inverse_cdf(p, count, u):
    """Index j < count drawn with the normalised probabilities ``p[:count]``, by inverting the CDF
    at ``u`` (``count <= len(p)``: the callers' arrays are sized for it). Raises ``ValueError`` if no
    entry is positive or one is NaN, rather than read out of bounds. The tests sit past the end of
    the loop only: this runs once per particle and step of a PGSM move, where an up-front length
    test and a call to a raising helper cost 3-4% of the move."""
    acc = 0.0
    for j in range(count):
        acc += p[j]
        if u < acc:
            return j
    # rounding ran past the end: the last index with positive mass
    if acc != acc:
        raise ValueError("a probability is NaN")
    j = count - 1
    while j >= 0 and not p[j] > 0.0:
        j -= 1
    if j < 0:
        raise NoPositiveOption("no option has positive probability")
    return j


def check_uniforms(u, shape, owner, name="uniforms"):
    """``u`` as a contiguous float64 array after checking its shape and that it lies in [0, 1)."""
    u = np.ascontiguousarray(u, dtype=np.float64)
    if u.shape != tuple(shape):
        raise ValueError(f"{owner}: {name} must have shape {tuple(shape)}, got {u.shape}")
    if not _all_unit(u.reshape(-1)):
        raise ValueError(f"{owner}: {name} must lie in [0, 1)")
    return u


@numba.njit(cache=True)
def _all_unit(u):
    """Whether every entry of ``u`` (1-d) lies in [0, 1) (NaN does not)."""
    for i in range(u.shape[0]):
        if not (0.0 <= u[i] < 1.0):
            return False
    return True


# Counter-based uniforms. A move that needs many random numbers takes one 64-bit seed; the number
# for (stream, index) is SplitMix64's output at position ``index`` of the sequence started at a
# key derived from (seed, stream). Computing it costs a few integer operations, so a move draws
# only the numbers it uses (not n x N up front), in any order, and two chains given the same seed
# see the same number at the same (stream, index): the common random numbers of a coupling.
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def draw_seed(rng: np.random.Generator) -> np.uint64:
    """A 64-bit seed for the counter-based uniforms, from a numpy Generator."""
    return np.uint64(rng.integers(0, 2**64, dtype=np.uint64))


def check_seed(seed, owner) -> np.uint64:
    """``seed`` as np.uint64, checked: an integer in [0, 2^64) (not 1.5, not -1)."""
    if type(seed) is np.uint64:  # what draw_seed gives: the common case first
        return seed
    return np.uint64(_checks.integer("seed", seed, low=0, high=2**64 - 1, owner=owner))


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


@numba.njit(cache=True)
def keyed_sweep_numbers(n, reps, moves, seed):
    """The randomness of ``reps`` repetitions of (``moves`` split-merge moves, one random-scan
    sweep) over ``n`` items, from one 64-bit ``seed``: visiting orders (reps, n), each a uniform
    permutation (Fisher-Yates); uniforms (reps, n) on [0, 1); anchor pairs (reps, moves, 2), two
    distinct items uniformly; and the moves' own seeds (reps, moves). One compiled call instead of
    a handful of numpy draws, which cost a step on small data sets more than its sweep did."""
    if moves > 0 and n < 2:
        raise ValueError("keyed_sweep_numbers: a split-merge move needs at least two items")
    orders = np.empty((reps, n), np.int64)
    uniforms = np.empty((reps, n))
    pairs = np.empty((reps, moves, 2), np.int64)
    seeds = np.empty((reps, moves), np.uint64)
    for r in range(reps):
        order_key, uniform_key = stream_key(seed, 4 * r), stream_key(seed, 4 * r + 1)
        pair_key, seed_key = stream_key(seed, 4 * r + 2), stream_key(seed, 4 * r + 3)
        for t in range(n):
            orders[r, t] = t
            uniforms[r, t] = keyed_uniform(uniform_key, t)
        for t in range(n - 1, 0, -1):
            s = min(int(keyed_uniform(order_key, t) * (t + 1)), t)
            orders[r, t], orders[r, s] = orders[r, s], orders[r, t]
        for m in range(moves):
            first = min(int(keyed_uniform(pair_key, 2 * m) * n), n - 1)
            second = min(int(keyed_uniform(pair_key, 2 * m + 1) * (n - 1)), max(n - 2, 0))
            pairs[r, m, 0], pairs[r, m, 1] = first, second + (second >= first)
            seeds[r, m] = keyed_bits(seed_key, m)
    return orders, uniforms, pairs, seeds
