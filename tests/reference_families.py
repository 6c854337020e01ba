"""Independent, slow numpy/scipy oracles for the collapsed block marginals.

Deliberately written without any code from ``pymc_partitions``:
* Normal models: the block is one big multivariate normal,
  vec(Y_b) ~ N(tile(mu0), kron(I_m, cov) + kron(ones(m, m), cov0)).
* NIW: chain rule of sequential multivariate Student-t posterior predictives.
* Beta-Bernoulli: chain rule of sequential Bernoulli predictives.
"""

from __future__ import annotations

import numpy as np
from scipy import stats


def ref_log_marginal_normal_normal_full(Yb, mu0, cov0, cov):
    Yb = np.atleast_2d(np.asarray(Yb, float))
    m, D = Yb.shape
    if m == 0:
        return 0.0
    cov = np.atleast_2d(np.asarray(cov, float))
    cov0 = np.atleast_2d(np.asarray(cov0, float))
    mean = np.tile(np.broadcast_to(np.asarray(mu0, float), (D,)), m)
    C = np.kron(np.eye(m), cov) + np.kron(np.ones((m, m)), cov0)
    return float(stats.multivariate_normal(mean=mean, cov=C).logpdf(Yb.reshape(-1)))


def ref_log_marginal_normal_normal(Yb, mu0, sigma0, sigma):
    Yb = np.atleast_2d(np.asarray(Yb, float))
    D = Yb.shape[1]
    s0 = np.broadcast_to(np.asarray(sigma0, float), (D,))
    s = np.broadcast_to(np.asarray(sigma, float), (D,))
    return ref_log_marginal_normal_normal_full(Yb, mu0, np.diag(s0**2), np.diag(s**2))


def ref_log_marginal_niw(Yb, mu0, kappa0, nu0, scale0):
    Yb = np.atleast_2d(np.asarray(Yb, float))
    m, D = Yb.shape
    kappa, nu = float(kappa0), float(nu0)
    u = np.broadcast_to(np.asarray(mu0, float), (D,)).copy()
    S = np.atleast_2d(np.asarray(scale0, float)).copy()
    total = 0.0
    for y in Yb:
        df = nu - D + 1.0
        shape = S * (kappa + 1.0) / (kappa * df)
        total += float(stats.multivariate_t(loc=u, shape=shape, df=df).logpdf(y))
        d = y - u
        S = S + kappa / (kappa + 1.0) * np.outer(d, d)
        u = (kappa * u + y) / (kappa + 1.0)
        kappa += 1.0
        nu += 1.0
    return total


def ref_log_marginal_beta_bernoulli(Yb, a, b):
    Yb = np.atleast_2d(np.asarray(Yb, float))
    m, D = Yb.shape
    a = np.broadcast_to(np.asarray(a, float), (D,))
    b = np.broadcast_to(np.asarray(b, float), (D,))
    total = 0.0
    for d in range(D):
        c = 0.0
        for i in range(m):
            p1 = (a[d] + c) / (a[d] + b[d] + i)
            total += np.log(p1) if Yb[i, d] == 1 else np.log1p(-p1)
            c += Yb[i, d]
    return float(total)


def ref_total(labels, Y, block_fn, **hyper):
    labels = np.asarray(labels)
    Y = np.asarray(Y, float)
    if Y.ndim == 1:
        Y = Y[:, None]
    return float(sum(block_fn(Y[labels == k], **hyper) for k in np.unique(labels)))


def ref_log_marginal_gamma_poisson(Yb, alpha, beta):
    """Chain rule of sequential negative-binomial predictives (scipy's nbinom, n = shape,
    p = rate / (rate + 1)), the Gamma posterior updated one count at a time."""
    Yb = np.atleast_2d(np.asarray(Yb, float))
    m, D = Yb.shape
    alpha = np.broadcast_to(np.asarray(alpha, float), (D,))
    beta = np.broadcast_to(np.asarray(beta, float), (D,))
    total = 0.0
    for d in range(D):
        shape, rate = alpha[d], beta[d]
        for i in range(m):
            total += float(stats.nbinom.logpmf(Yb[i, d], shape, rate / (rate + 1.0)))
            shape += Yb[i, d]
            rate += 1.0
    return total


def ref_log_marginal_dirichlet_categorical(Yb, a, n_categories):
    """Chain rule of sequential categorical predictives (a Polya urn per variable); ``Yb`` holds
    integer categories (m, D), ``a`` is (D, max C) or broadcastable to it."""
    Yb = np.atleast_2d(np.asarray(Yb)).astype(int)
    m, D = Yb.shape
    n_categories = np.broadcast_to(np.asarray(n_categories, int), (D,))
    a = np.broadcast_to(np.asarray(a, float), (D, int(n_categories.max())))
    total = 0.0
    for d in range(D):
        conc = a[d, :n_categories[d]].copy()
        for i in range(m):
            total += float(np.log(conc[Yb[i, d]] / conc.sum()))
            conc[Yb[i, d]] += 1.0
    return total


def ref_log_marginal_linear_regression(Xb, yb, mu0, cov0, a0, b0):
    """Clusters of regressions, y = X beta + e, e ~ N(0, sigma^2 I), beta | sigma^2 ~ N(mu0, sigma^2 cov0),
    sigma^2 ~ InvGamma(a0, b0): the block's responses are one multivariate Student t,
    y_b ~ t_{2 a0}(X_b mu0, (b0 / a0) (I + X_b cov0 X_b^T)) (beta and sigma^2 integrated out in one step)."""
    Xb = np.atleast_2d(np.asarray(Xb, float))
    yb = np.asarray(yb, float).reshape(-1)
    m = yb.size
    if m == 0:
        return 0.0
    p = Xb.shape[1]
    mu0 = np.broadcast_to(np.asarray(mu0, float), (p,))
    cov0 = np.asarray(cov0, float)
    if cov0.ndim < 2:
        cov0 = np.diag(np.broadcast_to(cov0, (p,)))
    shape = (b0 / a0) * (np.eye(m) + Xb @ cov0 @ Xb.T)
    return float(stats.multivariate_t(loc=Xb @ mu0, shape=shape, df=2.0 * a0).logpdf(yb))


def ref_log_predictive_linear_regression(Xb, yb, x, y, mu0, cov0, a0, b0):
    """Log predictive of one item (x, y) given the block (Xb, yb): the Student t of the posterior
    (from the normal equations, written independently of the kernels)."""
    Xb = np.asarray(Xb, float).reshape(-1, np.size(x))
    yb = np.asarray(yb, float).reshape(-1)
    p = Xb.shape[1]
    mu0 = np.broadcast_to(np.asarray(mu0, float), (p,))
    cov0 = np.asarray(cov0, float)
    if cov0.ndim < 2:
        cov0 = np.diag(np.broadcast_to(cov0, (p,)))
    prec0 = np.linalg.inv(cov0)
    prec = prec0 + Xb.T @ Xb
    mean = np.linalg.solve(prec, prec0 @ mu0 + Xb.T @ yb)
    a = a0 + 0.5 * yb.size
    b = b0 + 0.5 * (yb @ yb + mu0 @ prec0 @ mu0 - mean @ prec @ mean)
    x = np.asarray(x, float)
    scale = np.sqrt(b / a * (1.0 + x @ np.linalg.solve(prec, x)))
    return float(stats.t(df=2.0 * a, loc=x @ mean, scale=scale).logpdf(y))
