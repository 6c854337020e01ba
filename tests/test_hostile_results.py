"""Hostile inputs to the result-facing functions: which variables are partitions when no model is
given, the degenerate last iteration and non-stationary windows of w2_convergence, argument
validation of the W2 diagnostics, and files that pmp.load must refuse clearly, write atomically
and give back with their attributes' types. Real pm.sample results throughout."""

import logging
import os
import re
import warnings
from pathlib import Path

import numpy as np
import pymc as pm
import pytest
import xarray as xr

import pymc_partitions as pmp
from pymc_partitions.diagnostics.convergence import W2ConvergenceWarning, w2_traces
from pymc_partitions.pymc import compat
from pymc_partitions.results import files
from pymc_partitions.results.diagnostics import is_canonical
from pymc_partitions.results.reader import PARTITIONS_ATTR
from test_w2_convergence import sampled_dpmm


def quiet_sample(**kwargs):
    logging.getLogger("pymc").setLevel(logging.ERROR)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return pm.sample(tune=0, cores=1, progressbar=False, compute_convergence_checks=False, **kwargs)


@pytest.fixture(scope="module")
def dpmm():
    """A DPMM on 30 galaxies, sampled by pm.sample with the package's collapsed Gibbs step for the
    partition (and NUTS for mu): 32 chains from 30 singletons, 24 draws."""
    logging.getLogger("pymc").setLevel(logging.ERROR)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return sampled_dpmm(chains=32, draws=24, n=30, gibbs_step=True)


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


def unrecorded(idata):
    """``idata`` without the record of its partitions (a result from elsewhere)."""
    posterior = compat.posterior_dataset(idata).copy()
    del posterior.attrs[PARTITIONS_ATTR]
    return compat.add_groups(idata, {"posterior": posterior}, overwrite=True)


def test_partitions_found_from_the_draws_without_a_model(dpmm):
    """Without model= the labels used to be stacked with mu as numbers (U_0 of hundreds more);
    now the result records its partitions, and without that record the canonical label vectors are
    recognised: the same trace as with the model."""
    model, idata = dpmm
    with_model = with_w2(idata, model=model)["w2_convergence"]
    recorded = with_w2(idata)["w2_convergence"]
    without = with_w2(unrecorded(idata))["w2_convergence"]
    for group in (recorded, without):
        assert group.attrs["partition_vars"] == ["z"] and group.attrs["continuous_vars"] == ["mu"]
    assert recorded.attrs["partition_source"] == "recorded in the result"
    assert without.attrs["partition_source"] == "canonical labels"
    assert with_model.attrs["partition_source"] == "model argument"
    for est in ("U", "U_lower", "U_upper", "L", "w"):
        for group in (recorded, without):
            np.testing.assert_array_equal(group[f"z_{est}"].values, with_model[f"z_{est}"].values)
            np.testing.assert_array_equal(group[f"continuous_{est}"].values, with_model[f"continuous_{est}"].values)
    with model:
        in_context = with_w2(unrecorded(idata))["w2_convergence"]
    assert in_context.attrs["partition_source"] == "model in context"
    np.testing.assert_array_equal(in_context["z_U"].values, with_model["z_U"].values)
    numbers = with_w2(idata, partitions=[])["w2_convergence"]  # explicitly: no partitions
    assert "z_U" not in numbers and numbers.attrs["continuous_vars"] == ["mu", "z"]  # labels last
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


def test_indicator_vectors_starting_with_zero_are_ambiguous():
    """A Bernoulli indicator vector whose first entry is always 0 is canonical; treating it as a
    partition would silently change the ground cost, so without a model it is refused."""
    with pm.Model() as model:
        b = pm.Bernoulli("b", p=np.array([0.0, 0.5, 0.5, 0.5]))
        x = pm.Normal("x", 0.0, 1.0)
        idata = quiet_sample(draws=10, chains=4, step=[pm.BinaryGibbsMetropolis([b]), pm.Metropolis([x])],
                             random_seed=2)
    assert is_canonical(compat.posterior_dataset(idata)["b"].values)
    with pytest.raises(ValueError, match=r"variable 'b' holds only 0/1 values \(an indicator vector or a two-block "
                                         r"partition\).*model="):
        with_w2(idata)
    group = with_w2(idata, model=model)["w2_convergence"]
    assert group.attrs["continuous_vars"] == ["b", "x"] and group.attrs["partition_vars"] == []


def test_is_canonical():
    assert is_canonical([0, 0, 1, 2, 1]) and is_canonical([[0, 1], [0, 0]])
    assert not is_canonical([1, 0]) and not is_canonical([0, 2]) and not is_canonical([0, -1])
    assert not is_canonical(np.array([0.0, 1.0])) and not is_canonical(np.zeros((2, 0), int))



# --- objects that are not results ---------------------------------------------------------------

Y8 = np.r_[np.full(4, -3.0), np.full(4, 3.0)]


@pytest.fixture(scope="module")
def multitrace():
    """pm.sample(return_inferencedata=False): a MultiTrace, and the same draws as a result."""
    with pm.Model() as model:
        z = pmp.Partition("z", pmp.CRP(1.0), n=8)
        pmp.NormalNormal("y", partition=z, mu0=0.0, sigma0=5.0, sigma=1.0, observed=Y8)
        trace = quiet_sample(draws=20, chains=2, random_seed=1, return_inferencedata=False)
    return model, trace


#: Every public function that reads a pm.sample result, called with a MultiTrace.
RESULT_READERS = {
    "coclustering": lambda m, t: pmp.coclustering(t),
    "point_estimate": lambda m, t: pmp.point_estimate(t),
    "credible_ball": lambda m, t: pmp.credible_ball(t, [0] * 8),
    "partition_traces": lambda m, t: pmp.partition_traces(t),
    "summarize_clustering": lambda m, t: pmp.summarize_clustering(t),
    "plot_coclustering": lambda m, t: pmp.plot_coclustering(t),
    "plot_n_clusters": lambda m, t: pmp.plot_n_clusters(t),
    "plot_clustering": lambda m, t: pmp.plot_clustering(Y8, t),
    "plot_credible_ball": lambda m, t: pmp.plot_credible_ball(Y8, t),
    "w2_convergence": lambda m, t: pmp.w2_convergence(t, model=m),
    "plot_w2_convergence": lambda m, t: pmp.plot_w2_convergence(t),
    "label_invariant": lambda m, t: pmp.label_invariant(t, model=m),
    "summary": lambda m, t: pmp.summary(t, model=m),
    "plot_trace": lambda m, t: pmp.plot_trace(t, model=m),
    "predictive_density": lambda m, t: pmp.predictive_density(t, [0.0], m),
    "join_probabilities": lambda m, t: pmp.join_probabilities(t, [0.0], m),
    "cluster_parameters": lambda m, t: pmp.cluster_parameters(t, m),
    "sample_posterior_predictive": lambda m, t: pmp.sample_posterior_predictive(t, m),
    "plot_predictive_density": lambda m, t: pmp.plot_predictive_density(t, model=m),
    "pointwise_log_likelihood": lambda m, t: pmp.pointwise_log_likelihood(t, m),
    "loo": lambda m, t: pmp.loo(t),
    "save": lambda m, t: pmp.save(t, "never-written.nc"),
    "posterior_dataset": lambda m, t: pmp.posterior_dataset(t),
    "add_groups": lambda m, t: pmp.add_groups(t, {}),
}


@pytest.mark.parametrize("name", sorted(RESULT_READERS))
def test_a_multitrace_is_refused_saying_how_to_convert_it(multitrace, name):
    """The summaries used to raise NotImplementedError with an empty message; every reader now
    says what the object is and how to convert it (the conversion needs the model)."""
    model, trace = multitrace
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    with pytest.raises(TypeError, match=r"MultiTrace of pm.sample\(return_inferencedata=False\): convert it with "
                                        r"pm.to_inference_data\(trace, model=model\)"):
        RESULT_READERS[name](model, trace)


def test_the_converted_multitrace_gives_the_summaries(multitrace):
    model, trace = multitrace
    idata = pm.to_inference_data(trace, model=model)
    draws = np.stack(trace.get_values("z", combine=False))
    np.testing.assert_array_equal(pmp.coclustering(idata).values, pmp.coclustering(draws).values)


def test_objects_numpy_cannot_read_are_type_errors():
    class Opaque:
        def __array__(self, *args, **kwargs):
            raise NotImplementedError

    for fn in (pmp.coclustering, pmp.point_estimate, lambda d: pmp.credible_ball(d, [0, 0])):
        with pytest.raises(TypeError, match="draws must be an array of labels, got Opaque"):
            fn(Opaque())
    with pytest.raises(TypeError, match="estimate must be a vector of integer labels, got Opaque"):
        pmp.plot_clustering(np.zeros(2), Opaque())


def test_a_result_in_place_of_the_data_or_the_clustering_of_a_plot(dpmm):
    """plot_clustering(y, idata) used to say 'estimate must hold integer labels, got dtype <U13'
    (PyMC 5) or 'cannot directly convert a DataTree into a numpy array' (PyMC 6)."""
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    _, idata = dpmm
    y = np.zeros(30)
    kind = type(idata).__name__
    with pytest.raises(TypeError, match=rf"plot_clustering: estimate is a pm.sample result \({kind}\), not labels or "
                                        r"a point estimate. The call is plot_clustering\(data, estimate\): e.g. "
                                        r"plot_clustering\(y, pmp.point_estimate\(result\)\)"):
        pmp.plot_clustering(y, idata)
    with pytest.raises(TypeError, match=r"plot_clustering: data is a pm.sample result .*not the data"):
        pmp.plot_clustering(idata, y)
    with pytest.raises(TypeError, match=r"plot_credible_ball: ball is a pm.sample result .*pmp.credible_ball\(result"):
        pmp.plot_credible_ball(y, idata)
    with pytest.raises(TypeError, match=r"plot_credible_ball: data is a pm.sample result"):
        pmp.plot_credible_ball(idata, pmp.credible_ball(idata, np.zeros(30, int)))


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
    constant = compat.new_result({"posterior": post.assign(c=("k", [1.0, 2.0]))})
    with pytest.raises(ValueError, match=r"variable 'c' has dims \('k',\), not one value per \(chain, draw\)"):
        with_w2(constant, model=model)
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
    with pytest.raises(ValueError, match=r"w2_bias \(approximation\): variables \['mu'\] are not in the posterior"):
        pmp.w2_bias(idata, compat.new_result({"posterior": compat.posterior_dataset(idata)[["z"]]}), var_names=["mu"])
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


# --- files --------------------------------------------------------------------------------------

DATA = Path(__file__).parent / "data"

#: Attribute values of every kind ``pmp.save`` must give back unchanged (value and type).
ATTRS = {
    "text": "W2² é", "empty_text": "", "integer": 7, "big_integer": 2**70, "real": 1.5, "nan": float("nan"),
    "flag": True, "nothing": None, "one_int": [3], "ints": [1, 2], "one_name": ["z"], "names": ["a", "b"],
    "empty_list": [], "mixed": [1, "a", None], "pair": (1, (2, "a")), "nested": {"a": [1, {"b": None}], "c": (True,)},
    "int32": np.int32(3), "bool_": np.bool_(False), "array": np.array([1.0, 2.0]), "one_element_array": np.array([4]),
    "matrix": np.eye(2), "bool_array": np.array([True, False]), "strings": np.array(["a", "bc"]),
    "looks_encoded": "pmp-json:[1]",
}


def same(a, b) -> bool:
    """Equal value and type, recursively (NaN equals NaN)."""
    if isinstance(a, np.ndarray):
        return type(b) is np.ndarray and a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)
    if isinstance(a, float) and a != a:
        return type(b) is float and b != b
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return type(b) is dict and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def changed(expected: dict, got: dict) -> dict:
    return {k: (v, got.get(k, "<missing>")) for k, v in expected.items() if not same(v, got.get(k, "<missing>"))}


@pytest.fixture(scope="module")
def small():
    with pm.Model():
        pm.Normal("x", 0.0, 1.0, shape=2)
        return quiet_sample(draws=5, chains=2, random_seed=1)


def test_load_refuses_what_is_not_a_result(small, tmp_path):
    missing = tmp_path / "missing.nc"
    with pytest.raises(FileNotFoundError, match=re.escape(f"pmp.load: no such file: '{missing}'")):
        pmp.load(missing)
    with pytest.raises(IsADirectoryError, match="is a directory"):
        pmp.load(tmp_path)
    with pytest.raises(TypeError, match="path must be a str or os.PathLike"):
        pmp.load(3)
    not_netcdf = "is not a netCDF4/HDF5 file written by pmp.save or ArviZ"
    garbage = tmp_path / "garbage.nc"
    garbage.write_bytes(b"not a netCDF file at all" * 10)
    with pytest.raises(ValueError, match=not_netcdf):
        pmp.load(garbage)
    empty = tmp_path / "empty.nc"
    empty.write_bytes(b"")
    with pytest.raises(ValueError, match=not_netcdf + r" \(it is empty\)"):
        pmp.load(empty)
    good = pmp.save(small, tmp_path / "good.nc")
    truncated = tmp_path / "truncated.nc"
    truncated.write_bytes(Path(good).read_bytes()[:-2000])
    with pytest.raises(ValueError, match=not_netcdf + r" \(truncated or damaged"):
        pmp.load(truncated)
    dataset = xr.Dataset({"a": ("x", np.arange(3.0))})
    netcdf3 = tmp_path / "netcdf3.nc"
    dataset.to_netcdf(netcdf3, format="NETCDF3_64BIT", engine="scipy")
    with pytest.raises(ValueError, match="is a netCDF3 file.*no groups.*xarray.open_dataset"):
        pmp.load(netcdf3)
    plain = tmp_path / "plain.nc"
    dataset.to_netcdf(plain, engine="h5netcdf")  # used to load as an empty result
    with pytest.raises(ValueError, match="holds a single dataset .*no groups.*xarray.open_dataset"):
        pmp.load(plain)


def test_root_variables_are_not_dropped(small, tmp_path):
    """A netCDF4 file with data at the root as well as groups: a DataTree holds it; InferenceData
    would drop the root data, so PyMC 5 refuses it instead."""
    path = tmp_path / "root.nc"
    xr.Dataset({"a": ("x", np.arange(3.0))}).to_netcdf(path, engine="h5netcdf")
    compat.posterior_dataset(small).to_netcdf(path, mode="a", group="posterior", engine="h5netcdf")
    if compat.RESULT_IS_DATATREE:
        back = pmp.load(path)
        np.testing.assert_array_equal(back["a"].values, np.arange(3.0))
        np.testing.assert_array_equal(back["posterior"]["x"].values, compat.posterior_dataset(small)["x"].values)
    else:
        with pytest.raises(ValueError, match=r"holds variables \['a'\] at the root.*InferenceData cannot hold"):
            pmp.load(path)


def unencodable(result):
    """The result plus a group that netCDF cannot store (written after the posterior)."""
    bad = xr.Dataset({"v": ("k", np.array([{"a": 1}, {"b": 2}], dtype=object))})
    return compat.add_groups(result, {"zz_bad": bad})


def test_save_is_atomic(small, tmp_path, monkeypatch):
    path = tmp_path / "result.nc"
    pmp.save(small, path)
    before = path.read_bytes()
    with pytest.raises(ValueError, match="cannot serialize"):
        pmp.save(unencodable(small), path)
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["result.nc"]
    with pytest.raises(ValueError, match="cannot serialize"):
        pmp.save(unencodable(small), tmp_path / "new.nc")
    assert os.listdir(tmp_path) == ["result.nc"]
    # interrupted after the whole file was written, before it was renamed into place
    real_write = files._write

    def write_then_interrupt(result, target, compress):
        real_write(result, target, compress)
        raise KeyboardInterrupt

    monkeypatch.setattr(files, "_write", write_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        pmp.save(with_w2(small), path)
    monkeypatch.undo()
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["result.nc"]
    assert "w2_convergence" not in compat.group_names(pmp.load(path))
    with pytest.raises(TypeError, match=r"attribute 'handle' of group 'posterior' is of type object"):
        bad = compat.add_groups(small, {"posterior": compat.posterior_dataset(small).assign_attrs(handle=object())},
                                overwrite=True)
        pmp.save(bad, path)
    with pytest.raises(TypeError, match="compress must be True or False"):
        pmp.save(small, path, compress="no")
    with pytest.raises(FileNotFoundError, match="the directory of .* does not exist"):
        pmp.save(small, tmp_path / "nowhere" / "r.nc")
    assert path.read_bytes() == before



def loads_within(path, seconds=60.0):
    """pmp.load(path) in a thread: (returned in time, exception or None)."""
    import threading  # noqa: PLC0415

    outcome = {}

    def run():
        try:
            pmp.load(path)
        except BaseException as err:  # noqa: BLE001 - reported to the test
            outcome["error"] = err

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    return not thread.is_alive(), outcome.get("error")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_load_refuses_pipes_devices_and_sockets_without_blocking(tmp_path):
    """A FIFO used to block pmp.load forever (opening it waits for a writer)."""
    import socket  # noqa: PLC0415

    fifo = tmp_path / "pipe.nc"
    os.mkfifo(fifo)
    link = tmp_path / "link.nc"
    link.symlink_to(fifo)
    sock_path = tmp_path / "s.nc"
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(sock_path))
    cases = [(fifo, "a named pipe"), (link, "a named pipe"), (sock_path, "a socket")]
    if os.path.exists("/dev/null"):
        cases.append(("/dev/null", "a character device"))
    try:
        for path, kind in cases:
            returned, error = loads_within(path)
            assert returned, f"pmp.load({path}) blocked"
            assert isinstance(error, ValueError) and re.search(rf"pmp.load: '{re.escape(str(path))}' is {kind}.*, not a "
                                                               "regular file", str(error)), error
    finally:
        sock.close()
        try:  # release a reader blocked on the pipe (the old behaviour), so that no thread is left waiting
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass


def test_a_path_ending_with_a_separator_is_refused(small, tmp_path):
    """pmp.save("x.nc/") used to write x.nc."""
    for owner, call in (("pmp.save", lambda p: pmp.save(small, p)), ("pmp.load", pmp.load)):
        with pytest.raises(IsADirectoryError, match=rf"{owner}: .*x.nc/' ends with a path separator"):
            call(str(tmp_path / "x.nc") + os.sep)
    assert os.listdir(tmp_path) == []


def temporary(tmp_path, target, writer=None, age=0.0):
    """A leftover temporary of ``target`` as pmp.save names them (``writer``: (host, pid), or None
    for the names of older versions), last modified ``age`` seconds ago."""
    import uuid  # noqa: PLC0415

    middle = "" if writer is None else f"{writer[0]}-{writer[1]}."
    path = tmp_path / f".{target}.{middle}{uuid.uuid4().hex[:12]}.tmp"
    path.write_bytes(b"partial")
    if age:
        stamp = os.path.getmtime(path) - age
        os.utime(path, (stamp, stamp))
    return path


def dead_pid():
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_stale_temporaries_of_the_target_are_removed_by_the_next_save(small, tmp_path):
    """A save killed outright (SIGKILL) used to leave its temporary for good. The next save of the
    same target removes those whose writer is gone (same machine) or that are a day old; a live
    writer's, another machine's recent one and those of other files stay."""
    from pymc_partitions.results import files as _files  # noqa: PLC0415

    host = _files._host()
    dead = temporary(tmp_path, "r.nc", (host, dead_pid()))
    old = temporary(tmp_path, "r.nc", None, age=2 * 86400)  # an older version's name, two days old
    old_elsewhere = temporary(tmp_path, "r.nc", ("0" * 8, 1), age=2 * 86400)
    keep = [temporary(tmp_path, "r.nc", (host, os.getpid())),  # a live writer (this process)
            temporary(tmp_path, "r.nc", ("0" * 8, 1)),  # another machine's, recent
            temporary(tmp_path, "r.nc", None, age=60.0),  # an older version's, recent
            temporary(tmp_path, "q.nc", (host, dead_pid())),  # another target's
            tmp_path / ".r.nc.notours.tmp"]
    keep[-1].write_bytes(b"")
    pmp.save(small, tmp_path / "r.nc")
    assert not dead.exists() and not old.exists() and not old_elsewhere.exists()
    assert all(p.exists() for p in keep)
    assert sorted(os.listdir(tmp_path)) == sorted(["r.nc"] + [p.name for p in keep])
    pmp.load(tmp_path / "r.nc")


def _save_repeatedly(result, path, times, seed):
    rng = np.random.default_rng(seed)
    for _ in range(times):
        out = compat.add_groups(result, {"mark": xr.Dataset({"v": ("k", rng.normal(size=50))})}, overwrite=True)
        pmp.save(out, path)


def test_concurrent_writers_of_one_target_all_succeed(small, tmp_path):
    """Processes saving the same path at once: each save succeeds (the cleanup never removes a
    live writer's temporary), the file left is one of them, whole, and no temporary remains."""
    import multiprocessing  # noqa: PLC0415

    path = tmp_path / "shared.nc"
    ctx = multiprocessing.get_context("fork")
    workers = [ctx.Process(target=_save_repeatedly, args=(small, path, 4, seed)) for seed in range(3)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(300)
    assert [w.exitcode for w in workers] == [0, 0, 0]
    assert os.listdir(tmp_path) == ["shared.nc"]
    assert compat.posterior_dataset(pmp.load(path), "mark")["v"].size == 50


def _save_then_wait(result, path, ready, handler):
    """Child: save, with the file written and the temporary not yet renamed, tell the parent and wait."""
    import signal  # noqa: PLC0415
    import time  # noqa: PLC0415

    if handler == "raises":
        def stop(signum, frame):
            raise SystemExit(7)

        signal.signal(signal.SIGTERM, stop)
    real = files._write

    def write_and_wait(res, target, compress):
        real(res, target, compress)
        ready.set()
        time.sleep(60)

    files._write = write_and_wait
    pmp.save(result, path)


@pytest.mark.parametrize("handler, exitcode", [("default", -15), ("raises", 7)])
def test_sigterm_during_a_save_removes_its_temporary(small, tmp_path, handler, exitcode):
    """SIGTERM used to leave the temporary behind. With the default action the process still
    ends by SIGTERM; a handler of the program's own runs (here it exits with 7)."""
    import multiprocessing  # noqa: PLC0415
    import signal  # noqa: PLC0415

    path = tmp_path / "r.nc"
    pmp.save(small, path)
    before = path.read_bytes()
    ctx = multiprocessing.get_context("fork")
    ready = ctx.Event()
    child = ctx.Process(target=_save_then_wait, args=(with_w2(small), path, ready, handler))
    child.start()
    try:
        assert ready.wait(120), "the child did not reach the write"
        assert len(os.listdir(tmp_path)) == 2  # the file and the temporary
        os.kill(child.pid, signal.SIGTERM)
        child.join(60)
    finally:
        if child.is_alive():
            child.kill()
    assert child.exitcode == exitcode
    assert os.listdir(tmp_path) == ["r.nc"] and path.read_bytes() == before


def test_the_sigterm_handler_is_restored_after_a_save(small, tmp_path):
    import signal  # noqa: PLC0415

    def mine(signum, frame):
        pass

    old = signal.signal(signal.SIGTERM, mine)
    try:
        pmp.save(small, tmp_path / "r.nc")
        assert signal.getsignal(signal.SIGTERM) is mine
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # an ignored SIGTERM stays ignored, untouched
        pmp.save(small, tmp_path / "r.nc")
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGTERM, old)


def data_chunks(path):
    """(dataset name, file offset of its data) of every numeric dataset with data in an HDF5 file
    (its first chunk when chunked)."""
    import h5py  # noqa: PLC0415

    out = []

    def visit(name, obj):
        if not isinstance(obj, h5py.Dataset) or obj.dtype.kind not in "biuf" or obj.size == 0:
            return
        if obj.chunks is not None and obj.id.get_num_chunks():
            out.append((name, obj.id.get_chunk_info(0).byte_offset))
        elif obj.chunks is None and obj.id.get_offset() is not None:
            out.append((name, obj.id.get_offset()))

    with h5py.File(path, "r") as f:
        f.visititems(visit)
    return out


def flipped(data: bytes, at: int) -> bytes:
    bad = bytearray(data)
    bad[at] ^= 0xFF
    return bytes(bad)


def identical(a, b) -> bool:
    groups = compat.group_names(a)
    return groups == compat.group_names(b) and a.attrs == b.attrs and all(
        compat.posterior_dataset(a, g).identical(compat.posterior_dataset(b, g)) for g in groups)


@pytest.mark.parametrize("compress", [False, True])
def test_damaged_files_are_refused_naming_the_path(small, tmp_path, compress):
    """A byte flipped anywhere in a file pmp.save wrote: pmp.load raises a ValueError naming the
    path, before HDF5 parses a damaged byte (which can make it loop), or (a byte of the checksum
    line's prefix: the line is then ignored) gives back exactly what was saved. It used to raise
    h5py's KeyError without the path for damaged metadata, and with compress=False to load a
    damaged data byte as another value."""
    from pymc_partitions.results import files  # noqa: PLC0415

    good_path = pmp.save(small, tmp_path / "good.nc", compress=compress)
    good = Path(good_path).read_bytes()
    original = pmp.load(good_path)
    chunks = {at for _, at in data_chunks(good_path)}
    assert len(chunks) >= 10
    prefix = range(len(good) - files._CHECKSUM_LENGTH, len(good) - files._CHECKSUM_LENGTH + len(files._CHECKSUM_PREFIX))
    bad_path = tmp_path / "bad.nc"
    refused = 0
    for at in sorted(set(range(0, len(good), len(good) // 97)) | chunks | {len(good) - 2, prefix[3]}):
        bad_path.write_bytes(flipped(good, at))
        try:
            back = pmp.load(bad_path)
        except ValueError as err:
            assert f"pmp.load: '{bad_path}' is damaged" in str(err)
            refused += 1
            continue
        assert at in prefix and identical(back, original), f"a damaged byte at {at} was not detected"
    assert refused >= 100


@pytest.mark.parametrize("compress", [False, True])
def test_damaged_data_are_refused_without_the_checksum_line(small, tmp_path, compress):
    """A file with no checksum line (pmp.save's, rewritten by another program through HDF5, which
    drops it): a damaged byte inside any variable's data fails its HDF5 Fletcher-32 checksum."""
    from pymc_partitions.results import files  # noqa: PLC0415

    good_path = pmp.save(small, tmp_path / "good.nc", compress=compress)
    good = Path(good_path).read_bytes()
    if files.verify_checksum(good_path):
        good = good[:-files._CHECKSUM_LENGTH]
    plain = tmp_path / "plain.nc"
    plain.write_bytes(good)
    assert identical(pmp.load(plain), pmp.load(good_path))
    chunks = data_chunks(plain)
    assert len(chunks) >= 10
    for name, at in chunks:
        plain.write_bytes(flipped(good, at))
        with pytest.raises(ValueError, match=rf"pmp.load: '{re.escape(str(plain))}' is damaged: OSError"):
            pmp.load(plain)


@pytest.mark.parametrize("at", [2425, 22989, 57424])
def test_damaged_metadata_of_other_files_are_value_errors_naming_the_path(tmp_path, at):
    """Files without the checksum line (other writers, earlier versions): damaged metadata used to
    raise h5py's KeyError, a JSONDecodeError or a KeyError of the attribute decoder, without the
    path (byte offsets of tests/data/result_pymc5.nc that did so)."""
    bad = tmp_path / "bad.nc"
    bad.write_bytes(flipped((DATA / "result_pymc5.nc").read_bytes(), at))
    with pytest.raises(ValueError, match=rf"pmp.load: '{re.escape(str(bad))}' (is damaged|is not a netCDF4)"):
        pmp.load(bad)


def test_attribute_types_survive_the_round_trip(small, tmp_path):
    """Root, group and variable attributes: lists stay lists (one-element ones too), bools bools,
    tuples, dicts, None, arrays of any shape and dtype."""
    extra = xr.Dataset({"v": ("k", [1.0, 2.0], dict(ATTRS))}, attrs=dict(ATTRS))
    out = compat.add_groups(small, {"extra": extra})
    out.attrs.update(ATTRS)
    back = pmp.load(pmp.save(out, tmp_path / "attrs.nc"))
    got = compat.posterior_dataset(back, "extra")
    assert changed(ATTRS, back.attrs) == {}
    assert changed(ATTRS, got.attrs) == {}
    assert changed(ATTRS, got["v"].attrs) == {}
    assert changed(dict(compat.posterior_dataset(small).attrs), compat.posterior_dataset(back).attrs) == {}
    assert out.attrs["one_name"] == ["z"] and "one_name" not in small.attrs  # the input is not changed


def test_w2_group_survives_the_round_trip(dpmm, tmp_path):
    model, idata = dpmm
    out = with_w2(idata, model=model)
    back = pmp.load(pmp.save(out, tmp_path / "w2.nc"))
    attrs = dict(compat.posterior_dataset(back, "w2_convergence").attrs)
    assert changed(dict(out["w2_convergence"].attrs), attrs) == {} and attrs["partition_vars"] == ["z"]


@pytest.mark.parametrize("line", [5, 6])
def test_files_of_either_pymc_line_load(line):
    """Files written by tests/data/make_result_files.py under PyMC 5 (InferenceData) and PyMC 6
    (DataTree) load under the installed line with their data and attribute types."""
    back = pmp.load(DATA / f"result_pymc{line}.nc")
    assert type(back).__name__ == ("DataTree" if compat.RESULT_IS_DATATREE else "InferenceData")
    assert {"posterior", "observed_data", "extra", "w2_convergence"} <= set(compat.group_names(back))
    extra = compat.posterior_dataset(back, "extra")
    assert changed(ATTRS, back.attrs) == {} and changed(ATTRS, extra.attrs) == {}
    np.testing.assert_array_equal(extra["v"].values, [1.0, 2.0])
    w2 = compat.posterior_dataset(back, "w2_convergence")
    assert w2.attrs["partition_vars"] == ["z"] and w2.attrs["continuous_vars"] == ["mu"]
    assert compat.posterior_dataset(back)["z"].dtype == np.int64
    assert compat.posterior_dataset(back).attrs["inference_library_version"].startswith(f"{line}.")
