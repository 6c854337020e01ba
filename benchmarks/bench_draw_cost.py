#!/usr/bin/env python
"""Where a draw of the non-conjugate step goes on Old Faithful, and what a fully compiled draw would cost
(issue 21: the lever left for the >= 50x target against the stick-breaking NUTS model).

Four samplers of the same model (``bench_stick_breaking.py``'s Faithful: standardised data, diagonal
Normal clusters, mu ~ Normal(0, 2) and sigma ~ InverseGamma(3, 1) per coordinate, CRP(alpha), alpha ~
Gamma(1, 1)), 4 chains each, CPU time (``time.process_time``) per iteration, tuning included:

* ``pm.sample``: the plain call (``pmp.NonConjugateGibbs`` on z, mu, sigma, since session 41 its compiled draw
  with m = 1, ``samplers/compiled_slots.py``; ``pmp.EscobarWest`` on alpha), and the same with the Python draw
  (``compiled=False``, m = 3: the default before);
* ``pm.sample``, idle step: the same call with the non-conjugate step replaced by one that returns the
  point (what PyMC itself costs per iteration: the compound step, alpha's step, the trace);
* hand-coded draw: the same algorithm as the step (Algorithm 8 with m = 3 auxiliaries, 10 random-walk
  Metropolis steps of size 0.5 / sqrt(n_b) on every occupied cluster's (mu, log sigma), Escobar-West for
  alpha) written for this one likelihood in a single numba function (not part of the package: the
  model's densities are hand-coded here, where the package compiles them from the user's PyMC graph).

The hand-coded draw's chains check it: K's mean and ESS per draw should match ``pm.sample``'s (the K
posterior of the exact reference in benchmarks/README.md: mean 4.57 +- 0.06). Printed: microseconds per
iteration, the ratio of the Python draw to "PyMC's own + hand-coded draw" (the ceiling of the cost lever), K's
mean and bulk ESS over 4 chains; the hand-coded draw with m = 3 auxiliaries and m = 1.

A second hand-coded draw bounds the other lever, mixing per draw: the same with every slot step drawing the
clusters' means from their exact conditional given sigma (Normal prior, Normal likelihood), then moving log
sigma by random-walk Metropolis (``exact_mean``: no update of the means mixes better; the package cannot do it
for a likelihood it only knows as a PyMC graph). Printed last: the bulk ESS per 1000 draws of the density at
``bench_stick_breaking.py``'s five points and of K, for ``pm.sample`` and both hand-coded draws, and each
hand-coded draw's ESS per CPU second against the default's as if run inside ``pm.sample`` (its own cost plus
PyMC's, the idle step): the most the non-conjugate step could gain on the 50x target without a different move.

Run: ``python benchmarks/bench_draw_cost.py`` (about three minutes, caches warm; ``--draws`` per chain: ESS of
shorter runs is noisy).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

import numba
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_stick_breaking as sb  # noqa: E402  (the Faithful model and data of the NUTS comparison)

LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


@numba.njit(cache=True)
def _base_draw(mu, sigma):
    for d in range(mu.shape[0]):
        mu[d] = 2.0 * np.random.standard_normal()
        sigma[d] = 1.0 / np.random.gamma(3.0, 1.0)


@numba.njit(cache=True)
def _item_loglik(y, i, mu, sigma):
    s = 0.0
    for d in range(y.shape[1]):
        r = (y[i, d] - mu[d]) / sigma[d]
        s += -0.5 * r * r - math.log(sigma[d]) - LOG_SQRT_2PI
    return s


@numba.njit(cache=True)
def _cluster_logp(y, items, mu, sigma):
    """Base measure on the value scale (mu, log sigma) plus the items' log-likelihood."""
    s = 0.0
    for d in range(y.shape[1]):
        log_s, inv = math.log(sigma[d]), 1.0 / sigma[d]
        s += -0.5 * (mu[d] / 2.0) ** 2 - 3.0 * log_s - inv - items.shape[0] * (log_s + LOG_SQRT_2PI)
        q = 0.0
        for i in items:
            r = y[i, d] - mu[d]
            q += r * r
        s -= 0.5 * q * inv * inv
    return s


@numba.njit(cache=True)
def _mean_given_sigma(y, items, mu, sigma):
    """Every coordinate of a cluster's mean drawn from its exact conditional given sigma and the items
    (Normal(0, 2) prior, Normal likelihood: Normal)."""
    for d in range(y.shape[1]):
        total = 0.0
        for i in items:
            total += y[i, d]
        precision = 0.25 + items.shape[0] / sigma[d] ** 2
        mu[d] = (total / sigma[d] ** 2) / precision + np.random.standard_normal() / math.sqrt(precision)


@numba.njit(cache=True)
def compiled_draw(y, labels, K, mu, sigma, sizes, alpha, m, scale, steps, exact_mean=False):
    """One iteration in place (labels < K, clusters' parameters in rows < K); returns (K, alpha). With
    ``exact_mean`` every slot step first draws the mean from its exact conditional given sigma, then moves
    log sigma alone by random-walk Metropolis (the best update of the mean there is, for this likelihood)."""
    n = y.shape[0]
    aux_mu, aux_sigma = np.empty((m, y.shape[1])), np.empty((m, y.shape[1]))
    w = np.empty(K + m + n)
    for i in np.random.permutation(n):  # Algorithm 8
        k = labels[i]
        sizes[k] -= 1
        fresh = 0
        if sizes[k] == 0:  # a singleton's parameter is the first auxiliary; its row taken by the last cluster
            aux_mu[0], aux_sigma[0] = mu[k], sigma[k]
            fresh = 1
            last = K - 1
            if k != last:
                mu[k], sigma[k], sizes[k] = mu[last], sigma[last], sizes[last]
                for j in range(n):
                    if labels[j] == last:
                        labels[j] = k
            K -= 1
        for a in range(fresh, m):
            _base_draw(aux_mu[a], aux_sigma[a])
        top = -np.inf
        for c in range(K):
            w[c] = math.log(sizes[c]) + _item_loglik(y, i, mu[c], sigma[c])
            top = max(top, w[c])
        for a in range(m):
            w[K + a] = math.log(alpha / m) + _item_loglik(y, i, aux_mu[a], aux_sigma[a])
            top = max(top, w[K + a])
        total = 0.0
        for c in range(K + m):
            w[c] = math.exp(w[c] - top)
            total += w[c]
        u, c = np.random.random() * total, 0
        while c < K + m - 1 and u >= w[c]:
            u -= w[c]
            c += 1
        if c >= K:
            mu[K], sigma[K], sizes[K] = aux_mu[c - K], aux_sigma[c - K], 0
            c = K
            K += 1
        labels[i] = c
        sizes[c] += 1
    order, start = np.argsort(labels), 0  # random-walk Metropolis on every cluster's (mu, log sigma)
    prop_mu, prop_sigma = np.empty(y.shape[1]), np.empty(y.shape[1])
    for k in range(K):
        items = order[start:start + sizes[k]]
        start += sizes[k]
        current = _cluster_logp(y, items, mu[k], sigma[k])
        step = scale / math.sqrt(sizes[k])
        for _ in range(steps):
            if exact_mean:
                _mean_given_sigma(y, items, mu[k], sigma[k])
                current = _cluster_logp(y, items, mu[k], sigma[k])
            for d in range(y.shape[1]):
                prop_mu[d] = mu[k, d] if exact_mean else mu[k, d] + step * np.random.standard_normal()
                prop_sigma[d] = sigma[k, d] * math.exp(step * np.random.standard_normal())
            new = _cluster_logp(y, items, prop_mu, prop_sigma)
            if math.log(np.random.random()) < new - current:
                mu[k], sigma[k], current = prop_mu, prop_sigma, new
    eta = np.random.beta(alpha + 1.0, n)  # Escobar & West (1995), Gamma(1, 1) prior
    rate = 1.0 - math.log(eta)
    odds = K / (n * rate)
    shape = 1.0 + K if np.random.random() < odds / (1.0 + odds) else float(K)
    return K, np.random.gamma(shape, 1.0 / rate)


@numba.njit(cache=True)
def _density(points, mu, sigma, sizes, K, alpha, g0, out):
    """The predictive density of a new item at ``points`` given the draw (bench_stick_breaking's definition)."""
    n = sizes[:K].sum()
    for p in range(points.shape[0]):
        total = alpha * g0[p]
        for k in range(K):
            log_f = 0.0
            for d in range(points.shape[1]):
                r = (points[p, d] - mu[k, d]) / sigma[k, d]
                log_f += -0.5 * r * r - math.log(sigma[k, d]) - LOG_SQRT_2PI
            total += sizes[k] * math.exp(log_f)
        out[p] = total / (n + alpha)


def compiled_chain(y, iterations, seed, m=3, exact_mean=False, points=None, g0=None):
    """K per iteration from one block, and with ``points`` the density there (else zeros)."""
    np.random.seed(seed)
    n = len(y)
    labels, K, alpha = np.zeros(n, np.int64), 1, 1.0
    mu, sigma, sizes = np.zeros((n + 8, 2)), np.ones((n + 8, 2)), np.zeros(n + 8, np.int64)
    sizes[0] = n
    Ks = np.empty(iterations, np.int64)
    density = np.zeros((iterations, 0 if points is None else len(points)))
    for t in range(iterations):
        K, alpha = compiled_draw(y, labels, K, mu, sigma, sizes, alpha, m, 0.5, 10, exact_mean)
        Ks[t] = K
        if points is not None:
            _density(points, mu, sigma, sizes, K, alpha, g0, density[t])
    return Ks, density


def pymc_chains(y, draws, tune, chains, idle, python_draw=False, points=None, g0=None):
    import pymc as pm  # noqa: PLC0415

    import pymc_partitions as pmp  # noqa: PLC0415

    class Idle(pmp.NonConjugateGibbs):
        def step(self, point):
            return point, [{"n_clusters": 1, "slot_accept": 0.0, "slot_scale": 0.5, "opened": 0, "splits": 0,
                            "merges": 0}]

    with sb.slot_model("faithful", y):
        z = pm.modelcontext(None)["z"]
        step = [Idle([z])] if idle else ([pmp.NonConjugateGibbs([z], compiled=False)] if python_draw else None)
        kwargs = dict(chains=chains, cores=1, progressbar=False, compute_convergence_checks=False, step=step)
        pm.sample(draws=20, tune=20, random_seed=0, **kwargs)  # warm-up: compile, caches
        start = time.process_time()
        idata = pm.sample(draws=draws, tune=tune, random_seed=1, **kwargs)
        cpu = time.process_time() - start
    post = idata.posterior
    K = np.array([[len(np.unique(row)) for row in chain] for chain in post["z"].values], float)
    density = np.zeros(K.shape + (0 if points is None else len(points),))
    for c, d in np.ndindex(*K.shape) if points is not None else ():
        labels = post["z"].values[c, d].astype(np.int64)
        sizes = np.bincount(labels)
        _density(points, post["mu"].values[c, d], post["sigma"].values[c, d], sizes, len(sizes),
                  float(post["alpha"].values[c, d]), g0, density[c, d])
    return cpu / (chains * (draws + tune)) * 1e6, K, density


def main(argv=None):
    import arviz as az  # noqa: PLC0415

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--draws", type=int, default=20000, help="draws per chain after 1000 tuning iterations")
    args = parser.parse_args(argv)
    y, points = sb.load("faithful")
    g0 = sb.g0_density("faithful", points)
    tune, chains = 1000, 4
    compiled_chain(y, 5, 0, 3, False, points, g0)  # compile (cached)
    compiled_chain(y, 5, 0, 3, True, points, g0)
    compiled = {}
    # the default step's m = 3 before session 41; in a compiled draw each auxiliary is most of the cost
    for m, exact_mean in ((3, False), (1, False), (1, True)):
        start = time.process_time()
        runs = [compiled_chain(y, tune + args.draws, seed, m, exact_mean, points, g0)
                for seed in range(1, chains + 1)]
        us = (time.process_time() - start) / (chains * (tune + args.draws)) * 1e6
        compiled[m, exact_mean] = (us, np.array([K[tune:] for K, _ in runs], float),
                                   np.array([density[tune:] for _, density in runs]))
    default = pymc_chains(y, args.draws, tune, chains, idle=False, points=points, g0=g0)
    python_us, python_K, _ = pymc_chains(y, args.draws, tune, chains, idle=False, python_draw=True)
    idle_us, _, _ = pymc_chains(y, args.draws, tune, chains, idle=True)  # (the same fixed costs per call)
    print(f"Old Faithful slot model, n = {len(y)}; {chains} chains x ({tune} + {args.draws}); "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'sampler':52s} {'us / iteration':>15s} {'K mean':>7s} {'K ESS':>6s} {'K ESS / 1000 draws':>19s}")
    rows = [("pm.sample (default: compiled draw, m = 1)", *default[:2]),
            ("pm.sample (compiled=False, m = 3)", python_us, python_K),
            ("pm.sample, idle step (PyMC's own)", idle_us, None),
            ("compiled draw, m = 3 (hand-coded)", *compiled[3, False][:2]),
            ("compiled draw, m = 1 (hand-coded)", *compiled[1, False][:2]),
            ("compiled draw, m = 1, exact mean (hand-coded)", *compiled[1, True][:2])]
    for name, us, K in rows:
        stats = (f"{K.mean():7.3f} {float(az.ess(K)):6.0f} {float(az.ess(K)) / K.size * 1000:19.1f}"
                 if K is not None else "")
        print(f"{name:52s} {us:15.1f} {stats}")
    for m in (3, 1):
        us = compiled[m, False][0]
        print(f"ceiling of the cost lever against the Python draw, m = {m}: {python_us:.0f} / ({idle_us:.0f} + "
              f"{us:.0f}) = {python_us / (idle_us + us):.2f}x the effective samples per CPU second (at equal mixing "
              f"per draw)")
    print(f"the package's compiled draw (m = 1) against its Python draw (m = 3): {python_us / default[0]:.2f}x less "
          f"CPU per iteration; the hand-coded draw (m = 1) against it: {(idle_us + compiled[1, False][0]) / default[0]:.2f}x")
    print("\nMixing per draw of the density at the five points (bulk ESS per 1000 draws), and the ceiling: the "
          "package's default against PyMC's own cost plus the hand-coded draw, ESS per CPU second")
    print(f"{'sampler':52s} " + " ".join(f"{'x' + str(p + 1):>7s}" for p in range(len(points))) + f" {'K':>7s}")
    per_draw = {}
    for name, (us, K, density) in [("pm.sample (default: compiled draw, m = 1)", default),
                                   ("compiled draw, m = 1 (hand-coded)", compiled[1, False]),
                                   ("compiled draw, m = 1, exact mean (hand-coded)", compiled[1, True])]:
        ess = np.array([float(az.ess(density[..., p])) for p in range(len(points))] + [float(az.ess(K))])
        per_draw[name] = (us, ess / K.size * 1000)
        print(f"{name:52s} " + " ".join(f"{v:7.1f}" for v in per_draw[name][1]))
    base_us, base = per_draw["pm.sample (default: compiled draw, m = 1)"]
    for name in ("compiled draw, m = 1 (hand-coded)", "compiled draw, m = 1, exact mean (hand-coded)"):
        us, ess = per_draw[name]
        gain = ess / base * base_us / (idle_us + us)
        print(f"{name + ', inside pm.sample':52s} " + " ".join(f"{v:6.2f}x" for v in gain)
              + "  (ESS per CPU second against the default)")


if __name__ == "__main__":
    main()
