"""The counter-based uniforms behind PGSM and SAMS moves: uniform on [0, 1), no visible
correlation between neighbouring counters, streams or seeds, and a pure function of its inputs."""

import numba
import numpy as np
from scipy import stats

from pymc_partitions._numeric import draw_seed, keyed_uniform, stream_key


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
