"""PyMC distributions: the ``Partition`` random variable and collapsed conjugate likelihoods.

A collapsed likelihood has the cluster parameters integrated out, so its log density given the
labels is the sum over blocks of the marginal likelihood of the block's data. Each likelihood
random variable has the partition as its first parameter; the step methods find them that way.
"""

from __future__ import annotations

import weakref

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
from pymc.distributions.dist_math import check_parameters
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.graph.basic import Constant, Variable
from pytensor.tensor.random.op import RandomVariable

from .. import _checks
from ..families import draws, kernels, network, symbolic
from ..families.predictive import BetaBernoulliFamily, DiagNormal, FullNormal, NIWFamily, replicate
from ..families.transforms import whiten_full_normal
from . import compat
from .compat import ancestors
from ..priors import FINITE_DIRICHLET, PITMAN_YOR, PartitionPrior, sample_sequential, symbolic_log_eppf

__all__ = ["Partition", "NormalNormal", "NormalInverseWishart", "BetaBernoulli", "BetaBernoulliNetwork", "PartitionRV",
           "CollapsedLikelihoodRV"]


def constant_value(var):
    """The numpy value of a variable that depends on no random variable or input, else ``None``."""
    if isinstance(var, Constant):
        return np.asarray(var.data)
    if isinstance(var, SharedVariable):
        return np.asarray(var.get_value())
    for a in ancestors([var]):
        if a.owner is None and not isinstance(a, Constant | SharedVariable):
            return None
        if a.owner is not None and isinstance(a.owner.op, RandomVariable):
            return None
    return np.asarray(var.eval())


# ----------------------------------------------------------------------------- Partition


class PartitionRV(RandomVariable):
    """Random partition of ``n`` items as a label vector; parameters (alpha, discount, k, n).

    ``k = 0`` means the Pitman-Yor family (the CRP when ``discount = 0``); ``k > 0`` the finite
    symmetric Dirichlet with ``k`` components.
    """

    name = "partition"
    signature = "(),(),(),()->(n)"
    dtype = "int64"
    _print_name = ("Partition", "\\operatorname{Partition}")

    def _supp_shape_from_params(self, dist_params, param_shapes=None):
        return (dist_params[3],)

    def check_initval(self, rv, strategy):
        """The starting value PyMC gets for ``strategy``: the Partition's own names (``"dispersed"``,
        ``"one_block"``, ``"singletons"``, also in ``pm.sample(initvals=...)``) made PyMC's, and labels
        refused where PyMC would cast them silently (``0.5`` -> ``0``) or outside the prior's support;
        called by :func:`~.guards.guard_initvals` before PyMC reads them."""
        n, k = partition_size(rv), int(constant_value(rv.owner.inputs[-2]))
        if isinstance(strategy, str) and strategy in _INITVAL_STRINGS:
            if strategy == "singletons" and 0 < k < n:
                raise ValueError(f"Partition {rv.name!r}: initval 'singletons' has n={n} blocks but the "
                                 f"FiniteDirichlet prior allows at most k={k}")
            labels = _partition_initval(rv.name, strategy, n, k)
            return "support_point" if labels is None else labels
        if strategy is None or isinstance(strategy, (str, Variable)):
            return strategy
        labels = check_labels(rv.name, strategy, n)
        _check_support(rv.name, labels, k)
        return strategy

    def rng_fn(self, rng, alpha, discount, k, n, size=None):
        code = FINITE_DIRICHLET if k > 0 else PITMAN_YOR
        params = np.array([alpha, discount, k], dtype=np.float64)
        n = int(n)
        if size is None or tuple(size) == ():
            return sample_sequential(code, params, rng.random(n))
        size = tuple(size)
        out = np.empty(size + (n,), np.int64)
        for idx in np.ndindex(*size):
            out[idx] = sample_sequential(code, params, rng.random(n))
        return out


partition_rv = PartitionRV()

_INITVAL_STRINGS = ("dispersed", "prior", "one_block", "singletons")

#: Labels of a ``"dispersed"`` start are drawn uniformly from this many (at most n, at most k).
DISPERSED_BLOCKS = 32


class Partition(pm.Discrete):
    r"""A random partition of ``n`` items with an exchangeable prior, as a vector of labels.

    The value is an int64 vector of length ``n``; items with equal labels are in one cluster.
    The step methods of this package always return canonical labels (first-appearance order).
    Its log density is the log EPPF of the prior, differentiable in the prior's parameters.

    Parameters
    ----------
    name : str
    prior : CRP, PitmanYor or FiniteDirichlet
        Parameters may be numbers or PyMC random variables.
    n : int
        Number of items.
    initval : {"dispersed", "prior", "one_block", "singletons"} or array, default "dispersed"
        Starting partition for sampling. ``"dispersed"``: each chain of ``pm.sample`` starts from
        its own random partition, every item's label drawn uniformly from
        ``min(n, 32)`` labels (at most ``k`` for a finite Dirichlet prior), reproducible from
        ``random_seed``. Chains that start apart let R-hat see a chain stuck where the others
        are not, and from many small mixed blocks collapsed Gibbs finds structure it cannot
        reach by splitting one block (:doc:`steps`). ``"prior"``: each chain from its own
        draw from the prior (at the starting values of the prior's parameters);
        ``"one_block"``: every item in one block (the same start for every chain);
        ``"singletons"``: every item alone. It must lie in the prior's support: with
        ``FiniteDirichlet(alpha, k)`` at most ``k`` blocks (``"singletons"`` needs ``n <= k``).
        Labels given here or through ``pm.sample(initvals=...)`` (which win over this) must be
        integers in [0, n).
    dims : str or tuple of one str, optional
        Name of the item dimension (registered with coordinates 0 .. n-1 if the model does not
        have it; if it does, it must have length n). Default ``"item"`` (with coordinates 0 .. n-1, or the
        model's own ``"item"`` coordinates when it has ``n`` of them), or ``"<name>_item"`` when
        the model's ``"item"`` dimension has another length.
    invariants : bool, default True
        Also add the label-invariant Deterministics ``<name>_n_clusters`` (number of clusters)
        and ``<name>_largest_share`` (share of the items in the largest cluster). They are what
        ``az.summary`` / ``az.plot_trace`` can judge convergence on (the labels themselves are
        arbitrary: label switching), and they are in the prior and the posterior like any
        Deterministic. ``pm.sample``'s convergence checks use them (and the sampler statistic
        ``log_joint``) in place of the labels whether or not they are added.
    observed : labels, optional
        A known partition: data, checked like labels given as a start (e.g. to learn ``alpha``
        from a given clustering; :doc:`models`).

    Examples
    --------
    >>> import pymc as pm, pymc_partitions as pmp
    >>> with pm.Model() as model:
    ...     z = pmp.Partition("z", pmp.CRP(1.0), n=5)
    >>> model.compile_logp()({"z": [0, 0, 1, 1, 2]}) < 0
    np.True_
    """

    rv_op = partition_rv

    def __new__(cls, name, prior, n, *args, initval="dispersed", invariants=True, **kwargs):
        n = _check_n(n)
        invariants = _checks.boolean("invariants", invariants, owner=f"Partition {name!r}")
        if kwargs.get("size") is not None:
            raise TypeError(f"Partition {name!r}: size is not supported (one partition per variable; use n=)")
        shape = kwargs.get("shape")
        if shape is not None and tuple(np.atleast_1d(shape)) != (n,):
            raise ValueError(f"Partition {name!r}: shape must be (n,) = ({n},), got {shape!r}")
        if isinstance(prior, PartitionPrior) and prior.k > 0 and isinstance(initval, str) and initval == "singletons" \
                and n > prior.k:
            raise ValueError(f"Partition {name!r}: initval='singletons' has n={n} blocks but the FiniteDirichlet prior "
                             f"allows at most k={prior.k}")
        initval = _partition_initval(name, initval, n, prior.k if isinstance(prior, PartitionPrior) else 0)
        if isinstance(initval, np.ndarray) and isinstance(prior, PartitionPrior):
            _check_support(name, initval, prior.k)
        if kwargs.get("observed") is not None:
            kwargs["observed"] = _check_observed_labels(name, kwargs["observed"], n, prior)
        model = pm.Model.get_context(error_if_none=False)
        if model is not None:  # else PyMC's own error follows
            dims = kwargs.get("dims")
            kwargs["dims"] = _item_dim(model, name, n) if dims is None else _check_dims(model, name, dims, n)
            if invariants:
                clash = [v for v in invariant_names(model.name_for(name)) if v in model.named_vars]
                if clash:
                    raise ValueError(f"Partition {name!r}: the model already has variable(s) {clash}; rename them or "
                                     "pass invariants=False")
        rv = super().__new__(cls, name, prior, n, *args, initval=initval, **kwargs)
        if model is not None:
            _register_prior_parameters(model, prior)
            if invariants:
                sizes = pt.zeros(n, dtype="int64")[pt.clip(rv, 0, n - 1)].inc(1)
                pm.Deterministic(f"{name}_{INVARIANTS[0]}", pt.sum(pt.gt(sizes, 0)))
                pm.Deterministic(f"{name}_{INVARIANTS[1]}", pt.max(sizes) / float(n))
        return rv

    @classmethod
    def dist(cls, prior, n, **kwargs):
        if not isinstance(prior, PartitionPrior):
            raise TypeError(f"Partition: prior must be pmp.CRP, pmp.PitmanYor or pmp.FiniteDirichlet, got {prior!r}")
        n = _check_n(n)
        return super().dist([prior.alpha, prior.discount, prior.k, n], **kwargs)

    def support_point(rv, size, alpha, discount, k, n):
        """The default start, ``initval="dispersed"``: a random graph PyMC reseeds per chain. As the
        support point rather than a registered starting value, it leaves the model convertible by
        PyMC's graph transforms (``pm.do``, ``pm.observe``, ``model.copy()``), which refuse models
        with starting values."""
        return dispersed_labels(int(constant_value(n)), int(constant_value(k)))

    def logp(value, alpha, discount, k, n):
        n_static = int(constant_value(n))
        k_static = int(constant_value(k))
        code = FINITE_DIRICHLET if k_static > 0 else PITMAN_YOR
        in_range = pt.all(pt.ge(value, 0)) & pt.all(pt.lt(value, n_static))
        sizes = pt.zeros(n_static, dtype="int64")[pt.clip(value, 0, n_static - 1)].inc(1)
        lp = symbolic_log_eppf(code, sizes, n_static, alpha, discount, k_static)
        lp = pt.switch(in_range, lp, -np.inf)
        # priors.valid_parameters: alpha = 0 and discount = 1 are what values inside round to (limits)
        if code == PITMAN_YOR:
            valid = [pt.ge(discount, 0), pt.le(discount, 1),
                     pt.gt(alpha, -discount) | (pt.eq(discount, 0) & pt.eq(alpha, 0))]
        else:
            valid = [pt.ge(alpha, 0)]
        return check_parameters(lp, *valid, msg="alpha > 0 (alpha > -discount for Pitman-Yor), 0 <= discount < 1")


#: Label-invariant Deterministics a Partition adds (``<name>_<suffix>``).
INVARIANTS = ("n_clusters", "largest_share")

#: The dimension name a Partition's labels get by default.
ITEM_DIM = "item"


def invariant_names(partition_name: str) -> list[str]:
    """Names of the label-invariant Deterministics of the partition ``partition_name``."""
    return [f"{partition_name}_{suffix}" for suffix in INVARIANTS]


def _dim_length(model, dim):
    length = model.dim_lengths.get(dim)
    value = constant_value(length) if length is not None else None
    return None if value is None else int(value)


def _item_dim(model, name, n):
    """``("item",)`` if the model has no ``item`` dimension or one of length ``n``, else
    ``("<name>_item",)``; registered with coordinates 0 .. n-1 when new. ``None`` (PyMC's default
    ``<name>_dim_0``) if both names are taken with other lengths."""
    for dim in (ITEM_DIM, f"{name}_{ITEM_DIM}"):
        if dim not in model.coords:
            model.add_coord(dim, values=np.arange(n))
            return (dim,)
        if _dim_length(model, dim) == n:
            return (dim,)
    return None


def _check_dims(model, name, dims, n):
    """A user's ``dims`` for a Partition: one name, of a dimension of length ``n`` (registered with
    coordinates 0 .. n-1 when the model does not have it)."""
    if isinstance(dims, str):
        dims = (dims,)
    if not isinstance(dims, (tuple, list)) or len(dims) != 1 or not isinstance(dims[0], str) or not dims[0]:
        raise ValueError(f"Partition {name!r}: dims must name the one item dimension (a str), got {dims!r}")
    dim = dims[0]
    if dim not in model.coords and dim not in model.dim_lengths:
        model.add_coord(dim, values=np.arange(n))
    elif _dim_length(model, dim) not in (None, n):
        raise ValueError(f"Partition {name!r}: dimension {dim!r} has length {_dim_length(model, dim)}, but the "
                         f"partition has n={n} items")
    return (dim,)


#: Prior parameters (alpha, discount random variables) of Partitions -> weak reference to their
#: model, so that step competence (which PyMC asks without the model) can check how they are used.
_PRIOR_PARAMETERS = weakref.WeakKeyDictionary()


def _register_prior_parameters(model, prior):
    if not isinstance(prior, PartitionPrior):
        return
    for param in (prior.alpha, prior.discount):
        if isinstance(param, Variable) and param.owner is not None and isinstance(param.owner.op, RandomVariable):
            _PRIOR_PARAMETERS[param] = weakref.ref(model)


def prior_parameter_model(var):
    """The model of a Partition prior parameter ``var`` (a random variable), else the model in
    context, else ``None``."""
    ref = _PRIOR_PARAMETERS.get(var)
    model = ref() if ref is not None else None
    return model if model is not None else pm.Model.get_context(error_if_none=False)


def _check_n(n):
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"Partition: n must be a positive integer, got n={n!r}")
    return int(n)


def _partition_initval(name, initval, n, k):
    """What PyMC gets as the starting value: labels, ``"prior"`` (PyMC's strategy: a draw of the
    variable), or for ``"dispersed"`` nothing: PyMC then starts from the support point, a random
    graph of labels whose generators it reseeds per chain from ``random_seed``
    (``pymc.initial_point``)."""
    if initval is None or (isinstance(initval, str) and initval in ("dispersed", "support_point", "moment")):
        return None
    if isinstance(initval, str) and initval == "one_block":
        return np.zeros(n, np.int64)
    if isinstance(initval, str):
        if initval == "singletons":
            return np.arange(n, dtype=np.int64)
        if initval == "prior":
            return "prior"
        raise ValueError(f"Partition {name!r}: initval must be one of {_INITVAL_STRINGS} or labels, got {initval!r}")
    return check_labels(name, initval, n)


def dispersed_labels(n, k=0):
    """A random label vector as a PyTensor graph: each of the ``n`` labels uniform on
    ``min(n, DISPERSED_BLOCKS, k)`` values (``k = 0``: no bound); what ``initval="dispersed"``
    starts each chain from."""
    blocks = min(n, DISPERSED_BLOCKS, k) if k > 0 else min(n, DISPERSED_BLOCKS)
    # make_node with an explicit shared generator, not pt.random.integers(...): PyTensor 3
    # deprecates a call without return_next_rng (which PyTensor 2 lacks) or without an rng; the
    # node is the one pt.random.integers builds on both, and PyMC reseeds its generator per chain.
    rng = pytensor.shared(np.random.default_rng())
    node = pt.random.integers.make_node(rng, pt.as_tensor([n]), pt.as_tensor(0), pt.as_tensor(blocks))
    return node.default_output()


def check_labels(name, labels, n, what="labels"):
    """Validate a label vector for partition ``name`` of ``n`` items; returns int64 labels."""
    arr = np.asarray(labels)
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ValueError(f"Partition {name!r}: {what} must have length n={n}, got shape {arr.shape}")
    if not (np.issubdtype(arr.dtype, np.integer) or (np.issubdtype(arr.dtype, np.floating) and np.all(arr == np.round(arr)))):
        raise TypeError(f"Partition {name!r}: {what} must be integers, got dtype {arr.dtype}"
                        + (f" with non-integer values {arr[arr != np.round(arr)][:3].tolist()}"
                           if np.issubdtype(arr.dtype, np.floating) else ""))
    arr = arr.astype(np.int64)
    if arr.min() < 0 or arr.max() >= n:
        raise ValueError(f"Partition {name!r}: {what} must lie in [0, {n}), got range [{arr.min()}, {arr.max()}]")
    return arr


def _check_support(name, labels, k, what="the starting labels"):
    """Refuse labels with more blocks than a finite-Dirichlet prior's ``k`` (prior probability 0)."""
    if k > 0:
        n_blocks = int(np.unique(labels).size)
        if n_blocks > k:
            raise ValueError(f"Partition {name!r}: {what} have {n_blocks} blocks but the "
                             f"FiniteDirichlet prior allows at most k={k} (outside the prior's support)")


def _check_observed_labels(name, observed, n, prior):
    """A known partition (``observed=labels``) validated like labels given as a start: PyMC would
    cast 0.5 to 0 and evaluate a vector of another length or with labels outside [0, n) without a
    word (or as -inf). ``pm.Data`` are checked at their current value and passed on as they are."""
    value = constant_value(observed) if isinstance(observed, Variable) else observed
    if value is None:
        return observed  # a random variable as observed: PyMC's own refusal
    labels = check_labels(name, value, n, what="observed labels")
    if isinstance(prior, PartitionPrior):
        _check_support(name, labels, prior.k, what="the observed labels")
    return observed if isinstance(observed, Variable) else labels


def partition_size(partition) -> int:
    """n of a Partition random variable."""
    return int(constant_value(partition.owner.inputs[-1]))


def likelihood_names() -> str:
    """The collapsed likelihoods of this package as text (``"pmp.NormalNormal, ..., or
    pmp.DirichletCategorical"``), read from this module -- every public ``pm.Distribution`` whose op is a
    :class:`CollapsedLikelihoodRV` -- so that messages list them all, whatever is added."""
    names = [f"pmp.{name}" for name, obj in globals().items()
             if isinstance(obj, type) and issubclass(obj, pm.Distribution) and not name.startswith("_")
             and isinstance(getattr(obj, "rv_op", None), CollapsedLikelihoodRV)]
    return ", ".join(names[:-1]) + " or " + names[-1]


def is_partition(var) -> bool:
    return isinstance(var, Variable) and var.owner is not None and isinstance(var.owner.op, PartitionRV)


def known_partitions(model) -> list[str]:
    """The names of ``model``'s known partitions (``observed=labels``)."""
    return [rv.name for rv in model.observed_RVs if is_partition(rv)]


def no_partition_found(model) -> str:
    """What to say when ``model`` has no partition to sample: none at all, or only known ones."""
    known = known_partitions(model)
    if known:
        return f"no unknown pmp.Partition variable ({', '.join(map(repr, known))} observed: a known partition is data)"
    return "no pmp.Partition variable"


# ----------------------------------------------------------------------------- likelihoods


class CollapsedLikelihoodRV(RandomVariable):
    """Base op: data (n, D) given labels (first parameter) with cluster parameters integrated out.

    The first hyperparameter of every family is a length-D vector (``mu0`` or ``a``), so D is
    fixed when the model is built (:meth:`data_dim`).
    """

    dtype = "floatX"
    family_code: int = -1

    @staticmethod
    def data_dim(rv):
        """The data dimension D the likelihood ``rv`` was built for."""
        dim = rv.owner.inputs[3].type.shape[-1]
        return None if dim is None else int(dim)

    def kernel_part(self, data, *hyper):
        """(family code, data, hyper vector) for the compiled kernels, from numeric values."""
        raise NotImplementedError

    def check_observed(self, rv, value, n, dim):
        """The observed value of likelihood ``rv`` validated for the kernels (``kernel_part``'s
        ``data``): here (n, D) floats (:func:`check_data`)."""
        return check_data(rv.name, value, n, binary=self.family_code == kernels.BETA_BERNOULLI, dim=dim)

    def family(self, dim, *hyper):
        """The :class:`~pymc_partitions.families.predictive.Family` (conditional posteriors, draws,
        predictive densities) at numeric hyperparameter values, for data of dimension ``dim``."""
        raise NotImplementedError

    #: what a new point of this likelihood is, for messages (``pmp.predictive_density``)
    point_hint: str = ""

    def point_dim(self, rv, dim):
        """Columns of a new point of likelihood ``rv`` whose data have ``dim`` columns (the family's
        ``log_predictive`` reads such rows): ``dim`` here."""
        return dim

    @staticmethod
    def partition_input(rv):
        """The partition variable a likelihood ``rv`` depends on."""
        return rv.owner.inputs[2]

    def posterior_replicate(self, rv, data=None, hyper=None):
        """The variable that replaces the likelihood ``rv`` when its partition is given (posterior
        predictive sampling): replicated data whose cluster parameters are drawn from their
        conditional posterior given the labels *and the observed data* -- ``data`` (a variable), by
        default ``rv.tag.observations``, which PyMC sets on every observed variable -- with the
        hyperparameters ``hyper`` (variables; by default the likelihood's own). See
        :func:`.guards.guard_forward_sampling`, which passes the values at sampling time."""
        observations = getattr(rv.tag, "observations", None)
        if observations is None:
            raise ValueError(f"{rv.name!r}: the collapsed likelihood has no observed data, so replicated data "
                             "cannot be drawn given its partition")
        rng, size, labels, *params = rv.owner.inputs
        data = observations if data is None else data
        hyper = params if hyper is None else list(hyper)
        default = data is observations and len(hyper) == len(params) and all(a is b for a, b in zip(hyper, params))
        cached = _REPLICATES.get(rv) if default else None
        if cached is not None and cached[0] is data and cached[1] == tuple(rv.owner.inputs):
            return cached[2]
        out = _REPLICATE_OPS[type(self)].make_node(rng, size, labels, data, *hyper).outputs[1]
        out.name = rv.name
        if default:
            _REPLICATES[rv] = (data, tuple(rv.owner.inputs), out)
        return out


_REPLICATES = weakref.WeakKeyDictionary()  # likelihood -> (data, its inputs, replacement): one graph per model


def _check_forward_draw(op, labels):
    """Refuse forward draws this package cannot vouch for: batched labels (e.g. from
    ``pm.vectorize_over_posterior``), or any draw when PyMC's forward sampling could not be
    hooked (a prior-drawn replicate would then pass for a posterior predictive one)."""
    if np.ndim(labels) != 1:
        raise NotImplementedError(f"{op.name}: collapsed likelihoods draw from one label vector at a time, got labels "
                                  f"of shape {np.shape(labels)}; for replicated data use pmp.sample_posterior_predictive")
    if not compat.forward_sampling_guarded():
        raise NotImplementedError(compat.FORWARD_GUARD_MISSING)


class NormalNormalRV(CollapsedLikelihoodRV):
    name = "normal_normal"
    signature = "(n),(d),(d),(d)->(n,d)"
    _print_name = ("NormalNormal", "\\operatorname{NormalNormal}")
    family_code = kernels.DIAG_NORMAL

    def rng_fn(self, rng, labels, mu0, sigma0, sigma, size=None):
        _no_size(size)
        _check_forward_draw(self, labels)
        return draws.draw_normal_normal(labels, mu0, sigma0, sigma, rng)

    def kernel_part(self, data, mu0, sigma0, sigma):
        return kernels.DIAG_NORMAL, data, kernels.diag_normal_hyper(mu0, sigma0, sigma, data.shape[1])

    def family(self, dim, mu0, sigma0, sigma):
        return DiagNormal(mu0, sigma0, sigma, dim)


class NormalNormalFullRV(CollapsedLikelihoodRV):
    name = "normal_normal_full"
    signature = "(n),(d),(d,d),(d,d)->(n,d)"
    _print_name = ("NormalNormal", "\\operatorname{NormalNormal}")
    family_code = kernels.DIAG_NORMAL

    def rng_fn(self, rng, labels, mu0, cov0, cov, size=None):
        _no_size(size)
        _check_forward_draw(self, labels)
        return draws.draw_normal_normal_full(labels, mu0, cov0, cov, rng)

    def family(self, dim, mu0, cov0, cov):
        return FullNormal(mu0, cov0, cov, dim)

    def kernel_part(self, data, mu0, cov0, cov):
        y2, mu2, sigma0_2, log_jac = whiten_full_normal(data, mu0, cov0, cov)
        hyper = kernels.diag_normal_hyper(mu2, sigma0_2, 1.0, data.shape[1], log_jac)
        return kernels.DIAG_NORMAL, y2, hyper


class NIWRV(CollapsedLikelihoodRV):
    name = "normal_inverse_wishart"
    signature = "(n),(d),(),(),(d,d)->(n,d)"
    _print_name = ("NormalInverseWishart", "\\operatorname{NIW}")
    family_code = kernels.NIW

    def rng_fn(self, rng, labels, mu0, kappa0, nu0, scale0, size=None):
        _no_size(size)
        _check_forward_draw(self, labels)
        return draws.draw_niw(labels, mu0, kappa0, nu0, scale0, rng)

    def family(self, dim, mu0, kappa0, nu0, scale0):
        return NIWFamily(mu0, kappa0, nu0, scale0, dim)

    def kernel_part(self, data, mu0, kappa0, nu0, scale0):
        return kernels.NIW, data, kernels.niw_hyper(mu0, kappa0, nu0, scale0, data.shape[1], data.shape[0])


class BetaBernoulliRV(CollapsedLikelihoodRV):
    name = "beta_bernoulli"
    signature = "(n),(d),(d)->(n,d)"
    dtype = "int64"
    _print_name = ("BetaBernoulli", "\\operatorname{BetaBernoulli}")
    family_code = kernels.BETA_BERNOULLI

    def rng_fn(self, rng, labels, a, b, size=None):
        _no_size(size)
        _check_forward_draw(self, labels)
        return draws.draw_beta_bernoulli(labels, a, b, rng).astype(np.int64)

    def kernel_part(self, data, a, b):
        return kernels.BETA_BERNOULLI, data, kernels.beta_bernoulli_hyper(a, b, data.shape[1])

    def family(self, dim, a, b):
        return BetaBernoulliFamily(a, b, dim)


class BetaBernoulliNetworkRV(CollapsedLikelihoodRV):
    """A graph on the partition's n items as a canonical (m, 2) edge list given the labels; parameters
    (labels, a, b, directed, n, m)."""

    name = "beta_bernoulli_network"
    signature = "(n),(),(),(),(),()->(m,t)"
    dtype = "int64"
    _print_name = ("BetaBernoulliNetwork", "\\operatorname{BetaBernoulliNetwork}")
    family_code = kernels.NETWORK

    def _supp_shape_from_params(self, dist_params, param_shapes=None):
        return (dist_params[5], 2)

    @staticmethod
    def data_dim(rv):
        return 2

    def rng_fn(self, rng, labels, a, b, directed, n, m, size=None):
        raise NotImplementedError(_NETWORK_NO_FORWARD)

    def check_observed(self, rv, value, n, dim):
        return network.as_edges(value, n, directed=bool(constant_value(rv.owner.inputs[6])), name=rv.name)

    def kernel_part(self, edges, a, b, directed, n, m):
        n = int(n)
        return kernels.NETWORK, np.zeros((n, 1)), network.network_hyper(a, b, edges, n, bool(directed))

    def family(self, dim, *hyper):
        raise NotImplementedError("BetaBernoulliNetwork (family NETWORK): collapsed predictive densities and cluster "
                                  "parameters are defined for item-wise likelihoods only; for the block-pair "
                                  "probabilities use pymc_partitions.families.network.block_probabilities")

    def posterior_replicate(self, rv, data=None, hyper=None):
        raise NotImplementedError(_NETWORK_NO_FORWARD)


_NETWORK_NO_FORWARD = (
    "BetaBernoulliNetwork: forward draws (pm.sample_prior_predictive / pm.sample_posterior_predictive) are not "
    "supported: a replicated graph has a random number of edges, which the edge-list value cannot hold. Draw the "
    "block-pair probabilities from their Beta posterior, and replicated graphs from them, with "
    "pymc_partitions.families.network.block_probabilities and replicate_edges")


class PosteriorReplicateRV(RandomVariable):
    """Replicated data of a collapsed likelihood given its labels *and its observed data*: each
    block's parameters drawn from their conditional posterior given the block's data, then the
    block's data (:func:`~pymc_partitions.families.predictive.replicate`). Parameters: the labels,
    the observed data, then the likelihood's hyperparameters. Only made by
    :meth:`CollapsedLikelihoodRV.posterior_replicate`, for ``pm.sample_posterior_predictive``."""

    base: CollapsedLikelihoodRV

    def rng_fn(self, rng, labels, data, *hyper):
        *hyper, size = hyper
        _no_size(size)
        base = self.base
        if np.ndim(labels) != 1:
            raise NotImplementedError(f"{self.name}: one label vector at a time, got labels of shape {np.shape(labels)}")
        labels = check_labels(self.name, labels, np.shape(labels)[0])
        binary = base.family_code == kernels.BETA_BERNOULLI
        data = check_data(self.name, data, labels.shape[0], binary=binary)
        out, _ = replicate(base.family(data.shape[1], *hyper), labels, data, rng)
        return out.astype(self.dtype)


def _replicate_op(base):
    """The :class:`PosteriorReplicateRV` of a likelihood op: signature with the data after the labels."""
    inputs, output = base.signature.split("->")
    labels, rest = inputs.split(",", 1)
    cls = type(f"{type(base).__name__[:-2]}PosteriorReplicateRV", (PosteriorReplicateRV,), {
        "name": f"{base.name}_posterior_replicate", "signature": f"{labels},(n,d),{rest}->{output}",
        "dtype": base.dtype, "base": base, "_print_name": (f"{base._print_name[0]}Replicate",
                                                           f"{base._print_name[1]}Replicate"),
        "__module__": __name__,
    })
    globals()[cls.__name__] = cls  # importable by name, so that the op pickles
    return cls()


_REPLICATE_OPS = {op: _replicate_op(op()) for op in (NormalNormalRV, NormalNormalFullRV, NIWRV, BetaBernoulliRV)}


def _no_size(size):
    if size is not None and tuple(size) != ():
        raise NotImplementedError("collapsed likelihoods do not support batched draws (size)")


def _check_partition(name, partition):
    if not is_partition(partition):
        raise TypeError(
            f"{name!r}: partition must be a pmp.Partition random variable, got {partition!r}"
        )
    return partition_size(partition)


_NO_IMPUTE = "collapsed likelihoods do not impute missing data: leave those items out"


def _real_array(name, what, value, *, allow_bool=False) -> np.ndarray:
    """``value`` as a float64 array, refusing what numpy would silently convert or drop: complex
    numbers (imaginary part), strings ("1.5"), masked or missing entries (PyMC would impute them; a
    collapsed likelihood cannot; pandas' nullable dtypes are read when nothing is missing), ragged
    sequences, and booleans unless ``allow_bool`` (data: False/True are 0/1)."""
    if isinstance(value, np.ma.MaskedArray):
        if np.ma.count_masked(value):
            raise ValueError(f"{name!r}: {what} has {np.ma.count_masked(value)} masked (missing) entries; {_NO_IMPUTE}")
        value = np.ma.getdata(value)
    if hasattr(value, "isna") and hasattr(value, "to_numpy"):  # pandas: nullable dtypes hold pd.NA, not NaN
        missing = int(np.asarray(value.isna()).sum())
        if missing:
            raise ValueError(f"{name!r}: {what} has {missing} missing values (NaN, None or pd.NA in the "
                             f"{type(value).__name__}); {_NO_IMPUTE}")
        value = value.to_numpy()
    try:
        raw = np.asarray(value)
    except ValueError:  # numpy >= 1.24: "setting an array element with a sequence" (rows of unequal lengths)
        raise ValueError(f"{name!r}: {what} must be a rectangular array of numbers, got a ragged sequence (rows of "
                         "different lengths)") from None
    kind = raw.dtype.kind
    if kind == "O":
        flat = raw.reshape(-1)
        if any(isinstance(v, (str, bytes, complex, np.complexfloating, bool, np.bool_)) for v in flat) and not (
                allow_bool and all(isinstance(v, (bool, np.bool_)) for v in flat)):
            kind = "invalid"
    if kind == "b" and not allow_bool:
        raise TypeError(f"{name!r}: {what} must be a number, not a boolean, got {value!r}")
    if kind not in "biufO":
        raise TypeError(f"{name!r}: {what} must be numeric (real numbers), got {raw.dtype} values")
    try:
        return np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name!r}: {what} must be numeric, got {type(value).__name__}") from None


def check_data(name, value, n, *, binary=False, dim=None) -> np.ndarray:
    """Observed data of likelihood ``name`` as a float64 (n, D) array, or a clear error.

    The one check of data values: at model construction and whenever ``pm.set_data`` gives a
    likelihood new values (:class:`~pymc_partitions.pymc.terms.PartitionTerms` calls it again).
    """
    value = _real_array(name, "observed", value, allow_bool=True)
    if value.ndim == 1:
        value = value[:, None]
    if value.ndim != 2:
        raise ValueError(f"{name!r}: observed must be 1-d or 2-d (n, D), got shape {value.shape}")
    if value.shape[1] == 0:
        raise ValueError(f"{name!r}: observed has no columns (shape {value.shape})")
    if value.shape[0] != n:
        raise ValueError(f"{name!r}: observed has {value.shape[0]} rows but the partition has n={n} items")
    if dim is not None and value.shape[1] != dim:
        raise ValueError(f"{name!r}: observed has {value.shape[1]} columns but the model was built for D={dim}; "
                         "pm.set_data cannot change D (the hyperparameters have length D): rebuild the model")
    if not np.all(np.isfinite(value)):
        bad = int(np.sum(~np.isfinite(value)))
        raise ValueError(f"{name!r}: observed contains {bad} NaN or infinite values")
    if binary and not np.all((value == 0) | (value == 1)):
        bad = int(np.sum((value != 0) & (value != 1)))
        raise ValueError(f"{name!r}: BetaBernoulli data must be 0/1, got {bad} other values")
    return value


def _check_observed(name, observed, n, *, binary=False):
    """(what PyMC gets as ``observed``, its current value as (n, D) floats).

    Data given as ``pm.Data`` stay symbolic, so that ``pm.set_data`` reaches the model's logp and
    the step methods (which validate new values with :func:`check_data`). 1-d data become a
    column; binary data that are not 0/1 become -1 before PyMC casts them to integers, so that a
    0.5 cannot be truncated to a valid 0 (the logp is then -inf).
    """
    if observed is None:
        raise TypeError(f"{name!r}: a collapsed likelihood needs observed data (observed=...)")
    if not isinstance(observed, Variable):
        return None, check_data(name, observed, n, binary=binary)
    value = constant_value(observed)
    if value is None:
        raise TypeError(f"{name!r}: observed must be data (array or pm.Data), not a random variable")
    value = check_data(name, value, n, binary=binary)
    symbolic_data = pt.as_tensor_variable(observed)
    if symbolic_data.ndim == 1:
        symbolic_data = pt.shape_padright(symbolic_data)
    if binary:
        symbolic_data = pt.switch(pt.eq(symbolic_data, 0) | pt.eq(symbolic_data, 1), symbolic_data, -1)
    return symbolic_data, value


def exact_integers(values) -> np.ndarray:
    """Non-negative integer data (counts, categories, 0/1 values, edge lists; checked before) as
    PyMC must receive them to store them exactly: uint64.

    ``Model.make_obs_var`` converts observed data with ``pymc.pytensorf.convert_observed_data``,
    whose ``smarttypeX`` turns every *signed* integer array into ``intX`` (int32 under the default
    ``floatX = float64``) before casting to the variable's dtype: counts of 2^31 or more wrap modulo
    2^32 (PyMC 5.28 and 6.4 alike). Unsigned arrays and floats pass through unchanged and are then
    cast to the variable's int64 exactly (float would depend on ``floatX``). The values are at most
    2^52 here (:func:`~pymc_partitions.families.predictive.check_counts`), so the cast is exact;
    :func:`_stored_exactly` checks what PyMC stored."""
    return np.asarray(values).astype(np.uint64)


def _stored_exactly(rv, given):
    """``rv`` once its observed value in the model equals ``given`` (numeric data; symbolic
    ``pm.Data`` are passed through), else ``NotImplementedError``: a PyMC that converts observed
    integers differently from :func:`exact_integers`'s description must not silently change them."""
    if isinstance(given, Variable):
        return rv
    stored = constant_value(rv.tag.observations)
    given = np.asarray(given)
    if stored is None or stored.shape != given.shape or not np.array_equal(stored.astype(np.float64),
                                                                          given.astype(np.float64)):
        raise NotImplementedError(
            f"{rv.name!r}: PyMC {pm.__version__} stored the observed integers differently from those given (e.g. "
            "wrapped modulo 2^32): pymc_partitions does not know this PyMC's conversion of observed data. Please "
            "report it; meanwhile keep integer data below 2^31")
    return rv


_INT32_DATA_HINT = (" (a pm.Data holding integers is stored by PyMC as int32, and pm.Data / pm.set_data wrap "
                    "values of 2^31 or more modulo 2^32 before pymc_partitions sees them: give such counts as "
                    "float64 arrays, which pm.Data keeps exactly)")


def _check_representable(name, op, value, hyper):
    """Refuse, at model construction, data and fixed hyperparameters whose sufficient statistics or
    log densities overflow or underflow in the kernels (``FamilyPack.build`` checks them); with
    random hyperparameters the check runs when the step methods read their values."""
    if any(isinstance(h, Variable) for h in hyper):
        return
    kernels.FamilyPack.build([op.kernel_part(value, *hyper)], n=value.shape[0], names=[name])


def variable_shape(var) -> tuple:
    """Shape of a PyTensor variable: the static one, completed by evaluating its shape graph (no
    random draw needed) where entries are unknown; ``None`` entries remain where that fails."""
    shape = tuple(var.type.shape)
    if all(s is not None for s in shape):
        return shape
    try:
        return tuple(int(s) for s in var.shape.eval())
    except Exception:  # noqa: BLE001 - then PyMC reports a mismatch when it evaluates the model
        return shape


def _check_variable_shape(name, arg, var, fits, want):
    """``var`` as a float64 tensor if its shape passes ``fits(shape)``, else ``ValueError`` naming the
    argument, as for a numpy value (``want`` says what is expected)."""
    var = pt.as_tensor_variable(var)
    shape = variable_shape(var)
    if not fits(shape):
        raise ValueError(f"{name!r}: {arg} must be {want}, got a PyMC variable of shape {shape}")
    return var.astype("float64")


def _broadcasts_to(shape, target) -> bool:
    """Whether an array of ``shape`` (entries may be ``None``: unknown) broadcasts to ``target``."""
    if len(shape) > len(target):
        return False
    return all(s is None or s in (1, t) for s, t in zip(shape[::-1], target[::-1]))


def _vector(name, arg, value, dim, *, positive=False):
    """Broadcast a hyperparameter to shape (dim,), validating numbers."""
    if isinstance(value, Variable):
        var = _check_variable_shape(name, arg, value, lambda s: _broadcasts_to(s, (dim,)),
                                    f"a scalar or have length D={dim}")
        return pt.broadcast_to(var, (dim,))
    arr = _real_array(name, arg, value)
    try:
        arr = np.broadcast_to(arr, (dim,)).copy()
    except ValueError:
        raise ValueError(f"{name!r}: {arg} must be a scalar or have length D={dim}, got shape {arr.shape}") from None
    if not np.all(np.isfinite(arr)) or (positive and not np.all(arr > 0)):
        raise ValueError(f"{name!r}: {arg} must be {'positive and ' if positive else ''}finite, got {value!r}")
    return arr


def _scalar(name, arg, value, *, greater=None):
    if isinstance(value, Variable):
        return _check_variable_shape(name, arg, value, lambda s: s == (), "a scalar")
    arr = _real_array(name, arg, value)
    if arr.ndim != 0 or not np.isfinite(arr) or (greater is not None and not arr > greater):
        raise ValueError(f"{name!r}: {arg} must be a finite scalar > {greater}, got {value!r}")
    return float(arr)


def _spd(name, arg, value, dim):
    if isinstance(value, Variable):
        return _check_variable_shape(name, arg, value, lambda s: len(s) == 2 and all(x in (None, dim) for x in s),
                                     f"a {dim}x{dim} matrix")
    arr = _real_array(name, arg, value)
    if arr.ndim == 0:
        arr = float(arr) * np.eye(dim)
    if arr.shape != (dim, dim):
        raise ValueError(f"{name!r}: {arg} must be a {dim}x{dim} matrix, got shape {arr.shape}")
    if not np.allclose(arr, arr.T) or not np.all(np.isfinite(arr)):
        raise ValueError(f"{name!r}: {arg} must be a finite symmetric matrix")
    try:
        np.linalg.cholesky(arr)
    except np.linalg.LinAlgError:
        raise ValueError(f"{name!r}: {arg} must be positive definite") from None
    return arr


# ----------------------------------------------------------------------------- data-scaled hyperparameters

#: The default ``within`` of the data-scaled hyperparameters is ``DEFAULT_SCALE_CLUSTERS ** (-2 / D)``.
DEFAULT_SCALE_CLUSTERS = 3


def _data_moments(owner: str, y) -> tuple[np.ndarray, np.ndarray]:
    """(column means, column variances with ddof = 1) of data ``y``, (n,) or (n, D), checked."""
    if isinstance(y, Variable):
        raise TypeError(f"{owner}: y must be the data's values (a numpy array), not a PyTensor variable; "
                        "for pm.Data pass the array you gave it")
    y = _real_array(owner, "y", y, allow_bool=True)
    if y.ndim == 1:
        y = y[:, None]
    if y.ndim != 2 or y.shape[1] == 0:
        raise ValueError(f"{owner}: y must be 1-d or 2-d (n, D) with D >= 1, got shape {y.shape}")
    if y.shape[0] < 2:
        raise ValueError(f"{owner}: y needs at least 2 rows to have a variance, got {y.shape[0]}")
    if not np.all(np.isfinite(y)):
        raise ValueError(f"{owner}: y contains {int(np.sum(~np.isfinite(y)))} NaN or infinite values")
    var = y.var(axis=0, ddof=1)
    if not np.all(var > 0):
        raise ValueError(f"{owner}: column(s) {np.flatnonzero(~(var > 0)).tolist()} of y are constant: "
                         "they cannot inform a clustering; leave them out")
    return y.mean(axis=0), var


def _within(owner: str, within, dim: int) -> float:
    if within is None:
        return float(DEFAULT_SCALE_CLUSTERS ** (-2.0 / dim))
    return _checks.real("within", within, low=0.0, high=1.0, low_open=True, high_open=True, owner=owner)


class BetaBernoulliNetwork(pm.Discrete):
    r"""Collapsed Bernoulli stochastic blockmodel (the infinite relational model of Kemp et al. 2006
    with a CRP prior; seed 004 Sec. 3.2) for a graph on the partition's items.

    ``theta_kl ~ Beta(a, b)`` for every pair of blocks, ``A_ij ~ Bernoulli(theta_{z_i z_j})`` for
    every pair of nodes, theta integrated out:
    ``sum over block pairs of log B(a + e_kl, b + N_kl - e_kl) - log B(a, b)``, with e_kl the edges
    and N_kl the node pairs between blocks k and l, **within-block pairs included** (N_kk =
    m_k (m_k - 1) / 2 undirected). ``directed=True``: ordered pairs (k, l) for all k, l, N_kk =
    m_k (m_k - 1). No self-loops in either case.

    ``observed``: a dense n x n 0/1 adjacency matrix (symmetric unless ``directed``; the diagonal
    must be 0: self-loops are refused, not ignored), a ``scipy.sparse`` matrix of that kind, or an
    (m, 2) integer edge list (undirected: each edge once, either orientation; an n x n array is
    always read as a matrix). It is stored as the canonical edge list (rows sorted, ``i < j``
    when undirected), the variable's value; memory O(edges + K^2), never n x n for sparse input.
    ``a``, ``b``: positive numbers or PyMC variables. Sampled by ``CollapsedGibbs`` (a node move
    costs O(degree + K T), T the blocks of its neighbours), ``ARM`` and ``SplitMerge``; PGSM and
    SAMS refuse it. Forward draws (prior and posterior predictive) are refused; see
    :func:`pymc_partitions.families.network.block_probabilities`.

    Examples
    --------
    >>> import numpy as np, pymc as pm, pymc_partitions as pmp
    >>> edges = np.array([[0, 1], [1, 2], [0, 2], [3, 4]])
    >>> with pm.Model() as model:
    ...     z = pmp.Partition("z", pmp.CRP(1.0), n=5)
    ...     A = pmp.BetaBernoulliNetwork("A", partition=z, a=1.0, b=1.0, observed=edges)
    >>> model.compile_logp()({"z": [0, 0, 0, 1, 1]}) > model.compile_logp()({"z": [0, 1, 0, 1, 0]})
    np.True_
    """

    rv_op = BetaBernoulliNetworkRV()

    def __new__(cls, name, partition, a=1.0, b=1.0, *, observed=None, directed=False, **kwargs):
        n = _check_partition(name, partition)
        if not isinstance(directed, (bool, np.bool_)):
            raise TypeError(f"{name!r}: directed must be True or False, got {directed!r}")
        if observed is None:
            raise TypeError(f"{name!r}: a collapsed likelihood needs observed data (observed=...)")
        if isinstance(observed, Variable):
            raise TypeError(f"{name!r}: observed must be an adjacency matrix or an edge list (numpy or scipy.sparse); "
                            "pm.Data is not supported for networks")
        edges = network.as_edges(observed, n, directed=bool(directed), name=name)
        hyper = (_scalar(name, "a", a, greater=0.0), _scalar(name, "b", b, greater=0.0))
        if not any(isinstance(h, Variable) for h in hyper):
            kernels.FamilyPack.build([cls.rv_op.kernel_part(edges, *hyper, bool(directed), n, edges.shape[0])], n=n,
                                     names=[name])
        for key in ("shape", "size", "dims"):
            if kwargs.get(key) is not None:
                raise TypeError(f"{name!r}: {key} is not supported (the value is the edge list)")
        edges = exact_integers(edges)
        rv = super().__new__(cls, name, partition, *hyper, int(bool(directed)), n, edges.shape[0], observed=edges,
                             **kwargs)
        return _stored_exactly(rv, edges)

    @classmethod
    def dist(cls, partition, a, b, directed, n, m, **kwargs):
        return super().dist([partition, a, b, directed, n, m], **kwargs)

    def support_point(rv, size, partition, a, b, directed, n, m):
        return pt.zeros_like(rv)

    def logp(value, partition, a, b, directed, n, m):
        lp = symbolic.beta_bernoulli_network_logp(partition, value, a, b, bool(constant_value(directed)),
                                                 int(constant_value(n)))
        return check_parameters(lp, pt.gt(a, 0), pt.gt(b, 0), msg="a > 0, b > 0")


class NormalNormal(pm.Continuous):
    r"""Collapsed Normal likelihood with known covariance and a Normal prior on each cluster mean.

    ``y_i | mu_b ~ N(mu_b, Sigma)`` for items i in block b, ``mu_b ~ N(mu0, Sigma0)``, the means
    integrated out (seed 000's DPMM). Isotropic or diagonal covariances through the standard
    deviations ``sigma0`` (prior of the means) and ``sigma`` (observations), scalars or length-D;
    full covariances through ``cov0=`` and ``cov=`` (both given, D×D).

    Examples
    --------
    >>> import numpy as np, pymc as pm, pymc_partitions as pmp
    >>> y = np.r_[np.zeros(3), np.ones(3) * 5]
    >>> with pm.Model():
    ...     z = pmp.Partition("z", pmp.CRP(1.0), n=6)
    ...     obs = pmp.NormalNormal("y", partition=z, mu0=0.0, sigma0=3.0, sigma=1.0, observed=y)
    """

    rv_op = NormalNormalRV()

    def __new__(cls, name, partition, mu0=0.0, sigma0=1.0, sigma=1.0, *, cov0=None, cov=None, observed=None, **kwargs):
        n = _check_partition(name, partition)
        symbolic_data, value = _check_observed(name, observed, n)
        obs = value if symbolic_data is None else symbolic_data
        dim = value.shape[1]
        mu0 = _vector(name, "mu0", mu0, dim)
        if cov0 is not None or cov is not None:
            if cov0 is None or cov is None:
                raise ValueError(f"{name!r}: give both cov0 and cov for full covariances")
            hyper = (mu0, _spd(name, "cov0", cov0, dim), _spd(name, "cov", cov, dim))
            _check_representable(name, _NormalNormalFull.rv_op, value, hyper)
            return _NormalNormalFull(name, partition, *hyper, observed=obs, **kwargs)
        hyper = (mu0, _vector(name, "sigma0", sigma0, dim, positive=True), _vector(name, "sigma", sigma, dim, positive=True))
        _check_representable(name, cls.rv_op, value, hyper)
        return super().__new__(cls, name, partition, *hyper, observed=obs, **kwargs)

    @classmethod
    def dist(cls, partition, mu0, sigma0, sigma, **kwargs):
        return super().dist([partition, mu0, sigma0, sigma], **kwargs)

    def support_point(rv, size, partition, mu0, sigma0, sigma):
        return pt.zeros_like(rv)

    def logp(value, partition, mu0, sigma0, sigma):
        lp = symbolic.normal_normal_logp(partition, value, mu0, sigma0, sigma)
        return check_parameters(lp, pt.all(sigma0 > 0), pt.all(sigma > 0), msg="sigma0 > 0, sigma > 0")

    @classmethod
    def hyperparameters_from_data(cls, y, *, within=None) -> dict:
        r"""Hyperparameters scaled to the data ``y`` (the observed values, (n,) or (n, D)): a dict
        to pass on, ``pmp.NormalNormal(name, partition, **hyper, observed=y)``.

        ``mu0`` = the column means; per column, the observation variance ``sigma**2`` = ``within``
        times the column's variance and the means' prior variance ``sigma0**2`` = ``1 - within``
        times it, so an item of a new cluster has the data's variance a priori. ``within`` in
        (0, 1) is the share of each column's variance expected inside a cluster; default
        ``3 ** (-2 / D)``, the scale at which 3 clusters of equal volume fill the data's volume
        (Fraley and Raftery 2007): 0.33 at D = 2, 0.84 at D = 13, 0.96 at D = 50. Nothing here
        changes what the arguments of ``pmp.NormalNormal`` mean; see docs/models.md
        ("Choosing the hyperparameters") for the measurements behind it.

        Examples
        --------
        >>> import numpy as np, pymc_partitions as pmp
        >>> y = np.array([[0.0, 10.0], [1.0, 30.0], [2.0, 20.0]])
        >>> hyper = pmp.NormalNormal.hyperparameters_from_data(y, within=0.5)
        >>> hyper["mu0"].tolist(), hyper["sigma"].round(3).tolist(), hyper["sigma0"].round(3).tolist()
        ([1.0, 20.0], [0.707, 7.071], [0.707, 7.071])
        """
        owner = "NormalNormal.hyperparameters_from_data"
        mean, var = _data_moments(owner, y)
        within = _within(owner, within, mean.size)
        return {"mu0": mean, "sigma0": np.sqrt((1.0 - within) * var), "sigma": np.sqrt(within * var)}


class _NormalNormalFull(pm.Continuous):
    rv_op = NormalNormalFullRV()

    @classmethod
    def dist(cls, partition, mu0, cov0, cov, **kwargs):
        return super().dist([partition, mu0, cov0, cov], **kwargs)

    def support_point(rv, size, partition, mu0, cov0, cov):
        return pt.zeros_like(rv)

    def logp(value, partition, mu0, cov0, cov):
        return symbolic.normal_normal_full_logp(partition, value, mu0, cov0, cov)


class NormalInverseWishart(pm.Continuous):
    r"""Collapsed multivariate Normal likelihood with unknown mean and covariance per cluster.

    ``Sigma_b ~ InvWishart(nu0, scale0)``, ``mu_b | Sigma_b ~ N(mu0, Sigma_b / kappa0)``,
    ``y_i ~ N(mu_b, Sigma_b)``; both integrated out (seed 003, App. E.1, with the standard
    multivariate Gamma). Requires ``nu0 > D - 1``, ``kappa0 > 0``, ``scale0`` positive definite.

    Examples
    --------
    >>> import numpy as np, pymc as pm, pymc_partitions as pmp
    >>> y = np.random.default_rng(0).normal(size=(10, 2))
    >>> with pm.Model():
    ...     z = pmp.Partition("z", pmp.CRP(1.0), n=10)
    ...     obs = pmp.NormalInverseWishart("y", partition=z, mu0=0.0, kappa0=1.0, nu0=4.0,
    ...                                    scale0=np.eye(2), observed=y)
    """

    rv_op = NIWRV()

    def __new__(cls, name, partition, mu0=0.0, kappa0=1.0, nu0=None, scale0=None, *, observed=None, **kwargs):
        n = _check_partition(name, partition)
        symbolic_data, value = _check_observed(name, observed, n)
        obs = value if symbolic_data is None else symbolic_data
        dim = value.shape[1]
        nu0 = dim + 2.0 if nu0 is None else nu0
        scale0 = np.eye(dim) if scale0 is None else scale0
        hyper = (_vector(name, "mu0", mu0, dim), _scalar(name, "kappa0", kappa0, greater=0.0),
                 _scalar(name, "nu0", nu0, greater=dim - 1.0), _spd(name, "scale0", scale0, dim))
        _check_representable(name, cls.rv_op, value, hyper)
        return super().__new__(cls, name, partition, *hyper, observed=obs, **kwargs)

    @classmethod
    def dist(cls, partition, mu0, kappa0, nu0, scale0, **kwargs):
        return super().dist([partition, mu0, kappa0, nu0, scale0], **kwargs)

    def support_point(rv, size, partition, mu0, kappa0, nu0, scale0):
        return pt.zeros_like(rv)

    def logp(value, partition, mu0, kappa0, nu0, scale0):
        return symbolic.niw_logp(partition, value, mu0, kappa0, nu0, scale0)

    @classmethod
    def hyperparameters_from_data(cls, y, *, within=None, kappa0=0.1, nu0=None) -> dict:
        r"""Hyperparameters scaled to the data ``y`` (the observed values, (n,) or (n, D)): a dict
        to pass on, ``pmp.NormalInverseWishart(name, partition, **hyper, observed=y)``.

        * ``mu0``: the column means.
        * ``scale0`` = (nu0 - D - 1) ``within`` diag(column variances), so that E[Sigma_b] =
          ``within`` diag(variances): each cluster's covariance is centred on a diagonal matrix
          (the data's correlations are mostly *between* clusters). ``within`` in (0, 1) is the
          share of each column's variance expected inside a cluster; default ``3 ** (-2 / D)``,
          the scale at which 3 clusters of equal volume fill the data's volume (Fraley and
          Raftery 2007): 0.33 at D = 2, 0.58 at D = 4, 0.84 at D = 13, 0.96 at D = 50.
        * ``nu0`` (default 2 D + 2, must exceed D + 1): the covariance prior counts as
          nu0 - D - 1 = D + 1 observations, so a cluster needs more than about D items before
          its own scatter decides its covariance. The constructor's default D + 2 counts as one
          observation: for D > 2 small clusters then take almost any covariance, which on real
          data gives many clusters and poor mixing.
        * ``kappa0`` (default 0.1): cluster means spread sqrt(1 / kappa0) = 3.2 times a cluster's
          own scale around ``mu0``, enough to put a cluster anywhere in the data.

        Nothing here changes what the arguments of ``pmp.NormalInverseWishart`` mean; see
        docs/models.md ("Choosing the hyperparameters") for the measurements behind the defaults.

        Examples
        --------
        >>> import numpy as np, pymc_partitions as pmp
        >>> y = np.random.default_rng(0).normal([0.0, 100.0], [1.0, 10.0], size=(50, 2))
        >>> hyper = pmp.NormalInverseWishart.hyperparameters_from_data(y, within=0.5)
        >>> sorted(hyper), hyper["nu0"], hyper["kappa0"]
        (['kappa0', 'mu0', 'nu0', 'scale0'], 6.0, 0.1)
        >>> bool(np.allclose(hyper["scale0"] / (hyper["nu0"] - 3), 0.5 * np.diag(y.var(axis=0, ddof=1))))
        True
        """
        owner = "NormalInverseWishart.hyperparameters_from_data"
        mean, var = _data_moments(owner, y)
        dim = mean.size
        within = _within(owner, within, dim)
        kappa0 = _checks.real("kappa0", kappa0, low=0.0, low_open=True, owner=owner)
        nu0 = 2.0 * dim + 2.0 if nu0 is None else _checks.real("nu0", nu0, low=dim + 1.0, low_open=True, owner=owner)
        return {"mu0": mean, "kappa0": kappa0, "nu0": nu0, "scale0": (nu0 - dim - 1.0) * within * np.diag(var)}


class BetaBernoulli(pm.Discrete):
    r"""Collapsed Bernoulli likelihood for binary vectors with Beta(a, b) priors per dimension.

    ``theta_bd ~ Beta(a_d, b_d)``, ``y_id ~ Bernoulli(theta_bd)``, theta integrated out (seed 003,
    App. E.2; seed 004's Bernoulli mixture). Data must be 0/1.

    Examples
    --------
    >>> import numpy as np, pymc as pm, pymc_partitions as pmp
    >>> y = np.array([[1, 0], [1, 1], [0, 0]])
    >>> with pm.Model():
    ...     z = pmp.Partition("z", pmp.CRP(1.0), n=3)
    ...     obs = pmp.BetaBernoulli("y", partition=z, a=1.0, b=1.0, observed=y)
    """

    rv_op = BetaBernoulliRV()

    def __new__(cls, name, partition, a=1.0, b=1.0, *, observed=None, **kwargs):
        n = _check_partition(name, partition)
        symbolic_data, value = _check_observed(name, observed, n, binary=True)
        obs = exact_integers(value) if symbolic_data is None else symbolic_data
        dim = value.shape[1]
        hyper = (_vector(name, "a", a, dim, positive=True), _vector(name, "b", b, dim, positive=True))
        _check_representable(name, cls.rv_op, value, hyper)
        return _stored_exactly(super().__new__(cls, name, partition, *hyper, observed=obs, **kwargs), obs)

    @classmethod
    def dist(cls, partition, a, b, **kwargs):
        return super().dist([partition, a, b], **kwargs)

    def support_point(rv, size, partition, a, b):
        return pt.zeros_like(rv)

    def logp(value, partition, a, b):
        lp = symbolic.beta_bernoulli_logp(partition, value, a, b)
        return check_parameters(lp, pt.all(a > 0), pt.all(b > 0), msg="a > 0, b > 0")


# ----------------------------------------------------------------------------- count and categorical likelihoods

from ..families.predictive import DirichletCategoricalFamily, GammaPoissonFamily, check_counts  # noqa: E402

__all__ += ["GammaPoisson", "DirichletCategorical"]


class GammaPoissonRV(CollapsedLikelihoodRV):
    name = "gamma_poisson"
    signature = "(n),(d),(d)->(n,d)"
    dtype = "int64"
    _print_name = ("GammaPoisson", "\\operatorname{GammaPoisson}")
    family_code = kernels.GAMMA_POISSON

    def rng_fn(self, rng, labels, alpha, beta, size=None):
        _no_size(size)
        _check_forward_draw(self, labels)
        return draws.draw_gamma_poisson(labels, alpha, beta, rng).astype(np.int64)

    def kernel_part(self, data, alpha, beta):
        return kernels.GAMMA_POISSON, data, kernels.gamma_poisson_hyper(alpha, beta, data.shape[1])

    def family(self, dim, alpha, beta):
        return GammaPoissonFamily(alpha, beta, dim)


class DirichletCategoricalRV(CollapsedLikelihoodRV):
    name = "dirichlet_categorical"
    signature = "(n),(d,c),(d)->(n,d)"
    dtype = "int64"
    _print_name = ("DirichletCategorical", "\\operatorname{DirichletCategorical}")
    family_code = kernels.DIRICHLET_CATEGORICAL

    @staticmethod
    def data_dim(rv):
        dim = rv.owner.inputs[3].type.shape[-2]
        return None if dim is None else int(dim)

    def rng_fn(self, rng, labels, a, n_categories, size=None):
        _no_size(size)
        _check_forward_draw(self, labels)
        return draws.draw_dirichlet_categorical(labels, a, n_categories, rng).astype(np.int64)

    def check_observed(self, rv, value, n, dim):
        """As for every family, and the categories (integers in 0..C_d - 1), so that new data given
        by ``pm.set_data`` are refused naming the likelihood."""
        value = super().check_observed(rv, value, n, dim)
        n_cat = constant_value(rv.owner.inputs[-1])
        if n_cat is not None:
            n_cat = np.asarray(n_cat, np.int64).reshape(-1)
            if not np.all(value == np.floor(value)) or np.any(value < 0) or np.any(value >= n_cat[None, :]):
                raise ValueError(f"{rv.name!r}: observed categories must be integers in 0..C_d - 1 with "
                                 f"C = {n_cat.tolist()} (categories out of range)")
        return value

    def kernel_part(self, data, a, n_categories):
        n_cat = np.asarray(n_categories, np.int64)
        return (kernels.DIRICHLET_CATEGORICAL, kernels.dirichlet_categorical_data(data, n_cat),
                kernels.dirichlet_categorical_hyper(a, n_cat))

    def family(self, dim, a, n_categories):
        return DirichletCategoricalFamily(a, n_categories, dim)


for _op in (GammaPoissonRV, DirichletCategoricalRV):
    _REPLICATE_OPS[_op] = _replicate_op(_op())


def _integer_observed(name, observed, n, check):
    """(what PyMC gets as ``observed``, its value (n, D) floats) for integer-valued data, ``check``
    raising ``ValueError`` on bad values. Symbolic (``pm.Data``) values that fail the check later
    (``pm.set_data``) become -1, which the logp maps to -inf, rather than being cast to a valid
    integer; the step methods refuse them by name."""
    symbolic_data, value = _check_observed(name, observed, n)
    try:
        check(value)
    except ValueError as err:
        wrapped = symbolic_data is not None and observed.dtype in ("int8", "int16", "int32") and np.any(value < 0)
        raise ValueError(f"{name!r}: observed {err}{_INT32_DATA_HINT if wrapped else ''}") from None
    if symbolic_data is None:
        return exact_integers(value), value
    good = pt.ge(symbolic_data, 0) & pt.eq(symbolic_data, pt.floor(symbolic_data))
    return pt.switch(good, symbolic_data, -1), value


class GammaPoisson(pm.Discrete):
    r"""Collapsed Poisson likelihood for counts with a Gamma(alpha, beta) prior on each cluster's rates.

    ``lambda_bd ~ Gamma(alpha_d, beta_d)`` (shape and *rate*, as ``pm.Gamma``),
    ``y_id ~ Poisson(lambda_bd)`` for items i in block b, one rate per cluster and column, the rates
    integrated out. ``alpha`` and ``beta`` are positive scalars or length-D vectors, numbers or
    PyMC variables. Data are non-negative integer counts, (n,) or (n, D).

    Examples
    --------
    >>> import numpy as np, pymc as pm, pymc_partitions as pmp
    >>> y = np.array([0, 1, 0, 9, 12, 10])
    >>> with pm.Model():
    ...     z = pmp.Partition("z", pmp.CRP(1.0), n=6)
    ...     obs = pmp.GammaPoisson("y", partition=z, alpha=1.0, beta=0.1, observed=y)
    """

    rv_op = GammaPoissonRV()

    def __new__(cls, name, partition, alpha=1.0, beta=1.0, *, observed=None, **kwargs):
        n = _check_partition(name, partition)
        obs, value = _integer_observed(name, observed, n, lambda v: check_counts(v, "counts"))
        dim = value.shape[1]
        hyper = (_vector(name, "alpha", alpha, dim, positive=True), _vector(name, "beta", beta, dim, positive=True))
        _check_representable(name, cls.rv_op, value, hyper)
        return _stored_exactly(super().__new__(cls, name, partition, *hyper, observed=obs, **kwargs), obs)

    @classmethod
    def dist(cls, partition, alpha, beta, **kwargs):
        return super().dist([partition, alpha, beta], **kwargs)

    def support_point(rv, size, partition, alpha, beta):
        return pt.zeros_like(rv)

    def logp(value, partition, alpha, beta):
        lp = symbolic.gamma_poisson_logp(partition, value, alpha, beta)
        return check_parameters(lp, pt.all(alpha > 0), pt.all(beta > 0), msg="alpha > 0, beta > 0")


def _n_categories(name, n_categories, value):
    """Numbers of categories per column (length D): given (an integer or a length-D sequence) or
    inferred as each column's largest category + 1."""
    dim = value.shape[1]
    if n_categories is None:
        if not np.all((value >= 0) & (value == np.floor(value))):
            raise ValueError(f"{name!r}: observed categories must be non-negative integers")
        return _one_hot_size(name, value, value.max(axis=0) + 1).astype(np.int64)
    arr = np.asarray(n_categories)
    if arr.dtype == object or arr.dtype.kind not in "iu" or arr.ndim > 1:
        raise TypeError(f"{name!r}: n_categories must be an integer or a length-D sequence of integers, "
                        f"got {n_categories!r}")
    try:
        arr = np.broadcast_to(arr.astype(np.int64), (dim,)).copy()
    except ValueError:
        raise ValueError(f"{name!r}: n_categories must be an integer or have length D={dim}, got shape "
                         f"{arr.shape}") from None
    if not np.all(arr >= 1):
        raise ValueError(f"{name!r}: n_categories must be at least 1, got {arr.tolist()}")
    return _one_hot_size(name, value, arr)


MAX_ONE_HOT = 2**28
"""Largest n * (C_1 + ... + C_D) a DirichletCategorical accepts: the kernels hold the data one-hot
(n rows of C_1 + ... + C_D floats, 2 GiB at this size) and each cluster's counts likewise."""


def _one_hot_size(name, value, n_cat):
    total = float(np.sum(n_cat)) * value.shape[0]
    if total > MAX_ONE_HOT:
        raise ValueError(f"{name!r}: {int(np.sum(n_cat))} categories in all (n_categories or the largest observed "
                         f"category + 1) for n={value.shape[0]} items: the one-hot data would hold {total:.3g} "
                         f"entries, more than {MAX_ONE_HOT} (2 GiB); recode the categories as 0..C-1")
    return n_cat


class DirichletCategorical(pm.Discrete):
    r"""Collapsed categorical likelihood with a Dirichlet(a) prior on each cluster's category probabilities.

    Data are integer categories, (n,) or (n, D): column d is one categorical variable with values
    0..C_d - 1. ``theta_bd ~ Dirichlet(a_d)``, ``y_id ~ Categorical(theta_bd)``, one probability
    vector per cluster and column, integrated out.

    Parameters
    ----------
    a : scalar, length-C vector or (D, C) array, number or PyMC variable
        Dirichlet concentrations (C = max C_d; entries past C_d are ignored).
    n_categories : int or length-D sequence of ints, optional
        C_d, the number of categories of column d. Default: each column's largest observed category
        + 1 (give it when some categories may not be observed: they still count in the prior).

    Examples
    --------
    >>> import numpy as np, pymc as pm, pymc_partitions as pmp
    >>> y = np.array([[0, 1], [0, 1], [2, 0], [2, 0]])
    >>> with pm.Model():
    ...     z = pmp.Partition("z", pmp.CRP(1.0), n=4)
    ...     obs = pmp.DirichletCategorical("y", partition=z, a=0.5, n_categories=[3, 2], observed=y)
    """

    rv_op = DirichletCategoricalRV()

    def __new__(cls, name, partition, a=1.0, n_categories=None, *, observed=None, **kwargs):
        n = _check_partition(name, partition)
        symbolic_data, value = _check_observed(name, observed, n)
        n_cat = _n_categories(name, n_categories, value)
        try:
            kernels.dirichlet_categorical_data(value, n_cat)
        except ValueError as err:
            raise ValueError(f"{name!r}: observed {err}") from None
        dim, c_max = value.shape[1], int(n_cat.max())
        if isinstance(a, Variable):
            a_var = _check_variable_shape(name, "a", a, lambda s: _broadcasts_to(s, (dim, c_max)),
                                          f"a scalar, a length-{c_max} vector or ({dim}, {c_max})")
            a_hyper = pt.broadcast_to(a_var, (dim, c_max))
        else:
            arr = _real_array(name, "a", a)
            try:
                arr = np.broadcast_to(arr, (dim, c_max)).copy()
            except ValueError:
                raise ValueError(f"{name!r}: a must be a scalar, a length-{c_max} vector or ({dim}, {c_max}), got "
                                 f"shape {arr.shape}") from None
            used = np.arange(c_max)[None, :] < n_cat[:, None]
            if not np.all(np.isfinite(arr[used])) or not np.all(arr[used] > 0):
                raise ValueError(f"{name!r}: a must be positive and finite, got {a!r}")
            a_hyper = np.where(used, arr, 1.0)
        hyper = (a_hyper, n_cat)
        _check_representable(name, cls.rv_op, value, hyper)
        if symbolic_data is None:
            obs = exact_integers(value)
        else:
            good = pt.ge(symbolic_data, 0) & pt.eq(symbolic_data, pt.floor(symbolic_data))
            obs = pt.switch(good, symbolic_data, -1)
        return _stored_exactly(super().__new__(cls, name, partition, *hyper, observed=obs, **kwargs), obs)

    @classmethod
    def dist(cls, partition, a, n_categories, **kwargs):
        return super().dist([partition, a, n_categories], **kwargs)

    def support_point(rv, size, partition, a, n_categories):
        return pt.zeros_like(rv)

    def logp(value, partition, a, n_categories):
        lp = symbolic.dirichlet_categorical_logp(partition, value, a, n_categories)
        used = pt.lt(pt.arange(a.shape[-1])[None, :], n_categories[:, None])
        return check_parameters(lp, pt.all(pt.gt(pt.switch(used, a, 1.0), 0)), msg="a > 0")


# ----------------------------------------------------------------------------- clusters of regressions

from ..families.predictive import NormalLinearRegressionFamily, check_design  # noqa: E402

__all__ += ["NormalLinearRegression"]


class NormalLinearRegressionRV(CollapsedLikelihoodRV):
    """Responses (n, 1) given labels and the design X (n, p); parameters (labels, X, mu0, cov0, a0, b0)."""

    name = "normal_linear_regression"
    signature = "(n),(n,p),(p),(p,p),(),()->(n,d)"
    _print_name = ("NormalLinearRegression", "\\operatorname{NormalLinearRegression}")
    family_code = kernels.LINEAR_REGRESSION

    def _supp_shape_from_params(self, dist_params, param_shapes=None):
        return (dist_params[1].shape[0], 1)

    @staticmethod
    def data_dim(rv):
        return 1

    def rng_fn(self, rng, labels, X, mu0, cov0, a0, b0, size=None):
        _no_size(size)
        _check_forward_draw(self, labels)
        return draws.draw_normal_linear_regression(labels, X, mu0, cov0, a0, b0, rng)

    def check_observed(self, rv, value, n, dim):
        value = super().check_observed(rv, value, n, dim)
        if value.shape[1] != 1:
            raise ValueError(f"{rv.name!r}: observed must be the n={n} responses, shape (n,), got {value.shape}")
        return value

    def kernel_part(self, data, X, mu0, cov0, a0, b0):
        X = _design(self.name, X, data.shape[0])
        p = X.shape[1]
        try:
            hyper = kernels.linear_regression_hyper(mu0, cov0, a0, b0, p)
        except np.linalg.LinAlgError:
            raise ValueError(f"{self.name!r}: cov0 must be a positive definite {p}x{p} matrix") from None
        return kernels.LINEAR_REGRESSION, np.hstack([X, np.asarray(data, np.float64).reshape(-1, 1)]), hyper

    def family(self, dim, X, mu0, cov0, a0, b0):
        return NormalLinearRegressionFamily(X, mu0, cov0, a0, b0)

    point_hint = "a new item of a regression is the row [x_1, ..., x_p, y]: its covariates, then its response"

    def point_dim(self, rv, dim):
        return int(variable_shape(rv.owner.inputs[3])[1]) + 1


_REPLICATE_OPS[NormalLinearRegressionRV] = _replicate_op(NormalLinearRegressionRV())


def _design(name, X, n) -> np.ndarray:
    """The design matrix's value as float64 (n, p), or a ``ValueError`` / ``TypeError`` naming ``X``."""
    arr = _real_array(name, "X", X)
    try:
        return check_design(arr, n, what=f"{name!r}: X")
    except ValueError as err:
        raise ValueError(f"{err}; give one row of covariates per item (include a column of ones for an "
                         "intercept)") from None


class NormalLinearRegression(pm.Continuous):
    r"""Clusters of regressions: a collapsed Normal linear regression per cluster, with a conjugate
    Normal-inverse-Gamma prior on each cluster's coefficients and noise variance.

    ``y_i = x_i . beta_b + e_i``, ``e_i ~ N(0, sigma_b^2)`` for items i in block b, with
    ``beta_b | sigma_b^2 ~ N(mu0, sigma_b^2 cov0)`` and ``sigma_b^2 ~ InvGamma(a0, b0)`` (shape, scale:
    as ``pm.InverseGamma(alpha=a0, beta=b0)``); beta and sigma integrated out. The responses of a block
    are a multivariate Student t; the predictive of a new item given a block is a Student t with
    ``2 a0 + m`` degrees of freedom. Adding or removing an item costs O(p^2) (a rank-one update of a
    Cholesky factor), so every step of this package samples it (CollapsedGibbs, GibbsSplitMerge,
    PGSM, SAMS, SplitMerge, ARM).

    Parameters
    ----------
    X : (n, p) array or pm.Data
        The covariates of every item, one row per item (include a column of ones for an intercept).
        Finite numbers; fixed data (a ``pm.Data`` may be changed by ``pm.set_data``, keeping n and p).
    mu0 : scalar or length-p, number or PyMC variable
        Prior mean of the coefficients.
    cov0 : scalar, length-p or p x p, number or PyMC variable
        Prior covariance of the coefficients *in units of sigma_b^2* (a scalar or vector: diagonal);
        positive definite.
    a0, b0 : positive scalars, numbers or PyMC variables
        Shape and scale of the inverse-Gamma prior of each cluster's noise variance.
    observed : (n,) array or pm.Data
        The responses.

    Examples
    --------
    >>> import numpy as np, pymc as pm, pymc_partitions as pmp
    >>> x = np.array([0.0, 1.0, 2.0, 0.0, 1.0, 2.0])
    >>> y = np.array([0.1, 1.0, 2.1, 5.0, 3.9, 3.1])      # two lines: y = x and y = 5 - x
    >>> X = np.column_stack([np.ones(6), x])                 # intercept and slope
    >>> with pm.Model() as model:
    ...     z = pmp.Partition("z", pmp.CRP(1.0), n=6)
    ...     obs = pmp.NormalLinearRegression("y", partition=z, X=X, mu0=0.0, cov0=10.0, a0=2.0, b0=0.1,
    ...                                      observed=y)
    >>> logp = model.compile_logp()
    >>> bool(logp({"z": [0, 0, 0, 1, 1, 1]}) > logp({"z": [0, 0, 0, 0, 0, 0]}))
    True
    """

    rv_op = NormalLinearRegressionRV()

    def __new__(cls, name, partition, X=None, mu0=0.0, cov0=1.0, a0=1.0, b0=1.0, *, observed=None, **kwargs):
        n = _check_partition(name, partition)
        if X is None:
            raise TypeError(f"{name!r}: give the covariates X=, an (n, p) array (one row per item)")
        symbolic_data, value = _check_observed(name, observed, n)
        if value.shape[1] != 1:
            raise ValueError(f"{name!r}: observed must be the n={n} responses, shape (n,), got {value.shape}")
        if isinstance(X, Variable):
            x_value = constant_value(X)
            if x_value is None:
                raise TypeError(f"{name!r}: X must be data (an array or pm.Data), not a random variable")
            x_value = _design(name, x_value, n)
            x_arg = pt.as_tensor_variable(X).astype("float64")
        else:
            x_value = x_arg = _design(name, X, n)
        p = x_value.shape[1]
        hyper = (_vector(name, "mu0", mu0, p), _coefficient_cov(name, cov0, p),
                 _scalar(name, "a0", a0, greater=0.0), _scalar(name, "b0", b0, greater=0.0))
        _check_representable(name, cls.rv_op, value, (x_value, *hyper))
        obs = value if symbolic_data is None else symbolic_data
        return super().__new__(cls, name, partition, x_arg, *hyper, observed=obs, **kwargs)

    @classmethod
    def dist(cls, partition, X, mu0, cov0, a0, b0, **kwargs):
        return super().dist([partition, X, mu0, cov0, a0, b0], **kwargs)

    def support_point(rv, size, partition, X, mu0, cov0, a0, b0):
        return pt.zeros_like(rv)

    def logp(value, partition, X, mu0, cov0, a0, b0):
        lp = symbolic.normal_linear_regression_logp(partition, value, X, mu0, cov0, a0, b0)
        return check_parameters(lp, pt.gt(a0, 0), pt.gt(b0, 0), msg="a0 > 0, b0 > 0")


def _coefficient_cov(name, cov0, p):
    """``cov0`` as a p x p matrix: a scalar or length-p vector is a diagonal (positive), a matrix must be
    symmetric positive definite; PyMC variables of those shapes are accepted likewise."""
    if isinstance(cov0, Variable):
        var = _check_variable_shape(name, "cov0", cov0, lambda s: _broadcasts_to(s, (p,)) or (
            len(s) == 2 and all(x in (None, p) for x in s)), f"a scalar, length p={p} or a {p}x{p} matrix")
        return pt.diag(pt.broadcast_to(var, (p,))) if var.ndim < 2 else var
    arr = _real_array(name, "cov0", cov0)
    if arr.ndim < 2:
        try:
            diag = np.broadcast_to(arr, (p,)).copy()
        except ValueError:
            raise ValueError(f"{name!r}: cov0 must be a scalar, length p={p} or a {p}x{p} matrix, got shape "
                             f"{arr.shape}") from None
        if not np.all(np.isfinite(diag)) or not np.all(diag > 0):
            raise ValueError(f"{name!r}: cov0 must be positive and finite, got {cov0!r}")
        return np.diag(diag)
    return _spd(name, "cov0", arr, p)
