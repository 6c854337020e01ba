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
from pymc_partitions.pymc.diagnostics import is_canonical
from pymc_partitions.pymc.results import PARTITIONS_ATTR
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
    real_write = compat._write

    def write_then_interrupt(result, target, compress):
        real_write(result, target, compress)
        raise KeyboardInterrupt

    monkeypatch.setattr(compat, "_write", write_then_interrupt)
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
