"""Hostile inputs to the result-facing functions: which variables are partitions when no model is
given, the degenerate last iteration and non-stationary windows of w2_convergence, argument
validation of the W2 diagnostics. Real pm.sample results throughout."""

import logging
import warnings

import numpy as np
import pymc as pm
import pytest

import pymc_partitions as pmp
from pymc_partitions.diagnostics.convergence import W2ConvergenceWarning, w2_traces
from pymc_partitions.pymc import compat
from pymc_partitions.pymc.diagnostics import is_canonical


def quiet_sample(**kwargs):
    logging.getLogger("pymc").setLevel(logging.ERROR)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return pm.sample(tune=0, cores=1, progressbar=False, compute_convergence_checks=False, **kwargs)


@pytest.fixture(scope="module")
def dpmm():
    """A DPMM on 30 galaxies, sampled by pm.sample with the package's collapsed Gibbs step for the
    partition (and NUTS for mu): 32 chains from 30 singletons, 24 draws."""
    y = pmp.datasets.load_galaxies()[:30] / 1000.0
    with pm.Model() as model:
        z = pmp.Partition("z", pmp.CRP(1.0), n=len(y), initval="singletons")
        mu = pm.Normal("mu", 20.0, 5.0)
        pm.Normal("noise", mu, 1.0, observed=y.mean())
        pmp.NormalNormal("y", partition=z, mu0=20.0, sigma0=10.0, sigma=1.0, observed=y)
        idata = quiet_sample(draws=24, chains=32, step=[pmp.CollapsedGibbs([z])], random_seed=3,
                             initvals=[{"mu": v} for v in np.linspace(0.0, 40.0, 32)])
    return model, idata


@pytest.fixture(scope="module")
def counts():
    """A model with a non-canonical integer vector (Poisson counts), an integer scalar and a real."""
    with pm.Model() as model:
        k = pm.Poisson("k", 3.0, shape=3)
        j = pm.Poisson("j", 2.0)
        x = pm.Normal("x", 0.0, 1.0)
        idata = quiet_sample(draws=10, chains=4, step=[pm.Metropolis([k, j]), pm.Metropolis([x])], random_seed=4)
    return model, idata


def with_w2(idata, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # few chains
        return pmp.w2_convergence(idata, **kwargs)


# --- which variables are partitions -----------------------------------------------------------


def test_partitions_found_from_the_draws_without_a_model(dpmm):
    """Without model= the labels used to be stacked with mu as numbers (U_0 of hundreds more);
    now the canonical label vectors are recognised: the same trace as with the model."""
    model, idata = dpmm
    with_model = with_w2(idata, model=model)["w2_convergence"]
    without = with_w2(idata)["w2_convergence"]
    assert without.attrs["partition_vars"] == ["z"] and without.attrs["continuous_vars"] == ["mu"]
    assert without.attrs["partition_source"] == "canonical labels"
    assert with_model.attrs["partition_source"] == "model argument"
    for est in ("U", "U_lower", "U_upper", "L", "w"):
        np.testing.assert_array_equal(without[f"z_{est}"].values, with_model[f"z_{est}"].values)
        np.testing.assert_array_equal(without[f"continuous_{est}"].values, with_model[f"continuous_{est}"].values)
    with model:
        in_context = with_w2(idata)["w2_convergence"]
    assert in_context.attrs["partition_source"] == "model in context"
    np.testing.assert_array_equal(in_context["z_U"].values, with_model["z_U"].values)
    numbers = with_w2(idata, partitions=[])["w2_convergence"]  # explicitly: no partitions
    assert "z_U" not in numbers and numbers.attrs["continuous_vars"] == ["z", "mu"]
    assert numbers.attrs["partition_source"] == "partitions argument"


def test_non_canonical_integer_vectors_are_refused(counts):
    model, idata = counts
    assert not is_canonical(compat.posterior_dataset(idata)["k"].values)
    with pytest.raises(ValueError, match=r"variable 'k' holds integer vectors that are not canonical.*model=.*"
                                         r"partitions=\[\] for none"):
        with_w2(idata)
    # each way out: the model (no Partition: all numbers), partitions=[], or leaving k out
    for kwargs in ({"model": model}, {"partitions": []}):
        group = with_w2(idata, **kwargs)["w2_convergence"]
        assert group.attrs["continuous_vars"] == ["k", "j", "x"] and group.attrs["partition_vars"] == []
    group = with_w2(idata, var_names=["j", "x"])["w2_convergence"]  # the integer scalar is a number
    assert group.attrs["continuous_vars"] == ["j", "x"]
    with pytest.raises(TypeError, match="model must be a pymc.Model"):
        with_w2(idata, model="model")


def test_is_canonical():
    assert is_canonical([0, 0, 1, 2, 1]) and is_canonical([[0, 1], [0, 0]])
    assert not is_canonical([1, 0]) and not is_canonical([0, 2]) and not is_canonical([0, -1])
    assert not is_canonical(np.array([0.0, 1.0])) and not is_canonical(np.zeros((2, 0), int))


# --- the last iteration and non-stationary windows ----------------------------------------------


def test_last_iteration_is_not_reported(dpmm):
    """The final draws are the reference: w = 0 and U = -mean_S w there by construction."""
    model, idata = dpmm
    for method in ("time_averaged", "split"):
        group = with_w2(idata, model=model, method=method, overwrite=True)["w2_convergence"]
        np.testing.assert_array_equal(group["draw"].values, np.arange(23))
        assert group.attrs["reference_draw"] == 23
    group = with_w2(idata, model=model, thin=5)["w2_convergence"]  # 0, 5, ..., 20 and the reference 23
    np.testing.assert_array_equal(group["draw"].values, [0, 5, 10, 15, 20])
    assert group.attrs["reference_draw"] == 23
    with pytest.raises(ValueError, match=r"window must satisfy 0 <= first <= last <= 4 .*reference"):
        with_w2(idata, model=model, thin=5, window=(0, 5))
    rng = np.random.default_rng(0)
    draws = rng.normal(size=(8, 6, 2))
    out = w2_traces(draws, window=(1, 4))
    assert len(out["U"]) == 5 and out["w"].min() > 0
    exact = w2_traces(draws, window=(1, 5), reference=rng.normal(size=(8, 2)))  # exact reference: all reported
    assert len(exact["U"]) == 6


def metropolis_chains(step_size, seed, chains=64, draws=40):
    """pm.sample of N(0, I_2) with untuned random-walk Metropolis from an overdispersed start."""
    with pm.Model():
        x = pm.Normal("x", 0.0, 1.0, shape=2)
        starts = np.random.default_rng(seed).normal(0.0, 4.0, size=(chains, 2))
        return quiet_sample(draws=draws, chains=chains, random_seed=seed, initvals=[{"x": v} for v in starts],
                            step=pm.Metropolis([x], S=np.full(2, step_size), tune=False))


def test_non_stationary_window_warns_and_a_converged_run_does_not():
    """Step size 0.05: the chains are still drifting in the window, U is far below 0 at its end
    (it used to be reported without a word). Step size 1.5: converged, silent."""
    slow = metropolis_chains(0.05, seed=1)
    with pytest.warns(W2ConvergenceWarning, match=r"W2 trace 'continuous': U is significantly below 0 .* at \d+ of "
                                                  r"the \d+ iterations up to the window's end.*iterations \d+\.\.\d+"
                                                  r".*falls.*Run the chains longer") as record:
        group = pmp.w2_convergence(slow)["w2_convergence"]
    assert len([w for w in record if w.category is W2ConvergenceWarning]) == 1
    assert group.attrs["continuous_window_trend_z"] < -3 and len(group.attrs["continuous_U_below_zero"]) >= 3
    assert (group["continuous_U_upper"].values < 0).any()
    fast = metropolis_chains(1.5, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", W2ConvergenceWarning)
        group = pmp.w2_convergence(fast)["w2_convergence"]
    assert abs(group.attrs["continuous_window_trend_z"]) < 2


def test_stationarity_check_false_alarms_and_power_on_arrays():
    """The same check on arrays: a Gaussian random walk of drifting chains fires, i.i.d. draws
    from the target (stationary from the start) almost never do."""
    rng = np.random.default_rng(5)
    fired = []
    for _ in range(10):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", W2ConvergenceWarning)
            fired.append(w2_traces(rng.normal(size=(32, 30, 2)))["stationarity"]["warn"])
    assert sum(fired) <= 1
    start = rng.normal(0.0, 4.0, size=(64, 1, 2))
    drift = start * 0.97 ** np.arange(40)[None, :, None] + 0.1 * rng.normal(size=(64, 40, 2))
    with pytest.warns(W2ConvergenceWarning, match="W2 trace 'x'"):
        out = w2_traces(drift, name="x")
    assert out["stationarity"]["trend_z"] < -3


# --- argument validation ------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs, error, message", [
    ({"method": "both"}, ValueError, r"method must be one of \('time_averaged', 'split'\)"),
    ({"thin": 0}, ValueError, "thin must be an integer >= 1"),
    ({"thin": 1.5}, ValueError, "thin must be an integer"),
    ({"thin": "2"}, TypeError, "thin must be an integer"),
    ({"ci": 1.0}, ValueError, "ci must be a finite number > 0.0 and < 1.0"),
    ({"ci": "95%"}, TypeError, "ci must be a number"),
    ({"overwrite": "yes"}, TypeError, "overwrite must be True or False"),
    ({"var_names": ["mu", 3]}, TypeError, "var_names must hold variable names"),
    ({"var_names": ["mu", "mu"]}, ValueError, r"var_names names \['mu'\] more than once"),
    ({"var_names": ["nope"]}, ValueError, r"variables \['nope'\] are not in the posterior"),
    ({"var_names": 3}, TypeError, "var_names must be a name or a list of names"),
    ({"partitions": ["nope"]}, ValueError, r"partition variables \['nope'\] are not among the variables"),
    ({"window": (3, 1)}, ValueError, "window must satisfy 0 <= first <= last"),
    ({"window": (0, 99)}, ValueError, "window must satisfy 0 <= first <= last <= 22"),
    ({"window": 5}, TypeError, r"window must be a pair \(first, last\)"),
    ({"window": (0.5, 3)}, ValueError, r"window\[0\] must be an integer"),
    ({"window": (0, 3), "method": "split"}, ValueError, "window applies to method='time_averaged' only"),
])
def test_w2_convergence_arguments(dpmm, kwargs, error, message):
    model, idata = dpmm
    with pytest.raises(error, match=message):
        with_w2(idata, model=model, **kwargs)


def test_w2_convergence_refuses_hostile_draws(dpmm):
    model, idata = dpmm
    post = compat.posterior_dataset(idata)
    nan = post["mu"].values.copy()
    nan[2, 5] = np.nan
    floats = post["z"].values + 0.5
    bad = compat.new_result({"posterior": post.assign(mu=(("chain", "draw"), nan))})
    with pytest.raises(ValueError, match=r"variable 'mu' has NaN or infinite values in 1 draws"):
        with_w2(bad, model=model)
    half = compat.new_result({"posterior": post.assign(z=(post["z"].dims, floats))})
    with pytest.raises(ValueError, match="partition variable 'z' holds non-integer values"):
        with_w2(half, model=model)
    text = compat.new_result({"posterior": post.assign(s=(("chain", "draw"), np.full(post["mu"].shape, "a")))})
    with pytest.raises(TypeError, match="variable 's' has dtype"):
        with_w2(text, model=model)
    with pytest.raises(ValueError, match="needs several independent chains"):
        with_w2(compat.new_result({"posterior": post.isel(chain=[0])}), model=model)
    with pytest.raises(TypeError, match="expected an arviz.InferenceData or xarray.DataTree"):
        with_w2(post, model=model)


def test_plot_and_bias_arguments(dpmm):
    model, idata = dpmm
    out = with_w2(idata, model=model)
    with pytest.raises(ValueError, match=r"names must be among the traces \['continuous', 'z'\]"):
        pmp.plot_w2_convergence(out, names=["zz"])
    with pytest.raises(TypeError, match="names must hold variable names"):
        pmp.plot_w2_convergence(out, names=[1])
    import matplotlib.pyplot as plt  # noqa: PLC0415

    _, ax = plt.subplots(1, 1)
    with pytest.raises(ValueError, match=r"ax must hold one axes per trace \(2"):
        pmp.plot_w2_convergence(out, ax=ax)
    assert len(pmp.plot_w2_convergence(out, names="z", ax=ax)) == 1
    plt.close("all")
    with pytest.raises(ValueError, match="no .w2_convergence. group: was it made by pmp.w2_convergence"):
        pmp.plot_w2_convergence(idata)  # no group yet
    # w2_bias: partitions found as in w2_convergence; one partition at a time
    with pytest.raises(ValueError, match=r"one partition variable at a time.*partitions \['z'\].*\['mu'\]"):
        pmp.w2_bias(idata, idata)
    table = pmp.w2_bias(idata, idata, var_names=["z"])
    assert table.loc["L", "lower"] <= 0 <= table.loc["V", "upper"]
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="approximation holds NaN"):
        pmp.w2_bias(rng.normal(size=(40, 2)), np.full((40, 2), np.nan))
    with pytest.raises(TypeError, match="for arrays of draws, partitions must be True"):
        pmp.w2_bias(rng.normal(size=(40, 2)), rng.normal(size=(40, 2)), partitions=["z"])
    with pytest.raises(ValueError, match="var_names applies to results"):
        pmp.w2_bias(rng.normal(size=(40, 2)), rng.normal(size=(40, 2)), var_names=["x"])
    with pytest.raises(ValueError, match="reference holds integer vectors that are not canonical.*partitions=False"):
        pmp.w2_bias(rng.integers(1, 5, size=(40, 3)), rng.integers(1, 5, size=(40, 3)))
    counts = pmp.w2_bias(rng.integers(1, 5, size=(40, 3)), rng.integers(1, 5, size=(40, 3)), partitions=False)
    assert np.isfinite(counts.loc["V", "value"])
    with pytest.raises(TypeError, match="ci must be a number"):
        pmp.w2_bias(rng.normal(size=(40, 2)), rng.normal(size=(40, 2)), ci="0.9")
