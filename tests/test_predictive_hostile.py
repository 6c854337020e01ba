"""Hostile input to the predictive functions and plot: every public argument is checked, with an
error naming it; and the plot's positive cases (1-d band, 2-d contours, from a Dataset)."""

import math

import matplotlib
import numpy as np
import pymc as pm
import pytest
import xarray as xr

import pymc_partitions as pmp
from models import data
from test_predictive import draws_result
from pymc_partitions.pymc.compat import new_result

matplotlib.use("Agg")

N = 6


def _result(draws=None, **extra):
    draws = np.array([[0, 0, 1, 1, 2, 2], [0, 1, 0, 1, 0, 1], [0, 0, 0, 0, 0, 0]]) if draws is None else draws
    return draws_result(draws, **extra)


@pytest.fixture(scope="module")
def one():
    y, _ = data(N)
    with pm.Model() as model:
        z = pmp.Partition("z", pmp.CRP(1.0), n=N)
        pmp.NormalNormal("y", partition=z, mu0=0.0, sigma0=2.0, sigma=1.0, observed=y)
    return model, _result()


@pytest.fixture(scope="module")
def two():
    y, b = data(N)
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 2.0, 1.0)
        z = pmp.Partition("z", pmp.CRP(alpha), n=N)
        pmp.NormalNormal("y", partition=z, sigma0=2.0, sigma=1.0, observed=y[:, 0])
        pmp.BetaBernoulli("b", partition=z, observed=b)
    return model, _result(alpha=[1.0, 2.0, 0.5])


X2 = np.array([[0.0, 0.0], [1.0, 2.0]])


@pytest.mark.parametrize("x,err,match", [
    (np.array([[0.0, math.nan]]), ValueError, "NaN"),
    (np.zeros((2, 3)), ValueError, r"shape \(G, 2\)"),
    (np.zeros(4), ValueError, r"shape \(G, 2\)"),
    (np.zeros((0, 2)), ValueError, "no points"),
    ("abc", TypeError, "array of numbers"),
    (np.array([["a", "b"]]), TypeError, "real numbers"),
    (np.array([[1 + 1j, 0]]), TypeError, "real numbers"),
    ({"w": X2}, ValueError, "not likelihoods"),
    ({}, ValueError, "empty dict"),
])
def test_points_are_checked(one, x, err, match):
    model, result = one
    with pytest.raises(err, match=match):
        pmp.predictive_density(result, x, model)
    with pytest.raises(err, match=match):
        pmp.join_probabilities(result, x, model, labels=[0, 0, 1, 1, 2, 2])


@pytest.mark.parametrize("kwargs,err,match", [
    ({"level": 0.0}, ValueError, "level"), ({"level": 1.0}, ValueError, "level"), ({"level": math.nan}, ValueError, "level"),
    ({"level": "0.9"}, TypeError, "level"), ({"draws": 0}, ValueError, "draws"), ({"draws": 1.5}, ValueError, "draws"),
    ({"draws": True}, TypeError, "draws"), ({"weights": [1.0, 2.0]}, ValueError, "weights"),
    ({"weights": [[1.0, -1.0, 1.0]]}, ValueError, "weights"), ({"weights": [[0.0, 0.0, 0.0]]}, ValueError, "zero"),
    ({"keep_draws": "yes"}, TypeError, "keep_draws"), ({"max_bytes": 8}, MemoryError, "max_bytes"),
    ({"var_name": "y"}, ValueError, "not a pmp.Partition"), ({"var_name": 3}, TypeError, "var_name"),
])
def test_settings_are_checked(one, kwargs, err, match):
    model, result = one
    with pytest.raises(err, match=match):
        pmp.predictive_density(result, X2, model, **kwargs)



def test_weights_whose_sum_overflows_are_normalised(one):
    """Unnormalised weights whose sum is inf give what the same relative weights give (they used
    to be divided by inf: all zero); so do weights of a subset of the draws (draws=)."""
    model, result = one
    for weights in ([[1.0, 2.0, 1.0]], [[1.0, 0.0, 3.0]]):
        big = np.asarray(weights) / np.max(weights) * 1.7e308
        for kwargs in ({}, {"draws": 2}):
            a = pmp.predictive_density(result, X2, model, weights=big, **kwargs)
            b = pmp.predictive_density(result, X2, model, weights=weights, **kwargs)
            for name in b.data_vars:
                np.testing.assert_allclose(a[name].values, b[name].values, rtol=1e-12)
        a = pmp.join_probabilities(result, X2, model, labels=[0, 0, 1, 1, 2, 2], weights=big)
        b = pmp.join_probabilities(result, X2, model, labels=[0, 0, 1, 1, 2, 2], weights=weights)
        np.testing.assert_allclose(a.values, b.values, rtol=1e-12)


def test_models_and_results_are_checked(one, two):
    model, result = one
    with pytest.raises(TypeError, match="pass model="):
        pmp.predictive_density(result, X2)
    with pytest.raises(TypeError, match="pymc.Model"):
        pmp.predictive_density(result, X2, model="m")
    with pytest.raises(TypeError, match="result of pm.sample"):
        pmp.predictive_density(np.zeros((3, N)), X2, model)
    with pytest.raises(ValueError, match="not in the posterior"):
        pmp.predictive_density(new_result({"posterior": xr.Dataset({"w": (("chain", "draw"), [[1.0]])})}), X2, model)
    with pytest.raises(ValueError, match="labels must have length|has 5 labels|5 items"):
        pmp.predictive_density(_result(np.zeros((2, 5), int)), X2, model)
    with pm.Model() as bare:
        pmp.Partition("z", pmp.CRP(1.0), n=N)
    with pytest.raises(ValueError, match="no collapsed likelihood"):
        pmp.predictive_density(result, X2, bare)
    with pm.Model() as none:
        pm.Normal("w")
    with pytest.raises(ValueError, match="no pmp.Partition"):
        pmp.cluster_parameters(result, none)
    model2, result2 = two
    with pytest.raises(ValueError, match="no draws of 'alpha'"):
        pmp.predictive_density(result, {"y": [0.0]}, model2)
    with pytest.raises(ValueError, match="several likelihoods"):
        pmp.predictive_density(result2, [0.0], model2)
    with pytest.raises(ValueError, match="0/1"):
        pmp.predictive_density(result2, {"b": [[0.5, 1, 0]]}, model2)
    with pytest.raises(ValueError, match="gives 1 points"):
        pmp.predictive_density(result2, {"y": [0.0], "b": [[1, 1, 0], [0, 0, 0]]}, model2)
    with pytest.raises(ValueError, match="invalid prior parameters alpha=-1.0"):
        pmp.predictive_density(_result(alpha=[1.0, -1.0, 1.0]), {"y": [0.0]}, model2)


def test_join_probabilities_arguments(one, two):
    model, result = one
    with pytest.raises(ValueError, match="6 items|length"):
        pmp.join_probabilities(result, X2, model, labels=[0, 1])
    with pytest.raises(ValueError, match="6 items|length"):
        pmp.join_probabilities([0, 0, 1], X2, model)
    with pytest.raises(ValueError, match="apply to pm.sample results"):
        pmp.join_probabilities([0, 0, 1, 1, 2, 2], X2, model, labels=[0, 0, 1, 1, 2, 2])
    with pytest.raises(ValueError, match="non-integer"):
        pmp.join_probabilities(result, X2, model, labels=[0.5, 0, 1, 1, 2, 2])
    model2, result2 = two
    with pytest.raises(ValueError, match="pass the pm.sample result"):
        pmp.join_probabilities([0, 0, 1, 1, 2, 2], {"y": [0.0]}, model2)
    p = pmp.join_probabilities(result2, {"b": [[1, 1, 0]]}, model2, labels=[5, 5, 3, 3, 3, 1])
    assert p.dims == ("point", "cluster") and p.shape == (1, 4) and math.isclose(float(p.sum()), 1.0)
    auto = pmp.join_probabilities(result2, {"y": [0.0, 3.0]}, model2)  # the point estimate
    assert auto.attrs["clustering"].startswith("pmp.point_estimate") and auto["x_y"].dims == ("point",)


def test_cluster_parameters_and_replicates_arguments(one, two):
    model, result = one
    for bad, err in [(-1, ValueError), ("a", TypeError), (1.5, ValueError)]:
        with pytest.raises(err, match="random_seed"):
            pmp.cluster_parameters(result, model, random_seed=bad)
        with pytest.raises(err, match="random_seed"):
            pmp.sample_posterior_predictive(result, model, random_seed=bad)
    with pytest.raises(ValueError, match="var_names"):
        pmp.sample_posterior_predictive(result, model, var_names=["w"])
    with pytest.raises(ValueError, match="var_names"):
        pmp.sample_posterior_predictive(result, model, var_names=[])
    with pytest.raises(TypeError, match="extend_inferencedata"):
        pmp.sample_posterior_predictive(result, model, extend_inferencedata="yes")
    with pytest.raises(ValueError, match="draws"):
        pmp.cluster_parameters(result, model, draws=0)
    model2, result2 = two
    out = pmp.cluster_parameters(result2, model2, random_seed=0)
    assert set(out.data_vars) == {"cluster_size", "y_mu", "b_theta"} and out["b_theta"].dims[-1] == "b_dim"


def test_plot_predictive_density(one):
    y, _ = data(N)
    with pm.Model() as model:
        z = pmp.Partition("z", pmp.CRP(1.0), n=N)
        pmp.NormalNormal("y", partition=z, mu0=0.0, sigma0=2.0, sigma=1.0, observed=y[:, 0])
    result = _result()
    ax = pmp.plot_predictive_density(result, model=model, grid_size=50)
    assert ax.get_title() == "Posterior predictive density" and len(ax.collections) == 1 and len(ax.lines) == 1
    assert len(ax.patches) > 0  # the data's histogram
    model2, result2 = one
    ax = pmp.plot_predictive_density(result2, model=model2, band=True)
    assert ax.get_xlabel() == "x[:, 0]" and len(ax.collections) >= 2
    dens = pmp.predictive_density(result, np.linspace(-3, 3, 30), model)
    ax = pmp.plot_predictive_density(dens, data=y[:, 0], band=False)
    assert len(ax.collections) == 0 and len(ax.lines) == 1


def test_plot_predictive_density_arguments(one, two):
    model, result = one
    dens = pmp.predictive_density(result, X2, model)
    with pytest.raises(ValueError, match="apply to pm.sample results"):
        pmp.plot_predictive_density(dens, model=model)
    with pytest.raises(ValueError, match="pmp.predictive_density returns"):
        pmp.plot_predictive_density(dens.drop_vars("lower"))
    with pytest.raises(TypeError, match="pm.sample result or the Dataset"):
        pmp.plot_predictive_density(np.zeros(3))
    with pytest.raises(TypeError, match="band"):
        pmp.plot_predictive_density(dens, band="no")
    with pytest.raises(ValueError, match="level"):
        pmp.plot_predictive_density(result, model=model, level=2.0)
    with pytest.raises(ValueError, match="grid_size"):
        pmp.plot_predictive_density(result, model=model, grid_size=1)
    with pytest.raises(ValueError, match="1-d or both 2-d"):
        pmp.plot_predictive_density(dens, data=np.zeros(4))
    model2, result2 = two
    with pytest.raises(ValueError, match="several likelihoods"):
        pmp.plot_predictive_density(result2, model=model2)
    with pm.Model() as binary:
        z = pmp.Partition("z", pmp.CRP(1.0), n=N)
        pmp.BetaBernoulli("b", partition=z, observed=data(N)[1])
    with pytest.raises(ValueError, match="binary"):
        pmp.plot_predictive_density(result, model=binary)


# --- which data and which model -----------------------------------------------------------------


@pytest.fixture(scope="module")
def fitted_with_data():
    """A model whose data are pm.Data, sampled by pm.sample (the result has observed_data)."""
    import logging  # noqa: PLC0415
    import warnings  # noqa: PLC0415

    y = np.r_[np.full(4, -3.0), np.full(4, 3.0)] + np.linspace(0.0, 0.2, 8)
    with pm.Model() as model:
        data_y = pm.Data("data_y", y)
        z = pmp.Partition("z", pmp.CRP(1.0), n=8)
        pmp.NormalNormal("y", partition=z, mu0=0.0, sigma0=5.0, sigma=1.0, observed=data_y)
        logging.getLogger("pymc").setLevel(logging.ERROR)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            idata = pm.sample(draws=15, tune=0, chains=2, cores=1, progressbar=False, random_seed=2,
                              compute_convergence_checks=False)
    return model, idata, y


def _readers(model, idata):
    """Every reader of a result with a model, as arrays (draws of random outputs with a fixed seed)."""
    return {
        "predictive_density": pmp.predictive_density(idata, [0.0, 3.0], model)["density"].values,
        "join_probabilities": pmp.join_probabilities(idata, [0.0, 3.0], model, labels=[0] * 4 + [1] * 4).values,
        "cluster_parameters": pmp.cluster_parameters(idata, model, draws=3, random_seed=1)["y_mu"].values,
        "sample_posterior_predictive": np.asarray(
            compat_posterior(pmp.sample_posterior_predictive(idata, model, draws=3, random_seed=1))["y"].values),
        "pointwise_log_likelihood": pmp.pointwise_log_likelihood(idata, model)["y"].values,
    }


def compat_posterior(result):
    from pymc_partitions.pymc.compat import posterior_dataset  # noqa: PLC0415

    return posterior_dataset(result, "posterior_predictive")


def test_the_fitted_data_come_from_the_result_whatever_set_data_did(fitted_with_data):
    """pm.set_data after sampling (new data, with NaN or another length) used to make every reader
    refuse ("observed contains 1 NaN") although the fitted data are read from the result."""
    model, idata, y = fitted_with_data
    before = _readers(model, idata)
    try:
        for new in (np.r_[y[:7], np.nan], y[::-1] + 10.0, np.zeros(3)):
            with model:
                pm.set_data({"data_y": new})
            after = _readers(model, idata)
            for name in before:
                np.testing.assert_allclose(after[name], before[name], rtol=1e-12, err_msg=name)
    finally:
        with model:
            pm.set_data({"data_y": y})


def test_a_model_the_result_was_not_sampled_from_is_refused(fitted_with_data):
    """Another model with the same n used to be accepted silently (its hyperparameters with the
    other model's draws). Fixed data that differ from the result's, or a likelihood the result
    has no observed data for, are refused; a result without observed_data uses the model's
    current data and says so when they are unusable."""
    model, idata, y = fitted_with_data
    with pm.Model() as other_data:
        z = pmp.Partition("z", pmp.CRP(1.0), n=8)
        pmp.NormalNormal("y", partition=z, mu0=0.0, sigma0=5.0, sigma=1.0, observed=y[::-1])
    with pm.Model() as same_data:  # fixed data equal to the result's: accepted
        z = pmp.Partition("z", pmp.CRP(1.0), n=8)
        pmp.NormalNormal("y", partition=z, mu0=0.0, sigma0=5.0, sigma=1.0, observed=y)
    with pm.Model() as other_name:
        z = pmp.Partition("z", pmp.CRP(1.0), n=8)
        pmp.NormalNormal("w", partition=z, mu0=0.0, sigma0=5.0, sigma=1.0, observed=y)
    readers = [lambda m: pmp.predictive_density(idata, [0.0], m), lambda m: pmp.cluster_parameters(idata, m),
               lambda m: pmp.join_probabilities(idata, [0.0], m, labels=[0] * 8),
               lambda m: pmp.sample_posterior_predictive(idata, m, draws=2),
               lambda m: pmp.pointwise_log_likelihood(idata, m)]
    for read in readers:
        with pytest.raises(ValueError, match=r"the model's observed data of 'y' differ from the result's "
                                             r"observed_data group: the result was not sampled from this model"):
            read(other_data)
        with pytest.raises(ValueError, match=r"observed_data group has \['y'\] but not the model's likelihood 'w'"):
            read(other_name)
    np.testing.assert_allclose(pmp.predictive_density(idata, [0.0, 3.0], same_data)["density"].values,
                               pmp.predictive_density(idata, [0.0, 3.0], model)["density"].values, rtol=1e-12)
    bare = draws_result(np.zeros((2, 8), int))  # no observed_data: the model's current data are used
    try:
        with model:
            pm.set_data({"data_y": np.r_[y[:7], np.nan]})
        with pytest.raises(ValueError, match=r"predictive_density: the result has no observed_data group, so the "
                                             r"model's current data are used, and 'y': observed contains 1 NaN"):
            pmp.predictive_density(bare, [0.0], model)
    finally:
        with model:
            pm.set_data({"data_y": y})
