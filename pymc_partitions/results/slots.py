"""Label-invariant views of the slot parameters of a non-conjugate partition model.

In a model such as ``mu = pm.Normal("mu", 0, 3, shape=n)``, ``pm.Normal("y", mu=mu[z], ...)``
(:mod:`pymc_partitions.pymc.nonconjugate`) the slot ``mu[j]`` is the parameter of whichever
cluster has label j in that draw: its draws switch labels with the partition's, so its mean, R-hat
and trace say nothing. Two functions of (partition, parameters of its clusters) do not depend on
the labels:

* per item, the parameter of its cluster: ``mu_of_item[chain, draw, i] = mu[z[i]]``;
* per draw, the parameters of the occupied clusters ranked by cluster size, largest first (ties
  broken by the cluster's first item), padded with NaN beyond the draw's number of clusters:
  ``mu_by_size[chain, draw, r]``, with the sizes in ``<z>_cluster_size`` (0 where padded).

:func:`slot_views` adds them to a result as the ``slot_views`` group; :func:`~pymc_partitions.summary`
(through :func:`~pymc_partitions.label_invariant`) shows ``mu_by_size`` at the ranks occupied in
every draw instead of the raw slots.
"""

from __future__ import annotations

import datetime

import numpy as np
import pymc as pm
import xarray as xr

from .._checks import boolean
from ..pymc.distributions import is_partition
from ..pymc.nonconjugate import slot_variables
from ..summaries.draws import canonical_rows
from .reader import (_labels, _posterior, _variable_draws, add_groups, group_names, is_result, not_a_result_hint,
                     recorded_slots)

__all__ = ["slot_views", "partition_slots", "views_of_slots", "SLOT_VIEWS_GROUP"]

#: Name of the group :func:`slot_views` adds.
SLOT_VIEWS_GROUP = "slot_views"


def partition_slots(posterior: xr.Dataset, parts, model=None, owner: str = "pymc_partitions") -> dict[str, list[str]]:
    """{partition: its slot variables in ``posterior``} for the partitions ``parts`` that have any:
    those of ``model`` (its non-conjugate likelihoods' indexed variables), else those the result
    records (written at sampling time), else those of the model in context; {} when none is known."""
    if model is None:
        recorded = recorded_slots(posterior, owner)
        if recorded is not None:
            return {p: recorded[p] for p in parts if recorded.get(p)}
        try:
            model = pm.modelcontext(None)
        except TypeError:
            return {}
    if not isinstance(model, pm.Model):
        raise TypeError(f"{owner}: model must be a pymc.Model, got {type(model).__name__}")
    out = {}
    for p in parts:
        if p in model.named_vars and is_partition(model[p]):
            names = [v.name for v in slot_variables(model, model[p]) if v.name in posterior.data_vars]
            if names:
                out[p] = names
    return out


def _rank_by_size(labels: np.ndarray):
    """For (R, n) labels: (the label of the r-th largest cluster (R, K_max), its size (R, K_max),
    number of clusters (R,)); clusters ranked by size, largest first, ties by first item; ranks at
    or beyond a draw's number of clusters hold label 0 and size 0."""
    rows, n = labels.shape
    canon, k = canonical_rows(labels)
    canon = canon.astype(np.int64)
    k_max = int(k.max())
    counts = np.bincount((canon + k_max * np.arange(rows)[:, None]).ravel(), minlength=rows * k_max)
    counts = counts.reshape(rows, k_max)
    running = np.maximum.accumulate(canon, axis=1)
    opens = np.ones_like(canon, dtype=bool)
    opens[:, 1:] = canon[:, 1:] > running[:, :-1]
    r_idx, i_idx = np.nonzero(opens)
    original = np.zeros((rows, k_max), np.int64)  # the given label of canonical block b
    original[r_idx, canon[r_idx, i_idx]] = labels[r_idx, i_idx]
    key = (n - counts) * k_max + np.arange(k_max)  # size descending, then first appearance
    key[counts == 0] = (n + 1) * k_max
    order = np.argsort(key, axis=1, kind="stable")
    return np.take_along_axis(original, order, 1), np.take_along_axis(counts, order, 1), k


def views_of_slots(labels: np.ndarray, values: np.ndarray):
    """(of item (R, n, ...), by size (R, K_max, ...) NaN-padded, sizes (R, K_max), number of
    clusters (R,)) from labels (R, n) and slot values (R, S, ...) (labels index the slot axis)."""
    trailing = values.shape[2:]
    index = labels.reshape(labels.shape + (1,) * len(trailing))
    of_item = np.take_along_axis(values, index, axis=1)
    ranked, sizes, k = _rank_by_size(labels)
    by_size = np.take_along_axis(values, ranked.reshape(ranked.shape + (1,) * len(trailing)), axis=1)
    by_size = by_size.astype(np.result_type(by_size.dtype, np.float32), copy=False)
    by_size[sizes == 0] = np.nan
    return of_item, by_size, sizes, k


def _read(posterior, part, slot, owner):
    """(labels (C, D, n) int64, slot values (C, D, S, ...)) checked: labels index the slot axis."""
    labels = _labels(_variable_draws(posterior, part, owner, "labels must be integers"), part, owner)
    values = _variable_draws(posterior, slot, owner, "slot values must be real numbers")
    if values.ndim < 3:
        raise ValueError(f"{owner}: the slot variable {slot!r} must have a slot axis besides (chain, draw), "
                         f"got shape {values.shape}")
    if labels.size and (labels.min() < 0 or labels.max() >= values.shape[2]):
        raise ValueError(f"{owner}: the labels of {part!r} must index the {values.shape[2]} slots of {slot!r} "
                         f"(integers in [0, {values.shape[2]})), got labels in [{labels.min()}, {labels.max()}]")
    return labels, values


def slot_data(posterior: xr.Dataset, part: str, slots, owner: str, of_item: bool = True) -> dict[str, xr.DataArray]:
    """The views of :func:`views_of_slots` as DataArrays: ``<slot>_of_item`` (chain, draw, item dim,
    ...; left out if not ``of_item``), ``<slot>_by_size`` (chain, draw, ``<part>_size_rank``, ...)
    and ``<part>_cluster_size``."""
    labels = None
    out = {}
    da_part = posterior[part].transpose("chain", "draw", ...)
    item_dim = da_part.dims[2]
    rank_dim = f"{part}_size_rank"
    coords = {"chain": posterior["chain"].values, "draw": posterior["draw"].values}
    for slot in slots:
        labels, values = _read(posterior, part, slot, owner)
        c, d, n = labels.shape
        flat = values.reshape((c * d,) + values.shape[2:])
        per_item, by_size, sizes, _ = views_of_slots(labels.reshape(c * d, n), flat)
        trailing = posterior[slot].transpose("chain", "draw", ...).dims[3:]
        item_coords = {item_dim: da_part[item_dim].values} if item_dim in da_part.coords else {}
        extra = {t: posterior[t].values for t in trailing if t in posterior.coords}
        if of_item:
            out[f"{slot}_of_item"] = xr.DataArray(per_item.reshape((c, d, n) + values.shape[3:]),
                                                  dims=("chain", "draw", item_dim) + trailing,
                                                  coords={**coords, **item_coords, **extra})
        rank_coords = {rank_dim: np.arange(sizes.shape[1])}
        out[f"{slot}_by_size"] = xr.DataArray(by_size.reshape((c, d, sizes.shape[1]) + values.shape[3:]),
                                              dims=("chain", "draw", rank_dim) + trailing,
                                              coords={**coords, **rank_coords, **extra})
    if labels is not None:
        out[f"{part}_cluster_size"] = xr.DataArray(sizes.reshape(c, d, -1), dims=("chain", "draw", rank_dim),
                                                   coords={**coords, rank_dim: np.arange(sizes.shape[1])})
    return out


def slot_views(result, model=None, *, var_name=None, overwrite: bool = False):
    """Add a ``slot_views`` group to the result of a non-conjugate partition model: label-invariant
    views of its slot parameters (see the module docstring).

    For each partition ``z`` with slot variables (e.g. ``mu``): ``mu_of_item`` (chain, draw, item
    dimension, trailing dimensions of ``mu``), the parameter of each item's cluster;
    ``mu_by_size`` (chain, draw, ``z_size_rank``, ...), the occupied clusters' parameters
    ranked by size, largest first (ties by first item), NaN beyond the draw's number of clusters;
    ``z_cluster_size`` (chain, draw, ``z_size_rank``), their sizes (0 where padded).

    Parameters
    ----------
    result : arviz.InferenceData or xarray.DataTree
        A ``pm.sample`` result holding the partition and its slot variables.
    model : pymc.Model, optional
        The model it was sampled from (its slot variables); default: those the result records at
        sampling time, else the model in context.
    var_name : str, optional
        Only this partition (default: every partition with slot variables).
    overwrite : bool, default False
        Replace an existing ``slot_views`` group.

    Returns
    -------
    A copy of ``result`` (same type) with the group; it survives ``pmp.save`` / ``pmp.load``.

    Examples
    --------
    >>> import numpy as np, pymc as pm, pymc_partitions as pmp
    >>> y = np.r_[np.zeros(4) - 3.0, np.zeros(6) + 3.0]
    >>> with pm.Model() as model:
    ...     z = pmp.Partition("z", pmp.CRP(0.5), n=10)
    ...     mu = pm.Normal("mu", 0.0, 3.0, shape=10)
    ...     _ = pm.Normal("y", mu=mu[z], sigma=0.5, observed=y)
    ...     idata = pm.sample(draws=50, tune=50, chains=1, progressbar=False,
    ...                       compute_convergence_checks=False, random_seed=1)
    >>> views = pmp.posterior_dataset(pmp.slot_views(idata), "slot_views")
    >>> bool(abs(float(views["mu_by_size"][0, :, 0].mean()) - 3.0) < 0.5)
    True
    """
    owner = "slot_views"
    if not is_result(result):
        raise TypeError(f"{owner}: expected a pm.sample result (InferenceData or DataTree), got "
                        f"{type(result).__name__}{not_a_result_hint(result)}")
    overwrite = boolean("overwrite", overwrite, owner=owner)
    if SLOT_VIEWS_GROUP in group_names(result) and not overwrite:
        raise ValueError(f"{owner}: the result already has a {SLOT_VIEWS_GROUP!r} group; pass overwrite=True")
    if var_name is not None and not isinstance(var_name, str):
        raise TypeError(f"{owner}: var_name must be a partition variable's name (str), got {var_name!r}")
    posterior = _posterior(result, owner)
    if var_name is not None and var_name not in posterior.data_vars:
        raise ValueError(f"{owner}: var_name {var_name!r} is not in the posterior (it has {list(posterior.data_vars)})")
    candidates = [var_name] if var_name is not None else list(posterior.data_vars)
    slots = partition_slots(posterior, candidates, model, owner)
    if not slots:
        which = f"the partition {var_name!r}" if var_name is not None else "no partition of the result"
        raise ValueError(f"{owner}: {which} has no slot variables in the posterior (non-conjugate likelihoods "
                         "indexing parameters by the partition, e.g. mu[z]); pass model= the model the result was "
                         "sampled from")
    data = {}
    for part, names in slots.items():
        data.update(slot_data(posterior, part, names, owner))
    from .._version import __version__  # noqa: PLC0415

    attrs = {"description": "label-invariant views of slot parameters: <slot>_of_item, the parameter of each item's "
                            "cluster; <slot>_by_size, the clusters' parameters ranked by size (largest first, ties by "
                            "first item), NaN beyond each draw's clusters",
             "partitions": list(slots), "slots": [v for names in slots.values() for v in names],
             "pymc_partitions_version": __version__, "created_at": datetime.datetime.now().isoformat()}
    group = xr.Dataset(data, attrs=attrs)
    return add_groups(result, {SLOT_VIEWS_GROUP: group}, overwrite=overwrite)
