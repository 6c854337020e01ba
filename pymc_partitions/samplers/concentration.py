"""Updates of a CRP concentration that cost O(1) in the number of items."""

from __future__ import annotations

import math

import numpy as np

from .. import _checks

__all__ = ["escobar_west"]


def escobar_west(alpha: float, n_clusters: int, n: int, shape: float, rate: float, rng: np.random.Generator) -> float:
    """One exact Gibbs draw of alpha | partition for alpha ~ Gamma(shape, rate) and a CRP(alpha) prior.

    Escobar & West (1995): eta ~ Beta(alpha + 1, n); then alpha ~ Gamma(shape + K, rate - log eta)
    with probability odds/(1 + odds), odds = (shape + K - 1) / (n (rate - log eta)), else
    Gamma(shape + K - 1, rate - log eta). Leaves p(alpha | partition) invariant.
    """
    owner = "escobar_west"
    alpha = _checks.real("alpha", alpha, low=0.0, low_open=True, owner=owner)
    n = _checks.integer("n", n, low=1, owner=owner)
    n_clusters = _checks.integer("n_clusters", n_clusters, low=1, high=n, owner=owner)
    shape = _checks.real("shape", shape, low=0.0, low_open=True, owner=owner)
    rate = _checks.real("rate", rate, low=0.0, low_open=True, owner=owner)
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"{owner}: rng must be a numpy Generator, got {type(rng).__name__}")
    eta = rng.beta(alpha + 1.0, n)
    post_rate = rate - math.log(eta)
    odds = (shape + n_clusters - 1.0) / (n * post_rate)
    post_shape = shape + n_clusters if rng.random() * (1.0 + odds) < odds else shape + n_clusters - 1.0
    return float(rng.gamma(post_shape, 1.0 / post_rate))
