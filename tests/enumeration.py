"""Exact posteriors over all partitions of a small set, and the Monte Carlo tolerance to compare
sampler output against them."""

from __future__ import annotations

import numpy as np

from pymc_partitions.partition import canonicalize, enumerate_partitions


def exact_posterior(n, log_joint):
    """(partitions (B, n), probabilities (B,)) from a function labels -> log joint."""
    parts = enumerate_partitions(n)
    lj = np.array([log_joint(p) for p in parts])
    p = np.exp(lj - lj.max())
    return parts, p / p.sum()


def encode(labels):
    """Integer key of a canonical label array (rows), for counting."""
    labels = np.atleast_2d(labels)
    n = labels.shape[1]
    return (labels * (n ** np.arange(n))).sum(axis=1)


def frequencies(parts, samples):
    """Empirical frequency of each enumerated partition in ``samples`` (rows of labels)."""
    samples = np.array([canonicalize(s) for s in np.atleast_2d(samples)])
    keys = encode(parts)
    order = np.argsort(keys)
    idx = order[np.searchsorted(keys[order], encode(samples))]
    assert np.array_equal(keys[idx], encode(samples)), "sample is not a partition of [n]"
    return np.bincount(idx, minlength=len(parts)) / len(samples)


def ess(x):
    """Effective sample size of a scalar trace (Geyer's initial positive sequence)."""
    x = np.asarray(x, float) - np.mean(x)
    m = len(x)
    if np.allclose(x, 0):
        return float(m)
    f = np.fft.rfft(x, 2 * m)
    acov = np.fft.irfft(f * np.conj(f))[:m] / m
    rho = acov / acov[0]
    tau = -1.0
    for t in range(0, m - 1, 2):
        pair = rho[t] + rho[t + 1]
        if pair <= 0:
            break
        tau += 2 * pair
    return m / max(tau, 1.0)


def tv_tolerance(p, n_eff, factor=4.0):
    """``factor`` times the expected total variation between ``p`` and the empirical law of
    ``n_eff`` independent draws from it (normal approximation of each |p̂ - p|)."""
    expected = 0.5 * np.sum(np.sqrt(2.0 * p * (1.0 - p) / (np.pi * n_eff)))
    return factor * expected


def total_variation(p, q):
    return 0.5 * float(np.abs(np.asarray(p) - np.asarray(q)).sum())


def check_against(parts, exact, samples, traces, wrong=None, factor=2.0, z_max=4.5):
    """Assert the samples match ``exact`` and, when given, do NOT match ``wrong`` (the posterior of
    a perturbed model), which shows the test has power.

    Two checks at the effective sample size of the slowest trace: total variation over all
    partitions below ``factor`` times its expected value under independent sampling, and each
    probability of the number of clusters within ``z_max`` standard errors.
    """
    freq = frequencies(parts, samples)
    n_eff = min(len(samples), min(ess(t) for t in traces))
    tol = tv_tolerance(exact, n_eff, factor)
    tv = total_variation(freq, exact)
    assert tv < tol, f"TV {tv:.4f} >= tolerance {tol:.4f} (n_eff {n_eff:.0f})"
    k = parts.max(axis=1)
    p_k = np.bincount(k, weights=exact, minlength=parts.shape[1])
    f_k = np.bincount(k, weights=freq, minlength=parts.shape[1])
    se = np.sqrt(np.maximum(p_k * (1 - p_k), 1e-12) / n_eff)
    z = np.abs(f_k - p_k) / se
    assert z.max() < z_max, f"number of clusters: z = {z.max():.2f} (exact {p_k.round(4)}, sampled {f_k.round(4)})"
    if wrong is not None:
        tv_wrong = total_variation(freq, wrong)
        assert tv_wrong > tol, f"test has no power: TV to the wrong posterior {tv_wrong:.4f} < {tol:.4f}"
    return tv, tol


def chi_square_pvalue(counts, p, min_expected=5.0):
    """p-value of the chi-square test of ``counts`` (one per outcome) against the probabilities ``p``.
    Outcomes expected fewer than ``min_expected`` times are pooled into one cell; if that cell is
    still below ``min_expected`` it joins the smallest of the others. Needs two cells at least."""
    from scipy import stats

    counts, p = np.asarray(counts, float), np.asarray(p, float)
    expected = p * counts.sum()
    big = expected >= min_expected
    obs, exp = list(counts[big]), list(expected[big])
    pooled_obs, pooled_exp = counts[~big].sum(), expected[~big].sum()
    if pooled_exp >= min_expected or not obs:
        obs.append(pooled_obs)
        exp.append(pooled_exp)
    else:
        q = int(np.argmin(exp))
        obs[q] += pooled_obs
        exp[q] += pooled_exp
    assert len(obs) >= 2, "one outcome only: nothing to test"
    return float(stats.chisquare(obs, np.array(exp) * sum(obs) / sum(exp)).pvalue)
