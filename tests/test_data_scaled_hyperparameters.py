"""Data-scaled hyperparameters: ``pmp.NormalInverseWishart.hyperparameters_from_data`` and
``pmp.NormalNormal.hyperparameters_from_data`` give the documented values, make the posterior over
partitions invariant to the units of each column (the constructors' fixed defaults do not), cluster
the wine data near its cultivars where the defaults do not, and refuse bad arguments by name."""

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest

import pymc_partitions as pmp
from pymc_partitions.pymc.terms import PartitionTerms
from pymc_partitions.samplers.gibbs import log_joint
from pymc_partitions.summaries import partition_loss

NIW = pmp.NormalInverseWishart
NN = pmp.NormalNormal


def test_niw_values():
    rng = np.random.default_rng(0)
    y = rng.normal([1.0, -2.0, 50.0], [1.0, 3.0, 20.0], size=(40, 3))
    hyper = NIW.hyperparameters_from_data(y)
    within = 3.0 ** (-2.0 / 3)
    assert set(hyper) == {"mu0", "kappa0", "nu0", "scale0"}
    np.testing.assert_allclose(hyper["mu0"], y.mean(axis=0))
    assert hyper["kappa0"] == 0.1 and hyper["nu0"] == 2 * 3 + 2
    # E[Sigma_b] = scale0 / (nu0 - D - 1) = within * diag(var)
    np.testing.assert_allclose(hyper["scale0"] / (hyper["nu0"] - 3 - 1), within * np.diag(y.var(axis=0, ddof=1)))
    other = NIW.hyperparameters_from_data(y, within=0.5, kappa0=1.0, nu0=20.0)
    assert other["kappa0"] == 1.0 and other["nu0"] == 20.0
    np.testing.assert_allclose(other["scale0"], 16.0 * 0.5 * np.diag(y.var(axis=0, ddof=1)))
    one_d = NIW.hyperparameters_from_data(y[:, 0])  # (n,) data: D = 1, as the likelihood reads them
    assert one_d["scale0"].shape == (1, 1) and one_d["nu0"] == 4.0 and one_d["mu0"].shape == (1,)
    # D = 1: within = 3 ** -2, nu0 = 4, var = 2.5
    assert NIW.hyperparameters_from_data(np.arange(5.0))["scale0"][0, 0] == pytest.approx(2 * (1 / 9) * 2.5)


def test_normal_normal_values():
    rng = np.random.default_rng(1)
    y = rng.normal([0.0, 10.0], [2.0, 0.5], size=(30, 2))
    hyper = NN.hyperparameters_from_data(y)
    var = y.var(axis=0, ddof=1)
    within = 3.0 ** (-2.0 / 2)
    np.testing.assert_allclose(hyper["mu0"], y.mean(axis=0))
    np.testing.assert_allclose(hyper["sigma"] ** 2, within * var)
    np.testing.assert_allclose(hyper["sigma"] ** 2 + hyper["sigma0"] ** 2, var)  # a new cluster's item: the data's variance
    assert NN.hyperparameters_from_data(y, within=0.9)["sigma"] == pytest.approx(np.sqrt(0.9 * var))


def _log_joints(y, make_likelihood, parts):
    with pm.Model() as model:
        z = pmp.Partition("z", pmp.CRP(1.0), n=len(y))
        make_likelihood(z, y)
    terms = PartitionTerms(model, "z")
    params, pack = terms.kernel_inputs(model.initial_point())
    return np.array([log_joint(p, pack, terms.prior_code, params) for p in parts])


@pytest.mark.parametrize("family", ["niw", "nn"])
def test_posterior_over_partitions_does_not_depend_on_the_units_of_each_column(family):
    """Data-scaled hyperparameters follow a change of units (y -> a y + b per column): the log joint
    of every partition moves by one constant, so the posterior over partitions is the same. With the
    constructors' fixed defaults (mu0 = 0, unit scales) it is not -- this is what makes them poor
    on raw data."""
    rng = np.random.default_rng(2)
    y = np.r_[rng.normal(0.0, 1.0, (5, 3)), rng.normal(2.5, 1.0, (5, 3))]
    units = np.array([1000.0, 0.01, 3.0]), np.array([-40.0, 7.0, 0.5])
    y2 = y * units[0] + units[1]
    parts = [rng.integers(0, 3, len(y)) for _ in range(12)]
    cls = NIW if family == "niw" else NN

    def scaled(z, data):
        cls("y", partition=z, **cls.hyperparameters_from_data(data), observed=data)

    def fixed(z, data):
        cls("y", partition=z, observed=data)

    a, b = _log_joints(y, scaled, parts), _log_joints(y2, scaled, parts)
    np.testing.assert_allclose(a - a[0], b - b[0], atol=1e-8)
    a, b = _log_joints(y, fixed, parts), _log_joints(y2, fixed, parts)
    assert np.abs((a - a[0]) - (b - b[0])).max() > 1.0  # the test has power: fixed defaults move


def test_wine_clusters_near_its_cultivars_with_data_scaled_hyperparameters():
    """Standardised wine (D = 13): the constructor's defaults (kappa0 = 1, nu0 = D + 2, scale0 = I)
    split it into many clusters far from the three cultivars; the data-scaled ones find them.
    Gibbs + PGSM: Gibbs alone stays in its one-block start with either (a mixing matter, apart
    from the prior). benchmarks/bench_defaults.py measures this over 4 chains and more data sets."""
    x = pmp.datasets.load_wine()
    x = (x - x.mean(axis=0)) / x.std(axis=0)
    classes = pmp.datasets.load_wine_classes()
    ari = {}
    for name, hyper in [("defaults", {}), ("data-scaled", NIW.hyperparameters_from_data(x))]:
        with pm.Model():
            z = pmp.Partition("z", pmp.CRP(1.0), n=len(x))
            NIW("y", partition=z, **hyper, observed=x)
            idata = pm.sample(draws=100, tune=100, chains=1, random_seed=3, progressbar=False,
                              step=[pmp.CollapsedGibbs([z]), pmp.PGSM([z])], compute_convergence_checks=False)
        labels = pmp.posterior_dataset(idata)["z"].values[0]
        ari[name] = np.mean([1.0 - partition_loss(lab, classes, "omari") for lab in labels[::5]])
    assert ari["data-scaled"] > 0.8
    assert ari["defaults"] < 0.65


@pytest.mark.parametrize("cls", [NIW, NN])
def test_refuses_bad_arguments(cls):
    name = cls.__name__ + ".hyperparameters_from_data"
    y = np.random.default_rng(0).normal(size=(10, 2))
    with pytest.raises(TypeError, match=f"'{name}': y must be numeric"):
        cls.hyperparameters_from_data(np.array([["a", "b"]] * 3))
    with pytest.raises(TypeError, match="not a PyTensor variable"):
        cls.hyperparameters_from_data(pt.as_tensor_variable(y))
    with pytest.raises(ValueError, match="NaN or infinite"):
        cls.hyperparameters_from_data(np.r_[y, [[np.nan, 0.0]]])
    with pytest.raises(ValueError, match="at least 2 rows"):
        cls.hyperparameters_from_data(y[:1])
    with pytest.raises(ValueError, match="1-d or 2-d"):
        cls.hyperparameters_from_data(y[None])
    with pytest.raises(ValueError, match=r"column\(s\) \[1\] of y are constant"):
        cls.hyperparameters_from_data(np.c_[y[:, 0], np.ones(10)])
    for within in [0.0, 1.0, -0.5, np.inf]:
        with pytest.raises(ValueError, match="within"):
            cls.hyperparameters_from_data(y, within=within)
    for within in ["0.5", True]:
        with pytest.raises(TypeError, match="within"):
            cls.hyperparameters_from_data(y, within=within)


def test_niw_refuses_bad_kappa0_and_nu0():
    y = np.random.default_rng(0).normal(size=(10, 2))
    with pytest.raises(ValueError, match="kappa0"):
        NIW.hyperparameters_from_data(y, kappa0=0.0)
    with pytest.raises(ValueError, match="nu0 must be .*> 3"):  # E[Sigma] needs nu0 > D + 1
        NIW.hyperparameters_from_data(y, nu0=3.0)
    with pytest.raises(TypeError, match="nu0"):
        NIW.hyperparameters_from_data(y, nu0="5")
