"""Hamiltonian Monte Carlo on K independent parameter vectors at once (the occupied slots of a partition).

Given the labels, the target of the occupied slots factorises over clusters:
p(theta_1..theta_K) = prod_b g(theta_b), and the gradient of log g(theta_b) depends on theta_b only.
:func:`hmc_sweep` runs one HMC transition per cluster, all side by side: each cluster has its own
momentum, diagonal mass ``mass[b]``, leapfrog trajectory and accept/reject decision, and one call of
``logp_grad`` serves every cluster's leapfrog step. Each cluster's transition is an exact HMC
transition of its own target and clusters do not interact, so the sweep leaves the product invariant.

The mass and step size may be any positive numbers fixed given the state the slots are conditioned on
(the caller uses cluster sizes: a cluster's posterior precision grows like its size); they change
the cost, never the target. The step size of each transition is jittered by a factor uniform in
[1 - JITTER, 1 + JITTER] (drawn independently of the state), which avoids trajectories that return
periodically to where they started. NaN or infinite log densities along a trajectory reject it.
"""

from __future__ import annotations

import numpy as np

__all__ = ["hmc_sweep", "JITTER", "MAX_LEAPFROG"]

#: relative jitter of the step size per transition
JITTER = 0.2
#: cap on the leapfrog steps of one transition (each is one evaluation of every cluster's gradient)
MAX_LEAPFROG = 1000


def hmc_sweep(theta, current, grad, logp_grad, mass, step, leapfrog, rng):
    """One HMC transition of every row of ``theta``; returns (theta, current, grad, acceptance probability
    per row).

    Parameters
    ----------
    theta : (K, d) float
        Row b: cluster b's parameters (unconstrained scale).
    current, grad : (K,) and (K, d) float
        ``logp_grad(theta)``: the clusters' log densities at ``theta`` and their gradients.
    logp_grad : callable ``(K, d) -> ((K,), (K, d))``
        Log density of each cluster at its row and its gradient (NaN is read as -inf).
    mass : (K, d) positive floats
        Diagonal mass of cluster b's momentum (its posterior precision per coordinate, roughly).
    step : positive float
        Leapfrog step size (jittered per transition).
    leapfrog : int >= 1
        Leapfrog steps per transition (1: a Metropolis-adjusted Langevin step).
    rng : numpy Generator
    """
    theta = np.array(theta, dtype=np.float64, copy=True)
    K, d = theta.shape
    current = np.asarray(current, dtype=np.float64).copy()
    grad = np.asarray(grad, dtype=np.float64).copy()
    mass = np.asarray(mass, dtype=np.float64)
    if current.shape != (K,) or grad.shape != (K, d) or mass.shape != (K, d):
        raise ValueError(f"hmc_sweep: theta (K, d), current (K,), grad (K, d) and mass (K, d) must agree, got "
                         f"{theta.shape}, {current.shape}, {grad.shape} and {mass.shape}")
    if not (np.all(np.isfinite(mass)) and np.all(mass > 0)):
        raise ValueError("hmc_sweep: mass must be positive and finite")
    if not (isinstance(step, (float, int, np.floating, np.integer)) and np.isfinite(step) and step > 0):
        raise ValueError(f"hmc_sweep: step must be a positive finite number, got {step!r}")
    if isinstance(leapfrog, bool) or not isinstance(leapfrog, (int, np.integer)) or not 1 <= leapfrog <= MAX_LEAPFROG:
        raise ValueError(f"hmc_sweep: leapfrog must be an integer in [1, {MAX_LEAPFROG}], got {leapfrog!r}")
    eps = float(step) * (1.0 + JITTER * (2.0 * rng.random() - 1.0))
    p0 = rng.standard_normal((K, d)) * np.sqrt(mass)
    with np.errstate(invalid="ignore", over="ignore"):
        q, p, g = theta.copy(), p0 + 0.5 * eps * grad, grad
        for t in range(leapfrog):
            q = q + eps * p / mass
            lp, g = logp_grad(q)
            lp = np.asarray(lp, dtype=np.float64)
            g = np.asarray(g, dtype=np.float64)
            p = p + (eps if t < leapfrog - 1 else 0.5 * eps) * g
        start = current - 0.5 * np.sum(p0 * p0 / mass, axis=1)
        end = lp - 0.5 * np.sum(p * p / mass, axis=1)
        log_ratio = end - start
        log_ratio = np.where(np.isfinite(log_ratio) & np.all(np.isfinite(g), axis=1), log_ratio, -np.inf)
    prob = np.exp(np.minimum(log_ratio, 0.0))
    ok = np.log(rng.random(K)) < log_ratio
    theta[ok] = q[ok]
    current[ok] = lp[ok]
    grad[ok] = g[ok]
    return theta, current, grad, prob
