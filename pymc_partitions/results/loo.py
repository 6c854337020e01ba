"""Pointwise log-likelihood of collapsed likelihoods, for ``az.loo`` / ``az.waic``.

A collapsed likelihood's log density is one number per draw (the sum over blocks of the marginal
likelihood of each block's data), not a sum over items, so PyMC's generic
``pm.compute_log_likelihood`` has nothing pointwise to return (and it cannot clone a model whose
Partition has a starting value). This module gives, per posterior draw s and item i,

    l_i(s) = log p(y_i | z^s_{-i}, phi^s, y_{-i})
           = log sum_k P(z_i = k | z^s_{-i}) p(y_i | the items of block k of z^s_{-i}, phi^s),

the collapsed leave-one-out predictive of item i given the partition of the *other* items: item i's
own cluster integrated out under the prior's conditional (k runs over the blocks of z_{-i} and a
new block; P(z_i = k | z_{-i}) are the prior's sequential weights, e.g. m_k / (n - 1 + alpha) and
alpha / (n - 1 + alpha) for the CRP; phi: the hyperparameters, including the prior's). This is
the normalising constant of item i's collapsed Gibbs conditional. Because
p(y | z_{-i}, phi) = p(y_i | z_{-i}, phi, y_{-i}) p(y_{-i} | z_{-i}, phi), the importance-sampling
identity behind PSIS-LOO is exact:

    1 / E_{p(z, phi | y)}[exp(-l_i)] = p(y_i | y_{-i}),

the predictive density of item i under the whole model (partition prior, hyperparameters and
likelihood) given all the other items. So ``az.loo`` estimates elpd_loo = sum_i log p(y_i | y_{-i})
and compares models (priors, likelihoods, hyperparameters, a finite mixture against a Dirichlet
process) by how well each predicts a held-out item, its cluster unknown. Integrating z_i out
(rather than using log p(y_i | z, y_{-i}) given item i's sampled cluster, for which the identity
also holds) makes the importance ratios far less variable: fewer high Pareto k. WAIC from the
same values is the usual asymptotic approximation; prefer LOO, whose identity is exact.

A non-conjugate likelihood (slot parameters indexed by the partition, ``mu[z]``) gets the same
quantity with the draw's cluster parameters given: l_i(s) = log p(y_i | z^s_{-i}, phi^s, y_{-i}) =
log sum_k P(z_i = k | z^s_{-i}) f(y_i | phi^s_k), k over the blocks of z^s_{-i} and a new block,
whose term ∫ f(y_i | θ) G0(dθ) is a Monte Carlo average over base-measure draws
(:mod:`pymc_partitions.results.slot_predictive`); the identity above holds with (z_{-i}, phi)
in place of z_{-i}.

A known partition (``observed=labels``) is data: item i's cluster is given, and l_i(s) = log p(y_i |
z, phi^s, y_{-i}), the predictive of item i's block without it; the identity holds with z fixed, so
``az.loo`` estimates sum_i log p(y_i | z, y_{-i}).

With several likelihoods on one partition (several observations of each item), the value for
likelihood f is log p(y_i^f | z_{-i}, phi, y_{-i}, y_i^g for g != f): item i's other observations
are conditioned on (they inform its cluster), and the identity holds for each f.

:func:`~pymc_partitions.pymc.guards.guard_log_density` wraps
``pymc.stats.log_density.compute_log_density`` so that ``pm.compute_log_likelihood`` and
``pm.sample(..., idata_kwargs={"log_likelihood": True})`` fill the ``log_likelihood`` group with these values for every collapsed likelihood and
every non-conjugate likelihood of a partition (dims ``chain``, ``draw`` and the
likelihood's first observed dimension), and with PyMC's own elementwise values for any other
observed variable.
"""

from __future__ import annotations

import math
import warnings

import numba
import numpy as np
import xarray as xr

from .. import _checks
from ..families.kernels import FamilyPack, family_log_preds, pack_init, pack_update
from ..priors import log_join_weight, log_new_weight
from ..samplers.gibbs import _build
from ..pymc.compat import outside_model_contexts
from ..pymc.distributions import CollapsedLikelihoodRV, partition_size
from .reader import group_names, is_datatree, is_inferencedata, new_result, posterior_dataset

__all__ = ["pointwise_log_likelihood", "loo"]


@numba.njit(cache=True, error_model="numpy")
def _lse(v, count):
    top = -np.inf
    for j in range(count):
        top = max(top, v[j])
    if top == -np.inf:
        return -np.inf
    acc = 0.0
    for j in range(count):
        acc += math.exp(v[j] - top)
    return top + math.log(acc)


@numba.njit(cache=True, error_model="numpy")
def _loo_terms(labels, items, prior_code, prior_params, codes, dims, data_off, stat_off, hyper_off, hyper, data, width):
    """For each item i of ``items``, with w_k the prior weights of item i joining block k of z_{-i}
    or a new block (unnormalised) and p_f(y_i | k) likelihood f's predictive given block k:

    * ``joint[j]`` = log sum_k w_k prod_f p_f(y_i | k),
    * ``given[f, j]`` = log sum_k w_k prod_{g != f} p_g(y_i | k),
    * ``norm[j]`` = log sum_k w_k,
    * ``own[f, j]`` = log p_f(y_i | the block of item i in ``labels``, without item i).

    ``joint - given[f]`` is log p(y_i^f | z_{-i}, y_{-i}, y_i^{g != f}); ``joint - norm`` and
    ``given[f] - norm`` are log p(y_i | z_{-i}, y_{-i}) of all and of the other observations;
    ``own[f]`` is log p(y_i^f | z, y_{-i}), item i's cluster given (a known partition)."""
    n_fam = codes.shape[0]
    scratch = np.empty(max(1, data.shape[1]))
    slot, sizes, st, _, k = _build(labels, codes, dims, data_off, stat_off, hyper_off, hyper, data, width, scratch)
    pack_init(codes, dims, stat_off, hyper_off, hyper, st, k)  # row k: an empty block
    joint = np.empty(items.shape[0])
    given = np.empty((n_fam, items.shape[0]))
    norm = np.empty(items.shape[0])
    own = np.empty((n_fam, items.shape[0]))
    blocks = np.empty(k + 1, np.int64)
    prior_w = np.empty(k + 1)
    per_fam = np.zeros((n_fam, k + 1))
    total = np.empty(k + 1)
    for j_item in range(items.shape[0]):
        i = items[j_item]
        b = slot[i]
        sizes[b] -= 1
        pack_update(codes, dims, data_off, stat_off, hyper_off, hyper, st, b, data, i, -1.0, scratch)
        m = 0
        mine = -1  # position of item i's block among those of z_{-i} (-1: it was a singleton)
        for s in range(k):
            if sizes[s] > 0:
                if s == b:
                    mine = m
                blocks[m] = s
                prior_w[m] = log_join_weight(prior_code, prior_params, sizes[s])
                m += 1
        prior_w[m] = log_new_weight(prior_code, prior_params, m)
        blocks[m] = k
        count = m + 1
        for f in range(n_fam):
            for j in range(count):
                per_fam[f, j] = 0.0
            family_log_preds(codes[f], st, blocks, count, stat_off[f], data, i, data_off[f], hyper, hyper_off[f],
                             dims[f], scratch, per_fam[f])
        for j in range(count):
            total[j] = prior_w[j]
            for f in range(n_fam):
                total[j] += per_fam[f, j]
        for f in range(n_fam):
            own[f, j_item] = per_fam[f, m if mine < 0 else mine]
        joint[j_item] = _lse(total, count)
        norm[j_item] = _lse(prior_w, count)
        for f in range(n_fam):
            for j in range(count):
                total[j] = prior_w[j]
                for g in range(n_fam):
                    if g != f:
                        total[j] += per_fam[g, j]
            given[f, j_item] = _lse(total, count)
        pack_update(codes, dims, data_off, stat_off, hyper_off, hyper, st, b, data, i, 1.0, scratch)
        sizes[b] += 1
    return joint, given, norm, own


def _collapsed(model, var_names, owner, others=()):
    """The collapsed likelihoods of ``model`` named in ``var_names`` (all by default); ``others``, the names of
    its other likelihoods (non-conjugate ones), for the error."""
    collapsed = [rv for rv in model.observed_RVs if isinstance(rv.owner.op, CollapsedLikelihoodRV)]
    if var_names is None:
        return collapsed
    if isinstance(var_names, str):
        var_names = [var_names]
    names = {rv.name: rv for rv in collapsed}
    unknown = [v for v in var_names if v not in names]
    if unknown:
        raise ValueError(f"{owner}: {unknown} are not likelihoods of the model's partitions (those are "
                         f"{sorted(names) + sorted(others)})")
    return [names[v] for v in var_names]


def _terms_per_draw(result, model, part, items, owner):
    """(fitted, source, kept draw positions, joint (S, m), given (F, S, m), norm (S, m)): the
    terms of :func:`_loo_terms` for the items ``items`` in every posterior draw of ``result``. Of a
    known partition (``observed=labels``), item i's cluster is given: joint = sum_f own[f],
    given[f] = joint - own[f], norm = 0, so the differences the callers take are log p(y_i^f | z, y_{-i})
    (item i's other observations are independent of it given z: each likelihood has its own clusters'
    parameters)."""
    from .predictive import _read_result  # noqa: PLC0415

    fitted, labels, _, keep, source = _read_result(result, model, part.name, owner)
    n_draws = labels.shape[0]
    joint, norm = np.empty((n_draws, items.size)), np.empty((n_draws, items.size))
    given = np.empty((len(fitted.likelihoods), n_draws, items.size))
    cache_key, pack = None, None
    for s in range(n_draws):
        inputs = [v[s] for v in fitted._values] if fitted.inputs else []
        hyper = [np.asarray(h, np.float64) for h in fitted._fn(*inputs)]
        key = tuple(h.tobytes() for h in hyper[2:])
        alpha, discount, per_likelihood = fitted.terms.split_hyper(hyper)
        params = np.array([float(alpha), float(discount), fitted.k], np.float64)
        fitted.terms.check_prior_params(params)
        if key != cache_key:
            pack = FamilyPack.build([op.kernel_part(x, *h) for op, x, h in zip(fitted.ops, fitted.data, per_likelihood)],
                                    n=fitted.n, names=fitted.names)
            cache_key = key
        joint[s], given[:, s], norm[s], own = _loo_terms(labels[s], items, fitted.prior_code, params, pack.codes,
                                                         pack.dims, pack.data_off, pack.stat_off, pack.hyper_off,
                                                         pack.hyper, pack.data, pack.width)
        if fitted.known:
            joint[s], norm[s] = own.sum(0), 0.0
            given[:, s] = joint[s] - own
    return fitted, source, keep, joint, given, norm


def _slot_likelihoods(model, var_names):
    """{partition: its non-conjugate likelihoods (slot parameters) this module gives pointwise values
    for}: all of them, those in ``var_names`` only if given (each conditioned on the others)."""
    from ..pymc.distributions import is_partition  # noqa: PLC0415
    from ..pymc.nonconjugate import nonconjugate_likelihoods  # noqa: PLC0415

    out = {}
    for rv in model.free_RVs:
        if is_partition(rv):
            found = [o.name for o in nonconjugate_likelihoods(model, rv)
                     if var_names is None or o.name in var_names]
            if found:
                out[rv] = found
    return out


def _slot_pointwise(result, model, part, wanted, base_draws, rng, owner):
    """({likelihood name: values (chains, draws, n)}, joint (chains, draws, n), source): log p(y_i^f |
    z_{-i}, phi, y_{-i}, y_i^{g != f}) from :meth:`SlotPredictive.loo_terms` in every draw, for the
    likelihoods ``wanted``, and log p(y_i | z_{-i}, phi, y_{-i}) of all of item i's observations."""
    from .reader import partition_draws  # noqa: PLC0415
    from .slot_predictive import SlotPredictive  # noqa: PLC0415
    from ..pymc.distributions import constant_value  # noqa: PLC0415

    fitted = SlotPredictive(model, part, owner, base_draws, what="pointwise log-likelihood", points=False)
    fitted.reseed(rng)
    observed = posterior_dataset(result, "observed_data") if "observed_data" in group_names(result) else {}
    ys = []
    for obs in fitted.likelihoods:
        if obs.name in observed:
            y = np.asarray(observed[obs.name].values)
        else:
            y = constant_value(model.rvs_to_values[obs])
            if y is None:
                raise ValueError(f"{owner}: the result has no observed_data for {obs.name!r} and its data in the model "
                                 "are not constant (pm.Data): pass the whole result of pm.sample")
            y = np.asarray(y)
        ys.append(y.astype(obs.dtype))
    values, source = partition_draws(result, part.name, model, owner)
    labels, slots, inputs = fitted.read(posterior_dataset(result))
    rows = [fitted.names.index(name) for name in wanted]
    out = np.empty((len(rows),) + labels.shape, np.float64)
    everything = np.empty(labels.shape, np.float64)
    for s in range(labels.shape[0]):
        joint, given, norm = fitted.loo_terms(labels[s], [v[s] for v in slots], [v[s] for v in inputs], ys)
        out[:, s] = joint - given[rows]
        everything[s] = joint - norm
    return ({name: out[j].reshape(values.shape) for j, name in enumerate(wanted)}, everything.reshape(values.shape),
            source)


def _obs_dim(model, name):
    """The first dimension of the observed variable ``name`` in the model, else ``<name>_dim_0``."""
    dims = model.named_vars_to_dims.get(name) if hasattr(model, "named_vars_to_dims") else None
    return dims[0] if dims else f"{name}_dim_0"


def _add_joint(data_vars, part, obs_dim, values, owner):
    """``<part>_joint``: the pointwise value of all of an item's observations (``joint=True``)."""
    name = f"{part}_joint"
    if name in data_vars:
        raise ValueError(f"{owner}: joint=True names its variable {name!r}, which is a likelihood of the model")
    data_vars[name] = (("chain", "draw", obs_dim), values)


def pointwise_log_likelihood(result, model=None, *, var_names=None, base_draws=None, random_seed=0,
                             joint: bool = False) -> xr.Dataset:
    """``log p(y_i | z_{-i}, phi, y_{-i})`` for every posterior draw and item, for the collapsed
    likelihoods of ``model`` (see the module docstring for what ``az.loo`` then estimates), and
    for a non-conjugate likelihood (slot parameters, ``mu[z]``): with phi the draw's parameters of
    the clusters of z_{-i} (and the other variables), item i's cluster integrated out under the
    prior's conditional, the new-cluster term ∫ f(y_i | θ) G0(dθ) by Monte Carlo from
    ``base_draws`` fresh base-measure draws per posterior draw and item (default 200; seeded by
    ``random_seed``). The same identity holds, so ``az.loo`` estimates the same elpd_loo as from
    log f(y_i | phi_{z_i}) (PyMC's own pointwise value given the draw's labels and slots), with
    far less variable importance ratios (item i's cluster is not conditioned on). Of a known
    partition (``observed=labels``): log p(y_i | z, phi, y_{-i}), item i's cluster given.

    Returns a Dataset with one variable per likelihood, dims ``("chain", "draw", <obs dim>)``, where
    ``<obs dim>`` is the likelihood's first dimension in the model (``dims=``) or ``<name>_dim_0``.
    ``var_names``: the likelihoods to include (default: all collapsed likelihoods). Hyperparameters
    that are random variables take each draw's values; data are those the posterior was fitted to
    (the result's ``observed_data``, else the model's). ``pm.compute_log_likelihood`` calls this.

    Several likelihoods on one partition (several observations of each item): the value of
    likelihood f is that of y_i^f given item i's other observations (module docstring).
    ``joint=True`` adds, for each partition with a likelihood chosen, ``<partition>_joint``:
    log p(y_i | z_{-i}, phi, y_{-i}) of all of item i's observations (every likelihood of the
    partition), whose ``az.loo`` / ``pmp.loo(..., var_name="z_joint")`` is the elpd of the items'
    observations together (dims as its first likelihood's).

    Examples
    --------
    >>> import numpy as np, pymc as pm, pymc_partitions as pmp
    >>> with pm.Model() as model:
    ...     z = pmp.Partition("z", pmp.CRP(1.0), n=6)
    ...     _ = pmp.NormalNormal("a", partition=z, mu0=0.0, sigma0=3.0, sigma=1.0, observed=[-2, -2.2, -1.9, 2, 2.1, 1.8])
    ...     _ = pmp.NormalNormal("b", partition=z, mu0=0.0, sigma0=3.0, sigma=1.0, observed=[1, 1.2, 0.9, -1, -1.1, -0.8])
    ...     idata = pm.sample(draws=100, tune=50, chains=1, progressbar=False, compute_convergence_checks=False,
    ...                       random_seed=1)
    >>> sorted(pmp.pointwise_log_likelihood(idata, model, joint=True).data_vars)
    ['a', 'b', 'z_joint']
    """
    import pymc as pm  # noqa: PLC0415

    owner = "pointwise_log_likelihood"
    joint = _checks.boolean("joint", joint, owner=owner)
    model = pm.modelcontext(model)
    names = [var_names] if isinstance(var_names, str) else var_names
    slotted = _slot_likelihoods(model, names)
    if names is not None:
        taken = {v for found in slotted.values() for v in found}
        names = [v for v in names if v not in taken]
    every_slotted = [v for found in _slot_likelihoods(model, None).values() for v in found]
    chosen = _collapsed(model, names, owner, others=every_slotted) if names is None or names else []
    if slotted:
        from .slot_predictive import DEFAULT_BASE_DRAWS  # noqa: PLC0415

        base_draws = DEFAULT_BASE_DRAWS if base_draws is None else base_draws
        if isinstance(random_seed, np.random.Generator):
            rng = random_seed
        else:
            rng = np.random.default_rng(_checks.integer("random_seed", random_seed, low=0, owner=owner))
    elif base_draws is not None:
        raise ValueError(f"{owner}: base_draws applies to non-conjugate likelihoods (slot parameters); the model has "
                         "none among those chosen")
    partitions = list(dict.fromkeys(rv.owner.op.partition_input(rv) for rv in chosen))
    data_vars = {}
    for part in partitions:
        items = np.arange(partition_size(part))
        fitted, source, keep, all_obs, given, norm = _terms_per_draw(result, model, part, items, owner)
        wanted = [j for j, rv in enumerate(fitted.likelihoods) if rv in chosen]
        values = np.stack([all_obs - given[j] for j in wanted])
        shape = (source.chains.size, keep.size, fitted.n)
        for w, j in enumerate(wanted):
            data_vars[fitted.names[j]] = (("chain", "draw", _obs_dim(model, fitted.names[j])), values[w].reshape(shape))
        if joint:
            _add_joint(data_vars, part.name, _obs_dim(model, fitted.names[wanted[0]]), (all_obs - norm).reshape(shape),
                       owner)
    for part, wanted in slotted.items():
        per_name, all_obs, source = _slot_pointwise(result, model, part, wanted, base_draws, rng, owner)
        keep = np.arange(source.draws.size)
        for name, values in per_name.items():
            data_vars[name] = (("chain", "draw", _obs_dim(model, name)), values)
        if joint:
            _add_joint(data_vars, part.name, _obs_dim(model, wanted[0]), all_obs, owner)
    if not data_vars:
        raise ValueError(f"{owner}: no collapsed or non-conjugate likelihood chosen")
    coords = {"chain": source.chains, "draw": source.draws[keep]}
    for name, (dims, _) in data_vars.items():
        if dims[2] in getattr(model, "coords", {}) and model.coords[dims[2]] is not None:
            coords[dims[2]] = np.asarray(model.coords[dims[2]])
    ds = xr.Dataset(data_vars, coords=coords)
    ds.attrs["pointwise"] = ("collapsed likelihoods: log p(y_i | z_-i, hyperparameters, y_-i), the leave-one-out "
                             "predictive of item i given the partition of the other items, its own cluster "
                             "integrated out")
    if slotted:
        ds.attrs["pointwise_nonconjugate"] = (
            "non-conjugate likelihoods: log p(y_i | z_-i, slot parameters of z_-i's clusters, y_-i), item i's cluster "
            f"integrated out, the new-cluster term by Monte Carlo from {base_draws} base-measure draws (with several "
            "likelihoods on one partition: of likelihood f's observation given item i's others)")
    return ds


ATOM_RTOL = 1e-9
"""Log ratios closer than this (relative, at least absolute) count as one value: the same quantity
computed along different paths differs in the last bits, and such values give weights equal to 1e-9."""

MIN_TAIL = 5
"""Fewest distinct values a Pareto tail is fitted to, and fewest draws an atom of a discrete tail
must hold to be judged reliable (ArviZ's minimum tail size)."""


def _tail_length(n_samples: int, reff: float, arviz_major: int) -> int:
    """The number of largest importance ratios PSIS fits a Pareto tail to (Vehtari et al. 2024:
    min(S / 5, 3 sqrt(S / r_eff))), as the installed ArviZ computes it."""
    if arviz_major >= 1:
        m = math.floor(3 * math.sqrt(n_samples / reff)) if n_samples * reff > 225 else math.floor(n_samples / 5)
    else:
        m = math.ceil(min(0.2 * n_samples, 3 * math.sqrt(n_samples / reff)))
    return int(min(max(m, 1), n_samples - 1))


def _close(a, b):
    return np.abs(a - b) <= ATOM_RTOL * np.maximum(1.0, np.abs(b))


def _discrete_tails(log_ratios: np.ndarray, tail: int):
    """For each row of ``log_ratios`` (items, draws): whether its PSIS tail (the ``tail`` largest
    values) is discrete, i.e. the values above the cutoff (the (tail + 1)-th largest) take fewer
    than :data:`MIN_TAIL` distinct values, and then its k: 0 if each of those values is held by at
    least MIN_TAIL draws (or there are none: the whole tail is one value), else inf."""
    n_items, n = log_ratios.shape
    srt = np.sort(log_ratios, axis=1)
    discrete = np.zeros(n_items, bool)
    khat = np.full(n_items, np.nan)
    for j in range(n_items):
        top, cutoff = srt[j, n - tail:], srt[j, n - tail - 1]
        above = top[~_close(top, cutoff) & (top > cutoff)]
        if above.size == 0:
            discrete[j], khat[j] = True, 0.0
            continue
        starts = np.flatnonzero(np.r_[True, ~_close(above[1:], above[:-1])])
        if starts.size < MIN_TAIL:
            counts = np.diff(np.r_[starts, above.size])
            discrete[j], khat[j] = True, (0.0 if counts.min() >= MIN_TAIL else math.inf)
    return discrete, khat


def _reff(az, result, n_samples: int) -> float:
    """ArviZ's default relative efficiency: the mean ESS ("mean" method) of the posterior's variables
    over the number of draws, 1 with one chain (as ``az.loo`` computes it on both ArviZ lines), but
    leaving out any undefined (NaN) ESS, which would make ArviZ's mean NaN; 1 if none is defined."""
    post = posterior_dataset(result)
    if post.sizes["chain"] == 1:
        return 1.0
    ess = az.ess(post, method="mean")
    values = np.hstack([np.ravel(np.asarray(ess[v].values, np.float64)) for v in ess.data_vars])
    values = values[np.isfinite(values)]
    return float(values.mean() / n_samples) if values.size else 1.0


def loo(result, var_name: str | None = None, *, reff: float | None = None, pointwise: bool = True, refit=None,
        k_threshold: float | None = None, model=None):
    """PSIS-LOO of a fitted clustering model: ``az.loo`` with discrete Pareto tails handled exactly.
    Returns ArviZ's own ELPD object (``az.compare`` takes a dict of them).

    With fixed hyperparameters the posterior is discrete, so an item's pointwise value l_i (see
    :func:`pointwise_log_likelihood`) takes finitely many values, and the largest importance ratios
    exp(-l_i) (PSIS's tail: the largest min(S/5, 3 sqrt(S/r_eff)) of S draws) are often one value or
    a few values repeated. There is no continuous tail to fit a Pareto distribution to (ArviZ 1.x
    stops with "All tail values are the same" or gives k = NaN; ArviZ 0.x gives k = inf or fits
    the repeated values), and nothing to smooth: the weights are bounded, and plain importance
    sampling is the estimate (a constant l_i gives exactly l_i). For such an item -- fewer than 5
    distinct values above the tail's cutoff -- this function uses the raw weights and reports k = 0
    when each of those values is held by at least 5 draws (the whole tail one value included),
    else k = inf (too few draws to judge). Every other item gets ArviZ's PSIS unchanged (on
    ArviZ 1.x, an item whose fit still gives NaN gets the k of its values strictly above the cutoff,
    as ArviZ 0.x computes it).

    ``result``: InferenceData or DataTree with a ``log_likelihood`` group (``pm.compute_log_likelihood``).
    ``var_name``: the log-likelihood variable (needed when there are several). ``reff``: relative
    efficiency (default: ArviZ's, from the posterior's ESS). ``pointwise``: keep the pointwise
    values (``az.compare`` on ArviZ 0.x needs them). Log scale only.

    **Exact LOO where PSIS fails** (``refit``): a function ``refit(keep)`` that fits the same model
    to the items ``keep`` (an int64 array: all items but one, in order) and returns the result of
    ``pm.sample`` (its posterior must hold the partition, named as in ``model``, and the
    hyperparameters' random variables). For every item i whose Pareto k exceeds
    ``k_threshold`` (or is NaN), ``pmp.loo`` calls ``refit`` without item i and replaces item i's
    estimate by the plain Monte Carlo average over the refitted posterior
    log mean_s p(y_i | z_{-i}^s, phi^s, y_{-i}): no importance weights, each term bounded, so
    it converges like any posterior mean (ArviZ's ``reloo`` does the same; as there, the item's
    k is then set to 0). ``model``: the model of ``result`` (default: the model in context),
    whose data and hyperparameters the predictive density is computed from; ``var_name`` must
    be one of its collapsed likelihoods.
    """
    from ..pymc.compat import _arviz  # noqa: PLC0415

    az = _arviz()
    if refit is not None:
        if not callable(refit):
            raise TypeError(f"pmp.loo: refit must be a function keep -> result of pm.sample, got {refit!r}")
        if k_threshold is not None:
            k_threshold = _checks.real("k_threshold", k_threshold, owner="pmp.loo")
    if "log_likelihood" not in group_names(result):
        raise ValueError("pmp.loo: the result has no log_likelihood group; call pm.compute_log_likelihood(idata) "
                         "or sample with idata_kwargs={'log_likelihood': True}")
    ll_ds = posterior_dataset(result, "log_likelihood")
    if var_name is None:
        if len(ll_ds.data_vars) != 1:
            raise ValueError(f"pmp.loo: the log_likelihood group has several variables {sorted(ll_ds.data_vars)}; "
                             "pass var_name")
        var_name = next(iter(ll_ds.data_vars))
    elif var_name not in ll_ds.data_vars:
        raise ValueError(f"pmp.loo: no variable {var_name!r} in the log_likelihood group ({sorted(ll_ds.data_vars)})")
    ll = ll_ds[var_name]
    if not {"chain", "draw"} <= set(ll.dims):
        raise ValueError(f"pmp.loo: {var_name!r} needs dims chain and draw, has {ll.dims}")
    obs_dims = [d for d in ll.dims if d not in ("chain", "draw")]
    ll = ll.transpose("chain", "draw", *obs_dims)
    values = np.asarray(ll.values, np.float64)
    n_samples = values.shape[0] * values.shape[1]
    if n_samples < 2 * MIN_TAIL:
        raise ValueError(f"pmp.loo: {n_samples} draws are too few for PSIS")
    flat = values.reshape(n_samples, -1).T  # (items, draws)
    if not np.all(np.isfinite(flat)):
        raise ValueError(f"pmp.loo: {var_name!r} has non-finite pointwise values")
    if reff is None:
        reff = _reff(az, result, n_samples)
    reff = float(reff)
    if not (math.isfinite(reff) and reff > 0):
        raise ValueError(f"pmp.loo: reff must be a positive number, got {reff}")
    major = int(az.__version__.split(".", 1)[0])
    tail = _tail_length(n_samples, reff, major)
    discrete, khat = _discrete_tails(-flat, tail)
    if refit is None:
        if major >= 1:
            return _loo_arviz1(az, result, ll, flat, discrete, khat, tail, var_name, reff, pointwise)
        return _loo_arviz0(az, result, ll, flat, discrete, khat, var_name, reff, pointwise)
    with warnings.catch_warnings():  # about the PSIS estimates refitting replaces: warned below if any remain
        warnings.filterwarnings("ignore", message=_PARETO_WARNING)
        if major >= 1:
            out = _loo_arviz1(az, result, ll, flat, discrete, khat, tail, var_name, reff, True)
        else:
            out = _loo_arviz0(az, result, ll, flat, discrete, khat, var_name, reff, True)
    out = _refit_items(out, major, result, ll, flat, var_name, refit, k_threshold, model, pointwise)
    if out.warning if major >= 1 else out["warning"]:
        warnings.warn(f"Estimated shape parameter of Pareto distribution is greater than {_good_k(out, major):.2f} "
                      "for one or more samples (pmp.loo, after refitting).", UserWarning, stacklevel=2)
    return out


_PARETO_WARNING = "Estimated shape parameter of Pareto"


def _good_k(out, major: int) -> float:
    """ArviZ's ``good_k`` of an ELPD object."""
    return float(out.good_k if major >= 1 else out["good_k"])


def _refit_items(out, major, result, ll, flat, var_name, refit, k_threshold, model, pointwise):
    """``out`` with the items whose k exceeds ``k_threshold`` estimated by refitting without them."""
    import pymc as pm  # noqa: PLC0415

    owner = "pmp.loo"
    model = pm.modelcontext(model)
    rv = model.named_vars.get(var_name)
    if rv is None or rv not in model.observed_RVs or not isinstance(rv.owner.op, CollapsedLikelihoodRV):
        raise ValueError(f"{owner}: refit= needs var_name to be a collapsed likelihood of the model; {var_name!r} is not")
    part = rv.owner.op.partition_input(rv)
    n = partition_size(part)
    if flat.shape[0] != n or ll.ndim != 3:
        raise ValueError(f"{owner}: refit= needs one pointwise value per item of {part.name!r} ({n}), got "
                         f"log-likelihood dims {dict(ll.sizes)}")
    k = np.asarray((out.pareto_k if major >= 1 else out["pareto_k"]).values, np.float64).reshape(-1)
    if k_threshold is None:
        k_threshold = _good_k(out, major)
    flagged = np.flatnonzero(~(k <= k_threshold))
    new_elpd = {}
    for i in flagged.tolist():
        keep = np.delete(np.arange(n, dtype=np.int64), i)
        with outside_model_contexts():
            fit = refit(keep.copy())
        new_elpd[i] = _refitted_log_predictive(fit, result, model, part, rv, i, owner)
    elpd_i = np.asarray((out.elpd_i if major >= 1 else out["loo_i"]).values, np.float64).reshape(-1)
    for i, value in new_elpd.items():
        elpd_i[i], k[i] = value, 0.0
    lppd_i = _logmeanexp(flat, axis=1)
    if major >= 1:
        out.elpd_i = out.elpd_i.copy(data=elpd_i.reshape(out.elpd_i.shape))
        out.pareto_k = out.pareto_k.copy(data=k.reshape(out.pareto_k.shape))
        out.p_loo_i = out.elpd_i.copy(data=(lppd_i - elpd_i).reshape(out.elpd_i.shape))
        out.elpd, out.se, out.p, _ = out.elpd_i.azstats.loo_summary(out.p_loo_i)
        out.warning = bool(np.any(k > out.good_k))
        if new_elpd and getattr(out, "log_weights", None) is not None:  # as ArviZ's reloo: no weights for refitted items
            lw = np.array(out.log_weights.transpose(*ll.dims).values, np.float64)
            lw[..., list(new_elpd)] = np.nan
            out.log_weights = out.log_weights.copy(data=lw.transpose(*[ll.dims.index(d) for d in out.log_weights.dims]))
        if not pointwise:
            out.elpd_i, out.pareto_k, out.p_loo_i = None, None, None
        return out
    out["loo_i"] = out["loo_i"].copy(data=elpd_i.reshape(out["loo_i"].shape))
    out["pareto_k"] = out["pareto_k"].copy(data=k.reshape(out["pareto_k"].shape))
    out["elpd_loo"] = float(elpd_i.sum())
    out["p_loo"] = float(lppd_i.sum() - elpd_i.sum())
    out["se"] = float((elpd_i.size * np.var(elpd_i)) ** 0.5)
    out["warning"] = bool(np.any(k > out["good_k"]))
    if not pointwise:
        out = out.drop(["loo_i", "pareto_k"])
    return out


def _logmeanexp(x, axis):
    top = np.max(x, axis=axis, keepdims=True)
    return np.squeeze(top, axis) + np.log(np.mean(np.exp(x - top), axis=axis))


def _refitted_log_predictive(fit, result, model, part, rv, i, owner) -> float:
    """log mean_s p(y_i^f | z_{-i}^s, phi^s, y_{-i}, y_i^{g != f}) over the draws of ``fit``, the
    posterior given every item but i (f: the likelihood ``rv``; with several likelihoods on the
    partition, the ratio of the averages of p(y_i | ...) and of p(y_i^{g != f} | ...))."""
    if not (is_datatree(fit) or is_inferencedata(fit)):
        raise TypeError(f"{owner}: refit must return the result of pm.sample (InferenceData or DataTree), got "
                        f"{type(fit).__name__}")
    post = posterior_dataset(fit)
    n = partition_size(part)
    groups = {group: posterior_dataset(result, group) for group in ("observed_data", "constant_data")
              if group in group_names(result)}
    if part in model.observed_RVs:  # a known partition: item i's cluster is given, the labels are the result's
        groups["posterior"] = post[[v for v in post.data_vars if v != part.name]]
        fitted, _, _, joint, given, norm = _terms_per_draw(new_result(groups), model, part, np.array([i], np.int64),
                                                           owner)
        f = fitted.likelihoods.index(rv)
        return float(_logmeanexp(joint[:, 0], axis=0) - _logmeanexp(given[f, :, 0], axis=0))
    if part.name not in post.data_vars or post[part.name].ndim != 3 or post[part.name].shape[-1] != n - 1:
        raise ValueError(f"{owner}: the result refit returned for item {i} must hold the partition {part.name!r} "
                         f"with n - 1 = {n - 1} items (draws, chains, items)")
    labels = post[part.name].transpose("chain", "draw", ...)
    item_dim = labels.dims[2]
    values = np.asarray(labels.values)
    if values.dtype.kind not in "iu" or (values.size and (values.min() < 0 or values.max() >= n - 1)):
        raise ValueError(f"{owner}: the partition {part.name!r} of the result refit returned for item {i} must hold "
                         f"integer labels in [0, {n - 1})")
    full = np.insert(values.astype(np.int64), i, n - 1, axis=2)  # item i alone: its own label is integrated out
    others = [v for v in post.data_vars if v != part.name and item_dim not in post[v].dims]
    groups["posterior"] = post[others].assign({part.name: (("chain", "draw", "__loo_item__"), full)})
    fitted, _, _, joint, given, norm = _terms_per_draw(new_result(groups), model, part, np.array([i], np.int64), owner)
    f = fitted.likelihoods.index(rv)
    return float(_logmeanexp(joint[:, 0] - norm[:, 0], axis=0) - _logmeanexp(given[f, :, 0] - norm[:, 0], axis=0))


def _khat_above_cutoff(log_ratios, tail: int) -> float:
    """Pareto k of the log ratios strictly above the tail's cutoff (the (tail + 1)-th largest), as
    ArviZ 0.x fits them; inf if fewer than :data:`MIN_TAIL`. ArviZ 1.x fits every tail draw,
    including ties with the cutoff, which can make its fit NaN."""
    x = np.sort(log_ratios - log_ratios.max())
    cutoff = x[x.size - tail - 1]
    above = x[(x > cutoff) & ~_close(x, cutoff)]
    fit = _arviz_gpdfit()
    if above.size < MIN_TAIL or fit is None:
        return math.inf
    khat = fit(np.exp(above) - math.exp(cutoff))[0]
    return float(khat) if np.isfinite(khat) else math.inf


def _arviz_gpdfit():
    """ArviZ's generalised Pareto fit (Zhang and Stephens with ArviZ's weak prior on k), or None."""
    try:
        from arviz_stats.base.diagnostics import _DiagnosticsBase  # noqa: PLC0415

        return _DiagnosticsBase._gpdfit
    except (ImportError, AttributeError):
        pass
    try:
        from arviz.stats.stats import _gpdfit  # noqa: PLC0415

        return _gpdfit
    except ImportError:
        return None


def _raw_log_weights(log_ratios):
    """Normalised log importance weights without smoothing (rows: items)."""
    top = log_ratios.max(axis=-1, keepdims=True)
    return log_ratios - (top + np.log(np.exp(log_ratios - top).sum(axis=-1, keepdims=True)))


def _loo_arviz1(az, result, ll, flat, discrete, khat, tail, var_name, reff, pointwise):
    lw = np.empty_like(flat)
    k = khat.copy()
    lw[discrete] = _raw_log_weights(-flat[discrete])
    rest = np.flatnonzero(~discrete)
    shape = ll.shape

    def psis(rows):
        sub = xr.DataArray(flat[rows].T.reshape(shape[0], shape[1], rows.size), dims=("chain", "draw", "__item__"))
        w, kk = sub.azstats.psislw(r_eff=reff, dim=["chain", "draw"])
        return np.asarray(w.transpose("__item__", "chain", "draw").values).reshape(rows.size, -1), np.asarray(kk.values)

    if rest.size:
        try:
            lw[rest], k[rest] = psis(rest)
        except ValueError:  # a tail ArviZ cannot fit that the check above let through: item by item
            for j in rest:
                try:
                    w, kk = psis(np.array([j]))
                    lw[j], k[j] = w[0], kk[0]
                except ValueError:
                    lw[j], k[j] = _raw_log_weights(-flat[j]), math.nan
    for j in rest[np.isnan(k[rest])]:  # ArviZ's fit failed (it then does not smooth)
        lw[j] = _raw_log_weights(-flat[j])
        k[j] = _khat_above_cutoff(-flat[j], tail)
    log_weights = ll.copy(data=lw.T.reshape(shape))
    pareto_k = ll.isel(chain=0, draw=0, drop=True).copy(data=k.reshape(shape[2:]))
    return az.loo(result, pointwise=pointwise, var_name=var_name, reff=reff, log_weights=log_weights,
                  pareto_k=pareto_k)


def _loo_arviz0(az, result, ll, flat, discrete, khat, var_name, reff, pointwise):
    """ArviZ 0.x's ``az.loo``, the discrete items replaced. Its Pareto fit (``_gpdfit``, Zhang and
    Stephens) computes ``1 / exp(l - l[:, None]).sum()`` over a grid of candidate shapes, which
    overflows to ``1 / inf = 0`` -- the right limit: a candidate with a negligible weight -- on a
    very heavy tail (k of several); numpy's "overflow encountered in exp" then says nothing the
    item's k does not, and is silenced."""
    with warnings.catch_warnings():
        if discrete.any():  # ArviZ 0.x may warn about the k it gives these items; replaced below
            warnings.filterwarnings("ignore", message="Estimated shape parameter of Pareto")
        with np.errstate(over="ignore"):  # ArviZ 0.x's Pareto fit on a very heavy tail: see below
            out = az.loo(result, pointwise=True, var_name=var_name, reff=reff, scale="log")
    if discrete.any():
        loo_i, k = out["loo_i"], out["pareto_k"]  # obs dims in ll's order (ArviZ stacks the sample dims last)
        li, ki = np.array(loo_i.values, np.float64).reshape(-1), np.array(k.values, np.float64).reshape(-1)
        terms = _raw_log_weights(-flat[discrete]) + flat[discrete]
        top = terms.max(axis=1, keepdims=True)
        old_sum = float(li.sum())
        li[discrete] = (top + np.log(np.exp(terms - top).sum(axis=1, keepdims=True)))[:, 0]
        ki[discrete] = khat[discrete]
        out["loo_i"], out["pareto_k"] = loo_i.copy(data=li.reshape(loo_i.shape)), k.copy(data=ki.reshape(k.shape))
        out["elpd_loo"] = float(li.sum())
        out["p_loo"] = float(out["p_loo"] + old_sum - li.sum())
        out["se"] = float((li.size * np.var(li)) ** 0.5)
        out["warning"] = bool(np.any(ki > out["good_k"]))
        if out["warning"]:
            warnings.warn(f"Estimated shape parameter of Pareto distribution is greater than {out['good_k']:.2f} "
                          "for one or more samples (pmp.loo).", UserWarning, stacklevel=3)
    if not pointwise:
        out = out.drop(["loo_i", "pareto_k"])
    return out
