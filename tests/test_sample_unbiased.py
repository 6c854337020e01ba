"""pmp.sample_unbiased on PyMC models: output groups, identical results on every executor (in
process, process pool, threads, a Dask LocalCluster), summaries, errors."""

import concurrent.futures as cf
import warnings

import numpy as np
import pymc as pm
import pytest

import pymc_partitions as pmp
from enumeration import exact_posterior
from models import data
from pymc_partitions.pymc.compat import RESULT_IS_DATATREE, group_names, is_datatree
from pymc_partitions.results.files import load, save
from pymc_partitions.samplers.gibbs import log_joint
from pymc_partitions.pymc.terms import PartitionTerms

N = 7


def model_and_exact():
    y, _ = data(N)
    with pm.Model() as model:
        z = pmp.Partition("z", pmp.CRP(1.2), n=N)
        pmp.NormalNormal("y", partition=z, mu0=0.0, sigma0=2.0, sigma=1.0, observed=y)
    terms = PartitionTerms(model, "z")
    params, fam = terms.kernel_inputs(model.initial_point())
    parts, post = exact_posterior(N, lambda p: log_joint(p, fam, terms.prior_code, params))
    return model, parts, post


H = {"k": pmp.h.n_clusters, "top": pmp.h.largest_proportion, "top3": pmp.h.LargestProportions(3)}
RUN = dict(h=H, n_pairs=12, k=1, m=3, random_seed=7, progressbar=False, record_distance=True)


def unbiased(result):
    return result["unbiased"].to_dataset() if is_datatree(result) else result["unbiased"]


def test_result_groups_and_roundtrip(tmp_path):
    model, _, _ = model_and_exact()
    result = pmp.sample_unbiased(model, cores=1, **RUN)
    assert is_datatree(result) == RESULT_IS_DATATREE
    assert {"unbiased", "meeting"} <= set(group_names(result))
    ds = unbiased(result)
    assert ds["k"].dims == ("pair",) and ds["top3"].dims == ("pair", "rank")
    assert list(ds["rank"].values) == [1, 2, 3]
    assert ds.attrs["coupling"] == "aligned" and ds.attrs["k"] == 1 and ds.attrs["m"] == 3
    assert ds.attrs["pymc_partitions_version"] == pmp.__version__
    faults = dict(interrupted=0, interrupted_during="none", worker_failures=0, retries=2, pair_timeout="none")
    assert {key: ds.attrs[key] for key in faults} == faults
    meeting = result["meeting"]
    assert (meeting["tau"].values >= 1).all() and meeting["met"].values.all()
    assert meeting["distance"].dims == ("pair", "iteration")
    assert (meeting["distance"].values[:, 0] > 0).any()  # chains start apart
    path = save(result, tmp_path / "u.nc")
    back = load(path)
    assert np.allclose(unbiased(back)["top3"].values, ds["top3"].values)
    assert {key: unbiased(back).attrs[key] for key in faults} == faults
    summary = pmp.summarize_unbiased(result)
    assert list(summary.index) == ["k", "top", "top3[0]", "top3[1]", "top3[2]"]
    assert (summary["n_pairs"] == 12).all()


def test_identical_results_on_every_executor():
    model, _, _ = model_and_exact()
    serial = unbiased(pmp.sample_unbiased(model, cores=1, **RUN))
    pool = unbiased(pmp.sample_unbiased(model, cores=2, **RUN))
    with cf.ThreadPoolExecutor(3) as ex:
        threads = unbiased(pmp.sample_unbiased(model, executor=ex, **RUN))
    for other in (pool, threads):
        for name in H:
            assert np.array_equal(serial[name].values, other[name].values)


def test_estimate_matches_enumeration_with_pilot_chosen_k_m():
    model, parts, post = model_and_exact()
    result = pmp.sample_unbiased(model, h={"k": pmp.h.n_clusters}, n_pairs=600, cores=2, random_seed=3,
                                 progressbar=False, init="singletons")
    summary = pmp.summarize_unbiased(result)
    exact = post @ (parts.max(axis=1) + 1)
    row = summary.loc["k"]
    assert abs(row["mean"] - exact) < 4 * row["se"]
    attrs = unbiased(result).attrs
    assert attrs["k_m_from_pilot"].startswith("yes") and attrs["m"] == 10 * attrs["k"]
    # the robust aggregators: within their SE and stated bias bound of the truth, and one wild pair
    # (an enormous bias correction) leaves them where they were while it ruins the mean
    ds = unbiased(result)
    spoiled = ds.copy(deep=True)
    spoiled["k"].values[5] = 1e5
    spoiled = pmp.pymc.compat.new_result({"unbiased": spoiled, "meeting": result["meeting"].to_dataset()
                                          if is_datatree(result) else result["meeting"]})
    assert abs(pmp.summarize_unbiased(spoiled).loc["k", "mean"] - exact) > 100
    for estimator in ("median_of_means", "trimmed_mean"):
        robust = pmp.summarize_unbiased(result, estimator=estimator)
        row = robust.loc["k"]
        assert abs(row[estimator] - exact) < 4 * row["se"] + row["bias_bound"], (estimator, row, exact)
        assert row["bias_bound"] > 0 and row["n_pairs"] == 600
        moved = pmp.summarize_unbiased(spoiled, estimator=estimator).loc["k"]
        assert abs(moved[estimator] - row[estimator]) < row["se"], estimator


@pytest.mark.parametrize("cores", [1, 2])
def test_time_budget_counts_only_complete_pairs(cores):
    model, _, _ = model_and_exact()
    result = pmp.sample_unbiased(model, h=pmp.h.n_clusters, time_budget=1.0, k=1, m=3, cores=cores,
                                 progressbar=False, random_seed=1)
    ds = unbiased(result)
    assert ds.sizes["pair"] >= 5 and not np.isnan(ds["n_clusters"].values).any()
    assert ds.attrs["time_budget"] == 1.0 and ds.attrs["workers"] == cores


def test_progress_bar_runs(capsys):
    model, _, _ = model_and_exact()
    result = pmp.sample_unbiased(model, n_pairs=4, k=1, m=2, cores=1, progressbar=True, random_seed=0)
    assert result["meeting"]["met"].values.all()
    assert "coupled pairs" in capsys.readouterr().out


def test_unmet_pairs_warn_and_stay_in_the_output():
    model, _, _ = model_and_exact()
    with pytest.warns(UserWarning, match="did not meet"):
        result = pmp.sample_unbiased(model, n_pairs=6, k=0, m=1, max_iter=1, coupling="independent", cores=1,
                                     progressbar=False, random_seed=0)
    meeting = result["meeting"]
    assert meeting.sizes["pair"] == 6 and not meeting["met"].values.all()
    with pytest.warns(UserWarning, match="biased"):
        pmp.summarize_unbiased(result)


def test_errors_name_the_problem():
    y, _ = data(N)
    with pm.Model() as discrete_free:  # (random continuous hyperparameters are coupled: test_unbiased_hyper_*)
        count = pm.Poisson("count", 3.0)
        z = pmp.Partition("z", pmp.CRP(1.0), n=N)
        pmp.NormalNormal("y", partition=z, mu0=0.0, sigma0=2.0, sigma=1.0, observed=y)
    with pytest.raises(ValueError, match="'count' is discrete"):
        pmp.sample_unbiased(discrete_free, k=1, m=2, progressbar=False)
    model, _, _ = model_and_exact()
    with pytest.raises(ValueError, match="coupling must be one of"):
        pmp.sample_unbiased(model, coupling="optimal")
    with pytest.raises(ValueError, match="0 <= k <= m"):
        pmp.sample_unbiased(model, k=3, m=2, cores=1, progressbar=False)
    with pytest.raises(ValueError, match="give both k and m"):
        pmp.sample_unbiased(model, k=3, cores=1, progressbar=False)
    with pytest.raises(TypeError, match="not callable"):
        pmp.sample_unbiased(model, h={"a": 3}, k=1, m=2, cores=1, progressbar=False)
    with pytest.raises(TypeError, match="executor must be"):
        pmp.sample_unbiased(model, k=1, m=2, executor=object(), progressbar=False)
    with pytest.raises(ValueError, match="no 'unbiased' group"):
        pmp.summarize_unbiased(pmp.pymc.compat.new_result({"posterior": unbiased(
            pmp.sample_unbiased(model, n_pairs=2, k=0, m=1, cores=1, progressbar=False))}))


def unlucky_start(rng):
    """Fails for about a third of the pairs, the same ones on every executor (it uses the pair's
    random numbers), so a retry fails again and the pair must be reported."""
    if rng.random() < 0.3:
        raise RuntimeError("boom")
    return np.arange(N)


@pytest.mark.parametrize("cores", [1, 2])
def test_a_failing_pair_is_reported_and_the_others_kept(cores):
    model, _, _ = model_and_exact()
    with pytest.warns(UserWarning, match="did not meet or failed"):
        result = pmp.sample_unbiased(model, init=unlucky_start, n_pairs=10, k=1, m=3, cores=cores,
                                     progressbar=False, random_seed=2)
    status = result["meeting"]["status"].values
    failed = [s for s in status if s.startswith("failed")]
    assert 1 <= len(failed) < 10 and "RuntimeError: boom" in failed[0]
    assert result["meeting"].sizes["pair"] == 10
    assert np.isnan(unbiased(result)["n_clusters"].values[status != "met"]).all()


class CtrlCAt:
    """h that sends this process SIGINT (a real Ctrl-C) on its ``at``-th call. (A KeyboardInterrupt
    raised by h itself is that pair's error, not a Ctrl-C: tests/test_hostile_unbiased.py.)"""

    def __init__(self, at):
        self.at, self.calls = at, 0

    def __call__(self, labels):
        import os  # noqa: PLC0415
        import signal  # noqa: PLC0415

        self.calls += 1
        if self.calls == self.at:
            os.kill(os.getpid(), signal.SIGINT)
        return labels.max() + 1.0


def test_ctrl_c_returns_the_completed_pairs():
    model, _, _ = model_and_exact()
    with pytest.warns(UserWarning, match="interrupted"):
        result = pmp.sample_unbiased(model, h=CtrlCAt(60), n_pairs=50, k=1, m=3, cores=1, progressbar=False,
                                     random_seed=2)
    ds = unbiased(result)
    assert 1 <= ds.sizes["pair"] < 50 and ds.attrs["interrupted"] == 1 and ds.attrs["interrupted_during"] == "main"
    assert not np.isnan(ds["h"].values).any()


class CrashOnce:
    """Initial law whose first call in a worker process kills that process (os._exit), once per
    test (a marker file): the chunk must be retried on a fresh pool and nothing lost."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __call__(self, rng):
        import os  # noqa: PLC0415

        if os.getpid() != self.parent and not os.path.exists(self.marker):
            open(self.marker, "w").close()
            os._exit(1)
        return np.arange(N)


def test_a_dead_worker_is_replaced_and_its_pairs_rerun(tmp_path):
    import os  # noqa: PLC0415

    model, _, _ = model_and_exact()
    crash = CrashOnce(tmp_path / "crashed")
    crash.parent = os.getpid()
    run = dict(init=crash, n_pairs=16, k=1, m=3, progressbar=False, random_seed=4)
    pooled = pmp.sample_unbiased(model, cores=2, **run)
    assert (tmp_path / "crashed").exists()  # a worker did die
    assert (pooled["meeting"]["status"].values == "met").all()
    serial = pmp.sample_unbiased(model, cores=1, **run)
    assert np.array_equal(unbiased(serial)["n_clusters"].values, unbiased(pooled)["n_clusters"].values)


def test_pgsm_moves_end_to_end_identical_on_a_process_pool(tmp_path):
    model, parts, post = model_and_exact()
    run = dict(RUN, pgsm={"moves": 2, "num_particles": 8})
    serial = pmp.sample_unbiased(model, cores=1, **run)
    ds = unbiased(serial)
    assert serial["meeting"]["met"].values.all()
    expected = dict(pgsm_moves=2, pgsm_num_particles=8, pgsm_resample_threshold=0.5, pgsm_num_anchors=2,
                    pgsm_annealed=1, pgsm_anchor_proposal="uniform")
    assert {key: ds.attrs[key] for key in expected} == expected
    assert unbiased(load(save(serial, tmp_path / "pgsm.nc"))).attrs["pgsm_num_particles"] == 8
    pool = unbiased(pmp.sample_unbiased(model, cores=2, **run))
    gibbs = unbiased(pmp.sample_unbiased(model, cores=1, **RUN, pgsm=None))
    assert gibbs.attrs["pgsm_moves"] == 0 and "pgsm_num_particles" not in gibbs.attrs
    for name in H:
        assert np.array_equal(ds[name].values, pool[name].values)
    assert not np.array_equal(ds["k"].values, gibbs["k"].values)  # the moves were made
    # and the estimate is right (an int: that many moves with default settings)
    result = pmp.sample_unbiased(model, h={"k": pmp.h.n_clusters}, n_pairs=400, k=1, m=4, pgsm=1, cores=1,
                                 random_seed=5, progressbar=False, init="singletons")
    row = pmp.summarize_unbiased(result).loc["k"]
    assert abs(row["mean"] - post @ (parts.max(axis=1) + 1)) < 4 * row["se"]


def test_pgsm_errors_name_the_problem():
    model, _, _ = model_and_exact()
    run = dict(k=1, m=2, cores=1, progressbar=False)
    with pytest.raises(TypeError, match="pgsm must be None, a number of moves"):
        pmp.sample_unbiased(model, pgsm="cluster", **run)
    with pytest.raises(ValueError, match="anchor_proposal='uniform'"):
        pmp.sample_unbiased(model, pgsm={"anchor_proposal": "cluster"}, **run)
    with pytest.raises(ValueError, match="moves must be an integer >= 1"):
        pmp.sample_unbiased(model, pgsm={"moves": 0}, **run)
    with pytest.raises(ValueError, match="exceeds the number of items"):
        pmp.sample_unbiased(model, pgsm={"num_anchors": N + 1}, **run)


def test_dask_local_cluster_gives_the_same_results():
    """Last in this file: Dask leaves threads behind, and forking a threaded process is unsafe."""
    distributed = pytest.importorskip("distributed")  # the "dask" extra; CI installs it
    model, _, _ = model_and_exact()
    serial = unbiased(pmp.sample_unbiased(model, cores=1, **RUN))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                      dashboard_address=None) as cluster, distributed.Client(cluster) as client:
            on_dask = pmp.sample_unbiased(model, executor=client, **RUN)
    assert unbiased(on_dask).attrs["executor"] == "Client"
    for name in H:
        assert np.array_equal(serial[name].values, unbiased(on_dask)[name].values)


def test_pgsm_is_one_move_by_default_and_a_bad_string_is_refused():
    """pgsm="auto" (the default) is one PGSM move per iteration (None for the network likelihood, in
    tests/test_network.py); any other string is refused naming the argument."""
    model, _, _ = model_and_exact()
    ds = unbiased(pmp.sample_unbiased(model, cores=1, **RUN))
    assert ds.attrs["pgsm_moves"] == 1 and ds.attrs["pgsm_num_particles"] == 20
    with pytest.raises(TypeError, match=r"sample_unbiased: pgsm must be None, .* or 'auto', got 'one'"):
        pmp.sample_unbiased(model, cores=1, **RUN, pgsm="one")
