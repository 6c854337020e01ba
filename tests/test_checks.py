"""The shared argument checks: wrong kinds are TypeErrors, bad values ValueErrors, nothing coerced."""

import math

import numpy as np
import pytest

from pymc_partitions import _checks


@pytest.mark.parametrize("value, expected", [(3, 3), (np.int32(4), 4), (5.0, 5), (np.float64(2.0), 2)])
def test_integer_accepts_integral_numbers(value, expected):
    out = _checks.integer("m", value, low=0)
    assert out == expected and type(out) is int


@pytest.mark.parametrize("value, error", [(1.5, ValueError), (True, TypeError), ("3", TypeError), (None, TypeError),
                                          (math.nan, ValueError), (math.inf, ValueError), (-1, ValueError)])
def test_integer_refuses(value, error):
    with pytest.raises(error, match="PGSM: m must be an integer"):
        _checks.integer("m", value, low=0, owner="PGSM")


def test_integer_range_message():
    with pytest.raises(ValueError, match=r"k must be an integer >= 1 and <= 5, got 7"):
        _checks.integer("k", 7, low=1, high=5)


@pytest.mark.parametrize("value", [math.nan, math.inf, -1.0, 0.0])
def test_real_refuses_non_finite_and_out_of_range(value):
    with pytest.raises(ValueError, match="width must be a finite number > 0"):
        _checks.real("width", value, low=0.0, low_open=True)


def test_real_accepts_numbers_and_zero_d_arrays():
    assert _checks.real("x", np.array(2.5)) == 2.5
    assert _checks.real("x", 3) == 3.0
    with pytest.raises(TypeError, match="x must be a number"):
        _checks.real("x", "1")
    with pytest.raises(TypeError, match="x must be a number"):
        _checks.real("x", False)


def test_boolean_and_choice_and_probability():
    assert _checks.boolean("annealed", np.bool_(True)) is True
    for bad in ("no", 0, None):
        with pytest.raises(TypeError, match="annealed must be True or False"):
            _checks.boolean("annealed", bad)
    assert _checks.choice("coupling", "ot", ("ot", "crn")) == "ot"
    with pytest.raises(ValueError, match=r"coupling must be one of \('ot', 'crn'\), got 'OT'"):
        _checks.choice("coupling", "OT", ("ot", "crn"))
    with pytest.raises(ValueError, match=r"eps must be a finite number >= 0.0 and <= 1.0"):
        _checks.probability("eps", 1.5)
