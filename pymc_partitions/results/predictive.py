"""Posterior predictive quantities of a clustering model, from a ``pm.sample`` result.

* :func:`predictive_density`: the posterior predictive density of new points, Rao-Blackwellised
  (per posterior draw, the mixture of collapsed predictives over the draw's clusters plus the
  new-cluster term; averaged over draws), with a pointwise credible band; for a non-conjugate
  model (slot parameters), the likelihood under each cluster's parameters and a Monte Carlo
  new-cluster term (:mod:`pymc_partitions.results.slot_predictive`);
* :func:`join_probabilities`: the probability that a new point joins each cluster of a given
  clustering (or opens a new one);
* :func:`cluster_parameters`: draws of the cluster parameters (means, covariances, Bernoulli
  probabilities) from their conditional posterior given each draw's partition and the data;
* :func:`sample_posterior_predictive`: replicated data, each draw's cluster parameters drawn from
  that conditional posterior (what ``pm.sample_posterior_predictive`` also does once this package
  is imported; see :func:`~pymc_partitions.pymc.guards.guard_forward_sampling`).

Per draw the hyperparameters are the draw's values: the prior's alpha and discount and the
likelihoods' parameters are evaluated from the posterior draws of the random variables they
depend on (untransformed values, as the posterior stores them), with ``pm.Data`` at their values
at sampling time (the result's ``constant_data`` group). The data are those the posterior was
fitted to: the result's ``observed_data`` group (else the model's current data). The formulas are
in :mod:`pymc_partitions.families.mixture` and :mod:`pymc_partitions.families.predictive`.
"""

from __future__ import annotations

import datetime

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import xarray as xr
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.graph.replace import clone_replace
from pytensor.tensor.random.op import RandomVariable
from pytensor.tensor.random.type import RandomType

from .._checks import boolean, integer, real
from ..families.kernels import BETA_BERNOULLI
from ..families.predictive import replicate
from ..families.mixture import join_log_probabilities, log_predictive_density
from ..summaries import labels_vector
from ..summaries.draws import _weights, canonical_rows, scaled_weights
from ..pymc.compat import ancestors
from ..pymc.distributions import check_data, constant_value, is_partition, known_partitions, likelihood_names
from ..pymc.terms import ObservedData, PartitionTerms
from .reader import (DrawSource, add_groups, group_names, is_result, new_result, not_a_result_hint, partition_draws,
                     posterior_dataset)
from .slot_predictive import DEFAULT_BASE_DRAWS, SlotPredictive, has_slots
from .summaries import CLUSTERING_GROUP, point_estimate

__all__ = ["predictive_density", "join_probabilities", "cluster_parameters", "sample_posterior_predictive"]

#: Per-draw densities above this many bytes are refused (pass draws= or fewer points).
DEFAULT_MAX_BYTES = 1 << 30
NEW_CLUSTER = -1  # the cluster coordinate of "a new cluster"


def _version():
    from .._version import __version__  # noqa: PLC0415

    return __version__


def _model(model, owner):
    if model is None:
        try:
            return pm.modelcontext(None)
        except TypeError:
            raise TypeError(f"{owner}: pass model= (the pm.Model the result was sampled from) or call it inside "
                            "`with model:`") from None
    if not isinstance(model, pm.Model):
        raise TypeError(f"{owner}: model must be a pymc.Model, got {type(model).__name__}")
    return model


def _partition_name(model, var_name, owner):
    """The name of the partition to read: ``var_name``, else the model's only sampled partition,
    else its only known one (``observed=labels``: the same labels in every draw)."""
    if var_name is not None:
        if not isinstance(var_name, str):
            raise TypeError(f"{owner}: var_name must be a variable name (str), got {var_name!r}")
        if var_name not in model.named_vars or not is_partition(model[var_name]):
            raise ValueError(f"{owner}: var_name {var_name!r} is not a pmp.Partition variable of the model")
        return var_name
    parts = [rv.name for rv in model.free_RVs if is_partition(rv)] or known_partitions(model)
    if not parts:
        raise ValueError(f"{owner}: the model has no pmp.Partition variable")
    if len(parts) > 1:
        raise ValueError(f"{owner}: the model has several partition variables {parts}; pass var_name='...' naming "
                         "the partition")
    return parts[0]


class _Fitted:
    """A partition of a model, its collapsed likelihoods, the data the posterior was fitted to and
    the hyperparameters' values per posterior draw."""

    def __init__(self, model, var_name, result, owner):
        self.owner = owner
        self.name = _partition_name(model, var_name, owner)
        self.known = model[self.name] in model.observed_RVs
        if has_slots(model, model[self.name]):
            instead = ("pm.sample_posterior_predictive (replicated data given the known labels)" if self.known else
                       "pm.sample_posterior_predictive (replicated data), pmp.slot_views (each item's cluster "
                       "parameters), pmp.predictive_density")
            raise ValueError(f"{owner}: the {'known ' if self.known else ''}partition {self.name!r} has non-conjugate "
                             f"likelihoods (slot parameters indexed by it, e.g. mu[{self.name}]); {owner} needs "
                             f"collapsed ones ({likelihood_names()}). For this model: {instead}")
        terms = PartitionTerms(model, self.name, read_data=False)  # the data: from the result (below)
        if not terms.likelihoods:
            raise ValueError(f"{owner}: the partition {self.name!r} has no collapsed likelihood ({likelihood_names()}), "
                             "so there is nothing to predict")
        self.terms = terms
        self.n, self.k, self.prior_code = terms.n, terms.k, terms.prior_code
        self.likelihoods = terms.likelihoods
        self.names = [rv.name for rv in self.likelihoods]
        self.ops = [rv.owner.op for rv in self.likelihoods]
        self.dims = [op.data_dim(rv) for op, rv in zip(self.ops, self.likelihoods)]
        observed = posterior_dataset(result, "observed_data") if result is not None and \
            "observed_data" in group_names(result) else None
        constant = posterior_dataset(result, "constant_data") if result is not None and \
            "constant_data" in group_names(result) else None
        self.data = [self._data(model, rv, observed) for rv in self.likelihoods]
        self.dims = [x.shape[1] for x in self.data]
        self._compile(model, constant)
        self._values = None

    def _data(self, model, rv, observed):
        """The data the posterior was fitted to: the result's ``observed_data`` (whatever
        ``pm.set_data`` has put in the model since); without that group, the model's current data.
        Data fixed in the model (not ``pm.Data``) must equal the result's: else the result was not
        sampled from this model, whose hyperparameters would be used with another model's draws."""
        binary = rv.owner.op.family_code == BETA_BERNOULLI
        dim = rv.owner.op.data_dim(rv)
        if observed is None:
            try:
                return ObservedData(model, rv, self.n).current()[0]
            except ValueError as err:
                raise ValueError(f"{self.owner}: the result has no observed_data group, so the model's current data "
                                 f"are used, and {err}") from None
        if rv.name not in observed:
            raise ValueError(f"{self.owner}: the result's observed_data group has {list(observed.data_vars)} but not "
                             f"the model's likelihood {rv.name!r}: was the result sampled from this model? Pass "
                             "model= the model it was sampled from")
        try:
            fitted = check_data(rv.name, observed[rv.name].values, self.n, binary=binary, dim=dim)
        except ValueError as err:
            raise ValueError(f"{self.owner}: the result's observed_data: {err}") from None
        expr = model.rvs_to_values[rv]
        if not any(isinstance(v, SharedVariable) for v in ancestors([expr])):  # fixed data, not pm.Data
            mine = np.asarray(constant_value(expr), dtype=np.float64)
            if mine.size != fitted.size or not np.array_equal(mine.reshape(fitted.shape), fitted):
                raise ValueError(f"{self.owner}: the model's observed data of {rv.name!r} differ from the result's "
                                 "observed_data group: the result was not sampled from this model (whose "
                                 "hyperparameters would be used with another model's draws). Pass model= the model "
                                 "the result was sampled from")
        return fitted

    def _compile(self, model, constant):
        """A function of the free random variables the hyperparameters depend on; pm.Data replaced
        by their values at sampling time when the result records them."""
        hyper = self.terms.hyper_variables
        free = set(model.free_RVs)
        graph = list(ancestors(hyper, blockers=list(free)))
        self.inputs = [v for v in model.free_RVs if v in set(graph)]
        other = [v for v in graph if v.owner is not None and isinstance(v.owner.op, RandomVariable) and v not in free]
        if other:
            raise ValueError(f"{self.owner}: the hyperparameters of {self.name!r} depend on {[v.name for v in other]}, "
                             "which are not free random variables of the model")
        replace = {rv: rv.type(name=rv.name) for rv in self.inputs}
        for var in graph:
            if isinstance(var, SharedVariable) and not isinstance(var.type, RandomType) and constant is not None \
                    and var.name in constant:
                replace[var] = pt.constant(np.asarray(constant[var.name].values, dtype=var.dtype))
        outs = clone_replace(hyper, replace=replace) if replace else hyper
        self._fn = pytensor.function([replace[rv] for rv in self.inputs], outs, on_unused_input="ignore")
        self._fixed = self.at_values([]) if not self.inputs else None

    def bind(self, posterior, flat_index):
        """Read the draws of the hyperparameters' random variables for the draws ``flat_index``
        (positions among the flattened (chain, draw) draws)."""
        values = []
        for rv in self.inputs:
            if rv.name not in posterior:
                raise ValueError(f"{self.owner}: the posterior has no draws of {rv.name!r}, on which the "
                                 f"hyperparameters of {self.name!r} depend")
            da = posterior[rv.name].transpose("chain", "draw", ...)
            values.append(np.asarray(da.values).reshape((-1,) + da.shape[2:])[flat_index])
        self._values = values

    def at_values(self, values):
        """(prior parameters [alpha, discount, k], families) at the given random-variable values."""
        out = [np.asarray(v, dtype=np.float64) for v in self._fn(*values)]
        alpha, discount, per_likelihood = self.terms.split_hyper(out)
        params = np.array([float(alpha), float(discount), self.k], np.float64)
        try:
            self.terms.check_prior_params(params)
            families = [op.family(dim, *h) for op, dim, h in zip(self.ops, self.dims, per_likelihood)]
        except ValueError as err:
            raise ValueError(f"{self.owner}: {err}") from None
        return params, families

    def at(self, j):
        """(prior parameters, families) of the j-th bound draw."""
        if self._fixed is not None:
            return self._fixed
        return self.at_values([v[j] for v in self._values])


def _select(shape, draws, owner):
    """Flat indices of the draws to use: every draw, or ``draws`` evenly spaced draws per chain."""
    chains, per_chain = shape
    if draws is None:
        keep = np.arange(per_chain)
    else:
        draws = integer("draws", draws, low=1, owner=owner)
        keep = np.unique(np.linspace(0, per_chain - 1, min(draws, per_chain)).round().astype(np.int64))
    return (np.arange(chains)[:, None] * per_chain + keep[None, :]).ravel(), keep


def _read_result(result, model, var_name, owner, draws=None):
    """(fitted, posterior, labels (S, n) canonical of the kept draws, flat indices, kept draw positions, source);
    a known partition's labels are those of every draw."""
    if not is_result(result):
        raise TypeError(f"{owner}: expected the result of pm.sample (arviz.InferenceData or xarray.DataTree), "
                        f"got {type(result).__name__}{not_a_result_hint(result)}")
    model = _model(model, owner)
    fitted = _Fitted(model, var_name, result, owner)
    if fitted.known:
        values, source = _known_draws(result, model, fitted.name, owner)
    else:
        values, source = partition_draws(result, fitted.name, model, owner)
    if values.shape[2] != fitted.n:
        raise ValueError(f"{owner}: the posterior's {fitted.name!r} has {values.shape[2]} items but the model's "
                         f"partition has n={fitted.n}")
    index, keep = _select(values.shape[:2], draws, owner)
    labels, _ = canonical_rows(values.reshape(-1, values.shape[2])[index])
    posterior = posterior_dataset(result)
    fitted.bind(posterior, index)
    return fitted, labels.astype(np.int64), index, keep, source


def _known_draws(result, model, name, owner):
    """(chain, draw, n) labels of the known partition ``name`` in every posterior draw, and their
    source: the result's ``observed_data``, else the model's labels."""
    posterior = posterior_dataset(result)
    observed = posterior_dataset(result, "observed_data") if "observed_data" in group_names(result) else {}
    if name in observed:
        labels = np.asarray(observed[name].values)
        items = np.asarray(observed[name][observed[name].dims[0]].values)
    else:
        labels = constant_value(model.rvs_to_values[model[name]])
        if labels is None:
            raise ValueError(f"{owner}: the result has no observed_data for the known partition {name!r} and its labels "
                             "in the model are not constant (pm.Data): pass the whole result of pm.sample")
        labels = np.asarray(labels)
        items = np.arange(labels.shape[-1])
    labels = labels.astype(np.int64)
    chains, draws = np.asarray(posterior["chain"].values), np.asarray(posterior["draw"].values)
    values = np.broadcast_to(labels, (chains.size, draws.size, labels.size))
    return values, DrawSource(name, "known partition (observed)", items, chains, draws)


def _given_points(x, fitted, owner):
    """{likelihood name: points} from ``x``: a dict naming likelihoods of ``fitted`` (not empty), or the
    points of its only likelihood."""
    if isinstance(x, dict):
        unknown = [k for k in x if k not in fitted.names]
        if unknown:
            raise ValueError(f"{owner}: x names {unknown}, which are not likelihoods of {fitted.name!r} "
                             f"({fitted.names})")
        if not x:
            raise ValueError(f"{owner}: x is an empty dict; give points for at least one of {fitted.names}")
        given = dict(x)
    else:
        if len(fitted.names) > 1:
            raise ValueError(f"{owner}: the partition {fitted.name!r} has several likelihoods {fitted.names}: pass x as "
                             "a dict {likelihood name: points} (the joint density of a new item's observations; "
                             "likelihoods left out are marginalised)")
        given = {fitted.names[0]: x}
    return given


def _points(x, fitted, owner):
    """(points per likelihood, None for those left out; number of points; names given)."""
    given = _given_points(x, fitted, owner)
    out, count = [], None
    for name, dim, op, rv in zip(fitted.names, fitted.dims, fitted.ops, fitted.likelihoods):
        if name not in given:
            out.append(None)
            continue
        dim = op.point_dim(rv, dim)  # a regression's points carry their covariates: rows [x, y]
        pts = _point_array(given[name], name, dim, op.family_code == BETA_BERNOULLI, owner, op.point_hint)
        if count is not None and pts.shape[0] != count:
            raise ValueError(f"{owner}: x gives {count} points for one likelihood and {pts.shape[0]} for {name!r}")
        count = pts.shape[0]
        out.append(pts)
    return out, count, [n for n in fitted.names if n in given]


def _point_array(value, name, dim, binary, owner, hint=""):
    if isinstance(value, (str, bytes)) or value is None:
        raise TypeError(f"{owner}: points for {name!r} must be an array of numbers, got {value!r:.40}")
    arr = np.asarray(value)
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == np.bool_) \
            or np.iscomplexobj(arr):
        raise TypeError(f"{owner}: points for {name!r} must be real numbers, got dtype {arr.dtype}")
    if arr.ndim == 1 and dim == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[1] != dim:
        want = "(G,) or (G, 1)" if dim == 1 else f"(G, {dim})"
        raise ValueError(f"{owner}: points for {name!r} must have shape {want} ({hint or f'the data have D={dim}'}), "
                         f"got {arr.shape}")
    if arr.shape[0] == 0:
        raise ValueError(f"{owner}: no points given for {name!r}")
    arr = arr.astype(np.float64)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{owner}: points for {name!r} hold NaN or infinite values")
    if binary and not np.all((arr == 0) | (arr == 1)):
        raise ValueError(f"{owner}: points for the BetaBernoulli likelihood {name!r} must be 0/1")
    return arr


def _draw_weights(weights, shape, index, owner):
    w = _weights(weights, shape, owner)
    if w is None:
        return np.full(index.size, 1.0 / index.size)
    w = scaled_weights(w[index], owner, "the weights of the draws used are all zero")
    return w / w.sum()


def _quantiles(values, weights, qs):
    """Weighted quantiles along axis 0 (the inverted empirical CDF; equal weights: numpy's 'inverted_cdf')."""
    order = np.argsort(values, axis=0, kind="stable")
    ordered = np.take_along_axis(values, order, axis=0)
    cum = np.cumsum(weights[order], axis=0)
    cum /= cum[-1]
    out = []
    for q in qs:
        pos = np.minimum((cum < q - 1e-12).sum(axis=0), values.shape[0] - 1)
        out.append(ordered[pos, np.arange(values.shape[1])])
    return out


def _coords(point_arrays, names, single):
    coords = {}
    for pts, name in zip(point_arrays, names):
        key = "x" if single else f"x_{name}"
        coords[key] = ("point", pts[:, 0]) if pts.shape[1] == 1 else (("point", f"{name}_dim"), pts)
    return coords


def predictive_density(result, x, model=None, *, var_name=None, level: float = 0.9, draws=None, weights=None,
                       keep_draws: bool = False, max_bytes: int = DEFAULT_MAX_BYTES, base_draws=None,
                       random_seed=None) -> xr.Dataset:
    """Posterior predictive density of a new item at the points ``x``, with a credible band.

    For each posterior draw of the partition (and of the hyperparameters), the density given the
    draw is the mixture over its clusters of the collapsed predictive densities, weighted by the
    prior's sequential weights (joining cluster b, or opening a new one: the new-cluster term
    uses the prior predictive); see :mod:`pymc_partitions.families.mixture`. ``density`` is its mean
    over the draws (Rao-Blackwellised: cluster parameters integrated out exactly), ``lower`` and
    ``upper`` its pointwise equal-tailed ``level`` quantiles over the draws. A known partition
    (``observed=labels``) has its labels in every draw (the hyperparameters still vary).

    Parameters
    ----------
    result : InferenceData or DataTree
        The result of ``pm.sample`` for ``model``.
    x : array or dict
        Points: (G,) for one-dimensional data or (G, D), for a partition with one likelihood. With
        several likelihoods, a dict ``{likelihood name: points}`` with the same G: the joint density
        of a new item's observations; likelihoods left out are marginalised (their features
        unobserved). BetaBernoulli points are 0/1 vectors.
    model : pm.Model, optional
        Default: the model in context.
    var_name : str, optional
        The partition, when the model has several.
    level : float in (0, 1)
        Of the band.
    draws : int, optional
        Use this many draws per chain, evenly spaced (default all).
    weights : array, optional
        A non-negative weight per (chain, draw) (e.g. exact posterior probabilities of the draws).
    keep_draws : bool
        Also return ``density_draws``, the density given each draw, dims ``(chain, draw, point)``
        (for Monte Carlo standard errors, or other summaries).
    max_bytes : int
        The (draws x points) densities are refused above this size.
    base_draws : int, optional
        Non-conjugate models only (slot parameters, ``mu[z]``): the number of fresh draws from the
        base measure per posterior draw that estimate the new-cluster term ∫ f(x | θ) G0(dθ)
        (default 200, :data:`~pymc_partitions.results.slot_predictive.DEFAULT_BASE_DRAWS`; the
        estimate is unbiased and its error also averages out over the posterior draws). The
        likelihood must be per item with no per-item covariates (a regression is refused).
    random_seed : int or numpy Generator, optional
        Non-conjugate models only: seeds the base-measure draws.

    Returns
    -------
    xarray.Dataset
        ``density``, ``lower``, ``upper`` along ``point``; the points as coordinate ``x`` (dims
        ``("point",)`` or ``("point", "<name>_dim")``), or ``x_<name>`` per likelihood for a dict.

    Examples
    --------
    >>> import numpy as np, pymc as pm, pymc_partitions as pmp
    >>> from pymc_partitions.pymc.compat import new_result
    >>> import xarray as xr
    >>> with pm.Model() as model:
    ...     z = pmp.Partition("z", pmp.CRP(1.0), n=4)
    ...     y = pmp.NormalNormal("y", partition=z, mu0=0.0, sigma0=3.0, sigma=1.0, observed=[-2.0, -2.1, 2.0, 2.2])
    >>> draws = xr.Dataset({"z": (("chain", "draw", "item"), [[[0, 0, 1, 1], [0, 0, 1, 2]]])})
    >>> dens = pmp.predictive_density(new_result({"posterior": draws}), [-2.0, 0.0, 2.0], model)
    >>> dens["density"].round(3).values.tolist()
    [0.153, 0.102, 0.145]
    """
    owner = "predictive_density"
    level = real("level", level, low=0.0, high=1.0, low_open=True, high_open=True, owner=owner)
    max_bytes = integer("max_bytes", max_bytes, low=1, owner=owner)
    keep_draws = boolean("keep_draws", keep_draws, owner=owner)
    if is_result(result):
        model = _model(model, owner)
        rv = model[_partition_name(model, var_name, owner)]
        if has_slots(model, rv) and rv in model.observed_RVs:
            raise ValueError(f"{owner}: the known partition {rv.name!r} has non-conjugate likelihoods (slot parameters "
                             f"indexed by it, e.g. mu[{rv.name}]): {owner} of such a model needs a sampled partition; "
                             "pm.sample_posterior_predictive gives replicated data given the known labels")
        if has_slots(model, rv):
            return _slot_density(result, x, model, rv, level, draws, weights, max_bytes, keep_draws,
                                 DEFAULT_BASE_DRAWS if base_draws is None else base_draws, random_seed, owner)
    if base_draws is not None or random_seed is not None:
        raise ValueError(f"{owner}: base_draws and random_seed apply to non-conjugate models (slot parameters indexed "
                         "by the partition); this model's cluster parameters are integrated out exactly")
    read = _read_result(result, model, var_name, owner, draws)
    return _density(read, x, level, weights, max_bytes, owner, keep_draws)


def _slot_density(result, x, model, rv, level, draws, weights, max_bytes, keep_draws, base_draws, random_seed, owner):
    """:func:`predictive_density` of a non-conjugate partition model (see
    :mod:`pymc_partitions.results.slot_predictive`)."""
    rng = _rng(random_seed, owner)
    fitted = SlotPredictive(model, rv, owner, base_draws)
    fitted.reseed(rng)
    given, count, names = _slot_points(x, fitted, owner)
    values, source = partition_draws(result, rv.name, model, owner)
    if values.shape[2] != fitted.n:
        raise ValueError(f"{owner}: the posterior's {rv.name!r} has {values.shape[2]} items but the model's "
                         f"partition has n={fitted.n}")
    index, keep = _select(values.shape[:2], draws, owner)
    if index.size * count * 8 > max_bytes:
        raise MemoryError(f"{owner}: {index.size} draws x {count} points of densities exceed max_bytes="
                          f"{max_bytes}; pass draws= (per chain) or fewer points")
    w = _draw_weights(weights, (source.chains.size, source.draws.size), index, owner)
    labels, slots, inputs = fitted.read(posterior_dataset(result))
    xs = [None if p is None else (p if dim > 1 else p[:, 0]).astype(obs.dtype)
          for p, dim, obs in zip(given, fitted.dims, fitted.likelihoods)]
    dens = np.empty((index.size, count))
    for j, s in enumerate(index):
        dens[j] = np.exp(fitted.log_density(labels[s], [v[s] for v in slots], [v[s] for v in inputs], xs))
    lower, upper = _quantiles(dens, w, [(1.0 - level) / 2.0, (1.0 + level) / 2.0])
    attrs = {"description": "posterior predictive density of a new item: the mean over posterior draws of the "
                            "prior-weighted mixture of the likelihood under each cluster's slot parameters and a new "
                            "cluster (its term by Monte Carlo from the base measure)",
             "band": f"pointwise equal-tailed {level:.0%} quantiles over the draws of the density given the draw",
             "level": level, "likelihoods": names, "partition_var": rv.name, "draws": int(index.size),
             "base_draws": fitted.base_draws, "weighted": weights is not None, "pymc_partitions_version": _version(),
             "created_at": datetime.datetime.now().isoformat()}
    out = xr.Dataset({"density": ("point", dens.T @ w), "lower": ("point", lower), "upper": ("point", upper)},
                     coords=_coords([p for p in given if p is not None], names, not isinstance(x, dict)),
                     attrs=attrs)
    if keep_draws:
        out["density_draws"] = xr.DataArray(dens.reshape(source.chains.size, keep.size, count),
                                            dims=("chain", "draw", "point"),
                                            coords={"chain": source.chains, "draw": source.draws[keep]})
    return out


def _slot_points(x, fitted, owner):
    """:func:`_points` for a non-conjugate partition (:class:`SlotPredictive` ``fitted``): (points per
    likelihood, None for those left out; number of points; names given). An integer likelihood's
    points (e.g. Poisson counts) must be whole numbers."""
    given = _given_points(x, fitted, owner)
    out, count = [], None
    for name, dim, obs in zip(fitted.names, fitted.dims, fitted.likelihoods):
        if name not in given:
            out.append(None)
            continue
        pts = _point_array(given[name], name, dim, False, owner)
        if obs.dtype.startswith(("int", "uint")) and not np.all(pts == np.round(pts)):
            raise ValueError(f"{owner}: points for {name!r} must be whole numbers (its likelihood is discrete)")
        if count is not None and pts.shape[0] != count:
            raise ValueError(f"{owner}: x gives {count} points for one likelihood and {pts.shape[0]} for {name!r}")
        count = pts.shape[0]
        out.append(pts)
    return out, count, [n for n in fitted.names if n in given]


def _density(read, x, level, weights, max_bytes, owner, keep_draws=False):
    fitted, labels, index, keep, source = read
    points, count, names = _points(x, fitted, owner)
    if labels.shape[0] * count * 8 > max_bytes:
        raise MemoryError(f"{owner}: {labels.shape[0]} draws x {count} points of densities exceed max_bytes="
                          f"{max_bytes}; pass draws= (per chain) or fewer points")
    w = _draw_weights(weights, (source.chains.size, source.draws.size), index, owner)
    dens = np.empty((labels.shape[0], count))
    for j in range(labels.shape[0]):
        params, families = fitted.at(j)
        parts = list(zip(families, fitted.data))
        dens[j] = np.exp(log_predictive_density(labels[j], fitted.prior_code, params, parts, points))
    lower, upper = _quantiles(dens, w, [(1.0 - level) / 2.0, (1.0 + level) / 2.0])
    given = [p for p in points if p is not None]
    attrs = {"description": "posterior predictive density of a new item (Rao-Blackwellised: the mean over "
                            "posterior draws of the mixture of collapsed predictive densities, new cluster included)",
             "band": f"pointwise equal-tailed {level:.0%} quantiles over the draws of the density given the draw",
             "level": level, "likelihoods": names, "partition_var": fitted.name, "draws": int(labels.shape[0]),
             "weighted": weights is not None, "pymc_partitions_version": _version(),
             "created_at": datetime.datetime.now().isoformat()}
    out = xr.Dataset({"density": ("point", dens.T @ w), "lower": ("point", lower), "upper": ("point", upper)},
                     coords=_coords(given, names, not isinstance(x, dict)), attrs=attrs)
    if keep_draws:
        out["density_draws"] = xr.DataArray(dens.reshape(source.chains.size, keep.size, count),
                                            dims=("chain", "draw", "point"),
                                            coords={"chain": source.chains, "draw": source.draws[keep]})
    return out


def _clustering(result, labels, fitted, model, var_name, owner):
    if labels is not None:
        return labels_vector(labels, fitted.n, what="labels", owner=owner), "labels argument"
    if fitted.known:
        values, _ = _known_draws(result, model, fitted.name, owner)
        return labels_vector(values[0, 0], fitted.n, what="the known partition", owner=owner), "the known partition"
    if CLUSTERING_GROUP in group_names(result):
        group = posterior_dataset(result, CLUSTERING_GROUP)
        if "estimate" in group and group.attrs.get("partition_var", fitted.name) == fitted.name:
            return labels_vector(group["estimate"].values, fitted.n, what="the clustering group's estimate",
                                 owner=owner), "the result's clustering group"
    est = point_estimate(result, var_name=fitted.name, model=model, random_seed=0)
    return est.labels, "pmp.point_estimate(result, random_seed=0)"


def join_probabilities(result_or_labels, x, model=None, *, labels=None, var_name=None, draws=None,
                       weights=None) -> xr.DataArray:
    """Probability that a new item at each point joins each cluster of a given clustering, or
    opens a new one.

    Given the clustering c of the n items: P(new item joins b | x, c, data) = w_b p(x | b's data)
    / (sum_b' w_b' p(x | b') + w_new p(x)), with the prior's sequential weights w and the
    collapsed predictives p (several likelihoods: as in :func:`predictive_density`). With a
    ``pm.sample`` result, hyperparameters that are random variables take each posterior draw's
    values and the probabilities are averaged over the draws; the clustering is ``labels``, else
    a known partition's labels (``observed=labels``: a classifier of new items into the known
    groups, or a new one), else the result's ``clustering`` group estimate
    (:func:`pmp.summarize_clustering`), else ``pmp.point_estimate(result, random_seed=0)``. With a label vector instead of a result, the
    model's hyperparameters must be fixed numbers and its current data are used.

    Returns an ``xarray.DataArray`` with dims ``("point", "cluster")``: clusters 0..K-1 of the
    clustering (canonical labels, first appearance order) and -1 for a new cluster; coordinates
    ``cluster_size`` and, for one-dimensional points, the points (``x``). Rows sum to one.

    Examples
    --------
    >>> import numpy as np, pymc as pm, pymc_partitions as pmp
    >>> with pm.Model() as model:
    ...     z = pmp.Partition("z", pmp.CRP(1.0), n=4)
    ...     y = pmp.NormalNormal("y", partition=z, mu0=0.0, sigma0=3.0, sigma=1.0, observed=[-2.0, -2.1, 2.0, 2.2])
    >>> p = pmp.join_probabilities([0, 0, 1, 1], [-2.0, 9.0], model)
    >>> p.round(3).values.tolist(), p["cluster"].values.tolist()
    ([[0.861, 0.004, 0.135], [0.0, 0.0, 1.0]], [0, 1, -1])
    """
    owner = "join_probabilities"
    if is_result(result_or_labels):
        model = _model(model, owner)
        fitted, draw_labels, index, _, source = _read_result(result_or_labels, model, var_name, owner, draws)
        clustering, how = _clustering(result_or_labels, labels, fitted, model, var_name, owner)
        w = _draw_weights(weights, (source.chains.size, source.draws.size), index, owner)
        n_draws = draw_labels.shape[0]
    else:
        if not_a_result_hint(result_or_labels):
            raise TypeError(f"{owner}: expected a pm.sample result or a clustering's labels, got "
                            f"{type(result_or_labels).__name__}{not_a_result_hint(result_or_labels)}")
        if labels is not None or draws is not None or weights is not None:
            raise ValueError(f"{owner}: labels=, draws= and weights= apply to pm.sample results; the first argument "
                             "here is already the clustering")
        fitted = _Fitted(_model(model, owner), var_name, None, owner)
        if fitted.inputs:
            raise ValueError(f"{owner}: the hyperparameters of {fitted.name!r} depend on random variables "
                             f"{[v.name for v in fitted.inputs]}: pass the pm.sample result (their posterior draws "
                             "are used) with labels=")
        clustering = labels_vector(result_or_labels, fitted.n, what="labels", owner=owner)
        how, w, n_draws = "labels argument", np.ones(1), 1
    points, count, names = _points(x, fitted, owner)
    if not fitted.inputs:  # fixed hyperparameters: every draw gives the same probabilities
        w = np.ones(1)
    k = int(clustering.max()) + 1
    probs = np.zeros((count, k + 1))
    for j in range(w.size):
        params, families = fitted.at(j)
        parts = list(zip(families, fitted.data))
        probs += w[j] * np.exp(join_log_probabilities(clustering, fitted.prior_code, params, parts, points))
    sizes = np.append(np.bincount(clustering), 0)
    coords = {"cluster": np.append(np.arange(k), NEW_CLUSTER), "cluster_size": ("cluster", sizes)}
    points_coords = _coords([p for p in points if p is not None], names, not isinstance(x, dict))
    coords.update({k: v for k, v in points_coords.items() if v[0] == "point"})  # 1-d points only: a DataArray
    attrs = {"description": "probability that a new item joins each cluster of the clustering (-1: a new cluster)",
             "clustering": how, "likelihoods": names, "partition_var": fitted.name, "draws": int(n_draws),
             "pymc_partitions_version": _version()}
    return xr.DataArray(probs, dims=("point", "cluster"), coords=coords, name="join_probability", attrs=attrs)


def _rng(random_seed, owner):
    if isinstance(random_seed, np.random.Generator):
        return random_seed
    if random_seed is not None:
        random_seed = integer("random_seed", random_seed, low=0, owner=owner)
    return np.random.default_rng(random_seed)


def cluster_parameters(result, model=None, *, var_name=None, draws=None, random_seed=None) -> xr.Dataset:
    """Draws of the cluster parameters from their conditional posterior given each posterior draw's
    partition (and hyperparameters) and the data: one draw per posterior draw.

    Per likelihood ``y``: ``y_mu`` (cluster means; NormalNormal and NormalInverseWishart),
    ``y_cov`` (covariances; NormalInverseWishart), ``y_theta`` (Bernoulli probabilities;
    BetaBernoulli), dims ``("chain", "draw", "cluster", "y_dim"[, "y_dim_other"])``. Clusters are
    each draw's canonical labels (numbered in order of first appearance among the items, so
    cluster 0 holds item 0), padded with NaN beyond the draw's number of clusters;
    ``cluster_size`` holds the sizes (0 when padded). Labels switch between draws: compare
    clusters through their items (e.g. the cluster of item i), not their numbers.

    ``draws``: this many draws per chain, evenly spaced (default all); ``random_seed``: an integer
    or a numpy Generator.

    Examples
    --------
    >>> import numpy as np, pymc as pm, pymc_partitions as pmp, xarray as xr
    >>> from pymc_partitions.pymc.compat import new_result
    >>> with pm.Model() as model:
    ...     z = pmp.Partition("z", pmp.CRP(1.0), n=4)
    ...     y = pmp.NormalNormal("y", partition=z, mu0=0.0, sigma0=3.0, sigma=0.1, observed=[-2.0, -2.0, 2.0, 2.0])
    >>> draws = xr.Dataset({"z": (("chain", "draw", "item"), [[[0, 0, 1, 1], [0, 0, 0, 0]]])})
    >>> params = pmp.cluster_parameters(new_result({"posterior": draws}), model, random_seed=0)
    >>> params["y_mu"].sizes["cluster"], params["cluster_size"].values.tolist()
    (2, [[[2, 2], [4, 0]]])
    >>> bool(abs(float(params["y_mu"][0, 0, 0, 0]) + 2.0) < 0.5), bool(np.isnan(params["y_mu"][0, 1, 1, 0]))
    (True, True)
    """
    owner = "cluster_parameters"
    rng = _rng(random_seed, owner)
    fitted, labels, index, keep, source = _read_result(result, model, var_name, owner, draws)
    k_max = int(labels.max()) + 1
    shape = (source.chains.size, keep.size)
    out = {}
    sizes = np.zeros((labels.shape[0], k_max), np.int64)
    for j in range(labels.shape[0]):
        _, families = fitted.at(j)
        k = int(labels[j].max()) + 1
        sizes[j, :k] = np.bincount(labels[j])
        for name, family, data in zip(fitted.names, families, fitted.data):
            params = family.draw(family.posterior(labels[j], k, data), rng)
            for param, value in params.items():
                key = f"{name}_{param}"
                if key not in out:
                    out[key] = (np.full((labels.shape[0], k_max) + value.shape[1:], np.nan), family.parameters[param],
                                name)
                out[key][0][j, :k] = value
    data = {"cluster_size": (("chain", "draw", "cluster"), sizes.reshape(shape + (k_max,)))}
    for key, (values, dims, name) in out.items():
        data[key] = (("chain", "draw", "cluster") + tuple(f"{name}_{d}" for d in dims),
                     values.reshape(shape + values.shape[1:]))
    attrs = {"description": "draws of the cluster parameters from their conditional posterior given each draw's "
                            "partition and the data; clusters by canonical labels, NaN beyond each draw's clusters",
             "partition_var": fitted.name, "likelihoods": fitted.names, "pymc_partitions_version": _version(),
             "created_at": datetime.datetime.now().isoformat()}
    coords = {"chain": source.chains, "draw": source.draws[keep], "cluster": np.arange(k_max)}
    return xr.Dataset(data, coords=coords, attrs=attrs)


def sample_posterior_predictive(result, model=None, *, var_name=None, var_names=None, draws=None,
                                random_seed=None, extend_inferencedata: bool = False):
    """Replicated data of the collapsed likelihoods: for each posterior draw, every cluster's
    parameters drawn from their conditional posterior given the draw's labels and the data the
    posterior was fitted to (the result's ``observed_data``), then data for every item.

    ``pm.sample_posterior_predictive`` gives the same law once ``pymc_partitions`` is imported
    (given the whole result, it too reads the data at sampling time from it; given a bare
    posterior it refuses likelihoods observed through ``pm.Data``, whose values at sampling time
    are then unknown); both work after ``pm.set_data``. ``var_names``: the likelihoods
    to replicate (default all of the partition's); ``draws``: this many draws per chain, evenly
    spaced; ``random_seed``: an integer or a numpy Generator. Returns a result of the type
    ``pm.sample`` gives (InferenceData or DataTree) with a ``posterior_predictive`` group (and the
    input's ``observed_data``), or, with ``extend_inferencedata=True``, a copy of ``result`` with
    that group added (replacing one that exists).

    Examples
    --------
    >>> import numpy as np, pymc as pm, pymc_partitions as pmp, xarray as xr
    >>> from pymc_partitions.pymc.compat import new_result, posterior_dataset
    >>> with pm.Model() as model:
    ...     z = pmp.Partition("z", pmp.CRP(1.0), n=4)
    ...     y = pmp.NormalNormal("y", partition=z, mu0=0.0, sigma0=3.0, sigma=0.1, observed=[-2.0, -2.0, 2.0, 2.0])
    >>> draws = xr.Dataset({"z": (("chain", "draw", "item"), [[[0, 0, 1, 1]] * 5])})
    >>> pp = pmp.sample_posterior_predictive(new_result({"posterior": draws}), model, random_seed=0)
    >>> rep = posterior_dataset(pp, "posterior_predictive")["y"]
    >>> rep.shape, bool(np.all(np.abs(rep.values[..., 0] - [-2, -2, 2, 2]) < 1))
    ((1, 5, 4, 1), True)
    """
    owner = "sample_posterior_predictive"
    rng = _rng(random_seed, owner)
    extend_inferencedata = boolean("extend_inferencedata", extend_inferencedata, owner=owner)
    fitted, labels, index, keep, source = _read_result(result, model, var_name, owner, draws)
    if var_names is None:
        chosen = list(fitted.names)
    else:
        chosen = [var_names] if isinstance(var_names, str) else list(var_names)
        unknown = [v for v in chosen if v not in fitted.names]
        if unknown or not chosen:
            raise ValueError(f"{owner}: var_names must name collapsed likelihoods of {fitted.name!r} "
                             f"({fitted.names}), got {var_names!r}")
    shape = (source.chains.size, keep.size)
    reps = {name: np.empty((labels.shape[0], fitted.n, dim)) for name, dim in zip(fitted.names, fitted.dims)
            if name in chosen}
    for j in range(labels.shape[0]):
        _, families = fitted.at(j)
        for name, family, data in zip(fitted.names, families, fitted.data):
            if name in reps:
                reps[name][j], _ = replicate(family, labels[j], data, rng)
    observed = posterior_dataset(result, "observed_data") if "observed_data" in group_names(result) else None
    data = {}
    for name, values in reps.items():
        dims = (f"{name}_dim_0", f"{name}_dim_1")
        if observed is not None and name in observed and observed[name].ndim == 2:
            dims = observed[name].dims
        dtype = np.int64 if np.dtype(fitted.ops[fitted.names.index(name)].dtype).kind == "i" else np.float64  # counts, categories, 0/1
        data[name] = (("chain", "draw") + tuple(dims), values.reshape(shape + values.shape[1:]).astype(dtype))
    attrs = {"description": "replicated data: cluster parameters drawn from their conditional posterior given "
                            "each draw's labels and the observed data", "partition_var": fitted.name,
             "pymc_partitions_version": _version(), "created_at": datetime.datetime.now().isoformat()}
    group = xr.Dataset(data, coords={"chain": source.chains, "draw": source.draws[keep]}, attrs=attrs)
    if extend_inferencedata:
        return add_groups(result, {"posterior_predictive": group}, overwrite=True)
    groups = {"posterior_predictive": group}
    if observed is not None and observed.data_vars:
        groups["observed_data"] = observed
    return new_result(groups)
