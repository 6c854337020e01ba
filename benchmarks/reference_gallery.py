#!/usr/bin/env python
"""An independent reference for ``bench_stick_breaking.py --faithful-prior gallery``: collapsed Gibbs (numpy, no
package code) for the Dirichlet-process mixture of Old Faithful (standardised, 2-D diagonal Normal clusters)
under the PyMC gallery's priors, per cluster and coordinate tau ~ Gamma(1, 1), lambda ~ Gamma(10, 1),
mu ~ N(0, 1 / (lambda tau)), the items' precision lambda tau (``gallery``) or tau (``kappa``); (mu, tau)
integrated in closed form (Normal-gamma) given lambda, lambda by quadrature on a grid of 800 nodes;
alpha ~ Gamma(1, 1) by Escobar-West. Prints K's mean and distribution and
the Rao-Blackwellised predictive density at the bench's five points (their posterior means are what both
samplers of the bench estimate).

    PYTHONPATH=$PWD python benchmarks/reference_gallery.py gallery SEED SWEEPS BURN   # e.g. 1 2500 300: ~14 min
    PYTHONPATH=$PWD python benchmarks/reference_gallery.py kappa SEED SWEEPS BURN
"""
import math
import os
import sys
import time

import numpy as np
from scipy import stats
from scipy.special import gammaln, logsumexp

sys.path.insert(0, os.path.dirname(__file__))
import bench_stick_breaking as B  # noqa: E402

y, pts = B.load("faithful")
n, D = y.shape
PRIOR = sys.argv[1]
if PRIOR not in ("gallery", "kappa"):
    raise SystemExit("usage: reference_gallery.py gallery|kappa SEED SWEEPS BURN")
# lambda's grid on [0.3, 40] (Gamma(10, 1) has mass 1 - 4e-9 there) with its prior weights
g = np.linspace(0.3, 40.0, 800); dg = g[1] - g[0]
logw = stats.gamma.logpdf(g, 10.0, scale=1.0) + np.log(dg)
print("grid mass", np.exp(logsumexp(logw)))

def logm(cnt, s, ss):
    """log marginal per coordinate on the grid: cnt (...), s, ss (..., D) -> (..., D) integrated over lambda."""
    cnt = np.asarray(cnt, float)[..., None, None]
    s = np.asarray(s)[..., None]; ss = np.asarray(ss)[..., None]
    # given lambda, Normal-gamma: precision ~ Gamma(a0 = 1, rate b0), mu ~ N(0, 1 / (kappa0 precision)); the
    # gallery's items' precision lambda tau ~ Gamma(1, rate 1 / lambda) with kappa0 = 1; kappa's tau ~ Gamma(1, 1)
    # with kappa0 = lambda
    kappa0, b0 = (np.ones_like(g), 1.0 / g) if PRIOR == "gallery" else (g, np.ones_like(g))
    a0 = 1.0
    mean = np.where(cnt > 0, s / np.maximum(cnt, 1), 0.0)
    sq = ss - cnt * mean ** 2
    an = a0 + cnt / 2
    bn = b0 + 0.5 * sq + kappa0 * cnt * mean ** 2 / (2 * (kappa0 + cnt))
    lm = (-cnt / 2 * math.log(2 * math.pi) + 0.5 * np.log(kappa0 / (kappa0 + cnt)) + a0 * np.log(b0) - an * np.log(bn)
          + gammaln(an) - gammaln(a0))
    return logsumexp(lm + logw, axis=-1)  # (..., D)

def run(seed, sweeps, burn):
    rng = np.random.default_rng(seed)
    z = rng.integers(0, 3, n) if seed % 2 else np.zeros(n, int)
    alpha = 1.0
    Ks, dens = [], []
    empty = logm(0, np.zeros(D), np.zeros(D)).sum()
    for t in range(sweeps):
        for i in range(n):
            z[i] = -1
            labs, z_c = np.unique(z[z >= 0], return_inverse=True)
            zz = np.full(n, -1); zz[z >= 0] = z_c; z = zz
            K = len(labs)
            cnt = np.bincount(z[z >= 0], minlength=K).astype(float)
            s = np.zeros((K, D)); ss = np.zeros((K, D))
            np.add.at(s, z[z >= 0], y[z >= 0]); np.add.at(ss, z[z >= 0], y[z >= 0] ** 2)
            base = logm(cnt, s, ss).sum(-1)
            withi = logm(cnt + 1, s + y[i], ss + y[i] ** 2).sum(-1)
            lp = np.r_[np.log(cnt) + withi - base, math.log(alpha) + logm(1, y[i], y[i] ** 2).sum() - empty]
            p = np.exp(lp - lp.max()); p /= p.sum()
            z[i] = rng.choice(K + 1, p=p)
        K = z.max() + 1
        # Escobar-West
        eta = rng.beta(alpha + 1, n)
        odds = (1 + K - 1) / (n * (1 - math.log(eta)))
        shape = 1 + K if rng.random() < odds / (1 + odds) else 1 + K - 1
        alpha = rng.gamma(shape, 1 / (1 - math.log(eta)))
        if t >= burn:
            Ks.append(K)
            cnt = np.bincount(z, minlength=K).astype(float)
            s = np.zeros((K, D)); ss = np.zeros((K, D)); np.add.at(s, z, y); np.add.at(ss, z, y ** 2)
            base = logm(cnt, s, ss)  # (K, D)
            d = []
            for x in pts:
                pred = np.exp((logm(cnt + 1, s + x, ss + x ** 2) - base).sum(-1))
                new = np.exp(logm(1, x, x ** 2).sum() - empty)
                d.append((cnt @ pred + alpha * new) / (n + alpha))
            dens.append(d)
    return np.array(Ks), np.array(dens)

seed, sweeps, burn = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
t = time.time()
K, d = run(seed, sweeps, burn)
print("seed", seed, "time", round(time.time() - t), "K mean", K.mean(), "P(K):", np.bincount(K) / len(K))
print("density", d.mean(0).round(4), "sd/sqrt", (d.std(0) / np.sqrt(len(d))).round(5))
