"""NumPy helpers shared by the symbolic forms and the numba kernels."""

from __future__ import annotations

import numpy as np
from scipy import linalg as sla

__all__ = ["whiten_full_normal"]


def whiten_full_normal(Y, mu0, cov0, cov):
    """Reduce the full-covariance NormalNormal model to a diagonal one.

    Model: ``y_i | mu_b ~ N(mu_b, cov)``, ``mu_b ~ N(mu0, cov0)``.
    With ``L1 = chol(cov)`` and ``L1^{-1} cov0 L1^{-T} = Q diag(lam) Q^T`` the
    transformed points ``y' = Q^T L1^{-1} y`` follow the *diagonal* NormalNormal
    model with ``sigma = 1``, prior mean ``mu0' = Q^T L1^{-1} mu0`` and prior
    standard deviations ``sigma0' = sqrt(lam)``.  The transformation is linear
    and shared by all points, so for any partition

        logp_full(labels, Y) = logp_diag(labels, Y2, mu0_2, sigma0_2, 1.0)
                               + n * log_jacobian_per_point

    Parameters
    ----------
    Y : (n, D) array
    mu0 : (D,) array or scalar
    cov0, cov : (D, D) SPD arrays

    Returns
    -------
    Y2 : (n, D) array, transformed data.
    mu0_2 : (D,) array, transformed prior mean.
    sigma0_2 : (D,) array, transformed prior **standard deviations**
        (``sqrt`` of the eigenvalues, i.e. ``sigma0_2**2 = lam``), to be used with
        ``sigma = 1``.
    log_jacobian_per_point : float, ``-sum(log(diag(L1)))``.
    """
    Y = np.asarray(Y, dtype=np.float64)
    if Y.ndim == 1:
        Y = Y[:, None]
    D = Y.shape[1]
    cov = np.atleast_2d(np.asarray(cov, dtype=np.float64))
    cov0 = np.atleast_2d(np.asarray(cov0, dtype=np.float64))
    mu0 = np.broadcast_to(np.asarray(mu0, dtype=np.float64), (D,))
    L1 = np.linalg.cholesky(cov)
    A = sla.solve_triangular(L1, cov0, lower=True)  # L1^{-1} cov0
    M = sla.solve_triangular(L1, A.T, lower=True)  # L1^{-1} cov0 L1^{-T}
    M = 0.5 * (M + M.T)
    lam, Q = np.linalg.eigh(M)
    lam = np.clip(lam, 0.0, None)
    W = Q.T @ sla.solve_triangular(L1, np.eye(D), lower=True)  # Q^T L1^{-1}
    Y2 = Y @ W.T
    mu0_2 = W @ mu0
    sigma0_2 = np.sqrt(lam)
    log_jacobian_per_point = -float(np.sum(np.log(np.diag(L1))))
    return np.ascontiguousarray(Y2), mu0_2, sigma0_2, log_jacobian_per_point
