"""Conditional posteriors of the cluster parameters, draws from them, and collapsed predictive
densities of new points: numpy forms, vectorised over blocks and points.

Given a partition (canonical labels 0..K-1) and the data ``x`` (n, D) of one likelihood, every
conjugate family's cluster parameters have a closed-form posterior per block. A family object
(hyperparameters fixed) gives, from ``post = family.posterior(labels, K, x)``:

* ``family.log_predictive(post, points)``: the log collapsed predictive density of each new point
  given each block, then given an empty block (the prior predictive: the new-cluster term),
  shape (G, K + 1);
* ``family.draw(post, rng)``: one draw of every block's parameters from their conditional
  posterior (a dict of arrays with K rows; :attr:`Family.parameters` names them);
* ``family.replicate(params, labels, rng)``: data drawn given the labels and those parameters.

Formulas (m: the block's size; sums over the block's points; y-bar its mean):

``DiagNormal(mu0, sigma0, sigma)``
    mu_bd | data ~ N(mean, var), 1/var = 1/sigma0_d^2 + m/sigma_d^2,
    mean = var (mu0_d/sigma0_d^2 + sum y_d/sigma_d^2); predictive N(mean, var + sigma_d^2) per d.
``FullNormal(mu0, cov0, cov)``
    ``DiagNormal`` after the exact whitening y' = W y of
    :func:`~pymc_partitions.families.transforms.full_normal_whitening` (the kernels' own), mapped
    back: mu_b = W^{-1} mu'_b, densities times |det W|. Equivalently mu_b | data ~ N(P^{-1}
    (cov0^{-1} mu0 + cov^{-1} sum y), P^{-1}) with P = cov0^{-1} + m cov^{-1}.
``NIW(mu0, kappa0, nu0, scale0)``
    (mu_b, Sigma_b) | data ~ NIW(mu_m, kappa_m, nu_m, S_m): kappa_m = kappa0 + m, nu_m = nu0 + m,
    mu_m = (kappa0 mu0 + sum y) / kappa_m, S_m = scale0 + C + kappa0 m / kappa_m (y-bar - mu0)
    (y-bar - mu0)^T with C the scatter about y-bar; Sigma_b ~ InvWishart(nu_m, S_m) (Bartlett),
    mu_b | Sigma_b ~ N(mu_m, Sigma_b / kappa_m); predictive multivariate Student t with nu_m - D + 1
    degrees of freedom, location mu_m, shape S_m (kappa_m + 1) / (kappa_m (nu_m - D + 1)).
``BetaBernoulli(a, b)``
    theta_bd | data ~ Beta(a_d + ones, b_d + m - ones); predictive Bernoulli((a_d + ones) /
    (a_d + b_d + m)) per d.

The compiled kernels (:func:`~pymc_partitions.families.kernels.family_log_preds`) compute the same
predictive densities incrementally inside the samplers; ``tests/test_predictive_families.py``
keeps the two equal. Hyperparameters are validated when a family is made (``ValueError``).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np
from scipy.special import gammaln

from ..partition import canonicalize
from .kernels import BETA_BERNOULLI, DIAG_NORMAL, NIW
from .transforms import full_normal_whitening

__all__ = ["Family", "DiagNormal", "FullNormal", "NIWFamily", "BetaBernoulliFamily", "block_moments",
           "replicate"]

LOG_2PI = math.log(2.0 * math.pi)
_CHUNK = 1 << 20  # points x blocks x dims per chunk of the predictive densities (8 MB of float64)


@numba.njit(cache=True, error_model="numpy")
def _block_moments(labels, x, n_blocks, scatter):
    n, dim = x.shape
    counts = np.zeros(n_blocks)
    sums = np.zeros((n_blocks, dim))
    for i in range(n):
        b = labels[i]
        counts[b] += 1.0
        for d in range(dim):
            sums[b, d] += x[i, d]
    cross = np.zeros((n_blocks if scatter else 0, dim, dim))
    if scatter:  # about each block's mean (two passes: no cancellation for data far from 0)
        means = np.zeros((n_blocks, dim))
        for b in range(n_blocks):
            if counts[b] > 0.0:
                for d in range(dim):
                    means[b, d] = sums[b, d] / counts[b]
        for i in range(n):
            b = labels[i]
            for d in range(dim):
                r = x[i, d] - means[b, d]
                for e in range(d + 1):
                    cross[b, d, e] += r * (x[i, e] - means[b, e])
        for b in range(n_blocks):
            for d in range(dim):
                for e in range(d):
                    cross[b, e, d] = cross[b, d, e]
    return counts, sums, cross


def block_moments(labels, x, n_blocks: int, scatter: bool = False):
    """(sizes (K,), sums (K, D), scatter about the block means (K, D, D) or an empty array) of the
    rows of ``x`` (n, D) in blocks ``labels`` (n integers in [0, n_blocks)), in one compiled pass
    (two with ``scatter``)."""
    labels = np.ascontiguousarray(labels, dtype=np.int64)
    x = np.ascontiguousarray(x, dtype=np.float64)
    if x.ndim != 2 or labels.shape != (x.shape[0],):
        raise ValueError(f"block_moments: need labels (n,) and data (n, D), got {labels.shape} and {x.shape}")
    if labels.size and (labels.min() < 0 or labels.max() >= n_blocks):
        raise ValueError(f"block_moments: labels must lie in [0, {n_blocks})")
    return _block_moments(labels, x, int(n_blocks), bool(scatter))


def _chunks(n_points: int, n_blocks: int, dim: int):
    step = max(1, _CHUNK // max(1, n_blocks * dim))
    for start in range(0, n_points, step):
        yield slice(start, min(n_points, start + step))


def _vector(name, value, dim, *, positive=False) -> np.ndarray:
    arr = np.asarray(value, dtype=np.float64)
    try:
        arr = np.broadcast_to(arr, (dim,)).astype(np.float64)
    except ValueError:
        raise ValueError(f"{name} must be a scalar or have length D={dim}, got shape {arr.shape}") from None
    if not np.all(np.isfinite(arr)) or (positive and not np.all(arr > 0)):
        raise ValueError(f"{name} must be {'positive and ' if positive else ''}finite, got {value!r}")
    return arr


def _spd(name, value, dim) -> np.ndarray:
    arr = np.asarray(value, dtype=np.float64)
    if arr.ndim == 0:
        arr = float(arr) * np.eye(dim)
    if arr.shape != (dim, dim) or not np.all(np.isfinite(arr)) or not np.allclose(arr, arr.T):
        raise ValueError(f"{name} must be a finite symmetric {dim}x{dim} matrix, got shape {arr.shape}")
    try:
        np.linalg.cholesky(arr)
    except np.linalg.LinAlgError:
        raise ValueError(f"{name} must be positive definite") from None
    return 0.5 * (arr + arr.T)


class Family:
    """A conjugate cluster likelihood with fixed hyperparameters (see the module docstring).

    ``parameters`` maps each cluster parameter's name to its dimensions after the cluster
    dimension, e.g. ``{"mu": ("dim",), "cov": ("dim", "dim_other")}``. ``code`` is the kernels'
    family code and ``binary`` says whether data are 0/1.
    """

    code: int = -1
    binary: bool = False
    parameters: dict = {}
    dim: int

    def posterior(self, labels, n_blocks: int, x):
        """Conditional posterior of every block's parameters: rows 0..K-1 for the blocks of
        ``labels`` (canonical, or any labels in [0, n_blocks)), row K for an empty block (the prior)."""
        raise NotImplementedError

    def log_predictive(self, post, points) -> np.ndarray:
        """(G, K + 1): log predictive density of each of ``points`` (G, D) given each block, then
        given an empty block."""
        raise NotImplementedError

    def draw(self, post, rng) -> dict:
        """One draw of the K blocks' parameters from ``post`` (dict of arrays with K rows)."""
        raise NotImplementedError

    def replicate(self, params: dict, labels, rng) -> np.ndarray:
        """(n, D) data given the labels (canonical) and the blocks' ``params``."""
        raise NotImplementedError

    def posterior_mean(self, post) -> dict:
        """Mean of every block's parameters under ``post`` (dict of arrays with K rows)."""
        raise NotImplementedError


class DiagNormalPosterior(NamedTuple):
    mean: np.ndarray  # (K + 1, D)
    var: np.ndarray  # (K + 1, D): posterior variance of the mean


class DiagNormal(Family):
    """``y_bd ~ N(mu_bd, sigma_d^2)``, ``mu_bd ~ N(mu0_d, sigma0_d^2)``."""

    code = DIAG_NORMAL
    parameters = {"mu": ("dim",)}

    def __init__(self, mu0, sigma0, sigma, dim: int):
        self.dim = int(dim)
        self.mu0 = _vector("mu0", mu0, self.dim)
        self.var0 = _vector("sigma0", sigma0, self.dim, positive=True) ** 2
        self.var = _vector("sigma", sigma, self.dim, positive=True) ** 2

    def posterior(self, labels, n_blocks, x):
        counts, sums, _ = block_moments(labels, x, n_blocks)
        var = 1.0 / (1.0 / self.var0 + counts[:, None] / self.var)
        mean = (self.mu0 / self.var0 + sums / self.var) * var
        return DiagNormalPosterior(np.vstack([mean, self.mu0]), np.vstack([var, self.var0]))

    def log_predictive(self, post, points):
        points = np.asarray(points, dtype=np.float64)
        v = post.var + self.var
        const = -0.5 * (LOG_2PI * self.dim + np.log(v).sum(axis=1))
        out = np.empty((points.shape[0], v.shape[0]))
        for rows in _chunks(points.shape[0], v.shape[0], self.dim):
            diff = points[rows, None, :] - post.mean[None]
            out[rows] = const - 0.5 * (diff * diff / v).sum(axis=2)
        return out

    def draw(self, post, rng):
        k = post.mean.shape[0] - 1
        return {"mu": post.mean[:k] + np.sqrt(post.var[:k]) * rng.standard_normal((k, self.dim))}

    def replicate(self, params, labels, rng):
        return params["mu"][labels] + np.sqrt(self.var) * rng.standard_normal((len(labels), self.dim))

    def posterior_mean(self, post):
        return {"mu": post.mean[:-1]}


class FullNormal(Family):
    """``y_b ~ N(mu_b, cov)``, ``mu_b ~ N(mu0, cov0)``: the :class:`DiagNormal` of the whitened data."""

    code = DIAG_NORMAL
    parameters = {"mu": ("dim",)}

    def __init__(self, mu0, cov0, cov, dim: int):
        self.dim = int(dim)
        self.whitening = full_normal_whitening(_vector("mu0", mu0, self.dim), _spd("cov0", cov0, self.dim),
                                               _spd("cov", cov, self.dim), self.dim)
        w = self.whitening
        self.whitened = DiagNormal(w.mu0_2, w.sigma0_2, 1.0, self.dim)

    def _whiten(self, x):
        return np.asarray(x, dtype=np.float64) @ self.whitening.W.T

    def posterior(self, labels, n_blocks, x):
        return self.whitened.posterior(labels, n_blocks, self._whiten(x))

    def log_predictive(self, post, points):
        return self.whitened.log_predictive(post, self._whiten(points)) + self.whitening.log_jacobian

    def draw(self, post, rng):
        return {"mu": self.whitened.draw(post, rng)["mu"] @ self.whitening.W_inv.T}

    def replicate(self, params, labels, rng):
        return params["mu"][labels] + rng.standard_normal((len(labels), self.dim)) @ self.whitening.chol_cov.T

    def posterior_mean(self, post):
        return {"mu": post.mean[:-1] @ self.whitening.W_inv.T}

    def posterior_cov(self, post):
        """(K, D, D) posterior covariance of every block's mean, in the original space."""
        w_inv = self.whitening.W_inv
        return np.einsum("ij,kj,lj->kil", w_inv, post.var[:-1], w_inv)


class NIWPosterior(NamedTuple):
    mu: np.ndarray  # (K + 1, D)
    kappa: np.ndarray  # (K + 1,)
    nu: np.ndarray  # (K + 1,)
    scale: np.ndarray  # (K + 1, D, D)
    chol: np.ndarray  # (K + 1, D, D): lower Cholesky factor of scale


class NIWFamily(Family):
    """``Sigma_b ~ InvWishart(nu0, scale0)``, ``mu_b | Sigma_b ~ N(mu0, Sigma_b / kappa0)``,
    ``y_b ~ N(mu_b, Sigma_b)``."""

    code = NIW
    parameters = {"mu": ("dim",), "cov": ("dim", "dim_other")}

    def __init__(self, mu0, kappa0, nu0, scale0, dim: int):
        self.dim = int(dim)
        self.mu0 = _vector("mu0", mu0, self.dim)
        self.kappa0 = float(kappa0)
        self.nu0 = float(nu0)
        if not (math.isfinite(self.kappa0) and self.kappa0 > 0):
            raise ValueError(f"kappa0 must be positive and finite, got {kappa0!r}")
        if not (math.isfinite(self.nu0) and self.nu0 > self.dim - 1):
            raise ValueError(f"nu0 must be finite and > D - 1 = {self.dim - 1}, got {nu0!r}")
        self.scale0 = _spd("scale0", scale0, self.dim)

    def posterior(self, labels, n_blocks, x):
        counts, sums, cross = block_moments(labels, x, n_blocks, scatter=True)
        kappa = self.kappa0 + counts
        mu = (self.kappa0 * self.mu0 + sums) / kappa[:, None]
        gap = sums / np.maximum(counts, 1.0)[:, None] - self.mu0
        scale = self.scale0 + cross + (self.kappa0 * counts / kappa)[:, None, None] * gap[:, :, None] * gap[:, None, :]
        mu = np.vstack([mu, self.mu0])
        kappa = np.append(kappa, self.kappa0)
        nu = np.append(self.nu0 + counts, self.nu0)
        scale = np.concatenate([scale, self.scale0[None]])
        return NIWPosterior(mu, kappa, nu, scale, np.linalg.cholesky(scale))

    def log_predictive(self, post, points):
        points = np.asarray(points, dtype=np.float64)
        dim = self.dim
        diag = np.diagonal(post.chol, axis1=1, axis2=2)
        ratio = post.kappa / (post.kappa + 1.0)
        const = (gammaln(0.5 * (post.nu + 1.0)) - gammaln(0.5 * (post.nu + 1.0 - dim)) - 0.5 * dim * math.log(math.pi)
                 + 0.5 * dim * np.log(ratio) - np.log(diag).sum(axis=1))
        inv_chol = np.linalg.inv(post.chol)
        out = np.empty((points.shape[0], post.mu.shape[0]))
        for rows in _chunks(points.shape[0], post.mu.shape[0], dim):
            diff = points[rows, None, :] - post.mu[None]
            w = np.einsum("kde,gke->gkd", inv_chol, diff)
            out[rows] = const - 0.5 * (post.nu + 1.0) * np.log1p((w * w).sum(axis=2) * ratio)
        return out

    def draw(self, post, rng):
        k, dim = post.mu.shape[0] - 1, self.dim
        # Bartlett: Sigma^{-1} = L^{-T} A A^T L^{-1} ~ Wishart(nu, S^{-1}) with S = L L^T, A lower
        # triangular, A_ii^2 ~ chi2(nu - i), A_ij ~ N(0, 1) below; so Sigma = F F^T, F = L A^{-T}
        a = np.zeros((k, dim, dim))
        rows, cols = np.tril_indices(dim, -1)
        a[:, rows, cols] = rng.standard_normal((k, rows.size))
        idx = np.arange(dim)
        a[:, idx, idx] = np.sqrt(rng.chisquare(post.nu[:k, None] - idx[None, :]))
        factor = post.chol[:k] @ np.linalg.inv(a).transpose(0, 2, 1)
        cov = factor @ factor.transpose(0, 2, 1)
        z = rng.standard_normal((k, dim))
        mu = post.mu[:k] + np.einsum("kde,ke->kd", factor, z) / np.sqrt(post.kappa[:k])[:, None]
        return {"mu": mu, "cov": 0.5 * (cov + cov.transpose(0, 2, 1))}

    def replicate(self, params, labels, rng):
        labels = np.asarray(labels)
        chol = np.linalg.cholesky(params["cov"])
        eps = rng.standard_normal((labels.size, self.dim))
        out = np.empty((labels.size, self.dim))
        order = np.argsort(labels, kind="stable")
        ends = np.cumsum(np.bincount(labels, minlength=params["mu"].shape[0]))
        start = 0
        for b, end in enumerate(ends):
            items = order[start:end]
            out[items] = params["mu"][b] + eps[items] @ chol[b].T
            start = end
        return out

    def posterior_mean(self, post):
        df = post.nu[:-1] - self.dim - 1.0
        cov = np.where(df[:, None, None] > 0, post.scale[:-1] / np.where(df > 0, df, 1.0)[:, None, None], np.inf)
        return {"mu": post.mu[:-1], "cov": cov}


class BetaBernoulliPosterior(NamedTuple):
    a: np.ndarray  # (K + 1, D)
    b: np.ndarray  # (K + 1, D)


class BetaBernoulliFamily(Family):
    """``theta_bd ~ Beta(a_d, b_d)``, ``y_bd ~ Bernoulli(theta_bd)``; data and points 0/1."""

    code = BETA_BERNOULLI
    binary = True
    parameters = {"theta": ("dim",)}

    def __init__(self, a, b, dim: int):
        self.dim = int(dim)
        self.a = _vector("a", a, self.dim, positive=True)
        self.b = _vector("b", b, self.dim, positive=True)

    def posterior(self, labels, n_blocks, x):
        counts, ones, _ = block_moments(labels, x, n_blocks)
        return BetaBernoulliPosterior(np.vstack([self.a + ones, self.a]),
                                      np.vstack([self.b + counts[:, None] - ones, self.b]))

    def log_predictive(self, post, points):
        points = np.asarray(points, dtype=np.float64)
        total = np.log(post.a + post.b)
        log_p1 = np.log(post.a) - total
        log_p0 = np.log(post.b) - total
        return points @ (log_p1 - log_p0).T + log_p0.sum(axis=1)

    def draw(self, post, rng):
        return {"theta": rng.beta(post.a[:-1], post.b[:-1])}

    def replicate(self, params, labels, rng):
        return (rng.random((len(labels), self.dim)) < params["theta"][labels]).astype(np.float64)

    def posterior_mean(self, post):
        return {"theta": post.a[:-1] / (post.a[:-1] + post.b[:-1])}


def replicate(family: Family, labels, x, rng):
    """Replicated data given a partition and the observed data ``x`` (n, D): every block's
    parameters drawn from their conditional posterior, then the block's data. Returns
    ((n, D) replicate, the parameters drawn); ``labels`` any integer labels (canonicalised here)."""
    labels = canonicalize(labels)
    k = int(labels.max()) + 1 if labels.size else 0
    params = family.draw(family.posterior(labels, k, x), rng)
    return family.replicate(params, labels, rng), params


# ----------------------------------------------------------------------------- count and categorical families
#
# ``GammaPoisson(alpha, beta)``
#     lambda_bd | data ~ Gamma(alpha_d + sum y_d, rate beta_d + m); predictive negative binomial per
#     d: p(x) = Gamma(s + x) / (Gamma(s) x!) (r / (r + 1))^s (r + 1)^-x with shape s and rate r.
# ``DirichletCategorical(a, C)``
#     theta_bd | data ~ Dirichlet(a_d + counts of each category); predictive categorical with
#     probabilities (a_dk + c_dk) / (A_d + m) per variable d. Data and points are integer
#     categories (n, D); the kernels see them one-hot (kernels.dirichlet_categorical_data).

from .kernels import DIRICHLET_CATEGORICAL, GAMMA_POISSON, dirichlet_categorical_data  # noqa: E402

__all__ += ["GammaPoissonFamily", "DirichletCategoricalFamily", "check_counts"]


#: Largest count accepted: float64 holds every integer up to 2^53 exactly, and the kernels add
#: counts (their sums must stay exact too; ``FamilyPack.build`` checks the column sums).
MAX_COUNT = 2**52


def check_counts(x, what="counts") -> np.ndarray:
    """``x`` as float64 if every entry is a non-negative integer of at most :data:`MAX_COUNT`,
    else ``ValueError``. Integer arrays are checked before the conversion, so that 2^63 + 10 is
    reported as too large rather than rounded."""
    raw = np.asarray(x)
    if raw.dtype.kind in "iu" and raw.size and (int(raw.max()) > MAX_COUNT):
        raise ValueError(f"{what} must be at most 2^52 = {MAX_COUNT} (float64 holds integers exactly only up to "
                         f"2^53, and the sufficient statistics are sums), got {int(raw.max())}: rescale the data")
    arr = np.asarray(x, dtype=np.float64)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{what} contain NaN or infinite values")
    if not np.all((arr >= 0) & (arr == np.floor(arr))):
        raise ValueError(f"{what} must be non-negative integers")
    if arr.size and arr.max() > MAX_COUNT:
        raise ValueError(f"{what} must be at most 2^52 = {MAX_COUNT} (float64 holds integers exactly only up to "
                         f"2^53, and the sufficient statistics are sums), got {arr.max():.4g}: rescale the data")
    return arr


class GammaPoissonPosterior(NamedTuple):
    shape: np.ndarray  # (K + 1, D)
    rate: np.ndarray  # (K + 1, D)


class GammaPoissonFamily(Family):
    """``lambda_bd ~ Gamma(alpha_d, rate beta_d)``, ``y_bd ~ Poisson(lambda_bd)``; data and points
    are non-negative integer counts."""

    code = GAMMA_POISSON
    parameters = {"rate": ("dim",)}

    def __init__(self, alpha, beta, dim: int):
        self.dim = int(dim)
        self.alpha = _vector("alpha", alpha, self.dim, positive=True)
        self.beta = _vector("beta", beta, self.dim, positive=True)

    def posterior(self, labels, n_blocks, x):
        counts, sums, _ = block_moments(labels, check_counts(x, "data"), n_blocks)
        return GammaPoissonPosterior(np.vstack([self.alpha + sums, self.alpha]),
                                     np.vstack([self.beta + counts[:, None], self.beta]))

    def log_predictive(self, post, points):
        points = check_counts(points, "points")
        s, r = post.shape, post.rate
        const = (s * (np.log(r) - np.log1p(r)) - gammaln(s)).sum(axis=1)  # (K + 1,)
        out = np.empty((points.shape[0], s.shape[0]))
        log_fact = gammaln(points + 1.0).sum(axis=1)
        for rows in _chunks(points.shape[0], s.shape[0], self.dim):
            x = points[rows, None, :]
            out[rows] = const + (gammaln(s[None] + x) - x * np.log1p(r)[None]).sum(axis=2) - log_fact[rows, None]
        return out

    def draw(self, post, rng):
        k = post.shape.shape[0] - 1
        return {"rate": rng.gamma(post.shape[:k], 1.0 / post.rate[:k])}

    def replicate(self, params, labels, rng):
        return rng.poisson(params["rate"][labels]).astype(np.float64)

    def posterior_mean(self, post):
        return {"rate": post.shape[:-1] / post.rate[:-1]}


class DirichletCategoricalPosterior(NamedTuple):
    conc: np.ndarray  # (K + 1, D, max C): Dirichlet concentrations, 0 past C_d


class DirichletCategoricalFamily(Family):
    """``theta_bd ~ Dirichlet(a_d[:C_d])``, ``y_bd ~ Categorical(theta_bd)``; data and points are
    integer categories (n, D), column d in 0..C_d - 1. ``a`` is a scalar, a length-max(C) vector
    or (D, max C); ``n_categories`` a length-D integer vector."""

    code = DIRICHLET_CATEGORICAL
    parameters = {"p": ("dim", "category")}

    def __init__(self, a, n_categories, dim: int):
        self.dim = int(dim)
        n_cat = np.asarray(n_categories)
        if not np.issubdtype(n_cat.dtype, np.number) or not np.all(n_cat == np.round(n_cat)):
            raise ValueError(f"n_categories must be integers, got {n_categories!r}")
        self.n_categories = np.broadcast_to(n_cat.astype(np.int64), (self.dim,)).copy()
        if not np.all(self.n_categories >= 1):
            raise ValueError(f"n_categories must be at least 1, got {self.n_categories.tolist()}")
        c_max = int(self.n_categories.max())
        arr = np.asarray(a, dtype=np.float64)
        try:
            arr = np.broadcast_to(arr, (self.dim, c_max)).astype(np.float64)
        except ValueError:
            raise ValueError(f"a must be a scalar, a length-{c_max} vector or ({self.dim}, {c_max}), "
                             f"got shape {arr.shape}") from None
        self.used = np.arange(c_max)[None, :] < self.n_categories[:, None]
        if not np.all(np.isfinite(arr[self.used])) or not np.all(arr[self.used] > 0):
            raise ValueError(f"a must be positive and finite, got {a!r}")
        self.a = np.where(self.used, arr, 0.0)

    def _check(self, x, what):
        x = np.asarray(x, dtype=np.float64)
        if x.ndim == 1 and self.dim == 1:
            x = x[:, None]
        try:
            dirichlet_categorical_data(x, self.n_categories)
        except ValueError as err:
            raise ValueError(f"{what}: {err}") from None
        return x.astype(np.int64)

    def posterior(self, labels, n_blocks, x):
        x = self._check(x, "data")
        labels = np.asarray(labels, np.int64)
        c = np.zeros((n_blocks, self.dim, self.a.shape[1]))
        for d in range(self.dim):
            np.add.at(c, (labels, d, x[:, d]), 1.0)
        return DirichletCategoricalPosterior(np.concatenate([self.a[None] + c, self.a[None]]) * self.used[None])

    def log_predictive(self, post, points):
        points = self._check(points, "points")
        with np.errstate(divide="ignore"):
            log_p = np.log(post.conc) - np.log(post.conc.sum(axis=2, keepdims=True))  # (K + 1, D, C)
        out = np.zeros((points.shape[0], post.conc.shape[0]))
        for d in range(self.dim):
            out += log_p[:, d, points[:, d]].T
        return out

    def draw(self, post, rng):
        k = post.conc.shape[0] - 1
        g = rng.gamma(np.where(self.used[None], post.conc[:k], 1.0)) * self.used[None]
        return {"p": g / g.sum(axis=2, keepdims=True)}

    def replicate(self, params, labels, rng):
        p = params["p"][labels]  # (n, D, C)
        u = rng.random(p.shape[:2])
        return np.minimum((u[:, :, None] > np.cumsum(p, axis=2)).sum(axis=2), self.n_categories - 1).astype(float)

    def posterior_mean(self, post):
        conc = post.conc[:-1]
        return {"p": conc / conc.sum(axis=2, keepdims=True)}


# ----------------------------------------------------------------------------- clusters of regressions
#
# ``NormalLinearRegressionFamily(X, mu0, cov0, a0, b0)``
#     y_i = x_i . beta_b + e_i, e_i ~ N(0, sigma_b^2); beta_b | sigma_b^2 ~ N(mu0, sigma_b^2 cov0),
#     sigma_b^2 ~ InvGamma(a0, b0). Given a block: Lam = cov0^{-1} + X_b'X_b, mean = Lam^{-1}
#     (cov0^{-1} mu0 + X_b'y_b), a = a0 + m/2, b = b0 + (y_b'y_b + mu0' cov0^{-1} mu0 - mean' Lam mean)/2;
#     sigma_b^2 | data ~ InvGamma(a, b), beta_b | sigma_b^2, data ~ N(mean, sigma_b^2 Lam^{-1}). The
#     predictive of a new item with covariates x is a Student t with 2a degrees of freedom, location
#     x . mean, scale^2 (b / a)(1 + x' Lam^{-1} x). The design matrix X of the observed items belongs to
#     the family; the data are the responses (n, 1); new points are rows [x (p), y] (G, p + 1).

from .kernels import LINEAR_REGRESSION  # noqa: E402

__all__ += ["NormalLinearRegressionFamily", "check_design"]


def check_design(X, n=None, what="X") -> np.ndarray:
    """A design matrix as float64 (n, p) with p >= 1 and finite entries, else ``ValueError`` naming it
    (``n``: the number of rows it must have)."""
    arr = np.asarray(X, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[1] < 1:
        raise ValueError(f"{what} must be a 2-d (n, p) design matrix with p >= 1, got shape {arr.shape}")
    if n is not None and arr.shape[0] != n:
        raise ValueError(f"{what} has {arr.shape[0]} rows but there are n={n} items (one row per item)")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{what} contains {int(np.sum(~np.isfinite(arr)))} NaN or infinite values")
    return arr


class RegressionPosterior(NamedTuple):
    mean: np.ndarray  # (K + 1, p)
    prec: np.ndarray  # (K + 1, p, p): posterior precision of beta / sigma^2
    chol: np.ndarray  # (K + 1, p, p): its lower Cholesky factor
    a: np.ndarray  # (K + 1,)
    b: np.ndarray  # (K + 1,)


class NormalLinearRegressionFamily(Family):
    """Clusters of regressions with a Normal-inverse-Gamma prior per cluster (see above). ``X`` (n, p)
    is the design of the observed items (data: their responses); ``mu0`` a scalar or length p, ``cov0``
    a scalar, length-p diagonal or p x p positive definite matrix, ``a0``, ``b0`` positive."""

    code = LINEAR_REGRESSION
    parameters = {"beta": ("coefficient",), "sigma": ()}

    def __init__(self, X, mu0, cov0, a0, b0, dim: int = 1):
        self.X = check_design(X)
        self.dim = 1
        p = self.p = self.X.shape[1]
        self.mu0 = _vector("mu0", mu0, p)
        cov0 = np.asarray(cov0, dtype=np.float64)
        if cov0.ndim < 2:
            cov0 = np.diag(_vector("cov0", cov0, p, positive=True))
        self.cov0 = _spd("cov0", cov0, p)
        self.prec0 = np.linalg.inv(self.cov0)
        self.a0, self.b0 = float(a0), float(b0)
        for name, v in (("a0", self.a0), ("b0", self.b0)):
            if not (math.isfinite(v) and v > 0):
                raise ValueError(f"{name} must be positive and finite, got {v!r}")

    def _y(self, x):
        y = np.asarray(x, dtype=np.float64).reshape(self.X.shape[0], -1)
        if y.shape[1] != 1:
            raise ValueError(f"data must be the n={self.X.shape[0]} responses, got shape {np.shape(x)}")
        return y[:, 0]

    def posterior(self, labels, n_blocks, x):
        y = self._y(x)
        labels = np.asarray(labels, np.int64)
        p = self.p
        xtx = np.zeros((n_blocks + 1, p, p))
        np.add.at(xtx, labels, self.X[:, :, None] * self.X[:, None, :])
        xty = np.zeros((n_blocks + 1, p))
        np.add.at(xty, labels, self.X * y[:, None])
        yty = np.bincount(labels, weights=y * y, minlength=n_blocks + 1)
        counts = np.bincount(labels, minlength=n_blocks + 1).astype(float)
        prec = self.prec0 + xtx
        r = self.prec0 @ self.mu0 + xty
        chol = np.linalg.cholesky(prec)
        mean = np.linalg.solve(prec, r[..., None])[..., 0]
        quad = yty + self.mu0 @ self.prec0 @ self.mu0 - np.einsum("kp,kp->k", mean, r)
        return RegressionPosterior(mean, prec, chol, self.a0 + 0.5 * counts, self.b0 + 0.5 * np.maximum(quad, 0.0))

    def _points(self, points):
        pts = np.asarray(points, dtype=np.float64)
        if pts.ndim != 2 or pts.shape[1] != self.p + 1:
            raise ValueError(f"points of a regression must be rows [x (p={self.p} covariates), y], shape (G, "
                             f"{self.p + 1}), got {pts.shape}")
        if not np.all(np.isfinite(pts)):
            raise ValueError("points contain NaN or infinite values")
        return pts[:, :-1], pts[:, -1]

    def log_predictive(self, post, points):
        x, y = self._points(points)
        out = np.empty((x.shape[0], post.a.shape[0]))
        for rows in _chunks(x.shape[0], post.a.shape[0], self.p * self.p):
            u = np.linalg.solve(post.chol[None], np.broadcast_to(x[rows, None, :, None],
                                                                (x[rows].shape[0],) + post.mean.shape + (1,)))[..., 0]
            q = (u * u).sum(axis=2)  # (G, K + 1)
            loc = x[rows] @ post.mean.T
            scale2 = post.b / post.a * (1.0 + q)
            df = 2.0 * post.a
            z = (y[rows, None] - loc) ** 2 / (df * scale2)
            out[rows] = (gammaln(0.5 * (df + 1.0)) - gammaln(0.5 * df) - 0.5 * np.log(math.pi * df * scale2)
                         - 0.5 * (df + 1.0) * np.log1p(z))
        return out

    def draw(self, post, rng):
        k = post.a.shape[0] - 1
        sigma2 = post.b[:k] / rng.gamma(post.a[:k])
        z = rng.standard_normal((k, self.p))
        # beta = mean + sigma L^{-T} z has covariance sigma^2 Lam^{-1}
        dev = np.linalg.solve(post.chol[:k].transpose(0, 2, 1), z[..., None])[..., 0]
        return {"beta": post.mean[:k] + np.sqrt(sigma2)[:, None] * dev, "sigma": np.sqrt(sigma2)}

    def replicate(self, params, labels, rng):
        labels = np.asarray(labels, np.int64)
        mean = np.einsum("np,np->n", self.X, params["beta"][labels])
        return (mean + params["sigma"][labels] * rng.standard_normal(labels.size))[:, None]

    def posterior_mean(self, post):
        a, b = post.a[:-1], post.b[:-1]
        with np.errstate(divide="ignore", invalid="ignore"):
            sigma = np.where(a > 0.5, np.exp(0.5 * np.log(b) + gammaln(a - 0.5) - gammaln(a)), np.inf)
        return {"beta": post.mean[:-1], "sigma": sigma}
