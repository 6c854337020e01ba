"""The compiled acceptance step of the occupied slots' Metropolis update against its numpy definition,
and its refusal of arrays too short for the slots it is asked about."""

import numpy as np
import pytest

from pymc_partitions.samplers.slot_metropolis import accept_slots, copy_accepted


def test_accept_slots_is_the_elementwise_metropolis_test():
    rng = np.random.default_rng(0)
    for K in (1, 3, 8):
        current = rng.normal(size=K + 2)
        new = current + rng.normal(size=K + 2)
        new[0] = np.nan  # a NaN proposal is refused
        log_u = np.log(rng.random(K))
        expect_ok = log_u < new[:K] - current[:K]
        expect_current = np.where(expect_ok, new[:K], current[:K])
        ok = np.empty(K, np.bool_)
        got = current[:K].copy()
        assert accept_slots(new, got, log_u, ok) == expect_ok.sum()
        np.testing.assert_array_equal(ok, expect_ok)
        np.testing.assert_array_equal(got, expect_current)
        assert not ok[0]


def test_copy_accepted_copies_the_accepted_rows_only():
    rng = np.random.default_rng(1)
    slots, proposals = rng.normal(size=(6, 3)), rng.normal(size=(6, 3))
    ok = np.array([True, False, True, False])
    expect = slots.copy()
    expect[[0, 2]] = proposals[[0, 2]]
    copy_accepted(slots, proposals, ok)
    np.testing.assert_array_equal(slots, expect)


def test_short_arrays_are_refused_not_read_past_their_end():
    ok = np.empty(4, np.bool_)
    with pytest.raises(ValueError, match="accept_slots"):
        accept_slots(np.zeros(3), np.zeros(4), np.zeros(4), ok)
    with pytest.raises(ValueError, match="accept_slots"):
        accept_slots(np.zeros(4), np.zeros(4), np.zeros(2), ok)
    with pytest.raises(ValueError, match="copy_accepted"):
        copy_accepted(np.zeros((3, 2)), np.zeros((4, 2)), np.ones(4, np.bool_))
    with pytest.raises(ValueError, match="copy_accepted"):
        copy_accepted(np.zeros((4, 2)), np.zeros((4, 3)), np.ones(4, np.bool_))
