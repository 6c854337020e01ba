"""Label-invariant views of ``pm.sample`` results: what convergence is judged on.

Cluster labels are arbitrary (label switching), so R-hat, ESS and trace plots of the label
variable say nothing. What they can judge are label-invariant quantities of each draw: the number
of clusters, the share of the items in the largest cluster, and the log joint density (the
sampler statistic ``log_joint`` of :class:`~pymc_partitions.CollapsedGibbs`).

* :func:`label_invariant` turns a result into one whose posterior holds those quantities first,
  then every other variable but the labels: any ArviZ function works on it.
* :func:`summary` and :func:`plot_trace` are ``az.summary`` / ``az.plot_trace`` on it.
* :func:`for_convergence_checks` is what ``pm.sample``'s convergence checks see (installed by
  :func:`~pymc_partitions.pymc.guards.guard_convergence_checks`): the labels replaced by their
  label-invariant quantities, constant ones left out, and a non-conjugate partition's slot
  variables by the parameter of each draw's largest cluster.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from ..pymc.distributions import INVARIANTS, invariant_names, is_partition
from .slots import partition_slots, slot_data
from .reader import (PARTITIONS_ATTR, _labels, _names, _partition_names, _posterior, _variable_draws, add_groups,
                     group_names, is_datatree, is_inferencedata, new_result, not_a_result_hint, posterior_dataset)

__all__ = ["label_invariant", "summary", "plot_trace", "for_convergence_checks", "LOG_JOINT"]

#: Name of the sampler statistic holding the log joint density (CollapsedGibbs).
LOG_JOINT = "log_joint"
_CHUNK = 10_000_000  # label entries per block when counting cluster sizes


def cluster_counts(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(number of clusters, size of the largest cluster) of every label vector (last axis) of an
    integer array with non-negative labels; plain numpy, in blocks of rows."""
    labels = np.asarray(labels)
    lead, n = labels.shape[:-1], labels.shape[-1]
    rows = labels.reshape(-1, n)
    k = np.empty(len(rows), np.int64)
    top = np.empty(len(rows), np.int64)
    step = max(1, _CHUNK // max(n, 1))
    for start in range(0, len(rows), step):
        block = rows[start:start + step]
        width = int(block.max()) + 1 if block.size else 1
        flat = (block + width * np.arange(len(block))[:, None]).ravel()
        counts = np.bincount(flat, minlength=width * len(block)).reshape(len(block), width)
        k[start:start + step] = np.count_nonzero(counts, axis=1)
        top[start:start + step] = counts.max(axis=1)
    return k.reshape(lead), top.reshape(lead)


def _check_result(result, owner):
    if not (is_datatree(result) or is_inferencedata(result)):
        raise TypeError(f"{owner}: expected a pm.sample result (arviz.InferenceData or xarray.DataTree), got "
                        f"{type(result).__name__}{not_a_result_hint(result)}")


def _log_joint(result, posterior) -> xr.DataArray | None:
    """The ``log_joint`` sampler statistic as (chain, draw), if the result has exactly that."""
    if "sample_stats" not in group_names(result):
        return None
    stats = posterior_dataset(result, "sample_stats")
    if LOG_JOINT not in stats.data_vars:
        return None
    da = stats[LOG_JOINT]
    if set(da.dims) != {"chain", "draw"} or da.sizes != {"chain": posterior.sizes["chain"],
                                                          "draw": posterior.sizes["draw"]}:
        return None
    if not np.issubdtype(da.dtype, np.floating):
        return None
    return da.transpose("chain", "draw").assign_coords(chain=posterior["chain"], draw=posterior["draw"])


def _invariants(posterior, name, owner) -> dict[str, xr.DataArray]:
    """{"<name>_n_clusters": ..., "<name>_largest_share": ...} as (chain, draw) DataArrays, from the
    Deterministics when the model added them, else from the labels."""
    names = invariant_names(name)
    if all(v in posterior.data_vars and set(posterior[v].dims) == {"chain", "draw"} for v in names):
        return {v: posterior[v].transpose("chain", "draw") for v in names}
    labels = _labels(_variable_draws(posterior, name, owner, "labels must be integers"), name, owner)
    if labels.size and labels.min() < 0:
        raise ValueError(f"{owner}: partition variable {name!r} holds negative labels")
    k, top = cluster_counts(labels)
    coords = {"chain": posterior["chain"], "draw": posterior["draw"]}
    return {names[0]: xr.DataArray(k, dims=("chain", "draw"), coords=coords),
            names[1]: xr.DataArray(top / labels.shape[-1], dims=("chain", "draw"), coords=coords)}


def _warn_left_out(model, names, owner):
    """Warn when the model (the argument, else the one in context) has a sampled partition of which the
    posterior holds neither the labels nor the label-invariant quantities (``pm.sample(var_names=...)``
    left them out): the summary would otherwise lack them without a word."""
    import warnings  # noqa: PLC0415

    import pymc as pm  # noqa: PLC0415

    if model is None:
        try:
            model = pm.modelcontext(None)
        except TypeError:
            return
    if not isinstance(model, pm.Model):
        return
    missing = [rv.name for rv in model.free_RVs if is_partition(rv) and rv.name not in names
               and not any(v in names for v in invariant_names(rv.name))]
    if missing:
        warnings.warn(f"{owner}: the model's partition {', '.join(map(repr, missing))} is not in the posterior, nor its "
                      "number of clusters or largest share (did pm.sample(var_names=...) leave them out?): the "
                      "result says nothing of it", UserWarning, stacklevel=3)


def label_invariant(result, *, var_names=None, partitions=None, model=None):
    """A result whose posterior holds label-invariant quantities first, then the other variables,
    without the labels: what ``az.summary``, ``az.plot_trace``, ``az.ess``, ``az.rhat``,
    ``az.plot_rank`` ... can judge convergence on.

    For each partition variable ``z``: ``z_n_clusters`` (number of clusters) and
    ``z_largest_share`` (share of the items in the largest cluster), the Deterministics that
    ``pmp.Partition`` adds (computed from the labels when the model did not add them); with one
    partition, ``log_joint`` (its log joint density, the sampler statistic of
    :class:`~pymc_partitions.CollapsedGibbs`) when the result has it. Then every other posterior
    variable (hyperparameters, your Deterministics), except the slot variables of a non-conjugate
    partition (``mu`` in ``pm.Normal("y", mu=mu[z], ...)``), whose labels switch with the
    partition's: each is replaced by ``<slot>_by_size``, the occupied clusters' parameters ranked
    by size (largest first, :func:`~pymc_partitions.slot_views`), at the ranks every draw has (the
    largest cluster's at least). The slot variables are those of ``model``, else those the result
    records, else those of the model in context. A partition of that model whose labels and
    quantities the posterior does not hold (``pm.sample(var_names=...)`` left them out) is warned of.

    Parameters
    ----------
    result : arviz.InferenceData or xarray.DataTree
        A ``pm.sample`` result.
    var_names : str or list of str, optional
        Keep only these variables of the returned posterior (names as above).
    partitions : str or list of str, optional
        Which posterior variables are partitions. By default the ``pmp.Partition`` variables of
        ``model`` (or of the model in context); with no model, the integer vector variables whose
        draws are canonical label vectors (see :mod:`pymc_partitions.results.reader`).
    model : pymc.Model, optional

    Returns
    -------
    Same type as ``result``: a new result with a ``posterior`` group only (the input is not
    changed).

    Examples
    --------
    >>> import numpy as np, pymc as pm, arviz as az, pymc_partitions as pmp
    >>> y = np.r_[np.zeros(5), np.ones(5) * 6.0]
    >>> with pm.Model():
    ...     z = pmp.Partition("z", pmp.CRP(1.0), n=10)
    ...     _ = pmp.NormalNormal("y", partition=z, sigma0=5.0, sigma=1.0, observed=y)
    ...     idata = pm.sample(draws=100, tune=20, chains=2, progressbar=False, random_seed=1)
    >>> list(pmp.posterior_dataset(pmp.label_invariant(idata)).data_vars)
    ['z_n_clusters', 'z_largest_share', 'log_joint']
    """
    owner = "label_invariant"
    _check_result(result, owner)
    var_names = _names(var_names, "var_names", owner)
    partitions = _names(partitions, "partitions", owner)
    posterior = _posterior(result, owner)
    names = list(posterior.data_vars)
    candidates = {v: _variable_draws(posterior, v, owner) for v in names
                  if posterior[v].dtype.kind in "iu" and posterior[v].ndim == 3
                  and {"chain", "draw"} <= set(posterior[v].dims)}
    parts, _ = _partition_names(candidates, names, partitions, model, owner, posterior=posterior)
    if partitions is None:
        _warn_left_out(model, names, owner)
    data: dict[str, xr.DataArray] = {}
    for p in parts:
        data.update(_invariants(posterior, p, owner))
    log_joint = _log_joint(result, posterior) if len(parts) == 1 else None
    if log_joint is not None and LOG_JOINT not in names:
        data[LOG_JOINT] = log_joint
    derived = {v for p in parts for v in invariant_names(p)}
    views = {}  # a non-conjugate partition's slots: their parameters ranked by cluster size instead
    for p, slots in partition_slots(posterior, parts, model, owner).items():
        ranked = slot_data(posterior, p, slots, owner, of_item=False)
        k_min = int((ranked[f"{p}_cluster_size"] > 0).sum(f"{p}_size_rank").min())
        for s in slots:
            views[s] = ranked[f"{s}_by_size"].isel({f"{p}_size_rank": slice(0, k_min)})
    for v in names:
        if v in views:
            data[f"{v}_by_size"] = views[v]
        elif v not in parts and v not in derived:
            data[v] = posterior[v]
    if var_names is not None:
        unknown = [v for v in var_names if v not in data]
        if unknown:
            raise ValueError(f"{owner}: var_names {unknown} are not among the label-invariant variables {list(data)}")
        data = {v: data[v] for v in var_names}
    if not data:
        raise ValueError(f"{owner}: nothing is left: the posterior holds only the labels {parts} and the result has "
                         "no log_joint sampler statistic")
    attrs = {**posterior.attrs, "label_invariant_of": list(parts) or "none"}
    if PARTITIONS_ATTR in attrs:  # the labels are gone
        attrs[PARTITIONS_ATTR] = "[]"
    ds = xr.Dataset(data, attrs=attrs)
    return new_result({"posterior": ds})


def summary(result, *, var_names=None, partitions=None, model=None, **kwargs):
    """``az.summary`` of :func:`label_invariant`: one row per label-invariant quantity and per
    other variable, none per item; ``kwargs`` go to ``az.summary`` (e.g. ``kind="diagnostics"``,
    ``round_to=``). Works on ArviZ 0.x and 1.x (whose columns and default intervals differ).

    A quantity that is the same in every draw of every chain (e.g. the largest share when every
    draw is one block) is reported as constant, quietly: sd 0, its value as mean and interval,
    R-hat NaN (undefined for a constant), without ArviZ's "invalid value encountered" warnings; the
    table's ``attrs["constant"]`` names those rows' variables. The other variables are summarised
    as ArviZ does, warnings included. On ArviZ 1.x the displayed interval bounds get the precision of the sd
    (:func:`readable_summary`), not two significant digits each (which showed the log
    joint's bounds as one number).

    Examples
    --------
    >>> import numpy as np, pymc as pm, pymc_partitions as pmp
    >>> y = np.r_[np.zeros(5), np.ones(5) * 6.0]
    >>> with pm.Model():
    ...     z = pmp.Partition("z", pmp.CRP(1.0), n=10)
    ...     _ = pmp.NormalNormal("y", partition=z, sigma0=5.0, sigma=1.0, observed=y)
    ...     idata = pm.sample(draws=100, tune=20, chains=2, progressbar=False, random_seed=1)
    >>> list(pmp.summary(idata).index)
    ['z_n_clusters', 'z_largest_share', 'log_joint']
    """
    import warnings  # noqa: PLC0415

    import arviz as az  # noqa: PLC0415

    invariant = label_invariant(result, var_names=var_names, partitions=partitions, model=model)
    posterior = posterior_dataset(invariant)
    constant = [v for v, da in posterior.data_vars.items() if da.size and bool((da == da.values.flat[0]).all())]
    if not constant:
        return readable_summary(az.summary(invariant, **kwargs))
    others = [v for v in posterior.data_vars if v not in constant]
    tables = [az.summary(new_result({"posterior": posterior[others]}), **kwargs)] if others else []
    with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
        warnings.filterwarnings("ignore", message="invalid value encountered", category=RuntimeWarning)
        warnings.filterwarnings("ignore", message="divide by zero encountered", category=RuntimeWarning)
        tables.append(az.summary(new_result({"posterior": posterior[constant]}), **kwargs))
    table = concat_summaries(tables, list(posterior.data_vars))
    table = readable_summary(table, constant=_rows(table, constant))
    if hasattr(table, "attrs"):
        table.attrs["constant"] = constant
    return table


def _rows(table, names):
    """The table's row labels of the variables ``names`` (``x``, or ``x[0]``, ``x[a, b]``...)."""
    index = [str(i) for i in getattr(table, "index", [])]
    return [i for i in index if i.split("[", 1)[0] in names]


def plot_trace(result, *, var_names=None, partitions=None, model=None, **kwargs):
    """``az.plot_trace`` of :func:`label_invariant`: traces of the label-invariant quantities and
    the other variables, not one per item; ``kwargs`` go to ``az.plot_trace``. Returns what it
    returns (matplotlib axes on ArviZ 0.x, a ``PlotCollection`` on ArviZ 1.x)."""
    import arviz as az  # noqa: PLC0415

    return az.plot_trace(label_invariant(result, var_names=var_names, partitions=partitions, model=model), **kwargs)


def largest_cluster_slots(posterior, part, model, owner) -> dict[str, xr.DataArray]:
    """{slot variable: ``<slot>_by_size`` at rank 0, the parameter of each draw's largest cluster
    (chain, draw, trailing dims of the slot)} for the slot variables of the partition ``part`` (a
    non-conjugate likelihood's parameters indexed by it; {} if none): the label-invariant stand-in of
    a slot variable in convergence checks (every draw has a largest cluster, so never NaN)."""
    found = partition_slots(posterior, [part], model, owner).get(part, [])
    if not found:
        return {}
    ranked = slot_data(posterior, part, found, owner, of_item=False)
    return {s: ranked[f"{s}_by_size"].isel({f"{part}_size_rank": 0}, drop=True) for s in found}


def for_convergence_checks(idata, model):
    """``idata`` with each partition's labels replaced, in the posterior, by its label-invariant
    quantities (dimension ``<name>_invariant``), for PyMC's convergence checks, and its slot variables
    (if it has non-conjugate likelihoods: their labels switch with it) by the parameter of each draw's
    largest cluster (:func:`largest_cluster_slots`; under the slot's own name, which is what PyMC
    checks); quantities that are
    constant over every draw of every chain are left out (nothing to judge, and R-hat of a
    constant is NaN), and so is the variable when none is left. ``idata`` itself when the model
    has no partition in the posterior; ``None`` when no free variable would be left to check (PyMC's
    checks would fail on an empty list of variables)."""
    if model is None or not (is_datatree(idata) or is_inferencedata(idata)) or "posterior" not in group_names(idata):
        return idata
    posterior = posterior_dataset(idata)
    parts = [rv.name for rv in model.free_RVs if is_partition(rv) and rv.name in posterior.data_vars]
    if not parts:
        return idata
    new = posterior.copy()
    log_joint = _log_joint(idata, posterior) if len(parts) == 1 else None
    for p in parts:
        quantities = {name[len(p) + 1:]: da for name, da in _invariants(posterior, p, "pm.sample").items()}
        if log_joint is not None:
            quantities[LOG_JOINT] = log_joint
        keep = {q: da for q, da in quantities.items() if not bool((da == da.values.flat[0]).all())}
        new = new.drop_vars(p)
        for slot, largest in largest_cluster_slots(posterior, p, model, "pm.sample").items():
            new = new.drop_vars(slot)  # raw slots switch labels with the partition: the largest cluster's instead
            if not bool((largest == largest.values.flat[0]).all()):
                new[slot] = largest
        if keep:
            dim = f"{p}_invariant"
            stacked = xr.concat([da.astype(np.float64) for da in keep.values()], dim=dim)
            new[p] = stacked.assign_coords({dim: list(keep)}).transpose("chain", "draw", dim)
    if not any(rv.name in new.data_vars for rv in model.free_RVs):  # PyMC checks free variables only
        return None
    return add_groups(idata, {"posterior": new}, overwrite=True)



def concat_summaries(tables, order):
    """One ``az.summary`` table from summaries of disjoint sets of variables (same keywords), rows
    (or, for ArviZ 0.x's ``fmt="long"``, columns; for ``fmt="xarray"``, variables) in the order of
    the variable names ``order``. ArviZ 1.x's display strings (``_fmt_map``, difference 14 in
    :mod:`pymc_partitions.pymc.compat`) are merged, which ``pandas.concat`` alone would drop."""
    import pandas as pd  # noqa: PLC0415

    if len(tables) == 1:
        return tables[0]
    if all(isinstance(t, xr.Dataset) for t in tables):
        return xr.merge(tables)[[v for v in order if any(v in t for t in tables)]]
    rank = {name: i for i, name in enumerate(order)}
    wide = any(c in tables[0].columns for c in ("mean", "median", "sd", "r_hat", "ess_bulk", "ess_tail",
                                                 "mcse_mean"))
    table = pd.concat(tables, axis=0 if wide else 1)
    labels = list(table.index if wide else table.columns)
    keys = sorted(range(len(labels)), key=lambda i: (rank.get(str(labels[i]).split("[", 1)[0], len(rank)), i))
    table = table.iloc[keys] if wide else table.iloc[:, keys]
    maps = [getattr(t, "_fmt_map", None) for t in tables]
    if wide and all(isinstance(m, dict) for m in maps):
        merged = {}
        for m in maps:
            for col, cells in m.items():
                merged.setdefault(col, {}).update(cells)
        table = type(tables[0])(table)
        table._fmt_map = merged
    return table


def readable_summary(table, constant=()):
    """``table`` (an ``az.summary``) with the displayed interval bounds at the precision of each
    row's sd (two significant digits of it) and the rows ``constant`` showing their value
    (difference 14 of :mod:`pymc_partitions.pymc.compat`). Only ArviZ 1.x's display strings change
    (its ``_fmt_map``, when present); the numbers and any other table are left as they are."""
    fmt = getattr(table, "_fmt_map", None)
    if not isinstance(fmt, dict):
        return table
    columns = [str(c) for c in table.columns]
    spread = next((c for c in ("sd", "mad") if c in columns), None)
    bounds = [c for c in columns if c.endswith(("_lb", "_ub"))]
    values = [c for c in ("mean", "median", *bounds) if c in columns]
    spreads = [c for c in columns if c in ("sd", "mad") or c.startswith("mcse_")]
    for row in table.index:
        if row in constant:  # its value, and no spread (not the sum's rounding error, e.g. 3.6e-15)
            for col in values:
                value = float(table.loc[row, col])
                fmt.setdefault(col, {})[row] = f"{value:.6g}" if np.isfinite(value) else str(value)
            for col in spreads:
                if np.isfinite(float(table.loc[row, col])):
                    fmt.setdefault(col, {})[row] = "0"
            continue
        sd = float(table.loc[row, spread]) if spread else np.nan
        if not (np.isfinite(sd) and sd > 0):
            continue
        decimals = max(0, 1 - int(np.floor(np.log10(sd))))
        for col in bounds:
            value = float(table.loc[row, col])
            if np.isfinite(value):
                text = f"{value:.{decimals}f}"
                fmt.setdefault(col, {})[row] = text.rstrip("0").rstrip(".") if "." in text else text
    return table


assert INVARIANTS == ("n_clusters", "largest_share")  # the names above
