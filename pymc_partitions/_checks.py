"""Validation of public arguments, written once: type and range, with messages naming the argument.

Every public constructor and function checks its settings with these, where they enter, so that
nothing is silently coerced (``sweeps=1.5``, ``annealed="no"``) and nothing hangs or crashes deep
inside a compiled kernel. ``owner`` prefixes the message (``"PGSM: num_particles must be ..."``).

Conventions: a value of the wrong kind (a string for a number, a bool for an integer) raises
``TypeError``; a number of the right kind out of range, non-integral or non-finite raises
``ValueError``. Integral floats (``3.0``) are accepted as integers: nothing is lost.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

__all__ = ["integer", "real", "boolean", "choice", "probability"]


def _prefix(owner):
    return f"{owner}: " if owner else ""


def _describe(low, high, low_open=False, high_open=False):
    parts = []
    if low is not None:
        parts.append(f"{'>' if low_open else '>='} {low}")
    if high is not None:
        parts.append(f"{'<' if high_open else '<='} {high}")
    return " and ".join(parts)


def integer(name: str, value, *, low: int | None = None, high: int | None = None, owner: str | None = None) -> int:
    """``value`` as a Python int in [low, high]; integral floats are accepted, bools and 2.5 are not."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{_prefix(owner)}{name} must be an integer, got {value!r}")
    if isinstance(value, numbers.Integral):
        out = int(value)
    else:
        if not math.isfinite(float(value)) or float(value) != math.floor(float(value)):
            raise ValueError(f"{_prefix(owner)}{name} must be an integer, got {value!r}")
        out = int(value)
    if (low is not None and out < low) or (high is not None and out > high):
        raise ValueError(f"{_prefix(owner)}{name} must be an integer {_describe(low, high)}, got {value!r}")
    return out


def real(name: str, value, *, low: float | None = None, high: float | None = None, low_open: bool = False,
         high_open: bool = False, owner: str | None = None) -> float:
    """``value`` as a finite Python float in the given (closed or open) range."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        if isinstance(value, np.ndarray) and value.ndim == 0 and np.issubdtype(value.dtype, np.number):
            value = value.item()
        else:
            raise TypeError(f"{_prefix(owner)}{name} must be a number, got {value!r}")
    out = float(value)
    bad = not math.isfinite(out)
    if low is not None:
        bad = bad or (out <= low if low_open else out < low)
    if high is not None:
        bad = bad or (out >= high if high_open else out > high)
    if bad:
        rng = _describe(low, high, low_open, high_open)
        raise ValueError(f"{_prefix(owner)}{name} must be a finite number{' ' + rng if rng else ''}, got {value!r}")
    return out


def probability(name: str, value, *, owner: str | None = None) -> float:
    """A number in [0, 1]."""
    return real(name, value, low=0.0, high=1.0, owner=owner)


def boolean(name: str, value, *, owner: str | None = None) -> bool:
    """``True`` or ``False`` (numpy bools too); ``"no"`` or ``0`` are refused, not coerced."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{_prefix(owner)}{name} must be True or False, got {value!r}")
    return bool(value)


def choice(name: str, value, options, *, owner: str | None = None):
    """One of ``options`` (compared with ==; strings are case-sensitive)."""
    if not isinstance(value, str) or value not in options:
        raise ValueError(f"{_prefix(owner)}{name} must be one of {tuple(options)}, got {value!r}")
    return value
