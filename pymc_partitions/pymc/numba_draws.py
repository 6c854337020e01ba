"""Forward draws of this package's random variables under PyTensor 3's numba backend (PyMC 6).

PyMC 6 compiles ``pm.sample_prior_predictive``, ``pm.sample_posterior_predictive`` and ``pm.draw``
with PyTensor's numba backend. A ``RandomVariable`` without a numba implementation registered in
``pytensor.link.numba.dispatch.random.numba_core_rv_funcify`` falls back on its Python ``perform``
with the warning "Numba will use object mode to run ...'s perform method", once per op and call:
the partition, every collapsed likelihood (prior predictive) and every posterior replicate.

:func:`register` gives each of them an implementation there, the way PyTensor registers its own
random variables: a numba function ``(rng, *parameters) -> draw`` of the core shape. The draw
itself stays the op's ``rng_fn`` -- the same numpy code, argument checks and error messages as under
PyMC 5's C backend, one implementation of each law -- entered through ``numba.objmode`` with the
generator PyTensor passes (so seeds and streams behave as for PyTensor's own random variables).
Nothing here is faster than the fallback (a forward draw is one call per posterior draw, and the
families' draws are numpy code); what changes is that the object-mode call is declared rather than
warned about. Registered for the base classes, so every subclass (the families' likelihoods and
replicates) is covered. PyTensor 2.x (PyMC 5) compiles forward draws with its C backend and does
not need this: :func:`register` does nothing there.
"""

from __future__ import annotations

import numpy as np
import pytensor

from .distributions import CollapsedLikelihoodRV, PartitionRV, PosteriorReplicateRV

__all__ = ["register", "PYTENSOR_MAJOR"]

PYTENSOR_MAJOR: int = int(pytensor.__version__.split(".", 1)[0])
_DONE = {"registered": False}


def register() -> bool:
    """Register numba implementations of the forward draws (PyTensor >= 3 only); idempotent.
    Returns whether they are registered."""
    if _DONE["registered"]:
        return True
    if PYTENSOR_MAJOR < 3:
        return False
    try:
        from pytensor.link.numba.dispatch.random import numba_core_rv_funcify  # noqa: PLC0415
    except ImportError:  # a PyTensor without the numba dispatch: its fallback stays
        return False
    for op_type in (PartitionRV, CollapsedLikelihoodRV, PosteriorReplicateRV):
        numba_core_rv_funcify.register(op_type)(_object_mode_draw)
    _DONE["registered"] = True
    return True


def _object_mode_draw(op, node):
    """The core draw of ``node`` (an apply of ``op``) as a numba function of (rng, *parameters): the
    op's ``rng_fn`` in object mode, its output of the node's dtype and core dimensions. Not cached on
    disk (it calls back into Python), hence the ``None`` cache key."""
    import numba  # noqa: PLC0415
    from pytensor.link.numba.dispatch.basic import numba_njit  # noqa: PLC0415

    output = node.outputs[1]
    dtype = np.dtype(output.type.dtype)
    out_type = numba.types.Array(numba.from_dtype(dtype), output.type.ndim, "C")
    rng_fn = op.rng_fn

    def draw(rng, params):
        return np.ascontiguousarray(rng_fn(rng, *params, None), dtype=dtype)

    @numba_njit
    def random_fn(rng, *params):
        with numba.objmode(out=out_type):
            out = draw(rng, params)
        return out

    return random_fn, None
