"""Functions h of a partition whose posterior expectations :func:`pmp.sample_unbiased` estimates.

Any callable ``h(labels) -> scalar or array`` works (labels are canonical int64 vectors). The
ones here are the common questions about a clustering; the classes carry ``dims`` and ``coords``
so their array outputs get named dimensions in the result. ``PredictiveDensity`` needs the model:
:func:`pmp.sample_unbiased` calls its ``bind`` method with the model's likelihood and prior.
"""

from __future__ import annotations

import numpy as np

from .._checks import integer
from ..families.kernels import DIAG_NORMAL, FamilyPack
from ..families.predictive import DiagNormal
from ..partition import canonicalize
from ..families.mixture import log_predictive_density

__all__ = ["n_clusters", "largest_proportion", "LargestProportions", "CoClustering", "PredictiveDensity"]


def n_clusters(labels) -> int:
    """Number of blocks."""
    return int(np.max(labels)) + 1


def largest_proportion(labels) -> float:
    """Fraction of the items in the largest block (seed 000, Fig. 2B)."""
    return float(np.bincount(labels).max() / len(labels))


class LargestProportions:
    """Cumulative proportions of the items in the ``r`` largest blocks (0-padded when fewer blocks).

    Output dims: ``("rank",)`` with coords 1..r; entry j is the share of the j largest blocks.
    """

    def __init__(self, r: int):
        try:
            self.r = integer("r", r, low=1, owner="LargestProportions")
        except ValueError:
            raise ValueError(f"LargestProportions: r must be a positive integer, got {r!r}") from None
        self.dims = ("rank",)
        self.coords = {"rank": np.arange(1, self.r + 1)}

    def __call__(self, labels):
        sizes = np.sort(np.bincount(labels))[::-1][: self.r]
        out = np.zeros(self.r)
        out[: len(sizes)] = np.cumsum(sizes) / len(labels)
        out[len(sizes):] = 1.0
        return out


class CoClustering:
    """Indicators that items i and j share a block, for the given pairs (i, j).

    Output dims: ``("item_pair",)``; the coords are "i-j" strings.
    """

    def __init__(self, pairs):
        given = np.asarray(pairs)
        if given.ndim != 2 or given.shape[1] != 2 or len(given) == 0:
            raise ValueError(f"CoClustering: pairs must be a non-empty (p, 2) array of item indices, got shape "
                             f"{given.shape}")
        integral = given.dtype.kind in "iu" or (
            given.dtype.kind == "f" and np.isfinite(given).all() and (given == np.floor(given)).all())
        if not integral:
            raise ValueError(f"CoClustering: pairs must hold integer item indices, got {given.tolist()[:4]}")
        pairs = given.astype(np.int64)
        if pairs.min() < 0:
            raise ValueError("CoClustering: pairs must hold non-negative item indices")
        self.pairs = pairs
        self.dims = ("item_pair",)
        self.coords = {"item_pair": [f"{i}-{j}" for i, j in pairs]}

    def bind(self, pack: FamilyPack, prior_code: int, prior_params) -> "CoClustering":
        n = pack.data.shape[0]
        if self.pairs.max() >= n:
            raise ValueError(f"pairs index item {self.pairs.max()} but the partition has n={n} items")
        return self

    def __call__(self, labels):
        return (labels[self.pairs[:, 0]] == labels[self.pairs[:, 1]]).astype(float)


class PredictiveDensity:
    """Posterior predictive density of a new observation at ``grid`` points, NormalNormal models.

    Given the partition, a new point joins block b with the prior's predictive probability (for
    the CRP (|b| - d)/(n + alpha), a new block (alpha + K d)/(n + alpha)) and then has the
    family's Normal predictive density given that block (seed 000, App. B.2, eq. 11;
    :mod:`pymc_partitions.predictive`). Averaging over the posterior of the partition gives the
    posterior predictive density (``pmp.predictive_density`` does it for any family from
    ``pm.sample`` draws).

    ``grid``: (G,) for one-dimensional data or (G, D). Output dims: ``("grid",)``.
    """

    def __init__(self, grid):
        try:
            grid = np.asarray(grid, np.float64)
        except (TypeError, ValueError):
            raise TypeError(f"PredictiveDensity: grid must be numbers, got {grid!r}") from None
        if grid.ndim not in (1, 2) or grid.size == 0:
            raise ValueError(f"PredictiveDensity: grid must be a non-empty (G,) or (G, D) array, got shape "
                             f"{grid.shape}")
        if not np.isfinite(grid).all():
            raise ValueError("PredictiveDensity: grid points must be finite")
        self.grid = grid[:, None] if grid.ndim == 1 else grid
        self.dims = ("grid",)
        self.coords = {"grid": np.arange(len(self.grid))} if self.grid.shape[1] > 1 else {"grid": self.grid[:, 0]}
        self._bound = None

    def bind(self, pack: FamilyPack, prior_code: int, prior_params) -> "PredictiveDensity":
        codes = list(pack.codes)
        if codes != [DIAG_NORMAL]:
            raise ValueError("PredictiveDensity needs a model whose only likelihood of the partition is NormalNormal")
        dim = int(pack.dims[0])
        if self.grid.shape[1] != dim:
            raise ValueError(f"grid points have dimension {self.grid.shape[1]} but the data have D={dim}")
        h = pack.hyper[pack.hyper_off[0]:]
        mu0, s02, s2, log_jac = h[:dim], h[dim:2 * dim], h[2 * dim:3 * dim], h[3 * dim]
        if log_jac != 0.0:
            raise ValueError("PredictiveDensity supports NormalNormal with diagonal covariances (no cov=/cov0=)")
        bound = PredictiveDensity(self.grid)
        family = DiagNormal(mu0, np.sqrt(s02), np.sqrt(s2), dim)
        bound._bound = (family, pack.data[:, pack.data_off[0]:pack.data_off[0] + dim], int(prior_code),
                        np.asarray(prior_params, float))
        return bound

    def __call__(self, labels):
        if self._bound is None:
            raise RuntimeError("PredictiveDensity must be bound to a model first (sample_unbiased does it)")
        family, y, code, params = self._bound
        return np.exp(log_predictive_density(canonicalize(labels), code, params, [(family, y)], [self.grid]))
