"""Centered W2 diagnostics on ``pm.sample`` results: convergence traces and approximation bias.

Reads draws out of InferenceData / DataTree, stacks continuous variables into one vector per
draw, uses the Mirkin cost for partitions, and writes the estimates back as a group. The
estimators are in :mod:`pymc_partitions.diagnostics`.
"""

from __future__ import annotations

import datetime
import warnings

import numpy as np
import pandas as pd
import pymc as pm
import xarray as xr

from ..diagnostics.convergence import ESTIMATES, w2_traces
from ..diagnostics.partition_cost import mirkin_cost_matrix
from ..diagnostics.wasserstein import hedged, squared_euclidean
from .compat import add_groups, made_group, posterior_dataset
from .distributions import is_partition

__all__ = ["w2_convergence", "plot_w2_convergence", "w2_bias"]

CONTINUOUS = "continuous"  # name of the trace of the stacked continuous variables


def _partition_names(var_names, partitions, model):
    if partitions is not None:
        return [p for p in partitions]
    if model is None:
        try:
            model = pm.modelcontext(None)
        except TypeError:
            return []
    return [rv.name for rv in model.free_RVs if is_partition(rv) and rv.name in var_names]


def _targets(posterior: xr.Dataset, var_names, partitions, model):
    """{trace name: (draws (chain, draw, ...), cost)}: one per partition, one for the rest stacked."""
    names = list(posterior.data_vars) if var_names is None else list(var_names)
    missing = [v for v in names if v not in posterior.data_vars]
    if missing:
        raise ValueError(f"variables {missing} are not in the posterior")
    parts = _partition_names(names, partitions, model)
    unknown = [p for p in parts if p not in names]
    if unknown:
        raise ValueError(f"partition variables {unknown} are not among the variables {names}")
    targets = {}
    for p in parts:
        targets[p] = (np.asarray(posterior[p].values, np.int64), mirkin_cost_matrix)
    continuous = [v for v in names if v not in parts]
    if continuous:
        blocks = []
        for v in continuous:
            a = np.asarray(posterior[v].values, float)
            blocks.append(a.reshape(a.shape[0], a.shape[1], -1))
        targets[CONTINUOUS] = (np.concatenate(blocks, axis=2), squared_euclidean)
    if not targets:
        raise ValueError("no variables to diagnose")
    return targets, continuous, parts


def w2_convergence(idata, var_names=None, method: str = "time_averaged", window=None, thin: int = 1,
                   partitions=None, model=None, ci: float = 0.95, overwrite: bool = False):
    """Add a group ``w2_convergence``: for every saved iteration t, upper (U_t) and lower (L_t)
    estimates of W2^2(law of the chains at t, posterior) with ``ci`` intervals.

    Needs R >= 2 independent chains started from an overdispersed law (64-256 recommended; a
    warning below 32), run long enough that their last draws are stationary. Cluster labels do
    not matter: partitions are compared with the Mirkin distance.

    Parameters
    ----------
    idata : InferenceData or DataTree
        A ``pm.sample`` result (keep ``tune=0`` or ``discard_tuned_samples=False`` to see the
        early iterations).
    var_names : list of str, optional
        Posterior variables (default all). Continuous ones are stacked into one vector per draw
        (trace ``continuous``); each partition variable gets its own trace, under its name.
    method : {"time_averaged", "split"}
        See :func:`pymc_partitions.diagnostics.convergence.w2_traces`.
    window : (first, last), optional
        Stationary window, in *thinned* iteration indices, for ``"time_averaged"``.
    thin : int
        Use every ``thin``-th draw.
    partitions : list of str, optional
        Which variables are partitions; by default the ``pmp.Partition`` variables of ``model``
        (or of the model in context), none if there is no model.
    ci : float
        Level of the intervals.

    Returns
    -------
    Same type as ``idata``, with the group added: per trace ``<name>_U``, ``_U_lower``,
    ``_U_upper``, ``_L``, ``_L_lower``, ``_L_upper`` (and ``<name>_w`` for time_averaged), dim
    ``draw`` holding the original draw indices.
    """
    if int(thin) != thin or thin < 1:
        raise ValueError(f"thin must be a positive integer, got {thin}")
    posterior = posterior_dataset(idata)
    targets, continuous, parts = _targets(posterior, var_names, partitions, model)
    chains = posterior.sizes["chain"]
    if chains < 2:
        raise ValueError(f"w2_convergence needs several independent chains, got {chains}")
    if chains < 32:
        warnings.warn(f"only {chains} chains: W2 estimates are noisy below ~32 (64-256 recommended)", stacklevel=2)
    draw_index = posterior["draw"].values[::thin]
    data, attrs = {}, {}
    for name, (draws, cost) in targets.items():
        out = w2_traces(draws[:, ::thin], cost=cost, method=method, window=window, ci=ci)
        for est in ESTIMATES:
            if not est.endswith("_se"):
                data[f"{name}_{est}"] = ("draw", out[est])
        if "w" in out:
            data[f"{name}_w"] = ("draw", out["w"])
            attrs[f"{name}_window"] = [int(draw_index[i]) for i in out["window"]]
    from .. import __version__  # noqa: PLC0415

    attrs.update(method=method, thin=int(thin), ci=float(ci), chains=int(chains), continuous_vars=list(continuous),
                 partition_vars=list(parts), pymc_partitions_version=__version__,
                 created_at=datetime.datetime.now().isoformat())
    group = xr.Dataset(data, coords={"draw": draw_index}, attrs=attrs)
    return add_groups(idata, {"w2_convergence": group}, overwrite=overwrite)


def plot_w2_convergence(idata, names=None, ax=None):
    """Plot the ``w2_convergence`` traces: U and L per iteration on a log scale, with their
    intervals as bands (non-positive values are not drawn on the log axis). Returns the axes."""
    import matplotlib.pyplot as plt  # noqa: PLC0415

    group = made_group(idata, "w2_convergence", "pmp.w2_convergence")
    traces = sorted({v.rsplit("_U", 1)[0] for v in group.data_vars if v.endswith("_U")})
    names = traces if names is None else list(names)
    if ax is None:
        _, ax = plt.subplots(1, len(names), figsize=(4.5 * len(names), 3.4), squeeze=False)
        axes = list(ax[0])
    else:
        axes = list(np.atleast_1d(ax))
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


def _halves(source, var_names, partitions):
    """(first halves, second halves, batches) of the draws of ``source``: each chain split in two."""
    if isinstance(source, np.ndarray) or isinstance(source, (list, tuple)):
        a = np.asarray(source)
        if a.ndim == 1:
            a = a[:, None]
        a = a[None] if a.ndim == 2 else a  # (chain, draw, ...)
    else:
        posterior = posterior_dataset(source)
        names = list(posterior.data_vars) if var_names is None else list(var_names)
        missing = [v for v in names if v not in posterior.data_vars]
        if missing:
            raise ValueError(f"variables {missing} are not in the draws")
        if partitions:
            if len(names) != 1 or names[0] not in partitions:
                raise ValueError("w2_bias compares one partition variable at a time (var_names=[name])")
            a = np.asarray(posterior[names[0]].values, np.int64)
        else:
            blocks = [np.asarray(posterior[v].values, float) for v in names]
            a = np.concatenate([b.reshape(b.shape[0], b.shape[1], -1) for b in blocks], axis=2)
    half = a.shape[1] // 2
    if half < 1:
        raise ValueError("need at least 2 draws per chain")
    first = a[:, :half].reshape((-1,) + a.shape[2:])
    second = a[:, half: 2 * half].reshape((-1,) + a.shape[2:])
    batches = np.repeat(np.arange(a.shape[0]), half)
    return first, second, batches


def w2_bias(reference, approximation, var_names=None, partitions=None, ci: float = 0.95) -> pd.DataFrame:
    """How far ``approximation`` is from ``reference`` in W2^2: hedged upper (V) and lower (L)
    estimates with ``ci`` intervals (seed 002, Sec. 4).

    Each source (InferenceData / DataTree, or an array of draws (draws, d) or (chains, draws, d))
    is split per chain into halves: first halves are the paired samples, second halves the
    independent ones. Draws of one chain are correlated, so standard errors use batch means over
    chains when there are several. Both sources are trimmed to the same number of draws.
    Returns a DataFrame with rows ``V`` and ``L`` and columns ``value``, ``se``, ``lower``,
    ``upper``, plus which measure was the centring one and the variance-reduction factor in
    ``.attrs``.
    """
    x, x2, bx = _halves(reference, var_names, partitions)
    y, y2, by = _halves(approximation, var_names, partitions)
    n = min(len(x), len(y))
    if n < 4:
        raise ValueError(f"need at least 4 draws in each half, got {n}")
    if x.shape[1:] != y.shape[1:]:
        raise ValueError(f"reference and approximation draws differ in shape: {x.shape[1:]} vs {y.shape[1:]}")
    cost = mirkin_cost_matrix if partitions else squared_euclidean
    batches = bx[:n] if len(np.unique(bx[:n])) >= 2 else None
    out = hedged(x[:n], x2[:n], y[:n], y2[:n], cost=cost, ci=ci, batches=batches)
    rows = {key: out[key] for key in ("V", "L")}
    frame = pd.DataFrame({k: [e.value, e.se, e.lower, e.upper] for k, e in rows.items()},
                         index=["value", "se", "lower", "upper"]).T
    frame.attrs.update(centring=out["centring"], variance_reduction=out["variance_reduction"], draws=int(n))
    return frame
