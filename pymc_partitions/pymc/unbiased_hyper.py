"""The random hyperparameters of a model for :func:`pymc_partitions.sample_unbiased`.

:class:`PyMCHyperModel` reads the model once (which free variables there are, which of them is a
Gamma-prior CRP concentration for the Escobar-West step, the collapsed log joint compiled once)
and gives the PyMC-free kernel :class:`pymc_partitions.coupling.hyper.HyperSweeps` what it needs.
It is pickled to the worker processes with the job (compiled PyTensor functions pickle).
"""

from __future__ import annotations

import math

import numpy as np

from .steps import _escobar_west_setup

__all__ = ["PyMCHyperModel", "free_hyperparameters"]


def free_hyperparameters(model, rv):
    """The model's free variables other than the partition ``rv``, after refusing those the
    coupled chains cannot update (discrete ones, a second partition), naming them."""
    from .distributions import is_partition  # noqa: PLC0415

    others = [v for v in model.free_RVs if v is not rv]
    for v in others:
        if is_partition(v):
            raise ValueError(f"sample_unbiased handles one partition, the model also has {v.name!r}")
        if model.rvs_to_values[v].dtype.startswith(("int", "uint", "bool")):
            raise ValueError(
                f"sample_unbiased: the free variable {v.name!r} is discrete ({model.rvs_to_values[v].dtype}); the "
                "coupled chains update hyperparameters by random-walk Metropolis on continuous values only. Fix it "
                "(use a number or pm.Data) or make it continuous")
    return others


class PyMCHyperModel:
    """Random hyperparameters of ``model`` for :class:`~pymc_partitions.coupling.hyper.HyperSweeps`.

    A scalar ``alpha ~ pm.Gamma(a, b)`` (fixed a, b) used only as a CRP's alpha gets the exact
    Escobar-West step (as ``pm.sample`` would assign); every other free variable is updated by
    random-walk Metropolis on its unconstrained value, with the model's log density (PyMC's
    ``compile_logp``, which holds the collapsed likelihoods given the partition) as target.
    Both chains start at the model's initial point."""

    def __init__(self, model, rv, terms, hyper_rvs):
        self.n = terms.n
        self.prior_code = terms.prior_code
        self._terms = terms
        self._z = terms.value_name
        self._z_dtype = terms.dtype
        point = model.initial_point()
        self._base = {name: np.asarray(v) for name, v in point.items()}
        self.escobar_west = None
        self._ew_name = None
        self._ew_log = True
        self.log_alpha0 = None
        mh = []
        for v in hyper_rvs:
            try:
                _, z, transform, shape, scale = _escobar_west_setup(model, v)
                ew = z is rv and self.escobar_west is None
            except (ValueError, TypeError, KeyError):
                ew = False
            if ew:
                self.escobar_west = (float(shape), 1.0 / float(scale))
                self._ew_name = model.rvs_to_values[v].name
                self._ew_log = transform is not None
                start = float(point[self._ew_name])
                self.log_alpha0 = start if self._ew_log else (math.log(start) if start > 0 else -math.inf)
            else:
                mh.append(v)
        self.names = [v.name for v in hyper_rvs]
        self._mh = [(model.rvs_to_values[v].name, np.shape(point[model.rvs_to_values[v].name])) for v in mh]
        self.mh_names = [v.name for v in mh]
        self.theta0 = (np.concatenate([np.ravel(point[name]).astype(np.float64) for name, _ in self._mh])
                       if self._mh else np.zeros(0))
        self._logp = model.compile_logp() if self._mh else None
        self._values = model.compile_fn(model.replace_rvs_by_values(hyper_rvs), inputs=model.value_vars,
                                        on_unused_input="ignore", point_fn=True)
        self._fixed_pack = None if self._mh else terms.kernel_inputs(point)[1]

    def _point(self, labels, theta, log_alpha):
        point = dict(self._base)
        if labels is not None:
            point[self._z] = np.asarray(labels, self._z_dtype)
        at = 0
        for name, shape in self._mh:
            size = int(np.prod(shape))
            point[name] = theta[at:at + size].reshape(shape)
            at += size
        if self._ew_name is not None:
            point[self._ew_name] = np.asarray(log_alpha if self._ew_log else math.exp(log_alpha))
        return point

    def kernel_inputs(self, theta, log_alpha):
        """(prior params, family pack) at these hyperparameter values."""
        if self._fixed_pack is not None:  # only the Escobar-West alpha is random: no PyTensor call
            return np.array([math.exp(log_alpha), 0.0, self._terms.k], np.float64), self._fixed_pack
        return self._terms.kernel_inputs(self._point(None, theta, log_alpha))

    def log_density(self, labels, theta, log_alpha):
        """The model's log density (collapsed given the partition; -inf where it is not finite)."""
        value = float(self._logp(self._point(labels, theta, log_alpha)))
        return value if math.isfinite(value) else -math.inf

    def params(self, theta, log_alpha):
        """{name: value} of every free hyperparameter, on its own (constrained) scale."""
        values = self._values(self._point(None, theta, log_alpha))
        return {name: np.asarray(v) for name, v in zip(self.names, values)}
