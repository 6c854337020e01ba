"""Slice sampling of K independent parameter vectors at once (the occupied slots of a partition).

Given the labels, the target of the occupied slots factorises over clusters:
p(theta_1..theta_K) = prod_b g(theta_b) with g(theta_b) = G0(theta_b) prod_{i in b} f(y_i | theta_b).
:func:`slice_sweep` updates every coordinate of every theta_b by Neal's (2003) univariate slice
sampler (stepping out, then shrinkage), coordinate after coordinate, with the K clusters' slice
samplers run side by side: each evaluation of ``logp`` returns the K clusters' log densities at K
(different) points, so the number of evaluations per coordinate is the largest number any one
cluster needs, not their sum. Each cluster's update is Neal's exactly (its own slice level, interval
and uniforms), and clusters do not interact, so the sweep leaves the product target invariant.

The initial interval width of cluster b along coordinate j is ``width[j] / sqrt(n_b)`` (``sizes``
given; a cluster's posterior spread shrinks like 1/sqrt(its size)): a fixed function of the state
the slots are conditioned on, so any positive widths keep the update exact; they only change its
cost. :func:`tuned_width` is the rule the caller may apply during tuning only.
"""

from __future__ import annotations

import numpy as np

__all__ = ["slice_sweep", "tuned_width", "MAX_STEPS_OUT", "MAX_SHRINKS"]

#: stepping-out budget per side and coordinate (Neal's m): the interval grows to at most this many widths
MAX_STEPS_OUT = 16
#: shrinkage steps after which the sweep gives up (the interval is then below the float spacing of the
#: current point, which is always accepted: reached only when the log density is NaN at the current point)
MAX_SHRINKS = 2000


def slice_sweep(theta, current, logp, width, sizes, rng):
    """One slice update of every coordinate of every row of ``theta``; returns (theta, current, evaluations,
    mean |move| per coordinate scaled by sqrt(size)).

    Parameters
    ----------
    theta : (K, d) float
        Row b: cluster b's parameters (unconstrained scale).
    current : (K,) float
        ``logp(theta)``, the clusters' log densities at ``theta``.
    logp : callable ``(K, d) -> (K,)``
        Log density of each cluster at its row (NaN is read as -inf: outside the support).
    width : (d,) positive floats
        Initial interval width per coordinate for a cluster of size 1.
    sizes : (K,) positive integers
        Cluster sizes (the width of cluster b is ``width / sqrt(sizes[b])``).
    rng : numpy Generator
    """
    theta = np.array(theta, dtype=np.float64, copy=True)
    K, d = theta.shape
    current = np.asarray(current, dtype=np.float64).copy()
    width = np.asarray(width, dtype=np.float64)
    if current.shape != (K,) or width.shape != (d,) or np.shape(sizes) != (K,):
        raise ValueError(f"slice_sweep: theta (K, d), current (K,), width (d,) and sizes (K,) must agree, got "
                         f"{theta.shape}, {current.shape}, {width.shape} and {np.shape(sizes)}")
    if not (np.all(np.isfinite(width)) and np.all(width > 0)):
        raise ValueError(f"slice_sweep: width must be positive and finite, got {width}")
    root = np.sqrt(np.asarray(sizes, dtype=np.float64))
    if not np.all(root >= 1):
        raise ValueError("slice_sweep: sizes must be >= 1")
    evaluations = 0
    moved = np.zeros(d)

    def evaluate(j, x):
        nonlocal evaluations
        evaluations += 1
        trial = theta.copy()
        trial[:, j] = x
        out = np.asarray(logp(trial), dtype=np.float64)
        return np.where(np.isnan(out), -np.inf, out)

    for j in range(d):
        x0 = theta[:, j].copy()
        w = width[j] / root
        level = current - rng.exponential(size=K)  # log of the slice height
        left = x0 - w * rng.random(K)
        right = left + w
        steps_left = np.floor(MAX_STEPS_OUT * rng.random(K)).astype(np.int64)
        steps_right = MAX_STEPS_OUT - 1 - steps_left
        # stepping out, each cluster moving its left end until done, then its right end (one evaluation serves
        # every cluster at whichever end it is moving)
        go_left = steps_left > 0
        go_right = steps_right > 0
        while True:
            at_left = go_left
            at_right = ~go_left & go_right
            busy = at_left | at_right
            if not busy.any():
                break
            x = np.where(at_left, left, np.where(at_right, right, x0))
            lp = evaluate(j, x)
            out_left = at_left & (lp > level)
            left = np.where(out_left, left - w, left)
            steps_left = steps_left - out_left
            go_left = out_left & (steps_left > 0)
            out_right = at_right & (lp > level)
            right = np.where(out_right, right + w, right)
            steps_right = steps_right - out_right
            go_right = np.where(at_right, out_right & (steps_right > 0), go_right)
        # shrinkage towards x0 until every cluster's draw is inside its slice
        new = x0.copy()
        new_lp = current.copy()
        pending = np.ones(K, dtype=bool)
        for _ in range(MAX_SHRINKS):
            x = np.where(pending, left + rng.random(K) * (right - left), x0)
            lp = evaluate(j, x)
            hit = pending & (lp > level)
            new = np.where(hit, x, new)
            new_lp = np.where(hit, lp, new_lp)
            miss = pending & ~hit
            left = np.where(miss & (x < x0), x, left)
            right = np.where(miss & (x >= x0), x, right)
            pending = miss
            if not pending.any():
                break
        else:
            raise RuntimeError("slice_sweep: shrinkage did not end: the log density is NaN or -inf at the current "
                               "parameters of some cluster")
        moved[j] = np.mean(np.abs(new - x0) * root)
        theta[:, j] = new
        current = new_lp
    return theta, current, evaluations, moved


def tuned_width(width, moved, count):
    """Running mean over tuning draws (``count`` so far, >= 1) of the scaled distance moved per coordinate,
    times 2, floored at a tenth of the previous width: the width the next draw uses (tuning only)."""
    target = np.maximum(2.0 * np.asarray(moved, dtype=np.float64), 0.1 * width)
    return width + (target - width) / count
