"""Predictive density and leave-one-out terms of non-conjugate partition models (slot parameters,
:mod:`pymc_partitions.pymc.nonconjugate`), from a ``pm.sample`` result.

Given a posterior draw (partition z with blocks b of sizes m_b, slot parameters phi, the other
variables), a new item x has density

    p(x | draw) = sum_b w_b f(x | phi_b) + w_new * integral f(x | theta) G0(d theta),

w the prior's sequential weights (joining block b, or opening a new one; normalised) and G0 the
base measure at the draw's values of its parameters. The integral is a Monte Carlo average over
``base_draws`` fresh draws from G0 per posterior draw (unbiased; averaged over the posterior draws,
its error shrinks with their number too). The likelihood f is the user's PyMC graph, with the
labels and the observed data replaced by the new points' (so the likelihood must be per item with
no per-item covariates: a regression's new item would need its own covariates).

With several likelihoods on the partition (several observations of each item, e.g. ``y1 ~
Normal(mu[z], s[z])`` and ``y2 ~ Poisson(exp(lam[z]))``) f is their product: an item's
observations are independent given its cluster's parameters. A likelihood whose points are not
given is left out of the product (marginalised: its factor integrates to one). The new-cluster
term averages the product over the same base-measure draws.

The same terms with x = y_i and z_{-i} (item i taken out of its block) give the pointwise value of
:func:`~pymc_partitions.results.loo.loo` for these models: log p(y_i | z_{-i}, phi, y_{-i}), item
i's cluster (and, when it opens one, its parameter) integrated out; with several likelihoods, that
of likelihood f's observation given item i's others, as for collapsed likelihoods.
"""

from __future__ import annotations

import math

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.graph.basic import Constant
from pytensor.graph.replace import clone_replace
from pytensor.tensor.random.op import RandomVariable
from pytensor.tensor.random.type import RandomGeneratorType, RandomType

from .._checks import integer
from ..priors import log_join_weight, log_new_weight
from ..pymc.compat import ancestors
from ..pymc.distributions import is_partition
from ..pymc.nonconjugate import nonconjugate_likelihoods, sizes_with_count, slot_variables
from ..pymc.terms import PartitionTerms

__all__ = ["SlotPredictive", "DEFAULT_BASE_DRAWS", "MAX_BASE_DRAWS", "has_slots"]

#: Fresh draws from the base measure per posterior draw for the new-cluster term.
DEFAULT_BASE_DRAWS = 200
MAX_BASE_DRAWS = 1_000_000
#: Cap on the likelihood evaluations of a new-cluster term computed once for all draws.
MAX_POOLED_EVALUATIONS = 2_000_000
#: ... and on its calls of the compiled likelihood of the n items (leave-one-out terms).
MAX_POOLED_CALLS = 10_000


def has_slots(model, rv) -> bool:
    """Whether the partition ``rv`` of ``model`` has non-conjugate likelihoods (slot parameters)."""
    return bool(nonconjugate_likelihoods(model, rv))


def _logsumexp(a, axis):
    top = np.max(a, axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        return np.squeeze(top, axis) + np.log(np.sum(np.exp(a - top), axis=axis))


def _per_item_data(graph, blockers, n, obs_ndim):
    """Constants and pm.Data in ``graph`` (blocked at ``blockers``) with one row per item: what a
    regression's covariates look like."""
    found = []
    for v in ancestors(graph, blockers=blockers):
        if isinstance(v.type, (RandomType, RandomGeneratorType)):
            continue
        if isinstance(v, Constant):
            value = np.asarray(v.data)
        elif isinstance(v, SharedVariable):
            value = np.asarray(v.get_value(borrow=True))
        else:
            continue
        if value.ndim >= max(obs_ndim, 1) and value.shape[0] == n and n > 1:
            found.append(v.name or f"a constant of shape {value.shape}")
    return found


class SlotPredictive:
    """The non-conjugate likelihoods of a partition as functions of the points and of a posterior
    draw: the log-likelihood of points under given parameters (one function per likelihood; an
    item's observations are independent given its cluster's parameters, so their joint is the sum),
    fresh draws of the base measure, the prior's parameters, each a compiled function of the free
    variables' (constrained) values."""

    def __init__(self, model, rv, owner, base_draws=DEFAULT_BASE_DRAWS, what="predictive density", points=True):
        self.owner = owner
        self.base_draws = integer("base_draws", base_draws, low=1, high=MAX_BASE_DRAWS, owner=owner)
        if not is_partition(rv):
            raise TypeError(f"{owner}: {rv.name!r} is not a pmp.Partition variable")
        self.name = rv.name
        self.labels_dtype = np.dtype(rv.dtype)
        likelihoods = nonconjugate_likelihoods(model, rv)
        if not likelihoods:
            raise ValueError(f"{owner}: the partition {rv.name!r} has no non-conjugate likelihood (slot parameters "
                             f"indexed by it, e.g. mu[{rv.name}])")
        self.likelihoods = likelihoods
        self.names = [o.name for o in likelihoods]
        self.terms = PartitionTerms(model, rv, read_data=False, allow=likelihoods)
        self.n, self.k, self.prior_code = self.terms.n, self.terms.k, self.terms.prior_code
        self.slots = slot_variables(model, rv)
        free = list(model.free_RVs)
        labels = pt.vector(dtype=rv.dtype, name="labels")
        slot_in = [pt.tensor(dtype=s.dtype, shape=(None,) + s.type.shape[1:], name=s.name) for s in self.slots]
        graphs, xs, self.dims = [], [], []
        for obs in likelihoods:
            if points:  # the likelihood of new points x (any number): a likelihood without per-item covariates
                if obs.ndim > 2:
                    raise ValueError(f"{owner}: {obs.name!r} has {obs.ndim} dimensions; the {what} takes items with "
                                     "at most one trailing axis")
                if not isinstance(obs.owner.op, RandomVariable):
                    raise ValueError(f"{owner}: the {what} of a non-conjugate partition takes likelihoods that are "
                                     f"plain PyMC distributions (RandomVariables); {obs.name!r} is a "
                                     f"{type(obs.owner.op).__name__}")
                self.dims.append(1 if obs.ndim == 1 else obs.type.shape[1])
                x = pt.tensor(dtype=obs.dtype, shape=(None,) + obs.type.shape[1:], name="x")
                node = obs.owner  # the likelihood without its size (n items): evaluated at any number of points
                free_size = node.op.make_node(node.op.rng_param(node), None,
                                              *node.op.dist_params(node)).default_output()
                logp = pm.logp(free_size, x)
                covariates = _per_item_data([logp], free + [x], self.n, obs.ndim)
                if covariates:
                    raise ValueError(f"{owner}: the likelihood {obs.name!r} has per-item data {covariates} besides its "
                                     f"observed values (covariates, e.g. a regression's design matrix): the {what} of "
                                     "a new item would need its own covariates, which this function does not take. "
                                     "Only a likelihood per item with no per-item covariates is supported")
            else:  # the likelihood of the n observed items (their own covariates, if any)
                x = obs.type()
                logp = pm.logp(obs, x)
            graphs.append(logp)
            xs.append(x)
        others = [v for v in free if v is not rv and v not in self.slots]
        self.inputs = [v for v in others if v in set(ancestors(graphs + self.slots + self.terms.hyper_variables[:2],
                                                               blockers=free))]
        placeholders = [v.type() for v in self.inputs]
        replace = {rv: labels, **dict(zip(self.slots, slot_in)), **dict(zip(self.inputs, placeholders))}
        self._loglik = []
        for logp, x in zip(graphs, xs):
            graph = clone_replace(logp, replace=replace, rebuild_strict=False)
            if graph.ndim > 1:
                graph = graph.sum(axis=tuple(range(1, graph.ndim)))
            self._loglik.append(pytensor.function(placeholders + slot_in + [labels, x], graph,
                                                  on_unused_input="ignore"))
        # the base measure: fresh draws of every slot given the other variables, `count` of them at
        # once (each slot RV's size with `count` on the slot axis: the slots are iid along it, slot
        # variables depend on each other slot by slot), else S per call
        count = pt.iscalar("count")
        resized = sizes_with_count(self.slots, count)
        self._batched = len(resized) == len(self.slots)
        replace = dict(zip(self.inputs, placeholders))
        if self._batched:
            replace.update(resized)
        draws = clone_replace(self.slots, replace=replace, rebuild_strict=False)
        rngs = [v for v in ancestors(draws) if isinstance(v, SharedVariable) and isinstance(v.type, RandomGeneratorType)]
        self._rngs = [pytensor.shared(np.random.default_rng(i)) for i in range(len(rngs))]
        draws = clone_replace(draws, replace=dict(zip(rngs, self._rngs)))
        self._draw = pm.pytensorf.compile(placeholders + [count], draws, on_unused_input="ignore")
        prior = clone_replace(self.terms.hyper_variables[:2], replace=dict(zip(self.inputs, placeholders)))
        self._prior = pytensor.function(placeholders, prior, on_unused_input="ignore")
        self.n_slots = self.k if self.k > 0 else self.n
        self._n_draws, self._fixed_new, self._fixed_items = 0, None, None

    def reseed(self, rng):
        pm.pytensorf.reseed_rngs(self._rngs, rng.integers(2**63))

    def read(self, posterior):
        """Posterior draws as (labels (R, n), [slot values (R, S, ...)], [input values (R, ...)])."""
        def flat(name):
            if name not in posterior:
                raise ValueError(f"{self.owner}: the posterior has no draws of {name!r}")
            da = posterior[name].transpose("chain", "draw", ...)
            return np.asarray(da.values).reshape((-1,) + da.shape[2:])

        labels = flat(self.name).astype(np.int64)
        self._n_draws, self._fixed_new, self._fixed_items = labels.shape[0], None, None
        slots = [flat(s.name) for s in self.slots]
        for s, v in zip(self.slots, slots):
            if v.ndim < 2 or labels.size and (labels.min() < 0 or labels.max() >= v.shape[1]):
                raise ValueError(f"{self.owner}: the labels of {self.name!r} must index the slots of {s.name!r}")
        return labels, slots, [flat(v.name) for v in self.inputs]

    def prior_params(self, inputs):
        alpha, discount = (float(np.asarray(v)) for v in self._prior(*inputs))
        params = np.array([alpha, discount, self.k], np.float64)
        try:
            self.terms.check_prior_params(params)
        except ValueError as err:
            raise ValueError(f"{self.owner}: {err}") from None
        return params

    def loglik(self, inputs, slots, labels, xs):
        """(G,) log-likelihood of the points ``xs`` (one array per likelihood, None for one left
        out: its points unobserved) under the slots ``labels`` picks: the sum over the likelihoods."""
        out = 0.0
        for f, x in zip(self._loglik, xs):
            if x is not None:
                out = out + np.asarray(f(*inputs, *slots, labels.astype(self.labels_dtype), x), np.float64)
        return out

    def block_logliks(self, inputs, slots, xs):
        """(L, G) log f(x_g | slot l) for every given slot value (slots: arrays (L, ...)), the
        points ``xs`` as in :meth:`loglik`."""
        count = slots[0].shape[0]
        g = next(x for x in xs if x is not None).shape[0]
        labels = np.repeat(np.arange(count), g)
        tiled = [None if x is None else np.tile(x, (count,) + (1,) * (x.ndim - 1)) for x in xs]
        return self.loglik(inputs, slots, labels, tiled).reshape(count, g)

    def base(self, inputs, count):
        """``count`` fresh draws of every slot from the base measure (arrays (count, ...))."""
        got = []
        while sum(d[0].shape[0] for d in got) < count:
            got.append([np.asarray(d) for d in self._draw(*inputs, count)])
        return [np.concatenate([d[q] for d in got])[:count] for q in range(len(self.slots))]

    def _pooled(self, per_point):
        """Base draws for a new-cluster term that is the same in every posterior draw (no random
        variable but the slots enters the likelihood or the base measure): computed once, from
        ``base_draws`` per posterior draw in all (at most :data:`MAX_POOLED_EVALUATIONS` likelihood
        evaluations)."""
        total = self.base_draws * max(self._n_draws, 1)
        return max(self.base_draws, min(total, MAX_POOLED_EVALUATIONS // max(per_point, 1)))

    def new_cluster_loglik(self, inputs, xs):
        """(G,) log of the Monte Carlo average of f(x_g | theta) over ``base_draws`` draws theta ~ G0
        (f the product of the likelihoods given points in ``xs``; computed once if it is the same in
        every draw, see :meth:`_pooled`)."""
        if not self.inputs and self._fixed_new is not None:
            return self._fixed_new
        g = next(x for x in xs if x is not None).shape[0]
        m = self._pooled(g) if not self.inputs else self.base_draws
        base = self.base(inputs, m)
        out = _logsumexp(self.block_logliks(inputs, base, xs), axis=0) - math.log(m)
        if not self.inputs:
            self._fixed_new = out
        return out

    def _new_cluster_items(self, inputs, ys):
        """((n,) joint, (F, n) without each likelihood) log Monte Carlo averages over theta ~ G0 of
        prod_f f(y_i^f | theta) and of prod_{g != f} g(y_i^g | theta), item i with its own draws,
        the same draws for every product (computed once if the same in every draw)."""
        if not self.inputs and self._fixed_items is not None:
            return self._fixed_items
        n = self.n
        m = min(self._pooled(n), max(self.base_draws, MAX_POOLED_CALLS)) if not self.inputs else self.base_draws
        base = self.base(inputs, m * n)
        each = np.zeros((len(ys), m, n))  # per likelihood, base draw, item
        for j in range(m):
            draw = [b[j * n:(j + 1) * n] for b in base]
            for f, y in enumerate(ys):
                one = [None] * len(ys)
                one[f] = y
                each[f, j] = self.loglik(inputs, draw, np.arange(n), one)
        total = each.sum(axis=0)
        joint = _logsumexp(total, axis=0) - math.log(m)
        without = np.stack([_logsumexp(_sum_except(each, f), axis=0) - math.log(m) for f in range(len(ys))])
        if not self.inputs:  # the same in every draw: computed once
            self._fixed_items = (joint, without)
        return joint, without

    def loo_terms(self, labels, slots, inputs, ys):
        """Of the observed items ``ys`` (one array per likelihood) given one draw, with w_k the
        prior's weights of item i joining block k of z_{-i} (its own block's parameter dropped when it
        is alone) or a new one, whose parameter is integrated over G0 by Monte Carlo:

        * ``joint`` (n,) = log sum_k w_k prod_f f(y_i^f | k),
        * ``given`` (F, n) = log sum_k w_k prod_{g != f} g(y_i^g | k),
        * ``norm`` (n,) = log sum_k w_k,

        as :func:`pymc_partitions.results.loo._loo_terms` for collapsed likelihoods: ``joint - norm``
        is log p(y_i | z_{-i}, phi, y_{-i}) of all of item i's observations, ``joint - given[f]``
        that of likelihood f's given the others."""
        n = labels.shape[0]
        blocks, inverse, sizes = np.unique(labels, return_inverse=True, return_counts=True)
        k = blocks.size
        own = [s[blocks] for s in slots]
        each = np.zeros((len(ys), k, n))  # per likelihood, block, item
        for f, y in enumerate(ys):
            one = [None] * len(ys)
            one[f] = y
            for b in range(k):
                each[f, b] = self.loglik(inputs, own, np.full(n, b), one)
        new_joint, new_without = self._new_cluster_items(inputs, ys)
        params = self.prior_params(inputs)
        join_table = np.array([-np.inf] + [log_join_weight(self.prior_code, params, c) for c in range(1, n + 1)])
        others = sizes[:, None] - (inverse[None, :] == np.arange(k)[:, None])  # block sizes without item i
        log_join = join_table[others]
        k_others = k - (sizes[inverse] == 1)
        new_table = {c: log_new_weight(self.prior_code, params, c) for c in (k - 1, k)}
        log_new = np.array([new_table[c] for c in k_others])[None, :]
        with np.errstate(invalid="ignore"):
            joint = _logsumexp(np.vstack([log_join + each.sum(axis=0), log_new + new_joint]), axis=0)
            given = np.stack([_logsumexp(np.vstack([log_join + _sum_except(each, f), log_new + new_without[f]]),
                                         axis=0) for f in range(len(ys))])
        norm = _logsumexp(np.vstack([log_join, log_new]), axis=0)
        return joint, given, norm

    def log_density(self, labels, slots, inputs, xs):
        """(G,) log p(x | draw): the prior-weighted mixture over the draw's blocks and a new one of
        the likelihoods of the points ``xs`` (one array per likelihood, None: left out)."""
        blocks, first, sizes = np.unique(labels, return_index=True, return_counts=True)
        params = self.prior_params(inputs)
        logw = np.array([log_join_weight(self.prior_code, params, m) for m in sizes]
                        + [log_new_weight(self.prior_code, params, blocks.size)])
        logw -= _logsumexp(logw, axis=0)
        occupied = self.block_logliks(inputs, [s[blocks] for s in slots], xs)
        terms = np.vstack([occupied + logw[:-1, None]])
        if np.isfinite(logw[-1]):
            terms = np.vstack([terms, (self.new_cluster_loglik(inputs, xs) + logw[-1])[None, :]])
        return _logsumexp(terms, axis=0)


def _sum_except(each, f):
    """Sum over axis 0 of ``each`` leaving out row f (0 with one row; no -inf - -inf)."""
    return sum((each[g] for g in range(each.shape[0]) if g != f), np.zeros(each.shape[1:]))
