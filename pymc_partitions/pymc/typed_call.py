"""Compiled PyTensor functions called without re-checking arguments that already have the right type."""

from __future__ import annotations

import numpy as np


class TypedCall:
    """A compiled function called without PyTensor's conversion of each argument (``trust_input``; ~6 us per
    argument) when every argument already has its input's type -- an ndarray of its dtype, dimensions and
    static shape, as the sampler's arrays have -- and through the checking function otherwise: the same
    result either way. ``trusted`` is the unchecking copy itself (it shares the shared variables: pm.set_data
    reaches it), for loops that pass the arguments of a checked call again."""

    def __init__(self, fn):
        self.fn = fn
        self.trusted = fn.copy()
        self.trusted.trust_input = True
        self.types = [(np.dtype(i.variable.type.dtype), i.variable.type.ndim,
                       [(axis, size) for axis, size in enumerate(i.variable.type.shape) if size is not None])
                      for i in fn.maker.inputs if not i.implicit]

    def __call__(self, *args):
        if len(args) != len(self.types):
            return self.fn(*args)
        for a, (dtype, ndim, static) in zip(args, self.types):
            if type(a) is not np.ndarray or a.dtype != dtype or a.ndim != ndim:
                return self.fn(*args)
            for axis, size in static:
                if a.shape[axis] != size:
                    return self.fn(*args)
        return self.trusted(*args)
