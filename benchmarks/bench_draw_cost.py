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
def compiled_draw(y, labels, K, mu, sigma, sizes, alpha, m, scale, steps):
    """One iteration in place (labels < K, clusters' parameters in rows < K); returns (K, alpha)."""
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
            for d in range(y.shape[1]):
                prop_mu[d] = mu[k, d] + step * np.random.standard_normal()
                prop_sigma[d] = sigma[k, d] * math.exp(step * np.random.standard_normal())
            new = _cluster_logp(y, items, prop_mu, prop_sigma)
            if math.log(np.random.random()) < new - current:
                mu[k], sigma[k], current = prop_mu, prop_sigma, new
    eta = np.random.beta(alpha + 1.0, n)  # Escobar & West (1995), Gamma(1, 1) prior
    rate = 1.0 - math.log(eta)
    odds = K / (n * rate)
    shape = 1.0 + K if np.random.random() < odds / (1.0 + odds) else float(K)
    return K, np.random.gamma(shape, 1.0 / rate)


def compiled_chain(y, iterations, seed, m=3):
    np.random.seed(seed)
    n = len(y)
    labels, K, alpha = np.zeros(n, np.int64), 1, 1.0
    mu, sigma, sizes = np.zeros((n + 8, 2)), np.ones((n + 8, 2)), np.zeros(n + 8, np.int64)
    sizes[0] = n
    Ks = np.empty(iterations, np.int64)
    for t in range(iterations):
        K, alpha = compiled_draw(y, labels, K, mu, sigma, sizes, alpha, m, 0.5, 10)
        Ks[t] = K
    return Ks


def pymc_chains(y, draws, tune, chains, idle, python_draw=False):
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
    K = np.array([[len(np.unique(row)) for row in chain] for chain in idata.posterior["z"].values], float)
    return cpu / (chains * (draws + tune)) * 1e6, K


def main(argv=None):
    import arviz as az  # noqa: PLC0415

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--draws", type=int, default=20000, help="draws per chain after 1000 tuning iterations")
    args = parser.parse_args(argv)
    y, _ = sb.load("faithful")
    tune, chains = 1000, 4
    compiled_chain(y, 5, 0)  # compile (cached)
    compiled = {}
    for m in (3, 1):  # the default step's m = 3; in a compiled draw each auxiliary is most of the cost
        start = time.process_time()
        runs = [compiled_chain(y, tune + args.draws, seed, m)[tune:] for seed in range(1, chains + 1)]
        compiled[m] = ((time.process_time() - start) / (chains * (tune + args.draws)) * 1e6, np.array(runs, float))
    default_us, default_K = pymc_chains(y, args.draws, tune, chains, idle=False)
    python_us, python_K = pymc_chains(y, args.draws, tune, chains, idle=False, python_draw=True)
    idle_us, _ = pymc_chains(y, args.draws, tune, chains, idle=True)  # (the same fixed costs per call)
    print(f"Old Faithful slot model, n = {len(y)}; {chains} chains x ({tune} + {args.draws}); "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'sampler':42s} {'us / iteration':>15s} {'K mean':>7s} {'K ESS':>6s} {'K ESS / 1000 draws':>19s}")
    for name, us, K in [("pm.sample (default: compiled draw, m = 1)", default_us, default_K),
                        ("pm.sample (compiled=False, m = 3)", python_us, python_K),
                        ("pm.sample, idle step (PyMC's own)", idle_us, None),
                        ("compiled draw, m = 3 (hand-coded)", *compiled[3]),
                        ("compiled draw, m = 1 (hand-coded)", *compiled[1])]:
        stats = (f"{K.mean():7.3f} {float(az.ess(K)):6.0f} {float(az.ess(K)) / K.size * 1000:19.1f}"
                 if K is not None else "")
        print(f"{name:42s} {us:15.1f} {stats}")
    for m, (us, _) in compiled.items():
        print(f"ceiling of the cost lever against the Python draw, m = {m}: {python_us:.0f} / ({idle_us:.0f} + "
              f"{us:.0f}) = {python_us / (idle_us + us):.2f}x the effective samples per CPU second (at equal mixing "
              f"per draw)")
    print(f"the package's compiled draw (m = 1) against its Python draw (m = 3): {python_us / default_us:.2f}x less "
          f"CPU per iteration; the hand-coded draw (m = 1) against it: {(idle_us + compiled[1][0]) / default_us:.2f}x")


if __name__ == "__main__":
    main()
