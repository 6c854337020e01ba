"""The counter-based uniforms behind PGSM and SAMS moves and the steps' sweeps: uniform on [0, 1),
no visible correlation between neighbouring counters, streams or seeds, a pure function of its
inputs; and the sweeps' random numbers built from them have the laws the kernels assume."""

import numba
import numpy as np
from scipy import stats

import pytest

from pymc_partitions._numeric import draw_seed, keyed_sweep_numbers, keyed_uniform, stream_key


@numba.njit
def block(seed, stream, m):
    key = stream_key(seed, stream)
    out = np.empty(m)
    for i in range(m):
        out[i] = keyed_uniform(key, i)
    return out


def test_uniform_and_uncorrelated():
    m = 200_000
    u = block(np.uint64(12345), 0, m)
    assert u.min() >= 0.0 and u.max() < 1.0
    assert stats.kstest(u, "uniform").pvalue > 1e-3
    # serial pairs: a chi-square test on a 10 x 10 grid of (u_i, u_{i+1})
    grid = np.histogram2d(u[:-1], u[1:], bins=10, range=[[0, 1], [0, 1]])[0]
    assert stats.chisquare(grid.ravel()).pvalue > 1e-3
    for other in (block(np.uint64(12346), 0, m), block(np.uint64(12345), 1, m)):  # next seed, next stream
        assert abs(np.corrcoef(u, other)[0, 1]) < 5 / np.sqrt(m)
        assert stats.chisquare(np.histogram2d(u, other, bins=10, range=[[0, 1], [0, 1]])[0].ravel()).pvalue > 1e-3


def test_pure_function_of_seed_stream_and_counter():
    seed = draw_seed(np.random.default_rng(0))
    assert isinstance(seed, np.uint64)
    assert np.array_equal(block(seed, 2, 100), block(seed, 2, 100))
    assert not np.array_equal(block(seed, 2, 100), block(seed, 3, 100))
    assert draw_seed(np.random.default_rng(0)) == seed != draw_seed(np.random.default_rng(1))


def test_sweep_numbers_have_the_laws_the_kernels_assume():
    """keyed_sweep_numbers: each order a uniform permutation (chi-square over the 24 of 4 items),
    uniforms on [0, 1), anchor pairs uniform over the 12 ordered pairs of distinct items, all
    repetitions different; and a pure function of the seed. Power: a permutation that never moves
    the last item (Fisher-Yates one step short) fails the same chi-square."""
    rng = np.random.default_rng(0)
    orders, pairs, firsts = [], [], []
    for _ in range(6000):
        o, u, p, s = keyed_sweep_numbers(4, 2, 3, draw_seed(rng))
        assert o.shape == (2, 4) and u.shape == (2, 4) and p.shape == (2, 3, 2) and s.shape == (2, 3)
        assert (np.sort(o, axis=1) == np.arange(4)).all() and ((u >= 0) & (u < 1)).all()
        assert not np.array_equal(o[0], o[1]) or not np.array_equal(u[0], u[1])
        orders.append(o[0])
        pairs.extend(p[0].tolist())
    codes = np.array([int("".join(map(str, o))) for o in orders])
    assert stats.chisquare(np.unique(codes, return_counts=True)[1]).pvalue > 1e-3 and len(np.unique(codes)) == 24
    pairs = np.array(pairs)
    assert (pairs[:, 0] != pairs[:, 1]).all() and pairs.min() >= 0 and pairs.max() < 4
    assert stats.chisquare(np.unique(pairs[:, 0] * 4 + pairs[:, 1], return_counts=True)[1]).pvalue > 1e-3
    a, b = keyed_sweep_numbers(50, 1, 1, np.uint64(7)), keyed_sweep_numbers(50, 1, 1, np.uint64(7))
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    short = [np.roll(o, 1) if o[-1] == 3 else o for o in orders]  # the wrong law: item 3 never last
    short_codes = np.array([int("".join(map(str, o))) for o in short])
    assert stats.chisquare(np.bincount(np.searchsorted(np.unique(codes), short_codes), minlength=24)).pvalue < 1e-6


def test_sweep_numbers_refuse_a_move_on_one_item():
    with pytest.raises(ValueError, match="two items"):
        keyed_sweep_numbers(1, 1, 1, np.uint64(3))
    o, u, p, s = keyed_sweep_numbers(1, 2, 0, np.uint64(3))
    assert o.tolist() == [[0], [0]] and p.shape == (2, 0, 2)
