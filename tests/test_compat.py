"""Tests for pymc_partitions.pymc.compat on the installed PyMC (5 or 6)."""

import numpy as np
import pymc as pm
import pytest
import xarray as xr

import pymc_partitions as pmp
from pymc_partitions.pymc import compat, guards
from pymc_partitions.results import files


@pytest.fixture(scope="module")
def result():
    with pm.Model():
        pm.Normal("x", 0.0, 1.0)
        return pm.sample(
            draws=20,
            tune=20,
            chains=1,
            cores=1,
            progressbar=False,
            compute_convergence_checks=False,
            random_seed=123,
        )


def _extra():
    ds = xr.Dataset(
        {
            "n_clusters": (("chain", "draw"), np.arange(20, dtype=np.int64)[None, :]),
            "coclustering": (("i", "j"), np.eye(3)),
        },
        coords={"chain": [0], "draw": np.arange(20)},
        attrs={"method": "gibbs", "n_sweeps": 7},
    )
    return ds


def test_versions_and_classes():
    import pymc.step_methods as sm
    from pymc.step_methods.compound import Competence

    assert compat.PYMC_MAJOR == int(pm.__version__.split(".")[0])
    assert compat.PYMC_MAJOR in (5, 6)
    assert compat.ARVIZ_MAJOR == (1 if compat.PYMC_MAJOR >= 6 else 0)
    assert compat.STEP_METHODS is sm.STEP_METHODS  # same list pm.sample consults
    assert compat.BlockedStep is sm.BlockedStep
    assert compat.CompoundStep is sm.CompoundStep
    assert compat.Competence is Competence
    assert compat.Competence.IDEAL > compat.Competence.COMPATIBLE
    expected = "setup_chain" if compat.PYMC_MAJOR >= 6 else "set_rng"
    assert compat.RNG_PROTOCOL == expected
    assert hasattr(sm.BlockedStep, expected)


def test_result_type(result):
    assert compat.is_datatree(result) is compat.RESULT_IS_DATATREE
    assert compat.is_inferencedata(result) is (not compat.RESULT_IS_DATATREE)
    assert not compat.is_datatree(xr.Dataset())
    names = compat.group_names(result)
    assert "posterior" in names and "sample_stats" in names
    assert all("/" not in n for n in names)
    post = compat.posterior_dataset(result)
    assert isinstance(post, xr.Dataset)
    assert post["x"].shape == (1, 20)
    assert isinstance(compat.posterior_dataset(result, "sample_stats"), xr.Dataset)
    with pytest.raises(KeyError):
        compat.posterior_dataset(result, "nope")
    with pytest.raises(TypeError):
        compat.group_names({"posterior": post})


def test_add_groups_does_not_mutate(result):
    before = compat.group_names(result)
    out = compat.add_groups(result, {"partition_summary": _extra()})
    assert type(out) is type(result)
    assert compat.group_names(result) == before
    assert compat.group_names(out) == before + ["partition_summary"]
    got = compat.posterior_dataset(out, "partition_summary")
    np.testing.assert_array_equal(got["n_clusters"].values, np.arange(20)[None, :])
    np.testing.assert_array_equal(
        compat.posterior_dataset(out)["x"].values, compat.posterior_dataset(result)["x"].values
    )
    with pytest.raises(ValueError, match="already exist"):
        compat.add_groups(out, {"partition_summary": _extra()})
    replaced = compat.add_groups(
        out, {"partition_summary": _extra().assign(k=1.0)}, overwrite=True
    )
    assert "k" in compat.posterior_dataset(replaced, "partition_summary")
    assert "k" not in compat.posterior_dataset(out, "partition_summary")
    with pytest.raises(ValueError, match="no data variables"):
        compat.add_groups(result, {"empty": xr.Dataset(attrs={"a": 1})})


def test_arguments_are_checked(result):
    with pytest.raises(TypeError, match="group must be a group name"):
        compat.posterior_dataset(result, 0)
    with pytest.raises(TypeError, match="add_groups: overwrite must be True or False"):
        compat.add_groups(result, {"partition_summary": _extra()}, overwrite="yes")
    with pytest.raises(TypeError, match="pmp.save: compress must be True or False"):
        files.save(result, "never-written.nc", compress=1)
    with pytest.raises(TypeError, match="pmp.save: path must be a str or os.PathLike"):
        files.save(result, None)


def test_save_load_round_trip(result, tmp_path):
    out = compat.add_groups(result, {"partition_summary": _extra()})
    post_attrs = dict(compat.posterior_dataset(out).attrs)
    for compress in (True, False):
        path = tmp_path / f"res_{compress}.nc"
        assert files.save(out, path, compress=compress) == str(path)
        back = files.load(path)
        assert type(back) is type(result)
        assert compat.group_names(back) == compat.group_names(out)
        got = compat.posterior_dataset(back, "partition_summary")
        assert got.attrs["method"] == "gibbs"
        assert got.attrs["n_sweeps"] == 7 and type(got.attrs["n_sweeps"]) is int
        assert got["n_clusters"].dtype == np.int64
        np.testing.assert_array_equal(got["coclustering"].values, np.eye(3))
        xr.testing.assert_allclose(compat.posterior_dataset(back), compat.posterior_dataset(out))
        back_post_attrs = compat.posterior_dataset(back).attrs
        assert set(back_post_attrs) == set(post_attrs)
        assert back_post_attrs["inference_library"] == "pymc"
    # file closed after load: it can be overwritten
    files.save(back, tmp_path / "res_True.nc")
    assert "partition_summary" in compat.group_names(files.load(tmp_path / "res_True.nc"))


def test_root_attrs_survive(result, tmp_path):
    out = compat.add_groups(result, {"partition_summary": _extra()})
    out.attrs["pymc_partitions_version"] = "0.1.0"
    assert "pymc_partitions_version" not in result.attrs
    back = files.load(files.save(out, tmp_path / "r.nc"))
    assert back.attrs["pymc_partitions_version"] == "0.1.0"


class _Step(compat.ChainSetupMixin, compat.BlockedStep):
    """Minimal step (bypasses BlockedStep.__new__/__init__ machinery)."""

    def __new__(cls):
        return object.__new__(cls)

    def __init__(self):
        self.resets = []

    def reset_chain(self, tune, draws):
        self.resets.append((tune, draws))

    def step(self, point):  # pragma: no cover - not sampled here
        return point, []


def test_rng_protocol():
    s = _Step()
    s.set_rng(np.random.default_rng(1))  # PyMC 5 entry point
    assert isinstance(s.rng, np.random.Generator) and s.resets == [(None, None)]
    s.setup_chain(np.random.default_rng(1), 5, 10)  # PyMC 6 entry point
    assert s.resets[-1] == (5, 10)
    a = s.rng.random()
    compat.setup_chain(s, 1, tune=3, draws=4)
    assert s.resets[-1] == (3, 4)
    assert s.rng.random() == a  # same seed -> same stream


def test_the_entry_point_guards_are_in_place_and_fail_safe(monkeypatch):
    """The wrappers of PyMC functions that refuse partitions (compat differences 10-12) are installed,
    wrap PyMC's own functions with the parameters they rely on, and are looked up where PyMC calls
    them: this fails if PyMC renames or moves one of them. A function that changed is left alone
    (the guard reports False)."""
    import inspect  # noqa: PLC0415

    import pymc.sampling.mcmc as mcmc  # noqa: PLC0415
    import pymc.smc.sampling as smc_sampling  # noqa: PLC0415
    import pymc.tuning.starting as starting  # noqa: PLC0415
    from pymc.smc.kernels import SMC_KERNEL  # noqa: PLC0415

    assert guards.guard_step_assignment() and guards.guard_smc() and guards.guard_find_map()  # idempotent
    assign = mcmc.assign_step_methods
    assert assign._pmp_guard and not getattr(assign.__wrapped__, "_pmp_guard", False)
    assert list(inspect.signature(assign.__wrapped__).parameters)[:2] == ["model", "step"]
    assert "assign_step_methods" in mcmc.sample.__code__.co_names  # pm.sample looks it up at call time
    init = SMC_KERNEL.__init__
    assert init._pmp_guard and "model" in inspect.signature(init.__wrapped__).parameters
    assert "kernel" in inspect.signature(smc_sampling.sample_smc).parameters
    assert pm.find_MAP is starting.find_MAP and pm.find_MAP._pmp_guard
    find_map_params = set(inspect.signature(pm.find_MAP.__wrapped__).parameters)
    assert {"vars", "model"} <= find_map_params and ("start" if compat.PYMC_MAJOR < 6 else "initvals") in find_map_params

    def renamed(mdl, steps=None, methods=None):  # a PyMC whose function changed
        raise AssertionError("not to be called")

    monkeypatch.setattr(mcmc, "assign_step_methods", renamed)
    assert guards.guard_step_assignment() is False and mcmc.assign_step_methods is renamed


def test_guarded_pymc_functions_keep_their_signatures():
    """The wrappers of guards.py whose own tests would not name the PyMC change: the starting-value
    check (a PyMC without ``make_initial_point_expression`` would install nothing, silently, and a
    value 0.5 would become label 0 again), the convergence checks and the log density behind
    ``pm.compute_log_likelihood``. Fails if PyMC renames them, changes their parameters or stops
    looking them up at call time."""
    import inspect  # noqa: PLC0415

    import pymc.initial_point as initial_point  # noqa: PLC0415
    import pymc.sampling.mcmc as mcmc  # noqa: PLC0415
    import pymc.stats.log_density as log_density  # noqa: PLC0415

    make = initial_point.make_initial_point_expression
    assert make._pmp_guard and not getattr(make.__wrapped__, "_pmp_guard", False)
    assert "initval_strategies" in inspect.signature(make.__wrapped__).parameters
    assert "make_initial_point_expression" in initial_point.make_initial_point_fn.__code__.co_names
    checks = mcmc.run_convergence_checks
    assert checks._pmp_guard and list(inspect.signature(checks.__wrapped__).parameters)[:2] == ["idata", "model"]
    callers = [inspect.unwrap(mcmc.sample), getattr(mcmc, "_sample_return", None)]  # where pm.sample calls it
    assert any("run_convergence_checks" in f.__code__.co_names for f in callers if f is not None)
    density = log_density.compute_log_density
    assert density._pmp_loo and density.__wrapped__.__module__ == "pymc.stats.log_density"
    assert {"idata", "var_names", "extend_inferencedata", "model", "kind", "sample_dims"} <= set(
        inspect.signature(density.__wrapped__).parameters)
    assert "compute_log_density" in inspect.unwrap(pm.compute_log_likelihood).__code__.co_names
    with pm.Model():
        z = pmp.Partition("z", pmp.CRP(1.0), n=4)
        with pytest.raises(TypeError, match="labels must be integers") as refused:
            pm.sample(draws=1, tune=0, chains=1, initvals={"z": [0.0, 0.5, 1.0, 0.0]}, progressbar=False)
    assert z.name == "z" and any(entry.name == "make_initial_point_expression" for entry in refused.traceback)
