"""Updates of a CRP concentration that cost O(1) in the number of items."""

from __future__ import annotations

import math

import numpy as np

__all__ = ["escobar_west"]


def escobar_west(alpha: float, n_clusters: int, n: int, shape: float, rate: float, rng: np.random.Generator) -> float:
    """One exact Gibbs draw of alpha | partition for alpha ~ Gamma(shape, rate) and a CRP(alpha) prior.

    Escobar & West (1995): eta ~ Beta(alpha + 1, n); then alpha ~ Gamma(shape + K, rate - log eta)
    with probability odds/(1 + odds), odds = (shape + K - 1) / (n (rate - log eta)), else
    Gamma(shape + K - 1, rate - log eta). Leaves p(alpha | partition) invariant.
    """
    eta = rng.beta(alpha + 1.0, n)
    post_rate = rate - math.log(eta)
    odds = (shape + n_clusters - 1.0) / (n * post_rate)
    post_shape = shape + n_clusters if rng.random() * (1.0 + odds) < odds else shape + n_clusters - 1.0
    return float(rng.gamma(post_shape, 1.0 / post_rate))
