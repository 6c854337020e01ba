"""Mirkin cost matrices between samples of partitions (diagnostics/partition_cost.py)."""

import numpy as np
import pytest

from pymc_partitions.diagnostics import partition_cost
from pymc_partitions.diagnostics.partition_cost import mirkin_cost_matrix
from pymc_partitions.partition import mirkin_distance


def coclustering(labels):
    """Explicit n×n co-clustering matrix (tests only: the module never forms one)."""
    labels = np.asarray(labels)
    return (labels[:, None] == labels[None, :]).astype(np.int64)


def pairwise_reference(a, b):
    """mirkin_distance on each pair; labels spread wider than 10**6 are first replaced by their
    ranks (the same partition), since mirkin_distance tabulates the whole label range."""

    def narrow(x):
        x = np.asarray(x)
        return np.unique(x, return_inverse=True)[1].reshape(x.shape) if np.ptp(x) > 10**6 else x

    a, b = narrow(a), narrow(b)
    return np.array([[mirkin_distance(x, y) for y in b] for x in a], float)


def random_labels(rng, r, n, k, lo=0, step=1):
    """r label vectors of n items with labels in {lo, lo + step, ..., lo + (k - 1) step}."""
    return lo + step * rng.integers(0, k, size=(r, n))


@pytest.fixture(params=["table", "grouped"])
def path(request, monkeypatch):
    """Run a test with dense contingency tables (the default for few blocks) and again with the
    block-by-block count used for pairs with many blocks (forced by a zero table budget)."""
    if request.param == "grouped":
        monkeypatch.setattr(partition_cost, "_TABLE_MAX", 1)
    return request.param


@pytest.mark.parametrize(
    "n, k, lo, step",
    [(1, 1, 0, 1), (2, 2, 0, 1), (7, 3, -3, 1), (40, 5, -100, 7), (101, 12, 10**6, 1000), (64, 64, 0, 1),
     (300, 25, -(2**40), 2**30), (50, 400, 0, 1)],
)
def test_equals_pairwise_mirkin_distance(path, n, k, lo, step):
    rng = np.random.default_rng(n * 1000 + k)
    a = random_labels(rng, 6, n, k, lo, step)
    b = random_labels(rng, 5, n, max(1, k // 2), -lo, step + 1)
    b[0] = a[0] * 3 + 11  # same partition as a[0], different labels
    got = mirkin_cost_matrix(a, b)
    assert got.dtype == np.float64 and got.shape == (6, 5)
    np.testing.assert_array_equal(got, pairwise_reference(a, b))
    assert got[0, 0] == 0.0


def test_similar_partitions_and_wide_labels(path):
    """Perturbations of one partition (long runs of equal cells) and labels spread over int64."""
    rng = np.random.default_rng(3)
    n = 501
    base = np.sort(rng.integers(0, 15, n))
    a = np.tile(base, (8, 1))
    for r in range(1, 8):
        moved = rng.random(n) < 0.05 * r
        a[r, moved] = rng.integers(0, 20, moved.sum())
    wide = np.where(a % 2 == 0, -(2**62) - a, 2**62 + a).astype(np.int64)
    expected = pairwise_reference(a, a)
    np.testing.assert_array_equal(mirkin_cost_matrix(a), expected)
    np.testing.assert_array_equal(mirkin_cost_matrix(wide, a), expected)
    extremes = np.array([[np.iinfo(np.int64).min, np.iinfo(np.int64).max, 0, np.iinfo(np.int64).max]])
    np.testing.assert_array_equal(mirkin_cost_matrix(extremes, [[0, 1, 2, 1]]), [[0.0]])


@pytest.mark.parametrize("table_max", [1, 2 * 4 * 4, 2 * 4 * 9, 2 * 9 * 9, 10**6])
def test_mixed_paths(table_max, monkeypatch):
    """Pairs with few and many blocks in one call share the per-thread scratch tables."""
    rng = np.random.default_rng(5)
    ks = [1, 4, 9, 2, 30, 4, 3, 9]
    a = np.stack([random_labels(rng, 1, 31, k)[0] for k in ks])
    b = np.stack([random_labels(rng, 1, 31, k, lo=-7)[0] for k in ks[::-1]])
    monkeypatch.setattr(partition_cost, "_TABLE_MAX", table_max)
    np.testing.assert_array_equal(mirkin_cost_matrix(a, b), pairwise_reference(a, b))
    np.testing.assert_array_equal(mirkin_cost_matrix(a), pairwise_reference(a, a))


def test_squared_frobenius_distance_of_coclustering_matrices(path):
    """The defining property, for n <= 30."""
    rng = np.random.default_rng(7)
    for n in (1, 2, 3, 5, 10, 17, 30):
        a = random_labels(rng, 4, n, rng.integers(1, n + 1), lo=-5)
        b = random_labels(rng, 3, n, rng.integers(1, n + 1), lo=2, step=3)
        got = mirkin_cost_matrix(a, b)
        for i in range(len(a)):
            for j in range(len(b)):
                frob = ((coclustering(a[i]) - coclustering(b[j])) ** 2).sum()
                assert got[i, j] == frob


@pytest.mark.parametrize("r", [1, 2, 3, 9, 10])
def test_symmetric_case(path, r):
    rng = np.random.default_rng(r)
    a = random_labels(rng, r, 23, 6, lo=-2)
    a[-1] = a[0] + 100  # a repeated partition off the diagonal
    got = mirkin_cost_matrix(a)
    assert got.shape == (r, r)
    np.testing.assert_array_equal(got, got.T)
    np.testing.assert_array_equal(np.diag(got), 0.0)
    np.testing.assert_array_equal(got, mirkin_cost_matrix(a, a))
    np.testing.assert_array_equal(got, pairwise_reference(a, a))
    if r > 1:
        assert got[0, -1] == 0.0


def test_shapes_and_dtypes():
    rng = np.random.default_rng(11)
    a = random_labels(rng, 4, 12, 3)
    b = random_labels(rng, 7, 12, 4)
    assert mirkin_cost_matrix(a, b).shape == (4, 7)
    assert mirkin_cost_matrix(b, a).shape == (7, 4)
    np.testing.assert_array_equal(mirkin_cost_matrix(b, a), mirkin_cost_matrix(a, b).T)
    # a single row
    np.testing.assert_array_equal(mirkin_cost_matrix(a[:1], b), pairwise_reference(a[:1], b))
    np.testing.assert_array_equal(mirkin_cost_matrix(a[:1]), [[0.0]])
    # n = 1: every partition is the same
    np.testing.assert_array_equal(mirkin_cost_matrix([[5], [-3]], [[0]]), [[0.0], [0.0]])
    # any integer dtype, nested lists, integer-valued floats, booleans
    ref = mirkin_cost_matrix(a, b)
    for dt in (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.uint64, np.float32, np.float64):
        np.testing.assert_array_equal(mirkin_cost_matrix(a.astype(dt), b.astype(dt)), ref)
    np.testing.assert_array_equal(mirkin_cost_matrix(a.tolist(), b.tolist()), ref)
    np.testing.assert_array_equal(mirkin_cost_matrix(a % 2 == 0), mirkin_cost_matrix(a % 2))
    # uint64 labels above 2**63 stay distinct
    big = np.array([[2**64 - 1, 2**63, 1, 2**64 - 1]], np.uint64)
    np.testing.assert_array_equal(mirkin_cost_matrix(big, [[0, 1, 2, 0]]), [[0.0]])
    # non-contiguous input
    np.testing.assert_array_equal(mirkin_cost_matrix(np.asfortranarray(a), b[:, :]), ref)
    np.testing.assert_array_equal(mirkin_cost_matrix(a[::2], b), ref[::2])


def test_validation_errors():
    a = np.zeros((3, 5), np.int64)
    with pytest.raises(ValueError, match="2-d"):
        mirkin_cost_matrix(np.zeros(5, np.int64))
    with pytest.raises(ValueError, match="2-d"):
        mirkin_cost_matrix(a, np.zeros(5, np.int64))
    with pytest.raises(ValueError, match="2-d"):
        mirkin_cost_matrix(np.zeros((2, 3, 5), np.int64))
    with pytest.raises(ValueError, match="same number of items"):
        mirkin_cost_matrix(a, np.zeros((3, 6), np.int64))
    with pytest.raises(ValueError, match="integer"):
        mirkin_cost_matrix(a + 0.5)
    with pytest.raises(ValueError, match="integer"):
        mirkin_cost_matrix(a, np.full((2, 5), np.nan))
    with pytest.raises(ValueError, match="integer"):
        mirkin_cost_matrix(np.array([["a", "b"]]))
    with pytest.raises(ValueError, match="at least one"):
        mirkin_cost_matrix(np.zeros((0, 5), np.int64))
    with pytest.raises(ValueError, match="at least one"):
        mirkin_cost_matrix(np.zeros((3, 0), np.int64))
