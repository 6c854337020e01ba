"""The per-cluster slice sampler of the occupied slots (samplers/slot_slice.py), alone: K independent
targets updated side by side reach their exact laws (KS per cluster and coordinate, with power against a
slightly wrong law), whatever the widths and sizes; bounded supports; bad arguments refused."""

import numpy as np
import pytest
from scipy import stats

from enumeration import ess
from pymc_partitions.samplers.slot_slice import slice_sweep, tuned_width

# three clusters of two coordinates: independent Normals with these means and sds
MEANS = np.array([[0.0, 5.0], [-3.0, 1.0], [10.0, -2.0]])
SDS = np.array([[1.0, 0.2], [3.0, 1.0], [0.05, 4.0]])


def normal_logp(theta):
    return (-0.5 * ((theta - MEANS) / SDS) ** 2 - np.log(SDS)).sum(axis=1)


def run(logp, theta, width, sizes, draws, seed):
    rng = np.random.default_rng(seed)
    current = logp(theta)
    out = np.empty((draws,) + theta.shape)
    for t in range(draws):
        theta, current, used, _ = slice_sweep(theta, current, logp, width, sizes, rng)
        assert np.allclose(current, logp(theta))  # the log densities returned are those of the new state
        out[t] = theta
    return out


def ks_pvalues(draws, cdf):
    """KS p-value per cluster and coordinate, thinned to about one draw per effective sample."""
    pvals = []
    for b in range(draws.shape[1]):
        for j in range(draws.shape[2]):
            x = draws[:, b, j]
            thin = max(1, int(np.ceil(len(x) / ess(x))))
            pvals.append(stats.kstest(x[::thin], lambda v: cdf(v, b, j)).pvalue)
    return np.array(pvals)


@pytest.mark.parametrize("width, sizes", [(np.array([1.0, 1.0]), np.array([1, 1, 1])),
                                          (np.array([0.2, 50.0]), np.array([1, 40, 7]))])
def test_clusters_reach_their_exact_laws_and_a_wrong_law_is_rejected(width, sizes):
    """Widths too small and far too large (steps out / shrinks a lot), per-cluster sizes scaling them:
    every cluster and coordinate matches its Normal (KS, Bonferroni over the 6), and the same draws reject
    the law with one mean moved by half an sd (power)."""
    draws = run(normal_logp, np.zeros((3, 2)), width, sizes, 2000, seed=1)[100:]
    exact = ks_pvalues(draws, lambda v, b, j: stats.norm.cdf(v, MEANS[b, j], SDS[b, j]))
    assert exact.min() > 1e-3 / 6
    shifted = MEANS.copy()
    shifted[1, 0] += 0.5 * SDS[1, 0]
    assert ks_pvalues(draws, lambda v, b, j: stats.norm.cdf(v, shifted[b, j], SDS[b, j]))[2] < 1e-3


def test_bounded_support_and_nan_outside_it():
    """A target with support (0, inf) whose log density is NaN (not -inf) outside: Gamma(3, 1) per cluster,
    reached exactly and never left."""
    def logp(theta):
        x = theta[:, 0]
        with np.errstate(invalid="ignore", divide="ignore"):
            return 2.0 * np.log(x) - x  # NaN for x < 0

    draws = run(logp, np.ones((2, 1)), np.array([2.0]), np.array([1, 1]), 2000, seed=2)[100:]
    assert (draws > 0).all()
    assert ks_pvalues(draws, lambda v, b, j: stats.gamma.cdf(v, 3.0)).min() > 1e-3 / 2


def test_tuned_width_follows_the_moves():
    width = np.array([1.0, 1.0])
    width = tuned_width(width, np.array([2.0, 0.0]), 1)
    assert np.allclose(width, [4.0, 0.1])  # twice the move, floored at a tenth of the previous width
    assert np.allclose(tuned_width(width, np.array([2.0, 0.05]), 2), [4.0, 0.1])


@pytest.mark.parametrize("kwargs, match", [
    ({"width": np.array([1.0, 0.0])}, "width"), ({"width": np.array([1.0, np.nan])}, "width"),
    ({"width": np.array([1.0])}, "agree"), ({"sizes": np.array([1, 0, 1])}, "sizes"),
    ({"current": np.zeros(2)}, "agree")])
def test_bad_arguments_are_refused(kwargs, match):
    args = dict(theta=np.zeros((3, 2)), current=normal_logp(np.zeros((3, 2))), logp=normal_logp,
                width=np.ones(2), sizes=np.ones(3, np.int64), rng=np.random.default_rng(0))
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        slice_sweep(**args)


def test_a_log_density_that_is_nan_everywhere_raises_instead_of_hanging():
    with pytest.raises(RuntimeError, match="shrinkage did not end"):
        slice_sweep(np.zeros((1, 1)), np.zeros(1), lambda t: np.full(t.shape[0], np.nan), np.ones(1), np.ones(1),
                    np.random.default_rng(0))
