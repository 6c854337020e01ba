"""A pm.sample result records which of its variables are partitions (the posterior's attribute
``pmp_partitions``), so every summary works on it without a model: when every draw has at most two
clusters (labels only 0 and 1, which the draws alone cannot tell from an indicator vector), saved
and reloaded with pmp.save / pmp.load and az.to_netcdf / az.from_netcdf, on both lines."""

import logging
import warnings

import arviz as az
import matplotlib
import numpy as np
import pymc as pm
import pytest

import pymc_partitions as pmp
from pymc_partitions.pymc import compat
from pymc_partitions.results.reader import PARTITIONS_ATTR, recorded_partitions

matplotlib.use("Agg")

Y = np.r_[np.full(8, -5.0), np.full(8, 5.0)] + np.random.default_rng(0).normal(scale=0.3, size=16)


def quiet(fn, *args, **kwargs):
    logging.getLogger("pymc").setLevel(logging.ERROR)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return fn(*args, **kwargs)


@pytest.fixture(scope="module")
def two_blocks():
    """At most two clusters in every draw (finite Dirichlet with k = 2), next to a Bernoulli
    indicator vector starting with 0 (canonical 0/1 vectors too, but not a partition)."""
    with pm.Model() as model:
        z = pmp.Partition("z", pmp.FiniteDirichlet(1.0, 2), n=len(Y))
        pmp.NormalNormal("y", partition=z, mu0=0.0, sigma0=10.0, sigma=1.0, observed=Y)
        b = pm.Bernoulli("b", p=np.array([0.0, 0.5, 0.5]))
        idata = quiet(pm.sample, draws=40, tune=10, chains=2, cores=1, random_seed=1, progressbar=False,
                      step=[pmp.CollapsedGibbs([z]), pm.BinaryGibbsMetropolis([b])])
    return model, idata


def reloaded(idata, how, tmp_path):
    path = str(tmp_path / f"{how}.nc")
    if how == "pmp.save":
        pmp.save(idata, path)
        return pmp.load(path)
    idata.to_netcdf(path)
    result = az.from_netcdf(path)
    return result.load() if hasattr(result, "load") else result


def every_summary(result):
    """Each result-facing function, without a model."""
    table = pmp.summary(result)
    assert list(table.index)[:2] == ["z_n_clusters", "z_largest_share"] and "b" in str(list(table.index))
    assert "z" not in compat.posterior_dataset(pmp.label_invariant(result)).data_vars
    quiet(pmp.plot_trace, result)
    est = pmp.point_estimate(result, random_seed=0)
    np.testing.assert_array_equal(est.labels, np.repeat([0, 1], 8))
    assert pmp.coclustering(result).shape == (16, 16)
    assert pmp.credible_ball(result, est).radius >= 0.0
    assert pmp.partition_traces(result)["n_clusters"].values.max() <= 2
    group = compat.posterior_dataset(pmp.summarize_clustering(result, runs=2, random_seed=0), "clustering")
    assert group.attrs["partition_var"] == "z" and group.attrs["partition_source"] == "recorded in the result"
    pmp.plot_n_clusters(result)
    pmp.plot_coclustering(result, random_seed=0)
    w2 = quiet(pmp.w2_convergence, result)["w2_convergence"] if compat.is_inferencedata(result) else \
        compat.posterior_dataset(quiet(pmp.w2_convergence, result), "w2_convergence")
    assert w2.attrs["partition_vars"] == ["z"] and w2.attrs["continuous_vars"] == ["b"]
    import matplotlib.pyplot as plt  # noqa: PLC0415

    plt.close("all")


@pytest.mark.parametrize("how", ["as sampled", "pmp.save", "az.to_netcdf"])
def test_every_summary_works_without_a_model(two_blocks, how, tmp_path):
    _, idata = two_blocks
    labels = compat.posterior_dataset(idata)["z"].values
    assert labels.max() == 1  # the case the draws alone cannot decide
    result = idata if how == "as sampled" else reloaded(idata, how, tmp_path)
    posterior = compat.posterior_dataset(result)
    assert posterior.attrs[PARTITIONS_ATTR] == '["z"]' and recorded_partitions(posterior) == ["z"]
    every_summary(result)


def test_without_the_record_the_draws_cannot_decide(two_blocks):
    """What every summary said before the record (and says for a result from elsewhere)."""
    model, idata = two_blocks
    posterior = compat.posterior_dataset(idata).copy()
    del posterior.attrs[PARTITIONS_ATTR]
    bare = compat.add_groups(idata, {"posterior": posterior}, overwrite=True)
    with pytest.raises(ValueError, match=r"variable 'b' holds only 0/1 values.*cannot be told"):
        pmp.summary(bare)
    with pytest.raises(ValueError, match=r"variable '[bz]' holds only 0/1 values"):
        pmp.point_estimate(bare, random_seed=0)
    np.testing.assert_array_equal(pmp.point_estimate(bare, model=model, random_seed=0).labels, np.repeat([0, 1], 8))


def test_the_record_and_its_readers(two_blocks):
    model, idata = two_blocks
    posterior = compat.posterior_dataset(idata)
    assert list(posterior.data_vars)[-1] == "z"  # the labels still come last
    # the labels are gone from a label-invariant result, and it says so
    invariant = compat.posterior_dataset(pmp.label_invariant(idata))
    assert invariant.attrs[PARTITIONS_ATTR] == "[]" and recorded_partitions(invariant) == []
    # a record naming a variable the posterior does not hold (var_names=...) reads as the ones it holds
    assert recorded_partitions(posterior[["b"]]) == []
    # a damaged record is refused with the remedy; model= and partitions= still decide
    damaged = posterior.copy()
    damaged.attrs[PARTITIONS_ATTR] = "z"
    bad = compat.add_groups(idata, {"posterior": damaged}, overwrite=True)
    with pytest.raises(ValueError, match=r"attribute 'pmp_partitions' should be a JSON list.*Pass model="):
        pmp.coclustering(bad)
    assert pmp.coclustering(bad, model=model).shape == (16, 16)
    assert pmp.coclustering(bad, var_name="z").shape == (16, 16)
    # a model without a partition records nothing (its results are left as PyMC makes them)
    with pm.Model():
        pm.Normal("x")
        plain = quiet(pm.sample, draws=5, tune=0, chains=1, random_seed=0, progressbar=False,
                      compute_convergence_checks=False)
    assert PARTITIONS_ATTR not in compat.posterior_dataset(plain).attrs


def test_the_prior_records_its_partition_too():
    with pm.Model():
        z = pmp.Partition("z", pmp.CRP(1.0), n=5)
        pmp.NormalNormal("y", partition=z, observed=np.zeros(5))
        prior = pm.sample_prior_predictive(draws=10, random_seed=0)
    assert recorded_partitions(compat.posterior_dataset(prior, "prior")) == ["z"]
