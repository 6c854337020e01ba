"""NumPy forward draws of data given a partition (prior predictive sampling).

Each function draws the parameters of every occupied block from the prior and
then the points of that block; the parametrisations match
:mod:`pymc_partitions.families.symbolic`.  All return float arrays of shape
(n, D) (or ``size + (n, D)`` where ``size`` is supported).
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "draw_normal_normal",
    "draw_normal_normal_full",
    "draw_niw",
    "draw_beta_bernoulli",
]


def _rng(rng):
    return rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)


def _blocks(labels):
    labels = np.asarray(labels).reshape(-1)
    _, inv = np.unique(labels, return_inverse=True)
    inv = inv.reshape(-1)
    K = int(inv.max()) + 1 if inv.size else 0
    return inv, K


def _size_tuple(size):
    if size is None:
        return ()
    if np.ndim(size) == 0:
        return (int(size),)
    return tuple(int(s) for s in size)


def draw_normal_normal(labels, mu0, sigma0, sigma, rng, size=None):
    """Diagonal NormalNormal: ``mu_b ~ N(mu0, diag(sigma0^2))``, ``y_i ~ N(mu_b, diag(sigma^2))``.

    D is the broadcast length of ``mu0, sigma0, sigma`` (scalars give D = 1).
    ``size`` (optional) prepends independent replicate dimensions, each with its
    own block means.
    """
    rng = _rng(rng)
    mu0, sigma0, sigma = np.broadcast_arrays(
        np.atleast_1d(np.asarray(mu0, float)),
        np.atleast_1d(np.asarray(sigma0, float)),
        np.atleast_1d(np.asarray(sigma, float)),
    )
    inv, K = _blocks(labels)
    n, D = inv.size, mu0.shape[-1]
    batch = _size_tuple(size)
    mus = mu0 + sigma0 * rng.standard_normal(batch + (K, D))
    return mus[..., inv, :] + sigma * rng.standard_normal(batch + (n, D))


def draw_normal_normal_full(labels, mu0, cov0, cov, rng):
    """Full-covariance NormalNormal: ``mu_b ~ N(mu0, cov0)``, ``y_i ~ N(mu_b, cov)``."""
    rng = _rng(rng)
    cov0 = np.atleast_2d(np.asarray(cov0, float))
    cov = np.atleast_2d(np.asarray(cov, float))
    D = cov.shape[0]
    mu0 = np.broadcast_to(np.asarray(mu0, float), (D,))
    inv, K = _blocks(labels)
    n = inv.size
    L0 = np.linalg.cholesky(cov0)
    L = np.linalg.cholesky(cov)
    mus = mu0 + rng.standard_normal((K, D)) @ L0.T
    return mus[inv] + rng.standard_normal((n, D)) @ L.T


def draw_niw(labels, mu0, kappa0, nu0, scale0, rng):
    """Normal-inverse-Wishart: ``Sigma_b ~ InvWishart(nu0, scale0)``,
    ``mu_b | Sigma_b ~ N(mu0, Sigma_b / kappa0)``, ``y_i ~ N(mu_b, Sigma_b)``."""
    rng = _rng(rng)
    scale0 = np.atleast_2d(np.asarray(scale0, float))
    D = scale0.shape[0]
    mu0 = np.broadcast_to(np.asarray(mu0, float), (D,))
    kappa0 = float(kappa0)
    nu0 = float(nu0)
    from scipy import stats  # noqa: PLC0415 (imported on use: import time)

    inv, K = _blocks(labels)
    n = inv.size
    Y = np.empty((n, D))
    for k in range(K):
        idx = np.flatnonzero(inv == k)
        Sigma = np.reshape(stats.invwishart.rvs(df=nu0, scale=scale0, random_state=rng), (D, D))
        L = np.linalg.cholesky(Sigma)
        mu = mu0 + (L @ rng.standard_normal(D)) / np.sqrt(kappa0)
        Y[idx] = mu + rng.standard_normal((idx.size, D)) @ L.T
    return Y


def draw_beta_bernoulli(labels, a, b, rng, D=None):
    """Beta-Bernoulli: ``theta_bd ~ Beta(a_d, b_d)``, ``y_id ~ Bernoulli(theta_bd)``.

    ``a`` and ``b`` are length-D arrays (or scalars, broadcast to ``D`` if given).
    Returns float 0/1 values.
    """
    rng = _rng(rng)
    a = np.atleast_1d(np.asarray(a, float))
    b = np.atleast_1d(np.asarray(b, float))
    if D is None:
        D = np.broadcast_shapes(a.shape, b.shape)[-1]
    a = np.broadcast_to(a, (D,))
    b = np.broadcast_to(b, (D,))
    inv, K = _blocks(labels)
    n = inv.size
    theta = rng.beta(a, b, size=(K, D))
    return (rng.random((n, D)) < theta[inv]).astype(float)


__all__ += ["draw_gamma_poisson", "draw_dirichlet_categorical"]


def draw_gamma_poisson(labels, alpha, beta, rng, D=None):
    """Gamma-Poisson: ``lambda_bd ~ Gamma(alpha_d, rate beta_d)``, ``y_id ~ Poisson(lambda_bd)``.
    Returns float counts (n, D)."""
    rng = _rng(rng)
    alpha = np.atleast_1d(np.asarray(alpha, float))
    beta = np.atleast_1d(np.asarray(beta, float))
    if D is None:
        D = np.broadcast_shapes(alpha.shape, beta.shape)[-1]
    alpha = np.broadcast_to(alpha, (D,))
    beta = np.broadcast_to(beta, (D,))
    inv, K = _blocks(labels)
    rates = rng.gamma(alpha, 1.0 / beta, size=(K, D))
    return rng.poisson(rates[inv]).astype(float)


def draw_dirichlet_categorical(labels, a, n_categories, rng):
    """Dirichlet-categorical: ``theta_bd ~ Dirichlet(a_d[:C_d])``, ``y_id ~ Categorical(theta_bd)``.
    ``a`` is (D, max C) or broadcastable to it; returns float categories (n, D)."""
    rng = _rng(rng)
    n_cat = np.atleast_1d(np.asarray(n_categories, np.int64))
    D = n_cat.size
    a = np.broadcast_to(np.asarray(a, float), (D, int(n_cat.max())))
    inv, K = _blocks(labels)
    out = np.empty((inv.size, D))
    for d in range(D):
        theta = rng.dirichlet(a[d, :n_cat[d]], size=K)  # (K, C_d)
        cum = np.cumsum(theta, axis=1)
        u = rng.random(inv.size)
        out[:, d] = np.minimum((u[:, None] > cum[inv]).sum(axis=1), n_cat[d] - 1)
    return out


__all__ += ["draw_normal_linear_regression"]


def draw_normal_linear_regression(labels, X, mu0, cov0, a0, b0, rng):
    """Clusters of regressions: ``sigma_b^2 ~ InvGamma(a0, b0)``, ``beta_b | sigma_b^2 ~ N(mu0, sigma_b^2
    cov0)``, ``y_i ~ N(x_i . beta_b, sigma_b^2)``. ``X`` (n, p); returns (n, 1)."""
    rng = _rng(rng)
    X = np.asarray(X, float)
    p = X.shape[1]
    mu0 = np.broadcast_to(np.asarray(mu0, float), (p,))
    cov0 = np.asarray(cov0, float)
    if cov0.ndim < 2:
        cov0 = np.diag(np.broadcast_to(cov0, (p,)))
    inv, K = _blocks(labels)
    sigma2 = float(b0) / rng.gamma(float(a0), size=K)
    beta = mu0 + np.sqrt(sigma2)[:, None] * (rng.standard_normal((K, p)) @ np.linalg.cholesky(cov0).T)
    mean = np.einsum("np,np->n", X, beta[inv])
    return (mean + np.sqrt(sigma2)[inv] * rng.standard_normal(inv.size))[:, None]
