"""Updates of a CRP concentration that cost O(1) in the number of items."""

from __future__ import annotations

import math

import numpy as np

from .. import _checks

__all__ = ["escobar_west", "escobar_west_log", "log_gamma_draw"]

_LOG_MAX = math.log(np.finfo(np.float64).max)  # exp overflows above it


def log_gamma_draw(shape: float, rate: float, rng: np.random.Generator) -> float:
    """log of a Gamma(shape, rate) draw, exact in log space for every shape > 0.

    A Gamma draw with a small shape is often below the smallest float: with shape 1e-3 it is below
    1e-308 about half the time, and a float draw is then 0 (whose log is -inf). For shape < 1 the
    draw is written G U^(1/shape) with G ~ Gamma(shape + 1) and U uniform on (0, 1] (Marsaglia &
    Tsang 2000, Sec. 5), whose log, log G + log(U) / shape, is a float however small the draw.
    """
    if shape >= 1.0:
        return math.log(rng.standard_gamma(shape)) - math.log(rate)
    boosted = math.log(rng.standard_gamma(shape + 1.0))
    return boosted + math.log(1.0 - rng.random()) / shape - math.log(rate)


def escobar_west_log(log_alpha: float, n_clusters: int, n: int, shape: float, rate: float,
                     rng: np.random.Generator) -> float:
    """One exact Gibbs draw of log alpha | partition for alpha ~ Gamma(shape, rate) and a CRP(alpha)
    prior, from and to log alpha.

    Escobar & West (1995): eta ~ Beta(alpha + 1, n); then alpha ~ Gamma(shape + K, rate - log eta)
    with probability odds/(1 + odds), odds = (shape + K - 1) / (n (rate - log eta)), else
    Gamma(shape + K - 1, rate - log eta). Leaves p(alpha | partition) invariant. The Gamma draw is
    made in log space (:func:`log_gamma_draw`): with one cluster and a vague prior such as
    Gamma(1e-3, 1e-3) the second Gamma has shape 1e-3 and alpha is often far below 1e-308, which
    log alpha still holds (``log_alpha = -inf``, alpha = 0, is accepted: the limit).
    """
    owner = "escobar_west"
    if not (isinstance(log_alpha, (float, np.floating)) and log_alpha == -math.inf):  # -inf: alpha = 0
        log_alpha = _checks.real("log_alpha", log_alpha, high=_LOG_MAX, owner=owner)
    n = _checks.integer("n", n, low=1, owner=owner)
    n_clusters = _checks.integer("n_clusters", n_clusters, low=1, high=n, owner=owner)
    shape = _checks.real("shape", shape, low=0.0, low_open=True, owner=owner)
    rate = _checks.real("rate", rate, low=0.0, low_open=True, owner=owner)
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"{owner}: rng must be a numpy Generator, got {type(rng).__name__}")
    alpha = math.exp(log_alpha)
    eta = rng.beta(alpha + 1.0, n)
    post_rate = rate - math.log(eta)
    odds = (shape + n_clusters - 1.0) / (n * post_rate)
    post_shape = shape + n_clusters if rng.random() * (1.0 + odds) < odds else shape + n_clusters - 1.0
    return log_gamma_draw(post_shape, post_rate, rng)


def escobar_west(alpha: float, n_clusters: int, n: int, shape: float, rate: float, rng: np.random.Generator) -> float:
    """:func:`escobar_west_log` from and to alpha itself: ``exp`` of the log-space draw, which is 0
    when alpha falls below the smallest float (alpha = 0 is accepted back, as that limit). Prefer
    :func:`escobar_west_log` when such draws matter (vague priors); the step method does."""
    alpha = _checks.real("alpha", alpha, low=0.0, owner="escobar_west")
    log_alpha = math.log(alpha) if alpha > 0.0 else -math.inf
    return math.exp(escobar_west_log(log_alpha, n_clusters, n, shape, rate, rng))
