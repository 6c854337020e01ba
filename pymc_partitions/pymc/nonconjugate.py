"""Non-conjugate partition mixtures written in plain PyMC, sampled with Neal's (2000) Algorithm 8.

The model::

    z = pmp.Partition("z", pmp.CRP(alpha), n=n)
    mu = pm.Normal("mu", 0.0, 3.0, shape=n)          # one slot per possible block (k under FiniteDirichlet)
    sigma = pm.HalfNormal("sigma", 1.0, shape=n)
    pm.StudentT("y", nu=4, mu=mu[z], sigma=sigma[z], observed=y)

Why it is exact. Its joint density is an ordinary PyMC graph,
p(z) prod_j G0(phi_j) prod_i f(y_i | phi_{z_i}), with S slots phi_j (S = n, or k under a finite
Dirichlet: as many as there can be blocks) drawn iid from the base measure G0. Integrating out the
slots no block uses (each integrates to one) leaves p(z) prod_b G0(phi_b) prod_{i in b} f(y_i | phi_b):
a Dirichlet-process (Pitman-Yor, finite) mixture with the blocks' parameters phi_b. The steps keep the
labels canonical (block b = the b-th to appear) with block b's parameter in slot b, so the chain's
state is (partition, parameters of its blocks) plus the unused slots, which are independent draws from
G0 given everything else.

One draw of :class:`NonConjugateGibbs`, each part leaving that joint law invariant:

1. Labels, Algorithm 8 (:mod:`pymc_partitions.samplers.algorithm8`): item i may join an occupied block
   with weight join(|b|) f(y_i | phi_b) or one of m auxiliary parameters with weight new(K) / m
   f(y_i | psi), its own parameter being one of them when it is alone. The auxiliaries of item i are
   fresh draws from G0 that no other item is offered (drawn for all items at the start of the sweep:
   each is independent of the chain until its item is visited).
2. Relabelling: labels made canonical, the occupied slots permuted with them; the free slots are drawn
   afresh from G0 (their exact conditional).
2b. Optional split-merge proposals (``split_merge``, :mod:`pymc_partitions.samplers.slot_split_merge`):
   reversible-jump moves on (partition, occupied slots); the free slots stay the fresh draws of 2, and the
   slots of blocks merged away are drawn afresh.
3. Occupied slots (``slot_update``; ``"nuts"`` leaves them to PyMC's NUTS step on the slot variables, and
   ``"hmc"`` runs per-cluster HMC, :mod:`pymc_partitions.samplers.slot_hmc`): a random-walk Metropolis proposal for every occupied slot at once on
   the value (unconstrained) scale, accepted per slot with the ratio of G0 (with its Jacobian) times the
   likelihood of the slot's items: given the labels the target factorises over slots, so the
   per-slot decisions form one exact kernel. Its step size adapts during tuning only. Or slice
   sampling of every cluster's parameters coordinate by coordinate, the clusters side by side
   (:mod:`pymc_partitions.samplers.slot_slice`); each evaluation is one call of the compiled log
   density of every slot given the labels.

By default (Metropolis slot updates, no split-merge) the draw runs in two compiled kernels
(:mod:`pymc_partitions.samplers.compiled_slots`) calling the model's densities compiled with PyTensor's numba
backend (:mod:`.compiled_slots`): the same random numbers and the same chain as the Python draw below, at 1.5-1.7x
less CPU per draw.

The item log-likelihoods come from the user's graph compiled once: ``model.logp(vars=likelihoods,
sum=False)`` as a function of the value variables. The likelihood of every item under slot k is that
function with labels := k; under a fresh auxiliary it is the function with labels := arange and the
slots := a fresh draw of G0. No Python runs per item.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.graph.replace import clone_replace
from pytensor.tensor.random.op import RandomVariable
from pytensor.tensor.random.type import RandomGeneratorType
from pytensor.tensor.type import TensorType
import pytensor.tensor.subtensor as _subtensor
from pytensor.scalar.basic import Cast as ScalarCast
from pytensor.tensor.elemwise import Elemwise

from .. import _checks
from ..partition import canonicalize
from .._numeric import NoPositiveOption
from ..samplers.algorithm8 import NonFiniteLogLikelihood, trusted_sweep
from ..samplers.compiled_slots import label_sweep, slot_metropolis
from ..samplers.slot_hmc import MAX_LEAPFROG, hmc_sweep
from ..samplers.slot_metropolis import accept_slots, copy_accepted
from ..samplers.slot_slice import slice_sweep, tuned_width
from ..samplers.slot_split_merge import informed_split_merge, slot_split_merge, surrogate_pack, within_covariance
from .compat import BlockedStep, ChainSetupMixin, Competence, ancestors, step_keywords
from .compiled_slots import build as build_densities, flatten_slots, unflatten_slots
from .distributions import CollapsedLikelihoodRV, constant_value, is_partition, likelihood_names
from .terms import PartitionTerms, _resolve_rv
from .typed_call import TypedCall

__all__ = ["NonConjugateModel", "NonConjugateGibbs", "nonconjugate_likelihoods", "sizes_with_count", "slot_variables"]

#: indexing by an integer array (PyTensor 3 has AdvancedSubtensor only; 2.x also AdvancedSubtensor1)
#: Cap on ``m`` (an (n, m) table of log-likelihoods is built every sweep).
MAX_AUXILIARIES = 1000
#: Auxiliaries per item by default (``m=None``): one in the compiled draw, where each costs a base-measure draw and
#: an evaluation of every item's likelihood per sweep and m = 1 gives the most effective samples per CPU second
#: (Old Faithful: K 1.6x, densities 1.3-2.6x m = 3's; Galaxies: equal; benchmarks/README.md, session 41); three
#: in the Python step, where the m draws and evaluations are batched into a few calls.
AUXILIARIES = {"compiled": 1, "python": 3}
#: Split-merge proposals per draw by default (none: measured, they pay on galaxies with Student-t
#: clusters but lose on Old Faithful, benchmarks/README.md), and the cap (each costs up to three
#: evaluations of the log-likelihood of every item).
SPLIT_MERGE_MOVES = 0
MAX_SPLIT_MERGE_MOVES = 10_000
#: The split-merge proposals (``split_merge_proposal``): see :mod:`~pymc_partitions.samplers.slot_split_merge`.
SPLIT_MERGE_PROPOSALS = ("random_walk", "informed")
SPLIT_MERGE_PROPOSAL = "random_walk"
#: How the occupied slots are updated given the labels (``slot_update``).
SLOT_UPDATES = ("slice", "metropolis", "hmc", "nuts")
SLOT_UPDATE = "metropolis"
#: Updates of the occupied slots per draw by default (``slot_steps=None``), per slot update: measured
#: (benchmarks/README.md), ten size-scaled Metropolis steps cost 1.4x two unscaled ones per draw and give
#: 1.4-5x the density ESS per CPU second on Galaxies and Old Faithful; one slice sweep or HMC transition
#: beats two.
SLOT_STEPS = {"metropolis": 10, "slice": 1, "hmc": 1, "nuts": 0}
#: Cap on ``slot_steps`` (each is an evaluation of every item's log-likelihood per draw, or several).
MAX_SLOT_STEPS = 10_000
#: Leapfrog steps per HMC transition of the occupied slots (``leapfrog``) by default, and the cap.
LEAPFROG = 5

_INDEX_OPS = tuple(getattr(_subtensor, name) for name in ("AdvancedSubtensor", "AdvancedSubtensor1")
                   if hasattr(_subtensor, name))


def _is_rv(model, var):
    return var in model.rvs_to_values


def _label_index(ix, partition):
    """The integer dtypes ``ix`` casts the labels to if ``ix`` is the partition itself or a chain of pure
    dtype casts of it (``z.astype("int32")``), else None (``z + 1``, ``z // 2``, a cast to bool/float)."""
    casts = []
    while ix is not partition:
        node = ix.owner
        if (node is None or not isinstance(node.op, Elemwise) or not isinstance(node.op.scalar_op, ScalarCast)
                or not ix.dtype.startswith(("int", "uint"))):
            return None
        casts.append(ix.dtype)
        ix = node.inputs[0]
    return casts


def _walk(model, partition, start):
    """Walk the graph of ``start`` (stopping at model variables): (free RVs reached directly, RVs
    reached inside an expression indexed by the partition, whether the partition is used other than
    as such an index, the integer dtypes the labels are cast to on the way to an index)."""
    direct, indexed, stray, casts = set(), set(), False, set()
    stack, seen = list(start), set()
    while stack:
        var = stack.pop()
        if var in seen:
            continue
        seen.add(var)
        if var is partition:
            stray = True
            continue
        if _is_rv(model, var):
            direct.add(var)
            continue
        node = var.owner
        if node is None:
            continue
        if isinstance(node.op, _INDEX_OPS) and any(partition in ancestors([ix]) for ix in node.inputs[1:]):
            for ix in node.inputs[1:]:
                if partition not in ancestors([ix]):
                    continue
                cast = _label_index(ix, partition)
                if cast is None:
                    stray = True  # e.g. mu[z + 1]: not the labels themselves
                else:
                    casts.update(cast)
            for a in ancestors([node.inputs[0]], blockers=list(model.rvs_to_values)):
                if a is partition:
                    stray = True  # e.g. mu[z][z]: the labels inside the indexed expression
                elif _is_rv(model, a):
                    indexed.add(a)
            continue
        stack.extend(node.inputs)
    return direct, indexed, stray, casts


def nonconjugate_likelihoods(model, partition) -> list:
    """The observed variables of ``model`` that depend on ``partition`` other than as a collapsed
    likelihood of this package (a known partition, itself observed, is not one of them)."""
    return list(dict.fromkeys(
        obs for obs in model.observed_RVs
        if obs is not partition and not isinstance(obs.owner.op, CollapsedLikelihoodRV) and partition in ancestors([obs])
    ))


def slot_variables(model, partition) -> list:
    """The free variables indexed by ``partition`` in its non-conjugate likelihoods, and the per-slot
    parents of their distributions (:func:`_per_slot_parents`), in model order."""
    found = set()
    for obs in nonconjugate_likelihoods(model, partition):
        indexed = _walk(model, partition, obs.owner.inputs)[1]
        found |= indexed
    found |= _per_slot_parents(model, partition, found)
    return [v for v in model.free_RVs if v in found]


def _first_length(var):
    """The length of ``var``'s first axis (None for a scalar): static if known, else evaluated (dims)."""
    if var.type.ndim == 0:
        return None
    length = _static_first(var)
    return int(var.shape[0].eval()) if length is None else length


def _per_slot_parents(model, partition, slots) -> set:
    """The free variables that the distributions of the slot variables ``slots`` read row by row, one row per
    slot, e.g. a random kappa in ``mu = pm.Normal("mu", 0, tau=kappa * tau, shape=n)``: slot j's
    parameters are drawn together from the base measure, so they are slot variables too (and their own per-slot
    parents, recursively). A parent as long as the slot axis that enters every slot (a shared vector of length
    k = D) stays shared. That each one enters slot j only, the same way, is checked when the step is built
    (``NonConjugateModel._check_base_iid``)."""
    free = set(model.free_RVs) - {partition}
    found, stack = set(), [v for v in slots if v.owner is not None]
    while stack:
        child = stack.pop()
        length = _first_length(child)
        for a in ancestors(child.owner.inputs, blockers=list(model.rvs_to_values)):
            if (a in free and a not in slots and a not in found and a.type.ndim >= 1 and _first_length(a) == length
                    and _enters_slot_by_slot(model, child, a)):
                found.add(a)
                stack.append(a)
    return found


def _enters_slot_by_slot(model, child, parent) -> bool:
    """Whether moving ``parent``'s last row (at the model's initial point) moves the log density of ``child``'s
    last slot and of no other slot (row j of the parent belongs to slot j), or of every slot (shared: False);
    anything else (``lambda_[::-1]``) is refused."""
    logp = model.compile_logp(vars=[child], sum=False, jacobian=False)
    point = model.initial_point(0)
    name = model.rvs_to_values[parent].name

    def per_slot(values):
        lp = np.asarray(logp(values)[0], dtype=np.float64)
        return lp.reshape(lp.shape[0], -1).sum(axis=1) if lp.ndim else lp.reshape(1)

    moved = np.array(point[name], dtype=np.float64)
    moved[-1] += 0.25
    before, after = per_slot(point), per_slot({**point, name: moved.astype(point[name].dtype)})
    changed = ~np.isclose(before, after, rtol=1e-12, atol=0.0)
    if before.shape[0] != _first_length(child) or changed.all() or not changed.any():
        return False  # shared by every slot (or not read there)
    if changed[-1] and not changed[:-1].any():
        return True
    raise ValueError(f"{parent.name!r} has one row per slot of {child.name!r} but its last row enters the distribution "
                     f"of other slots of {child.name!r} (slots {np.flatnonzero(changed).tolist()} of "
                     f"{changed.size}): a per-slot parameter of the base measure must enter slot j with its row j "
                     f"(e.g. pm.Normal('{child.name}', 0, tau={parent.name} * tau, shape=n)), not reordered or combined")


def _static_first(var):
    shape = var.type.shape
    return None if not shape else shape[0]


def _close(a, b):
    return a.shape == b.shape and bool(np.all((a == b) | np.isclose(a, b, rtol=1e-9, atol=1e-12, equal_nan=True)))


class NonConjugateModel:
    """The parts of a model a non-conjugate partition step needs, checked, and their compiled
    functions: every item's log-likelihood, the base measure's log density per slot and fresh draws
    from it, all functions of the model's value variables (a point)."""

    def __init__(self, model, partition):
        model = pm.modelcontext(model)
        rv = _resolve_rv(model, partition)
        if not is_partition(rv):
            raise TypeError(f"{rv.name!r} is not a pmp.Partition variable")
        self.likelihoods = nonconjugate_likelihoods(model, rv)
        for free in model.free_RVs:
            if free is not rv and rv in ancestors([free]):
                raise ValueError(f"the free variable {free.name!r} depends on the partition {rv.name!r}: "
                                 "NonConjugateGibbs would ignore it. If it holds the missing values of an observed "
                                 "variable (PyMC imputes NaN in observed data), drop those items")
        self.terms = PartitionTerms(model, rv, allow=self.likelihoods)
        name, n = self.terms.name, self.terms.n
        self.n = n
        self.n_slots = self.terms.k if self.terms.k > 0 else n
        if not self.likelihoods:
            raise ValueError(f"the partition {name!r} has no likelihood that uses it through indexed parameters "
                             f"(e.g. pm.Normal('y', mu=mu[{name}], ...)): nothing for NonConjugateGibbs to do")
        collapsed = [obs.name for obs in model.observed_RVs if isinstance(obs.owner.op, CollapsedLikelihoodRV)
                     and obs.owner.inputs[2] is rv]
        if collapsed:
            raise ValueError(f"the partition {name!r} has both collapsed likelihoods ({collapsed}) and non-conjugate "
                             f"ones ({[o.name for o in self.likelihoods]}): mixing them on one partition is not "
                             "supported yet; write the collapsed one with slot parameters too")
        slots = set()
        self._casts = set()  # integer dtypes the likelihoods cast the labels to before indexing
        for obs in self.likelihoods:
            direct, indexed, stray, casts = _walk(model, rv, obs.owner.inputs)
            if stray:
                raise ValueError(f"{obs.name!r} uses the partition {name!r} other than as the index of slot "
                                 f"parameters (write mu[{name}], one slot per possible block; an integer dtype "
                                 f"cast such as mu[{name}.astype('int32')] is accepted, arithmetic on the labels "
                                 f"is not); or, for data given the partition with the clusters' parameters "
                                 f"integrated out, use {likelihood_names()} (partition={name})")
            top = min(self.n, self.n_slots) - 1  # the largest label
            narrow = sorted(c for c in casts if np.iinfo(c).max < top)
            if narrow:
                raise ValueError(f"{obs.name!r} casts the partition {name!r} to {narrow[0]}, which cannot hold its "
                                 f"labels up to {top}: cast to a wider integer dtype (e.g. 'int32') or index with "
                                 f"{name} itself")
            if not indexed:
                raise ValueError(f"{obs.name!r} depends on the partition {name!r} but indexes no free variable with "
                                 f"it: write its cluster parameters as slots, e.g. mu = pm.Normal('mu', 0, 1, "
                                 f"shape={self.n_slots}) and mu[{name}]")
            both = direct & indexed
            if both:
                raise ValueError(f"{obs.name!r} uses {sorted(v.name for v in both)} both indexed by the partition "
                                 f"{name!r} and otherwise: a slot parameter may enter the likelihood only as "
                                 f"slot[{name}]")
            slots |= indexed
            self._casts |= casts
        slots |= _per_slot_parents(model, rv, slots)
        self.slot_rvs = [v for v in model.free_RVs if v in slots]
        self._check_slots(model, rv)
        self._check_observed(model)
        self.model = model
        self.value_vars = list(model.value_vars)
        self.value_names = [v.name for v in self.value_vars]
        self.slot_values = [model.rvs_to_values[v] for v in self.slot_rvs]
        self.slot_names = [v.name for v in self.slot_values]
        read = ancestors(self.likelihoods + [model.rvs_to_values[obs] for obs in self.likelihoods])
        self._data = [(v, np.shape(v.get_value(borrow=True))) for v in dict.fromkeys(read)
                      if isinstance(v, SharedVariable) and not isinstance(v.type, RandomGeneratorType)]
        try:
            self._compile(model, rv)
        except ValueError as error:  # (PyTensor's "Input dimension mismatch" -- C backend -- or "Vectorized input 2
            # has an incompatible shape" -- numba backend -- names neither the data nor the items)
            if not self._data or not any(word in str(error) for word in ("mismatch", "incompatible shape")):
                raise
            shapes = ", ".join(f"{v.name!r} {shape}" for v, shape in self._data)
            raise ValueError(f"the likelihoods {[o.name for o in self.likelihoods]} cannot be evaluated at the model's "
                             f"initial point ({str(error).splitlines()[0]}); the data they read have shapes {shapes} "
                             f"and the partition {self.terms.name!r} is of n={self.n} items: did pm.set_data change "
                             "a covariate's number of items?") from error

    def check_data(self):
        """pm.set_data may change the values of the data the likelihoods read, not their shapes: the partition is of
        the n items the model was built with."""
        for v, shape in self._data:
            now = np.shape(v.get_value(borrow=True))
            if now != shape:
                raise ValueError(f"pm.set_data changed the shape of {v.name!r} from {shape} to {now}: the partition "
                                 f"{self.terms.name!r} is of the n={self.n} items the model was built with, so "
                                 "pm.set_data may change the data's values but not their shape while sampling (for "
                                 "new points after sampling, pmp.predictive_density gives the posterior predictive "
                                 "density)")

    # ------------------------------------------------------------------ checks
    def _check_slots(self, model, rv):
        name, S = self.terms.name, self.n_slots
        where = f"k={S} under its FiniteDirichlet prior" if self.terms.k > 0 else f"n={S}, its number of items"
        point = model.initial_point(0)
        for v in self.slot_rvs:
            if v.ndim == 0:
                raise ValueError(f"{v.name!r} is indexed by the partition {name!r} but is a scalar: give it one slot "
                                 f"per possible block (shape={S}); if it is a parameter shared by every cluster, it "
                                 f"goes outside the index: slot[{name}] + {v.name}, not (slot + {v.name})[{name}]")
            length = _static_first(v)
            if length is None:
                length = np.shape(point[model.rvs_to_values[v].name])[0]
            if length != S:
                raise ValueError(f"{v.name!r} is indexed by the partition {name!r}: its first axis must have one slot "
                                 f"per possible block, {where}; got {length} (if it is a parameter shared by every "
                                 f"cluster, it goes outside the index: slot[{name}] + {v.name}, not "
                                 f"(slot + {v.name})[{name}])")
            if v.dtype.startswith(("int", "uint", "bool")):
                raise ValueError(f"{v.name!r}: discrete slot parameters are not supported by NonConjugateGibbs yet")
            if rv in ancestors([v]):
                raise ValueError(f"the distribution of the slot variable {v.name!r} depends on the partition {name!r}: "
                                 "slots must be iid draws from a base measure that does not involve the partition")
            self._check_identical(v)
        slot_set = set(self.slot_rvs)
        ours = set(self.likelihoods) | slot_set | {rv}
        for other in model.basic_RVs + model.potentials:
            if other in ours:
                continue
            if slot_set & set(ancestors([other])):
                raise ValueError(f"{other.name!r} depends on the slot variable(s) "
                                 f"{sorted(s.name for s in slot_set & set(ancestors([other])))}: NonConjugateGibbs "
                                 "updates slots from their base measure and the likelihoods indexed by the partition "
                                 "only, and would ignore it")

    def _check_identical(self, v):
        """Refuse slots whose distribution's parameters vary along the slot axis (not iid), unless they
        are functions of other slot variables (``pm.Normal("mu", 0, 3 * sigma, shape=n)``: checked to be
        slot by slot by :meth:`_check_base_iid`)."""
        others = set(self.slot_rvs) - {v}
        op = v.owner.op
        ndims_params = getattr(op, "ndims_params", None)
        ndim_supp = getattr(op, "ndim_supp", None)
        params = v.owner.inputs[2:]
        if ndims_params is None or ndim_supp is None or len(ndims_params) != len(params):
            return  # (not a plain RandomVariable: cannot tell; documented requirement)
        batch = v.ndim - ndim_supp
        for p, core in zip(params, ndims_params):
            p_batch = p.type.ndim - core
            if batch > 0 and p_batch == batch and p.type.shape[0] != 1 and not others & set(ancestors([p])):
                raise ValueError(f"the slot variable {v.name!r} has a parameter that varies along its slot axis: the "
                                 "slots must be identically distributed (a base measure), e.g. "
                                 "pm.Normal('mu', 0.0, 3.0, shape=n) with scalar parameters")

    def _check_observed(self, model):
        for obs in self.likelihoods:
            value = constant_value(model.rvs_to_values[obs])
            if value is not None and not np.all(np.isfinite(np.asarray(value, dtype=np.float64))):
                raise ValueError(f"{obs.name!r}: observed contains NaN or infinite values (PyMC would impute them as "
                                 "free variables, which NonConjugateGibbs does not sample); drop those items")
            if obs.ndim == 0 or (_static_first(obs) not in (None, self.n)):
                raise ValueError(f"{obs.name!r}: a likelihood indexed by the partition {self.terms.name!r} must have "
                                 f"its items on the first axis (length n={self.n}), got shape {obs.type.shape}")
            data = model.rvs_to_values[obs]
            shape = np.shape(data.get_value(borrow=True)) if isinstance(data, SharedVariable) else ()
            if shape and shape[0] != self.n:  # (pm.Data: its shape is known only from its value)
                raise ValueError(f"{obs.name!r}: its observed data {data.name!r} hold {shape[0]} items on the first "
                                 f"axis (shape {shape}), but the partition {self.terms.name!r} is of n={self.n} items "
                                 "(changed by pm.set_data? the partition's n is fixed when the model is built: build "
                                 "the model again for other items, or use pmp.predictive_density for new points)")

    # ------------------------------------------------------------------ compiled functions
    def _compile(self, model, rv):
        n, S = self.n, self.n_slots
        terms = model.logp(vars=self.likelihoods, sum=False)
        item = 0
        for obs, t in zip(self.likelihoods, terms):
            if t.ndim == 0:
                raise ValueError(f"{obs.name!r}: its log-likelihood is not elementwise over items")
            item = item + (t.sum(axis=tuple(range(1, t.ndim))) if t.ndim > 1 else t)
        self._item_ll = TypedCall(pm.pytensorf.compile(self.value_vars, item, on_unused_input="ignore"))
        self.item_graph = item  # (n,) every item's log-likelihood, a graph of the value variables
        # every item under its own slot values (one row per item, labels := arange(n)): the auxiliaries in one
        # evaluation even with fewer slots than items (FiniteDirichlet), if the labels' dtypes hold n - 1
        top = n - 1
        self._rows_ok = all(np.iinfo(d).max >= top for d in self._casts | {self.terms.dtype})
        if self._rows_ok:
            rows = [pt.tensor(dtype=v.dtype, shape=(None,) + tuple(v.type.shape[1:]), name=f"{v.name}_rows")
                    for v in self.slot_values]
            per_row = clone_replace(item, replace=dict(zip(self.slot_values, rows)), rebuild_strict=False)
            self._rows_ll = TypedCall(pm.pytensorf.compile(self.value_vars + rows, per_row, on_unused_input="ignore"))
        base = 0
        for t in model.logp(vars=self.slot_rvs, sum=False, jacobian=True):
            base = base + (t.sum(axis=tuple(range(1, t.ndim))) if t.ndim > 1 else t)
        self._base_logp = pm.pytensorf.compile(self.value_vars, base, on_unused_input="ignore")
        self.base_graph = base  # (S,) every slot's base-measure log density (value scale, Jacobian)
        # each slot's log density given the labels (base measure + its items' log-likelihoods): one call per
        # evaluation of the slot updates
        labels = model.rvs_to_values[rv]
        cluster = pt.inc_subtensor(pt.zeros(S)[labels], item) + base
        self._cluster_logp = TypedCall(pm.pytensorf.compile(self.value_vars, cluster, on_unused_input="ignore"))
        self._cluster_graph = cluster
        self._cluster_grad = None  # compiled on first use (cluster_logp_grad)
        self._cluster_derivatives = None  # compiled on first use (cluster_derivatives)
        self._check_base_iid(model)
        self._check_read_slot_by_slot(model)
        # fresh draws of every slot from the base measure, given the other variables' values, on the value scale
        slot_set = set(self.slot_rvs)
        others = [v for v in model.free_RVs if v not in slot_set]
        replace = dict(zip(others, model.replace_rvs_by_values(others)))
        # ... and `count` of them at once (each slot RV's size with `count` on the slot axis), if every slot
        # variable is a RandomVariable with a size
        count = pt.iscalar("count")
        resized = sizes_with_count(self.slot_rvs, count)
        batched = len(resized) == len(self.slot_rvs)
        draws = clone_replace(self.slot_rvs, replace=replace)
        many = clone_replace(self.slot_rvs, replace={**replace, **resized}, rebuild_strict=False) if batched else []
        rngs = [v for v in ancestors(draws + many)
                if isinstance(v, SharedVariable) and isinstance(v.type, RandomGeneratorType)]
        own = {r: pytensor.shared(np.random.default_rng(i)) for i, r in enumerate(dict.fromkeys(rngs))}
        draws, many = (clone_replace(d, replace=own) if d else d for d in (draws, many))

        def value_scale(ds):
            outs = []
            for rv_, d in zip(self.slot_rvs, ds):
                tr = model.rvs_to_transforms.get(rv_)
                outs.append(d if tr is None else tr.forward(d, *d.owner.inputs))
            return outs

        self._rngs = list(own.values())
        self._draw = pm.pytensorf.compile(self.value_vars, value_scale(draws), on_unused_input="ignore")
        self._draw_many = (TypedCall(pm.pytensorf.compile(self.value_vars + [count], value_scale(many),
                                                          on_unused_input="ignore"))
                           if batched else None)
        # elementwise over items: check that one item's label moves its term only
        point = model.initial_point(0)
        vals = self.values(point)
        labels_at = self.value_names.index(self.terms.value_name)
        try:
            slots = [np.asarray(x).copy() for x in self.draw(vals)]
        except NotImplementedError as error:  # (pm.Flat, pm.HalfFlat, a CustomDist without random)
            raise ValueError(f"the base measure of the slot variables {[v.name for v in self.slot_rvs]} cannot be "
                             "drawn from: NonConjugateGibbs draws the free slots and the auxiliaries from it, so every "
                             "slot variable needs a proper distribution with random draws (not pm.Flat / pm.HalfFlat; "
                             f"a CustomDist needs its random function) ({error})") from error
        z0 = np.zeros(n, vals[labels_at].dtype)
        a = self.item_loglik(vals, z0, slots)
        if a.shape != (n,):
            raise ValueError(f"the log-likelihood of {[o.name for o in self.likelihoods]} has shape {a.shape}: its "
                             f"first axis must be the n={n} items")
        if n > 1 and S > 1:
            z1 = z0.copy()
            z1[n - 1] = 1
            b = self.item_loglik(vals, z1, slots)
            if not np.allclose(a[: n - 1], b[: n - 1], equal_nan=True):
                raise ValueError(f"the log-likelihood of {[o.name for o in self.likelihoods]} is not elementwise over "
                                 "items: item i's term must depend on its own label only")

    def _check_base_iid(self, model):
        """The slots' joint density must be a product of one base measure over slots: with every slot
        holding the same values every slot's log density is the same (identical), and changing the last
        slot changes no other slot's (independent). Catches slot distributions whose parameters vary
        along the slot axis through other slot variables (``3 * sigma[::-1]``, ``sigma.mean()``). Also refuses
        a slot variable with no density beside its own value (``pm.DiracDelta``): every move of the slots would
        be refused."""
        S = self.n_slots
        vals = self.values(model.initial_point(0))
        here = [np.asarray(vals[self.value_names.index(name)]) for name in self.slot_names]
        same = [np.repeat(s[:1], S, axis=0) for s in here]
        lp = self.base_logp(vals, same)
        moved = [s.copy() for s in same]
        for s in moved:
            s[S - 1] = s[S - 1] + 0.5
        lp_moved = self.base_logp(vals, moved)
        names = [v.name for v in self.slot_rvs]
        if lp.shape != (S,) or not np.allclose(lp, lp[0]) or not np.allclose(lp_moved[: S - 1], lp[: S - 1]):
            raise ValueError(f"the slot variables {names} are not independent and identically distributed across "
                             "slots: the distribution of slot j may depend on other slot variables' slot j only "
                             "(e.g. pm.Normal('mu', 0, 3 * sigma, shape=n)), not on other slots or on the "
                             "slot's position")
        for q, v in enumerate(self.slot_rvs):
            nudged = [x.copy() for x in same]
            nudged[q][S - 1] += 0.25
            if np.isfinite(lp[S - 1]) and not np.isfinite(self.base_logp(vals, nudged)[S - 1]):
                raise ValueError(f"the slot variable {v.name!r} has no density beside its own value (a point mass such "
                                 "as pm.DiracDelta, or a bounded distribution without its transform): NonConjugateGibbs "
                                 "moves the slots by proposals, which would all be refused; use a constant (e.g. "
                                 "pt.ones(n)) for a parameter that does not vary")

    def _check_read_slot_by_slot(self, model):
        """Item i's likelihood must read the slot its label names and no other, the same way for every slot: the
        steps keep block b's parameter in slot b and draw the free slots afresh. Catches ``mu[::-1][z]``,
        ``mu[perm][z]``, ``pt.sort(mu)[z]``, ``pt.cumsum(mu)[z]``, ``(mu - mu.mean())[z]``, which are accepted by
        the graph walk but read other slots."""
        S, n = self.n_slots, self.n
        vals = self.values(model.initial_point(0))
        here = [np.asarray(vals[self.value_names.index(name)]) for name in self.slot_names]
        same = [np.repeat(h[:1], S, axis=0) for h in here]
        rng = np.random.default_rng(0)
        moved = [(x + rng.uniform(0.2, 0.6, size=x.shape)).astype(x.dtype) for x in same]  # every slot different
        reference = self.item_loglik(vals, np.zeros(n, self.terms.dtype), same)
        for slot in sorted({0, min(n, S) - 1}):  # (the first and the last label a block can take)
            labels = np.full(n, slot, self.terms.dtype)
            alone = [x.copy() for x in same]
            for a, b in zip(alone, moved):
                a[slot] = b[slot]  # this slot as in `moved`, the others as in `same`
            if not (_close(self.item_loglik(vals, labels, same), reference)  # every slot read the same way
                    and _close(self.item_loglik(vals, labels, alone), self.item_loglik(vals, labels, moved))):
                # (the items labelled `slot` read that slot only: the other slots' values do not matter)
                names = [o.name for o in self.likelihoods]
                raise ValueError(f"the likelihood(s) {names} do not read each item's parameters from the slot its "
                                 f"label names, the same way for every slot: write slot[{self.terms.name}] with slot "
                                 "the slot variable itself (or an elementwise function of slot variables); "
                                 f"reordered or combined slots such as mu[::-1][{self.terms.name}], "
                                 f"pt.sort(mu)[{self.terms.name}] or (mu - mu.mean())[{self.terms.name}] read other "
                                 "slots, which the step draws afresh")

    def graphs_of_rows(self, index, rows):
        """(item, base): every item's log-likelihood with the labels := ``index`` and the slot variables' values
        := ``rows`` (a table of any number r of slots, one array per slot variable), and the base measure's log
        density of each of the r rows (the slot variables' sizes with r on the slot axis: PyMC's log density
        broadcasts to the size)."""
        labels = self.value_vars[self.value_names.index(self.terms.value_name)]
        item = clone_replace(self.item_graph, replace={labels: index, **dict(zip(self.slot_values, rows))},
                             rebuild_strict=False)
        resized = sizes_with_count(self.slot_rvs, rows[0].shape[0])
        base = clone_replace(self.base_graph, replace={**resized, **dict(zip(self.slot_values, rows))},
                             rebuild_strict=False)
        return item, base

    def label_dtypes(self) -> set:
        """The integer dtypes the labels take in the likelihoods' graphs (their own and any casts)."""
        return self._casts | {self.terms.dtype}

    def reseed(self, rng: np.random.Generator):
        pm.pytensorf.reseed_rngs(self._rngs, rng.integers(2**63))

    def values(self, point):
        """The value variables' values, in order, from a point."""
        return [point[name] for name in self.value_names]

    def _with(self, values, labels=None, slots=None):
        values = list(values)
        if labels is not None:
            values[self.value_names.index(self.terms.value_name)] = labels
        if slots is not None:
            for name, s in zip(self.slot_names, slots):
                values[self.value_names.index(name)] = s
        return values

    def item_loglik(self, values, labels, slots):
        """(n,) log-likelihood of every item given labels and slot values (value scale)."""
        return np.asarray(self._item_ll(*self._with(values, labels, slots)), dtype=np.float64)

    def base_logp(self, values, slots):
        """(S,) log density of each slot under the base measure (value scale, with Jacobian)."""
        return np.asarray(self._base_logp(*self._with(values, None, slots)), dtype=np.float64)

    def cluster_logp(self, values, labels, slots):
        """(S,) log density of each slot given the labels: base measure (value scale, with Jacobian) plus the
        log-likelihoods of the items labelled with it."""
        return np.asarray(self._cluster_logp(*self._with(values, labels, slots)), dtype=np.float64)

    def cluster_logp_args(self, args, checked=True):
        """:meth:`cluster_logp` of a full argument list (``_with``'s); ``checked=False`` skips PyTensor's checks
        of the arguments' types (for the Metropolis loop, whose arguments keep the types of a first, checked
        call)."""
        fn = self._cluster_logp if checked else self._cluster_logp.trusted
        return np.asarray(fn(*args), dtype=np.float64)

    def cluster_logp_grad(self, values, labels, slots):
        """(the (S,) log densities of :meth:`cluster_logp`, their gradients: one array per slot variable, of its
        shape, row j the gradient of slot j's log density in slot j's values). Slot j's log density depends on
        slot j only (checked iid base measure, items elementwise), so the gradient of their sum is that."""
        if self._cluster_grad is None:
            try:
                grads = pt.grad(self._cluster_graph.sum(), self.slot_values)
            except Exception as exc:  # NullTypeGradError, NotImplementedError, ... from PyTensor
                raise ValueError(f"slot_update='hmc' needs the gradient of the log density of the slot variables "
                                 f"{[v.name for v in self.slot_rvs]} and their likelihoods, which PyTensor cannot "
                                 f"give ({type(exc).__name__}: {exc}); use slot_update='slice' or 'metropolis'") from exc
            self._cluster_grad = pm.pytensorf.compile(self.value_vars, [self._cluster_graph, *grads],
                                                      on_unused_input="ignore")
        out = self._cluster_grad(*self._with(values, labels, slots))
        return np.asarray(out[0], dtype=np.float64), [np.asarray(g, dtype=np.float64) for g in out[1:]]

    def cluster_derivatives(self, values, labels, slots):
        """(lp (S,), gradient (S, d), Hessian (S, d, d)) of each slot's log density given the labels
        (:meth:`cluster_logp`) in its own d values (the slot variables' values flattened per slot, in
        order); compiled on first use. ``ValueError`` if the model's log density has no gradient."""
        if self._cluster_derivatives is None:
            self._cluster_derivatives = self._compile_derivatives()
        lp, g, h = self._cluster_derivatives(*self._with(values, labels, slots))
        return np.asarray(lp, np.float64), np.asarray(g, np.float64), np.asarray(h, np.float64)

    def _compile_derivatives(self):
        slot_values = self.slot_values
        point = self.model.initial_point(0)
        d = sum(int(np.prod(np.shape(point[name])[1:], dtype=np.int64)) for name in self.slot_names)

        def flat(parts):
            return pt.concatenate([pt.cast(p, "float64").reshape((p.shape[0], -1)) for p in parts], axis=1)

        try:
            grad = flat(pt.grad(self._cluster_graph.sum(), slot_values))
            hess = pt.stack([flat(pt.grad(grad[:, c].sum(), slot_values)) for c in range(d)], axis=1)
        except Exception as err:  # (a log density PyTensor cannot differentiate)
            raise ValueError(f"the log density of the slot variables {[v.name for v in self.slot_rvs]} and "
                             f"{[o.name for o in self.likelihoods]} has no gradient in the slots ({err}): "
                             "use split_merge_proposal='random_walk'") from None
        return pm.pytensorf.compile(self.value_vars, [self._cluster_graph, grad, hess], on_unused_input="ignore")

    def features(self):
        """(n, p) floats per item for a split-merge move's surrogate allocation: the observed values of the
        likelihoods, flattened per item (a column of zeros when they are not constants)."""
        parts = []
        for obs in self.likelihoods:
            value = constant_value(self.model.rvs_to_values[obs])
            if value is None:
                return np.zeros((self.n, 1))
            parts.append(np.asarray(value, np.float64).reshape(self.n, -1))
        return np.concatenate(parts, axis=1)

    def draw(self, values):
        """Fresh values of all slots from the base measure (value scale)."""
        return [np.asarray(d) for d in self._draw(*values)]

    def draw_rows(self, values, sets=1):
        """``sets`` independent sets of fresh values of all slots from the base measure, each one row per item at
        least (value scale; a multiple of the S slots when not drawn at once): a list of ``sets`` lists, one
        array per slot variable (at least S rows too: the last set gives the free slots, and S > n under
        FiniteDirichlet(alpha, k) with k > n). Drawn in one call when the slot variables allow it."""
        whole = -(-self.n // self.n_slots)  # draws of S rows covering the n items (rows_loglik's fallback takes S)
        rows = max(self.n, self.n_slots) if self._rows_ok else whole * self.n_slots  # (n items, S free slots)
        if self._draw_many is not None:
            many = self.draw_many(values, sets * rows)
            return [[d[j * rows:(j + 1) * rows] for d in many] for j in range(sets)]
        out = []
        for _ in range(sets):
            chunks = [self.draw(values) for _ in range(whole)]
            out.append([np.concatenate([c[q] for c in chunks]) for q in range(len(self.slot_values))])
        return out

    def draw_many(self, values, count):
        """``count`` fresh values of a slot from the base measure (value scale) in one call, one array per slot
        variable (count on the slot axis); None when the slot variables cannot be drawn so (not RandomVariables
        with a size)."""
        if self._draw_many is None:
            return None
        return [np.asarray(d) for d in self._draw_many(*values, np.asarray(count, np.int32))]

    def rows_loglik(self, values, rows):
        """(n,) log-likelihood of item i under row i of ``rows`` (from :meth:`draw_rows`): one evaluation
        when the labels' dtypes hold n - 1, else one per S items (slot j := row c S + j, labels := j)."""
        n, S = self.n, self.n_slots
        if self._rows_ok:
            labels = np.arange(n, dtype=self.terms.dtype)
            return np.asarray(self._rows_ll(*self._with(values, labels, None), *[r[:n] for r in rows]), np.float64)
        out = np.empty(n)
        for lo in range(0, n, S):
            hi = min(n, lo + S)
            labels = np.zeros(n, self.terms.dtype)
            labels[lo:hi] = np.arange(hi - lo)
            out[lo:hi] = self.item_loglik(values, labels, [r[lo:lo + S] for r in rows])[lo:hi]
        return out


class NonConjugateGibbs(ChainSetupMixin, BlockedStep):
    """Neal's (2000) Algorithm 8 for a partition whose clusters have parameters written as slots
    (``mu = pm.Normal("mu", 0, 3, shape=n)``; ``pm.StudentT("y", 4, mu[z], sigma[z], observed=y)``).

    A blocked step over the partition and its slot variables: labels by Algorithm 8 with ``m``
    auxiliary parameters, then canonical relabelling with the slots, fresh base-measure draws for
    the unused slots, ``split_merge`` split-merge proposals on the labels and occupied slots together
    (:mod:`~pymc_partitions.samplers.slot_split_merge`), and ``slot_steps`` updates of all occupied
    slots given the labels (``slot_update``: random-walk Metropolis, one acceptance per slot, or
    per-cluster slice sampling; tuned during tuning only). Exact for any prior of the package (CRP, Pitman-Yor, FiniteDirichlet). ``pm.sample`` assigns it automatically; the other
    free variables (e.g. a shared ``nu``, ``alpha``) get their usual steps.

    Parameters
    ----------
    vars : list
        The Partition variable (its slot variables are found in the model), optionally with them.
    m : int, optional
        Auxiliary parameters offered to each item (at most ``MAX_AUXILIARIES``, 1000: each costs
        an evaluation of the log-likelihood of every item and n floats per sweep). By default 1 in the compiled
        draw (``compiled``) and 3 otherwise (``AUXILIARIES``, measured).
    slot_steps : int, optional
        Updates of the occupied slots per draw (Metropolis steps, slice sweeps over every coordinate, or HMC
        transitions; at most ``MAX_SLOT_STEPS``, 10000); by default ``SLOT_STEPS[slot_update]``: 10 Metropolis steps,
        1 slice sweep, 1 HMC transition.
    scale : float, default 0.5
        Initial random-walk step (value scale), or initial HMC step (``"hmc"``, in units of the mass).
    slot_update : {"metropolis", "slice", "hmc", "nuts"}, default "metropolis"
        How the occupied slots are updated given the labels: ``"metropolis"``, one random-walk proposal for
        every slot at once on the value (unconstrained) scale, accepted per slot, its step adapted during
        tuning to an acceptance of 0.3; ``"slice"``, Neal's (2003) slice sampler (stepping out, shrinkage)
        coordinate by coordinate, every cluster's sampler run side by side
        (:mod:`~pymc_partitions.samplers.slot_slice`), its initial interval ``width / sqrt(cluster size)``
        per coordinate, the widths following twice the distance moved during tuning; ``"hmc"``, one HMC
        transition of ``leapfrog`` steps per cluster, side by side, accepted per cluster
        (:mod:`~pymc_partitions.samplers.slot_hmc`; PyTensor's gradient of the compiled per-slot log
        density), cluster b's mass its size times a per-coordinate precision estimated during tuning, the
        step (``scale``) adapted during tuning to an acceptance of 0.7; ``"nuts"``, none: the step's
        ``vars`` are the partition only, and ``pm.sample`` gives the slot variables PyMC's NUTS (or pass
        ``pm.NUTS([mu, sigma])`` yourself), which updates every slot given the labels. Measured per
        effective sample per CPU second in ``docs/nonconjugate.md``.
    size_scaled : bool, default True
        ``"metropolis"`` only: cluster b's step is ``scale / sqrt(n_b)`` (a cluster's posterior spread
        shrinks like that), one ``scale`` adapted for all; False: the same step for every cluster.
    leapfrog : int, default 5
        ``"hmc"`` only: leapfrog steps per transition (1 is a Metropolis-adjusted Langevin step; at most
        ``MAX_LEAPFROG``, 1000), each one evaluation of every item's log-likelihood and its gradient.
    split_merge : int, default 0
        Split-merge proposals per draw (0: none). Off by default: measured, one per draw pays on
        galaxies with Student-t clusters (1.5-3x effective samples per CPU second) but costs more
        than it gains on Old Faithful with diagonal Normal clusters (``docs/nonconjugate.md``).
        Each costs up to three evaluations of the likelihood of every item. Its proposal's scale
        per coordinate starts at the base measure's spread and, during tuning only, follows the
        mean spread of the occupied slots.
    split_merge_proposal : {"random_walk", "informed"}, default "random_walk"
        The split-merge proposal. ``"random_walk"``: the parameters of a split are phi +/- u (or phi, phi + u),
        items allocated by their likelihood under them. ``"informed"``: items allocated by a conjugate surrogate
        of their observed values (Normal-inverse-Wishart; its cluster covariance, during tuning only, follows
        the chain's pooled within-cluster covariance), then each new cluster's parameter drawn from a Gaussian
        approximation of its conditional posterior (Newton steps with the compiled gradient and Hessian of the
        model's log density; needs a differentiable log density). Measured in ``docs/nonconjugate.md``.
    compiled : bool, default True
        With ``slot_update="metropolis"`` and no split-merge (the defaults): run each draw in two compiled kernels
        (:mod:`~pymc_partitions.samplers.compiled_slots`) that call the model's item log-likelihood and base measure
        compiled from its PyMC graph with PyTensor's numba backend, instead of about twenty calls of compiled
        functions from Python: the same law and, from the same seed and ``m``, the same chain, at 1.5-1.7x fewer
        CPU seconds per draw on Old Faithful (``docs/nonconjugate.md``). Building the functions takes a few seconds
        once per model and process (a forked ``pm.sample`` inherits them). Where they cannot be built or do not
        match the model's own functions (an op without a numba implementation, labels of a narrow integer dtype),
        the step runs the Python draw; ``step.compiled`` says which. False: always the Python draw.

    Sampler statistics: ``n_clusters``, ``slot_accept`` (mean acceptance of the Metropolis or HMC slot updates;
    for ``"slice"``, the mean number of log-density evaluations per coordinate and sweep; NaN for ``"nuts"``),
    ``slot_scale`` (the random-walk or HMC step, or the mean slice width for a cluster of one item), ``opened`` (blocks opened by the label sweep), ``splits`` and ``merges``
    (accepted split-merge proposals).

    Examples
    --------
    >>> import numpy as np, pymc as pm, pymc_partitions as pmp
    >>> y = np.r_[np.zeros(6) - 3.0, np.zeros(6) + 3.0]
    >>> with pm.Model():
    ...     z = pmp.Partition("z", pmp.CRP(1.0), n=12)
    ...     mu = pm.Normal("mu", 0.0, 3.0, shape=12)
    ...     obs = pm.Normal("y", mu=mu[z], sigma=1.0, observed=y)
    ...     idata = pm.sample(draws=50, tune=50, chains=1, progressbar=False,
    ...                       compute_convergence_checks=False, random_seed=1)
    """

    name = "nonconjugate_gibbs"
    default_blocked = True
    stats_dtypes_shapes = {"n_clusters": (np.int64, []), "slot_accept": (np.float64, []),
                           "slot_scale": (np.float64, []), "opened": (np.int64, []), "splits": (np.int64, []),
                           "merges": (np.int64, [])}

    def __init__(self, vars=None, model=None, m=None, slot_steps=None, scale=0.5, split_merge=SPLIT_MERGE_MOVES,
                 slot_update=SLOT_UPDATE, size_scaled=True, leapfrog=LEAPFROG, split_merge_proposal=SPLIT_MERGE_PROPOSAL,
                 compiled=True, rng=None, blocked=None, **kwargs):
        step_keywords(type(self).__name__, kwargs)
        model = pm.modelcontext(model)
        if vars is None:
            vars = [v for v in model.free_RVs if is_partition(v)]
        vars = list(vars) if isinstance(vars, (list, tuple)) else [vars]
        rvs = [_resolve_rv(model, v) for v in vars]
        parts = [v for v in rvs if is_partition(v)]
        if len(parts) != 1:
            raise ValueError(f"NonConjugateGibbs updates one partition per step, got {len(parts)} among {vars}")
        m = None if m is None else _checks.integer("m", m, low=1, high=MAX_AUXILIARIES, owner="NonConjugateGibbs")
        compiled = _checks.boolean("compiled", compiled, owner="NonConjugateGibbs")
        self.slot_update = _checks.choice("slot_update", slot_update, SLOT_UPDATES, owner="NonConjugateGibbs")
        self.slot_steps = (SLOT_STEPS[self.slot_update] if slot_steps is None
                           else _checks.integer("slot_steps", slot_steps, low=0, high=MAX_SLOT_STEPS,
                                                owner="NonConjugateGibbs"))
        self.size_scaled = _checks.boolean("size_scaled", size_scaled, owner="NonConjugateGibbs")
        self.leapfrog = _checks.integer("leapfrog", leapfrog, low=1, high=MAX_LEAPFROG, owner="NonConjugateGibbs")
        self.split_merge = _checks.integer("split_merge", split_merge, low=0, high=MAX_SPLIT_MERGE_MOVES,
                                           owner="NonConjugateGibbs")
        self.split_merge_proposal = _checks.choice("split_merge_proposal", split_merge_proposal, SPLIT_MERGE_PROPOSALS,
                                                   owner="NonConjugateGibbs")
        if not (isinstance(scale, (int, float, np.floating, np.integer)) and not isinstance(scale, bool)
                and math.isfinite(scale) and scale > 0):
            raise ValueError(f"NonConjugateGibbs: scale must be a positive finite number, got {scale!r}")
        self.nc = NonConjugateModel(model, parts[0])
        extra = [v.name for v in rvs if v not in parts and v not in self.nc.slot_rvs]
        if extra:
            raise ValueError(f"NonConjugateGibbs: {extra} are not slot variables of the partition "
                             f"{parts[0].name!r} (those are {[v.name for v in self.nc.slot_rvs]})")
        given_slots = [v.name for v in rvs if v in self.nc.slot_rvs]
        if self.slot_update == "nuts" and given_slots:
            raise ValueError(f"NonConjugateGibbs: with slot_update='nuts' the slot variables {given_slots} are left "
                             f"to another step (pm.sample assigns NUTS to them): pass only the partition "
                             f"{parts[0].name!r} in vars")
        self.terms = self.nc.terms
        # with slot_update='nuts' the step still writes the slots (relabelled with the labels, the free ones drawn
        # afresh), but another step updates the occupied ones: pm.sample assigns them a step of their own
        self.vars = [model.rvs_to_values[parts[0]]] + ([] if self.slot_update == "nuts" else self.nc.slot_values)
        if self.slot_update == "hmc":  # compile the gradient now: a model without one is refused here
            point = model.initial_point(0)
            self.nc.cluster_logp_grad(self.nc.values(point), None, None)
        self.initial_scale = float(scale)
        self.rng = np.random.default_rng(rng)
        self.use_compiled = compiled and self.slot_update == "metropolis" and not self.split_merge
        self.m = AUXILIARIES["compiled" if self.use_compiled else "python"] if m is None else m
        self._densities = build_densities(self.nc, self.m) if self.use_compiled else None
        if m is None and self._densities is None:  # (the compiled draw could not be built: the Python draw's m)
            self.m = AUXILIARIES["python"]
        if self.split_merge and self.split_merge_proposal == "informed":
            self.nc.cluster_derivatives(self.nc.values(model.initial_point(0)),
                                        *self._initial_labels_and_slots(model))  # compiles; refuses no gradient
            self.features = self.nc.features()
            spread = np.atleast_2d(np.cov(self.features, rowvar=False))
            ridge = 1e-6 * max(float(np.trace(spread)) / spread.shape[0], 1e-12)
            self.initial_within = spread / 16.0 + ridge * np.eye(spread.shape[0])
            self.base_spread = self._base_spread(model)
        self.reset_chain(None, None)

    def _base_spread(self, model):
        """Per coordinate of a slot's flattened values, the base measure's standard deviation (value
        scale), from at least 400 fresh draws (1 where it is not positive and finite). The draws use a
        fixed seed: the spread is a constant of the model, and the chain's own streams (reseeded by
        reset_chain) stay a function of its seed alone."""
        self.nc.reseed(np.random.default_rng(0))
        values = self.nc.values(model.initial_point(0))
        rows = []
        while sum(len(r) for r in rows) < 400:
            rows.append(flatten_slots(self.nc.draw(values)))
        spread = np.concatenate(rows).std(axis=0)
        return np.where(np.isfinite(spread) & (spread > 0), spread, 1.0)

    def _initial_labels_and_slots(self, model):
        point = model.initial_point(0)
        return (np.zeros(self.nc.n, self.terms.dtype),
                [np.asarray(point[name]) for name in self.nc.slot_names])

    def reset_chain(self, tune, draws):
        self.scale = self.initial_scale
        self.tuning = True
        self._adapt_t = 0
        self.nc.reseed(self.rng)
        self.split_scale = None  # per coordinate; set from the base measure at the first draw
        self.slice_width = None  # per coordinate, likewise
        self.fisher = None  # HMC: per coordinate, a cluster of one item's posterior precision (tuning estimate)
        self._spread_sum, self._spread_count = 0.0, 0
        if self.split_merge and self.split_merge_proposal == "informed":  # the surrogate's block covariance
            self._within_sum, self._within_count = 0.0, 0
            self.surrogate = surrogate_pack(self.features, self.initial_within)

    def stop_tuning(self):
        self.tuning = False

    @property
    def compiled(self) -> bool:
        """Whether draws run in the compiled kernels (:mod:`~pymc_partitions.samplers.compiled_slots`)."""
        return self._densities is not None

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_densities"] = None  # (function pointers do not pickle: found again where it is unpickled)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        if self.use_compiled:
            self._densities = build_densities(self.nc, self.m)

    @staticmethod
    def competence(var, has_grad):
        return Competence.INCOMPATIBLE  # assigned by the step-assignment guard, blocked with the slots

    # ------------------------------------------------------------------ the draw
    def _aux_loglik(self, values):
        """(Laux (n, m), aux slot draws [aux][slot variable] -> (rows, ...), one more set of draws): item i's
        auxiliary j is row i of draw j: every item has its own draws. The spare set's first S rows are fresh draws
        of every slot, for the slots the sweep leaves free (drawn in the same call: at least S rows per set)."""
        n, m = self.nc.n, self.m
        Laux = np.empty((n, m))
        *draws, spare = self.nc.draw_rows(values, m + 1)
        for j, rows in enumerate(draws):
            Laux[:, j] = self.nc.rows_loglik(values, rows)
        return Laux, draws, spare

    def step(self, point):
        try:
            return self._step(point)
        except NoPositiveOption as error:
            raise ValueError(self._bad_items(point, impossible=True)) from error
        except NonFiniteLogLikelihood as error:
            raise ValueError(self._bad_items(point, impossible=False)) from error

    def _bad_items(self, point, impossible):
        """The error of a label sweep in which an item could go nowhere (``impossible``: log-likelihood -inf
        everywhere) or had a NaN or +inf log-likelihood: which items, and the likely cause."""
        nc = self.nc
        labels = self.terms.labels(point)
        slots = [np.asarray(point[name]) for name in nc.slot_names]
        ll = nc.item_loglik(nc.values(point), labels, slots)
        names = [o.name for o in nc.likelihoods]
        if impossible:
            items = np.flatnonzero(~(ll > -np.inf))
            return (f"NonConjugateGibbs: an item's log-likelihood ({names}) is -inf under every block's parameters and "
                    f"its auxiliaries (items {items[:10].tolist()} at the current point): an observed value outside the "
                    "likelihood's support, or slot values it cannot reach?")
        items = np.flatnonzero(~(ll < np.inf))  # (NaN or +inf)
        return (f"NonConjugateGibbs: an item's log-likelihood ({names}) is NaN or +inf (at the current point: items "
                f"{items[:10].tolist()}; an empty list: under an auxiliary parameter): NaN in the observed values or in "
                "data the likelihood reads (pm.Data set by pm.set_data?), or a density that overflows")

    def _step(self, point):
        nc, n, S = self.nc, self.nc.n, self.nc.n_slots
        nc.check_data()
        given = self.terms.labels(point)
        labels = canonicalize(given)
        prior_params = np.array([*map(float, self.terms.hyper_values(point)[:2]), self.terms.k], np.float64)
        self.terms.check_prior_params(prior_params)
        self._prior_params = prior_params
        values = nc.values(point)
        K = int(labels.max()) + 1
        first = _first_items(labels, K)
        slots = [np.array(point[name], copy=True) for name in nc.slot_names]
        for s in slots:  # block b's parameter in slot b (the labels given may be any labelling)
            s[:K] = s[given[first]]
        if self._densities is not None:
            return self._compiled_step(point, values, labels, slots, K, prior_params)
        # 1. labels: Algorithm 8
        cap = K + self.m + 4
        table = [np.empty((cap,) + s.shape[1:], s.dtype) for s in slots]
        for t, s in zip(table, slots):
            t[:K] = s[:K]
        dtype = self.terms.dtype
        L = np.zeros((n, cap))
        for k in range(K):
            L[:, k] = nc.item_loglik(values, np.full(n, k, dtype), slots)
        Laux, aux, spare = self._aux_loglik(values)
        opened = [0]
        scratch = [s.copy() for s in slots]

        def open_block(i, j, slot):
            for q, t in enumerate(table):
                if slot >= t.shape[0]:
                    grown = np.empty((2 * slot + 2,) + t.shape[1:], t.dtype)
                    grown[: t.shape[0]] = t
                    table[q] = t = grown
                t[slot] = aux[j][q][i]
                scratch[q][0] = t[slot]
            opened[0] += 1
            return nc.item_loglik(values, np.zeros(n, dtype), scratch)

        order = self.rng.permutation(n)  # (labels: canonical int64 < K, a fresh array the sweep may overwrite)
        slot_of, L = trusted_sweep(labels, L, Laux, order, self.rng.random(n), self.terms.prior_code,
                                   prior_params, open_block)
        # 2. canonical relabelling, slots with the labels; free slots from the base measure
        new = canonicalize(slot_of)
        K = int(new.max()) + 1
        perm = slot_of[_first_items(new, K)]
        slots = [np.array(d[:S], copy=True) for d in spare]
        for s, t in zip(slots, table):
            s[:K] = t[perm]
        item_ll = L[np.arange(n), slot_of]
        labels = new.astype(dtype)
        splits = merges = 0
        if self.split_merge:
            swept = K
            labels, slots, item_ll, K, splits, merges = self._split_merge(values, labels, slots, item_ll, K)
            if K < swept:  # slots K .. swept - 1 held blocks the moves merged away: free now, drawn afresh
                for s, d in zip(slots, nc.draw(values)):
                    s[K:swept] = d[K:swept]
        # 3. occupied slots given the labels: per-cluster slice sampling or vectorised random-walk Metropolis
        if self.slot_update == "slice":
            slots, rate = self._slice_slots(values, labels, slots, K)
        elif self.slot_update == "hmc":
            slots, rate = self._hmc_slots(values, labels, slots, K)
        elif self.slot_update == "nuts":  # left to the step pm.sample gives the slot variables
            rate = float("nan")
        else:
            slots, rate = self._metropolis_slots(values, labels, slots, K)
        out = dict(point)
        out[self.terms.value_name] = labels
        for name, s in zip(nc.slot_names, slots):
            out[name] = s.astype(point[name].dtype, copy=False)
        return out, [{"n_clusters": K, "slot_accept": rate, "slot_scale": self._scale_stat(), "opened": opened[0],
                      "splits": splits, "merges": merges}]

    def _compiled_step(self, point, values, labels, slots, K, prior_params):
        """The same draw as :meth:`step` with ``slot_update="metropolis"`` and no split-merge, its random numbers
        drawn in the same order, in the compiled kernels of :mod:`~pymc_partitions.samplers.compiled_slots`."""
        nc, n, S, m, T = self.nc, self.nc.n, self.nc.n_slots, self.m, self.slot_steps
        dens = self._densities
        context = dens.context(values)
        theta = flatten_slots(slots)
        table = np.empty((K + m + 4, dens.d))
        table[:K] = theta[:K]
        rows = max(n, S)  # (as draw_rows: m sets of max(n, S) rows, then the free slots' set)
        many = nc.draw_many(values, (m + 1) * rows)
        if many is None:  # (slot variables without a size: the Python draw's sets)
            *sets, spare = nc.draw_rows(values, m + 1)
            many = [np.concatenate([r[q][:rows] for r in sets] + [spare[q][:rows]]) for q in range(len(spare))]
        flat = flatten_slots(many)
        aux = np.ascontiguousarray(flat[: m * rows].reshape(m, rows, dens.d)[:, :n])  # (a view when S <= n)
        free_rows = np.ascontiguousarray(flat[m * rows:m * rows + S])
        order = self.rng.permutation(n)
        uniforms = self.rng.random(n)
        labels = labels.astype(np.int64)  # (canonical: a fresh array the sweep overwrites)
        code, K, opened = label_sweep(dens.item_rows, context, table, K, labels, aux, order, uniforms,
                                      self.terms.prior_code, prior_params, free_rows)
        if code != 0:
            raise NonFiniteLogLikelihood("label_sweep: an item's log-likelihood is NaN or +inf")
        step = np.full(K, self.scale)
        if self.size_scaled:
            step = self.scale / np.sqrt(np.bincount(labels, minlength=K)[:K].astype(np.float64))
        moves = np.concatenate([self.rng.standard_normal((T, K) + shape).reshape(T, K, math.prod(shape))
                                for shape in dens.shapes], axis=2)  # (T = 0 too: slot_steps=0)
        log_u = np.log(self.rng.random((T, K)))
        accepted = slot_metropolis(dens.item_rows, dens.base_rows, context, free_rows, K, labels, step, moves, log_u)
        rate = self._adapt_metropolis(accepted, K)
        out = dict(point)
        out[self.terms.value_name] = labels.astype(self.terms.dtype)
        for name, s in zip(nc.slot_names, unflatten_slots(free_rows, slots)):
            out[name] = s.astype(point[name].dtype, copy=False)
        return out, [{"n_clusters": K, "slot_accept": rate, "slot_scale": self._scale_stat(), "opened": opened,
                      "splits": 0, "merges": 0}]

    def _adapt_metropolis(self, accepted, K):
        """The Metropolis acceptance rate of a draw; during tuning the step follows it towards 0.3."""
        rate = accepted / (K * self.slot_steps) if self.slot_steps else float("nan")
        if self.tuning and self.slot_steps:
            self._adapt_t += 1
            self.scale *= math.exp((rate - 0.3) / math.sqrt(self._adapt_t))
        return rate

    def _scale_stat(self):
        """The ``slot_scale`` statistic: the random-walk step, or the mean slice width (for a cluster of one item)."""
        if self.slot_update == "slice":
            return float(np.mean(self.slice_width)) if self.slice_width is not None else float("nan")
        if self.slot_update == "nuts":
            return float("nan")
        return self.scale

    def _metropolis_slots(self, values, labels, slots, K):
        """``slot_steps`` random-walk Metropolis updates of every occupied slot at once, one decision per slot
        (the step of cluster b is ``scale / sqrt(n_b)`` when ``size_scaled``); returns (slots, acceptance)."""
        nc = self.nc
        labels = labels.astype(self.terms.dtype, copy=False)
        slots = [np.ascontiguousarray(s) for s in slots]
        prop = [s.copy() for s in slots]  # (rows >= K stay the slots' own)
        args = nc._with(values, labels, prop)  # one argument list, the proposals in it, for every call
        current = np.array(nc.cluster_logp_args(args)[:K])
        step = self.scale
        if self.size_scaled:
            step = self.scale / np.sqrt(np.bincount(labels, minlength=K)[:K].astype(np.float64))
        # every step's random numbers at once: the proposals' moves (steps, K, ...) and log-uniforms (steps, K)
        T = self.slot_steps
        moves = [(step.reshape((1, K) + (1,) * (s.ndim - 1)) if self.size_scaled else step)
                 * self.rng.standard_normal((T,) + s[:K].shape) for s in slots]
        log_u = np.log(self.rng.random((T, K)))
        accepted = 0
        ok = np.empty(K, np.bool_)
        heads = [(s[:K], p[:K]) for s, p in zip(slots, prop)]
        rows = [(s.reshape(s.shape[0], -1), p.reshape(p.shape[0], -1)) for s, p in zip(slots, prop)]  # (views)
        for t in range(T):
            for (s, p), e in zip(heads, moves):
                np.add(s, e[t], out=p)
            new = nc.cluster_logp_args(args, checked=False)
            taken = accept_slots(new, current, log_u[t], ok)  # (a NaN proposal is refused)
            if taken:
                for s, p in rows:
                    copy_accepted(s, p, ok)
                accepted += taken
        return slots, self._adapt_metropolis(accepted, K)

    def _slice_slots(self, values, labels, slots, K):
        """``slot_steps`` sweeps of :func:`~pymc_partitions.samplers.slot_slice.slice_sweep` over every coordinate
        of the occupied slots (cluster b's log density: G0 with its Jacobian plus its items' log-likelihoods);
        returns (slots, mean evaluations per coordinate and sweep, reported as ``slot_accept``)."""
        nc, S, dtype = self.nc, self.nc.n_slots, self.terms.dtype
        unflatten = functools.partial(unflatten_slots, like=slots)
        theta = flatten_slots(slots)
        if self.slice_width is None:  # the base measure's spread per coordinate until tuning measures the moves
            spread = theta[K:].std(axis=0) if S - K >= 2 else np.zeros(theta.shape[1])
            self.slice_width = np.where(np.isfinite(spread) & (spread > 0), spread, 1.0)
        sizes = np.bincount(labels, minlength=K)[:K]
        full = theta.copy()

        labels = labels.astype(dtype, copy=False)

        def logp(rows):
            full[:K] = rows
            return nc.cluster_logp(values, labels, unflatten(full))[:K]

        rows, current = theta[:K], logp(theta[:K])
        evaluations, sweeps = 0, 0
        for _ in range(self.slot_steps):
            rows, current, used, moved = slice_sweep(rows, current, logp, self.slice_width, sizes, self.rng)
            evaluations += used
            sweeps += 1
            if self.tuning:
                self._adapt_t += 1
                self.slice_width = tuned_width(self.slice_width, moved, self._adapt_t)
        theta[:K] = rows
        fresh = [s.copy() for s in slots]
        for f, s in zip(fresh, unflatten(theta)):
            f[:K] = s[:K]
        rate = evaluations / (sweeps * theta.shape[1]) if sweeps else float("nan")
        return fresh, float(rate)

    def _hmc_slots(self, values, labels, slots, K):
        """``slot_steps`` transitions of :func:`~pymc_partitions.samplers.slot_hmc.hmc_sweep`, ``leapfrog`` steps
        each, on every occupied slot at once (cluster b's mass per coordinate: its size times the per-item
        precision ``fisher``, estimated during tuning by the mean squared gradient per item, E[g^2] = E[-H] under
        the posterior); the step size adapts during tuning to an acceptance of 0.7. Returns (slots, acceptance)."""
        nc, dtype = self.nc, self.terms.dtype
        unflatten = functools.partial(unflatten_slots, like=slots)
        theta = flatten_slots(slots)
        labels = labels.astype(dtype, copy=False)
        sizes = np.bincount(labels, minlength=K)[:K].astype(np.float64)
        full = theta.copy()

        def logp_grad(rows):
            full[:K] = rows
            lp, grads = nc.cluster_logp_grad(values, labels, unflatten(full))
            return lp[:K], flatten_slots(grads)[:K]

        rows = theta[:K]
        current, grad = logp_grad(rows)
        if self.tuning or self.fisher is None:
            with np.errstate(invalid="ignore", over="ignore"):
                estimate = np.mean(grad**2 / sizes[:, None], axis=0)
            self._adapt_t += 1
            if self.fisher is None:
                self.fisher = np.where(np.isfinite(estimate) & (estimate > 0), estimate, 1.0)
            else:
                weight = max(1.0 / self._adapt_t, 0.05)
                ok = np.isfinite(estimate) & (estimate > 0)
                self.fisher = np.where(ok, self.fisher + weight * (np.where(ok, estimate, 0.0) - self.fisher),
                                       self.fisher)
        mass = sizes[:, None] * self.fisher[None, :]
        accept = []
        for _ in range(self.slot_steps):
            rows, current, grad, prob = hmc_sweep(rows, current, grad, logp_grad, mass, self.scale, self.leapfrog,
                                                  self.rng)
            accept.append(prob.mean())
        rate = float(np.mean(accept)) if accept else float("nan")
        if self.tuning and accept:
            self.scale *= math.exp((rate - 0.7) / math.sqrt(self._adapt_t))
        theta[:K] = rows
        fresh = [s.copy() for s in slots]
        for f, s in zip(fresh, unflatten(theta)):
            f[:K] = s[:K]
        return fresh, rate

    def _split_merge(self, values, labels, slots, item_ll, K):
        """``split_merge`` moves of :mod:`~pymc_partitions.samplers.slot_split_merge` on the canonical
        labels and occupied slots (flattened to one row of d numbers per slot); the slots after the new K
        are those of ``slots``: fresh base-measure draws beyond the K given, the given blocks' parameters below it
        (the caller draws those afresh when the moves merged blocks away)."""
        nc, S, dtype = self.nc, self.nc.n_slots, self.terms.dtype
        unflatten = functools.partial(unflatten_slots, like=slots)

        def loglik(lab, theta):
            return nc.item_loglik(values, lab.astype(dtype), unflatten(theta))

        def base_logp(theta):
            return nc.base_logp(values, unflatten(theta))

        theta = flatten_slots(slots)
        if self.split_merge_proposal == "informed":
            return self._informed_split_merge(values, labels, slots, item_ll, K, theta, unflatten)
        if self.split_scale is None:  # the base measure's spread per coordinate, until tuning measures the blocks'
            spread = theta[K:].std(axis=0) if S - K >= 2 else np.zeros(theta.shape[1])
            self.split_scale = np.where(np.isfinite(spread) & (spread > 0), spread, 1.0)
        if self.tuning and K >= 2:  # then the mean spread of the occupied parameters over the tuning draws
            spread = theta[:K].std(axis=0, ddof=1)
            if np.isfinite(spread).all():
                self._spread_sum = self._spread_sum + spread
                self._spread_count += 1
                mean = self._spread_sum / self._spread_count
                self.split_scale = np.where(mean > 0, mean, self.split_scale)
        new, theta, item_ll, _, splits, merges = slot_split_merge(
            labels, theta, item_ll, base_logp(theta), loglik, base_logp, self.terms.prior_code, self._prior_params,
            self.split_scale, self.rng, moves=self.split_merge)
        K = int(new.max()) + 1
        fresh = [s.copy() for s in slots]
        for f, s in zip(fresh, unflatten(theta)):
            f[:K] = s[:K]
        return new.astype(dtype), fresh, item_ll, K, splits, merges

    def _informed_split_merge(self, values, labels, slots, item_ll, K, theta, unflatten):
        """The informed moves (:func:`~pymc_partitions.samplers.slot_split_merge.informed_split_merge`): the
        surrogate allocates by the observed values, its block covariance following, during tuning only, the
        mean pooled within-block covariance of the chain's partitions; Laplace fits through the compiled
        derivatives of :meth:`NonConjugateModel.cluster_logp`."""
        nc, dtype = self.nc, self.terms.dtype
        if self.tuning and K >= 2:
            within = within_covariance(self.features, labels)
            if within is not None and np.isfinite(within).all():
                self._within_sum = self._within_sum + within
                self._within_count += 1
                mean = self._within_sum / self._within_count
                ridge = 1e-6 * max(float(np.trace(mean)) / mean.shape[0], 1e-12)
                try:
                    self.surrogate = surrogate_pack(self.features, mean + ridge * np.eye(mean.shape[0]))
                except ValueError:
                    pass  # (keep the previous one: a degenerate partition early in tuning)

        def terms(lab, th, derivatives):
            lab = lab.astype(dtype)
            if derivatives:
                return nc.cluster_derivatives(values, lab, unflatten(th))
            return nc.cluster_logp(values, lab, unflatten(th))

        new, theta, splits, merges = informed_split_merge(labels, theta, terms, self.surrogate, self.terms.prior_code,
                                                          self._prior_params, self.base_spread, self.rng,
                                                          moves=self.split_merge)
        K = int(new.max()) + 1
        fresh = [s.copy() for s in slots]
        for f, s in zip(fresh, unflatten(theta)):
            f[:K] = s[:K]
        return new.astype(dtype), fresh, None, K, splits, merges


def _first_items(labels, K):
    """The first item of each of the K blocks of canonical ``labels``."""
    first = np.zeros(K, np.int64)
    first[labels[::-1]] = np.arange(labels.shape[0])[::-1]
    return first


def nonconjugate_partitions(model) -> list:
    """The partitions of ``model`` with non-conjugate likelihoods (what needs :class:`NonConjugateGibbs`)."""
    return [rv for rv in model.free_RVs if is_partition(rv) and nonconjugate_likelihoods(model, rv)]


def add_nonconjugate_steps(model, step):
    """``step`` (None, a step or a list) plus a :class:`NonConjugateGibbs` for every partition with
    non-conjugate likelihoods that no given step covers (what ``pm.sample`` assigns)."""
    parts = nonconjugate_partitions(model)
    if not parts:
        return step
    given = [] if step is None else (list(step) if isinstance(step, (list, tuple)) else [step])
    covered = set()
    for s in given:
        covered |= set(getattr(s, "vars", None) or [])
    added = []
    for rv in parts:
        if model.rvs_to_values[rv] in covered:
            continue
        slots = slot_variables(model, rv)
        taken = [v.name for v in slots if model.rvs_to_values[v] in covered]
        if taken and len(taken) == len(slots):  # the slots have their own step(s): the labels' step leaves them
            added.append(NonConjugateGibbs([rv], model=model, slot_update="nuts"))
            continue
        if taken:
            missing = [v.name for v in slots if v.name not in taken]
            raise ValueError(f"the slot variable(s) {taken} of the partition {rv.name!r} are given to another step, "
                             f"but {missing} and the partition are not: give every slot variable to that step "
                             f"(e.g. pm.NUTS({[v.name for v in slots]})), or none of them and let "
                             f"pmp.NonConjugateGibbs([{rv.name}]) update the labels and slots as one block")
        added.append(NonConjugateGibbs([rv], model=model))
    return step if not added else given + added


def sizes_with_count(slot_rvs, count):
    """{size of each slot variable: the same size with ``count`` on the slot axis}, for the slot
    variables that are RandomVariables with a size: replacing them draws ``count`` slots at once
    (all of them only if the dict has an entry per variable)."""
    resized = {}
    for v in slot_rvs:
        node = v.owner
        size = node.op.size_param(node) if isinstance(node.op, RandomVariable) else None
        if isinstance(getattr(size, "type", None), TensorType) and size.type.ndim == 1:
            resized[size] = pt.concatenate([pt.atleast_1d(count).astype(size.dtype), size[1:]])
    return resized
