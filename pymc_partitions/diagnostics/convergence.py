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

The last saved iteration is the reference of both methods, so its own estimates are degenerate
by construction (time-averaged: w_T = 0 and U_T = -mean_S w; split: U_T = L_T = 0 with a zero
standard error). It is not reported: the traces cover iterations 0..T-2 (all T iterations when
exact ``reference`` draws are given).

A trace whose U is significantly below 0 means that the window is not stationary (the chains
have not converged by then, or the start was underdispersed): :func:`w2_traces` warns with a
:class:`W2ConvergenceWarning` then (see :func:`stationarity_check`).

The ground cost is any ``cost(a, b)`` matrix function: squared Euclidean for continuous
parameters, the Mirkin distance (:func:`~.partition_cost.mirkin_cost_matrix`) for partitions.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import numpy as np

from .._checks import boolean, choice, integer, real
from .wasserstein import centered_l, centered_u, plugin_w2, sgnsq, squared_euclidean

__all__ = [
    "w2_traces",
    "suggest_window",
    "stationarity_check",
    "stationarity_message",
    "W2ConvergenceWarning",
    "ESTIMATES",
    "METHODS",
]

#: Names of the per-iteration outputs of :func:`w2_traces`.
ESTIMATES = ("U", "U_lower", "U_upper", "U_se", "L", "L_lower", "L_upper", "L_se")
#: The convergence methods of :func:`w2_traces`.
METHODS = ("time_averaged", "split")


class W2ConvergenceWarning(UserWarning):
    """The W2 traces say the chains were not stationary where the estimator assumes they are."""


def suggest_window(w, end_fraction: float = 0.9) -> tuple[int, int]:
    """A stationary window (first, last) of saved-iteration indices for the trace ``w`` of
    W2^2(pi_t, final states): from the first t after which w stays within the level of its
    tail (mean + 2 sd of the stretch from T/2 to ``end_fraction`` T), to ``end_fraction`` T, so
    that it ends well before T (the final states are the reference, so w_T = 0)."""
    end_fraction = real("end_fraction", end_fraction, low=0.0, high=1.0, low_open=True, owner="suggest_window")
    w = np.asarray(w, float)
    if w.ndim != 1:
        raise ValueError(f"suggest_window: w must be a 1-d trace, got shape {w.shape}")
    if not np.all(np.isfinite(w)):
        raise ValueError("suggest_window: w holds NaN or infinite values")
    t_count = len(w)
    if t_count < 4:
        raise ValueError(f"need at least 4 saved iterations to choose a window, got {t_count}")
    last = max(1, int(math.floor(end_fraction * (t_count - 1))))
    last = min(last, t_count - 2)  # never the reference itself
    tail = w[t_count // 2: last + 1]
    level = tail.mean() + 2.0 * tail.std()
    above = np.nonzero(w[: last + 1] > level)[0]
    first = int(above[-1]) + 1 if len(above) else 0
    first = min(first, t_count // 2, last)
    return first, last


def _check_finite(a, name, lead):
    """Refuse NaN / infinite states in a float array whose first ``lead`` axes index states."""
    if np.issubdtype(a.dtype, np.floating):
        bad = ~np.isfinite(a.reshape(a.shape[:lead] + (-1,))).all(axis=-1)
        if bad.any():
            first = ", ".join(str(int(i)) for i in np.argwhere(bad)[0])
            raise ValueError(f"{name} holds NaN or infinite values ({int(bad.sum())} states; the first at index "
                             f"[{first}])")


def _check_draws(draws, name="draws"):
    draws = np.asarray(draws)
    if draws.ndim < 2:
        raise ValueError(f"{name} must have shape (chains, iterations, ...), got {draws.shape}")
    if draws.shape[0] < 2:
        raise ValueError(f"need at least 2 chains, got {draws.shape[0]}")
    if draws.shape[1] < 2:
        raise ValueError(f"need at least 2 saved iterations, got {draws.shape[1]}")
    if np.issubdtype(draws.dtype, np.complexfloating) or draws.dtype.kind in "SUMm":
        raise TypeError(f"{name} must hold numbers or label vectors, got dtype {draws.dtype}")
    _check_finite(draws, name, 2)
    return draws


def _check_window(window, limit, note=""):
    """(first, last) as ints with 0 <= first <= last <= limit."""
    if isinstance(window, (str, bytes)) or not isinstance(window, (Sequence, np.ndarray)) or len(window) != 2:
        raise TypeError(f"window must be a pair (first, last) of saved-iteration indices, got {window!r}")
    first = integer("window[0]", window[0], low=0)
    last = integer("window[1]", window[1], low=0)
    if not first <= last <= limit:
        raise ValueError(f"window must satisfy 0 <= first <= last <= {limit} (saved-iteration indices{note}), "
                         f"got {tuple(window)!r}")
    return first, last


def w2_traces(draws, cost=squared_euclidean, method: str = "time_averaged", window=None, ci: float = 0.95,
              reference=None, underdispersed: bool = False, name: str = "draws", iterations=None,
              warn: bool = True) -> dict:
    """Upper and lower estimates of W2^2(pi_t, pi) for every saved iteration t of ``draws``
    but the last (the reference; see the module docstring).

    Parameters
    ----------
    draws : array (R, T, ...)
        R independent chains, T saved iterations; one state per chain and iteration in whatever
        form ``cost`` takes (vectors for squared Euclidean, label vectors for Mirkin).
    cost : callable
        ``cost(a, b)`` -> matrix of squared ground distances between the states in a and b.
    method : {"time_averaged", "split"}
    window : (first, last), optional
        Stationary window of saved iterations for ``"time_averaged"``, with
        ``0 <= first <= last <= T - 2`` (default: :func:`suggest_window` of the w trace).
    reference : array (R, ...), optional
        Exact draws from pi to use instead of the final states (``"time_averaged"``); then all T
        iterations are reported and ``last`` may be ``T - 1``.
    underdispersed : bool
        For ``"split"``: centre with pi_t (chains started underdispersed) instead of pi_T.
    name : str
        What the draws are, for warnings (e.g. the variable name).
    iterations : array (T,), optional
        Labels of the saved iterations (e.g. draw numbers), for the output and warnings
        (default 0..T-1).
    warn : bool
        Issue the warning below (the check itself is always in the output).

    Returns
    -------
    dict of arrays over the reported iterations: ``U``, ``U_lower``, ``U_upper``, ``U_se``,
    ``L``, ``L_lower``, ``L_upper``, ``L_se`` (``L_se`` is the standard error of the unsquared
    Lbar), ``iterations`` (their labels); for ``"time_averaged"`` also ``w``, ``window``
    (positions) and ``window_trend`` / ``window_trend_se`` (slope of w over the window per
    iteration, and its standard error); ``stationarity`` (see :func:`stationarity_check`).

    Warns
    -----
    W2ConvergenceWarning
        When :func:`stationarity_check` finds U significantly below 0.
    """
    draws = _check_draws(draws)
    if not callable(cost):
        raise TypeError(f"w2_traces: cost must be a function cost(a, b) -> matrix, got {cost!r}")
    method = choice("method", method, METHODS, owner="w2_traces")
    ci = real("ci", ci, low=0.0, high=1.0, low_open=True, high_open=True, owner="w2_traces")
    underdispersed = boolean("underdispersed", underdispersed, owner="w2_traces")
    warn = boolean("warn", warn, owner="w2_traces")
    if not isinstance(name, str):
        raise TypeError(f"w2_traces: name must be a string, got {name!r}")
    t_count = draws.shape[1]
    labels = np.arange(t_count) if iterations is None else np.asarray(iterations)
    if labels.shape != (t_count,):
        raise ValueError(f"w2_traces: iterations must label the {t_count} saved iterations, got shape {labels.shape}")
    if method == "time_averaged":
        if underdispersed:
            raise ValueError("w2_traces: underdispersed=True applies to method='split' only")
        out = _time_averaged(draws, cost, window, ci, reference, labels)
    else:
        if window is not None:
            raise ValueError("w2_traces: window applies to method='time_averaged' only")
        if reference is not None:
            raise ValueError("w2_traces: reference applies to method='time_averaged' only")
        out = _split(draws, cost, ci, underdispersed, labels)
    out["stationarity"] = check = stationarity_check(out, ci)
    if warn and check["warn"]:
        warnings.warn(stationarity_message(check, name, out, ci), W2ConvergenceWarning, stacklevel=2)
    return out


def _cost_matrix(cost, a, b, r):
    m = np.asarray(cost(a, b), dtype=np.float64)
    if m.shape != (r, r):
        raise ValueError(f"cost(a, b) must return an ({r}, {r}) matrix, got shape {m.shape}")
    return m


def _time_averaged(draws, cost, window, ci, reference, labels):
    from scipy.stats import norm  # noqa: PLC0415 (scipy.stats costs ~0.3 s to import)
    r, t_count = draws.shape[:2]
    if reference is None:
        ref, reported = draws[:, -1], t_count - 1
    else:
        ref = np.asarray(reference)
        if ref.shape != (r,) + draws.shape[2:]:
            raise ValueError(f"reference must hold one state per chain, shape {(r,) + draws.shape[2:]}, "
                             f"got {ref.shape}")
        _check_finite(ref, "reference", 1)
        reported = t_count
    w = np.empty(reported)
    phi = np.empty((reported, r))  # f_t(X_t^i) + g_t(Ytilde_i)
    for t in range(reported):
        plug = plugin_w2(_cost_matrix(cost, draws[:, t], ref, r))
        w[t] = max(0.0, plug.value)
        phi[t] = plug.f + plug.g
    if window is None:
        first, last = suggest_window(np.append(w, 0.0) if reference is None else w)
    else:
        note = "; the last saved iteration is the reference" if reference is None else ""
        first, last = _check_window(window, reported - 1, note)
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
    # least-squares slope of w over the window, per iteration: sum_s c_s w_s, and per chain
    # sum_s c_s phi_s(i) for its standard error (the same CLT as U's)
    steps = np.arange(first, last + 1, dtype=float)
    c = steps - steps.mean()
    if last > first:
        c /= c @ c
    out["window_trend"] = float(c @ w[s])
    out["window_trend_se"] = float((c @ phi[s]).std(ddof=1) / math.sqrt(r)) if last > first else 0.0
    out["iterations"] = labels[:reported]
    return out


def _split(draws, cost, ci, underdispersed, labels):
    from scipy.stats import norm  # noqa: PLC0415 (scipy.stats costs ~0.3 s to import)
    r, t_count = draws.shape[:2]
    if r < 4:
        raise ValueError(f"the split method needs at least 4 chains, got {r}")
    h = r // 2
    one, two = draws[:h], draws[h: 2 * h]
    reported = t_count - 1
    rows = {name: np.empty(reported) for name in ("U", "U_se", "Lbar", "L_se")}
    for t in range(reported):
        if underdispersed:  # centre with pi_t: U = W2^2(pi_T^(1), pi_t^(2)) - W2^2(pi_t^(1), pi_t^(2))
            x, y, y2 = one[:, -1], one[:, t], two[:, t]
        else:
            x, y, y2 = one[:, t], one[:, -1], two[:, -1]
        u = centered_u(x, y, y2, cost=cost, ci=ci)
        lo = centered_l(x, y, y2, cost=cost, ci=ci)
        rows["U"][t], rows["U_se"][t] = u.value, u.se
        rows["Lbar"][t] = math.copysign(math.sqrt(abs(lo.value)), lo.value)
        rows["L_se"][t] = lo.se
    out = _bounds(rows["U"], rows["U_se"], rows["Lbar"], rows["L_se"], norm.ppf(0.5 + ci / 2))
    out["iterations"] = labels[:reported]
    return out


def _bounds(u, u_se, lbar, l_se, z):
    return {
        "U": u, "U_lower": u - z * u_se, "U_upper": u + z * u_se, "U_se": u_se,
        "L": sgnsq(lbar), "L_lower": sgnsq(lbar - z * l_se), "L_upper": sgnsq(lbar + z * l_se), "L_se": l_se,
    }


def stationarity_check(out: dict, ci: float = 0.95) -> dict:
    """Is U significantly below 0 anywhere it should not be? For a :func:`w2_traces` output.

    The iterations checked are those up to the window's end (time-averaged; later ones are
    close to their own chain's final state, so their w is biased low by construction) or all
    reported ones (split). Per iteration, ``U_upper < 0`` at level ``ci`` happens by chance at
    about (1 - ci) / 2 of the iterations of a converged run, so a warning is not raised on that
    alone. It is raised when

    * (time-averaged) w has a significant trend over the window, two-sided at level ``ci``
      (falling: the chains were still converging in the window, so U is below 0 at its end and
      too small before it; rising: the start was underdispersed), or
    * U is below 0 at some checked iteration even with a Bonferroni correction for the number
      of checked iterations.

    Returns a dict: ``checked`` (number of iterations checked), ``below`` (positions with
    ``U_upper < 0``), ``below_corrected`` (positions significant after the correction),
    ``trend_z`` (trend / its se; NaN for split or a one-iteration window) and ``warn``.
    """
    from scipy.stats import norm  # noqa: PLC0415 (scipy.stats costs ~0.3 s to import)
    ci = real("ci", ci, low=0.0, high=1.0, low_open=True, high_open=True, owner="stationarity_check")
    u, se = np.asarray(out["U"], float), np.asarray(out["U_se"], float)
    checked = int(out["window"][1]) + 1 if "window" in out else len(u)
    z = norm.ppf(0.5 + ci / 2)
    z_family = norm.ppf(1.0 - (1.0 - ci) / (2.0 * max(checked, 1)))
    below = np.nonzero(u[:checked] + z * se[:checked] < 0)[0]
    below_corrected = np.nonzero(u[:checked] + z_family * se[:checked] < 0)[0]
    trend_z = math.nan
    if "window_trend" in out and out["window_trend_se"] > 0:
        trend_z = out["window_trend"] / out["window_trend_se"]
    warn = bool(len(below_corrected) or abs(trend_z) > z)
    return {"checked": checked, "below": below, "below_corrected": below_corrected, "trend_z": trend_z,
            "warn": warn}


def stationarity_message(check: dict, name: str, out: dict, ci: float) -> str:
    """The warning for a failed :func:`stationarity_check` of the :func:`w2_traces` output ``out``."""
    labels = out["iterations"]
    where = "up to the window's end" if "window" in out else "reported"
    msg = (f"W2 trace {name!r}: U is significantly below 0 (U_upper < 0 at the {ci:g} level) at "
           f"{len(check['below'])} of the {check['checked']} iterations {where}"
           f" ({len(check['below_corrected'])} after a Bonferroni correction)")
    if "window" in out:
        first, last = (int(i) for i in out["window"])
        msg += f"; over the window (iterations {labels[first]}..{labels[last]}) w "
        if math.isnan(check["trend_z"]):
            msg += "has no measurable trend"
        else:
            msg += (f"{'falls' if check['trend_z'] < 0 else 'rises'} by {abs(check['trend_z']):.1f} standard errors "
                    f"of its trend")
        msg += (". The window is not stationary: the chains had not converged by then (or started "
                "underdispersed, if w rises), so U underestimates the distance to stationarity. Run the chains "
                "longer, or choose a later window (window=(first, last)).")
    else:
        msg += (". The chains at those iterations are closer to the final states than the final states are to "
                "each other: the start looks underdispersed (centre with pi_t: underdispersed=True), or the chains "
                "have not converged. Run the chains longer or start them more dispersed.")
    return msg
