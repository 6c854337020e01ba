"""Centered W2 diagnostics on ``pm.sample`` results: convergence traces and approximation bias.

Reads draws out of InferenceData / DataTree, stacks continuous variables into one vector per
draw, uses the Mirkin cost for partitions, and writes the estimates back as a group. The
estimators are in :mod:`pymc_partitions.diagnostics`.

Which variables are partitions: those named by ``partitions=``; else the ``pmp.Partition``
variables of ``model=`` (or of the model in context); else the draws-only rule of
:mod:`pymc_partitions.results.reader` (integer vectors whose every draw is a canonical label
vector with a label 2 or more somewhere; other integer vectors are refused: pass ``model=`` or
``partitions=``); integer scalars are numbers.

The slot variables of a non-conjugate partition (parameters indexed by it, ``mu[z]``: those of
``model=``, else those the result records, else those of the model in context) switch labels with
it, so their draws enter as the parameter of each draw's largest cluster (``mu_by_size[0]`` of
:func:`~pymc_partitions.slot_views`), not slot by slot.
"""

from __future__ import annotations

import datetime
import warnings

import numpy as np
import pandas as pd
import xarray as xr

from .._checks import boolean, choice, integer, real
from ..diagnostics.convergence import (
    ESTIMATES,
    METHODS,
    W2ConvergenceWarning,
    stationarity_message,
    w2_traces,
)
from ..diagnostics.partition_cost import mirkin_cost_matrix
from ..diagnostics.wasserstein import hedged, squared_euclidean
from ..pymc.distributions import invariant_names
from .invariants import largest_cluster_slots
from .slots import partition_slots
from .reader import (  # noqa: F401  (is_canonical, SOURCES: used by tests and callers from here)
    SOURCES,
    _auto_partition,
    _labels,
    _names,
    _partition_names,
    _posterior,
    _variable_draws,
    add_groups,
    is_canonical,
    made_group,
)

__all__ = ["w2_convergence", "plot_w2_convergence", "w2_bias"]

CONTINUOUS = "continuous"  # name of the trace of the stacked continuous variables


def _plan(posterior, var_names, partitions, model, owner):
    """{name: (chain, draw, ...) draws} for each partition and the stacked continuous rest."""
    names = list(posterior.data_vars) if var_names is None else var_names
    if not names:
        raise ValueError(f"{owner}: no variables to diagnose")
    missing = [v for v in names if v not in posterior.data_vars]
    if missing:
        raise ValueError(f"{owner}: variables {missing} are not in the posterior (it has {list(posterior.data_vars)})")
    values = {v: _variable_draws(posterior, v, owner, "W2 needs real numbers or labels",
                                 " (leave it out with var_names=)") for v in names}
    parts, source = _partition_names(values, names, partitions, model, owner, posterior=posterior)
    labels = {p: _labels(values[p], p, owner) for p in parts}
    # by default, not the label-invariant Deterministics of a pmp.Partition (functions of its draws),
    # whether or not it is treated as a partition here
    derived = {d for v in names for d in invariant_names(v)} if var_names is None else set()
    continuous = [v for v in names if v not in parts and v not in derived]
    for p in partition_slots(posterior, list(posterior.data_vars), model, owner):
        for slot, largest in largest_cluster_slots(posterior, p, model, owner).items():
            if slot in continuous:  # a slot variable switches labels with its partition: its largest cluster's
                values[slot] = np.asarray(largest.transpose("chain", "draw", ...).values)
    stacked = None
    if continuous:
        blocks = [values[v].astype(float).reshape(values[v].shape[0], values[v].shape[1], -1) for v in continuous]
        stacked = np.concatenate(blocks, axis=2)
    return labels, stacked, continuous, parts, source


def _thinned(draws: int, thin: int) -> np.ndarray:
    """Every ``thin``-th draw from the first, and always the last (the reference)."""
    index = np.arange(0, draws, thin)
    return index if index[-1] == draws - 1 else np.append(index, draws - 1)


def w2_convergence(idata, var_names=None, method: str = "time_averaged", window=None, thin: int = 1,
                   partitions=None, model=None, ci: float = 0.95, overwrite: bool = False):
    """Add a group ``w2_convergence``: for every saved iteration t but the last, upper (U_t) and
    lower (L_t) estimates of W2^2(law of the chains at t, posterior) with ``ci`` intervals.

    Needs R >= 2 independent chains started from an overdispersed law (64-256 recommended; a
    warning below 32), run long enough that their last draws are stationary. Cluster labels do
    not matter: partitions are compared with the Mirkin distance.

    The last draw is the reference (the chains' final states), so its own estimates are
    degenerate by construction (time-averaged: w = 0, U = -mean w over the window; split: 0
    with zero width): it is not reported. Thinning always keeps it.

    Parameters
    ----------
    idata : InferenceData or DataTree
        A ``pm.sample`` result (keep ``tune=0`` or ``discard_tuned_samples=False`` to see the
        early iterations).
    var_names : str or list of str, optional
        Posterior variables (default all but the label-invariant Deterministics ``<z>_n_clusters``,
        ``<z>_largest_share`` a partition ``z`` adds, which are functions of its labels). Continuous ones are stacked into one vector per draw
        (trace ``continuous``); each partition variable gets its own trace, under its name.
    method : {"time_averaged", "split"}
        See :func:`pymc_partitions.diagnostics.convergence.w2_traces`.
    window : (first, last), optional
        Stationary window, in *thinned* iteration indices (0 <= first <= last <= number of
        thinned draws - 2), for ``"time_averaged"``; chosen from the trace by default.
    thin : int
        Use every ``thin``-th draw (and the last).
    partitions : str or list of str, optional
        Which variables are partitions (``[]``: none). By default the ``pmp.Partition``
        variables of ``model`` (or of the model in context); with no model, the integer
        vector variables whose every draw is a canonical label vector (see the module
        docstring); an integer vector variable that is not canonical is refused.
    model : pymc.Model, optional
    ci : float
        Level of the intervals, in (0, 1).
    overwrite : bool
        Replace an existing ``w2_convergence`` group.

    Returns
    -------
    Same type as ``idata``, with the group added: per trace ``<name>_U``, ``_U_lower``,
    ``_U_upper``, ``_L``, ``_L_lower``, ``_L_upper`` (and ``<name>_w`` for time_averaged), dim
    ``draw`` holding the original draw indices. The attrs record the settings, which variables
    were partitions and how that was decided (``partition_source``), the reference draw, and
    per trace the window (draw indices), the window's trend in standard errors and the draws
    where U is significantly below 0.

    Warns
    -----
    W2ConvergenceWarning
        When U is significantly below 0 where it should not be: the window is not stationary
        (see :func:`pymc_partitions.diagnostics.convergence.stationarity_check`).
    """
    owner = "w2_convergence"
    method = choice("method", method, METHODS, owner=owner)
    thin = integer("thin", thin, low=1, owner=owner)
    ci = real("ci", ci, low=0.0, high=1.0, low_open=True, high_open=True, owner=owner)
    overwrite = boolean("overwrite", overwrite, owner=owner)
    var_names = _names(var_names, "var_names", owner)
    partitions = _names(partitions, "partitions", owner)
    if window is not None and method != "time_averaged":
        raise ValueError(f"{owner}: window applies to method='time_averaged' only")
    posterior = _posterior(idata, owner)
    labels, stacked, continuous, parts, source = _plan(posterior, var_names, partitions, model, owner)
    chains, draws = posterior.sizes["chain"], posterior.sizes["draw"]
    if chains < 2:
        raise ValueError(f"{owner} needs several independent chains, got {chains}")
    index = _thinned(draws, thin)
    if len(index) < 2:
        raise ValueError(f"{owner}: needs at least 2 draws per chain, got {draws}")
    if chains < 32:
        warnings.warn(f"only {chains} chains: W2 estimates are noisy below ~32 (64-256 recommended)", stacklevel=2)
    draw_index = posterior["draw"].values[index]
    targets = {p: (labels[p], mirkin_cost_matrix) for p in parts}
    if stacked is not None:
        targets[CONTINUOUS] = (stacked, squared_euclidean)
    data, attrs = {}, {}
    for name, (values, cost) in targets.items():
        out = w2_traces(values[:, index], cost=cost, method=method, window=window, ci=ci, name=name,
                        iterations=draw_index, warn=False)
        for est in ESTIMATES:
            if not est.endswith("_se"):
                data[f"{name}_{est}"] = ("draw", out[est])
        check = out["stationarity"]
        if "w" in out:
            data[f"{name}_w"] = ("draw", out["w"])
            attrs[f"{name}_window"] = [int(draw_index[i]) for i in out["window"]]
            attrs[f"{name}_window_trend_z"] = float(check["trend_z"])
        attrs[f"{name}_U_below_zero"] = [int(draw_index[i]) for i in check["below"]]
        if check["warn"]:
            warnings.warn(stationarity_message(check, name, out, ci), W2ConvergenceWarning, stacklevel=2)
    from .._version import __version__  # noqa: PLC0415

    attrs.update(method=method, thin=thin, ci=ci, chains=int(chains), reference_draw=int(draw_index[-1]),
                 continuous_vars=list(continuous), partition_vars=list(parts), partition_source=source,
                 pymc_partitions_version=__version__, created_at=datetime.datetime.now().isoformat())
    group = xr.Dataset(data, coords={"draw": out["iterations"]}, attrs=attrs)
    return add_groups(idata, {"w2_convergence": group}, overwrite=overwrite)


def plot_w2_convergence(idata, names=None, ax=None):
    """Plot the ``w2_convergence`` traces: U and L per iteration on a log scale, with their
    intervals as bands (non-positive values are not drawn on the log axis). ``names``: traces
    to plot (default all); ``ax``: one matplotlib axes per name. Returns the axes."""
    import matplotlib.pyplot as plt  # noqa: PLC0415

    owner = "plot_w2_convergence"
    group = made_group(idata, "w2_convergence", "pmp.w2_convergence")
    traces = sorted({v.rsplit("_U", 1)[0] for v in group.data_vars if v.endswith("_U")})
    names = traces if names is None else _names(names, "names", owner)
    unknown = [n for n in names if n not in traces]
    if unknown or not names:
        raise ValueError(f"{owner}: names must be among the traces {traces}, got {names}")
    if ax is None:
        _, ax = plt.subplots(1, len(names), figsize=(4.5 * len(names), 3.4), squeeze=False)
        axes = list(ax[0])
    else:
        axes = list(np.ravel(np.asarray(ax, dtype=object)))
        if len(axes) != len(names):
            raise ValueError(f"{owner}: ax must hold one axes per trace ({len(names)}: {names}), got {len(axes)}")
    draw = group["draw"].values
    for a, name in zip(axes, names):
        for est, color in (("U", "C0"), ("L", "C1")):
            val = group[f"{name}_{est}"].values
            lo = group[f"{name}_{est}_lower"].values
            hi = group[f"{name}_{est}_upper"].values
            a.plot(draw, np.where(val > 0, val, np.nan), color=color, label=f"{est} (upper)" if est == "U" else
                   f"{est} (lower)")
            a.fill_between(draw, np.where(lo > 0, lo, np.nan), np.where(hi > 0, hi, np.nan), color=color, alpha=0.2)
        a.set_yscale("log")
        a.set(title=f"W2² to stationarity: {name}", xlabel="iteration", ylabel="W2²")
        a.grid(alpha=0.3)
        a.legend(frameon=False)
    return np.array(axes)


def _array_draws(source, partitions, owner, which):
    """(chain, draw, ...) draws of an array source, and whether they are partitions."""
    if partitions is not None and not isinstance(partitions, (bool, np.bool_)):
        raise TypeError(f"{owner}: for arrays of draws, partitions must be True (label vectors), False (numbers) or "
                        f"None (decide from the draws), got {partitions!r}")
    a = np.asarray(source)
    if not (np.issubdtype(a.dtype, np.number) or a.dtype == np.bool_) or np.iscomplexobj(a):
        raise TypeError(f"{owner}: {which} must hold real numbers or labels, got dtype {a.dtype}")
    if a.ndim == 0 or a.ndim > 3:
        raise ValueError(f"{owner}: {which} must have shape (draws,), (draws, d) or (chains, draws, d), got {a.shape}")
    if a.ndim == 1:
        a = a[:, None]
    a = a[None] if a.ndim == 2 else a  # (chain, draw, d)
    if np.issubdtype(a.dtype, np.floating) and not np.all(np.isfinite(a)):
        raise ValueError(f"{owner}: {which} holds NaN or infinite values")
    if partitions is None:
        remedy = "Pass partitions=True to compare them as partitions, partitions=False as numbers."
        is_part = np.asarray(source).ndim >= 2 and _auto_partition(a, which, owner, remedy)
    else:
        is_part = bool(partitions)
    return (_labels(a, which, owner) if is_part else a.astype(float)), is_part


def _source_draws(source, var_names, partitions, model, owner, which):
    """(chain, draw, ...) draws of one w2_bias source, and whether they are one partition."""
    if isinstance(source, (np.ndarray, list, tuple)):
        if var_names is not None:
            raise ValueError(f"{owner}: var_names applies to results, not to arrays of draws")
        return _array_draws(source, partitions, owner, which)
    if isinstance(partitions, (bool, np.bool_)):
        raise TypeError(f"{owner}: for results, partitions names the partition variables (a list of names)")
    owner = f"{owner} ({which})"
    posterior = _posterior(source, owner)
    labels, stacked, continuous, parts, _ = _plan(posterior, var_names, _names(partitions, "partitions", owner),
                                                  model, owner)
    if parts and (len(parts) > 1 or continuous):
        raise ValueError(f"{owner}: w2_bias compares one partition variable at a time, or continuous variables only; "
                         f"here partitions {parts} and continuous variables {continuous}: choose with var_names=[...]")
    return (labels[parts[0]], True) if parts else (stacked, False)


def _halves(a):
    """(first halves, second halves, batches) of (chain, draw, ...) draws: each chain split in two."""
    half = a.shape[1] // 2
    if half < 1:
        raise ValueError("need at least 2 draws per chain")
    first = a[:, :half].reshape((-1,) + a.shape[2:])
    second = a[:, half: 2 * half].reshape((-1,) + a.shape[2:])
    batches = np.repeat(np.arange(a.shape[0]), half)
    return first, second, batches


def w2_bias(reference, approximation, var_names=None, partitions=None, ci: float = 0.95, model=None) -> pd.DataFrame:
    """How far ``approximation`` is from ``reference`` in W2^2: hedged upper (V) and lower (L)
    estimates with ``ci`` intervals (seed 002, Sec. 4).

    Each source (InferenceData / DataTree, or an array of draws (draws,), (draws, d) or
    (chains, draws, d)) is split per chain into halves: first halves are the paired samples,
    second halves the independent ones. Draws of one chain are correlated, so standard errors
    use batch means over chains when there are several. Both sources are trimmed to the same
    number of draws.

    Partitions are compared with the Mirkin distance, one variable at a time. For results,
    ``partitions`` (names), ``model`` and the draws decide which variables are partitions as in
    :func:`w2_convergence`; for arrays, ``partitions`` is True (label vectors), False
    (numbers) or None (integer vectors in canonical label order are partitions; other integer
    vectors are refused).

    Returns a DataFrame with rows ``V`` and ``L`` and columns ``value``, ``se``, ``lower``,
    ``upper``, plus which measure was the centring one and the variance-reduction factor in
    ``.attrs``.
    """
    owner = "w2_bias"
    ci = real("ci", ci, low=0.0, high=1.0, low_open=True, high_open=True, owner=owner)
    var_names = _names(var_names, "var_names", owner)
    a, part_a = _source_draws(reference, var_names, partitions, model, owner, "reference")
    b, part_b = _source_draws(approximation, var_names, partitions, model, owner, "approximation")
    if part_a != part_b:
        raise ValueError(f"{owner}: the reference draws are {'' if part_a else 'not '}partitions but the "
                         f"approximation's are {'' if part_b else 'not '}; pass partitions= to say which")
    x, x2, bx = _halves(a)
    y, y2, _ = _halves(b)
    n = min(len(x), len(y))
    if n < 4:
        raise ValueError(f"need at least 4 draws in each half, got {n}")
    if x.shape[1:] != y.shape[1:]:
        raise ValueError(f"reference and approximation draws differ in shape: {x.shape[1:]} vs {y.shape[1:]}")
    cost = mirkin_cost_matrix if part_a else squared_euclidean
    batches = bx[:n] if len(np.unique(bx[:n])) >= 2 else None
    out = hedged(x[:n], x2[:n], y[:n], y2[:n], cost=cost, ci=ci, batches=batches)
    rows = {key: out[key] for key in ("V", "L")}
    frame = pd.DataFrame({k: [e.value, e.se, e.lower, e.upper] for k, e in rows.items()},
                         index=["value", "se", "lower", "upper"]).T
    frame.attrs.update(centring=out["centring"], variance_reduction=out["variance_reduction"], draws=int(n))
    return frame
