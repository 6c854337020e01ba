"""Model introspection: the terms of a PyMC model that involve one Partition variable.

A step method on a partition needs its prior, every collapsed likelihood that uses it, and the
current values of their hyperparameters (which may be random variables updated by other steps).
:class:`PartitionTerms` finds them once and turns a model point into kernel inputs.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor
from pytensor.compile.sharedvalue import SharedVariable

from ..families.kernels import FamilyPack
from ..priors import FINITE_DIRICHLET, PITMAN_YOR, valid_parameters
from .compat import ancestors
from .distributions import CollapsedLikelihoodRV, constant_value, is_partition, likelihood_names, partition_size

__all__ = ["PartitionTerms"]


def _resolve_rv(model, var):
    """The random variable behind ``var`` (an RV, its value variable, or its name)."""
    if isinstance(var, str):
        var = model[var]
    if var in model.values_to_rvs:
        return model.values_to_rvs[var]
    if var in model.rvs_to_values:
        return var
    raise ValueError(f"{var} is not a variable of this model")


def _reads_data(var) -> bool:
    """Whether ``var`` depends on a data container (a shared variable other than a random generator)."""
    from pytensor.tensor.random.type import RandomType  # noqa: PLC0415

    return any(isinstance(v, SharedVariable) and not isinstance(v.type, RandomType) for v in ancestors([var]))


class ObservedData:
    """The current data of one collapsed likelihood, validated.

    Fixed data are read once. Data that depend on ``pm.Data`` are read again, and validated
    again with :func:`~.distributions.check_data`, whenever ``pm.set_data`` has replaced a value
    (``set_value`` stores a new array: comparing the stored objects costs O(1) per draw), so the
    steps never use stale data; the number of rows and columns must stay as the model was built.
    """

    def __init__(self, model, likelihood, n):
        expr = model.rvs_to_values[likelihood]
        self.name = likelihood.name
        self.n = n
        self.rv = likelihood
        self.dim = likelihood.owner.op.data_dim(likelihood)
        self.shared = [v for v in ancestors([expr]) if isinstance(v, SharedVariable)]
        self._read = pytensor.function([], expr) if self.shared else None
        self._stored = None
        self.value = None if self.shared else self._check(constant_value(expr))
        self.current()
        self.dim = self.value.shape[1]

    def _check(self, value):
        return self.rv.owner.op.check_observed(self.rv, value, self.n, self.dim)

    def current(self):
        """(data (n, D) float64, True if they changed since the last call)."""
        if self._read is None:
            return self.value, False
        stored = [v.get_value(borrow=True) for v in self.shared]
        if self._stored is not None and all(a is b for a, b in zip(stored, self._stored)):
            return self.value, False
        masked = sum(int(np.ma.count_masked(v)) for v in stored if np.ma.isMaskedArray(v))
        if masked:  # PyMC 6's pm.set_data masks NaN: refuse as check_data would
            raise ValueError(f"{self.name!r}: observed contains {masked} NaN or infinite values")
        self.value = self._check(self._read())
        self._stored = stored
        return self.value, True


class PartitionTerms:
    """Prior, collapsed likelihoods and hyperparameter values for one Partition variable.

    ``read_data=False``: the likelihoods' current data are neither read nor checked (for readers
    of a result, which take the data the posterior was fitted to from the result itself; then
    :meth:`kernel_inputs` is not available). ``allow``: observed variables that may depend on the
    partition besides the collapsed likelihoods (the non-conjugate likelihoods that
    :class:`~pymc_partitions.pymc.nonconjugate.NonConjugateGibbs` samples); any other is refused."""

    def __init__(self, model, var, *, read_data: bool = True, allow=()):
        rv = _resolve_rv(model, var)
        if not is_partition(rv):
            raise TypeError(f"{rv.name!r} is not a pmp.Partition variable")
        self.name = rv.name
        value_var = model.rvs_to_values[rv]
        self.value_name = value_var.name
        self.dtype = value_var.dtype
        self.n = partition_size(rv)
        alpha, discount, k, _ = rv.owner.inputs[-4:]
        self.k = int(constant_value(k))
        self.prior_code = FINITE_DIRICHLET if self.k > 0 else PITMAN_YOR

        # dict.fromkeys: PyMC 5's sample_posterior_predictive appends observed variables to
        # model.observed_RVs again (``observed_vars += [...]`` on the model's own list)
        self.likelihoods = list(dict.fromkeys(
            obs for obs in model.observed_RVs
            if isinstance(obs.owner.op, CollapsedLikelihoodRV) and obs.owner.inputs[2] is rv
        ))
        self._check_no_other_dependents(model, rv, allow)

        self._ops = [obs.owner.op for obs in self.likelihoods]
        self._data = [ObservedData(model, obs, self.n) for obs in self.likelihoods] if read_data else None
        hyper = [alpha, discount] + [p for obs in self.likelihoods for p in obs.owner.inputs[3:]]
        self._n_hyper = [len(obs.owner.inputs) - 3 for obs in self.likelihoods]
        #: (alpha, discount, each likelihood's hyperparameters...) as model variables
        self.hyper_variables = hyper
        # a hyperparameter read from pm.Data (e.g. a regression's design matrix X) is evaluated at
        # every step, so that pm.set_data reaches the kernels (constant_value would freeze it)
        values = [None if _reads_data(h) else constant_value(h) for h in hyper]
        if all(v is not None for v in values):
            self._hyper_fn = None
            self._fixed = values
        else:
            outs = model.replace_rvs_by_values(hyper)
            used = set(ancestors(outs))  # only the values they read: every call checks each input's type
            inputs = [v for v in model.value_vars if v in used]
            self._hyper_inputs = [v.name for v in inputs]
            self._hyper_fn = model.compile_fn(outs, inputs=inputs, on_unused_input="ignore", point_fn=False)
            self._fixed = None
        self._cache_key = None
        self._cache = None

    def _check_no_other_dependents(self, model, rv, allow=()):
        ours = set(self.likelihoods) | {rv} | set(allow)
        others = [v for v in model.basic_RVs + model.potentials if v not in ours]
        for v in others:
            if rv in ancestors([v]) and v is not rv:
                if v in model.observed_RVs:
                    raise ValueError(
                        f"{v.name!r} depends on the partition {rv.name!r} but is not a collapsed likelihood of "
                        "pymc_partitions: this step integrates cluster parameters out and would ignore it. A "
                        f"likelihood with slot parameters (e.g. mu[{rv.name}]) is sampled by pmp.NonConjugateGibbs, "
                        f"which pm.sample assigns when no step is given for {rv.name!r}; or use "
                        f"{likelihood_names()} for data given the partition."
                    )
                raise ValueError(
                    f"{v.name!r} depends on the partition {rv.name!r} but is not a collapsed likelihood of "
                    f"pymc_partitions: the partition's step methods would ignore it. Use {likelihood_names()} for "
                    "data given the partition."
                )

    def hyper_values(self, point):
        """Current numeric values of (alpha, discount, likelihood hyperparameters...)."""
        if self._hyper_fn is None:
            return self._fixed
        return [np.asarray(v) for v in self._hyper_fn(*[point[name] for name in self._hyper_inputs])]

    def split_hyper(self, values):
        """(alpha, discount, [each likelihood's hyperparameter values]) from the values of
        :attr:`hyper_variables`, in order."""
        out, at = [], 2
        for m in self._n_hyper:
            out.append(values[at : at + m])
            at += m
        return values[0], values[1], out

    def kernel_inputs(self, point):
        """(prior params [alpha, discount, k], FamilyPack) at ``point``."""
        values = self.hyper_values(point)
        alpha, discount = float(values[0]), float(values[1])
        prior_params = np.array([alpha, discount, self.k], np.float64)
        key = tuple(np.asarray(v).tobytes() for v in values[2:])
        data = [obs.current() for obs in self._data]
        if key != self._cache_key or any(changed for _, changed in data):
            parts = [op.kernel_part(value, *hyper)
                     for op, (value, _), hyper in zip(self._ops, data, self.split_hyper(values)[2])]
            self._cache = FamilyPack.build(parts, n=self.n, names=[obs.name for obs in self.likelihoods])
            self._cache_key = key
        return prior_params, self._cache

    def check_prior_params(self, prior_params):
        """Raise ``ValueError`` if the current prior parameters are outside their support."""
        alpha, discount, _ = prior_params
        if not valid_parameters(self.prior_code, alpha, discount):
            raise ValueError(f"{self.name!r}: invalid prior parameters alpha={alpha}, discount={discount}")

    def labels(self, point):
        """The partition's labels in ``point``, validated."""
        labels = np.asarray(point[self.value_name])
        if labels.dtype.kind not in "iu":
            raise TypeError(f"{self.name!r}: labels must be integers, got dtype {labels.dtype}")
        if labels.shape != (self.n,):
            raise ValueError(f"{self.name!r}: labels must have length n={self.n}, got shape {labels.shape}")
        if labels.min() < 0 or labels.max() >= self.n:
            raise ValueError(f"{self.name!r}: labels must lie in [0, {self.n}), got [{labels.min()}, {labels.max()}]")
        if self.k > 0:
            n_blocks = int(np.count_nonzero(np.bincount(labels)))
            if n_blocks > self.k:
                raise ValueError(f"{self.name!r}: the partition has {n_blocks} blocks but its FiniteDirichlet prior "
                                 f"allows at most k={self.k}: the starting labels are outside the prior's support")
        return labels

    @staticmethod
    def of(model=None, var=None):
        return PartitionTerms(pm.modelcontext(model), var)
