"""Tests for the bundled datasets."""

import numpy as np
import pytest

from pymc_partitions import datasets


@pytest.mark.parametrize(
    "loader, shape, dtype",
    [
        (datasets.load_galaxies, (82,), np.float64),
        (datasets.load_faithful, (272, 2), np.float64),
        (datasets.load_gene, (200, 50), np.float64),
        (datasets.load_karate, (78, 2), np.int64),
        (datasets.load_wine, (178, 13), np.float64),
        (datasets.load_wine_classes, (178,), np.int64),
        (datasets.load_iris, (150, 4), np.float64),
        (datasets.load_iris_classes, (150,), np.int64),
        (datasets.load_ethanol, (88, 3), np.float64),
    ],
)
def test_shape_dtype_finite(loader, shape, dtype):
    x = loader()
    assert isinstance(x, np.ndarray)
    assert x.shape == shape
    assert x.dtype == dtype
    assert np.all(np.isfinite(x))


def test_galaxies_known_values():
    x = datasets.load_galaxies()
    assert x[0] == 9172.0
    assert x[1] == 9350.0
    assert x[77] == 26690.0  # the known MASS typo (26960 in Roeder 1990), kept as is
    assert 9000 < x.min() and x.max() < 35000
    assert np.all(np.diff(x) >= 0)  # MASS ships them sorted


def test_faithful_known_values():
    x = datasets.load_faithful()
    np.testing.assert_array_equal(x[0], [3.6, 79.0])
    assert 1.5 < x[:, 0].min() and x[:, 0].max() < 5.2  # eruptions, minutes
    assert 40 <= x[:, 1].min() and x[:, 1].max() <= 96  # waiting, minutes


def test_gene_standardised():
    x = datasets.load_gene()
    assert x[0, 0] == pytest.approx(-0.745843431)
    np.testing.assert_allclose(x.mean(axis=0), 0.0, atol=1e-6)
    sd = x.std(axis=0, ddof=1)
    assert np.all((sd > 0.9) & (sd < 1.1))


def test_karate_graph():
    e = datasets.load_karate()
    assert e.min() == 0 and e.max() == 33
    assert len(np.unique(e)) == 34
    assert np.all(e[:, 0] != e[:, 1])  # no self loops
    assert len({tuple(sorted(r)) for r in e.tolist()}) == 78  # each edge once
    deg = np.bincount(e.ravel(), minlength=34)
    assert deg[0] == 16 and deg[33] == 17  # instructor and administrator


def test_karate_factions():
    f = datasets.load_karate_factions()
    assert f.shape == (34,) and f.dtype == np.int64
    officer = [9, 14, 15, 18, 20, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33]  # networkx 'club' == 'Officer'
    assert np.array_equal(np.flatnonzero(f == 1), officer)
    assert f[0] == 0 and f[33] == 1  # the instructor and the administrator lead the two factions
    e = datasets.load_karate()
    assert np.mean(f[e[:, 0]] == f[e[:, 1]]) > 0.8  # most friendships inside a faction


def test_wine_known_values():
    x, c = datasets.load_wine(), datasets.load_wine_classes()
    np.testing.assert_array_equal(x[0], [14.23, 1.71, 2.43, 15.6, 127, 2.8, 3.06, 0.28, 2.29, 5.64, 1.04, 3.92, 1065])
    np.testing.assert_array_equal(x[-1], [14.13, 4.1, 2.74, 24.5, 96, 2.05, 0.76, 0.56, 1.35, 9.2, 0.61, 1.6, 560])
    assert np.bincount(c).tolist() == [59, 71, 48]
    assert np.all(np.diff(c) >= 0)  # sorted by cultivar, as UCI ships them
    np.testing.assert_allclose(x.mean(axis=0)[[0, 4, 12]], [13.0006, 99.7416, 746.8933], atol=1e-4)  # UCI's summary


def test_iris_known_values():
    x, c = datasets.load_iris(), datasets.load_iris_classes()
    np.testing.assert_array_equal(x[0], [5.1, 3.5, 1.4, 0.2])
    np.testing.assert_array_equal(x[34], [4.9, 3.1, 1.5, 0.2])  # Fisher's values (UCI's file: 4.9, 3.1, 1.5, 0.1)
    np.testing.assert_array_equal(x[37], [4.9, 3.6, 1.4, 0.1])  # (UCI's file: 4.9, 3.1, 1.5, 0.1)
    assert np.bincount(c).tolist() == [50, 50, 50]
    np.testing.assert_allclose(x.mean(axis=0), [5.8433, 3.0573, 3.758, 1.1993], atol=1e-4)
    # setosa is separated from the other two by petal length
    assert x[c == 0, 2].max() < x[c != 0, 2].min()


def test_ethanol_known_values():
    x = datasets.load_ethanol()
    np.testing.assert_array_equal(x[0], [3.741, 12.0, 0.907])
    np.testing.assert_array_equal(x[-1], [1.9, 18.0, 0.655])
    np.testing.assert_allclose(x.mean(axis=0), [1.957375, 12.034091, 0.926477], atol=1e-6)
    assert sorted(set(x[:, 1].tolist())) == [7.5, 9.0, 12.0, 15.0, 18.0]  # the engine's compression ratios


def test_fresh_copies():
    a = datasets.load_galaxies()
    a[:] = 0
    assert datasets.load_galaxies()[0] == 9172.0
