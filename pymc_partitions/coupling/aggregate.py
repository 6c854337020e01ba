"""Aggregating the pairs' unbiased estimates: the plain mean, and two robust alternatives.

The mean of N independent unbiased estimates H_1..H_N is unbiased, and its standard error is
honest when the H_i have a finite variance. But unbiased estimators from coupled chains have
heavy tails: a rare pair that meets late carries a large bias correction (on the gene data from
one block, one pair in ~600 dominates the variance; benchmarks/README.md). The robust
aggregators below are not moved much by such a pair, at the price of a **bias**, bounded here:

* **median of means** (``n_groups`` = K): the pairs, in their order, are cut into K groups of
  ⌊N/K⌋ or ⌈N/K⌉ (np.array_split), and the estimate is the median of the group means. If the H_i
  have variance σ², then with probability at least 1 - exp(-K/8)

      |median of means - E[h]| <= 2 σ / sqrt(⌊N/K⌋)

  (Chebyshev per group, Hoeffding over the groups; Lugosi & Mendelson 2019), which the mean only
  has with Gaussian tails. It is **biased** whenever the distribution of a group mean is skewed
  (unbiased estimates from coupled chains are): the median of a group mean lies between its mean
  and the tail's opposite side, about -skewness x σ / (6 N/K) from E[h] for large groups. For any
  distribution with variance σ², |E[median of means] - E[h]| <= σ sqrt((K - 1)/K² Σ_j 1/B_j)
  (≈ σ sqrt((K-1)/N) for equal groups of size B_j): the median of K numbers is within one
  standard deviation of their mean, whose expectation is E[h]. ``bias_bound`` reports this with
  σ replaced by the sample SD of the H_i.
* **trimmed mean** (``trim`` = a): the mean after dropping the g = ⌊a N⌋ smallest and the g
  largest H_i. It estimates the a-trimmed mean of the estimates' law, which differs from E[h]
  when that law is asymmetric (it is); the bias does not shrink as N grows. For every sample,
  |trimmed mean - mean| <= s sqrt(2 g (N - 1)) / (N - 2 g) (Cauchy-Schwarz on the dropped
  deviations; s the sample SD), so |E[trimmed mean] - E[h]| <= σ sqrt(2 g (N - 1)) / (N - 2 g):
  ``bias_bound`` with s for σ.

Their standard errors are the usual large-sample ones: for the median of means
sqrt(pi/2) x 1.4826 MAD(group means) / sqrt(K) (the median of K roughly normal group means, the
spread taken robustly), for the trimmed mean the winsorised SD / ((1 - 2 g/N) sqrt(N))
(Tukey & McLaughlin 1963). Both measure the estimator's spread around *its own* expectation: an
interval from them covers E[h] only up to the bias, so add ``bias_bound`` when that matters.
With the plain mean, ``bias_bound`` is 0.

No PyMC here: :func:`pymc_partitions.summarize_unbiased` calls :func:`aggregate`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._checks import choice, integer, real

__all__ = ["ESTIMATORS", "Aggregate", "aggregate", "check_aggregation", "default_groups", "median_of_means",
           "trimmed_mean"]

ESTIMATORS = ("mean", "median_of_means", "trimmed_mean")
_MAD_TO_SD = 1.482602218505602  # 1 / Phi^-1(3/4): MAD x this is the SD of a normal law


@dataclass(frozen=True)
class Aggregate:
    """One aggregate of N estimates: ``estimate``, its standard error ``se`` (around its own
    expectation) and ``bias_bound`` (an estimated bound on |its expectation - E[h]|; 0 for the mean)."""

    estimate: float
    se: float
    bias_bound: float


def default_groups(ci: float) -> int:
    """K = ⌈8 log(1 / (1 - ci))⌉: the number of groups for which the median of means' guarantee
    holds with probability ``ci`` (24 groups at 95%)."""
    return int(math.ceil(8.0 * math.log(1.0 / (1.0 - ci))))


def check_aggregation(estimator, n_groups, trim, owner: str):
    """(estimator, n_groups, trim) checked: estimator one of :data:`ESTIMATORS`; ``n_groups`` None or
    an integer >= 3 (with 1 or 2 equal groups the median of means is the mean); ``trim`` a number
    in (0, 0.5)."""
    estimator = choice("estimator", estimator, ESTIMATORS, owner=owner)
    if n_groups is not None:
        try:
            n_groups = integer("n_groups", n_groups, low=3, owner=owner)
        except ValueError as err:
            raise ValueError(f"{err} (with 1 or 2 groups the median of means is the mean: use estimator='mean')") \
                from None
    trim = real("trim", trim, low=0.0, high=0.5, low_open=True, high_open=True, owner=owner)
    return estimator, n_groups, trim


def _estimates(x, owner):
    x = np.asarray(x, dtype=float)
    if x.ndim != 1:
        raise ValueError(f"{owner}: the estimates must be one-dimensional, got shape {x.shape}")
    if not np.isfinite(x).all():
        raise ValueError(f"{owner}: the estimates must be finite (leave out the pairs that did not meet)")
    return x


def median_of_means(x, n_groups: int) -> Aggregate:
    """Median of the means of ``n_groups`` consecutive groups of the estimates ``x`` (see the module
    docstring for its bias and guarantee). Needs at least ``n_groups`` estimates."""
    owner = "median_of_means"
    n_groups = integer("n_groups", n_groups, low=3, owner=owner)
    x = _estimates(x, owner)
    if x.size < n_groups:
        raise ValueError(f"{owner}: n_groups={n_groups} needs at least {n_groups} estimates (pairs that met), got "
                         f"{x.size}: lower n_groups or run more pairs")
    groups = np.array_split(x, n_groups)
    means = np.array([g.mean() for g in groups])
    sizes = np.array([g.size for g in groups], float)
    estimate = float(np.median(means))
    se = math.sqrt(math.pi / 2) * _MAD_TO_SD * float(np.median(np.abs(means - estimate))) / math.sqrt(n_groups)
    sd = float(x.std(ddof=1)) if x.size > 1 else 0.0
    bound = sd * math.sqrt((n_groups - 1) / n_groups ** 2 * float(np.sum(1.0 / sizes)))
    return Aggregate(estimate, se, bound)


def trimmed_mean(x, trim: float) -> Aggregate:
    """Mean of the estimates ``x`` without the ⌊trim N⌋ smallest and largest (see the module
    docstring for its bias). With ⌊trim N⌋ = 0 it is the mean (bias bound 0)."""
    owner = "trimmed_mean"
    trim = real("trim", trim, low=0.0, high=0.5, low_open=True, high_open=True, owner=owner)
    x = _estimates(x, owner)
    n = x.size
    if n < 2:
        raise ValueError(f"{owner}: needs at least 2 estimates, got {n}")
    g = int(math.floor(trim * n))
    s = np.sort(x)
    estimate = float(s[g:n - g].mean())
    winsorised = np.clip(s, s[g], s[n - 1 - g])
    se = float(winsorised.std(ddof=1)) / ((1.0 - 2.0 * g / n) * math.sqrt(n))
    bound = float(x.std(ddof=1)) * math.sqrt(2.0 * g * (n - 1)) / (n - 2 * g)
    return Aggregate(estimate, se, bound)


def aggregate(x, estimator: str = "mean", n_groups: int | None = None, trim: float = 0.05,
              ci: float = 0.95) -> Aggregate:
    """Aggregate the estimates ``x`` with ``estimator`` ("mean", "median_of_means", "trimmed_mean").

    ``n_groups`` (median of means) defaults to :func:`default_groups` of ``ci``; ``trim``
    (trimmed mean) is the fraction dropped at each end. The mean's SE is the sample SD / sqrt(N)
    (NaN for one estimate); its bias bound is 0 (it is unbiased).
    """
    estimator, n_groups, trim = check_aggregation(estimator, n_groups, trim, "aggregate")
    if estimator == "median_of_means":
        return median_of_means(x, default_groups(ci) if n_groups is None else n_groups)
    if estimator == "trimmed_mean":
        return trimmed_mean(x, trim)
    x = _estimates(x, "aggregate")
    mean = float(x.mean()) if x.size else math.nan
    se = float(x.std(ddof=1) / math.sqrt(x.size)) if x.size > 1 else math.nan
    return Aggregate(mean, se, 0.0)
