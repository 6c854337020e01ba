"""What the summaries show: a label-invariant quantity that is constant (every draw one block) is
reported as constant, quietly, by pmp.summary and by pm.sample's convergence checks; interval bounds
are displayed at the precision of the sd on ArviZ 1.x (not -2700 and -2700 for a log joint); a point
estimate's repr says how many cluster sizes it leaves out; data with more than two columns are
plotted on their first two principal components."""

import logging
import warnings

import matplotlib
import numpy as np
import pymc as pm
import pytest
import xarray as xr

import pymc_partitions as pmp
from pymc_partitions.pymc import compat

matplotlib.use("Agg")

CHAINS, DRAWS = 2, 400


def hand_made(**variables):
    ds = xr.Dataset({k: (("chain", "draw"), np.asarray(v, float)) for k, v in variables.items()},
                    coords={"chain": np.arange(CHAINS), "draw": np.arange(DRAWS)})
    return compat.new_result({"posterior": ds})


def shown(table, row, column):
    """The string ArviZ displays for one cell (ArviZ 1.x formats its own; 0.x shows the number)."""
    fmt = getattr(table, "_fmt_map", None)
    if isinstance(fmt, dict) and row in fmt.get(column, {}):
        return fmt[column][row]
    return f"{float(table.loc[row, column]):g}"


def interval_columns(table):
    return [c for c in table.columns if c.endswith("_lb") or c.startswith("hdi_")][:1] + \
        [c for c in table.columns if c.endswith("_ub") or c.startswith("hdi_")][-1:]


def test_every_draw_one_block_samples_and_summarises_quietly():
    """Every draw one block and no other free variable: pm.sample's convergence checks failed with
    "max() arg is an empty sequence"; pmp.summary warned "invalid value encountered"."""
    logging.getLogger("pymc").setLevel(logging.ERROR)
    with pm.Model(), warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        z = pmp.Partition("z", pmp.CRP(1e-3), n=10)
        pmp.NormalNormal("y", partition=z, mu0=0.0, sigma0=1.0, sigma=1.0, observed=np.full(10, 1.5))
        idata = pm.sample(draws=100, tune=10, chains=2, cores=1, random_seed=1, progressbar=False)
        table = pmp.summary(idata)
    assert (compat.posterior_dataset(idata)["z"].values == 0).all()
    assert table.attrs["constant"] == ["z_n_clusters", "z_largest_share", "log_joint"]
    assert shown(table, "z_largest_share", "mean") == "1" and shown(table, "z_largest_share", "sd") == "0"
    assert np.isnan(float(table.loc["z_largest_share", "r_hat"]))


def test_a_constant_is_quiet_and_the_rest_still_warns():
    rng = np.random.default_rng(0)
    log_joint = -2720.0 + 2.6 * rng.normal(size=(CHAINS, DRAWS))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        table = pmp.summary(hand_made(share=np.full((CHAINS, DRAWS), 0.5), lj=log_joint), partitions=[])
    assert table.attrs["constant"] == ["share"]
    assert shown(table, "share", "mean") == "0.5"  # ArviZ 1.x showed 0 (decimals from an MCSE of 0)
    assert float(table.loc["lj", "sd"]) > 2
    # a variable constant within each chain but not across them is a convergence failure: ArviZ's
    # warning about it is not silenced with the constant's
    stuck = np.repeat([[1.0], [2.0]], DRAWS, axis=1)
    with pytest.warns(RuntimeWarning, match="invalid value encountered"):
        table = pmp.summary(hand_made(share=np.full((CHAINS, DRAWS), 0.5), stuck=stuck), partitions=[])
    assert list(table.index) == ["share", "stuck"] and table.attrs["constant"] == ["share"]
    assert float(table.loc["stuck", "r_hat"]) > 1e3 and shown(table, "share", "mean") == "0.5"


def test_interval_bounds_of_a_log_joint_are_told_apart():
    """ArviZ 1.x rounded each bound to two significant digits: -2724.6 and -2715.8 both showed as -2700."""
    rng = np.random.default_rng(1)
    table = pmp.summary(hand_made(lj=-2720.0 + 2.6 * rng.normal(size=(CHAINS, DRAWS))), partitions=[])
    low, high = interval_columns(table)
    assert float(table.loc["lj", low]) < float(table.loc["lj", high])
    lo, hi = shown(table, "lj", low), shown(table, "lj", high)
    assert lo != hi and float(lo) == pytest.approx(float(table.loc["lj", low]), abs=0.06)
    assert float(hi) == pytest.approx(float(table.loc["lj", high]), abs=0.06)


def test_point_estimate_repr_says_what_it_leaves_out():
    est = pmp.point_estimate(np.tile(np.arange(20), (3, 1)), random_seed=0)
    assert repr(est).endswith("sizes=[1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, ... (8 more)])")
    assert repr(pmp.point_estimate(np.array([[0, 0, 1]] * 3))).endswith("sizes=[2, 1])")


def test_more_than_two_columns_are_plotted_on_principal_components():
    rng = np.random.default_rng(2)
    x = np.r_[rng.normal(0.0, 1.0, (10, 5)), rng.normal(4.0, 1.0, (10, 5))] * [1.0, 2.0, 0.5, 1.0, 3.0]
    truth = np.repeat([0, 1], 10)
    draws = np.array([truth] * 8 + [np.r_[truth[:-1], 2]] * 2)
    ball = pmp.credible_ball(draws, truth, level=0.9)
    axes = pmp.plot_credible_ball(x, ball)
    ax = pmp.plot_clustering(x, truth)
    # the plotted points are the centred data on the two leading eigenvectors of its covariance
    values, vectors = np.linalg.eigh(np.cov(x, rowvar=False))
    expected = (x - x.mean(axis=0)) @ vectors[:, ::-1][:, :2]
    for a, labels in ((ax, truth), (axes[0], ball.estimate), (axes[3], ball.horizontal)):
        points = np.concatenate([c.get_offsets() for c in a.collections])  # cluster by cluster
        items = np.concatenate([np.flatnonzero(labels == b) for b in range(labels.max() + 1)])
        plotted = np.empty_like(points)
        plotted[items] = points
        signs = np.sign((plotted * expected).sum(axis=0))  # a component's sign is a convention
        np.testing.assert_allclose(plotted, expected * signs, atol=1e-9)
        share = values[::-1] / values.sum()
        assert a.get_xlabel() == f"PC 1 ({share[0]:.0%} of the variance of 5 columns)"
        assert a.get_ylabel() == f"PC 2 ({share[1]:.0%} of the variance of 5 columns)"
    with pytest.raises(ValueError, match="data has 3 rows but the clustering has 20 items"):
        pmp.plot_clustering(x[:3], truth)
    import matplotlib.pyplot as plt  # noqa: PLC0415

    plt.close("all")


def test_a_partition_left_out_of_the_trace_is_named():
    """pm.sample(var_names=["alpha"]) keeps no trace of the partition: pmp.summary summarised alpha
    alone without a word. With the model (argument or context) it now says the partition is missing;
    with its number of clusters kept, or without a model to know of it, it stays quiet."""
    logging.getLogger("pymc").setLevel(logging.ERROR)
    y = np.array([-2.0, -1.6, 0.1, 1.7, 2.2])
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 2.0, 1.0)
        z = pmp.Partition("z", pmp.CRP(alpha), n=5)
        pmp.NormalNormal("y", partition=z, mu0=0.0, sigma0=2.0, sigma=0.7, observed=y)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            alone = pm.sample(draws=50, tune=20, chains=2, cores=1, progressbar=False, random_seed=1,
                              var_names=["alpha"], compute_convergence_checks=False)
            with_k = pm.sample(draws=50, tune=20, chains=2, cores=1, progressbar=False, random_seed=1,
                               var_names=["alpha", "z_n_clusters"], compute_convergence_checks=False)
        with pytest.warns(UserWarning, match=r"partition 'z' is not in the posterior.*var_names"):
            assert list(pmp.summary(alone).index) == ["alpha"]
    with pytest.warns(UserWarning, match=r"partition 'z' is not in the posterior"):
        pmp.summary(alone, model=model)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        assert "z_n_clusters" in list(pmp.summary(with_k, model=model).index)
        pmp.summary(alone)  # no model: nothing says a partition was sampled
