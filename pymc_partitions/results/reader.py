"""The one reader of results: every module of the results side reads a result through here.

It gives the groups of a result on both lines (PyMC 5's ``InferenceData``, PyMC 6's ``DataTree``:
:func:`group_names`, :func:`posterior_dataset`, :func:`made_group`; :func:`add_groups` and
:func:`new_result` to write one; the containers themselves are a PyMC 5/6 difference, kept in
:mod:`pymc_partitions.pymc.compat` because the model side builds results too), the draws of a
variable as an array, which variables are partitions, and the partition of a result as int64
label arrays with where they came from (:func:`partition_draws`; :func:`read_label_draws` takes a
result or an array of labels and returns validated
:class:`~pymc_partitions.summaries.LabelDraws`, what the summaries, plots and predictive use). The label-invariant view is
:mod:`pymc_partitions.results.invariants`, built on these.

The partition variables are those named by the caller; else the ``pmp.Partition`` variables
of ``model=``; else those the result itself records (:data:`PARTITIONS_ATTR`, written when PyMC
converts the trace of a model with a ``pmp.Partition``: it survives ``az.to_netcdf`` /
``az.from_netcdf`` and ``pmp.save`` / ``pmp.load``); else those of the model in context; else, from
the draws themselves, every integer variable with one dimension besides (chain, draw) whose every
draw is a canonical label vector (first-appearance order: ``labels[0] == 0`` and each label at most
one more than the largest before it), which is how this package's step methods store partitions,
with a label 2 or more somewhere. An integer vector variable that is not canonical, or holds only
0/1 values (a Bernoulli indicator vector starting with 0 is canonical too), cannot be told apart
from a vector of integers and is refused (the error says what to pass); integer scalars are numbers.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pymc as pm
import xarray as xr

from ..pymc.compat import RESULT_IS_DATATREE, add_groups, group_names, is_datatree, is_inferencedata, made_group
from ..pymc.compat import new_result, not_a_result_hint, posterior_dataset
from ..pymc.compat import _check_result as check_result
from ..pymc.distributions import is_partition, known_partitions
from ..pymc.guards import PARTITIONS_ATTR, SLOTS_ATTR
from ..summaries.draws import LabelDraws, label_draws

__all__ = ["RESULT_IS_DATATREE", "is_datatree", "is_inferencedata", "not_a_result_hint", "check_result", "group_names",
           "posterior_dataset", "made_group", "add_groups", "new_result", "PARTITIONS_ATTR", "SOURCES", "REMEDY",
           "recorded_partitions", "recorded_slots", "SLOTS_ATTR", "is_canonical", "is_result", "DrawSource", "partition_draws", "read_label_draws"]

#: How the partition variables were decided (recorded as the group attr ``partition_source``).
SOURCES = ("partitions argument", "model argument", "recorded in the result", "model in context", "canonical labels")
REMEDY = ("Pass model= (its pmp.Partition variables are the partitions), or partitions=[...] naming them "
          "(partitions=[] for none).")


def recorded_partitions(posterior: xr.Dataset, owner: str = "pymc_partitions") -> list[str] | None:
    """The partition variables ``posterior`` records (:data:`PARTITIONS_ATTR`) that it holds; None
    when it records none (a result from a model without partitions, or from elsewhere)."""
    value = posterior.attrs.get(PARTITIONS_ATTR)
    if value is None:
        return None
    try:
        names = json.loads(value) if isinstance(value, str) else None
    except ValueError:
        names = None
    if not isinstance(names, list) or not all(isinstance(v, str) for v in names):
        raise ValueError(f"{owner}: the posterior's attribute {PARTITIONS_ATTR!r} should be a JSON list of the "
                         f"partition variables' names, got {value!r}. {REMEDY}")
    return [v for v in names if v in posterior.data_vars]


def recorded_slots(posterior: xr.Dataset, owner: str = "pymc_partitions") -> dict[str, list[str]] | None:
    """{partition: its slot variables in ``posterior``} as the posterior records them
    (:data:`SLOTS_ATTR`, written at sampling time for partitions with non-conjugate likelihoods);
    None when it records none."""
    value = posterior.attrs.get(SLOTS_ATTR)
    if value is None:
        return None
    try:
        slots = json.loads(value) if isinstance(value, str) else None
    except ValueError:
        slots = None
    if not isinstance(slots, dict) or not all(isinstance(k, str) and isinstance(v, list)
                                              and all(isinstance(x, str) for x in v) for k, v in slots.items()):
        raise ValueError(f"{owner}: the posterior's attribute {SLOTS_ATTR!r} should be a JSON object "
                         f"{{partition: [slot variable names]}}, got {value!r}. Pass model= (the model the result "
                         "was sampled from)")
    return {p: [v for v in names if v in posterior.data_vars] for p, names in slots.items()}


def _names(value, what: str, owner: str) -> list[str] | None:
    """None, one name, or a sequence of distinct names, as a list."""
    if value is None:
        return None
    if isinstance(value, str):
        return [value]
    if not isinstance(value, (Sequence, np.ndarray)) or isinstance(value, bytes):
        raise TypeError(f"{owner}: {what} must be a name or a list of names, got {value!r}")
    names = list(value)
    bad = [v for v in names if not isinstance(v, str)]
    if bad:
        raise TypeError(f"{owner}: {what} must hold variable names (strings), got {bad!r}")
    twice = sorted({v for v in names if names.count(v) > 1})
    if twice:
        raise ValueError(f"{owner}: {what} names {twice} more than once")
    return names


def _posterior(result, owner: str) -> xr.Dataset:
    try:
        posterior = posterior_dataset(result)
    except KeyError:
        raise ValueError(f"{owner}: the result has no posterior group") from None
    for dim in ("chain", "draw"):
        if dim not in posterior.dims:
            raise ValueError(f"{owner}: the posterior has no {dim!r} dimension (dims {list(posterior.dims)})")
    return posterior


def _variable_draws(posterior: xr.Dataset, name: str, owner: str, need: str = "real numbers or labels",
                    hint: str = "") -> np.ndarray:
    """Draws of one variable as (chain, draw, ...) with chain and draw first; numbers only.
    ``need`` and ``hint`` complete the error messages (what the caller needs, how to avoid it)."""
    da = posterior[name]
    if "chain" not in da.dims or "draw" not in da.dims:
        raise ValueError(f"{owner}: variable {name!r} has dims {da.dims}, not one value per (chain, draw)")
    if da.dims[:2] != ("chain", "draw"):
        da = da.transpose("chain", "draw", ...)
    values = np.asarray(da.values)
    if not (np.issubdtype(values.dtype, np.number) or values.dtype == np.bool_) or np.iscomplexobj(values):
        raise TypeError(f"{owner}: variable {name!r} has dtype {values.dtype}; {need}")
    if np.issubdtype(values.dtype, np.floating):
        bad = ~np.isfinite(values.reshape(values.shape[0], values.shape[1], -1)).all(axis=2)
        if bad.any():
            raise ValueError(f"{owner}: variable {name!r} has NaN or infinite values in {int(bad.sum())} draws; "
                             f"finite draws are needed{hint}")
    return values


def is_canonical(labels) -> bool:
    """True if every row (last axis) of ``labels`` is a canonical label vector: non-negative
    integers in first-appearance order (``row[0] == 0``, ``row[i] <= 1 + max(row[:i])``)."""
    labels = np.asarray(labels)
    if labels.ndim < 1 or labels.shape[-1] == 0 or not np.issubdtype(labels.dtype, np.integer):
        return False
    if labels.size == 0:
        return True
    running = np.maximum.accumulate(labels, axis=-1)
    return bool(np.all(labels[..., 0] == 0) and labels.min() >= 0
                and np.all(labels[..., 1:] <= running[..., :-1] + 1))


def _labels(values: np.ndarray, name: str, owner: str) -> np.ndarray:
    """Draws of a partition variable as int64 (chain, draw, n), integer-valued or refused."""
    if values.ndim != 3:
        raise ValueError(f"{owner}: partition variable {name!r} must have one dimension besides (chain, draw), "
                         f"got shape {values.shape}")
    if np.issubdtype(values.dtype, np.floating) and not np.all(np.mod(values, 1) == 0):
        raise ValueError(f"{owner}: partition variable {name!r} holds non-integer values")
    return values.astype(np.int64)


def _auto_partition(values: np.ndarray, what: str, owner: str, remedy: str) -> bool:
    """The draws-only rule: integer with one non-sample dimension, canonical and not only 0/1
    -> partition. A 0/1 vector starting with 0 is canonical too (a Bernoulli indicator, or a
    partition that never has more than two blocks): refused as ambiguous, like non-canonical ones."""
    if not np.issubdtype(values.dtype, np.integer) or values.ndim != 3:
        return False
    if is_canonical(values) and values.max() > 1:
        return True
    kind = "only 0/1 values (an indicator vector or a two-block partition)" if is_canonical(values) else \
        "integer vectors that are not canonical partition labels"
    raise ValueError(f"{owner}: {what} holds {kind}, so it cannot be told whether it is a partition or a vector "
                     f"of integers. {remedy}")


def _partition_names(values, names, partitions, model, owner, remedy=REMEDY, posterior=None):
    """(partition names among ``names``, how that was decided); ``values``: draws by name (the
    draws-only rule looks at the names in ``values`` only); ``remedy``: what the error for an
    ambiguous variable tells the user to pass; ``posterior``: the group, whose record
    (:func:`recorded_partitions`) comes after the arguments and before the model in context."""
    if partitions is not None:
        unknown = [p for p in partitions if p not in names]
        if unknown:
            raise ValueError(f"{owner}: partition variables {unknown} are not among the variables {names}")
        return list(partitions), SOURCES[0]
    if model is not None and not isinstance(model, pm.Model):
        raise TypeError(f"{owner}: model must be a pymc.Model, got {type(model).__name__}")
    source = SOURCES[1]
    if model is None:
        recorded = None if posterior is None else recorded_partitions(posterior, owner)
        if recorded is not None:
            return [v for v in recorded if v in names], SOURCES[2]
        try:
            model = pm.modelcontext(None)
            source = SOURCES[3]
        except TypeError:
            model = None
    if model is not None:
        return [rv.name for rv in model.free_RVs if is_partition(rv) and rv.name in names], source
    parts = [v for v in names if v in values and _auto_partition(values[v], f"variable {v!r}", owner, remedy)]
    return parts, SOURCES[4]


# --- the partition of a result, as label arrays (what the summaries, plots and predictive read) ---

_VAR_NAME_REMEDY = "Pass var_name='...' naming the partition, or model= (its pmp.Partition variable is the partition)."


@dataclass(frozen=True)
class DrawSource:
    """Where draws came from: the partition variable and how it was found, coordinates."""

    var_name: str | None
    how: str
    items: np.ndarray
    chains: np.ndarray
    draws: np.ndarray


def is_result(obj) -> bool:
    return is_datatree(obj) or is_inferencedata(obj)


def partition_draws(result, var_name, model, owner) -> tuple[np.ndarray, DrawSource]:
    """(chain, draw, n) int64 labels of the result's partition variable, and their source."""
    posterior = _posterior(result, owner)
    names = list(posterior.data_vars)
    if var_name is not None:
        if not isinstance(var_name, str):
            raise TypeError(f"{owner}: var_name must be a variable name (str), got {var_name!r}")
        if var_name not in names:
            raise ValueError(f"{owner}: var_name {var_name!r} is not in the posterior (it has {names})")
    candidates = {v: _variable_draws(posterior, v, owner) for v in names
                  if posterior[v].dtype.kind in "iub" and set(posterior[v].dims) >= {"chain", "draw"}
                  and posterior[v].ndim == 3}
    parts, how = _partition_names(candidates, names, None if var_name is None else [var_name], model, owner,
                                  remedy=_VAR_NAME_REMEDY, posterior=posterior)
    if not parts and var_name is None and (known := _known_partitions(result, model, names)):
        raise ValueError(f"{owner}: the posterior has no draws of a partition: {', '.join(map(repr, known))} is "
                         "known (observed=labels), so it is data, not a draw, and its labels are the answer "
                         "(they are in the observed_data group)")
    if len(parts) != 1:
        found = f"several partition variables {parts}" if parts else "no partition variable"
        raise ValueError(f"{owner}: found {found} in the posterior (variables {names}). {_VAR_NAME_REMEDY}")
    name = parts[0]
    how = "var_name argument" if var_name is not None else how
    values = _labels(_variable_draws(posterior, name, owner, "labels must be integers"), name, owner)
    da = posterior[name].transpose("chain", "draw", ...)
    item_dim = da.dims[2]
    items = np.asarray(da[item_dim].values) if item_dim in da.coords else np.arange(values.shape[2])
    chains, draws = np.asarray(posterior["chain"].values), np.asarray(posterior["draw"].values)
    return values, DrawSource(name, how, items, chains, draws)


def _known_partitions(result, model, names) -> list[str]:
    """The known (observed) partitions of ``model`` (else the model in context), else those whose
    labels are in the result's observed_data beside their invariants in the posterior."""
    if model is None:
        try:
            model = pm.modelcontext(None)
        except TypeError:
            model = None
    if isinstance(model, pm.Model):
        if any(is_partition(rv) for rv in model.free_RVs):
            return []
        return known_partitions(model)
    if "observed_data" not in group_names(result):
        return []
    return [v for v in posterior_dataset(result, "observed_data").data_vars if f"{v}_n_clusters" in names]


def _array_source(a: np.ndarray) -> DrawSource:
    lead = a.shape[:-1] if a.ndim == 3 else (1, a.shape[0])
    return DrawSource(None, "array", np.arange(a.shape[-1]), np.arange(lead[0]), np.arange(lead[1]))


def read_label_draws(result_or_draws, var_name, model, weights, owner, merge=False) -> tuple[LabelDraws, DrawSource]:
    """Validated draws (and their source) from a result or an array of labels."""
    if is_result(result_or_draws):
        values, source = partition_draws(result_or_draws, var_name, model, owner)
        return label_draws(values, weights, merge=merge, owner=owner), source
    if not_a_result_hint(result_or_draws):
        raise TypeError(f"{owner}: expected a pm.sample result or an array of label draws, got "
                        f"{type(result_or_draws).__name__}{not_a_result_hint(result_or_draws)}")
    if var_name is not None or model is not None:
        raise ValueError(f"{owner}: var_name and model apply to pm.sample results, not to arrays of draws")
    draws = label_draws(result_or_draws, weights, merge=merge, owner=owner)
    return draws, _array_source(np.asarray(result_or_draws))
