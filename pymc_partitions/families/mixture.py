"""The predictive mixture of a new item given one partition (numpy; no PyMC).

Given a partition of n items into K blocks, the prior's sequential weights say where one more
item goes (:func:`~pymc_partitions.priors.new_item_log_probabilities`: join block b, or open a new
block), and each likelihood's collapsed predictive says what it looks like there
(:mod:`pymc_partitions.families.predictive`). With several likelihoods of one partition (features
of the same items) a new item's observations are independent given its block, so their log
predictives add; leaving a likelihood out marginalises its features (each block's predictive
integrates to one). So, for new points x (G of them):

    p(x | partition, data) = sum_b w_b prod_f p_f(x_f | block b's data) + w_new prod_f p_f(x_f)
    P(new item joins b | x, partition, data) = w_b prod_f p_f(x_f | b) / p(x | partition, data)

Averaging the first over posterior draws of the partition (and hyperparameters) gives the
Rao-Blackwellised posterior predictive density (:func:`pymc_partitions.predictive_density`).
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from .predictive import Family
from ..priors import new_item_log_probabilities

__all__ = ["mixture_log_terms", "log_predictive_density", "join_log_probabilities"]


def mixture_log_terms(labels, prior_code: int, prior_params, parts, points) -> np.ndarray:
    """(G, K + 1): log of (weight of block b) x (predictive of each point given block b), the last
    column for a new block.

    ``labels``: canonical labels (n,) of the partition; ``parts``: a list of (Family, data (n, D))
    for the likelihoods of the partition; ``points``: a list of the same length holding (G, D)
    points for each likelihood, or ``None`` for a likelihood left out (marginalised).
    """
    labels = np.asarray(labels, dtype=np.int64)
    sizes = np.bincount(labels)
    k = sizes.size
    out = None
    for (family, data), pts in zip(parts, points, strict=True):
        if pts is None:
            continue
        if not isinstance(family, Family):
            raise TypeError(f"parts must hold Family objects, got {type(family).__name__}")
        lp = family.log_predictive(family.posterior(labels, k, data), pts)
        out = lp if out is None else out + lp
    if out is None:
        raise ValueError("points must be given for at least one likelihood")
    params = np.asarray(prior_params, dtype=np.float64)
    return out + new_item_log_probabilities(int(prior_code), params, sizes.astype(np.int64))


def log_predictive_density(labels, prior_code, prior_params, parts, points) -> np.ndarray:
    """(G,): log p(x | partition, data) of each point (see the module docstring)."""
    return logsumexp(mixture_log_terms(labels, prior_code, prior_params, parts, points), axis=1)


def join_log_probabilities(labels, prior_code, prior_params, parts, points) -> np.ndarray:
    """(G, K + 1): log P(a new item at each point joins block b | x, partition, data); last column:
    it opens a new block. Rows sum to one (in probability)."""
    terms = mixture_log_terms(labels, prior_code, prior_params, parts, points)
    return terms - logsumexp(terms, axis=1, keepdims=True)
