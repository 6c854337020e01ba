"""Centered W2 convergence traces of replicate MCMC chains (seed 002, Sec. 5.1 and App. E.1).

``draws`` holds R independent chains' saved states, shape (R, T, ...): R chains, T saved
iterations. For each saved iteration t the estimators bound W2^2(pi_t, pi) (pi the target) from
above (U_t) and below (L_t), with confidence intervals, without knowing pi: the chains' own late
states stand in for it. Two methods (formulas in docs/diagnostics.md):

* ``"time_averaged"`` (App. E.1; for overdispersed starts, lower variance): w_t = max(0, W2^2(pi_t,
  Ytilde)) against the final states Ytilde, then U_t = w_t - mean over a stationary window S of
  w_s, L_t = sgnsq(sqrt(w_t) - mean_S sqrt(w_s)).
* ``"split"`` (Sec. 5.1): halves (1) and (2) of the chains; U_t = W2^2(pi_t^(1), pi_T^(2)) -
  W2^2(pi_T^(1), pi_T^(2)) (overdispersed start), or centred with pi_t for an underdispersed
  start.

The ground cost is any ``cost(a, b)`` matrix function: squared Euclidean for continuous
parameters, the Mirkin distance (:func:`~.partition_cost.mirkin_cost_matrix`) for partitions.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.stats import norm

from .wasserstein import centered_l, centered_u, plugin_w2, sgnsq, squared_euclidean

__all__ = ["w2_traces", "suggest_window", "ESTIMATES"]

#: Names of the per-iteration outputs of :func:`w2_traces`.
ESTIMATES = ("U", "U_lower", "U_upper", "U_se", "L", "L_lower", "L_upper", "L_se")


def suggest_window(w, end_fraction: float = 0.9) -> tuple[int, int]:
    """A stationary window (first, last) of saved-iteration indices for the trace ``w`` of
    W2^2(pi_t, final states): from the first t after which w stays within the level of its
    tail (mean + 2 sd of the stretch from T/2 to ``end_fraction`` T), to ``end_fraction`` T, so
    that it ends well before T (the final states are the reference, so w_T = 0)."""
    w = np.asarray(w, float)
    t_count = len(w)
    if t_count < 4:
        raise ValueError(f"need at least 4 saved iterations to choose a window, got {t_count}")
    last = max(1, int(math.floor(end_fraction * (t_count - 1))))
    tail = w[t_count // 2: last + 1]
    level = tail.mean() + 2.0 * tail.std()
    above = np.nonzero(w[: last + 1] > level)[0]
    first = int(above[-1]) + 1 if len(above) else 0
    first = min(first, t_count // 2, last)
    return first, last


def _check(draws):
    draws = np.asarray(draws)
    if draws.ndim < 2:
        raise ValueError(f"draws must have shape (chains, iterations, ...), got {draws.shape}")
    if draws.shape[0] < 2:
        raise ValueError(f"need at least 2 chains, got {draws.shape[0]}")
    if draws.shape[1] < 2:
        raise ValueError(f"need at least 2 saved iterations, got {draws.shape[1]}")
    return draws


def w2_traces(draws, cost=squared_euclidean, method: str = "time_averaged", window=None, ci: float = 0.95,
              reference=None, underdispersed: bool = False) -> dict:
    """Upper and lower estimates of W2^2(pi_t, pi) for every saved iteration t of ``draws``.

    Parameters
    ----------
    draws : array (R, T, ...)
        R independent chains, T saved iterations; one state per chain and iteration in whatever
        form ``cost`` takes (vectors for squared Euclidean, label vectors for Mirkin).
    cost : callable
        ``cost(a, b)`` -> matrix of squared ground distances between the states in a and b.
    method : {"time_averaged", "split"}
    window : (first, last), optional
        Stationary window of saved iterations for ``"time_averaged"`` (default:
        :func:`suggest_window` of the w trace).
    reference : array (R, ...), optional
        Exact draws from pi to use instead of the final states (``"time_averaged"``).
    underdispersed : bool
        For ``"split"``: centre with pi_t (chains started underdispersed) instead of pi_T.

    Returns
    -------
    dict of arrays over t: ``U``, ``U_lower``, ``U_upper``, ``U_se``, ``L``, ``L_lower``,
    ``L_upper``, ``L_se`` (``L_se`` is the standard error of the unsquared Lbar), plus ``w``
    and ``window`` for ``"time_averaged"``.
    """
    draws = _check(draws)
    if not 0 < ci < 1:
        raise ValueError(f"ci must be in (0, 1), got {ci}")
    if method == "time_averaged":
        return _time_averaged(draws, cost, window, ci, reference)
    if method == "split":
        return _split(draws, cost, ci, underdispersed)
    raise ValueError(f"method must be 'time_averaged' or 'split', got {method!r}")


def _time_averaged(draws, cost, window, ci, reference):
    r, t_count = draws.shape[:2]
    ref = draws[:, -1] if reference is None else np.asarray(reference)
    if len(ref) != r:
        raise ValueError(f"reference must hold one state per chain ({r}), got {len(ref)}")
    w = np.empty(t_count)
    phi = np.empty((t_count, r))  # f_t(X_t^i) + g_t(Ytilde_i)
    for t in range(t_count):
        plug = plugin_w2(cost(draws[:, t], ref))
        w[t] = max(0.0, plug.value)
        phi[t] = plug.f + plug.g
    if window is None:
        window = suggest_window(w)
    first, last = (int(window[0]), int(window[1]))
    if not 0 <= first <= last < t_count:
        raise ValueError(f"window must satisfy 0 <= first <= last < {t_count}, got {window}")
    s = slice(first, last + 1)
    z = norm.ppf(0.5 + ci / 2)
    u = w - w[s].mean()
    u_se = (phi - phi[s].mean(axis=0)).std(axis=1, ddof=1) / math.sqrt(r)
    root = np.sqrt(w)
    with np.errstate(divide="ignore", invalid="ignore"):
        scaled = np.where(root[:, None] > 0, phi / (2.0 * root[:, None]), 0.0)
    lbar = root - root[s].mean()
    l_se = (scaled - scaled[s].mean(axis=0)).std(axis=1, ddof=1) / math.sqrt(r)
    out = _bounds(u, u_se, lbar, l_se, z)
    out["w"] = w
    out["window"] = np.array([first, last])
    return out


def _split(draws, cost, ci, underdispersed):
    r, t_count = draws.shape[:2]
    if r < 4:
        raise ValueError(f"the split method needs at least 4 chains, got {r}")
    h = r // 2
    one, two = draws[:h], draws[h: 2 * h]
    rows = {name: np.empty(t_count) for name in ("U", "U_se", "Lbar", "L_se")}
    for t in range(t_count):
        if underdispersed:  # centre with pi_t: U = W2^2(pi_T^(1), pi_t^(2)) - W2^2(pi_t^(1), pi_t^(2))
            x, y, y2 = one[:, -1], one[:, t], two[:, t]
        else:
            x, y, y2 = one[:, t], one[:, -1], two[:, -1]
        u = centered_u(x, y, y2, cost=cost, ci=ci)
        lo = centered_l(x, y, y2, cost=cost, ci=ci)
        rows["U"][t], rows["U_se"][t] = u.value, u.se
        rows["Lbar"][t] = math.copysign(math.sqrt(abs(lo.value)), lo.value)
        rows["L_se"][t] = lo.se
    return _bounds(rows["U"], rows["U_se"], rows["Lbar"], rows["L_se"], norm.ppf(0.5 + ci / 2))


def _bounds(u, u_se, lbar, l_se, z):
    return {
        "U": u, "U_lower": u - z * u_se, "U_upper": u + z * u_se, "U_se": u_se,
        "L": sgnsq(lbar), "L_lower": sgnsq(lbar - z * l_se), "L_upper": sgnsq(lbar + z * l_se), "L_se": l_se,
    }
