"""Centered plug-in estimators of the squared 2-Wasserstein distance, with standard errors.

The plug-in W2^2 between two samples has a large positive bias that does not shrink usefully
with the sample size, so it cannot tell similar distributions apart. Papp & Sherlock (seed
002, "Centered plug-in estimation of Wasserstein distances") subtract a second plug-in between
two samples of the same measure, which removes most of the bias:

- ``U(mu, nu) = W2^2(X, Y') - W2^2(Y, Y')`` (:func:`centered_u`): an approximate upper bound
  when mu is overdispersed relative to nu (centre with the less dispersed measure);
- ``L(mu, nu) = sgnsq(W2(X, Y') - W2(Y, Y'))`` (:func:`centered_l`): an approximate lower bound;
- :func:`hedged`: both orientations, reporting the pair with the larger U.

Standard errors come from the Kantorovich potentials of the two plug-in problems (a CLT for
U, a delta method for ``Lbar = W2(X, Y') - W2(Y, Y')``), optionally with batch means over
blocks of correlated draws (e.g. one block per chain). The formulas (lost from the seed's
text and restored from the authors' implementation) are written out in docs/diagnostics.md.

The ground cost is a function ``cost(a, b) -> (len(a), len(b))`` matrix of *squared*
distances; samples are whatever it accepts (point arrays for :func:`squared_euclidean`, label
arrays with a Mirkin cost for partitions). Exact transport is solved with POT's network
simplex (:func:`plugin_w2`), which raises rather than return a non-optimal value.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from .._checks import integer, real

__all__ = [
    "Estimate",
    "PlugIn",
    "batch_means_se",
    "centered_l",
    "centered_u",
    "hedged",
    "plugin_w2",
    "sgnsq",
    "squared_euclidean",
    "variance_reduction",
]

#: The network-simplex iteration cap of :func:`plugin_w2` is
#: ``max(NUM_ITER_MAX_MIN, NUM_ITER_MAX_FACTOR * n * m)``. POT's own default (1e5) stops
#: before optimality from about n = m = 2500 on.
NUM_ITER_MAX_FACTOR = 50
NUM_ITER_MAX_MIN = 1_000_000


def sgnsq(x):
    """Signed square ``sign(x) * x**2`` (numpy broadcasting; a float for a scalar input)."""
    x = np.asarray(x, dtype=np.float64)
    out = np.sign(x) * x * x
    return float(out) if out.ndim == 0 else out


def _points(a, name):
    a = np.asarray(a, dtype=np.float64)
    if a.ndim == 1:
        a = a[:, None]
    if a.ndim != 2:
        raise ValueError(f"{name} must have shape (n,) or (n, d), got {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} holds NaN or infinite values")
    return a


def squared_euclidean(a, b) -> np.ndarray:
    """Matrix of squared Euclidean distances, shape ``(len(a), len(b))``, float64.

    ``a`` is ``(n, d)`` or ``(n,)`` (n points on the line), ``b`` likewise with the same d.
    Computed from coordinate differences (no ``|a|^2 + |b|^2 - 2ab`` cancellation)."""
    from scipy.spatial.distance import cdist  # noqa: PLC0415 (imported on use: import time)
    a = _points(a, "a")
    b = _points(b, "b")
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"a and b have different dimensions: {a.shape[1]} and {b.shape[1]}")
    return cdist(a, b, "sqeuclidean")


@dataclass
class PlugIn:
    """Plug-in W2^2 between two equal-weight samples and its Kantorovich potentials.

    ``value = f.mean() + g.mean()`` (strong duality; no ``max(0, .)`` applied) and
    ``f[i] + g[j] <= cost[i, j]`` with equality on the optimal plan's support. For equal-size
    samples the potentials are not unique (the assignment LP is degenerate); these are the
    ones POT's optimal basis gives, shifted so that ``f.mean() == g.mean()``."""

    value: float
    f: np.ndarray
    g: np.ndarray


def plugin_w2(cost: np.ndarray, num_iter_max: int | None = None) -> PlugIn:
    """Exact optimal transport between uniform weights ``1/n`` and ``1/m`` for the ``(n, m)``
    ground-cost matrix ``cost`` (any finite floats, e.g. squared distances or Mirkin distances).

    Solved by ``ot.emd(..., log=True)``. The value is the optimal cost ``sum(plan * cost)``;
    ``f, g = log["u"], log["v"]``. With ``center_dual`` (POT's default) the duals satisfy
    ``sum_i u_i / n = sum_j v_j / m``, and by strong duality their sum is the optimal cost,
    so ``value == f.mean() + g.mean()`` holds as returned (checked here, to rounding; no
    re-centring is needed).

    ``num_iter_max`` caps the simplex iterations (default
    ``max(NUM_ITER_MAX_MIN, NUM_ITER_MAX_FACTOR * n * m)``). Raises RuntimeError if POT does
    not report an optimal solution: a non-optimal value is never returned as exact.
    """
    import ot  # noqa: PLC0415  (POT is slow to import; only needed here)

    c = np.ascontiguousarray(cost, dtype=np.float64)
    if c.ndim != 2 or c.shape[0] < 1 or c.shape[1] < 1:
        raise ValueError(f"cost must be a non-empty 2-D matrix, got shape {c.shape}")
    if not np.all(np.isfinite(c)):
        raise ValueError("cost contains non-finite entries")
    n, m = c.shape
    if num_iter_max is None:
        num_iter_max = max(NUM_ITER_MAX_MIN, NUM_ITER_MAX_FACTOR * n * m)
    num_iter_max = integer("num_iter_max", num_iter_max, low=1, owner="plugin_w2")
    a = np.full(n, 1.0 / n)
    b = np.full(m, 1.0 / m)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # POT warns on failure; we raise instead
        _, log = ot.emd(a, b, c, numItermax=int(num_iter_max), log=True)
    if log["result_code"] != 1 or log["warning"] is not None:
        raise RuntimeError(
            f"ot.emd did not reach an optimal transport plan (result_code={log['result_code']}: "
            f"{log['warning']}); n={n}, m={m}, numItermax={num_iter_max}"
        )
    f = np.asarray(log["u"], dtype=np.float64)
    g = np.asarray(log["v"], dtype=np.float64)
    value = float(log["cost"])
    gap = abs(value - (f.mean() + g.mean()))
    if gap > 1e-9 * (np.abs(c).max() + abs(value)):
        raise RuntimeError(f"ot.emd potentials do not reproduce the optimal cost (gap {gap:.3g})")
    return PlugIn(value=value, f=f, g=g)


@dataclass
class Estimate:
    """A point estimate with its standard error and a two-sided confidence interval."""

    value: float
    se: float
    lower: float
    upper: float


def batch_means_se(values, batches) -> float:
    """Standard error of ``mean(values)`` by batch means.

    ``batches[i]`` is the block (e.g. the chain) of ``values[i]``. The block means are formed,
    and the result is ``sqrt(var(block means, ddof=1) / number of blocks)``. With every index
    its own block this is ``sd(values, ddof=1) / sqrt(n)``. Blocks should be of (roughly) equal
    size; unequal sizes are not weighted."""
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 1:
        raise ValueError("values must be one-dimensional")
    if not np.all(np.isfinite(values)):
        raise ValueError("values hold NaN or infinite entries")
    labels = _check_batches(batches, values.size)
    _, inverse, counts = np.unique(labels, return_inverse=True, return_counts=True)
    means = np.bincount(inverse, weights=values) / counts
    return float(np.sqrt(np.var(means, ddof=1) / means.size))


def _check_batches(batches, n):
    labels = np.asarray(batches)
    if labels.ndim != 1 or labels.size != n:
        raise ValueError(f"batches must be a 1-D array of length {n}, got shape {labels.shape}")
    if not (np.issubdtype(labels.dtype, np.integer) or np.issubdtype(labels.dtype, np.bool_)):
        raise ValueError(f"batches must hold integer block labels, got dtype {labels.dtype}")
    if np.unique(labels).size < 2:
        raise ValueError("batches must define at least 2 blocks")
    return labels


def _se(values, batches):
    if batches is None:
        return float(np.std(values, ddof=1) / np.sqrt(values.size))
    return batch_means_se(values, batches)


def _z(ci):
    from scipy.stats import norm  # noqa: PLC0415 (imported on use: import time)
    ci = real("ci", ci, low=0.0, high=1.0, low_open=True, high_open=True)
    return float(norm.ppf(0.5 + ci / 2.0))


def _length(s, name):
    try:
        return len(s)
    except TypeError:
        raise ValueError(f"{name} must be a sample (a sequence or array of draws)") from None


@dataclass
class _Pair:
    """The two plug-in problems of one centred estimator, potentials evaluated per index i."""

    p: PlugIn  # W2^2(X, Y'): f_p at X_i, g_p at Y'_i
    c: PlugIn  # W2^2(Y, Y'): f_c at Y_i, g_c at Y'_i


def _solve_pair(x, y, y2, cost, batches=None) -> _Pair:
    if not callable(cost):
        raise TypeError(f"cost must be a function cost(a, b) -> matrix of squared distances, got {cost!r}")
    n = _length(x, "x")
    if _length(y, "y") != n or _length(y2, "y2") != n:
        raise ValueError(
            f"x, y and y2 must have the same length, got {n}, {_length(y, 'y')}, {_length(y2, 'y2')}"
        )
    if n < 2:
        raise ValueError(f"need at least 2 draws per sample, got {n}")
    if batches is not None:
        _check_batches(batches, n)
    pairs = []
    for a, b in ((x, y2), (y, y2)):
        m = np.asarray(cost(a, b), dtype=np.float64)
        if m.shape != (n, n):
            raise ValueError(f"cost(a, b) must return an ({n}, {n}) matrix, got {m.shape}")
        if not np.all(np.isfinite(m)):
            raise ValueError("cost(a, b) returned NaN or infinite entries (NaN or infinite draws?)")
        pairs.append(plugin_w2(m))
    return _Pair(*pairs)


def _u(pair: _Pair, z, batches) -> Estimate:
    value = pair.p.value - pair.c.value
    phi = (pair.p.f + pair.p.g) - (pair.c.f + pair.c.g)
    se = _se(phi, batches)
    return Estimate(value=float(value), se=se, lower=float(value - z * se), upper=float(value + z * se))


def _l(pair: _Pair, z, batches) -> Estimate:
    wp = max(0.0, pair.p.value)
    wc = max(0.0, pair.c.value)
    lbar = np.sqrt(wp) - np.sqrt(wc)
    # delta method; a plug-in that is exactly 0 (identical samples, common for partitions)
    # has no derivative and contributes no term
    psi = np.zeros(pair.p.f.size)
    if wp > 0.0:
        psi += (pair.p.f + pair.p.g) / (2.0 * np.sqrt(wp))
    if wc > 0.0:
        psi -= (pair.c.f + pair.c.g) / (2.0 * np.sqrt(wc))
    se = _se(psi, batches)
    return Estimate(value=sgnsq(lbar), se=se, lower=sgnsq(lbar - z * se), upper=sgnsq(lbar + z * se))


def _vr(pair: _Pair) -> float:
    phi = (pair.p.f + pair.p.g) - (pair.c.f + pair.c.g)
    var = np.var(phi, ddof=1)
    var_indep = np.var(pair.p.f, ddof=1) + np.var(pair.c.f, ddof=1) + np.var(pair.p.g - pair.c.g, ddof=1)
    if var == 0.0:
        return float("nan") if var_indep == 0.0 else float("inf")
    return float(var_indep / var)


def centered_u(x, y, y2, cost=squared_euclidean, ci=0.95, batches=None) -> Estimate:
    """``U(mu, nu) = W2^2(X, Y') - W2^2(Y, Y')``, centred with nu.

    ``x ~ mu`` and ``y, y2 ~ nu``, each of n draws; ``(x[i], y[i])`` may be coupled, ``y2`` is
    independent. An approximate upper bound on W2^2(mu, nu) when mu is overdispersed relative to
    nu. ``se = sd(phi) / sqrt(n)`` with ``phi_i = [f_p(X_i) + g_p(Y'_i)] - [f_c(Y_i) + g_c(Y'_i)]``
    (or batch means of phi over ``batches``); interval ``value -/+ z se``,
    ``z = norm.ppf(0.5 + ci / 2)``."""
    z = _z(ci)
    return _u(_solve_pair(x, y, y2, cost, batches), z, batches)


def centered_l(x, y, y2, cost=squared_euclidean, ci=0.95, batches=None) -> Estimate:
    """``L(mu, nu) = sgnsq(Lbar)``, ``Lbar = W2(X, Y') - W2(Y, Y')`` (square roots of the
    plug-ins floored at 0), an approximate lower bound on W2^2(mu, nu). Samples as in
    :func:`centered_u`.

    ``se`` is the standard error of **Lbar** (not of L), by the delta method:
    ``psi_i = [f_p(X_i) + g_p(Y'_i)] / (2 W2_p) - [f_c(Y_i) + g_c(Y'_i)] / (2 W2_c)`` (a plug-in
    equal to 0 contributes no term). The interval is ``[sgnsq(Lbar - z se), sgnsq(Lbar + z se)]``."""
    z = _z(ci)
    return _l(_solve_pair(x, y, y2, cost, batches), z, batches)


def hedged(x, x2, y, y2, cost=squared_euclidean, ci=0.95, batches=None) -> dict:
    """Both orientations of the centred estimators; the active pair is the one with larger U.

    ``x, x2 ~ mu`` and ``y, y2 ~ nu`` (n draws each; ``(x[i], y[i])`` may be coupled). Computes
    ``U(mu, nu) = W2^2(X, Y') - W2^2(Y, Y')`` (centred with nu) and
    ``U(nu, mu) = W2^2(Y, X') - W2^2(X, X')`` (centred with mu), and L for each. Returns a dict:
    ``"V"`` (the larger U, with its own CI), ``"L"`` (L of the same pair), ``"centring"``
    (``"nu"`` or ``"mu"``; ties go to ``"nu"``), ``"U_mu_nu"``, ``"U_nu_mu"``, ``"L_mu_nu"``,
    ``"L_nu_mu"`` (:class:`Estimate`) and ``"variance_reduction"`` of the active pair
    (see :func:`variance_reduction`). Four transport problems are solved."""
    z = _z(ci)
    if _length(x2, "x2") != _length(x, "x"):
        raise ValueError("x and x2 must have the same length")
    nu_pair = _solve_pair(x, y, y2, cost, batches)
    mu_pair = _solve_pair(y, x, x2, cost, batches)
    u_mn, u_nm = _u(nu_pair, z, batches), _u(mu_pair, z, batches)
    l_mn, l_nm = _l(nu_pair, z, batches), _l(mu_pair, z, batches)
    if u_mn.value >= u_nm.value:
        v, lo, centring, active = u_mn, l_mn, "nu", nu_pair
    else:
        v, lo, centring, active = u_nm, l_nm, "mu", mu_pair
    return {
        "V": v,
        "L": lo,
        "centring": centring,
        "U_mu_nu": u_mn,
        "U_nu_mu": u_nm,
        "L_mu_nu": l_mn,
        "L_nu_mu": l_nm,
        "variance_reduction": _vr(active),
    }


def variance_reduction(x, y, y2, cost=squared_euclidean) -> float:
    """Estimated factor by which coupling ``(x[i], y[i])`` reduces the variance of
    ``U(mu, nu)``, with no extra simulation: ``se_indep^2 / se^2`` where
    ``se_indep^2 = [s^2(f_p(X)) + s^2(f_c(Y)) + s^2(g_p(Y') - g_c(Y'))] / n`` and
    ``se^2 = s^2(phi) / n`` (i.i.d. formulas, sample variances with ddof=1). About 1 for
    independent pairs (a noisy estimate), above 1 for positively coupled ones. ``nan`` if
    both variances are 0, ``inf`` if only ``se`` is."""
    return _vr(_solve_pair(x, y, y2, cost))
