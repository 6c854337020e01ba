"""Partition summaries on pm.sample results (InferenceData under PyMC 5, DataTree under PyMC 6):
which variable is the partition, the ``clustering`` group and its round trip through pmp.save /
pmp.load, agreement with the array functions, ArviZ convergence checks on the traces, plots."""

import logging
import warnings

import arviz as az
import matplotlib
import numpy as np
import pytest
import xarray as xr

import pymc_partitions as pmp
from pymc_partitions.pymc import compat
from pymc_partitions.pymc.compat import group_names, is_datatree, posterior_dataset
from test_w2_convergence import sampled_dpmm

matplotlib.use("Agg")


@pytest.fixture(scope="module")
def dpmm():
    """30 galaxies, 2 chains x 40 draws of pm.sample (CollapsedGibbs on z, NUTS on mu)."""
    logging.getLogger("pymc").setLevel(logging.ERROR)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return sampled_dpmm(chains=2, draws=40, n=30, gibbs_step=True)


def labels_of(idata, name="z"):
    return posterior_dataset(idata)[name].values.reshape(-1, posterior_dataset(idata)[name].shape[-1])


def test_clustering_group_matches_the_array_functions_and_survives_save_load(dpmm, tmp_path):
    model, idata = dpmm
    out = pmp.summarize_clustering(idata, model=model, random_seed=3)
    assert type(out) is type(idata) and "clustering" in group_names(out) and "clustering" not in group_names(idata)
    group = posterior_dataset(out, "clustering")
    draws = labels_of(idata)
    est = pmp.point_estimate(draws, random_seed=3)
    np.testing.assert_array_equal(group["estimate"].values, est.labels)
    assert float(group["expected_loss"]) == pytest.approx(est.expected_loss)
    ball = pmp.credible_ball(draws, est)
    assert float(group["credible_ball_radius"]) == ball.radius
    np.testing.assert_array_equal(group["upper_vertical"].values, ball.upper_vertical)
    np.testing.assert_array_equal(group["horizontal"].values, ball.horizontal)
    traces = pmp.partition_traces(idata, reference=est, model=model)
    assert group["vi_to_estimate"].dims == ("chain", "draw")
    np.testing.assert_allclose(group["vi_to_estimate"].values, traces["vi"].values)
    np.testing.assert_array_equal(group["n_clusters"].values, posterior_dataset(idata, "sample_stats")["n_clusters"])
    np.testing.assert_allclose(group["coclustering"].values, pmp.coclustering(idata).values, atol=1e-6)
    attrs = group.attrs
    assert attrs["loss"] == "vi" and attrs["method"] == "salso" and attrs["partition_var"] == "z"
    assert attrs["partition_source"] == "model argument" and attrs["level"] == 0.95
    assert attrs["settings"]["runs"] == 16 and attrs["settings"]["random_seed"] == 3
    assert attrs["search"]["runs_completed"] == 16
    back = pmp.load(pmp.save(out, tmp_path / "clustered.nc"))
    loaded = posterior_dataset(back, "clustering")
    xr.testing.assert_allclose(loaded.reset_coords(drop=True), group.reset_coords(drop=True))
    assert loaded.attrs["settings"] == attrs["settings"] and loaded.attrs["search"] == attrs["search"]
    assert isinstance(loaded.attrs["search"]["run_losses"], list)
    with pytest.raises(ValueError, match="already has a 'clustering' group; pass overwrite=True"):
        pmp.summarize_clustering(out, model=model)
    small = pmp.summarize_clustering(out, model=model, loss="omari", level=0.8, coclustering_max_items=10,
                                     method="draws", overwrite=True)
    group = posterior_dataset(small, "clustering")
    assert "coclustering" not in group and "item_other" not in group.coords
    assert group.attrs["ball_loss"] == "vi" and group.attrs["method"] == "draws"
    assert group.attrs["search"]["draw_index"] in range(draws.shape[0])


def test_traces_feed_arviz_convergence_checks(dpmm):
    model, idata = dpmm
    traces = pmp.partition_traces(idata, model=model)
    rhat = az.rhat(traces)
    ess = az.ess(traces)
    for name in ("n_clusters", "largest_cluster"):
        assert np.isfinite(float(rhat[name])) and float(ess[name]) > 0


def test_which_variable_is_the_partition(dpmm):
    model, idata = dpmm
    reference = pmp.coclustering(idata, model=model).values
    with model:
        np.testing.assert_array_equal(pmp.coclustering(idata).values, reference)  # model in context
    np.testing.assert_array_equal(pmp.coclustering(idata).values, reference)  # canonical labels
    np.testing.assert_array_equal(pmp.coclustering(idata, var_name="z").values, reference)
    out = pmp.summarize_clustering(idata, var_name="z", runs=2, random_seed=0)
    assert posterior_dataset(out, "clustering").attrs["partition_source"] == "var_name argument"
    with pytest.raises(ValueError, match=r"var_name 'nope' is not in the posterior"):
        pmp.coclustering(idata, var_name="nope")
    with pytest.raises(TypeError, match="var_name must be a variable name"):
        pmp.coclustering(idata, var_name=3)
    with pytest.raises(TypeError, match="model must be a pymc.Model"):
        pmp.coclustering(idata, model="model")
    with pytest.raises(TypeError, match="expected a pm.sample result"):
        pmp.summarize_clustering(labels_of(idata))
    with pytest.raises(TypeError, match="overwrite must be True or False"):
        pmp.summarize_clustering(idata, overwrite="yes")


def hand_made(**variables):
    coords = {"chain": [0, 1], "draw": np.arange(3)}
    ds = xr.Dataset({k: (("chain", "draw", f"{k}_dim_0"), v) for k, v in variables.items()}, coords=coords)
    return compat.new_result({"posterior": ds})


def test_ambiguous_or_missing_partitions_are_refused_with_a_remedy():
    z = np.array([[[0, 0, 1, 2], [0, 1, 1, 2], [0, 0, 0, 1]], [[0, 1, 2, 2], [0, 0, 1, 1], [0, 1, 2, 3]]])
    counts = z[..., ::-1] + 3  # integer vectors that are not canonical labels
    result = hand_made(z=z, k=counts)
    with pytest.raises(ValueError, match=r"variable 'k' holds integer vectors that are not canonical.*var_name="):
        pmp.coclustering(result)
    np.testing.assert_array_equal(pmp.coclustering(result, var_name="z").values, pmp.coclustering(z).values)
    # any labelling is a partition when named
    np.testing.assert_array_equal(pmp.coclustering(result, var_name="k").values, pmp.coclustering(counts).values)
    with pytest.raises(ValueError, match=r"several partition variables \['z', 'w'\].*var_name="):
        pmp.point_estimate(hand_made(z=z, w=z.copy()))
    only_numbers = compat.new_result({"posterior": xr.Dataset(
        {"mu": (("chain", "draw"), np.zeros((2, 3)))}, coords={"chain": [0, 1], "draw": np.arange(3)})})
    with pytest.raises(ValueError, match="no partition variable"):
        pmp.credible_ball(only_numbers, [0, 0])
    with pytest.raises(ValueError, match="non-integer"):
        pmp.coclustering(hand_made(z=z + 0.5), var_name="z")
    traces = pmp.partition_traces(result, var_name="z")
    assert traces.sizes == {"chain": 2, "draw": 3}
    np.testing.assert_array_equal(traces["n_clusters"].values, [[3, 3, 2], [3, 2, 4]])


def test_plots_on_results(dpmm):
    import matplotlib.pyplot as plt  # noqa: PLC0415

    model, idata = dpmm
    out = pmp.summarize_clustering(idata, model=model, runs=4, random_seed=1)
    group = posterior_dataset(out, "clustering")
    ax = pmp.plot_coclustering(out)
    image = ax.get_images()[0].get_array()
    order = np.argsort(-np.bincount(group["estimate"].values)[group["estimate"].values], kind="stable")
    assert image.shape == (30, 30) and np.allclose(np.diag(image), 1.0)
    assert len(ax.lines) == 2 * (int(group["estimate"].max())) and order.size == 30
    ax = pmp.plot_n_clusters(idata, model=model)
    assert len(ax.patches) >= 1 and ax.get_legend() is not None
    y = pmp.datasets.load_galaxies()[:30] / 1000.0
    assert pmp.plot_clustering(y, group["estimate"].values).get_title().startswith("Point estimate")
    ball = pmp.credible_ball(idata, group["estimate"].values, model=model)
    axes = pmp.plot_credible_ball(y, ball)
    assert len(axes) == 4
    _, given = plt.subplots()
    assert pmp.plot_coclustering(idata, estimate=group["estimate"].values, ax=given, colorbar=False) is given
    plt.close("all")


def test_result_type_is_kept(dpmm):
    _, idata = dpmm
    out = pmp.summarize_clustering(idata, runs=2, random_seed=0)
    assert is_datatree(out) == is_datatree(idata)
