"""PyTensor forms of the collapsed (cluster-parameters-integrated-out) log
marginal likelihoods ``sum_b log p(Y_b)`` of a partition.

All functions take ``labels`` (int vector of length n, values in ``[0, n)``) and
data ``Y`` (n, D) and return a scalar tensor.  They are differentiable with
respect to the hyperparameters (which may be PyMC random variables).  Block
statistics are obtained by scatter-adding into arrays with n rows (one slot per
possible label value); empty label values contribute exactly 0.  Labels outside
``[0, n)`` give ``-inf``, as do invalid hyperparameters (non-SPD matrices, non-positive
scales, ``nu0 <= D - 1`` ...).

Parametrisations are documented in each function and match the numba kernels
and :mod:`pymc_partitions.families.draws`.
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from pytensor.tensor import linalg as ptl

__all__ = [
    "normal_normal_logp",
    "normal_normal_full_logp",
    "niw_logp",
    "beta_bernoulli_logp",
    "beta_bernoulli_network_logp",
]

_LOG_2PI = float(np.log(2.0 * np.pi))
_LOG_PI = float(np.log(np.pi))


# --------------------------------------------------------------------------- helpers
def _as_data(Y):
    Y = pt.as_tensor_variable(Y)
    if Y.dtype not in ("float32", "float64"):
        Y = pt.cast(Y, "float64")
    if Y.ndim == 1:
        Y = Y[:, None]
    if Y.ndim != 2:
        raise ValueError(f"Y must be (n, D); got ndim={Y.ndim}")
    return Y


def _as_float(x, dtype):
    x = pt.as_tensor_variable(x)
    if x.dtype != dtype and not x.dtype.startswith("float"):
        x = pt.cast(x, dtype)
    return x


def _prep_labels(labels, Y):
    """Return (clipped labels, validity flag, n, block counts of length n)."""
    labels = pt.as_tensor_variable(labels)
    if labels.ndim != 1:
        raise ValueError(f"labels must be a vector; got ndim={labels.ndim}")
    if not labels.dtype.startswith(("int", "uint")):
        labels = pt.cast(labels, "int64")
    n = Y.shape[0]
    valid = pt.all(pt.ge(labels, 0) & pt.lt(labels, n)) & pt.eq(labels.shape[0], n)
    lab = pt.clip(labels, 0, pt.maximum(n - 1, 0))
    counts = pt.inc_subtensor(pt.zeros((n,), dtype=Y.dtype)[lab], pt.ones_like(lab, dtype=Y.dtype))
    return lab, valid, n, counts


def _scatter(lab, values):
    """Row-wise scatter-add of ``values`` (n, ...) into an array with n rows."""
    return pt.inc_subtensor(pt.zeros_like(values)[lab], values)


def _finish(logp, *conditions):
    """-inf when any condition fails or the value is NaN (e.g. failed Cholesky)."""
    ok = conditions[0]
    for c in conditions[1:]:
        ok = ok & c
    logp = pt.switch(pt.isnan(logp), -np.inf, logp)
    return pt.switch(ok, logp, -np.inf)


def _chol_logdet(L):
    """log|A| from the (batched) Cholesky factor L of A."""
    return 2.0 * pt.sum(pt.log(pt.diagonal(L, axis1=-2, axis2=-1)), axis=-1)


def _spd_guard(X, eye):
    """(ok, X_safe, chol(X_safe)): X_safe = X if X is SPD else the identity.

    Non-SPD inputs give NaN Cholesky factors; substituting the identity keeps
    every downstream inverse/det finite (numba's linalg raises on NaN) while
    ``ok`` turns the result into -inf.  The switch is applied to the *input* of
    the differentiated Cholesky, not to its output: switching the factor itself
    triggered wrong gradients under PyTensor 3's numba fusion when two families
    shared the same matrix.
    """
    ok = ~pt.any(pt.isnan(ptl.cholesky(X, lower=True, check_finite=False)))
    X_safe = pt.switch(ok, X, eye)
    return ok, X_safe, ptl.cholesky(X_safe, lower=True, check_finite=False)


def _batched_logdet(X):
    """log|X| for a stack (..., D, D) of SPD matrices, differentiable.

    ``pt.linalg.slogdet`` / ``log(det)`` on batched inputs trip a rewrite bug in
    PyTensor 2.x (``slogdet_specialization`` builds a non-Blockwise SLogDet), and a
    batched Cholesky gradient is slow to compile, so we use ``log(max(det, 0))``:
    the ``maximum`` hides the pattern from the rewrite and maps non-positive
    determinants (invalid inputs) to ``-inf``.  Fine unless det over/underflows
    float64 (|log det| > ~700), which needs extreme scales or large D.
    """
    return pt.log(pt.maximum(ptl.det(X), 0.0))


def _outer(u):
    return u[..., :, None] * u[..., None, :]


# --------------------------------------------------------------------------- NormalNormal
def normal_normal_logp(labels, Y, mu0, sigma0, sigma):
    """Diagonal NormalNormal collapsed log likelihood.

    ``y_i | mu_b ~ N(mu_b, diag(sigma^2))``, ``mu_b ~ N(mu0, diag(sigma0^2))``;
    ``mu0, sigma0, sigma`` are length-D vectors or scalars.  Per dimension, a block
    of m points with residuals ``r = y - mu0`` contributes
    ``-m/2 log(2 pi sigma^2) - 1/2 log(1 + m sigma0^2/sigma^2)
    - 1/(2 sigma^2) [sum r^2 - sigma0^2 (sum r)^2 / (sigma^2 + m sigma0^2)]``.
    """
    Y = _as_data(Y)
    mu0 = _as_float(mu0, Y.dtype)
    sigma0 = _as_float(sigma0, Y.dtype)
    sigma = _as_float(sigma, Y.dtype)
    lab, valid, n, counts = _prep_labels(labels, Y)

    r = Y - mu0  # (n, D)
    zeros = pt.zeros_like(r)
    s2 = sigma**2 + zeros  # broadcast to (n, D)
    t2 = sigma0**2 + zeros
    S1 = _scatter(lab, r)  # per-block residual sums (n, D)
    m = counts[:, None]

    logp = (
        -0.5 * pt.sum(_LOG_2PI + pt.log(s2))
        - 0.5 * pt.sum(pt.log1p(m * t2 / s2))
        - 0.5 * pt.sum(r**2 / s2)
        + 0.5 * pt.sum(t2 * S1**2 / (s2 * (s2 + m * t2)))
    )
    return _finish(logp, valid, pt.all(pt.gt(sigma, 0)), pt.all(pt.ge(sigma0, 0)))


def normal_normal_full_logp(labels, Y, mu0, cov0, cov):
    """Full-covariance NormalNormal collapsed log likelihood.

    ``y_i | mu_b ~ N(mu_b, cov)``, ``mu_b ~ N(mu0, cov0)``.  Exact computation in
    the space whitened by ``L1 = chol(cov)``: with ``M = L1^{-1} cov0 L1^{-T}``,
    whitened residuals ``w_i = L1^{-1}(y_i - mu0)`` and block sums ``s_b``,

        log p(Y_b) = -m D/2 log 2pi - m sum log diag L1 - 1/2 log|I + m M|
                     - 1/2 sum_i |w_i|^2 + 1/2 s_b^T M (I + m M)^{-1} s_b.

    The per-block D x D matrices ``I + m_b M`` are handled with batched
    ``det`` / ``inv`` (n x D x D work), which keeps gradients well defined
    even when ``M`` has repeated eigenvalues (e.g. isotropic ``cov`` and
    ``cov0``), unlike an eigendecomposition.  See
    :func:`pymc_partitions.families.transforms.whiten_full_normal` for the
    equivalent numpy diagonalisation used by the numba kernels.
    """
    Y = _as_data(Y)
    mu0 = _as_float(mu0, Y.dtype)
    cov0 = _as_float(cov0, Y.dtype)
    cov = _as_float(cov, Y.dtype)
    lab, valid, n, counts = _prep_labels(labels, Y)
    D = Y.shape[1]
    fD = pt.cast(D, Y.dtype)
    fn = pt.cast(n, Y.dtype)

    # Invalid (non-SPD) matrices give NaN Cholesky factors; substitute the
    # identity so that downstream inverses/dets never see NaN (numba's linalg
    # raises on non-finite input) and flag the result as -inf instead.
    eye = pt.eye(D, dtype=Y.dtype)
    cov_spd, cov, L1 = _spd_guard(cov, eye)
    cov0_spd, cov0, _ = _spd_guard(cov0, eye)

    r = Y - mu0
    # whitened residuals (n, D)
    W = ptl.solve_triangular(L1, r.T, lower=True, check_finite=False).T
    A = ptl.solve_triangular(L1, cov0, lower=True, check_finite=False)
    M = ptl.solve_triangular(L1, A.T, lower=True, check_finite=False)
    M = 0.5 * (M + M.T)

    S = _scatter(lab, W)  # (n, D)
    B = eye[None, :, :] + counts[:, None, None] * M[None, :, :]
    logdet_B = _batched_logdet(B)
    # B^{-1} s_b; a batched inverse (eigenvalues of B are >= 1, so well
    # conditioned) is vectorised by numpy, unlike a Blockwise solve.
    x = pt.sum(ptl.inv(B) * S[:, None, :], axis=-1)

    logp = (
        -0.5 * fn * fD * _LOG_2PI
        - 0.5 * fn * _chol_logdet(L1)
        - 0.5 * pt.sum(logdet_B)
        - 0.5 * pt.sum(W**2)
        + 0.5 * pt.sum((S @ M) * x)
    )
    return _finish(logp, valid, cov_spd, cov0_spd)


# --------------------------------------------------------------------------- NIW
def _log_multigammaln_no_const(x, D):
    """log Gamma_D(x) without the pi^{D(D-1)/4} constant (it cancels).

    Standard form: Gamma_D(x) = pi^{D(D-1)/4} prod_{d=1}^{D} Gamma(x + (1 - d)/2).
    ``x`` may be a vector; returns the same shape.
    """
    j = pt.cast(pt.arange(D), x.dtype)
    return pt.sum(pt.gammaln(x[..., None] - 0.5 * j), axis=-1)


def niw_logp(labels, Y, mu0, kappa0, nu0, scale0):
    """Normal-inverse-Wishart collapsed log likelihood.

    ``Sigma_b ~ InvWishart(nu0, scale0)``, ``mu_b | Sigma_b ~ N(mu0, Sigma_b/kappa0)``,
    ``y_i ~ N(mu_b, Sigma_b)`` (Murphy 2007, eq. 266)::

        log p(Y_b) = -m D/2 log pi + log Gamma_D(nu_m/2) - log Gamma_D(nu0/2)
                     + nu0/2 log|scale0| - nu_m/2 log|S_m| + D/2 log(kappa0/kappa_m)

    with ``kappa_m = kappa0 + m``, ``nu_m = nu0 + m`` and, using residuals
    ``r = y - mu0`` (algebraically identical to the usual form but better
    conditioned), ``S_m = scale0 + sum r r^T - (sum r)(sum r)^T / kappa_m``.
    Requires ``nu0 > D - 1`` and ``kappa0 > 0``.
    """
    Y = _as_data(Y)
    mu0 = _as_float(mu0, Y.dtype)
    kappa0 = _as_float(kappa0, Y.dtype)
    nu0 = _as_float(nu0, Y.dtype)
    scale0 = _as_float(scale0, Y.dtype)
    if scale0.ndim < 2:  # allow a scalar for D == 1
        scale0 = pt.reshape(scale0, (1, 1))
    lab, valid, n, counts = _prep_labels(labels, Y)
    D = Y.shape[1]
    fD = pt.cast(D, Y.dtype)

    eye = pt.eye(D, dtype=Y.dtype)
    scale0_spd, scale0, L0 = _spd_guard(scale0, eye)
    kappa0_ok = pt.gt(kappa0, 0)
    kappa0 = pt.switch(kappa0_ok, kappa0, 1.0)  # avoid 1/0 in S_m for kappa0 <= 0

    r = Y - mu0
    s = _scatter(lab, r)  # (n, D)
    R = _scatter(lab, _outer(r))  # (n, D, D)
    kappa_m = kappa0 + counts
    nu_m = nu0 + counts
    S_m = scale0[None, :, :] + R - _outer(s) / kappa_m[:, None, None]
    S_m = 0.5 * (S_m + pt.swapaxes(S_m, -1, -2))

    # scale0 SPD  =>  every S_m SPD.
    logdet0 = _chol_logdet(L0)
    logdet_m = _batched_logdet(S_m)

    nu0_vec = pt.reshape(nu0, (1,))
    block = (
        -0.5 * counts * fD * _LOG_PI
        + _log_multigammaln_no_const(0.5 * nu_m, D)
        - _log_multigammaln_no_const(0.5 * nu0_vec, D)
        + 0.5 * nu0 * logdet0
        - 0.5 * nu_m * logdet_m
        + 0.5 * fD * (pt.log(kappa0) - pt.log(kappa_m))
    )
    block = pt.switch(pt.gt(counts, 0), block, 0.0)
    logp = pt.sum(block)
    return _finish(logp, valid, scale0_spd, kappa0_ok, pt.gt(nu0, fD - 1.0))


# --------------------------------------------------------------------------- BetaBernoulli
def _betaln(x, y):
    return pt.gammaln(x) + pt.gammaln(y) - pt.gammaln(x + y)


def beta_bernoulli_logp(labels, Y, a, b):
    """Beta-Bernoulli collapsed log likelihood.

    ``theta_bd ~ Beta(a_d, b_d)``, ``y_id ~ Bernoulli(theta_bd)``;
    block log p = ``sum_d betaln(a_d + c_d, b_d + m - c_d) - betaln(a_d, b_d)``
    with ``c_d`` the number of ones.  Data outside {0, 1} give -inf.
    """
    Y = _as_data(Y)
    a = _as_float(a, Y.dtype)
    b = _as_float(b, Y.dtype)
    lab, valid, n, counts = _prep_labels(labels, Y)

    c = _scatter(lab, Y)  # (n, D)
    m = counts[:, None]
    val = _betaln(a + c, b + m - c) - _betaln(a, b)  # (n, D)
    val = pt.switch(pt.gt(m, 0), val, 0.0)
    logp = pt.sum(val)
    binary = pt.all(pt.eq(Y, 0) | pt.eq(Y, 1))
    return _finish(logp, valid, binary, pt.all(pt.gt(a, 0)), pt.all(pt.gt(b, 0)))


# --------------------------------------------------------------------------- network (IRM)
def beta_bernoulli_network_logp(labels, edges, a, b, directed, n):
    """Collapsed Bernoulli blockmodel log likelihood of a graph given the partition
    (:mod:`pymc_partitions.families.network`): ``sum over block pairs of betaln(a + e_kl,
    b + N_kl - e_kl) - betaln(a, b)``, within-block pairs included.

    ``edges`` is the canonical (m, 2) edge list (``network.as_edges``); ``directed`` and ``n`` are
    Python values. Blocks are renumbered 0..K-1 in the graph, so memory is O(n + m + K^2), never
    n x n. Labels outside ``[0, n)`` and edges outside ``[0, n)`` or self-loops give -inf.
    """
    labels = pt.as_tensor_variable(labels)
    if not labels.dtype.startswith(("int", "uint")):
        labels = pt.cast(labels, "int64")
    edges = pt.cast(pt.as_tensor_variable(edges), "int64")
    a = pt.cast(a, "float64")  # (a Python 0.5 would become a float32 constant)
    b = pt.cast(b, "float64")
    valid = pt.all(pt.ge(labels, 0) & pt.lt(labels, n)) & pt.eq(labels.shape[0], n)
    lab = pt.clip(labels, 0, n - 1)
    src, dst = edges[:, 0], edges[:, 1]
    valid = valid & pt.all(pt.ge(edges, 0) & pt.lt(edges, n)) & pt.all(pt.neq(src, dst))
    src, dst = pt.clip(src, 0, n - 1), pt.clip(dst, 0, n - 1)
    occupied = pt.cast(pt.gt(pt.zeros((n,), dtype="int64")[lab].inc(1), 0), "int64")
    rank = pt.cumsum(occupied) - 1  # block of each label value, 0..K-1 (cumsum of a bool would wrap)
    k = pt.sum(occupied)
    z = rank[lab]
    m = pt.zeros((k,), dtype="float64")[z].inc(1.0)
    e = pt.zeros((k, k), dtype="float64")[z[src], z[dst]].inc(1.0)
    if directed:
        pairs = pt.outer(m, m) - pt.diag(m)
        keep = pt.ones((k, k), dtype="float64")
    else:
        e = e + e.T - pt.diag(pt.diagonal(e))
        pairs = pt.outer(m, m) - pt.diag(m * (m + 1.0) / 2.0)
        keep = pt.triu(pt.ones((k, k), dtype="float64"))
    val = _betaln(a + e, b + pairs - e) - _betaln(a, b)
    logp = pt.sum(val * keep)
    return _finish(logp, valid, pt.gt(a, 0), pt.gt(b, 0))
# --------------------------------------------------------------------------- GammaPoisson
__all__ += ["gamma_poisson_logp"]


def gamma_poisson_logp(labels, Y, alpha, beta):
    """Gamma-Poisson collapsed log likelihood.

    ``lambda_bd ~ Gamma(alpha_d, beta_d)`` (shape, rate), ``y_id ~ Poisson(lambda_bd)``; a block of
    m items with column sums ``S_d`` contributes
    ``sum_d alpha_d log beta_d - lgamma(alpha_d) + lgamma(alpha_d + S_d) - (alpha_d + S_d) log(beta_d + m)``
    minus ``sum lgamma(y_id + 1)`` over its entries. Data that are not non-negative integers give -inf.
    """
    Y = _as_data(Y)
    alpha = _as_float(alpha, Y.dtype)
    beta = _as_float(beta, Y.dtype)
    lab, valid, n, counts = _prep_labels(labels, Y)
    ok_data = pt.all(pt.ge(Y, 0) & pt.eq(Y, pt.floor(Y)))
    Ys = pt.switch(ok_data, Y, 0.0)  # keep lgamma finite on invalid data (the result is -inf anyway)
    S = _scatter(lab, Ys)  # (n, D)
    m = counts[:, None]
    a = alpha + pt.zeros_like(S)
    val = alpha * pt.log(beta) - pt.gammaln(alpha) + pt.gammaln(a + S) - (a + S) * pt.log(beta + m)
    val = pt.switch(pt.gt(m, 0), val, 0.0)
    logp = pt.sum(val) - pt.sum(pt.gammaln(Ys + 1.0))
    return _finish(logp, valid, ok_data, pt.all(pt.gt(alpha, 0)), pt.all(pt.gt(beta, 0)))


# --------------------------------------------------------------------------- DirichletCategorical
__all__ += ["dirichlet_categorical_logp"]


def dirichlet_categorical_logp(labels, Y, a, n_categories):
    """Dirichlet-categorical collapsed log likelihood.

    ``Y`` (n, D) holds integer categories, column d in ``0..C_d - 1`` (``n_categories`` = C, a
    length-D integer vector); ``a`` is (D, max C) (entries past C_d are ignored):
    ``theta_bd ~ Dirichlet(a_d[:C_d])``, ``y_id ~ Categorical(theta_bd)``. A block of m items with
    category counts ``c_dk`` contributes
    ``sum_d lgamma(A_d) - lgamma(A_d + m) + sum_k lgamma(a_dk + c_dk) - lgamma(a_dk)``, ``A_d`` the
    sum of ``a_d[:C_d]``. Categories out of range give -inf.
    """
    Y = _as_data(Y)
    a = _as_float(a, Y.dtype)
    if a.ndim < 2:
        a = pt.shape_padleft(a, 2 - a.ndim)
    n_categories = pt.as_tensor_variable(n_categories)
    lab, valid, n, counts = _prep_labels(labels, Y)
    D = Y.shape[1]
    C = a.shape[1]
    a = pt.broadcast_to(a, (D, C))
    cats = pt.arange(C)
    used = pt.lt(cats[None, :], n_categories[:, None])  # (D, C)
    ok_data = pt.all(pt.ge(Y, 0) & pt.eq(Y, pt.floor(Y)) & pt.lt(Y, n_categories[None, :]))
    Yi = pt.cast(pt.switch(ok_data, Y, 0.0), "int64")
    onehot = pt.cast(pt.eq(Yi[:, :, None], cats[None, None, :]), Y.dtype)  # (n, D, C)
    c = _scatter(lab, onehot)  # (n, D, C) per-block counts
    a_used = pt.switch(used, a, 1.0)
    tot = pt.sum(pt.switch(used, a, 0.0), axis=1)  # (D,)
    m = counts[:, None]
    per_cat = pt.switch(used[None], pt.gammaln(a_used[None] + c) - pt.gammaln(a_used[None]), 0.0)
    val = pt.gammaln(tot)[None, :] - pt.gammaln(tot[None, :] + m) + pt.sum(per_cat, axis=2)  # (n, D)
    val = pt.switch(pt.gt(m, 0), val, 0.0)
    logp = pt.sum(val)
    return _finish(logp, valid, ok_data, pt.all(pt.gt(pt.switch(used, a, 1.0), 0)))


# --------------------------------------------------------------------------- clusters of regressions
__all__ += ["normal_linear_regression_logp"]


def normal_linear_regression_logp(labels, Y, X, mu0, cov0, a0, b0):
    """Clusters of regressions with a Normal-inverse-Gamma prior per cluster.

    ``y_i = x_i . beta_b + e_i``, ``e_i ~ N(0, sigma_b^2)``, ``beta_b | sigma_b^2 ~ N(mu0, sigma_b^2 cov0)``,
    ``sigma_b^2 ~ InvGamma(a0, b0)``; ``Y`` the responses (n,) or (n, 1), ``X`` (n, p), ``cov0`` p x p.
    With ``Lam_b = cov0^{-1} + X_b'X_b``, ``r_b = cov0^{-1} mu0 + X_b'y_b``, ``a_b = a0 + m/2`` and
    ``b_b = b0 + (y_b'y_b + mu0' cov0^{-1} mu0 - r_b' Lam_b^{-1} r_b) / 2`` a block contributes
    ``-m/2 log(2 pi) + 1/2 log|cov0^{-1}| - 1/2 log|Lam_b| + a0 log b0 - a_b log b_b
    + lgamma(a_b) - lgamma(a0)``.
    """
    Y = _as_data(Y)
    y = Y[:, 0]
    X = _as_float(X, Y.dtype)
    mu0 = _as_float(mu0, Y.dtype)
    cov0 = _as_float(cov0, Y.dtype)
    a0 = _as_float(a0, Y.dtype)
    b0 = _as_float(b0, Y.dtype)
    lab, valid, n, counts = _prep_labels(labels, Y)
    p = X.shape[1]
    eye = pt.eye(p, dtype=Y.dtype)
    cov0_spd, cov0, L0 = _spd_guard(cov0, eye)
    prec0 = ptl.solve(cov0, eye, assume_a="pos")
    prec0 = 0.5 * (prec0 + prec0.T)
    r0 = prec0 @ mu0
    a_ok = pt.gt(a0, 0)
    b_ok = pt.gt(b0, 0)
    b0 = pt.switch(b_ok, b0, 1.0)
    a0 = pt.switch(a_ok, a0, 1.0)

    xtx = _scatter(lab, _outer(X))  # (n, p, p)
    xty = _scatter(lab, X * y[:, None])  # (n, p)
    yty = _scatter(lab, y * y)  # (n,)
    prec = prec0[None, :, :] + xtx
    r = r0[None, :] + xty
    mean = ptl.solve(prec, r[:, :, None], assume_a="pos", b_ndim=2)[:, :, 0]
    quad = pt.maximum(yty + pt.dot(mu0, r0) - pt.sum(mean * r, axis=1), 0.0)
    a_m = a0 + 0.5 * counts
    b_m = b0 + 0.5 * quad
    block = (-0.5 * counts * _LOG_2PI - _chol_logdet(L0) * 0.5 - 0.5 * _batched_logdet(prec)
             + a0 * pt.log(b0) - a_m * pt.log(b_m) + pt.gammaln(a_m) - pt.gammaln(a0))
    block = pt.switch(pt.gt(counts, 0), block, 0.0)
    return _finish(pt.sum(block), valid, cov0_spd, a_ok, b_ok)
