"""Unbiased estimators from lagged coupled chains (Jacob, O'Leary & Atchadé 2020; seed 000 eq. 1).

Two chains X and Y start independently from the same initial law. X first runs ``lag`` steps
alone; then (X_{t+1}, Y_{t+1-lag}) is drawn from the coupled kernel until the meeting time
tau = min{t >= lag : X_t = Y_{t-lag}} (equality of *partitions*). From then on Y_{t-lag} = X_t
(faithfulness), so only X is advanced, up to iteration m. With
Delta_t = h(X_t) - h(Y_{t-lag}),

    H_{k:m} = 1/(m-k+1) sum_{t=k}^{m} h(X_t) + sum_{t=k+lag}^{tau-1} v_t / (m-k+1) Delta_t,

where v_t = floor((t-k)/lag) - max(1, ceil((t-m)/lag)) + 1 counts the single-time estimators
H_l (k <= l <= m) that contain Delta_t. For lag = 1 the weight is min(1, (t-k)/(m-k+1)) as in
seed 000 eq. 1. E[H_{k:m}] = E_pi[h] exactly, for any k <= m, whenever the chains meet.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from .._checks import boolean, integer, real

__all__ = ["PairResult", "PairStopped", "bias_correction_weight", "check_h_value", "run_pair", "suggest_k_m"]


class PairStopped(Exception):
    """Raised by :func:`run_pair` when its ``should_stop()`` returns a reason (a true value): the
    pair was stopped from outside (an interrupt, a deadline, a time limit) and has no result."""

    def __init__(self, reason):
        super().__init__(reason)
        self.reason = reason


def _show(value: np.ndarray) -> str:
    if value.ndim == 0:
        v = float(value)
        return "NaN" if math.isnan(v) else repr(v)
    return np.array2string(value, threshold=8, precision=4)


def check_h_value(raw, shape=None, name="h") -> np.ndarray:
    """``raw`` (what a function h returned) as a float array, checked: numbers, all finite, and of
    ``shape`` when given. Raises ValueError naming ``name`` otherwise (``h['k'] returned NaN``,
    ``h['k'] changed shape from () to (2,)``): a NaN would pass for a pair that did not meet and a
    new shape would only fail when the pairs are assembled."""
    if raw is None:
        raise ValueError(f"{name} returned None")
    try:
        value = np.asarray(raw, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} returned {raw!r}, which is not a number or an array of numbers") from None
    if shape is not None and value.shape != shape:
        raise ValueError(f"{name} changed shape from {tuple(shape)} to {value.shape}")
    # this runs at every iteration of every pair: for a few values, a Python loop costs 0.3 us and
    # np.isfinite(...).all() 1.3 us (as much as a sweep of a small model)
    if value.size <= 16:
        finite = all(map(math.isfinite, value.ravel().tolist()))
    else:
        finite = bool(np.isfinite(value).all())
    if not finite:
        raise ValueError(f"{name} returned {_show(value)}")
    return value


@dataclass
class PairResult:
    """One pair of coupled chains.

    ``estimate`` is H_{k:m} (NaN when the pair did not meet within ``max_iter``), ``mcmc`` its
    first term alone (the plain, biased average of h(X_t) over k..m), ``tau`` the meeting time
    (-1 if not met), ``iterations`` the number of X iterations run, ``seconds`` the wall time;
    ``distances`` the Mirkin distance between X_t and Y_{t-lag} for t = lag .. tau (if recorded).
    """

    estimate: np.ndarray
    mcmc: np.ndarray
    met: bool
    tau: int
    iterations: int
    seconds: float
    distances: np.ndarray | None = None


def bias_correction_weight(t: int, k: int, m: int, lag: int) -> float:
    """v_t / (m - k + 1): the weight of Delta_t = h(X_t) - h(Y_{t-lag}) in H_{k:m} (t >= k + lag)."""
    v = (t - k) // lag - max(1, -((m - t) // lag)) + 1
    return v / (m - k + 1)


def check_k_m(k, m, lag, max_iter, owner=None) -> tuple[int, int, int, int]:
    """(k, m, lag, max_iter) as ints, checked: integers, lag >= 1, 0 <= k <= m <= max_iter, lag <= max_iter."""
    k, m = integer("k", k, low=0, owner=owner), integer("m", m, low=0, owner=owner)
    lag, max_iter = integer("lag", lag, low=1, owner=owner), integer("max_iter", max_iter, low=1, owner=owner)
    if k > m:
        raise ValueError(f"{owner + ': ' if owner else ''}need 0 <= k <= m, got k={k}, m={m}")
    if max_iter < max(m, lag):
        raise ValueError(f"{owner + ': ' if owner else ''}max_iter must be >= max(m, lag) = {max(m, lag)}, "
                         f"got {max_iter}")
    return k, m, lag, max_iter


def run_pair(kernel, h, x0, y0, rng: np.random.Generator, k: int, m: int, lag: int = 1,
             max_iter: int = 10_000, record_distance: bool = False, should_stop=None) -> PairResult:
    """Run one pair of lagged coupled chains and return its estimate of E[h].

    Parameters
    ----------
    kernel : GibbsSweeps
        Any object with ``start(labels)``, ``random_numbers(rng)``, ``sweep(state, r)``,
        ``coupled_sweep(x, y, inter, r)``, ``intersections(x, y)`` and ``distance(x, y, inter)``
        (the coupling contract: identical states + identical random numbers -> identical outputs).
    h : callable
        labels (canonical int array) -> 1-d float array. A kernel with ``h_args(state)`` (chains
        with hyperparameters, :class:`.hyper.HyperSweeps`) calls ``h(*kernel.h_args(state))``
        instead, and one with ``same(x, y)`` decides with it when the chains have met.
    x0, y0 : array
        Initial labels of the two chains, independent draws from the same initial law.
    k, m : int
        Burn-in and last iteration of the time average (0 <= k <= m).
    should_stop : callable, optional
        Called before every iteration; a true return value (the reason) stops the pair with
        :class:`PairStopped`. This is how an interrupt, a deadline or a time limit reaches a pair
        without raising inside compiled code.

    Every value of h must be finite and of the shape of the first one; otherwise the pair stops
    with a ValueError saying so (see :func:`check_h_value`). An h with ``checks_values = True``
    (as :func:`pymc_partitions.sample_unbiased` makes) checks its values itself, more precisely.
    """
    k, m, lag, max_iter = check_k_m(k, m, lag, max_iter, owner="run_pair")
    record_distance = boolean("record_distance", record_distance, owner="run_pair")

    def check_stop():
        if should_stop is not None:
            reason = should_stop()
            if reason:
                raise PairStopped(reason)

    trusted = getattr(h, "checks_values", False)
    # kernels with hyperparameters (.hyper.HyperSweeps) say when two states are equal and what h is called with
    same = getattr(kernel, "same", None)
    h_args = getattr(kernel, "h_args", None)

    def h_of(state):
        return h(*h_args(state)) if h_args is not None else h(state.labels())

    def check(raw, shape=None):
        return raw if trusted else check_h_value(raw, shape)

    start = time.perf_counter()
    x, y = kernel.start(x0), kernel.start(y0)
    hx = check(h_of(x))
    shape = hx.shape
    mcmc = np.zeros_like(hx)
    correction = np.zeros_like(hx)
    if k == 0:
        mcmc += hx
    for t in range(1, lag + 1):
        check_stop()
        kernel.sweep(x, kernel.random_numbers(rng))
        hx = check(h_of(x), shape)
        if k <= t <= m:
            mcmc += hx
    t = lag
    met, tau = False, -1
    inter = kernel.intersections(x, y)
    distances = []
    while True:
        if not met:
            lx, ly = x.labels(), y.labels()
            if record_distance:
                distances.append(kernel.distance(x, y, inter))
            if same(x, y) if same is not None else np.array_equal(lx, ly):
                met, tau = True, t
            elif t >= k + lag:
                correction += bias_correction_weight(t, k, m, lag) * (hx - check(h_of(y), shape))
        if (met and t >= m) or (not met and t >= max_iter):
            break
        check_stop()
        r = kernel.random_numbers(rng)
        if met:
            kernel.sweep(x, r)
        else:
            inter = kernel.coupled_sweep(x, y, inter, r)
        t += 1
        hx = check(h_of(x), shape)
        if k <= t <= m:
            mcmc += hx
    mcmc /= m - k + 1
    estimate = mcmc + correction if met else np.full_like(mcmc, np.nan)
    return PairResult(estimate, mcmc, met, tau, t, time.perf_counter() - start,
                      np.asarray(distances, np.int64) if record_distance else None)


def suggest_k_m(meeting_times, quantile: float = 0.99, multiple: int = 10) -> tuple[int, int]:
    """(k, m) from pilot meeting times, following Jacob et al. (2020, Sec. 3.1): k a high quantile
    of tau (so most pairs have met by k and the bias correction is usually zero) and m a multiple
    of k (the time average then loses little efficiency relative to a long MCMC run).

    Pairs that did not meet (tau < 0 or NaN) count as infinitely late, so k rises with them.
    ``quantile`` is in [0, 1], ``multiple`` an integer >= 1.
    """
    quantile = real("quantile", quantile, low=0.0, high=1.0, owner="suggest_k_m")
    multiple = integer("multiple", multiple, low=1, owner="suggest_k_m")
    try:
        tau = np.asarray(meeting_times, float)
    except (TypeError, ValueError):
        raise TypeError(f"suggest_k_m: meeting_times must be numbers, got {meeting_times!r}") from None
    if tau.ndim != 1:
        raise ValueError(f"suggest_k_m: meeting_times must be one-dimensional, got shape {tau.shape}")
    if tau.size == 0:
        raise ValueError("no pilot meeting times")
    tau = np.where(np.isnan(tau) | (tau < 0), np.inf, tau)
    q = float(np.quantile(tau, quantile, method="higher"))  # an observed value, no interpolation with inf
    if not math.isfinite(q):
        raise ValueError(f"more than {1 - quantile:.0%} of the pilot pairs did not meet: raise max_iter")
    k = max(1, int(math.ceil(q)))
    return k, multiple * k
