"""The per-cluster HMC of the occupied slots (samplers/slot_hmc.py), alone: K independent targets updated
side by side reach their exact laws (KS per cluster and coordinate, with power against a slightly wrong law)
whatever the masses, step and leapfrog count; a step too large for some clusters only slows them; NaN outside
a bounded support rejects; bad arguments refused."""

import numpy as np
import pytest
from scipy import stats

from test_slot_slice import ks_pvalues
from pymc_partitions.samplers.slot_hmc import hmc_sweep

# three clusters of two coordinates: independent Normals with these means and sds
MEANS = np.array([[0.0, 5.0], [-3.0, 1.0], [10.0, -2.0]])
SDS = np.array([[1.0, 0.2], [3.0, 1.0], [0.05, 4.0]])


def normal_logp_grad(theta):
    z = (theta - MEANS) / SDS
    return (-0.5 * z**2 - np.log(SDS)).sum(axis=1), -z / SDS


def run(logp_grad, theta, mass, step, leapfrog, draws, seed):
    rng = np.random.default_rng(seed)
    current, grad = logp_grad(theta)
    out = np.empty((draws,) + theta.shape)
    for t in range(draws):
        theta, current, grad, prob = hmc_sweep(theta, current, grad, logp_grad, mass, step, leapfrog, rng)
        lp, g = logp_grad(theta)
        assert np.allclose(current, lp) and np.allclose(grad, g)  # the returned values are the new state's
        assert ((prob >= 0) & (prob <= 1)).all()
        out[t] = theta
    return out


@pytest.mark.parametrize("mass, step, leapfrog", [
    (1.0 / SDS**2, 0.8, 5),                     # the exact precision: near-independent draws
    (np.ones((3, 2)), 0.04, 3),                 # a unit mass: the narrow coordinate sets the step, others crawl
    (1.0 / SDS**2, 0.5, 1)])                    # MALA
def test_clusters_reach_their_exact_laws_and_a_wrong_law_is_rejected(mass, step, leapfrog):
    """Every cluster and coordinate matches its Normal (KS, Bonferroni over the 6), and the same draws reject
    the law with one mean moved by half an sd (power)."""
    draws = run(normal_logp_grad, MEANS + SDS, mass, step, leapfrog, 3000, seed=1)[200:]
    exact = ks_pvalues(draws, lambda v, b, j: stats.norm.cdf(v, MEANS[b, j], SDS[b, j]))
    assert exact.min() > 1e-3 / 6
    shifted = MEANS.copy()
    shifted[0, 0] += 0.5 * SDS[0, 0]
    assert ks_pvalues(draws, lambda v, b, j: stats.norm.cdf(v, shifted[b, j], SDS[b, j]))[0] < 1e-3


def test_without_the_accept_reject_the_laws_are_wrong():
    """The check above has power against the bias of leapfrog without its correction: a step near the
    stability limit of the narrow cluster, every proposal taken, misses its law."""
    rng = np.random.default_rng(3)
    theta = MEANS.copy()
    current, grad = normal_logp_grad(theta)
    mass = 1.0 / SDS**2
    out = []
    for _ in range(3000):
        # the same trajectory, accepted always: what hmc_sweep would do with its decision removed
        eps = 1.5 * (1.0 + 0.2 * (2.0 * rng.random() - 1.0))
        p = rng.standard_normal(theta.shape) * np.sqrt(mass) + 0.5 * eps * grad
        theta = theta + eps * p / mass
        current, grad = normal_logp_grad(theta)
        out.append(theta.copy())
    draws = np.array(out)[200:]
    assert ks_pvalues(draws, lambda v, b, j: stats.norm.cdf(v, MEANS[b, j], SDS[b, j])).min() < 1e-3 / 6
    kept = run(normal_logp_grad, MEANS.copy(), mass, 1.5, 1, 3000, seed=3)[200:]
    assert ks_pvalues(kept, lambda v, b, j: stats.norm.cdf(v, MEANS[b, j], SDS[b, j])).min() > 1e-3 / 6


def test_bounded_support_and_nan_outside_it():
    """Gamma(3, 1) per cluster whose log density is NaN (not -inf) outside (0, inf): reached exactly, never left."""
    def logp_grad(theta):
        x = theta[:, 0]
        with np.errstate(invalid="ignore", divide="ignore"):
            return 2.0 * np.log(x) - x, (2.0 / x - 1.0)[:, None]

    draws = run(logp_grad, np.ones((2, 1)), np.ones((2, 1)), 0.6, 4, 3000, seed=2)[200:]
    assert (draws > 0).all()
    assert ks_pvalues(draws, lambda v, b, j: stats.gamma.cdf(v, 3.0)).min() > 1e-3 / 2


@pytest.mark.parametrize("kwargs, match", [
    ({"mass": np.zeros((3, 2))}, "mass"), ({"mass": np.full((3, 2), np.nan)}, "mass"),
    ({"mass": np.ones((3, 1))}, "agree"), ({"grad": np.zeros((3, 1))}, "agree"), ({"current": np.zeros(2)}, "agree"),
    ({"step": 0.0}, "step"), ({"step": np.inf}, "step"), ({"step": "1"}, "step"),
    ({"leapfrog": 0}, "leapfrog"), ({"leapfrog": 2.0}, "leapfrog"), ({"leapfrog": True}, "leapfrog"),
    ({"leapfrog": 10**6}, "leapfrog")])
def test_bad_arguments_are_refused(kwargs, match):
    theta = np.zeros((3, 2))
    current, grad = normal_logp_grad(theta)
    args = dict(theta=theta, current=current, grad=grad, logp_grad=normal_logp_grad, mass=np.ones((3, 2)),
                step=0.1, leapfrog=2, rng=np.random.default_rng(0))
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        hmc_sweep(**args)


def test_a_log_density_that_is_nan_everywhere_never_moves():
    theta = np.zeros((2, 1))
    out = hmc_sweep(theta, np.zeros(2), np.zeros((2, 1)), lambda t: (np.full(2, np.nan), np.full((2, 1), np.nan)),
                    np.ones((2, 1)), 0.5, 3, np.random.default_rng(0))
    assert (out[0] == 0).all() and (out[3] == 0).all()
