"""Hostile inputs to the partition summaries: every public argument is checked where it enters
(TypeError for the wrong kind, ValueError for a bad value, MemoryError above a memory cap), edge
cases (one item, one draw, all singletons, one block, a cap of one cluster, huge label values)
give correct answers, and no compiled kernel indexes out of bounds (checked with numba's bounds
checking on, in a subprocess with its own cache)."""

import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import pymc_partitions as pmp
from limits import CHILD_PYTHON_TIMEOUT

ROOT = Path(__file__).resolve().parents[1]
DRAWS = np.array([[0, 0, 1, 1], [0, 1, 1, 2], [4, 4, 4, 9]])


# --- draws ----------------------------------------------------------------------------------------

BAD_DRAWS = [
    (np.array([[0, 1], [np.nan, 0]]), ValueError, "NaN"),
    (np.array([[0, 1], [np.inf, 0]]), ValueError, "NaN or infinite"),
    (np.array([[0, 0.5]]), ValueError, "non-integer"),
    (np.array([[0, -1]]), ValueError, "negative"),
    (np.array([0, 1, 1]), ValueError, r"single partition\? pass it as draws\[None, :\]"),
    (np.zeros((1, 2, 3, 4), int), ValueError, r"shape \(draws, n\) or \(chains, draws, n\)"),
    (np.zeros((0, 5), int), ValueError, "empty"),
    (np.zeros((5, 0), int), ValueError, "empty"),
    (np.array([["a", "b"]]), TypeError, "integer labels"),
    (np.array([[1 + 1j, 0]]), TypeError, "integer labels"),
    ([[0, 1], [0]], ValueError, "rectangular"),
    ("0011", TypeError, "array of labels"),
    (None, TypeError, "array of labels"),
    (np.array([[0.0, 1e20]]), ValueError, "2\\*\\*53"),
    (np.array([[0, 2**64 - 1]], dtype=np.uint64), ValueError, "2\\*\\*63"),
]


@pytest.mark.parametrize("draws, error, match", BAD_DRAWS)
@pytest.mark.parametrize("fn", ["coclustering", "point_estimate", "credible_ball", "partition_traces"])
def test_bad_draws_are_refused_by_every_summary(fn, draws, error, match):
    args = (draws, [0, 0]) if fn == "credible_ball" else (draws,)
    with pytest.raises(error, match=match):
        getattr(pmp, fn)(*args)


def test_float_and_huge_labels_are_fine():
    as_float = DRAWS.astype(float)
    huge = DRAWS.astype(np.int64) * 10**15 + 123
    for draws in (as_float, huge, DRAWS.astype(np.uint8), DRAWS == 0):
        np.testing.assert_allclose(pmp.coclustering(draws).values,
                                   pmp.coclustering(np.asarray(draws).astype(np.int64)).values)
    assert pmp.point_estimate(huge, random_seed=0).labels.tolist() == \
        pmp.point_estimate(DRAWS, random_seed=0).labels.tolist()


# --- weights ---------------------------------------------------------------------------------------

BAD_WEIGHTS = [
    ([1.0, -0.5, 1.0], ValueError, ">= 0"),
    ([1.0, np.nan, 1.0], ValueError, "NaN"),
    ([1.0, np.inf, 1.0], ValueError, "NaN or infinite"),
    ([1.0, 1.0], ValueError, "one value per draw"),
    ([[1.0, 1.0, 1.0]], ValueError, "one value per draw"),
    ([0.0, 0.0, 0.0], ValueError, "all zero"),
    (["a", "b", "c"], TypeError, "real numbers"),
    ([True, False, True], TypeError, "real numbers"),
    ("abc", TypeError, "array of numbers"),
]


@pytest.mark.parametrize("weights, error, match", BAD_WEIGHTS)
@pytest.mark.parametrize("fn", ["coclustering", "point_estimate", "credible_ball"])
def test_bad_weights_are_refused(fn, weights, error, match):
    args = (DRAWS, [0, 0, 1, 1]) if fn == "credible_ball" else (DRAWS,)
    with pytest.raises(error, match=match):
        getattr(pmp, fn)(*args, weights=weights)


def test_weights_of_chain_draw_shape_and_zero_weights():
    chains = np.stack([DRAWS, DRAWS[::-1]])  # (2, 3, 4)
    w = np.array([[1.0, 0.0, 2.0], [0.0, 0.0, 1.0]])
    flat = chains.reshape(6, 4)
    np.testing.assert_allclose(pmp.coclustering(chains, weights=w).values,
                               pmp.coclustering(flat[w.ravel() > 0], weights=w.ravel()[w.ravel() > 0]).values)
    np.testing.assert_allclose(pmp.coclustering(chains, weights=w.ravel()).values,
                               pmp.coclustering(chains, weights=w).values)



def huge(weights):
    """The same relative weights scaled so that their sum overflows a float (max 1.8e308)."""
    w = np.asarray(weights, float)
    return w / w.max() * 1.7e308


@pytest.mark.parametrize("weights", [[1.0, 1.0, 1.0], [0.4, 0.2, 0.3], [1.0, 0.0, 3.0]])
def test_weights_whose_sum_overflows_give_the_same_summaries(weights):
    """Unnormalised weights (importance weights like exp(709)) whose sum is inf: every summary
    equals the one for the same relative weights (it used to divide by inf: the co-clustering
    became the identity, the expected loss 0)."""
    big = huge(weights)
    with np.errstate(over="ignore"):
        assert np.isinf(big.sum())
    np.testing.assert_allclose(pmp.coclustering(DRAWS, weights=big).values,
                               pmp.coclustering(DRAWS, weights=weights).values, rtol=1e-12)
    pairs = pmp.coclustering(DRAWS, weights=big, pairs=[(0, 1), (2, 3)])
    np.testing.assert_allclose(pairs.values, pmp.coclustering(DRAWS, weights=weights, pairs=[(0, 1), (2, 3)]).values)
    a, b = (pmp.point_estimate(DRAWS, weights=w, random_seed=0) for w in (big, weights))
    assert a.labels.tolist() == b.labels.tolist() and a.expected_loss == pytest.approx(b.expected_loss, rel=1e-12)
    assert a.expected_loss > 0
    for loss in ("vi", "binder"):
        a, b = (pmp.credible_ball(DRAWS, [0, 0, 1, 1], loss=loss, weights=w) for w in (big, weights))
        assert (a.radius, a.probability) == pytest.approx((b.radius, b.probability), rel=1e-12)
        assert pmp.summaries.expected_loss([0, 0, 1, 1], DRAWS, loss, weights=big) == pytest.approx(
            pmp.summaries.expected_loss([0, 0, 1, 1], DRAWS, loss, weights=weights), rel=1e-12)


def test_the_issue_cases_of_overflowing_weights():
    two = np.array([[0, 0, 1], [0, 1, 1]])
    np.testing.assert_allclose(pmp.coclustering(two, weights=[1e308, 1e308]).values,
                               [[1, 0.5, 0], [0.5, 1, 0.5], [0, 0.5, 1]])
    assert pmp.point_estimate(two, weights=[1e308, 1e308], random_seed=0).expected_loss > 0
    w = np.exp([709.0, 709.0, 708.0])  # unnormalised importance weights
    np.testing.assert_allclose(pmp.coclustering(DRAWS, weights=w).values,
                               pmp.coclustering(DRAWS, weights=np.exp([1.0, 1.0, 0.0])).values, rtol=1e-12)
    tiny = [5e-324, 5e-324, 1e-323]  # subnormal weights too
    np.testing.assert_allclose(pmp.coclustering(DRAWS, weights=tiny).values,
                               pmp.coclustering(DRAWS, weights=[1, 1, 2]).values, rtol=1e-12)
    with pytest.raises(ValueError, match=r"NaN or infinite.*exp\(log_w - log_w.max\(\)\)"):
        pmp.coclustering(DRAWS, weights=np.exp([710.0, 1.0, 1.0]))


# --- settings --------------------------------------------------------------------------------------

BAD_SETTINGS = [
    ({"loss": "VI"}, ValueError, "loss must be one of"),
    ({"loss": "ari"}, ValueError, "loss must be one of"),
    ({"loss": None}, ValueError, "loss must be one of"),
    ({"method": "greedy"}, ValueError, "method must be one of"),
    ({"max_clusters": -1}, ValueError, "max_clusters must be an integer >= 0"),
    ({"max_clusters": 1.5}, ValueError, "max_clusters must be an integer"),
    ({"max_clusters": True}, TypeError, "max_clusters must be an integer"),
    ({"runs": 0}, ValueError, "runs must be an integer >= 1"),
    ({"runs": "16"}, TypeError, "runs must be an integer"),
    ({"max_zealous_attempts": -1}, ValueError, "max_zealous_attempts"),
    ({"prob_sequential_allocation": 1.5}, ValueError, "prob_sequential_allocation"),
    ({"prob_sequential_allocation": math.nan}, ValueError, "prob_sequential_allocation"),
    ({"max_scans": -1}, ValueError, "max_scans"),
    ({"seconds": 0}, ValueError, "seconds must be a finite number > 0"),
    ({"seconds": -1.0}, ValueError, "seconds must be a finite number > 0"),
    ({"seconds": math.inf}, ValueError, "seconds must be a finite number > 0"),
    ({"seconds": math.nan}, ValueError, "seconds must be a finite number > 0"),
    ({"threads": 0}, ValueError, "threads must be an integer >= 1"),
    ({"random_seed": -1}, ValueError, "random_seed must be an integer >= 0"),
    ({"random_seed": "a"}, TypeError, "random_seed must be an integer"),
    ({"max_bytes": 0}, ValueError, "max_bytes must be an integer >= 1"),
]


@pytest.mark.parametrize("kwargs, error, match", BAD_SETTINGS)
def test_bad_search_settings_are_refused(kwargs, error, match):
    with pytest.raises(error, match=f"point_estimate: {match}"):
        pmp.point_estimate(DRAWS, **kwargs)


@pytest.mark.parametrize("level", [0.0, 1.0, -0.1, 1.5, math.nan, math.inf])
def test_bad_levels_are_refused(level):
    with pytest.raises(ValueError, match="level must be a finite number > 0.0 and < 1.0"):
        pmp.credible_ball(DRAWS, [0, 0, 1, 1], level=level)


def test_bad_credible_ball_arguments():
    for level, error in (("0.9", TypeError), (True, TypeError), (None, TypeError)):
        with pytest.raises(error, match="level must be a number"):
            pmp.credible_ball(DRAWS, [0, 0, 1, 1], level=level)
    with pytest.raises(ValueError, match=r"loss must be one of \('vi', 'binder'\)"):
        pmp.credible_ball(DRAWS, [0, 0, 1, 1], loss="omari")
    for estimate, match in (([0, 0, 1], "has 3 labels but the draws have 4"), ([[0, 0, 1, 1]], "1-d vector"),
                            ([0, 0, 1, -1], "negative"), ([0, 0, 0.5, 1], "non-integer"), ([], "empty"),
                            ("0011", "vector of integer labels")):
        with pytest.raises((ValueError, TypeError), match=match):
            pmp.credible_ball(DRAWS, estimate)


def test_bad_coclustering_arguments():
    bad = [({"items": [0, 0]}, ValueError, "repeated"), ({"items": [0, 4]}, ValueError, r"in \[0, 4\)"),
           ({"items": [-1]}, ValueError, r"in \[0, 4\)"), ({"items": []}, ValueError, "non-empty"),
           ({"items": [0.0, 1.0]}, TypeError, "integer item indices"),
           ({"pairs": [(0, 1, 2)]}, ValueError, r"\(m, 2\)"),
           ({"pairs": [(0, 4)]}, ValueError, r"in \[0, 4\)"), ({"pairs": [[0.5, 1]]}, TypeError, "integer"),
           ({"items": [0], "pairs": [(0, 1)]}, ValueError, "not both"), ({"dtype": "float16"}, ValueError, "dtype"),
           ({"dtype": int}, ValueError, "dtype"), ({"max_bytes": -5}, ValueError, "max_bytes"),
           ({"max_bytes": 2.5}, ValueError, "max_bytes")]
    for kwargs, error, match in bad:
        with pytest.raises(error, match=match):
            pmp.coclustering(DRAWS, **kwargs)
    assert pmp.coclustering(DRAWS, dtype=np.float32).dtype == np.float32
    with pytest.raises(ValueError, match="var_name and model apply to pm.sample results"):
        pmp.coclustering(DRAWS, var_name="z")


def test_plot_arguments_are_checked():
    import matplotlib.pyplot as plt  # noqa: PLC0415

    with pytest.raises(ValueError, match="square"):
        pmp.plot_coclustering(matrix=np.ones((2, 3)), estimate=[0, 0])
    with pytest.raises(ValueError, match=r"probabilities in \[0, 1\]"):
        pmp.plot_coclustering(matrix=np.full((2, 2), 1.5), estimate=[0, 0])
    with pytest.raises(ValueError, match="pass estimate="):
        pmp.plot_coclustering(matrix=np.eye(2))
    with pytest.raises(ValueError, match="has 3 labels"):
        pmp.plot_coclustering(matrix=np.eye(2), estimate=[0, 0, 1])
    with pytest.raises(TypeError, match="boundaries must be True or False"):
        pmp.plot_coclustering(DRAWS, boundaries="yes")
    with pytest.raises(ValueError, match=r"\(n,\) or \(n, D\) with D >= 1"):
        pmp.plot_clustering(np.zeros((4, 3, 2)), [0, 0, 1, 1])
    with pytest.raises(ValueError, match=r"\(n,\) or \(n, D\) with D >= 1"):
        pmp.plot_clustering(np.zeros((4, 0)), [0, 0, 1, 1])
    ax = pmp.plot_clustering(np.zeros((4, 3)), [0, 0, 1, 1])  # no variance: projected on zeros
    assert ax.get_xlabel() == "PC 1 (0% of the variance of 3 columns)"
    with pytest.raises(ValueError, match="has 3 rows"):
        pmp.plot_clustering(np.zeros(3), [0, 0, 1, 1])
    with pytest.raises(ValueError, match="NaN"):
        pmp.plot_clustering(np.array([0.0, np.nan, 1.0, 2.0]), [0, 0, 1, 1])
    with pytest.raises(TypeError, match="pmp.credible_ball"):
        pmp.plot_credible_ball(np.zeros(4), "ball")
    ball = pmp.credible_ball(DRAWS, [0, 0, 1, 1])
    with pytest.raises(ValueError, match="4 axes"):
        pmp.plot_credible_ball(np.zeros(4), ball, axes=[plt.gca()])
    plt.close("all")


# --- edge cases give right answers -----------------------------------------------------------------


def test_one_item_one_draw_singletons_one_block_and_a_cap_of_one():
    one = np.zeros((1, 1), int)
    assert pmp.coclustering(one).values.tolist() == [[1.0]]
    est = pmp.point_estimate(one, random_seed=0)
    assert est.labels.tolist() == [0] and est.expected_loss == 0.0
    assert pmp.credible_ball(one, [7]).radius == 0.0
    singletons = np.tile(np.arange(6), (3, 1))
    for loss in ("vi", "binder", "omari"):
        est = pmp.point_estimate(singletons, loss=loss, random_seed=0)
        assert est.labels.tolist() == list(range(6)) and est.expected_loss == 0.0
        block = pmp.point_estimate(np.zeros((2, 6), int), loss=loss, random_seed=0)
        assert block.labels.tolist() == [0] * 6 and block.expected_loss == 0.0
        capped = pmp.point_estimate(singletons, loss=loss, max_clusters=1, random_seed=0)
        assert capped.labels.tolist() == [0] * 6
        assert capped.expected_loss == pytest.approx(pmp.summaries.partition_loss(np.zeros(6), np.arange(6), loss))
    traces = pmp.partition_traces(one, reference=[0])
    assert traces["rand"].values.tolist() == [[1.0]] and traces["ari"].values.tolist() == [[1.0]]


@pytest.mark.boundscheck  # recompiles the summary kernels with checks: with the other such run (-m boundscheck)
def test_kernels_stay_in_bounds_under_numba_boundscheck(tmp_path):
    """The public functions on edge cases, with every kernel compiled with bounds checks (a
    subprocess with its own numba cache, so the shared cache is not touched)."""
    script = textwrap.dedent("""
        import numpy as np
        import pymc_partitions as pmp
        import numba
        assert numba.config.BOUNDSCHECK
        rng = np.random.default_rng(0)
        cases = [np.zeros((1, 1), int), np.tile(np.arange(6), (3, 1)), np.zeros((4, 5), int),
                 np.array([[0, 1, 0, 1], [3, 3, 3, 3], [9, 8, 7, 6]]) * 10**12, rng.integers(0, 9, (40, 30))]
        for draws in cases:
            n = draws.shape[1]
            w = rng.random(len(draws))
            pmp.coclustering(draws, weights=w)
            pmp.coclustering(draws, items=[n - 1, 0] if n > 1 else [0])
            pmp.coclustering(draws, pairs=[(0, n - 1)])
            for loss in ("vi", "binder", "omari"):
                for cap in (0, 1, 2):
                    est = pmp.point_estimate(draws, loss=loss, max_clusters=cap, runs=3, threads=2, weights=w,
                                             random_seed=1)
                    assert cap == 0 or est.labels.max() < cap
                pmp.point_estimate(draws, loss=loss, method="draws")
                pmp.point_estimate(draws, loss=loss, runs=2, prob_sequential_allocation=0.0, random_seed=2)
            for loss in ("vi", "binder"):
                pmp.credible_ball(draws, est, loss=loss, level=0.5)
            pmp.partition_traces(draws, reference=est)
        print("in bounds")
    """)
    env = dict(os.environ, NUMBA_BOUNDSCHECK="1", NUMBA_CACHE_DIR=str(tmp_path / "numba"), MPLBACKEND="Agg",
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=CHILD_PYTHON_TIMEOUT)
    assert proc.returncode == 0 and "in bounds" in proc.stdout, proc.stderr[-3000:]
